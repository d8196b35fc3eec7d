"""Who decides from the command line, and with what credentials: the server, or the authority's key.

``approve``, ``edit``, ``reject``, ``respond``, ``review`` and ``rules add`` let calls run, so each needs
a credential, never just a name:

- ``--server URL`` with a reviewer token (``$CROSSGATE_TOKEN``, or ``--token-file FILE``): the decision
  goes through the server's HTTP API, which records the reviewer the token names and signs for them;
- the authority's signing key (the keyring in ``--authority-dir``, ``$CROSSGATE_AUTHORITY_DIR`` or
  ``~/.config/crossgate/authority``): the decision is made on the local database and signed as an
  **operator** acting, under the name given (``--reviewer``, else the OS user).

Without either, the command refuses with one line that says how to decide (exit 6, denied). A queue handed to
the CLI ready-made (tests, embedding) decides with its own authority, if it has one.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, Protocol

import typer
from pydantic import ValidationError

from crossgate.authority.claims import ReviewerKind
from crossgate.authority.keyring import KEYRING_DIR_ENV, KEYRING_FILE, Keyring, default_directory
from crossgate.cli.context import CHANNEL, CliContext, reviewer_name
from crossgate.cli.options import validated
from crossgate.decisions import AnyDecision
from crossgate.errors import (
    ConfigurationError,
    ConflictError,
    CrossgateError,
    InvalidDecisionError,
    NotFoundError,
    SelfDecisionError,
)
from crossgate.fingerprint import fingerprint
from crossgate.model import ApprovalRequest, JsonObject, StandingRule, VerdictKind
from crossgate.queue import ReviewQueue

TOKEN_ENV = "CROSSGATE_TOKEN"
"""A reviewer's token for ``--server``."""
HOW_TO_DECIDE = (
    "{command} needs a reviewer's credentials: decide through the server (--server URL, with a reviewer token "
    f"in ${TOKEN_ENV} or --token-file FILE), or hold the authority's signing key (crossgate keys init; "
    f"--authority-dir DIR or ${KEYRING_DIR_ENV})"
)
TIMEOUT_SECONDS = 30.0

ServerOpt = Annotated[
    str | None,
    typer.Option("--server", metavar="URL", help="Decide through this review server, with a reviewer token."),
]
TokenFileOpt = Annotated[
    Path | None,
    typer.Option(
        "--token-file", metavar="FILE", dir_okay=False, help=f"The reviewer token for --server. [default: ${TOKEN_ENV}]"
    ),
]
AuthorityDirOpt = Annotated[
    Path | None,
    typer.Option(
        "--authority-dir",
        metavar="DIR",
        envvar=KEYRING_DIR_ENV,
        show_envvar=True,
        file_okay=False,
        help="The authority's key directory, to decide as an operator. [default: ~/.config/crossgate/authority]",
    ),
]


class NoCredentialsError(ConfigurationError):
    """A command that lets calls run was given neither a server with a reviewer token nor the signing key."""


class Decider(Protocol):
    """Makes decisions and standing rules for a command, under an authenticated identity."""

    def decide(self, request_id: str, decision: AnyDecision) -> tuple[ApprovalRequest, list[StandingRule]]:
        """Decide; the decided request and the standing rules it remembered."""

    def add_rule(self, fields: dict[str, Any], args: JsonObject | None) -> StandingRule:
        """Store a standing rule: ``ReviewQueue.new_rule`` fields (no ``created_by``: the decider's identity),
        and for ``match=exact`` the arguments it matches."""

    def still_asks(self, request: ApprovalRequest) -> str | None:
        """After a remembered allow: the rule the policy still asks by for calls like this, if it does."""


@dataclass
class LocalDecider:
    """Decides on the local queue, signed with its authority, as an operator named ``reviewer``."""

    queue: ReviewQueue
    reviewer: str

    def decide(self, request_id: str, decision: AnyDecision) -> tuple[ApprovalRequest, list[StandingRule]]:
        decided = self.queue.decide(
            request_id, decision, reviewer=self.reviewer, channel=CHANNEL, reviewer_kind=ReviewerKind.OPERATOR
        )
        return decided, [r for r in self.queue.rules() if r.source_request == decided.id]

    def add_rule(self, fields: dict[str, Any], args: JsonObject | None) -> StandingRule:
        exact = fingerprint(fields["tool"], args) if args is not None else None
        rule = validated(
            lambda: self.queue.new_rule(**fields, args_fingerprint=exact, created_by=self.reviewer), "standing rule"
        )
        return self.queue.add_rule(rule, actor=self.reviewer, channel=CHANNEL)

    def still_asks(self, request: ApprovalRequest) -> str | None:
        verdict = self.queue.evaluate(request.call)
        return (verdict.rule or "default") if verdict.kind is VerdictKind.ASK else None


