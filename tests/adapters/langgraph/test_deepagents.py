"""Deep Agents (``deepagents``) through crossgate: the main agent's calls and its subagents' wait in one queue.

Deep Agents builds LangChain's ``HumanInTheLoopMiddleware`` from ``interrupt_on`` for the main agent and
hands it down to each subagent. Through crossgate, ``interrupt_on`` becomes policy and each agent gets
``crossgate_middleware`` instead (``tests/adapters/langgraph/deep.py``). A subagent runs inside the main
agent's ``task`` tool, on the same thread, with messages of its own that the thread's state does not hold:
its pause reaches the gate as a pause of the ``task`` call, and the gate finds the call among those the
subagent's middleware paused for. Decisions are signed by the queue and verified where tools run; every
resume runs on a new queue object, graph and checkpointer connection over the same files, as another
process would. The models are scripted; everything else is the real SDK.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("deepagents")

from langchain_core.messages import BaseMessage, HumanMessage, ToolMessage

from crossgate import (
    AdapterError,
    Approve,
    Edit,
    ParkedRunClaimedError,
    Policy,
    Reject,
    RequestStatus,
    Respond,
    ReviewQueue,
    open_store,
)
from crossgate.authority import Authority
from crossgate.model import Decision
from crossgate.runs import Finished, Parked
from crossgate_langgraph import Gate, open_checkpointer
from crossgate_langgraph.testing import ScriptedChatModel, recorded_inputs
from tests.adapters.langgraph.deep import (
    EVERY_DECISION,
    MAIN_FINAL,
    NAME,
    POLICY,
    command,
    deep_agent,
    delete,
    inputs_file,
    task,
)
from tests.conformance.tickets import TicketStore

MODES = ["per_call", "batched"]
KEEP = "Keep t3 for the audit."
ASK = {"messages": [("user", "Clean up the spam tickets.")]}


def rejected(tool: str, message: str) -> str:
    """What LangChain's middleware tells the model for a rejection: the reviewer's message, verbatim, inside."""
    return f"User rejected the tool call for `{tool}` with reason: {message}"


@dataclass
class Deep:
    """One process's view: a queue object, the deep agent on a checkpointer connection, its models and gate."""

    queue: ReviewQueue
    agent: Any
    main: ScriptedChatModel
    cleaner: ScriptedChatModel
    gate: Gate
    reads: list[str] = field(default_factory=list)


@pytest.fixture
def authority() -> Authority:
    return Authority.generate()


@pytest.fixture
async def world(tmp_path: Path, tickets: TicketStore, authority: Authority) -> AsyncIterator[Callable[..., Any]]:
    async with AsyncExitStack() as stack:

        async def fresh(
            mode: str,
            main_calls: Sequence[dict[str, Any]],
            policy: Policy = POLICY,
            cleaner_agent: str | None = None,
            shape: str = "declarative",
        ) -> Deep:
            queue = ReviewQueue(open_store(str(tmp_path / "queue.db")), policy, authority=authority)
            stack.callback(queue.close)
            saver = await stack.enter_async_context(open_checkpointer(str(tmp_path / "checkpoints.db")))
            reads: list[str] = []
            agent, main, cleaner = deep_agent(
                queue, tickets, saver, mode, main_calls, reads=reads, cleaner_agent=cleaner_agent, shape=shape
            )
            return Deep(queue, agent, main, cleaner, Gate(queue, agent), reads)

        yield fresh


def told(inputs: Sequence[BaseMessage]) -> dict[str, ToolMessage]:
    """The tool results in one model input, by call id."""
    return {m.tool_call_id: m for m in inputs if isinstance(m, ToolMessage)}


def cleaner_input(model: ScriptedChatModel, ticket: str) -> dict[str, ToolMessage]:
    """What the cleaner working on ``ticket`` read in its last turn."""
    brief = f"Delete ticket {ticket}, then read t1."
    briefed = [i for i in model.received if any(isinstance(m, HumanMessage) for m in i)]
    inputs = [i for i in briefed if any(str(m.content).endswith(brief) for m in i if isinstance(m, HumanMessage))]
    return told(inputs[-1])


def assert_t3_decided(
    queue: ReviewQueue, tickets: TicketStore, request_id: str, decision: Decision, result: ToolMessage
) -> None:
    """After an approval t3 is deleted once and the agent read so; after a rejection nothing ran and it read why."""
    if isinstance(decision, Approve):
        assert (tickets.ids(), tickets.delete_runs("t3")) == (["t1", "t2"], 1)
        assert result.content == "deleted ticket t3"
        assert queue.get(request_id).status is RequestStatus.APPLIED
    else:
        assert (tickets.ids(), tickets.delete_runs()) == (["t1", "t2", "t3"], 0)
        assert (result.content, result.status) == (rejected("delete_ticket", KEEP), "error")
        assert queue.get(request_id).status is RequestStatus.REJECTED


