"""The one loader and runner of numbered forward migrations, shared by the SQLite and PostgreSQL stores.

A backend keeps its migrations as ``.sql`` files named ``<number>_<name>.sql`` in one folder (SQLite's
``sql/sqlite/0001_initial.sql``, PostgreSQL's ``sql/postgres/migrations/001_initial.sql``); the number's
width is the backend's own. :func:`load_migrations` picks up every such file, in number order, and
refuses a gap or a number used twice. :func:`run_migrations` applies those a database does not have
yet, each recorded as it is applied, and refuses a database newer than the code.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Collection, Sequence
from importlib.resources.abc import Traversable
from typing import NamedTuple

from crossgate.errors import ConfigurationError

_NAME = re.compile(r"(\d+)_(\w+)\.sql")


class Migration(NamedTuple):
    """One numbered forward migration: its number, its SQL, and the name after the number.

    A tuple whose first two items are ``(version, text)``, as SQLite's migrations were listed before.
    """

    version: int
    text: str
    name: str


def load_migrations(folder: Traversable, backend: str) -> tuple[Migration, ...]:
    """Every ``<number>_<name>.sql`` file of ``folder``, in number order, numbered 1..n.

    ConfigurationError (naming ``backend``) for a gap, a number used twice, or no migration at all.
    """
    found: list[Migration] = []
    for entry in folder.iterdir():
        match = _NAME.fullmatch(entry.name)
        if match:
            found.append(Migration(int(match[1]), entry.read_text(encoding="utf-8"), match[2]))
    found.sort(key=lambda m: (m.version, m.name))
    versions = [m.version for m in found]
    if not versions or versions != list(range(1, len(found) + 1)):
        raise ConfigurationError(f"{backend} migrations are not numbered 1..n: {versions}")
    return tuple(found)


def check_schema_version(found: int, known: int) -> None:
    """ConfigurationError if the database's schema (version ``found``) is newer than this code's (``known``).

    Older code on a newer schema could misread rows or skip a newer invariant, so it refuses to start.
    """
    if found > known:
        raise ConfigurationError(
            f"database schema version {found} is newer than this crossgate ({known}); upgrade crossgate"
        )


def run_migrations(
    applied: Collection[int],
    known: Sequence[Migration],
    *,
    apply: Callable[[Migration], None],
    record: Callable[[Migration], None],
    fresh: Callable[[], None] | None = None,
) -> list[Migration]:
    """Apply and record, in order, each of ``known`` whose version is not in ``applied``; return those.

    ``apply`` runs one migration's SQL and ``record`` notes its version, both inside the caller's
    transaction. A database with nothing applied is built by ``fresh`` (the whole current schema at
    once) when the backend has one, and every migration is then recorded without being run.
    """
    check_schema_version(max(applied, default=0), known[-1].version)
    pending = [m for m in known if m.version not in applied]
    build_fresh = fresh is not None and not applied
    if build_fresh and fresh is not None:
        fresh()
    for migration in pending:
        if not build_fresh:
            apply(migration)
        record(migration)
    return pending
