"""Hostile input over HTTP: a 4xx with the documented ``{error, message, status}`` body, never a 5xx, and
nothing stored. Each test runs on SQLite, whose driver refuses what MemoryStore would quietly take."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from crossgate import ReviewQueue, open_store
from crossgate.errors import ConfigurationError
from crossgate.limits import MAX_INT64, InputLimits
from crossgate.server import ServerSettings
from crossgate.server.app import create_app
from crossgate.server.settings import load_config
from crossgate.server.stream import _seq
from crossgate.server.webhooks import json_body, slack_body
from crossgate.stores.base import encode_cursor
from tests.server.conftest import POLICY, auth, make_settings, submit
from tests.support.hidden_text import HIDING, PLAIN

TOO_BIG = str(MAX_INT64 + 1)


@pytest.fixture
def queue(tmp_path: Path) -> Iterator[ReviewQueue]:
    q = ReviewQueue(open_store(str(tmp_path / "q.db")), POLICY)
    yield q
    q.close()


@pytest.fixture
def settings() -> ServerSettings:
    return make_settings()


@pytest.fixture
async def client(queue: ReviewQueue, settings: ServerSettings) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(queue, settings)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver", headers=auth("alice")) as http:
            yield http


def stored(queue: ReviewQueue) -> tuple[Any, ...]:
    """Everything a refusal must leave as it was: requests, events, rules."""
    requests = [r.model_dump() for r in queue.list_requests().items]
    return requests, queue.events(limit=10_000), queue.rules(include_revoked=True)


def refusal(response: httpx.Response, status: int, *words: str) -> str:
    """Assert the documented error body with ``status``; return its message."""
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error", "message", "status"}, body
    assert body["status"] == status
    assert isinstance(body["error"], str) and body["error"]
    for word in words:
        assert word in body["message"], body
    return str(body["message"])


@pytest.mark.parametrize(
    "url",
    [
        f"/api/events?after={TOO_BIG}",
        f"/api/events?after={'9' * 5000}",
        "/api/events?after=-1",
        f"/api/events?limit={TOO_BIG}",
        f"/api/stream?after={TOO_BIG}",
        f"/api/requests?limit={TOO_BIG}",
        f"/api/requests?cursor={encode_cursor(MAX_INT64 + 1)}",
        f"/api/requests?cursor={encode_cursor(-1)}",
    ],
)
async def test_integers_beyond_64_bits_are_422(client: httpx.AsyncClient, queue: ReviewQueue, url: str) -> None:
    submit(queue)
    before = stored(queue)
    refusal(await client.get(url), 422)
    assert stored(queue) == before


async def test_the_largest_64_bit_seq_is_answered(client: httpx.AsyncClient, queue: ReviewQueue) -> None:
    submit(queue)
    response = await client.get(f"/api/events?after={MAX_INT64}")
    assert response.status_code == 200 and response.json() == []


@pytest.mark.parametrize("header", [TOO_BIG, "9" * 5000, "١٢", "-1", "12a"])
def test_a_last_event_id_that_is_no_seq_is_ignored(header: str) -> None:
    assert _seq(header) is None


def test_a_last_event_id_within_64_bits_is_a_seq() -> None:
    assert _seq(str(MAX_INT64)) == MAX_INT64
    assert _seq("12") == 12


@pytest.mark.parametrize(
    ("method", "url", "status", "words"),
    [
        ("GET", "/api/nope", 404, ("no such resource", "/api/nope")),
        ("POST", "/api/requests/x/nope", 404, ("no such resource",)),
        ("GET", "/api", 404, ("no such resource",)),
        ("DELETE", "/api/health", 405, ("does not take DELETE", "GET")),
        ("PUT", "/api/rules", 405, ("does not take PUT",)),
        ("GET", "/api/decisions", 405, ("does not take GET", "POST")),
    ],
)
async def test_unknown_routes_and_methods_answer_the_documented_body(
    client: httpx.AsyncClient, queue: ReviewQueue, method: str, url: str, status: int, words: tuple[str, ...]
) -> None:
    submit(queue)
    before = stored(queue)
    response = await client.request(method, url)
    refusal(response, status, *words)
    assert response.json()["error"] == {404: "not_found", 405: "method_not_allowed"}[status]
    assert stored(queue) == before


async def test_an_unknown_page_is_still_an_html_page(client: httpx.AsyncClient) -> None:
    response = await client.get("/no-such-page")
    assert response.status_code == 404
    assert response.headers["content-type"].startswith("text/html")


@pytest.mark.parametrize(
    ("body", "words"),
    [
        (b"{bad", ("not valid JSON",)),
        (b"", ("body",)),
        (b"\xff\xfe{}", ("not UTF-8",)),
        (b"[1, 2]", ("body",)),
        (b'{"kind": "approve"', ("not valid JSON",)),
    ],
)
async def test_unparseable_bodies_answer_the_documented_body(
    client: httpx.AsyncClient, queue: ReviewQueue, body: bytes, words: tuple[str, ...]
) -> None:
    request = submit(queue)
    before = stored(queue)
    for url in (f"/api/requests/{request.id}/decision", "/api/decisions", "/api/rules", "/api/ag-ui/resume"):
        response = await client.post(url, content=body, headers={"content-type": "application/json"})
        refusal(response, 422, *words)
    assert stored(queue) == before


def deep(levels: int) -> str:
    return "[" * levels + "]" * levels


HOSTILE_ARGS = {
    "nested 990 deep": ('{"id": ' + deep(990) + "}", "nested too deeply"),
    "nested 65 deep": ('{"id": ' + deep(65) + "}", "nested too deeply (arguments may nest 64 levels deep)"),
    "5,000 digits": ('{"id": ' + "7" * 5000 + "}", "more than 100 digits"),
    "a float of 400 digits": ('{"id": 1' + "0" * 400 + ".5}", "more than 100 digits"),
    "1e400": ('{"id": 1e400}', "beyond the range"),
    "a lone surrogate": ('{"id": "\\ud800"}', "lone surrogate (U+D800)"),
    "a lone surrogate in a key": ('{"\\udfff": "t1"}', "lone surrogate (U+DFFF)"),
    "a repeated key": ('{"id": "t1", "id": "t2"}', "repeats the key 'id'"),
    "NaN": ('{"id": NaN}', "NaN is not a JSON number"),
}


BATCHES = ("/api/decisions", "/api/ag-ui/resume")


def bodies_with(args: str, request_id: str) -> dict[str, str]:
    """Every body that carries arguments or text, with ``args`` in it, by the URL it goes to."""
    edit = '{"kind": "edit", "args": ' + args + "}"
    return {
        f"/api/requests/{request_id}/decision": edit,
        "/api/decisions": '{"items": [{"request_id": "' + request_id + '", "decision": ' + edit + "}]}",
        "/api/ag-ui/resume": '{"threadId": "run-1", "resume": [{"interruptId": "'
        + request_id
        + '", "status": "resolved", "payload": {"approved": true, "editedArgs": '
        + args
        + "}}]}",
        "/api/rules": '{"effect": "allow", "tool": "delete_ticket", "match": "exact", "args": ' + args + "}",
    }


@pytest.mark.parametrize(("args", "words"), HOSTILE_ARGS.values(), ids=HOSTILE_ARGS.keys())
async def test_hostile_json_in_any_body_is_422_and_stores_nothing(
    client: httpx.AsyncClient, queue: ReviewQueue, args: str, words: str
) -> None:
    request = submit(queue, schema=None)
    before = stored(queue)
    for url, body in bodies_with(args, request.id).items():
        response = await client.post(url, content=body.encode(), headers={"content-type": "application/json"})
        if response.status_code == 200 and url in BATCHES:  # parsed, then each item refused on its own
            (result,) = response.json()["results"]
            assert result["ok"] is False and result["error"]["status"] == 422, result
            assert words in result["error"]["message"]
        else:
            refusal(response, 422, words)
    assert stored(queue) == before


@pytest.mark.parametrize(
    "body",
    [
        '{"kind": "reject", "message": "\\ud800 no"}',
        '{"kind": "respond", "content": "\\udc00"}',
        '{"kind": "approve", "note": "\\ud83d"}',
        '{"kind": "approve", "kind": "reject", "message": "no"}',
    ],
)
async def test_lone_surrogates_and_repeated_keys_in_decisions_are_422(
    client: httpx.AsyncClient, queue: ReviewQueue, body: str
) -> None:
    request = submit(queue)
    before = stored(queue)
    response = await client.post(
        f"/api/requests/{request.id}/decision", content=body.encode(), headers={"content-type": "application/json"}
    )
    refusal(response, 422)
    assert stored(queue) == before


async def test_arguments_64_levels_deep_are_accepted(client: httpx.AsyncClient, queue: ReviewQueue) -> None:
    request = submit(queue, schema=None)
    args = '{"id": ' + deep(63) + "}"
    body = '{"kind": "edit", "args": ' + args + "}"
    response = await client.post(
        f"/api/requests/{request.id}/decision", content=body.encode(), headers={"content-type": "application/json"}
    )
    assert response.status_code == 200, response.text


SMALL = InputLimits(args_bytes=2000, message_bytes=300, note_bytes=100)


@pytest.fixture
async def small(tmp_path: Path) -> AsyncIterator[tuple[httpx.AsyncClient, ReviewQueue]]:
    """A server whose queue and bodies have small limits, so the tests need no megabytes."""
    queue = ReviewQueue(open_store(str(tmp_path / "small.db")), POLICY, limits=SMALL)
    app = create_app(queue, make_settings(max_body_bytes=5000))
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver", headers=auth("alice")) as http:
            yield http, queue
    queue.close()


def decision_url(request_id: str) -> str:
    return f"/api/requests/{request_id}/decision"


async def test_a_body_over_the_limit_is_413_by_content_length(client: httpx.AsyncClient, queue: ReviewQueue) -> None:
    request = submit(queue, schema=None)
    before = stored(queue)
    ten_mb = {"kind": "edit", "args": {"id": "x" * 10_000_000}}
    response = await client.post(decision_url(request.id), json=ten_mb)
    refusal(response, 413, "larger than the server's limit of 1048576 bytes")
    assert response.json()["error"] == "body_too_large"
    assert stored(queue) == before


async def test_a_chunked_body_over_the_limit_is_413(small: tuple[httpx.AsyncClient, ReviewQueue]) -> None:
    client, queue = small
    request = submit(queue, schema=None)
    before = stored(queue)

    async def chunks() -> AsyncIterator[bytes]:
        yield b'{"kind": "edit", "args": {"id": "'
        for _ in range(10):
            yield b"x" * 1000
        yield b'"}}'

    response = await client.post(
        decision_url(request.id), content=chunks(), headers={"content-type": "application/json"}
    )
    assert "content-length" not in response.request.headers
    refusal(response, 413, "limit of 5000 bytes")
    assert stored(queue) == before


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ({"kind": "edit", "args": {"id": "x" * 2500}}, "arguments are 25"),
        ({"kind": "reject", "message": "é" * 200}, "the message is 400 bytes, over the limit of 300 bytes"),
        ({"kind": "respond", "content": "x" * 301}, "the content is 301 bytes"),
        ({"kind": "approve", "note": "x" * 101}, "the note is 101 bytes, over the limit of 100 bytes"),
    ],
)
async def test_fields_over_their_limit_are_422_and_store_nothing(
    small: tuple[httpx.AsyncClient, ReviewQueue], body: dict[str, Any], words: str
) -> None:
    client, queue = small
    request = submit(queue, schema=None)
    before = stored(queue)
    refusal(await client.post(decision_url(request.id), json=body), 422, words)
    batch = {"items": [{"request_id": request.id, "decision": body}]}
    (result,) = (await client.post("/api/decisions", json=batch)).json()["results"]
    assert result["ok"] is False and words in result["error"]["message"]
    assert stored(queue) == before


async def test_fields_within_their_limits_are_decided(small: tuple[httpx.AsyncClient, ReviewQueue]) -> None:
    client, queue = small
    request = submit(queue, schema=None)
    body = {"kind": "edit", "args": {"id": "x" * 1900}, "note": "n" * 100}
    response = await client.post(decision_url(request.id), json=body)
    assert response.status_code == 200, response.text


async def test_a_rule_message_over_the_limit_is_422(small: tuple[httpx.AsyncClient, ReviewQueue]) -> None:
    client, queue = small
    before = stored(queue)
    body = {"effect": "deny", "tool": "delete_ticket", "message": "x" * 301}
    refusal(await client.post("/api/rules", json=body), 422, "the rule's message is 301 bytes")
    assert stored(queue) == before


def test_the_limits_come_from_the_tokens_file(tmp_path: Path) -> None:
    path = tmp_path / "reviewers.toml"
    path.write_text(
        "max_body_bytes = 4096\n[limits]\nargs_bytes = 1024\nnote_bytes = 64\n"
        '[[reviewers]]\nname = "ann"\ntoken = "ann-token-0001"\n'
    )
    fields = load_config(path)
    assert fields.pop("limits") == InputLimits(args_bytes=1024, note_bytes=64)
    assert ServerSettings(**fields).max_body_bytes == 4096


@pytest.mark.parametrize("table", ["[limits]\nargs_bytes = 0\n", "[limits]\nbody = 1\n", "max_body_bytes = -1\n"])
def test_bad_limits_in_the_tokens_file_are_configuration_errors(tmp_path: Path, table: str) -> None:
    path = tmp_path / "reviewers.toml"
    path.write_text(table + '[[reviewers]]\nname = "ann"\ntoken = "ann-token-0001"\n')
    with pytest.raises(ConfigurationError):
        load_config(path)


FORGED_HOSTS = ["evil.example", "evil.example:443", "review.example.com.evil.example", "[::1]:1"]


@pytest.mark.parametrize("host", FORGED_HOSTS)
async def test_a_forged_host_never_appears_in_a_link(queue: ReviewQueue, host: str) -> None:
    base = "https://review.example.com/cg"
    settings = make_settings(base_url=base, link_reviewer="alice")
    request = submit(queue)
    app = create_app(queue, settings)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as http:
            headers = {**auth("alice"), "host": host, "x-forwarded-host": host, "forwarded": f"host={host}"}
            response = await http.post(f"/api/requests/{request.id}/links", headers=headers)
    assert response.status_code == 200, response.text
    links = response.json()
    assert links["approve"].startswith(f"{base}/links/") and links["reject"].startswith(f"{base}/links/")
    assert "evil" not in response.text and host not in response.text
    state = app.state.crossgate
    event = queue.events()[-1]
    for body in (json_body(state, event, request), slack_body(state, event, request)):
        text = json.dumps(body)
        assert f"{base}/requests/{request.id}" in text and f"{base}/links/" in text
        assert "testserver" not in text and "evil" not in text


@pytest.mark.parametrize("base", ["evil.example", "ftp://x", "https://", "https://x/?q=1", "javascript:alert(1)"])
def test_a_base_url_that_is_no_http_address_is_refused(base: str) -> None:
    with pytest.raises(ConfigurationError, match="base_url"):
        make_settings(base_url=base)


@pytest.mark.parametrize(("text", "shown", "finding"), HIDING.values(), ids=HIDING.keys())
def test_webhooks_escape_hidden_characters_and_warn(
    queue: ReviewQueue, text: str, shown: str | None, finding: str
) -> None:
    request = submit(queue, args={"id": "t1", "to": text}, schema=None)
    state = create_app(queue, make_settings(link_reviewer="alice")).state.crossgate
    event = queue.events()[-1]
    slack = slack_body(state, event, request)
    people = [slack["text"], *(block["text"]["text"] for block in slack["blocks"] if "text" in block)]
    warning = next(t for t in people if t.startswith("⚠ Warning: hidden or look-alike characters: "))
    assert finding in warning, warning
    assert slack["text"].endswith(warning)
    if shown is not None:
        assert not any(text in t for t in people) and any(shown in t for t in people)
    machine = json_body(state, event, request)
    assert machine["request"]["call"]["args"]["to"] == text  # exact for machines
    assert any(finding in w for w in machine["warnings"])


@pytest.mark.parametrize("text", PLAIN)
def test_webhooks_do_not_warn_about_plain_text(queue: ReviewQueue, text: str) -> None:
    request = submit(queue, args={"id": "t1", "to": text}, schema=None)
    state = create_app(queue, make_settings()).state.crossgate
    event = queue.events()[-1]
    assert "Warning" not in json.dumps(slack_body(state, event, request))
    assert json_body(state, event, request)["warnings"] == []
