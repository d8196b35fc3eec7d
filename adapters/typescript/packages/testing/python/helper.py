"""The Python side of the TypeScript tests: canonical JSON, request ids and signed decisions, as crossgate has them.

Reads a JSON list of operations on stdin and prints a JSON list of their results, one process per batch.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from crossgate.adapter import request_id
from crossgate.authority import Authority, CheckpointClaims, DecisionClaims
from crossgate.authority.keyring import Keyring
from crossgate.fingerprint import canonical_json, fingerprint
from crossgate.model import ToolCall
from crossgate.policy.loading import load_policy

_KEYS: dict[str, Authority] = {}


def _key(name: str) -> Authority:
    if name not in _KEYS:
        _KEYS[name] = Authority.generate()
    return _KEYS[name]


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
    if kind == "keyring":
        keyring = Keyring.init(op["dir"])
        return {"pin": keyring.pin_text(), "kid": keyring.current}
    if kind == "sign":
        return {"token": _key(op["key"]).sign(DecisionClaims.model_validate(op["claims"]))}
    if kind == "evaluate":
        verdict = load_policy(op["policy"]).evaluate(ToolCall.model_validate(op["call"]))
        return {"kind": verdict.kind.value, "rule": verdict.rule}
    if kind == "sign_checkpoint":
        claims = CheckpointClaims(seq=1, head_hash="0" * 64, at=op["at"])
        return {"token": _key(op["key"]).sign(claims)}
    raise ValueError(f"unknown operation {kind!r}")


def main() -> None:
    """Run every operation read from stdin."""
    json.dump([run(op) for op in json.load(sys.stdin)], sys.stdout)


if __name__ == "__main__":
    main()
