"""The reviewer backend over the review server's API (``/api``), with a reviewer token.

The server's error body names the class of the error it raised (``{"error": "already_decided", …}``),
so the command gets the very error, message and exit code a local queue gives. What has no local
counterpart maps to one line: 401 (a token the server does not take: exit 1), 403 (outside the
reviewer's scope: exit 5), a 5xx or no answer at all (exit 1). Every call is one attempt: a command
the server never answered may be run again, and a decision it did record is then refused as decided.
"""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any, TypeVar
from urllib.parse import quote, urlsplit

import httpx
from pydantic import BaseModel, ValidationError

from crossgate.cli.backend import (
    AppliedPolicy,
    LogSnapshot,
    OutsideScopeError,
    PrunedRun,
    ReviewerTokenRefusedError,
    RunDetail,
    ServerUnreachableError,
)
from crossgate.decisions import AnyDecision
from crossgate.errors import (
    ConfigurationError,
    ConflictError,
    CrossgateError,
    InvalidArgumentsError,
    NotFoundError,
)
from crossgate.model import ApprovalRequest, Event, JsonObject, ParkedRun, ParkedRunStatus, StandingRule
from crossgate.policy import Policy
from crossgate.remote._errors import error_class
from crossgate.stores import RequestQuery
from crossgate.stores.base import Checkpoint, Page, PolicyVersion

M = TypeVar("M", bound=BaseModel)
CHANNEL_HEADER = "X-Crossgate-Channel"
TIMEOUT_SECONDS = 30.0
EVENTS_PAGE = 1000
"""The most events the server answers at once."""
SNAPSHOT_TRIES = 3
"""How often ``audit_log`` reads the log again when the server appended to it while it was read."""
PLAIN_HTTP_ENV = "CROSSGATE_ALLOW_PLAIN_HTTP"
"""Set to 1 to send a reviewer token over plain http to a host that is not this machine."""

BY_STATUS: dict[int, type[CrossgateError]] = {404: NotFoundError, 409: ConflictError, 410: ConflictError}


