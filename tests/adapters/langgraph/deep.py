"""A Deep Agents ticket agent behind crossgate, for ``test_deepagents.py`` and its other processes.

The main agent holds ``delete_ticket`` and ``read_ticket`` behind ``crossgate_middleware``; its ``cleaner``
subagent (a declarative ``SubAgent``, run by Deep Agents' ``task`` tool) holds its own instances behind its
own ``crossgate_middleware``. ``interrupt_on`` is what a Deep Agents user writes; crossgate imports it as
policy (LangChain's default: an unlisted tool runs) instead of handing it to ``create_deep_agent``. The models
are scripted and answer from their input alone, so any process rebuilds the same agent.

``python -c '...main()' VERB DB CHECKPOINTS TICKETS PIN MODE ARG`` with VERB ``park`` (run through a gate
to the pause; ARG is the thread; prints ``{"parked_run", "request_ids"}``), ``pause`` (run the agent
without a gate, as a process that dies before it parks; ARG is the thread) or ``resume`` (ARG is the
parked run; prints ``{"finished", "answer"}``). A crossgate error exits 3 with its class name on stderr.
"""

from __future__ import annotations

import asyncio
import json
import re
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from deepagents import create_deep_agent
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage
from langchain_core.tools import BaseTool, StructuredTool

from crossgate import CrossgateError, Policy, ReviewQueue, VerdictKind, open_store
from crossgate.policy import import_interrupt_on
from crossgate.runs import Finished, Parked
from crossgate_langgraph import Gate, crossgate_middleware, open_checkpointer
from crossgate_langgraph.testing import ScriptedChatModel, tool_call
from tests.conformance.tickets import TicketStore

ROOT = Path(__file__).resolve().parents[3]
INTERRUPT_ON = {"delete_ticket": {"allowed_decisions": ["approve", "reject"]}, "read_ticket": False}
POLICY = Policy(rules=tuple(import_interrupt_on(INTERRUPT_ON)), default=VerdictKind.ALLOW)
EVERY_DECISION = Policy(
    rules=tuple(import_interrupt_on({"delete_ticket": True, "read_ticket": False})), default=VerdictKind.ALLOW
)
"""``interrupt_on`` with ``True`` for ``delete_ticket``: every decision is allowed."""
NAME = "deep-tickets"
MAIN_FINAL = "The tickets are handled."


def task(ticket: str, call_id: str = "call_task", subagent: str = "cleaner") -> dict[str, Any]:
    """A call of Deep Agents' ``task`` tool: ``subagent`` (the cleaner) deletes ``ticket``, then reads t1."""
    return tool_call(
        "task", {"description": f"Delete ticket {ticket}, then read t1.", "subagent_type": subagent}, call_id
    )


def manager_reply(messages: Sequence[BaseMessage]) -> AIMessage:
    """A subagent of the main agent that hands its brief on to its own cleaner subagent, then reports."""
    brief = next(str(m.content) for m in messages if isinstance(m, HumanMessage))
    found = re.search(r"ticket (t\d+)", brief)
    if not any(isinstance(m, AIMessage) for m in messages):
        return AIMessage(content="", tool_calls=[task(found.group(1) if found else "?", "call_inner")])
    return AIMessage(content="The manager is done.")


def delete(ticket: str, call_id: str) -> dict[str, Any]:
    return tool_call("delete_ticket", {"id": ticket}, call_id)


def cleaner_reply(messages: Sequence[BaseMessage]) -> AIMessage:
    """The subagent: delete the ticket its task names and read t1 (the same call ids every time), then report.

    Every cleaner reuses ``call_del`` and ``call_read``, as scripted and some real models do. Its brief is
    the last human message (a forked cleaner also sees the parent's conversation before it).
    """
    last = max(i for i, m in enumerate(messages) if isinstance(m, HumanMessage))
    found = re.search(r"ticket (t\d+)", str(messages[last].content))
    ticket = found.group(1) if found else "?"
    if not any(isinstance(m, AIMessage) for m in messages[last:]):
        return AIMessage(
            content="", tool_calls=[delete(ticket, "call_del"), tool_call("read_ticket", {"id": "t1"}, "call_read")]
        )
    return AIMessage(content=f"{ticket} handled.")


class Tools:
    """The ticket tools of one agent; ``reads`` logs every run of ``read_ticket``'s body."""

    def __init__(self, tickets: TicketStore, reads: list[str]) -> None:
        self.tickets, self.reads = tickets, reads

    def build(self) -> list[BaseTool]:
        def delete_ticket(id: str) -> str:
            """Delete a ticket by id. This cannot be undone."""
            return self.tickets.delete(id)

        def read_ticket(id: str) -> str:
            """Read a ticket by id."""
            self.reads.append(id)
            return f"ticket {id} is open"

        return [StructuredTool.from_function(f) for f in (delete_ticket, read_ticket)]


