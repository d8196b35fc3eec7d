"""``Agents``: naming the main thread, and linking a subagent to the Agent call that started it.

The orders of hook inputs here are the ones the real CLI was seen to send (``test_real_cli_nested.py``
and ``test_real_cli_main_agent.py`` run them for real); these cover the orders that are hard to force
there: concurrent launches of one type, and a launch still waiting for review.
"""

from __future__ import annotations

import pytest

from crossgate_claude._agents import MAIN_MISMATCH, NOT_RUN_AS, UNKNOWN_AGENT, Agents, Caller, UnnamedCaller

MAIN = Caller("support-desk")
DISPATCHER = Caller("dispatcher", "a-dispatcher")
CLEANER = {"subagent_type": "ticket-cleaner"}


def launching(agents: Agents) -> bool:
    return agents.launching  # read afresh each time (mypy would narrow the property after an assert)


def test_the_main_thread_is_named_by_the_agent_it_runs_as_and_never_by_a_guess() -> None:
    assert Agents(main="support-desk").of_hook({}) == MAIN
    assert Agents().of_hook({"agent_type": "desk"}) == Caller("desk")
    assert Agents(main="desk", cli_agent="desk").of_hook({"agent_type": "desk"}) == Caller("desk")
    with pytest.raises(UnnamedCaller, match="does not run it as that agent") as ignored:
        Agents(main="desk", cli_agent="desk").of_hook({})  # an --agent the CLI did not find
    assert str(ignored.value) == NOT_RUN_AS.format(agent="desk")
    with pytest.raises(UnnamedCaller) as mismatch:
        Agents(main="support-desk").of_hook({"agent_type": "filedesk"})  # an 'agent' setting
    assert str(mismatch.value) == MAIN_MISMATCH.format(named="support-desk", running="filedesk")


def test_a_subagent_is_named_by_its_type_and_an_unknown_one_is_refused() -> None:
    agents = Agents(main="support-desk")
    assert agents.of_hook({"agent_id": "a1", "agent_type": "ticket-cleaner"}) == Caller("ticket-cleaner", "a1")
    assert agents.of_permission("a1") == Caller("ticket-cleaner", "a1")  # learnt from the hook
    assert agents.of_permission(None) == MAIN
    with pytest.raises(UnnamedCaller, match=UNKNOWN_AGENT):
        agents.of_permission("a2")
    with pytest.raises(UnnamedCaller, match=UNKNOWN_AGENT):
        agents.of_hook({"agent_id": "a2"})


def test_a_background_launch_that_finishes_before_its_subagent_starts_is_still_linked() -> None:
    agents = Agents(main="support-desk")
    agents.launch("toolu_1", MAIN, CLEANER, allowed=True)
    assert launching(agents)
    agents.finished("toolu_1")  # the CLI sent PostToolUse first
    assert launching(agents)  # a subagent is still about to start
    agents.started("a-cleaner", "ticket-cleaner")
    assert not launching(agents) and agents.live == {"a-cleaner"}
    assert agents.context(Caller("ticket-cleaner", "a-cleaner")) == {
        "agent_id": "a-cleaner",
        "parent_agent": "support-desk",
        "parent_agent_id": None,
        "parent_tool_use_id": "toolu_1",
    }
    assert agents.launches == {}


def test_a_launch_waiting_for_review_is_not_taken_for_the_one_that_started() -> None:
    agents = Agents(main="support-desk")
    agents.launch("toolu_main", MAIN, CLEANER, allowed=False)  # held: the policy asks about it
    agents.launch("toolu_nested", DISPATCHER, CLEANER, allowed=True)
    agents.started("a-cleaner", "ticket-cleaner")
    assert agents.context(Caller("ticket-cleaner", "a-cleaner"))["parent_tool_use_id"] == "toolu_nested"
    agents.allowed("toolu_main")  # can_use_tool approved it: its subagent starts next
    agents.started("a-cleaner-2", "ticket-cleaner")
    assert agents.context(Caller("ticket-cleaner", "a-cleaner-2"))["parent_tool_use_id"] == "toolu_main"


def test_concurrent_launches_by_different_agents_leave_the_parent_unknown_rather_than_guessed() -> None:
    agents = Agents(main="support-desk")
    agents.launch("toolu_main", MAIN, CLEANER, allowed=True)
    agents.launch("toolu_nested", DISPATCHER, {}, allowed=True)  # no type given: may start any
    agents.started("a-cleaner", "ticket-cleaner")
    assert agents.context(Caller("ticket-cleaner", "a-cleaner")) == {"agent_id": "a-cleaner"}
    assert launching(agents)  # one launch has not started its subagent yet
    agents.started("a-other", "general-purpose")
    assert not launching(agents)


def test_concurrent_launches_by_one_agent_name_the_parent_but_not_the_call() -> None:
    agents = Agents(main="support-desk")
    agents.launch("toolu_1", DISPATCHER, CLEANER, allowed=True)
    agents.launch("toolu_2", DISPATCHER, CLEANER, allowed=True)
    agents.started("a-cleaner", "ticket-cleaner")
    assert agents.context(Caller("ticket-cleaner", "a-cleaner")) == {
        "agent_id": "a-cleaner",
        "parent_agent": "dispatcher",
        "parent_agent_id": "a-dispatcher",
        "parent_tool_use_id": None,
    }


def test_a_refused_or_failed_launch_leaves_nothing_running() -> None:
    agents = Agents(main="support-desk")
    agents.launch("toolu_denied", MAIN, CLEANER, allowed=False)
    agents.refused("toolu_denied")
    assert not launching(agents)
    agents.launch("toolu_1", MAIN, CLEANER, allowed=True)
    agents.started("a-cleaner", "ticket-cleaner")
    agents.failed("toolu_1")  # the CLI refused the subagent after SubagentStart, and sends no SubagentStop
    assert agents.live == set() and not launching(agents)
