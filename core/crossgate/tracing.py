"""OpenTelemetry spans for a call's life, through the API package only (``pip install crossgate[otel]``).

The queue and the adapter kit call this module; nothing else in crossgate imports OpenTelemetry. With the
API absent, or present with no SDK configured (the global tracer provider is still the API's proxy), every
function here returns at once and nothing is recorded or stored: the allowed call costs what it costs
without tracing (``tests/benchmarks/bench_allowed.py`` measures both).

A span starts from the current OpenTelemetry context: the agent's span where its SDK has one, or the
``traceparent`` an HTTP client sent (the server attaches it: ``crossgate.server.tracecontext``). The
context is stored with a request (its ``submitted`` event) and a parked run (its metadata, key
:data:`TRACEPARENT`), so a decision made on the server and a resume in another process join the trace
the run began in. Attribute names are listed in docs/observability.md. Argument values are never
recorded unless ``$CROSSGATE_TRACE_ARGUMENTS`` is ``1``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Mapping, MutableMapping
from contextlib import AbstractContextManager, contextmanager, nullcontext
from datetime import datetime
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from crossgate.model import ApprovalRequest, ToolCall, Verdict

try:
    from opentelemetry import context as otel_context
    from opentelemetry import trace
    from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

    _API = True
except ImportError:  # the [otel] extra is not installed: tracing is off
    _API = False

TRACEPARENT = "traceparent"
"""The W3C header, and the key under which a parked run's metadata and a request's event keep the context."""
ARGUMENTS_ENV = "CROSSGATE_TRACE_ARGUMENTS"
"""Set to ``1`` to record a call's arguments as ``gen_ai.tool.call.arguments`` (off: they may be secret)."""
TRACER_NAME = "crossgate"
_OFF: AbstractContextManager[None] = nullcontext()
_PROPAGATOR = TraceContextTextMapPropagator() if _API else None
_UNKNOWN = object()
_PROVIDER_FROM_ENV = "OTEL_PYTHON_TRACER_PROVIDER" in os.environ
_DEFAULT_PROVIDERS = (trace.ProxyTracerProvider, trace.NoOpTracerProvider) if _API else ()

Attributes = dict[str, str | int | float | bool]
AttributeValues = Mapping[str, str | int | float | bool]


def enabled() -> bool:
    """True once an OpenTelemetry SDK (any tracer provider but the API's default) is configured."""
    if not _API:
        return False
    # The API's global, read directly: ``get_tracer_provider()`` looks the environment up on every call,
    # which would cost the allow path microseconds. With the provider named in the environment (the
    # API then loads it on first use), or a future API without the global, the public function decides.
    provider = getattr(trace, "_TRACER_PROVIDER", _UNKNOWN)
    if provider is None and not _PROVIDER_FROM_ENV:
        return False
    if provider is None or provider is _UNKNOWN:
        provider = trace.get_tracer_provider()
    return not isinstance(provider, _DEFAULT_PROVIDERS)


def call_attributes(call: ToolCall) -> Attributes:
    """What a span says about a call: GenAI names where the conventions have one, ``crossgate.*`` otherwise."""
    attributes: Attributes = {"gen_ai.tool.name": call.tool, "crossgate.framework": call.framework}
    if call.call_id:
        attributes["gen_ai.tool.call.id"] = call.call_id
    if call.agent:
        attributes["gen_ai.agent.name"] = call.agent
    if call.run:
        attributes["crossgate.run"] = call.run
    if os.environ.get(ARGUMENTS_ENV) == "1":
        attributes["gen_ai.tool.call.arguments"] = json.dumps(call.args, sort_keys=True, ensure_ascii=False)
    return attributes


def request_attributes(request: ApprovalRequest) -> Attributes:
    """:func:`call_attributes` of the request's call, with its id and status."""
    return {
        **call_attributes(request.call),
        "crossgate.request.id": request.id,
        "crossgate.request.status": request.status.value,
    }


def verdict_attributes(verdict: Verdict) -> Attributes:
    """The policy's verdict and the rule that gave it."""
    attributes: Attributes = {"crossgate.verdict": verdict.kind.value}
    if verdict.rule:
        attributes["crossgate.rule"] = verdict.rule
    return attributes


def submission_attributes(verdict: Verdict, request: ApprovalRequest | None) -> Attributes:
    """What a submission came to: the verdict, and the request it made for an ask."""
    attributes = verdict_attributes(verdict)
    if request is not None:
        attributes["crossgate.request.id"] = request.id
    return attributes


def decision_attributes(kind: str, channel: str, reviewer_kind: str) -> Attributes:
    """A decision as a span tells it: its kind, the channel it came through and who made it (never the
    reviewer's name, a note, a message or edited arguments)."""
    return {
        "crossgate.decision.kind": kind,
        "crossgate.decision.channel": channel,
        "crossgate.reviewer.kind": reviewer_kind,
    }


