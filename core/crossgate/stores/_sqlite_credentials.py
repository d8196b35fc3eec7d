"""The SQLite store's credentials (a part of ``SqliteStore``; the protocol is ``crossgate.stores.credentials``)."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any, Protocol

from crossgate.errors import ConflictError
from crossgate.model import Event, NewEvent
from crossgate.stores.credentials import Credential, CredentialKind, scope_fields

_SELECT = (
    "SELECT id, kind, name, token_sha256, scope, created_at, created_by, signature, revoked_at, revoked_by"
    " FROM credentials"
)
_INSERT = (
    "INSERT INTO credentials (id, kind, name, token_sha256, scope, created_at, created_by, signature)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
)
_REVOKE = "UPDATE credentials SET revoked_at = ?, revoked_by = ? WHERE id = ? AND revoked_at IS NULL"


class _Host(Protocol):
    def _write(self, write: str) -> AbstractContextManager[sqlite3.Connection]: ...
    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]: ...
    def _append(self, conn: sqlite3.Connection, new: NewEvent) -> Event: ...


class CredentialsMixin:
    """``CredentialStore`` on the table of migration 0009, each change under the write lock with its event."""

    def insert_credential(self: _Host, credential: Credential, event: NewEvent) -> Event:
        with self._write("insert_credential") as conn:
            _insert(conn, credential)
            return self._append(conn, event)

    def revoke_credential(self: _Host, credential_id: str, at: datetime, by: str, event: NewEvent) -> Event | None:
        with self._write("revoke_credential") as conn:
            if conn.execute(_REVOKE, (at.isoformat(), by, credential_id)).rowcount != 1:
                return None
            return self._append(conn, event)

    def rotate_credential(self: _Host, credential_id: str, new: Credential, event: NewEvent) -> Event | None:
        with self._write("rotate_credential") as conn:
            revoked = conn.execute(_REVOKE, (new.created_at.isoformat(), new.created_by, credential_id))
            if revoked.rowcount != 1:
                return None
            _insert(conn, new)
            return self._append(conn, event)

    def credential_for(self: _Host, token_sha256: str) -> Credential | None:
        rows = self._read(f"{_SELECT} WHERE token_sha256 = ? AND revoked_at IS NULL", (token_sha256,))
        return _credential(rows[0]) if rows else None

    def list_credentials(
        self: _Host, kind: CredentialKind | None = None, *, include_revoked: bool = False
    ) -> list[Credential]:
        where = ["1 = 1"]
        params: list[Any] = []
        if kind is not None:
            where.append("kind = ?")
            params.append(kind)
        if not include_revoked:
            where.append("revoked_at IS NULL")
        return [_credential(r) for r in self._read(f"{_SELECT} WHERE {' AND '.join(where)} ORDER BY rowid", params)]


def _insert(conn: sqlite3.Connection, credential: Credential) -> None:
    row = (
        credential.id,
        credential.kind,
        credential.name,
        credential.token_sha256,
        credential.scope_json(),
        credential.created_at.isoformat(),
        credential.created_by,
        credential.signature,
    )
    try:
        conn.execute(_INSERT, row)
    except sqlite3.IntegrityError:
        raise ConflictError(f"a live {credential.kind} named {credential.name!r} exists already") from None


def _credential(row: tuple[Any, ...]) -> Credential:
    cid, kind, name, digest, scope, created_at, created_by, signature, revoked_at, revoked_by = row
    return Credential(
        id=cid,
        kind=kind,
        name=name,
        token_sha256=digest,
        created_at=datetime.fromisoformat(created_at),
        created_by=created_by,
        signature=signature,
        revoked_at=None if revoked_at is None else datetime.fromisoformat(revoked_at),
        revoked_by=revoked_by,
        **scope_fields(scope),
    )