@dataclass
class ServerDecider:
    """Decides over the review server's HTTP API with a reviewer token; the server records and signs."""

    url: str
    token: str

    def decide(self, request_id: str, decision: AnyDecision) -> tuple[ApprovalRequest, list[StandingRule]]:
        body = decision.model_dump(mode="json", exclude_none=True)
        path = f"/api/requests/{urllib.parse.quote(request_id, safe='')}/decision"
        decided = _request_of(self._call("POST", path, body))
        remembered: list[StandingRule] = []
        if decision.remember is not None:
            rules = self._call("GET", "/api/rules").get("items", [])
            remembered = [r for r in (_rule_of(item) for item in rules) if r.source_request == decided.id]
        return decided, remembered

    def add_rule(self, fields: dict[str, Any], args: JsonObject | None) -> StandingRule:
        body = {k: (v.value if isinstance(v, StrEnum) else v) for k, v in fields.items() if v is not None}
        if args is not None:
            body["args"] = args
        return _rule_of(self._call("POST", "/api/rules", body))

    def still_asks(self, request: ApprovalRequest) -> str | None:
        return None  # the server's policy: its page says so

    def _call(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        data = None if body is None else json.dumps(body).encode("utf-8")
        headers = {"Authorization": f"Bearer {self.token}", "Accept": "application/json"}
        if data is not None:
            headers["Content-Type"] = "application/json"
        request = urllib.request.Request(self.url + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT_SECONDS) as response:
                return json.loads(response.read() or b"null")
        except urllib.error.HTTPError as exc:
            raise _server_error(exc) from None
        except (urllib.error.URLError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise CrossgateError(f"cannot reach the review server at {self.url}: {reason}") from None
        except ValueError:
            raise CrossgateError(f"the review server at {self.url} answered with something that is not JSON") from None


def decider(
    ctx: typer.Context,
    command: str,
    *,
    server: str | None,
    token_file: Path | None,
    authority_dir: Path | None,
    reviewer: str | None,
) -> Decider:
    """How ``command`` decides: over ``server`` with a reviewer token, or locally with the signing key."""
    if server is not None:
        if reviewer is not None:
            raise typer.BadParameter(
                "the server records the reviewer its token names; leave --reviewer out with --server",
                param_hint="'--reviewer'",
            )
        return ServerDecider(_server_url(server), _token(token_file))
    if token_file is not None:
        raise typer.BadParameter("--token-file goes with --server URL", param_hint="'--token-file'")
    return local_decider(ctx, command, authority_dir=authority_dir, reviewer=reviewer)


def local_decider(
    ctx: typer.Context, command: str, *, authority_dir: Path | None, reviewer: str | None
) -> LocalDecider:
    """The local queue with the authority's key, deciding as an operator; NoCredentialsError without the key."""
    state = ctx.ensure_object(CliContext)
    queue = state.open_queue()
    how = HOW_TO_DECIDE.format(command=f"crossgate {command}")
    if queue.authority is None and state.owns_queue:
        directory = authority_dir if authority_dir is not None else default_directory()
        if (directory / KEYRING_FILE).exists():
            queue.authority = Keyring.open(directory).authority()
        elif authority_dir is not None:
            raise NoCredentialsError(f"{how}; {directory} holds no keyring")
    if queue.authority is None:
        raise NoCredentialsError(how)
    return LocalDecider(queue, reviewer_name(reviewer))


def _server_url(given: str) -> str:
    parts = urllib.parse.urlsplit(given.strip())
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise typer.BadParameter(f"not an http(s) URL: {given!r}", param_hint="'--server'")
    return given.strip().rstrip("/")


def _token(token_file: Path | None) -> str:
    if token_file is not None:
        try:
            token = token_file.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as exc:
            raise ConfigurationError(f"cannot read the token file {token_file}: {exc}") from None
        if not token:
            raise ConfigurationError(f"the token file {token_file} is empty")
        return token
    token = os.environ.get(TOKEN_ENV, "").strip()
    if not token:
        raise NoCredentialsError(f"--server needs a reviewer token: set ${TOKEN_ENV} or pass --token-file FILE")
    return token


def _server_error(exc: urllib.error.HTTPError) -> CrossgateError:
    try:
        body = json.loads(exc.read() or b"{}")
    except ValueError:
        body = {}
    message = body.get("message") if isinstance(body, dict) else None
    text = f"the review server refused it ({exc.code}): {message or exc.reason}"
    code = body.get("error") if isinstance(body, dict) else None
    if exc.code == 404:
        return NotFoundError(str(message or text))
    if exc.code in (409, 410):
        return ConflictError(str(message or text))
    if exc.code == 403 and code == "self_decision":
        return SelfDecisionError(str(message))
    if exc.code in (403, 422):
        return InvalidDecisionError(text)
    if exc.code == 401:
        return NoCredentialsError(f"the review server at {exc.url} does not accept this reviewer token: {message}")
    return CrossgateError(text)


def _request_of(data: Any) -> ApprovalRequest:
    try:
        fields = {k: v for k, v in dict(data).items() if k in ApprovalRequest.model_fields}
        return ApprovalRequest.model_validate(fields)
    except (TypeError, ValueError, ValidationError):
        raise CrossgateError("the review server answered with something that is not a request") from None


def _rule_of(data: Any) -> StandingRule:
    try:
        return StandingRule.model_validate(data)
    except ValidationError:
        raise CrossgateError("the review server answered with something that is not a standing rule") from None
