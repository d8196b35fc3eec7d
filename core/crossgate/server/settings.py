"""Server settings: reviewers with their tokens and scopes, webhooks, and the link-signing secret.

Reviewers come from a TOML or YAML file (``--tokens``) or from ``$CROSSGATE_TOKENS``::

    # reviewers.toml
    secret_env = "CROSSGATE_SECRET"          # optional: where the link-signing secret lives
    metrics_token_env = "METRICS_TOKEN"      # optional: /metrics then needs this bearer token (else: loopback only)

    [[reviewers]]
    name = "alice"
    token_env = "ALICE_TOKEN"                # or: token = "..."
    frameworks = ["openai-agents", "langgraph"]
    tools = ["delete_*"]
    admin = false                            # optional: true lets them manage stored credentials (/api/admin)

    webhook_lease_seconds = 30               # optional tuning: also webhook_attempts, webhook_backoff_seconds,
                                             # webhook_timeout_seconds
    max_body_bytes = 1048576                 # optional: the largest request body (413 beyond)

    [limits]                                 # optional: the queue's input limits, in UTF-8 bytes
    args_bytes = 262144                      # a call's or an edit's arguments (also message_bytes, note_bytes)

    [[agents]]                               # credentials for agents over HTTP (AAP, docs/agents-over-http.md)
    name = "billing-bot"                     # scope "agent" (the default): one service's agent token
    token_env = "BILLING_BOT_TOKEN"

    [[agents]]
    name = "ops"
    scope = "provisioner"                    # may provision AAP instances, each with its own agent token
    token_env = "AAP_PROVISIONER_TOKEN"
    # aap_webhook_allow_private = true       # (top level) AAP receivers on loopback or private addresses

    [[webhooks]]
    url = "http://127.0.0.1:9000/hooks/crossgate"
    format = "slack"                         # or "json", or "teams" (an Adaptive Card for a Teams workflow)
    events = ["submitted", "decided", "expired", "cancelled"]   # the default; list fewer to filter, or add
                                             # approved, applied, ran, not_run ("executed" means ran and not_run)
    include_excerpt = false                  # true: JSON bodies carry the request's run excerpt

``$CROSSGATE_TOKENS`` holds ``name:token`` pairs separated by commas; those reviewers have full scope.
"""

from __future__ import annotations

import os
import secrets
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any, Literal
from urllib.parse import urlsplit

import yaml

from crossgate.credentials import hash_token as hash_token  # kept here for the callers that import it from settings
from crossgate.errors import ConfigurationError
from crossgate.limits import MIB, InputLimits
from crossgate.model import LEGACY_OUTCOME, ApprovalRequest, StandingRule
from crossgate.server.channels.config import EmailSettings, SlackSettings, email_settings, slack_settings

TOKENS_ENV = "CROSSGATE_TOKENS"
SECRET_ENV = "CROSSGATE_SECRET"
NOTIFIED_EVENTS = ("submitted", "decided", "expired", "cancelled")
"""Event kinds a webhook target gets by default: a request's opening and every way it closes, so a
channel that showed its decision buttons also learns when they stopped working."""
REQUEST_EVENTS = ("submitted", "approved", "decided", "applied", "ran", "not_run", "expired", "cancelled")
"""Every event kind of a request's life that a webhook target may ask for."""
LEGACY_EVENTS = {LEGACY_OUTCOME: ("ran", "not_run")}
"""Kinds a configuration written before the outcome split may still name, and what they stand for now."""
_GLOB_CHARS = frozenset("*?[")


