"""What ``Gate.install`` refuses: MCP servers, and hosted tools whose calls the policy would not allow outright.

Hosted tools (web search, file search, code interpreter, image generation, tool search, programmatic
tool calling) run on the model provider's side: no call of theirs reaches crossgate. Install lets one
through only when the policy allows it outright for that agent; otherwise a rule that asks or denies
(or a default that is not allow) would be silently ignored, so the gate refuses the whole agent graph
before the model is called.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from agents import (
    Agent,
    CodeInterpreterTool,
    FileSearchTool,
    ImageGenerationTool,
    ProgrammaticToolCallingTool,
    ToolSearchTool,
    WebSearchTool,
    handoff,
)
from agents.mcp import MCPServerStdio

from crossgate import ArgCondition, ConfigurationError, Policy, PolicyRule, ReviewQueue, VerdictKind
from crossgate.policy import MatchKind
from crossgate.runs import Parked
from crossgate_openai import FRAMEWORK, Gate
from tests.adapters.openai.conftest import ASK_DELETES
from tests.adapters.openai.scripted import PlannedModel, delete_call, ticket_agent
from tests.conformance.tickets import TicketStore

HOSTED = [
    WebSearchTool(),
    FileSearchTool(vector_store_ids=["vs_tickets"]),
    CodeInterpreterTool(tool_config={"type": "code_interpreter", "container": {"type": "auto"}}),
    ImageGenerationTool(tool_config={"type": "image_generation"}),
    ToolSearchTool(),
    ProgrammaticToolCallingTool(),
]
HOSTED_IDS = [type(t).__name__ for t in HOSTED]
ANY_QUERY = (ArgCondition(arg="q", kind=MatchKind.PRESENT),)


def allow(tool: str, **fields: Any) -> PolicyRule:
    return PolicyRule(name=f"allow-{tool}", verdict=VerdictKind.ALLOW, tool=tool, **fields)


def agent_with(tickets: TicketStore, hosted: Any) -> tuple[Agent[Any], PlannedModel]:
    model = PlannedModel([[delete_call("t3")]], final="Done.")
    agent = ticket_agent(tickets, model)
    agent.tools = [*agent.tools, hosted]
    return agent, model


async def refused(queue: ReviewQueue, agent: Agent[Any], model: PlannedModel, tickets: TicketStore) -> str:
    """Run ``agent`` and return the refusal; check that nothing ran, was asked or was recorded."""
    with pytest.raises(ConfigurationError) as error:
        await Gate(queue).run(agent, "go", run="r")
    assert model.inputs == [], "refused before the model was called"
    assert tickets.delete_runs() == 0
    assert queue.list_requests().items == []
    assert queue.events() == []
    return str(error.value)


# hosted tools: refused ----------------------------------------------------------------------------
@pytest.mark.parametrize("hosted", HOSTED, ids=HOSTED_IDS)
@pytest.mark.parametrize("verdict", [VerdictKind.DENY, VerdictKind.ASK])
async def test_a_rule_that_would_stop_a_hosted_tool_refuses_the_agent(
    make_queue: Any, tickets: TicketStore, hosted: Any, verdict: VerdictKind
) -> None:
    rule = PolicyRule(name="no-hosted", verdict=verdict, tool=hosted.name, reason="Not on customer data.")
    queue = make_queue(Policy(rules=(ASK_DELETES, allow(hosted.name), rule), default=VerdictKind.ALLOW))
    agent, model = agent_with(tickets, hosted)
    message = await refused(queue, agent, model, tickets)
    assert f"tool {hosted.name!r} of agent 'Triage agent' is a {type(hosted).__name__}" in message
    assert "crossgate never sees its calls and cannot gate them" in message
    what = "denies" if verdict is VerdictKind.DENY else "asks a person about"
    assert f"policy rule 'no-hosted' {what} it" in message, "a deny or ask beats the allow rule, as in evaluation"


@pytest.mark.parametrize(
    ("rules", "default", "why"),
    [
        ((PolicyRule(name="ask-all", verdict=VerdictKind.ASK),), VerdictKind.ALLOW, "'ask-all' asks"),
        ((PolicyRule(name="no-web", verdict=VerdictKind.DENY, tool="web_*"),), VerdictKind.ALLOW, "'no-web' denies"),
        ((), VerdictKind.ASK, "the policy's default is ask"),
        ((ASK_DELETES,), VerdictKind.DENY, "the policy's default is deny"),
        (  # crossgate never sees a hosted call's arguments: a condition on them may hold for any call
            (PolicyRule(name="no-sites", verdict=VerdictKind.DENY, tool="web_search", where=ANY_QUERY),),
            VerdictKind.ALLOW,
            "'no-sites' denies",
        ),
        (  # an allow that holds only for some arguments does not cover every call; the default decides
            (allow("web_search", where=(ArgCondition(arg="q", pattern="docs *"),)),),
            VerdictKind.ASK,
            "the policy's default is ask",
        ),
        (  # a rule for this framework and agent
            (PolicyRule(name="triage", verdict=VerdictKind.DENY, frameworks=(FRAMEWORK,), agents=("Triage*",)),),
            VerdictKind.ALLOW,
            "'triage' denies",
        ),
    ],
    ids=["wildcard-ask", "glob-deny", "default-ask", "default-deny", "deny-with-condition", "partial-allow", "scoped"],
)
async def test_a_hosted_tool_the_policy_does_not_allow_outright_is_refused(
    make_queue: Any, tickets: TicketStore, rules: tuple[PolicyRule, ...], default: VerdictKind, why: str
) -> None:
    queue = make_queue(Policy(rules=rules, default=default))
    agent, model = agent_with(tickets, WebSearchTool())
    assert why in await refused(queue, agent, model, tickets)


async def test_a_hosted_tool_deep_in_the_graph_is_refused(make_queue: Any, tickets: TicketStore) -> None:
    queue = make_queue(Policy(rules=(ASK_DELETES, PolicyRule(name="no-code", verdict=VerdictKind.DENY, tool="code_*"))))
    researcher = Agent(name="Researcher", tools=[HOSTED[2]])
    helper = Agent(name="Helper", handoffs=[handoff(researcher)])
    model = PlannedModel([[delete_call("t3")]])
    agent = ticket_agent(tickets, model)
    agent.handoffs = [helper]
    message = await refused(queue, agent, model, tickets)
    assert "tool 'code_interpreter' of agent 'Researcher'" in message


async def test_install_refuses_a_hosted_tool_without_running(make_queue: Any, tickets: TicketStore) -> None:
    queue = make_queue(Policy(rules=(ASK_DELETES,), default=VerdictKind.ASK))
    agent, _ = agent_with(tickets, WebSearchTool())
    with pytest.raises(ConfigurationError, match="'web_search'"):
        Gate(queue, sdk_agent=agent)
    with pytest.raises(ConfigurationError, match="'web_search'"):
        Gate(queue).install(agent)


# hosted tools: passed through ---------------------------------------------------------------------
@pytest.mark.parametrize("hosted", HOSTED, ids=HOSTED_IDS)
@pytest.mark.parametrize("default", [VerdictKind.ASK, VerdictKind.ALLOW])
async def test_a_hosted_tool_the_policy_allows_outright_passes_through(
    make_queue: Any, tickets: TicketStore, hosted: Any, default: VerdictKind
) -> None:
    # Rules for other tools, frameworks or agents do not reach it; the delete stays gated.
    rules = (
        ASK_DELETES,
        allow(hosted.name),
        PolicyRule(name="other-framework", verdict=VerdictKind.DENY, frameworks=("langgraph",)),
        PolicyRule(name="other-agent", verdict=VerdictKind.DENY, agents=("Researcher",)),
    )
    queue = make_queue(Policy(rules=rules, default=default))
    agent, _ = agent_with(tickets, hosted)
    parked = await Gate(queue).run(agent, "go", run="r")
    assert isinstance(parked, Parked), "the function tool is still gated"
    assert agent.tools[-1] is hosted, "the hosted tool is left as it is"
    assert tickets.delete_runs() == 0


async def test_a_hosted_tool_is_checked_again_when_the_policy_changes(make_queue: Any, tickets: TicketStore) -> None:
    queue = make_queue(Policy(rules=(ASK_DELETES,), default=VerdictKind.ALLOW))
    agent, model = agent_with(tickets, WebSearchTool())
    gate = Gate(queue, sdk_agent=agent)  # installed: the policy allowed it then
    queue.policy = queue.policy.with_rules(PolicyRule(name="no-web", verdict=VerdictKind.DENY, tool="web_search"))
    with pytest.raises(ConfigurationError, match="'no-web' denies"):
        await gate.run(agent, "go")
    assert tickets.delete_runs() == 0
    assert model.inputs == []


# MCP servers --------------------------------------------------------------------------------------
@pytest.mark.parametrize("where", ["starting", "handoff", "as_tool"])
async def test_an_agent_with_mcp_servers_is_refused_and_no_server_starts(
    queue: ReviewQueue, tickets: TicketStore, tmp_path: Path, where: str
) -> None:
    marker = tmp_path / "server-started"
    server = MCPServerStdio(
        params={"command": sys.executable, "args": ["-c", f"open({str(marker)!r}, 'w').close()"]}, name="tickets-mcp"
    )
    model = PlannedModel([[delete_call("t3")]])
    agent = ticket_agent(tickets, model)
    owner = agent if where == "starting" else Agent(name="Ops", mcp_servers=[server])
    if where == "starting":
        agent.mcp_servers = [server]
    elif where == "handoff":
        agent.handoffs = [handoff(owner)]
    else:
        agent.tools = [*agent.tools, owner.as_tool(tool_name="ops", tool_description="Ops work.")]
    with pytest.raises(ConfigurationError, match=rf"agent {owner.name!r} has MCP servers"):
        await Gate(queue).run(agent, "go")
    assert model.inputs == []
    assert not marker.exists(), "the MCP server was never started"
    assert tickets.delete_runs() == 0
    assert queue.events() == []
    assert queue.list_requests().items == []
