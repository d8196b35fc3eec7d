"""``crossgate policy replay``: what a candidate policy would change for the calls the log has seen."""

from __future__ import annotations

from pathlib import Path

import pytest

from crossgate import Policy, PolicyRule, ReviewQueue, ToolCall, VerdictKind
from crossgate.policy.replay import replay
from tests.cli.conftest import Cli

CANDIDATE = """\
rules:
  - name: keep-prod
    verdict: deny
    tool: delete_ticket
    where:
      - {arg: id, glob: "P-*"}
    reason: Production tickets are never deleted.
  - name: reads
    verdict: allow
    tool: "read_*"
"""


@pytest.fixture
def candidate(tmp_path: Path) -> Path:
    path = tmp_path / "candidate.yaml"
    path.write_text(CANDIDATE)
    return path


def seed(cli: Cli) -> None:
    for ticket in ("P-1", "P-1", "T-2"):
        cli.submit("delete_ticket", f'{{"id": "{ticket}"}}', "--agent", "triage")
    cli.submit("read_ticket", '{"id": "T-2"}')


def test_replay_lists_the_calls_whose_verdict_the_candidate_changes(cli: Cli, candidate: Path) -> None:
    seed(cli)
    before = cli.snapshot()
    report = cli.json("policy", "replay", str(candidate))
    assert (report["events"], report["calls"], report["changed"]) == (4, 3, 2)
    changed = {(i["tool"], i["args"]["id"]): i for i in report["items"]}
    assert changed.keys() == {("delete_ticket", "P-1"), ("read_ticket", "T-2")}
    prod = changed["delete_ticket", "P-1"]
    assert (prod["seen"], prod["then"], prod["agent"]) == (2, "ask", "triage")
    assert prod["current"]["verdict"] == "ask"
    assert prod["candidate"] == {
        "verdict": "deny",
        "verdict_reason": "Production tickets are never deleted.",
        "verdict_rule": "keep-prod",
    }
    assert changed["read_ticket", "T-2"]["candidate"]["verdict"] == "allow"
    assert len(cli.json("policy", "replay", str(candidate), "--all")["items"]) == 3
    text = cli.ok("policy", "replay", str(candidate)).stdout
    assert "4 calls in the log, 3 distinct; the candidate policy changes the verdict of 2" in text
    assert "ask -> deny" in text and "keep-prod" in text
    assert cli.snapshot() == before, "a replay records nothing"


def test_check_fails_only_when_a_verdict_changes(cli: Cli, candidate: Path, tmp_path: Path) -> None:
    seed(cli)
    assert cli("policy", "replay", str(candidate), "--check").exit_code == 1
    same = tmp_path / "same.yaml"
    same.write_text("default: ask\n")
    result = cli("policy", "replay", str(same), "--check")
    assert result.exit_code == 0 and "changes the verdict of 0" in result.stdout


def test_standing_rules_count_for_both_policies_so_only_the_policy_differs(cli: Cli, candidate: Path) -> None:
    seed(cli)
    cli.ok("rules", "add", "--tool", "read_*", "--effect", "deny")
    report = cli.json("policy", "replay", str(candidate))
    assert [i["tool"] for i in report["items"]] == ["delete_ticket"], "read_ticket is denied under both"


def test_a_bad_candidate_is_refused_with_the_reason_and_records_nothing(cli: Cli, tmp_path: Path) -> None:
    seed(cli)
    before = cli.snapshot()
    bad = tmp_path / "bad.yaml"
    bad.write_text("rules:\n  - name: x\n    verdict: maybe\n")
    result = cli("policy", "replay", str(bad))
    assert result.exit_code != 0 and "verdict" in result.stderr
    missing = cli("policy", "replay", str(tmp_path / "nope.yaml"))
    assert missing.exit_code != 0 and "nope.yaml" in missing.stderr
    assert cli.snapshot() == before


def test_replay_reads_allowed_denied_and_asked_calls_and_skips_other_events(queue: ReviewQueue) -> None:
    deny_t9 = PolicyRule(
        name="no-t9",
        verdict=VerdictKind.DENY,
        tool="delete_ticket",
        where=({"arg": "id", "kind": "equals", "value": "t9"},),
    )
    allow_reads = PolicyRule(name="reads", verdict=VerdictKind.ALLOW, tool="read_*")
    queue.policy = Policy(rules=(deny_t9, allow_reads))
    for tool, ticket in (("delete_ticket", "t9"), ("read_ticket", "t1"), ("delete_ticket", "t2")):
        queue.submit(ToolCall(framework="langchain", tool=tool, args={"id": ticket}, run="r1", agent="a"))
    queue.add_rule(queue.new_rule(effect="allow", tool="archive_*"))  # an event with no call in it
    report = replay(queue.events(), queue.policy, Policy(), now=queue.now())
    assert report.events == 3
    assert [(c.call.tool, c.then, c.current.kind, c.candidate.kind) for c in report.calls] == [
        ("delete_ticket", VerdictKind.DENY, VerdictKind.DENY, VerdictKind.ASK),
        ("read_ticket", VerdictKind.ALLOW, VerdictKind.ALLOW, VerdictKind.ASK),
        ("delete_ticket", VerdictKind.ASK, VerdictKind.ASK, VerdictKind.ASK),
    ]
    assert [c.call.run for c in report.calls] == ["r1"] * 3
    assert len(report.changed) == 2