@dataclass(frozen=True, slots=True, kw_only=True)
class Reviewer:
    """A person (or a bot) who may decide requests; empty scope tuples mean no restriction.

    Scope entries are globs: ``tools=("delete_*",)`` lets the reviewer decide every delete tool.
    """

    name: str
    token_sha256: str
    frameworks: tuple[str, ...] = ()
    tools: tuple[str, ...] = ()
    agents: tuple[str, ...] = ()
    admin: bool = False
    """May add, rotate and revoke stored credentials over the admin API (``/api/admin``)."""
    slack_user: str | None = None
    """The reviewer's Slack user id (``U…``): their clicks in the Slack app decide as this reviewer."""
    email: str | None = None
    """Where the e-mail notifier sends this reviewer's signed one-tap links."""

    @property
    def unrestricted(self) -> bool:
        """True when the reviewer may decide everything."""
        return not (self.frameworks or self.tools or self.agents)

    def may_decide(self, request: ApprovalRequest) -> bool:
        """True if ``request`` lies within this reviewer's scope."""
        call = request.call
        return (
            _within(self.frameworks, call.framework)
            and _within(self.tools, call.tool)
            and _within(self.agents, call.agent)
        )

    def scope_text(self) -> str:
        """The scope in words, for error messages."""
        if self.unrestricted:
            return "everything"
        parts = [
            f"{label} {', '.join(values)}"
            for label, values in (("frameworks", self.frameworks), ("tools", self.tools), ("agents", self.agents))
            if values
        ]
        return "; ".join(parts)

    def may_manage_rule(self, rule: StandingRule) -> bool:
        """True if the standing rule covers only calls this reviewer may decide.

        A restricted reviewer must name a concrete (glob-free) value for every dimension they are
        restricted in, so a rule can never reach beyond their scope.
        """
        return (
            _concrete_within(self.frameworks, rule.framework)
            and _concrete_within(self.tools, rule.tool)
            and _concrete_within(self.agents, rule.agent)
        )


def _within(scope: tuple[str, ...], value: str | None) -> bool:
    if not scope:
        return True
    return value is not None and any(fnmatchcase(value, pattern) for pattern in scope)


def _concrete_within(scope: tuple[str, ...], value: str | None) -> bool:
    if not scope:
        return True
    return value is not None and not (_GLOB_CHARS & set(value)) and _within(scope, value)


def reviewer(
    name: str,
    token: str,
    *,
    frameworks: Sequence[str] = (),
    tools: Sequence[str] = (),
    agents: Sequence[str] = (),
    admin: bool = False,
    slack_user: str | None = None,
    email: str | None = None,
) -> Reviewer:
    """Build a reviewer from a plain token."""
    if not name.strip():
        raise ConfigurationError("a reviewer needs a name")
    if len(token) < 8:
        raise ConfigurationError(f"the token of reviewer {name!r} is too short (8 characters at least)")
    return Reviewer(
        name=name,
        token_sha256=hash_token(token),
        frameworks=tuple(frameworks),
        tools=tuple(tools),
        agents=tuple(agents),
        admin=admin,
        slack_user=slack_user,
        email=email,
    )


AGENT_SCOPES = ("agent", "provisioner")
"""Scopes of the tokens file's ``[[agents]]`` entries."""


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentToken:
    """A credential that is not a reviewer's: an agent service (scope ``agent``) or an AAP provisioner.

    An agent token submits calls, waits, cancels and reads its own requests; it never decides, adds
    rules or reads other agents' requests. A provisioner token creates and deletes AAP instances.
    """

    name: str
    token_sha256: str
    scope: Literal["agent", "provisioner"] = "agent"


def agent_token(name: str, token: str, *, scope: Literal["agent", "provisioner"] = "agent") -> AgentToken:
    """Build an agent or provisioner credential from a plain token."""
    if not name.strip():
        raise ConfigurationError("an agent credential needs a name")
    if scope not in AGENT_SCOPES:
        raise ConfigurationError(f"agent {name!r}: scope must be agent or provisioner, got {scope!r}")
    if len(token) < 16:
        raise ConfigurationError(f"the token of agent {name!r} is too short (16 characters at least)")
    return AgentToken(name=name, token_sha256=hash_token(token), scope=scope)


