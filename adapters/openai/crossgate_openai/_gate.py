"""``Gate``: run an OpenAI Agents SDK agent behind crossgate, park it on interruptions, resume it anywhere."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from agents import (
    Agent,
    AgentsException,
    FunctionTool,
    RunConfig,
    Runner,
    RunResult,
    RunResultStreaming,
    RunState,
    ToolApprovalItem,
)

from crossgate import (
    AdapterError,
    ApprovalRequest,
    Approve,
    ConfigurationError,
    Edit,
    FingerprintMismatchError,
    InvalidArgumentsError,
    ParkedRun,
    Reject,
    Respond,
    VerdictKind,
)
from crossgate.adapter import (
    AdapterQueue,
    AuthorityPin,
    app_context,
    apply_decision,
    resume_leased,
    resumer_owner,
    verified_queue,
)
from crossgate.clock import new_id
from crossgate.model import JsonObject
from crossgate.runs import Finished, Parked
from crossgate_openai._capabilities import CAPABILITIES, FRAMEWORK
from crossgate_openai._excerpt import excerpt_of
from crossgate_openai._scope import RunScope, openai_request_id, run_scope
from crossgate_openai._tools import (
    GateBinding,
    GatedInvoker,
    deny_message,
    inspect_args,
    install,
    malformed_message,
    tool_call,
)

SdkResult = RunResult | RunResultStreaming
Outcome = Finished[SdkResult] | Parked


@dataclass(frozen=True, slots=True)
class _Ask:
    """An interruption a reviewer must decide: its request, and whether the queue has stored it yet."""

    request: ApprovalRequest
    stored: bool


@dataclass(frozen=True, slots=True)
class _Answer:
    """An interruption crossgate answers without a reviewer: approve, or reject with ``message``."""

    approve: bool
    message: str | None = None


class Gate:
    """Run agents behind a crossgate ``ReviewQueue``: finish, or park until reviewers decide, then resume.

    ``run`` gates the agent graph (see :meth:`install`), runs it, and returns ``Finished`` or ``Parked``.
    The SDK's ``RunState`` of a parked run is kept in the queue's store, never handed to clients.
    ``resume`` takes a parked run forward once its requests are decided, in any process:

        gate = Gate(open_queue(), sdk_agent=build_agent())   # the same agent names and tools as the run's
        outcome = await gate.resume(parked_run_id)

    ``sdk_agent`` is the SDK's ``Agent`` a run starts at (the root of its agent graph); crossgate's
    ``agent`` is always a name, here each SDK agent's own ``name``. A gate bound with ``sdk_agent=`` is a
    ``crossgate.runs.Resumer`` that ``crossgate worker`` can drive; an unbound gate takes ``sdk_agent=`` on
    each ``resume`` call.

    ``context`` is the app's context for every call of the gate's runs (a JSON object, say
    ``{"tenant": "acme"}``), which policy ``context:`` conditions test, as ``crossgate_claude.Gate(context=)``;
    ``run(call_context=...)`` adds to it for one run. It is parked with the run and read back on resume.

    ``authority`` pins the authority's public key(s) this gate verifies decisions and standing rules with
    before a tool runs (``TrustedKeys``, a ``PublicKey``, an ``Authority``, a pin file's path or the pin
    text; default: ``$CROSSGATE_AUTHORITY_PUBKEY`` or ``$CROSSGATE_AUTHORITY_PUBKEY_FILE``); see
    ``crossgate.adapter.verified_queue`` and docs/security.md.

    ``excerpt=True`` is the app's consent to show reviewers what the run did before it asked: the run's
    input, the model's last messages and the calls that ran, size-capped (``crossgate.adapter.run_excerpt``)
    and stored with each request the run parks with. Off by default: the excerpt may hold user data.
    """

    framework = FRAMEWORK

    def __init__(
        self,
        queue: AdapterQueue,
        *,
        sdk_agent: Agent[Any] | None = None,
        run_config: RunConfig | None = None,
        max_turns: int | None = None,
        owner: str | None = None,
        lease_seconds: float = 300.0,
        context: JsonObject | None = None,
        authority: AuthorityPin = None,
        excerpt: bool = False,
    ) -> None:
        self.queue: AdapterQueue = verified_queue(queue, authority, announce=True)
        self.excerpt = excerpt
        self.context: JsonObject = app_context(context)
        self.sdk_agent = sdk_agent
        self.run_config = run_config
        self.max_turns = max_turns
        self.owner = owner or resumer_owner(FRAMEWORK)
        self.lease_seconds = lease_seconds
        self._binding = GateBinding(self.queue)
        if sdk_agent is not None:
            self.install(sdk_agent)

    def install(self, sdk_agent: Agent[Any]) -> Agent[Any]:
        """Gate every function tool reachable from ``sdk_agent`` (tools, ``as_tool`` agents, handoffs); idempotent.

        The agents' ``tools`` lists are replaced by gated copies; the tool objects passed in stay as they were.
        """
        install(sdk_agent, self._binding)
        return sdk_agent

    # running ------------------------------------------------------------------------------------
    async def run(
        self,
        sdk_agent: Agent[Any],
        input: str | list[Any],
        *,
        run: str | None = None,
        wait: float = 0.0,
        context: Any = None,
        stream: bool = False,
        session: str | None = None,
        requested_by: str | None = None,
        call_context: JsonObject | None = None,
    ) -> Outcome:
        """Run ``sdk_agent`` on ``input``; wait up to ``wait`` seconds for reviewers, then park if still pending.

        ``run`` names the crossgate run (a fresh id when None); ``session`` groups runs for standing rules
        of scope session. ``requested_by`` is who the run acts for: every request of the run carries it,
        including those of later resumes (it is parked with the run), and the queue refuses a decision
        by that reviewer. ``context`` is the SDK's run context (the tools' ``RunContextWrapper.context``);
        ``call_context`` is crossgate's: the app's context for every call of this run (over the gate's
        ``context``), kept with the parked run like ``requested_by``. ``stream=True`` runs through
        ``Runner.run_streamed`` and drains its events.
        """
        run_context = {**self.context, **app_context(call_context)}
        self.install(sdk_agent)
        scope = RunScope(run or new_id("run"), session, requested_by, run_context)
        return await self._drive(sdk_agent, input, scope, wait=wait, context=context, stream=stream)

    async def resume(
        self,
        parked_run: str,
        *,
        sdk_agent: Agent[Any] | None = None,
        wait: float = 0.0,
        stream: bool = False,
        context: Any = None,
    ) -> Outcome:
        """Take a parked run forward once every request of it is decided (or expired); resume it once.

        A run with a request still pending (after waiting up to ``wait`` seconds) stays parked and is
        returned as ``Parked`` unchanged. Unknown ids raise NotFoundError; a run resumed before raises
        ParkedRunClaimedError, and nothing runs twice. The SDK stores a JSON mapping context with the
        state; any other context object must be passed again as ``context``. Who the run acts for
        (``run(..., requested_by=...)``) is read from the parked run, never from the caller.
        """
        sdk_agent = sdk_agent or self.sdk_agent
        if sdk_agent is None:
            raise ConfigurationError(
                "resume needs the agent graph: Gate(queue, sdk_agent=...) or resume(..., sdk_agent=...)"
            )
        parked = self.queue.get_parked(parked_run)
        if parked.framework != FRAMEWORK:
            raise ConfigurationError(f"parked run {parked.id} belongs to {parked.framework}, not {FRAMEWORK}")
        if parked.metadata.get("agent") != sdk_agent.name:
            raise ConfigurationError(
                f"parked run {parked.id} started at agent {parked.metadata.get('agent')!r}, not {sdk_agent.name!r}"
            )
        self.install(sdk_agent)
        self.queue.expire_overdue()
        await self._wait_for(parked.request_ids, wait)
        requests = [self.queue.get(r) for r in parked.request_ids]
        if any(r.is_open for r in requests):
            return Parked(parked.run, parked.id, parked.request_ids)
        # Load before claiming: a state this agent graph cannot restore must not use up the parked run.
        if context is None:
            state = await RunState.from_string(sdk_agent, parked.state)
        else:
            state = await RunState.from_string(sdk_agent, parked.state, context_override=context)
        parked_context = parked.metadata.get("context")
        scope = RunScope(
            parked.run,
            _text(parked.metadata.get("session")),
            _text(parked.metadata.get("requested_by")),
            dict(parked_context) if isinstance(parked_context, dict) else {},
            resumed=True,
        )

        async def body(_claimed: ParkedRun) -> Outcome:
            await self._apply_decisions(state, scope, requests)
            return await self._drive(
                sdk_agent, state, scope, wait=wait, context=None, stream=stream, already_answered=parked.request_ids
            )

        # The lease must outlast an inline wait, or another resumer could take the run while this one waits.
        lease = self.lease_seconds + max(wait, 0.0)
        return await resume_leased(self.queue, parked, owner=self.owner, lease_seconds=lease, body=body)

    # the loop -----------------------------------------------------------------------------------
    async def _drive(
        self,
        sdk_agent: Agent[Any],
        start: Any,
        scope: RunScope,
        *,
        wait: float,
        context: Any,
        stream: bool,
        already_answered: Sequence[str] = (),
    ) -> Outcome:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait
        answered: set[str] = set(already_answered)
        while True:
            result = await self._run_sdk(sdk_agent, start, scope, context=context, stream=stream)
            if not result.interruptions:
                return Finished(scope.run, result)
            state = result.to_state()
            # Without an inline wait, new requests are stored with the parked run in one transaction;
            # with one, they are stored now so reviewers can answer while this call waits.
            budget = deadline - loop.time()
            asks: list[_Ask] = []
            # The result's own items, as the SDK documents (approve(result.interruptions[0])): the state's
            # get_interruptions() would copy each one, and the state holds these very items.
            for item in result.interruptions:
                answer = self._translate(item, scope, store=budget > 0)
                if isinstance(answer, _Ask) and answer.request.id in answered:
                    # The SDK asks again for a call it was given an answer for: never loop, fail closed.
                    raise AdapterError(
                        f"the SDK asked again for request {answer.request.id} after its decision was applied"
                    )
                if isinstance(answer, _Ask):
                    asks.append(answer)
                elif answer.approve:
                    state.approve(item)
                else:
                    state.reject(item, rejection_message=answer.message)
            requests = [a.request for a in asks]
            request_ids = [r.id for r in requests]
            if budget > 0:
                await self._wait_for(request_ids, budget)
                requests = [self.queue.get(r) for r in request_ids]
            # Without a wait, the requests just submitted are current enough: one decided a moment
            # later is parked and at once ready, the same outcome one step later.
            if any(r.is_open for r in requests):
                new = [a.request for a in asks if not a.stored]
                if self.excerpt and (shown := excerpt_of(result)) is not None:
                    new = [r.model_copy(update={"excerpt": shown}) for r in new]
                return self._park(sdk_agent, state, scope, request_ids, new, stream=stream)
            await self._apply_decisions(state, scope, requests)
            answered.update(request_ids)
            start = state

    async def _run_sdk(
        self, sdk_agent: Agent[Any], start: Any, scope: RunScope, *, context: Any, stream: bool
    ) -> SdkResult:
        options: dict[str, Any] = {"run_config": self.run_config}
        if context is not None:
            options["context"] = context
        if self.max_turns is not None:
            options["max_turns"] = self.max_turns
        result: SdkResult
        with run_scope(scope):
            try:
                if stream:
                    result = streamed = Runner.run_streamed(sdk_agent, start, **options)
                    async for _event in streamed.stream_events():
                        pass
                else:
                    result = await Runner.run(sdk_agent, start, **options)
            except AgentsException:
                # The SDK wraps a store error of a gated tool's check ("Error running tool ..."): raise
                # crossgate's own error, which says what failed.
                if scope.failures:
                    raise scope.failures[0] from None
                raise
        if scope.failures:
            # A nested as_tool run can swallow it, and its approval then comes back as if never answered.
            raise scope.failures[0]
        return result

    def _translate(self, item: ToolApprovalItem, scope: RunScope, *, store: bool) -> _Ask | _Answer:
        """The request of an interruption a reviewer must decide, or crossgate's own answer to it.

        A new request is stored now when ``store`` is true, else left for ``_park`` to store with the run.
        """
        agent_name = item.agent.name
        call_id = str(item.call_id)
        tool = _gated_tool(item)
        if tool is None:
            return _Answer(False, f"crossgate did not run {item.name}: it is not a function tool crossgate gates.")
        try:
            args = inspect_args(item.arguments, tool.params_json_schema)
        except InvalidArgumentsError as exc:
            message = malformed_message(tool.name, exc)
            self.queue.record_outcome(
                None, ran=False, error=message, call=tool_call(tool.name, agent_name, {}, call_id, scope)
            )
            return _Answer(False, message)
        call = tool_call(tool.name, agent_name, args, call_id, scope)
        submit = self.queue.submit if store else self.queue.prepare
        try:
            submission = submit(
                call,
                args_schema=tool.params_json_schema,
                description=tool.description or None,
                requested_by=scope.requested_by,
                capabilities=CAPABILITIES,
                request_id=openai_request_id(scope.run, agent_name, call_id),
            )
        except FingerprintMismatchError as exc:
            return _Answer(False, f"crossgate did not run {tool.name}: {exc}")
        if submission.request is not None:
            return _Ask(submission.request, submission.stored)
        if submission.verdict.kind is VerdictKind.ALLOW:
            return _Answer(True)
        return _Answer(False, deny_message(tool.name, submission.verdict))

    async def _apply_decisions(
        self, state: RunState[Any, Any], scope: RunScope, requests: Sequence[ApprovalRequest]
    ) -> None:
        """Hand each decided request to the SDK's state (approve, or reject with its text)."""
        by_id = {r.id: r for r in requests}
        for item in state.get_interruptions():
            request = by_id.get(openai_request_id(scope.run, item.agent.name, str(item.call_id)))
            if request is not None:
                await self._apply(state, item, request, scope)

    async def _apply(
        self, state: RunState[Any, Any], item: ToolApprovalItem, request: ApprovalRequest, scope: RunScope
    ) -> None:
        resolution = request.resolution()
        if isinstance(resolution, (Approve, Edit, Respond)):
            # Edit and respond are approved at the SDK level; the gated tool applies them through the
            # kit's check, which substitutes the arguments or the content.
            state.approve(item)
            scope.decided[request.id] = request
            return
        if isinstance(resolution, Reject):
            # The SDK rejects natively and runs nothing whatever crossgate says (no arguments to bind).
            applied = await apply_decision(self.queue, request, None, actor=FRAMEWORK)
            state.reject(item, rejection_message=applied.message)

    def _park(
        self,
        sdk_agent: Agent[Any],
        state: RunState[Any, Any],
        scope: RunScope,
        request_ids: list[str],
        new_requests: Sequence[ApprovalRequest],
        *,
        stream: bool,
    ) -> Parked:
        metadata: dict[str, Any] = {
            "agent": sdk_agent.name,
            "stream": stream,
            "session": scope.session,
            "requested_by": scope.requested_by,
            "context": scope.context,
        }
        parked: ParkedRun = self.queue.park(
            framework=FRAMEWORK,
            run=scope.run,
            request_ids=request_ids,
            state=state.to_string(),
            metadata=metadata,
            new_requests=new_requests,
        )
        return Parked(scope.run, parked.id, parked.request_ids)

    async def _wait_for(self, request_ids: Sequence[str], budget: float) -> None:
        if budget <= 0:
            return
        loop = asyncio.get_running_loop()
        deadline = loop.time() + budget
        for request_id in request_ids:
            remaining = deadline - loop.time()
            if remaining <= 0:
                return
            await self.queue.wait(request_id, remaining)


def _gated_tool(item: ToolApprovalItem) -> FunctionTool | None:
    for tool in item.agent.tools:
        if (
            isinstance(tool, FunctionTool)
            and tool.name == item.tool_name
            and isinstance(tool.on_invoke_tool, GatedInvoker)
        ):
            return tool
    return None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None
