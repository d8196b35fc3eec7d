"""``crossgate policy apply | show | history | diff``, ``audit checkpoint`` and ``audit verify --authority`` on a real
SQLite file, through the command line as an operator uses it. Errors are one line (and JSON with ``--json``)."""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner, Result

from crossgate.authority import Keyring
from crossgate.cli import app

READS_AND_DELETES = """
rules:
  - name: reads
    tool: read_*
    verdict: allow
  - name: deletes
    tool: delete_*
    verdict: ask
    reason: Deleting cannot be undone.
"""
NO_PROD = """
default: deny
rules:
  - name: no-prod
    tool: delete_*
    verdict: deny
    where: {env: prod}
    reason: Never in prod.
  - name: deletes
    tool: delete_*
    verdict: ask
    reason: Deleting cannot be undone; check the id.
"""


class Operator:
    """Runs ``crossgate`` against one database, with (or without) the operator's key directory."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.db = str(folder / "crossgate.db")
        self.keys = folder / "authority"
        self.env: dict[str, str | None] = {
            "CROSSGATE_DB": self.db,
            "CROSSGATE_POLICY": None,
            "CROSSGATE_AUTHORITY_DIR": str(self.keys),
            "CROSSGATE_AUTHORITY_PUBKEY": None,
            "CROSSGATE_AUTHORITY_PUBKEY_FILE": None,
        }
        self.runner = CliRunner()

    def __call__(self, *args: str, **env: str | None) -> Result:
        return self.runner.invoke(app, list(args), env={**self.env, **env})

    def ok(self, *args: str, **env: str | None) -> Result:
        result = self(*args, **env)
        assert result.exit_code == 0, (result.exit_code, result.stdout, result.stderr)
        return result

    def json(self, *args: str, **env: str | None) -> Any:
        return json.loads(self.ok(*args, "--json", **env).stdout)

    def file(self, name: str, text: str) -> str:
        path = self.folder / name
        path.write_text(text, encoding="utf-8")
        return str(path)

    @property
    def pin(self) -> str:
        return Keyring.open(self.keys).pin_text()


@pytest.fixture
def cg(tmp_path: Path) -> Operator:
    operator = Operator(tmp_path)
    operator.ok("init")
    return operator


@pytest.fixture
def keyed(cg: Operator) -> Operator:
    Keyring.init(cg.keys)
    return cg


def one_line_error(result: Result, code: int, *words: str) -> None:
    assert result.exit_code == code, (result.exit_code, result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("crossgate: error: "), result.stderr
    for word in words:
        assert word in lines[0], lines[0]


def test_apply_without_the_key_refuses_in_one_line_and_stores_nothing(cg: Operator) -> None:
    policy = cg.file("p.yaml", READS_AND_DELETES)
    one_line_error(cg("policy", "apply", policy), 1, "signs with the authority's private key", "crossgate keys init")
    refused = cg("policy", "apply", policy, "--json")
    assert json.loads(refused.stdout)["error"]["type"] == "ConfigurationError"
    assert cg.json("policy", "history")["items"] == []
    assert cg.json("events")["items"] == []


def test_apply_history_show_and_diff(keyed: Operator) -> None:
    first = keyed.ok("policy", "apply", keyed.file("p1.yaml", READS_AND_DELETES), "--by", "ann")
    assert first.stdout.startswith("applied policy version 1 (sha256 ")
    assert "changes: added reads, deletes" in first.stderr
    second = keyed.json("policy", "apply", keyed.file("p2.yaml", NO_PROD), "--by", "bob")
    assert second["version"] == 2 and second["created_by"] == "bob" and second["signature"]["status"] == "valid"
    assert second["changes"] == {
        "added": ["no-prod"],
        "removed": ["reads"],
        "changed": ["deletes"],
        "moved": False,
        "settings": ["default"],
    }
    again = keyed.ok("policy", "apply", keyed.file("p3.yaml", NO_PROD))
    assert again.stdout.strip() == "policy unchanged: version 2 is this policy already"

    history = keyed.json("policy", "history")["items"]
    assert [(v["version"], v["created_by"], v["signature"]["status"]) for v in history] == [
        (1, "ann", "valid"),
        (2, "bob", "valid"),
    ]
    listed = keyed.ok("policy", "history").stdout.splitlines()
    assert listed[-1].endswith("(current)") and "p2.yaml" in listed[-1]

    shown = keyed.ok("policy", "show")
    assert yaml.safe_load(shown.stdout)["rules"][0]["name"] == "no-prod"
    assert "policy version 2, applied by bob" in shown.stderr and "signature valid" in shown.stderr
    reapplied = keyed.ok("policy", "apply", keyed.file("shown.yaml", shown.stdout))
    assert "policy unchanged" in reapplied.stdout  # show prints a file that applies as the same policy
    assert keyed.json("policy", "show", "1")["policy"]["rules"][0]["name"] == "reads"

    diff = keyed.ok("policy", "diff")
    assert diff.stdout.startswith("--- version 1\n+++ version 2\n")
    assert "+- name: no-prod" in diff.stdout and "-- name: reads" in diff.stdout
    to_file = keyed.json("policy", "diff", "2", keyed.file("p1.yaml", READS_AND_DELETES))
    assert to_file["to"].endswith("p1.yaml") and to_file["changes"]["added"] == ["reads"]
    same = keyed.ok("policy", "diff", "2", keyed.file("p4.yaml", NO_PROD))
    assert same.stdout.startswith("no differences between version 2 and ")
    kinds = [(e["kind"], e["actor"]) for e in keyed.json("events")["items"]]
    assert kinds == [("policy_applied", "ann"), ("policy_applied", "bob")]


def test_bad_input_is_one_line(keyed: Operator) -> None:
    one_line_error(keyed("policy", "show"), 3, "no policy version is stored yet")
    keyed.ok("policy", "apply", keyed.file("p.yaml", READS_AND_DELETES))
    one_line_error(keyed("policy", "show", "7"), 3, "no policy version 7")
    one_line_error(keyed("policy", "diff", "1", "9"), 3, "no policy version 9")
    one_line_error(keyed("policy", "apply", keyed.file("bad.yaml", "rules: 3\n")), 1, "rules must be a list")
    one_line_error(keyed("policy", "apply", str(keyed.folder / "missing.yaml")), 1, "cannot read the policy file")
    one_line_error(keyed("policy", "apply", keyed.file("p.yaml", READS_AND_DELETES), "--by", " "), 1, "--by")
    refused = keyed("policy", "show", "7", "--json")
    assert json.loads(refused.stdout)["error"]["exit_code"] == 3
    assert len(keyed.json("policy", "history")["items"]) == 1


def test_show_and_history_say_when_a_stored_version_was_replaced(keyed: Operator) -> None:
    keyed.ok("policy", "apply", keyed.file("p.yaml", READS_AND_DELETES))
    with sqlite3.connect(keyed.db) as conn:
        conn.execute("UPDATE policy_versions SET document = replace(document, '\"ask\"', '\"allow\"')")
    shown = keyed("policy", "show")
    assert shown.exit_code == 1 and "signature INVALID" in shown.stderr
    assert keyed("policy", "show", "--json").exit_code == 1
    assert json.loads(keyed("policy", "show", "--json").stdout)["signature"]["status"] == "invalid"
    assert keyed.json("policy", "history")["items"][0]["signature"]["status"] == "invalid"
    unpinned = keyed.json("policy", "history", CROSSGATE_AUTHORITY_DIR=str(keyed.folder / "elsewhere"))
    assert unpinned["items"][0]["signature"]["status"] == "unchecked"


def test_the_cli_evaluates_the_stored_policy_and_announces_a_local_file(keyed: Operator) -> None:
    keyed.ok("policy", "apply", keyed.file("p.yaml", NO_PROD))
    submit = ["submit", "--framework", "langgraph", "--tool", "delete_ticket", "--json"]
    denied = keyed(*submit, "--args", '{"env": "prod"}')
    assert denied.exit_code == 6 and json.loads(denied.stdout)["verdict_reason"] == "Never in prod."
    asked = keyed.json(*submit[:-1], "--args", '{"env": "dev"}')
    assert asked["verdict"] == "ask" and asked["status"] == "pending"
    local = keyed.file("local.yaml", "rules: [{name: all, tool: '*', verdict: allow}]\n")
    allowed = keyed("--policy", local, *submit, "--args", '{"env": "prod"}')
    assert allowed.exit_code == 0 and json.loads(allowed.stdout)["verdict"] == "allow"
    announced = f"crossgate: using the local policy file {local} (development: not the store's signed policy)\n"
    assert allowed.stderr == announced
    without_dir = {"CROSSGATE_AUTHORITY_DIR": None, "CROSSGATE_AUTHORITY_PUBKEY": keyed.pin}
    pinned = keyed(*submit, "--args", '{"env": "prod"}', **without_dir)
    assert pinned.exit_code == 6  # pinned in the environment, without the key directory: the same verdict
    one_line_error(
        keyed(*submit[:-1], "--args", "{}", CROSSGATE_AUTHORITY_DIR=str(keyed.folder / "elsewhere")),
        1,
        "pins no authority public key",
    )


@pytest.fixture
def webhook() -> Iterator[tuple[str, list[bytes], list[int]]]:
    received: list[bytes] = []
    answers = [204]

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            received.append(self.rfile.read(int(self.headers["Content-Length"])))
            self.send_response(answers[0])
            self.end_headers()

        def log_message(self, *_: Any) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/checkpoints", received, answers
    server.shutdown()
    server.server_close()


def test_audit_checkpoint_exports_the_signed_head_to_stdout_a_file_or_a_webhook(
    keyed: Operator, webhook: tuple[str, list[bytes], list[int]]
) -> None:
    keyed.ok("policy", "apply", keyed.file("p.yaml", READS_AND_DELETES))
    keyed.ok("submit", "--framework", "langgraph", "--tool", "delete_ticket", "--args", "{}")
    printed = json.loads(keyed.ok("audit", "checkpoint").stdout)
    assert printed["format"] == "crossgate-checkpoint/1" and printed["seq"] == 2 and not printed["authored"]
    out = keyed.folder / "exported" / "head.json"
    out.parent.mkdir()
    written = keyed.ok("audit", "checkpoint", "--out", str(out))
    assert f"checkpoint of event 2 written to {out}" in written.stderr
    url, received, answers = webhook
    keyed.ok("audit", "checkpoint", "--webhook", url)
    assert json.loads(received[0])["token"] == json.loads(out.read_text())["token"] == printed["token"]
    answers[0] = 500
    one_line_error(keyed("audit", "checkpoint", "--webhook", url), 1, "answered HTTP 500")
    one_line_error(keyed("audit", "checkpoint", "--webhook", "file:///etc/passwd"), 2, "http://")
    one_line_error(keyed("audit", "checkpoint", "--out", str(out), "--webhook", url), 2, "not both")

    verified = keyed.json("audit", "verify", "--authority", keyed.pin, "--checkpoint", str(out))
    assert verified["ok"] and verified["checkpoints"] >= 2 and verified["anchored_at"] == 2
    pin_file = keyed.file("authority.pub", keyed.pin)
    assert keyed.json("audit", "verify", "--authority", pin_file)["ok"]


def test_without_the_key_audit_checkpoint_exports_the_newest_stored_one(keyed: Operator) -> None:
    elsewhere = {"CROSSGATE_AUTHORITY_DIR": str(keyed.folder / "elsewhere")}
    one_line_error(keyed("audit", "checkpoint", **elsewhere), 3, "holds no signed checkpoint yet")
    keyed.ok("policy", "apply", keyed.file("p.yaml", READS_AND_DELETES))  # its event's own checkpoint
    exported = keyed("audit", "checkpoint", **elsewhere)
    assert exported.exit_code == 0 and json.loads(exported.stdout)["authored"] is True
    assert "exported unverified" in exported.stderr
    pinned = keyed("audit", "checkpoint", **elsewhere, CROSSGATE_AUTHORITY_PUBKEY=keyed.pin)
    assert pinned.exit_code == 0 and pinned.stderr == ""


def test_verify_options_are_checked(keyed: Operator) -> None:
    one_line_error(keyed("audit", "verify", "--checkpoint", "x.json"), 2, "need --authority")
    one_line_error(keyed("audit", "verify", "--authority", "not-a-key"), 1, "not an Ed25519 public key")
    missing = str(keyed.folder / "missing.json")
    one_line_error(keyed("audit", "verify", "--authority", keyed.pin, "--checkpoint", missing), 1, "cannot read")
    garbage = keyed.file("garbage.json", '{"format": "nope"}')
    one_line_error(keyed("audit", "verify", "--authority", keyed.pin, "--checkpoint", garbage), 1, "not an exported")
