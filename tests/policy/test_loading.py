"""Policy files in YAML and TOML, the CROSSGATE_POLICY variable, and the errors a bad file gives."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from crossgate.errors import ConfigurationError
from crossgate.model import DecisionKind, VerdictKind
from crossgate.policy import MatchKind, Policy, load_policy, policy_from_dict, resolve_policy
from crossgate.policy.loading import POLICY_ENV

from .helpers import NOW, call

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "policy.yaml"

YAML = """
version: 1
default: deny
default_reason: Only listed tools run.
default_timeout_seconds: 600
rules:
  - name: gate-deletes
    verdict: ask
    tool: delete_ticket
    allowed_decisions: [approve, reject]
    timeout_seconds: 60
    rememberable: false
  - name: rm
    verdict: ask
    tool: Bash
    where: {command: "rm *"}
  - name: prod
    verdict: deny
    tool: "*"
    frameworks: [langgraph]
    agents: ["ops-*"]
    where:
      - {arg: target.env, equals: prod}
      - {arg: dry_run, absent: true}
  - name: reads
    verdict: allow
    tool: "read_*"
    where:
      - {arg: path, path: "docs/**"}
      - {arg: kind, one_of: [md, txt]}
      - {arg: owner, present: true}
      - {arg: title, regex: "^[A-Z]"}
      - {arg: path, kind: glob, pattern: "*"}
"""

TOML = """
version = 1
default = "deny"
default_reason = "Only listed tools run."
default_timeout_seconds = 600

[[rules]]
name = "gate-deletes"
verdict = "ask"
tool = "delete_ticket"
allowed_decisions = ["approve", "reject"]
timeout_seconds = 60
rememberable = false

[[rules]]
name = "rm"
verdict = "ask"
tool = "Bash"
where = { command = "rm *" }

[[rules]]
name = "prod"
verdict = "deny"
tool = "*"
frameworks = ["langgraph"]
agents = ["ops-*"]
where = [{ arg = "target.env", equals = "prod" }, { arg = "dry_run", absent = true }]

[[rules]]
name = "reads"
verdict = "allow"
tool = "read_*"
where = [
  { arg = "path", path = "docs/**" },
  { arg = "kind", one_of = ["md", "txt"] },
  { arg = "owner", present = true },
  { arg = "title", regex = "^[A-Z]" },
  { arg = "path", kind = "glob", pattern = "*" },
]
"""


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(("name", "text"), [("p.yaml", YAML), ("p.yml", YAML), ("p.toml", TOML)])
def test_yaml_and_toml_give_the_same_policy(tmp_path: Path, name: str, text: str) -> None:
    policy = load_policy(write(tmp_path, name, text))
    assert policy.default is VerdictKind.DENY
    assert (policy.default_reason, policy.default_timeout_seconds) == ("Only listed tools run.", 600)
    gate, rm, prod, reads = policy.rules
    assert gate.allowed_decisions == (DecisionKind.APPROVE, DecisionKind.REJECT)
    assert (gate.timeout_seconds, gate.rememberable) == (60, False)
    assert [(c.arg, c.kind, c.pattern) for c in rm.where] == [("command", MatchKind.GLOB, "rm *")]
    assert [c.kind for c in prod.where] == [MatchKind.EQUALS, MatchKind.ABSENT]
    assert [c.kind for c in reads.where] == [
        MatchKind.PATH,
        MatchKind.ONE_OF,
        MatchKind.PRESENT,
        MatchKind.REGEX,
        MatchKind.GLOB,
    ]
    assert policy == load_policy(write(tmp_path, "other.yaml", YAML))


def test_a_loaded_policy_evaluates(tmp_path: Path) -> None:
    policy = load_policy(write(tmp_path, "p.yaml", YAML))
    prod = {"target": {"env": "prod"}}
    cases = [
        (call("delete_ticket"), "ask"),
        (call("Bash", args={"command": "rm x"}), "ask"),
        (call("deploy", agent="ops-1", args=prod), "deny"),
        (call("deploy", agent="ops-1", args={**prod, "dry_run": True}), "deny"),  # default deny
        (call("read_doc", args={"path": "docs/a.md", "kind": "md", "owner": "x", "title": "Hi"}), "allow"),
        (call("read_doc", args={"path": "docs/a.md", "kind": "pdf", "owner": "x", "title": "Hi"}), "deny"),
    ]
    for tool_call, kind in cases:
        assert policy.evaluate(tool_call, now=NOW).kind == kind, tool_call


def test_embedded_claude_and_langchain_rules(tmp_path: Path) -> None:
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude" / "settings.json").write_text(json.dumps({"permissions": {"deny": ["WebFetch"]}}))
    text = """
