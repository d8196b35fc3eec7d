"""The real ``agentapprovalprotocol`` client and its LangChain ``ApprovalMiddleware`` against a live server.

A uvicorn on 127.0.0.1 serves ``create_app`` over a SQLite store; a reviewer thread decides over the
reviewer API, as a person on the page would.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from agentapprovalprotocol import Allow, Call, Client, ConflictError, CredentialRefused, Deny, Gate, NotFound
from agentapprovalprotocol.langgraph import ApprovalMiddleware
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, ToolMessage
from langchain_core.tools import tool

from crossgate import ReviewQueue, ToolCall
from crossgate.server.app import create_app
from crossgate.stores import open_store
from crossgate_langgraph.testing import ScriptedChatModel, tool_call
from tests.server.aap.conftest import PROVISIONER, aap_settings
from tests.server.conftest import POLICY, TOKENS
from tests.server.live import live_server

pytestmark = pytest.mark.slow


class Server:
    def __init__(self, url: str, queue: ReviewQueue) -> None:
        self.url, self.queue = url, queue
        self.aap = f"{url}/aap"

    def provision(self, name: str) -> tuple[str, str]:
        headers = {"Authorization": f"Bearer {PROVISIONER}", "Idempotency-Key": str(uuid.uuid4())}
        r = httpx.post(f"{self.aap}/v1/instances", json={"instance_name": name}, headers=headers)
        assert r.status_code == 201, r.text
        return r.json()["instance"]["id"], r.json()["credential"]["token"]

    def decide_next(self, decision: dict[str, Any], *, tool: str = "delete_ticket") -> threading.Thread:
        """Decide the next pending AAP request for ``tool`` from another thread, as a reviewer."""

        def run() -> None:
            for _ in range(500):
                pending = self.queue.pending(framework="aap", tool=tool)
                if pending:
                    headers = {"Authorization": f"Bearer {TOKENS['alice']}"}
                    r = httpx.post(f"{self.url}/api/requests/{pending[0].id}/decision", json=decision, headers=headers)
                    assert r.status_code == 200, r.text
                    return
                time.sleep(0.02)

        thread = threading.Thread(target=run, daemon=True)
        thread.start()
        return thread


@pytest.fixture
def server(tmp_path: Path) -> Iterator[Server]:
    queue = ReviewQueue(open_store(str(tmp_path / "q.db")), POLICY)
    with live_server(create_app(queue, aap_settings())) as url:
        yield Server(url, queue)
    queue.close()


def gate(server: Server, name: str = "laptop") -> Gate:
    _, token = server.provision(name)
    return Gate(Client(server.aap, token), wait_limit=20)


def test_approve_runs_once_and_the_outcome_is_recorded(server: Server) -> None:
    g = gate(server)
    decided = server.decide_next({"kind": "approve", "note": "ok"})
    verdict = g.check(Call(key="c1", tool="delete_ticket", arguments={"id": "t3"}))
    decided.join(10)
    assert isinstance(verdict, Allow), verdict
    verdict.report("succeeded", "deleted")
    request = server.queue.get(verdict.request_id)
    assert request.status.value == "applied" and request.call.args == {"id": "t3"}
    assert server.queue.outcome(request.id) is not None
    again = g.check(Call(key="c1", tool="delete_ticket", arguments={"id": "t3"}))  # the same call seen again
    assert isinstance(again, Deny) and again.status == "consumed"


def test_reject_reaches_the_agent_with_its_message(server: Server) -> None:
    g = gate(server)
    decided = server.decide_next({"kind": "reject", "message": "Do not delete t1; close it."})
    verdict = g.check(Call(key="c1", tool="delete_ticket", arguments={"id": "t1"}))
    decided.join(10)
    assert isinstance(verdict, Deny) and verdict.status == "denied"
    assert "Do not delete t1; close it." in verdict.reason


def test_expiry_cancel_and_idempotent_replay(server: Server) -> None:
    _, token = server.provision("laptop")
    client = Client(server.aap, token, retry_budget=5)
    body = {"tool": "delete_ticket", "arguments": {"id": "t1"}, "timeout": "1s"}
    first = client.create(body, "key-1")
    assert client.create(body, "key-1").id == first.id
    with pytest.raises(ConflictError) as conflict:
        client.create({**body, "arguments": {"id": "t2"}}, "key-1")
    assert conflict.value.code == "idempotency_conflict"
    expired = client.get(first.id, wait=10)
    assert expired.status == "expired" and expired.decision is not None
    pending = client.create({**body, "timeout": "10m"}, "key-2")
    cancelled = client.cancel(pending.id)
    assert cancelled.status == "cancelled" and server.queue.get(pending.id).status.value == "cancelled"


def test_another_instances_request_is_not_found_for_the_client(server: Server) -> None:
    _, mine = server.provision("mine")
    _, theirs = server.provision("theirs")
    request = Client(server.aap, mine).create({"tool": "delete_ticket", "arguments": {}, "timeout": "5m"}, "k")
    with pytest.raises(NotFound):
        Client(server.aap, theirs).get(request.id)


def agent(server: Server, turns: list[AIMessage], deleted: list[dict[str, Any]]) -> Any:
    @tool
    def delete_ticket(id: str, reason: str = "") -> str:
        """Delete a support ticket."""
        deleted.append({"id": id, "reason": reason})
        return f"deleted {id}"

    _, token = server.provision("langchain-agent")
    middleware = ApprovalMiddleware(server.aap, token, wait_limit=20)
    model = ScriptedChatModel(turns=turns)
    return create_agent(model, tools=[delete_ticket], middleware=[middleware]), model


def test_middleware_edit_arrives_as_denial_then_the_edited_retry_runs_at_once(server: Server) -> None:
    edited = {"id": "t1", "reason": "duplicate"}
    turns = [
        AIMessage(content="", tool_calls=[tool_call("delete_ticket", {"id": "t1"}, "call_1")]),
        AIMessage(content="", tool_calls=[tool_call("delete_ticket", edited, "call_2")]),
    ]
    deleted: list[dict[str, Any]] = []
    graph, _ = agent(server, turns, deleted)
    decided = server.decide_next({"kind": "edit", "args": edited})
    result = graph.invoke({"messages": [{"role": "user", "content": "delete t1"}]})
    decided.join(10)
    tool_messages = [m for m in result["messages"] if isinstance(m, ToolMessage)]
    assert "edited" in str(tool_messages[0].content) and '"reason":"duplicate"' in str(tool_messages[0].content)
    assert deleted == [edited]  # the proposal never ran; the edited call ran once, with no second review
    assert server.queue.pending(framework="aap") == []
    assert len(server.queue.list_requests().items) == 1


def test_middleware_deny_is_what_the_model_reads(server: Server) -> None:
    turns = [AIMessage(content="", tool_calls=[tool_call("delete_ticket", {"id": "t9"}, "call_1")])]
    deleted: list[dict[str, Any]] = []
    graph, _ = agent(server, turns, deleted)
    decided = server.decide_next({"kind": "reject", "message": "t9 belongs to another customer."})
    result = graph.invoke({"messages": [{"role": "user", "content": "delete t9"}]})
    decided.join(10)
    tool_messages = [m for m in result["messages"] if isinstance(m, ToolMessage)]
    assert "t9 belongs to another customer." in str(tool_messages[0].content)
    assert deleted == []


def test_aap_requests_are_on_the_reviewer_page_next_to_other_sdks(server: Server) -> None:
    other = ToolCall(framework="openai-agents", tool="delete_ticket", args={"id": "from-openai"}, run="r1", agent="s")
    assert server.queue.submit(other).request is not None
    _, token = server.provision("page-agent")
    request = Client(server.aap, token).create(
        {"tool": "delete_ticket", "arguments": {"id": "from-aap"}, "timeout": "10m"}, "k"
    )
    with httpx.Client(base_url=server.url) as browser:
        browser.get("/login", params={"token": TOKENS["alice"]})
        page = browser.get("/").text
    assert "from-aap" in page and "from-openai" in page
    assert "aap" in page and request.id in page


def test_agent_token_refusals_over_the_wire(server: Server) -> None:
    iid, token = server.provision("refused")
    client = Client(server.aap, token, retry_budget=2)
    pending = client.create({"tool": "delete_ticket", "arguments": {"id": "t1"}, "timeout": "10m"}, "k")
    decide = httpx.post(
        f"{server.url}/api/requests/{pending.id}/decision",
        json={"kind": "approve"},
        headers={"Authorization": f"Bearer {token}"},
    )
    assert decide.status_code == 403 and decide.json()["error"] == "forbidden"
    assert server.queue.get(pending.id).status.value == "pending"
    deleted = httpx.delete(f"{server.aap}/v1/instances/{iid}", headers={"Authorization": f"Bearer {PROVISIONER}"})
    assert deleted.status_code == 204
    assert server.queue.get(pending.id).status.value == "cancelled"
    with pytest.raises(CredentialRefused):
        client.get(pending.id)
    verdict = Gate(client).check(Call(key="c2", tool="delete_ticket", arguments={"id": "t2"}))
    assert isinstance(verdict, Deny) and verdict.status == "error"  # the client fails closed