def deep_agent(
    queue: ReviewQueue,
    tickets: TicketStore,
    saver: Any,
    mode: str,
    main_calls: Sequence[dict[str, Any]],
    *,
    reads: list[str] | None = None,
    record_to: Path | None = None,
    cleaner_agent: str | None = None,
    shape: str = "declarative",
) -> tuple[Any, ScriptedChatModel, ScriptedChatModel]:
    """The deep agent, its main model and its cleaner's model; the main model's first turn makes ``main_calls``.

    ``cleaner_agent`` names the subagent's calls (default: the gate's name for the run, as the main agent's).
    ``shape`` is where the cleaner sits: ``declarative`` (a ``SubAgent`` spec of the main agent),
    ``compiled`` (a ``CompiledSubAgent``: a ``create_agent`` runnable the user built with
    ``crossgate_middleware``, which Deep Agents runs as given) or ``nested`` (a declarative subagent of a
    ``manager``, itself a deep agent the main agent holds as a ``CompiledSubAgent``; the main model then
    calls ``task(..., subagent="manager")``) or ``fork`` (a declarative subagent with ``mode="fork"``: it
    continues the parent's conversation, its middleware replacing the parent's of the same name).
    """
    reads = [] if reads is None else reads
    main_tools, cleaner_tools = Tools(tickets, reads).build(), Tools(tickets, reads).build()
    cleaner_model = ScriptedChatModel(reply=cleaner_reply, record_to=record_to)
    middleware = crossgate_middleware(queue, cleaner_tools, interrupt_mode=mode, agent=cleaner_agent)
    description = "Deletes and reads support tickets."
    cleaner: dict[str, Any]
    if shape == "compiled":
        runnable = create_agent(
            model=cleaner_model,
            tools=cleaner_tools,
            system_prompt="You clean up support tickets.",
            middleware=middleware,
            name="cleaner",
        )
        cleaner = {"name": "cleaner", "description": description, "runnable": runnable}
    else:
        cleaner = {
            "name": "cleaner",
            "description": description,
            "system_prompt": "You clean up support tickets.",
            "model": cleaner_model,
            "tools": cleaner_tools,
            "middleware": middleware,
        }
        if shape == "fork":
            cleaner["mode"] = "fork"
    if shape == "nested":
        manager = create_deep_agent(model=ScriptedChatModel(reply=manager_reply), subagents=[cleaner], name="manager")
        cleaner = {"name": "manager", "description": "Hands ticket work to its cleaner.", "runnable": manager}
    main_model = ScriptedChatModel(turns=[AIMessage(content="", tool_calls=list(main_calls))], final=MAIN_FINAL)
    agent = create_deep_agent(
        model=main_model,
        tools=main_tools,
        subagents=[cleaner],
        middleware=crossgate_middleware(queue, main_tools, interrupt_mode=mode),
        checkpointer=saver,
        name=NAME,
    )
    return agent, main_model, cleaner_model


def inputs_file(checkpoints: str) -> Path:
    """Where the other processes' cleaner model records its inputs (``recorded_inputs`` reads them)."""
    return Path(checkpoints).with_suffix(".inputs.jsonl")


def command(*args: str) -> list[str]:
    """argv running :func:`main` with ``args`` in a fresh interpreter."""
    code = f"import sys; sys.path.insert(0, {str(ROOT)!r}); from tests.adapters.langgraph.deep import main; main()"
    return [sys.executable, "-c", code, *args]


async def _run(
    verb: str, queue: ReviewQueue, checkpoints: str, tickets: TicketStore, pin: str, mode: str, arg: str
) -> None:
    async with open_checkpointer(checkpoints) as saver:
        agent, _, _ = deep_agent(queue, tickets, saver, mode, [task("t3")], record_to=inputs_file(checkpoints))
        if verb == "pause":
            await agent.ainvoke({"messages": [("user", "Clean up t3.")]}, {"configurable": {"thread_id": arg}})
            return
        gate = Gate(queue, agent, authority=pin)
        if verb == "park":
            outcome = await gate.run(agent, {"messages": [("user", "Clean up t3.")]}, thread=arg)
            assert isinstance(outcome, Parked), outcome
            print(json.dumps({"parked_run": outcome.parked_run, "request_ids": list(outcome.request_ids)}))
            return
        done = await gate.resume(arg)
        answer = done.result["messages"][-1].content if isinstance(done, Finished) else None
        print(json.dumps({"finished": isinstance(done, Finished), "answer": answer}))


def main(argv: Sequence[str] | None = None) -> None:
    """Dispatch ``park``, ``pause`` or ``resume`` (see the module docstring)."""
    verb, db, checkpoints, tickets_path, pin, mode, arg = list(sys.argv[1:] if argv is None else argv)
    queue = ReviewQueue(open_store(db), POLICY)  # the agent's side: it holds no key, it verifies with the pin
    try:
        asyncio.run(_run(verb, queue, checkpoints, TicketStore(Path(tickets_path)), pin, mode, arg))
    except CrossgateError as exc:
        print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
        raise SystemExit(3) from exc
    finally:
        queue.close()
