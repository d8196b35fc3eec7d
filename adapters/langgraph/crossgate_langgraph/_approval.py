"""Ask crossgate to approve one tool call from inside a LangGraph node.

LangGraph re-runs an interrupted node from its first line on every resume, so everything here is
built to be run more than once: the request id is derived from the thread and the task's position
(its node, step and place in the step, never LangGraph's task id), so the re-run finds the same request,
also a re-run from a checkpoint re-created after a crash; the answer ``interrupt()`` returns is
checked against crossgate's queue before the node sees it; and the decision is marked applied
exactly once, right before the node runs the tool.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Annotated, Any, Final, TypeVar

from langgraph.config import get_config
from langgraph.types import interrupt
from pydantic import AfterValidator, WithJsonSchema

from crossgate import (
    ApprovalRequest,
    Approve,
    ConfigurationError,
    Edit,
    InvalidArgumentsError,
    Reject,
    Respond,
    ToolCall,
    VerdictKind,
    canonical_json,
)
from crossgate.adapter import (
    AdapterQueue,
    ToolAnswer,
    apply_decision_sync,
    find_request,
    request_id,
    verified_queue,
)
from crossgate.decisions import AnyDecision, validate_args
from crossgate.model import Decision, JsonObject
from crossgate.schemas import decision_schema
from crossgate_langgraph._arguments import refusal
from crossgate_langgraph._origin import agent_in, context_in
from crossgate_langgraph._shapes import APPROVAL_INTERRUPT

DECISION_SCHEMA: Final[dict[str, Any]] = decision_schema()
"""JSON Schema of a neutral decision (one ``oneOf`` branch per ``kind``, no ``$ref``): the
``response_schema`` every crossgate interrupt carries."""

DENY_FALLBACK = "The policy denies this tool call, so it was not run. Do not retry it."
T = TypeVar("T")
REQUESTED_BY_KEY: Final = "crossgate_requested_by"
"""The ``configurable`` key through which ``Gate`` tells nodes who the run acts for."""


@dataclass(frozen=True, slots=True)
class _Asking:
    queue: AdapterQueue
    request_id: str
    fingerprint: str


_asking: ContextVar[_Asking | None] = ContextVar("crossgate_langgraph_asking", default=None)


def _check_against_queue(decision: AnyDecision) -> AnyDecision:
    """Accept a resume value only if it is the decision the queue recorded for this very call.

    Runs inside ``interrupt()`` as part of its ``response_schema`` validation, so a refusal raises
    ``pydantic.ValidationError`` before anything is saved and the interrupt stays answerable.
    """
    asking = _asking.get()
    if asking is None:
        raise ValueError("a crossgate decision is only accepted inside request_approval()")
    if decision.fingerprint != asking.fingerprint:
        raise ValueError(
            "the decision names other arguments than the ones this node is about to run "
            f"(decision fingerprint {str(decision.fingerprint)[:12]}…, call {asking.fingerprint[:12]}…)"
        )
    request = find_request(asking.queue, asking.request_id)
    if request is None:
        raise ValueError(f"crossgate has no request {asking.request_id}")
    recorded = request.resolution()
    if recorded is None:
        raise ValueError(f"request {asking.request_id} is still pending in crossgate's queue; nothing approves it yet")
    if canonical_json(recorded.model_dump(mode="json")) != canonical_json(decision.model_dump(mode="json")):
        raise ValueError(f"the answer differs from the decision crossgate recorded for request {asking.request_id}")
    return recorded


# The fixed JSON Schema spares pydantic from generating it at every interrupt (about 10 ms each).
CheckedDecision = Annotated[Decision, AfterValidator(_check_against_queue), WithJsonSchema(DECISION_SCHEMA)]
"""The type ``interrupt()`` validates resume values against (its JSON Schema is :data:`DECISION_SCHEMA`)."""


def graph_request_id(thread: str, position: str, tool: str, call_id: str | None) -> str:
    """The request id of one approval inside one task of one thread; the same on every re-run."""
    return request_id("lg", "graph", thread, position, tool, call_id or "")


def current_thread() -> tuple[str, str]:
    """The thread id and the running task's position in it (see :func:`task_position`)."""
    configurable = _configurable()
    thread = configurable.get("thread_id")
    if thread is None:
        raise ConfigurationError("request_approval() needs a thread: compile with a checkpointer, pass a thread_id")
    return str(thread), task_position(str(configurable.get("checkpoint_ns", "")), _config().get("metadata") or {})


