"""``SqliteStore``: the embedded default, one database file in WAL mode.

Every write is one ``BEGIN IMMEDIATE`` transaction holding SQLite's write lock, so compare-and-set and
the hash chain are serialised across threads and processes. Each thread gets its own connection.

How much a commit survives is the store's ``durability``:

- ``"full"`` (default): every commit runs with ``PRAGMA synchronous=FULL``, which in WAL mode syncs the
  WAL file after each commit, except the writes in ``LIGHT_WRITES`` (claims and finishes of parked runs,
  a reviewed call's outcome record), which run with ``synchronous=NORMAL``. Every other committed write
  (requests, parked runs, decisions, applied marks, expiries, cancellations, standing rules, policy
  versions, checkpoints, the group-committed events) survives a power cut, and so does every commit
  before it; a power cut can lose only a tail of ``LIGHT_WRITES`` commits that no FULL one followed.
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
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any

from crossgate.audit import seal
from crossgate.errors import AuditHeadMissingError, ConfigurationError, ConflictError, StoreError
from crossgate.model import (
    OUTCOME_KINDS,
    ApprovalRequest,
    Event,
    NewEvent,
    ParkedRun,
    ParkedRunStatus,
    RequestStatus,
    StandingRule,
)
from crossgate.stores._event_batch import EventBatch
from crossgate.stores._signatures import request_body, request_from_row, request_signatures, rule_body, rule_from_row
from crossgate.stores._sqlite_durability import (
    DURABILITIES,
    SYNC_FULL,
    SYNC_NORMAL,
    Durability,
    sync_level,
)
from crossgate.stores._sqlite_signed import BUMP_RULES_VERSION, SignedStateMixin
from crossgate.stores._update_batch import Update, UpdateQueue
from crossgate.stores.base import (
    Change,
    Page,
    PruneEvent,
    RequestQuery,
    decode_cursor,
    encode_cursor,
    in_given_order,
)
from crossgate.stores.cursors import (
    DeliveryCursor,
    check_delivery_cursor_args,
    delivery_cursor_advanceable,
    delivery_cursor_claimable,
)
from crossgate.stores.migrations import Migration, load_migrations, run_migrations

BUSY_TIMEOUT_MS = 30_000
POLL_SECONDS = 0.01
"""How often the one watcher thread per queue looks for other processes' changes."""
MOVED_HINTS = 4096
"""How many requests one store remembers having moved (see ``SqliteStore._moved_from``)."""


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


