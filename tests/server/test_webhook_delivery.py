"""Durable webhook delivery: per-target cursors in the store, one server per target, resume after restart.

Real parts throughout: SQLite files (and PostgreSQL when ``CROSSGATE_TEST_POSTGRES_URL`` is set), real
HTTP receivers on 127.0.0.1, several server states on one store, and a server process killed with SIGKILL.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from crossgate import Approve, ReviewQueue, open_store
from crossgate.server.app import create_app
from crossgate.server.settings import WebhookTarget
from crossgate.server.state import ServerState
from crossgate.server.webhooks import DELIVERY_HEADER, cursor_name, delivery_id
from tests.server.conftest import POLICY, make_settings, submit
from tests.support.postgres import database_url

ROOT = Path(__file__).resolve().parents[2]
LEASE = 0.6


class Recorder:
    """A webhook receiver that records every attempt; ``answer(n)`` is attempt n's status, or None to hang."""

    def __init__(self, answer: Callable[[int], int | None] = lambda n: 204, delay: float = 0.0) -> None:
        self.answer = answer
        self.attempts: list[tuple[dict[str, str], dict[str, Any]]] = []
        self.delivered: list[tuple[dict[str, str], dict[str, Any]]] = []
        self._lock = threading.Lock()
        self._release = threading.Event()
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("content-length", "0"))))
                headers = {k.lower(): v for k, v in self.headers.items()}
                with recorder._lock:
                    recorder.attempts.append((headers, body))
                    status = recorder.answer(len(recorder.attempts))
                if status is None:
                    recorder._release.wait(60)
                    return
                time.sleep(delay)
                if status < 300:
                    with recorder._lock:
                        recorder.delivered.append((headers, body))
                self.send_response(status)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/services/T000/B000/token-abc123"

    def __enter__(self) -> Recorder:
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._release.set()
        self._server.shutdown()
        self._server.server_close()

    def ids(self, delivered_only: bool = True) -> list[str]:
        with self._lock:
            return [h[DELIVERY_HEADER] for h, _ in (self.delivered if delivered_only else self.attempts)]

    def seqs(self) -> list[int]:
        with self._lock:
            return [int(body["seq"]) for _, body in self.delivered]


@asynccontextmanager
async def running(queue: ReviewQueue, *targets: WebhookTarget, **settings: Any) -> AsyncIterator[ServerState]:
    """One review server's lifespan (feed and notifier) on ``queue``; yields its state."""
    fields = {
        "webhooks": targets,
        "webhook_backoff_seconds": 0.05,
        "webhook_timeout_seconds": 2.0,
        "webhook_lease_seconds": LEASE,
        **settings,
    }
    app = create_app(queue, make_settings(**fields))
    async with app.router.lifespan_context(app):
        yield app.state.crossgate


async def until(check: Callable[[], bool], timeout: float = 15.0, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while not check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.02)


def stats(state: ServerState) -> dict[str, int]:
    assert state.notifier is not None
    return state.notifier.stats()


def stored_seq(queue: ReviewQueue, url: str) -> int | None:
    cursor = queue.store.get_delivery_cursor(cursor_name(url))
    return None if cursor is None else cursor.seq


