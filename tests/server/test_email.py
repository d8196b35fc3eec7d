"""The e-mail notifier end to end: a real SMTP server on loopback, signed one-tap links, the confirm page.

Each in-scope reviewer gets their own links; GET shows the call and decides nothing; POST decides once;
a tampered, expired or used link is refused and changes nothing.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest

from crossgate import MemoryStore, ReviewQueue
from crossgate.model import RequestStatus
from crossgate.server.app import create_app
from crossgate.server.channels.config import EmailSettings
from crossgate.server.settings import reviewer
from tests.server.conftest import POLICY, TOKENS, make_settings, submit
from tests.server.smtp_fake import free_port, link, smtp_server, text_of
from tests.server.test_webhooks import until

BASE = "http://testserver"
FORM = {"content-type": "application/x-www-form-urlencoded"}


def reviewers() -> tuple[Any, ...]:
    return (
        reviewer("alice", TOKENS["alice"], email="alice@example.com"),
        reviewer("bob", TOKENS["bob"], frameworks=["langgraph"], email="bob@example.com"),
        reviewer("lena", TOKENS["lena"], tools=["delete_ticket"], agents=["support"], email="lena@example.com"),
        reviewer("pat", "pat-token-000004", email="pat@example.com"),
        reviewer("quinn", "quinn-token-00005"),
    )


@asynccontextmanager
async def mail_server(queue: ReviewQueue, port: int, **settings: Any) -> AsyncIterator[httpx.AsyncClient]:
    smtp = EmailSettings(host="127.0.0.1", port=port, sender="crossgate@example.com", retry_seconds=0.05)
    fields = {"reviewers": reviewers(), "email": smtp, "base_url": BASE, **settings}
    app = create_app(queue, make_settings(**fields))
    transport = httpx.ASGITransport(app=app)
    async with app.router.lifespan_context(app), httpx.AsyncClient(transport=transport, base_url=BASE) as http:
        yield http


@pytest.fixture
def queue() -> ReviewQueue:
    q = ReviewQueue(MemoryStore(), POLICY)
    yield q
    q.close()


async def test_each_reviewer_in_scope_gets_their_own_links_and_get_decides_nothing(queue: ReviewQueue) -> None:
    with smtp_server() as (inbox, port):
        async with mail_server(queue, port) as http:
            request = submit(queue, requested_by="pat", args={"id": "t1\u202e"})
            await until(lambda: len(inbox.messages) == 2)
            assert [rcpts for rcpts, _ in inbox.messages] == [["alice@example.com"], ["lena@example.com"]]
            mail = inbox.to("alice@example.com")[0]
            assert mail["Subject"] == "[crossgate] openai-agents · support asks to run delete_ticket"
            body = text_of(mail)
            assert "Why a person must decide: Deleting a ticket cannot be undone." in body
            assert '"id": "t1\\u202e"' in body and "\u202e" not in body
            assert "Warning: hidden or look-alike characters" in body
            approve = link(mail, "Approve")
            assert approve.startswith(f"{BASE}/links/")
            assert link(inbox.to("lena@example.com")[0], "Approve") != approve, "links are signed per recipient"

            preview = await http.get(approve)  # what a mail scanner or a link preview does
            assert preview.status_code == 200
            assert "Signed for alice" in preview.text
            assert queue.get(request.id).status is RequestStatus.PENDING
            done = await http.post(approve)
            assert done.status_code == 200
            decision = queue.get(request.id).decision
            assert decision is not None
            assert (decision.kind, decision.reviewer, decision.channel) == ("approve", "alice", "link")
            again = await http.post(approve)
            assert again.status_code == 409
            rival = await http.post(
                link(inbox.to("lena@example.com")[0], "Reject…"), content=b"message=no", headers=FORM
            )
            assert rival.status_code == 409
            assert [e.kind for e in queue.events(request_id=request.id)].count("decided") == 1


async def test_a_tampered_link_is_refused_and_decides_nothing(queue: ReviewQueue) -> None:
    with smtp_server() as (inbox, port):
        async with mail_server(queue, port) as http:
            request = submit(queue)
            await until(lambda: len(inbox.to("lena@example.com")) == 1)
            approve = link(inbox.to("lena@example.com")[0], "Approve")
            claims, _, signature = approve.rpartition("/")[2].partition(".")
            flipped = ("A" if signature[0] != "A" else "B") + signature[1:]
            for tampered in (f"{BASE}/links/{claims}.{flipped}", f"{BASE}/links/{claims}", approve + "x"):
                assert (await http.get(tampered)).status_code == 403
                assert (await http.post(tampered)).status_code == 403
            assert queue.get(request.id).status is RequestStatus.PENDING


@pytest.mark.slow
async def test_an_expired_link_is_refused(queue: ReviewQueue) -> None:
    with smtp_server() as (inbox, port):
        async with mail_server(queue, port, link_ttl_seconds=1.0) as http:
            request = submit(queue)
            await until(lambda: len(inbox.to("alice@example.com")) == 1)
            approve = link(inbox.to("alice@example.com")[0], "Approve")
            await asyncio.sleep(1.1)
            for method in ("GET", "POST"):
                expired = await http.request(method, approve)
                assert expired.status_code == 410
                assert "expired" in expired.text
            assert queue.get(request.id).status is RequestStatus.PENDING


@pytest.mark.slow
async def test_mail_server_down_then_up_sends_each_message_once(queue: ReviewQueue) -> None:
    port = free_port()
    async with mail_server(queue, port) as http:
        request = submit(queue)
        await asyncio.sleep(0.5)  # nothing listens: every attempt is refused, and retried
        assert queue.get(request.id).status is RequestStatus.PENDING
        listed = await http.get("/api/requests", headers={"Authorization": f"Bearer {TOKENS['alice']}"})
        assert [r["id"] for r in listed.json()["items"]] == [request.id]
        with smtp_server(port) as (inbox, _):
            await until(lambda: len(inbox.messages) == 3)
            await asyncio.sleep(0.3)
            recipients = sorted(r[0] for r, _ in inbox.messages)
            assert recipients == ["alice@example.com", "lena@example.com", "pat@example.com"]


def test_email_table_and_link_ttl_are_read_from_the_file(tmp_path: Any) -> None:
    from crossgate.errors import ConfigurationError
    from crossgate.server.settings import ServerSettings, load_config

    path = tmp_path / "r.toml"
    path.write_text(
        'link_ttl_seconds = 600\n[email]\nhost = "smtp.example.com"\nport = 587\nsender = "cg@example.com"\n'
        'starttls = true\nusername = "cg"\npassword_env = "SMTP_PASSWORD"\n'
        '[[reviewers]]\nname = "alice"\ntoken = "alice-token-0001"\nemail = "alice@example.com"\n',
        encoding="utf-8",
    )
    settings = ServerSettings(**load_config(path, {"SMTP_PASSWORD": "hunter22"}))
    assert settings.email is not None
    assert (settings.email.host, settings.email.port, settings.email.password) == ("smtp.example.com", 587, "hunter22")
    assert "hunter22" not in repr(settings.email)
    assert settings.link_ttl_seconds == 600
    assert settings.reviewers[0].email == "alice@example.com"
    path.write_text(
        '[email]\nhost = "h"\nsender = "cg@example.com"\nusername = "u"\npassword = "p"\n', encoding="utf-8"
    )
    with pytest.raises(ConfigurationError, match="write password_env or password_file"):
        load_config(path, {})
