"""The narrow store protocols: ``Store`` stores, the queue decides what is legal; delivery cursors apart.

The parked-run lifecycle lives in ``crossgate.lifecycle`` and no store module imports it; ``Store`` has
no lifecycle-specific or cursor method; ``DeliveryCursors`` is its own protocol, which every project
store implements and webhooks ask for.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from crossgate import ConfigurationError, MemoryStore, Store
from crossgate.stores.cursors import DeliveryCursors, delivery_cursors
from crossgate.stores.sqlite import SqliteStore

STORES = Path(__file__).resolve().parents[2] / "core" / "crossgate" / "stores"


def members(protocol: type) -> set[str]:
    return {name for name in vars(protocol) if not name.startswith("_")}


def test_store_keeps_no_lifecycle_rule_and_no_cursor() -> None:
    store = members(Store)
    assert {"change_parked_run", "change_parked_runs", "update_request"} <= store
    assert not store & {"claim_parked_run", "finish_parked_run", "retry_parked_run", "prune_parked_states"}
    assert not store & members(DeliveryCursors)
    assert members(DeliveryCursors) == {
        "claim_delivery_cursor",
        "advance_delivery_cursor",
        "release_delivery_cursor",
        "get_delivery_cursor",
    }


@pytest.mark.parametrize("module", sorted(p.name for p in STORES.glob("*.py")))
def test_no_store_module_imports_the_lifecycle(module: str) -> None:
    tree = ast.parse((STORES / module).read_text(encoding="utf-8"))
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    imported |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    assert "crossgate.lifecycle" not in imported


def test_the_project_stores_keep_delivery_cursors(tmp_path: Path) -> None:
    sqlite = SqliteStore(tmp_path / "q.db")
    for store in (MemoryStore(), sqlite):
        assert isinstance(store, Store)
        assert delivery_cursors(store) is store
    sqlite.close()


def test_a_store_without_delivery_cursors_is_refused_for_webhooks() -> None:
    with pytest.raises(ConfigurationError, match="object keeps no delivery cursors, which webhooks need"):
        delivery_cursors(object())
