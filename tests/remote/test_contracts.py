"""Every adapter's ``AdapterContract``, again with the agent on a ``RemoteQueue`` to a live ``crossgate serve``.

The agent process holds no store URL: its queue is the server's URL and an agent token (see ``contract``).
PostgreSQL behind the server is exercised with one adapter; the agent's side does not depend on the store.
"""

from __future__ import annotations

import pytest

from tests.adapters.agent_framework import test_contract as agent_framework
from tests.adapters.claude import test_contract as claude
from tests.adapters.google_adk import test_contract as google_adk
from tests.adapters.langgraph import test_contract as langgraph
from tests.adapters.openai import test_contract as openai
from tests.adapters.pydantic_ai import test_contract as pydantic_ai
from tests.remote.contract import OverHttp

pytestmark = pytest.mark.slow


class TestOpenAIOverHttp(OverHttp, openai.TestOpenAIContract):
    pass


class TestClaudeOverHttp(OverHttp, claude.TestClaudeContract):
    supports_postgres = False


class TestLangGraphOverHttp(OverHttp, langgraph.TestLangGraphContract):
    supports_postgres = False


class TestLangChainOverHttp(OverHttp, langgraph.TestLangChainContract):
    supports_postgres = False


class TestPydanticAIOverHttp(OverHttp, pydantic_ai.TestPydanticAIContract):
    supports_postgres = False


class TestAgentFrameworkOverHttp(OverHttp, agent_framework.TestAgentFrameworkContract):
    supports_postgres = False


class TestGoogleAdkOverHttp(OverHttp, google_adk.TestGoogleAdkContract):
    supports_postgres = False