def server_url(given: str) -> str:
    """``given`` as a base URL; ConfigurationError for anything but http(s), and for plain http off this host."""
    text = given.strip().rstrip("/")
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.hostname or not text.isprintable():
        raise ConfigurationError(f"not an http(s) URL of a review server: {given!r}")
    if parts.scheme == "http" and not _loopback(parts.hostname) and os.environ.get(PLAIN_HTTP_ENV) != "1":
        raise ConfigurationError(
            f"refusing to send a reviewer token in clear to {text}: use https (or set {PLAIN_HTTP_ENV}=1)"
        )
    return text


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class ServerBackend:
    """A review server reached with a reviewer token; it records the token's reviewer and signs for them."""

    def __init__(self, url: str, token: str, *, transport: httpx.BaseTransport | None = None) -> None:
        self.url = url
        headers = {"Authorization": f"Bearer {token}", "Accept": "application/json", CHANNEL_HEADER: "cli"}
        self._still_asks: dict[str, str | None] = {}
        self._http = httpx.Client(base_url=url, headers=headers, timeout=TIMEOUT_SECONDS, transport=transport)

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    def whoami(self) -> dict[str, Any]:
        """The reviewer this token names: ``{"name", "scope", "channel"}``."""
        found = self._call("GET", "/api/me")
        if not isinstance(found, dict) or not isinstance(found.get("name"), str):
            raise self._not_api()
        return found

    def get(self, request_id: str) -> ApprovalRequest:
        return self._request(self._call("GET", f"/api/requests/{_part(request_id)}"))

    def list_requests(self, query: RequestQuery) -> Page[ApprovalRequest]:
        params: dict[str, Any] = {
            "status": [s.value for s in query.statuses],
            "framework": query.framework,
            "tool": query.tool,
            "agent": query.agent,
            "run": query.run,
            "order": "newest" if query.newest_first else "oldest",
            "limit": query.limit,
            "cursor": query.cursor,
        }
        page = self._call("GET", "/api/requests", params=params)
        items = [self._request(item) for item in self._field(page, "items", list)]
        cursor = page.get("next_cursor")
        return Page(items=items, next_cursor=cursor if isinstance(cursor, str) else None)

    def approvers(self, request_id: str) -> list[str]:
        from crossgate._approvals import approvers_in

        return approvers_in(self._request_events(request_id))

    def outcome(self, request_id: str) -> Event | None:
        from crossgate.outcomes import outcome_in

        return outcome_in(self._request_events(request_id))

    def events(self, *, after: int, limit: int | None, request_id: str | None) -> list[Event]:
        found: list[Event] = []
        while limit is None or len(found) < limit:
            size = EVENTS_PAGE if limit is None else min(EVENTS_PAGE, limit - len(found))
            params = {"after": after, "limit": size, "request_id": request_id}
            batch = [self._model(Event, e) for e in self._list(self._call("GET", "/api/events", params=params))]
            found += batch
            if len(batch) < size:
                break
            after = batch[-1].seq
        return found

    def rules(self, *, include_revoked: bool) -> list[StandingRule]:
        answer = self._call("GET", "/api/rules", params={"include_revoked": include_revoked})
        return [self._model(StandingRule, r) for r in self._field(answer, "items", list)]

    def parked_runs(self, *, statuses: Sequence[ParkedRunStatus], framework: str | None) -> list[ParkedRun]:
        params = {"status": [s.value for s in statuses], "framework": framework}
        answer = self._call("GET", "/api/runs", params=params)
        return [self._parked(item) for item in self._field(answer, "items", list)]

    def run_detail(self, parked_id: str) -> RunDetail:
        answer = self._call("GET", f"/api/runs/{_part(parked_id)}")
        shown = self._field(answer, "parked_run", dict)
        unrecorded = self._field(answer, "applied_without_outcome", list)
        return RunDetail(
            parked=self._parked(shown),
            state_bytes=int(shown.get("state_bytes") or 0),
            requests=[self._request(r) for r in self._field(answer, "requests", list)],
            applied_without_outcome=[str(r) for r in unrecorded],
        )

    def cancel(self, request_id: str, *, reason: str) -> ApprovalRequest:
        path = f"/api/requests/{_part(request_id)}/cancel"
        return self._request(self._call("POST", path, body={"reason": reason}))

    def revoke_rule(self, rule_id: str) -> StandingRule:
        return self._model(StandingRule, self._call("DELETE", f"/api/rules/{_part(rule_id)}"))

    def retry_run(self, parked_id: str) -> ParkedRun:
        return self._parked(self._call("POST", f"/api/runs/{_part(parked_id)}/retry"))

    def decide(self, request_id: str, decision: AnyDecision) -> tuple[ApprovalRequest, list[StandingRule]]:
        body = decision.model_dump(mode="json", exclude_none=True)
        answer = self._call("POST", f"/api/requests/{_part(request_id)}/decision", body=body)
        decided = self._request(answer)
        asking = answer.get("still_asks")
        self._still_asks[decided.id] = asking if isinstance(asking, str) else None
        remembered: list[StandingRule] = []
        if decision.remember is not None:
            remembered = [r for r in self.rules(include_revoked=False) if r.source_request == decided.id]
        return decided, remembered

    def add_rule(self, fields: dict[str, Any], args: JsonObject | None) -> StandingRule:
        body = {k: getattr(v, "value", v) for k, v in fields.items() if v is not None}
        if args is not None:
            body["args"] = args
        return self._model(StandingRule, self._call("POST", "/api/rules", body=body))

    def still_asks(self, request: ApprovalRequest) -> str | None:
        return self._still_asks.get(request.id)  # what the server's policy said when it recorded the decision

    def expire_overdue(self) -> list[ApprovalRequest]:
        answer = self._call("POST", "/api/admin/requests/expire")
        return [self._request(r) for r in self._field(answer, "items", list)]

    def prune_runs(self, *, older_than: timedelta, include_failed: bool, dry_run: bool) -> list[PrunedRun]:
        body = {"older_than_seconds": int(older_than.total_seconds()), "include_failed": include_failed}
        answer = self._call("POST", "/api/admin/runs/prune", body={**body, "dry_run": dry_run})
        found = self._field(answer, "items", list)
        return [PrunedRun(self._parked(p), int(p.get("state_bytes") or 0)) for p in found]

    def policy_versions(self) -> list[PolicyVersion]:
        answer = self._call("GET", "/api/policy/versions")
        return [self._version(v) for v in self._field(answer, "items", list)]

    def policy_version(self, version: int | None) -> PolicyVersion | None:
        if version is None:
            versions = self.policy_versions()
            return versions[-1] if versions else None
        try:
            return self._version(self._call("GET", f"/api/policy/versions/{version}"))
        except NotFoundError:
            return None

    def apply_policy(self, policy: Policy, *, source: str | None) -> AppliedPolicy:
        body = {"policy": policy.model_dump(mode="json"), "source": source}
        answer = self._call("POST", "/api/admin/policy/versions", body=body)
        version = self._version(self._field(answer, "version", dict))
        return AppliedPolicy(version, answer.get("unchanged") is True, self._field(answer, "changes", dict))

    def audit_log(self) -> LogSnapshot:
        """The log read whole between two reads of its head; read again (a few times) if it moved meanwhile."""
        for _ in range(SNAPSHOT_TRIES):
            head = self._head()
            events = self.events(after=0, limit=None, request_id=None)
            answer = self._call("GET", "/api/audit/checkpoints")
            checkpoints = [self._checkpoint(c) for c in self._field(answer, "items", list)]
            versions = self.policy_versions()
            if self._head() == head:
                return LogSnapshot(events, head[0], head[1], checkpoints, versions, head[2])
        raise ConflictError(f"the audit log at {self.url} kept growing while it was read; run the check again")

    def _head(self) -> tuple[tuple[int, str] | None, str | None, list[tuple[int, int, str]] | None]:
        answer = self._call("GET", "/api/audit/head")
        if not isinstance(answer, dict):
            raise self._not_api()
        seq, head_hash, missing = answer.get("seq"), answer.get("hash"), answer.get("missing")
        if isinstance(seq, int) and isinstance(head_hash, str):
            listed = answer.get("heads")
            try:
                heads = [(int(p), int(s), str(h)) for p, s, h in listed] if isinstance(listed, list) else None
            except (TypeError, ValueError):
                raise self._not_api() from None
            return (seq, head_hash), None, heads
        if isinstance(missing, str):
            return None, missing, None
        raise self._not_api()

    def _version(self, data: Any) -> PolicyVersion:
        try:
            return PolicyVersion(
                version=int(data["version"]),
                document=str(data["document"]),
                token=str(data["token"]),
                digest=str(data["digest"]),
                created_by=str(data["created_by"]),
                created_at=datetime.fromisoformat(data["created_at"]),
                source=data.get("source") if isinstance(data.get("source"), str) else None,
            )
        except (KeyError, TypeError, ValueError):
            raise self._not_api() from None

    def _checkpoint(self, data: Any) -> Checkpoint:
        try:
            at = datetime.fromisoformat(data["at"])
            return Checkpoint(
                int(data["seq"]), str(data["head_hash"]), at, str(data["token"]), data["authored"] is True
            )
        except (KeyError, TypeError, ValueError):
            raise self._not_api() from None

    def _request_events(self, request_id: str) -> list[Event]:
        answer = self._call("GET", f"/api/requests/{_part(request_id)}/events")
        return [self._model(Event, e) for e in self._list(answer)]

    def _call(self, method: str, path: str, *, params: Mapping[str, Any] | None = None, body: Any = None) -> Any:
        query = {k: v for k, v in (params or {}).items() if v is not None and v != []}
        try:
            response = self._http.request(method, path, params=query, json=body)
        except httpx.HTTPError as exc:
            reason = str(exc) or type(exc).__name__
            raise ServerUnreachableError(f"cannot reach the review server at {self.url}: {reason}") from None
        try:
            answer = response.json() if response.content else None
        except ValueError:
            answer = None
            if response.is_success:
                raise self._not_api() from None
        if not response.is_success:
            raise self._error(response.status_code, answer)
        return answer

    def _error(self, status: int, body: Any) -> CrossgateError:
        body = body if isinstance(body, dict) else {}
        code = body.get("error") if isinstance(body.get("error"), str) else None
        message = body.get("message") if isinstance(body.get("message"), str) else None
        said = message or code or f"HTTP {status}"
        if status == 401:
            return ReviewerTokenRefusedError(
                f"the review server at {self.url} refused the reviewer token: {said} (log in again: "
                f"crossgate login {self.url})"
            )
        if status >= 500 or (code is None and status not in (404, 409, 410, 413, 422)):
            return ServerUnreachableError(f"the review server at {self.url} failed ({status}): {said}")
        if status == 403 and code != "self_decision":
            return OutsideScopeError(f"the review server refused it: {said}")
        found = error_class(code)
        if found is None:
            found = BY_STATUS.get(status, InvalidArgumentsError)
        return found(said)

    def _not_api(self) -> ServerUnreachableError:
        return ServerUnreachableError(f"the review server at {self.url} answered with something that is not its API")

    def _field(self, answer: Any, name: str, kind: type) -> Any:
        value = answer.get(name) if isinstance(answer, dict) else None
        if not isinstance(value, kind):
            raise self._not_api()
        return value

    def _list(self, answer: Any) -> list[Any]:
        if not isinstance(answer, list):
            raise self._not_api()
        return answer

    def _model(self, cls: type[M], data: Any) -> M:
        try:
            return cls.model_validate(data)
        except ValidationError:
            raise self._not_api() from None

    def _request(self, data: Any) -> ApprovalRequest:
        if not isinstance(data, dict):
            raise self._not_api()
        fields = {k: v for k, v in data.items() if k in ApprovalRequest.model_fields}
        return self._model(ApprovalRequest, fields)

    def _parked(self, data: Any) -> ParkedRun:
        if not isinstance(data, dict):
            raise self._not_api()
        fields = {k: v for k, v in data.items() if k in ParkedRun.model_fields}
        return self._model(ParkedRun, {**fields, "state": ""})


def _part(value: str) -> str:
    return quote(value, safe="")
