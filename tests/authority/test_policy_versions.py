"""One policy, stored and signed: applied by the key's holder, evaluated by every queue that has none of its own.

The "agent" here holds the store (a SQLite file it can write) and its own pinned public key, never the
private key. Each attempt to make it evaluate another policy than the operator signed is refused, and the
refusal is recorded.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from crossgate import (
    Approve,
    ConfigurationError,
    Policy,
    PolicyRule,
    RequestCancelledError,
    RequestQuery,
    RequestStatus,
    ReviewQueue,
    ToolCall,
    VerdictKind,
)
from crossgate.authority import Authority, TrustedKeys, policy_version_claims
from crossgate.checkpoints import verify_signed_log
from crossgate.policy import policy_from_dict
from crossgate.policy.versions import (
    POLICY_APPLIED,
    POLICY_REFUSED,
    REFUSED_RULE,
    apply_policy,
    load_current_policy,
    policy_diff,
    policy_document,
    policy_from_document,
    policy_text,
)
from crossgate.stores.sqlite import SqliteStore

ASK_DELETES = PolicyRule(name="deletes", verdict=VerdictKind.ASK, tool="delete_*", reason="Deleting cannot be undone.")
ALLOW_READS = PolicyRule(name="reads", verdict=VerdictKind.ALLOW, tool="read_*")
OPERATOR_POLICY = Policy(rules=(ASK_DELETES, ALLOW_READS), default=VerdictKind.DENY)
FORGED_POLICY = Policy(rules=(PolicyRule(name="everything", verdict=VerdictKind.ALLOW, tool="*"),))


REASONS = {"document": "binding", "resigned": "unknown_key", "replayed": "binding", "unsigned": "malformed"}


def delete(ticket: str = "t1") -> ToolCall:
    return ToolCall(framework="openai-agents", tool="delete_ticket", args={"id": ticket}, run="run-1")


def read(ticket: str = "t1") -> ToolCall:
    return ToolCall(framework="openai-agents", tool="read_ticket", args={"id": ticket}, run="run-1")


@pytest.fixture
def db(tmp_path: Path) -> Path:
    return tmp_path / "crossgate.db"


@pytest.fixture
def operator_store(db: Path) -> Iterator[SqliteStore]:
    store = SqliteStore(db)
    store.setup()
    yield store
    store.close()


@pytest.fixture
def agent(db: Path, operator_store: SqliteStore, trusted: TrustedKeys) -> Iterator[ReviewQueue]:
    """The gated process: its own connection to the file, and only the pinned public key."""
    queue = ReviewQueue(SqliteStore(db), trusted=trusted)
    yield queue
    queue.close()


def applied(store: SqliteStore, authority: Authority, policy: Policy = OPERATOR_POLICY, by: str = "ops") -> int:
    return apply_policy(store, authority, policy, created_by=by, source="policy.yaml").version.version


def sql(db: Path, statement: str, *params: object) -> None:
    with sqlite3.connect(db) as conn:
        conn.execute(statement, params)


def refusals(queue: ReviewQueue) -> list[dict[str, object]]:
    return [e.payload for e in queue.events() if e.kind == POLICY_REFUSED]


# applying -------------------------------------------------------------------------------------------
def test_apply_stores_the_next_version_signed_and_records_who_and_the_diff(
    operator_store: SqliteStore, authority: Authority, trusted: TrustedKeys
) -> None:
    assert applied(operator_store, authority, Policy(rules=(ASK_DELETES,)), by="ann") == 1
    second = apply_policy(operator_store, authority, OPERATOR_POLICY, created_by="bob", source="v2.yaml")
    assert second.version.version == 2 and not second.unchanged
    current = load_current_policy(operator_store, trusted)
    assert current is not None
    assert current.policy == OPERATOR_POLICY and current.claims.created_by == "bob"
    event = operator_store.list_events()[-1]
    assert event.kind == POLICY_APPLIED and event.actor == "bob"
    assert event.payload["version"] == 2 and event.payload["previous_version"] == 1
    assert event.payload["changes"] == {
        "added": ["reads"],
        "removed": [],
        "changed": [],
        "moved": False,
        "settings": ["default"],
    }
    assert "+- name: reads" in str(event.payload["diff"]) and "+default: deny" in str(event.payload["diff"])
    assert trusted.verify(str(event.payload["token"])) == current.claims
    report = verify_signed_log(operator_store, trusted)
    assert report.ok and report.checkpoints == 2  # each version's event has its authored checkpoint


def test_applying_the_current_policy_again_stores_nothing(operator_store: SqliteStore, authority: Authority) -> None:
    applied(operator_store, authority)
    head = operator_store.audit_head()
    again = apply_policy(operator_store, authority, OPERATOR_POLICY, created_by="ann")
    assert again.unchanged and again.version.version == 1 and again.diff.empty
    assert operator_store.audit_head() == head


def test_the_readable_form_reads_back_as_the_same_policy() -> None:
    policy = policy_from_dict(
        {
            "default_timeout_seconds": 600,
            "rules": [
                {"name": "no-prod", "tool": "delete_*", "verdict": "deny", "where": {"env": "prod"}, "reason": "No."},
                {"name": "rm", "tool": "shell", "verdict": "ask", "where": [{"arg": "cmd", "regex": "^rm "}]},
                {"name": "eq", "tool": "pay", "verdict": "ask", "where": [{"arg": "amount", "equals": 1e20}]},
            ],
        }
    )
    assert policy_from_dict(yaml.safe_load(policy_text(policy))) == policy
    assert policy_from_document(policy_document(policy)) == policy
    assert policy_diff(policy, policy).empty


# evaluating the stored version ------------------------------------------------------------------------
def test_a_queue_without_a_policy_evaluates_the_stored_version_and_follows_new_ones(
    operator_store: SqliteStore, authority: Authority, agent: ReviewQueue
) -> None:
    assert agent.policy_version is None
    assert agent.evaluate(read()).kind is VerdictKind.ASK  # nothing stored: ask for every call
    applied(operator_store, authority)
    assert agent.policy_version == 1
    assert agent.evaluate(read()).kind is VerdictKind.ALLOW
    assert agent.evaluate(delete()).kind is VerdictKind.ASK
    assert agent.evaluate(ToolCall(framework="openai-agents", tool="mail", args={})).kind is VerdictKind.DENY
    applied(operator_store, authority, Policy(rules=(ASK_DELETES,)))  # another process applies version 2
    assert agent.policy_version == 2
    assert agent.evaluate(read()).kind is VerdictKind.ASK


@pytest.mark.parametrize(
    "tamper",
    [
        "document",  # the row's document edited: allow everything
        "resigned",  # the attacker's own key signs the forged document
        "replayed",  # version 1's genuine token on version 2's forged document
        "unsigned",  # no token at all
    ],
)
def test_a_replaced_stored_policy_is_refused_and_no_call_runs_under_it(
    db: Path,
    operator_store: SqliteStore,
    authority: Authority,
    attacker: Authority,
    agent: ReviewQueue,
    tamper: str,
) -> None:
    applied(operator_store, authority)
    request = agent.submit(delete("t1")).request
    assert request is not None
    agent.decide(request.id, Approve(), reviewer="ann")  # approved while the policy was the operator's
    forged = policy_document(FORGED_POLICY)
    if tamper == "document":
        sql(db, "UPDATE policy_versions SET document = ? WHERE version = 1", forged)
    elif tamper == "resigned":
        claims = policy_version_claims(version=1, document=FORGED_POLICY, created_by="ops", created_at=agent.now())
        sql(db, "UPDATE policy_versions SET document = ?, token = ? WHERE version = 1", forged, attacker.sign(claims))
    elif tamper == "replayed":
        genuine = operator_store.get_policy_version(1)
        assert genuine is not None
        sql(
            db,
            "INSERT INTO policy_versions (version, created_at, created_by, digest, source, document, token)"
            " VALUES (2, ?, 'ops', ?, NULL, ?, ?)",
            genuine.created_at.isoformat(),
            genuine.digest,
            forged,
            genuine.token,
        )
    else:
        sql(db, "UPDATE policy_versions SET document = ?, token = '' WHERE version = 1", forged)
    sql(db, "UPDATE rules_version SET version = version + 1")  # as any stored change does

    verdict = agent.evaluate(read())
    assert verdict.kind is VerdictKind.DENY and verdict.rule == REFUSED_RULE
    assert "stored policy version" in (verdict.reason or "") and "is refused" in (verdict.reason or "")
    submission = agent.submit(delete("t2"))  # the forged policy would allow it outright
    assert submission.verdict.kind is VerdictKind.DENY and submission.request is None
    with pytest.raises(RequestCancelledError):
        agent.mark_applied(request.id, args={"id": "t1"})  # the approval does not run under it either
    closed = agent.get(request.id)
    assert closed.status is RequestStatus.CANCELLED and "is refused" in (closed.closed_reason or "")
    other = agent.submit(delete("t9"))
    assert other.request is None  # nothing to approve under it either
    agent.submit(read("t3"))
    assert [r["reason"] for r in refusals(agent)] == [REASONS[tamper]]  # once, however many calls it refused
    denied = [e for e in agent.events() if e.kind == "auto_denied"]
    assert [e.payload["args"] for e in denied] == [{"id": "t2"}, {"id": "t9"}, {"id": "t3"}]
    assert all(e.payload["rule"] == REFUSED_RULE for e in denied)
    assert not verify_signed_log(operator_store, authority.trusted_keys()).ok


def test_a_refused_policy_cannot_be_lifted_by_a_standing_allow_rule(
    db: Path, operator_store: SqliteStore, authority: Authority, agent: ReviewQueue
) -> None:
    applied(operator_store, authority)
    agent.add_rule(agent.new_rule(effect=VerdictKind.ALLOW, tool="*"), actor="ann")
    sql(db, "UPDATE policy_versions SET document = ?", policy_document(FORGED_POLICY))
    sql(db, "UPDATE rules_version SET version = version + 1")
    assert agent.evaluate(delete()).kind is VerdictKind.DENY
    assert agent.policy.rules[0].name == REFUSED_RULE and agent.policy_version is None


def test_the_agent_refuses_a_policy_rolled_back_or_removed_after_it_verified_a_newer_one(
    db: Path, operator_store: SqliteStore, authority: Authority, agent: ReviewQueue
) -> None:
    applied(operator_store, authority)
    applied(operator_store, authority, Policy(rules=(ASK_DELETES,)))
    assert agent.policy_version == 2
    sql(db, "DELETE FROM policy_versions WHERE version = 2")  # back to the signed version 1
    sql(db, "UPDATE rules_version SET version = version + 1")
    assert "older than version 2" in (agent.evaluate(read()).reason or "")
    sql(db, "DELETE FROM policy_versions")
    sql(db, "UPDATE rules_version SET version = version + 1")
    assert "holds no policy" in (agent.evaluate(read()).reason or "")
    assert len(refusals(agent)) == 2
    report = verify_signed_log(operator_store, authority.trusted_keys())
    assert not report.ok and "is gone from the store" in (report.problem or "")


def test_a_process_that_pins_no_key_cannot_evaluate_a_stored_policy(
    db: Path, operator_store: SqliteStore, authority: Authority, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CROSSGATE_AUTHORITY_PUBKEY", raising=False)
    monkeypatch.delenv("CROSSGATE_AUTHORITY_PUBKEY_FILE", raising=False)
    applied(operator_store, authority)
    queue = ReviewQueue(SqliteStore(db))
    try:
        with pytest.raises(ConfigurationError, match="pins no authority public key"):
            queue.submit(delete())
        assert queue.store.list_requests(RequestQuery()).items == []
    finally:
        queue.close()


def test_the_pinned_key_may_come_from_the_environment(
    db: Path, operator_store: SqliteStore, authority: Authority, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CROSSGATE_AUTHORITY_PUBKEY", authority.public_key.pin)
    applied(operator_store, authority)
    queue = ReviewQueue(SqliteStore(db))
    try:
        assert queue.policy == OPERATOR_POLICY and queue.policy_version == 1
    finally:
        queue.close()


def test_a_local_policy_is_evaluated_as_given_and_says_it_ignores_the_stored_one(
    db: Path, operator_store: SqliteStore, authority: Authority, caplog: pytest.LogCaptureFixture
) -> None:
    applied(operator_store, authority)
    queue = ReviewQueue(SqliteStore(db), FORGED_POLICY)
    try:
        with caplog.at_level(logging.WARNING, logger="crossgate.policy.versions"):
            assert queue.evaluate(delete()).kind is VerdictKind.ALLOW
            queue.evaluate(delete())
        assert queue.policy_version is None
        warnings = [r.getMessage() for r in caplog.records]
        assert warnings == [
            "crossgate: this queue evaluates a local policy (development); the store's signed policy version 1 "
            "is not used"
        ]
    finally:
        queue.close()


def test_decisions_made_under_a_stored_version_can_name_it(
    operator_store: SqliteStore, authority: Authority, agent: ReviewQueue
) -> None:
    applied(operator_store, authority)
    applied(operator_store, authority, Policy(rules=(ASK_DELETES,), default=VerdictKind.DENY))
    assert agent.policy_version == 2
    assert json.loads(operator_store.get_policy_version(2).document)["default"] == "deny"  # type: ignore[union-attr]


def test_the_stored_version_is_verified_once_until_it_changes(
    operator_store: SqliteStore, authority: Authority, agent: ReviewQueue, monkeypatch: pytest.MonkeyPatch
) -> None:
    import crossgate.policy.versions as versions

    checked: list[int] = []
    original = versions.verify_policy_version

    def counting(stored: versions.PolicyVersion, trusted: TrustedKeys) -> versions.VerifiedPolicy:
        checked.append(stored.version)
        return original(stored, trusted)

    monkeypatch.setattr(versions, "verify_policy_version", counting)
    applied(operator_store, authority)
    for _ in range(50):
        agent.evaluate(read())
    agent.add_rule(agent.new_rule(effect=VerdictKind.ALLOW, tool="list_*"), actor="ann")  # moves rules_version
    agent.evaluate(read())
    assert checked == [1]
    applied(operator_store, authority, Policy(rules=(ASK_DELETES,)))
    agent.evaluate(read())
    assert checked == [1, 2]
