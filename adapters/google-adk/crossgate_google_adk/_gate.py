"""``Gate``: run an ADK agent behind crossgate, park it on a confirmation, resume it in any process."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from google.adk.agents import BaseAgent
from google.adk.apps import App
from google.adk.events import Event
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService, Session
from google.genai import types
from pydantic import BaseModel

from crossgate import AdapterError, ConfigurationError, ParkedRun
from crossgate.adapter import (
    AdapterQueue,
    AuthorityPin,
    RunScope,
    app_context,
    crossgate_cause,
    parked_for_resume,
    resume_leased,
    resumer_owner,
    verified_queue,
)
from crossgate.clock import new_id
from crossgate.model import JsonObject
from crossgate.runs import Finished, Parked
from crossgate_google_adk._capabilities import FRAMEWORK
from crossgate_google_adk._plugin import Gating

APP = "crossgate"
CONFIRMATION = "adk_request_confirmation"


@dataclass(frozen=True, slots=True)
class RunResult:
    """A finished ADK run: its session (the whole conversation) and the events of this run."""

    session: Session
    events: Sequence[Event]

    @property
    def text(self) -> str:
        """The model's last text of the run ('' when it ended on something else)."""
        for event in reversed(self.events):
            parts = [p.text for p in (event.content.parts or []) if p.text] if event.content else []
            if parts:
                return "".join(parts)
        return ""


class ParkedState(BaseModel):
    """What a parked run keeps in crossgate's store: the ADK session and the confirmations it waits on."""

    user: str
    session: Session
    confirmations: list[str]


Outcome = Finished[RunResult] | Parked


