"""``crossgate worker`` drives the gate: one resumer serves graphs and agents alike."""

from __future__ import annotations

from crossgate import Approve, Reject
from crossgate.runs import Parked
from crossgate.server.worker import Worker
from crossgate_langgraph import Gate
from tests.adapters.langgraph.worlds import WRITE, OpsTools, ops_agent, ops_model, ticket_graph


async def test_the_worker_resumes_graph_and_agent_runs_through_one_gate(ops_queue, tickets, saver) -> None:
    tools = OpsTools()
    agent = ops_agent(ops_queue, tools, ops_model(WRITE), saver, "per_call")
    graph = ticket_graph(ops_queue, tickets, saver, [])
    gate = Gate(ops_queue, agent, graph)
    from_agent = await gate.run(agent, {"messages": [("user", "write it")]}, thread="agent-1")
    from_graph = await gate.run(graph, {"ticket_id": "t3"}, thread="graph-1")
    assert isinstance(from_agent, Parked)
    assert isinstance(from_graph, Parked)
    assert {ops_queue.get(r).call.framework for r in (*from_agent.request_ids, *from_graph.request_ids)} == {
        "langchain",
        "langgraph",
    }
    worker = Worker(ops_queue, [gate])
    assert await worker.run_once() == []  # nothing decided yet: nothing resumed, nothing claimed
    ops_queue.decide(from_agent.request_ids[0], Approve(), reviewer="ann")
    ops_queue.decide(from_graph.request_ids[0], Reject(message="keep t3"), reviewer="ann")
    done = await worker.run_once()
    assert sorted((r.run, r.outcome) for r in done) == [("agent-1", "finished"), ("graph-1", "finished")]
    assert tools.names() == ["write_file"]
    assert tickets.ids() == ["t1", "t2", "t3"]
    assert await worker.run_once() == []
