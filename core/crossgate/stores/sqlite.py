"""``SqliteStore``: the embedded default, one database file in WAL mode.

Every write is one ``BEGIN IMMEDIATE`` transaction holding SQLite's write lock, so compare-and-set and
the hash chain are serialised across threads and processes. Each thread gets its own connection.

This module holds the connections, the write transaction, the events, requests and standing rules;
the rest of ``SqliteStore`` comes from mixins: the group-committed request updates (decisions, applied
marks, expiries, cancellations) in ``_sqlite_updates``, parked runs in ``_sqlite_parked``, delivery
cursors in ``_sqlite_cursors``, policy versions and checkpoints in ``_sqlite_signed``.

How much a commit survives is the store's ``durability``:

- ``"full"`` (default): every commit runs with ``PRAGMA synchronous=FULL``, which in WAL mode syncs the
  WAL file after each commit, except the writes in ``LIGHT_WRITES`` (claims and finishes of parked runs,
  a reviewed call's outcome record, the stored state head), which run with ``synchronous=NORMAL``.
  Every other committed write (requests, parked runs, decisions, applied marks, expiries, cancellations,
  standing rules, policy versions, checkpoints, the group-committed events) survives a power cut, and so
  does every commit before it; a power cut can lose only a tail of ``LIGHT_WRITES`` commits that no FULL
  one followed.
- ``"normal"``: every commit runs with ``synchronous=NORMAL``: no sync at commit (SQLite syncs only around
  checkpoints). Every committed write survives a crash of the process (SIGKILL included: the write is in
  the operating system's cache); after a power cut or kernel crash the newest commits may be gone.
  SQLite still guarantees the file is consistent: what survives is a prefix of the commits.
- ``"decisions"``: ``synchronous=NORMAL``, except the writes in ``DURABLE_WRITES``, which run with
  ``synchronous=FULL``: ``update_request`` (decide, mark applied, expire, cancel), ``revoke_rule``,
  ``insert_policy_version``, ``insert_checkpoint`` and ``setup``. See ``DURABLE_WRITES`` for what a power
  cut can lose and why the invariants hold.

Under every setting, the events given to ``enqueue_event`` (policy allow/deny records, call outcomes)
are group-committed (see ``crossgate.stores._event_batch``): a crash of the process, or a power cut,
loses those not committed yet, at most the last ``FLUSH_INTERVAL_SECONDS`` or so of them, and never one
that a later write of the process followed (that write committed it first, in its own transaction).

Why ``decisions`` (and ``full`` with its ``LIGHT_WRITES``) is sound: the WAL is append-only, and a FULL
commit syncs the whole WAL file, so it also makes every earlier commit in it durable, NORMAL ones
included, whichever connection or process wrote them. Recovery replays WAL frames from the start only
while their running checksums hold, so what survives a power cut is always a prefix of the commit order:
the commits up to (at least) the last FULL one, plus possibly some later NORMAL ones. Nothing in the
middle can go missing. ``synchronous`` is a per-connection setting that SQLite refuses to change inside
a transaction ("Safety level may not be changed inside a transaction"), so the store sets it on the
thread's connection just before ``BEGIN``, under the process's write lock.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from datetime import datetime
from importlib import resources
from pathlib import Path
from typing import Any

from crossgate.audit import sealed
from crossgate.errors import AuditHeadMissingError, ConfigurationError, ConflictError, StoreError
from crossgate.model import (
    OUTCOME_KINDS,
    ApprovalRequest,
    Event,
    NewEvent,
    StandingRule,
)
from crossgate.stores._event_batch import EventBatch
from crossgate.stores._signatures import request_body, request_from_row, request_signatures, rule_body, rule_from_row
from crossgate.stores._sqlite_credentials import CredentialsMixin
from crossgate.stores._sqlite_cursors import DeliveryCursorsMixin
from crossgate.stores._sqlite_durability import (
    DURABILITIES,
    SYNC_FULL,
    SYNC_NORMAL,
    Durability,
    sync_level,
)
from crossgate.stores._sqlite_parked import ParkedRunsMixin
from crossgate.stores._sqlite_signed import BUMP_RULES_VERSION, SignedStateMixin
from crossgate.stores._sqlite_updates import RequestUpdatesMixin, epoch
from crossgate.stores._update_batch import MovedHints, UpdateQueue
from crossgate.stores.base import (
    Page,
    RequestQuery,
    decode_cursor,
    encode_cursor,
)
from crossgate.stores.migrations import Migration, load_migrations, run_migrations

BUSY_TIMEOUT_MS = 30_000
POLL_SECONDS = 0.01
"""How often the one watcher thread per queue looks for other processes' changes."""


