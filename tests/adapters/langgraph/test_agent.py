"""Real ``create_agent`` agents behind crossgate's middleware, in per_call and batched mode."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.messages import ToolMessage

from crossgate import Approve, Edit, Reject, RequestStatus, Respond, ReviewQueue
from crossgate.runs import Finished, Parked
from crossgate_langgraph import Gate
from tests.adapters.langgraph.worlds import DROP, READ, SQL, WRITE, OpsTools, ops_agent, ops_model

MODES = ["per_call", "batched"]
INPUT = {"messages": [("user", "Archive the report and clean up users.")]}


async def start(
    queue: ReviewQueue, saver: Any, mode: str, *calls: dict[str, Any]
) -> tuple[Any, Gate, Parked, OpsTools, Any]:
    tools = OpsTools()
    model = ops_model(*calls)
    agent = ops_agent(queue, tools, model, saver, mode)
    gate = Gate(queue, agent)
    outcome = await gate.run(agent, INPUT, thread=f"ops-{mode}")
    assert isinstance(outcome, Parked), outcome
    return agent, gate, outcome, tools, model


def by_tool(queue: ReviewQueue, outcome: Parked) -> dict[str, str]:
    return {queue.get(r).call.tool: r for r in outcome.request_ids}


def told(model: Any) -> dict[str, ToolMessage]:
    """The tool messages of the model's latest input, by tool call id."""
    return {m.tool_call_id: m for m in model.received[-1] if isinstance(m, ToolMessage)}


@pytest.mark.parametrize("mode", MODES)
async def test_approve_runs_each_gated_call_once_and_ungated_calls_run(ops_queue, saver, mode: str) -> None:
    _, gate, outcome, tools, model = await start(ops_queue, saver, mode, WRITE, SQL, READ)
    requests = by_tool(ops_queue, outcome)
    assert sorted(requests) == ["execute_sql", "write_file"]  # read_data is allowed: never a request
    assert "write_file" not in tools.names() and "execute_sql" not in tools.names()
    assert tools.names() == (["read_data"] if mode == "per_call" else [])  # batched holds the whole turn
    for request_id in requests.values():
        ops_queue.decide(request_id, Approve(), reviewer="ann")
    done = await gate.resume(outcome.parked_run)
    assert isinstance(done, Finished)
    assert sorted(tools.names()) == ["execute_sql", "read_data", "write_file"]
    messages = told(model)
    assert messages["call_write"].content == "wrote 5 bytes to report.txt"
    assert messages["call_sql"].content == "1 row affected"
    assert messages["call_read"].content == "3 rows from users"
    assert all(ops_queue.get(r).status is RequestStatus.APPLIED for r in requests.values())


