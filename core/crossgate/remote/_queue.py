"""``RemoteQueue``: the adapter interface (``crossgate.adapter.AdapterQueue``) over the agent API.

An agent process that holds no store, only an agent credential, gates its tools through it exactly as
through a ``ReviewQueue``: every argument and result is the same ``crossgate.model`` object, sent as
JSON. The server owns the policy, the store and the audit log; see docs/agents-over-http.md.
"""

from __future__ import annotations

import ipaddress
import os
import time
from collections.abc import Sequence
from typing import Any
from urllib.parse import quote, urlsplit

import httpx

from crossgate import tracing
from crossgate.errors import ConfigurationError
from crossgate.model import (
    ALL_DECISIONS,
    CANCEL_MESSAGE,
    ApprovalRequest,
    DecisionKind,
    Event,
    JsonObject,
    ParkedRun,
    ParkedRunStatus,
    ToolCall,
    Verdict,
)
from crossgate.policy.rules import Policy
from crossgate.queue import Submission
from crossgate.remote._errors import NoOutcomeError
from crossgate.remote._http import Exchange, send, send_async
from crossgate.stores.base import Page, RequestQuery

TOKEN_ENV = "CROSSGATE_AGENT_TOKEN"
"""Where :class:`RemoteQueue` reads the agent credential when none is passed."""
API_PATH = "/api/agent/v1"
LONG_POLL_SECONDS = 30.0
"""The longest one long poll asks the server to hold (the server's own limit)."""


