"""The root ``crossgate`` command: global options, and errors turned into one stderr line and an exit code."""

from __future__ import annotations

import json
import re
import sys
import tomllib
from collections.abc import Sequence
from functools import partial
from importlib import metadata
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer
from typer.core import TyperArgument, TyperGroup, TyperOption

from crossgate.cli.context import CliContext, on_command_line
from crossgate.cli.exit_codes import FAILURE, USAGE, exit_code_for, one_line
from crossgate.display import visible
from crossgate.errors import CrossgateError
from crossgate.stores import DB_ENV

POLICY_ENV = "CROSSGATE_POLICY"
"""Names the policy file when ``--policy`` is not given (``resolve_policy`` reads it too)."""


MESSAGE_LIMIT = 500
"""The most characters of an error message the command prints."""

CREATING = frozenset({"init", "serve", "submit"})
"""The only commands that create a SQLite database that does not exist yet; the others refuse to."""


def _fail(message: str, code: int, *, error: str = "UsageError", as_json: bool = False) -> NoReturn:
    # typer validates enum options through pydantic, whose messages start with "Value error, "
    text = one_line(message.replace("Value error, ", ""))
    if len(text) > MESSAGE_LIMIT:  # click repeats a bad value in its message; a 10 MB one is no message
        text = f"{text[: MESSAGE_LIMIT - 1]}…"
    if as_json:  # the same shape as a batch item's error, on stdout where the JSON was asked for
        typer.echo(json.dumps({"error": {"exit_code": code, "type": error, "message": text}}, ensure_ascii=False))
    typer.echo(f"crossgate: error: {visible(text)}", err=True)
    sys.exit(code)


def _refuse_undecodable(args: Sequence[str]) -> None:
    """A usage error for an argument that is not text: bytes that are not UTF-8 reach Python as lone surrogates."""
    for position, arg in enumerate(args, 1):
        if not arg.isascii() and (found := _SURROGATE.search(arg)):
            where = f"U+{ord(found[0]):04X} at character {found.start() + 1}"
            _fail(f"argument {position} is not valid UTF-8 text (a lone surrogate, {where})", USAGE)


_SURROGATE = re.compile("[\ud800-\udfff]")


def _version(value: bool) -> None:
    if value:
        typer.echo(f"crossgate {crossgate_version()}")
        raise typer.Exit(0)


def crossgate_version() -> str:
    """The installed core's version (the source tree's, when run from a checkout without installing)."""
    try:
        return metadata.version("crossgate")
    except metadata.PackageNotFoundError:
        source = Path(__file__).resolve().parents[2] / "pyproject.toml"
        return str(tomllib.loads(source.read_text(encoding="utf-8"))["project"]["version"])


PLAIN_TYPES = frozenset({"str", "int", "float", "Path"})


def _no_type(ctx: object) -> None:
    return None


def _tidy_help(command: Any) -> None:
    """No Python types in help (``{ID}``, ``<list[str]>``), and whole first sentences as command summaries."""
    if command.short_help is None and command.help:
        command.short_help = " ".join(command.help.strip().split("\n\n")[0].split())
    for param in command.params:
        plain = isinstance(param, TyperOption) and not param.is_flag and param.bare_type() in PLAIN_TYPES
        if plain and param.metavar is None:  # `--port <int>` reads as Python; `--port PORT` as a command line
            param.metavar = (param.name or "value").upper()
        if isinstance(param, TyperArgument):
            name = param.metavar or (param.name or "").upper()
            shown = f"{name}..." if param.nargs != 1 else name
            usage = shown if param.required else f"[{shown}]"
            param.display_type_rich = _no_type  # type: ignore[method-assign]
            param._usage_display_name = partial(str, usage)  # type: ignore[method-assign]
    if isinstance(command, TyperGroup):
        for sub in command.commands.values():
            _tidy_help(sub)


class CrossgateGroup(TyperGroup):
    """Runs a command and reports every failure as one line on stderr with its exit code."""

    def main(
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        windows_expand_args: bool = True,
        **extra: Any,
    ) -> Any:
        _tidy_help(self)
        if standalone_mode:
            _refuse_undecodable(sys.argv[1:] if args is None else args)
        run = partial(super().main, args, prog_name, complete_var, windows_expand_args=windows_expand_args, **extra)
        if not standalone_mode:
            return run(standalone_mode=False)
        as_json = "--json" in (sys.argv[1:] if args is None else args)
        try:
            result = run(standalone_mode=False)
        except CrossgateError as exc:
            _fail(str(exc) or type(exc).__name__, exit_code_for(exc), error=type(exc).__name__, as_json=as_json)
        except typer.TyperException as exc:  # click's usage errors, as vendored by typer
            command = getattr(getattr(exc, "ctx", None), "command_path", None)
            hint = f" (see '{command} --help')" if command and exc.exit_code == USAGE else ""
            _fail(exc.format_message() + hint, exc.exit_code, as_json=as_json)
        except typer.Abort:
            _fail("aborted", FAILURE)
        except BrokenPipeError:  # `crossgate list | head`
            sys.stderr.close()
            sys.exit(FAILURE)
        sys.exit(result if isinstance(result, int) else 0)


app = typer.Typer(
    cls=CrossgateGroup,
    name="crossgate",
    help="One review queue for AI agent tool approvals: submit, review, decide and audit tool calls.",
    invoke_without_command=True,
    add_completion=True,
    context_settings={"help_option_names": ["-h", "--help"]},
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)


@app.callback()
def root(
    ctx: typer.Context,
    db: Annotated[
        str | None,
        typer.Option(
            "--db",
            metavar="URL",
            envvar=DB_ENV,
            show_envvar=True,
            help="Database: a SQLite file, sqlite:///path, postgresql://..., or memory:. [default: ./crossgate.db]",
        ),
    ] = None,
    policy: Annotated[
        str | None,
        typer.Option(
            "--policy",
            envvar=POLICY_ENV,
            show_envvar=True,
            metavar="FILE",
            help="A local policy file, for development. [default: the store's signed policy (crossgate policy "
            "apply); while none is stored, ask for every call]",
        ),
    ] = None,
    version: Annotated[
        bool,
        typer.Option("--version", is_eager=True, callback=_version, help="Print crossgate's version and exit."),
    ] = False,
) -> None:
    """One review queue for AI agent tool approvals."""
    if ctx.invoked_subcommand is None:
        typer.echo(ctx.get_help())
        raise typer.Exit(0)
    state = ctx.obj if isinstance(ctx.obj, CliContext) else CliContext()
    if state.queue is None:
        state.db, state.policy = db, policy
        state.db_given = on_command_line(ctx, "db")
        state.create = ctx.invoked_subcommand in CREATING
    ctx.obj = state
    ctx.call_on_close(state.close)