class Gate:
    """Run ADK agents behind a crossgate queue: finish, or park until reviewers decide.

    ``queue`` is a ``ReviewQueue`` or any other ``crossgate.adapter.AdapterQueue`` (a ``RemoteQueue`` too).

    ``run`` runs the agent in an ADK ``Runner`` with crossgate's plugin (the agent itself is not changed)
    and returns ``Finished`` (a :class:`RunResult`) or ``Parked``. A parked run's ADK session (its events)
    is kept in the queue's store, never handed to clients. ``resume`` takes a parked run forward once its
    requests are decided, in any process:

        outcome = await Gate(open_queue(), sdk_agent=build_agent()).resume(parked_run_id)

    ``sdk_agent`` is the ADK agent; crossgate's ``agent`` is always a name, here the agent's ``name``.
    ``context`` is the app's context for every call of the gate's runs (a JSON object), which policy
    ``context:`` conditions test; ``run(call_context=...)`` adds to it for one run. It is parked with the run
    and read back on resume, as ``requested_by`` is. ``authority`` pins the authority's public key(s) this
    gate verifies decisions and standing rules with before a tool runs (see
    ``crossgate.adapter.verified_queue`` and docs/security.md).
    """

    framework = FRAMEWORK

    def __init__(
        self,
        queue: AdapterQueue,
        *,
        sdk_agent: BaseAgent | None = None,
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
        sdk_agent: BaseAgent,
        prompt: str,
        *,
        run: str | None = None,
        session: str | None = None,
        user: str = "user",
        requested_by: str | None = None,
        call_context: JsonObject | None = None,
    ) -> Outcome:
        """Run ``sdk_agent`` on ``prompt`` until it finishes or a call needs a reviewer, which parks it.

        ``run`` names the crossgate run (a fresh id when None); ``session`` groups runs for standing rules
        of scope session; ``user`` is ADK's user id. ``requested_by`` is who the run acts for: every request
        of the run carries it, its resumes keep it, and the queue refuses a decision by that person.
        """
        scope = RunScope(run or new_id("run"), session, requested_by, {**self.context, **app_context(call_context)})
        sessions = InMemorySessionService()
        adk_session = await sessions.create_session(app_name=APP, user_id=user)
        message = types.Content(role="user", parts=[types.Part(text=prompt)])
        return await self._drive(sdk_agent, scope, sessions, adk_session, message)

    async def resume(self, parked_run: str, *, sdk_agent: BaseAgent | None = None) -> Outcome:
        """Take a parked run forward once every request of it is decided (or expired); resume it once.

        A run with a request still pending stays parked and is returned as ``Parked`` unchanged. Unknown
        ids raise NotFoundError; a run resumed before raises ParkedRunClaimedError. Who the run acts for
        and its app context are read from the parked run, never from the caller.
        """
        sdk_agent = sdk_agent or self.sdk_agent
        if sdk_agent is None:
            raise ConfigurationError("resume needs the agent: Gate(queue, sdk_agent=...) or resume(..., sdk_agent=...)")
        ready = parked_for_resume(self.queue, parked_run, framework=FRAMEWORK, agent=sdk_agent.name)
        if isinstance(ready, Parked):
            return ready
        # Load before claiming: a session this SDK cannot read must not use up the parked run.
        state = ParkedState.model_validate_json(ready.parked.state)
        sessions, adk_session = await _restore(state)
        # Confirmed natively, all of them: crossgate's plugin applies each decision when ADK hands it the call.
        answers = types.Content(
            role="user",
            parts=[
                types.Part(
                    function_response=types.FunctionResponse(name=CONFIRMATION, id=c, response={"confirmed": True})
                )
                for c in state.confirmations
            ],
        )

        async def body(_claimed: ParkedRun) -> Outcome:
            return await self._drive(sdk_agent, ready.scope, sessions, adk_session, answers)

        return await resume_leased(
            self.queue, ready.parked, owner=self.owner, lease_seconds=self.lease_seconds, body=body
        )

    async def _drive(
        self,
        sdk_agent: BaseAgent,
        scope: RunScope,
        sessions: InMemorySessionService,
        adk_session: Session,
        message: types.Content,
    ) -> Outcome:
        app = App(name=APP, root_agent=sdk_agent, plugins=[Gating(self.queue, sdk_agent.name, scope)])
        runner = Runner(app=app, session_service=sessions)
        events: list[Event] = []
        try:
            async for event in runner.run_async(
                user_id=adk_session.user_id, session_id=adk_session.id, new_message=message
            ):
                events.append(event)
        except Exception as exc:  # ADK wraps a plugin's exception: raise crossgate's own again
            cause = crossgate_cause(exc)
            if cause is not None:
                raise cause from None
            raise
        stored = await sessions.get_session(app_name=APP, user_id=adk_session.user_id, session_id=adk_session.id)
        if stored is None:
            raise AdapterError(f"ADK lost session {adk_session.id} of run {scope.run}")
        confirmations = _confirmations(events, scope)
        if not confirmations:
            return Finished(scope.run, RunResult(stored, events))
        state = ParkedState(user=stored.user_id, session=stored, confirmations=confirmations)
        parked = self.queue.park(
            framework=FRAMEWORK,
            run=scope.run,
            request_ids=scope.request_ids(),
            state=state.model_dump_json(),
            metadata=scope.metadata(sdk_agent.name),
            new_requests=scope.new_requests(),
        )
        return Parked(scope.run, parked.id, parked.request_ids)


def _confirmations(events: Sequence[Event], scope: RunScope) -> list[str]:
    """The ids of the run's ``adk_request_confirmation`` calls, each for a call crossgate asked about."""
    found = []
    for event in events:
        for call in event.get_function_calls():
            if call.name != CONFIRMATION:
                continue
            original = (call.args or {}).get("originalFunctionCall") or {}
            if original.get("id") not in scope.asked:
                raise AdapterError(
                    f"ADK asked to confirm {original.get('name')} without asking crossgate; "
                    "crossgate's policy decides which calls pause"
                )
            found.append(str(call.id))
    return found


async def _restore(state: ParkedState) -> tuple[InMemorySessionService, Session]:
    """The parked session in a fresh in-memory service, its events replayed as ADK appended them."""
    sessions = InMemorySessionService()
    parked = state.session
    adk_session = await sessions.create_session(app_name=APP, user_id=state.user, session_id=parked.id)
    for event in parked.events:
        await sessions.append_event(adk_session, event)
    return sessions, adk_session
