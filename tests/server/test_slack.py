"""The Slack app: messages posted and kept in step with the record, decisions from signed interactions.

A local fake of the Web API on 127.0.0.1 records what ``slack_sdk``'s ``WebClient`` sends; the tests post
interactions signed as Slack signs them. Every refusal is checked to leave the request pending.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest

from crossgate import Approve, MemoryStore, ReviewQueue
from crossgate.model import DecisionKind, RequestStatus
from crossgate.server.app import create_app
from crossgate.server.channels.config import SlackSettings
from crossgate.server.settings import reviewer
from tests.server.conftest import POLICY, TOKENS, auth, make_settings, submit
from tests.server.slack_fake import (
    BOT_TOKEN,
    CHANNEL,
    SIGNING_SECRET,
    SLACK_USERS,
    FakeSlack,
    click,
    fake_slack,
    signed,
    submission,
)
from tests.server.test_webhooks import until

PAT_TOKEN = "pat-token-000004"


def slack_settings(fake: FakeSlack, **overrides: Any) -> SlackSettings:
    fields: dict[str, Any] = {
        "channel": CHANNEL,
        "bot_token": BOT_TOKEN,
        "signing_secret": SIGNING_SECRET,
        "api_url": fake.url,
        "retry_seconds": 0.05,
    }
    return SlackSettings(**{**fields, **overrides})


def reviewers() -> tuple[Any, ...]:
    return (
        reviewer("alice", TOKENS["alice"], slack_user=SLACK_USERS["alice"]),
        reviewer("bob", TOKENS["bob"], frameworks=["langgraph"], slack_user=SLACK_USERS["bob"]),
        reviewer(
            "lena",
            TOKENS["lena"],
            tools=["read_*", "delete_ticket"],
            agents=["support"],
            slack_user=SLACK_USERS["lena"],
        ),
        reviewer("pat", PAT_TOKEN, slack_user=SLACK_USERS["pat"]),
    )


@asynccontextmanager
async def slack_server(queue: ReviewQueue, fake: FakeSlack, **slack: Any) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(queue, make_settings(reviewers=reviewers(), slack=slack_settings(fake, **slack)))
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as http:
            yield http


@pytest.fixture
def queue() -> ReviewQueue:
    q = ReviewQueue(MemoryStore(), POLICY)
    yield q
    q.close()


async def post(http: httpx.AsyncClient, payload: dict[str, Any], **sign: Any) -> httpx.Response:
    body, headers = signed(payload, **sign)
    return await http.post("/slack/interactions", content=body, headers=headers)


def value(request: Any) -> str:
    return f"{request.id}|{request.fingerprint}"


def texts(blocks: list[dict[str, Any]]) -> str:
    return "\n".join(b["text"]["text"] for b in blocks if b.get("type") == "section")


def buttons(blocks: list[dict[str, Any]]) -> list[str]:
    return [e["text"]["text"] for b in blocks if b["type"] == "actions" for e in b["elements"]]


async def test_seed_request_decided_from_slack_and_the_message_follows(queue: ReviewQueue) -> None:
    with fake_slack() as fake:
        async with slack_server(queue, fake) as http:
            request = submit(queue, args={"id": "t1", "reason": "duplicate"})
            await until(lambda: len(fake.of("chat.postMessage")) == 1)
            posted = fake.of("chat.postMessage")[0]
            assert posted["channel"] == CHANNEL
            assert fake.tokens[0] == f"Bearer {BOT_TOKEN}"
            shown = texts(posted["blocks"])
            assert "openai-agents · support asks to run `delete_ticket`" in shown
            assert "*Why a person must decide:* Deleting a ticket cannot be undone." in shown
            assert '"reason": "duplicate"' in shown
            assert "Waiting for a reviewer" in shown
            assert buttons(posted["blocks"]) == ["Approve", "Reject…", "Edit…", "Respond…", "Remember…"]

            answer = await post(http, click(SLACK_USERS["alice"], "approve", value(request)))
            assert answer.status_code == 200, answer.text
            decided = queue.get(request.id)
            assert decided.decision is not None
            assert (decided.decision.kind, decided.decision.reviewer, decided.decision.channel) == (
                "approve",
                "alice",
                "slack",
            )

            await until(lambda: len(fake.of("chat.update")) == 1)
            update = fake.of("chat.update")[0]
            assert update["ts"] == "1700000001.000100"  # the posted message, from the stored reference
            assert "*Approved* by alice via slack" in texts(update["blocks"])
            assert buttons(update["blocks"]) == [], "a decided request's message has no buttons"

            queue.mark_applied(request.id, args={"id": "t1", "reason": "duplicate"})
            queue.record_outcome(request.id, ran=True, result="deleted")
            await until(lambda: "The call ran." in texts(fake.of("chat.update")[-1]["blocks"]))


async def test_forged_stale_and_replayed_interactions_are_refused(queue: ReviewQueue) -> None:
    with fake_slack() as fake:
        async with slack_server(queue, fake) as http:
            request = submit(queue)
            payload = click(SLACK_USERS["alice"], "approve", value(request))
            forged = await post(http, payload, secret="not-the-apps-signing-secret")
            assert forged.status_code == 401
            assert forged.json()["error"] == "unauthenticated"
            assert "signature does not match" in forged.json()["message"]
            stale = await post(http, payload, at=int(time.time()) - 600)
            assert stale.status_code == 401
            assert "five minutes" in stale.json()["message"]
            unsigned = await http.post("/slack/interactions", content=signed(payload)[0])
            assert unsigned.status_code == 401
            assert queue.get(request.id).status is RequestStatus.PENDING

            body, headers = signed(click(SLACK_USERS["alice"], "reject", value(request)))
            first = await http.post("/slack/interactions", content=body, headers=headers)
            assert first.status_code == 200
            again = await http.post("/slack/interactions", content=body, headers=headers)
            assert again.status_code == 401
            assert "replay" in again.json()["message"]
            assert len(fake.of("views.open")) == 1, "the replay opened nothing"
            assert queue.get(request.id).status is RequestStatus.PENDING
            assert [e.kind for e in queue.events(request_id=request.id)] == ["submitted"]


async def test_unknown_user_out_of_scope_and_self_approval_decide_nothing(queue: ReviewQueue) -> None:
    with fake_slack() as fake:
        async with slack_server(queue, fake) as http:
            request = submit(queue, requested_by="pat")
            for user, expected in (
                ("U0STRANGER", "You are not a crossgate reviewer"),
                (SLACK_USERS["bob"], "bob may decide frameworks langgraph"),
                (SLACK_USERS["pat"], "pat submitted request"),
            ):
                for action in ("approve", "reject"):
                    answer = await post(http, click(user, action, value(request)))
                    assert answer.status_code == 200
                    told = fake.of("chat.postEphemeral")[-1]
                    assert (told["user"], told["channel"]) == (user, CHANNEL)
                    assert expected in told["text"], told["text"]
            assert fake.of("views.open") == [], "no form opens for someone who may not decide"
            # a modal submitted by someone who may not decide (opened before their scope changed, say)
            view = {
                "callback_id": "crossgate.reject",
                "private_metadata": f'{{"r": "{request.id}", "f": "{request.fingerprint}"}}',
                "blocks": [{"type": "input", "block_id": "message"}],
            }
            values = {"message": {"value": {"type": "plain_text_input", "value": "no"}}}
            refused = await post(http, submission(SLACK_USERS["pat"], view, values))
            assert refused.json()["response_action"] == "errors"
            assert "pat submitted request" in refused.json()["errors"]["message"]
            assert queue.get(request.id).status is RequestStatus.PENDING
            assert [e.kind for e in queue.events(request_id=request.id)] == ["submitted"]


async def test_retried_interaction_never_decides_twice(queue: ReviewQueue) -> None:
    with fake_slack() as fake:
        async with slack_server(queue, fake) as http:
            request = submit(queue)
            payload = click(SLACK_USERS["alice"], "approve", value(request))
            assert (await post(http, payload)).status_code == 200
            retried = await post(http, payload, at=int(time.time()) + 1)  # Slack's retry: signed afresh
            assert retried.status_code == 200
            assert "already decided (approve by alice via slack" in fake.of("chat.postEphemeral")[-1]["text"]
            rival = await post(http, click(SLACK_USERS["lena"], "approve", value(request)))
            assert rival.status_code == 200
            assert [e.kind for e in queue.events(request_id=request.id)].count("decided") == 1


async def test_reject_modal_needs_a_message_then_decides(queue: ReviewQueue) -> None:
    with fake_slack() as fake:
        async with slack_server(queue, fake) as http:
            request = submit(queue)
            await post(http, click(SLACK_USERS["lena"], "reject", value(request)))
            view = fake.of("views.open")[0]["view"]
            assert view["callback_id"] == "crossgate.reject"
            empty = await post(http, submission(SLACK_USERS["lena"], view, {"message": {"value": {"value": "  "}}}))
            assert empty.json() == {
                "response_action": "errors",
                "errors": {"message": "Write the message the model reads."},
            }
            assert queue.get(request.id).status is RequestStatus.PENDING
            done = await post(
                http, submission(SLACK_USERS["lena"], view, {"message": {"value": {"value": "Close it instead"}}})
            )
            assert done.status_code == 200 and done.content == b""
            decision = queue.get(request.id).decision
            assert decision is not None
            assert (decision.kind, getattr(decision, "message", None), decision.reviewer) == (
                "reject",
                "Close it instead",
                "lena",
            )
            await until(
                lambda: any("*Rejected* by lena via slack" in texts(u["blocks"]) for u in fake.of("chat.update"))
            )


async def test_edit_modal_is_built_from_the_schema_and_validated(queue: ReviewQueue) -> None:
    with fake_slack() as fake:
        async with slack_server(queue, fake) as http:
            request = submit(queue, args={"id": "t1"})
            await post(http, click(SLACK_USERS["alice"], "edit", value(request)))
            view = fake.of("views.open")[0]["view"]
            inputs = {b["block_id"]: b for b in view["blocks"]}
            assert set(inputs) == {"arg:id", "arg:reason"}
            assert inputs["arg:id"]["element"]["initial_value"] == "t1"
            assert inputs["arg:id"]["optional"] is False and inputs["arg:reason"]["optional"] is True
            missing = await post(http, submission(SLACK_USERS["alice"], view, {"arg:id": {"value": {"value": ""}}}))
            assert "'id' is a required property" in missing.json()["errors"]["arg:id"]
            same = await post(http, submission(SLACK_USERS["alice"], view, {"arg:id": {"value": {"value": "t1"}}}))
            assert "Nothing changed" in same.json()["errors"]["arg:id"]
            assert queue.get(request.id).status is RequestStatus.PENDING
            edited = {"arg:id": {"value": {"value": "t2"}}, "arg:reason": {"value": {"value": "typo"}}}
            assert (await post(http, submission(SLACK_USERS["alice"], view, edited))).status_code == 200
            decision = queue.get(request.id).decision
            assert decision is not None and decision.kind is DecisionKind.EDIT
            assert getattr(decision, "args", None) == {"id": "t2", "reason": "typo"}


async def test_hidden_characters_are_warned_about_and_edited_as_escapes(queue: ReviewQueue) -> None:
    with fake_slack() as fake:
        async with slack_server(queue, fake) as http:
            request = submit(queue, args={"id": "t1\u202e<!channel>"})
            await until(lambda: len(fake.of("chat.postMessage")) == 1)
            shown = texts(fake.of("chat.postMessage")[0]["blocks"])
            assert "\\u202e" in shown and "\u202e" not in shown
            assert "&lt;!channel&gt;" in shown and "<!channel>" not in shown, "no mention from the model's text"
            assert ":warning: *Warning:* hidden or look-alike characters" in shown
            await post(http, click(SLACK_USERS["alice"], "edit", value(request)))
            view = fake.of("views.open")[0]["view"]
            assert [b["block_id"] for b in view["blocks"]] == ["args_json"]
            assert "\\u202e" in view["blocks"][0]["element"]["initial_value"]
            unchanged = view["blocks"][0]["element"]["initial_value"].replace("t1", "t9")
            assert (
                await post(http, submission(SLACK_USERS["alice"], view, {"args_json": {"value": {"value": unchanged}}}))
            ).status_code == 200
            assert getattr(queue.get(request.id).decision, "args", None) == {"id": "t9\u202e<!channel>"}


async def test_respond_only_where_allowed_and_remember_with_scope(queue: ReviewQueue) -> None:
    with fake_slack() as fake:
        async with slack_server(queue, fake) as http:
            narrow = submit(queue, capabilities=(DecisionKind.APPROVE, DecisionKind.REJECT), args={"id": "t7"})
            await until(lambda: len(fake.of("chat.postMessage")) == 1)
            assert buttons(fake.of("chat.postMessage")[0]["blocks"]) == ["Approve", "Reject…", "Remember…"]
            await post(http, click(SLACK_USERS["alice"], "remember", value(narrow)))
            view = fake.of("views.open")[0]["view"]
            scopes = [o["value"] for o in view["blocks"][0]["element"]["options"]]
            assert scopes == ["once", "run", "session", "forever"]
            covers = [o["text"]["text"] for o in view["blocks"][1]["element"]["options"]]
            assert covers == ["only these exact arguments", "every call of delete_ticket"]
            assert view["blocks"][2]["element"]["options"][0]["text"]["text"] == "only for agent support"
            values = {
                "scope": {"value": {"selected_option": {"value": "run"}}},
                "match": {"value": {"selected_option": {"value": "tool"}}},
                "agent": {"value": {"selected_options": [{"value": "yes"}]}},
            }
            assert (await post(http, submission(SLACK_USERS["alice"], view, values))).status_code == 200
            decision = queue.get(narrow.id).decision
            assert decision is not None and decision.remember is not None
            remember = decision.remember
            assert (remember.scope.value, remember.match.value, remember.this_agent_only) == ("run", "tool", True)
            assert any(rule.created_by == "alice" for rule in queue.rules())
            covered = (
                "Remembered: every call of delete_ticket, whatever its arguments, by agent support, "
                "for the rest of run run-1."
            )
            await until(lambda: any(covered in texts(u["blocks"]) for u in fake.of("chat.update")))


async def test_decided_on_the_page_expired_or_cancelled_updates_the_message(queue: ReviewQueue) -> None:
    with fake_slack() as fake:
        async with slack_server(queue, fake) as http:
            first = submit(queue, args={"id": "t1"})
            second = submit(queue, args={"id": "t2"})
            await until(lambda: len(fake.of("chat.postMessage")) == 2)
            ts = {m["ts"] for m in fake.of("chat.update")}
            assert not ts
            answer = await http.post(
                f"/api/requests/{first.id}/decision", json={"kind": "reject", "message": "no"}, headers=auth("alice")
            )
            assert answer.status_code == 200
            await until(
                lambda: any("*Rejected* by alice via api" in texts(u["blocks"]) for u in fake.of("chat.update"))
            )
            queue.cancel(second.id, actor="ops")
            await until(lambda: any("*Cancelled* by ops" in texts(u["blocks"]) for u in fake.of("chat.update")))
            updated = {u["ts"] for u in fake.of("chat.update")}
            assert updated == {"1700000001.000100", "1700000002.000100"}


@pytest.mark.slow
async def test_slack_down_then_up_posts_from_the_cursor_and_the_request_stays_pending(queue: ReviewQueue) -> None:
    with fake_slack() as fake:
        fake.down = True
        async with slack_server(queue, fake) as http:
            request = submit(queue)
            await until(lambda: fake.refused >= 3)
            assert queue.get(request.id).status is RequestStatus.PENDING
            page = await http.get("/api/requests", headers=auth("alice"))
            assert [r["id"] for r in page.json()["items"]] == [request.id]
            health = (await http.get("/api/health")).json()["channels"]["slack"]
            assert health["retries"] >= 3 and health["delivered"] == 0
            fake.down = False
            await until(lambda: len(fake.of("chat.postMessage")) == 1)
            assert queue.get(request.id).status is RequestStatus.PENDING
            health = (await http.get("/api/health")).json()["channels"]["slack"]
            assert (health["delivered"], health["failed"]) == (1, 0)
        # a restart goes on from the stored cursor and the stored message reference: nothing posted twice
        async with slack_server(queue, fake) as http:
            await post(http, click(SLACK_USERS["alice"], "approve", value(request)))
            await until(lambda: len(fake.of("chat.update")) == 1)
        assert len(fake.of("chat.postMessage")) == 1


@pytest.mark.slow
async def test_escalation_replies_in_the_thread(queue: ReviewQueue) -> None:
    with fake_slack() as fake:
        async with slack_server(queue, fake, escalate_after=0.5):
            waiting = submit(queue, args={"id": "t1"})
            decided = submit(queue, args={"id": "t2"})
            queue.decide(decided.id, Approve(), reviewer="alice")
            await until(lambda: any("thread_ts" in m for m in fake.of("chat.postMessage")))
            await asyncio.sleep(1.0)  # the decided request's escalation is due too, and must not come
            replies = [m for m in fake.of("chat.postMessage") if "thread_ts" in m]
            assert len(replies) == 1
            assert replies[0]["thread_ts"] == "1700000001.000100"
            assert "Still waiting for a reviewer" in replies[0]["text"]
            assert queue.get(waiting.id).status is RequestStatus.PENDING


async def test_four_eyes_need_two_slack_reviewers_and_the_message_says_so() -> None:
    from crossgate import Policy, PolicyRule, VerdictKind

    policy = Policy(rules=(PolicyRule(name="two", verdict=VerdictKind.ASK, tool="delete_*", approvals=2),))
    queue = ReviewQueue(MemoryStore(), policy)
    with fake_slack() as fake:
        async with slack_server(queue, fake) as http:
            request = submit(queue)
            await until(lambda: len(fake.of("chat.postMessage")) == 1)
            assert buttons(fake.of("chat.postMessage")[0]["blocks"]) == ["Approve", "Reject…"]
            await post(http, click(SLACK_USERS["alice"], "approve", value(request)))
            await until(lambda: len(fake.of("chat.update")) == 1)
            first = texts(fake.of("chat.update")[0]["blocks"])
            assert "approved by alice (1 of 2): needs another reviewer" in first
            assert queue.get(request.id).status is RequestStatus.PENDING
            await post(http, click(SLACK_USERS["alice"], "approve", value(request)))  # the same reviewer again
            assert queue.get(request.id).status is RequestStatus.PENDING
            assert "alice" in fake.of("chat.postEphemeral")[-1]["text"]
            await post(http, click(SLACK_USERS["lena"], "approve", value(request)))
            assert queue.get(request.id).status is RequestStatus.DECIDED
            await until(lambda: "*Approved* by lena via slack" in texts(fake.of("chat.update")[-1]["blocks"]))
    queue.close()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def db(request: pytest.FixtureRequest, tmp_path: Any) -> Any:
    from tests.support.postgres import database_url

    with database_url(request.param, tmp_path) as url:
        yield url


@pytest.mark.slow
async def test_a_restarted_server_updates_the_message_the_last_one_posted(db: str) -> None:
    from crossgate import open_store

    first = ReviewQueue(open_store(db), POLICY)
    with fake_slack() as fake:
        async with slack_server(first, fake):
            request = submit(first)
            await until(lambda: len(fake.of("chat.postMessage")) == 1)
        first.close()
        later = ReviewQueue(open_store(db), POLICY)  # another process on the same database
        later.decide(request.id, Approve(), reviewer="alice", channel="cli")  # while no server runs
        async with slack_server(later, fake):
            await until(lambda: len(fake.of("chat.update")) == 1)
        update = fake.of("chat.update")[0]
        assert update["ts"] == "1700000001.000100"
        assert "*Approved* by alice via cli" in texts(update["blocks"])
        assert len(fake.of("chat.postMessage")) == 1
        later.close()


def test_edit_form_reads_numbers_and_booleans_and_refuses_what_the_schema_refuses(queue: ReviewQueue) -> None:
    from crossgate.server.slack.modals import FormError, edit_blocks, edited_args

    schema = {
        "type": "object",
        "properties": {
            "id": {"type": "string"},
            "limit": {"type": "integer", "maximum": 10},
            "hard": {"type": "boolean"},
        },
        "required": ["id"],
    }
    request = submit(queue, args={"id": "t1", "limit": 3, "hard": False}, schema=schema)
    kinds = {b["block_id"]: b["element"]["type"] for b in edit_blocks(request)}
    assert kinds == {"arg:id": "plain_text_input", "arg:limit": "number_input", "arg:hard": "static_select"}

    def typed(limit: str, hard: str) -> dict[str, Any]:
        return {
            "arg:id": {"value": {"value": "t1"}},
            "arg:limit": {"value": {"value": limit}},
            "arg:hard": {"value": {"selected_option": {"value": hard}}},
        }

    assert edited_args(typed("5", "true"), request) == {"id": "t1", "limit": 5, "hard": True}
    with pytest.raises(FormError) as too_many:
        edited_args(typed("50", "false"), request)
    assert too_many.value.block == "arg:limit" and "maximum of 10" in str(too_many.value)
    with pytest.raises(FormError) as not_a_number:
        edited_args(typed("five", "false"), request)
    assert not_a_number.value.block == "arg:limit"
    assert queue.get(request.id).status is RequestStatus.PENDING
