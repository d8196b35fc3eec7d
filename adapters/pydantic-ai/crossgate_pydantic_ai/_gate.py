"""``Gate``: run a Pydantic AI agent behind crossgate, park it on deferred approvals, resume it anywhere."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic_ai import Agent, DeferredToolRequests, DeferredToolResults, ToolApproved, ToolDenied
from pydantic_ai.agent import AgentRunResult
from pydantic_ai.messages import ModelMessage, ModelMessagesTypeAdapter

from crossgate import AdapterError, ApprovalRequest, Approve, ConfigurationError, Edit, ParkedRun
from crossgate.adapter import (
    AdapterQueue,
    AuthorityPin,
    RunScope,
    app_context,
    apply_decision,
    parked_for_resume,
    resume_leased,
    resumer_owner,
    store_call,
    verified_queue,
)
from crossgate.clock import new_id
from crossgate.model import JsonObject
from crossgate.runs import Finished, Parked
from crossgate_pydantic_ai._capabilities import FRAMEWORK
from crossgate_pydantic_ai._excerpt import excerpt_of
from crossgate_pydantic_ai._toolset import Gating

Outcome = Finished[AgentRunResult[Any]] | Parked


class Gate:
    """Run Pydantic AI agents behind a crossgate queue: finish, or park until reviewers decide.

    ``queue`` is a ``ReviewQueue`` or any other ``crossgate.adapter.AdapterQueue``.

    ``run`` wraps the agent's toolset for that run (the agent itself is not changed), and returns
    ``Finished`` or ``Parked``. A parked run's message history is kept in the queue's store, never handed
    to clients. ``resume`` takes a parked run forward once its requests are decided, in any process:

        outcome = await Gate(open_queue(), sdk_agent=build_agent()).resume(parked_run_id)

    ``sdk_agent`` is the SDK's ``Agent``; crossgate's ``agent`` is always a name, here the SDK agent's
    ``name``. A gate bound with ``sdk_agent=`` is a ``crossgate.runs.Resumer`` that ``crossgate worker`` can
    drive. ``context`` is the app's context for every call of the gate's runs (a JSON object), which
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
        sdk_agent: Agent[Any, Any] | None = None,
        owner: str | None = None,
        lease_seconds: float = 300.0,
        context: JsonObject | None = None,
        authority: AuthorityPin = None,
        excerpt: bool = False,
    ) -> None:
        self.queue: AdapterQueue = verified_queue(queue, authority, announce=True)
        self.excerpt = excerpt
        """The app's consent to show reviewers what a run did before it asked (its prompt, the model's texts,
        the calls that returned), with each request it parks."""
        self.sdk_agent = sdk_agent
        self.context: JsonObject = app_context(context)
        self.owner = owner or resumer_owner(FRAMEWORK)
        self.lease_seconds = lease_seconds

    async def run(
        self,
        sdk_agent: Agent[Any, Any],
        prompt: str,
        *,
        run: str | None = None,
        session: str | None = None,
        deps: Any = None,
        requested_by: str | None = None,
        call_context: JsonObject | None = None,
    ) -> Outcome:
        """Run ``sdk_agent`` on ``prompt`` until it finishes or a call needs a reviewer, which parks it.

        ``run`` names the crossgate run (a fresh id when None); ``session`` groups runs for standing rules
        of scope session. ``requested_by`` is who the run acts for: every request of the run carries it,
        its resumes keep it, and the queue refuses a decision by that person. ``deps`` are the agent's
        dependencies (pass them again to ``resume``); ``call_context`` is crossgate's app context.
        """
        name = _agent_name(sdk_agent)
        scope = RunScope(run or new_id("run"), session, requested_by, {**self.context, **app_context(call_context)})
        return await self._drive(sdk_agent, name, scope, prompt=prompt, deps=deps)

    async def resume(self, parked_run: str, *, sdk_agent: Agent[Any, Any] | None = None, deps: Any = None) -> Outcome:
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
        # Load before claiming: a history this SDK cannot read must not use up the parked run.
        history = ModelMessagesTypeAdapter.validate_json(ready.parked.state)
        scope, requests = ready.scope, ready.requests

        async def body(_claimed: ParkedRun) -> Outcome:
            results = await self._results(requests)
            return await self._drive(sdk_agent, name, scope, history=history, results=results, deps=deps)

        return await resume_leased(
            self.queue, ready.parked, owner=self.owner, lease_seconds=self.lease_seconds, body=body
        )

    async def _results(self, requests: Sequence[ApprovalRequest]) -> DeferredToolResults:
        """The SDK's answer for every parked call.

        Approve and edit become ``ToolApproved``, and the tool wrapper checks them just before the body
        runs. A decision that runs nothing (reject, respond, an expired or cancelled request) goes through
        ``crossgate.adapter.apply_decision`` here, which marks it applied and records it once; the model
        reads its message (for respond, as the call's result).
        """
        results = DeferredToolResults()
        for request in requests:
            call_id = request.call.call_id or ""
            resolution = request.resolution()
            if isinstance(resolution, Approve):
                results.approvals[call_id] = ToolApproved()
                continue
            if isinstance(resolution, Edit):
                results.approvals[call_id] = ToolApproved(override_args=dict(resolution.args))
                continue
            if resolution is None:  # never reached: an open request keeps the run parked
                raise AdapterError(f"request {request.id} has no decision to resume with")
            applied = await apply_decision(self.queue, request, None, actor=FRAMEWORK)
            if applied.responded:
                await store_call(self.queue.record_outcome, request, ran=False, result=applied.message)
                results.calls[call_id] = applied.message
            else:
                results.approvals[call_id] = ToolDenied(applied.message)
        return results

    async def _drive(
        self,
        sdk_agent: Agent[Any, Any],
        name: str,
        scope: RunScope,
        *,
        prompt: str | None = None,
        history: list[ModelMessage] | None = None,
        results: DeferredToolResults | None = None,
        deps: Any = None,
    ) -> Outcome:
        result = await sdk_agent.run(
            prompt,
            message_history=history,
            deferred_tool_results=results,
            output_type=_with_deferred(sdk_agent.output_type),
            deps=deps,
            capabilities=[Gating(self.queue, name, scope)],
        )
        output = result.output
        if not isinstance(output, DeferredToolRequests):
            return Finished(scope.run, result)
        if output.calls:
            tools = sorted({c.tool_name for c in output.calls})
            raise AdapterError(
                f"the run deferred external calls ({', '.join(tools)}); crossgate answers approvals only"
            )
        asked = []
        for part in output.approvals:
            submission = scope.asked.get(part.tool_call_id)
            if submission is None or submission.request is None:
                raise AdapterError(f"the SDK paused {part.tool_name} ({part.tool_call_id}) without asking crossgate")
            asked.append(submission)
        new_requests = [s.request for s in asked if s.request is not None and not s.stored]
        if self.excerpt and (shown := excerpt_of(result.all_messages())) is not None:
            new_requests = [r.model_copy(update={"excerpt": shown}) for r in new_requests]
        parked = self.queue.park(
            framework=FRAMEWORK,
            run=scope.run,
            request_ids=[s.request.id for s in asked if s.request is not None],
            state=result.all_messages_json().decode(),
            metadata=scope.metadata(name),
            new_requests=new_requests,
        )
        return Parked(scope.run, parked.id, parked.request_ids)


def _with_deferred(output_type: Any) -> Any:
    """The agent's output types plus ``DeferredToolRequests``, so a gated call pauses the run."""
    types = list(output_type) if isinstance(output_type, (list, tuple)) else [output_type]
    return types if DeferredToolRequests in types else [*types, DeferredToolRequests]


def _agent_name(sdk_agent: Agent[Any, Any]) -> str:
    if not sdk_agent.name:
        raise ConfigurationError("give the agent a name (Agent(..., name=...)): parked runs resume by it")
    return sdk_agent.name