def migrations() -> tuple[Migration, ...]:
    """The numbered forward migrations of ``sql/sqlite``, in order."""
    return load_migrations(resources.files("crossgate.stores") / "sql" / "sqlite", "SQLite")


@contextmanager
def _wrapped(action: str) -> Iterator[None]:
    """The one place driver errors become StoreError (an int beyond 64 bits is one too: OverflowError)."""
    try:
        yield
    except (sqlite3.Error, OverflowError) as exc:
        raise StoreError(f"SQLite could not {action}: {exc}".strip()) from exc


def _rollback(conn: sqlite3.Connection) -> None:
    # Some failures (a full disk, a corrupt page) end the transaction themselves; then there is nothing to roll back.
    if conn.in_transaction:
        with suppress(sqlite3.Error):
            conn.execute("ROLLBACK")


class SqliteStore(SignedStateMixin, RequestUpdatesMixin, ParkedRunsMixin, DeliveryCursorsMixin, CredentialsMixin):
    """The ``Store`` protocol on one SQLite file (policy versions and checkpoints: ``_sqlite_signed``; request
    updates: ``_sqlite_updates``; parked runs: ``_sqlite_parked``; delivery cursors: ``_sqlite_cursors``;
    credentials: ``_sqlite_credentials``)."""

    def __init__(self, path: Path | str, *, durability: Durability = "full") -> None:
        if durability not in DURABILITIES:
            raise ConfigurationError(
                f"unknown SQLite durability {durability!r}: expected one of {', '.join(DURABILITIES)}"
            )
        self.path = Path(path)
        self.durability: Durability = durability
        # A test seam: called inside each write transaction, right after BEGIN, with the write's name.
        self._write_hook: Callable[[str, sqlite3.Connection], None] | None = None
        self._local = threading.local()
        self._connections: list[tuple[threading.Thread, sqlite3.Connection]] = []
        self._connections_lock = threading.Lock()
        self._closed = False
        self._write_lock = _process_write_lock(self.path)
        self._taking = False  # a write holds enqueued events it took from the batch, not committed yet
        self._moved = MovedHints()  # a lost compare-and-set is refused by a read, not a transaction
        self._updates = UpdateQueue("SQLite")
        self._batch = EventBatch(self.flush_events, on_thread_exit=self._drop_connection)

    # connections --------------------------------------------------------------------------------
    def _conn(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if self._closed:
            if conn is not None:
                conn.close()
                self._local.conn = None
            raise StoreError(f"the SQLite store {self.path} is closed")
        if conn is None:
            with _wrapped(f"open the database {self.path}"):
                conn = sqlite3.connect(
                    self.path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None, check_same_thread=False
                )
                conn.execute("PRAGMA journal_mode=WAL")
                level = SYNC_NORMAL if self.durability == "normal" else SYNC_FULL
                conn.execute(f"PRAGMA synchronous={level}")
                conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
            self._local.conn = conn
            self._local.sync = level
            with self._connections_lock:
                self._connections.append((threading.current_thread(), conn))
        return conn

    def sync_level(self, write: str, *, carries_enqueued: bool = False) -> int:
        """The ``PRAGMA synchronous`` value the write named ``write`` commits with under this durability."""
        return sync_level(self.durability, write, carries_enqueued=carries_enqueued)

    @contextmanager
    def _write(self, write: str) -> Iterator[sqlite3.Connection]:
        # Threads of one process queue on a lock instead of SQLite's busy handler, whose sleeping
        # retries give writers a long latency tail; BEGIN IMMEDIATE still serialises processes.
        with self._write_lock, self._locked_write(write) as conn:
            yield conn

    @contextmanager
    def _locked_write(self, write: str) -> Iterator[sqlite3.Connection]:
        """The write transaction of ``_write``, for a caller that holds the write lock already."""
        with _wrapped(write.replace("_", " ")):
            conn = self._conn()
            # Events enqueued before this write go first, in its transaction: they keep their place in
            # the chain before the change it commits, and become durable with it. Taken before the
            # level is chosen (it depends on them); nothing else takes them while this lock is held.
            # ``_taking`` is set before they leave the batch and cleared once they are committed or given
            # back, so ``flush_events`` knows without the lock whether some are on their way.
            self._taking = True
            waiting = self._batch.take()
            if not waiting:
                self._taking = False
            try:
                level = self.sync_level(write, carries_enqueued=bool(waiting))
                if self._local.sync != level:
                    conn.execute(f"PRAGMA synchronous={level}")  # refused inside a transaction: set it before BEGIN
                    self._local.sync = level
                conn.execute("BEGIN IMMEDIATE")
            except BaseException:
                self._batch.give_back(waiting)
                self._taking = False
                raise
            try:
                if self._write_hook is not None:
                    self._write_hook(write, conn)
                if waiting:
                    self._append_all(conn, waiting)
                yield conn
                conn.execute("COMMIT")
            except BaseException:
                _rollback(conn)
                self._batch.give_back(waiting)
                self._taking = False
                raise
            if waiting:
                self._taking = False
                self._batch.committed()

    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        with _wrapped("read"):
            return self._conn().execute(sql, params).fetchall()

    def setup(self) -> None:
        """Create the file and apply every migration it does not have yet."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"cannot create the folder for SQLite database {self.path}: {exc}") from exc
        with self._write("setup") as conn:
            register_functions(conn)
            conn.execute("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")
            applied = {version for (version,) in conn.execute("SELECT version FROM schema_version")}

            def apply(migration: Migration) -> None:
                for statement in _statements(migration.text):
                    conn.execute(statement)

            def record(migration: Migration) -> None:
                conn.execute("INSERT INTO schema_version (version) VALUES (?)", (migration.version,))

            run_migrations(applied, migrations(), apply=apply, record=record)

    def schema_version(self) -> int:
        """The highest migration applied."""
        return int(self._read("SELECT coalesce(max(version), 0) FROM schema_version")[0][0])

    def close(self) -> None:
        """Commit the enqueued events; close this thread's connection and those of finished threads now,
        others on their next use.

        Closing a connection while another thread is inside a query can crash the interpreter, so a
        live thread closes its own connection when it next touches the store (and gets StoreError).
        """
        if self._closed:
            return
        try:
            self._batch.close()
        finally:
            self._close_connections()

    def _close_connections(self) -> None:
        with self._connections_lock:
            self._closed = True
            keep: list[tuple[threading.Thread, sqlite3.Connection]] = []
            for owner, conn in self._connections:
                if owner is threading.current_thread() or not owner.is_alive():
                    conn.close()
                else:
                    keep.append((owner, conn))
            self._connections = keep
        self._local.conn = None

    def _drop_connection(self) -> None:
        """Close the calling thread's connection (the audit writer's, as its thread ends)."""
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            return
        with self._connections_lock:
            self._connections = [(t, c) for t, c in self._connections if c is not conn]
        conn.close()
        self._local.conn = None

    # events -------------------------------------------------------------------------------------
    def _append(self, conn: sqlite3.Connection, new: NewEvent) -> Event:
        return self._append_all(conn, [new])

    def _append_all(self, conn: sqlite3.Connection, news: Sequence[NewEvent]) -> Event:
        """Seal ``news`` after the head this transaction reads, insert them, move the head once; the last one."""
        return self._insert_sealed(conn, news, _head(conn.execute(_HEAD_SELECT).fetchall()))[-1]

    def _insert_sealed(self, conn: sqlite3.Connection, news: Sequence[NewEvent], head: tuple[Any, ...]) -> list[Event]:
        """Seal ``news`` one after the other after ``head``, insert them, move the head once; the events."""
        seq, prev_hash = head
        if seq is None:
            raise AuditHeadMissingError()
        events: list[Event] = []
        rows: list[tuple[Any, ...]] = []
        for new in news:
            # The payload is stored as the canonical JSON its hash covers: serialised once, not twice.
            event, at, payload_text = sealed(new, seq=seq + 1, prev_hash=prev_hash)
            events.append(event)
            rows.append(_sealed_row(event, at, payload_text))
            seq, prev_hash = event.seq, event.hash
        for start in range(0, len(rows), _ROWS_PER_INSERT):
            chunk = rows[start : start + _ROWS_PER_INSERT]
            conn.execute(_INSERT_EVENTS + ", ".join([_EVENT_VALUES] * len(chunk)), [v for row in chunk for v in row])
        conn.execute("UPDATE audit_head SET seq = ?, hash = ? WHERE one = 1", (seq, prev_hash))
        return events

    def append_event(self, event: NewEvent) -> Event:
        with self._write("append_outcome" if event.kind in OUTCOME_KINDS else "append_event") as conn:
            return self._append(conn, event)

    def enqueue_event(self, event: NewEvent) -> None:
        self._batch.add(event)

    def flush_events(self) -> None:
        if self._batch.pending:
            with self._write("append_event"):
                pass  # the write appends what waits
        elif self._taking:
            # A write took enqueued events and has not committed them yet: its transaction holds this
            # lock. (When none is on its way, as on a review server, which enqueues nothing, a read of
            # the head or the log does not queue behind the writers.)
            with self._write_lock:
                pass

    def rules_version(self) -> int:
        return int(self._read("SELECT version FROM rules_version WHERE one = 1")[0][0])

    def list_events(self, *, after: int = 0, limit: int | None = None, request_id: str | None = None) -> list[Event]:
        self.flush_events()  # this process reads what it enqueued
        sql = (
            "SELECT seq, at, kind, request_id, run, actor, channel, payload, prev_hash, hash FROM events WHERE seq > ?"
        )
        params: list[Any] = [after]
        if request_id is not None:
            sql += " AND request_id = ?"
            params.append(request_id)
        sql += " ORDER BY seq"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        return [_event_from_row(row) for row in self._read(sql, params)]

    def audit_head(self) -> tuple[int, str]:
        self.flush_events()
        seq, digest = _head(self._read(_HEAD_SELECT))
        return int(seq), str(digest)

    def wait_for_change(self, after: int, timeout: float) -> int:
        deadline = time.monotonic() + timeout
        while True:
            latest = self.audit_head()[0]
            if latest > after or time.monotonic() >= deadline:
                return latest
            time.sleep(POLL_SECONDS)

    # requests -----------------------------------------------------------------------------------
    def insert_request(self, request: ApprovalRequest, event: NewEvent) -> Event:
        with self._write("insert_request") as conn:
            return self._insert_request(conn, request, event)

    def _insert_request(self, conn: sqlite3.Connection, request: ApprovalRequest, event: NewEvent) -> Event:
        self._insert_request_row(conn, request)
        return self._append(conn, event)

    def _insert_request_row(self, conn: sqlite3.Connection, request: ApprovalRequest) -> None:
        call = request.call
        try:
            conn.execute(
                "INSERT INTO requests (id, status, framework, tool, agent, run, expires_at, body, signatures)"
                " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    request.id,
                    request.status.value,
                    call.framework,
                    call.tool,
                    call.agent,
                    call.run,
                    epoch(request.expires_at),
                    request_body(request),
                    request_signatures(request),
                ),
            )
        except sqlite3.IntegrityError as exc:
            raise ConflictError(f"request {request.id} already exists") from exc

    def get_request(self, request_id: str) -> ApprovalRequest | None:
        rows = self._read("SELECT body, signatures FROM requests WHERE id = ?", (request_id,))
        return request_from_row(*rows[0]) if rows else None

    def list_requests(self, query: RequestQuery) -> Page[ApprovalRequest]:
        where: list[str] = []
        params: list[Any] = []
        if query.statuses:
            where.append(f"status IN ({', '.join('?' for _ in query.statuses)})")
            params.extend(s.value for s in query.statuses)
        for column in ("framework", "tool", "agent", "run"):
            value = getattr(query, column)
            if value is not None:
                where.append(f"{column} = ?")
                params.append(value)
        if query.cursor is not None:
            where.append("position < ?" if query.newest_first else "position > ?")
            params.append(decode_cursor(query.cursor))
        sql = "SELECT position, body, signatures FROM requests"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += f" ORDER BY position {'DESC' if query.newest_first else 'ASC'} LIMIT ?"
        params.append(query.limit + 1)
        rows = self._read(sql, params)
        items = [request_from_row(body, signed) for _, body, signed in rows[: query.limit]]
        next_cursor = encode_cursor(rows[query.limit - 1][0]) if len(rows) > query.limit else None
        return Page(items, next_cursor)

    def overdue_requests(self, now: datetime, limit: int = 100) -> list[ApprovalRequest]:
        rows = self._read(
            "SELECT body, signatures FROM requests"
            " WHERE status = 'pending' AND expires_at IS NOT NULL AND expires_at <= ?"
            " ORDER BY position LIMIT ?",
            (now.timestamp(), limit),
        )
        return [request_from_row(body, signed) for body, signed in rows]

    # standing rules -----------------------------------------------------------------------------
    def insert_rule(self, rule: StandingRule, event: NewEvent) -> Event:
        with self._write("insert_rule") as conn:
            try:
                conn.execute(
                    "INSERT INTO standing_rules (id, revoked, body, signature) VALUES (?, ?, ?, ?)",
                    (rule.id, int(rule.revoked_at is not None), rule_body(rule), rule.signature),
                )
            except sqlite3.IntegrityError as exc:
                raise ConflictError(f"rule {rule.id} already exists") from exc
            conn.execute(BUMP_RULES_VERSION)
            return self._append(conn, event)

    def get_rule(self, rule_id: str) -> StandingRule | None:
        rows = self._read("SELECT body, signature FROM standing_rules WHERE id = ?", (rule_id,))
        return rule_from_row(*rows[0]) if rows else None

    def list_rules(self, *, include_revoked: bool = False) -> list[StandingRule]:
        sql = "SELECT body, signature FROM standing_rules" + ("" if include_revoked else " WHERE revoked = 0")
        return [rule_from_row(body, signed) for body, signed in self._read(sql + " ORDER BY position")]

    def revoke_rule(self, rule: StandingRule, event: NewEvent) -> Event | None:
        with self._write("revoke_rule") as conn:
            updated = conn.execute(
                "UPDATE standing_rules SET revoked = 1, body = ? WHERE id = ? AND revoked = 0",
                (rule_body(rule), rule.id),
            ).rowcount
            if not updated:
                return None
            conn.execute(BUMP_RULES_VERSION)
            return self._append(conn, event)


_WRITE_LOCKS: dict[str, threading.Lock] = {}
_WRITE_LOCKS_GUARD = threading.Lock()


def _process_write_lock(path: Path) -> threading.Lock:
    key = str(path.resolve())
    with _WRITE_LOCKS_GUARD:
        return _WRITE_LOCKS.setdefault(key, threading.Lock())


_HEAD_SELECT = "SELECT seq, hash FROM audit_head WHERE one = 1"


_INSERT_EVENTS = "INSERT INTO events (seq, at, kind, request_id, run, actor, channel, payload, prev_hash, hash) VALUES "
_EVENT_VALUES = "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
_ROWS_PER_INSERT = 64
"""Events one ``INSERT`` writes (640 parameters, far below SQLite's limit)."""


def _head(rows: list[tuple[Any, ...]]) -> tuple[Any, ...]:
    if not rows:
        raise AuditHeadMissingError()
    return rows[0]


def _sealed_row(event: Event, at: str, payload_text: str) -> tuple[Any, ...]:
    """The ``events`` row of ``event``: ``at`` and the payload as the texts :func:`~crossgate.audit.sealed` gave."""
    return (
        event.seq,
        at,
        event.kind,
        event.request_id,
        event.run,
        event.actor,
        event.channel,
        payload_text,
        event.prev_hash,
        event.hash,
    )


def _event_from_row(row: tuple[Any, ...]) -> Event:
    seq, at, kind, request_id, run, actor, channel, payload, prev_hash, digest = row
    return Event(
        seq=seq,
        at=datetime.fromisoformat(at),
        kind=kind,
        request_id=request_id,
        run=run,
        actor=actor,
        channel=channel,
        payload=json.loads(payload),
        prev_hash=prev_hash,
        hash=digest,
    )


def register_functions(conn: sqlite3.Connection) -> None:
    """The SQL functions the migrations call: ``crossgate_token_kid(token)``, the kid a token's header names."""
    from crossgate.authority._jws import token_kid

    conn.create_function("crossgate_token_kid", 1, lambda token: token_kid(str(token)), deterministic=True)


def _statements(sql: str) -> list[str]:
    """Split a migration into statements (the migrations contain no semicolons inside literals)."""
    lines = [line for line in sql.splitlines() if not line.strip().startswith("--")]
    return [s.strip() for s in "\n".join(lines).split(";") if s.strip()]
