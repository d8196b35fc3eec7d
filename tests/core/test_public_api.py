"""The core's public surface: a sorted ``__all__`` of names that exist, and no SDK imported by core."""

from __future__ import annotations

import subprocess
import sys

import crossgate
import crossgate.policy
import crossgate.testing


def test_all_is_sorted_and_every_name_exists() -> None:
    for module in (crossgate, crossgate.policy, crossgate.testing):
        assert list(module.__all__) == sorted(module.__all__)
        for name in module.__all__:
            assert hasattr(module, name), f"{module.__name__}.{name}"


def test_importing_core_imports_no_agent_sdk_and_no_web_stack() -> None:
    probe = (
        "import sys, crossgate, crossgate.queue, crossgate.stores.sqlite;"
        "bad = [m for m in ('agents', 'claude_agent_sdk', 'langgraph', 'langchain', 'fastapi', 'psycopg')"
        " if m in sys.modules]; print(','.join(bad))"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.strip()
    assert out == ""


def test_importing_core_imports_neither_the_conformance_kit_nor_pytest() -> None:
    probe = "import sys, crossgate, crossgate.queue; print(sorted({'crossgate.testing', 'pytest'} & set(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]"