@pytest.mark.parametrize("mode", MODES)
async def test_a_pause_that_cannot_be_parked_leaves_no_request(
    ops_queue, saver, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The paused calls' requests are stored in the parked run's transaction: none is left for a
    # reviewer when the run cannot be parked (it could never be resumed).
    def refuse(**_: Any) -> None:
        raise RuntimeError("the store refused the parked run")

    monkeypatch.setattr(ops_queue, "park", refuse)
    tools = OpsTools()
    agent = ops_agent(ops_queue, tools, ops_model(WRITE, SQL, READ), saver, mode)
    with pytest.raises(RuntimeError, match="refused the parked run"):
        await Gate(ops_queue, agent).run(agent, INPUT, thread=f"ops-{mode}")
    assert ops_queue.list_requests().items == []
    assert "write_file" not in tools.names() and "execute_sql" not in tools.names()


@pytest.mark.parametrize("mode", MODES)
async def test_edit_runs_the_reviewers_arguments_and_the_model_is_told(ops_queue, saver, mode: str) -> None:
    _, gate, outcome, tools, model = await start(ops_queue, saver, mode, WRITE)
    [request_id] = outcome.request_ids
    ops_queue.decide(request_id, Edit(args={"path": "archive/report.txt", "content": "hello"}), reviewer="ann")
    await gate.resume(outcome.parked_run)
    assert tools.ran == [("write_file", {"path": "archive/report.txt", "content": "hello"})]
    content = str(told(model)["call_write"].content)
    assert "a human reviewer replaced this tool call" in content
    assert "wrote 5 bytes to archive/report.txt" in content


@pytest.mark.parametrize("mode", MODES)
async def test_reject_runs_nothing_and_the_models_next_input_has_the_message(ops_queue, saver, mode: str) -> None:
    _, gate, outcome, tools, model = await start(ops_queue, saver, mode, SQL)
    [request_id] = outcome.request_ids
    ops_queue.decide(request_id, Reject(message="Never delete users."), reviewer="ann")
    done = await gate.resume(outcome.parked_run)
    assert isinstance(done, Finished)
    assert tools.ran == []
    message = told(model)["call_sql"]
    assert "Never delete users." in str(message.content)
    assert message.status == "error"
    assert ops_queue.get(request_id).status is RequestStatus.REJECTED


@pytest.mark.parametrize("mode", MODES)
async def test_respond_answers_as_the_tool(ops_queue, saver, mode: str) -> None:
    _, gate, outcome, tools, model = await start(ops_queue, saver, mode, WRITE)
    ops_queue.decide(outcome.request_ids[0], Respond(content="report.txt already exists"), reviewer="ann")
    await gate.resume(outcome.parked_run)
    assert tools.ran == []
    message = told(model)["call_write"]
    assert message.content == "report.txt already exists"
    assert message.status == "success"


@pytest.mark.parametrize("mode", MODES)
async def test_a_deny_verdict_never_runs_and_never_asks(ops_queue, saver, mode: str) -> None:
    tools = OpsTools()
    model = ops_model(DROP, READ)
    agent = ops_agent(ops_queue, tools, model, saver, mode)
    done = await Gate(ops_queue, agent).run(agent, INPUT, thread="deny")
    assert isinstance(done, Finished)
    assert tools.names() == ["read_data"]
    assert ops_queue.pending() == []
    assert "Dropping tables is forbidden" in str(told(model)["call_drop"].content)
    assert [e.kind for e in ops_queue.events()].count("auto_denied") == 1


@pytest.mark.parametrize("mode", MODES)
async def test_the_policy_narrows_allowed_decisions_per_tool(ops_queue, saver, mode: str) -> None:
    agent, _, outcome, _, _ = await start(ops_queue, saver, mode, WRITE, SQL)
    requests = by_tool(ops_queue, outcome)
    assert [k.value for k in ops_queue.get(requests["execute_sql"]).allowed_decisions] == ["approve", "reject"]
    assert len(ops_queue.get(requests["write_file"]).allowed_decisions) == 4
    assert ops_queue.get(requests["execute_sql"]).description == "SQL statements need DBA approval"
    values = [i.value for i in (await agent.aget_state({"configurable": {"thread_id": f"ops-{mode}"}})).interrupts]
    if mode == "batched":
        [value] = values
        assert [c["allowed_decisions"] for c in value["review_configs"]] == [
            ["approve", "edit", "reject", "respond"],
            ["approve", "reject"],
        ]
    else:
        assert sorted(v["name"] for v in values) == ["execute_sql", "write_file"]


async def test_parallel_interrupts_answered_one_at_a_time_by_id(ops_queue, saver) -> None:
    agent, gate, outcome, tools, _ = await start(ops_queue, saver, "per_call", WRITE, SQL)
    config = {"configurable": {"thread_id": "ops-per_call"}}
    first_ids = sorted(i.id for i in (await agent.aget_state(config)).interrupts)
    requests = by_tool(ops_queue, outcome)
    ops_queue.decide(requests["write_file"], Approve(), reviewer="ann")
    assert await gate.resume(outcome.parked_run) == outcome  # not all decided: nothing happens
    second = await gate.resume(outcome.parked_run, partial=True)
    assert isinstance(second, Parked)
    assert second.request_ids == (requests["execute_sql"],)
    assert tools.names() == ["write_file"]
    [left] = (await agent.aget_state(config)).interrupts
    assert left.id in first_ids  # the unanswered interrupt keeps its id
    ops_queue.decide(requests["execute_sql"], Reject(message="Not today."), reviewer="ann")
    done = await gate.resume(second.parked_run)
    assert isinstance(done, Finished)
    assert tools.names() == ["write_file"]


async def test_parallel_interrupts_answered_all_at_once_by_id(ops_queue, saver) -> None:
    agent, gate, outcome, tools, model = await start(ops_queue, saver, "per_call", WRITE, SQL)
    requests = by_tool(ops_queue, outcome)
    ops_queue.decide(requests["execute_sql"], Approve(), reviewer="ann")
    ops_queue.decide(requests["write_file"], Reject(message="Keep the old report."), reviewer="ann")
    parked_state = ops_queue.get_parked(outcome.parked_run).state
    pending = (await agent.aget_state({"configurable": {"thread_id": "ops-per_call"}})).interrupts
    assert all(i.id in parked_state for i in pending)
    assert len(pending) == 2
    done = await gate.resume(outcome.parked_run)
    assert isinstance(done, Finished)
    assert tools.names() == ["execute_sql"]
    assert "Keep the old report." in str(told(model)["call_write"].content)


async def test_batched_mode_cannot_be_answered_in_part(ops_queue, saver) -> None:
    _, gate, outcome, tools, _ = await start(ops_queue, saver, "batched", WRITE, SQL)
    requests = by_tool(ops_queue, outcome)
    ops_queue.decide(requests["write_file"], Approve(), reviewer="ann")
    assert await gate.resume(outcome.parked_run, partial=True) == outcome
    assert tools.ran == []
    ops_queue.decide(requests["execute_sql"], Approve(), reviewer="ann")
    assert isinstance(await gate.resume(outcome.parked_run), Finished)
    assert sorted(tools.names()) == ["execute_sql", "write_file"]


async def test_a_standing_rule_changed_while_paused_does_not_misalign_a_batch(saver) -> None:
    from crossgate import MemoryStore, Policy, PolicyRule, VerdictKind

    queue = ReviewQueue(
        MemoryStore(), Policy(rules=(PolicyRule(name="w", verdict=VerdictKind.ASK, tool="write_file"),))
    )
    rule = queue.add_rule(queue.new_rule(effect=VerdictKind.ALLOW, tool="read_data"))
    _, gate, outcome, tools, model = await start(queue, saver, "batched", WRITE, READ)
    [request_id] = outcome.request_ids
    queue.revoke_rule(rule.id)  # read_data would now ask: the paused turn must not change shape
    queue.decide(request_id, Approve(), reviewer="ann")
    done = await gate.resume(outcome.parked_run)
    assert isinstance(done, Finished)
    assert tools.names() == ["write_file"]  # read_data now needs review it never had: it does not run
    assert "needs a person's approval" in str(told(model)["call_read"].content)


async def test_a_standing_allow_added_while_paused_does_not_override_a_rejection(ops_queue, saver) -> None:
    from crossgate import VerdictKind

    _, gate, outcome, tools, model = await start(ops_queue, saver, "per_call", WRITE)
    ops_queue.decide(outcome.request_ids[0], Reject(message="Not this file."), reviewer="ann")
    ops_queue.add_rule(ops_queue.new_rule(effect=VerdictKind.ALLOW, tool="write_file"))
    await gate.resume(outcome.parked_run)
    assert tools.ran == []
    assert "Not this file." in str(told(model)["call_write"].content)
