"""Import of a LangChain HumanInTheLoopMiddleware ``interrupt_on`` mapping."""

from __future__ import annotations

from typing import Any

import pytest

from crossgate.errors import ConfigurationError
from crossgate.model import ALL_DECISIONS, DecisionKind, VerdictKind
from crossgate.policy import Policy, import_interrupt_on

from .helpers import NOW, call


def describe(tool_call: Any, state: Any, runtime: Any) -> str:
    return "dynamic"


def test_true_false_and_config() -> None:
    rules = import_interrupt_on(
        {
            "write_file": True,
            "read_data": False,
            "execute_sql": {"allowed_decisions": ["approve", "reject"], "description": "SQL needs DBA approval"},
        }
    )
    by_name = {r.name: r for r in rules}
    assert set(by_name) == {"langchain:ask:write_file", "langchain:allow:read_data", "langchain:ask:execute_sql"}
    write = by_name["langchain:ask:write_file"]
    assert (write.verdict, write.tool, write.allowed_decisions) == (VerdictKind.ASK, "write_file", ALL_DECISIONS)
    assert by_name["langchain:allow:read_data"].verdict is VerdictKind.ALLOW
    sql = by_name["langchain:ask:execute_sql"]
    assert sql.allowed_decisions == (DecisionKind.APPROVE, DecisionKind.REJECT)
    assert sql.description == "SQL needs DBA approval"

    verdict = Policy(rules=tuple(rules)).evaluate(call("execute_sql", framework="langchain"), now=NOW)
    assert (verdict.kind, verdict.allowed_decisions, verdict.description) == (
        VerdictKind.ASK,
        (DecisionKind.APPROVE, DecisionKind.REJECT),
        "SQL needs DBA approval",
    )


def test_unlisted_tools_get_the_policy_default() -> None:
    rules = tuple(import_interrupt_on({"write_file": True}))
    assert Policy(rules=rules).evaluate(call("other"), now=NOW).kind is VerdictKind.ASK
    # LangChain runs unlisted tools; a policy with default allow reproduces that
    assert Policy(rules=rules, default="allow").evaluate(call("other"), now=NOW).kind is VerdictKind.ALLOW
    assert Policy(rules=rules, default="allow").evaluate(call("write_file"), now=NOW).kind is VerdictKind.ASK


def test_tool_names_are_literal_not_globs() -> None:
    (rule,) = import_interrupt_on({"read_*": True})
    assert rule.matches(call("read_*"))
    assert not rule.matches(call("read_file"))


def test_repeated_decisions_are_read_once_in_order() -> None:
    (rule,) = import_interrupt_on({"t": {"allowed_decisions": ["reject", "approve", "reject"]}})
    assert rule.allowed_decisions == (DecisionKind.REJECT, DecisionKind.APPROVE)


def test_args_schema_is_ignored_as_langchain_ignores_it() -> None:
    (rule,) = import_interrupt_on({"t": {"allowed_decisions": ["approve"], "args_schema": {"type": "object"}}})
    assert rule.allowed_decisions == (DecisionKind.APPROVE,)


def test_when_predicate_is_refused_unless_the_caller_says_ask() -> None:
    config = {"execute_sql": {"allowed_decisions": ["approve", "reject"], "when": lambda request: True}}
    with pytest.raises(ConfigurationError, match=r"interrupt_on\['execute_sql'\]: 'when' is a Python predicate"):
        import_interrupt_on(config)
    (rule,) = import_interrupt_on(config, when="ask")
    assert rule.verdict is VerdictKind.ASK


def test_callable_description_is_refused_unless_dropped() -> None:
    config = {"t": {"allowed_decisions": ["approve"], "description": describe}}
    with pytest.raises(ConfigurationError, match="description is a callable"):
        import_interrupt_on(config)
    (rule,) = import_interrupt_on(config, callable_description="drop")
    assert rule.description is None


@pytest.mark.parametrize(
    ("mapping", "message"),
    [
        ({"t": "yes"}, "expected true, false or a config mapping"),
        ({"t": 1}, "expected true, false or a config mapping"),
        ({"t": {}}, "allowed_decisions is required"),
        ({"t": {"allowed_decisions": []}}, "non-empty list"),
        ({"t": {"allowed_decisions": "approve"}}, "non-empty list"),
        ({"t": {"allowed_decisions": ["approve", "maybe"]}}, "unknown decision 'maybe'"),
        ({"t": {"allowed_decisions": ["approve"], "description": 3}}, "description must be a string"),
        ({"t": {"allowed_decisions": ["approve"], "whenever": True}}, "unknown key"),
        ({"": True}, "non-empty strings"),
        ({3: True}, "non-empty strings"),
    ],
)
def test_malformed_mappings_raise(mapping: Any, message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        import_interrupt_on(mapping)


def test_a_non_mapping_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="interrupt_on must be a mapping"):
        import_interrupt_on(["write_file"])  # type: ignore[arg-type]
