"""Reading a request that may not exist yet."""

from __future__ import annotations

from crossgate.adapter._protocol import AdapterQueue
from crossgate.errors import NotFoundError
from crossgate.model import ApprovalRequest


def find_request(queue: AdapterQueue, request_id: str) -> ApprovalRequest | None:
    """The request with this id, or None if no submission created it (a call seen for the first time)."""
    try:
        return queue.get(request_id)
    except NotFoundError:
        return None
