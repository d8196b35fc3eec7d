"""Policy evaluation: p50/p99 per call at 10, 100 and 1,000 rules, indexed against the linear scan, same run.

    python -m tests.benchmarks.bench_policy

Each policy has ``n`` rules on distinct tools (``tool_0`` … ``tool_{n-1}``; verdicts mixed), a tenth of
them on globs (``group_7_*``, ``*_7_suffix``) and one ``*`` rule, so every branch of the index is used;
"with conditions" gives each rule three argument conditions (glob, regex, one_of) the calls sometimes meet.
The calls (``CG_BENCH_POLICY_CALLS``, default 20,000) pick tools at random, a few unknown to the policy,
against ``n / 10`` standing rules. Each call is timed on its own: ``Policy.evaluate`` with the standing
rules indexed as the queue passes them, and the reference linear scan (``tests/policy/linear.py``) on the
same calls, each over two passes: the first meets every tool name and pattern for the first time (the
per-tool candidate cache is filled, RE2 builds its DFA states), the second is the steady state a
long-running gate sees, and gives the figures and ratios. Then the two pathological patterns of issue 11
(a regex and a path glob a backtracking engine takes minutes on) are timed through ``Policy.evaluate``.
Not collected by pytest.
"""

from __future__ import annotations

import gc
import os
import random
import statistics
import sys
import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from crossgate.model import RememberMatch, StandingRule, ToolCall, VerdictKind
from crossgate.policy import ArgCondition, MatchKind, Policy, PolicyRule
from crossgate.policy.index import StandingRuleIndex
from tests.policy.linear import naive_evaluate

SIZES = [int(s) for s in os.environ.get("CG_BENCH_POLICY_SIZES", "10,100,1000").split(",")]
CALLS = int(os.environ.get("CG_BENCH_POLICY_CALLS", "20000"))
GOAL_P50_US, GOAL_P99_US, GOAL_PATTERN_MS = 20.0, 100.0, 10.0
NOW = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)
VERDICTS = [VerdictKind.ALLOW, VerdictKind.ASK, VerdictKind.DENY]


