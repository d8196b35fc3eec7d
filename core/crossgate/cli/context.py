"""What every command shares: the database and policy options, and the queue opened from them."""

from __future__ import annotations

import getpass
import os
from dataclasses import dataclass, field
from pathlib import Path

import typer

from crossgate.cli.operator import OperatorKeys, operator_keys
from crossgate.display import visible
from crossgate.errors import DatabaseNotFoundError
from crossgate.limits import DEFAULT_LIMITS, InputLimits
from crossgate.policy import resolve_policy
from crossgate.policy.loading import POLICY_ENV
from crossgate.queue import ReviewQueue
from crossgate.stores import open_store, resolve_db, sqlite_target

CHANNEL = "cli"
"""The channel every decision made here records."""


@dataclass
class CliContext:
    """Options of the root command and the queue, opened on first use.

    Pass one with a ready ``queue`` as ``obj`` to run commands against it (tests, embedding); a queue
    given that way is left open.
    """

    db: str | None = None
    policy: str | None = None
    limits: InputLimits = DEFAULT_LIMITS
    """The queue's input limits (``crossgate serve`` reads them from its file's ``[limits]``)."""
    queue: ReviewQueue | None = None
    db_given: bool = False
    """Whether ``--db`` was given on the command line: then it wins over any review server."""
    create: bool = True
    """Whether a SQLite database that does not exist may be created (only ``init``, ``serve``, ``submit``)."""
    key_dir: Path | None = None
    """The operator's key directory (``--dir`` of the command); None: ``$CROSSGATE_AUTHORITY_DIR`` or the default."""
    _owned: bool = field(default=False, repr=False)
    _keys: OperatorKeys | None = field(default=None, repr=False)

    def open_queue(self) -> ReviewQueue:
        """The review queue on ``--db``: under the store's signed policy, or the ``--policy`` file (announced).

        The queue holds the operator's key when there is a keyring (:mod:`crossgate.cli.operator`).
        """
        if self.queue is None:
            policy = None
            if self.policy or os.environ.get(POLICY_ENV):
                policy = resolve_policy(self.policy)
                shown = self.policy or os.environ.get(POLICY_ENV)
                typer.echo(
                    f"crossgate: using the local policy file {visible(str(shown))} (development: "
                    "not the store's signed policy)",
                    err=True,
                )
            target = resolve_db(self.db)
            if not self.create:
                require_database(target)
            keys = self.keys()
            store = open_store(target)
            self.queue = ReviewQueue(store, policy, limits=self.limits, authority=keys.authority, trusted=keys.trusted)
            self._owned = True
        return self.queue

    @property
    def owns_queue(self) -> bool:
        """True when this context opened its queue (not one handed to it ready-made)."""
        return self._owned

    def keys(self) -> OperatorKeys:
        """The keys this command holds (read once)."""
        if self._keys is None:
            self._keys = operator_keys(self.key_dir)
        return self._keys

    def close(self) -> None:
        """Close the queue if this context opened it."""
        if self._owned and self.queue is not None:
            self.queue.close()
            self.queue = None
            self._owned = False


def require_database(target: str) -> None:
    """DatabaseNotFoundError when ``target`` is a SQLite file that does not exist: a typo must not create one."""
    if target in ("memory:", ":memory:") or target.startswith(("postgresql://", "postgres://")):
        return
    path = Path(sqlite_target(target)[0])
    if not path.exists():
        raise DatabaseNotFoundError(
            f"no crossgate database at {path}: check --db (or $CROSSGATE_DB), or create one with 'crossgate init'"
        )


def on_command_line(ctx: typer.Context, name: str) -> bool:
    """Whether the option ``name`` of ``ctx``'s command was given on the command line (not by the environment)."""
    source = ctx.get_parameter_source(name)
    return source is not None and source.name == "COMMANDLINE"


def queue_of(ctx: typer.Context) -> ReviewQueue:
    """The queue of the running command."""
    return ctx.ensure_object(CliContext).open_queue()


def os_user() -> str:
    """The name of the operating-system user, the default reviewer."""
    try:
        return getpass.getuser()
    except (OSError, KeyError):  # no login name and no passwd entry (some containers)
        return "unknown"


def reviewer_name(reviewer: str | None) -> str:
    """``--reviewer`` as given (even empty, which the queue refuses), else the OS user."""
    return reviewer if reviewer is not None else os_user()
