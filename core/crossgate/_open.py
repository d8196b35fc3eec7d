"""``open_queue``: the queue a URL names, in process over a store or remote over HTTP."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

from crossgate.errors import ConfigurationError
from crossgate.policy.rules import Policy
from crossgate.queue import ReviewQueue
from crossgate.stores import open_store, resolve_db

if TYPE_CHECKING:
    from crossgate.remote import RemoteQueue

SERVER_ENV = "CROSSGATE_SERVER"
"""The review server ``open_queue`` reaches when given no URL (what ``crossgate serve``'s first run prints)."""


def is_remote(url: str | None) -> bool:
    """True for a URL of a review server (``http://`` or ``https://``) rather than of a store."""
    return url is not None and url.lower().startswith(("http://", "https://"))


def open_queue(
    url: str | None = None, *, policy: Policy | None = None, token: str | None = None
) -> ReviewQueue | RemoteQueue:
    """The queue ``url`` names: a ``RemoteQueue`` for a review server, else a ``ReviewQueue`` over ``open_store(url)``.

    ``url`` defaults to ``$CROSSGATE_SERVER``, else as ``open_store``'s does (``$CROSSGATE_DB``), so the
    environment block the server's first run prints, or the server's address in ``$CROSSGATE_DB``, moves an
    agent off the store with no change to its code. For a remote queue ``token`` is the agent
    credential (default ``$CROSSGATE_AGENT_TOKEN``), and the server's policy applies: a ``policy`` given
    must be the server's, or ConfigurationError (an agent that believes another policy gates it should
    not start). For a store, ``token`` must not be given and ``policy`` is the queue's policy.
    """
    target = resolve_db(url or os.environ.get(SERVER_ENV) or None)
    if not is_remote(target):
        if token is not None:
            raise ConfigurationError("token= is for a review server's URL; a store needs none")
        return ReviewQueue(open_store(target), policy)
    from crossgate.remote import RemoteQueue

    queue = RemoteQueue(target, token=token)
    if policy is not None and queue.policy != policy:
        queue.close()
        raise ConfigurationError(f"the policy given is not the one {target} judges calls by")
    return queue
