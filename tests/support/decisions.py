"""Assertions about decisions that several adapters' tests share."""

from __future__ import annotations

import pytest

from crossgate import Approve, RequestStatus, ReviewQueue, SelfDecisionError


def refuse_self_approval(queue: ReviewQueue, request_id: str, person: str) -> None:
    """``person`` cannot approve ``request_id``; the request stays pending and undecided."""
    with pytest.raises(SelfDecisionError):
        queue.decide(request_id, Approve(), reviewer=person)
    request = queue.get(request_id)
    assert request.status is RequestStatus.PENDING
    assert request.decision is None
