"""The kit's run scope: each call's neutral ``ToolCall``, the parked metadata read back, and the checks a
resume makes before it claims anything."""

from __future__ import annotations

import pytest

from crossgate import Approve, ConfigurationError, NotFoundError, ReviewQueue, ToolCall, Verdict, VerdictKind
from crossgate.adapter import Resumable, RunScope, deny_message, parked_for_resume, request_id
from crossgate.policy.rules import Policy, PolicyRule
from crossgate.runs import Parked
from crossgate.stores.memory import MemoryStore

ASK = PolicyRule(name="ask-deletes", verdict=VerdictKind.ASK, tool="delete_ticket")


def test_a_call_carries_the_scope_and_who_it_acts_for_over_an_app_key_of_that_name() -> None:
    scope = RunScope("r1", "s1", "pat", {"tenant": "acme", "requested_by": "mallory"})
    call = scope.call("kit", "delete_ticket", "Triage", {"id": "t3"}, "c1")
    assert call == ToolCall(
        framework="kit",
        tool="delete_ticket",
        args={"id": "t3"},
        call_id="c1",
        run="r1",
        session="s1",
        agent="Triage",
        context={"tenant": "acme", "requested_by": "pat"},
    )
    nobody = RunScope("r1", context={"requested_by": "mallory"}).call("kit", "t", "a", {}, "c")
    assert nobody.context == {}, "the app cannot name who the run acts for through its context"


def _parked(queue: ReviewQueue, scope: RunScope, agent: str = "Triage") -> str:
    call = scope.call("kit", "delete_ticket", agent, {"id": "t3"}, "c1")
    scope.asked["c1"] = queue.prepare(call, request_id=request_id("kit", scope.run, "c1"), requested_by="pat")
    parked = queue.park(
        framework="kit",
        run=scope.run,
        request_ids=scope.request_ids(),
        state="{}",
        metadata=scope.metadata(agent),
        new_requests=scope.new_requests(),
    )
    return parked.id


def test_a_resume_reads_the_scope_back_from_the_store_once_every_request_is_decided() -> None:
    queue = ReviewQueue(MemoryStore(), Policy(rules=(ASK,)))
    scope = RunScope("r1", "s1", "pat", {"tenant": "acme"})
    parked = _parked(queue, scope)
    waiting = parked_for_resume(queue, parked, framework="kit", agent="Triage")
    assert isinstance(waiting, Parked) and waiting.parked_run == parked
    [request] = waiting.request_ids
    queue.decide(request, Approve(), reviewer="ann")
    ready = parked_for_resume(queue, parked, framework="kit", agent="Triage")
    assert isinstance(ready, Resumable)
    assert [r.id for r in ready.requests] == [request]
    assert (ready.scope.run, ready.scope.session, ready.scope.requested_by) == ("r1", "s1", "pat")
    assert ready.scope.context == {"tenant": "acme"}


def test_a_resume_refuses_another_framework_another_agent_and_an_unknown_run_without_claiming() -> None:
    queue = ReviewQueue(MemoryStore(), Policy(rules=(ASK,)))
    parked = _parked(queue, RunScope("r1"))
    with pytest.raises(ConfigurationError, match="belongs to kit"):
        parked_for_resume(queue, parked, framework="other", agent="Triage")
    with pytest.raises(ConfigurationError, match="ran agent 'Triage', not 'Other'"):
        parked_for_resume(queue, parked, framework="kit", agent="Other")
    with pytest.raises(NotFoundError):
        parked_for_resume(queue, "prk_nope", framework="kit", agent="Triage")
    assert queue.get_parked(parked).status.value == "parked"


def test_the_deny_message_is_the_rules_reason_or_a_default() -> None:
    said = deny_message("delete_ticket", Verdict(kind=VerdictKind.DENY, reason="deletes are frozen"))
    assert said == "crossgate did not run delete_ticket: deletes are frozen"
    silent = deny_message("delete_ticket", Verdict(kind=VerdictKind.DENY))
    assert silent == "crossgate did not run delete_ticket: the policy does not allow this call"
