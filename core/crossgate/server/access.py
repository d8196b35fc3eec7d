"""Who is calling: a bearer token (channel ``api``) or the page's session cookie (channel ``web``)."""

from __future__ import annotations

import hmac
from dataclasses import dataclass

from fastapi import Request

from crossgate.model import ApprovalRequest
from crossgate.server.errors import ForbiddenError, UnauthenticatedError
from crossgate.server.settings import Reviewer, ServerSettings, hash_token

COOKIE = "crossgate_session"


@dataclass(frozen=True, slots=True)
class Caller:
    """An authenticated reviewer and the channel their decisions are recorded under."""

    reviewer: Reviewer
    channel: str


class Authenticator:
    """Maps tokens to reviewers; compares token digests in constant time."""

    def __init__(self, settings: ServerSettings) -> None:
        self._reviewers = settings.reviewers

    def reviewer_for(self, token: str) -> Reviewer | None:
        """The reviewer holding ``token``, or None."""
        digest = hash_token(token)
        found = None
        for reviewer in self._reviewers:  # no early exit: the time taken says nothing about which token matched
            if hmac.compare_digest(digest, reviewer.token_sha256):
                found = reviewer
        return found

    def caller(self, request: Request) -> Caller:
        """The caller of ``request``; UnauthenticatedError without a valid token."""
        header = request.headers.get("authorization", "")
        scheme, _, token = header.partition(" ")
        if header:
            if scheme.lower() != "bearer" or not token.strip():
                raise UnauthenticatedError("send the reviewer token as 'Authorization: Bearer <token>'")
            reviewer = self.reviewer_for(token.strip())
            if reviewer is None:
                raise UnauthenticatedError("this bearer token belongs to no reviewer")
            return Caller(reviewer, "api")
        cookie = request.cookies.get(COOKIE)
        if cookie:
            reviewer = self.reviewer_for(cookie)
            if reviewer is None:
                raise UnauthenticatedError("the session is no longer valid; sign in again")
            return Caller(reviewer, "web")
        raise UnauthenticatedError("a reviewer token is required: 'Authorization: Bearer <token>'")


def decide_blocked(reviewer: Reviewer, request: ApprovalRequest) -> str | None:
    """Why ``reviewer`` may not decide ``request`` (scope or self-approval), or None if they may."""
    if not reviewer.may_decide(request):
        call = request.call
        return (
            f"{reviewer.name} may decide {reviewer.scope_text()}; request {request.id} is "
            f"{call.tool} from {call.framework}" + (f" (agent {call.agent})" if call.agent else "")
        )
    if request.requested_by is not None and request.requested_by == reviewer.name:
        return f"{reviewer.name} submitted request {request.id} and cannot decide it"
    return None


def require_scope(reviewer: Reviewer, request: ApprovalRequest) -> None:
    """ForbiddenError unless the request lies within the reviewer's scope.

    Self-approval is left to the queue, which raises SelfDecisionError (also HTTP 403).
    """
    if not reviewer.may_decide(request):
        blocked = decide_blocked(reviewer, request)
        raise ForbiddenError(f"out of scope: {blocked}")
