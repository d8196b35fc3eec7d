"""PostgreSQL's rules version (migration 007): a counter in the chain head's row that moves with each standing
rule added or revoked and each policy version stored, and with nothing else, so a queue's cache of rules and
policy survives the events, requests and decisions in between."""

from __future__ import annotations

import pytest

from crossgate import ReviewQueue, ToolCall, VerdictKind
from crossgate.errors import ConflictError
from crossgate.model import Approve
from crossgate.stores.postgres import PostgresStore
from crossgate.testing.signed_state import applied, make_version


def test_only_rule_and_policy_changes_move_the_rules_version(pg_store: PostgresStore, pg_queue: ReviewQueue) -> None:
    start = pg_store.rules_version()
    submission = pg_queue.submit(ToolCall(framework="test", tool="delete_ticket", args={"id": "t1"}, run="r"))
    assert submission.request is not None
    pg_queue.decide(submission.request.id, Approve(), reviewer="ann")
    pg_queue.record_outcome(None, ran=True, call=ToolCall(framework="test", tool="read_ticket", args={}))
    pg_store.flush_events()
    assert pg_store.audit_head()[0] >= 3 and pg_store.rules_version() == start

    rule = pg_queue.add_rule(pg_queue.new_rule(effect=VerdictKind.DENY, tool="shell"), actor="ann")
    assert pg_store.rules_version() == start + 1
    pg_queue.revoke_rule(rule.id, actor="ann")
    assert pg_store.rules_version() == start + 2
    assert pg_store.revoke_rule(rule, applied(0)) is None  # already revoked: nothing changes
    assert pg_store.rules_version() == start + 2

    pg_store.insert_policy_version(make_version(1), applied(1))
    assert pg_store.rules_version() == start + 3
    with pytest.raises(ConflictError):
        pg_store.insert_policy_version(make_version(3), applied(3))  # not the next one: rolled back, bump too
    assert pg_store.rules_version() == start + 3
    assert pg_queue.verify_audit().ok
