"""Rendering: JSON for scripts, a compact rich table or a key/value block for people."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from crossgate.decisions import AnyDecision
from crossgate.display import suspicious_call, visible, warning_text
from crossgate.model import (
    ApprovalRequest,
    Edit,
    Event,
    EventKind,
    ParkedRun,
    ParkedRunStatus,
    Reject,
    RequestStatus,
    Respond,
    StandingRule,
    Verdict,
    event_kind,
)
from crossgate.policy.replay import ReplayReport
from crossgate.queue import Submission

if TYPE_CHECKING:
    from crossgate.cli.backend import PrunedRun

ARGS_PREVIEW = 60
ARGS_MIN = 12
"""On a narrow terminal the arguments column shrinks to this before the table gets wider than the screen."""


def print_json(data: Any) -> None:
    """Write ``data`` as indented JSON on stdout."""
    typer.echo(json.dumps(data, ensure_ascii=False, indent=2))


def _time(moment: datetime | None) -> str | None:
    return moment.isoformat() if moment is not None else None


def list_json(items: Sequence[Any], next_cursor: str | None = None) -> dict[str, Any]:
    """The one envelope of every list command's ``--json``: ``{"items": [...], "next_cursor": ...}``.

    ``next_cursor`` is what continues the listing (``--cursor`` for requests, ``--after`` for events), or
    None when nothing follows.
    """
    return {"items": list(items), "next_cursor": next_cursor}


def request_json(request: ApprovalRequest) -> dict[str, Any]:
    """The JSON form of a request: the call flattened, the decision and who made it."""
    call = request.call
    decision = request.decision
    resolution = request.resolution()
    return {
        "id": request.id,
        "status": request.status.value,
        "framework": call.framework,
        "tool": call.tool,
        "args": call.args,
        "fingerprint": request.fingerprint,
        "decision": decision.model_dump(mode="json", exclude_none=True) if decision else None,
        "reviewer": decision.reviewer if decision else None,
        "resolution": resolution.model_dump(mode="json", exclude_none=True) if resolution else None,
        "agent": call.agent,
        "run": call.run,
        "session": call.session,
        "call_id": call.call_id,
        "reason": request.reason,
        "rule": request.rule,
        "description": request.description,
        "allowed_decisions": [k.value for k in request.allowed_decisions],
        "args_schema": request.args_schema,
        "requested_by": request.requested_by,
        "created_at": _time(request.created_at),
        "expires_at": _time(request.expires_at),
        "apply_within_seconds": request.apply_within_seconds,
        "approvals_required": request.approvals_required,
        "decided_at": _time(request.decided_at),
        "applied_at": _time(request.applied_at),
        "closed_reason": request.closed_reason,
    }


def submission_json(submission: Submission, call_fields: dict[str, Any]) -> dict[str, Any]:
    """The JSON form of a submission: the verdict, and the request fields (null without a request)."""
    verdict = _verdict_json(submission.verdict)
    if submission.request is not None:
        return {**verdict, **request_json(submission.request)}
    empty = {"id": None, "status": None, "decision": None, "reviewer": None}
    return {**verdict, **empty, **call_fields}


def _verdict_json(verdict: Verdict) -> dict[str, Any]:
    return {"verdict": verdict.kind.value, "verdict_reason": verdict.reason, "verdict_rule": verdict.rule}


def rule_json(rule: StandingRule) -> dict[str, Any]:
    """The JSON form of a standing rule."""
    return rule.model_dump(mode="json")


def event_json(event: Event) -> dict[str, Any]:
    """The JSON form of an audit event."""
    return event.model_dump(mode="json")


def compact_args(args: dict[str, Any], width: int = ARGS_PREVIEW) -> str:
    """Arguments on one line, cut to ``width`` characters."""
    text = json.dumps(args, ensure_ascii=False, separators=(", ", ": "))
    return text if len(text) <= width else text[: width - 1] + "…"


def _print_table(headers: Sequence[str], rows: Sequence[Sequence[str | None]], flexible: str | None = None) -> None:
    """A borderless table; every column but ``flexible`` is as wide as its widest cell.

    On a terminal too narrow for it, ``flexible`` shrinks (down to ``ARGS_MIN``); nothing else is cut.
    """
    cells = [[visible(value) if value is not None else "-" for value in row] for row in rows]
    widths = [max(len(header), *(len(row[i]) for row in cells)) for i, header in enumerate(headers)]
    gaps = 2 * (len(headers) - 1)
    terminal = Console()
    if terminal.is_terminal and flexible is not None:
        spare = terminal.width - gaps - sum(w for h, w in zip(headers, widths, strict=True) if h != flexible)
        widths = [max(ARGS_MIN, min(w, spare)) if h == flexible else w for h, w in zip(headers, widths, strict=True)]
    needed = sum(widths) + gaps
    out = Console(highlight=False, width=max(terminal.width, needed) if terminal.is_terminal else needed)
    table = Table(box=None, pad_edge=False, show_edge=False, header_style="bold")
    for header, width in zip(headers, widths, strict=True):
        table.add_column(header, no_wrap=True, overflow="ellipsis", width=width)
    for row in cells:
        # Text cells, so brackets in arguments are never read as rich markup.
        table.add_row(*(Text(value) for value in row))
    out.print(table)


def _short_time(moment: datetime | None) -> str | None:
    return moment.strftime("%Y-%m-%d %H:%M:%S") if moment is not None else None


def print_requests(requests: Sequence[ApprovalRequest], next_cursor: str | None) -> None:
    """A compact table of requests, and the cursor of the next page."""
    if not requests:
        say("no requests")
    else:
        rows = [
            (r.id, r.status.value, r.call.tool, compact_args(r.call.args), r.call.framework, _short_time(r.created_at))
            for r in requests
        ]
        _print_table(("ID", "STATUS", "TOOL", "ARGS", "FRAMEWORK", "CREATED"), rows, flexible="ARGS")
    if next_cursor is not None:
        say(f"more: --cursor {next_cursor}")


def print_request(
    request: ApprovalRequest, *, approvers: Sequence[str] | None = None, outcome: Event | None = None
) -> None:
    """A short key/value block for one request (with who approved it so far, where several must, and the
    outcome recorded once its decision reached the agent)."""
    call = request.call
    rows: list[tuple[str, str | None]] = [
        ("id", request.id),
        ("status", request.status.value),
        ("tool", call.tool),
        ("args", json.dumps(call.args, ensure_ascii=False)),
        ("framework", call.framework),
        ("agent", call.agent),
        ("run", call.run),
        ("session", call.session),
        ("fingerprint", request.fingerprint),
        ("reason", request.reason or None),
        ("description", request.description),
        ("allowed", ", ".join(k.value for k in request.allowed_decisions)),
        ("created", _short_time(request.created_at)),
        ("expires", _short_time(request.expires_at)),
    ]
    if approvers is not None:
        names = f" ({', '.join(approvers)})" if approvers else ""
        rows.append(("approvals", f"{len(approvers)} of {request.approvals_required}{names}"))
    if request.apply_within_seconds is not None:
        rows.append(("apply within", f"{request.apply_within_seconds:g}s of the approval, or it lapses"))
    decision = request.decision
    if decision is not None:
        rows += [("decision", _decision_text(decision)), ("reviewer", decision.reviewer), ("note", decision.note)]
        rows += [("decided", _short_time(request.decided_at)), ("reached agent", _short_time(request.applied_at))]
    if request.is_applied:
        rows.append(("outcome", outcome_text(request, outcome)))
    if request.closed_reason is not None:
        rows.append(("closed", request.closed_reason))
    if findings := suspicious_call(call):
        rows.append(("warning", warning_text(findings)))
    _print_block(rows)


def outcome_text(request: ApprovalRequest, outcome: Event | None) -> str:
    """``ran``/``not run`` and what came of it, for a request whose decision reached the agent."""
    if outcome is None:
        if request.status is RequestStatus.APPLIED:
            return "none recorded: the call may or may not have run"
        return "not run"
    payload = outcome.payload
    detail = payload.get("error") or payload.get("result")
    said = "ran" if event_kind(outcome) == EventKind.RAN else "not run"
    if said == "ran" and payload.get("error"):
        said = "ran and failed"
    return f"{said} ({_short_time(outcome.at)})" + (f": {detail}" if detail else "")


def outcome_json(outcome: Event | None) -> dict[str, Any] | None:
    """The JSON form of a request's outcome event (``kind`` ``ran`` or ``not_run``); None when none is recorded."""
    if outcome is None:
        return None
    payload = outcome.payload
    return {
        "kind": event_kind(outcome),
        "at": _time(outcome.at),
        "result": payload.get("result"),
        "error": payload.get("error"),
        "seq": outcome.seq,
    }


