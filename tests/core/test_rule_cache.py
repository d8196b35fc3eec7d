"""The queue caches active standing rules per audit head; a change from any queue or process shows at once."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from crossgate import Policy, PolicyRule, ReviewQueue, ToolCall, VerdictKind, open_store
from crossgate.stores.memory import MemoryStore


def _call() -> ToolCall:
    return ToolCall(framework="test", tool="delete_ticket", args={"id": "t3"}, call_id="c1")


def _queue(path: Path) -> ReviewQueue:
    policy = Policy(rules=(PolicyRule(name="ask-deletes", verdict=VerdictKind.ASK, tool="delete_ticket"),))
    return ReviewQueue(open_store(str(path)), policy)


def test_a_rule_added_and_revoked_by_another_queue_on_the_file_applies_to_the_next_evaluate(tmp_path: Path) -> None:
    first, second = _queue(tmp_path / "q.db"), _queue(tmp_path / "q.db")
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


def test_a_rule_added_and_revoked_in_another_process_applies_to_the_next_evaluate(tmp_path: Path) -> None:
    path = tmp_path / "q.db"
    queue = _queue(path)
    assert queue.evaluate(_call()).kind is VerdictKind.ASK
    script = textwrap.dedent(
        """
        import sys
        from crossgate import ReviewQueue, VerdictKind, open_store
        queue = ReviewQueue(open_store(sys.argv[1]))
        if sys.argv[2] == "add":
            print(queue.add_rule(queue.new_rule(effect=VerdictKind.ALLOW, tool="delete_ticket")).id)
        else:
            queue.revoke_rule(sys.argv[3], actor="admin")
        queue.close()
        """
    )

    def other(*args: str) -> str:
        done = subprocess.run([sys.executable, "-c", script, str(path), *args], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        return done.stdout.strip()

    rule_id = other("add")
    verdict = queue.evaluate(_call())
    assert verdict.kind is VerdictKind.ALLOW
    assert verdict.rule == rule_id
    other("revoke", rule_id)
    assert queue.evaluate(_call()).kind is VerdictKind.ASK
    queue.close()


def test_the_cache_reads_the_rules_once_while_nothing_changes_and_again_after_any_change() -> None:
    store = MemoryStore()
    reads: list[int] = []
    list_rules = store.list_rules

    def counting(**kwargs: bool) -> list:  # type: ignore[type-arg]
        reads.append(1)
        return list_rules(**kwargs)

    store.list_rules = counting  # type: ignore[method-assign]
    queue = ReviewQueue(store, Policy())
    queue.evaluate(_call())
    queue.evaluate(_call())
    assert len(reads) == 1
    queue.submit(_call())  # evaluates from the cache, then records an event: the head moves
    assert len(reads) == 1
    queue.evaluate(_call())
    assert len(reads) == 2