claude_permissions:
  root: proj
  frameworks: [claude-agent-sdk]
  settings_file: .claude/settings.json
  deny: ["Bash(rm -rf *)", "WebFetch"]
  allow: ["Edit(/src/**)"]
langchain_interrupt_on:
  send_email: {allowed_decisions: [approve, reject], description: Check the recipient.}
  lookup: false
"""
    policy = load_policy(write(tmp_path, "policy.yaml", text))
    names = [r.name for r in policy.rules]
    assert names[0] == "claude:deny:WebFetch"
    assert names.count("claude:deny:WebFetch") == 1  # in the settings file and inline: one rule
    assert "claude:deny:Bash(rm -rf *)" in names
    assert "langchain:ask:send_email" in names and "langchain:allow:lookup" in names
    root = (tmp_path / "proj").as_posix()
    claude = "claude-agent-sdk"
    assert policy.evaluate(call("Edit", claude, args={"file_path": f"{root}/src/a.py"}), now=NOW).kind == "allow"
    assert policy.evaluate(call("Edit", "langgraph", args={"file_path": f"{root}/src/a.py"}), now=NOW).kind == "ask"
    assert policy.evaluate(call("Bash", claude, args={"command": "sudo rm -rf /"}), now=NOW).kind == "deny"
    email = policy.evaluate(call("send_email"), now=NOW)
    assert (email.kind, email.description) == ("ask", "Check the recipient.")


def test_the_example_policy_loads_and_gates_what_it_says() -> None:
    policy = load_policy(EXAMPLE)
    cases = [
        ("delete_ticket", {"ticket_id": "t3"}, "ask"),
        ("mcp__tickets__delete_ticket", {"ticket_id": "t3"}, "ask"),
        ("write_file", {"path": "notes.txt", "content": "x"}, "ask"),
        ("write_file", {"path": "/etc/passwd", "content": "x"}, "deny"),
        ("write_file", {"path": "a/../../x", "content": "x"}, "deny"),
        ("execute_sql", {"query": "SELECT 1"}, "allow"),
        ("execute_sql", {"query": "DELETE FROM tickets"}, "ask"),
        ("execute_sql", {"query": "drop table tickets"}, "deny"),
        ("Bash", {"command": "rm notes.txt"}, "ask"),
        ("Bash", {"command": "rm -rf /home"}, "deny"),
        ("Bash", {"command": "ls -la"}, "allow"),
        ("read_ticket", {"ticket_id": "t1"}, "allow"),
        ("lookup_customer", {}, "allow"),
        ("send_email", {}, "ask"),
        ("something_else", {}, "ask"),
    ]
    for tool, args, kind in cases:
        assert policy.evaluate(call(tool, args=args), now=NOW).kind == kind, (tool, args)
    ticket = policy.evaluate(call("delete_ticket", args={"ticket_id": "t3"}), now=NOW)
    assert ticket.timeout_seconds == 3600
    assert policy.default_timeout_seconds == 86400


def test_policy_from_dict_and_empty_files(tmp_path: Path) -> None:
    assert policy_from_dict({}) == Policy()
    assert load_policy(write(tmp_path, "empty.yaml", "")) == Policy()
    assert load_policy(write(tmp_path, "p.json", json.dumps({"default": "allow"}))).default is VerdictKind.ALLOW


def test_resolve_policy_prefers_the_path_then_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    allow = write(tmp_path, "allow.yaml", "default: allow\n")
    deny = write(tmp_path, "deny.toml", 'default = "deny"\n')
    monkeypatch.delenv(POLICY_ENV, raising=False)
    assert resolve_policy(None) == Policy()
    monkeypatch.setenv(POLICY_ENV, "")
    assert resolve_policy(None) == Policy()
    monkeypatch.setenv(POLICY_ENV, str(deny))
    assert resolve_policy(None).default is VerdictKind.DENY
    assert resolve_policy("").default is VerdictKind.DENY
    assert resolve_policy(str(allow)).default is VerdictKind.ALLOW
    monkeypatch.setenv(POLICY_ENV, str(tmp_path / "missing.yaml"))
    with pytest.raises(ConfigurationError, match=r"missing\.yaml: cannot read"):
        resolve_policy(None)


BAD: list[tuple[str, str, str]] = [
    ("bad.yaml", "rules: [\n  - name: x\n    verdict: ask\n  - {", "not valid YAML"),
    ("bad.toml", "rules = [", "not valid TOML"),
    ("bad.json", "{", "not valid JSON"),
    ("list.yaml", "- a\n- b\n", "expected a mapping at the top level"),
    ("typo.yaml", "rule: []\n", "unknown key(s) rule"),
    ("version.yaml", "version: 2\n", "version: this crossgate reads policy format 1, not 2"),
    ("rules.yaml", "rules: {name: x}\n", "rules must be a list"),
    ("item.yaml", "rules: [just-a-string]\n", "rules[0]: expected a mapping"),
    ("verdict.yaml", "rules: [{name: x, verdict: maybe}]\n", "rules[0] (x): verdict: Input should be"),
    ("name.yaml", "rules: [{verdict: ask}]\n", "rules[0]: name: Field required"),
    ("extra.yaml", "rules: [{name: x, verdict: ask, tools: [a]}]\n", "rules[0] (x): tools: Extra inputs"),
    ("decisions.yaml", "rules: [{name: x, verdict: ask, allowed_decisions: [okay]}]\n", "allowed_decisions.0"),
    ("empty-decisions.yaml", "rules: [{name: x, verdict: ask, allowed_decisions: []}]\n", "cannot be empty"),
    ("timeout.yaml", "rules: [{name: x, verdict: ask, timeout_seconds: -1}]\n", "timeout_seconds: Input should be"),
    ("regex.yaml", "rules: [{name: x, verdict: deny, where: [{arg: q, regex: '('}]}]\n", "where[0]: bad regular"),
    ("two.yaml", "rules: [{name: x, verdict: deny, where: [{arg: q, glob: a, regex: b}]}]\n", "(found glob, regex)"),
    ("flag.yaml", "rules: [{name: x, verdict: deny, where: [{arg: q, present: false}]}]\n", "write present: true"),
    ("where.yaml", "rules: [{name: x, verdict: deny, where: rm}]\n", "where must be a list"),
    ("cond.yaml", "rules: [{name: x, verdict: deny, where: [rm]}]\n", "where[0]: expected a mapping"),
    ("kind.yaml", "rules: [{name: x, verdict: deny, where: [{arg: q, kind: fuzzy, pattern: a}]}]\n", "where[0]: kind"),
    ("ctx.yaml", "rules: [{name: x, verdict: deny, context: tenant}]\n", "context must be a list"),
    (
        "ctx-cond.yaml",
        "rules: [{name: x, verdict: deny, context: [{arg: t, regex: '('}]}]\n",
        "context[0]: bad regular",
    ),
    ("approvals.yaml", "rules: [{name: x, verdict: ask, approvals: 0}]\n", "approvals: Input should be"),
    ("dup.yaml", "rules: [{name: x, verdict: ask}, {name: x, verdict: deny}]\n", "repeated: x"),
    ("dupkey.yaml", "default: allow\ndefault: deny\n", "repeated key 'default'"),
    ("default.yaml", "default: sometimes\n", "default: Input should be"),
    (
        "claude.yaml",
        "claude_permissions: {deny: ['Bash(rm *']}\n",
        "claude_permissions: Claude settings: permissions.deny",
    ),
    ("claude-key.yaml", "claude_permissions: {deny: [], alow: []}\n", "unknown key(s) in permissions: alow"),
    ("claude-root.yaml", "claude_permissions: {root: 3, deny: []}\n", "claude_permissions.root: expected a path"),
    ("claude-type.yaml", "claude_permissions: [Bash]\n", "claude_permissions: expected a mapping"),
    ("fw.yaml", "claude_permissions: {frameworks: claude, deny: []}\n", "claude_permissions.frameworks"),
    ("lc.yaml", "langchain_interrupt_on: {t: {allowed_decisions: [maybe]}}\n", "langchain_interrupt_on: interrupt_on"),
    ("policy.ini", "default = ask\n", "unknown policy file type .ini"),
]


@pytest.mark.parametrize(("name", "text", "message"), BAD, ids=[b[0] for b in BAD])
def test_malformed_files_name_the_file_and_the_field(tmp_path: Path, name: str, text: str, message: str) -> None:
    path = write(tmp_path, name, text)
    with pytest.raises(ConfigurationError) as caught:
        load_policy(path)
    assert str(caught.value).startswith(str(path)), str(caught.value)
    assert message in str(caught.value), str(caught.value)


def test_missing_settings_file_and_non_utf8_file(tmp_path: Path) -> None:
    path = write(tmp_path, "p.yaml", "claude_permissions: {settings_file: nope.json}\n")
    with pytest.raises(ConfigurationError, match=r"nope\.json: cannot read"):
        load_policy(path)
    binary = tmp_path / "b.yaml"
    binary.write_bytes(b"\xff\xfe\x00bad")
    with pytest.raises(ConfigurationError, match="not UTF-8"):
        load_policy(binary)


def test_policy_from_dict_names_its_source() -> None:
    bad: Any = {"rules": [{"name": "x", "verdict": "nope"}]}
    with pytest.raises(ConfigurationError, match=r"^inline: rules\[0\] \(x\): verdict"):
        policy_from_dict(bad, source="inline")


DOCS = Path(__file__).resolve().parents[2] / "docs" / "policy.md"


def _blocks(language: str) -> list[str]:
    text = DOCS.read_text(encoding="utf-8")
    return re.findall(rf"```{language}\n(.*?)```", text, flags=re.DOTALL)


def test_every_policy_snippet_in_the_docs_loads(tmp_path: Path) -> None:
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude" / "settings.json").write_text(json.dumps({"permissions": {"ask": ["WebSearch"]}}))
    snippets = [("yaml", block) for block in _blocks("yaml")] + [("toml", block) for block in _blocks("toml")]
    assert len(snippets) >= 4
    for index, (suffix, block) in enumerate(snippets):
        policy = load_policy(write(tmp_path, f"snippet{index}.{suffix}", block))
        assert policy.rules, block


def test_context_conditions_load_in_both_forms(tmp_path: Path) -> None:
    text = (
        "rules:\n"
        "  - {name: acme, verdict: ask, tool: '*', context: {tenant: acme}}\n"
        "  - name: unattended\n"
        "    verdict: deny\n"
        "    tool: Bash\n"
        "    context: [{arg: permission_mode, equals: bypassPermissions}]\n"
    )
    acme, unattended = load_policy(write(tmp_path, "ctx.yaml", text)).rules
    assert [(c.arg, c.kind, c.pattern) for c in acme.context] == [("tenant", MatchKind.GLOB, "acme")]
    assert [(c.arg, c.kind, c.value) for c in unattended.context] == [
        ("permission_mode", MatchKind.EQUALS, "bypassPermissions")
    ]
