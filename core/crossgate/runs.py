"""The shape every adapter's run and resume return, and the protocol the worker drives.

The resume sequence itself is :func:`crossgate.adapter.resume_leased`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

R = TypeVar("R", covariant=True)


@dataclass(frozen=True, slots=True)
class Finished(Generic[R]):
    """The run ended; ``result`` is the SDK's own result object."""

    run: str
    result: R


@dataclass(frozen=True, slots=True)
class Parked:
    """The run waits for decisions; its SDK state is stored as ``parked_run`` in the queue's store."""

    run: str
    parked_run: str
    request_ids: tuple[str, ...]


RunOutcome = Finished[R] | Parked


class Resumer(Protocol):
    """What ``crossgate worker`` needs from an adapter: resume one parked run of its framework."""

    framework: str

    async def resume(self, parked_run: str) -> Finished[object] | Parked:
        """Take the parked run forward once its requests are decided."""


def __getattr__(name: str) -> object:
    # resume_leased moved to the adapter kit; this keeps code written against its old home working.
    if name == "resume_leased":
        from crossgate.adapter import resume_leased

        return resume_leased
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