def build(n: int, conditions: bool, rng: random.Random) -> tuple[Policy, list[StandingRule], list[ToolCall]]:
    rules = []
    for i in range(n):
        tool = (f"group_{i}_*" if i % 20 == 9 else f"*_{i}_suffix") if i % 10 == 9 else f"tool_{i}"
        where = (
            (
                ArgCondition(arg="command", kind=MatchKind.GLOB, pattern=f"run {i} *"),
                ArgCondition(arg="query", kind=MatchKind.REGEX, pattern=rf"(?i)\bdrop\s+table_{i}\b"),
                ArgCondition(arg="id", kind=MatchKind.ONE_OF, values=(f"t{i}", f"u{i}")),
            )
            if conditions
            else ()
        )
        rules.append(PolicyRule(name=f"r{i}", verdict=VERDICTS[i % 3], tool=tool, where=where))
    rules.append(PolicyRule(name="everything", verdict=VerdictKind.ASK, tool="*", where=rules[0].where[:1]))
    standing = [
        StandingRule(
            id=f"s{k}",
            effect=VerdictKind.ALLOW,
            tool=f"tool_{rng.randrange(n)}",
            match=RememberMatch.TOOL,
            created_at=NOW - timedelta(minutes=k),
        )
        for k in range(max(1, n // 10))
    ]
    calls = []
    for _ in range(CALLS):
        i = rng.randrange(n)
        tool = rng.choice([f"tool_{i}", f"tool_{i}", f"group_{i}_x", f"a_{i}_suffix", f"unknown_{i}"])
        hit = rng.random() < 0.5
        args = {
            "command": f"run {i} now" if hit else "ls -la",
            "query": f"DROP TABLE table_{i}" if hit else "select 1",
            "id": f"t{i}" if hit else "x",
        }
        calls.append(ToolCall(framework="langgraph", tool=tool, args=args, run="r1"))
    return Policy(rules=tuple(rules)), standing, calls


def timed(function: Callable[[ToolCall], object], calls: list[ToolCall]) -> list[float]:
    """Microseconds per call, each call timed on its own."""
    gc.collect()
    clock = time.perf_counter_ns
    out = []
    for call in calls:
        start = clock()
        function(call)
        out.append((clock() - start) / 1000)
    return out


def p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def evaluation() -> list[tuple[int, bool, float, float]]:
    print(f"policy evaluation, µs per call ({CALLS} calls each; indexed vs the linear scan in the same run)")
    print("steady state: the second pass over the calls; first pass: each tool name and pattern met for the first time")
    header = ("rules", "conditions", "p50", "p99", "1st pass p99", "linear p50", "linear p99", "p50 ratio", "p99 ratio")
    print("  ".join(f"{h:>12}" for h in header))
    results = []
    for n in SIZES:
        for conditions in (False, True):
            policy, standing, calls = build(n, conditions, random.Random(n))
            index = StandingRuleIndex(standing)
            for call in calls[:200]:  # the same verdicts
                assert policy.evaluate(call, index, now=NOW) == naive_evaluate(policy, call, standing, NOW)
            first = timed(lambda c: policy.evaluate(c, index, now=NOW), calls)  # noqa: B023
            fast = timed(lambda c: policy.evaluate(c, index, now=NOW), calls)  # noqa: B023
            timed(lambda c: naive_evaluate(policy, c, standing, NOW), calls)  # noqa: B023
            slow = timed(lambda c: naive_evaluate(policy, c, standing, NOW), calls)  # noqa: B023
            row = (p(fast, 0.5), p(fast, 0.99), p(first, 0.99), p(slow, 0.5), p(slow, 0.99))
            results.append((n, conditions, row[0], row[1]))
            cells = [f"{n:>12}", f"{'yes' if conditions else 'no':>12}", *(f"{v:>12.1f}" for v in row)]
            cells += [f"{row[3] / row[0]:>11.1f}×", f"{row[4] / row[1]:>11.1f}×"]
            print("  ".join(cells))
    return results


def build_shared(n: int, rng: random.Random) -> tuple[Policy, list[ToolCall]]:
    """``n`` rules, half on one tool (``Bash``) with a glob, a path glob or a regex on its arguments."""
    rules = []
    for i in range(n):
        if i % 2:
            rules.append(PolicyRule(name=f"r{i}", verdict=VERDICTS[i % 3], tool=f"tool_{i}"))
            continue
        condition = [
            ArgCondition(arg="command", kind=MatchKind.GLOB, pattern=f"npm run task{i} *"),
            ArgCondition(arg="path", kind=MatchKind.PATH, pattern=f"src/pkg{i}/**"),
            ArgCondition(arg="command", kind=MatchKind.REGEX, pattern=rf"(?i)\bdeploy\s+env_{i}\b"),
        ][(i // 2) % 3]
        rules.append(PolicyRule(name=f"r{i}", verdict=VERDICTS[i % 3], tool="Bash", where=(condition,)))
    calls = []
    for _ in range(CALLS):
        i = 2 * rng.randrange(n // 2)
        hit = rng.random() < 0.5
        command = rng.choice([f"npm run task{i} --watch", f"DEPLOY env_{i} now"]) if hit else "ls -la"
        path = f"src/pkg{i}/a/b.py" if hit else "README.md"
        calls.append(ToolCall(framework="claude-agent-sdk", tool="Bash", args={"command": command, "path": path}))
    return Policy(rules=tuple(rules)), calls


def shared_tool() -> tuple[float, float]:
    n = max(SIZES)
    print(f"\n{n} rules, half of them on one tool with an argument condition (glob, path glob, regex), µs per call")
    policy, calls = build_shared(n, random.Random(7))
    for call in calls[:500]:
        assert policy.evaluate(call, now=NOW) == naive_evaluate(policy, call, [], NOW)
    timed(lambda c: policy.evaluate(c, now=NOW), calls)
    fast = timed(lambda c: policy.evaluate(c, now=NOW), calls)
    timed(lambda c: naive_evaluate(policy, c, [], NOW), calls[:2000])
    slow = timed(lambda c: naive_evaluate(policy, c, [], NOW), calls[:2000])
    print(f"  indexed p50 {p(fast, 0.5):.1f}  p99 {p(fast, 0.99):.1f}", end="   ")
    print(f"linear p50 {p(slow, 0.5):.1f}  p99 {p(slow, 0.99):.1f}")
    print(f"  ratio p50 {p(slow, 0.5) / p(fast, 0.5):.1f}×  p99 {p(slow, 0.99) / p(fast, 0.99):.1f}×")
    return p(fast, 0.5), p(fast, 0.99)


def pathological() -> list[float]:
    print("\npathological patterns through Policy.evaluate (RE2, linear time), ms: median of 20")
    cases = [
        ("regex (a+)+$ against 28 a's and '!'", MatchKind.REGEX, "(a+)+$", "a" * 28 + "!"),
        (
            "path **/a/**/a/**/a/**/a/**/b against a 400-character path",
            MatchKind.PATH,
            "**/a/**/a/**/a/**/a/**/b",
            "a/" * 200,
        ),
    ]
    times = []
    for label, kind, pattern, text in cases:
        condition = ArgCondition(arg="x", kind=kind, pattern=pattern)
        policy = Policy(rules=(PolicyRule(name="hang", verdict=VerdictKind.DENY, tool="t", where=(condition,)),))
        call = ToolCall(framework="langgraph", tool="t", args={"x": text})
        assert policy.evaluate(call, now=NOW).kind is VerdictKind.ASK
        runs = []
        for _ in range(20):
            start = time.perf_counter()
            policy.evaluate(call, now=NOW)
            runs.append((time.perf_counter() - start) * 1000)
        median = statistics.median(runs)
        times.append(median)
        print(f"  {label}: {median:.3f} ms (goal < {GOAL_PATTERN_MS:.0f} ms; a backtracking engine: > 30 s)")
    return times


def main() -> int:
    results = evaluation()
    results.append((max(SIZES), True, *shared_tool()))
    patterns = pathological()
    largest = [r for r in results if r[0] == max(SIZES)]
    met = all(p50 < GOAL_P50_US and p99 < GOAL_P99_US for _, _, p50, p99 in largest)
    met = met and all(t < GOAL_PATTERN_MS for t in patterns)
    print(
        f"\ngoal at {max(SIZES)} rules: p50 < {GOAL_P50_US:.0f} µs and p99 < {GOAL_P99_US:.0f} µs with and without "
        f"conditions and with half of them on one tool, patterns < {GOAL_PATTERN_MS:.0f} ms: "
        f"{'[met]' if met else '[not met]'}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
