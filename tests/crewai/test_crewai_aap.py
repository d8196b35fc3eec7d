"""CrewAI through AAP: the recipe's crew (examples/crewai/agent.py), gated by ``agentapprovalprotocol``'s real
CrewAI hooks, against a real ``crossgate serve``.

The crew runs in ``.venv-crewai`` (``make crewai``; CrewAI's pydantic, openai and mcp pins clash with the
workspace's), as a subprocess started through ``offline.py``, which refuses and logs every connection off
127.0.0.1. Its model is CrewAI's native OpenAI provider pointed at a scripted chat-completions server in this
process; a reviewer thread decides over the reviewer API, as a person on the page would. No API key, no
hosted model, no telemetry.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.crewai.scripted_openai import Message, ScriptedChatServer, Turn, call, last_tool_result, report, tool_call

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-m", "crossgate.cli"]

CREWAI_PYTHON = ROOT / ".venv-crewai" / "bin" / "python"
AGENT = ROOT / "examples" / "crewai" / "agent.py"
OFFLINE = Path(__file__).with_name("offline.py")
POLICY = ROOT / "examples" / "policy.yaml"
REJECTION = "t1 is a real customer ticket. Do not delete it; close it instead."
EDIT_NOTE = re.compile(
    r"Call (\w+) again with exactly these arguments, "
    r"which are approved once for this agent: (\{.*\})"
)

if not CREWAI_PYTHON.exists():
    pytest.skip(
        ".venv-crewai is absent: `make crewai` makes it (CrewAI cannot share the main venv)",
        allow_module_level=True,
    )


@dataclass
class Served:
    """A running ``crossgate serve``: its address, the first run's admin token and agent environment."""

    url: str
    admin: str
    agent_env: dict[str, str]

    def api(self, method: str, path: str, **kwargs: Any) -> Any:
        r = httpx.request(method, self.url + path, headers={"Authorization": f"Bearer {self.admin}"}, **kwargs)
        assert r.status_code == 200, r.text
        return r.json()

    def requests(self) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = self.api("GET", "/api/requests", params={"order": "oldest"})["items"]
        return items

    def events(self, request_id: str) -> list[dict[str, Any]]:
        body = self.api("GET", f"/api/requests/{request_id}/events")
        return list(body["items"] if isinstance(body, dict) else body)


@contextmanager
def serve(tmp_path: Path, policy: Path = POLICY) -> Iterator[Served]:
    """``crossgate serve --policy FILE`` on a fresh data directory: its first run, as a user starts it."""
    data, port = tmp_path / "data", free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("CROSSGATE_") or k == "CROSSGATE_PYTHON"}
    env |= {"XDG_CONFIG_HOME": str(tmp_path / "config"), "XDG_DATA_HOME": str(tmp_path / "share")}
    args = [*CLI, "serve", "--data-dir", str(data), "--policy", str(policy), "--port", str(port)]
    args += ["--log-level", "warning"]
    process = subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while not (data / "agent.env").exists() or not _healthy(url):
            assert process.poll() is None, process.communicate()[1]
            assert time.monotonic() < deadline, "crossgate serve did not come up"
            time.sleep(0.2)
        lines = (data / "agent.env").read_text(encoding="utf-8").splitlines()
        agent_env = dict(line.split("=", 1) for line in lines if line and not line.startswith("#"))
        yield Served(url, (data / "admin.token").read_text(encoding="utf-8").strip(), agent_env)
    finally:
        process.send_signal(signal.SIGINT)
        err = process.communicate(timeout=30)[1]
        assert "Traceback" not in err, err


@pytest.fixture
def served(tmp_path: Path) -> Iterator[Served]:
    """The server with the recipe's policy, examples/policy.yaml."""
    with serve(tmp_path) as server:
        yield server


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _healthy(url: str) -> bool:
    try:
        return httpx.get(f"{url}/api/health", timeout=1).status_code == 200
    except httpx.HTTPError:
        return False


@dataclass
class Reviewer:
    """Decides each pending AAP request by its ticket id, over the reviewer API, until stopped."""

    served: Served
    decisions: dict[str, dict[str, Any]]
    decided: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)
    failed: list[str] = field(default_factory=list)

    def run(self) -> None:
        try:
            while not self.stop.is_set():
                pending = self.served.api("GET", "/api/requests", params={"status": "pending", "framework": "aap"})
                for request in pending["items"]:
                    ticket = request["call"]["args"].get("id")
                    decision = self.decisions.get(ticket, {"kind": "reject", "message": "not in the test's script"})
                    self.served.api("POST", f"/api/requests/{request['id']}/decision", json=decision)
                    self.decided.append((ticket, decision))
                time.sleep(0.05)
        except Exception as error:  # the crew then waits in vain: say why once it gives up
            self.failed.append(repr(error))

    @contextmanager
    def running(self) -> Iterator[Reviewer]:
        thread = threading.Thread(target=self.run, name="reviewer", daemon=True)
        thread.start()
        try:
            yield self
        finally:
            self.stop.set()
            thread.join(10)
            assert not self.failed, f"the reviewer failed: {self.failed}"  # shown with the crew's own error


