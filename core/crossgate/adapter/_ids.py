"""The one recipe for deterministic request ids."""

from __future__ import annotations

import hashlib

from crossgate.fingerprint import canonical_json


def request_id(tag: str, *parts: str | int | None) -> str:
    """The request id of one tool call, the same every time the call is seen again.

    ``tag`` names the adapter (``"oa"``, ``"claude"``, ...); ``parts`` are whatever identifies the call
    in its framework (run, agent, call id; a thread and model turn). A re-submitted call (a resumed
    run, a re-asked permission, a re-run node) then finds the request its first submission created,
    and ``submit(request_id=...)`` refuses a different call under the same id.
    """
    digest = hashlib.sha256(canonical_json(list(parts)).encode()).hexdigest()
    return f"req_{tag}_{digest[:32]}"
