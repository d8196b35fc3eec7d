"""Compile crossgate's policy into LangChain's ``HumanInTheLoopMiddleware`` for a tool list.

:func:`crossgate_middleware` returns two middlewares for ``create_agent(middleware=...)``, in this order:

1. ``HumanInTheLoopMiddleware(interrupt_on=...)`` (``ReviewInGuard``, in batched mode
   ``BatchedReviewInGuard``: the same without a tool-call hook of its own, and in per-call mode without
   its after-model graph step, which does nothing in that mode): every tool gets an ``InterruptOnConfig``
   whose ``when`` pauses exactly the calls the policy sends to a person
   (verdict ask, or a call that already has a crossgate request, so the answer is the same on resume).
   ``when`` returning False means "run" to the middleware, so it is False for allow **and** deny;
2. ``CrossgateGuard``, which wraps every tool execution: a denied call never runs (the model gets the
   policy's reason); a reviewed call runs only if crossgate recorded an approve or edit for these very
   arguments and this very tool, marked applied exactly once right before the tool runs.

The first one installs no tool-call hook of its own: the guard runs its tool-call step (LangChain's own
``HumanInTheLoopMiddleware.wrap_tool_call``, unchanged: the per-call pause, or a batched edit) and then its
checks in one hook. Each hook is a layer LangChain wraps in a trace span, which in an async run costs two
thread hops per tool call even with tracing off: one layer instead of two is most of what crossgate used
to add to an allowed call. Use the two together, as returned: the review pauses only through its guard,
and a guard alone refuses the calls the policy asks about instead of pausing them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Literal

try:
    from langchain.agents.middleware import AgentMiddleware, HumanInTheLoopMiddleware, InterruptOnConfig
    from langchain.agents.middleware.types import ToolCallRequest
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ImportError("crossgate_middleware needs LangChain: pip install 'crossgate-langgraph[langchain]'") from exc

from langchain_core.messages import BaseMessage, ToolMessage
from langchain_core.tools import BaseTool
from langgraph.config import get_config
from langgraph.types import Command

from crossgate import (
    ApprovalRequest,
    ConflictError,
    DecisionKind,
    InvalidArgumentsError,
    Reject,
    RequestCancelledError,
    RequestExpiredError,
    RequestStatus,
    Respond,
    ToolCall,
    Verdict,
    VerdictKind,
)
from crossgate.adapter import AdapterQueue, AuthorityPin, apply_decision_sync, find_request, verified_queue
from crossgate.model import ALL_DECISIONS, JsonObject
from crossgate.policy import Policy
from crossgate.queue import REQUESTED_BY
from crossgate_langgraph._approval import requested_by_in
from crossgate_langgraph._arguments import args_json_schema, refusal, tool_args
from crossgate_langgraph._calls import (
    AGENT_FRAMEWORK,
    PausedCall,
    agent_call,
    agent_request_id,
    graph_ns_of,
    remember_judged,
    turn_of,
)
from crossgate_langgraph._origin import agent_in, context_in

ToolResult = ToolMessage | Command[Any]
InterruptMode = Literal["per_call", "batched"]


def crossgate_middleware(
    queue: AdapterQueue,
    tools: Sequence[BaseTool],
    *,
    interrupt_mode: InterruptMode = "per_call",
    agent: str | None = None,
    context: JsonObject | None = None,
    authority: AuthorityPin = None,
) -> list[AgentMiddleware[Any, Any]]:
    """Middlewares that gate ``tools`` by crossgate's policy; list them first in ``create_agent``.

    ``per_call`` (recommended, and the default here) pauses once per gated call and lets LangGraph
    check each answer before saving it; ``batched`` pauses once per model turn. ``agent`` names the
    agent in the neutral calls (default: the gate's name for the run, else ``create_agent(name=...)``);
    if given, give ``Gate(agent=...)`` the same name. ``context`` is app context (a tenant, say) that
    policy rules can test, merged with ``Gate.run(context=...)``. ``authority`` pins the public key(s)
    decisions and standing rules are verified with before a tool runs, as ``Gate(authority=...)`` does
    (either one pins the queue object for both).
    """
    if authority is not None:
        verified_queue(queue, authority)  # pins this queue object: the guard's checks find the keys
    origin = _Origin(agent, dict(context or {}), {tool.name: tool for tool in tools})
    interrupt_on: dict[str, bool | InterruptOnConfig] = {}
    for tool in tools:
        interrupt_on[tool.name] = InterruptOnConfig(
            allowed_decisions=[k.value for k in possible_decisions(queue.policy, tool.name, agent)],
            description=_describe(queue, origin, tool),
            when=_when(queue, origin),
        )
    review: HumanInTheLoopMiddleware[Any, Any, Any]
    if interrupt_mode == "batched":
        review = BatchedReviewInGuard(interrupt_on=interrupt_on, interrupt_mode="batched")
    else:
        review = ReviewInGuard(interrupt_on=interrupt_on, interrupt_mode="per_call")
    return [review, CrossgateGuard(queue, agent=agent, context=context, review=review)]


class PerCallReview(HumanInTheLoopMiddleware):
    """LangChain's ``HumanInTheLoopMiddleware`` in per-call mode, without its after-model step.

    In per-call mode that step returns at once (the pause happens around each tool call), but as a
    hook it is a node of the agent's graph: one more step, with its checkpoint, on every model turn.
    """

    after_model = AgentMiddleware.after_model
    aafter_model = AgentMiddleware.aafter_model


class ReviewInGuard(PerCallReview):
    """``PerCallReview`` whose pause runs inside ``CrossgateGuard``'s tool-call hook: it installs no hook itself.

    Listed in ``create_agent`` for its configuration (``interrupt_on``) and its state key; the guard it
    was given to runs ``HumanInTheLoopMiddleware.wrap_tool_call`` for it, right before its own checks.
    Without that guard it pauses nothing (and without a guard nothing is denied either).
    """

    wrap_tool_call = AgentMiddleware.wrap_tool_call
    awrap_tool_call = AgentMiddleware.awrap_tool_call


class BatchedReviewInGuard(HumanInTheLoopMiddleware):
    """Batched ``HumanInTheLoopMiddleware`` whose tool-call step (applying an edit) runs in ``CrossgateGuard``'s hook.

    Its after-model step (the batched pause) stays a step of the agent's graph, as LangChain's own.
    """

    wrap_tool_call = AgentMiddleware.wrap_tool_call
    awrap_tool_call = AgentMiddleware.awrap_tool_call


@dataclass(frozen=True, slots=True)
class _Origin:
    """The agent name and app context the middleware was given (None and empty: from the run), and its tools."""

    agent: str | None
    context: JsonObject
    tools: Mapping[str, BaseTool] = field(default_factory=dict)
    """By name: batched mode asks ``when`` before the tool step, with no tool in the request."""


def possible_decisions(policy: Policy, tool: str, agent: str | None = None) -> tuple[DecisionKind, ...]:
    """Every decision an ask verdict for ``tool`` may allow (the queue narrows it per call)."""
    found = policy.rules_for_tool(tool, framework=AGENT_FRAMEWORK, agent=agent)
    allowed: set[DecisionKind] = {DecisionKind.APPROVE, DecisionKind.REJECT}
    for rule in found.rules:
        if rule.verdict is VerdictKind.ASK:
            allowed.update(rule.allowed_decisions)
    if found.default_reachable and policy.default is VerdictKind.ASK:
        allowed.update(policy.default_allowed_decisions)
    return tuple(k for k in ALL_DECISIONS if k in allowed)


def _thread_of(config: Any) -> str:
    thread = (config or {}).get("configurable", {}).get("thread_id")
    if thread is None:
        raise ConflictError("a gated agent needs a thread: compile with a checkpointer and pass a thread_id")
    return str(thread)


@dataclass(frozen=True, slots=True)
class _Found:
    """One tool call request as crossgate identifies it: :func:`_call_for`'s answer."""

    call: ToolCall
    request_id: str
    siblings: tuple[str, ...]
    """The request ids of every call of the same model turn (the call's own among them)."""
    refused: str | None
    """Why the tool would refuse the arguments; None: it takes them."""
    turn: int
    graph_ns: str


def _call_for(request: ToolCallRequest, origin: _Origin, *, turn_ids: bool = True) -> _Found:
    """How crossgate identifies one tool call request: its neutral call, request id, turn and refusal.

    The call's arguments are those the tool will receive (its schema converts them); when the tool
    would refuse them, the call carries none and the refusal says why. Without ``turn_ids`` the turn's
    ids are the call's own only. Each id is hashed once (a call's own id is one of its turn's).
    """
    tool_call = request.tool_call
    config = getattr(request.runtime, "config", None)
    thread = _thread_of(config)
    graph_ns = graph_ns_of(config)
    call_id = str(tool_call.get("id") or "")
    messages: Sequence[BaseMessage] = request.state.get("messages", []) if request.state else []
    turn, message = turn_of(messages, call_id)
    if turn_ids:
        ids = {
            i: agent_request_id(thread, turn, i, graph_ns)
            for i in dict.fromkeys(str(c.get("id") or "") for c in message.tool_calls)
        }
        own, siblings = ids[call_id], tuple(ids.values())
    else:
        own = agent_request_id(thread, turn, call_id, graph_ns)
        siblings = (own,)
    tool = request.tool or origin.tools.get(tool_call["name"])
    try:
        args, refused = tool_args(tool, tool_call["args"]), None
    except InvalidArgumentsError as exc:
        args, refused = {}, refusal(tool_call["name"], exc)
    # Who the run acts for is part of the call, so this predicate and the gate's submission agree.
    person = requested_by_in(config)
    call = agent_call(
        tool_call["name"],
        args,
        call_id=call_id,
        thread=thread,
        agent=agent_in(config, origin.agent),
        context=context_in(config, origin.context),
        requested_by=person,
    )
    return _Found(call, own, siblings, refused, turn, graph_ns)


@dataclass(frozen=True, slots=True)
class _Judged:
    """What ``when`` found for one tool call request, for ``CrossgateGuard`` to act on without judging again.

    Taken only by the guard handed that very request object (per-call mode hands it on unchanged when
    nobody is asked; an edited call is another object, and is judged afresh).
    """

    request: ToolCallRequest
    call: ToolCall
    request_id: str
    refused: str | None
    reviewed: ApprovalRequest | None
    """The call's request, read by ``when`` a moment ago; None: it has none."""
    verdict: Verdict | None = None
    """The policy's verdict when ``when`` evaluated it (no request in the turn), else None."""


_JUDGED: ContextVar[_Judged | None] = ContextVar("crossgate_langchain_judged", default=None)


def _when(queue: AdapterQueue, origin: _Origin) -> Callable[[ToolCallRequest], bool]:
    def when(request: ToolCallRequest) -> bool:
        found = _call_for(request, origin)
        call, request_id, siblings, refused = found.call, found.request_id, found.siblings, found.refused
        # Once a turn has paused, the calls it paused for are fixed: on resume the middleware asks this
        # predicate again, and a different answer (a standing rule added or revoked meanwhile) would
        # skip a reviewer's answer or, in batched mode, misalign the decisions with the calls.
        # The call's own request first: when it has one, the others need not be read.
        reviewed = find_request(queue, request_id)
        if reviewed is not None or any(find_request(queue, r) is not None for r in siblings if r != request_id):
            _JUDGED.set(_Judged(request, call, request_id, refused, reviewed))
            return reviewed is not None
        if refused is not None:
            _JUDGED.set(_Judged(request, call, request_id, refused, None))
            return False  # nothing to review: CrossgateGuard refuses the call and tells the model why
        verdict = queue.evaluate(call)
        if verdict.kind is not VerdictKind.ASK:
            _JUDGED.set(_Judged(request, call, request_id, None, None, verdict))
            return False
        # The gate submits it with the agent and context judged here; a subagent's call only from here.
        tool = request.tool or origin.tools.get(call.tool)
        model_args = dict(request.tool_call["args"])
        remember_judged(
            PausedCall(request_id, call, found.graph_ns, found.turn, call.tool, model_args, args_json_schema(tool))
        )
        return True

    return when


def _describe(queue: AdapterQueue, origin: _Origin, tool: BaseTool) -> Callable[..., str]:
    def describe(tool_call: Any, state: Any, runtime: Any) -> str:
        try:
            config = get_config()
        except RuntimeError:
            config = None
        try:
            thread = _thread_of(config)
        except ConflictError:
            thread = None
        person = requested_by_in(config)
        try:
            args = tool_args(tool, tool_call["args"])
        except InvalidArgumentsError:
            return f"crossgate asks about {tool_call['name']}"
        call = ToolCall(
            framework=AGENT_FRAMEWORK,
            tool=tool_call["name"],
            args=args,
            run=thread,
            agent=agent_in(config, origin.agent),
            context={**context_in(config, origin.context), **({REQUESTED_BY: person} if person is not None else {})},
        )
        verdict = queue.evaluate(call)
        return verdict.description or verdict.reason or f"crossgate asks about {call.tool}"

    return describe


class CrossgateGuard(AgentMiddleware[Any, Any]):
    """Runs a tool only when crossgate allows it: by policy, or by a recorded approve or edit of these arguments."""

    def __init__(
        self,
        queue: AdapterQueue,
        *,
        agent: str | None = None,
        context: JsonObject | None = None,
        review: HumanInTheLoopMiddleware | None = None,
    ) -> None:
        """``review``: a ``HumanInTheLoopMiddleware`` without a tool-call hook of its own (:class:`ReviewInGuard`,
        :class:`BatchedReviewInGuard`), whose tool-call step runs in this guard's hook, around the guard's
        checks, as if it were listed right before the guard."""
        super().__init__()
        if review is not None and (
            type(review).wrap_tool_call is not AgentMiddleware.wrap_tool_call
            or type(review).awrap_tool_call is not AgentMiddleware.awrap_tool_call
        ):
            raise ValueError("CrossgateGuard(review=...) takes a review without a tool-call hook of its own")
        self._queue = queue
        self.agent = agent
        self.context: JsonObject = dict(context or {})
        self._review = review

    @property
    def queue(self) -> AdapterQueue:
        """The queue behind the authority check, with the keys pinned for it by now (a Gate built later pins too)."""
        return verified_queue(self._queue)

    def wrap_tool_call(self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], ToolResult]) -> ToolResult:
        """Check the call, then run it with the arguments crossgate judged (or answer in its place)."""
        if self._review is None:
            return self._guarded(request, handler)
        return HumanInTheLoopMiddleware.wrap_tool_call(self._review, request, lambda r: self._guarded(r, handler))

    async def awrap_tool_call(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], Awaitable[ToolResult]]
    ) -> ToolResult:
        """Async form of :meth:`wrap_tool_call`."""
        if self._review is None:
            return await self._aguarded(request, handler)

        async def guarded(reviewed: ToolCallRequest) -> ToolResult:
            return await self._aguarded(reviewed, handler)

        return await HumanInTheLoopMiddleware.awrap_tool_call(self._review, request, guarded)

    def _guarded(self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], ToolResult]) -> ToolResult:
        refused, request_id, call = self._check(request)
        if refused is not None:
            return refused
        return self._record(request_id, handler(_with_args(request, call)))

    async def _aguarded(
        self, request: ToolCallRequest, handler: Callable[[ToolCallRequest], Awaitable[ToolResult]]
    ) -> ToolResult:
        refused, request_id, call = self._check(request)
        if refused is not None:
            return refused
        return self._record(request_id, await handler(_with_args(request, call)))

    def _check(self, request: ToolCallRequest) -> tuple[ToolMessage | None, str | None, ToolCall]:
        judged = _JUDGED.get()
        if judged is None or judged.request is not request:
            own = _call_for(request, _Origin(self.agent, self.context), turn_ids=False)
            judged = _Judged(request, own.call, own.request_id, own.refused, find_request(self.queue, own.request_id))
        _JUDGED.set(None)
        refusal_, found = self._verdict(request, judged)
        return refusal_, found, judged.call

    def _verdict(self, request: ToolCallRequest, judged: _Judged) -> tuple[ToolMessage | None, str | None]:
        call, request_id, refused, reviewed = judged.call, judged.request_id, judged.refused, judged.reviewed
        if reviewed is None and refused is not None:
            self.queue.record_outcome(None, ran=False, error=refused, call=call)
            return self._message(call, refused, error=True), None
        if reviewed is None:
            requested_by = requested_by_in(getattr(request.runtime, "config", None))
            verdict = judged.verdict or self.queue.evaluate(call)
            # The schema is for a reviewer's edit: built only for a call that becomes a request.
            schema = args_json_schema(request.tool) if verdict.kind is VerdictKind.ASK else None
            verdict = self.queue.submit(call, requested_by=requested_by, args_schema=schema, verdict=verdict).verdict
            if verdict.kind is VerdictKind.ALLOW:
                return None, None
            if verdict.kind is VerdictKind.DENY:
                return self._message(call, verdict.reason, error=True), None
            self.queue.record_outcome(None, ran=False, error="asked but never reviewed", call=call)
            return self._message(
                call, f"{call.tool} needs a person's approval and was not reviewed; it did not run.", error=True
            ), None
        if reviewed.call.tool != call.tool:
            error = f"the reviewed call was {reviewed.call.tool}; refusing to run {call.tool} in its place"
            self.queue.record_outcome(request_id, ran=False, error=error)
            return self._message(call, f"Not run: {error}.", error=True), request_id
        if refused is not None and reviewed.status is RequestStatus.DECIDED:
            # The reviewed arguments fail the tool's own validation: the call ends refused, its decision used.
            try:
                self.queue.mark_applied(reviewed, args=reviewed.approved_args(), actor="langchain")
            except (RequestCancelledError, RequestExpiredError):
                refused = self.queue.get(request_id).closed_reason or refused
            self.queue.record_outcome(request_id, ran=False, error=refused)
            return self._message(call, refused, error=True), request_id
        if refused is not None:
            return self._message(call, refused, error=True), request_id
        decision = reviewed.resolution()
        if isinstance(decision, Reject | Respond):
            # Marked applied and recorded by the gate when it resumed the run (the SDK answered the model).
            text = decision.message if isinstance(decision, Reject) else decision.content
            return self._message(call, text, error=isinstance(decision, Reject)), request_id
        applied = apply_decision_sync(self.queue, reviewed, call.args, actor="langchain", tool=call.tool)
        if not applied.run:
            return self._message(call, applied.message, error=True), request_id
        return None, request_id

    def _record(self, request_id: str | None, result: ToolResult) -> ToolResult:
        if request_id is not None:
            text = result.content if isinstance(result, ToolMessage) else None
            self.queue.record_outcome(request_id, ran=True, result=text if isinstance(text, str) else None)
        return result

    @staticmethod
    def _message(call: ToolCall, text: str, *, error: bool) -> ToolMessage:
        return ToolMessage(
            content=text, name=call.tool, tool_call_id=call.call_id or "", status="error" if error else "success"
        )


def _with_args(request: ToolCallRequest, call: ToolCall) -> ToolCallRequest:
    """``request`` with the arguments crossgate judged: the ones the tool's schema makes of the model's."""
    return request.override(tool_call={**request.tool_call, "args": dict(call.args)})
