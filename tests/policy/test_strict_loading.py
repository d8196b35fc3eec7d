"""A policy file that would silently say something else is refused, on one line naming file, rule and field."""

from __future__ import annotations

from pathlib import Path

import pytest

from crossgate.errors import ConfigurationError
from crossgate.model import FRAMEWORKS
from crossgate.policy import load_policy


def _refused(tmp_path: Path, name: str, text: str) -> str:
    file = tmp_path / name
    file.write_text(text)
    with pytest.raises(ConfigurationError) as caught:
        load_policy(file)
    message = str(caught.value)
    assert "\n" not in message and message.startswith(f"{file}: ")
    return message.removeprefix(f"{file}: ")


def test_a_repeated_key_in_a_json_rule_is_refused_not_read_as_the_last_one(tmp_path: Path) -> None:
    text = '{"rules": [{"name": "no-rm", "verdict": "deny", "tool": "rm", "verdict": "allow"}]}'
    assert _refused(tmp_path, "p.json", text) == (
        "rules[0] (no-rm): repeated key 'verdict'; JSON would silently keep only the last one"
    )


def test_a_second_rules_key_in_json_cannot_drop_every_rule(tmp_path: Path) -> None:
    text = '{"rules": [{"name": "no-rm", "verdict": "deny", "tool": "rm"}], "rules": []}'
    assert _refused(tmp_path, "p.json", text).startswith("repeated key 'rules'")


def test_a_repeated_key_in_a_json_condition_names_the_rule_and_the_field(tmp_path: Path) -> None:
    text = '{"rules": [{"name": "r", "verdict": "deny", "where": [{"arg": "a", "glob": "x", "glob": "y"}]}]}'
    assert _refused(tmp_path, "p.json", text).startswith("rules[0] (r): where[0]: repeated key 'glob'")


def test_json_without_repeated_keys_still_loads(tmp_path: Path) -> None:
    file = tmp_path / "p.json"
    file.write_text('{"rules": [{"name": "no-rm", "verdict": "deny", "tool": "rm", "where": {"a": "x"}}]}')
    assert [r.name for r in load_policy(file).rules] == ["no-rm"]


def test_an_empty_tool_glob_is_refused(tmp_path: Path) -> None:
    message = _refused(tmp_path, "p.yaml", 'rules:\n  - {name: r, verdict: deny, tool: ""}\n')
    assert message.startswith("rules[0] (r): tool: ")


@pytest.mark.parametrize("text", ["frameworks: [openai]", "frameworks: [langgraph, claude]"])
def test_an_unknown_framework_is_refused_with_the_known_names(tmp_path: Path, text: str) -> None:
    message = _refused(tmp_path, "p.yaml", f"rules:\n  - {{name: r, verdict: deny, {text}}}\n")
    assert message.startswith("rules[0] (r): frameworks: unknown framework")
    assert all(name in message for name in FRAMEWORKS)


def test_an_unknown_framework_in_imported_claude_rules_is_refused(tmp_path: Path) -> None:
    text = "claude_permissions:\n  frameworks: [claude]\n  deny: [Bash]\n"
    assert "unknown framework 'claude'" in _refused(tmp_path, "p.yaml", text)


@pytest.mark.parametrize("value", [".inf", "-.inf", ".nan", "-5", "0"])
@pytest.mark.parametrize("field", ["default_timeout_seconds", "default_apply_within_seconds"])
def test_a_default_time_that_is_not_a_positive_finite_number_is_refused(tmp_path: Path, field: str, value: str) -> None:
    assert _refused(tmp_path, "p.yaml", f"{field}: {value}\n").startswith(f"{field}: ")


@pytest.mark.parametrize("value", ["inf", "nan", "-1.5"])
@pytest.mark.parametrize("field", ["timeout_seconds", "apply_within_seconds"])
def test_a_rule_time_that_is_not_a_positive_finite_number_is_refused(tmp_path: Path, field: str, value: str) -> None:
    text = f'[[rules]]\nname = "r"\nverdict = "ask"\n{field} = {value}\n'
    assert _refused(tmp_path, "p.toml", text).startswith(f"rules[0] (r): {field}: ")


def test_json_infinity_is_refused_too(tmp_path: Path) -> None:
    assert _refused(tmp_path, "p.json", '{"default_timeout_seconds": Infinity}').startswith("default_timeout_seconds")


def test_context_keys_are_declared_at_the_top(tmp_path: Path) -> None:
    file = tmp_path / "p.yaml"
    file.write_text("context_keys: [tenant]\nrules:\n  - {name: r, verdict: ask, context: {tenant: acme}}\n")
    assert load_policy(file).context_keys == ("tenant",)


@pytest.mark.parametrize(
    ("name", "template"),
    [
        (
            "p.json",
            '{{"rules": [{{"name": "r", "verdict": "deny", "tool": "t", '
            '"where": [{{"arg": "a", "kind": "equals", "value": {}}}]}}]}}',
        ),
        ("p.yaml", "rules:\n  - {{name: r, verdict: deny, tool: t, where: [{{arg: a, kind: equals, value: {}}}]}}\n"),
        ("p.toml", "x = {}\n"),
    ],
)
def test_a_policy_nested_thousands_deep_is_one_line_not_a_recursion_error(
    tmp_path: Path, name: str, template: str
) -> None:
    deep = "[" * 3000 + "1" + "]" * 3000
    assert _refused(tmp_path, name, template.format(deep)) == "nested more than 72 levels deep"


def test_a_condition_value_as_deep_as_arguments_may_be_still_loads(tmp_path: Path) -> None:
    value = "[" * 60 + "1" + "]" * 60
    file = tmp_path / "p.json"
    condition = f'{{"arg": "a", "kind": "equals", "value": {value}}}'
    file.write_text(f'{{"rules": [{{"name": "r", "verdict": "deny", "tool": "t", "where": [{condition}]}}]}}')
    assert load_policy(file).rules[0].name == "r"
