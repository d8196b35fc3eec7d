"""The ``Allow`` header of a 405: every method the path takes, not only the first route's.

Starlette answers a method a path does not take with the methods of the first route whose path matched.
FastAPI makes one route per method, so a path with GET and DELETE would say ``Allow: GET`` alone.
"""

from __future__ import annotations

from collections.abc import Iterable

from starlette.routing import BaseRoute, Match, Route
from starlette.types import Scope


def allowed_methods(routes: Iterable[BaseRoute], scope: Scope) -> str | None:
    """The methods of every route whose path matches ``scope``'s, as an ``Allow`` value; None if none does."""
    methods: set[str] = set()
    for route in routes:
        if isinstance(route, Route) and route.methods and route.matches(scope)[0] is not Match.NONE:
            methods |= route.methods
    return ", ".join(sorted(methods)) or None
