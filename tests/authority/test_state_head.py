"""The signer's side of the state head: what a head vouches for, and that no signer vouches for less later."""

from __future__ import annotations

import logging
from datetime import timedelta
from pathlib import Path

import pytest

from crossgate import Approve, MemoryStore, Policy, PolicyRule, ReviewQueue, ToolCall, VerdictKind
from crossgate.adapter._heads import HeadFile, HeadGuard
from crossgate.authority import Authority, StateHeadClaims
from crossgate.authority.consumed import build_filter, filter_bytes, in_filter, merge_filters
from crossgate.errors import ConfigurationError, SignatureError
from crossgate.policy.versions import apply_policy
from crossgate.server.settings import ServerSettings
from crossgate.state_head import HeadSigner, StateHeadTimer, read_state_head
from tests.support.clock import FakeClock

ASK = Policy(rules=(PolicyRule(name="deletes", tool="delete_*", verdict=VerdictKind.ASK),))


def stored_head(queue: ReviewQueue, authority: Authority) -> StateHeadClaims:
    head = read_state_head(queue.store.get_state_head(authority.kid), authority.trusted_keys())
    assert head is not None
    return head


def applied_request(queue: ReviewQueue, ticket: str) -> str:
    call = ToolCall(framework="openai-agents", tool="delete_ticket", args={"id": ticket})
    request = queue.submit(call).request
    assert request is not None
    decided = queue.decide(request.id, Approve(), reviewer="ann")
    queue.mark_applied(decided, args=decided.call.args)
    return request.id


def test_a_queue_holding_the_key_signs_a_head_at_start_and_after_each_decision(clock: FakeClock) -> None:
    authority = Authority.generate()
    queue = ReviewQueue(MemoryStore(), ASK, authority=authority, clock=clock)
    first = stored_head(queue, authority)
    assert first.issued_at == clock.now and first.expires_at == clock.now + timedelta(minutes=5)
    clock.advance(1)
    request_id = applied_request(queue, "t1")
    assert not stored_head(queue, authority).consumes(request_id)  # applied after the decision's head
    clock.advance(1)
    head = queue.sign_state_head()
    assert head is not None and head.consumes(request_id) and head.consumed_count == 1
    assert head.consumed_until == queue.get(request_id).decided_at + timedelta(hours=1)  # the default window
    assert head.audit_seq == queue.store.audit_head()[0]


def test_a_decision_within_a_second_of_the_last_head_signs_none_but_a_revocation_signs_at_once(
    clock: FakeClock,
) -> None:
    authority = Authority.generate()
    queue = ReviewQueue(MemoryStore(), ASK, authority=authority, clock=clock)
    started = stored_head(queue, authority)
    clock.advance(0.5)
    applied_request(queue, "t1")
    assert stored_head(queue, authority) == started, "a decision half a second on signs no head"
    rule = queue.add_rule(queue.new_rule(effect=VerdictKind.ALLOW, tool="read_*"), actor="ann")
    assert stored_head(queue, authority) == started, "nor does a standing rule"
    queue.revoke_rule(rule.id, actor="ann")
    revoked = stored_head(queue, authority)
    assert revoked.issued_at == clock.now and rule.id in revoked.revoked_rules, "a revocation signs at once"
    clock.advance(1)
    second = applied_request(queue, "t2")
    assert stored_head(queue, authority).issued_at == clock.now, "a second on, a decision signs again"
    assert not stored_head(queue, authority).consumes(second)


def test_no_signer_vouches_for_less_than_the_stored_head_did(clock: FakeClock) -> None:
    authority = Authority.generate()
    store = MemoryStore()
    queue = ReviewQueue(store, authority=authority, clock=clock)
    apply_policy(store, authority, ASK, created_by="ops", clock=clock)
    apply_policy(store, authority, Policy(), created_by="ops", clock=clock)
    rule = queue.add_rule(queue.new_rule(effect=VerdictKind.ALLOW, tool="read_*"), actor="ann")
    queue.revoke_rule(rule.id, actor="ann")
    request_id = applied_request(ReviewQueue(store, ASK, authority=authority, clock=clock), "t1")
    queue.sign_state_head()
    # The writer of the store rolls everything back, then a signer starts afresh (a restarted server).
    store._policy_versions.pop()  # the newest version, deleted
    store._rules[rule.id] = store._rules[rule.id].model_copy(update={"revoked_at": None})
    clock.advance(1)
    head = HeadSigner(store, authority, clock=clock).sign()
    assert head.policy_version == 2  # not the version 1 the store shows now
    assert rule.id in head.revoked_rules
    assert head.consumes(request_id)
    clock.advance(3601)  # past the approval's apply_by: it is no longer carried
    assert not HeadSigner(store, authority, clock=clock).sign().consumes(request_id)


def test_the_consumed_filter_never_forgets_and_merges() -> None:
    ids = [f"req_{i}" for i in range(5000)]
    raw = filter_bytes(build_filter(ids))
    assert len(raw) * 8 >= 16 * len(ids)
    assert all(in_filter(raw, i) for i in ids)
    strangers = sum(in_filter(raw, f"other_{i}") for i in range(5000))
    assert strangers < 25  # about 0.05% expected
    small = filter_bytes(build_filter(["req_a"]))
    merged = merge_filters(raw, small)
    assert in_filter(merged, "req_a") and all(in_filter(merged, i) for i in ids[:100])
    with pytest.raises(ValueError, match="power of two"):
        filter_bytes("AAAA")


def test_a_head_refresh_interval_must_be_shorter_than_its_lifetime() -> None:
    signer = HeadSigner(MemoryStore(), Authority.generate(), lifetime_seconds=10)
    with pytest.raises(ConfigurationError, match="shorter than its lifetime"):
        StateHeadTimer(signer, 10)
    with pytest.raises(ConfigurationError, match="state_head_every_seconds"):
        ServerSettings(state_head_every_seconds=300, state_head_lifetime_seconds=300)


def test_a_gate_adopts_no_newer_head_that_names_an_older_policy_version(
    clock: FakeClock, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    authority = Authority.generate()
    store = MemoryStore()
    apply_policy(store, authority, ASK, created_by="ops", clock=clock)
    apply_policy(store, authority, Policy(), created_by="ops", clock=clock)
    assert HeadSigner(store, authority, clock=clock).sign().policy_version == 2

    def gate() -> HeadGuard:  # a gate process on this machine: the same head file
        fetch = store.get_state_head
        return HeadGuard(authority.trusted_keys(), fetch, HeadFile(tmp_path / "head.json"), clock)

    assert gate().current().policy_version == 2
    # The writer deletes version 2 and every stored head; a server with no memory of them signs version 1.
    store._policy_versions.pop()
    store._state_heads.clear()
    clock.advance(1)
    forgetful = HeadSigner(store, authority, clock=clock).sign()
    assert forgetful.policy_version == 1 and forgetful.issued_at > clock.now - timedelta(seconds=1)
    with caplog.at_level(logging.WARNING, logger="crossgate"):
        held = gate().current()
    assert held.policy_version == 2  # the newer head is not believed: version 1 stays rolled back
    assert "names policy version 1, older than version 2 in a head already seen (a rollback)" in caplog.text
    clock.advance(300)  # the last head it believes expires: nothing runs until the operator looks
    with pytest.raises(SignatureError) as stale:
        gate().current()
    assert stale.value.reason == "stale_head"
    # A head naming version 2 or newer again (the version signed anew) is adopted as before.
    apply_policy(store, authority, Policy(), created_by="ops", clock=clock)
    assert gate().current().policy_version == 2
