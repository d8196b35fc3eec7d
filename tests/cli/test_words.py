"""What `submit` says and how it exits match the verdict; the README lists every exit code the CLI uses."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from crossgate import MemoryStore, Policy, PolicyRule, ReviewQueue, ToolCall, VerdictKind
from crossgate.authority import Authority
from crossgate.cli import exit_codes
from tests.cli.conftest import Cli

README = Path(__file__).resolve().parents[2] / "README.md"


def cli_for(default: VerdictKind, **policy: object) -> Cli:
    return Cli(
        ReviewQueue(MemoryStore(), Policy(default=default, **policy), authority=Authority.generate()), CliRunner()
    )  # type: ignore[arg-type]


SUBMIT = ("submit", "--framework", "langgraph", "--tool", "delete_ticket", "--args", '{"id": "t3"}')


def test_a_default_allow_says_it_allows() -> None:
    result = cli_for(VerdictKind.ALLOW)(*SUBMIT)
    assert result.exit_code == 0
    assert (
        result.stdout.strip() == "allowed by policy: No policy rule covers this call; the policy's default allows it."
    )
    assert "review" not in result.stdout


def test_a_default_deny_says_it_denies_and_exits_6_in_text_and_json() -> None:
    cli = cli_for(VerdictKind.DENY)
    result = cli(*SUBMIT)
    assert result.exit_code == exit_codes.DENIED == 6
    assert (
        result.stdout.strip()
        == "denied by policy: No policy rule covers this call, and the policy's default denies it."
    )
    as_json = cli(*SUBMIT, "--json")
    assert as_json.exit_code == 6
    assert json.loads(as_json.stdout)["verdict"] == "deny"
    assert cli.queue.list_requests().items == [], "nothing was stored"


def test_a_default_ask_still_asks_a_person_and_a_given_reason_is_kept() -> None:
    cli = cli_for(VerdictKind.ASK)
    assert cli.json(*SUBMIT[:-2], "--args", '{"id": "t1"}')["reason"] == (
        "No policy rule covers this call, so a person must review it."
    )
    own = cli_for(VerdictKind.ALLOW, default_reason="House rule: anything goes.")(*SUBMIT)
    assert own.stdout.strip() == "allowed by policy: House rule: anything goes."


def test_a_rule_deny_exits_6_and_an_allow_exits_0() -> None:
    rules = (PolicyRule(name="no-deletes", verdict=VerdictKind.DENY, tool="delete_*", reason="Never."),)
    cli = cli_for(VerdictKind.ALLOW, rules=rules)
    assert cli(*SUBMIT).exit_code == 6
    assert cli("submit", "--framework", "langgraph", "--tool", "read_ticket").exit_code == 0


def test_a_self_decision_exits_5_and_the_readme_says_so() -> None:
    cli = cli_for(VerdictKind.ASK)
    request = cli.queue.submit(ToolCall(framework="langgraph", tool="delete_ticket", args={}), requested_by="pat")
    assert request.request is not None
    refused = cli("approve", request.request.id, "--reviewer", "pat")
    assert refused.exit_code == exit_codes.INVALID == 5
    assert "pat" in refused.stderr
    text = " ".join(README.read_text().split())
    assert "5 invalid decision or arguments" in text and "decision by the person the run acts for" in text


@pytest.mark.parametrize(
    "code", sorted({v for k, v in vars(exit_codes).items() if re.fullmatch(r"[A-Z_]+", k) and isinstance(v, int)})
)
def test_the_readme_lists_every_exit_code(code: int) -> None:
    exits = " ".join(README.read_text().split()).split("CLI exit codes:")[1][:600]
    assert re.search(rf"\b{code} \w", exits), exits