def relevant_seqs(queue: ReviewQueue) -> list[int]:
    return [e.seq for e in queue.events() if e.kind in ("submitted", "decided")]


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A database that several queues (and processes) open by the same string."""
    with database_url(request.param, tmp_path) as url:
        yield url


def open_queue(db: str) -> ReviewQueue:
    return ReviewQueue(open_store(db), POLICY)


async def test_a_target_new_to_the_store_starts_at_the_head_and_is_stored_by_digest(tmp_path: Path) -> None:
    path = tmp_path / "crossgate.db"
    queue = open_queue(str(path))
    submit(queue, args={"id": "old-1"})
    submit(queue, args={"id": "old-2"})
    with Recorder() as receiver:
        async with running(queue, WebhookTarget(url=receiver.url)) as state:
            new = submit(queue, args={"id": "new"})
            await until(lambda: len(receiver.delivered) == 1)
            await asyncio.sleep(3 * LEASE)
            assert [body["request"]["id"] for _, body in receiver.delivered] == [new.id], "old history is not replayed"
            assert receiver.ids() == [delivery_id(receiver.url, 3)]
            assert stats(state)["leases"] == 1
        with sqlite3.connect(path) as conn:
            rows = conn.execute("SELECT name, seq, lease_owner FROM delivery_cursors").fetchall()
    assert rows == [(cursor_name(receiver.url), 3, None)], "stored by digest, at the delivered event, released"
    assert "token-abc123" not in rows[0][0] and "127.0.0.1" not in rows[0][0]
    assert _files_holding(tmp_path, b"token-abc123") == [], "the URL's token is nowhere in the database"
    queue.close()


async def test_events_logged_while_no_server_runs_are_delivered_after_a_restart(db: str) -> None:
    queue = open_queue(db)
    with Recorder() as receiver:
        target = WebhookTarget(url=receiver.url)
        async with running(queue, target):
            first = submit(queue, args={"id": "t1"})
            await until(lambda: len(receiver.delivered) == 1)
        cursor = queue.store.get_delivery_cursor(cursor_name(receiver.url))
        assert cursor is not None and cursor.lease_owner is None, "a clean stop releases the lease"
        # nobody is serving: these wait in the log
        second = submit(queue, args={"id": "t2"})
        queue.decide(first.id, Approve(), reviewer="alice")
        queue.close()
        restarted = open_queue(db)
        async with running(restarted, target) as state:
            await until(lambda: len(receiver.delivered) == 3)
            await asyncio.sleep(3 * LEASE)
            assert stats(state)["delivered"] == 2
        events = [(b["event"], b["request"]["id"]) for _, b in receiver.delivered]
        assert events == [
            ("request.submitted", first.id),
            ("request.submitted", second.id),
            ("request.decided", first.id),
        ]
        assert receiver.seqs() == relevant_seqs(restarted)
    restarted.close()


async def test_two_servers_on_one_store_deliver_each_event_once_in_order(db: str) -> None:
    queues = [open_queue(db), open_queue(db)]
    with Recorder() as receiver, Recorder() as other:
        targets = (WebhookTarget(url=receiver.url), WebhookTarget(url=other.url, events=("decided",)))
        async with running(queues[0], *targets) as one, running(queues[1], *targets) as two:
            requests = [submit(queues[i % 2], args={"id": f"t{i}"}) for i in range(6)]
            for i, request in enumerate(requests[:3]):
                queues[i % 2].decide(request.id, Approve(), reviewer="alice")
            await until(lambda: len(receiver.delivered) == 9 and len(other.delivered) == 3)
            await asyncio.sleep(4 * LEASE)  # room for a second sender to show up
            counts = [stats(one), stats(two)]
        assert receiver.seqs() == relevant_seqs(queues[0]), "each event exactly once, in log order"
        assert len(set(receiver.ids(delivered_only=False))) == len(receiver.attempts) == 9
        decided = [e.seq for e in queues[0].events() if e.kind == "decided"]
        assert other.seqs() == decided
        assert sum(c["delivered"] for c in counts) == 12
        assert sum(c["leases"] for c in counts) == 2, "each target held by exactly one server"
    for queue in queues:
        queue.close()


async def test_the_lease_is_renewed_through_long_retries_so_no_second_server_sends(tmp_path: Path) -> None:
    db = str(tmp_path / "crossgate.db")
    queues = [open_queue(db), open_queue(db)]
    # four failures at 0.25, 0.5, 1 and 2 s of backoff: about six leases long
    with Recorder(lambda n: 500 if n <= 4 else 204) as receiver:
        target = WebhookTarget(url=receiver.url)
        settings = {"webhook_backoff_seconds": 0.25, "webhook_attempts": 6}
        async with running(queues[0], target, **settings) as one, running(queues[1], target, **settings) as two:
            request = submit(queues[0])
            await until(lambda: len(receiver.delivered) == 1)
            await asyncio.sleep(3 * LEASE)
            counts = [stats(one), stats(two)]
        assert receiver.ids(delivered_only=False) == [delivery_id(receiver.url, 1)] * 5
        assert receiver.delivered[0][1]["request"]["id"] == request.id
        assert sorted(c["attempts"] for c in counts) == [0, 5], "one server made every attempt"
    for queue in queues:
        queue.close()


async def test_a_failing_receiver_gets_it_after_retries_with_the_same_delivery_id(tmp_path: Path) -> None:
    queue = open_queue(str(tmp_path / "crossgate.db"))
    with Recorder(lambda n: 503 if n <= 2 else 204) as receiver:
        async with running(queue, WebhookTarget(url=receiver.url, secret="hook-secret")) as state:
            submit(queue)
            await until(lambda: stats(state)["delivered"] == 1 and stats(state)["backlog"] == 0)
            assert stats(state) == {"delivered": 1, "failed": 0, "attempts": 3, "leases": 1, "backlog": 0}
        assert receiver.ids(delivered_only=False) == [delivery_id(receiver.url, 1)] * 3
        assert all(h["x-crossgate-signature"].startswith("sha256=") for h, _ in receiver.attempts)
    queue.close()


async def test_a_target_given_up_on_moves_past_the_event_and_is_not_blocked(tmp_path: Path) -> None:
    queue = open_queue(str(tmp_path / "crossgate.db"))
    up = threading.Event()
    with Recorder(lambda n: 204 if up.is_set() else 500) as receiver:
        target = WebhookTarget(url=receiver.url, events=("submitted",))
        async with running(queue, target, webhook_attempts=2, webhook_backoff_seconds=0.01) as state:
            submit(queue, args={"id": "t1"})
            submit(queue, args={"id": "t2"})
            # A give-up is counted before the cursor's advance is stored, so wait for both.
            await until(lambda: stats(state)["failed"] == 2)
            await until(lambda: stored_seq(queue, receiver.url) == 2, what="the cursor past both given-up events")
            up.set()
            third = submit(queue, args={"id": "t3"})
            await until(lambda: len(receiver.delivered) == 1)
            await asyncio.sleep(3 * LEASE)
            assert stats(state) == {"delivered": 1, "failed": 2, "attempts": 5, "leases": 1, "backlog": 0}
        assert [b["request"]["id"] for _, b in receiver.delivered] == [third.id], "given-up events are not resent"
        assert receiver.ids(delivered_only=False) == [delivery_id(receiver.url, s) for s in (1, 1, 2, 2, 3)]
    queue.close()


async def test_a_clean_stop_lets_a_delivery_under_way_finish_so_a_restart_sends_nothing_twice(tmp_path: Path) -> None:
    db = str(tmp_path / "crossgate.db")
    queue = open_queue(db)
    with Recorder(delay=0.5) as receiver:
        target = WebhookTarget(url=receiver.url, events=("submitted",))
        async with running(queue, target) as state:
            first = submit(queue, args={"id": "t1"})
            await until(lambda: len(receiver.attempts) == 1, what="the delivery to start")
        assert stats(state)["delivered"] == 1, "the stop waited for the answer"
        assert stored_seq(queue, receiver.url) == relevant_seqs(queue)[0], "and for the cursor to move past it"
        async with running(queue, target):
            second = submit(queue, args={"id": "t2"})
            await until(lambda: len(receiver.delivered) == 2)
            await asyncio.sleep(3 * LEASE)
        assert [b["request"]["id"] for _, b in receiver.delivered] == [first.id, second.id]
        assert len(receiver.attempts) == 2, "nothing was sent twice"
    queue.close()


async def test_a_stop_between_retries_leaves_the_event_due_for_the_next_server(tmp_path: Path) -> None:
    queue = open_queue(str(tmp_path / "crossgate.db"))
    up = threading.Event()
    with Recorder(lambda n: 204 if up.is_set() else 503) as receiver:
        target = WebhookTarget(url=receiver.url, events=("submitted",))
        async with running(queue, target, webhook_attempts=5, webhook_backoff_seconds=30.0) as state:
            request = submit(queue, args={"id": "t1"})
            await until(lambda: len(receiver.attempts) == 1, what="the first attempt")
            stopping = time.monotonic()
        assert time.monotonic() - stopping < 4.0, "the stop cut the backoff short instead of waiting it out"
        assert stats(state)["failed"] == 0 and stats(state)["delivered"] == 0
        assert stored_seq(queue, receiver.url) == 0, "an event not delivered is not passed over"
        up.set()
        async with running(queue, target):
            await until(lambda: len(receiver.delivered) == 1, what="the next server's delivery")
        [(headers, body)] = receiver.delivered
        assert body["request"]["id"] == request.id
        assert receiver.ids(delivered_only=False) == [headers[DELIVERY_HEADER]] * 2, "the same delivery id both times"
    queue.close()


@pytest.mark.slow
async def test_a_killed_holder_is_taken_over_and_its_unfinished_delivery_is_resent(db: str) -> None:
    queue = open_queue(db)
    # The first attempt reaches the receiver and never gets an answer: the holder dies after sending
    # and before storing the cursor, so the event is sent again, under the same delivery id.
    with Recorder(lambda n: None if n == 1 else 204) as receiver:
        name = cursor_name(receiver.url)
        holder = _start_holder(db, receiver.url, lease=1.0)
        try:
            await until(lambda: _owner_pid(queue, name) == holder.pid, timeout=30, what="the subprocess's lease")
            async with running(queue, WebhookTarget(url=receiver.url), webhook_lease_seconds=1.0) as state:
                first = submit(queue, args={"id": "t1"})
                second = submit(queue, args={"id": "t2"})
                await until(lambda: len(receiver.attempts) == 1, what="the first attempt")
                killed_at = time.monotonic()
                os.kill(holder.pid, signal.SIGKILL)
                holder.wait(10)
                await until(lambda: stats(state)["delivered"] == 2, what="the takeover")
                took = time.monotonic() - killed_at
                assert stats(state)["leases"] == 1
                taken = queue.store.get_delivery_cursor(name)
                assert state.notifier is not None and taken is not None
                assert taken.lease_owner == state.notifier.owner, "this server holds the lease now"
        finally:
            if holder.poll() is None:
                holder.kill()
                holder.wait(10)
        ids = [delivery_id(receiver.url, 1), delivery_id(receiver.url, 1), delivery_id(receiver.url, 2)]
        assert receiver.ids(delivered_only=False) == ids, "the redelivery carries the same delivery id"
        assert [b["request"]["id"] for _, b in receiver.delivered] == [first.id, second.id]
        assert took < 1.0 * 4 / 3 + 2.0, f"takeover took {took:.2f}s"
    cursor = queue.store.get_delivery_cursor(name)
    assert cursor is not None and cursor.seq == 2 and cursor.lease_owner is None
    queue.close()


def _start_holder(db: str, url: str, lease: float) -> subprocess.Popen[bytes]:
    """A server process delivering to ``url`` (see ``notifier_proc``)."""
    return subprocess.Popen(
        [sys.executable, "-m", "tests.server.notifier_proc", db, url, str(lease)],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _files_holding(folder: Path, secret: bytes) -> list[str]:
    """Names of the database files (the database, its WAL and shared memory) that contain ``secret``."""
    return [f.name for f in sorted(folder.glob("crossgate.db*")) if secret in f.read_bytes()]


def _owner_pid(queue: ReviewQueue, name: str) -> int | None:
    cursor = queue.store.get_delivery_cursor(name)
    if cursor is None or cursor.lease_owner is None:
        return None
    return int(cursor.lease_owner.split(":")[1])
