"""The AAP request scenarios again, on PostgreSQL (its LISTEN/NOTIFY wakes the long poll)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from crossgate import ReviewQueue
from tests.server.aap.test_requests import (
    test_cancel_ends_a_pending_request_and_a_decided_one_is_already_terminal,
    test_consume_once_then_already_consumed,
    test_edit_is_denied_and_pre_approves_exactly_the_edited_call_once,
    test_long_poll_is_woken_by_the_decision,
    test_replay_returns_the_request_and_a_changed_body_is_an_idempotency_conflict,
)
from tests.server.conftest import POLICY
from tests.support.postgres import postgres_store_factory

pytestmark = [pytest.mark.postgres, pytest.mark.slow]

__all__ = [
    "test_cancel_ends_a_pending_request_and_a_decided_one_is_already_terminal",
    "test_consume_once_then_already_consumed",
    "test_edit_is_denied_and_pre_approves_exactly_the_edited_call_once",
    "test_long_poll_is_woken_by_the_decision",
    "test_replay_returns_the_request_and_a_changed_body_is_an_idempotency_conflict",
]


@pytest.fixture
def queue() -> Iterator[ReviewQueue]:
    store = postgres_store_factory()()
    q = ReviewQueue(store, POLICY)
    yield q
    q.close()
