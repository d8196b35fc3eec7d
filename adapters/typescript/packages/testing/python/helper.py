"""The Python side of the TypeScript tests: canonical JSON, request ids and signed decisions, as crossgate has them.

Reads a JSON list of operations on stdin and prints a JSON list of their results, one process per batch.
The ``forge``, ``insert_rule`` and ``events`` operations act on a live server's database as a writer of
it would (crossgate's own store classes, no private key): what a gated agent holding the store could do.
"""

from __future__ import annotations

import json
import sys
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from crossgate import Approve, RequestStatus, open_store
from crossgate.adapter import request_id
from crossgate.authority import (
    Authority,
    CheckpointClaims,
    DecisionClaims,
    ReviewerKind,
    decision_claims,
    standing_rule_claims,
)
from crossgate.authority.keyring import Keyring
from crossgate.decisions import AnyDecision
from crossgate.fingerprint import canonical_json, fingerprint
from crossgate.model import NewEvent, StandingRule, ToolCall
from crossgate.policy.loading import load_policy
from crossgate.policy.patterns import glob_match
from crossgate.policy.rules import standing_rule_matches

_KEYS: dict[str, Authority] = {}


def _key(name: str) -> Authority:
    if name not in _KEYS:
        _KEYS[name] = Authority.generate()
    return _KEYS[name]


def forge(db: str, request_id: str, how: str, source: str | None) -> dict[str, Any]:
    """Write ``request_id`` as approved, through the store, with a decided event (so waiters wake).

    ``how``: ``unsigned`` (no token), ``other_key`` (signed with a key of the forger's own), ``retarget``
    (the tokens and decision of ``source``, a genuinely approved request, copied onto it).
    """
    store = open_store(db)
    try:
        target = store.get_request(request_id)
        if target is None or target.status is not RequestStatus.PENDING:
            raise ValueError(f"request {request_id} is not pending: {target}")
        now = datetime.now(UTC)
        decision: AnyDecision = Approve(
            fingerprint=target.fingerprint, reviewer="security-lead", channel="api", decided_at=now
        )
        signatures: tuple[str, ...] = ()
        if how == "other_key":
            claims = decision_claims(target, decision, reviewer_kind=ReviewerKind.OPERATOR)
            signatures = (Authority.generate().sign(claims),)
        elif how == "retarget":
            genuine = store.get_request(source or "")
            if genuine is None or genuine.decision is None or not genuine.signatures:
                raise ValueError(f"request {source} holds no signed decision to copy")
            decision = genuine.decision.model_copy(update={"fingerprint": target.fingerprint})
            signatures = genuine.signatures
        elif how != "unsigned":
            raise ValueError(f"unknown forgery {how!r}")
        update = {"status": RequestStatus.DECIDED, "decision": decision, "decided_at": now, "signatures": signatures}
        event = NewEvent(kind="decided", at=now, request_id=request_id, actor="security-lead")
        if store.update_request(target.model_copy(update=update), (RequestStatus.PENDING,), event) is None:
            raise ValueError(f"request {request_id} was decided meanwhile")
    finally:
        store.close()
    return {"forged": request_id}


def insert_rule(db: str, fields: dict[str, Any], signer: str) -> dict[str, Any]:
    """Insert a standing rule as a writer of the store would: unsigned, or signed with the writer's own key."""
    now = datetime.now(UTC)
    rule = StandingRule.model_validate({"created_at": now.isoformat(), "created_by": "ops", **fields})
    if signer == "other_key":
        rule = rule.model_copy(update={"signature": Authority.generate().sign(standing_rule_claims(rule))})
    store = open_store(db)
    try:
        store.insert_rule(rule, NewEvent(kind="rule_added", at=now, actor="ops", payload={"rule": rule.id}))
    finally:
        store.close()
    return {"rule": rule.id}


