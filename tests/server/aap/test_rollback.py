"""The AAP provider against a writer of the store who puts yesterday's copy back, with the real AAP client.

An AAP peer sees no state head, so the server checks for it against its signer's memory (it holds the key):
a call is not allowed under a policy version older than one signed, and an approval applied once is not
consumed again when the store shows it decided. Both hold on the same server and on a restarted one that
reads its own head file (``ServerSettings.state_head_file``).
"""

from __future__ import annotations

import json
import sqlite3
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from agentapprovalprotocol import Allow, Call, Client, ConflictError, Deny, Gate

from crossgate import ApprovalRequest, Policy, PolicyRule, RequestStatus, ReviewQueue, VerdictKind, open_store
from crossgate.authority import Authority
from crossgate.policy.versions import apply_policy
from crossgate.server.app import create_app
from crossgate.testing.postgres import database_url
from tests.authority.raw import raw_access
from tests.authority.world import DATABASES
from tests.server.aap.conftest import PROVISIONER, aap_settings
from tests.server.conftest import POLICY, TOKENS
from tests.server.live import live_server

pytestmark = pytest.mark.slow

ALLOW_DELETES = Policy(rules=(PolicyRule(name="deletes", tool="delete_ticket", verdict=VerdictKind.ALLOW),))
ASK_DELETES = Policy(rules=(PolicyRule(name="deletes", tool="delete_ticket", verdict=VerdictKind.ASK),))


@contextmanager
def serving(queue: ReviewQueue, head_file: Path, journal: Path) -> Iterator[str]:
    settings = aap_settings(state_head_file=str(head_file), aap_registry_path=str(journal))
    with live_server(create_app(queue, settings)) as url:
        yield url


def provision(url: str) -> str:
    headers = {"Authorization": f"Bearer {PROVISIONER}", "Idempotency-Key": str(uuid.uuid4())}
    r = httpx.post(f"{url}/aap/v1/instances", json={"instance_name": "laptop"}, headers=headers)
    assert r.status_code == 201, r.text
    return str(r.json()["credential"]["token"])


def delete(key: str) -> Call:
    return Call(key=key, tool="delete_ticket", arguments={"id": "t3"})


@pytest.fixture(params=DATABASES)
def url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    with database_url(str(request.param), tmp_path) as found:
        yield found


def test_a_call_under_a_rolled_back_policy_is_denied_on_the_same_and_a_restarted_server(
    url: str, tmp_path: Path
) -> None:
    authority = Authority.generate()
    setup = open_store(url)
    apply_policy(setup, authority, ALLOW_DELETES, created_by="ops")
    apply_policy(setup, authority, ASK_DELETES, created_by="ops")  # version 2: deletes need a reviewer
    setup.close()
    head_file, journal = tmp_path / "server-head.json", tmp_path / "aap.jsonl"
    raw = raw_access(url)
    queue = ReviewQueue(open_store(url), authority=authority, head_file=head_file)
    try:
        with serving(queue, head_file, journal) as base:
            token = provision(base)
            client = Client(f"{base}/aap", token)
            first = client.create({"tool": "delete_ticket", "arguments": {"id": "t1"}, "timeout": "5m"}, "k0")
            assert first.status == "pending"
            # The writer deletes version 2 (and the stored heads): version 1 alone would allow the delete.
            raw.execute("DELETE FROM policy_versions WHERE version = 2")
            raw.execute("DELETE FROM state_heads")
            raw.bump_rules_version()
            verdict = Gate(client, wait_limit=5).check(delete("c1"))
            assert isinstance(verdict, Deny) and "store was rolled back" in verdict.reason, verdict
            refused = [e for e in queue.store.list_events() if e.kind == "refused"]
            assert refused and refused[-1].payload["refused"] == "rolled_back"
    finally:
        queue.close()
    restarted = ReviewQueue(open_store(url), authority=authority, head_file=head_file)
    try:
        with serving(restarted, head_file, journal) as base:
            client = Client(f"{base}/aap", token)
            assert restarted.policy_version == 1  # a fresh process takes the store's version: only the head knows
            verdict = Gate(client, wait_limit=5).check(delete("c2"))
            assert isinstance(verdict, Deny) and "store was rolled back" in verdict.reason, verdict
    finally:
        restarted.close()
    raw.execute("DELETE FROM state_heads")  # the restarted server signed version 2 into them again
    forgetful = ReviewQueue(open_store(url), authority=authority, head_file=tmp_path / "elsewhere.json")
    try:
        with serving(forgetful, tmp_path / "elsewhere.json", tmp_path / "other.jsonl") as base:
            # The boundary: a server with no memory of version 2 (no head file, the heads deleted) allows it.
            assert isinstance(Gate(Client(f"{base}/aap", provision(base)), wait_limit=5).check(delete("c3")), Allow)
    finally:
        forgetful.close()


