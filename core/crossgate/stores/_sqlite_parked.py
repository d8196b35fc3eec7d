"""The SQLite store's parked runs: rows in ``parked_runs``, their SDK states in ``parked_states`` (a part of
``SqliteStore``)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol

from crossgate.errors import ConflictError
from crossgate.model import ApprovalRequest, Event, NewEvent, ParkedRun, ParkedRunStatus
from crossgate.stores.base import Change, PruneEvent, in_given_order

_PARKED_SELECT = "SELECT p.body, s.state FROM parked_runs p JOIN parked_states s ON s.id = p.id"


class _Host(Protocol):
    def _write(self, write: str) -> AbstractContextManager[sqlite3.Connection]: ...
    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]: ...
    def _append(self, conn: sqlite3.Connection, new: NewEvent) -> Event: ...
    def _append_all(self, conn: sqlite3.Connection, news: Sequence[NewEvent]) -> Event: ...
    def _insert_request_row(self, conn: sqlite3.Connection, request: ApprovalRequest) -> None: ...

    # the mixin's own steps
    def _replace_parked(self, conn: sqlite3.Connection, parked: ParkedRun, current: ParkedRun) -> None: ...
    def _locked_parked(self, conn: sqlite3.Connection, parked_id: str) -> ParkedRun | None: ...


class ParkedRunsMixin:
    """``Store``'s parked runs: insert (with their requests), list, and change them under the write lock."""

    def insert_parked_run(
        self: _Host, parked: ParkedRun, event: NewEvent, requests: Sequence[tuple[ApprovalRequest, NewEvent]] = ()
    ) -> Event:
        with self._write("insert_parked_run") as conn:
            for request, _ in requests:
                self._insert_request_row(conn, request)
            try:
                conn.execute(
                    "INSERT INTO parked_runs (id, status, framework, run, body) VALUES (?, ?, ?, ?, ?)",
                    (parked.id, parked.status.value, parked.framework, parked.run, _parked_body(parked)),
                )
                conn.execute("INSERT INTO parked_states (id, state) VALUES (?, ?)", (parked.id, parked.state))
            except sqlite3.IntegrityError as exc:
                raise ConflictError(f"parked run {parked.id} already exists") from exc
            # The requests' ``submitted`` events, then ``run_parked``: sealed together, one head read and move.
            return self._append_all(conn, [*(submitted for _, submitted in requests), event])

    def get_parked_run(self: _Host, parked_id: str) -> ParkedRun | None:
        rows = self._read(f"{_PARKED_SELECT} WHERE p.id = ?", (parked_id,))
        return _parked_from_row(*rows[0]) if rows else None

    def list_parked_runs(
        self: _Host, *, statuses: Sequence[ParkedRunStatus] = (), framework: str | None = None, run: str | None = None
    ) -> list[ParkedRun]:
        where: list[str] = []
        params: list[Any] = []
        if statuses:
            where.append(f"p.status IN ({', '.join('?' for _ in statuses)})")
            params.extend(s.value for s in statuses)
        if framework is not None:
            where.append("p.framework = ?")
            params.append(framework)
        if run is not None:
            where.append("p.run = ?")
            params.append(run)
        sql = _PARKED_SELECT + (" WHERE " + " AND ".join(where) if where else "")
        return [_parked_from_row(*row) for row in self._read(sql + " ORDER BY p.position", params)]

    def _replace_parked(self: _Host, conn: sqlite3.Connection, parked: ParkedRun, current: ParkedRun) -> None:
        conn.execute(
            "UPDATE parked_runs SET status = ?, body = ? WHERE id = ?",
            (parked.status.value, _parked_body(parked), parked.id),
        )
        if parked.state != current.state:  # the state is large: written only when it changes (a prune)
            conn.execute("UPDATE parked_states SET state = ? WHERE id = ?", (parked.state, parked.id))

    def _locked_parked(self: _Host, conn: sqlite3.Connection, parked_id: str) -> ParkedRun | None:
        row = conn.execute(f"{_PARKED_SELECT} WHERE p.id = ?", (parked_id,)).fetchone()
        return _parked_from_row(*row) if row else None

    def change_parked_run(self: _Host, parked_id: str, change: Change[ParkedRun], event: NewEvent) -> ParkedRun | None:
        # The write lock is the row lock: nothing else holds the row, so there is nothing to skip.
        with self._write("change_parked_run") as conn:
            current = self._locked_parked(conn, parked_id)
            if current is None or not change.allowed(current):
                return None
            changed = change.apply(current)
            self._replace_parked(conn, changed, current)
            self._append(conn, event)
            return changed

    def change_parked_runs(self: _Host, ids: Sequence[str], change: Change[ParkedRun], event: PruneEvent) -> list[str]:
        with self._write("change_parked_runs") as conn:
            # Lists travel as one JSON parameter each: no limit on how many ids one change names.
            rows = conn.execute(
                f"{_PARKED_SELECT} WHERE p.id IN (SELECT value FROM json_each(?))", (json.dumps(list(ids)),)
            ).fetchall()
            current = {p.id: p for p in (_parked_from_row(*row) for row in rows) if change.allowed(p)}
            changed = in_given_order(ids, current)
            if changed:
                new = event(changed)  # built before anything changes: if it raises, the transaction rolls back
                for parked_id in changed:
                    self._replace_parked(conn, change.apply(current[parked_id]), current[parked_id])
                self._append(conn, new)
            return changed


def _parked_body(parked: ParkedRun) -> str:
    """The JSON kept in ``parked_runs.body``: every field but the state, which ``parked_states`` holds."""
    return parked.model_copy(update={"state": ""}).model_dump_json()


def _parked_from_row(body: str, state: str) -> ParkedRun:
    # The state is a plain string column: no JSON to parse, and model_copy needs no validation for it.
    return ParkedRun.model_validate_json(body).model_copy(update={"state": state})
