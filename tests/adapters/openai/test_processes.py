"""Park in one process, decide through the ``crossgate`` CLI in another, resume in a third."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from crossgate import ParkedRunStatus, RequestStatus, ReviewQueue, open_store
from tests.adapters.openai.conftest import REJECTION
from tests.adapters.openai.driver import OpenAITicketDriver
from tests.conformance.tickets import TicketStore

CROSSGATE = str(Path(sys.executable).with_name("crossgate"))


def run(argv: list[str]) -> Any:
    completed = subprocess.run(argv, capture_output=True, text=True, timeout=240, check=False)
    assert completed.returncode == 0, completed.stderr[-2000:]
    return completed.stdout


@pytest.mark.slow
def test_park_decide_and_resume_in_separate_processes(queue: ReviewQueue, tickets: TicketStore, tmp_path: Path) -> None:
    db = str(tmp_path / "crossgate.db")
    driver = OpenAITicketDriver(queue, tickets, tmp_path, db)
    (tmp_path / "openai-policy.json").write_text(queue.policy.model_dump_json(), encoding="utf-8")
    start = [*driver.resume_command("unused")[:3], "start", "--db", db, "--tickets", str(tickets.path)]
    start += ["--workdir", str(tmp_path), "--run", "procs", "t3", "t1"]

    first = json.loads(run(start))  # process 1: the model asks to delete t3; the run parks
    [t3_request] = first["request_ids"]
    assert tickets.ids() == ["t1", "t2", "t3"]
    assert queue.get(t3_request).call.args == {"id": "t3"}

    run([CROSSGATE, "--db", db, "approve", t3_request, "--reviewer", "ann"])  # process 2: the CLI decides
    assert queue.get(t3_request).status is RequestStatus.DECIDED
    assert tickets.ids() == ["t1", "t2", "t3"], "deciding runs nothing; resuming does"

    second = json.loads(run(driver.resume_command(first["parked_run"])))  # process 3: resume; parks on t1
    [t1_request] = second["request_ids"]
    assert tickets.ids() == ["t1", "t2"]
    assert queue.get_parked(first["parked_run"]).status is ParkedRunStatus.RESUMED

    run([CROSSGATE, "--db", db, "reject", t1_request, "--message", REJECTION, "--reviewer", "ann"])
    done = json.loads(run(driver.resume_command(second["parked_run"])))
    assert done == {"finished": "procs"}
    assert tickets.ids() == ["t1", "t2"]
    assert tickets.delete_runs() == 1
    assert driver.tool_results("procs") == ["deleted ticket t3", REJECTION]

    refused = subprocess.run(driver.resume_command(first["parked_run"]), capture_output=True, text=True, check=False)
    assert refused.returncode != 0
    assert "ParkedRunClaimedError" in refused.stderr
    assert tickets.delete_runs() == 1
    decided = [e for e in queue.events() if e.kind == "decided"]
    assert [(e.actor, e.channel) for e in decided] == [("ann", "cli"), ("ann", "cli")]


@pytest.mark.slow
def test_the_app_context_of_a_run_parked_in_one_process_holds_in_the_process_that_resumes_it(
    tickets: TicketStore, tmp_path: Path
) -> None:
    from tests.adapters.openai.test_call_context import ACME_KEEPS_T1, POLICY

    db = str(tmp_path / "crossgate.db")
    queue = ReviewQueue(open_store(db), POLICY)
    driver = OpenAITicketDriver(queue, tickets, tmp_path, db)
    (tmp_path / "openai-policy.json").write_text(POLICY.model_dump_json(), encoding="utf-8")
    start = [*driver.resume_command("unused")[:3], "start", "--db", db, "--tickets", str(tickets.path)]
    start += ["--workdir", str(tmp_path), "--run", "acme", "--call-context", '{"tenant": "acme"}', "t3", "t1"]
    first = json.loads(run(start))
    [t3_request] = first["request_ids"]
    run([CROSSGATE, "--db", db, "approve", t3_request, "--reviewer", "ann"])
    done = json.loads(run(driver.resume_command(first["parked_run"])))  # no context given to this process
    assert done == {"finished": "acme"}, "t1 was asked about: the resumed run lost its tenant"
    assert tickets.ids() == ["t1", "t2"]
    assert driver.tool_results("acme") == ["deleted ticket t3", f"crossgate did not run delete_ticket: {ACME_KEEPS_T1}"]
    queue.close()
