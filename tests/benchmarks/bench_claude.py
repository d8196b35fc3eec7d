"""What crossgate adds to one tool call of the real Claude Code CLI, against the CLI's own paths.

    .venv/bin/python -m tests.benchmarks.bench_claude [--runs 8]

Each sample is one session of the bundled CLI against the scripted Messages API with a single tool
call; the time per call is the gap between the first and the second Messages API request of the turn
(the model asks for the tool, then gets its result), so it covers the permission round trip, the tool
and the CLI's own work, and leaves out the CLI's start. Variants run round-robin in the same process:

- ``auto``: ``allowed_tools`` approves the tool; no callback, no hook (the CLI's own fast path);
- ``bare``: a ``can_use_tool`` callback that allows at once;
- ``gate-allow``: crossgate, the policy allows (hook + callback, audit record, no request);
- ``gate-ask``: crossgate, the policy asks and a reviewer approves the moment the request exists
  (request, decision, wake-up, apply, outcome record), on a MemoryStore and on a SqliteStore.

A deferred call (park, then resume in a fresh CLI) is timed end to end separately: it pays a CLI start.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from claude_agent_sdk import (
    ClaudeAgentOptions,
    ClaudeSDKClient,
    PermissionResultAllow,
    ResultMessage,
    ToolPermissionContext,
    create_sdk_mcp_server,
    tool,
)

from crossgate import Approve, MemoryStore, Policy, PolicyRule, ReviewQueue, Store, Submission, ToolCall, VerdictKind
from crossgate.stores.sqlite import SqliteStore
from crossgate_claude import Gate
from crossgate_claude.testing import MessagesAPI, ScriptedModel, cli_env

PROMPT = 'CALL delete_ticket {"id": "t1"}'
ASK = Policy(rules=(PolicyRule(name="ask", verdict=VerdictKind.ASK, tool="delete_ticket"),))
ALLOW = Policy(default=VerdictKind.ALLOW)


class TimedModel(ScriptedModel):
    """Notes when each Messages API request arrived."""

    def __init__(self) -> None:
        self.stamps: list[float] = []

    def reply(self, body: dict[str, Any]) -> tuple[list[dict[str, Any]], str]:
        self.stamps.append(time.perf_counter())
        return super().reply(body)


class InstantReviewQueue(ReviewQueue):
    """A queue whose reviewer approves each request as soon as it is submitted (in the next loop turn)."""

    def submit(self, call: ToolCall, **kwargs: Any) -> Submission:
        submission = super().submit(call, **kwargs)
        if submission.request is not None and submission.request.is_open:
            rid = submission.request.id
            asyncio.get_running_loop().call_soon(lambda: self.decide(rid, Approve(), reviewer="bench"))
        return submission


def base_options(env: dict[str, str], cwd: Path) -> ClaudeAgentOptions:
    @tool("delete_ticket", "Delete a ticket.", {"id": str})
    async def delete_ticket(args: dict[str, Any]) -> dict[str, Any]:
        return {"content": [{"type": "text", "text": f"deleted ticket {args['id']}"}]}

    return ClaudeAgentOptions(
        env=env,
        setting_sources=[],
        cwd=str(cwd),
        tools=[],
        mcp_servers={"tickets": create_sdk_mcp_server("tickets", tools=[delete_ticket])},
    )


async def one_session(options: ClaudeAgentOptions) -> None:
    async with ClaudeSDKClient(options) as client:
        await client.query(PROMPT)
        async for message in client.receive_response():
            if isinstance(message, ResultMessage):
                assert message.stop_reason == "end_turn", message


async def allow_at_once(name: str, args: dict[str, Any], context: ToolPermissionContext) -> PermissionResultAllow:
    return PermissionResultAllow()


def variants(base: ClaudeAgentOptions, folder: Path) -> dict[str, Callable[[], Awaitable[None]]]:
    stores: dict[str, Store] = {"memory": MemoryStore(), "sqlite": SqliteStore(folder / "bench.db")}
    for store in stores.values():
        store.setup()
    allow_gate = Gate(ReviewQueue(MemoryStore(), ALLOW), options=base, defer=False, hold=None)
    ask_gates = {
        name: Gate(InstantReviewQueue(store, ASK), options=base, defer=False, hold=None)
        for name, store in stores.items()
    }
    return {
        "auto": lambda: one_session(replace(base, allowed_tools=["mcp__tickets__delete_ticket"])),
        "bare": lambda: one_session(replace(base, can_use_tool=allow_at_once)),
        "gate-allow": lambda: one_session(allow_gate.options()),
        "gate-ask-memory": lambda: one_session(ask_gates["memory"].options()),
        "gate-ask-sqlite": lambda: one_session(ask_gates["sqlite"].options()),
    }


async def deferred_call(base: ClaudeAgentOptions, folder: Path) -> float:
    """Wall time from the deferral to the finished resume, reviewer deciding at once."""
    queue = ReviewQueue(SqliteStore(folder / "defer.db"), ASK)
    queue.store.setup()
    gate = Gate(queue, options=base)
    parked = await gate.run(PROMPT)
    started = time.perf_counter()
    queue.decide(parked.request_ids[0], Approve(), reviewer="bench")  # type: ignore[union-attr]
    await gate.resume(parked.parked_run)  # type: ignore[union-attr]
    return time.perf_counter() - started


async def measure(runs: int) -> None:
    model = TimedModel()
    with tempfile.TemporaryDirectory(prefix="bench-claude-") as tmp, MessagesAPI(model) as api:
        folder = Path(tmp)
        (folder / "work").mkdir()
        base = base_options(cli_env(api.base_url, folder / "cli"), folder / "work")
        cases = variants(base, folder)
        gaps: dict[str, list[float]] = {name: [] for name in cases}
        for warm_up in cases.values():  # not measured
            await warm_up()
        for _ in range(runs):
            for name, case in cases.items():
                model.stamps.clear()
                await case()
                gaps[name].append(model.stamps[1] - model.stamps[0])
        deferred = [await deferred_call(base, folder) for _ in range(max(2, runs // 4))]
    report(gaps, deferred, runs)


def report(gaps: dict[str, list[float]], deferred: list[float], runs: int) -> None:
    print(f"per tool call over {runs} sessions per variant (ms); extra = over the auto-allowed path")
    print("the minimum is the steadier figure on a shared machine; the median includes its noise")
    print(f"{'variant':<18}{'median':>9}{'min':>9}{'max':>9}{'extra(med)':>12}{'extra(min)':>12}")
    median = {name: statistics.median(values) for name, values in gaps.items()}
    low = {name: min(values) for name, values in gaps.items()}
    for name, values in gaps.items():
        print(
            f"{name:<18}{median[name] * 1000:9.1f}{low[name] * 1000:9.1f}{max(values) * 1000:9.1f}"
            f"{(median[name] - median['auto']) * 1000:12.1f}{(low[name] - low['auto']) * 1000:12.1f}"
        )
    for label, figures in (("median", median), ("min", low)):
        to_auto = ", ".join(f"{n} {figures[n] / figures['auto']:.2f}" for n in figures if n != "auto")
        to_bare = ", ".join(f"{n} {figures[n] / figures['bare']:.2f}" for n in figures if n.startswith("gate"))
        print(f"ratios ({label}) to auto: {to_auto}")
        print(f"ratios ({label}) to bare: {to_bare}")
    seconds = statistics.median(deferred)
    print(f"deferred call, decision to finished resume (CLI restart included): median {seconds:.2f} s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=8)
    asyncio.run(measure(parser.parse_args().runs))


if __name__ == "__main__":
    main()
