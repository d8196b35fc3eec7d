"""Option types shared by several commands, and the checks that turn bad values into clean errors."""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum
from typing import Annotated, TypeVar

import typer
from pydantic import ValidationError

from crossgate.errors import ConfigurationError, InvalidArgumentsError, InvalidDecisionError
from crossgate.fingerprint import parse_args
from crossgate.limits import check_int64
from crossgate.model import JsonObject, RememberMatch, RememberScope
from crossgate.stores.base import decode_cursor

T = TypeVar("T")


class StatusFilter(StrEnum):
    """Request statuses ``list`` can show, plus ``all``."""

    PENDING = "pending"
    DECIDED = "decided"
    APPLIED = "applied"
    REJECTED = "rejected"
    ANSWERED = "answered"
    EXPIRED = "expired"
    CANCELLED = "cancelled"
    ALL = "all"


class Effect(StrEnum):
    """What a standing rule does."""

    ALLOW = "allow"
    DENY = "deny"


JsonFlag = Annotated[bool, typer.Option("--json", help="Print JSON instead of text.")]
Reviewer = Annotated[str | None, typer.Option("--reviewer", metavar="NAME", help="Who decides. [default: the OS user]")]
Note = Annotated[
    str | None, typer.Option("--note", metavar="TEXT", help="A note for the audit log; the model never sees it.")
]
Fingerprint = Annotated[
    str | None,
    typer.Option(
        "--fingerprint", metavar="SHA256", help="The fingerprint you reviewed; refused if the request's differs."
    ),
]
RememberOpt = Annotated[
    RememberScope | None,
    typer.Option("--remember", help="Also store a standing rule for later calls, for this long (once: no rule)."),
]
MatchOpt = Annotated[
    RememberMatch | None,
    typer.Option(
        "--match",
        help="Which later calls it covers: exact (the default: these arguments only), pattern (--pattern), tool (all).",
    ),
]
PatternOpt = Annotated[
    list[str] | None,
    typer.Option("--pattern", metavar="ARG=GLOB", help="Argument pattern for --match pattern; repeatable."),
]
AgentOnly = Annotated[bool, typer.Option("--this-agent-only", help="Remember only for the request's agent.")]


def json_args(raw: str, option: str = "--args") -> JsonObject:
    """Tool arguments from the command line: a JSON object, or InvalidArgumentsError."""
    try:
        return parse_args(raw)
    except InvalidArgumentsError as exc:
        raise InvalidArgumentsError(f"{option}: {exc}") from exc


def patterns(values: list[str] | None) -> dict[str, str]:
    """``ARG=GLOB`` options as a dictionary; a usage error for anything else."""
    found: dict[str, str] = {}
    for value in values or ():
        arg, sep, glob = value.partition("=")
        if not sep or not arg.strip():
            raise typer.BadParameter(f"expected ARG=GLOB, got {value!r}", param_hint="'--pattern'")
        found[arg.strip()] = glob
    return found


def check_cursor(value: str | None) -> str | None:
    """Refuse a malformed ``--cursor`` as a usage error."""
    if value is not None:
        try:
            check_int64(decode_cursor(value), "the cursor's position")
        except ConfigurationError as exc:
            raise typer.BadParameter(str(exc)) from exc
    return value


def validated(factory: Callable[[], T], what: str, *, decision: bool = False) -> T:
    """Build a model; a validation failure becomes InvalidDecisionError (or InvalidArgumentsError)."""
    try:
        return factory()
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        message = f"invalid {what}: {where + ': ' if where else ''}{first['msg']}"
        raise (InvalidDecisionError(message) if decision else InvalidArgumentsError(message)) from exc
