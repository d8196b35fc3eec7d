"""Process entry points for the cross-process tests: park the seed graph, or resume a parked run.

``python -c '...main()' park DB CHECKPOINTS TICKETS THREAD TICKET`` prints ``{"parked_run", "request_ids"}``;
``python -c '...main()' resume DB CHECKPOINTS TICKETS PARKED_RUN`` prints the outcome and exits 0, or
prints the error's class name on stderr and exits 3.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from crossgate import CrossgateError, ReviewQueue, open_store
from crossgate.runs import Finished, Parked
from crossgate_langgraph import Gate, open_checkpointer
from tests.adapters.langgraph.worlds import ticket_graph
from tests.conformance.tickets import TicketStore

ROOT = Path(__file__).resolve().parents[3]


def command(*args: str) -> list[str]:
    """argv running :func:`main` with ``args`` in a fresh interpreter."""
    code = f"import sys; sys.path.insert(0, {str(ROOT)!r}); from tests.adapters.langgraph.procs import main; main()"
    return [sys.executable, "-c", code, *args]


async def _park(queue: ReviewQueue, checkpoints: str, tickets: TicketStore, thread: str, ticket: str) -> None:
    async with open_checkpointer(checkpoints) as saver:
        graph = ticket_graph(queue, tickets, saver, [])
        outcome = await Gate(queue, graph).run(graph, {"ticket_id": ticket}, thread=thread)
    assert isinstance(outcome, Parked)
    print(json.dumps({"parked_run": outcome.parked_run, "request_ids": list(outcome.request_ids)}))


async def _resume(queue: ReviewQueue, checkpoints: str, tickets: TicketStore, parked_run: str) -> None:
    async with open_checkpointer(checkpoints) as saver:
        graph = ticket_graph(queue, tickets, saver, [])
        outcome = await Gate(queue, graph).resume(parked_run)
    print(json.dumps({"finished": isinstance(outcome, Finished), "result": getattr(outcome, "result", None)}))


def main(argv: Sequence[str] | None = None) -> None:
    """Dispatch ``park`` or ``resume``."""
    args = list(sys.argv[1:] if argv is None else argv)
    verb, db, checkpoints, tickets_path, *rest = args
    queue = ReviewQueue(open_store(db))
    tickets = TicketStore(Path(tickets_path))
    try:
        if verb == "park":
            asyncio.run(_park(queue, checkpoints, tickets, rest[0], rest[1]))
        else:
            asyncio.run(_resume(queue, checkpoints, tickets, rest[0]))
    except CrossgateError as exc:
        print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
        raise SystemExit(3) from exc
    finally:
        queue.close()