def waited_attributes(request: ApprovalRequest) -> Attributes:
    """How a wait ended: the request's status, and the decision's kind and channel when one came."""
    attributes: Attributes = {"crossgate.request.status": request.status.value}
    if request.decision is not None:
        attributes["crossgate.decision.kind"] = request.decision.kind.value
        if request.decision.channel:
            attributes["crossgate.decision.channel"] = request.decision.channel
    return attributes


def outcome_span(request: ApprovalRequest | str | None, call: ToolCall | None, *, ran: bool, failed: bool) -> None:
    """Record the outcome of a call (whether the tool ran, and whether it failed) as an instant span."""
    attributes: Attributes = {
        "gen_ai.operation.name": "execute_tool",
        "crossgate.outcome": "ran" if ran else "not_run",
        "crossgate.outcome.failed": failed,
    }
    if isinstance(request, str):
        attributes["crossgate.request.id"] = request
    target = request if not isinstance(request, str) else None
    with span("crossgate.outcome", request=target, call=call, attributes=attributes):
        pass


def span(
    name: str,
    *,
    call: ToolCall | None = None,
    request: ApprovalRequest | None = None,
    attributes: AttributeValues | None = None,
    parent: str | None = None,
) -> AbstractContextManager[Any]:
    """A current span named ``name`` (a no-op while tracing is off); yields the span, to add attributes to.

    The span describes ``request`` or ``call`` (their attributes are only built while tracing is on).
    ``parent`` is a stored ``traceparent``: the span joins that trace, with a link to the current span
    (a reviewer's request, a resumer's own trace), instead of being a child of the current span.
    """
    if not enabled():
        return _OFF
    described = request_attributes(request) if request is not None else call_attributes(call) if call else {}
    return _span(name, {**described, **(attributes or {})}, parent)


_tracer_of: tuple[Any, Any] | None = None


def _tracer() -> Any:
    """crossgate's tracer from the current provider, made once per provider (the SDK's is not cheap to make)."""
    global _tracer_of
    provider = trace.get_tracer_provider()
    if _tracer_of is None or _tracer_of[0] is not provider:
        _tracer_of = (provider, provider.get_tracer(TRACER_NAME))
    return _tracer_of[1]


@contextmanager
def _span(name: str, attributes: AttributeValues, parent: str | None) -> Iterator[Any]:
    tracer = _tracer()
    context, links = None, []
    if parent is not None and (stored := _extract({TRACEPARENT: parent})) is not None:
        current = trace.get_current_span().get_span_context()
        links = [trace.Link(current)] if current.is_valid else []
        context = stored
    with tracer.start_as_current_span(name, context=context, links=links, attributes=attributes) as current_span:
        yield current_span


def set_attributes(target: Any, attributes: AttributeValues) -> None:
    """Add ``attributes`` to a span :func:`span` yielded (None while tracing is off)."""
    if target is not None:
        target.set_attributes(attributes)


def record_span(name: str, *, parent: str, start: datetime, end: datetime, attributes: AttributeValues) -> None:
    """Record a span that happened between ``start`` and ``end`` under the stored ``parent`` context.

    For the wait of a parked run: nobody held a span open while it was parked, so the resumer records it.
    """
    if not enabled() or (context := _extract({TRACEPARENT: parent})) is None:
        return
    started = _tracer().start_span(name, context=context, attributes=attributes, start_time=_nanos(start))
    started.end(end_time=max(_nanos(end), _nanos(start)))


def current_traceparent() -> str | None:
    """The current span's context as a W3C ``traceparent`` value; None while tracing is off or without a span."""
    if not enabled() or _PROPAGATOR is None:
        return None
    carrier: dict[str, str] = {}
    _PROPAGATOR.inject(carrier)
    return carrier.get(TRACEPARENT)


def inject(headers: MutableMapping[str, str]) -> None:
    """Put the current ``traceparent`` into outgoing HTTP ``headers`` (nothing while tracing is off)."""
    if (value := current_traceparent()) is not None:
        headers[TRACEPARENT] = value


def stored_context(metadata: Mapping[str, Any]) -> str | None:
    """The ``traceparent`` kept in a parked run's metadata or an event's payload, if any."""
    value = metadata.get(TRACEPARENT)
    return value if isinstance(value, str) else None


def _extract(carrier: Mapping[str, str]) -> Any:
    assert _PROPAGATOR is not None
    context = _PROPAGATOR.extract(carrier)
    return context if trace.get_current_span(context).get_span_context().is_valid else None


@contextmanager
def attached(traceparent: str | None) -> Iterator[None]:
    """Make the context of an incoming ``traceparent`` current for the block (a no-op when there is none)."""
    if traceparent is None or not enabled() or (context := _extract({TRACEPARENT: traceparent})) is None:
        yield
        return
    token = otel_context.attach(context)
    try:
        yield
    finally:
        otel_context.detach(token)


def _nanos(moment: datetime) -> int:
    return int(moment.timestamp() * 1_000_000_000)
