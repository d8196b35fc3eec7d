"""The root ``crossgate`` command: global options, and errors turned into one stderr line and an exit code."""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from functools import partial
from typing import Annotated, Any, NoReturn

import typer
from typer.core import TyperGroup

from crossgate.cli.context import CliContext
from crossgate.cli.exit_codes import FAILURE, USAGE, exit_code_for, one_line
from crossgate.display import visible
from crossgate.errors import CrossgateError
from crossgate.stores import DB_ENV

POLICY_ENV = "CROSSGATE_POLICY"
"""Names the policy file when ``--policy`` is not given (``resolve_policy`` reads it too)."""


MESSAGE_LIMIT = 500
"""The most characters of an error message the command prints."""


def _fail(message: str, code: int) -> NoReturn:
    # typer validates enum options through pydantic, whose messages start with "Value error, "
    text = one_line(message.replace("Value error, ", ""))
    if len(text) > MESSAGE_LIMIT:  # click repeats a bad value in its message; a 10 MB one is no message
        text = f"{text[: MESSAGE_LIMIT - 1]}…"
    typer.echo(f"crossgate: error: {visible(text)}", err=True)
    sys.exit(code)


def _refuse_undecodable(args: Sequence[str]) -> None:
    """A usage error for an argument that is not text: bytes that are not UTF-8 reach Python as lone surrogates."""
    for position, arg in enumerate(args, 1):
        if not arg.isascii() and (found := _SURROGATE.search(arg)):
            where = f"U+{ord(found[0]):04X} at character {found.start() + 1}"
            _fail(f"argument {position} is not valid UTF-8 text (a lone surrogate, {where})", USAGE)


_SURROGATE = re.compile("[\ud800-\udfff]")


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
        if standalone_mode:
            _refuse_undecodable(sys.argv[1:] if args is None else args)
        run = partial(super().main, args, prog_name, complete_var, windows_expand_args=windows_expand_args, **extra)
        if not standalone_mode:
            return run(standalone_mode=False)
        try:
            result = run(standalone_mode=False)
        except CrossgateError as exc:
            _fail(str(exc) or type(exc).__name__, exit_code_for(exc))
        except typer.TyperException as exc:  # click's usage errors, as vendored by typer
            command = getattr(getattr(exc, "ctx", None), "command_path", None)
            hint = f" (see '{command} --help')" if command and exc.exit_code == USAGE else ""
            _fail(exc.format_message() + hint, exc.exit_code)
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
    add_completion=False,
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
            help="Policy file (YAML or TOML). [default: the built-in policy: ask for every call]",
        ),
    ] = None,
) -> None:
    """One review queue for AI agent tool approvals."""
    if ctx.invoked_subcommand is None:
        typer.echo(ctx.get_help())
        raise typer.Exit(0)
    state = ctx.obj if isinstance(ctx.obj, CliContext) else CliContext()
    if state.queue is None:
        state.db, state.policy = db, policy
    ctx.obj = state
    ctx.call_on_close(state.close)