async def park(deep: Deep, thread: str) -> Parked:
    outcome = await deep.gate.run(deep.agent, ASK, thread=thread)
    assert isinstance(outcome, Parked), outcome
    return outcome


# the main agent's own call -------------------------------------------------------------------------
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("decision", [Approve(), Reject(message=KEEP)], ids=["approve", "reject"])
async def test_a_main_agent_call_waits_for_the_reviewer_and_gets_their_decision(
    world, tickets: TicketStore, mode: str, decision: Decision
) -> None:
    outcome = await park(await world(mode, [delete("t3", "call_t3")]), f"main-{mode}")
    [request_id] = outcome.request_ids
    waiting = await world(mode, [delete("t3", "call_t3")])
    request = waiting.queue.get(request_id)
    assert (request.call.tool, request.call.args, request.call.agent) == ("delete_ticket", {"id": "t3"}, NAME)
    assert [k.value for k in request.allowed_decisions] == ["approve", "reject"]
    assert tickets.delete_runs() == 0, "nothing runs while the request is pending"

    waiting.queue.decide(request_id, decision, reviewer="ann")
    later = await world(mode, [delete("t3", "call_t3")])
    done = await later.gate.resume(outcome.parked_run)
    assert isinstance(done, Finished), done
    result = told(later.main.received[-1])["call_t3"]
    assert_t3_decided(later.queue, tickets, request_id, decision, result)
    assert done.result["messages"][-1].content == MAIN_FINAL


# a subagent's call ---------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", MODES)
async def test_a_subagents_call_parks_the_deep_agent_and_an_approval_runs_it_once(
    world, tickets: TicketStore, mode: str
) -> None:
    first = await world(mode, [task("t3")])
    outcome = await park(first, f"sub-{mode}")
    [request_id] = outcome.request_ids  # read_ticket is interrupt_on False: it never becomes a request
    request = first.queue.get(request_id)
    assert (request.call.tool, request.call.args, request.call.call_id) == ("delete_ticket", {"id": "t3"}, "call_del")
    assert (request.call.run, request.call.agent) == (f"sub-{mode}", NAME), "the deep agent's thread and name"
    assert [k.value for k in request.allowed_decisions] == ["approve", "reject"]
    assert tickets.delete_runs() == 0, "nothing runs while the request is pending"

    first.queue.decide(request_id, Approve(), reviewer="ann")
    later = await world(mode, [task("t3")])
    done = await later.gate.resume(outcome.parked_run)
    assert isinstance(done, Finished), done
    assert (tickets.ids(), tickets.delete_runs("t3")) == (["t1", "t2"], 1)
    seen = cleaner_input(later.cleaner, "t3")
    assert seen["call_del"].content == "deleted ticket t3"
    assert seen["call_read"].content == "ticket t1 is open"
    assert first.reads + later.reads == ["t1"], "the allowed sibling ran once, before or after the pause"
    assert told(later.main.received[-1])["call_task"].content == "t3 handled."
    assert later.queue.get(request_id).status is RequestStatus.APPLIED
    assert done.result["messages"][-1].content == MAIN_FINAL

    again = await world(mode, [task("t3")])
    with pytest.raises(ParkedRunClaimedError):
        await again.gate.resume(outcome.parked_run)
    assert tickets.delete_runs() == 1, "a second resume runs nothing"


@pytest.mark.parametrize("mode", MODES)
async def test_a_rejected_subagent_call_does_not_run_and_the_subagent_reads_the_message(
    world, tickets: TicketStore, mode: str
) -> None:
    first = await world(mode, [task("t3")])
    outcome = await park(first, f"sub-reject-{mode}")
    [request_id] = outcome.request_ids
    first.queue.decide(request_id, Reject(message=KEEP), reviewer="ann")
    later = await world(mode, [task("t3")])
    done = await later.gate.resume(outcome.parked_run)
    assert isinstance(done, Finished), done
    assert (tickets.ids(), tickets.delete_runs()) == (["t1", "t2", "t3"], 0)
    seen = cleaner_input(later.cleaner, "t3")["call_del"]
    assert (seen.content, seen.status) == (rejected("delete_ticket", KEEP), "error")
    assert later.queue.get(request_id).status is RequestStatus.REJECTED
    assert told(later.main.received[-1])["call_task"].content == "t3 handled."


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    "decision", [Edit(args={"id": "t2"}), Respond(content="t3 was closed already.")], ids=["edit", "respond"]
)
async def test_a_subagents_call_edited_or_answered_by_the_reviewer(
    world, tickets: TicketStore, mode: str, decision: Decision
) -> None:
    first = await world(mode, [task("t3")], EVERY_DECISION)
    outcome = await park(first, f"sub-{type(decision).__name__}-{mode}")
    [request_id] = outcome.request_ids
    assert [k.value for k in first.queue.get(request_id).allowed_decisions] == ["approve", "edit", "reject", "respond"]
    first.queue.decide(request_id, decision, reviewer="ann")
    later = await world(mode, [task("t3")], EVERY_DECISION)
    done = await later.gate.resume(outcome.parked_run)
    assert isinstance(done, Finished), done
    seen = cleaner_input(later.cleaner, "t3")["call_del"]
    if isinstance(decision, Edit):
        assert (tickets.ids(), tickets.delete_runs("t2"), tickets.delete_runs("t3")) == (["t1", "t3"], 1, 0)
        assert "deleted ticket t2" in str(seen.content)
        assert "a human reviewer replaced this tool call" in str(seen.content)
        assert later.queue.get(request_id).status is RequestStatus.APPLIED
    else:
        assert (tickets.ids(), tickets.delete_runs()) == (["t1", "t2", "t3"], 0)
        assert (seen.content, seen.status) == ("t3 was closed already.", "success")
        assert later.queue.get(request_id).status is RequestStatus.ANSWERED