def drop_consumes(journal: Path) -> None:
    """The server crashed after applying the approval, before its journal recorded the consume."""
    lines = journal.read_text(encoding="utf-8").splitlines()
    kept = [line for line in lines if json.loads(line)["data"].get("consumed_at") is None]
    assert len(kept) < len(lines)
    journal.write_text("".join(line + "\n" for line in kept), encoding="utf-8")


def copy_sqlite(source: Path, target: Path) -> None:
    with sqlite3.connect(source) as src, sqlite3.connect(target) as dst:
        src.backup(dst)


def put_back(url: str, decided: ApprovalRequest, copy: Path) -> None:
    """The writer puts yesterday's store back: the request decided again. A SQLite file is copied back
    whole; a PostgreSQL request row is set back to its decided copy (a raw UPDATE, no event written)."""
    if url.startswith("postgresql"):
        tokens = " ".join(decided.signatures) or None
        body = decided.model_dump_json(exclude={"signatures"})
        raw_access(url).execute(
            "UPDATE requests SET status = ?, data = ?, signatures = ? WHERE id = ?",
            decided.status.value,
            body,
            tokens,
            decided.id,
        )
    else:
        copy_sqlite(copy, Path(url))


def test_an_approval_consumed_once_is_not_consumed_again_after_the_store_is_put_back(url: str, tmp_path: Path) -> None:
    authority = Authority.generate()
    yesterday = tmp_path / "yesterday.db"
    head_file, journal = tmp_path / "server-head.json", tmp_path / "aap.jsonl"
    queue = ReviewQueue(open_store(url), POLICY, authority=authority, head_file=head_file)
    try:
        with serving(queue, head_file, journal) as base:
            token = provision(base)
            client = Client(f"{base}/aap", token)
            pending = client.create({"tool": "delete_ticket", "arguments": {"id": "t3"}, "timeout": "5m"}, "c1")
            decided = httpx.post(
                f"{base}/api/requests/{pending.id}/decision",
                json={"kind": "approve"},
                headers={"Authorization": f"Bearer {TOKENS['alice']}"},
            )
            assert decided.status_code == 200, decided.text
            before_use = queue.get(pending.id)  # the approval decided, not yet used
            if not url.startswith("postgresql"):
                copy_sqlite(Path(url), yesterday)
            assert client.consume(pending.id, "run-1").status == "approved"
            assert queue.get(pending.id).status is RequestStatus.APPLIED
    finally:
        queue.close()
    drop_consumes(journal)
    put_back(url, before_use, yesterday)
    restarted = ReviewQueue(open_store(url), POLICY, authority=authority, head_file=head_file)
    # the SQLite copy lost the first use's event too; the PostgreSQL row alone was set back
    applied_before = [e.kind for e in restarted.store.list_events(request_id=pending.id)].count("applied")
    try:
        assert restarted.get(pending.id).status is RequestStatus.DECIDED
        with serving(restarted, head_file, journal) as base:
            client = Client(f"{base}/aap", token)
            with pytest.raises(ConflictError) as refused:
                client.consume(pending.id, "run-2")
            assert refused.value.code == "already_consumed"
            closed = restarted.get(pending.id)
            assert closed.status is RequestStatus.CANCELLED  # nothing else applies it either
            kinds = [e.kind for e in restarted.store.list_events(request_id=pending.id)]
            assert kinds.count("applied") == applied_before  # none more: it was not applied a second time
    finally:
        restarted.close()
