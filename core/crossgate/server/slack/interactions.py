"""``POST /slack/interactions``: the Slack app's buttons and modals decide here (channel ``slack``).

Every request is verified first (``crossgate.server.slack.verify``): a forged signature, a stale
timestamp or a replay is refused with 401 and nothing is read from it. The Slack user must be a
reviewer (``slack_user`` in the reviewers configuration); anyone else gets an ephemeral refusal. The
decision then takes the path a decision over HTTP takes (``decide_checked``): the reviewer's scope,
remember's reach, self-approval, four eyes, the fingerprint the message showed, and the queue's
signature over it. Slack's retries and double clicks decide nothing twice: the queue decides a request
once, and the second answer is told who decided it. The message itself is rewritten by the relay,
from the record, like after a decision taken anywhere else.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs

import anyio
from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response

from crossgate.errors import ConflictError, CrossgateError, InvalidDecisionError, NotFoundError
from crossgate.model import ApprovalRequest, Approve
from crossgate.server.access import Caller, decide_blocked
from crossgate.server.api import decide_checked
from crossgate.server.errors import UnauthenticatedError, error_body
from crossgate.server.linkpages import used_message
from crossgate.server.settings import Reviewer
from crossgate.server.slack.blocks import ACTION_PREFIX, APPROVE, EDIT, REJECT, REMEMBER, RESPOND
from crossgate.server.slack.modals import FormError, decision_of, modal, read_metadata
from crossgate.server.slack.relay import SlackRelay, call_slack
from crossgate.server.slack.verify import SlackRequestRefused, SlackVerifier
from crossgate.server.state import ServerState, server_state

log = logging.getLogger(__name__)
CHANNEL = "slack"
PATH = "/slack/interactions"
router = APIRouter(include_in_schema=False)
UNKNOWN_USER = (
    "You are not a crossgate reviewer, so this was not decided. "
    "Ask an operator to add your Slack user id ({user}) as slack_user of your reviewer."
)


@dataclass(frozen=True, slots=True)
class SlackApp:
    """What the endpoint needs: the relay (for its Web API client) and the verifier."""

    relay: SlackRelay
    verifier: SlackVerifier


@router.post(PATH)
async def interactions(request: Request) -> Response:
    """Answer one Slack interaction: a button click or a modal's submission."""
    slack: SlackApp | None = getattr(request.app.state, "slack", None)
    if slack is None:
        raise NotFoundError("this server has no Slack app configured")
    body = await request.body()
    try:
        slack.verifier.check(body, request.headers)
    except SlackRequestRefused as exc:  # JSON whatever the client accepts: Slack reads no page
        return JSONResponse(error_body(UnauthenticatedError(str(exc))), status_code=401)
    payload = _payload(body)
    state = server_state(request)
    answer = await anyio.to_thread.run_sync(_Interaction(state, slack, payload).answer)
    return JSONResponse(answer) if answer else Response(status_code=200)


def _payload(body: bytes) -> dict[str, Any]:
    try:
        raw = parse_qs(body.decode("utf-8"), strict_parsing=True)["payload"][0]
        payload = json.loads(raw)
        if not isinstance(payload, dict) or not isinstance(payload.get("user"), dict):
            raise ValueError("no user")
        return payload
    except (UnicodeDecodeError, KeyError, ValueError) as exc:
        raise InvalidDecisionError(f"a Slack interaction is a form with a JSON payload: {exc}") from None


class _Interaction:
    """One verified interaction, answered as its Slack user's reviewer."""

    def __init__(self, state: ServerState, slack: SlackApp, payload: dict[str, Any]) -> None:
        self.state = state
        self.slack = slack
        self.payload = payload
        self.user = str(payload["user"].get("id", ""))
        self.reviewer = state.settings.slack_reviewer(self.user)

    def answer(self) -> dict[str, Any] | None:
        kind = self.payload.get("type")
        if kind == "block_actions":
            self._clicked()
            return None
        if kind == "view_submission":
            return self._submitted()
        return None  # other interactions (a modal closed, a shortcut) decide nothing

    def _clicked(self) -> None:
        actions = self.payload.get("actions") or [{}]
        action = actions[0] if isinstance(actions[0], dict) else {}
        action_id = str(action.get("action_id", ""))
        if not action_id.startswith(ACTION_PREFIX):
            return
        request_id, _, fingerprint = str(action.get("value", "")).partition("|")
        if self.reviewer is None:
            self._tell(UNKNOWN_USER.format(user=self.user))
            return
        try:
            request = self.state.queue.get(request_id)
            self._may_decide(self.reviewer, request)
            if action_id == APPROVE:
                self._decide(request, Approve(fingerprint=fingerprint))
            elif action_id in (REJECT, EDIT, RESPOND, REMEMBER):
                view = modal(action_id, request)
                call_slack(self.slack.relay.client, "views.open", trigger_id=self.payload.get("trigger_id"), view=view)
        except CrossgateError as exc:
            self._tell(f"Not decided: {exc}")

    def _submitted(self) -> dict[str, Any] | None:
        view = self.payload.get("view") or {}
        blocks = [b.get("block_id") for b in view.get("blocks", []) if b.get("type") == "input"]
        first = str(blocks[0]) if blocks else ""
        try:
            request_id, fingerprint = read_metadata(view)
        except (ValueError, KeyError):
            return _errors(first, "This form is not one crossgate opened.")
        if self.reviewer is None:
            return _errors(first, UNKNOWN_USER.format(user=self.user))
        try:
            request = self.state.queue.get(request_id)
            self._may_decide(self.reviewer, request)
            decision = decision_of(str(view.get("callback_id", "")), view, request, fingerprint)
            self._decide(request, decision)
        except FormError as exc:
            return _errors(exc.block or first, str(exc))
        except CrossgateError as exc:
            return _errors(first, f"Not decided: {exc}"[:150])
        return None

    def _may_decide(self, reviewer: Reviewer, request: ApprovalRequest) -> None:
        if not request.is_open:
            raise ConflictError(used_message(request, "message"))
        blocked = decide_blocked(reviewer, request)
        if blocked is not None:
            raise InvalidDecisionError(blocked)

    def _decide(self, request: ApprovalRequest, decision: Any) -> None:
        assert self.reviewer is not None
        caller = Caller(self.reviewer, CHANNEL)
        try:
            decide_checked(self.state, caller, request.id, decision)
        except ConflictError as exc:  # decided meanwhile (a retry, another reviewer): say by whom
            current = self.state.queue.get(request.id)
            if current.is_open:
                raise
            raise ConflictError(used_message(current, "message")) from exc

    def _tell(self, text: str) -> None:
        """An ephemeral message to the clicking user, in the channel of the message they clicked."""
        channel = (self.payload.get("channel") or {}).get("id") or self.slack.relay.settings.channel
        try:
            call_slack(self.slack.relay.client, "chat.postEphemeral", channel=channel, user=self.user, text=text)
        except Exception:
            log.warning("crossgate could not tell Slack user %s: %s", self.user, text, exc_info=True)


def _errors(block: str, message: str) -> dict[str, Any]:
    return {"response_action": "errors", "errors": {block: message[:150]}}