def _decision_text(decision: AnyDecision) -> str:
    text: str = decision.kind.value
    if isinstance(decision, Edit):
        text += " " + json.dumps(decision.args, ensure_ascii=False)
    elif isinstance(decision, Reject):
        text += ": " + decision.message
    elif isinstance(decision, Respond):
        text += ": " + decision.content
    if decision.remember is not None:
        text += f" (remember {decision.remember.scope.value}, match {decision.remember.match.value})"
    return text


def _print_block(rows: Sequence[tuple[str, str | None]]) -> None:
    shown = [(key, value) for key, value in rows if value is not None]
    width = max(len(key) for key, _ in shown)
    for key, value in shown:
        typer.echo(f"{key.ljust(width)}  {visible(value)}")


def print_verdict(verdict: Verdict) -> None:
    """The policy's allow or deny, answered without a human."""
    word = {"allow": "allowed", "deny": "denied"}.get(verdict.kind.value, verdict.kind.value)
    rule = f" (rule {verdict.rule})" if verdict.rule else ""
    say(f"{word} by policy{rule}: {verdict.reason}")


def print_rules(rules: Sequence[StandingRule]) -> None:
    """A compact table of standing rules."""
    if not rules:
        say("no standing rules")
        return
    rows = []
    for rule in rules:
        match = rule.match.value
        if rule.arg_patterns:
            match += " " + " ".join(f"{k}={v}" for k, v in rule.arg_patterns.items())
        scope = rule.scope.value + (f" {rule.run or rule.session}" if rule.run or rule.session else "")
        state = "revoked" if rule.revoked_at is not None else "active"
        rows.append((rule.id, rule.effect.value, rule.tool, match, scope, rule.created_by, state))
    _print_table(("ID", "EFFECT", "TOOL", "MATCH", "SCOPE", "BY", "STATE"), rows, flexible="MATCH")


