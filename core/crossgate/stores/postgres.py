"""``PostgresStore``: the store for several servers and workers sharing one PostgreSQL database.

Needs the extra ``crossgate[postgres]`` (psycopg 3 and psycopg-pool). Every write is one transaction
that changes a row and appends its event; each chain's head is one row locked ``FOR UPDATE``, so each hash
chain stays a chain under any number of writers. Events are sealed in the database (``crossgate_seal``,
migration 011; ``_postgres_sealing``), and the hot writes (a submission, a batch of compare-and-sets,
events) are each one statement that the server commits by itself, so the head is held only while the
server works. Decide and apply are compare-and-set updates (``WHERE status = ANY(...)``); those that wait
for the head meanwhile share the next statement (``_update_batch``), each still its own compare-and-set
and event. Parked runs are claimed with
``FOR UPDATE SKIP LOCKED`` and a lease; after each commit a ``NOTIFY`` (``postgres_listen.Notifier``)
wakes waiters in every other process. A delivery cursor's claim, advance and release are each one statement (an upsert
or a compare-and-set on the lease owner).

All tables live in one schema (``crossgate`` unless ``schema=`` says otherwise, as a constructor
argument or a ``?schema=`` URL parameter), so tests and tenants can use fresh ones. The audit log is kept
in N hash chains keyed by run (migration 013; ``partitions=``, or ``?partitions=``, given to ``setup``; a
fresh schema gets ``DEFAULT_PARTITIONS``, one, and one set up before keeps its N until it is raised): writes for
different runs lock different heads, and ``audit_head`` is the root over every head (``crossgate.audit``).
SQL text lives in ``sql/postgres/``: ``schema.sql`` for a fresh schema, ``migrations/NNN_*.sql`` for older
ones, ``queries.sql`` for the named queries.
"""

from __future__ import annotations

import contextlib
import logging
import re
import threading
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from functools import cache
from importlib import resources
from typing import Any, TypeVar
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

from pydantic import BaseModel, ValidationError

from crossgate.audit import Head, heads_root
from crossgate.errors import AuditHeadMissingError, ConfigurationError, ConflictError, StoreError
from crossgate.model import (
    ApprovalRequest,
    Event,
    NewEvent,
    ParkedRun,
    ParkedRunStatus,
    RequestStatus,
    StandingRule,
)
from crossgate.stores._event_batch import EventBatch
from crossgate.stores._partitions import DEFAULT_PARTITIONS, MAX_PARTITIONS
from crossgate.stores._postgres_sealing import seal_params, sealed, sealed_all
from crossgate.stores._signatures import request_body, request_from_row, request_signatures, rule_body, rule_from_row
from crossgate.stores._update_batch import MovedHints, Update, UpdateQueue, commit_together
from crossgate.stores.base import (
    Change,
    Page,
    PruneEvent,
    RequestQuery,
    decode_cursor,
    encode_cursor,
    in_given_order,
)
from crossgate.stores.cursors import DeliveryCursor, check_delivery_cursor_args
from crossgate.stores.migrations import Migration, load_migrations, run_migrations

try:
    import psycopg
    from psycopg import sql
    from psycopg_pool import ConnectionPool
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    raise ConfigurationError(
        "PostgresStore needs psycopg 3 and psycopg-pool: pip install 'crossgate[postgres]'"
    ) from exc

from crossgate.stores._postgres_credentials import CredentialsMixin  # after the check above: these need psycopg too
from crossgate.stores._postgres_signed import SignedStateMixin
from crossgate.stores.postgres_listen import Listener, Notifier

log = logging.getLogger(__name__)

DEFAULT_SCHEMA = "crossgate"
IDLE_CHECK_SECONDS = 1.0
"""A pooled connection idle longer than this is checked before use."""
_OWN_PARAMS = ("schema", "partitions")
"""URL parameters that are crossgate's, not libpq's."""
_SCHEMA_NAME = re.compile(r"^[a-z_][a-z0-9_]{0,47}$")
_SQL_DIR = resources.files("crossgate.stores").joinpath("sql", "postgres")
M = TypeVar("M", bound=BaseModel)