@dataclass(frozen=True, slots=True, kw_only=True)
class WebhookTarget:
    """Where notifications go, in which body format, for which event kinds."""

    url: str
    format: Literal["json", "slack", "teams"] = "json"
    events: tuple[str, ...] = NOTIFIED_EVENTS
    secret: str | None = None
    """When set, JSON deliveries carry ``X-Crossgate-Signature: sha256=<HMAC of the body>``."""
    include_excerpt: bool = False
    """Put the request's run excerpt (what the run did before it asked, when its gate had the app's consent)
    in JSON bodies; off by default, as it may hold user data. Slack bodies never carry it."""
    escalate_after: float | None = None
    """An escalation target: each new request is sent only once it has waited this many seconds, and only
    if nobody decided it by then (``events`` is then ``("submitted",)``; the body says ``request.escalated``)."""

    def __post_init__(self) -> None:
        label = f"webhook {urlsplit(self.url).netloc or self.url!r}"
        if self.escalate_after is not None and self.events == NOTIFIED_EVENTS:
            object.__setattr__(self, "events", ("submitted",))  # what escalation is about, unless given otherwise
        if any(e in LEGACY_EVENTS for e in self.events):
            current = (k for e in self.events for k in LEGACY_EVENTS.get(e, (e,)))
            object.__setattr__(self, "events", tuple(dict.fromkeys(current)))
        # A misspelt kind would otherwise send nothing, silently.
        unknown = [e for e in self.events if e not in REQUEST_EVENTS]
        if unknown or not self.events:
            raise ConfigurationError(
                f"{label}: events must be some of "
                f"{', '.join(REQUEST_EVENTS)}; got {', '.join(map(repr, self.events)) or 'none'}"
            )
        if self.escalate_after is not None:
            number = isinstance(self.escalate_after, int | float) and not isinstance(self.escalate_after, bool)
            if not number or not self.escalate_after > 0:
                raise ConfigurationError(f"{label}: escalate_after must be a positive number of seconds")
            if self.events != ("submitted",):
                raise ConfigurationError(f"{label}: an escalation target takes events [submitted] only")


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerSettings:
    """Everything ``create_app`` needs besides the queue."""

    reviewers: tuple[Reviewer, ...] = ()
    secret: bytes = field(default_factory=lambda: secrets.token_bytes(32))
    """Key for signed decision links; a random one per process unless configured."""
    base_url: str = "http://127.0.0.1:8700"
    """How links reach this server: every link the server makes (API, webhooks, Slack) starts with it, never
    with the ``Host`` a client sent. ``crossgate serve`` sets it from ``--base-url``, else the bound address."""
    webhooks: tuple[WebhookTarget, ...] = ()
    link_reviewer: str | None = None
    """Reviewer on whose behalf notification links are signed; None puts no decision links in notifications."""
    link_ttl_seconds: float = 3600.0
    webhook_attempts: int = 5
    webhook_backoff_seconds: float = 0.5
    webhook_timeout_seconds: float = 5.0
    webhook_lease_seconds: float = 30.0
    """How long a server holds a webhook target's delivery lease without renewing it (it renews every
    third of it). When the holder dies, another server takes the target over within about 1⅓ times this."""
    sweep_seconds: float = 1.0
    """How often the server expires overdue requests and looks for other processes' changes."""
    stream_ping_seconds: float = 15.0
    max_body_bytes: int = MIB
    """The largest request body the server reads; a larger one is refused with 413, whether it declares its
    length or comes in chunks. Arguments, messages and notes have their own limits, the queue's."""
    title: str = "crossgate"
    agents: tuple[AgentToken, ...] = ()
    """Agent and provisioner credentials (the tokens file's ``[[agents]]``)."""
    aap_approval_ttl_seconds: float = 300.0
    """How long an AAP approval may wait before its call starts (``decision.expires_at``), unless the policy
    rule's ``apply_within_seconds`` is shorter."""
    aap_webhook_allow_private: bool = False
    """Let AAP receivers be plain-HTTP loopback or private addresses: for tests and closed networks only."""
    aap_registry_path: str | None = None
    """Where the AAP provider journals its instances, credentials and idempotency keys (the tokens file's
    ``aap_registry``); None keeps them in the server process only."""
    metrics_token_sha256: str | None = None
    """The sha256 of the bearer token ``/metrics`` requires (see :func:`hash_token`); None: loopback clients only."""
    slack: SlackSettings | None = None
    """The Slack app channel (``[slack]``): interactive messages, decided in Slack."""
    email: EmailSettings | None = None
    """The e-mail notifier (``[email]``): signed one-tap links to each reviewer with an ``email``."""
    state_head_every_seconds: float = 5.0
    """How often the server signs a fresh state head (with the authority's key): see docs/security.md."""
    state_head_lifetime_seconds: float = 300.0
    """How long each state head is valid: a gate that sees nothing newer for that long refuses every call."""
    state_head_file: str | None = None
    """Where the server keeps the newest state head it signed, its own memory of revoked credentials, consumed
    approvals and policy versions across restarts (never the store's); None: ``<kid>.signer.json`` in
    ``$CROSSGATE_HEAD_DIR``, else ``$XDG_STATE_HOME/crossgate/heads``."""

    def __post_init__(self) -> None:
        names = [r.name for r in self.reviewers]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ConfigurationError(f"reviewer names must be unique; repeated: {', '.join(duplicates)}")
        if len({r.token_sha256 for r in self.reviewers}) != len(self.reviewers):
            raise ConfigurationError("two reviewers share a token; give each reviewer their own")
        urls = [w.url for w in self.webhooks]
        if len(set(urls)) != len(urls):
            raise ConfigurationError("each webhook URL may appear once; list its events together")
        digests = [r.token_sha256 for r in self.reviewers] + [a.token_sha256 for a in self.agents]
        if len(set(digests)) != len(digests):
            raise ConfigurationError("a token is listed twice; give each reviewer and agent their own")
        agent_names = [a.name for a in self.agents]
        if len(set(agent_names)) != len(agent_names):
            raise ConfigurationError("agent names must be unique")
        if self.link_reviewer is not None and self.link_reviewer not in names:
            raise ConfigurationError(f"link_reviewer {self.link_reviewer!r} is not a configured reviewer")
        if self.webhook_lease_seconds <= 0:
            raise ConfigurationError(f"webhook_lease_seconds must be positive, got {self.webhook_lease_seconds}")
        parts = urlsplit(self.base_url)
        if parts.scheme not in ("http", "https") or not parts.netloc or parts.query or parts.fragment:
            raise ConfigurationError(
                f"base_url must be an http or https address such as https://review.example.com, got {self.base_url!r}"
            )
        every, lifetime = self.state_head_every_seconds, self.state_head_lifetime_seconds
        if not 0 < every < lifetime <= 86400:
            raise ConfigurationError(
                "state_head_every_seconds must be positive and shorter than state_head_lifetime_seconds "
                f"(at most a day), got {every} and {lifetime}"
            )
        if len(self.secret) < 16:
            raise ConfigurationError("the link-signing secret needs 16 bytes at least")
        slack_users = [r.slack_user for r in self.reviewers if r.slack_user]
        if len(set(slack_users)) != len(slack_users):
            raise ConfigurationError("a Slack user id is given to two reviewers; each Slack user is one reviewer")
        if isinstance(self.max_body_bytes, bool) or not isinstance(self.max_body_bytes, int) or self.max_body_bytes < 1:
            raise ConfigurationError(f"max_body_bytes must be a positive whole number, got {self.max_body_bytes!r}")

    def find_reviewer(self, name: str) -> Reviewer | None:
        """The reviewer with this name, if configured."""
        return next((r for r in self.reviewers if r.name == name), None)

    def slack_reviewer(self, slack_user: str) -> Reviewer | None:
        """The reviewer whose ``slack_user`` is this Slack user id, if any."""
        return next((r for r in self.reviewers if r.slack_user and r.slack_user == slack_user), None)


