"""The SQLite store's signed state: policy versions and audit checkpoints (a part of ``SqliteStore``)."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from typing import Any, Protocol

from crossgate.errors import ConflictError
from crossgate.model import Event, NewEvent
from crossgate.stores.base import Checkpoint, PolicyVersion

BUMP_RULES_VERSION = "UPDATE rules_version SET version = version + 1 WHERE one = 1"
_POLICY_SELECT = "SELECT version, document, token, digest, created_by, created_at, source FROM policy_versions"
_CHECKPOINT_SELECT = "SELECT seq, head_hash, at, token, authored FROM audit_checkpoints"


class _Host(Protocol):
    def _write(self, write: str) -> AbstractContextManager[sqlite3.Connection]: ...
    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]: ...
    def _append(self, conn: sqlite3.Connection, new: NewEvent) -> Event: ...


class SignedStateMixin:
    """``Store``'s policy versions and checkpoints (migration 0006) and the state heads (migrations 0008, 0010)."""

    def insert_policy_version(self: _Host, version: PolicyVersion, event: NewEvent) -> Event:
        with self._write("insert_policy_version") as conn:
            (newest,) = conn.execute("SELECT coalesce(max(version), 0) FROM policy_versions").fetchone()
            if version.version != newest + 1:
                raise ConflictError(f"policy version {version.version} is not the next one ({newest + 1})")
            conn.execute(
                "INSERT INTO policy_versions (version, created_at, created_by, digest, source, document, token)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    version.version,
                    version.created_at.isoformat(),
                    version.created_by,
                    version.digest,
                    version.source,
                    version.document,
                    version.token,
                ),
            )
            conn.execute(BUMP_RULES_VERSION)
            return self._append(conn, event)

    def get_policy_version(self: _Host, version: int | None = None) -> PolicyVersion | None:
        if version is None:
            rows = self._read(f"{_POLICY_SELECT} ORDER BY version DESC LIMIT 1")
        else:
            rows = self._read(f"{_POLICY_SELECT} WHERE version = ?", (version,))
        return _policy_version(rows[0]) if rows else None

    def list_policy_versions(self: _Host) -> list[PolicyVersion]:
        return [_policy_version(row) for row in self._read(f"{_POLICY_SELECT} ORDER BY version")]

    def insert_checkpoint(self: _Host, checkpoint: Checkpoint) -> None:
        with self._write("insert_checkpoint") as conn:
            conn.execute(
                "INSERT INTO audit_checkpoints (seq, head_hash, at, authored, token) VALUES (?, ?, ?, ?, ?)"
                " ON CONFLICT (seq) DO UPDATE SET head_hash = excluded.head_hash, at = excluded.at,"
                " authored = excluded.authored, token = excluded.token"
                " WHERE excluded.authored = 1 AND audit_checkpoints.authored = 0",
                (
                    checkpoint.seq,
                    checkpoint.head_hash,
                    checkpoint.at.isoformat(),
                    int(checkpoint.authored),
                    checkpoint.token,
                ),
            )

    def list_checkpoints(self: _Host) -> list[Checkpoint]:
        return [_checkpoint(row) for row in self._read(f"{_CHECKPOINT_SELECT} ORDER BY seq")]

    def latest_checkpoint(self: _Host) -> Checkpoint | None:
        rows = self._read(f"{_CHECKPOINT_SELECT} ORDER BY seq DESC LIMIT 1")
        return _checkpoint(rows[0]) if rows else None

    def put_state_head(self: _Host, kid: str, token: str, issued_at: datetime) -> None:
        with self._write("put_state_head") as conn:
            conn.execute(
                "INSERT INTO state_heads (kid, issued_at, token) VALUES (?, ?, ?)"
                " ON CONFLICT (kid) DO UPDATE SET issued_at = excluded.issued_at, token = excluded.token",
                (kid, _utc_text(issued_at), token),
            )

    def get_state_head(self: _Host, kid: str) -> str | None:
        rows = self._read("SELECT token FROM state_heads WHERE kid = ?", (kid,))
        return str(rows[0][0]) if rows else None


def _utc_text(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="microseconds")


def _policy_version(row: tuple[Any, ...]) -> PolicyVersion:
    version, document, token, digest, created_by, created_at, source = row
    return PolicyVersion(
        version=int(version),
        document=document,
        token=token,
        digest=digest,
        created_by=created_by,
        created_at=datetime.fromisoformat(created_at),
        source=source,
    )


def _checkpoint(row: tuple[Any, ...]) -> Checkpoint:
    seq, head_hash, at, token, authored = row
    return Checkpoint(
        seq=int(seq), head_hash=head_hash, at=datetime.fromisoformat(at), token=token, authored=bool(authored)
    )
