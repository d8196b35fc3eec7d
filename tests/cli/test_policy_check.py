"""``crossgate policy check FILE``: names each rule that cannot do what it seems to, else prints ok."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.cli.conftest import CROSSGATE, Cli, subprocess_env


def _check(cli: Cli, tmp_path: Path, text: str, name: str = "policy.yaml") -> tuple[int, list[str]]:
    file = tmp_path / name
    file.write_text(text)
    result = cli("policy", "check", str(file))
    prefix = f"{file}: "
    lines = result.stdout.splitlines()
    assert all(line.startswith(prefix) for line in lines), result.stdout
    return result.exit_code, [line.removeprefix(prefix) for line in lines]


def test_a_clean_policy_is_ok(cli: Cli, tmp_path: Path) -> None:
    text = """\
context_keys: [tenant]
rules:
  - {name: no-prod, verdict: deny, tool: delete_ticket, where: {id: "P-*"}}
  - {name: deletes, verdict: ask, tool: "delete_*"}
  - {name: reads, verdict: allow, tool: "read_*", agents: ["ops-*"]}
  - {name: plan, verdict: deny, tool: Bash, frameworks: [claude-agent-sdk], context: {permission_mode: plan}}
  - {name: acme, verdict: ask, tool: "*", context: {tenant: acme, requested_by: "intern-*"}}
