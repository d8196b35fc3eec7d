"""``ReviewQueue``'s record of a gate's refusal: what let a call run did not verify where the tool runs.

The gate (``crossgate.adapter``) verifies a decision's and a standing rule's signatures with the keys
pinned in its own process. When one does not verify, the tool does not run and the queue records why:

- a decided request is closed as cancelled, with the refusal the model reads as its reason, so every
  later resume, in any adapter, answers the SDK with the same refusal and nothing runs; its
  ``cancelled`` event names the refusal (``refused``: the reason, such as ``unsigned`` or ``binding``,
  and ``problem``: what did not verify);
- a call a standing rule allowed has no request: a ``refused`` event records it, with the rule.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from crossgate._queue_base import QueueBase, call_payload
from crossgate.model import ApprovalRequest, JsonObject, RequestStatus, ToolCall

if TYPE_CHECKING:
    from crossgate.waiting import WaitRegistry

REFUSED = "refused"
"""The event kind of a call a gate refused to run without a request (a standing rule that did not verify)."""


class RefusalsMixin(QueueBase):
    """Recording a gate's refusals."""

    if TYPE_CHECKING:
        _waits: WaitRegistry

    def refuse_unverified(
        self,
        target: ApprovalRequest | ToolCall,
        *,
        reason: str,
        problem: str,
        message: str,
        rule: str | None = None,
        actor: str | None = None,
    ) -> ApprovalRequest | None:
        """Record that a gate refused to run a call because what let it run did not verify.

        ``target`` is the decided request (closed as cancelled with ``message``, what the model reads) or,
        for a call ``rule`` allowed, the call. ``reason`` is the SignatureError's. Returns the closed
        request; None for a call, or for a request another caller applied or closed first.
        """
        payload: JsonObject = {"refused": reason, "problem": problem}
        if isinstance(target, ToolCall):
            payload.update({**call_payload(target), "rule": rule, "reason": message})
            self.store.append_event(self._event(REFUSED, run=target.run, actor=actor, payload=payload))
            return None
        closed = target.model_copy(update={"status": RequestStatus.CANCELLED, "closed_reason": message})
        payload["reason"] = message
        event = self._event(RequestStatus.CANCELLED.value, target, actor=actor, payload=payload)
        if self.store.update_request(closed, (RequestStatus.DECIDED,), event) is None:
            return None
        self._waits.notify(target.id)
        return closed
