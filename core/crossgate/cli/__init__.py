"""The ``crossgate`` command line: submit, review, decide and audit tool calls from a terminal.

Exit codes are listed in :mod:`crossgate.cli.exit_codes`. The optional server package adds ``serve``
and ``worker`` through ``crossgate.server.commands.register(app)`` when it is installed.
"""

from __future__ import annotations

import importlib

import typer

from crossgate.cli import audit, decide, requests, rules
from crossgate.cli.app import app
from crossgate.cli.context import CliContext

SERVER_COMMANDS = "crossgate.server.commands"

__all__ = ["CliContext", "app", "main"]


def _register_server_commands(target: typer.Typer) -> None:
    try:
        module = importlib.import_module(SERVER_COMMANDS)
    except ModuleNotFoundError as exc:
        if exc.name is not None and SERVER_COMMANDS.startswith(exc.name):
            return  # no server package, or no commands module in it
        raise
    module.register(target)


for _module in (requests, decide, rules, audit):
    _module.register(app)
_register_server_commands(app)


def main() -> None:
    """Run ``crossgate``."""
    app()
