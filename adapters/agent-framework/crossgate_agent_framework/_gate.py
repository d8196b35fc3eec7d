"""``Gate``: run an Agent Framework agent behind crossgate, park it on approval requests, resume it anywhere."""

from __future__ import annotations

import json
from typing import Any

from agent_framework import Agent, AgentResponse, AgentSession, Content, Message, MiddlewareFailure

from crossgate import AdapterError, ConfigurationError, CrossgateError, ParkedRun
from crossgate.adapter import (
    AdapterQueue,
    AuthorityPin,
    Resumable,
    RunScope,
    app_context,
    parked_for_resume,
    resume_leased,
    resumer_owner,
    verified_queue,
)
from crossgate.clock import new_id
from crossgate.model import JsonObject
from crossgate.runs import Finished, Parked
from crossgate_agent_framework._capabilities import FRAMEWORK
from crossgate_agent_framework._middleware import Gating

Outcome = Finished[AgentResponse[Any]] | Parked


class Gate:
    """Run Agent Framework agents behind a crossgate queue: finish, or park until reviewers decide.

    ``queue`` is a ``ReviewQueue`` or any other ``crossgate.adapter.AdapterQueue`` (a ``RemoteQueue`` too).

    ``run`` adds crossgate's function middleware to that run (the agent itself is not changed) and returns
    ``Finished`` or ``Parked``. A parked run's ``AgentSession`` is kept in the queue's store, never handed to
    clients. ``resume`` takes a parked run forward once its requests are decided, in any process:

        outcome = await Gate(open_queue(), sdk_agent=build_agent()).resume(parked_run_id)

    ``sdk_agent`` is the SDK's ``Agent``; crossgate's ``agent`` is always a name, here the SDK agent's
    ``name``. ``context`` is the app's context for every call of the gate's runs (a JSON object), which
    policy ``context:`` conditions test; ``run(call_context=...)`` adds to it for one run. It is parked
    with the run and read back on resume, as ``requested_by`` is.

    ``authority`` pins the authority's public key(s) this gate verifies decisions and standing rules with
    before a tool runs (``TrustedKeys``, a ``PublicKey``, an ``Authority``, a pin file's path or the pin
    text; default: ``$CROSSGATE_AUTHORITY_PUBKEY`` or ``$CROSSGATE_AUTHORITY_PUBKEY_FILE``); see
    ``crossgate.adapter.verified_queue`` and docs/security.md.
    """

    framework = FRAMEWORK

    def __init__(
        self,
        queue: AdapterQueue,
        *,
        sdk_agent: Agent[Any] | None = None,
        owner: str | None = None,
        lease_seconds: float = 300.0,
        context: JsonObject | None = None,
        authority: AuthorityPin = None,
    ) -> None:
        self.queue: AdapterQueue = verified_queue(queue, authority, announce=True)
        self.sdk_agent = sdk_agent
        self.context: JsonObject = app_context(context)
        self.owner = owner or resumer_owner(FRAMEWORK)
        self.lease_seconds = lease_seconds

    async def run(
        self,
        sdk_agent: Agent[Any],
        prompt: str,
        *,
        run: str | None = None,
        session: str | None = None,
        sdk_session: AgentSession | None = None,
        requested_by: str | None = None,
        call_context: JsonObject | None = None,
    ) -> Outcome:
        """Run ``sdk_agent`` on ``prompt`` until it finishes or a call needs a reviewer, which parks it.

        ``run`` names the crossgate run (a fresh id when None); ``session`` groups runs for standing rules
        of scope session; ``sdk_session`` is the SDK's conversation to continue (a new one when None).
        ``requested_by`` is who the run acts for: every request of the run carries it, its resumes keep it,
        and the queue refuses a decision by that person. ``call_context`` is crossgate's app context.
        """
        name = _agent_name(sdk_agent)
        scope = RunScope(run or new_id("run"), session, requested_by, {**self.context, **app_context(call_context)})
        conversation = sdk_session or sdk_agent.create_session()
        return await self._drive(sdk_agent, name, scope, conversation, prompt)

    async def resume(self, parked_run: str, *, sdk_agent: Agent[Any] | None = None) -> Outcome:
        """Take a parked run forward once every request of it is decided (or expired); resume it once.

        A run with a request still pending stays parked and is returned as ``Parked`` unchanged. Unknown
        ids raise NotFoundError; a run resumed before raises ParkedRunClaimedError. Who the run acts for
        and its app context are read from the parked run, never from the caller.
        """
        sdk_agent = sdk_agent or self.sdk_agent
        if sdk_agent is None:
            raise ConfigurationError("resume needs the agent: Gate(queue, sdk_agent=...) or resume(..., sdk_agent=...)")
        name = _agent_name(sdk_agent)
        ready = parked_for_resume(self.queue, parked_run, framework=FRAMEWORK, agent=name)
        if isinstance(ready, Parked):
            return ready
        # Load before claiming: a session this SDK cannot read must not use up the parked run.
        conversation, answers = _load(ready)

        async def body(_claimed: ParkedRun) -> Outcome:
            return await self._drive(sdk_agent, name, ready.scope, conversation, Message(role="user", contents=answers))

        return await resume_leased(
            self.queue, ready.parked, owner=self.owner, lease_seconds=self.lease_seconds, body=body
        )

    async def _drive(
        self, sdk_agent: Agent[Any], name: str, scope: RunScope, conversation: AgentSession, prompt: str | Message
    ) -> Outcome:
        try:
            response = await sdk_agent.run(prompt, session=conversation, middleware=[Gating(self.queue, name, scope)])
        except MiddlewareFailure as exc:
            if isinstance(exc.__cause__, CrossgateError):
                raise exc.__cause__ from None
            raise
        pending = response.user_input_requests
        if not pending:
            return Finished(scope.run, response)
        for request in pending:
            call = request.function_call
            call_id = call.call_id if call is not None else None
            if request.type != "function_approval_request" or call_id not in scope.asked:
                what = call.name if call is not None else request.type
                raise AdapterError(
                    f"the SDK paused {what} without asking crossgate (a tool with approval_mode="
                    "'always_require'?); crossgate's policy decides which calls pause"
                )
        state = {"session": conversation.to_dict(), "requests": [r.to_dict() for r in pending]}
        parked = self.queue.park(
            framework=FRAMEWORK,
            run=scope.run,
            request_ids=scope.request_ids(),
            state=json.dumps(state),
            metadata=scope.metadata(name),
            new_requests=scope.new_requests(),
        )
        return Parked(scope.run, parked.id, parked.request_ids)


def _load(ready: Resumable) -> tuple[AgentSession, list[Content]]:
    """The parked session, and an approval response for every pending request (crossgate's middleware decides)."""
    state = json.loads(ready.parked.state)
    conversation = AgentSession.from_dict(state["session"])
    # Approved natively, all of them: the SDK's own rejection is a fixed text, so crossgate's middleware
    # applies every decision (reject and respond included) when the SDK hands it the call again.
    answers = [Content.from_dict(r).to_function_approval_response(approved=True) for r in state["requests"]]
    return conversation, answers


def _agent_name(sdk_agent: Agent[Any]) -> str:
    if not sdk_agent.name:
        raise ConfigurationError("give the agent a name (Agent(..., name=...)): parked runs resume by it")
    return sdk_agent.name
