"""What every part of ``ReviewQueue`` shares: the store, the clock, reading requests and building events."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from crossgate import tracing
from crossgate.clock import Clock
from crossgate.errors import NotFoundError
from crossgate.limits import DEFAULT_LIMITS, InputLimits
from crossgate.model import ApprovalRequest, Event, JsonObject, NewEvent, ToolCall, trusted
from crossgate.stores.base import Store

if TYPE_CHECKING:
    from crossgate.authority import Authority, TrustedKeys
    from crossgate.authority.claims import StateHeadClaims
    from crossgate.checkpoints import Checkpointer
    from crossgate.state_head import HeadSigner

OUTCOME_TEXT_LIMIT = 500
"""How much of a tool's result or error text an audit event keeps."""
QUEUE_ACTORS = frozenset({"policy", "crossgate"})
"""Actors the queue records as itself: a policy verdict, an expiry. :func:`recorded_as` keeps them."""


@dataclass(frozen=True, slots=True)
class Attribution:
    """Who the events recorded in this context are by, and through which channel."""

    actor: str
    channel: str


_ATTRIBUTION: ContextVar[Attribution | None] = ContextVar("crossgate_attribution", default=None)


@contextmanager
def recorded_as(actor: str, channel: str) -> Iterator[None]:
    """Record every event of the queue calls inside as by ``actor`` through ``channel``.

    For a caller that acts for someone the queue cannot see (the server's agent API: an agent credential),
    so the audit log names the credential rather than what the agent said about itself. Events the queue
    records as itself (``QUEUE_ACTORS``) keep their actor and take the channel.
    """
    token = _ATTRIBUTION.set(Attribution(actor, channel))
    try:
        yield
    finally:
        _ATTRIBUTION.reset(token)


class QueueBase:
    """The store and clock of a review queue, and the helpers its parts share."""

    authority: Authority | None = None
    """The key this queue signs with (a server's, an operator's); None: it signs nothing."""
    _checkpointer: Checkpointer | None = None
    _head_signer: HeadSigner | None = None
    _head_file: str | os.PathLike[str] | None = None

    def __init__(self, store: Store, *, clock: Clock, limits: InputLimits = DEFAULT_LIMITS) -> None:
        self.store = store
        self._clock = clock
        self.limits = limits
        """The sizes beyond which calls are denied and decisions refused (see :mod:`crossgate.limits`)."""

    def now(self) -> datetime:
        """The queue's clock."""
        return self._clock()

    def get(self, request_id: str) -> ApprovalRequest:
        """The request with this id; NotFoundError if there is none."""
        request = self.store.get_request(request_id)
        if request is None:
            raise NotFoundError(f"no request with id {request_id!r}")
        return request

    @property
    def checkpointer(self) -> Checkpointer | None:
        """Signs this queue's audit checkpoints with its ``authority``; None without one."""
        if self.authority is None:
            return None
        if self._checkpointer is None or self._checkpointer.authority is not self.authority:
            from crossgate.checkpoints import Checkpointer

            self._checkpointer = Checkpointer(self.store, self.authority, clock=self._clock)
        return self._checkpointer

    @property
    def head_signer(self) -> HeadSigner | None:
        """Signs this queue's state heads with its ``authority``; None without one."""
        if self.authority is None:
            return None
        if self._head_signer is None or self._head_signer.authority is not self.authority:
            from crossgate.state_head import HeadSigner

            self._head_signer = HeadSigner(self.store, self.authority, trusted=self._trusted_keys(), clock=self._clock)
            if self._head_file is not None:
                from crossgate.adapter._heads import HeadFile

                self._head_signer.keep_in(HeadFile(self._head_file))
        return self._head_signer

    def _trusted_keys(self) -> TrustedKeys | None:
        """The keys this queue verifies signed state with (None: the authority's own)."""
        return None

    def sign_state_head(self) -> StateHeadClaims | None:
        """Sign and store a fresh state head (see :mod:`crossgate.state_head`); None without an authority.

        A store failure is logged, not raised: what was just written stands, and gates refuse nothing more
        than a head that ages (they fail closed when it expires).
        """
        signer = self.head_signer
        return None if signer is None else signer.sign_logged()

    def _sign_own(self, event: Event | None) -> None:
        """Sign an authored checkpoint of ``event``, just appended by this queue, and a state head unless one is
        fresh (:meth:`HeadSigner.sign_soon`), when it holds an authority."""
        checkpointer = self.checkpointer
        signer = self.head_signer
        if checkpointer is not None and event is not None and signer is not None:
            checkpointer.authored(event)
            signer.sign_soon()

    def _submitted_event(self, request: ApprovalRequest) -> NewEvent:
        call = request.call
        payload = {**call_payload(call), "fingerprint": request.fingerprint, "reason": request.reason}
        if (traceparent := tracing.current_traceparent()) is not None:  # a decision and a resume join this trace
            payload[tracing.TRACEPARENT] = traceparent
        return self._event("submitted", request, actor=request.requested_by, channel=call.framework, payload=payload)

    def _event(
        self,
        kind: str,
        request: ApprovalRequest | None = None,
        *,
        run: str | None = None,
        actor: str | None = None,
        channel: str | None = None,
        payload: JsonObject | None = None,
    ) -> NewEvent:
        # Built without re-validation (it is on every call's path): every field is the queue's own, typed
        # here, and a payload is built from validated models (calls, decisions) and plain text.
        if (attribution := _ATTRIBUTION.get()) is not None:
            channel = attribution.channel
            actor = actor if actor in QUEUE_ACTORS else attribution.actor
        values = {
            "kind": kind,
            "at": self.now(),
            "request_id": request.id if request else None,
            "run": request.call.run if request else run,
            "actor": actor,
            "channel": channel,
            "payload": payload or {},
        }
        return trusted(NewEvent, values)


def call_payload(call: ToolCall) -> JsonObject:
    """The fields of ``call`` an audit event records."""
    payload: JsonObject = {
        "framework": call.framework,
        "tool": call.tool,
        "args": call.args,
        "call_id": call.call_id,
        "agent": call.agent,
    }
    if call.context:  # what the SDK said besides (a subagent's instance id, the SDK's own tool name)
        payload["context"] = call.context
    return payload


def clip_text(text: str | None) -> str | None:
    """``text`` cut to ``OUTCOME_TEXT_LIMIT`` characters, marked with an ellipsis where it was cut."""
    if text is None or len(text) <= OUTCOME_TEXT_LIMIT:
        return text
    return text[: OUTCOME_TEXT_LIMIT - 1] + "…"