@cache
def queries() -> dict[str, str]:
    """The named blocks of ``queries.sql``."""
    text = _SQL_DIR.joinpath("queries.sql").read_text(encoding="utf-8")
    blocks: dict[str, str] = {}
    for chunk in re.split(r"^-- name: ", text, flags=re.MULTILINE)[1:]:
        name, _, body = chunk.partition("\n")
        lines = [line for line in body.splitlines() if not line.startswith("--")]
        blocks[name.strip()] = "\n".join(lines).strip()
    return blocks


@cache
def migrations() -> tuple[Migration, ...]:
    """Every migration in ``sql/postgres/migrations``, in version order."""
    return load_migrations(_SQL_DIR.joinpath("migrations"), "PostgreSQL")


def fresh_schema_sql() -> str:
    """The full current schema, as ``schema.sql`` holds it."""
    return _SQL_DIR.joinpath("schema.sql").read_text(encoding="utf-8")


def _q(name: str) -> sql.SQL:
    return sql.SQL(queries()[name])


def split_url(url: str, schema: str | None = None) -> tuple[str, str]:
    """The libpq URL without crossgate's own ``schema`` parameter, and the schema to use."""
    parts = urlsplit(url)
    params = parse_qsl(parts.query, keep_blank_values=True)
    from_url = [value for key, value in params if key == "schema"]
    rest = [(key, value) for key, value in params if key not in _OWN_PARAMS]
    chosen = schema or (from_url[-1] if from_url else DEFAULT_SCHEMA)
    if not _SCHEMA_NAME.fullmatch(chosen):
        raise ConfigurationError(
            f"schema name {chosen!r}: use lowercase letters, digits and underscores, at most 48 characters"
        )
    return urlunsplit(parts._replace(query=urlencode(rest, quote_via=quote))), chosen


@contextlib.contextmanager
def _wrapped(action: str) -> Iterator[None]:
    """The one place driver errors become StoreError (OverflowError too, as in the SQLite store)."""
    try:
        yield
    except (psycopg.Error, OverflowError) as exc:
        raise StoreError(f"PostgreSQL could not {action}: {exc}".strip()) from exc


