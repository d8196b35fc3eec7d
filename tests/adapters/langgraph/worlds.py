"""Real graphs and agents for the adapter's tests: the seed's ticket graph and the three-tool ops agent."""

from __future__ import annotations

from typing import Any, TypedDict

from langchain.agents import create_agent
from langchain_core.messages import AIMessage
from langchain_core.tools import BaseTool, StructuredTool
from langgraph.graph import END, START, StateGraph

from crossgate import Approve, DecisionKind, Edit, Policy, PolicyRule, Reject, ReviewQueue, VerdictKind
from crossgate_langgraph import crossgate_middleware, request_approval
from crossgate_langgraph.testing import ScriptedChatModel, tool_call
from tests.conformance.tickets import TicketStore


class TicketState(TypedDict, total=False):
    ticket_id: str
    outcome: str


def ticket_graph(queue: ReviewQueue, tickets: TicketStore, saver: Any, entered: list[str]) -> Any:
    """The seed's graph: one node asks crossgate, then deletes; ``entered`` counts the node's runs."""

    def delete_ticket(state: TicketState) -> TicketState:
        entered.append(state.get("ticket_id", "?"))  # runs again on every resume: keep it harmless
        args = {"id": state["ticket_id"]}
        decision = request_approval(queue, "delete_ticket", args)
        if isinstance(decision, Edit):
            return {"outcome": tickets.delete(str(decision.args["id"]))}
        if isinstance(decision, Approve):
            return {"outcome": tickets.delete(args["id"])}
        if isinstance(decision, Reject):
            return {"outcome": f"rejected: {decision.message}"}
        return {"outcome": f"responded: {decision.content}"}

    builder = StateGraph(TicketState)
    builder.add_node("delete_ticket", delete_ticket)
    builder.add_edge(START, "delete_ticket")
    builder.add_edge("delete_ticket", END)
    return builder.compile(checkpointer=saver, name="ticket-graph")


OPS_POLICY = Policy(
    rules=(
        PolicyRule(name="read-freely", verdict=VerdictKind.ALLOW, tool="read_data"),
        PolicyRule(
            name="never-drop",
            verdict=VerdictKind.DENY,
            tool="execute_sql",
            where=({"arg": "query", "kind": "regex", "pattern": "(?i)^drop "},),
            reason="Dropping tables is forbidden. Tell the user to ask a DBA.",
        ),
        PolicyRule(
            name="sql-needs-dba",
            verdict=VerdictKind.ASK,
            tool="execute_sql",
            allowed_decisions=(DecisionKind.APPROVE, DecisionKind.REJECT),
            reason="SQL statements need DBA approval",
        ),
        PolicyRule(name="writes", verdict=VerdictKind.ASK, tool="write_file", reason="Writing files needs review"),
    )
)


class OpsTools:
    """``write_file``, ``execute_sql`` and ``read_data``, each logging every time its body runs."""

    def __init__(self) -> None:
        self.ran: list[tuple[str, dict[str, Any]]] = []

    def tools(self) -> list[BaseTool]:
        def write_file(path: str, content: str) -> str:
            """Write content to a file."""
            self.ran.append(("write_file", {"path": path, "content": content}))
            return f"wrote {len(content)} bytes to {path}"

        def execute_sql(query: str) -> str:
            """Run one SQL statement."""
            self.ran.append(("execute_sql", {"query": query}))
            return "1 row affected"

        def read_data(table: str) -> str:
            """Read rows from a table."""
            self.ran.append(("read_data", {"table": table}))
            return f"3 rows from {table}"

        return [StructuredTool.from_function(f) for f in (write_file, execute_sql, read_data)]

    def names(self) -> list[str]:
        return [name for name, _ in self.ran]


WRITE = tool_call("write_file", {"path": "report.txt", "content": "hello"}, "call_write")
SQL = tool_call("execute_sql", {"query": "DELETE FROM users"}, "call_sql")
READ = tool_call("read_data", {"table": "users"}, "call_read")
DROP = tool_call("execute_sql", {"query": "DROP TABLE users"}, "call_drop")


def ops_model(*calls: dict[str, Any]) -> ScriptedChatModel:
    """A model whose first turn makes ``calls`` and whose second turn ends."""
    return ScriptedChatModel(turns=[AIMessage(content="", tool_calls=list(calls))], final="All done.")


def ops_agent(queue: ReviewQueue, tools: OpsTools, model: ScriptedChatModel, saver: Any, mode: str) -> Any:
    """``create_agent`` with the three tools behind crossgate's middleware."""
    built = tools.tools()
    middleware = crossgate_middleware(queue, built, interrupt_mode=mode)  # type: ignore[arg-type]
    return create_agent(model, built, middleware=middleware, checkpointer=saver, name=f"ops-{mode}")
