"""Benchmark: what evaluating the stored, signed policy costs per call, against the same policy held locally.

    python -m tests.benchmarks.bench_policy_versions

``ReviewQueue.evaluate`` on one SQLite file, for a call of a tool with 40 rules in the policy (the queue
a gate uses on every call):

- local: ``ReviewQueue(store, policy)``, the policy given in code (the baseline);
- stored: ``ReviewQueue(store, trusted=keys)``, the same policy applied as signed version 1;
- local / stored, store changed: the same two, with the store's ``rules_version`` moved before each call
  (what every event does on PostgreSQL): both list the standing rules again, and the stored one reads the
  version's row too; it parses and verifies it again only when the row differs, which it does not here;
- verify: ``verify_policy_version`` alone (parse, digest, Ed25519), what a changed row costs once
  (timed over a twentieth of the calls).

The rows alternate in short rounds in one process; CPU time of the process (the machine is shared),
medians over rounds and the ratio to local.
Environment: ``CG_BENCH_CALLS`` (calls per round, default 2000), ``CG_BENCH_ROUNDS`` (default 7).
Not collected by pytest.
"""

from __future__ import annotations

import os
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from crossgate import Policy, PolicyRule, ReviewQueue, ToolCall, VerdictKind
from crossgate.authority import Authority
from crossgate.policy.versions import apply_policy, verify_policy_version
from crossgate.stores.sqlite import SqliteStore

CALLS = int(os.environ.get("CG_BENCH_CALLS", "2000"))
ROUNDS = int(os.environ.get("CG_BENCH_ROUNDS", "7"))
POLICY = Policy(
    rules=tuple(
        PolicyRule(
            name=f"r{i}", verdict=[VerdictKind.ALLOW, VerdictKind.ASK, VerdictKind.DENY][i % 3], tool=f"tool_{i}"
        )
        for i in range(40)
    )
)
CALL = ToolCall(framework="langgraph", tool="tool_7", args={"id": "t3", "note": "x" * 40})


def per_call_us(run: Callable[[], object], before: Callable[[], object] | None = None, calls: int = CALLS) -> float:
    """Microseconds per call of ``run`` over ``calls`` calls (``before`` runs ahead of each, untimed)."""
    total = 0.0
    for _ in range(calls):
        if before is not None:
            before()
        start = time.process_time()
        run()
        total += time.process_time() - start
    return total / calls * 1e6


def main() -> None:
    authority = Authority.generate()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "bench.db"
        store = SqliteStore(path)
        store.setup()
        apply_policy(store, authority, POLICY, created_by="bench")
        local = ReviewQueue(SqliteStore(path), POLICY)
        stored = ReviewQueue(SqliteStore(path), trusted=authority.trusted_keys())
        assert local.evaluate(CALL) == stored.evaluate(CALL) and stored.policy_version == 1
        bumper = sqlite3.connect(path, isolation_level=None)

        def bump() -> None:
            bumper.execute("UPDATE rules_version SET version = version + 1")

        version = store.get_policy_version()
        assert version is not None
        trusted = authority.trusted_keys()
        rows: dict[str, list[float]] = {
            "local": [],
            "stored": [],
            "local, store changed": [],
            "stored, store changed": [],
            "verify": [],
        }
        for _ in range(ROUNDS):
            rows["local"].append(per_call_us(lambda: local.evaluate(CALL)))
            rows["stored"].append(per_call_us(lambda: stored.evaluate(CALL)))
            rows["local, store changed"].append(per_call_us(lambda: local.evaluate(CALL), bump))
            rows["stored, store changed"].append(per_call_us(lambda: stored.evaluate(CALL), bump))
            rows["verify"].append(per_call_us(lambda: verify_policy_version(version, trusted), calls=CALLS // 20 or 1))
        bumper.close()
        for queue in (local, stored):
            queue.close()
        store.close()
    base = statistics.median(rows["local"])
    print(f"evaluate per call, {len(POLICY.rules)} rules, SQLite, median of {ROUNDS} rounds of {CALLS} calls")
    print(f"{'row':<24}{'µs/call':>10}{'ratio to local':>16}")
    for name, values in rows.items():
        median = statistics.median(values)
        print(f"{name:<24}{median:>10.1f}{median / base:>16.2f}")


if __name__ == "__main__":
    main()
