"""Claude requests carry their tool's argument schema, so an edit that cannot run is refused up front.

Through the real bundled CLI: an SDK MCP tool's request carries the schema its server lists, a built-in
tool's the one ``_builtin_schemas`` ships (checked here against what the CLI itself sends the model), and
``crossgate edit`` with a wrong type exits 5 and leaves the request pending.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from claude_agent_sdk import ClaudeAgentOptions

from crossgate import RequestQuery, RequestStatus, ReviewQueue, open_store
from crossgate.runs import Finished, Parked
from crossgate_claude import Gate
from crossgate_claude._builtin_schemas import BUILTIN_SCHEMAS
from crossgate_claude.testing import MessagesAPI
from tests.adapters.claude.conftest import POLICY
from tests.conformance.tickets import TicketStore

pytestmark = [pytest.mark.claude_cli, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[3]
INVALID = 5


def crossgate(db: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "crossgate.cli", "--db", str(db), *args], cwd=ROOT, capture_output=True, text=True
    )


def without_annotations(node: Any) -> Any:
    """A schema without its descriptions (the shipped table leaves them out)."""
    if isinstance(node, dict):
        return {
            k: ({n: without_annotations(p) for n, p in v.items()} if k == "properties" else without_annotations(v))
            for k, v in node.items()
            if not (k in ("description", "$schema") and not isinstance(v, dict))
        }
    if isinstance(node, list):
        return [without_annotations(v) for v in node]
    return node


async def test_a_wrong_type_in_an_edit_is_refused_and_the_request_stays_pending(
    tmp_path: Path, cli_options: ClaudeAgentOptions, messages_api: MessagesAPI, tickets: TicketStore
) -> None:
    db = tmp_path / "queue.db"
    queue = ReviewQueue(open_store(str(db)), POLICY)
    options = replace(cli_options, tools=sorted(BUILTIN_SCHEMAS))
    gate = Gate(queue, options=options)
    parked = await gate.run('CALL delete_ticket {"id": "t3"}\nALSO Bash {"command": "echo hi > hi.txt"}')
    assert isinstance(parked, Parked)
    delete, bash = queue.list_requests(RequestQuery(newest_first=False)).items
    assert delete.args_schema is not None and delete.args_schema["properties"] == {"id": {"type": "string"}}
    assert bash.args_schema == BUILTIN_SCHEMAS["Bash"]

    for request, bad in ((delete, {"id": 5}), (bash, {"command": ["echo", "hi"]}), (bash, {"cmd": "ls"})):
        refused = crossgate(db, "edit", request.id, "--args", json.dumps(bad))
        assert refused.returncode == INVALID, refused.stderr
        assert "schema" in refused.stderr and len(refused.stderr.strip().splitlines()) == 1
        assert queue.get(request.id).status is RequestStatus.PENDING

    edited = crossgate(db, "edit", delete.id, "--args", '{"id": "t2"}')
    assert edited.returncode == 0, edited.stderr
    assert isinstance(await gate.resume(parked.parked_run), Finished)
    assert tickets.ids() == ["prod-1", "t1", "t3"]

    # The shipped table is what this CLI tells the model about its built-in tools.
    offered = {t["name"]: t.get("input_schema") for b in messages_api.requests for t in b.get("tools", [])}
    for name, schema in BUILTIN_SCHEMAS.items():
        assert without_annotations(offered[name]) == schema, f"the CLI's {name} arguments changed"
    queue.close()
