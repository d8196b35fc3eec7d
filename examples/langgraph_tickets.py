"""A LangGraph node that asks crossgate before deleting a ticket; parked runs resumed once a person decided.

    python examples/langgraph_tickets.py

Offline: SQLite files for the queue, the checkpoints and the tickets, in a temporary folder. Thread
``a`` asks to delete t3 and a reviewer approves; thread ``b`` asks to delete t1 and a reviewer rejects.
Each run parks while it waits; a fresh gate (as another process would) resumes it.
"""

from __future__ import annotations

import asyncio
import sqlite3
import tempfile
from pathlib import Path
from typing import Any, TypedDict

from langgraph.graph import END, START, StateGraph

from crossgate import Approve, Edit, Reject, Respond, ReviewQueue, open_store
from crossgate.authority import Authority  # signs in this process; its gates verify with it
from crossgate.runs import Finished, Parked
from crossgate_langgraph import Gate, open_checkpointer, request_approval


class TicketState(TypedDict, total=False):
    ticket_id: str
    outcome: str


def build_graph(queue: ReviewQueue, tickets: Path, saver: Any) -> Any:
    """One node: ask crossgate, then delete (only after an approve or edit)."""

    def delete_ticket(state: TicketState) -> TicketState:
        # Everything above request_approval() runs again when the thread resumes: keep it side-effect free.
        args = {"id": state["ticket_id"]}
        decision = request_approval(queue, "delete_ticket", args)
        if isinstance(decision, Reject):
            return {"outcome": f"kept {args['id']}: {decision.message}"}
        if isinstance(decision, Respond):
            return {"outcome": f"answered: {decision.content}"}
        target = decision.args["id"] if isinstance(decision, Edit) else args["id"]
        with sqlite3.connect(tickets) as db:
            db.execute("DELETE FROM tickets WHERE id = ?", (target,))
        return {"outcome": f"deleted {target}"}

    builder = StateGraph(TicketState)
    builder.add_node("delete_ticket", delete_ticket)
    builder.add_edge(START, "delete_ticket")
    builder.add_edge("delete_ticket", END)
    return builder.compile(checkpointer=saver, name="tickets")


def remaining(tickets: Path) -> list[str]:
    with sqlite3.connect(tickets) as db:
        return [row[0] for row in db.execute("SELECT id FROM tickets ORDER BY id")]


async def demo(folder: Path) -> dict[str, Any]:
    tickets = folder / "tickets.db"
    with sqlite3.connect(tickets) as db:
        db.execute("CREATE TABLE tickets (id TEXT PRIMARY KEY)")
        db.executemany("INSERT INTO tickets VALUES (?)", [("t1",), ("t2",), ("t3",)])
    queue = ReviewQueue(open_store(str(folder / "crossgate.db")), authority=Authority.generate())
    checkpoints = str(folder / "checkpoints.db")
    outcomes: dict[str, str] = {}
    try:
        async with open_checkpointer(checkpoints) as saver:
            graph = build_graph(queue, tickets, saver)
            gate = Gate(queue, graph)
            first = await gate.run(graph, {"ticket_id": "t3"}, thread="a")
            second = await gate.run(graph, {"ticket_id": "t1"}, thread="b")
        assert isinstance(first, Parked)
        assert isinstance(second, Parked)
        print(f"parked: threads a and b wait; tickets still {remaining(tickets)}")
        for request in queue.pending():
            print(f"  review {request.id}: {request.call.tool} {request.call.args}")
        queue.decide(first.request_ids[0], Approve(), reviewer="ann")
        queue.decide(second.request_ids[0], Reject(message="t1 is a real customer ticket."), reviewer="ann")
        async with open_checkpointer(checkpoints) as saver:  # a fresh gate, as in another process
            graph = build_graph(queue, tickets, saver)
            gate = Gate(queue, graph)
            for parked in queue.ready_runs(framework=gate.framework):
                done = await gate.resume(parked.id)
                assert isinstance(done, Finished)
                outcomes[done.run] = done.result["outcome"]
                print(f"thread {done.run}: {done.result['outcome']}")
        print(f"tickets left: {remaining(tickets)}")
        return {"outcomes": outcomes, "left": remaining(tickets), "audit_ok": queue.verify_audit().ok}
    finally:
        queue.close()


def main() -> dict[str, Any]:
    """Run the demo in a temporary folder; return what happened."""
    with tempfile.TemporaryDirectory() as folder:
        return asyncio.run(demo(Path(folder)))


if __name__ == "__main__":
    main()
