"""One policy, same outcome, in every adapter: a property test over generated policies and calls.

And one LangChain ``interrupt_on`` table, same verdicts in Python and LangChain.js (the last test).

For each adapter's delete-ticket driver (harness.py), hypothesis generates a small policy (rules on a
few tool names, with ``equals``/``one_of``/``glob`` conditions on the ticket id, verdicts allow, ask
and deny, and a default), the ticket ids the scripted model asks to delete (strings, and numbers or
bools a model may send for the string ``id``), each reviewer's answer to an ask, and whether a
standing allow for the tool exists. What runs must be exactly what ``queue.evaluate`` on the validated
arguments allows (an ask runs once approved), and a deny is never lifted: no request for it, no run.

``delete_ticket(id: str)`` refuses a number or a bool in every adapter (OpenAI by the tool's JSON
Schema, LangGraph, LangChain, Pydantic AI and Agent Framework by the tool's pydantic schema), so such a call
is never judged and never runs (the Claude CLI refuses them too). The in-process drivers (OpenAI, LangGraph,
LangChain, Pydantic AI, Agent Framework, Google ADK, Strands) run a dozen examples each; the Claude driver starts
the real CLI for every run and resume, so it runs six. Each row is one adapter against ``queue.evaluate``, so
no row needs another SDK in its process: Strands' row runs in Strands' own venv (``make unit-strands``) and
is skipped in the main one.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import os
import random
import shutil
import subprocess
import tempfile
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from crossgate import (
    Approve,
    MemoryStore,
    Policy,
    PolicyRule,
    Reject,
    ReviewQueue,
    ToolCall,
    VerdictKind,
)
from crossgate.policy.langchain import import_interrupt_on
from crossgate.policy.loading import policy_from_dict
from crossgate.runs import Finished
from crossgate.testing import TicketStore
from crossgate.testing.driver import TOOL, TicketAgentDriver

pytestmark = pytest.mark.slow

DRIVERS = {
    "openai": ("tests.adapters.openai.driver", "OpenAITicketDriver"),
    "langgraph": ("tests.adapters.langgraph.driver", "LangGraphTicketDriver"),
    "langchain": ("tests.adapters.langgraph.driver", "LangChainTicketDriver"),
    "claude": ("tests.adapters.claude.driver", "ClaudeTicketDriver"),
    "pydantic-ai": ("tests.adapters.pydantic_ai.driver", "PydanticAITicketDriver"),
    "agent-framework": ("tests.adapters.agent_framework.driver", "AgentFrameworkTicketDriver"),
    "google-adk": ("tests.adapters.google_adk.driver", "GoogleAdkTicketDriver"),
    "strands": ("tests.adapters.strands.driver", "StrandsTicketDriver"),
}
TOOL_NAMES = ("delete_ticket", "delete_*", "read_data", "*")
STRING_IDS = ("t1", "t2", "t3", "t9")
ODD_IDS: tuple[Any, ...] = (1, 7, True, False)
VERDICTS = tuple(VerdictKind)

conditions = st.one_of(
    st.builds(lambda v: {"arg": "id", "kind": "equals", "value": v}, st.sampled_from((*STRING_IDS, 1, True))),
    st.builds(
        lambda vs: {"arg": "id", "kind": "one_of", "values": vs},
        st.lists(st.sampled_from((*STRING_IDS, 7)), min_size=1, max_size=3, unique=True),
    ),
    st.builds(lambda p: {"arg": "id", "kind": "glob", "pattern": p}, st.sampled_from(["t*", "t?", "*2", "x*", "*"])),
)


@st.composite
def policies(draw: st.DrawFn) -> Policy:
    rules = []
    for index in range(draw(st.integers(min_value=0, max_value=4))):
        where = draw(st.lists(conditions, max_size=1))
        rules.append(
            PolicyRule(
                name=f"rule-{index}",
                verdict=draw(st.sampled_from(VERDICTS)),
                tool=draw(st.sampled_from(TOOL_NAMES)),
                where=tuple(where),
                reason=f"rule-{index} says so",
            )
        )
    return Policy(rules=tuple(rules), default=draw(st.sampled_from(VERDICTS)))


def ticket_ids(odd: bool) -> st.SearchStrategy[list[Any]]:
    values = st.sampled_from(STRING_IDS + ODD_IDS) if odd else st.sampled_from(STRING_IDS)
    # Unique (1 and True count as one): a run asks once per ticket, as the drivers' call ids assume.
    return st.lists(values, min_size=1, max_size=3, unique=True)


def validated(value: Any) -> dict[str, Any] | None:
    """The arguments ``delete_ticket(id: str)`` accepts for this id, or None when it refuses them."""
    return {"id": value} if isinstance(value, str) else None


def load(name: str) -> type[TicketAgentDriver]:
    module_name, class_name = DRIVERS[name]
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        pytest.skip(f"{name} driver not available: {exc}")
    return cast(type[TicketAgentDriver], getattr(module, class_name))


async def drive(driver: TicketAgentDriver, ids: Sequence[Any], approve: Sequence[bool], run: str) -> None:
    """Run the agent; answer each request as ``approve`` says for its call; resume until it finishes."""
    outcome = await driver.start(cast(Sequence[str], ids), run=run)
    for _ in range(len(ids) + 1):
        if isinstance(outcome, Finished):
            return
        for request_id in outcome.request_ids:
            request = driver.queue.get(request_id)
            index = list(ids).index(request.call.args["id"])
            decision = Approve() if approve[index] else Reject(message="Not this one.")
            driver.queue.decide(request_id, decision, reviewer="ann")
        outcome = await driver.resume(outcome.parked_run)
    raise AssertionError(f"run {run} did not finish: {outcome!r}")


def check(
    driver_class: type[TicketAgentDriver], policy: Policy, ids: list[Any], approve: list[bool], standing: bool
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        workdir = Path(folder)
        queue = ReviewQueue(MemoryStore(), policy)
        try:
            if standing:
                queue.add_rule(queue.new_rule(effect=VerdictKind.ALLOW, tool=TOOL))
            tickets = TicketStore(workdir / "tickets.db")
            tickets.seed()
            driver = driver_class(queue, tickets, workdir, str(workdir / "unused.db"))
            asyncio.run(drive(driver, ids, approve, "parity"))

            expected: Counter[Any] = Counter()
            for index, value in enumerate(ids):
                args = validated(value)
                if args is None:
                    continue
                call = ToolCall(framework=driver.framework, tool=TOOL, args=args, run="parity")
                verdict = queue.evaluate(call)
                by_rule = policy.evaluate(call)
                if verdict.kind is VerdictKind.DENY or (by_rule.kind is VerdictKind.DENY and by_rule.rule is not None):
                    # A rule's deny is never lifted: not by a standing allow, nor by a reviewer (nobody was
                    # asked). The policy's default is no rule: a standing allow does cover what it denies.
                    assert verdict.kind is VerdictKind.DENY
                    assert not [r for r in queue.list_requests().items if r.call.args == args]
                    continue
                if verdict.kind is VerdictKind.ALLOW or approve[index]:
                    expected[value] += 1
            for value in STRING_IDS:
                assert tickets.delete_runs(value) == expected[value], (driver.framework, value, policy, ids)
            assert tickets.delete_runs() == sum(expected.values()), "a refused id never reaches the tool"
            assert len(driver.tool_results("parity")) == len(ids), "the model hears back about every call"
        finally:
            queue.close()


ALLOW_ALL_WITH_A_NUMBER = example(
    policy=Policy(default=VerdictKind.ALLOW), ids=[7, "t1", True], approve=[True] * 3, standing=False
)
"""The case a missing validation would fail: everything allowed, and ids of the wrong type."""
SETTINGS = settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize(
    "name", ["openai", "langgraph", "langchain", "pydantic-ai", "agent-framework", "google-adk", "strands"]
)
def test_what_runs_is_what_the_policy_allows_in_process(name: str) -> None:
    driver_class = load(name)

    @SETTINGS
    @given(
        policy=policies(),
        ids=ticket_ids(odd=True),
        approve=st.lists(st.booleans(), min_size=3, max_size=3),
        standing=st.booleans(),
    )
    @ALLOW_ALL_WITH_A_NUMBER
    def prop(policy: Policy, ids: list[Any], approve: list[bool], standing: bool) -> None:
        check(driver_class, policy, ids, approve, standing)

    prop()


@pytest.mark.claude_cli
def test_what_runs_is_what_the_policy_allows_on_the_claude_cli() -> None:
    driver_class = load("claude")

    @settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(
        policy=policies(),
        ids=ticket_ids(odd=True),
        approve=st.lists(st.booleans(), min_size=3, max_size=3),
        standing=st.booleans(),
    )
    @ALLOW_ALL_WITH_A_NUMBER
    def prop(policy: Policy, ids: list[Any], approve: list[bool], standing: bool) -> None:
        check(driver_class, policy, ids, approve, standing)

    prop()


# One LangChain table, two languages: Python's ``import_interrupt_on`` and @crossgate/langchain's
# ``importInterruptOn`` (LangChain.js ``interruptOn``, camelCase) must judge every call alike.

TYPESCRIPT = Path(__file__).resolve().parents[2] / "adapters" / "typescript"
LANGCHAIN_TS = TYPESCRIPT / "packages" / "langchain" / "dist" / "index.js"
TABLE_TOOLS = ("write_file", "execute_sql", "read_data", "delete_*", "q?[x]")
DECISIONS = ("approve", "edit", "reject", "respond")


def _tables(count: int, seed: int = 26) -> list[dict[str, Any]]:
    """The HITL overview's table, then ``count`` random tables over tool names with glob characters."""
    rng = random.Random(seed)
    tables: list[dict[str, Any]] = [
        {
            "write_file": True,
            "execute_sql": {
                "allowed_decisions": ["approve", "reject"],
                "description": "SQL statements need DBA approval",
            },
            "read_data": False,
        }
    ]
    for _ in range(count):
        table: dict[str, Any] = {}
        for tool in rng.sample(TABLE_TOOLS, rng.randint(1, len(TABLE_TOOLS))):
            kind = rng.choice(("true", "false", "config"))
            if kind == "config":
                setting: dict[str, Any] = {"allowed_decisions": rng.sample(DECISIONS, rng.randint(1, 4))}
                if rng.random() < 0.5:
                    setting["description"] = f"review {tool}"
                table[tool] = setting
            else:
                table[tool] = kind == "true"
        tables.append(table)
    return tables