def _text(value: object) -> str | None:
    return value if value is None or isinstance(value, str) else str(value)


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class RemoteQueue:
    """A review queue served by ``crossgate serve``, reached with an agent credential.

    ``url`` is the server's base URL (``https://review.example.com``); ``token`` the agent credential
    (default: ``$CROSSGATE_AGENT_TOKEN``). Plain ``http`` is refused except to a loopback address, as it
    would send the credential in clear, unless ``allow_plain_http``. ``timeout`` bounds one exchange;
    ``retry_seconds`` is how long a network failure is retried (with the same idempotency key) before
    :class:`~crossgate.remote.ServerUnavailableError`, a ``StoreError``: the adapter then runs nothing.
    ``transport`` is for tests (an ``httpx`` transport).
    """

    def __init__(
        self,
        url: str,
        *,
        token: str | None = None,
        timeout: float = 10.0,
        retry_seconds: float = 30.0,
        policy_ttl_seconds: float = 2.0,
        allow_plain_http: bool = False,
        transport: httpx.BaseTransport | None = None,
        async_transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ConfigurationError(f"a remote queue needs an http(s) URL of the review server, got {url!r}")
        if parts.scheme == "http" and not allow_plain_http and not _loopback(parts.hostname):
            raise ConfigurationError(
                f"{url} is plain http to another host: the agent credential would travel in clear; "
                "use https (or allow_plain_http=True on a closed network)"
            )
        token = token or os.environ.get(TOKEN_ENV)
        if not token:
            raise ConfigurationError(f"a remote queue needs an agent credential: pass token= or set ${TOKEN_ENV}")
        base = url.rstrip("/")
        self.url = base if base.endswith(API_PATH) else base + API_PATH
        self.retry_seconds = retry_seconds
        self.policy_ttl_seconds = policy_ttl_seconds
        self._headers = {"Authorization": f"Bearer {token}"}
        self._timeout = httpx.Timeout(timeout, connect=min(timeout, 5.0))
        self._async_transport = async_transport
        self._client = httpx.Client(
            base_url=self.url, headers=self._headers, timeout=self._timeout, transport=transport
        )
        self._policy: tuple[str, Policy, float] | None = None

    def close(self) -> None:
        """Close the connections."""
        self._client.close()

    def __enter__(self) -> RemoteQueue:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _call(self, method: str, path: str, body: Any = None, *, params: Any = None, keyed: bool = False) -> Any:
        exchange = Exchange(method, path, body=body, params=params, keyed=keyed)
        return send(self._client, exchange, retry_seconds=self.retry_seconds)

    # policy -------------------------------------------------------------------------------------
    @property
    def policy(self) -> Policy:
        """The server's policy, cached for ``policy_ttl_seconds`` and then revalidated by its version."""
        cached = self._policy
        if cached is not None and time.monotonic() < cached[2]:
            return cached[1]
        headers = {"If-None-Match": f'"{cached[0]}"'} if cached is not None else None
        answer = send(self._client, Exchange("GET", "/policy", headers=headers), retry_seconds=self.retry_seconds)
        if answer is None and cached is not None:  # 304: unchanged since it was cached
            version, policy = cached[0], cached[1]
        else:
            version, policy = str(answer["version"]), Policy.model_validate(answer["document"])
        self._policy = (version, policy, time.monotonic() + self.policy_ttl_seconds)
        return policy

    def state_head_token(self, kid: str) -> str | None:
        """The server's newest signed state head of key ``kid``, unverified (the gate verifies it with its own
        pinned keys)."""
        answer = self._call("GET", "/state-head", params={"kid": kid})
        token = answer.get("token") if isinstance(answer, dict) else None
        return token if isinstance(token, str) else None

    def evaluate(self, call: ToolCall) -> Verdict:
        """The server policy's verdict for ``call`` with the current standing rules; records nothing."""
        return Verdict.model_validate(self._call("POST", "/evaluate", {"call": call.model_dump(mode="json")}))

    # asking -------------------------------------------------------------------------------------
    def submit(
        self,
        call: ToolCall,
        *,
        args_schema: JsonObject | None = None,
        description: str | None = None,
        requested_by: str | None = None,
        capabilities: Sequence[DecisionKind] = ALL_DECISIONS,
        request_id: str | None = None,
        timeout_seconds: float | None = None,
        verdict: Verdict | None = None,
    ) -> Submission:
        """Evaluate ``call`` on the server and create its pending request when the verdict is ask.

        ``verdict`` is ignored: the server judges every call itself and never takes an agent's verdict.
        """
        return self._request(call, args_schema, description, requested_by, capabilities, request_id, timeout_seconds)

    def prepare(
        self,
        call: ToolCall,
        *,
        args_schema: JsonObject | None = None,
        description: str | None = None,
        requested_by: str | None = None,
        capabilities: Sequence[DecisionKind] = ALL_DECISIONS,
        request_id: str | None = None,
        timeout_seconds: float | None = None,
        verdict: Verdict | None = None,
    ) -> Submission:
        """:meth:`submit` without storing a new request: :meth:`park` stores it with the run."""
        return self._request(
            call, args_schema, description, requested_by, capabilities, request_id, timeout_seconds, store=False
        )

    def _request(
        self,
        call: ToolCall,
        args_schema: JsonObject | None,
        description: str | None,
        requested_by: str | None,
        capabilities: Sequence[DecisionKind],
        request_id: str | None,
        timeout_seconds: float | None,
        *,
        store: bool = True,
    ) -> Submission:
        body = {
            "call": call.model_dump(mode="json"),
            "args_schema": args_schema,
            "description": description,
            "requested_by": requested_by,
            "capabilities": [DecisionKind(k).value for k in capabilities],
            "request_id": request_id,
            "timeout_seconds": timeout_seconds,
            "store": store,
        }
        answer = self._call("POST", "/requests", body, keyed=True)
        request = answer.get("request")
        return Submission(
            Verdict.model_validate(answer["verdict"]),
            None if request is None else ApprovalRequest.model_validate(request),
            stored=bool(answer.get("stored", True)),
        )

    def get(self, request_id: str) -> ApprovalRequest:
        """One of this agent's requests; NotFoundError for an unknown one (or another agent's)."""
        return ApprovalRequest.model_validate(self._call("GET", f"/requests/{quote(request_id, safe='')}"))

    def list_requests(self, query: RequestQuery | None = None) -> Page[ApprovalRequest]:
        """One page of this agent's requests (a page may hold fewer than the limit; follow ``next_cursor``)."""
        query = query or RequestQuery()
        params: dict[str, str | list[str]] = {
            "order": "newest" if query.newest_first else "oldest",
            "limit": str(query.limit),
        }
        if query.statuses:
            params["status"] = [s.value for s in query.statuses]
        for name in ("framework", "tool", "agent", "run", "cursor"):
            if (value := getattr(query, name)) is not None:
                params[name] = value
        answer = self._call("GET", "/requests", params=params)
        items = [ApprovalRequest.model_validate(item) for item in answer["items"]]
        return Page(items=items, next_cursor=answer.get("next_cursor"))

    async def wait(self, request_id: str, timeout: float | None = None) -> ApprovalRequest:
        """Long-poll until the request leaves ``pending`` or ``timeout`` seconds pass; return it either way.

        Each poll holds at most 30 s on the server; a dropped connection (a server restart) is retried for
        ``retry_seconds``, and the wait goes on where it was.
        """
        with tracing.span("crossgate.wait", attributes={"crossgate.request.id": request_id}) as span:
            waited = await self._wait(request_id, timeout)
            if span is not None:
                tracing.set_attributes(span, tracing.waited_attributes(waited))
            return waited

    async def _wait(self, request_id: str, timeout: float | None) -> ApprovalRequest:
        deadline = None if timeout is None else time.monotonic() + timeout
        path = f"/requests/{quote(request_id, safe='')}"
        async with httpx.AsyncClient(
            base_url=self.url, headers=self._headers, timeout=self._timeout, transport=self._async_transport
        ) as client:
            while True:
                left = LONG_POLL_SECONDS if deadline is None else max(0.0, deadline - time.monotonic())
                hold = min(LONG_POLL_SECONDS, left)
                params = {"wait": f"{hold:.3f}"} if hold > 0 else None
                exchange = Exchange("GET", path, params=params, timeout=hold + (self._timeout.read or 10.0))
                answer = await send_async(client, exchange, retry_seconds=self.retry_seconds)
                request = ApprovalRequest.model_validate(answer)
                if not request.is_open or (deadline is not None and time.monotonic() >= deadline):
                    return request

    def cancel(self, request_id: str, *, reason: str = CANCEL_MESSAGE, actor: str | None = None) -> ApprovalRequest:
        """Withdraw a pending request; the server records the agent credential as who did (``actor`` is unused)."""
        path = f"/requests/{quote(request_id, safe='')}/cancel"
        return ApprovalRequest.model_validate(self._call("POST", path, {"reason": reason}, keyed=True))

    def expire_overdue(self) -> list[ApprovalRequest]:
        """Expire overdue requests on the server now; return this agent's that it expired."""
        return [ApprovalRequest.model_validate(item) for item in self._call("POST", "/expire")]

    # applying and recording ---------------------------------------------------------------------
    def mark_applied(
        self, request_id: str | ApprovalRequest, *, args: JsonObject | None = None, actor: str | None = None
    ) -> ApprovalRequest:
        """Record, exactly once, that the decision reached the SDK (``args``: the arguments about to run)."""
        rid = request_id.id if isinstance(request_id, ApprovalRequest) else request_id
        path = f"/requests/{quote(rid, safe='')}/applied"
        return ApprovalRequest.model_validate(self._call("POST", path, {"args": args}, keyed=True))

    def record_outcome(
        self,
        request_id: str | ApprovalRequest | None,
        *,
        ran: bool,
        result: str | None = None,
        error: str | None = None,
        call: ToolCall | None = None,
    ) -> None:
        """Record whether the tool ran, and a result or error summary."""
        rid = request_id.id if isinstance(request_id, ApprovalRequest) else request_id
        body = {
            "request_id": rid,
            "ran": bool(ran),
            "result": _text(result),
            "error": _text(error),
            "call": None if call is None else call.model_dump(mode="json"),
        }
        self._call("POST", "/outcomes", body, keyed=True)

    def refuse_unverified(
        self,
        target: ApprovalRequest | ToolCall,
        *,
        reason: str,
        problem: str,
        message: str,
        rule: str | None = None,
        actor: str | None = None,
    ) -> ApprovalRequest | None:
        """Record on the server that this agent's gate refused what let a call run (``actor`` is unused)."""
        body: dict[str, Any] = {"reason": reason, "problem": problem[:2000], "message": message, "rule": rule}
        if isinstance(target, ApprovalRequest):
            body["request_id"] = target.id
        else:
            body["call"] = target.model_dump(mode="json")
        answer = self._call("POST", "/refusals", body, keyed=True)
        return None if answer is None else ApprovalRequest.model_validate(answer)

    def outcome(self, request_id: str) -> Event | None:
        """The recorded outcome after the request was applied; None before one was recorded."""
        try:
            answer = self._call("GET", f"/requests/{quote(request_id, safe='')}/outcome")
        except NoOutcomeError:
            return None
        return Event.model_validate(answer)

    # parked runs --------------------------------------------------------------------------------
    def park(
        self,
        *,
        framework: str,
        run: str,
        request_ids: Sequence[str],
        state: str,
        metadata: JsonObject | None = None,
        new_requests: Sequence[ApprovalRequest] = (),
    ) -> ParkedRun:
        """Store the SDK's paused state on the server with its new requests; only this agent reads it back."""
        body = {
            "framework": framework,
            "run": run,
            "request_ids": list(request_ids),
            "state": state,
            "metadata": metadata,
            "new_requests": [r.model_dump(mode="json") for r in new_requests],
        }
        return ParkedRun.model_validate(self._call("POST", "/parked", body, keyed=True))

    def get_parked(self, parked_id: str) -> ParkedRun:
        """One of this agent's parked runs, with its state."""
        return ParkedRun.model_validate(self._call("GET", f"/parked/{quote(parked_id, safe='')}"))

    def parked_runs(
        self,
        *,
        statuses: Sequence[ParkedRunStatus] = (ParkedRunStatus.PARKED,),
        framework: str | None = None,
        run: str | None = None,
    ) -> list[ParkedRun]:
        """This agent's parked runs, oldest first."""
        params: dict[str, str | list[str]] = {"status": [ParkedRunStatus(s).value for s in statuses]}
        if framework is not None:
            params["framework"] = framework
        if run is not None:
            params["run"] = run
        return [ParkedRun.model_validate(item) for item in self._call("GET", "/parked", params=params)]

    def is_ready(self, parked: ParkedRun) -> bool:
        """True once no request of the parked run is pending."""
        return bool(self._call("GET", f"/parked/{quote(parked.id, safe='')}/ready")["ready"])

    def claim_parked(self, parked_id: str | ParkedRun, *, owner: str, lease_seconds: float = 300.0) -> ParkedRun:
        """Take a parked run for resuming; ParkedRunClaimedError if resumed already or leased by another."""
        pid = parked_id.id if isinstance(parked_id, ParkedRun) else parked_id
        body = {"owner": owner, "lease_seconds": lease_seconds}
        return ParkedRun.model_validate(self._call("POST", f"/parked/{quote(pid, safe='')}/claim", body, keyed=True))

    def finish_parked(
        self,
        parked_id: str | ParkedRun,
        *,
        owner: str,
        status: ParkedRunStatus = ParkedRunStatus.RESUMED,
        outcome: str | None = None,
    ) -> ParkedRun:
        """Close a resume ``owner`` holds the lease for."""
        pid = parked_id.id if isinstance(parked_id, ParkedRun) else parked_id
        body = {"owner": owner, "status": ParkedRunStatus(status).value, "outcome": outcome}
        return ParkedRun.model_validate(self._call("POST", f"/parked/{quote(pid, safe='')}/finish", body, keyed=True))
