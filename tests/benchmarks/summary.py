"""The four ratios of the performance goals, each against its baseline in the same run; ``make bench`` prints it first.

    python -m tests.benchmarks.summary [--runs 20] [--trips 100]

1. allowed call, per adapter: µs added per allowed call and the 10-call run's ratio to the same run
   without crossgate, default SQLite store (``bench_allowed``);
2. policy evaluation at 10, 100 and 1,000 rules: ``bench_policy``, when it is there;
3. the review server against a bare FastAPI app: ``bench_server``, when it has the bare baseline;
4. the gated round trip (OpenAI: park, decide, resume) against the fair durable baseline, the SDK's
   native round trip with its RunState written to SQLite ``FULL`` (``bench_openai``, variant ``native_saved``).

Goals: < 50 µs and <= 1.05× (1); p50 < 20 µs, p99 < 100 µs at 1,000 rules (2); >= 0.8× decisions/s, p99
<= 1.5× (3); <= 1.10× (4). Not collected by pytest (``test_benchmarks_run`` runs it on tiny sizes).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from agents import set_tracing_disabled  # noqa: E402

from tests.benchmarks import bench_allowed, bench_openai  # noqa: E402


def allowed_calls(runs: int, folder: Path) -> None:
    rows = asyncio.run(bench_allowed.measure(runs, 10, ["full"], folder))
    print(f"1. allowed call (10 allowed calls a run, default SQLite store, {runs} paired runs; goal < 50 µs, <= 1.05×)")
    for label, _, added, ratio, _ in rows:
        print(f"   {label.strip():<46}{added:>8.0f} µs/call{ratio:>8.2f}×")


def tracing_cost(runs: int, folder: Path) -> None:
    rows = asyncio.run(bench_allowed.measure_tracing(runs, 10, folder))
    print(f"1b. tracing on (OpenTelemetry SDK, spans dropped) vs off (no SDK: every figure here), {runs} paired runs")
    for label, added, ratio, spans in rows:
        print(f"   {label:<46}{added:>8.0f} µs/call{ratio:>8.2f}×  ({spans} spans a run)")


def policy_evaluation() -> None:
    script = ROOT / "tests" / "benchmarks" / "bench_policy.py"
    print("2. policy evaluation (goal at 1,000 rules: p50 < 20 µs, p99 < 100 µs)")
    if not script.exists():
        print("   not measured here: tests/benchmarks/bench_policy.py is not in this checkout")
        return
    done = subprocess.run(
        [sys.executable, "-m", "tests.benchmarks.bench_policy"], cwd=ROOT, capture_output=True, text=True
    )
    for line in (done.stdout or done.stderr).strip().splitlines():
        print(f"   {line}")


def server() -> None:
    print("3. review server vs a bare FastAPI app (goal >= 0.8× decisions/s, p99 <= 1.5×)")
    text = (ROOT / "tests" / "benchmarks" / "bench_server.py").read_text(encoding="utf-8")
    if "bare" not in text:
        print("   not measured: bench_server.py has no bare FastAPI baseline yet (see docs/benchmarks.md)")
        return
    done = subprocess.run(
        [sys.executable, "-m", "tests.benchmarks.bench_server"], cwd=ROOT, capture_output=True, text=True
    )
    wanted = (
        "load",
        "baseline",
        "decisions accepted",
        "empty pages",
        "decide  latency",
        "per decision",
        "server vs bare",
        "two servers",
        "FAIL",
    )
    for line in done.stdout.strip().splitlines():
        if any(w in line for w in wanted):
            print(f"   {line.strip()}")
    if done.returncode != 0:
        print(f"   bench_server failed: {done.stderr.strip().splitlines()[-1:]}")


def round_trip(trips: int, folder: Path) -> None:
    variants = ["native", "native_saved", "crossgate", "crossgate_decisions", "crossgate_memory", "crossgate_traced"]
    samples = asyncio.run(bench_openai.measure(trips, folder, variants))
    base = statistics.median(samples["native_saved"])
    print(f"4. gated round trip vs the SDK's native one with its state in SQLite FULL ({trips} each; goal <= 1.10×)")
    for name in ("crossgate", "crossgate_decisions"):
        median = statistics.median(samples[name])
        print(f"   {bench_openai.VARIANTS[name]:<46}{median * 1000:>8.2f} ms{median / base:>8.2f}×")
    print(f"   {bench_openai.VARIANTS['native_saved']:<46}{base * 1000:>8.2f} ms")
    # Without a disk on either side: what crossgate's own work adds, apart from the syncs.
    native, memory = statistics.median(samples["native"]), statistics.median(samples["crossgate_memory"])
    label = bench_openai.VARIANTS
    print(f"   no disk: {label['crossgate_memory']:<37}{memory * 1000:>8.2f} ms{memory / native:>8.2f}×")
    print(f"   no disk: {label['native']:<37}{native * 1000:>8.2f} ms")
    traced = statistics.median(samples["crossgate_traced"])
    crossgate = statistics.median(samples["crossgate"])
    print(f"   tracing: {label['crossgate_traced']:<37}{traced * 1000:>8.2f} ms{traced / crossgate:>8.2f}× off")


def main(argv: list[str] | None = None) -> None:
    """Print the four ratios."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=20, help="paired 10-call runs per adapter")
    parser.add_argument("--trips", type=int, default=100, help="round trips per variant")
    args = parser.parse_args(argv)
    set_tracing_disabled(True)
    with tempfile.TemporaryDirectory() as folder:
        allowed_calls(args.runs, Path(folder))
        tracing_cost(args.runs, Path(folder))
        policy_evaluation()
        server()
        round_trip(args.trips, Path(folder))


if __name__ == "__main__":
    main()