async def test_a_subagent_named_in_its_middleware_asks_under_its_own_name(world, tickets: TicketStore) -> None:
    first = await world("per_call", [task("t3")], cleaner_agent="cleaner")
    outcome = await park(first, "named")
    [request_id] = outcome.request_ids
    assert first.queue.get(request_id).call.agent == "cleaner"
    first.queue.decide(request_id, Approve(), reviewer="ann")
    later = await world("per_call", [task("t3")], cleaner_agent="cleaner")
    assert isinstance(await later.gate.resume(outcome.parked_run), Finished)
    assert tickets.delete_runs("t3") == 1


SHAPES = {"compiled": ("compiled", "cleaner"), "nested": ("nested", "manager"), "fork": ("fork", "cleaner")}
"""A cleaner the user compiled (``CompiledSubAgent``), one a subagent holds (``manager``'s own subagent), and a
forked one (``mode="fork"``: it continues the parent's conversation)."""


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("decision", [Approve(), Reject(message=KEEP)], ids=["approve", "reject"])
async def test_a_compiled_or_nested_subagents_call_waits_for_the_reviewer_and_gets_their_decision(
    world, tickets: TicketStore, mode: str, shape: str, decision: Decision
) -> None:
    kind, subagent = SHAPES[shape]
    calls = [task("t3", subagent=subagent)]
    first = await world(mode, calls, shape=kind)
    outcome = await park(first, f"{shape}-{type(decision).__name__}-{mode}")
    [request_id] = outcome.request_ids
    request = first.queue.get(request_id)
    assert (request.call.tool, request.call.args, request.call.call_id) == ("delete_ticket", {"id": "t3"}, "call_del")
    assert tickets.delete_runs() == 0, "nothing runs while the request is pending"

    first.queue.decide(request_id, decision, reviewer="ann")
    later = await world(mode, calls, shape=kind)
    done = await later.gate.resume(outcome.parked_run)
    assert isinstance(done, Finished), done
    seen = cleaner_input(later.cleaner, "t3")["call_del"]
    assert_t3_decided(later.queue, tickets, request_id, decision, seen)
    if shape == "fork":
        forked = [i for i in later.cleaner.received if any(m.content == ASK["messages"][0][1] for m in i)]
        assert forked, "a forked cleaner continues the parent's conversation"
    reported = "The manager is done." if shape == "nested" else "t3 handled."
    assert told(later.main.received[-1])["call_task"].content == reported

    again = await world(mode, calls, shape=kind)
    with pytest.raises(ParkedRunClaimedError):
        await again.gate.resume(outcome.parked_run)
    assert tickets.delete_runs() == (1 if isinstance(decision, Approve) else 0), "a second resume runs nothing"


# whose decision ------------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", MODES)
async def test_two_subagents_reusing_a_call_id_each_get_their_own_decision(
    world, tickets: TicketStore, mode: str
) -> None:
    calls = [task("t2", "call_task_a"), task("t3", "call_task_b")]  # both cleaners name their delete call_del
    first = await world(mode, calls)
    outcome = await park(first, f"two-{mode}")
    by_ticket = {first.queue.get(r).call.args["id"]: r for r in outcome.request_ids}
    assert sorted(by_ticket) == ["t2", "t3"], "one request per subagent's call, under its own id"
    first.queue.decide(by_ticket["t2"], Approve(), reviewer="ann")
    first.queue.decide(by_ticket["t3"], Reject(message=KEEP), reviewer="ann")

    later = await world(mode, calls)
    done = await later.gate.resume(outcome.parked_run)
    assert isinstance(done, Finished), done
    assert (tickets.ids(), tickets.delete_runs("t2"), tickets.delete_runs("t3")) == (["t1", "t3"], 1, 0)
    assert cleaner_input(later.cleaner, "t2")["call_del"].content == "deleted ticket t2"
    assert cleaner_input(later.cleaner, "t3")["call_del"].content == rejected("delete_ticket", KEEP)
    assert later.queue.get(by_ticket["t2"]).status is RequestStatus.APPLIED
    assert later.queue.get(by_ticket["t3"]).status is RequestStatus.REJECTED


