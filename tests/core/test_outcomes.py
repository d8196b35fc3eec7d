"""What the model is told about a call applied before, from the outcome the audit log recorded."""

from __future__ import annotations

from crossgate import Approve, MemoryStore, Respond, ReviewQueue, ToolCall
from crossgate.outcomes import already_applied_message


def asked(queue: ReviewQueue, ticket: str) -> str:
    call = ToolCall(framework="openai-agents", tool="delete_ticket", args={"id": ticket}, run="r", call_id=ticket)
    request = queue.submit(call).request
    assert request is not None
    return request.id


def test_the_outcome_is_the_one_recorded_after_the_call_was_applied() -> None:
    queue = ReviewQueue(MemoryStore())
    request_id = asked(queue, "t3")
    queue.record_outcome(request_id, ran=False, error="malformed, before any decision")
    queue.decide(request_id, Approve(), reviewer="ann")
    assert queue.outcome(request_id) is None  # decided, not applied
    queue.mark_applied(request_id, args={"id": "t3"})
    assert queue.outcome(request_id) is None  # applied, and the process died before recording
    queue.record_outcome(request_id, ran=True, result="deleted ticket t3")
    queue.record_outcome(request_id, ran=False, error="not run again")  # a later replay refused
    first = queue.outcome(request_id)
    assert first is not None and first.payload["result"] == "deleted ticket t3"
    message = already_applied_message("delete_ticket", request_id, first)
    assert message.endswith("it was not run again. Its result was: deleted ticket t3")


def test_a_failed_run_and_a_response_are_reported_as_they_were() -> None:
    queue = ReviewQueue(MemoryStore())
    failed, answered = asked(queue, "t1"), asked(queue, "t2")
    queue.decide(failed, Approve(), reviewer="ann")
    queue.mark_applied(failed, args={"id": "t1"})
    queue.record_outcome(failed, ran=True, error="TimeoutError: the ticket service did not answer")
    assert already_applied_message("delete_ticket", failed, queue.outcome(failed)) == (
        f"delete_ticket already ran for this call (request {failed}) and failed: "
        "TimeoutError: the ticket service did not answer. It was not run again."
    )
    queue.decide(answered, Respond(content="t2 was archived instead"), reviewer="ann")
    queue.mark_applied(answered)
    queue.record_outcome(answered, ran=False, result="t2 was archived instead")
    assert already_applied_message("delete_ticket", answered, queue.outcome(answered)) == "t2 was archived instead"
