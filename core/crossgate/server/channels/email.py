"""The e-mail notifier: each new request is mailed to every reviewer who may decide it, with one-tap links.

Each message carries approve and reject links signed for its recipient (``crossgate.server.links``), so a
forwarded e-mail decides as the person it was sent to, within their scope; they open the confirm page
(``/links/…``), which shows the call and decides only on its button's POST, never on the GET a mail
client's link scanner makes. A link expires after ``link_ttl_seconds`` (or with its request, if sooner)
and works once: the request is no longer pending afterwards. Mail is sent with the standard library's
``smtplib`` from a follower of the event log; a mail server that cannot be reached leaves the event at
the cursor, retried, and recipients who got the message already are not sent it again.
"""

from __future__ import annotations

import html
import json
import smtplib
import ssl
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from email.message import EmailMessage

import anyio

from crossgate.display import suspicious_call, visible, visible_lines, warning_text
from crossgate.model import ApprovalRequest, DecisionKind, Event, EventKind
from crossgate.server.access import decide_blocked
from crossgate.server.channels.config import EmailSettings
from crossgate.server.channels.follower import ChannelUnavailable, LogFollower
from crossgate.server.settings import Reviewer
from crossgate.server.state import ServerState

LABELS = {DecisionKind.APPROVE: "Approve", DecisionKind.REJECT: "Reject…"}


class EmailNotifier:
    """Mails new requests to the reviewers (with an ``email``) who may decide them."""

    def __init__(self, state: ServerState, settings: EmailSettings) -> None:
        self._state = state
        self.settings = settings
        self._sent: dict[int, set[str]] = {}  # event seq -> recipients done, while that event is retried
        self.follower = LogFollower(
            state,
            f"email:{settings.host}:{settings.port}",
            frozenset({EventKind.SUBMITTED}),
            self.on_submitted,
            retry_seconds=settings.retry_seconds,
        )

    def stats(self) -> dict[str, dict[str, int]]:
        return {"email": self.follower.stats()}

    async def start(self) -> None:
        await self.follower.start()

    async def stop(self) -> None:
        await self.follower.stop()

    async def on_submitted(self, event: Event, request: ApprovalRequest) -> None:
        """Mail ``request`` to each reviewer who may decide it, while it is still open."""
        if not request.is_open:
            return
        recipients = [r for r in self._state.settings.reviewers if r.email and decide_blocked(r, request) is None]
        done = self._sent.setdefault(event.seq, set())
        messages = [self.message(request, r) for r in recipients if r.name not in done]
        await anyio.to_thread.run_sync(self._send, messages, done)
        self._sent.pop(event.seq, None)

    def message(self, request: ApprovalRequest, reviewer: Reviewer) -> tuple[str, EmailMessage]:
        """The e-mail to ``reviewer`` about ``request``, with links signed for them."""
        assert reviewer.email is not None
        call = request.call
        now = datetime.now(UTC)
        expires = now + timedelta(seconds=self._state.settings.link_ttl_seconds)
        if request.expires_at is not None:
            expires = min(expires, request.expires_at)
        links = self._state.sign_links(request, reviewer.name, expires)
        page = f"{self._state.settings.base_url.rstrip('/')}/requests/{request.id}"
        who = visible(call.framework + (f" · {call.agent}" if call.agent else ""))
        args = visible_lines(json.dumps(call.args, indent=2, ensure_ascii=False))
        warning = f"Warning: {warning_text(findings)}" if (findings := suspicious_call(call)) else ""
        mail = EmailMessage()
        mail["Subject"] = f"[crossgate] {who} asks to run {visible(call.tool)}"[:200]
        mail["From"] = self.settings.sender
        mail["To"] = reviewer.email
        mail["X-Crossgate-Request"] = request.id
        lines = [
            f"{who} asks to run {visible(call.tool)}.",
            f"Why a person must decide: {visible(request.reason)}",
            *([warning] if warning else []),
            "",
            args,
            "",
            *(f"{LABELS[kind]} {url}" for kind, url in links.items()),
            f"Open the request: {page}",
            "",
            f"The links are for {reviewer.name}, work once, and expire at {expires.isoformat(timespec='minutes')}.",
            "Each opens a page that shows the call again; nothing is decided until you press its button.",
        ]
        mail.set_content("\n".join(lines))
        mail.add_alternative(_html(request, who, args, warning, links, page, reviewer.name, expires), subtype="html")
        return reviewer.name, mail

    def _send(self, messages: Sequence[tuple[str, EmailMessage]], done: set[str]) -> None:
        if not messages:
            return
        settings = self.settings
        try:
            with smtplib.SMTP(settings.host, settings.port, timeout=settings.timeout_seconds) as smtp:
                if settings.starttls:
                    smtp.starttls(context=ssl.create_default_context())
                if settings.username is not None and settings.password is not None:
                    smtp.login(settings.username, settings.password)
                for name, mail in messages:
                    smtp.send_message(mail)
                    done.add(name)
        except smtplib.SMTPRecipientsRefused:
            raise  # a permanent refusal (smtplib's errors are OSErrors too): logged, and the cursor moves on
        except smtplib.SMTPResponseException as exc:
            if 400 <= exc.smtp_code < 500:  # a temporary refusal: try again later
                raise ChannelUnavailable(f"SMTP {settings.host}:{settings.port}: {exc.smtp_code}") from None
            raise
        except OSError as exc:  # refused, unreachable, timed out, disconnected
            raise ChannelUnavailable(f"SMTP {settings.host}:{settings.port}: {exc}") from None


def _html(
    request: ApprovalRequest,
    who: str,
    args: str,
    warning: str,
    links: dict[DecisionKind, str],
    page: str,
    reviewer: str,
    expires: datetime,
) -> str:
    e = html.escape
    buttons = " ".join(
        f'<a href="{e(url)}" style="display:inline-block;padding:12px 20px;margin:4px;border-radius:6px;'
        f'background:{"#1a7f37" if kind is DecisionKind.APPROVE else "#cf222e"};color:#fff;text-decoration:none">'
        f"{e(LABELS[kind])}</a>"
        for kind, url in links.items()
    )
    notice = f'<p style="color:#9a6700"><strong>⚠ {e(warning)}</strong></p>' if warning else ""
    return f"""<!doctype html><html><body style="font-family:sans-serif;max-width:600px">
<p><strong>{e(who)}</strong> asks to run <code>{e(visible(request.call.tool))}</code>.</p>
<p>Why a person must decide: {e(visible(request.reason))}</p>{notice}
<pre style="background:#f6f8fa;padding:8px;white-space:pre-wrap">{e(args)}</pre>
<p>{buttons}</p><p><a href="{e(page)}">Open the request</a></p>
<p style="color:#57606a;font-size:small">The links are for {e(reviewer)}, work once, and expire at
{e(expires.isoformat(timespec="minutes"))}. Each opens a page that shows the call again; nothing is decided
until you press its button.</p></body></html>"""