"""
    assert _check(cli, tmp_path, text) == (0, ["ok"])


def test_the_example_policy_is_ok(cli: Cli) -> None:
    example = Path(__file__).resolve().parents[2] / "examples" / "policy.yaml"
    result = cli("policy", "check", str(example))
    assert result.exit_code == 0 and result.stdout.strip().endswith(": ok")


@pytest.mark.parametrize(
    ("where", "why"),
    [
        ("[{arg: id, absent: true}, {arg: id, equals: t3}]", "'id' must be absent"),
        ("[{arg: id, absent: true}, {arg: id, present: true}]", "'id' must be absent"),
        ("[{arg: id, equals: t3}, {arg: id, equals: t4}]", "'id' has no value"),
        ("[{arg: id, one_of: [a, b]}, {arg: id, one_of: [c]}]", "'id' has no value"),
        ("[{arg: id, equals: t3}, {arg: id, glob: 'P-*'}]", "'id' has no value"),
        ("[{arg: n, one_of: [1, 2]}, {arg: n, regex: '^3'}]", "'n' has no value"),
    ],
)
def test_a_rule_whose_conditions_contradict_never_matches(cli: Cli, tmp_path: Path, where: str, why: str) -> None:
    code, lines = _check(cli, tmp_path, f"rules:\n  - {{name: dead, verdict: deny, tool: t, where: {where}}}\n")
    assert code == 1
    assert lines == [f"rule 'dead': never matches: where: {why}" + lines[0].split(why, 1)[1]]


def test_conditions_that_can_hold_together_are_not_reported(cli: Cli, tmp_path: Path) -> None:
    where = "[{arg: id, one_of: [t3, P-1]}, {arg: id, glob: 'P-*'}, {arg: id, present: true}, {arg: x, absent: true}]"
    text = f"rules:\n  - {{name: live, verdict: deny, tool: t, where: {where}}}\n"
    assert _check(cli, tmp_path, text) == (0, ["ok"])


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("{name: first, verdict: deny, tool: '*'}", "{name: second, verdict: deny, tool: rm}"),
        ("{name: first, verdict: deny, tool: 'delete_*'}", "{name: second, verdict: ask, tool: delete_ticket}"),
        ("{name: first, verdict: deny, tool: 'delete_*'}", "{name: second, verdict: allow, tool: 'delete_t*'}"),
        ("{name: first, verdict: ask, tool: t}", "{name: second, verdict: ask, tool: t, where: {id: 'P-*'}}"),
        (
            "{name: first, verdict: ask, tool: t, frameworks: [langgraph, langchain]}",
            "{name: second, verdict: allow, tool: t, frameworks: [langgraph]}",
        ),
        (
            "{name: first, verdict: allow, tool: t, where: [{arg: id, present: true}]}",
            "{name: second, verdict: allow, tool: t, where: [{arg: id, equals: t3}, {arg: x, equals: 1}]}",
        ),
        (
            "{name: first, verdict: deny, tool: t, agents: ['ops-*']}",
            "{name: second, verdict: ask, tool: t, agents: [ops-1, ops-2]}",
        ),
        (
            "{name: first, verdict: deny, tool: t, where: [{arg: id, one_of: [a, b, c]}]}",
            "{name: second, verdict: deny, tool: t, where: [{arg: id, one_of: [a, b]}]}",
        ),
    ],
)
def test_a_rule_covered_by_an_earlier_rule_whose_verdict_wins_is_shadowed(
    cli: Cli, tmp_path: Path, first: str, second: str
) -> None:
    code, lines = _check(cli, tmp_path, f"rules:\n  - {first}\n  - {second}\n")
    assert code == 1
    assert len(lines) == 1 and lines[0].startswith("rule 'second': shadowed: rule 'first' (")


def test_a_later_deny_shadows_an_earlier_allow_it_covers(cli: Cli, tmp_path: Path) -> None:
    text = (
        "rules:\n  - {name: reads, verdict: allow, tool: read_secret}\n"
        "  - {name: no-secrets, verdict: deny, tool: '*_secret'}\n"
    )
    code, lines = _check(cli, tmp_path, text)
    assert code == 1 and lines == [
        "rule 'reads': shadowed: rule 'no-secrets' (deny) matches every call it matches, so it never decides"
    ]


@pytest.mark.parametrize(
    ("first", "second"),
    [
        # a narrower deny after a broader allow still decides: deny beats allow
        ("{name: first, verdict: allow, tool: '*'}", "{name: second, verdict: deny, tool: rm}"),
        # the first rule does not cover the second's calls
        ("{name: first, verdict: deny, tool: t, where: {id: 'P-*'}}", "{name: second, verdict: ask, tool: t}"),
        ("{name: first, verdict: deny, tool: 'delete_*'}", "{name: second, verdict: ask, tool: '*_ticket'}"),
        ("{name: first, verdict: deny, tool: t, frameworks: [langgraph]}", "{name: second, verdict: ask, tool: t}"),
        ("{name: first, verdict: deny, tool: t, agents: ['ops-*']}", "{name: second, verdict: ask, tool: t}"),
        # a rule that is not rememberable keeps a remembered approval from lifting the earlier ask
        ("{name: first, verdict: ask, tool: t}", "{name: second, verdict: ask, tool: t, rememberable: false}"),
    ],
)
def test_rules_that_still_decide_are_not_reported_as_shadowed(
    cli: Cli, tmp_path: Path, first: str, second: str
) -> None:
    assert _check(cli, tmp_path, f"rules:\n  - {first}\n  - {second}\n") == (0, ["ok"])


def test_a_context_key_no_adapter_sets_is_a_warning_until_declared(cli: Cli, tmp_path: Path) -> None:
    rules = "rules:\n  - {name: acme, verdict: ask, tool: '*', context: {tenant: acme}}\n"
    code, lines = _check(cli, tmp_path, rules)
    assert code == 1 and lines == [
        "rule 'acme': warning: context 'tenant' is set by no adapter; "
        "if your app sets it, declare context_keys: [tenant]"
    ]
    assert _check(cli, tmp_path, "context_keys: [tenant]\n" + rules) == (0, ["ok"])


def test_a_context_key_only_an_excluded_adapter_sets_is_a_warning(cli: Cli, tmp_path: Path) -> None:
    text = (
        "rules:\n  - {name: m, verdict: deny, tool: t, frameworks: [openai-agents], context: {permission_mode: plan}}\n"
    )
    code, lines = _check(cli, tmp_path, text)
    assert code == 1
    assert lines[0].startswith("rule 'm': warning: context 'permission_mode' is set only by claude-agent-sdk")


def test_an_unknown_framework_is_named_on_one_line(cli: Cli, tmp_path: Path) -> None:
    file = tmp_path / "policy.yaml"
    file.write_text("rules:\n  - {name: r, verdict: deny, frameworks: [openai]}\n")
    result = cli("policy", "check", str(file))
    assert result.exit_code == 1 and result.stdout == ""
    assert result.stderr.strip() == (
        f"crossgate: error: {file}: rules[0] (r): frameworks: unknown framework 'openai' (it would never match); "
        "expected openai-agents, claude-agent-sdk, langgraph, langchain, pydantic-ai, aap, ai-sdk, mastra, "
        "openai-agents-ts, claude-agent-sdk-ts, langgraph-ts, langchain-ts"
    )


def test_findings_as_json(cli: Cli, tmp_path: Path) -> None:
    file = tmp_path / "policy.yaml"
    file.write_text("rules:\n  - {name: a, verdict: deny}\n  - {name: b, verdict: deny, tool: x}\n")
    result = cli("policy", "check", str(file), "--json")
    assert result.exit_code == 1
    assert json.loads(result.stdout) == {
        "ok": False,
        "findings": [
            {
                "rule": "b",
                "kind": "shadowed",
                "message": "shadowed: rule 'a' (deny) matches every call it matches, so it never decides",
            }
        ],
    }


@pytest.mark.slow
def test_the_installed_command_checks_without_a_store(tmp_path: Path) -> None:
    file = tmp_path / "policy.json"
    file.write_text('{"rules": [{"name": "a", "verdict": "deny"}, {"name": "b", "verdict": "ask", "tool": "x"}]}')
    child = subprocess.run(
        [str(CROSSGATE), "policy", "check", str(file)],
        capture_output=True,
        text=True,
        env=subprocess_env(),
        timeout=60,
        cwd=tmp_path,
        check=False,
    )
    assert child.returncode == 1
    assert child.stdout.splitlines() == [
        f"{file}: rule 'b': shadowed: rule 'a' (deny) matches every call it matches, so it never decides"
    ]
    assert not list(tmp_path.glob("*.db")), "checking a policy opens no store"
