"""The ``crossgate`` command line: submit, review, decide and audit tool calls from a terminal.

The reading and deciding commands work against a review server when one is chosen (``--server``,
``$CROSSGATE_SERVER`` or ``crossgate login``; ``--db`` on the command line wins), with the same output
and exit codes (:mod:`crossgate.cli.deciding`). Otherwise, and for the other commands, the database is
``--db``, else ``$CROSSGATE_DB``, else ``./crossgate.db``. The policy is the store's
signed current version (``crossgate policy apply``; the built-in "ask for every call" while none is
stored), or a local file for development, ``--policy`` else ``$CROSSGATE_POLICY``, announced on stderr.
Exit codes are listed in :mod:`crossgate.cli.exit_codes`; errors are one line on stderr. With ``--json``,
a request is an object with at least ``id``, ``status``, ``framework``, ``tool``, ``args``,
``fingerprint``, ``decision`` and ``reviewer``; ``submit`` adds
``verdict`` (the request fields are null for allow and deny), decisions add ``standing_rule``, ``list``
prints ``{"items": [...], "next_cursor": ...}``, and ``events``, ``expire`` and ``rules list`` print arrays.
With ``--json`` an error is also printed on stdout as ``{"error": {"exit_code", "type", "message"}}``.

Ids may be given by any start that names exactly one (:mod:`crossgate.cli.ids`). Only ``init``, ``serve``
and ``submit`` create a SQLite database that does not exist; the others refuse with one line.

The optional server package adds ``serve`` and ``worker`` through ``crossgate.server.commands.register(app)``
when that module exists.
"""

from __future__ import annotations

import importlib

import typer

from crossgate.cli import (
    audit,
    checkpoints,
    credentials,
    database,
    decide,
    keys,
    login,
    policy,
    policy_versions,
    requests,
    review,
    rules,
    runs,
)
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


for _module in (database, requests, decide, review, rules, runs, policy, audit, checkpoints, keys, credentials, login):
    _module.register(app)
policy_versions.register(policy.policy_app)
_register_server_commands(app)


def main() -> None:
    """Run ``crossgate``."""
    app()