class SqliteStore(SignedStateMixin):
    """The ``Store`` protocol on one SQLite file (policy versions and checkpoints: ``_sqlite_signed``)."""

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
        # Requests this store saw leave a status (id → the status it wrote), most recent last: a hint
        # that a compare-and-set on them is lost, confirmed by a read before it is believed.
        self._moved: OrderedDict[str, str] = OrderedDict()
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
        for new in news:
            event = seal(new, seq=seq + 1, prev_hash=prev_hash)
            events.append(event)
            seq, prev_hash = event.seq, event.hash
        rows = [_event_row(e, e.seq, e.at.isoformat(), e.prev_hash, e.hash) for e in events]
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
                    _epoch(request.expires_at),
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

    def update_request(
        self, request: ApprovalRequest, expected: Sequence[RequestStatus], event: NewEvent
    ) -> Event | None:
        # The row is serialised before the write lock is taken: the lock (and SQLite's) is held only for SQL.
        # Updates that wait for the lock meanwhile commit in one transaction (``_update_batch``).
        statuses = tuple(s.value for s in expected)
        params = (
            request.status.value,
            _epoch(request.expires_at),
            request_body(request),
            request_signatures(request),
            request.id,
            *statuses,
        )
        update = Update(request.id, request.status.value, statuses, params, event)
        return self._updates.submit(update, self._commit_updates)

    def _commit_updates(self, take: Callable[[], list[Update]]) -> None:
        """Commit the waiting updates (``_update_batch``): under the write lock, in one transaction."""
        with self._write_lock:
            todo: list[Update] = []
            for update in take():
                try:
                    lost = self._moved_from(update.request_id, update.expected)
                except StoreError as exc:
                    update.finish(error=exc)
                    continue
                if lost:
                    update.finish(None)
                else:
                    todo.append(update)
            if not todo:
                return
            try:
                sealed = self._update_together(todo)
            except Exception as exc:
                if len(todo) == 1:
                    todo[0].finish(error=exc)
                    return
                for update in todo:  # one transaction each: one update's failure is only its own
                    try:
                        update.finish(self._update_together([update])[0])
                    except Exception as own:
                        update.finish(error=own)
                return
            for update, event in zip(todo, sealed, strict=True):
                update.finish(event)

    def _update_together(self, updates: Sequence[Update]) -> list[Event | None]:
        """The compare-and-sets of ``updates`` in one transaction, in order; each one's sealed event or None.

        The ``UPDATE``s run back to back, then the events of those that succeeded are sealed one after the
        other and inserted by one statement, and the head moves once: the fewer statements, the shorter
        the transaction holds SQLite's write lock (each statement gives up the GIL, and under load getting
        it back is what takes longest). The head comes back with the compare-and-set (RETURNING), read
        in this transaction after the waiting events were appended; the ``UPDATE``s do not move it.
        """
        won: list[int] = []
        with self._locked_write("update_request") as conn:
            head: tuple[Any, ...] | None = None
            for index, update in enumerate(updates):
                returned = conn.execute(_update_sql(len(update.expected)), update.params).fetchall()
                if returned:
                    won.append(index)
                    head = head or returned[0]
            sealed = self._insert_sealed(conn, [updates[i].event for i in won], head) if head is not None else []
        results: list[Event | None] = [None] * len(updates)
        for index, event in zip(won, sealed, strict=True):  # committed: remember what moved
            results[index] = event
            self._note_moved(updates[index].request_id, updates[index].status)
        return results

    def _moved_from(self, request_id: str, expected: tuple[str, ...]) -> bool:
        """True when the request's committed status is not in ``expected``, looked up only for a request
        this store moved to a status outside ``expected`` (so a compare-and-set on it is lost).

        Called under the write lock. For the reviewers who lost a race for a request, it spares the
        transaction (``BEGIN IMMEDIATE``, an ``UPDATE`` of no row, ``COMMIT``) that would have told them
        so, and keeps them from holding SQLite's write lock for nothing. The hint never decides by
        itself: the status is read from the database (the latest commit of any process), and only a
        status outside ``expected`` there refuses the change, as the ``UPDATE`` would have at that moment.
        """
        moved = self._moved.get(request_id)
        if moved is None or moved in expected:
            return False
        with _wrapped("read"):
            rows = self._conn().execute("SELECT status FROM requests WHERE id = ?", (request_id,)).fetchall()
        return bool(rows) and rows[0][0] not in expected

    def _note_moved(self, request_id: str, status: str) -> None:
        """Remember (under the write lock, after the commit) that ``request_id`` now has ``status``."""
        self._moved[request_id] = status
        self._moved.move_to_end(request_id)
        if len(self._moved) > MOVED_HINTS:
            self._moved.popitem(last=False)

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

    # parked runs --------------------------------------------------------------------------------
    def insert_parked_run(
        self, parked: ParkedRun, event: NewEvent, requests: Sequence[tuple[ApprovalRequest, NewEvent]] = ()
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

    def get_parked_run(self, parked_id: str) -> ParkedRun | None:
        rows = self._read(f"{_PARKED_SELECT} WHERE p.id = ?", (parked_id,))
        return _parked_from_row(*rows[0]) if rows else None

    def list_parked_runs(
        self, *, statuses: Sequence[ParkedRunStatus] = (), framework: str | None = None, run: str | None = None
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

    def _replace_parked(self, conn: sqlite3.Connection, parked: ParkedRun, current: ParkedRun) -> None:
        conn.execute(
            "UPDATE parked_runs SET status = ?, body = ? WHERE id = ?",
            (parked.status.value, _parked_body(parked), parked.id),
        )
        if parked.state != current.state:  # the state is large: written only when it changes (a prune)
            conn.execute("UPDATE parked_states SET state = ? WHERE id = ?", (parked.state, parked.id))

    def _locked_parked(self, conn: sqlite3.Connection, parked_id: str) -> ParkedRun | None:
        row = conn.execute(f"{_PARKED_SELECT} WHERE p.id = ?", (parked_id,)).fetchone()
        return _parked_from_row(*row) if row else None

    def change_parked_run(self, parked_id: str, change: Change[ParkedRun], event: NewEvent) -> ParkedRun | None:
        # The write lock is the row lock: nothing else holds the row, so there is nothing to skip.
        with self._write("change_parked_run") as conn:
            current = self._locked_parked(conn, parked_id)
            if current is None or not change.allowed(current):
                return None
            changed = change.apply(current)
            self._replace_parked(conn, changed, current)
            self._append(conn, event)
            return changed

    def change_parked_runs(self, ids: Sequence[str], change: Change[ParkedRun], event: PruneEvent) -> list[str]:
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

    # delivery cursors ---------------------------------------------------------------------------
    def _locked_cursor(self, conn: sqlite3.Connection, name: str) -> DeliveryCursor | None:
        row = conn.execute(f"{_CURSOR_SELECT} WHERE name = ?", (name,)).fetchone()
        return _cursor_from_row(row) if row else None

    def _store_cursor(self, conn: sqlite3.Connection, cursor: DeliveryCursor) -> DeliveryCursor:
        conn.execute(
            "INSERT INTO delivery_cursors (name, seq, lease_owner, lease_until) VALUES (?, ?, ?, ?)"
            " ON CONFLICT (name) DO UPDATE SET"
            " seq = excluded.seq, lease_owner = excluded.lease_owner, lease_until = excluded.lease_until",
            (cursor.name, cursor.seq, cursor.lease_owner, _epoch(cursor.lease_until)),
        )
        return cursor

    def claim_delivery_cursor(
        self, name: str, owner: str, now: datetime, lease_until: datetime, start: int
    ) -> DeliveryCursor | None:
        check_delivery_cursor_args(name, owner, start)
        with self._write("claim_delivery_cursor") as conn:
            current = self._locked_cursor(conn, name)
            if current is None:
                return self._store_cursor(conn, DeliveryCursor(name, start, owner, lease_until))
            if not delivery_cursor_claimable(current, owner, now):
                return None
            return self._store_cursor(conn, DeliveryCursor(name, current.seq, owner, lease_until))

    def advance_delivery_cursor(self, name: str, owner: str, seq: int, lease_until: datetime) -> DeliveryCursor | None:
        check_delivery_cursor_args(name, owner, seq)
        with self._write("advance_delivery_cursor") as conn:
            current = self._locked_cursor(conn, name)
            if current is None or not delivery_cursor_advanceable(current, owner, seq):
                return None
            return self._store_cursor(conn, DeliveryCursor(name, seq, owner, lease_until))

    def release_delivery_cursor(self, name: str, owner: str) -> DeliveryCursor | None:
        check_delivery_cursor_args(name, owner)
        with self._write("release_delivery_cursor") as conn:
            current = self._locked_cursor(conn, name)
            if current is None or current.lease_owner != owner:
                return None
            return self._store_cursor(conn, DeliveryCursor(name, current.seq))

    def get_delivery_cursor(self, name: str) -> DeliveryCursor | None:
        rows = self._read(f"{_CURSOR_SELECT} WHERE name = ?", (name,))
        return _cursor_from_row(rows[0]) if rows else None


_WRITE_LOCKS: dict[str, threading.Lock] = {}
_WRITE_LOCKS_GUARD = threading.Lock()


def _process_write_lock(path: Path) -> threading.Lock:
    key = str(path.resolve())
    with _WRITE_LOCKS_GUARD:
        return _WRITE_LOCKS.setdefault(key, threading.Lock())


_HEAD_SELECT = "SELECT seq, hash FROM audit_head WHERE one = 1"
_HEAD_COLUMNS = "(SELECT seq FROM audit_head WHERE one = 1), (SELECT hash FROM audit_head WHERE one = 1)"


_INSERT_EVENTS = "INSERT INTO events (seq, at, kind, request_id, run, actor, channel, payload, prev_hash, hash) VALUES "
_EVENT_VALUES = "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
_ROWS_PER_INSERT = 64
"""Events one ``INSERT`` writes (640 parameters, far below SQLite's limit)."""


def _update_sql(expected: int) -> str:
    """A request's compare-and-set against ``expected`` statuses, returning the head (no row: refused)."""
    return (
        "UPDATE requests SET status = ?, expires_at = ?, body = ?, signatures = ?"
        f" WHERE id = ? AND status IN ({', '.join('?' for _ in range(expected))}) RETURNING {_HEAD_COLUMNS}"
    )


def _head(rows: list[tuple[Any, ...]]) -> tuple[Any, ...]:
    if not rows:
        raise AuditHeadMissingError()
    return rows[0]


_PARKED_SELECT = "SELECT p.body, s.state FROM parked_runs p JOIN parked_states s ON s.id = p.id"


def _parked_body(parked: ParkedRun) -> str:
    """The JSON kept in ``parked_runs.body``: every field but the state, which ``parked_states`` holds."""
    return parked.model_copy(update={"state": ""}).model_dump_json()


def _parked_from_row(body: str, state: str) -> ParkedRun:
    # The state is a plain string column: no JSON to parse, and model_copy needs no validation for it.
    return ParkedRun.model_validate_json(body).model_copy(update={"state": state})


def _epoch(moment: datetime | None) -> float | None:
    return None if moment is None else moment.timestamp()


_CURSOR_SELECT = "SELECT name, seq, lease_owner, lease_until FROM delivery_cursors"


def _cursor_from_row(row: tuple[Any, ...]) -> DeliveryCursor:
    name, seq, owner, until = row
    return DeliveryCursor(name, int(seq), owner, None if until is None else datetime.fromtimestamp(until, UTC))


def _event_row(fields: Event | NewEvent, seq: int, at: str, prev_hash: str, digest: str) -> tuple[Any, ...]:
    payload = json.dumps(fields.payload, ensure_ascii=False)
    return (
        seq,
        at,
        fields.kind,
        fields.request_id,
        fields.run,
        fields.actor,
        fields.channel,
        payload,
        prev_hash,
        digest,
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


def _statements(sql: str) -> list[str]:
    """Split a migration into statements (the migrations contain no semicolons inside literals)."""
    lines = [line for line in sql.splitlines() if not line.strip().startswith("--")]
    return [s.strip() for s in "\n".join(lines).split(";") if s.strip()]