def print_rule(rule: StandingRule) -> None:
    """A key/value block for one standing rule."""
    patterns = " ".join(f"{k}={v}" for k, v in rule.arg_patterns.items()) or None
    rows: list[tuple[str, str | None]] = [
        ("id", rule.id),
        ("effect", rule.effect.value),
        ("tool", rule.tool),
        ("match", rule.match.value),
        ("patterns", patterns),
        ("fingerprint", rule.args_fingerprint),
        ("agent", rule.agent),
        ("framework", rule.framework),
        ("scope", rule.scope.value + (f" {rule.run or rule.session}" if rule.run or rule.session else "")),
        ("message", rule.message),
        ("created", _short_time(rule.created_at)),
        ("by", rule.created_by),
        ("from request", rule.source_request),
        ("expires", _short_time(rule.expires_at)),
        ("revoked", _short_time(rule.revoked_at)),
        ("revoked by", rule.revoked_by),
        ("signed", "yes" if rule.signature else "no"),
    ]
    _print_block(rows)


def parked_run_json(parked: ParkedRun) -> dict[str, Any]:
    """The JSON form of a parked run, without the SDK state (large, and for the resumer alone)."""
    return parked.model_dump(mode="json", exclude={"state"})


def print_parked_runs(runs: Sequence[ParkedRun]) -> None:
    """A compact table of parked runs."""
    if not runs:
        say("no parked runs")
        return
    rows = [
        (
            p.id,
            p.framework,
            p.run,
            p.status.value,
            str(len(p.request_ids)),
            str(p.attempts),
            p.lease_owner if p.status is ParkedRunStatus.RESUMING else None,
            p.outcome,
        )
        for p in runs
    ]
    headers = ("ID", "FRAMEWORK", "RUN", "STATUS", "REQUESTS", "ATTEMPTS", "LEASED BY", "OUTCOME")
    _print_table(headers, rows, flexible="OUTCOME")


def print_parked_run(parked: ParkedRun, requests: Sequence[ApprovalRequest], state_bytes: int) -> None:
    """A key/value block for one parked run and its requests' statuses (``state_bytes`` 0: pruned)."""
    rows: list[tuple[str, str | None]] = [
        ("id", parked.id),
        ("framework", parked.framework),
        ("run", parked.run),
        ("status", parked.status.value),
        ("requests", ", ".join(f"{r.id} ({r.status.value})" for r in requests)),
        ("attempts", str(parked.attempts)),
        ("leased by", parked.lease_owner if parked.status is ParkedRunStatus.RESUMING else None),
        ("lease until", _short_time(parked.lease_until)),
        ("outcome", parked.outcome),
        ("state", size_text(state_bytes) if state_bytes else "pruned"),
        ("created", _short_time(parked.created_at)),
        ("updated", _short_time(parked.updated_at)),
    ]
    _print_block(rows)


def size_text(size: int) -> str:
    """A byte count for people: ``512 B``, ``1.5 KiB``, ``3.2 MiB``."""
    amount, unit = float(size), "B"
    for unit in ("B", "KiB", "MiB", "GiB"):
        if amount < 1024 or unit == "GiB":
            break
        amount /= 1024
    return f"{size} B" if unit == "B" else f"{amount:.1f} {unit}"


