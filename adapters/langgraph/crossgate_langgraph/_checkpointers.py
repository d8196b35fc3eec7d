"""Checkpointers: SQLite by default, PostgreSQL when configured, in memory for tests."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver

from crossgate import ConfigurationError
from crossgate.stores import sqlite_target

CHECKPOINTS_ENV = "CROSSGATE_LANGGRAPH_CHECKPOINTS"
DEFAULT_CHECKPOINTS = "checkpoints.db"


@asynccontextmanager
async def open_checkpointer(url: str | None = None) -> AsyncIterator[BaseCheckpointSaver[str]]:
    """An async checkpointer for ``url``: ``memory:``, ``postgresql://…``, or a SQLite path (the default).

    Without ``url``, ``$CROSSGATE_LANGGRAPH_CHECKPOINTS``, else ``./checkpoints.db``. Tables are set up
    on open. Every process that resumes a thread must open the same database. A SQLite target takes the
    store's ``?durability=`` too: ``full`` (the default) syncs every checkpoint, ``decisions`` and
    ``normal`` none (checkpoints carry no decisions).
    """
    target = url or os.environ.get(CHECKPOINTS_ENV) or DEFAULT_CHECKPOINTS
    if target in ("memory:", ":memory:"):
        yield InMemorySaver()
    elif target.startswith(("postgresql://", "postgres://")):
        try:
            from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
        except ImportError as exc:
            raise ConfigurationError(
                "PostgreSQL checkpoints need: pip install 'crossgate-langgraph[postgres]'"
            ) from exc
        async with AsyncPostgresSaver.from_conn_string(target) as saver:
            await saver.setup()
            yield saver
    else:
        from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

        path, durability = sqlite_target(target)
        async with AsyncSqliteSaver.from_conn_string(path) as saver:
            if durability != "full":
                # A lost tail of checkpoints re-runs steps from an earlier one after a power cut; the
                # gated tools' applied marks (in crossgate's store) keep them from running twice.
                await saver.conn.execute("PRAGMA synchronous=NORMAL")
            await saver.setup()
            yield saver
