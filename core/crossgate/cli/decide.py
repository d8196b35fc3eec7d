"""The decision commands: approve, edit, reject, respond. Each records the reviewer and channel ``cli``.

approve and reject take several ids: each is decided on its own, exactly as if it were given alone, and
one refused id neither stops nor undoes the others. Edit and respond stay single: their content is per request.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

from crossgate.cli.backend import ReviewerBackend
from crossgate.cli.deciding import AuthorityDirOpt, ServerOpt, TokenFileOpt, reviewer_backend
from crossgate.cli.exit_codes import OK, exit_code_for, one_line
from crossgate.cli.ids import request_id as resolve_request_id
from crossgate.cli.options import (
    AgentOnly,
    Fingerprint,
    JsonFlag,
    MatchOpt,
    Note,
    PatternOpt,
    RememberOpt,
    Reviewer,
    json_args,
    patterns,
    validated,
)
from crossgate.cli.output import print_json, request_json, rule_json, say
from crossgate.coverage import decision_coverage
from crossgate.decisions import AnyDecision
from crossgate.display import visible
from crossgate.errors import CrossgateError, InvalidDecisionError
from crossgate.model import (
    ApprovalRequest,
    Approve,
    Edit,
    Reject,
    Remember,
    RememberMatch,
    RememberScope,
    Respond,
    StandingRule,
    VerdictKind,
)

GivenId = Annotated[str, typer.Argument(metavar="ID", help="The request's id or its start.")]
GivenIds = Annotated[
    list[str],
    typer.Argument(metavar="ID", help="The request's id or its start; give several to decide each on its own."),
]
PAST_TENSE = {"approve": "approved", "edit": "edited", "reject": "rejected", "respond": "responded to"}


def _remember(
    scope: RememberScope | None, match: RememberMatch | None, pattern: list[str] | None, agent_only: bool
) -> Remember | None:
    arg_patterns = patterns(pattern)
    if scope is None:
        if match is not None or arg_patterns or agent_only:
            message = "--match, --pattern and --this-agent-only need --remember"
            raise typer.BadParameter(message, param_hint="'--remember'")
        return None
    if match is None and arg_patterns:
        match = RememberMatch.PATTERN
    # without --match, Remember's default: the narrowest, these exact arguments
    chosen = {} if match is None else {"match": match}
    return Remember(scope=scope, arg_patterns=arg_patterns, this_agent_only=agent_only, **chosen)


@dataclass(frozen=True)
class Credentials:
    """The options that say who decides: ``--server`` with a token, or the key directory; and ``--reviewer``."""

    server: str | None
    token_file: Path | None
    authority_dir: Path | None
    reviewer: str | None

    def backend(self, ctx: typer.Context, command: str) -> ReviewerBackend:
        return reviewer_backend(
            ctx,
            command,
            server=self.server,
            token_file=self.token_file,
            reviewer=self.reviewer,
            authority_dir=self.authority_dir,
            decides=True,
        )


def _resolved(backend: ReviewerBackend, given: list[str]) -> list[str]:
    """Ids as given, each start of an id resolved to the one it names."""
    return [resolve_request_id(backend, value) for value in given]


def _decide(
    ctx: typer.Context, command: str, given: str, decision: AnyDecision, who: Credentials, as_json: bool
) -> None:
    deciding = who.backend(ctx, command)
    [target] = _resolved(deciding, [given])
    decided, remembered = deciding.decide(target, decision)
    if as_json:
        print_json(_decided_json(decided, remembered))
    else:
        say_decided(deciding, decided, remembered)


def _decide_each(
    ctx: typer.Context, command: str, given: list[str], decision: AnyDecision, who: Credentials, as_json: bool
) -> None:
    """Decide every id on its own; exit with the first failure's code (0 when all were decided).

    A single id behaves exactly as before batches existed: its error is the command's error.
    """
    if len(given) == 1:
        _decide(ctx, command, given[0], decision, who, as_json)
        return
    deciding = who.backend(ctx, command)
    results: list[dict[str, Any]] = []
    exit_code = OK
    for request_id_ in _resolved(deciding, given):
        try:
            decided, remembered = deciding.decide(request_id_, decision)
        except CrossgateError as exc:  # this id's refusal is its own result; the others go on
            code = exit_code_for(exc)
            exit_code = exit_code or code
            message = str(exc) or type(exc).__name__
            error = {"exit_code": code, "type": type(exc).__name__, "message": message}
            results.append({"request_id": request_id_, "ok": False, "error": error})
            if not as_json:
                typer.echo(f"crossgate: error: {visible(request_id_)}: {visible(one_line(message))}", err=True)
            continue
        results.append({"request_id": request_id_, "ok": True, "request": _decided_json(decided, remembered)})
        if not as_json:
            say_decided(deciding, decided, remembered)
    if as_json:
        print_json(results)
    if exit_code != OK:
        raise typer.Exit(exit_code)


def _decided_json(decided: ApprovalRequest, remembered: list[StandingRule]) -> dict[str, Any]:
    return {
        **request_json(decided),
        "standing_rule": rule_json(remembered[0]) if remembered else None,
        "remember_covers": decision_coverage(decided) if remembered else None,
    }


def say_decided(deciding: ReviewerBackend, decided: ApprovalRequest, remembered: list[StandingRule]) -> None:
    stamped = decided.decision
    assert stamped is not None
    say(f"{PAST_TENSE[stamped.kind.value]} {decided.id} ({decided.call.tool}) as {stamped.reviewer}")
    for rule in remembered:
        say(f"remembered as standing rule {rule.id}: {rule.effect.value} {decision_coverage(decided) or rule.tool}")
        if rule.effect is VerdictKind.ALLOW and (asking := deciding.still_asks(decided)) is not None:
            # e.g. a policy rule marked `rememberable: false`: the reviewer should know "always" does not hold
            say(f"note: the policy still asks for calls like this one (rule {asking})")


def approve(
    ctx: typer.Context,
    request_ids: GivenIds,
    remember: RememberOpt = None,
    match: MatchOpt = None,
    pattern: PatternOpt = None,
    this_agent_only: AgentOnly = False,
    note: Note = None,
    fingerprint: Fingerprint = None,
    reviewer: Reviewer = None,
    server: ServerOpt = None,
    token_file: TokenFileOpt = None,
    authority_dir: AuthorityDirOpt = None,
    as_json: JsonFlag = False,
) -> None:
    """Approve requests: each call runs as proposed."""
    remembered = _remember(remember, match, pattern, this_agent_only)
    decision = validated(
        lambda: Approve(remember=remembered, note=note, fingerprint=fingerprint), "decision", decision=True
    )
    _decide_each(
        ctx, "approve", request_ids, decision, Credentials(server, token_file, authority_dir, reviewer), as_json
    )


def edit(
    ctx: typer.Context,
    request_id: GivenId,
    args: Annotated[str, typer.Option("--args", metavar="JSON", help="The arguments to run instead, a JSON object.")],
    remember: RememberOpt = None,
    match: MatchOpt = None,
    pattern: PatternOpt = None,
    this_agent_only: AgentOnly = False,
    note: Note = None,
    fingerprint: Fingerprint = None,
    reviewer: Reviewer = None,
    server: ServerOpt = None,
    token_file: TokenFileOpt = None,
    authority_dir: AuthorityDirOpt = None,
    as_json: JsonFlag = False,
) -> None:
    """Edit a request: the same tool runs with these arguments instead."""
    parsed = json_args(args)
    remembered = _remember(remember, match, pattern, this_agent_only)
    decision = validated(
        lambda: Edit(args=parsed, remember=remembered, note=note, fingerprint=fingerprint), "decision", decision=True
    )
    _decide(ctx, "edit", request_id, decision, Credentials(server, token_file, authority_dir, reviewer), as_json)


def reject(
    ctx: typer.Context,
    request_ids: GivenIds,
    message: Annotated[
        str, typer.Option("--message", metavar="TEXT", help="What the model reads; write it as an instruction.")
    ],
    remember: RememberOpt = None,
    match: MatchOpt = None,
    pattern: PatternOpt = None,
    this_agent_only: AgentOnly = False,
    note: Note = None,
    fingerprint: Fingerprint = None,
    reviewer: Reviewer = None,
    server: ServerOpt = None,
    token_file: TokenFileOpt = None,
    authority_dir: AuthorityDirOpt = None,
    as_json: JsonFlag = False,
) -> None:
    """Reject requests: the calls do not run, and each model reads the message."""
    if not message.strip():
        raise InvalidDecisionError("a rejection needs a message: it is what the model reads")
    remembered = _remember(remember, match, pattern, this_agent_only)
    decision = validated(
        lambda: Reject(message=message, remember=remembered, note=note, fingerprint=fingerprint),
        "decision",
        decision=True,
    )
    _decide_each(
        ctx, "reject", request_ids, decision, Credentials(server, token_file, authority_dir, reviewer), as_json
    )


def respond(
    ctx: typer.Context,
    request_id: GivenId,
    content: Annotated[
        str, typer.Option("--content", metavar="TEXT", help="The tool's result, as the model will read it.")
    ],
    note: Note = None,
    fingerprint: Fingerprint = None,
    reviewer: Reviewer = None,
    server: ServerOpt = None,
    token_file: TokenFileOpt = None,
    authority_dir: AuthorityDirOpt = None,
    as_json: JsonFlag = False,
) -> None:
    """Respond to a request as the tool: the content is its result and the tool does not run."""
    decision = validated(
        lambda: Respond(content=content, note=note, fingerprint=fingerprint), "decision", decision=True
    )
    _decide(ctx, "respond", request_id, decision, Credentials(server, token_file, authority_dir, reviewer), as_json)


def register(app: typer.Typer) -> None:
    """Add the decision commands to ``app``."""
    app.command("approve")(approve)
    app.command("edit")(edit)
    app.command("reject")(reject)
    app.command("respond")(respond)