class PostgresStore(SignedStateMixin, CredentialsMixin):
    """Requests, standing rules, parked runs and the event log in one PostgreSQL schema.

    Policy versions and audit checkpoints are in ``_postgres_signed``, credentials in ``_postgres_credentials``.
    """

    def __init__(
        self,
        url: str,
        *,
        schema: str | None = None,
        min_size: int = 1,
        max_size: int = 10,
        timeout: float = 10.0,
        connect_timeout: int = 5,
        partitions: int | None = None,
    ) -> None:
        partitions = partitions if partitions is not None else _partitions_in(url)
        if partitions is not None and not 1 <= partitions <= MAX_PARTITIONS:
            raise ConfigurationError(f"partitions: a number from 1 to {MAX_PARTITIONS}, not {partitions}")
        self._wanted_partitions = partitions
        self._partitions: int | None = None  # N as the database has it, read once
        self._conninfo, self.schema = split_url(url, schema)
        self.url = url if schema is None else _with_schema(url, self.schema)
        """The URL that opens this store again (in another process, say), schema included."""
        self._channel = f"crossgate_{self.schema}"
        given = _conninfo_params(self._conninfo)
        # jit off: every statement here is a short one, and the audit heads' query (estimated from tables
        # without statistics) otherwise spends seconds compiling itself.
        options = f"{given.get('options', '')} -c search_path={self.schema} -c TimeZone=UTC -c jit=off".strip()
        self._connect_kwargs: dict[str, Any] = {
            "options": options,  # the URL's own options are kept; ours come last and win
            "connect_timeout": given.get("connect_timeout", connect_timeout),
            "application_name": given.get("application_name", f"crossgate-{self.schema}"),
        }
        self._pool = ConnectionPool(
            self._conninfo,
            min_size=min_size,
            max_size=max_size,
            timeout=timeout,
            kwargs={"autocommit": True, **self._connect_kwargs},
            open=False,
            name=f"crossgate-{self.schema}",
            check=self._check,
            reset=self._returned,
        )
        self._open_lock = threading.Lock()
        self._opened = False
        self._last_used: weakref.WeakKeyDictionary[psycopg.Connection[Any], float] = weakref.WeakKeyDictionary()
        self._listener = Listener(self._connect_listener, self._channel, _read_latest)
        self._notifier = Notifier(self._connect_notifier, self._channel)
        self._batch = EventBatch(self._commit_enqueued)
        self._updates = UpdateQueue("PostgreSQL")
        self._moved = MovedHints()  # a lost compare-and-set is refused by a read, not a transaction
        # Held while enqueued events are taken and committed, so a reader finds them committed.
        self._flush_lock = threading.Lock()

    # connections ---------------------------------------------------------------------------------
    def _connect(self) -> psycopg.Connection[Any]:
        return psycopg.connect(self._conninfo, autocommit=True, **self._connect_kwargs)

    def _connect_listener(self) -> psycopg.Connection[Any]:
        # Named so that an operator (or a test) can tell the one LISTEN connection per store apart.
        name = f"{self._connect_kwargs['application_name'][:56]}-listen"
        return psycopg.connect(self._conninfo, autocommit=True, **{**self._connect_kwargs, "application_name": name})

    def _connect_notifier(self) -> psycopg.Connection[Any]:
        # A wake-up carries no state (listeners poll too), so its commit need not wait for the disk.
        name = f"{self._connect_kwargs['application_name'][:56]}-notify"
        options = f"{self._connect_kwargs['options']} -c synchronous_commit=off"
        kwargs = {**self._connect_kwargs, "application_name": name, "options": options}
        return psycopg.connect(self._conninfo, autocommit=True, **kwargs)

    def _committed(self, seq: int) -> None:
        """Events up to ``seq`` are committed: wake this process's waiters now, the others' by NOTIFY."""
        self._listener.observe(seq)
        self._notifier.sent(seq)

    def _check(self, conn: psycopg.Connection[Any]) -> None:
        # A connection idle for a while may have outlived a server restart or failover: one empty round
        # trip replaces it instead of failing the caller. Connections in steady use skip the round trip.
        if time.monotonic() - self._last_used.get(conn, 0.0) > IDLE_CHECK_SECONDS:
            ConnectionPool.check_connection(conn)

    def _returned(self, conn: psycopg.Connection[Any]) -> None:
        self._last_used[conn] = time.monotonic()

    @contextlib.contextmanager
    def _conn(self, action: str) -> Iterator[psycopg.Connection[Any]]:
        with _wrapped(action):
            if not self._opened:
                with self._open_lock:
                    if not self._opened:
                        self._pool.open()
                        self._opened = True
            with self._pool.connection() as conn:
                yield conn

    def setup(self) -> None:
        """Create the schema, or migrate it forward; safe to call from several processes at once."""
        with _wrapped("set up the schema"), self._connect() as conn, conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(hashtext(%s))", (f"crossgate:{self.schema}",))
            conn.execute(sql.SQL("CREATE SCHEMA IF NOT EXISTS {}").format(sql.Identifier(self.schema)))
            conn.execute(_q("create_version_table"))
            applied = {row[0] for row in conn.execute(_q("applied_versions"))}

            def apply(migration: Migration) -> None:
                conn.execute(migration.text)

            def record(migration: Migration) -> None:
                conn.execute(_q("record_version"), {"version": migration.version, "name": migration.name})

            made = []

            def fresh() -> None:
                conn.execute(fresh_schema_sql())
                made.append(True)

            run_migrations(applied, migrations(), apply=apply, record=record, fresh=fresh)
            wanted = self._wanted_partitions or (DEFAULT_PARTITIONS if made else None)
            if wanted is not None:
                self._set_partitions(conn, wanted)

    def _set_partitions(self, conn: psycopg.Connection[Any], wanted: int) -> None:
        current = int(_one(conn.execute(_q("partitions")))[0])
        if wanted < current:
            raise ConfigurationError(
                f"this schema's audit log has {current} partitions; they can be raised, not lowered to {wanted}"
            )
        self._partitions = int(_one(conn.execute(_q("set_partitions"), {"partitions": wanted}))[0])

    def partitions(self) -> int:
        """N: how many hash chains the audit log is kept in (1 until ``setup`` raises it; migration 013)."""
        if self._partitions is None:
            with self._conn("read the number of partitions") as conn:
                self._partitions = int(_head(conn.execute(_q("partitions")))[0])
        return self._partitions

    def close(self) -> None:
        """Commit the enqueued events, stop the listener and close the pool."""
        try:
            self._batch.close()
        finally:
            self._close_pool()

    def _close_pool(self) -> None:
        self._notifier.close()
        self._listener.close()
        with self._open_lock:
            if self._opened:
                self._pool.close()
                self._opened = False

    # writing -------------------------------------------------------------------------------------
    @contextlib.contextmanager
    def _write(self, action: str) -> Iterator[psycopg.Cursor[Any]]:
        # A write of several statements: BEGIN, its change, its events sealed by the database, COMMIT.
        # (The hot writes are one statement each and skip this: ``_seal_alone``.) Events enqueued before
        # this write commit first, in their own statement: they keep their place in the chain before its
        # change, and the change's head lock is not taken any earlier.
        if self._batch.pending:
            self._commit_enqueued()
        with self._conn(action) as conn, conn.transaction(), conn.cursor() as cur:
            yield cur

    def _commit_enqueued(self) -> None:
        with self._flush_lock:
            waiting = self._batch.take()
            if not waiting:
                return
            try:
                event = self._seal_alone("append the enqueued events", "seal_events", {}, waiting)[-1]
            except BaseException:
                self._batch.give_back(waiting)
                raise
        self._batch.committed()
        self._committed(event.seq)

    def _append(self, cur: psycopg.Cursor[Any], new: NewEvent) -> Event:
        """Seal ``new`` after the chain head in the caller's transaction (the database locks the head)."""
        params = seal_params([new], self.partitions())
        return sealed_all([new], cur.execute(_q("seal_events"), params).fetchall())[0]

    def _seal_alone(self, action: str, query: str, row: dict[str, Any], events: Sequence[NewEvent]) -> list[Event]:
        """Run ``query``, a statement that makes a change and seals its ``events``, as its own transaction
        (the connection is in autocommit): one round trip, the head held only by the server."""
        return sealed_all(events, self._statement(action, query, row, events))

    def _statement(self, action: str, query: str, row: dict[str, Any], events: Sequence[NewEvent]) -> list[Any]:
        if self._batch.pending and query != "seal_events":
            self._commit_enqueued()  # enqueued events keep their place in the chain before this change
        params = {**row, **seal_params(events, self.partitions())}
        with self._conn(action) as conn:
            return conn.execute(_q(query), params).fetchall()

    def _insert(self, query: str, row: dict[str, Any], new: NewEvent, what: str) -> Event:
        try:
            with self._write(f"store {what}") as cur:
                event = self._append(cur, new)  # first: the row is stored at its event's seq
                _one(cur.execute(_q(query), {**row, "position": event.seq}))
        except StoreError as exc:
            if isinstance(exc.__cause__, psycopg.errors.UniqueViolation):
                raise ConflictError(f"{what} already exists") from exc.__cause__
            raise
        self._committed(event.seq)
        return event

    def _change(self, query: str, row: dict[str, Any], new: NewEvent, action: str) -> Event | None:
        with self._write(action) as cur:
            if cur.execute(_q(query), row).fetchone() is None:
                _head(cur.execute(_q("read_head")))  # a lost compare-and-set, or no head to chain to: roll back
                return None
            event = self._append(cur, new)
        self._committed(event.seq)
        return event

    # requests ------------------------------------------------------------------------------------
    def insert_request(self, request: ApprovalRequest, event: NewEvent) -> Event:
        try:
            sealed = self._seal_alone(
                f"store request {request.id}", "insert_request_sealed", _request_row(request), [event]
            )
        except StoreError as exc:
            if isinstance(exc.__cause__, psycopg.errors.UniqueViolation):
                raise ConflictError(f"request {request.id} already exists") from exc.__cause__
            raise
        self._committed(sealed[0].seq)
        return sealed[0]

    def get_request(self, request_id: str) -> ApprovalRequest | None:
        with self._conn(f"read {request_id}") as conn:
            row = conn.execute(_q("get_request"), {"id": request_id}).fetchone()
        return None if row is None else _load_signed(request_from_row, ApprovalRequest, *row)

    def list_requests(self, query: RequestQuery) -> Page[ApprovalRequest]:
        statement, params = list_statement(query)
        with self._conn("list requests") as conn:
            rows = conn.execute(statement, params).fetchall()
        items = [
            _load_signed(request_from_row, ApprovalRequest, data, signed) for _, data, signed in rows[: query.limit]
        ]
        more = len(rows) > query.limit
        return Page(items, encode_cursor(rows[query.limit - 1][0]) if more else None)

    def update_request(
        self, request: ApprovalRequest, expected: Sequence[RequestStatus], event: NewEvent
    ) -> Event | None:
        # Updates that wait meanwhile commit in one transaction, with one lock of the head (``_update_batch``).
        statuses = tuple(s.value for s in expected)
        if self._moved.suspects(request.id, statuses) and self._status_of(request.id) not in statuses:
            # A race this server saw lost: refused by one read, not by a transaction that would wait for
            # the chain head behind the winners (``MovedHints``).
            return None
        row = {**_request_row(request), "expected": list(statuses)}
        update = Update(request.id, request.status.value, statuses, row, event)
        return self._updates.submit(update, self._commit_updates)

    def _status_of(self, request_id: str) -> str | None:
        """The committed status of ``request_id`` (None: no such request)."""
        with self._conn("read a request's status") as conn:
            row = conn.execute(_q("request_status"), {"id": request_id}).fetchone()
        return None if row is None else str(row[0])

    def _commit_updates(self, take: Callable[[], list[Update]]) -> None:
        """Commit the waiting updates (``_update_batch``) in one transaction; if it fails, one each."""
        commit_together(take(), self._update_together)

    def _update_together(self, updates: Sequence[Update]) -> list[Event | None]:
        """The compare-and-sets of ``updates`` in one statement (``crossgate_update_requests``), in order;
        each one's sealed event or None.

        The function locks the head before any request (the lock order in ``queries.sql``), and locks and writes nothing
        when none of the requests is in an expected status: a batch of lost races waits for no sync.
        """
        rows = [_dict(update.params) for update in updates]
        batch = {
            "ids": [row["id"] for row in rows],
            "statuses": [row["status"] for row in rows],
            "expires_ats": [row["expires_at"] for row in rows],
            "data": [row["data"] for row in rows],
            "signatures": [row["signatures"] for row in rows],
            "expected": [" ".join(update.expected) for update in updates],
        }
        try:
            changed = self._statement("update requests", "update_requests_sealed", batch, [u.event for u in updates])
        except StoreError as exc:
            if isinstance(exc.__cause__, psycopg.errors.NoDataFound):
                raise AuditHeadMissingError() from exc.__cause__
            raise
        results: list[Event | None] = [None] * len(updates)
        for index, seq, prev, digest in changed:
            results[index - 1] = sealed(updates[index - 1].event, seq, prev, digest)
        if changed:
            self._committed(int(changed[-1][1]))
            for update, result in zip(updates, results, strict=True):  # committed: remember what moved
                if result is not None:
                    self._moved.note(update.request_id, update.status)
        return results

    def overdue_requests(self, now: datetime, limit: int = 100) -> list[ApprovalRequest]:
        with self._conn("list overdue requests") as conn:
            rows = conn.execute(_q("overdue_requests"), {"now": now, "limit": limit}).fetchall()
        return [_load_signed(request_from_row, ApprovalRequest, data, signed) for data, signed in rows]

    # standing rules ------------------------------------------------------------------------------
    def insert_rule(self, rule: StandingRule, event: NewEvent) -> Event:
        row = {"id": rule.id, "revoked_at": rule.revoked_at, "data": rule_body(rule), "signature": rule.signature}
        return self._insert("insert_rule", row, event, f"rule {rule.id}")

    def get_rule(self, rule_id: str) -> StandingRule | None:
        with self._conn(f"read {rule_id}") as conn:
            row = conn.execute(_q("get_rule"), {"id": rule_id}).fetchone()
        return None if row is None else _load_signed(rule_from_row, StandingRule, *row)

    def list_rules(self, *, include_revoked: bool = False) -> list[StandingRule]:
        with self._conn("list standing rules") as conn:
            rows = conn.execute(_q("list_rules"), {"include_revoked": include_revoked}).fetchall()
        return [_load_signed(rule_from_row, StandingRule, data, signed) for data, signed in rows]

    def revoke_rule(self, rule: StandingRule, event: NewEvent) -> Event | None:
        row = {"id": rule.id, "revoked_at": rule.revoked_at, "data": rule_body(rule)}
        return self._change("revoke_rule", row, event, f"revoke rule {rule.id}")

    # parked runs ---------------------------------------------------------------------------------
    def insert_parked_run(
        self, parked: ParkedRun, event: NewEvent, requests: Sequence[tuple[ApprovalRequest, NewEvent]] = ()
    ) -> Event:
        if not requests:
            return self._insert("insert_parked_run", _parked_row(parked), event, f"parked run {parked.id}")
        try:
            with self._write(f"store parked run {parked.id}") as cur:
                for request, submitted in requests:
                    position = self._append(cur, submitted).seq
                    _one(cur.execute(_q("insert_request"), {**_request_row(request), "position": position}))
                last = self._append(cur, event)
                _one(cur.execute(_q("insert_parked_run"), {**_parked_row(parked), "position": last.seq}))
        except StoreError as exc:
            if isinstance(exc.__cause__, psycopg.errors.UniqueViolation):
                ids = ", ".join(r.id for r, _ in requests)
                raise ConflictError(f"parked run {parked.id} or one of its requests ({ids}) already exists") from exc
            raise
        self._committed(last.seq)
        return last

    def get_parked_run(self, parked_id: str) -> ParkedRun | None:
        return self._get("get_parked_run", parked_id, ParkedRun)

    def list_parked_runs(
        self, *, statuses: Sequence[ParkedRunStatus] = (), framework: str | None = None, run: str | None = None
    ) -> list[ParkedRun]:
        filters: list[sql.Composable] = []
        params: dict[str, Any] = {"statuses": [s.value for s in statuses], "framework": framework, "run": run}
        if statuses:
            filters.append(sql.SQL("status = ANY(%(statuses)s)"))
        if framework is not None:
            filters.append(sql.SQL("framework = %(framework)s"))
        if run is not None:
            filters.append(sql.SQL("run = %(run)s"))
        where = sql.SQL("WHERE ") + sql.SQL(" AND ").join(filters) if filters else sql.SQL("")
        with self._conn("list parked runs") as conn:
            rows = conn.execute(_q("list_parked_runs").format(where=where), params).fetchall()
        return [_load(ParkedRun, data) for (data,) in rows]

    def change_parked_run(self, parked_id: str, change: Change[ParkedRun], event: NewEvent) -> ParkedRun | None:
        lock = "lock_parked_run_skip_locked" if change.skip_locked else "lock_parked_run"
        with self._write(f"change parked run {parked_id}") as cur:
            row = cur.execute(_q(lock), {"id": parked_id}).fetchone()
            current = None if row is None else _load(ParkedRun, row[0])
            if current is None or not change.allowed(current):
                return None
            changed = change.apply(current)
            _one(cur.execute(_q("update_parked_run"), _parked_row(changed)))
            sealed = self._append(cur, event)
        self._committed(sealed.seq)
        return changed

    def change_parked_runs(self, ids: Sequence[str], change: Change[ParkedRun], event: PruneEvent) -> list[str]:
        with self._write("change parked runs") as cur:
            locked = [_load(ParkedRun, data) for (data,) in cur.execute(_q("lock_parked_runs"), {"ids": list(ids)})]
            current = {p.id: p for p in locked if change.allowed(p)}
            changed = in_given_order(ids, current)
            if not changed:
                return []
            new = [change.apply(current[i]) for i in changed]
            rows = {
                "ids": changed,
                "statuses": [p.status.value for p in new],
                "lease_owners": [p.lease_owner for p in new],
                "lease_untils": [p.lease_until for p in new],
                "data": [p.model_dump_json() for p in new],
            }
            _one(cur.execute(_q("update_parked_runs"), rows))
            sealed = self._append(cur, event(changed))
        self._committed(sealed.seq)
        return changed

    # events --------------------------------------------------------------------------------------
    def append_event(self, event: NewEvent) -> Event:
        if self._batch.pending:
            self._commit_enqueued()
        sealed = self._seal_alone(f"append a {event.kind} event", "seal_events", {}, [event])[0]
        self._committed(sealed.seq)
        return sealed

    def enqueue_event(self, event: NewEvent) -> None:
        self._batch.add(event)

    def flush_events(self) -> None:
        self._commit_enqueued()

    def rules_version(self) -> int:
        """The counter of rule and policy-version changes (migration 007), a column of the chain head's row
        (AuditHeadMissingError without it); read without committing the enqueued events first."""
        with self._conn("read the rules version") as conn:
            return int(_head(conn.execute(_q("rules_version")))[0])

    def list_events(self, *, after: int = 0, limit: int | None = None, request_id: str | None = None) -> list[Event]:
        params = {"after": after, "limit": limit, "request_id": request_id}
        query = "list_events" if request_id is None else "list_request_events"
        self.flush_events()  # this process reads what it enqueued
        with self._conn("list events") as conn:
            rows = conn.execute(_q(query).format(watermark=_watermark()), params).fetchall()
        return [_load(Event, data) for (data,) in rows]

    def audit_head(self) -> tuple[int, str]:
        """The watermark (every event up to it is committed) and the root of the heads there: with one
        partition, its head's hash, as before 013."""
        upto, heads = self.audit_cut()
        return upto, heads_root(heads)

    def audit_cut(self) -> tuple[int, list[Head]]:
        """The watermark and every partition's ``(partition, seq, hash)`` head as of it, in one snapshot."""
        self.flush_events()
        with self._conn("read the audit heads") as conn:
            return _cut(conn)

    def audit_snapshot(self, after: int = 0) -> tuple[int, list[Head], list[Event]]:
        """The watermark, every partition's head row and every event after ``after``, all of one snapshot: each
        event the snapshot sees is covered by its partition's head row, and an event past every head (an
        append that did not move one) is read too, for the check to refuse."""
        self.flush_events()
        with self._conn("read the audit log") as conn, conn.transaction():
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            upto = int(_one(conn.execute(_watermark()))[0])
            heads = [(int(p), int(seq), str(digest)) for p, seq, digest, _ in conn.execute(_q("heads"))]
            rows = conn.execute(_q("events_after"), {"after": after}).fetchall()
        if not any(p == 0 for p, _, _ in heads):
            raise AuditHeadMissingError()
        return upto, sorted(heads), [_load(Event, data) for (data,) in rows]

    def wait_for_change(self, after: int, timeout: float) -> int:
        latest = self._listener.wait(after, timeout)
        if latest is not None:
            return latest
        # The listener cannot reach the server: poll the head, so waiters still wake if writes resume.
        deadline = time.monotonic() + timeout
        while True:
            try:
                latest = self.audit_head()[0]
            except StoreError:
                latest = after
            if latest > after or time.monotonic() >= deadline:
                return latest
            time.sleep(min(0.1, max(0.0, deadline - time.monotonic())))

    # delivery cursors ----------------------------------------------------------------------------
    def claim_delivery_cursor(
        self, name: str, owner: str, now: datetime, lease_until: datetime, start: int
    ) -> DeliveryCursor | None:
        check_delivery_cursor_args(name, owner, start)
        params = {"name": name, "owner": owner, "now": now, "lease_until": lease_until, "start": start}
        return self._cursor_statement("claim_delivery_cursor", params, f"claim delivery cursor {name}")

    def advance_delivery_cursor(self, name: str, owner: str, seq: int, lease_until: datetime) -> DeliveryCursor | None:
        check_delivery_cursor_args(name, owner, seq)
        params = {"name": name, "owner": owner, "seq": seq, "lease_until": lease_until}
        return self._cursor_statement("advance_delivery_cursor", params, f"advance delivery cursor {name}")

    def release_delivery_cursor(self, name: str, owner: str) -> DeliveryCursor | None:
        check_delivery_cursor_args(name, owner)
        params = {"name": name, "owner": owner}
        return self._cursor_statement("release_delivery_cursor", params, f"release delivery cursor {name}")

    def get_delivery_cursor(self, name: str) -> DeliveryCursor | None:
        return self._cursor_statement("get_delivery_cursor", {"name": name}, f"read delivery cursor {name}")

    def _cursor_statement(self, query: str, params: dict[str, Any], action: str) -> DeliveryCursor | None:
        with self._conn(action) as conn:
            row = conn.execute(_q(query), params).fetchone()
        return None if row is None else DeliveryCursor(row[0], int(row[1]), row[2], row[3])

    def _get(self, query: str, key: str, model: type[M]) -> M | None:
        with self._conn(f"read {key}") as conn:
            row = conn.execute(_q(query), {"id": key}).fetchone()
        return None if row is None else _load(model, row[0])