def _camel(table: dict[str, Any]) -> dict[str, Any]:
    """The same table as LangChain.js takes it."""
    out: dict[str, Any] = {}
    for tool, setting in table.items():
        if isinstance(setting, dict):
            setting = {("allowedDecisions" if k == "allowed_decisions" else k): v for k, v in setting.items()}
        out[tool] = setting
    return out


def _typescript_rules(tables: list[dict[str, Any]]) -> list[Any]:
    node = shutil.which("node")
    if node is None or not LANGCHAIN_TS.is_file():
        missing = "node" if node is None else f"{LANGCHAIN_TS} (run npm run build in adapters/typescript)"
        if os.environ.get("CI"):
            pytest.fail(f"{missing} is missing, so the LangChain.js side of the parity test cannot run in CI")
        pytest.skip(f"{missing} is missing: the LangChain.js side of the parity test did not run")
    script = (
        f"import {{ importInterruptOn }} from {json.dumps(LANGCHAIN_TS.as_uri())};"
        "const tables = JSON.parse(process.argv[1]);"
        "console.log(JSON.stringify(tables.map((t) => importInterruptOn(t))));"
    )
    done = subprocess.run(
        [node, "--input-type=module", "-e", script, json.dumps([_camel(t) for t in tables])],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return cast(list[Any], json.loads(done.stdout))


def test_one_interrupt_on_table_gives_the_same_verdicts_in_python_and_langchain_js() -> None:
    tables = _tables(40)
    typescript = _typescript_rules(tables)
    calls = [*TABLE_TOOLS, "delete_ticket", "qa[x]", "other"]
    for table, ts_rules in zip(tables, typescript, strict=True):
        python = Policy(rules=tuple(import_interrupt_on(table)), default=VerdictKind.ALLOW)
        from_js = policy_from_dict({"version": 1, "default": "allow", "rules": ts_rules})
        for tool in calls:
            py_verdict = python.evaluate(ToolCall(framework="langchain", tool=tool, args={}))
            js_verdict = from_js.evaluate(ToolCall(framework="langchain-ts", tool=tool, args={}))
            assert (js_verdict.kind, js_verdict.rule, js_verdict.reason, js_verdict.description) == (
                py_verdict.kind,
                py_verdict.rule,
                py_verdict.reason,
                py_verdict.description,
            ), (table, tool)
            assert js_verdict.allowed_decisions == py_verdict.allowed_decisions, (table, tool)
