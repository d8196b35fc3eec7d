"""Benchmark: each TypeScript SDK's own approval round trip against the same round trip through crossgate over HTTP.

    python -m tests.benchmarks.bench_typescript [--trips N] [--warmup W] [--sdks ai-sdk,mastra,...]

One delete per trip, the two sides alternating in one node process (adapters/typescript/packages/examples,
``src/bench.ts``, which says what each side does): natively the SDK pauses, its state is serialised where
the SDK needs it, the app approves in process and the SDK resumes and runs the tool; through crossgate the
package's gate (pinned to the server's key) parks on a ``crossgate serve`` subprocess over SQLite that signs
decisions, a reviewer approves over the review API, and the gate resumes; for the Claude Agent SDK both sides
are one ``query()`` of the bundled CLI (against the local scripted Messages API), the crossgate one holding
the call in its hook until the reviewer's decision. The table gives the medians and their ratio.

Needs node 20.19+ and the npm workspace installed and built (``make install``); says so and exits 0 without.
Environment: ``CG_BENCH_TRIPS`` (default 20), ``CG_BENCH_WARMUP`` (default 3). Not collected by pytest.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "examples"))

import typescript_agent  # noqa: E402  (examples/ is a folder of scripts, not a package)

from crossgate.authority import Keyring  # noqa: E402
from crossgate.testing.adapters import ASK_POLICY  # noqa: E402
from tests.remote.server import AGENT_TOKEN, REVIEWERS, LiveServer  # noqa: E402

BENCH = typescript_agent.WORKSPACE / "packages" / "examples" / "dist" / "bench.js"
SDKS = ("ai-sdk", "mastra", "openai-agents", "claude-agent-sdk")


def measure(trips: int, warmup: int, sdks: list[str], folder: Path) -> dict[str, dict[str, list[float]]]:
    """Seconds per trip, native and through crossgate, for each SDK."""
    from crossgate_claude.testing import MessagesAPI

    keys = Keyring.init(folder / "authority")
    saved = os.environ.get("CROSSGATE_AUTHORITY_DIR")
    os.environ["CROSSGATE_AUTHORITY_DIR"] = str(keys.directory)  # crossgate serve signs with the keyring there
    try:
        with LiveServer(folder, str(folder / "queue.db"), ASK_POLICY) as server, MessagesAPI() as api:
            env = {k: v for k, v in os.environ.items() if not k.startswith("CROSSGATE_")}
            env.update(
                CROSSGATE_SERVER=server.url,
                CROSSGATE_AGENT_TOKEN=AGENT_TOKEN,
                CROSSGATE_REVIEWER_TOKEN=REVIEWERS["ann"],
                CROSSGATE_AUTHORITY_PUBKEY=keys.pin_text(),
                CROSSGATE_WORK=str(folder / "work"),
                MESSAGES_API=api.base_url,
            )
            command = [shutil.which("node") or "node", str(BENCH), "--trips", str(trips), "--warmup", str(warmup)]
            done = subprocess.run(
                [*command, "--sdks", ",".join(sdks)],
                env=env,
                cwd=typescript_agent.WORKSPACE,
                capture_output=True,
                text=True,
                timeout=3600,
                check=False,
            )
    finally:
        if saved is None:
            os.environ.pop("CROSSGATE_AUTHORITY_DIR", None)
        else:
            os.environ["CROSSGATE_AUTHORITY_DIR"] = saved
    if done.returncode != 0:
        raise SystemExit(f"bench_typescript: node failed ({done.returncode}): {done.stderr[-2000:]}")
    results: dict[str, dict[str, list[float]]] = json.loads(done.stdout.strip().splitlines()[-1])
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--trips", type=int, default=int(os.environ.get("CG_BENCH_TRIPS", "20")))
    parser.add_argument("--warmup", type=int, default=int(os.environ.get("CG_BENCH_WARMUP", "3")))
    parser.add_argument("--sdks", default=",".join(SDKS))
    options = parser.parse_args(argv)
    reason = typescript_agent.unavailable() or (None if BENCH.is_file() else "the examples package is not built")
    if reason is not None:
        print(f"bench_typescript: skipped: {reason}")
        return 0
    sdks = [s for s in options.sdks.split(",") if s]
    unknown = sorted(set(sdks) - set(SDKS))
    if unknown:
        parser.error(f"unknown SDK {unknown[0]!r}; expected some of {', '.join(SDKS)}")
    with tempfile.TemporaryDirectory(prefix="bench-ts-") as tmp:
        results = measure(options.trips, options.warmup, sdks, Path(tmp))
    print(
        f"approval round trip, one delete: the SDK alone vs through crossgate over HTTP (median of {options.trips}, ms)"
    )
    print(f"{'sdk':<18}{'native':>10}{'crossgate':>11}{'ratio':>9}")
    for sdk in sdks:
        native = statistics.median(results[sdk]["native"]) * 1000
        gated = statistics.median(results[sdk]["crossgate"]) * 1000
        print(f"{sdk:<18}{native:>10.2f}{gated:>11.2f}{gated / native:>8.1f}×")
    return 0


if __name__ == "__main__":
    sys.exit(main())
