"""The one mapping from the error tree to exit codes covers every crossgate error."""

from __future__ import annotations

import inspect

import pytest

import crossgate.errors as errors
from crossgate.cli.exit_codes import exit_code_for, one_line

ALL_ERRORS = sorted(
    (cls for _, cls in inspect.getmembers(errors, inspect.isclass) if issubclass(cls, errors.CrossgateError)),
    key=lambda cls: cls.__name__,
)


def expected(cls: type[errors.CrossgateError]) -> int:
    if issubclass(cls, errors.NotFoundError):
        return 3
    if issubclass(cls, errors.ConflictError):
        return 4
    if issubclass(cls, errors.InvalidDecisionError):
        return 5
    return 1


@pytest.mark.parametrize("cls", ALL_ERRORS, ids=lambda cls: cls.__name__)
def test_every_error_has_its_exit_code(cls: type[errors.CrossgateError]) -> None:
    assert exit_code_for(cls("x")) == expected(cls)


def test_the_tree_is_mapped_as_documented() -> None:
    codes = {cls.__name__: exit_code_for(cls("x")) for cls in ALL_ERRORS}
    assert codes["AlreadyDecidedError"] == codes["RequestExpiredError"] == codes["RequestCancelledError"] == 4
    assert codes["FingerprintMismatchError"] == codes["InvalidArgumentsError"] == codes["DecisionNotAllowedError"] == 5
    assert codes["ConfigurationError"] == codes["StoreError"] == codes["CrossgateError"] == 1
    assert codes["NotFoundError"] == 3


def test_messages_are_folded_onto_one_line() -> None:
    assert one_line("first line\n  second\tline ") == "first line second line"
