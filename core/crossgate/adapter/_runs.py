"""One gated run as an adapter carries it: its scope, its calls, and what a resume reads back from the store.

Every adapter that parks a run needs the same four things: the scope of the run (its id, the standing-rule
session, who it acts for, the app's context), the neutral ``ToolCall`` of each call made in it, the text a
model reads for a policy deny, and, on resume, the parked run read back and checked before anything is
claimed. They are here once, so an adapter only translates its SDK's objects.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from crossgate.adapter._protocol import AdapterQueue
from crossgate.errors import ConfigurationError
from crossgate.model import ApprovalRequest, JsonObject, ParkedRun, ToolCall, Verdict
from crossgate.queue import REQUESTED_BY, Submission
from crossgate.runs import Parked


@dataclass(slots=True)
class RunScope:
    """One crossgate run as an adapter's gating code sees it, for one SDK run (a run, or one resume of it)."""

    run: str
    session: str | None = None
    """Groups runs for standing rules of scope session."""
    requested_by: str | None = None
    """Who the run acts for: every request it creates carries it, so that person cannot decide them."""
    context: JsonObject = field(default_factory=dict)
    """The app's context for the run's calls (``Gate(context=)``, ``run(call_context=)``)."""
    asked: dict[str, Submission] = field(default_factory=dict)
    """The ask submissions of this SDK run, by the SDK's call id, for the gate to park."""

    def call(self, framework: str, tool: str, agent: str, args: JsonObject, call_id: str) -> ToolCall:
        """The neutral call: the run's app context, and who the run acts for (over any app key of that name)."""
        context = dict(self.context)
        context.pop(REQUESTED_BY, None)
        if self.requested_by is not None:
            context[REQUESTED_BY] = self.requested_by
        return ToolCall(
            framework=framework,
            tool=tool,
            args=args,
            call_id=call_id,
            run=self.run,
            session=self.session,
            agent=agent,
            context=context,
        )

    def metadata(self, agent: str) -> JsonObject:
        """What a parked run keeps of this scope (read back by :meth:`from_parked`), with the agent's name."""
        return {"agent": agent, "session": self.session, "requested_by": self.requested_by, "context": self.context}

    def new_requests(self) -> list[ApprovalRequest]:
        """The asked requests not stored yet, to park with the run in one transaction."""
        return [s.request for s in self.asked.values() if s.request is not None and not s.stored]

    def request_ids(self) -> list[str]:
        """The ids of every request this SDK run asked, in the order asked."""
        return [s.request.id for s in self.asked.values() if s.request is not None]

    @classmethod
    def from_parked(cls, parked: ParkedRun) -> RunScope:
        """The scope a parked run was parked with; who it acts for and its context come from the store only."""
        meta = parked.metadata
        context = meta.get("context")
        return cls(
            parked.run,
            _text(meta.get("session")),
            _text(meta.get("requested_by")),
            dict(context) if isinstance(context, dict) else {},
        )


def deny_message(tool: str, verdict: Verdict) -> str:
    """What the model reads for a policy deny: the rule's reason, as an instruction (as it is when the reason
    says already that crossgate did not run the tool, as the state head's refusals do)."""
    prefix = f"crossgate did not run {tool}: "
    reason = verdict.reason or "the policy does not allow this call"
    return reason if reason.startswith(prefix) else prefix + reason


@dataclass(frozen=True, slots=True)
class Resumable:
    """A parked run checked for resuming: every request of it decided (or closed), read in park order."""

    parked: ParkedRun
    requests: Sequence[ApprovalRequest]
    scope: RunScope


def parked_for_resume(queue: AdapterQueue, parked_run: str, *, framework: str, agent: str) -> Resumable | Parked:
    """Read ``parked_run`` for a resume of ``agent`` on ``framework``, before anything is claimed.

    Returns ``Parked`` (the run unchanged) while a request of it is still open, after expiring overdue ones.
    Raises NotFoundError for an unknown id, and ConfigurationError for a run of another framework or agent:
    a resumer with the wrong agent must not use the parked run up.
    """
    parked = queue.get_parked(parked_run)
    if parked.framework != framework:
        raise ConfigurationError(f"parked run {parked.id} belongs to {parked.framework}, not {framework}")
    if parked.metadata.get("agent") != agent:
        raise ConfigurationError(f"parked run {parked.id} ran agent {parked.metadata.get('agent')!r}, not {agent!r}")
    queue.expire_overdue()
    requests = [queue.get(r) for r in parked.request_ids]
    if any(r.is_open for r in requests):
        return Parked(parked.run, parked.id, parked.request_ids)
    return Resumable(parked, requests, RunScope.from_parked(parked))


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None
