"""A walk through the ``crossgate`` command line: three tool calls submitted, reviewed and audited.

    python examples/cli_walkthrough.py

Each step runs the real ``crossgate`` command as its own process on one SQLite file in a temporary
folder, under ``examples/policy.yaml`` (the built-in ask-for-everything policy if that file is missing),
and prints the command and what it printed. Offline; a few seconds.

The operator first makes the authority's key pair (``crossgate keys init``): deciding from the command
line needs its private key (or a review server and a reviewer token), and every decision is signed with
it. Three agents on three SDKs ask for risky calls: a Claude agent wants to write a file, a LangGraph agent
wants to delete ticket t3 (it meant the duplicate, t2), an OpenAI agent wants to run a SQL delete. The
reviewer approves the write and remembers it for the run's ``notes/`` folder, edits the delete to t2,
and rejects the SQL with a message the model reads. Then a second write in the same run goes through on
the standing rule, a ``DROP TABLE`` is denied by the policy without a person, and the audit chain is
verified.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

POLICY = Path(__file__).parent / "policy.yaml"
REVIEWER = "ann"


class StepFailed(RuntimeError):
    """A step exited with another code than the walk-through expects."""


class Walkthrough:
    """Runs ``crossgate`` commands against one database and prints each like a terminal session."""

    def __init__(self, folder: Path, policy: Path | None) -> None:
        ours = ("CROSSGATE_DB", "CROSSGATE_POLICY", "CROSSGATE_AUTHORITY_DIR")
        self.env = {k: v for k, v in os.environ.items() if k not in ours}
        self.env["CROSSGATE_DB"] = str(folder / "crossgate.db")
        if policy is not None:
            self.env["CROSSGATE_POLICY"] = str(policy)
        self.folder = folder
        script = Path(sys.executable).with_name("crossgate")
        self.command = [str(script)] if script.exists() else [sys.executable, "-m", "crossgate.cli"]

    def run(self, *args: str, expect: int | tuple[int, ...] = 0, show: bool = True) -> str:
        """Run ``crossgate ARGS``, print it and its output, and return what it printed on stdout."""
        result = subprocess.run(
            [*self.command, *args], cwd=self.folder, env=self.env, capture_output=True, text=True, timeout=60
        )
        if show:
            print(f"$ crossgate {shlex.join(args)}")
            for line in (result.stdout + result.stderr).rstrip().splitlines():
                print(f"  {line.rstrip()}")
            print()
        if result.returncode not in (expect if isinstance(expect, tuple) else (expect,)):
            raise StepFailed(f"crossgate {shlex.join(args)} exited {result.returncode}: {result.stderr.strip()}")
        return result.stdout

    def submit(self, framework: str, tool: str, args: dict[str, Any], run: str) -> dict[str, Any]:
        """Submit a call and print one line about it; return the JSON the CLI printed."""
        argv = ("submit", "--framework", framework, "--tool", tool, "--args", json.dumps(args), "--run", run)
        out: dict[str, Any] = json.loads(self.run(*argv, "--json", show=False, expect=(0, 6)))  # 6: denied
        print(f"$ crossgate {shlex.join(argv)}")
        if out["id"] is not None:
            print(f"  {out['status']}: {out['id']}  (rule {out['rule'] or 'default'}: {out['reason']})\n")
        else:
            word = {"allow": "allowed", "deny": "denied"}.get(out["verdict"], out["verdict"])
            print(f"  {word} by policy: {out['verdict_reason']}\n")
        return out


def main() -> int:
    """Run the walk-through in a temporary folder; 0 when every step did what it should."""
    policy = POLICY if POLICY.exists() else None
    with tempfile.TemporaryDirectory(prefix="crossgate-walkthrough-") as folder:
        cg = Walkthrough(Path(folder), policy)
        print(f"# database {cg.env['CROSSGATE_DB']}, policy {policy or '(built-in: ask for everything)'}\n")

        print("# 0. The operator makes the authority's key pair; agents pin the public key it prints.\n")
        cg.env["CROSSGATE_AUTHORITY_DIR"] = str(Path(folder) / "authority")
        cg.run("keys", "init")

        print("# 1. Three agents on three SDKs propose risky tool calls.\n")
        write = cg.submit("claude-agent-sdk", "write_file", {"path": "notes/triage.md", "content": "t2: dup"}, "s-1")
        delete = cg.submit("langgraph", "delete_ticket", {"id": "t3"}, "thread-7")
        sql = cg.submit("openai-agents", "execute_sql", {"query": "DELETE FROM tickets WHERE id = 't1'"}, "run-42")
        if None in (write["id"], delete["id"], sql["id"]):
            raise StepFailed("the policy answered a call that should wait for a person")

        print("# 2. The reviewer's queue.\n")
        cg.run("list")

        print("# 3. Approve the write, and remember it for this run's notes/ folder.\n")
        cg.run("approve", write["id"], "--remember", "run", "--pattern", "path=notes/*", "--reviewer", REVIEWER)
        print("# 4. Edit the delete: the agent picked t3, the duplicate is t2.\n")
        cg.run("edit", delete["id"], "--args", '{"id": "t2"}', "--note", "t3 is a live ticket", "--reviewer", REVIEWER)
        print("# 5. Reject the SQL with an instruction the model reads.\n")
        message = "Do not delete rows with SQL; close the ticket with close_ticket instead."
        cg.run("reject", sql["id"], "--message", message, "--reviewer", REVIEWER)
        print("# 6. Deciding twice is refused (exit 4), and nothing changes.\n")
        cg.run("approve", sql["id"], "--reviewer", REVIEWER, expect=4)

        print("# 7. Later calls: the standing rule allows a second note in the same run; nothing else.\n")
        again = cg.submit("claude-agent-sdk", "write_file", {"path": "notes/more.md", "content": "t1: ok"}, "s-1")
        if again["verdict"] != "allow":
            raise StepFailed("the remembered approval did not allow the second write")
        dropped = cg.submit("openai-agents", "execute_sql", {"query": "DROP TABLE tickets"}, "run-42")
        if policy is not None and dropped["verdict"] != "deny":
            raise StepFailed("the policy did not deny DROP TABLE")

        print("# 8. What the LangGraph agent will run: the edited arguments, bound to the reviewed call.\n")
        cg.run("show", delete["id"])

        print("# 9. The hash-chained audit log.\n")
        cg.run("events")
        cg.run("audit", "verify")
    return 0


if __name__ == "__main__":
    sys.exit(main())
