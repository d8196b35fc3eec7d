"""Signed audit checkpoints: who signs them, when, what the timer does, and what verifying against them refuses."""

from __future__ import annotations

import logging
import sqlite3
import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from crossgate import Approve, ConfigurationError, Policy, PolicyRule, ReviewQueue, StoreError, ToolCall, VerdictKind
from crossgate.authority import Authority, CheckpointClaims, TrustedKeys, policy_version_claims
from crossgate.checkpoints import (
    Checkpointer,
    CheckpointTimer,
    export_checkpoint,
    read_exported,
    sign_checkpoint,
    verify_signed_log,
)
from crossgate.stores.sqlite import SqliteStore

POLICY = Policy(rules=(PolicyRule(name="deletes", verdict=VerdictKind.ASK, tool="delete_*"),))


def call(ticket: str) -> ToolCall:
    return ToolCall(framework="langgraph", tool="delete_ticket", args={"id": ticket}, run="r1")


@pytest.fixture
def store(tmp_path: Path) -> SqliteStore:
    made = SqliteStore(tmp_path / "q.db")
    made.setup()
    return made


def decided(queue: ReviewQueue, ticket: str) -> str:
    request = queue.submit(call(ticket)).request
    assert request is not None
    queue.decide(request.id, Approve(), reviewer="ann")
    return request.id


def test_a_queue_with_an_authority_signs_each_decision_rule_and_approval_as_its_own(
    store: SqliteStore, authority: Authority
) -> None:
    four_eyes = Policy(rules=(PolicyRule(name="two", verdict=VerdictKind.ASK, tool="pay", approvals=2),))
    queue = ReviewQueue(store, four_eyes, authority=authority)
    request = queue.submit(ToolCall(framework="langgraph", tool="pay", args={"n": 1})).request
    assert request is not None
    queue.decide(request.id, Approve(), reviewer="ann")  # each approval of the two is an "approved" event,
    queue.decide(request.id, Approve(), reviewer="bob")  # and the last one decides
    queue.add_rule(queue.new_rule(effect=VerdictKind.ALLOW, tool="read_*"), actor="ann")
    signed = {e.seq: e.kind for e in store.list_events()}
    checkpoints = store.list_checkpoints()
    assert [(signed[c.seq], c.authored) for c in checkpoints] == [
        ("approved", True),
        ("approved", True),
        ("decided", True),
        ("rule_added", True),
    ]
    for checkpoint in checkpoints:
        claims = authority.trusted_keys().verify_checkpoint(checkpoint.token)
        assert claims.authored and claims.seq == checkpoint.seq
        assert claims.head_hash == next(e.hash for e in store.list_events() if e.seq == checkpoint.seq)
    assert verify_signed_log(store, authority.trusted_keys()).ok


def test_a_queue_without_one_signs_nothing_and_its_decisions_fail_the_signed_check(
    store: SqliteStore, authority: Authority
) -> None:
    queue = ReviewQueue(store, POLICY)
    decided(queue, "t1")
    assert store.list_checkpoints() == []
    Checkpointer(store, authority).sign_head()  # a head checkpoint does not vouch for the decision in it
    report = verify_signed_log(store, authority.trusted_keys())
    assert not report.ok and "event 2 (decided by ann) has no checkpoint signed by the process" in (
        report.problem or ""
    )
    assert verify_signed_log(store, authority.trusted_keys(), since=2).ok  # a log from before the authority


def test_sign_head_signs_only_a_chain_that_checks_out_and_only_when_it_moved(
    store: SqliteStore, authority: Authority
) -> None:
    queue = ReviewQueue(store, POLICY, authority=authority)
    first = Checkpointer(store, authority).sign_head()
    assert (first.seq, first.authored) == (0, False)  # an empty log's head
    decided(queue, "t1")
    again = Checkpointer(store, authority).sign_head()
    assert again.seq == 2 and again.authored  # the decision's own checkpoint is the latest already
    queue.submit(call("t2"))
    head = Checkpointer(store, authority).sign_head()
    assert (head.seq, head.authored) == (3, False)
    with sqlite3.connect(store.path) as conn:
        conn.execute("UPDATE events SET actor = 'mallory' WHERE seq = 3")
    with pytest.raises(StoreError, match="refusing to sign its head"):
        Checkpointer(store, authority).sign_head()


