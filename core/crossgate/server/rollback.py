"""The server's own hold on the policy floor: what a policy older than the newest signed one let through.

A writer of the store can delete the newest signed policy version, so that the server evaluates the one
before it. The server's state head signer remembers the newest version it signed or saw
(``ReviewQueue.rollback_problem``), so each channel that evaluates calls for agents (the agent API, AAP)
refuses what the older version allowed or sent to a person, and records the refusal. The gates check
the same against the state head, but they hold the served policy for a few seconds.
"""

from __future__ import annotations

import contextlib

from crossgate.adapter._authority import HEAD_RULE
from crossgate.errors import ConflictError
from crossgate.model import ToolCall, Verdict, VerdictKind
from crossgate.queue import ReviewQueue, Submission


def refuse_rolled_back(
    queue: ReviewQueue, call: ToolCall, submission: Submission, *, problem: str, message: str, actor: str
) -> Submission:
    """Close what ``submission`` let through under a rolled-back policy; a deny with ``message`` instead.

    A stored pending request is cancelled with ``message`` (what the model reads); any other call (allowed,
    denied, or its request only prepared) is recorded as refused.
    """
    request = submission.request
    if request is not None and submission.stored:
        with contextlib.suppress(ConflictError):  # decided or closed meanwhile: nothing of it runs here either
            queue.cancel(request.id, reason=message, actor=actor)
    else:
        queue.refuse_unverified(
            call, reason="rolled_back", problem=problem, message=message, rule=submission.verdict.rule, actor=actor
        )
    return Submission(Verdict(kind=VerdictKind.DENY, reason=message, rule=HEAD_RULE))
