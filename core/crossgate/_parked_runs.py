"""``ReviewQueue``'s parked runs: an SDK's paused state kept server-side and resumed once, from any process."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from pydantic import JsonValue

from crossgate import lifecycle, tracing
from crossgate._queue_base import QueueBase, clip_text
from crossgate.clock import new_id
from crossgate.errors import AdapterError, ConfigurationError, ConflictError, NotFoundError, ParkedRunClaimedError
from crossgate.lifecycle import claimable
from crossgate.model import (
    ApprovalRequest,
    EventKind,
    JsonObject,
    NewEvent,
    ParkedRun,
    ParkedRunStatus,
    RequestStatus,
    event_kind,
    is_outcome,
)

PRUNED_IDS_LISTED = 100
"""At most this many ids are listed in one ``parked_states_pruned`` event; its ``count`` covers them all."""


def state_bytes(parked: ParkedRun) -> int:
    """How much SDK state ``parked`` holds, in bytes of UTF-8 (0 once pruned)."""
    return len(parked.state.encode())


class ParkedRunsMixin(QueueBase):
    """Park, claim, finish and retry parked runs; a claim is a lease, so a dead resumer's run is taken over."""

    if TYPE_CHECKING:

        def expire_overdue(self) -> list[ApprovalRequest]: ...

    def park(
        self,
        *,
        framework: str,
        run: str,
        request_ids: Sequence[str],
        state: str,
        metadata: JsonObject | None = None,
        new_requests: Sequence[ApprovalRequest] = (),
    ) -> ParkedRun:
        """Store an SDK's paused state server-side; any process can resume it once.

        ``new_requests`` (from :meth:`prepare`, each one of ``request_ids``) are stored in the same
        transaction as the run, so no reviewer ever sees a request whose run is not parked yet.
        """
        fresh = {r.id: r for r in new_requests}
        unknown = sorted(set(fresh) - set(request_ids))
        if unknown:
            raise AdapterError(f"new requests {unknown} are not among the parked run's request ids")
        if not state:
            raise AdapterError("a parked run needs the SDK's state; an empty state means it was pruned")
        for request_id in request_ids:
            if request_id not in fresh:
                self.get(request_id)
        if (traceparent := tracing.current_traceparent()) is not None:  # the resume, anywhere, joins this trace
            metadata = {**(metadata or {}), tracing.TRACEPARENT: traceparent}
        now = self.now()
        parked = ParkedRun(
            id=new_id("park"),
            framework=framework,
            run=run,
            request_ids=tuple(request_ids),
            state=state,
            metadata=metadata or {},
            created_at=now,
            updated_at=now,
        )
        payload: JsonObject = {"parked_run": parked.id, "requests": list(parked.request_ids)}
        event = self._event("run_parked", run=run, channel=framework, payload=payload)
        attributes = {"crossgate.parked_run.id": parked.id, "crossgate.framework": framework, "crossgate.run": run}
        with tracing.span("crossgate.park", attributes=attributes):
            submitted = [(r, self._submitted_event(r)) for r in new_requests]
            self.store.insert_parked_run(parked, event, submitted)
        return parked

    def get_parked(self, parked_id: str) -> ParkedRun:
        """The parked run with this id; NotFoundError if there is none."""
        parked = self.store.get_parked_run(parked_id)
        if parked is None:
            raise NotFoundError(f"no parked run with id {parked_id!r}")
        return parked

    def parked_runs(
        self,
        *,
        statuses: Sequence[ParkedRunStatus] = (ParkedRunStatus.PARKED,),
        framework: str | None = None,
        run: str | None = None,
    ) -> list[ParkedRun]:
        """Parked runs, oldest first."""
        return self.store.list_parked_runs(statuses=statuses, framework=framework, run=run)

    def applied_without_outcome(self, parked: ParkedRun) -> list[ApprovalRequest]:
        """The requests of ``parked`` marked applied whose outcome was never recorded, in the run's order.

        A resumer killed between the applied mark and the tool's outcome (or still running the tool) leaves
        these. The mark comes first, so the tool never runs twice; whether it ran once is unknown. Only
        approvals and edits count: a rejection or a response applied never runs the tool. A later resume's
        record that it did not run the call again (``ran`` false) is not the outcome: only a record that
        the tool ran is. A run resumed in one attempt that ended cleanly lists nothing: its tools ran
        (some run their tool in the resumed code itself, as a LangGraph node after ``request_approval``
        does, and no outcome is ever recorded for them).
        """
        if parked.status is ParkedRunStatus.RESUMED and parked.attempts <= 1:
            return []
        requests = [self.get(r) for r in parked.request_ids]
        may_have_run = [r for r in requests if r.status is RequestStatus.APPLIED and r.approved_fingerprint()]
        return [r for r in may_have_run if not self._ran_after_applied(r.id)]

    def _ran_after_applied(self, request_id: str) -> bool:
        applied = False
        for event in self.store.list_events(request_id=request_id):
            applied = applied or event.kind == EventKind.APPLIED
            if applied and is_outcome(event) and event_kind(event) == EventKind.RAN:
                return True
        return False

    def is_ready(self, parked: ParkedRun) -> bool:
        """True once no request of the parked run is pending."""
        return all(not self.get(r).is_open for r in parked.request_ids)

    def ready_runs(self, *, framework: str | None = None) -> list[ParkedRun]:
        """Parked runs whose requests are all decided, expired or cancelled.

        Includes runs whose resumer's lease ran out (the worker died mid-resume), so another worker
        takes them over; anything it already applied is refused by ``mark_applied`` and never runs twice.
        """
        self.expire_overdue()
        now = self.now()
        statuses = (ParkedRunStatus.PARKED, ParkedRunStatus.RESUMING)
        candidates = self.parked_runs(statuses=statuses, framework=framework)
        return [p for p in candidates if claimable(p, now) and self.is_ready(p)]

    def claim_parked(self, parked_id: str | ParkedRun, *, owner: str, lease_seconds: float = 300.0) -> ParkedRun:
        """Take a parked run for resuming; ParkedRunClaimedError if resumed already or leased by another.

        ``parked_id`` may be the parked run the caller holds: only its id and run are used (they never
        change), so it is not read again; the claim itself is decided on the stored run.
        """
        current = parked_id if isinstance(parked_id, ParkedRun) else self.get_parked(parked_id)
        parked_id = current.id
        now = self.now()
        event = self._event("run_claimed", run=current.run, actor=owner, payload={"parked_run": parked_id})
        claim = lifecycle.claim(owner, now, now + timedelta(seconds=lease_seconds))
        claimed = self.store.change_parked_run(parked_id, claim, event)
        if claimed is None:
            latest = self.get_parked(parked_id)
            raise ParkedRunClaimedError(
                f"parked run {parked_id} is {latest.status.value}"
                + (f" by {latest.lease_owner}" if latest.status is ParkedRunStatus.RESUMING else "")
                + "; a parked state is resumed once"
            )
        return claimed

    def finish_parked(
        self,
        parked_id: str | ParkedRun,
        *,
        owner: str,
        status: ParkedRunStatus = ParkedRunStatus.RESUMED,
        outcome: str | None = None,
    ) -> ParkedRun:
        """Close a resume the caller holds the lease for (``parked_id`` may be the parked run it holds)."""
        current = parked_id if isinstance(parked_id, ParkedRun) else self.get_parked(parked_id)
        parked_id = current.id
        payload: JsonObject = {"parked_run": parked_id, "status": status.value, "outcome": clip_text(outcome)}
        event = self._event("run_resumed", run=current.run, actor=owner, payload=payload)
        finish = lifecycle.finish(owner, status, outcome, self.now())
        finished = self.store.change_parked_run(parked_id, finish, event)
        if finished is None:
            self.get_parked(parked_id)  # NotFoundError for a run that does not exist
            raise ParkedRunClaimedError(f"{owner} does not hold the lease on parked run {parked_id}")
        return finished

    def retry_parked(self, parked_id: str, *, actor: str | None = None) -> ParkedRun:
        """Offer a failed parked run for resuming again, from the state it was parked with.

        A worker (or the adapter's ``resume``) takes it as it takes any ready run. Calls its failed attempt
        applied are never run again: their gated tools refuse, and the model is told what happened then.
        NotFoundError for an unknown id; ConflictError unless the run failed and still has its SDK state
        (see :meth:`prune_parked_states`).
        """
        current = self.get_parked(parked_id)
        payload: JsonObject = {"parked_run": current.id, "failed_with": clip_text(current.outcome)}
        event = self._event("run_retried", run=current.run, actor=actor, payload=payload)
        retried = self.store.change_parked_run(current.id, lifecycle.retry(self.now()), event)
        if retried is None:
            latest = self.get_parked(parked_id)
            if latest.status is ParkedRunStatus.FAILED and not latest.state:
                raise ConflictError(
                    f"parked run {parked_id} failed, and its SDK state was pruned; it cannot be resumed again"
                )
            raise ConflictError(f"parked run {parked_id} is {latest.status.value}; only a failed run can be retried")
        return retried

    def prunable_parked_states(self, *, older_than: timedelta, include_failed: bool = False) -> list[ParkedRun]:
        """The runs :meth:`prune_parked_states` would prune now, oldest first, with their states; changes nothing."""
        return self._prunable(self._prune_cutoff(older_than), _prune_statuses(include_failed))

    def prune_parked_states(
        self, *, older_than: timedelta, include_failed: bool = False, actor: str | None = None
    ) -> list[ParkedRun]:
        """Drop the SDK state of runs resumed (and failed, with ``include_failed``) more than ``older_than`` ago.

        A resumed run never reads its state again, and a state can be hundreds of KiB; a failed run
        needs it for :meth:`retry_parked`, which refuses one whose state is pruned. Parked and resuming
        runs are never touched, and a failed run retried after it was listed keeps its state (the store
        checks the status as it clears it). ``updated_at`` is when the resume ended; pruning keeps it.
        One ``parked_states_pruned`` event records the ids (the first ``PRUNED_IDS_LISTED``), their count,
        the bytes freed, the cutoff and ``actor``; nothing is recorded when nothing was pruned. Returns the
        pruned runs as they were just before, so ``state_bytes`` of each is what was freed.
        ConfigurationError unless ``older_than`` is more than zero.
        """
        cutoff = self._prune_cutoff(older_than)
        statuses = _prune_statuses(include_failed)
        candidates = {p.id: p for p in self._prunable(cutoff, statuses)}
        if not candidates:
            return []

        def event(pruned: list[str]) -> NewEvent:
            listed: list[JsonValue] = list(pruned[:PRUNED_IDS_LISTED])
            payload: JsonObject = {
                "parked_runs": listed,
                "count": len(pruned),
                "state_bytes": sum(state_bytes(candidates[i]) for i in pruned),
                "statuses": [s.value for s in statuses],
                "updated_before": cutoff.isoformat(),
            }
            return self._event("parked_states_pruned", actor=actor, payload=payload)

        pruned = self.store.change_parked_runs(list(candidates), lifecycle.prune(statuses), event)
        return [candidates[i] for i in pruned]

    def _prunable(self, cutoff: datetime, statuses: tuple[ParkedRunStatus, ...]) -> list[ParkedRun]:
        return [p for p in self.parked_runs(statuses=statuses) if p.state and p.updated_at < cutoff]

    def _prune_cutoff(self, older_than: timedelta) -> datetime:
        if older_than <= timedelta(0):
            raise ConfigurationError(f"older_than must be more than zero, got {older_than}")
        try:
            return self.now() - older_than
        except OverflowError:  # longer ago than datetime reaches: nothing is that old
            return datetime.min.replace(tzinfo=UTC)


def _prune_statuses(include_failed: bool) -> tuple[ParkedRunStatus, ...]:
    return (ParkedRunStatus.RESUMED, ParkedRunStatus.FAILED) if include_failed else (ParkedRunStatus.RESUMED,)
