"""``MemoryStore``: the reference store, in one process's memory, for tests and experiments."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Sequence
from datetime import datetime

from crossgate.audit import GENESIS_HASH, seal
from crossgate.errors import ConflictError
from crossgate.model import (
    ApprovalRequest,
    Event,
    NewEvent,
    ParkedRun,
    ParkedRunStatus,
    RequestStatus,
    StandingRule,
)
from crossgate.stores.base import (
    Change,
    Checkpoint,
    Page,
    PolicyVersion,
    PruneEvent,
    RequestQuery,
    decode_cursor,
    encode_cursor,
    in_given_order,
)
from crossgate.stores.credentials import Credential, CredentialKind
from crossgate.stores.cursors import (
    DeliveryCursor,
    check_delivery_cursor_args,
    delivery_cursor_advanceable,
    delivery_cursor_claimable,
)


class MemoryStore:
    """Keeps everything in dictionaries behind one lock; nothing survives the process."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        self._requests: dict[str, ApprovalRequest] = {}
        self._positions: dict[str, int] = {}
        self._rules: dict[str, StandingRule] = {}
        self._parked: dict[str, ParkedRun] = {}
        self._events: list[Event] = []
        self._enqueued: list[NewEvent] = []  # sealed, in order, before the next event or read of the log
        self._cursors: dict[str, DeliveryCursor] = {}
        # Pending requests that can expire, so finding overdue ones does not scan every request ever made.
        self._expiring: set[str] = set()
        self._rules_version = 0
        self._policy_versions: list[PolicyVersion] = []
        self._checkpoints: dict[int, Checkpoint] = {}
        self._credentials: dict[str, Credential] = {}
        self._state_heads: dict[str, tuple[datetime, str]] = {}

    def setup(self) -> None:
        """Nothing to create."""

    def close(self) -> None:
        """Nothing to release."""

    def _append(self, new: NewEvent) -> Event:
        return self._record(self._sealed([new]))

    def _sealed(self, news: Sequence[NewEvent]) -> list[Event]:
        """``news`` sealed as the next events of the chain (after the enqueued ones), not appended yet.

        Every write seals its events before it changes anything: an event that cannot be sealed (a payload
        that is not JSON, say) then fails the write with nothing changed, as a rolled-back transaction would.
        """
        self._seal_enqueued()
        return self._chained(news)

    def _chained(self, news: Sequence[NewEvent]) -> list[Event]:
        prev = self._events[-1].hash if self._events else GENESIS_HASH
        sealed: list[Event] = []
        for new in news:
            sealed.append(seal(new, seq=len(self._events) + len(sealed) + 1, prev_hash=prev))
            prev = sealed[-1].hash
        return sealed

    def _record(self, sealed: list[Event]) -> Event:
        """Append events from ``_sealed`` (made since nothing else was appended); the last of them."""
        self._events.extend(sealed)
        self._changed.notify_all()
        return sealed[-1]

    def _seal_enqueued(self) -> None:
        enqueued, self._enqueued = self._enqueued, []
        if enqueued:
            self._record(self._chained(enqueued))

    def insert_request(self, request: ApprovalRequest, event: NewEvent) -> Event:
        with self._lock:
            if request.id in self._requests:
                raise ConflictError(f"request {request.id} already exists")
            sealed = self._sealed([event])
            self._add_request(request)
            return self._record(sealed)

    def _add_request(self, request: ApprovalRequest) -> None:
        self._requests[request.id] = request
        self._positions[request.id] = len(self._positions) + 1
        self._track_expiry(request)

    def get_request(self, request_id: str) -> ApprovalRequest | None:
        with self._lock:
            return self._requests.get(request_id)

    def list_requests(self, query: RequestQuery) -> Page[ApprovalRequest]:
        with self._lock:
            ordered = sorted(self._requests.values(), key=lambda r: self._positions[r.id], reverse=query.newest_first)
            after = decode_cursor(query.cursor) if query.cursor else None
            page: list[ApprovalRequest] = []
            for request in ordered:
                position = self._positions[request.id]
                if after is not None and (position >= after if query.newest_first else position <= after):
                    continue
                if not _matches(request, query):
                    continue
                if len(page) == query.limit:
                    return Page(page, encode_cursor(self._positions[page[-1].id]))
                page.append(request)
            return Page(page, None)

    def update_request(
        self, request: ApprovalRequest, expected: Sequence[RequestStatus], event: NewEvent
    ) -> Event | None:
        with self._lock:
            current = self._requests.get(request.id)
            if current is None or current.status not in expected:
                return None
            sealed = self._sealed([event])
            self._requests[request.id] = request
            self._track_expiry(request)
            return self._record(sealed)

    def _track_expiry(self, request: ApprovalRequest) -> None:
        if request.status is RequestStatus.PENDING and request.expires_at is not None:
            self._expiring.add(request.id)
        else:
            self._expiring.discard(request.id)

    def overdue_requests(self, now: datetime, limit: int = 100) -> list[ApprovalRequest]:
        with self._lock:
            candidates = (self._requests[i] for i in self._expiring)
            due = [r for r in candidates if r.expires_at is not None and r.expires_at <= now]
            return sorted(due, key=lambda r: self._positions[r.id])[:limit]

    def insert_rule(self, rule: StandingRule, event: NewEvent) -> Event:
        with self._lock:
            if rule.id in self._rules:
                raise ConflictError(f"rule {rule.id} already exists")
            sealed = self._sealed([event])
            self._rules[rule.id] = rule
            self._rules_version += 1
            return self._record(sealed)

    def get_rule(self, rule_id: str) -> StandingRule | None:
        with self._lock:
            return self._rules.get(rule_id)

    def list_rules(self, *, include_revoked: bool = False) -> list[StandingRule]:
        with self._lock:
            return [r for r in self._rules.values() if include_revoked or r.revoked_at is None]

    def revoke_rule(self, rule: StandingRule, event: NewEvent) -> Event | None:
        with self._lock:
            current = self._rules.get(rule.id)
            if current is None or current.revoked_at is not None:
                return None
            sealed = self._sealed([event])
            self._rules[rule.id] = rule
            self._rules_version += 1
            return self._record(sealed)

    def rules_version(self) -> int:
        return self._rules_version

    def insert_parked_run(
        self, parked: ParkedRun, event: NewEvent, requests: Sequence[tuple[ApprovalRequest, NewEvent]] = ()
    ) -> Event:
        with self._lock:
            if parked.id in self._parked:
                raise ConflictError(f"parked run {parked.id} already exists")
            for request, _ in requests:
                if request.id in self._requests:
                    raise ConflictError(f"request {request.id} already exists")
            sealed = self._sealed([*(submitted for _, submitted in requests), event])
            for request, _ in requests:
                self._add_request(request)
            self._parked[parked.id] = parked
            return self._record(sealed)

    def get_parked_run(self, parked_id: str) -> ParkedRun | None:
        with self._lock:
            return self._parked.get(parked_id)

    def list_parked_runs(
        self, *, statuses: Sequence[ParkedRunStatus] = (), framework: str | None = None, run: str | None = None
    ) -> list[ParkedRun]:
        with self._lock:
            return [
                p
                for p in self._parked.values()
                if (not statuses or p.status in statuses)
                and (framework is None or p.framework == framework)
                and (run is None or p.run == run)
            ]

    def change_parked_run(self, parked_id: str, change: Change[ParkedRun], event: NewEvent) -> ParkedRun | None:
        with self._lock:
            current = self._parked.get(parked_id)
            if current is None or not change.allowed(current):
                return None
            changed = change.apply(current)
            sealed = self._sealed([event])
            self._parked[parked_id] = changed
            self._record(sealed)
            return changed

    def change_parked_runs(self, ids: Sequence[str], change: Change[ParkedRun], event: PruneEvent) -> list[str]:
        with self._lock:
            chosen = {i for i in ids if (p := self._parked.get(i)) is not None and change.allowed(p)}
            changed = in_given_order(ids, chosen)
            if not changed:
                return []
            sealed = self._sealed([event(changed)])  # before anything changes: if it raises, nothing has
            for parked_id in changed:
                self._parked[parked_id] = change.apply(self._parked[parked_id])
            self._record(sealed)
            return changed

    def append_event(self, event: NewEvent) -> Event:
        with self._lock:
            return self._append(event)

    def enqueue_event(self, event: NewEvent) -> None:
        """Kept in order and sealed into the chain by the next event appended or the next read of the log."""
        with self._lock:
            self._enqueued.append(event)

    def flush_events(self) -> None:
        with self._lock:
            self._seal_enqueued()

    def list_events(self, *, after: int = 0, limit: int | None = None, request_id: str | None = None) -> list[Event]:
        with self._lock:
            self._seal_enqueued()
            events = [e for e in self._events[after:] if request_id is None or e.request_id == request_id]
            return events if limit is None else events[:limit]

    def audit_head(self) -> tuple[int, str]:
        with self._lock:
            self._seal_enqueued()
            return (len(self._events), self._events[-1].hash) if self._events else (0, GENESIS_HASH)

    def wait_for_change(self, after: int, timeout: float) -> int:
        with self._changed:
            self._seal_enqueued()
            self._changed.wait_for(lambda: len(self._events) > after, timeout=timeout)
            return len(self._events)

    def insert_policy_version(self, version: PolicyVersion, event: NewEvent) -> Event:
        with self._lock:
            expected = len(self._policy_versions) + 1
            if version.version != expected:
                raise ConflictError(f"policy version {version.version} is not the next one ({expected})")
            sealed = self._sealed([event])
            self._policy_versions.append(version)
            self._rules_version += 1
            return self._record(sealed)

    def get_policy_version(self, version: int | None = None) -> PolicyVersion | None:
        with self._lock:
            if version is None:
                return self._policy_versions[-1] if self._policy_versions else None
            return self._policy_versions[version - 1] if 1 <= version <= len(self._policy_versions) else None

    def list_policy_versions(self) -> list[PolicyVersion]:
        with self._lock:
            return list(self._policy_versions)

    def insert_checkpoint(self, checkpoint: Checkpoint) -> None:
        with self._lock:
            kept = self._checkpoints.get(checkpoint.seq)
            if kept is None or (checkpoint.authored and not kept.authored):
                self._checkpoints[checkpoint.seq] = checkpoint

    def list_checkpoints(self) -> list[Checkpoint]:
        with self._lock:
            return [self._checkpoints[seq] for seq in sorted(self._checkpoints)]

    def latest_checkpoint(self) -> Checkpoint | None:
        with self._lock:
            return self._checkpoints[max(self._checkpoints)] if self._checkpoints else None

    def put_state_head(self, kid: str, token: str, issued_at: datetime) -> None:
        with self._lock:
            self._state_heads[kid] = (issued_at, token)

    def get_state_head(self, kid: str) -> str | None:
        with self._lock:
            head = self._state_heads.get(kid)
            return None if head is None else head[1]

    def claim_delivery_cursor(
        self, name: str, owner: str, now: datetime, lease_until: datetime, start: int
    ) -> DeliveryCursor | None:
        check_delivery_cursor_args(name, owner, start)
        with self._lock:
            current = self._cursors.get(name)
            if current is None:
                claimed = DeliveryCursor(name, start, owner, lease_until)
            elif delivery_cursor_claimable(current, owner, now):
                claimed = dataclasses.replace(current, lease_owner=owner, lease_until=lease_until)
            else:
                return None
            self._cursors[name] = claimed
            return claimed

    def advance_delivery_cursor(self, name: str, owner: str, seq: int, lease_until: datetime) -> DeliveryCursor | None:
        check_delivery_cursor_args(name, owner, seq)
        with self._lock:
            current = self._cursors.get(name)
            if current is None or not delivery_cursor_advanceable(current, owner, seq):
                return None
            advanced = dataclasses.replace(current, seq=seq, lease_until=lease_until)
            self._cursors[name] = advanced
            return advanced

    def release_delivery_cursor(self, name: str, owner: str) -> DeliveryCursor | None:
        check_delivery_cursor_args(name, owner)
        with self._lock:
            current = self._cursors.get(name)
            if current is None or current.lease_owner != owner:
                return None
            released = DeliveryCursor(name, current.seq)
            self._cursors[name] = released
            return released

    def get_delivery_cursor(self, name: str) -> DeliveryCursor | None:
        with self._lock:
            return self._cursors.get(name)

    # credentials
    def _credential_taken(self, credential: Credential) -> bool:
        return any(
            c.token_sha256 == credential.token_sha256
            or (c.live and (c.kind, c.name) == (credential.kind, credential.name))
            for c in self._credentials.values()
        )

    def insert_credential(self, credential: Credential, event: NewEvent) -> Event:
        with self._lock:
            if self._credential_taken(credential):
                raise ConflictError(f"a live {credential.kind} named {credential.name!r} exists already")
            sealed = self._sealed([event])
            self._credentials[credential.id] = credential
            return self._record(sealed)

    def revoke_credential(self, credential_id: str, at: datetime, by: str, event: NewEvent) -> Event | None:
        with self._lock:
            current = self._credentials.get(credential_id)
            if current is None or not current.live:
                return None
            sealed = self._sealed([event])
            self._credentials[credential_id] = dataclasses.replace(current, revoked_at=at, revoked_by=by)
            return self._record(sealed)

    def rotate_credential(self, credential_id: str, new: Credential, event: NewEvent) -> Event | None:
        with self._lock:
            current = self._credentials.get(credential_id)
            if current is None or not current.live:
                return None
            sealed = self._sealed([event])
            revoked = dataclasses.replace(current, revoked_at=new.created_at, revoked_by=new.created_by)
            self._credentials[credential_id] = revoked
            self._credentials[new.id] = new
            return self._record(sealed)

    def credential_for(self, token_sha256: str) -> Credential | None:
        with self._lock:
            return next((c for c in self._credentials.values() if c.live and c.token_sha256 == token_sha256), None)

    def list_credentials(
        self, kind: CredentialKind | None = None, *, include_revoked: bool = False
    ) -> list[Credential]:
        with self._lock:
            return [
                c
                for c in self._credentials.values()
                if (kind is None or c.kind == kind) and (include_revoked or c.live)
            ]


def _matches(request: ApprovalRequest, query: RequestQuery) -> bool:
    call = request.call
    return (
        (not query.statuses or request.status in query.statuses)
        and (query.framework is None or call.framework == query.framework)
        and (query.tool is None or call.tool == query.tool)
        and (query.agent is None or call.agent == query.agent)
        and (query.run is None or call.run == query.run)
    )
