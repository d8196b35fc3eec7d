"""The review queue over HTTP, for agents that hold no store: ``RemoteQueue`` and ``open_queue``.

::

    from crossgate.remote import RemoteQueue
    queue = RemoteQueue("https://review.example.com", token=os.environ["CROSSGATE_AGENT_TOKEN"])
    gate = Gate(queue)            # any crossgate adapter

Needs ``httpx`` (the extra ``crossgate[remote]``). See docs/agents-over-http.md.
"""

try:
    import httpx  # noqa: F401
except ImportError as exc:  # pragma: no cover - depends on the installed extras
    raise ImportError("crossgate.remote needs httpx: pip install 'crossgate[remote]'") from exc

from crossgate.remote._errors import CredentialRefusedError, ServerUnavailableError
from crossgate.remote._queue import TOKEN_ENV, RemoteQueue

__all__ = ["TOKEN_ENV", "CredentialRefusedError", "RemoteQueue", "ServerUnavailableError"]