def list_statement(query: RequestQuery) -> tuple[sql.Composed, dict[str, Any]]:
    """The SQL and parameters of one page of ``query`` (public for plan checks)."""
    filters: list[sql.Composable] = []
    params: dict[str, Any] = {"limit": query.limit + 1}
    if len(query.statuses) == 1:
        # Plain equality, not ANY: only then does the planner read (status, position) in order and stop
        # after one page, instead of walking positions and filtering, which is slow when few are pending.
        filters.append(sql.SQL("status = %(status)s"))
        params["status"] = query.statuses[0].value
    elif query.statuses:
        filters.append(sql.SQL("status = ANY(%(statuses)s)"))
        params["statuses"] = [s.value for s in query.statuses]
    for column in ("framework", "tool", "agent", "run"):
        value = getattr(query, column)
        if value is not None:
            filters.append(sql.SQL("{} = %({})s").format(sql.Identifier(column), sql.SQL(column)))
            params[column] = value
    if query.cursor is not None:
        filters.append(sql.SQL("position < %(after)s" if query.newest_first else "position > %(after)s"))
        params["after"] = decode_cursor(query.cursor)
    where = sql.SQL("WHERE ") + sql.SQL(" AND ").join(filters) if filters else sql.SQL("")
    direction = sql.SQL("DESC" if query.newest_first else "ASC")
    return _q("list_requests").format(where=where, direction=direction), params