def rollback(op: dict[str, Any]) -> dict[str, Any]:
    """What a writer of the store does with genuine signatures to roll its state back (plain SQL and the store).

    ``what``: ``policy_version`` (delete version ``version``), ``applied`` (set request ``request_id`` back to
    decided), ``revocation`` (restore the revoked rule ``rule_id``), ``head`` (delete the stored state head), or
    ``forged_head`` (replace it with a head signed by a key of the writer's own).
    """
    import sqlite3

    from crossgate.authority import StateHeadClaims
    from crossgate.authority.consumed import build_filter
    from crossgate.stores._signatures import rule_body

    db, what = op["db"], op["what"]
    bump = "UPDATE rules_version SET version = version + 1 WHERE one = 1"
    if what == "policy_version":
        with sqlite3.connect(db) as conn:
            conn.execute("DELETE FROM policy_versions WHERE version = ?", (op["version"],))
            conn.execute(bump)
    elif what == "head":
        with sqlite3.connect(db) as conn:
            conn.execute("DELETE FROM state_heads")
    elif what in ("applied", "revocation", "forged_head"):
        store = open_store(db)
        try:
            now = datetime.now(UTC)
            if what == "applied":
                applied = store.get_request(op["request_id"])
                if applied is None or applied.status is not RequestStatus.APPLIED:
                    raise ValueError(f"request {op['request_id']} is not applied: {applied}")
                back = applied.model_copy(update={"status": RequestStatus.DECIDED, "applied_at": None})
                event = NewEvent(kind="decided", at=now, request_id=applied.id, actor="security-lead")
                if store.update_request(back, (RequestStatus.APPLIED,), event) is None:
                    raise ValueError(f"request {applied.id} moved on meanwhile")
            elif what == "revocation":
                rule = store.get_rule(op["rule_id"])
                if rule is None or rule.revoked_at is None:
                    raise ValueError(f"rule {op['rule_id']} is not revoked: {rule}")
                restored = rule.model_copy(update={"revoked_at": None, "revoked_by": None})
                with sqlite3.connect(db) as conn:
                    conn.execute(
                        "UPDATE standing_rules SET revoked = 0, body = ? WHERE id = ?", (rule_body(restored), rule.id)
                    )
                    conn.execute(bump)
            else:
                claims = StateHeadClaims(
                    issued_at=now,
                    expires_at=now + timedelta(minutes=5),
                    rules_version=store.rules_version(),
                    audit_seq=0,
                    audit_hash="0" * 64,
                    consumed=build_filter([]),
                    consumed_count=0,
                )
                with sqlite3.connect(db) as conn:  # in place of every head stored: the authority's among them
                    kids = [kid for (kid,) in conn.execute("SELECT kid FROM state_heads")]
                for kid in kids:
                    store.put_state_head(kid, _key("forger").sign(claims), now)
        finally:
            store.close()
    else:
        raise ValueError(f"unknown rollback {what!r}")
    return {"done": what}


def head_file(op: dict[str, Any]) -> dict[str, Any]:
    """Python's HeadFile at ``op["path"]``: write ``token`` (when given) and mark ``applied`` (request id to
    ``apply_by`` or null); return the head it reads and whether each of ``probe`` was applied at ``now``."""
    from crossgate.adapter._heads import HeadFile

    file = HeadFile(op["path"])
    if op.get("token") is not None:
        file.write(lambda _stored: op["token"])
    for request, apply_by in (op.get("applied") or {}).items():
        file.mark_applied(request, None if apply_by is None else datetime.fromisoformat(apply_by))
    now = datetime.fromisoformat(op.get("now") or datetime.now(UTC).isoformat())
    return {"head": file.read(), "applied": [file.was_applied(r, now) for r in op.get("probe", [])]}


def consumed_filter(op: dict[str, Any]) -> dict[str, Any]:
    """A consumed-approvals filter of ``ids`` as a head carries it, and Python's answer for each of ``probe``."""
    from crossgate.authority.consumed import build_filter, filter_bytes, in_filter

    encoded = build_filter(op["ids"])
    raw = filter_bytes(encoded)
    return {"filter": encoded, "answers": [in_filter(raw, probe) for probe in op["probe"]]}


def events(db: str, request_id: str | None) -> dict[str, Any]:
    """The audit events (of one request, or all) as JSON."""
    store = open_store(db)
    try:
        return {"events": [e.model_dump(mode="json") for e in store.list_events(request_id=request_id)]}
    finally:
        store.close()