def task_position(checkpoint_ns: str, metadata: Mapping[str, Any]) -> str:
    """Where the running task is in its thread: the same for every run of that task, before or after a crash.

    LangGraph's task id (the last part of ``checkpoint_ns``) is derived from the checkpoint's id, which a
    checkpoint written again after a crash changes; the node, the step and the task's path in the step
    (a ``Send``'s index) do not. The enclosing graphs' part of the namespace is kept as it is: a
    subgraph's own step starts again on each call, so only the parent's task id tells two calls apart.
    """
    *outer, inner = checkpoint_ns.split("|")
    step, path = metadata.get("langgraph_step"), metadata.get("langgraph_path")
    if not isinstance(step, int):  # not LangGraph's task metadata: the namespace is all there is
        return checkpoint_ns
    node = inner.partition(":")[0]
    return canonical_json(["|".join(outer), node, step, _scalars(path)])


def _scalars(path: Any) -> list[Any]:
    """The plain values of a task path (``("__pregel_push", 1, False)``), nested tuples flattened."""
    if isinstance(path, (str, int, bool)):
        return [path]
    if isinstance(path, (tuple, list)):
        return [value for item in path for value in _scalars(item)]
    return []


def _configurable() -> Mapping[str, Any]:
    return _config().get("configurable", {})


def _config() -> Mapping[str, Any]:
    try:
        return get_config()
    except RuntimeError as exc:
        raise ConfigurationError("request_approval() must be called inside a running LangGraph node") from exc


def requested_by_in(config: Any) -> str | None:
    """Who the run of ``config`` acts for, as ``Gate`` put it there; None when it did not."""
    value = ((config or {}).get("configurable") or {}).get(REQUESTED_BY_KEY)
    return value if isinstance(value, str) else None


def acting_for(requested_by: str | None) -> str | None:
    """Who the request of the running node is made for: the gate's person, or the node's when the gate has none.

    A node naming someone else than the gate's run is refused: one run acts for one person, and the
    gate's value (restored from the parked run on resume) is the trusted one.
    """
    given = requested_by_in({"configurable": _configurable()})
    if given is not None and requested_by is not None and requested_by != given:
        raise ConfigurationError(
            f"request_approval(requested_by={requested_by!r}) in a run the gate runs for {given!r}; "
            "leave requested_by out inside Gate runs"
        )
    return given if given is not None else requested_by


def request_approval(
    queue: AdapterQueue,
    tool: str,
    args: Mapping[str, Any],
    *,
    call_id: str | None = None,
    agent: str | None = None,
    session: str | None = None,
    context: JsonObject | None = None,
    args_schema: JsonObject | None = None,
    description: str | None = None,
    framework: str = "langgraph",
    requested_by: str | None = None,
) -> AnyDecision:
    """Ask crossgate whether the node may run ``tool`` with ``args``; pause the thread while a person decides.

    Returns the neutral decision: ``Approve`` (run ``args``), ``Edit`` (run ``decision.args``),
    ``Reject`` (do not run; give the model ``decision.message``) or ``Respond`` (do not run; use
    ``decision.content`` as the result). A policy allow returns ``Approve`` and a policy deny
    returns ``Reject`` with the policy's reason, without pausing. The node runs the tool itself, so
    crossgate records the call as applied but not what the tool did: :func:`gated_call` runs the tool
    too and records its outcome.

    Call it in the node right before the tool, and compute ``args`` from the node's state: on resume
    the node runs again **from its first line** (code before this call runs once per run and once per
    resume attempt), re-reads its state, and the decision is accepted only if it was made for exactly
    these arguments. A decision to run is marked applied here, once; if the node runs again after
    that (a resumer died mid-tool and another took the run over, or the node asks twice), this
    returns ``Reject`` with what crossgate recorded instead of approving twice. Pass ``call_id``
    when one node asks more than once about the same tool.

    With ``args_schema`` (the tool's JSON Schema), arguments it refuses are not judged: this returns
    ``Reject`` saying what is wrong, and nothing is submitted. The request carries who the run acts for
    (that person cannot decide it): inside ``Gate.run`` and ``Gate.resume`` the gate passes it down, so
    leave ``requested_by`` out there (a different value is refused); outside a gate, pass it here.
    """
    call = _node_call(framework, tool, args, call_id=call_id, agent=agent, session=session, context=context)
    decision, _ = ask(queue, call, args_schema=args_schema, description=description, requested_by=requested_by)
    return decision


def _node_call(
    framework: str,
    tool: str,
    args: Mapping[str, Any],
    *,
    call_id: str | None,
    agent: str | None,
    session: str | None,
    context: JsonObject | None,
) -> ToolCall:
    return ToolCall(
        framework=framework,
        tool=tool,
        args=dict(args),
        call_id=call_id,
        agent=agent,
        session=session,
        context=context or {},
    )