def test_sign_head_skips_a_stored_checkpoint_that_does_not_verify(
    store: SqliteStore, authority: Authority, attacker: Authority
) -> None:
    queue = ReviewQueue(store, POLICY, authority=authority)
    decided(queue, "t1")
    store.insert_checkpoint(sign_checkpoint(attacker, 9, "ab" * 32, at=queue.now()))
    assert Checkpointer(store, authority).sign_head().seq == 2
    report = verify_signed_log(store, authority.trusted_keys())
    assert not report.ok and "the stored checkpoint of event 9 does not verify" in (report.problem or "")
    assert report.bad_seq == 9


def test_the_timer_signs_the_head_while_it_moves(store: SqliteStore, authority: Authority) -> None:
    queue = ReviewQueue(store, POLICY)
    timer = CheckpointTimer(Checkpointer(store, authority), interval=60)
    assert timer.tick() is not None and timer.tick() is None  # the head has not moved
    queue.submit(call("t1"))
    ticked = timer.tick()
    assert ticked is not None and ticked.seq == 1
    timer.interval = 0.05
    timer.start()
    queue.submit(call("t2"))
    deadline = time.monotonic() + 10
    while (latest := store.latest_checkpoint()) is None or latest.seq < 2:
        assert time.monotonic() < deadline, "the timer did not sign the new head"
        time.sleep(0.02)
    timer.stop()
    assert verify_signed_log(store, authority.trusted_keys()).ok


def test_the_timer_logs_and_signs_nothing_over_a_broken_chain(
    store: SqliteStore, authority: Authority, caplog: pytest.LogCaptureFixture
) -> None:
    ReviewQueue(store, POLICY).submit(call("t1"))
    with sqlite3.connect(store.path) as conn:
        conn.execute("UPDATE events SET payload = '{}' WHERE seq = 1")
    with caplog.at_level(logging.ERROR, logger="crossgate.checkpoints"):
        assert CheckpointTimer(Checkpointer(store, authority)).tick() is None
    assert store.list_checkpoints() == []
    assert "no audit checkpoint signed: the audit log is broken" in caplog.text


def test_a_timer_needs_a_positive_interval(store: SqliteStore, authority: Authority) -> None:
    with pytest.raises(ConfigurationError):
        CheckpointTimer(Checkpointer(store, authority), interval=0)


def test_an_exported_checkpoint_reads_back_and_nothing_else_does(authority: Authority) -> None:
    checkpoint = sign_checkpoint(authority, 4, "cd" * 32, at=datetime.now(UTC))
    text = export_checkpoint(checkpoint)
    assert "\n" not in text
    assert read_exported(text) == checkpoint.token
    assert read_exported(checkpoint.token + "\n") == checkpoint.token
    for bad in ('{"format": "other", "token": "x"}', "{not json", '{"format": "crossgate-checkpoint/1"}'):
        with pytest.raises(ConfigurationError):
            read_exported(bad)


def test_an_exported_checkpoint_of_another_key_or_kind_is_refused(
    store: SqliteStore, authority: Authority, attacker: Authority
) -> None:
    queue = ReviewQueue(store, POLICY, authority=authority)
    decided(queue, "t1")
    trusted = TrustedKeys.parse(authority.public_key.pin)
    head = store.audit_head()
    own = attacker.sign(CheckpointClaims(seq=head[0], head_hash=head[1], at=queue.now()))
    report = verify_signed_log(store, trusted, exported=[own])
    assert not report.ok and "the exported checkpoint does not verify" in (report.problem or "")
    assert "not pinned" in (report.problem or "")
    policy_token = authority.sign(
        policy_version_claims(version=1, document=POLICY, created_by="x", created_at=queue.now())
    )
    report = verify_signed_log(store, trusted, exported=[policy_token])
    assert not report.ok and "not a crossgate.audit_checkpoint.v1" in (report.problem or "")


def test_a_log_with_events_and_no_checkpoint_is_not_tied_to_the_authority(
    store: SqliteStore, authority: Authority
) -> None:
    ReviewQueue(store, POLICY).submit(call("t1"))
    report = verify_signed_log(store, authority.trusted_keys())
    assert not report.ok and "no signed checkpoint ties this log to the authority" in (report.problem or "")