def pruned_json(runs: Sequence[PrunedRun], *, dry_run: bool, older_than: timedelta) -> dict[str, Any]:
    """The JSON form of a prune: how many runs and bytes, and each run with the size of its state."""
    return {
        "dry_run": dry_run,
        "older_than_seconds": int(older_than.total_seconds()),
        "count": len(runs),
        "state_bytes": sum(p.state_bytes for p in runs),
        "runs": [
            {
                "id": p.parked.id,
                "framework": p.parked.framework,
                "run": p.parked.run,
                "status": p.parked.status.value,
                "updated_at": _time(p.parked.updated_at),
                "state_bytes": p.state_bytes,
            }
            for p in runs
        ],
    }


def print_pruned(runs: Sequence[PrunedRun], *, dry_run: bool) -> None:
    """What a prune did (or, for a dry run, would do): a table of the runs for a dry run, then one line."""
    if not runs:
        say("no parked run has state to prune")
        return
    freed = size_text(sum(p.state_bytes for p in runs))
    counted = f"{len(runs)} parked run{'' if len(runs) == 1 else 's'}"
    if not dry_run:
        say(f"pruned the SDK state of {counted}, {freed} freed")
        return
    rows = [
        (p.parked.id, p.parked.framework, p.parked.run, p.parked.status.value, _short_time(p.parked.updated_at),
         size_text(p.state_bytes))
        for p in runs
    ]  # fmt: skip
    _print_table(("ID", "FRAMEWORK", "RUN", "STATUS", "ENDED", "STATE"), rows, flexible="RUN")
    say(f"would prune the SDK state of {counted}, freeing {freed} (dry run: nothing changed)")


def print_events(events: Sequence[Event]) -> None:
    """A compact table of audit events."""
    if not events:
        say("no events")
        return
    decided: dict[str | None, str | None] = {}
    rows = []
    for e in events:
        decision = _event_decision(e)
        if e.kind == EventKind.DECIDED:
            decided[e.request_id] = decision
        elif e.kind == EventKind.APPLIED and decision is None:  # logged before applied events named it
            decision = decided.get(e.request_id)
        rows.append((str(e.seq), _short_time(e.at), event_kind(e), e.request_id, decision, e.actor, e.channel))
    _print_table(("SEQ", "AT", "KIND", "REQUEST", "DECISION", "ACTOR", "CHANNEL"), rows)


def _event_decision(event: Event) -> str | None:
    """The decision kind a ``decided`` or ``applied`` event is about (an ``applied`` one before payloads
    named it: None)."""
    if event.kind not in (EventKind.DECIDED, EventKind.APPLIED):
        return None
    kind = event.payload.get("kind")
    return kind if isinstance(kind, str) else None


def say(message: str) -> None:
    """One line on stdout, hidden characters escaped."""
    typer.echo(visible(message))


def replay_json(report: ReplayReport, *, changed_only: bool) -> dict[str, Any]:
    """The JSON form of a policy replay: counts, and each (changed) call with both verdicts."""
    calls = report.changed if changed_only else report.calls
    return {
        "events": report.events,
        "calls": len(report.calls),
        "changed": len(report.changed),
        "items": [
            {
                "framework": c.call.framework,
                "agent": c.call.agent,
                "run": c.call.run,
                "tool": c.call.tool,
                "args": c.call.args,
                "seen": c.seen,
                "then": c.then.value,
                "current": _verdict_json(c.current),
                "candidate": _verdict_json(c.candidate),
            }
            for c in calls
        ],
    }


def print_replay(report: ReplayReport, *, changed_only: bool) -> None:
    """A summary line, then a table of the calls whose verdict the candidate changes (or of every call)."""
    say(
        f"{report.events} calls in the log, {len(report.calls)} distinct; "
        f"the candidate policy changes the verdict of {len(report.changed)}"
    )
    calls = report.changed if changed_only else report.calls
    if not calls:
        return
    rows = [
        (
            f"{c.current.kind.value} -> {c.candidate.kind.value}" if c.changed else c.current.kind.value,
            c.call.tool,
            compact_args(c.call.args),
            f"{c.call.framework}/{c.call.agent or '-'}",
            str(c.seen),
            c.candidate.rule or "(default)",
        )
        for c in calls
    ]
    _print_table(("VERDICT", "TOOL", "ARGS", "FROM", "SEEN", "CANDIDATE RULE"), rows, flexible="ARGS")
