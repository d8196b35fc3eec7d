"""Finding crossgate's own error inside an SDK's wrapper exception."""

from __future__ import annotations

from crossgate.errors import CrossgateError


def crossgate_cause(exc: BaseException) -> CrossgateError | None:
    """The first crossgate error in ``exc``'s chain of causes (``exc`` itself included), or None.

    SDKs wrap what a hook or plugin raises (Strands' ``EventLoopException``, ADK's ``RuntimeError``); a gate
    raises the crossgate error found here again, so the app sees the store failing, not the SDK's wrapper.
    """
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, CrossgateError):
            return seen
        seen = seen.__cause__
    return None