def pydantic_ai_plan(op: dict[str, Any]) -> dict[str, Any]:
    """Run ``op["plan"]`` through the Pydantic AI adapter over the agent API, as a Python agent holding no store.

    Pending requests are rejected through the reviewer API with ``op["message"]`` and the run resumed until it
    finishes. Returns the calls whose body ran, and what the model read for each call (by its index in the plan).
    """
    import asyncio

    import httpx
    from pydantic_ai import Agent

    from crossgate.remote import RemoteQueue
    from crossgate.runs import Parked
    from crossgate_pydantic_ai import Gate
    from crossgate_pydantic_ai.testing import Call, planned_model, read_record

    plan: list[dict[str, Any]] = op["plan"]
    record = Path(op["dir"]) / "pydantic-ai-read.jsonl"
    ran: list[str] = []
    model = planned_model(
        [[Call(c["tool"], json.dumps(c["args"]), f"call_{i}") for i, c in enumerate(plan)]], record=record
    )
    agent = Agent(model, name="Scripted")
    for name in ("read_ticket", "delete_ticket", "execute_sql"):
        agent.tool_plain(name=name)(_recording_body(name, ran))
    reviewer = {"Authorization": f"Bearer {op['reviewer_token']}"}

    async def drive() -> None:
        with RemoteQueue(op["url"], token=op["token"]) as queue:
            gate = Gate(queue, sdk_agent=agent, authority=op.get("pin"))
            outcome = await gate.run(agent, "Work through the tickets.", run=op["run"])
            async with httpx.AsyncClient(base_url=op["url"], headers=reviewer) as http:
                while isinstance(outcome, Parked):
                    for request_id in outcome.request_ids:
                        body = {"kind": "reject", "message": op["message"]}
                        (await http.post(f"/api/requests/{request_id}/decision", json=body)).raise_for_status()
                    outcome = await gate.resume(outcome.parked_run)

    asyncio.run(drive())
    read = {int(line["call_id"].removeprefix("call_")): line["content"] for line in read_record(record)}
    return {"ran": ran, "read": read}


def _recording_body(name: str, ran: list[str]) -> Any:
    """A tool body for ``name`` that records that it ran, with the scripted agents' answer."""

    def body(**args: Any) -> str:
        text = f"{name} {json.dumps(args, separators=(',', ':'))}"
        ran.append(text)
        return f"ran {text}"

    body.__name__ = name
    body.__doc__ = f"The {name} tool."
    return body


def run(op: dict[str, Any]) -> dict[str, Any]:
    """One operation's result."""
    kind = op["op"]
    if kind == "canonical":
        return {"canonical": canonical_json(op["value"])}
    if kind == "fingerprint":
        return {"fingerprint": fingerprint(op["tool"], op["args"])}
    if kind == "request_id":
        return {"id": request_id(op["tag"], *op["parts"])}
    if kind == "key":
        authority = _key(op["key"])
        return {"pin": authority.public_key.pin, "kid": authority.kid, "pem": authority.public_key.pem()}
    if kind == "keyring_json":
        with tempfile.TemporaryDirectory() as directory:
            keyring = Keyring.init(Path(directory) / "authority")
            first = keyring.current
            keyring.rotate()
            keyring.revoke(first)
            text = (keyring.directory / "keyring.json").read_text(encoding="utf-8")
        return {"keyring": text, "kids": [k.kid for k in keyring.file.keys], "revoked": first}
    if kind == "sign":
        return {"token": _key(op["key"]).sign(DecisionClaims.model_validate(op["claims"]))}
    if kind == "evaluate":
        verdict = load_policy(op["policy"]).evaluate(ToolCall.model_validate(op["call"]))
        return {"kind": verdict.kind.value, "rule": verdict.rule}
    if kind == "sign_rule":
        rule = StandingRule.model_validate(op["rule"])
        token = _key(op["key"]).sign(standing_rule_claims(rule))
        return {"token": token, "rule": rule.model_copy(update={"signature": token}).model_dump(mode="json")}
    if kind == "glob":
        return {"matches": [glob_match(pattern, text) for pattern, text in op["cases"]]}
    if kind == "rule_matches":
        rule = StandingRule.model_validate(op["rule"])
        now = datetime.fromisoformat(op["now"])
        return {"matches": [standing_rule_matches(rule, ToolCall.model_validate(c), now) for c in op["calls"]]}
    if kind == "forge":
        return forge(op["db"], op["request_id"], op["how"], op.get("source"))
    if kind == "insert_rule":
        return insert_rule(op["db"], op["rule"], op.get("signer", "unsigned"))
    if kind == "events":
        return events(op["db"], op.get("request_id"))
    if kind == "rollback":
        return rollback(op)
    if kind == "head_file":
        return head_file(op)
    if kind == "consumed_filter":
        return consumed_filter(op)
    if kind == "pydantic_ai_plan":
        return pydantic_ai_plan(op)
    if kind == "sign_head":
        from crossgate.authority import StateHeadClaims

        return {"token": _key(op["key"]).sign(StateHeadClaims.model_validate(op["claims"]))}
    if kind == "sign_checkpoint":
        claims = CheckpointClaims(seq=1, head_hash="0" * 64, at=op["at"])
        return {"token": _key(op["key"]).sign(claims)}
    raise ValueError(f"unknown operation {kind!r}")


def main() -> None:
    """Run every operation read from stdin."""
    json.dump([run(op) for op in json.load(sys.stdin)], sys.stdout)


if __name__ == "__main__":
    main()
