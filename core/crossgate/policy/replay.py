"""Replay the calls the audit log has seen against a candidate policy, to see what it would change first.

A team changing its policy (or importing Claude permissions or a LangChain ``interrupt_on`` mapping into
it) wants to know, before the change is live, which real calls would now be allowed, asked about or
denied differently. Every call that reached the queue left an event with the call in its payload
(``submitted``, ``auto_allowed``, ``auto_denied``); each distinct call is evaluated under the current
policy and the candidate, with the same standing rules and clock, and the differences are reported.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime

from pydantic import ValidationError

from crossgate.fingerprint import canonical_json
from crossgate.model import Event, StandingRule, ToolCall, Verdict, VerdictKind
from crossgate.policy.index import StandingRuleIndex
from crossgate.policy.rules import Policy

CALL_EVENTS = {"submitted": VerdictKind.ASK, "auto_allowed": VerdictKind.ALLOW, "auto_denied": VerdictKind.DENY}
"""The events that carry a proposed call, and the verdict each records it got then."""


@dataclass(frozen=True, slots=True)
class ReplayedCall:
    """One distinct call from the log, how often it was seen, and the two policies' verdicts on it."""

    call: ToolCall
    seen: int
    then: VerdictKind
    """The verdict it got when it was made (with the policy and standing rules of that time)."""
    current: Verdict
    candidate: Verdict

    @property
    def changed(self) -> bool:
        """True if the candidate's verdict kind differs from the current policy's."""
        return self.current.kind is not self.candidate.kind


@dataclass(frozen=True, slots=True)
class ReplayReport:
    """What a candidate policy would change for the calls the log has seen."""

    events: int
    """Events that carried a call."""
    calls: list[ReplayedCall] = field(default_factory=list)
    """Each distinct call (framework, agent, run, tool and arguments), first seen first."""

    @property
    def changed(self) -> list[ReplayedCall]:
        """The calls whose verdict the candidate changes."""
        return [c for c in self.calls if c.changed]


def calls_in(events: Iterable[Event]) -> tuple[int, list[tuple[ToolCall, int, VerdictKind]]]:
    """The distinct calls ``events`` carry, with how often each was seen and the verdict it last got."""
    seen: dict[str, tuple[ToolCall, int, VerdictKind]] = {}
    count = 0
    for event in events:
        then = CALL_EVENTS.get(event.kind)
        call = _call_of(event) if then is not None else None
        if then is None or call is None:
            continue
        count += 1
        key = canonical_json([call.framework, call.agent, call.run, call.tool, call.args])
        previous = seen.get(key)
        seen[key] = (previous[0] if previous else call, (previous[1] if previous else 0) + 1, then)
    return count, list(seen.values())


def replay(
    events: Iterable[Event],
    current: Policy,
    candidate: Policy,
    *,
    standing_rules: Sequence[StandingRule] = (),
    now: datetime | None = None,
) -> ReplayReport:
    """Evaluate every distinct call in ``events`` under ``current`` and ``candidate``; records nothing."""
    count, calls = calls_in(events)
    standing = StandingRuleIndex(standing_rules)  # once, not per call
    replayed = [
        ReplayedCall(
            call=call,
            seen=times,
            then=then,
            current=current.evaluate(call, standing, now=now),
            candidate=candidate.evaluate(call, standing, now=now),
        )
        for call, times, then in calls
    ]
    return ReplayReport(events=count, calls=replayed)


def _call_of(event: Event) -> ToolCall | None:
    payload = event.payload
    framework, tool, args = payload.get("framework"), payload.get("tool"), payload.get("args")
    if not isinstance(framework, str) or not isinstance(tool, str) or not isinstance(args, dict):
        return None  # an event from before calls were recorded whole
    agent, context = payload.get("agent"), payload.get("context")
    try:
        return ToolCall(
            framework=framework,
            tool=tool,
            args=args,
            run=event.run,
            agent=agent if isinstance(agent, str) else None,
            context=context if isinstance(context, dict) else {},
        )
    except ValidationError:
        return None