async def test_the_main_agents_call_and_a_subagents_with_the_same_id_are_two_requests(
    world, tickets: TicketStore
) -> None:
    # Per call: the main agent's delete and its task run side by side, both pause in the same turn number.
    calls = [task("t3"), delete("t2", "call_del")]
    first = await world("per_call", calls)
    outcome = await park(first, "same-id")
    by_ticket = {first.queue.get(r).call.args["id"]: r for r in outcome.request_ids}
    assert sorted(by_ticket) == ["t2", "t3"]
    first.queue.decide(by_ticket["t2"], Reject(message="t2 stays."), reviewer="ann")
    first.queue.decide(by_ticket["t3"], Approve(), reviewer="ann")

    later = await world("per_call", calls)
    done = await later.gate.resume(outcome.parked_run)
    assert isinstance(done, Finished), done
    assert (tickets.ids(), tickets.delete_runs("t2"), tickets.delete_runs("t3")) == (["t1", "t2"], 0, 1)
    main_read = told(later.main.received[-1])
    assert main_read["call_del"].content == rejected("delete_ticket", "t2 stays.")
    assert main_read["call_task"].content == "t3 handled."
    assert cleaner_input(later.cleaner, "t3")["call_del"].content == "deleted ticket t3"


# other processes -----------------------------------------------------------------------------------
def run(argv: list[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=180, check=False)


@pytest.fixture
def files(tmp_path: Path, tickets: TicketStore, authority: Authority) -> list[str]:
    return [str(tmp_path / "queue.db"), str(tmp_path / "checkpoints.db"), str(tickets.path), authority.public_key.pin]


@pytest.mark.slow
@pytest.mark.parametrize("mode", MODES)
def test_park_in_one_process_decide_here_resume_in_another(
    files: list[str], tickets: TicketStore, authority: Authority, mode: str
) -> None:
    # The operator's queue holds the key: it signs a state head now and after each decision, as a server would.
    queue = ReviewQueue(open_store(files[0]), POLICY, authority=authority)
    try:
        parked = run(command("park", *files, mode, f"procs-{mode}"))
        assert parked.returncode == 0, parked.stderr[-2000:]
        out = json.loads(parked.stdout.strip().splitlines()[-1])
        [request_id] = out["request_ids"]
        assert queue.get(request_id).call.args == {"id": "t3"}
        queue.decide(request_id, Approve(), reviewer="ann")
        resumed = run(command("resume", *files, mode, out["parked_run"]))
        assert resumed.returncode == 0, resumed.stderr[-2000:]
        assert json.loads(resumed.stdout.strip().splitlines()[-1]) == {"finished": True, "answer": MAIN_FINAL}
        assert (tickets.ids(), tickets.delete_runs("t3")) == (["t1", "t2"], 1)
        last = told(recorded_inputs(inputs_file(files[1]), f"procs-{mode}")[-1])
        assert last["call_del"].content == "deleted ticket t3"

        again = run(command("resume", *files, mode, out["parked_run"]))
        assert again.returncode == 3 and "ParkedRunClaimedError" in again.stderr, again.stderr[-2000:]
        assert tickets.delete_runs() == 1, "a second resume in a third process runs nothing"
        assert queue.get(request_id).status is RequestStatus.APPLIED
        assert queue.verify_audit().ok
    finally:
        queue.close()


@pytest.mark.slow
@pytest.mark.parametrize("mode", MODES)
async def test_a_subagents_pause_no_kept_call_matches_is_refused_and_nothing_runs(
    world, files: list[str], tickets: TicketStore, mode: str
) -> None:
    # The process that ran the agent died before it parked: this one never saw the subagent pause.
    paused = run(command("pause", *files, mode, f"orphan-{mode}"))
    assert paused.returncode == 0, paused.stderr[-2000:]
    here = await world(mode, [task("t3")])
    with pytest.raises(AdapterError, match=r"(call_del|delete_ticket).*not parking it"):
        await here.gate.park(here.agent, thread=f"orphan-{mode}")
    assert here.queue.list_requests().items == [], "no request is left for a reviewer"
    assert here.queue.parked_runs() == [], "nothing parked"
    assert tickets.delete_runs() == 0
