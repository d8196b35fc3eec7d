"""Settings of the Slack app and the e-mail notifier, read from the ``--tokens`` file, the environment or files.

Secrets (the Slack bot token and signing secret, an SMTP password) are read from an environment variable
(``*_env``) or a file (``*_file``), never from the command line, where ``ps`` would show them::

    [slack]
    channel = "C0123456789"                     # where request messages go
    bot_token_env = "SLACK_BOT_TOKEN"           # or bot_token_file = "/run/secrets/slack-bot-token"
    signing_secret_env = "SLACK_SIGNING_SECRET" # or signing_secret_file = "..."
    escalate_after = 900                        # optional: a reply in the message's thread if still waiting

    [email]
    host = "smtp.example.com"
    port = 587
    sender = "crossgate@example.com"
    starttls = true
    username = "crossgate"
    password_env = "SMTP_PASSWORD"              # or password_file
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from crossgate.errors import ConfigurationError

SLACK_BOT_TOKEN_ENV = "CROSSGATE_SLACK_BOT_TOKEN"
SLACK_SIGNING_SECRET_ENV = "CROSSGATE_SLACK_SIGNING_SECRET"


@dataclass(frozen=True, slots=True, kw_only=True)
class SlackSettings:
    """The Slack app: its bot token posts and updates messages, its signing secret checks every click."""

    channel: str
    bot_token: str = field(repr=False)
    signing_secret: str = field(repr=False)
    api_url: str | None = None
    """The Web API's address; None for Slack's own. Tests point it at a local fake."""
    escalate_after: float | None = None
    """Seconds after which a request still waiting gets a reply in its message's thread; None: never."""
    retry_seconds: float = 2.0
    """First pause before posting again while Slack is unreachable (doubling, up to a minute)."""

    def __post_init__(self) -> None:
        if not self.channel.strip():
            raise ConfigurationError("slack: channel must name a channel id such as C0123456789")
        if not self.bot_token.startswith("xoxb-"):
            raise ConfigurationError("slack: the bot token must be a bot token (xoxb-…)")
        if len(self.signing_secret) < 16:
            raise ConfigurationError(
                "slack: the signing secret is too short (copy it from the app's Basic Information)"
            )
        if self.escalate_after is not None and not self.escalate_after > 0:
            raise ConfigurationError("slack: escalate_after must be a positive number of seconds")


@dataclass(frozen=True, slots=True, kw_only=True)
class EmailSettings:
    """An SMTP server that relays the e-mail notifier's messages."""

    host: str
    sender: str
    port: int = 25
    starttls: bool = False
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    timeout_seconds: float = 10.0
    retry_seconds: float = 2.0

    def __post_init__(self) -> None:
        if not self.host.strip() or "@" not in self.sender:
            raise ConfigurationError("email: host and sender (an address) are required")
        if (self.username is None) != (self.password is None):
            raise ConfigurationError("email: give username and password together, or neither")


def secret_value(table: Mapping[str, Any], key: str, env: Mapping[str, str], where: str) -> str | None:
    """The secret ``key`` of a table: from ``<key>_env`` (a variable) or ``<key>_file`` (a file's first line)."""
    if key in table:
        raise ConfigurationError(f"{where}: write {key}_env or {key}_file, not the {key} itself")
    if f"{key}_env" in table:
        name = str(table[f"{key}_env"])
        value = env.get(name)
        if not value:
            raise ConfigurationError(f"{where}: {key}_env names ${name}, which is not set")
        return value.strip()
    if f"{key}_file" in table:
        return read_secret_file(Path(str(table[f"{key}_file"])), where)
    return None


def read_secret_file(path: Path, where: str) -> str:
    """A secret kept in a file (its text, stripped); ConfigurationError if it cannot be read or is empty."""
    try:
        value = path.read_text(encoding="utf-8").strip()
    except OSError as exc:
        raise ConfigurationError(f"{where}: cannot read {path}: {exc.strerror or exc}") from None
    if not value:
        raise ConfigurationError(f"{where}: {path} is empty")
    return value


def slack_settings(table: Any, env: Mapping[str, str] | None, path: Path) -> SlackSettings:
    """The ``[slack]`` table; the token and secret fall back to ``$CROSSGATE_SLACK_BOT_TOKEN`` and
    ``$CROSSGATE_SLACK_SIGNING_SECRET``."""
    env = os.environ if env is None else env
    where = f"{path}: slack"
    allowed = {"channel", "api_url", "escalate_after", "retry_seconds"}
    allowed |= {f"{k}{s}" for k in ("bot_token", "signing_secret") for s in ("", "_env", "_file")}
    if not isinstance(table, dict) or set(table) - allowed or "channel" not in table:
        raise ConfigurationError(
            f"{where} takes channel, bot_token_env or _file, signing_secret_env or _file, "
            "api_url, escalate_after, retry_seconds"
        )
    token = secret_value(table, "bot_token", env, where) or env.get(SLACK_BOT_TOKEN_ENV)
    secret = secret_value(table, "signing_secret", env, where) or env.get(SLACK_SIGNING_SECRET_ENV)
    if not token or not secret:
        raise ConfigurationError(
            f"{where}: needs a bot token and a signing secret (from *_env, *_file, "
            f"${SLACK_BOT_TOKEN_ENV} and ${SLACK_SIGNING_SECRET_ENV})"
        )
    try:
        return SlackSettings(
            channel=str(table["channel"]),
            bot_token=token,
            signing_secret=secret,
            api_url=str(table["api_url"]) if "api_url" in table else None,
            escalate_after=_seconds(table.get("escalate_after"), where),
            retry_seconds=_seconds(table.get("retry_seconds"), where) or 2.0,
        )
    except ConfigurationError as exc:
        raise ConfigurationError(f"{path}: {exc}") from None


def email_settings(table: Any, env: Mapping[str, str] | None, path: Path) -> EmailSettings:
    """The ``[email]`` table."""
    env = os.environ if env is None else env
    where = f"{path}: email"
    allowed = {"host", "port", "sender", "starttls", "username", "password_env", "password_file", "password"}
    allowed |= {"timeout_seconds", "retry_seconds"}
    if not isinstance(table, dict) or set(table) - allowed:
        raise ConfigurationError(f"{where} takes {', '.join(sorted(allowed - {'password'}))}")
    port = table.get("port", 25)
    if isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536:
        raise ConfigurationError(f"{where}: port must be a TCP port, got {port!r}")
    try:
        return EmailSettings(
            host=str(table.get("host", "")),
            sender=str(table.get("sender", "")),
            port=port,
            starttls=bool(table.get("starttls", False)),
            username=str(table["username"]) if "username" in table else None,
            password=secret_value(table, "password", env, where),
            timeout_seconds=_seconds(table.get("timeout_seconds"), where) or 10.0,
            retry_seconds=_seconds(table.get("retry_seconds"), where) or 2.0,
        )
    except ConfigurationError as exc:
        raise ConfigurationError(f"{path}: {exc}") from None


def _seconds(value: Any, where: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise ConfigurationError(f"{where}: seconds must be a positive number, got {value!r}")
    return float(value)
