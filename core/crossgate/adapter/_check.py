"""The check immediately before a tool runs: the one place that decides whether a reviewed call runs.

:func:`apply_decision` maps each decision kind to "run with these arguments" or "do not run, and the
model reads this", marking the request applied exactly once and closing it when the queue refuses it
at apply time (a lapsed approval, a policy deny added since, a decision whose signature does not verify
with the keys pinned here). :func:`run_checked` wraps a tool body in
it and records the outcome; :func:`run_checked_sync` is the same function for a synchronous body.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from crossgate.adapter._authority import verified_queue
from crossgate.adapter._crossing import store_call
from crossgate.adapter._protocol import AdapterQueue
from crossgate.errors import AlreadyAppliedError, CrossgateError, RequestCancelledError, RequestExpiredError, StoreError
from crossgate.fingerprint import fingerprint
from crossgate.model import ApprovalRequest, Approve, Edit, JsonObject, Reject, Respond, ToolCall
from crossgate.outcomes import already_applied_message

T = TypeVar("T")

NO_DECISION = "crossgate did not run {tool}: request {request} is still pending, so nothing may run yet."
OTHER_ARGUMENTS = (
    "crossgate did not run {tool}: request {request} was reviewed for other arguments than the ones about to run."
)
OTHER_TOOL = "crossgate did not run {tool}: request {request} was reviewed for {reviewed}, not for {tool}."


@dataclass(frozen=True, slots=True)
class Application:
    """What the check decided for one reviewed call.

    ``run`` is True for an approve or edit the queue marked applied: run the tool with ``args`` (the
    edited ones for an edit), then record what happened. Otherwise nothing may run and ``message`` is
    what the model reads: the reviewer's content for a respond (marked applied; the adapter delivers it
    as the tool's result and records it, see :func:`run_checked`), else a refusal already recorded.
    """

    request: ApprovalRequest
    run: bool
    args: JsonObject | None = None
    message: str = ""
    responded: bool = False


@dataclass(frozen=True, slots=True)
class ToolAnswer(Generic[T]):
    """What the model is told for one call: the tool's own ``result`` when it ran, else ``message``.

    ``responded`` says the message is a reviewer's respond (the human was the tool: an SDK with a result
    status hands it as a success), not a refusal.
    """

    ran: bool
    result: T | None = None
    message: str = ""
    responded: bool = False

    @property
    def reply(self) -> T | str:
        """The tool output to hand the SDK: the result if the tool ran, else the message."""
        return self.result if self.ran else self.message  # type: ignore[return-value]


async def apply_decision(
    queue: AdapterQueue, request: ApprovalRequest, args: JsonObject | None, *, actor: str, tool: str | None = None
) -> Application:
    """Decide whether ``request``'s call runs now; ``args`` are the arguments the SDK holds for it.

    ``tool`` is the tool the SDK is about to run, for an adapter that finds the request by a call id read
    from SDK state (which the agent may rewrite): a decision on another tool's call is refused and
    nothing runs.

    ``args`` must be the ones reviewed, or (an SDK that substitutes an edit itself) the approved ones;
    either way, what may run is ``Application.args``, the approved arguments. ``args`` None skips this
    binding check, for a call the SDK will not run whatever crossgate says (a native rejection).
    Raises StoreError (nothing decided: the run fails and can be retried, rather
    than the model being told the call did not run).

    The decision is verified first with the keys pinned in this process (see
    :mod:`crossgate.adapter._authority`): one that does not verify closes the request with a refusal,
    which is what the model reads, and nothing runs.
    """
    queue = verified_queue(queue)  # a gate's queue already is one; any other gets this process's pinned keys
    reviewed = request.call.tool
    if tool is not None and tool != reviewed:
        return await _refused(
            queue, request, OTHER_TOOL.format(tool=tool, request=request.id, reviewed=reviewed), error=True
        )
    tool = reviewed
    if args is not None and fingerprint(tool, args) not in (request.fingerprint, request.approved_fingerprint()):
        return await _refused(queue, request, OTHER_ARGUMENTS.format(tool=tool, request=request.id), error=True)
    resolution = request.resolution()
    if resolution is None:
        return await _refused(queue, request, NO_DECISION.format(tool=tool, request=request.id))
    run_args = request.approved_args()
    try:
        await store_call(queue.mark_applied, request, args=run_args, actor=actor)
    except AlreadyAppliedError:
        # Applied by an earlier resume of this run: say what happened then, from the audit log.
        message = already_applied_message(tool, request.id, await store_call(queue.outcome, request.id))
        await store_call(
            queue.record_outcome, request, ran=False, error=f"not run again: request {request.id} was applied before"
        )
        return Application(request=request, run=False, message=message)
    except StoreError:
        raise
    except (RequestCancelledError, RequestExpiredError) as exc:
        # A lapsed approval, or a policy deny since it was given: the queue closed the request, and its
        # reason is what the model reads.
        closed = await store_call(queue.get, request.id)
        return await _refused(queue, closed, closed.closed_reason or f"crossgate did not run {tool}: {exc}")
    except CrossgateError as exc:
        return await _refused(queue, request, f"crossgate did not run {tool}: {exc}", error=True)
    if isinstance(resolution, Respond):
        return Application(request=request, run=False, message=resolution.content, responded=True)
    if isinstance(resolution, Reject):
        return await _refused(queue, request, resolution.message)
    assert isinstance(resolution, Approve | Edit)
    return Application(request=request, run=True, args=run_args)


def apply_decision_sync(
    queue: AdapterQueue, request: ApprovalRequest, args: JsonObject | None, *, actor: str, tool: str | None = None
) -> Application:
    """:func:`apply_decision` for synchronous SDK code (a sync tool node or middleware hook)."""
    return drive(apply_decision(queue, request, args, actor=actor, tool=tool))


async def _refused(queue: AdapterQueue, request: ApprovalRequest, message: str, *, error: bool = False) -> Application:
    if error:
        await store_call(queue.record_outcome, request, ran=False, error=message)
    else:
        await store_call(queue.record_outcome, request, ran=False, result=message)
    return Application(request=request, run=False, message=message)


async def run_checked(
    queue: AdapterQueue,
    request: ApprovalRequest,
    args: JsonObject,
    body: Callable[[JsonObject], Awaitable[T]],
    *,
    actor: str,
    call: ToolCall | None = None,
    summary: Callable[[T], str | None] = str,
    tool: str | None = None,
) -> ToolAnswer[T]:
    """Run ``body`` for a reviewed call only if its decision allows it now; record what happened.

    ``args`` are the arguments the model proposed; ``body`` gets the ones to run (the reviewer's, for
    an edit). ``tool`` is the tool about to run (see :func:`apply_decision`). Respond answers with the
    reviewer's content and reject with its message; neither runs the tool, and both are recorded as not
    run. ``summary`` turns the body's result into the recorded result text, recorded with ``call``'s
    fields when given. An exception from ``body`` is recorded as the tool's failure and raised again.
    """
    applied = await apply_decision(queue, request, args, actor=actor, tool=tool)
    if applied.responded:
        await store_call(queue.record_outcome, request, ran=False, result=applied.message)
    if not applied.run:
        return ToolAnswer(ran=False, message=applied.message, responded=applied.responded)
    return await run_recorded(queue, request, dict(applied.args or {}), body, call=call, summary=summary)


async def run_recorded(
    queue: AdapterQueue,
    request: ApprovalRequest | None,
    args: JsonObject,
    body: Callable[[JsonObject], Awaitable[T]],
    *,
    call: ToolCall | None = None,
    summary: Callable[[T], str | None] = str,
) -> ToolAnswer[T]:
    """Run ``body`` with ``args`` and record its outcome.

    For a request :func:`apply_decision` marked applied, or (``request`` None, ``call`` given) a call the
    policy allowed outright, which has no request.
    """
    target = request
    try:
        result = await body(args)
    except Exception as exc:
        await store_call(queue.record_outcome, target, ran=True, error=f"{type(exc).__name__}: {exc}", call=call)
        raise
    await store_call(queue.record_outcome, target, ran=True, result=summary(result), call=call)
    return ToolAnswer(ran=True, result=result)


def run_checked_sync(
    queue: AdapterQueue,
    request: ApprovalRequest,
    args: JsonObject,
    body: Callable[[JsonObject], T],
    *,
    actor: str,
    call: ToolCall | None = None,
    summary: Callable[[T], str | None] = str,
) -> ToolAnswer[T]:
    """:func:`run_checked` for a synchronous ``body`` (a sync tool node), with no event loop needed."""

    async def run(run_args: JsonObject) -> T:
        return body(run_args)

    return drive(run_checked(queue, request, args, run, actor=actor, call=call, summary=summary))


def drive(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run a coroutine of the kit that never suspends (queue calls are inline) to its result, synchronously."""
    try:
        coroutine.send(None)
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
    coroutine.close()
    raise RuntimeError("a crossgate kit coroutine suspended; it needs an event loop")
