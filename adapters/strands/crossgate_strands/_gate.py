"""``Gate``: run a Strands agent behind crossgate, park it on an interrupt, resume it in any process."""

from __future__ import annotations

import json
from typing import Any

from strands import Agent, Snapshot
from strands.agent import AgentResult
from strands.types.session import decode_bytes_values, encode_bytes_values

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
from crossgate_strands._capabilities import FRAMEWORK
from crossgate_strands._hook import ACTIVE, INTERRUPT, Drive, install

Outcome = Finished[AgentResult] | Parked


class Gate:
    """Run Strands agents behind a crossgate queue: finish, or park until reviewers decide.

    ``queue`` is a ``ReviewQueue`` or any other ``crossgate.adapter.AdapterQueue`` (a ``RemoteQueue`` too).

    ``run`` installs crossgate's ``BeforeToolCallEvent`` hook on the agent (once; a gated agent called
    outside the gate runs no tool) and returns ``Finished`` (the SDK's ``AgentResult``) or ``Parked``. A
    parked run's Strands snapshot (messages, state, interrupt state) is kept in the queue's store, never
    handed to clients. ``resume`` loads it into the agent it is given and takes the run forward once its
    requests are decided, in any process:

        outcome = await Gate(open_queue(), sdk_agent=build_agent()).resume(parked_run_id)

    ``sdk_agent`` is the Strands ``Agent``; crossgate's ``agent`` is always a name, here the agent's
    ``name``. ``context`` is the app's context for every call of the gate's runs (a JSON object), which
    policy ``context:`` conditions test; ``run(call_context=...)`` adds to it for one run. It is parked
    with the run and read back on resume, as ``requested_by`` is. ``authority`` pins the authority's public
    key(s) this gate verifies decisions and standing rules with before a tool runs (see
    ``crossgate.adapter.verified_queue`` and docs/security.md).
    """

    framework = FRAMEWORK

    def __init__(
        self,
        queue: AdapterQueue,
        *,
        sdk_agent: Agent | None = None,
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
        sdk_agent: Agent,
        prompt: str,
        *,
        run: str | None = None,
        session: str | None = None,
        requested_by: str | None = None,
        call_context: JsonObject | None = None,
    ) -> Outcome:
        """Run ``sdk_agent`` on ``prompt`` until it finishes or a call needs a reviewer, which parks it.

        ``run`` names the crossgate run (a fresh id when None); ``session`` groups runs for standing rules
        of scope session. ``requested_by`` is who the run acts for: every request of the run carries it,
        its resumes keep it, and the queue refuses a decision by that person.
        """
        scope = RunScope(run or new_id("run"), session, requested_by, {**self.context, **app_context(call_context)})
        return await self._drive(sdk_agent, scope, prompt)

    async def resume(self, parked_run: str, *, sdk_agent: Agent | None = None) -> Outcome:
        """Take a parked run forward once every request of it is decided (or expired); resume it once.

        The parked snapshot replaces ``sdk_agent``'s conversation. A run with a request still pending stays
        parked and is returned as ``Parked`` unchanged. Unknown ids raise NotFoundError; a run resumed
        before raises ParkedRunClaimedError. Who the run acts for and its app context are read from the
        parked run, never from the caller.
        """
        sdk_agent = sdk_agent or self.sdk_agent
        if sdk_agent is None:
            raise ConfigurationError("resume needs the agent: Gate(queue, sdk_agent=...) or resume(..., sdk_agent=...)")
        ready = parked_for_resume(self.queue, parked_run, framework=FRAMEWORK, agent=sdk_agent.name)
        if isinstance(ready, Parked):
            return ready
        # Load before claiming: a snapshot this SDK cannot read must not use up the parked run.
        snapshot, interrupts = _load(ready.parked)
        # Answered natively, all of them; what the answer says is never read: crossgate's hook applies
        # each decision when Strands hands it the call again.
        answers: list[Any] = [
            {"interruptResponse": {"interruptId": i, "response": {"crossgate": "decided"}}} for i in interrupts
        ]

        async def body(_claimed: ParkedRun) -> Outcome:
            sdk_agent.load_snapshot(snapshot)
            return await self._drive(sdk_agent, ready.scope, answers)

        return await resume_leased(
            self.queue, ready.parked, owner=self.owner, lease_seconds=self.lease_seconds, body=body
        )

    async def _drive(self, sdk_agent: Agent, scope: RunScope, prompt: Any) -> Outcome:
        install(sdk_agent)
        token = ACTIVE.set(Drive(self.queue, sdk_agent.name, scope))
        try:
            result = await sdk_agent.invoke_async(prompt)
        except Exception as exc:  # Strands wraps a hook's exception (EventLoopException): raise crossgate's own
            cause = crossgate_cause(exc)
            if cause is not None:
                raise cause from None
            raise
        finally:
            ACTIVE.reset(token)
        if result.stop_reason != "interrupt":
            return Finished(scope.run, result)
        asked = {s.request.id for s in scope.asked.values() if s.request is not None}
        for interrupt in result.interrupts or []:
            reason = interrupt.reason if isinstance(interrupt.reason, dict) else {}
            if interrupt.name != INTERRUPT or reason.get("request") not in asked:
                raise AdapterError(
                    f"Strands paused on interrupt {interrupt.name!r} that crossgate did not raise; "
                    "crossgate's policy decides which calls pause (another hook's interrupts are not supported)"
                )
        state = {
            "snapshot": encode_bytes_values(sdk_agent.take_snapshot(preset="session").to_dict()),
            "interrupts": [i.id for i in result.interrupts or []],
        }
        parked = self.queue.park(
            framework=FRAMEWORK,
            run=scope.run,
            request_ids=scope.request_ids(),
            state=json.dumps(state),
            metadata=scope.metadata(sdk_agent.name),
            new_requests=scope.new_requests(),
        )
        return Parked(scope.run, parked.id, parked.request_ids)


def _load(parked: ParkedRun) -> tuple[Snapshot, list[str]]:
    """The parked snapshot and the ids of the interrupts it waits on."""
    try:
        state = json.loads(parked.state)
        snapshot = Snapshot.from_dict(decode_bytes_values(state["snapshot"]))
        snapshot.validate()
        interrupts = [str(i) for i in state["interrupts"]]
    except Exception as exc:  # a store holding something else: refuse before the run is claimed
        raise AdapterError(f"parked run {parked.id} holds no Strands snapshot this adapter can read: {exc}") from exc
    return snapshot, interrupts
