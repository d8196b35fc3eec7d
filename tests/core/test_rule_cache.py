"""The queue caches active standing rules per rules version; a change from any queue or process shows at once,
on a SQLite file and on PostgreSQL (whose rules version is a counter in the chain head's row, migration 007)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from crossgate import Policy, PolicyRule, ReviewQueue, ToolCall, VerdictKind, open_store
from crossgate.stores.memory import MemoryStore
from tests.support.postgres import database_url


def _call() -> ToolCall:
    return ToolCall(framework="test", tool="delete_ticket", args={"id": "t3"}, call_id="c1")


def _queue(db: str) -> ReviewQueue:
    policy = Policy(rules=(PolicyRule(name="ask-deletes", verdict=VerdictKind.ASK, tool="delete_ticket"),))
    return ReviewQueue(open_store(db), policy)


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A database several queues and processes open by the same string."""
    with database_url(request.param, tmp_path) as url:
        yield url


def test_a_rule_added_and_revoked_by_another_queue_on_the_database_applies_to_the_next_evaluate(db: str) -> None:
    first, second = _queue(db), _queue(db)
    assert first.evaluate(_call()).kind is VerdictKind.ASK  # fills the cache with no rules
    assert first.evaluate(_call()).kind is VerdictKind.ASK

    rule = second.add_rule(second.new_rule(effect=VerdictKind.DENY, tool="delete_ticket", message="never"))
    verdict = first.evaluate(_call())
    assert verdict.kind is VerdictKind.DENY
    assert verdict.rule == rule.id

    second.revoke_rule(rule.id, actor="admin")
    assert first.evaluate(_call()).kind is VerdictKind.ASK
    first.close()
    second.close()


@pytest.mark.parametrize("effect", [VerdictKind.DENY, VerdictKind.ALLOW])
def test_a_rule_added_and_revoked_in_another_process_applies_to_the_next_call(db: str, effect: VerdictKind) -> None:
    queue = _queue(db)
    # A standing deny must stop an allowed call; a standing allow must spare a call the policy asks about.
    before = VerdictKind.ALLOW if effect is VerdictKind.DENY else VerdictKind.ASK
    queue.policy = Policy(default=before)
    assert queue.submit(_call()).verdict.kind is before  # fills the cache; an allow enqueues its record
    script = textwrap.dedent(
        """
        import sys
        from crossgate import ReviewQueue, VerdictKind, open_store
        queue = ReviewQueue(open_store(sys.argv[1]))
        if sys.argv[2] == "add":
            print(queue.add_rule(queue.new_rule(effect=VerdictKind(sys.argv[3]), tool="delete_ticket")).id)
        else:
            queue.revoke_rule(sys.argv[3], actor="admin")
        queue.close()
        """
    )

    def other(*args: str) -> str:
        done = subprocess.run([sys.executable, "-c", script, db, *args], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    rule_id = other("add", effect.value)
    submission = queue.submit(_call())  # the very next call, with no wait in between
    assert submission.verdict.kind is effect
    assert submission.verdict.rule == rule_id
    other("revoke", rule_id)
    assert queue.submit(_call()).verdict.kind is before
    queue.close()


@pytest.fixture(params=["memory", "sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def any_db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """The memory store (``memory:``), or a database as ``db`` gives it."""
    if request.param == "memory":
        yield "memory:"
        return
    with database_url(request.param, tmp_path) as url:
        yield url


def test_the_cache_reads_the_rules_once_while_only_events_are_appended_and_again_after_a_rule_change(
    any_db: str,
) -> None:
    store = MemoryStore() if any_db == "memory:" else open_store(any_db)
    reads: list[int] = []
    list_rules = store.list_rules

    def counting(**kwargs: bool) -> list:  # type: ignore[type-arg]
        reads.append(1)
        return list_rules(**kwargs)

    store.list_rules = counting  # type: ignore[method-assign]
    queue = ReviewQueue(store, Policy(default=VerdictKind.ALLOW))
    queue.evaluate(_call())
    queue.evaluate(_call())
    assert len(reads) == 1
    for _ in range(3):
        queue.submit(_call())  # each records an event: the head moves, the rules do not
    queue.record_outcome(None, ran=True, call=_call())
    assert [e.kind for e in queue.events()] == ["auto_allowed"] * 3 + ["ran"]  # committed, the head moved
    queue.evaluate(_call())
    assert len(reads) == 1
    rule = queue.add_rule(queue.new_rule(effect=VerdictKind.DENY, tool="delete_ticket"))
    assert queue.evaluate(_call()).kind is VerdictKind.DENY
    assert len(reads) == 2
    queue.revoke_rule(rule.id, actor="admin")
    assert queue.evaluate(_call()).kind is VerdictKind.ALLOW
    assert len(reads) == 3
    queue.close()
