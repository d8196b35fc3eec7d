"""The base of every contract class, and the guard on overridden contract tests.

A contract class's ``test_*`` methods are the contract. A subclass that defines a test of the same name
replaces it, and would make a failing contract pass unseen; so the replacement must say why, with
``@pytest.mark.xfail(reason=...)`` or ``@contract_override(reason=...)`` (an expected failure, strict).
Anything else is refused when the subclass is defined, which pytest reports as a collection error.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, TypeVar

import pytest

F = TypeVar("F", bound=Callable[..., Any])


class ContractOverrideError(TypeError):
    """A subclass replaced a contract test without marking it."""


def contract_override(reason: str) -> Callable[[F], F]:
    """Mark a replaced contract test as a known gap: an expected failure (strict) with ``reason``."""
    if not reason.strip():
        raise ContractOverrideError("contract_override needs a reason")

    def mark(test: F) -> F:
        return pytest.mark.xfail(reason=reason, strict=True)(test)  # type: ignore[no-any-return]

    return mark


def _xfail_reason(test: object) -> str | None:
    """The reason of ``test``'s xfail mark, or None when it has none (or an empty one)."""
    for mark in getattr(test, "pytestmark", []):
        if mark.name == "xfail":
            reason = mark.kwargs.get("reason") or (mark.args[1] if len(mark.args) > 1 else "")
            if isinstance(reason, str) and reason.strip():
                return reason
    return None


def _unset(hook: object) -> bool:
    return hook is None or bool(getattr(hook, "__isabstractmethod__", False))


class Contract:
    """A pytest base class: concrete subclasses (named ``Test*``) run every contract test on what they plug in.

    ``required`` names the hooks a concrete subclass must provide (a class attribute, or a method the contract
    marks ``@abstractmethod``); each contract class lists its own.
    """

    required: ClassVar[tuple[str, ...]] = ()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        for name, test in vars(cls).items():
            if not name.startswith("test_"):
                continue
            replaced = [base for base in cls.__mro__[1:] if issubclass(base, Contract) and name in vars(base)]
            if replaced and _xfail_reason(test) is None:
                raise ContractOverrideError(
                    f"{cls.__qualname__}.{name} replaces the contract test of {replaced[0].__qualname__}; "
                    "mark it @pytest.mark.xfail(reason=...) or @contract_override(reason=...) to say why"
                )
        if cls.__name__.startswith("Test"):
            missing = [hook for hook in cls.required if _unset(getattr(cls, hook, None))]
            if missing:
                raise TypeError(f"{cls.__qualname__} must provide {', '.join(missing)}")
