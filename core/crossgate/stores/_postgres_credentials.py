"""The PostgreSQL store's credentials (a part of ``PostgresStore``; the protocol is ``crossgate.stores.credentials``).

Each change locks the chain head first (appending its event), so credential writes are ordered with every
other write, and a revoke or rotate that finds the row no longer live rolls its event back.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any, Protocol

import psycopg
from psycopg import sql

from crossgate.errors import ConflictError, StoreError
from crossgate.model import Event, NewEvent
from crossgate.stores.credentials import Credential, CredentialKind, scope_fields


class _Host(Protocol):
    def _write(self, action: str) -> AbstractContextManager[psycopg.Cursor[Any]]: ...
    def _conn(self, action: str) -> AbstractContextManager[psycopg.Connection[Any]]: ...
    def _append(self, cur: psycopg.Cursor[Any], new: NewEvent) -> Event: ...
    def _committed(self, seq: int) -> None: ...


class _NotLive(Exception):
    """Rolls back a revoke or rotate whose credential is not live."""


class CredentialsMixin:
    """``CredentialStore`` on the table of migration 009."""

    def insert_credential(self: _Host, credential: Credential, event: NewEvent) -> Event:
        try:
            with self._write(f"store credential {credential.name}") as cur:
                sealed = self._append(cur, event)
                cur.execute(_query("insert_credential"), _row(credential))
        except StoreError as exc:
            if isinstance(exc.__cause__, psycopg.errors.UniqueViolation):
                raise ConflictError(f"a live {credential.kind} named {credential.name!r} exists already") from None
            raise
        self._committed(sealed.seq)
        return sealed

    def revoke_credential(self: _Host, credential_id: str, at: datetime, by: str, event: NewEvent) -> Event | None:
        try:
            with self._write("revoke a credential") as cur:
                sealed = self._append(cur, event)
                if (
                    cur.execute(_query("revoke_credential"), {"id": credential_id, "at": at, "by": by}).fetchone()
                    is None
                ):
                    raise _NotLive
        except _NotLive:
            return None
        self._committed(sealed.seq)
        return sealed

    def rotate_credential(self: _Host, credential_id: str, new: Credential, event: NewEvent) -> Event | None:
        revoke = {"id": credential_id, "at": new.created_at, "by": new.created_by}
        try:
            with self._write(f"rotate credential {new.name}") as cur:
                sealed = self._append(cur, event)
                if cur.execute(_query("revoke_credential"), revoke).fetchone() is None:
                    raise _NotLive
                cur.execute(_query("insert_credential"), _row(new))
        except _NotLive:
            return None
        self._committed(sealed.seq)
        return sealed

    def credential_for(self: _Host, token_sha256: str) -> Credential | None:
        with self._conn("look a credential up") as conn:
            row = conn.execute(_query("credential_for"), {"token_sha256": token_sha256}).fetchone()
        return None if row is None else _credential(row)

    def list_credentials(
        self: _Host, kind: CredentialKind | None = None, *, include_revoked: bool = False
    ) -> list[Credential]:
        params = {"kind": kind, "include_revoked": include_revoked}
        with self._conn("list credentials") as conn:
            return [_credential(row) for row in conn.execute(_query("list_credentials"), params).fetchall()]


def _query(name: str) -> sql.SQL:
    from crossgate.stores.postgres import queries  # the store module loads the SQL text

    return sql.SQL(queries()[name])


def _row(credential: Credential) -> dict[str, Any]:
    return {
        "id": credential.id,
        "kind": credential.kind,
        "name": credential.name,
        "token_sha256": credential.token_sha256,
        "scope": credential.scope_json(),
        "created_at": credential.created_at,
        "created_by": credential.created_by,
        "signature": credential.signature,
    }


def _credential(row: Any) -> Credential:
    cid, kind, name, digest, scope, created_at, created_by, signature, revoked_at, revoked_by = row
    return Credential(
        id=cid,
        kind=kind,
        name=name,
        token_sha256=digest,
        created_at=created_at,
        created_by=created_by,
        signature=signature,
        revoked_at=revoked_at,
        revoked_by=revoked_by,
        **scope_fields(scope),
    )
