"""``crossgate init``: create the database on purpose (read-only commands never create one)."""

from __future__ import annotations

from pathlib import Path

import typer

from crossgate.cli.context import CliContext
from crossgate.cli.options import JsonFlag
from crossgate.cli.output import print_json, say
from crossgate.stores import resolve_db, sqlite_target


def init(ctx: typer.Context, as_json: JsonFlag = False) -> None:
    """Create the database named by --db (or $CROSSGATE_DB, or ./crossgate.db) and its tables."""
    state = ctx.ensure_object(CliContext)
    target = resolve_db(state.db)
    remote = target in ("memory:", ":memory:") or target.startswith(("postgresql://", "postgres://"))
    where = target if remote else sqlite_target(target)[0]
    existed = remote or Path(where).exists()
    state.open_queue()  # creates the file and sets up (or migrates) the schema
    if as_json:
        print_json({"database": where, "created": not existed})
    else:
        say(f"{'database ready' if existed else 'created the crossgate database'}: {where}")


def register(app: typer.Typer) -> None:
    """Add ``init`` to ``app``."""
    app.command("init")(init)
