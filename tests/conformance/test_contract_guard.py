"""The guard on contract tests: a subclass may not replace one unless it marks it as a known gap, with a reason."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from crossgate import MemoryStore, Store
from crossgate.testing import AdapterContract, ContractOverrideError, StoreContract, contract_override


def test_replacing_a_contract_test_unmarked_is_refused_when_the_class_is_defined() -> None:
    with pytest.raises(
        ContractOverrideError, match=r"TestLax.test_get_unknown_request_is_none replaces .*StoreContract"
    ):

        class TestLax(StoreContract):
            def make_store(self, tmp_path: Path) -> Store:
                return MemoryStore()

            def test_get_unknown_request_is_none(self, store: Store) -> None:
                pass


def test_a_replacement_through_an_intermediate_class_is_refused_too() -> None:
    class TestMemory(StoreContract):
        def make_store(self, tmp_path: Path) -> Store:
            return MemoryStore()

    with pytest.raises(ContractOverrideError, match="test_duplicate_request_id_is_a_conflict_and_keeps_the_first"):

        class TestLaxer(TestMemory):
            def test_duplicate_request_id_is_a_conflict_and_keeps_the_first(self, store: Store) -> None:
                pass


@pytest.mark.parametrize("mark", [pytest.mark.xfail, pytest.mark.xfail(reason=""), pytest.mark.skip(reason="no")])
def test_an_xfail_without_a_reason_or_a_skip_does_not_pass_the_guard(mark: pytest.MarkDecorator) -> None:
    with pytest.raises(ContractOverrideError):

        class TestLax(StoreContract):
            def make_store(self, tmp_path: Path) -> Store:
                return MemoryStore()

            @mark
            def test_get_unknown_request_is_none(self, store: Store) -> None:
                pass


def test_a_marked_replacement_is_accepted_and_contract_override_is_a_strict_xfail() -> None:
    class TestKnownGaps(StoreContract):
        def make_store(self, tmp_path: Path) -> Store:
            return MemoryStore()

        @pytest.mark.xfail(reason="this store keeps no history yet")
        def test_get_unknown_request_is_none(self, store: Store) -> None:
            raise AssertionError

        @contract_override(reason="duplicates are merged by this store")
        def test_duplicate_request_id_is_a_conflict_and_keeps_the_first(self, store: Store) -> None:
            raise AssertionError

    [mark] = TestKnownGaps.test_duplicate_request_id_is_a_conflict_and_keeps_the_first.pytestmark  # type: ignore[attr-defined]
    assert (mark.name, mark.kwargs) == ("xfail", {"reason": "duplicates are merged by this store", "strict": True})
    with pytest.raises(ContractOverrideError, match="needs a reason"):
        contract_override(reason=" ")


def test_a_concrete_subclass_without_its_hooks_is_refused() -> None:
    with pytest.raises(TypeError, match="TestNoStore must provide make_store"):

        class TestNoStore(StoreContract):
            pass

    with pytest.raises(TypeError, match="TestNoDriver must provide driver_class"):

        class TestNoDriver(AdapterContract):
            pass

    class MyAdapterContract(AdapterContract):  # not collected (no Test prefix): a base for others, hooks may wait
        supports_postgres = False


LAX = """
from pathlib import Path

import pytest

from crossgate import MemoryStore
from crossgate.testing import StoreContract, contract_override


class TestMemory(StoreContract):
    def make_store(self, tmp_path: Path):
        return MemoryStore()

    {mark}
    def test_get_unknown_request_is_none(self, store):
        pass  # "passes" whatever the store does
"""


def run_pytest(tmp_path: Path, mark: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "pytest.ini").write_text("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    (tmp_path / "conftest.py").write_text('pytest_plugins = ["crossgate.testing.plugin"]\n', encoding="utf-8")
    (tmp_path / "test_lax.py").write_text(textwrap.dedent(LAX).replace("{mark}", mark), encoding="utf-8")
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--strict-markers", "-k", "unknown"]
    return subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False)


@pytest.mark.slow
def test_in_a_third_party_project_an_unmarked_replacement_is_a_collection_error(tmp_path: Path) -> None:
    unmarked = run_pytest(tmp_path, "")
    assert unmarked.returncode == 2, unmarked.stdout  # pytest: interrupted by a collection error
    assert "ContractOverrideError" in unmarked.stdout and "1 error" in unmarked.stdout
    # A replacement that says why, yet passes, fails all the same: it cannot make the contract pass unseen.
    marked = run_pytest(tmp_path, '@contract_override(reason="a known gap")')
    assert marked.returncode == 1, marked.stdout
    assert "XPASS(strict)" in marked.stdout and "1 failed" in marked.stdout