def _cut(conn: psycopg.Connection[Any]) -> tuple[int, list[Head]]:
    rows = conn.execute(_q("audit_cut").format(watermark=_watermark(), heads=_q("heads"))).fetchall()
    if not any(row[0] == 0 for row in rows):
        raise AuditHeadMissingError()
    return int(rows[0][3]), [(int(p), int(seq), str(digest)) for p, seq, digest, _ in rows]


def _read_latest(conn: psycopg.Connection[Any]) -> int:
    return int(_head(conn.execute(_q("read_latest")))[0])


@cache
def _watermark() -> sql.Composed:
    return _q("watermark").format(heads=_q("heads"))


def _dict(params: tuple[Any, ...] | dict[str, Any]) -> dict[str, Any]:
    if not isinstance(params, dict):
        raise TypeError("PostgresStore's updates carry named parameters")
    return params


def _one(cursor: psycopg.Cursor[Any]) -> tuple[Any, ...]:
    row = cursor.fetchone()
    if row is None:
        raise StoreError("PostgreSQL returned no row where one was expected; was setup() run?")
    return tuple(row)


def _head(cursor: psycopg.Cursor[Any]) -> tuple[Any, ...]:
    row = cursor.fetchone()
    if row is None:
        raise AuditHeadMissingError()
    return tuple(row)


