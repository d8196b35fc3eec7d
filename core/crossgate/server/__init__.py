"""The review server: HTTP API, live stream, reviewer web page, signed links and webhooks.

Needs the extra ``crossgate[server]``. ``crossgate.server.worker`` and ``crossgate.server.commands``
import without it; ``create_app`` and the settings need it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

INSTALL_HINT = "the review server needs the server extra: pip install 'crossgate[server]'"

__all__ = ["INSTALL_HINT", "Reviewer", "ServerSettings", "WebhookTarget", "create_app", "require_server_extra"]

if TYPE_CHECKING:
    from crossgate.server.app import create_app
    from crossgate.server.settings import Reviewer, ServerSettings, WebhookTarget


def require_server_extra() -> None:
    """Raise ImportError with the install hint unless fastapi, uvicorn, httpx, sse-starlette and
    prometheus_client import."""
    try:
        import fastapi  # noqa: F401
        import httpx  # noqa: F401
        import prometheus_client  # noqa: F401
        import sse_starlette  # noqa: F401
        import uvicorn  # noqa: F401
    except ImportError as exc:
        raise ImportError(f"{INSTALL_HINT} ({exc.name} is missing)") from exc


def __getattr__(name: str) -> Any:
    if name == "create_app":
        require_server_extra()
        from crossgate.server.app import create_app

        return create_app
    if name in ("Reviewer", "ServerSettings", "WebhookTarget"):
        from crossgate.server import settings

        return getattr(settings, name)
    raise AttributeError(f"module 'crossgate.server' has no attribute {name!r}")
