"""The PostgreSQL store's signed state: policy versions and audit checkpoints (a part of ``PostgresStore``)."""

from __future__ import annotations

from contextlib import AbstractContextManager
from datetime import datetime
from typing import Any, Protocol

import psycopg
from psycopg import sql

from crossgate.errors import ConflictError, StoreError
from crossgate.model import Event, NewEvent
from crossgate.stores.base import Checkpoint, PolicyVersion


class _Host(Protocol):
    def _write(self, action: str) -> AbstractContextManager[psycopg.Cursor[Any]]: ...
    def _conn(self, action: str) -> AbstractContextManager[psycopg.Connection[Any]]: ...
    def _append(self, cur: psycopg.Cursor[Any], new: NewEvent) -> Event: ...
    def _committed(self, seq: int) -> None: ...


class SignedStateMixin:
    """``Store``'s policy versions and checkpoints (migration 005) and the state heads (migrations 008, 010)."""

    def insert_policy_version(self: _Host, version: PolicyVersion, event: NewEvent) -> Event:
        row = {
            "version": version.version,
            "created_at": version.created_at,
            "created_by": version.created_by,
            "digest": version.digest,
            "source": version.source,
            "document": version.document,
            "token": version.token,
        }
        try:
            with self._write(f"store policy version {version.version}") as cur:
                head = cur.execute(_query("insert_policy_version"), row).fetchone()
                if head is None:
                    raise ConflictError(f"policy version {version.version} is not the next one")
                sealed = self._append(cur, event)
        except StoreError as exc:
            if isinstance(exc.__cause__, psycopg.errors.UniqueViolation):
                raise ConflictError(f"policy version {version.version} already exists") from exc.__cause__
            raise
        self._committed(sealed.seq)
        return sealed

    def get_policy_version(self: _Host, version: int | None = None) -> PolicyVersion | None:
        with self._conn("read a policy version") as conn:
            if version is None:
                row = conn.execute(_query("current_policy_version")).fetchone()
            else:
                row = conn.execute(_query("get_policy_version"), {"version": version}).fetchone()
        return None if row is None else _policy_version(row)

    def list_policy_versions(self: _Host) -> list[PolicyVersion]:
        with self._conn("list policy versions") as conn:
            return [_policy_version(row) for row in conn.execute(_query("list_policy_versions")).fetchall()]

    def insert_checkpoint(self: _Host, checkpoint: Checkpoint) -> None:
        params = {
            "seq": checkpoint.seq,
            "head_hash": checkpoint.head_hash,
            "at": checkpoint.at,
            "authored": checkpoint.authored,
            "token": checkpoint.token,
        }
        with self._conn(f"store the checkpoint of event {checkpoint.seq}") as conn:
            conn.execute(_query("insert_checkpoint"), params)

    def list_checkpoints(self: _Host) -> list[Checkpoint]:
        with self._conn("list checkpoints") as conn:
            return [_checkpoint(row) for row in conn.execute(_query("list_checkpoints")).fetchall()]

    def latest_checkpoint(self: _Host) -> Checkpoint | None:
        with self._conn("read the latest checkpoint") as conn:
            row = conn.execute(_query("latest_checkpoint")).fetchone()
        return None if row is None else _checkpoint(row)

    def put_state_head(self: _Host, kid: str, token: str, issued_at: datetime) -> None:
        with self._conn("store the state head") as conn:
            conn.execute(_query("put_state_head"), {"kid": kid, "issued_at": issued_at, "token": token})

    def get_state_head(self: _Host, kid: str) -> str | None:
        with self._conn("read the state head") as conn:
            row = conn.execute(_query("get_state_head"), {"kid": kid}).fetchone()
        return None if row is None else str(row[0])


def _query(name: str) -> sql.SQL:
    from crossgate.stores.postgres import queries  # the store module loads the SQL text

    return sql.SQL(queries()[name])


def _policy_version(row: Any) -> PolicyVersion:
    version, document, token, digest, created_by, created_at, source = row
    return PolicyVersion(
        version=int(version),
        document=document,
        token=token,
        digest=digest,
        created_by=created_by,
        created_at=created_at,
        source=source,
    )


def _checkpoint(row: Any) -> Checkpoint:
    seq, head_hash, at, token, authored = row
    return Checkpoint(seq=int(seq), head_hash=head_hash, at=at, token=token, authored=bool(authored))
