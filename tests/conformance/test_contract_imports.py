"""The project's stores and adapters run the kit as a third party would: by subclassing, with public imports only.

Each contract subclass module, and each adapter's driver, may import crossgate's public modules (no part of the
dotted name starts with ``_``), its own adapter's package and test folder, the SDK, and the standard library;
never the old internal suites (``tests.conformance``) nor the project's test support.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SUBCLASSES = {
    "tests/core/test_store_contract.py": "StoreContract",
    "tests/postgres/test_store_contract.py": "StoreContract",
    "tests/conformance/test_queue_contract.py": "QueueContract",
    "tests/adapters/openai/test_contract.py": "AdapterContract",
    "tests/adapters/claude/test_contract.py": "AdapterContract",
    "tests/adapters/langgraph/test_contract.py": "AdapterContract",
    "tests/adapters/pydantic_ai/test_contract.py": "AdapterContract",
    "tests/adapters/agent_framework/test_processes.py": "ProcessContract",
    "tests/adapters/agent_framework/test_store_failures.py": "StoreFailureContract",
    "tests/adapters/google_adk/test_processes.py": "ProcessContract",
    "tests/adapters/google_adk/test_store_failures.py": "StoreFailureContract",
    "tests/adapters/pydantic_ai/test_processes.py": "ProcessContract",
    "tests/adapters/pydantic_ai/test_store_failures.py": "StoreFailureContract",
    "tests/adapters/strands/test_processes.py": "ProcessContract",
    "tests/adapters/strands/test_store_failures.py": "StoreFailureContract",
}
DRIVERS = [
    "tests/adapters/openai/driver.py",
    "tests/adapters/claude/driver.py",
    "tests/adapters/langgraph/driver.py",
    "tests/adapters/pydantic_ai/driver.py",
    "tests/adapters/agent_framework/driver.py",
    "tests/adapters/google_adk/driver.py",
    "tests/adapters/strands/driver.py",
]


def imported(path: Path) -> list[str]:
    names: list[str] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            names += [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
    return names


def private_or_internal(name: str, own_folder: str) -> bool:
    parts = name.split(".")
    if parts[0] == "tests":
        return not name.startswith(own_folder)
    return parts[0].startswith("crossgate") and any(p.startswith("_") for p in parts)


@pytest.mark.parametrize("module", sorted(SUBCLASSES) + DRIVERS)
def test_contract_subclasses_and_drivers_import_only_public_names(module: str) -> None:
    path = ROOT / module
    own_folder = ".".join(Path(module).parent.parts) + "."
    bad = [name for name in imported(path) if private_or_internal(name, own_folder)]
    assert bad == [], f"{module} imports private or internal names"


@pytest.mark.parametrize(("module", "contract"), sorted(SUBCLASSES.items()))
def test_each_module_subclasses_its_contract_from_crossgate_testing(module: str, contract: str) -> None:
    tree = ast.parse((ROOT / module).read_text(encoding="utf-8"))
    assert f"crossgate.testing.{contract}" in imported(ROOT / module)
    classes = [node for node in tree.body if isinstance(node, ast.ClassDef) and node.name.startswith("Test")]
    assert classes, module
    direct = [c for c in classes if any(isinstance(b, ast.Name) and b.id == contract for b in c.bases)]
    assert direct, f"no class in {module} subclasses {contract}"


def test_the_check_sees_a_private_import(tmp_path: Path) -> None:
    sneaky = tmp_path / "test_contract.py"
    sneaky.write_text("from crossgate._approvals import x\nfrom tests.conformance.harness import TOOL\n")
    assert [n for n in imported(sneaky) if private_or_internal(n, "tests.adapters.x.")] == [
        "crossgate._approvals",
        "crossgate._approvals.x",
        "tests.conformance.harness",
        "tests.conformance.harness.TOOL",
    ]
