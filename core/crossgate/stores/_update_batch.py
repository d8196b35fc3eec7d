"""Group commit of the requests' compare-and-set updates (decisions, applied marks, expiries, cancellations).

On a review server many threads decide at once, and each decision is a durable commit: one at a time
behind the store's lock (SQLite's write lock, PostgreSQL's chain head), each with its own transaction and
its own sync. Here the updates that wait meanwhile join one transaction instead: the first thread to find
no transaction in progress leads; it takes every update waiting (up to ``MAX_UPDATES``) and commits them
together; the others wait for its commit and return their own result. Nothing about an update changes but
the transaction it shares (each store's ``_commit_updates`` keeps these promises):

- each is the same compare-and-set (``UPDATE ... WHERE status IN expected``), in arrival order, so of
  two updates of one request in a batch the second sees the first and is refused;
- each successful one appends its event, sealed after the one before (the chain as if they had come
  one by one) and the head moves with them in the same transaction;
- none returns before the transaction committed (synced, where the store syncs decisions), so a
  decision is still durable before it is acknowledged; and a transaction that fails is retried one
  update per transaction, so one update's failure is only its own.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from crossgate.errors import StoreError
from crossgate.model import Event, NewEvent

MAX_UPDATES = 64
"""The most updates one transaction commits (the rest wait for the next)."""
MOVED_HINTS = 4096
"""How many requests a store remembers having moved (the most recent), for :class:`MovedHints`."""


@dataclass(slots=True, eq=False)
class Update:
    """One compare-and-set of a request: the store's statement parameters (``params``), its event, then its
    result."""

    request_id: str
    status: str
    expected: tuple[str, ...]
    params: tuple[Any, ...] | dict[str, Any]
    event: NewEvent
    done: bool = False
    result: Event | None = None
    error: BaseException | None = None

    def finish(self, result: Event | None = None, error: BaseException | None = None) -> None:
        self.result, self.error, self.done = result, error, True


class UpdateQueue:
    """The updates waiting for a transaction, and which thread commits them next (``store`` names the
    store in errors)."""

    def __init__(self, store: str) -> None:
        self._store = store
        self._cond = threading.Condition()
        self._waiting: list[Update] = []
        self._leading = False

    def submit(self, update: Update, commit: Callable[[Callable[[], list[Update]]], None]) -> Event | None:
        """``update``'s result, once a transaction committed it: this thread's (``commit(take)``, which
        takes the write lock, then the waiting updates with ``take``, and finishes each) or another's."""
        with self._cond:
            self._waiting.append(update)
        while True:
            with self._cond:
                while self._leading and not update.done:
                    self._cond.wait()
                if update.done:
                    break
                self._leading = True
            self._lead(update, commit)
        if update.error is not None:
            raise update.error
        return update.result

    def _lead(self, update: Update, commit: Callable[[Callable[[], list[Update]]], None]) -> None:
        taken: list[Update] = []

        def take() -> list[Update]:
            with self._cond:
                taken.extend(self._waiting[:MAX_UPDATES])
                del self._waiting[:MAX_UPDATES]
            return taken

        try:
            commit(take)
        except BaseException:
            with self._cond:
                # ``commit`` raised before it took this thread's update: the update raises here, so it must
                # not be committed later by another thread. (Without an exception, an update left waiting,
                # beyond MAX_UPDATES, stays: this thread leads again for it.)
                self._waiting = [w for w in self._waiting if w is not update]
            raise
        finally:
            with self._cond:
                for other in taken:  # only when ``commit`` raised before finishing them
                    if not other.done:
                        other.finish(error=StoreError(f"{self._store} could not update the request: the write failed"))
                self._leading = False
                self._cond.notify_all()


def commit_together(todo: list[Update], together: Callable[[Sequence[Update]], list[Event | None]]) -> None:
    """Finish each of ``todo`` with its result from ``together`` (one transaction of them all); if that
    raises, with its own transaction, so one update's failure is only its own."""
    try:
        results = together(todo)
    except Exception as exc:
        if len(todo) == 1:
            todo[0].finish(error=exc)
            return
        for update in todo:
            try:
                update.finish(together([update])[0])
            except Exception as own:
                update.finish(error=own)
        return
    for update, result in zip(todo, results, strict=True):
        update.finish(result)


class MovedHints:
    """The statuses this store object last wrote to requests (the ``MOVED_HINTS`` most recent): a hint that a
    compare-and-set expecting another status is lost.

    For the reviewers who lost a race for a request, it spares the transaction that would have told them
    so (and, on PostgreSQL, the wait for the chain head behind the winners). The hint never decides by
    itself: :meth:`suspects` only says when to read the committed status, and only a committed status
    outside the expected ones refuses the change, as the ``UPDATE`` would have at the moment of that read.
    A hint that is out of date (another process moved the request since) costs one read, and the change
    goes on to its transaction.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._moved: OrderedDict[str, str] = OrderedDict()

    def suspects(self, request_id: str, expected: tuple[str, ...]) -> bool:
        """True when this store moved ``request_id`` to a status outside ``expected``."""
        with self._lock:
            moved = self._moved.get(request_id)
        return moved is not None and moved not in expected

    def note(self, request_id: str, status: str) -> None:
        """Remember (after the commit) that ``request_id`` now has ``status``."""
        with self._lock:
            self._moved[request_id] = status
            self._moved.move_to_end(request_id)
            if len(self._moved) > MOVED_HINTS:
                self._moved.popitem(last=False)