WEBHOOK_TUNING: dict[str, type[int] | type[float]] = {
    "webhook_attempts": int,
    "webhook_backoff_seconds": float,
    "webhook_timeout_seconds": float,
    "webhook_lease_seconds": float,
    "max_body_bytes": int,
    "link_ttl_seconds": float,
    "state_head_every_seconds": float,
    "state_head_lifetime_seconds": float,
}
"""Top-level keys of the file that tune the server (see :class:`ServerSettings`)."""
LIMIT_KEYS = ("args_bytes", "message_bytes", "note_bytes")
"""Keys of the file's ``[limits]`` table: the queue's :class:`~crossgate.limits.InputLimits`."""


def _positive(value: Any, kind: type[int] | type[float], what: str) -> int | float:
    if isinstance(value, bool) or not isinstance(value, int | float) or (kind is int and not isinstance(value, int)):
        raise ConfigurationError(f"{what} must be a {'whole ' if kind is int else ''}number, got {value!r}")
    if value <= 0:
        raise ConfigurationError(f"{what} must be positive, got {value!r}")
    return kind(value)


def load_config(path: Path, env: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Read a reviewers/webhooks file (TOML or YAML) into keyword arguments for :class:`ServerSettings`.

    A ``limits`` table comes back under the key ``limits``, as :class:`~crossgate.limits.InputLimits`: they
    are the queue's, so the caller builds the queue with them and passes the rest to ``ServerSettings``.
    """
    env = os.environ if env is None else env
    try:
        text = path.read_text(encoding="utf-8")
        data = tomllib.loads(text) if path.suffix == ".toml" else yaml.safe_load(text)
    except (OSError, tomllib.TOMLDecodeError, yaml.YAMLError) as exc:
        raise ConfigurationError(f"cannot read {path}: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigurationError(f"{path} must hold a mapping with 'reviewers' (and optionally 'webhooks')")
    unknown = set(data) - {
        "reviewers",
        "agents",
        "aap_registry",
        "aap_webhook_allow_private",
        "webhooks",
        "secret_env",
        "base_url",
        "link_reviewer",
        "limits",
        "metrics_token_env",
        "slack",
        "email",
        *WEBHOOK_TUNING,
    }
    if unknown:
        raise ConfigurationError(f"{path}: unknown keys {', '.join(sorted(unknown))}")
    kwargs: dict[str, Any] = {
        "reviewers": tuple(_reviewer_entry(entry, env, path) for entry in data.get("reviewers") or ()),
        "webhooks": tuple(_webhook_entry(entry, path) for entry in data.get("webhooks") or ()),
    }
    if "aap_registry" in data:
        kwargs["aap_registry_path"] = str(path.parent / str(data["aap_registry"]))
    if "aap_webhook_allow_private" in data:
        if not isinstance(data["aap_webhook_allow_private"], bool):
            raise ConfigurationError(f"{path}: aap_webhook_allow_private must be true or false")
        kwargs["aap_webhook_allow_private"] = data["aap_webhook_allow_private"]
    if data.get("agents"):
        kwargs["agents"] = tuple(_agent_entry(entry, env, path) for entry in data["agents"])
    if "base_url" in data:
        kwargs["base_url"] = str(data["base_url"])
    if "link_reviewer" in data:
        kwargs["link_reviewer"] = str(data["link_reviewer"])
    for key, kind in WEBHOOK_TUNING.items():
        if key in data:
            kwargs[key] = _positive(data[key], kind, f"{path}: {key}")
    if "limits" in data:
        kwargs["limits"] = _limits(data["limits"], path)
    if "metrics_token_env" in data:
        kwargs["metrics_token_sha256"] = metrics_token(env, str(data["metrics_token_env"]), f"{path}: ")
    if "slack" in data:
        kwargs["slack"] = slack_settings(data["slack"], env, path)
    if "email" in data:
        kwargs["email"] = email_settings(data["email"], env, path)
    secret_env = data.get("secret_env")
    if secret_env:
        secret = env.get(str(secret_env))
        if not secret:
            raise ConfigurationError(f"{path}: secret_env names ${secret_env}, which is not set")
        kwargs["secret"] = secret.encode("utf-8")
    return kwargs


def _limits(table: Any, path: Path) -> InputLimits:
    if not isinstance(table, dict) or set(table) - set(LIMIT_KEYS):
        raise ConfigurationError(f"{path}: limits takes {', '.join(LIMIT_KEYS)}")
    return InputLimits(**{key: int(_positive(value, int, f"{path}: limits.{key}")) for key, value in table.items()})


def reviewers_from_env(env: Mapping[str, str] | None = None) -> tuple[Reviewer, ...]:
    """Reviewers from ``$CROSSGATE_TOKENS`` (``name:token,name:token``), each with full scope."""
    env = os.environ if env is None else env
    raw = env.get(TOKENS_ENV, "").strip()
    found: list[Reviewer] = []
    for pair in filter(None, (p.strip() for p in raw.split(","))):
        name, sep, token = pair.partition(":")
        if not sep:
            raise ConfigurationError(f"${TOKENS_ENV} entries look like name:token; got {name!r}")
        found.append(reviewer(name.strip(), token.strip()))
    return tuple(found)


def metrics_token(env: Mapping[str, str], name: str, where: str = "") -> str:
    """The digest of the metrics token in ``$name``; ConfigurationError when it is unset or short."""
    token = env.get(name, "")
    if not token:
        raise ConfigurationError(f"{where}the metrics token is read from ${name}, which is not set")
    if len(token) < 16:
        raise ConfigurationError(f"{where}the metrics token in ${name} is too short (16 characters at least)")
    return hash_token(token)


def secret_from_env(env: Mapping[str, str] | None = None) -> bytes | None:
    """The link-signing secret from ``$CROSSGATE_SECRET``, if set."""
    env = os.environ if env is None else env
    value = env.get(SECRET_ENV)
    return value.encode("utf-8") if value else None


def _reviewer_entry(entry: Any, env: Mapping[str, str], path: Path) -> Reviewer:
    if not isinstance(entry, dict) or "name" not in entry:
        raise ConfigurationError(f"{path}: each reviewer needs a name")
    name = str(entry["name"])
    unknown = set(entry) - {"name", "token", "token_env", "frameworks", "tools", "agents", "admin"}
    unknown = set(entry) - {"name", "token", "token_env", "frameworks", "tools", "agents", "slack_user", "email"}
    if unknown:
        raise ConfigurationError(f"{path}: reviewer {name!r} has unknown keys {', '.join(sorted(unknown))}")
    token = entry.get("token")
    if token is None and "token_env" in entry:
        token = env.get(str(entry["token_env"]))
        if not token:
            raise ConfigurationError(f"{path}: reviewer {name!r} reads ${entry['token_env']}, which is not set")
    if not token:
        raise ConfigurationError(f"{path}: reviewer {name!r} needs token or token_env")
    return reviewer(
        name,
        str(token),
        frameworks=_strings(entry.get("frameworks"), name, path),
        tools=_strings(entry.get("tools"), name, path),
        agents=_strings(entry.get("agents"), name, path),
        admin=_flag(entry.get("admin", False), f"{path}: reviewer {name!r}: admin"),
        slack_user=_optional_text(entry.get("slack_user"), f"reviewer {name!r}: slack_user", path),
        email=_optional_text(entry.get("email"), f"reviewer {name!r}: email", path),
    )


def _optional_text(value: Any, what: str, path: Path) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise ConfigurationError(f"{path}: {what} must be a non-empty string")
    return value.strip()


def _agent_entry(entry: Any, env: Mapping[str, str], path: Path) -> AgentToken:
    if not isinstance(entry, dict) or "name" not in entry:
        raise ConfigurationError(f"{path}: each agent needs a name")
    name = str(entry["name"])
    unknown = set(entry) - {"name", "token", "token_env", "scope"}
    if unknown:
        raise ConfigurationError(f"{path}: agent {name!r} has unknown keys {', '.join(sorted(unknown))}")
    token = _token(entry, env, path, f"agent {name!r}")
    scope = entry.get("scope", "agent")
    if scope not in AGENT_SCOPES:
        raise ConfigurationError(f"{path}: agent {name!r}: scope must be agent or provisioner, got {scope!r}")
    try:
        return agent_token(name, token, scope=scope)
    except ConfigurationError as exc:
        raise ConfigurationError(f"{path}: {exc}") from None


def _token(entry: dict[str, Any], env: Mapping[str, str], path: Path, who: str) -> str:
    token = entry.get("token")
    if token is None and "token_env" in entry:
        token = env.get(str(entry["token_env"]))
        if not token:
            raise ConfigurationError(f"{path}: {who} reads ${entry['token_env']}, which is not set")
    if not token:
        raise ConfigurationError(f"{path}: {who} needs token or token_env")
    return str(token)


def _webhook_entry(entry: Any, path: Path) -> WebhookTarget:
    if not isinstance(entry, dict) or not entry.get("url"):
        raise ConfigurationError(f"{path}: each webhook needs a url")
    fmt = entry.get("format", "json")
    if fmt not in ("json", "slack", "teams"):
        raise ConfigurationError(f"{path}: webhook format must be json, slack or teams, got {fmt!r}")
    escalate_after = entry.get("escalate_after")
    if escalate_after is not None and (isinstance(escalate_after, bool) or not isinstance(escalate_after, int | float)):
        raise ConfigurationError(f"{path}: webhook escalate_after must be a number of seconds, got {escalate_after!r}")
    events = entry.get("events", NOTIFIED_EVENTS)
    if isinstance(events, str) or not isinstance(events, list | tuple):
        raise ConfigurationError(f"{path}: webhook events must be a list, got {events!r}")
    include_excerpt = entry.get("include_excerpt", False)
    if not isinstance(include_excerpt, bool):
        raise ConfigurationError(f"{path}: webhook include_excerpt must be true or false")
    try:
        return WebhookTarget(
            url=str(entry["url"]),
            format=fmt,
            events=tuple(str(e) for e in events),
            secret=entry.get("secret"),
            escalate_after=None if escalate_after is None else float(escalate_after),
            include_excerpt=include_excerpt,
        )
    except ConfigurationError as exc:
        raise ConfigurationError(f"{path}: {exc}") from None


def _flag(value: Any, what: str) -> bool:
    if not isinstance(value, bool):
        raise ConfigurationError(f"{what} must be true or false, got {value!r}")
    return value


def _strings(value: Any, name: str, path: Path) -> tuple[str, ...]:
    if value is None:
        return ()
    if isinstance(value, str):
        return (value,)
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigurationError(f"{path}: scopes of reviewer {name!r} must be lists of strings")
    return tuple(value)
