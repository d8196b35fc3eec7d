"""The authority package's public surface: a sorted ``__all__`` of names that exist, typed and documented."""

from __future__ import annotations

import crossgate.authority
from crossgate import errors


def test_all_is_sorted_and_every_name_exists_with_a_docstring() -> None:
    names = list(crossgate.authority.__all__)
    assert names == sorted(names)
    for name in names:
        value = getattr(crossgate.authority, name)
        assert getattr(value, "__doc__", None) or name == "Claims", name


def test_signature_error_is_drawn_in_the_error_tree() -> None:
    assert errors.__doc__ is not None and "SignatureError" in errors.__doc__
    assert crossgate.authority.SignatureError is errors.SignatureError
