"""The four rewrites of the audit log that a writer of the database can make consistently, on SQLite and PostgreSQL.

Each rewrite keeps the hash chain whole (``crossgate audit verify`` without a key still passes: that is the
point of them), and ``crossgate audit verify --authority KEY --checkpoint FILE`` against a checkpoint
exported before the rewrite reports it:

- cutting the tail and moving the head back (with the stored checkpoints that covered the tail);
- deleting the whole log and resetting the head (and every other table);
- editing an event and recomputing every later hash and the head (the stored checkpoints after it removed);
- appending a forged, correctly hashed decision and moving the head.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from crossgate import Approve, Policy, PolicyRule, Reject, ReviewQueue, Store, ToolCall, VerdictKind
from crossgate.audit import GENESIS_HASH, seal
from crossgate.authority import Authority
from crossgate.checkpoints import Checkpointer, export_checkpoint, read_exported, verify_signed_log
from crossgate.cli import app
from crossgate.model import Event, NewEvent
from crossgate.policy.versions import apply_policy
from crossgate.stores.sqlite import SqliteStore
from crossgate.testing.postgres import postgres_store_factory
from tests.authority.raw import Raw, raw_access

POLICY = Policy(rules=(PolicyRule(name="deletes", verdict=VerdictKind.ASK, tool="delete_*"),))


def resealed(events: list[Event]) -> list[Event]:
    """The events chained again from the genesis hash, as an attacker recomputes them."""
    chained: list[Event] = []
    prev = GENESIS_HASH
    for e in events:
        new = NewEvent.model_validate(e.model_dump(exclude={"seq", "prev_hash", "hash"}))
        chained.append(seal(new, seq=len(chained) + 1, prev_hash=prev))
        prev = chained[-1].hash
    return chained


class World:
    """An operator's queue (it holds the key) with some history, and the checkpoint exported to a file."""

    def __init__(self, store: Store, raw: Raw, folder: Path, authority: Authority) -> None:
        self.store, self.raw, self.folder, self.authority = store, raw, folder, authority
        self.trusted = authority.trusted_keys()
        self.queue = ReviewQueue(store, authority=authority, trusted=self.trusted)
        apply_policy(store, authority, POLICY, created_by="ops")
        self.ids = [self._submit(t) for t in ("t1", "t2", "t3", "t4")]
        self.queue.decide(self.ids[0], Approve(), reviewer="ann")
        self.queue.decide(self.ids[1], Reject(message="Not this one."), reviewer="ann")
        exported = Checkpointer(store, authority).sign_head()
        self.exported_at = exported.seq
        self.checkpoint = folder / "checkpoint.json"
        self.checkpoint.write_text(export_checkpoint(exported) + "\n", encoding="utf-8")
        self.queue.decide(self.ids[2], Approve(), reviewer="bob")  # after the export: the tail
        assert self.verify().ok and self.verify(exported=True).ok

    def _submit(self, ticket: str) -> str:
        call = ToolCall(framework="langgraph", tool="delete_ticket", args={"id": ticket}, run="r1", agent="triage")
        request = self.queue.submit(call).request
        assert request is not None
        return request.id

    def verify(self, *, exported: bool = False) -> Any:
        tokens = [read_exported(self.checkpoint.read_text())] if exported else []
        return verify_signed_log(self.store, self.trusted, exported=tokens)

    def cli_verify(self) -> Any:
        runner = CliRunner()
        args = ["--db", self.raw.url, "audit", "verify", "--authority", self.authority.public_key.pin]
        args += ["--checkpoint", str(self.checkpoint), "--json"]
        env = {"CROSSGATE_DB": None, "CROSSGATE_POLICY": None, "CROSSGATE_AUTHORITY_DIR": str(self.folder / "none")}
        return runner.invoke(app, args, env=env)

    def assert_caught(self, found: str) -> None:
        """Hashes alone see nothing; the exported checkpoint names the rewrite, through the API and the CLI."""
        self.store.flush_events()
        assert self.queue.verify_audit().ok, "the rewrite was meant to keep the hash chain whole"
        report = self.verify(exported=True)
        assert not report.ok and found in (report.problem or ""), report
        result = self.cli_verify()
        assert result.exit_code == 1, (result.stdout, result.stderr)
        assert found in result.stderr and '"ok": false' in result.stdout


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def world(request: pytest.FixtureRequest, tmp_path: Path, authority: Authority) -> Iterator[World]:
    if request.param == "sqlite":
        store: Store = SqliteStore(tmp_path / "crossgate.db")
        store.setup()
        url = str(tmp_path / "crossgate.db")
    else:
        # One chain: the raw rewrites below know one head (a partitioned log's rewrites and what finds them:
        # tests/postgres/test_partitioned_attacks.py).
        store = postgres_store_factory()(partitions=1)
        url = store.url  # type: ignore[attr-defined]
    made = World(store, raw_access(url), tmp_path, authority)
    yield made
    made.queue.close()


def test_cutting_the_tail_and_moving_the_head_back_is_caught_by_the_exported_checkpoint(world: World) -> None:
    keep = world.exported_at - 2
    world.raw.write_log(world.store.list_events()[:keep])
    world.raw.execute("DELETE FROM audit_checkpoints WHERE seq > ?", keep)
    world.assert_caught(f"covers event {world.exported_at}, but the log ends at event {keep}")
    # Without the export the cut goes unseen: what was after it left no trace in the database.
    assert world.verify().ok


def test_deleting_the_whole_log_and_resetting_the_head_is_caught_by_the_exported_checkpoint(world: World) -> None:
    for table in ("events", "audit_checkpoints", "policy_versions", "requests"):
        world.raw.execute(f"DELETE FROM {table}")
    world.raw.write_log([])
    world.assert_caught(f"covers event {world.exported_at}, but the log ends at event 0")
    assert world.verify().ok  # an empty database, and nothing in it to say otherwise


def test_editing_an_event_and_rehashing_everything_after_it_is_caught(world: World) -> None:
    events = world.store.list_events()
    [rejected] = [e for e in events if e.kind == "decided" and e.request_id == world.ids[1]]
    edited = rejected.model_copy(update={"payload": {**rejected.payload, "kind": "approve", "message": None}})
    world.raw.write_log(resealed([edited if e.seq == rejected.seq else e for e in events]))
    world.raw.execute("DELETE FROM audit_checkpoints WHERE seq >= ?", rejected.seq)
    world.assert_caught(f"event {world.exported_at} is not the event the exported checkpoint signed")
    report = world.verify()  # even without the export: the decisions after it lost their signed checkpoints
    assert not report.ok and "has no checkpoint signed by the process that wrote it" in (report.problem or "")


def test_appending_a_forged_but_correctly_hashed_decision_is_caught(world: World) -> None:
    events = world.store.list_events()
    forged = NewEvent(
        kind="decided",
        at=events[-1].at,
        request_id=world.ids[3],
        run="r1",
        actor="security-lead",
        channel="cli",
        payload={"kind": "approve"},
    )
    world.raw.write_log([*events, seal(forged, seq=events[-1].seq + 1, prev_hash=events[-1].hash)])
    world.assert_caught(
        f"event {events[-1].seq + 1} (decided by security-lead) has no checkpoint signed by the process that wrote it"
    )
    assert not world.verify().ok  # a forged decision needs no export to be seen