def gated_call(
    queue: AdapterQueue,
    tool: str,
    args: Mapping[str, Any],
    body: Callable[[JsonObject], T],
    *,
    call_id: str | None = None,
    agent: str | None = None,
    session: str | None = None,
    context: JsonObject | None = None,
    args_schema: JsonObject | None = None,
    description: str | None = None,
    framework: str = "langgraph",
    requested_by: str | None = None,
) -> ToolAnswer[T]:
    """:func:`request_approval`, then the tool itself: ``body`` runs with the arguments that may run.

    ``body`` gets the approved arguments (the reviewer's, for an edit) and its result is recorded as the
    call's outcome, ``ran`` (an exception is recorded as the tool's failure and raised again), so
    ``crossgate show`` says what the tool did. Reject and respond run nothing: the answer's ``message`` is
    the reviewer's text, recorded as not run. ``answer.reply`` is what to hand on either way. The same
    rules as :func:`request_approval` hold: call it from the node's state, once per node (or pass ``call_id``).
    """
    call = _node_call(framework, tool, args, call_id=call_id, agent=agent, session=session, context=context)
    decision, request_id = ask(queue, call, args_schema=args_schema, description=description, requested_by=requested_by)
    if isinstance(decision, Reject):
        return ToolAnswer(ran=False, message=decision.message)
    if isinstance(decision, Respond):
        return ToolAnswer(ran=False, message=decision.content)
    run_args = dict(decision.args) if isinstance(decision, Edit) else dict(call.args)
    queue = verified_queue(queue)
    unreviewed = call if request_id is None else None  # a policy allow has no request: record the call
    try:
        result = body(run_args)
    except Exception as exc:
        queue.record_outcome(request_id, ran=True, error=f"{type(exc).__name__}: {exc}", call=unreviewed)
        raise
    queue.record_outcome(request_id, ran=True, result=str(result), call=unreviewed)
    return ToolAnswer(ran=True, result=result)


def ask(
    queue: AdapterQueue,
    call: ToolCall,
    *,
    args_schema: JsonObject | None = None,
    description: str | None = None,
    requested_by: str | None = None,
) -> tuple[AnyDecision, str | None]:
    """:func:`request_approval` for a built call; also returns the request id (None for allow and deny)."""
    queue = verified_queue(queue)  # the keys pinned for this queue (Gate(authority=...), the environment)
    thread, position = current_thread()
    config = _config()
    origin = {"run": thread, "agent": agent_in(config, call.agent), "context": context_in(config, call.context)}
    call = call.model_copy(update=origin)
    if args_schema is not None:
        try:
            # Judge only arguments the tool's schema accepts as they are (a string for a number is not).
            validate_args(call.args, args_schema)
        except InvalidArgumentsError as exc:
            message = refusal(call.tool, exc)
            queue.record_outcome(None, ran=False, error=message, call=call.model_copy(update={"args": {}}))
            return Reject(message=message, fingerprint=call.fingerprint), None
    request_id = graph_request_id(thread, position, call.tool, call.call_id)
    submission = queue.submit(
        call,
        args_schema=args_schema,
        description=description,
        requested_by=acting_for(requested_by),
        request_id=request_id,
    )
    if submission.request is None:
        if submission.verdict.kind is VerdictKind.ALLOW:
            return Approve(fingerprint=call.fingerprint), None
        return Reject(message=submission.verdict.reason or DENY_FALLBACK, fingerprint=call.fingerprint), None
    request = submission.request
    token = _asking.set(_Asking(queue, request.id, call.fingerprint))
    try:
        # A type (not a dict) makes LangGraph validate the answer before saving it; mypy cannot see an
        # Annotated union as a type.
        answer = interrupt(interrupt_value(request), response_schema=CheckedDecision)  # type: ignore[call-overload]
    finally:
        _asking.reset(token)
    decision: AnyDecision = answer
    return _mark_applied(queue, request.id, call, decision), request.id


def interrupt_value(request: ApprovalRequest) -> JsonObject:
    """The value a crossgate interrupt carries: the neutral request, as JSON."""
    return {
        "type": APPROVAL_INTERRUPT,
        "request_id": request.id,
        "tool": request.call.tool,
        "args": request.call.args,
        "call_id": request.call.call_id,
        "fingerprint": request.fingerprint,
        "reason": request.reason,
        "description": request.description,
        "allowed_decisions": [k.value for k in request.allowed_decisions],
        "expires_at": request.expires_at.isoformat() if request.expires_at else None,
    }


def _mark_applied(queue: AdapterQueue, request_id: str, call: ToolCall, decision: AnyDecision) -> AnyDecision:
    """Apply ``decision`` through the kit's check, exactly once; return what the node must do.

    A decision that may not run now (applied by an earlier attempt, a lapsed approval, a policy deny
    since, a reject) comes back as a ``Reject`` with what the model reads, its outcome recorded; a
    respond is recorded here too (the reviewer's content is the tool's result).
    """
    applied = apply_decision_sync(queue, queue.get(request_id), call.args, actor="langgraph", tool=call.tool)
    if applied.run:
        return decision
    if applied.responded:
        queue.record_outcome(applied.request, ran=False, result=applied.message)
        return decision
    return Reject(message=applied.message, fingerprint=call.fingerprint)
