"""``crossgate rules``: list, add and revoke standing rules."""

from __future__ import annotations

from typing import Annotated

import typer

from crossgate.cli.deciding import AuthorityDirOpt, ServerOpt, TokenFileOpt, reviewer_backend
from crossgate.cli.ids import RuleId, rule_id
from crossgate.cli.options import Effect, JsonFlag, MatchOpt, PatternOpt, Reviewer, json_args, patterns
from crossgate.cli.output import list_json, print_json, print_rule, print_rules, rule_json, say
from crossgate.errors import NotFoundError
from crossgate.model import RememberMatch, RememberScope, VerdictKind

rules_app = typer.Typer(name="rules", help="Standing rules: remembered decisions every adapter consults.")


@rules_app.command("list")
def list_rules(
    ctx: typer.Context,
    include_revoked: Annotated[bool, typer.Option("--all", help="Include revoked rules.")] = False,
    server: ServerOpt = None,
    token_file: TokenFileOpt = None,
    as_json: JsonFlag = False,
) -> None:
    """List standing rules, oldest first."""
    backend = reviewer_backend(ctx, "rules list", server=server, token_file=token_file, reviewer=None)
    rules = backend.rules(include_revoked=include_revoked)
    if as_json:
        print_json(list_json([rule_json(r) for r in rules]))
    else:
        print_rules(rules)


@rules_app.command("show")
def show_rule(
    ctx: typer.Context,
    given: RuleId,
    server: ServerOpt = None,
    token_file: TokenFileOpt = None,
    as_json: JsonFlag = False,
) -> None:
    """Show one standing rule (revoked ones too): what it matches, for how long, who made it and why."""
    backend = reviewer_backend(ctx, "rules show", server=server, token_file=token_file, reviewer=None)
    found = rule_id(backend, given)
    rule = next((r for r in backend.rules(include_revoked=True) if r.id == found), None)
    if rule is None:
        raise NotFoundError(f"no standing rule with id {found!r}")
    if as_json:
        print_json(rule_json(rule))
    else:
        print_rule(rule)


@rules_app.command("add")
def add_rule(
    ctx: typer.Context,
    tool: Annotated[str, typer.Option("--tool", metavar="GLOB", help="Tool name or glob (read_*).")],
    effect: Annotated[Effect, typer.Option("--effect", help="Allow or deny matching calls.")],
    match: MatchOpt = None,
    pattern: PatternOpt = None,
    args: Annotated[
        str | None, typer.Option("--args", metavar="JSON", help="The exact arguments, for --match exact.")
    ] = None,
    agent: Annotated[str | None, typer.Option("--agent", metavar="NAME", help="Only calls from this agent.")] = None,
    framework: Annotated[
        str | None, typer.Option("--framework", metavar="NAME", help="Only calls from this framework.")
    ] = None,
    scope: Annotated[RememberScope, typer.Option("--scope", help="How long the rule stands.")] = RememberScope.FOREVER,
    run: Annotated[str | None, typer.Option("--run", metavar="RUN", help="The run, for --scope run.")] = None,
    session: Annotated[
        str | None, typer.Option("--session", metavar="SESSION", help="The session, for --scope session.")
    ] = None,
    message: Annotated[
        str | None, typer.Option("--message", metavar="TEXT", help="For deny: what the model reads.")
    ] = None,
    reviewer: Reviewer = None,
    server: ServerOpt = None,
    token_file: TokenFileOpt = None,
    authority_dir: AuthorityDirOpt = None,
    as_json: JsonFlag = False,
) -> None:
    """Add a standing rule by hand (signed: through --server, or with the authority's key)."""
    arg_patterns = patterns(pattern)
    match = match or (RememberMatch.PATTERN if arg_patterns else RememberMatch.TOOL)
    _check_shape(match, arg_patterns, args, scope, run, session)
    exact = json_args(args) if match is RememberMatch.EXACT and args is not None else None
    deciding = reviewer_backend(
        ctx,
        "rules add",
        server=server,
        token_file=token_file,
        reviewer=reviewer,
        authority_dir=authority_dir,
        decides=True,
    )
    fields = {
        "effect": VerdictKind(effect.value),
        "tool": tool,
        "match": match,
        "arg_patterns": arg_patterns,
        "agent": agent,
        "framework": framework,
        "scope": scope,
        "run": run if scope is RememberScope.RUN else None,
        "session": session if scope is RememberScope.SESSION else None,
        "message": message,
    }
    rule = deciding.add_rule(fields, exact)
    if as_json:
        print_json(rule_json(rule))
    else:
        say(f"added standing rule {rule.id}: {rule.effect.value} {rule.tool} ({rule.scope.value})")


def _check_shape(
    match: RememberMatch,
    arg_patterns: dict[str, str],
    args: str | None,
    scope: RememberScope,
    run: str | None,
    session: str | None,
) -> None:
    if match is RememberMatch.PATTERN and not arg_patterns:
        raise typer.BadParameter("--match pattern needs at least one --pattern ARG=GLOB", param_hint="'--match'")
    if match is not RememberMatch.PATTERN and arg_patterns:
        raise typer.BadParameter("--pattern only applies to --match pattern", param_hint="'--pattern'")
    if (match is RememberMatch.EXACT) != (args is not None):
        raise typer.BadParameter("--match exact and --args go together", param_hint="'--args'")
    if scope is RememberScope.ONCE:
        raise typer.BadParameter("a standing rule lasts a run, a session or forever", param_hint="'--scope'")
    if scope is RememberScope.RUN and not run:
        raise typer.BadParameter("--scope run needs --run", param_hint="'--run'")
    if scope is RememberScope.SESSION and not session:
        raise typer.BadParameter("--scope session needs --session", param_hint="'--session'")


@rules_app.command("revoke")
def revoke_rule(
    ctx: typer.Context,
    given: RuleId,
    reviewer: Reviewer = None,
    server: ServerOpt = None,
    token_file: TokenFileOpt = None,
    as_json: JsonFlag = False,
) -> None:
    """Revoke a standing rule; it stops applying at once."""
    backend = reviewer_backend(ctx, "rules revoke", server=server, token_file=token_file, reviewer=reviewer)
    revoked = backend.revoke_rule(rule_id(backend, given))
    if as_json:
        print_json(rule_json(revoked))
    else:
        say(f"revoked standing rule {revoked.id}")


def register(app: typer.Typer) -> None:
    """Add ``rules`` to ``app``."""
    app.add_typer(rules_app)
