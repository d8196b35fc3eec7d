"""The page's sign-in: one-time codes, session ids in the cookie (never the token), sessions across restarts."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx

from crossgate import ReviewQueue
from crossgate.server import ServerSettings
from crossgate.server.app import create_app
from crossgate.server.sessions import SESSION_SECONDS, issue_session, session_reviewer
from crossgate.server.settings import reviewer
from tests.server.conftest import TOKENS, make_settings


@asynccontextmanager
async def serving(queue: ReviewQueue, settings: ServerSettings) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(queue, settings)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as http:
            http.app = app  # type: ignore[attr-defined]
            yield http


def _cookie(session: str) -> dict[str, str]:
    return {"cookie": f"crossgate_session={session}"}


async def _me(client: httpx.AsyncClient, session: str) -> httpx.Response:
    client.cookies.clear()  # only the session given
    return await client.get("/api/me", headers=_cookie(session))


async def test_the_cookie_holds_a_session_id_not_the_token(client: httpx.AsyncClient) -> None:
    response = await client.get("/login", params={"token": TOKENS["alice"]})
    assert response.status_code == 303
    session = response.cookies["crossgate_session"]
    assert TOKENS["alice"] not in session and TOKENS["alice"] not in response.headers["set-cookie"]
    me = await _me(client, session)
    assert me.status_code == 200 and me.json()["name"] == "alice" and me.json()["channel"] == "web"
    # the token itself is no session, and a session is no bearer token
    assert (await _me(client, TOKENS["alice"])).status_code == 401
    bearer = await client.get("/api/me", headers={"Authorization": f"Bearer {session}"})
    assert bearer.status_code == 401


async def test_a_sign_in_code_works_once(queue: ReviewQueue) -> None:
    async with serving(queue, make_settings()) as client:
        code = client.app.state.crossgate.auth.issue_sign_in("bob")  # type: ignore[attr-defined]
        first = await client.get("/login", params={"token": code})
        assert first.status_code == 303
        assert (await _me(client, first.cookies["crossgate_session"])).json()["name"] == "bob"
        client.cookies.clear()
        again = await client.get("/login", params={"token": code})
        assert again.status_code == 401 and "crossgate_session" not in again.headers.get("set-cookie", "")
        assert "used already" in again.text
        posted = await client.post("/login", data={"token": code})
        assert posted.status_code == 401


async def test_a_session_survives_a_restart_with_the_same_tokens(queue: ReviewQueue) -> None:
    async with serving(queue, make_settings(secret=b"a" * 32)) as client:
        session = (await client.get("/login", params={"token": TOKENS["lena"]})).cookies["crossgate_session"]
    # a new process: another random link secret, the same tokens file
    async with serving(queue, make_settings(secret=b"b" * 32)) as client:
        me = await _me(client, session)
        assert me.status_code == 200 and me.json()["name"] == "lena"
        assert (await client.get("/", headers=_cookie(session))).status_code == 200
    # lena's token changed in the tokens file: her sessions end
    changed = make_settings(reviewers=(reviewer("lena", "a-new-token-for-lena"),))
    async with serving(queue, changed) as client:
        assert (await _me(client, session)).status_code == 401
        page = await client.get("/", headers=_cookie(session))
        assert page.status_code == 303 and page.headers["location"] == "/login"


async def test_forged_expired_and_signed_out_sessions_are_refused(client: httpx.AsyncClient) -> None:
    settings = make_settings()
    alice, bob = settings.reviewers[0], settings.reviewers[1]
    session = issue_session(alice)
    assert session_reviewer(session, settings.reviewers) == alice
    name, issued, nonce, mac = session.split(".")
    bob_name = issue_session(bob).split(".")[0]
    forged = [
        f"{bob_name}.{issued}.{nonce}.{mac}",  # alice's MAC under bob's name
        f"{name}.{int(issued) + 60}.{nonce}.{mac}",  # a later issue time
        f"{name}.{issued}.{nonce}.{'0' * len(mac)}",
        f"{name}.{issued}.{nonce}",
        "Zm9v.x.y.z",
        "ä.1.2.3",
        "",
    ]
    for value in forged:
        assert session_reviewer(value, settings.reviewers) is None, value
        if value.isascii() and value:
            assert (await _me(client, value)).status_code == 401, value
    old = issue_session(alice, now=time.time() - SESSION_SECONDS - 60)
    assert (await _me(client, old)).status_code == 401
    # signing out ends the session on the server, not only in this browser
    live = (await client.get("/login", params={"token": TOKENS["alice"]})).cookies["crossgate_session"]
    assert (await _me(client, live)).status_code == 200
    client.cookies.clear()
    await client.post("/logout", headers=_cookie(live))
    assert (await _me(client, live)).status_code == 401


async def test_the_login_page_says_where_a_token_comes_from(client: httpx.AsyncClient) -> None:
    page = (await client.get("/login")).text
    assert "Where does a token come from?" in page
    assert "--tokens reviewers.toml" in page and "$CROSSGATE_TOKENS" in page
    assert "That address works once" in page
