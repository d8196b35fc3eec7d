"""The reviewer's backend: what the reading and deciding commands ask of a review queue, local or remote.

Each of ``list``, ``show``, ``review``, ``events``, ``rules``, ``runs``, ``cancel``, the decision
commands, ``expire``, ``policy show|history|diff|apply`` and ``audit verify`` is written once, against
:class:`ReviewerBackend`. :class:`LocalBackend` answers from a
``ReviewQueue`` on the local database; ``crossgate.cli.server_backend.ServerBackend`` from the review
server's API with a reviewer token. Both raise the same crossgate errors, so a command prints the same
lines and exits with the same code either way; a server adds three of its own (a refused token, a call
outside the reviewer's scope, no answer), defined here. Parked runs are handed out without their SDK state (the
resumer's alone): :class:`RunDetail` says how large it is.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Protocol

from crossgate.authority import Authority
from crossgate.authority.claims import ReviewerKind
from crossgate.checkpoints import SignedLog
from crossgate.cli.context import CHANNEL
from crossgate.cli.options import validated
from crossgate.coverage import still_asking
from crossgate.decisions import AnyDecision
from crossgate.errors import AuditHeadMissingError, ConfigurationError, CrossgateError, InvalidDecisionError
from crossgate.fingerprint import fingerprint
from crossgate.model import (
    ApprovalRequest,
    Event,
    JsonObject,
    ParkedRun,
    ParkedRunStatus,
    StandingRule,
)
from crossgate.policy import Policy
from crossgate.policy.versions import apply_policy
from crossgate.queue import ReviewQueue
from crossgate.stores import RequestQuery
from crossgate.stores.base import Checkpoint, Page, PolicyVersion


class ReviewerTokenRefusedError(ConfigurationError):
    """The review server does not take this reviewer token (HTTP 401): unknown, revoked or rotated."""


class OutsideScopeError(InvalidDecisionError):
    """The review server refused the call as outside the reviewer's scope, or the token is no reviewer's (403)."""


class ServerUnreachableError(CrossgateError):
    """The review server could not be reached, failed (5xx), or answered something that is not its API."""


@dataclass(frozen=True)
class RunDetail:
    """One parked run (its state left out), its requests, and those applied whose outcome was never recorded."""

    parked: ParkedRun
    state_bytes: int
    requests: list[ApprovalRequest]
    applied_without_outcome: list[str]


@dataclass(frozen=True)
class PrunedRun:
    """A parked run (its state left out) whose SDK state a prune dropped, or would drop, and that state's size."""

    parked: ParkedRun
    state_bytes: int


@dataclass(frozen=True)
class AppliedPolicy:
    """What ``policy apply`` stored: the version now current, whether it was so already, what changed."""

    version: PolicyVersion
    unchanged: bool
    changes: dict[str, Any]


@dataclass(frozen=True)
class LogSnapshot:
    """A review server's signed log as read at one head, for the audit checks to verify here (a ``SignedLog``)."""

    events: list[Event]
    head: tuple[int, str] | None
    missing: str | None
    """Why there is no head (the store lost it), when ``head`` is None."""
    checkpoints: list[Checkpoint]
    policy_versions: list[PolicyVersion]
    heads: list[tuple[int, int, str]] | None = None
    """Every partition's head as of ``head``, when the server keeps its log in several chains."""

    def list_events(self) -> list[Event]:
        return self.events

    def audit_snapshot(self) -> tuple[int, list[tuple[int, int, str]], list[Event]]:
        """What :func:`crossgate.audit.read_log` checks: the head (each partition's) and the events."""
        seq, digest = self.audit_head()
        return seq, self.heads or [(0, seq, digest)], self.events

    def audit_head(self) -> tuple[int, str]:
        if self.head is None:
            raise AuditHeadMissingError(*([self.missing] if self.missing else []))
        return self.head

    def list_checkpoints(self) -> list[Checkpoint]:
        return self.checkpoints

    def list_policy_versions(self) -> list[PolicyVersion]:
        return self.policy_versions


class ReviewerBackend(Protocol):
    """A review queue as a reviewer works it; acting commands record the backend's identity."""

    def get(self, request_id: str) -> ApprovalRequest:
        """One request; NotFoundError if there is none."""

    def list_requests(self, query: RequestQuery) -> Page[ApprovalRequest]:
        """One page of requests."""

    def approvers(self, request_id: str) -> list[str]:
        """Who approved the request so far (for one that needs several approvals)."""

    def outcome(self, request_id: str) -> Event | None:
        """The ``ran``/``not_run`` event after the request was applied, if one was recorded."""

    def events(self, *, after: int, limit: int | None, request_id: str | None) -> list[Event]:
        """The audit log in order, from ``after`` on."""

    def rules(self, *, include_revoked: bool) -> list[StandingRule]:
        """Standing rules, oldest first."""

    def parked_runs(self, *, statuses: Sequence[ParkedRunStatus], framework: str | None) -> list[ParkedRun]:
        """Parked runs, oldest first, without their state."""

    def run_detail(self, parked_id: str) -> RunDetail:
        """One parked run and its requests; NotFoundError if there is none."""

    def cancel(self, request_id: str, *, reason: str) -> ApprovalRequest:
        """Close a pending request without a decision."""

    def revoke_rule(self, rule_id: str) -> StandingRule:
        """Revoke a standing rule."""

    def retry_run(self, parked_id: str) -> ParkedRun:
        """Offer a failed parked run for resuming again (returned without its state)."""

    def decide(self, request_id: str, decision: AnyDecision) -> tuple[ApprovalRequest, list[StandingRule]]:
        """Decide; the decided request and the standing rules it remembered."""

    def add_rule(self, fields: dict[str, Any], args: JsonObject | None) -> StandingRule:
        """Store a standing rule: ``ReviewQueue.new_rule`` fields (no ``created_by``: the backend's identity),
        and for ``match=exact`` the arguments it matches."""

    def still_asks(self, request: ApprovalRequest) -> str | None:
        """After a remembered allow: the rule the policy still asks by for calls like this, if it says."""

    def expire_overdue(self) -> list[ApprovalRequest]:
        """Close every pending request past its expiry; those closed (on a server: an admin's)."""

    def prune_runs(self, *, older_than: timedelta, include_failed: bool, dry_run: bool) -> list[PrunedRun]:
        """Drop (or, dry, list) the SDK state of runs that ended before ``older_than`` ago (on a server: an admin's)."""

    def policy_versions(self) -> list[PolicyVersion]:
        """Every stored policy version, oldest first, as signed (verify before trusting one)."""

    def policy_version(self, version: int | None) -> PolicyVersion | None:
        """One stored version (None: the current one), or None when there is no such version."""

    def apply_policy(self, policy: Policy, *, source: str | None) -> AppliedPolicy:
        """Store ``policy`` as the next signed version (on a server: an admin's, signed by the server)."""

    def audit_log(self) -> SignedLog:
        """The event log, its head, checkpoints and policy versions, for the audit checks run here."""


