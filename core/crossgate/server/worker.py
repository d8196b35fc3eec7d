"""``crossgate worker``: resume parked runs once every request of theirs is decided.

The worker holds no SDK knowledge: the app hands it resumers (objects with ``framework`` and
``async resume(parked_run)``, see :class:`crossgate.runs.Resumer`), one per framework, and the
adapter's resume claims the parked run itself, so two workers never resume the same state twice.
This module needs no web stack.
"""

from __future__ import annotations

import asyncio
import importlib
import inspect
import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from crossgate.errors import ConfigurationError, ParkedRunClaimedError
from crossgate.queue import ReviewQueue
from crossgate.runs import Parked, Resumer

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Resumed:
    """What one resume attempt did: ``finished``, ``parked`` (again), ``claimed`` (elsewhere) or ``failed``."""

    parked_run: str
    framework: str
    run: str
    outcome: str
    detail: str = ""


def load_resumers(target: str, queue: ReviewQueue) -> list[Resumer]:
    """Resumers from ``module:attr``: a resumer, a list of them, or a callable taking the queue that returns either."""
    module_name, sep, attr = target.partition(":")
    if not sep or not module_name or not attr:
        raise ConfigurationError(f"--app takes module:attribute, got {target!r}")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise ConfigurationError(f"cannot import {module_name!r} for --app: {exc}") from exc
    try:
        found: object = getattr(module, attr)
    except AttributeError as exc:
        raise ConfigurationError(f"{module_name} has no attribute {attr!r}") from exc
    if callable(found) and not _is_resumer(found):
        found = found(queue) if inspect.signature(found).parameters else found()
    items = [found] if _is_resumer(found) else list(found) if isinstance(found, Iterable) else [found]
    for item in items:
        if not _is_resumer(item):
            raise ConfigurationError(f"{target} gave {item!r}, which has no framework and async resume(parked_run)")
    return items  # type: ignore[return-value]


def _is_resumer(item: object) -> bool:
    return isinstance(getattr(item, "framework", None), str) and callable(getattr(item, "resume", None))


class Worker:
    """Polls ``queue.ready_runs()`` with wake-ups from the event log and resumes each ready run once."""

    def __init__(
        self,
        queue: ReviewQueue,
        resumers: Sequence[Resumer],
        *,
        poll_seconds: float = 1.0,
        report: Callable[[Resumed], None] | None = None,
    ) -> None:
        by_framework: dict[str, Resumer] = {}
        for resumer in resumers:
            if resumer.framework in by_framework:
                raise ConfigurationError(f"two resumers for framework {resumer.framework!r}")
            by_framework[resumer.framework] = resumer
        self.queue = queue
        self.resumers = by_framework
        self.poll_seconds = poll_seconds
        self.report = report or (lambda _r: None)
        self._given_up: set[str] = set()
        self._unknown: set[str] = set()

    async def run_once(self) -> list[Resumed]:
        """Resume every run that is ready now; return what happened to each."""
        ready = await asyncio.to_thread(self.queue.ready_runs)
        done: list[Resumed] = []
        for parked in ready:
            if parked.id in self._given_up:
                continue
            resumer = self.resumers.get(parked.framework)
            if resumer is None:
                if parked.framework not in self._unknown:
                    self._unknown.add(parked.framework)
                    log.warning(
                        "no resumer for framework %s (parked run %s); pass one with --app", parked.framework, parked.id
                    )
                continue
            result = await self._resume(resumer, parked.id, parked.framework, parked.run)
            self.report(result)
            done.append(result)
        return done

    async def _resume(self, resumer: Resumer, parked_id: str, framework: str, run: str) -> Resumed:
        try:
            outcome = await resumer.resume(parked_id)
        except ParkedRunClaimedError as exc:
            return Resumed(parked_id, framework, run, "claimed", str(exc))
        except Exception as exc:  # one broken run must not stop the others; it is not retried in this process
            self._given_up.add(parked_id)
            log.exception("resuming parked run %s failed", parked_id)
            return Resumed(parked_id, framework, run, "failed", f"{type(exc).__name__}: {exc}")
        if isinstance(outcome, Parked):
            return Resumed(parked_id, framework, run, "parked", f"parked again as {outcome.parked_run}")
        return Resumed(parked_id, framework, run, "finished", _short(outcome.result))

    async def run(self, *, stop: asyncio.Event | None = None, until_idle: bool = False) -> list[Resumed]:
        """Work until ``stop`` is set (or, with ``until_idle``, until no parked run of a known framework is left)."""
        history: list[Resumed] = []
        store = self.queue.store
        head = (await asyncio.to_thread(store.audit_head))[0]
        while stop is None or not stop.is_set():
            history.extend(await self.run_once())
            if until_idle and not await asyncio.to_thread(self._has_work):
                return history
            head = await asyncio.to_thread(store.wait_for_change, head, self.poll_seconds)
        return history

    def _has_work(self) -> bool:
        return any(p.framework in self.resumers and p.id not in self._given_up for p in self.queue.parked_runs())


def _short(value: object, limit: int = 200) -> str:
    text = str(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"