@dataclass
class CrewRun:
    """What the CrewAI process printed, what its model was shown, and what it tried to reach off the machine."""

    stdout: str
    stderr: str
    requests: list[dict[str, Any]]
    off_machine: list[str]

    @property
    def tickets(self) -> dict[str, list[str]]:
        line = next(x for x in self.stdout.splitlines() if x.startswith("tickets: "))
        tickets: dict[str, list[str]] = json.loads(line.removeprefix("tickets: "))
        return tickets

    @property
    def answer(self) -> str:
        return next(x for x in self.stdout.splitlines() if x.startswith("crew: ")).removeprefix("crew: ")

    def tool_results(self) -> list[str]:
        """The tool results the model read, in order (each request repeats the history: take the last)."""
        return [str(m["content"]) for m in self.requests[-1]["messages"] if m.get("role") == "tool"]


def run_crew(tmp_path: Path, served: Served, turns: list[Turn], **extra_env: str) -> CrewRun:
    """The recipe's agent, as a user runs it: ``env $(cat agent.env) python examples/crewai/agent.py``."""
    home, log = tmp_path / "home", tmp_path / "off-machine.log"
    home.mkdir(exist_ok=True)
    log.touch()
    base = {k: v for k, v in os.environ.items() if k in ("PATH", "LANG", "TMPDIR", "SYSTEMROOT")}
    env = {
        **base,
        **served.agent_env,
        "HOME": str(home),  # CrewAI writes ~/.local/share/crewai and ~/.config/crewai
        "XDG_DATA_HOME": str(home / "share"),
        "XDG_CONFIG_HOME": str(home / "config"),
        "TICKETS_FILE": str(tmp_path / "tickets.json"),
        "OPENAI_API_KEY": "offline",
        "PYTHONUNBUFFERED": "1",
    }
    env |= extra_env
    with ScriptedChatServer(turns) as model:
        env["OPENAI_BASE_URL"] = model.base_url
        done = subprocess.run(
            [str(CREWAI_PYTHON), str(OFFLINE), str(log), str(AGENT)],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=240,
        )
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stderr, done.stderr
    off_machine = log.read_text(encoding="utf-8").splitlines()
    return CrewRun(done.stdout, done.stderr, model.requests, off_machine)


def follow_edit() -> Turn:
    """A model that does what an edit's note says: call the tool again with exactly the edited arguments."""

    def turn(messages: list[Message]) -> Message:
        found = EDIT_NOTE.search(last_tool_result(messages))
        assert found, last_tool_result(messages)
        return tool_call(found[1], json.loads(found[2]), "call_edited")

    return turn


def by_ticket(served: Served) -> dict[str, list[dict[str, Any]]]:
    """The server's requests, grouped by the ticket id of their call."""
    out: dict[str, list[dict[str, Any]]] = {}
    for request in served.requests():
        out.setdefault(request["call"]["args"]["id"], []).append(request)
    return out


def kinds(events: list[dict[str, Any]]) -> list[str]:
    return [e["kind"] for e in events]


def test_approved_delete_runs_once_and_the_rejection_is_read_verbatim(tmp_path: Path, served: Served) -> None:
    turns = [call("delete_ticket", {"id": "t3"}), call("delete_ticket", {"id": "t1"}), report()]
    decisions = {"t3": {"kind": "approve"}, "t1": {"kind": "reject", "message": REJECTION}}
    with Reviewer(served, decisions).running() as reviewer:
        crew = run_crew(tmp_path, served, turns)

    assert crew.tickets == {"open": ["t1", "t2"], "deleted": ["t3"]}  # t3's body ran once; t1's never
    assert [t for t, _ in reviewer.decided] == ["t3", "t1"]
    assert crew.tool_results() == [
        "deleted ticket t3",
        f"A reviewer at the AAP (Agent Approval Protocol) provider denied this call. Their note: {REJECTION}",
    ]
    assert REJECTION in crew.answer  # the crew's final answer quotes what the model read
    assert crew.off_machine == []

    requests = by_ticket(served)
    approved, rejected = requests["t3"][0], requests["t1"][0]
    assert approved["status"] == "applied" and rejected["status"] == "rejected"
    assert approved["call"]["framework"] == "aap" and approved["call"]["tool"] == "delete_ticket"
    assert approved["call"]["context"]["aap_context"]["framework"] == "crewai"
    assert approved["call"]["context"]["aap_context"]["agent_role"] == "Support clean-up"
    assert rejected["decision"]["message"] == REJECTION and rejected["decision"]["reviewer"] == "admin"
    assert kinds(served.events(approved["id"])) == ["submitted", "decided", "applied", "ran"]
    trail = served.events(rejected["id"])
    assert kinds(trail) == ["submitted", "decided", "applied"]  # the rejection reached the agent; nothing ran
    assert trail[1]["payload"] == {"kind": "reject", "message": REJECTION, "note": None}
    assert served.api("GET", "/api/audit/verify")["ok"] is True


