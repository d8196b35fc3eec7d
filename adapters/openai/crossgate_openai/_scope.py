"""The crossgate run a tool call belongs to, carried through the SDK's tasks by a context variable."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from crossgate.adapter import request_id
from crossgate.fingerprint import same_json

if TYPE_CHECKING:
    from crossgate import ApprovalRequest, StoreError, ToolCall, Verdict
    from crossgate.model import JsonObject

JUDGED_FOR_SECONDS = 1.0
"""How long the verdict ``needs_approval`` reached stands for the tool's invocation; an older one is judged again
(the SDK may invoke a call later than it asked about it, and standing rules may have changed meanwhile)."""


@dataclass(frozen=True, slots=True)
class Judged:
    """A call ``needs_approval`` let run (allow or deny), its verdict, and when it was judged."""

    call: ToolCall
    verdict: Verdict
    at: float = field(default_factory=time.monotonic)
    """``time.monotonic()`` when judged."""

    def fresh_for(self, args: JsonObject) -> bool:
        """True if these are the judged arguments and the verdict is recent enough to act on without judging again."""
        return time.monotonic() - self.at <= JUDGED_FOR_SECONDS and same_json(args, self.call.args)


@dataclass(frozen=True, slots=True)
class RunScope:
    """Set by ``Gate.run`` and ``Gate.resume`` around the SDK run; nested ``as_tool`` runs inherit it."""

    run: str
    session: str | None = None
    requested_by: str | None = None
    """Who the run acts for: every request it creates carries it, so that person cannot decide them."""
    context: dict[str, Any] = field(default_factory=dict, compare=False)
    """The app's context for the run's calls (``Gate(context=)``, ``run(call_context=)``), in every call's context."""
    decided: dict[str, ApprovalRequest] = field(default_factory=dict, compare=False)
    """Decided requests the gate just read, by id, for the gated tools to use once instead of reading again."""
    judged: dict[tuple[str, str, str], Judged] = field(default_factory=dict, compare=False)
    """The calls a gated tool's ``needs_approval`` let run (allow or deny), by agent, tool and call id, with
    their verdict: the tool's invocation takes it once instead of judging the same call again."""
    resumed: bool = False
    """True for ``Gate.resume``: requests of this run may be stored from before, so gated tools read them."""
    failures: list[StoreError] = field(default_factory=list, compare=False)
    """Store errors raised by crossgate's checks inside the SDK's run. The SDK wraps them (``UserError``) or,
    in a nested ``as_tool`` run, swallows them; the gate raises the first one once the SDK returns."""


_SCOPE: ContextVar[RunScope | None] = ContextVar("crossgate_openai_run", default=None)


def current_scope() -> RunScope | None:
    """The scope of the crossgate run in progress, or None outside ``Gate.run``/``Gate.resume``."""
    return _SCOPE.get()


@contextmanager
def run_scope(scope: RunScope) -> Iterator[None]:
    """Bind ``scope`` for the SDK calls made inside the block (and the tasks they start)."""
    token = _SCOPE.set(scope)
    try:
        yield
    finally:
        _SCOPE.reset(token)


def keep_failure(error: StoreError) -> None:
    """Keep a store error raised inside the SDK's run for the gate to raise, whatever the SDK makes of it."""
    scope = _SCOPE.get()
    if scope is not None:
        scope.failures.append(error)


def openai_request_id(run: str, agent: str, call_id: str) -> str:
    """The deterministic request id of one tool call (the kit's recipe), so a re-submitted call finds its request."""
    return request_id("oa", run, agent, call_id)