def stateless(parked: ParkedRun) -> ParkedRun:
    """``parked`` without its SDK state."""
    return parked.model_copy(update={"state": ""})


@dataclass
class LocalBackend:
    """The local queue; acts as ``actor``, and decides signed with the queue's authority, as an operator."""

    queue: ReviewQueue
    actor: str
    signer: Authority | None = None
    """The key ``apply_policy`` signs with (the operator's; set by ``policy apply``)."""

    def get(self, request_id: str) -> ApprovalRequest:
        return self.queue.get(request_id)

    def list_requests(self, query: RequestQuery) -> Page[ApprovalRequest]:
        return self.queue.list_requests(query)

    def approvers(self, request_id: str) -> list[str]:
        return self.queue.approvers(request_id)

    def outcome(self, request_id: str) -> Event | None:
        return self.queue.outcome(request_id)

    def events(self, *, after: int, limit: int | None, request_id: str | None) -> list[Event]:
        return self.queue.events(after=after, limit=limit, request_id=request_id)

    def rules(self, *, include_revoked: bool) -> list[StandingRule]:
        return self.queue.rules(include_revoked=include_revoked)

    def parked_runs(self, *, statuses: Sequence[ParkedRunStatus], framework: str | None) -> list[ParkedRun]:
        return [stateless(p) for p in self.queue.parked_runs(statuses=statuses, framework=framework)]

    def run_detail(self, parked_id: str) -> RunDetail:
        parked = self.queue.get_parked(parked_id)
        return RunDetail(
            parked=stateless(parked),
            state_bytes=len(parked.state.encode()),
            requests=[self.queue.get(r) for r in parked.request_ids],
            applied_without_outcome=[r.id for r in self.queue.applied_without_outcome(parked)],
        )

    def cancel(self, request_id: str, *, reason: str) -> ApprovalRequest:
        return self.queue.cancel(request_id, reason=reason, actor=self.actor)

    def revoke_rule(self, rule_id: str) -> StandingRule:
        return self.queue.revoke_rule(rule_id, actor=self.actor, channel=CHANNEL)

    def retry_run(self, parked_id: str) -> ParkedRun:
        return stateless(self.queue.retry_parked(parked_id, actor=self.actor))

    def decide(self, request_id: str, decision: AnyDecision) -> tuple[ApprovalRequest, list[StandingRule]]:
        decided = self.queue.decide(
            request_id, decision, reviewer=self.actor, channel=CHANNEL, reviewer_kind=ReviewerKind.OPERATOR
        )
        return decided, [r for r in self.queue.rules() if r.source_request == decided.id]

    def add_rule(self, fields: dict[str, Any], args: JsonObject | None) -> StandingRule:
        exact = fingerprint(fields["tool"], args) if args is not None else None
        rule = validated(
            lambda: self.queue.new_rule(**fields, args_fingerprint=exact, created_by=self.actor), "standing rule"
        )
        return self.queue.add_rule(rule, actor=self.actor, channel=CHANNEL)

    def still_asks(self, request: ApprovalRequest) -> str | None:
        return still_asking(self.queue.evaluate(request.call))

    def expire_overdue(self) -> list[ApprovalRequest]:
        expired: list[ApprovalRequest] = []
        while batch := self.queue.expire_overdue():  # the store hands out overdue requests in batches
            expired.extend(batch)
        return expired

    def prune_runs(self, *, older_than: timedelta, include_failed: bool, dry_run: bool) -> list[PrunedRun]:
        if dry_run:
            runs = self.queue.prunable_parked_states(older_than=older_than, include_failed=include_failed)
        else:
            runs = self.queue.prune_parked_states(
                older_than=older_than, include_failed=include_failed, actor=self.actor
            )
        return [PrunedRun(stateless(p), len(p.state.encode())) for p in runs]

    def policy_versions(self) -> list[PolicyVersion]:
        return self.queue.store.list_policy_versions()

    def policy_version(self, version: int | None) -> PolicyVersion | None:
        return self.queue.store.get_policy_version(version)

    def apply_policy(self, policy: Policy, *, source: str | None) -> AppliedPolicy:
        if self.signer is None:
            raise ConfigurationError("policy apply signs with the authority's private key, which this command lacks")
        queue = self.queue
        applied = apply_policy(queue.store, self.signer, policy, created_by=self.actor, source=source, clock=queue.now)
        return AppliedPolicy(applied.version, applied.unchanged, applied.diff.summary())

    def audit_log(self) -> SignedLog:
        return self.queue.store