def _load(model: type[M], data: str) -> M:
    try:
        return model.model_validate_json(data)
    except ValidationError as exc:
        raise StoreError(f"a stored {model.__name__} no longer parses: {exc}") from exc


def _load_signed(load: Callable[[str, str | None], M], model: type[M], data: str, signed: str | None) -> M:
    try:
        return load(data, signed)
    except ValidationError as exc:
        raise StoreError(f"a stored {model.__name__} no longer parses: {exc}") from exc


def _partitions_in(url: str) -> int | None:
    """The URL's ``?partitions=N`` (how many audit chains ``setup`` gives the schema), if it has one."""
    given = [value for key, value in parse_qsl(urlsplit(url).query) if key == "partitions"]
    if not given:
        return None
    try:
        return int(given[-1])
    except ValueError:
        raise ConfigurationError(f"partitions={given[-1]!r} in the URL: a number from 1 to {MAX_PARTITIONS}") from None


def _conninfo_params(conninfo: str) -> dict[str, Any]:
    try:
        return psycopg.conninfo.conninfo_to_dict(conninfo)
    except psycopg.ProgrammingError as exc:
        raise ConfigurationError(f"not a PostgreSQL URL: {exc}") from exc


def _with_schema(url: str, schema: str) -> str:
    parts = urlsplit(url)
    params = [(k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k != "schema"]
    return urlunsplit(parts._replace(query=urlencode([*params, ("schema", schema)], quote_via=quote)))


def _request_row(request: ApprovalRequest) -> dict[str, Any]:
    call = request.call
    return {
        "id": request.id,
        "status": request.status.value,
        "framework": call.framework,
        "tool": call.tool,
        "agent": call.agent,
        "run": call.run,
        "expires_at": request.expires_at,
        "data": request_body(request),
        "signatures": request_signatures(request),
    }


def _parked_row(parked: ParkedRun) -> dict[str, Any]:
    return {
        "id": parked.id,
        "framework": parked.framework,
        "run": parked.run,
        "status": parked.status.value,
        "lease_owner": parked.lease_owner,
        "lease_until": parked.lease_until,
        "data": parked.model_dump_json(),
    }
