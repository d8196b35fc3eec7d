"""Chaos, longer: SIGKILL during submit, decide, resume and inside the tool; count what each recovery left.

    .venv/bin/python -m tests.benchmarks.bench_chaos 200 [--adapters openai,langgraph,langchain] [--stores sqlite]

The loop of ``tests/chaos/test_chaos.py`` (see ``tests/chaos/loop.py``), for as many iterations as asked,
per adapter and store: one run per iteration, one SIGKILL in one of its phases, then the operator's
recovery. Prints the kills that landed per phase, what went wrong (lost, run twice, run unapproved,
stuck: each must be 0), the calls left "applied, no outcome recorded" (listed by ``crossgate runs show``),
requests left orphaned, and the ratio of killed runs that recovered. PostgreSQL rows need
``CROSSGATE_TEST_POSTGRES_URL``. Not collected by pytest; exits 1 if any failure was counted.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # run as a script: make ``tests`` importable
    sys.path.insert(0, str(ROOT))

from crossgate.adapter import UnverifiedWarning  # noqa: E402
from tests.chaos.agents import ADAPTERS  # noqa: E402
from tests.chaos.loop import PHASES, Counts, chaos, preload  # noqa: E402

STORES = ("sqlite", "postgres")


def database(kind: str, workdir: Path) -> str | None:
    """A fresh database of ``kind``; None when PostgreSQL is not configured or does not answer."""
    if kind == "sqlite":
        return str(workdir / "crossgate.db")
    from tests.support.postgres import _factory, _server_url

    url = _server_url()
    if url is None:
        return None
    store = _factory(url)()
    store.close()
    return str(store.url)


def row(adapter: str, kind: str, counts: Counts, seconds: float) -> str:
    killed = sum(counts.kills.values())
    ratio = counts.recovered / killed if killed else 1.0
    kills = " ".join(f"{counts.kills[p]:>4}" for p in PHASES)
    return (
        f"| {adapter:<9} | {kind:<8} | {counts.iterations:>5} | {kills} | {counts.lost:>4} {counts.twice:>5} "
        f"{counts.unapproved:>10} {counts.stuck:>5} | {counts.unrecorded:>10} {counts.orphaned:>8} "
        f"| {counts.recovered:>4}/{killed:<4} {ratio:>5.0%} | {seconds:>6.1f} |"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("iterations", type=int, nargs="?", default=50, help="per adapter and store (default 50)")
    parser.add_argument("--adapters", default=",".join(ADAPTERS))
    parser.add_argument("--stores", default=",".join(STORES))
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--seconds", type=float, default=3600.0, help="start no iteration after this long, per row")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as home:
        return _run(args, Path(home))


def _run(args: argparse.Namespace, home: Path) -> int:
    # As tests/chaos/test_chaos.py runs under tests/conftest.py: the loop counts what kills lose, not
    # signatures (the signed paths have their own attack tests), so its gates run unverified, with config
    # and state folders of their own (a pin found in ~/.config/crossgate would win over CROSSGATE_UNVERIFIED).
    os.environ.update(
        CROSSGATE_UNVERIFIED="1", XDG_CONFIG_HOME=str(home / "config"), XDG_STATE_HOME=str(home / "state")
    )
    warnings.simplefilter("ignore", UnverifiedWarning)
    preload()
    print(
        "| adapter   | store    | iters | kills: submit decide resume tool | lost twice unapproved stuck "
        "| unrecorded orphaned | recovered       | seconds |"
    )
    failures = 0
    notes: list[str] = []
    for kind in args.stores.split(","):
        for adapter in args.adapters.split(","):
            with tempfile.TemporaryDirectory() as tmp:
                db = database(kind, Path(tmp))
                if db is None:
                    print(f"| {adapter:<9} | {kind:<8} | skipped: no PostgreSQL server answers |")
                    continue
                began = time.monotonic()
                counts = chaos(adapter, db, Path(tmp), args.iterations, seed=args.seed, seconds=args.seconds)
                print(row(adapter, kind, counts, time.monotonic() - began), flush=True)
                failures += counts.failures
                notes += [f"{adapter}/{kind}: {note}" for note in counts.notes]
    for note in notes:
        print(note)
    print(f"failures counted: {failures}; recovered runs / killed runs per row above")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
