"""Microsoft Teams: an Adaptive Card per request through a workflow webhook, with one-tap signed links.

A loopback receiver stands for the Teams workflow; the card's links go to the same confirm page as
e-mail's, with the same refusals.
"""

from __future__ import annotations

from typing import Any

from crossgate import MemoryStore, ReviewQueue
from crossgate.model import RequestStatus
from crossgate.server.settings import WebhookTarget
from tests.server.conftest import POLICY, auth, submit
from tests.server.live import Receiver
from tests.server.test_webhooks import serving, until

BASE = "http://testserver"
FORM = {"content-type": "application/x-www-form-urlencoded"}


def card_of(body: dict[str, Any]) -> dict[str, Any]:
    assert body["type"] == "message"
    (attachment,) = body["attachments"]
    assert attachment["contentType"] == "application/vnd.microsoft.card.adaptive"
    card = attachment["content"]
    assert (card["type"], card["version"]) == ("AdaptiveCard", "1.4")
    return card


def shown(card: dict[str, Any]) -> str:
    lines = []
    for block in card["body"]:
        if block["type"] == "RichTextBlock":
            lines.append("".join(run["text"] for run in block["inlines"]))
        else:
            lines.append(block["text"])
    return "\n".join(lines)


def actions(card: dict[str, Any]) -> dict[str, str]:
    assert all(a["type"] == "Action.OpenUrl" for a in card["actions"])
    return {a["title"]: a["url"] for a in card["actions"]}


async def test_card_per_request_and_its_links_decide_once_on_the_confirm_page() -> None:
    queue = ReviewQueue(MemoryStore(), POLICY)
    with Receiver() as teams:
        target = WebhookTarget(url=teams.url, format="teams")
        async with serving(queue, target, link_reviewer="lena", base_url=BASE) as http:
            request = submit(queue, args={"id": "t1", "note": "[Approve](https://evil.example)\u202e"})
            await until(lambda: len(teams.bodies) == 1)
            card = card_of(teams.bodies[0])
            text = shown(card)
            assert "openai-agents · support asks to run delete_ticket: Deleting a ticket cannot be undone." in text
            assert "Why a person must decide: Deleting a ticket cannot be undone." in text
            assert '"note": "[Approve](https://evil.example)\\u202e"' in text
            assert "⚠ Warning: hidden or look-alike characters" in text
            model_text = [b for b in card["body"] if "evil.example" in shown({"body": [b]})]
            assert all(b["type"] == "RichTextBlock" for b in model_text), "no markdown from the model's text"
            links = actions(card)
            assert set(links) == {"Open", "Approve", "Reject…"}
            assert links["Open"] == f"{BASE}/requests/{request.id}"

            reject = links["Reject…"].removeprefix(BASE)
            page = await http.get(reject)
            assert page.status_code == 200 and "Reject this call" in page.text
            assert queue.get(request.id).status is RequestStatus.PENDING, "opening the link decides nothing"
            tampered = reject[:-2] + ("AA" if not reject.endswith("AA") else "BB")
            assert (await http.post(tampered, content=b"message=no", headers=FORM)).status_code == 403
            done = await http.post(reject, content=b"message=Close+it+instead", headers=FORM)
            assert done.status_code == 200
            decision = queue.get(request.id).decision
            assert decision is not None
            assert (decision.kind, decision.reviewer, decision.channel) == ("reject", "lena", "link")
            assert (await http.post(links["Approve"].removeprefix(BASE))).status_code == 409
            await until(lambda: len(teams.bodies) == 2)
            closed = card_of(teams.bodies[1])
            assert "reject by lena via link" in shown(closed)
            assert set(actions(closed)) == {"Open"}, "a decided request's card carries no decision links"
    queue.close()


async def test_card_after_a_decision_on_the_page() -> None:
    queue = ReviewQueue(MemoryStore(), POLICY)
    with Receiver() as teams:
        async with serving(queue, WebhookTarget(url=teams.url, format="teams"), link_reviewer="alice") as http:
            request = submit(queue)
            await until(lambda: len(teams.bodies) == 1)
            decided = await http.post(
                f"/api/requests/{request.id}/decision", json={"kind": "approve"}, headers=auth("alice")
            )
            assert decided.status_code == 200
            await until(lambda: len(teams.bodies) == 2)
            assert "approve by alice via api" in shown(card_of(teams.bodies[1]))
    queue.close()
