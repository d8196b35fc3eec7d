"""Who is calling: a bearer token (channel ``api``) or the page's session cookie (channel ``web``).

Tokens are the tokens file's (held in memory) and, when the store keeps them, stored credentials
(``crossgate reviewers|agents add``), looked up in the store on each request that the file does not
answer, so a revocation holds at once on every server process on the same database.

The page signs in with a reviewer's token or a one-time sign-in code and gets a session id in its
cookie, never the token itself (see ``crossgate.server.sessions``).
"""

from __future__ import annotations

import hmac
import threading
from collections.abc import Callable
from dataclasses import dataclass

from fastapi import Request

from crossgate.credentials import Credentials
from crossgate.errors import ConfigurationError
from crossgate.model import ApprovalRequest
from crossgate.server.errors import ForbiddenError, UnauthenticatedError
from crossgate.server.sessions import SignInCodes, issue_session, session_nonce, session_reviewer
from crossgate.server.settings import AgentToken, Reviewer, ServerSettings, hash_token
from crossgate.stores.credentials import Credential

COOKIE = "crossgate_session"


@dataclass(frozen=True, slots=True)
class Caller:
    """An authenticated reviewer and the channel their decisions are recorded under."""

    reviewer: Reviewer
    channel: str


class Authenticator:
    """Maps tokens and sessions to reviewers; compares token digests in constant time."""

    def __init__(self, settings: ServerSettings, credentials: Credentials | None = None) -> None:
        self._reviewers = settings.reviewers
        self._agents = settings.agents
        self.credentials = credentials
        """The stored credentials, or None (the tokens file's only)."""
        if credentials is not None:
            check_names_apart(settings, credentials.list())
        self.instance_token: Callable[[str], bool] = lambda _token: False
        """Whether a token is an AAP instance's (set by the AAP provider, whose instances are not in the file)."""
        self._codes = SignInCodes()
        self._ended: set[str] = set()  # sessions signed out of, until this process ends
        self._lock = threading.Lock()

    def issue_sign_in(self, reviewer: str) -> str:
        """A code that signs ``reviewer`` in on the page once (``/login?token=<code>``)."""
        if self._named(reviewer) is None:
            raise ValueError(f"no reviewer named {reviewer!r}")
        return self._codes.issue(reviewer)

    def sign_in(self, secret: str) -> str | None:
        """A new session id for the holder of ``secret`` (a one-time code, used up here, or a token), or None."""
        name = self._codes.redeem(secret)
        found = self._named(name) if name else self.reviewer_for(secret)
        return issue_session(found) if found is not None else None

    def sign_out(self, session: str) -> None:
        """End ``session`` on this server (the cookie is cleared as well)."""
        with self._lock:
            self._ended.add(session_nonce(session))

    def session_reviewer(self, session: str) -> Reviewer | None:
        """The reviewer of a live session id, or None."""
        with self._lock:
            if session_nonce(session) in self._ended:
                return None
        return session_reviewer(session, (*self._reviewers, *self._stored_reviewers()))

    def _named(self, name: str) -> Reviewer | None:
        found = next((r for r in self._reviewers if r.name == name), None)
        return found or next((r for r in self._stored_reviewers() if r.name == name), None)

    def _stored_reviewers(self) -> list[Reviewer]:
        if self.credentials is None:
            return []
        live = self.credentials.list("reviewer")
        return [_reviewer(c) for c in live if self.credentials.verifies(c)]

    def _stored(self, digest: str) -> Credential | None:
        return self.credentials.lookup(digest) if self.credentials is not None else None

    def reviewer_for(self, token: str) -> Reviewer | None:
        """The reviewer holding ``token``, or None."""
        digest = hash_token(token)
        found = None
        for reviewer in self._reviewers:  # no early exit: the time taken says nothing about which token matched
            if hmac.compare_digest(digest, reviewer.token_sha256):
                found = reviewer
        if found is None and (stored := self._stored(digest)) is not None and stored.kind == "reviewer":
            return _reviewer(stored)
        return found

    def agent_for(self, token: str) -> AgentToken | None:
        """The agent or provisioner credential from the tokens file holding ``token``, or None."""
        digest = hash_token(token)
        found = None
        for agent in self._agents:  # no early exit, as for reviewers
            if hmac.compare_digest(digest, agent.token_sha256):
                found = agent
        if found is None and (stored := self._stored(digest)) is not None and stored.kind == "agent":
            return AgentToken(name=stored.name, token_sha256=stored.token_sha256)
        return found

    def stored_agent(self, token: str) -> AgentToken | None:
        """The stored (not the tokens file's) agent credential holding ``token``, or None."""
        stored = self._stored(hash_token(token))
        return (
            AgentToken(name=stored.name, token_sha256=stored.token_sha256)
            if stored and stored.kind == "agent"
            else None
        )

    def is_agent_token(self, token: str) -> bool:
        """True for a token that belongs to an agent, a provisioner or an AAP instance, not to a reviewer."""
        return self.agent_for(token) is not None or self.instance_token(token)

    def file_caller(self, request: Request) -> Caller | None:
        """The caller of ``request`` if the tokens file holds its bearer token: answered from memory alone."""
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            return None
        digest = hash_token(token.strip())
        found = None
        for reviewer in self._reviewers:  # no early exit, as in reviewer_for
            if hmac.compare_digest(digest, reviewer.token_sha256):
                found = reviewer
        return Caller(found, "api") if found is not None else None

    @property
    def reads_store(self) -> bool:
        """True when a caller the tokens file does not know is looked up in the store (a blocking read)."""
        return self.credentials is not None

    def caller(self, request: Request) -> Caller:
        """The caller of ``request``; UnauthenticatedError without a valid token."""
        header = request.headers.get("authorization", "")
        scheme, _, token = header.partition(" ")
        if header:
            if scheme.lower() != "bearer" or not token.strip():
                raise UnauthenticatedError("send the reviewer token as 'Authorization: Bearer <token>'")
            reviewer = self.reviewer_for(token.strip())
            if reviewer is None and self.is_agent_token(token.strip()):
                raise ForbiddenError(
                    "this is an agent credential: it may submit, wait on and cancel its own calls over /api/agent/v1 "
                    "and /aap, "
                    "never decide, add rules or read the review queue"
                )
            if reviewer is None:
                raise UnauthenticatedError("this bearer token belongs to no reviewer")
            return Caller(reviewer, "api")
        cookie = request.cookies.get(COOKIE)
        if cookie:
            reviewer = self.session_reviewer(cookie)
            if reviewer is None:
                raise UnauthenticatedError("the session is no longer valid; sign in again")
            return Caller(reviewer, "web")
        raise UnauthenticatedError("a reviewer token is required: 'Authorization: Bearer <token>'")


def _reviewer(credential: Credential) -> Reviewer:
    return Reviewer(
        name=credential.name,
        token_sha256=credential.token_sha256,
        frameworks=credential.frameworks,
        tools=credential.tools,
        agents=credential.agents,
        admin=credential.admin,
    )


def check_names_apart(settings: ServerSettings, stored: list[Credential]) -> None:
    """ConfigurationError (one line) if a stored credential's name is also in the tokens file, for its kind."""
    in_file = {"reviewer": {r.name for r in settings.reviewers}, "agent": {a.name for a in settings.agents}}
    both = sorted({f"{c.kind} {c.name}" for c in stored if c.name in in_file[c.kind]})
    if both:
        raise ConfigurationError(
            f"{', '.join(both)}: named in the tokens file and stored (crossgate reviewers|agents list); "
            "keep each name in one place"
        )


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
