"""Every benchmark script still runs, on tiny sizes: a smoke test, not a measurement.

The scripts are not collected by pytest (they measure; they do not assert speed), so without this a
change to a store or an adapter could break one silently until the next time someone runs ``make bench``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

CASES = {
    "bench_allowed": (["--runs", "2", "--calls", "2"], {}, "spans/run"),
    "summary": (
        ["--runs", "2", "--trips", "3"],
        {"CG_BENCH_SECONDS": "1", "CG_BENCH_CLIENTS": "2", "CG_BENCH_BACKLOG": "5", "CG_BENCH_ROWS": "sqlite-racing"},
        "server vs bare",
    ),
    "bench_openai": (["5"], {}, "tracing on / off"),
    "bench_stores": ([], {"CG_BENCH_REQUESTS": "10", "CG_BENCH_WAKE_ROUNDS": "10"}, "wake-up latency"),
    "bench_scale": (
        [],
        {
            "CG_BENCH_ROWS": "20000",  # the listing pages from the middle: fewer rows leave it short of 50
            "CG_BENCH_WAITERS": "100",
            "CG_BENCH_WAKE_SAMPLE": "20",
            "CG_BENCH_LIST_REPEATS": "3",
        },
        "concurrent inline waiters",
    ),
    "bench_server": (
        [],
        {
            "CG_BENCH_SECONDS": "2",
            "CG_BENCH_CLIENTS": "3",
            "CG_BENCH_BACKLOG": "10",
            "CG_BENCH_ROWS": "sqlite-own,postgres-racing,postgres-own-x2",  # PostgreSQL rows skip without a server
            "CG_BENCH_BARE_BODIES": "1",  # the summary runs the plain bare baseline; this, its equal-bodies variant
        },
        "a list page",
    ),
    "bench_langgraph": (["--n", "2", "--warmup", "1"], {}, "ratio graph crossgate"),
    "bench_claude": (["--runs", "1"], {}, "ratios (median) to bare"),
    "bench_authority": ([], {"CG_BENCH_DECISIONS": "20", "CG_BENCH_ROUNDS": "2"}, "sign+verify per decision"),
    "bench_chaos": (["2", "--adapters", "openai", "--stores", "sqlite"], {}, "failures counted: 0"),
    "bench_remote": (
        [],
        {"CG_BENCH_TRIPS": "2", "CG_BENCH_WAKE_ROUNDS": "2", "CG_BENCH_WARMUP": "1"},
        "long-poll wake-up latency",
    ),
    "bench_policy": ([], {"CG_BENCH_POLICY_SIZES": "10,30", "CG_BENCH_POLICY_CALLS": "300"}, "pathological patterns"),
    "bench_policy_versions": ([], {"CG_BENCH_CALLS": "20", "CG_BENCH_ROUNDS": "1"}, "ratio to local"),
    "bench_typescript": (["--trips", "1", "--warmup", "0"], {}, "through crossgate over HTTP"),
}


def _skip_without_node(name: str) -> None:
    """bench_typescript needs node and the built npm workspace: skipped without them (a failure in CI)."""
    if name != "bench_typescript":
        return
    sys.path.insert(0, str(ROOT / "examples"))
    import typescript_agent

    reason = typescript_agent.unavailable()
    if reason is not None:
        if os.environ.get("CI"):
            pytest.fail(f"bench_typescript cannot run in CI: {reason}")
        pytest.skip(f"bench_typescript cannot run here: {reason}")


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CASES))
def test_the_benchmark_runs(name: str, tmp_path: Path) -> None:
    _skip_without_node(name)
    args, env, expected = CASES[name]
    result = subprocess.run(
        [sys.executable, "-m", f"tests.benchmarks.{name}", *args],
        cwd=ROOT,
        env={**os.environ, **env, "TMPDIR": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert expected in result.stdout, result.stdout[-3000:]