EVERY_DECISION = """
version: 1
default: ask
rules:
  - name: review-ticket-deletes
    verdict: ask
    tool: delete_ticket
    allowed_decisions: [approve, edit, reject, respond]
"""


def edit_t1_to_t2(tmp_path: Path, served: Served) -> tuple[CrewRun, Reviewer]:
    turns = [call("delete_ticket", {"id": "t1"}), follow_edit(), report()]
    with Reviewer(served, {"t1": {"kind": "edit", "args": {"id": "t2"}}}).running() as reviewer:
        return run_crew(tmp_path, served, turns), reviewer


def test_an_edit_arrives_as_a_denial_and_only_the_edited_call_runs(tmp_path: Path) -> None:
    (tmp_path / "policy.yaml").write_text(EVERY_DECISION, encoding="utf-8")
    with serve(tmp_path, tmp_path / "policy.yaml") as served:
        crew, reviewer = edit_t1_to_t2(tmp_path, served)
        requests = by_ticket(served)
        rules = served.api("GET", "/api/rules", params={"include_revoked": "true"})

    assert crew.tickets == {"open": ["t1", "t3"], "deleted": ["t2"]}  # the proposal never ran; the edit ran once
    assert [t for t, _ in reviewer.decided] == ["t1"]  # the edited retry needed no second review
    assert crew.tool_results()[1] == "deleted ticket t2"
    assert crew.off_machine == []
    assert list(requests) == ["t1"]  # the retry was let through by the edit's one-shot rule, not queued
    assert requests["t1"][0]["status"] == "applied" and requests["t1"][0]["decision"]["kind"] == "edit"
    edit_rules = [r for r in rules["items"] if r["created_by"] == "aap:edit-once"]
    assert len(edit_rules) == 1 and edit_rules[0]["revoked_at"] is not None  # used once, then gone


def test_with_the_recipes_policy_the_edited_retry_runs_as_its_note_promises(tmp_path: Path, served: Served) -> None:
    crew, reviewer = edit_t1_to_t2(tmp_path, served)
    assert [t for t, _ in reviewer.decided] == ["t1"]
    assert crew.tickets == {"open": ["t1", "t3"], "deleted": ["t2"]}


def test_a_refused_credential_runs_nothing_and_the_model_is_told(tmp_path: Path, served: Served) -> None:
    turns = [call("delete_ticket", {"id": "t3"}), report()]
    crew = run_crew(tmp_path, served, turns, CROSSGATE_AGENT_TOKEN="cga_not-a-credential-of-this-server")
    assert crew.tickets == {"open": ["t1", "t2", "t3"], "deleted": []}
    assert "refused this agent's credential" in crew.tool_results()[0]
    assert crew.off_machine == []
    assert served.requests() == []


def test_a_respond_is_what_the_model_reads_and_the_tool_does_not_run(tmp_path: Path) -> None:
    answer = "t3 was already merged into t2 yesterday; nothing to delete."
    (tmp_path / "policy.yaml").write_text(EVERY_DECISION, encoding="utf-8")
    with serve(tmp_path, tmp_path / "policy.yaml") as served:
        with Reviewer(served, {"t3": {"kind": "respond", "content": answer}}).running():
            crew = run_crew(tmp_path, served, [call("delete_ticket", {"id": "t3"}), report()])
        request = by_ticket(served)["t3"][0]
        trail = kinds(served.events(request["id"]))

    assert crew.tickets == {"open": ["t1", "t2", "t3"], "deleted": []}
    assert crew.off_machine == []
    assert crew.tool_results() == [
        "A reviewer at the AAP (Agent Approval Protocol) provider denied this call. Their note: "
        f"A reviewer answered instead of running the tool. Their answer: {answer}"
    ]
    assert request["status"] == "answered" and trail == ["submitted", "decided", "applied"]


def test_the_guard_sees_crewais_telemetry_when_it_is_switched_on(tmp_path: Path, served: Served) -> None:
    """The offline guard is not vacuous: without the recipe's switches CrewAI reaches for its collector."""
    switched_on = {"CREWAI_DISABLE_TELEMETRY": "false", "OTEL_SDK_DISABLED": "false", "CREWAI_TRACING_ENABLED": "true"}
    turns = [call("delete_ticket", {"id": "t3"}), report()]
    crew = run_crew(tmp_path, served, turns, CROSSGATE_AGENT_TOKEN="cga_not-a-credential-of-this-server", **switched_on)
    assert crew.off_machine, "CrewAI's telemetry tried nothing: the guard or the switches changed"
    assert all(line.startswith("lookup ") for line in crew.off_machine)  # refused before any connection
