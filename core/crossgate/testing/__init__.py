"""crossgate's conformance kit: pytest base classes a store or an adapter subclasses to prove it keeps the contract.

Subclass a contract in your own tests and give its hooks; every contract test then runs on what you plug in::

    from crossgate.testing import StoreContract

    class TestMyStore(StoreContract):
        def make_store(self, tmp_path):
            return MyStore(tmp_path / "store.db")

Needs pytest (and pytest-asyncio for the async tests): install ``crossgate[testing]``. ``import crossgate``
never imports this package. See docs/adapters.md.
"""

from crossgate.testing.adapters import AdapterContract
from crossgate.testing.clock import FakeClock
from crossgate.testing.contract import Contract, ContractOverrideError, contract_override
from crossgate.testing.driver import TicketAgentDriver
from crossgate.testing.failing_store import FailingStore
from crossgate.testing.fixtures import QueueFactory
from crossgate.testing.gate_driver import GateTicketDriver, ProcessTicketDriver
from crossgate.testing.gates import GateContract
from crossgate.testing.processes import ProcessContract
from crossgate.testing.queue import QueueContract
from crossgate.testing.store_failures import StoreFailureContract
from crossgate.testing.stores import StoreContract
from crossgate.testing.tickets import TicketStore

__all__ = [
    "AdapterContract",
    "Contract",
    "ContractOverrideError",
    "FailingStore",
    "FakeClock",
    "GateContract",
    "GateTicketDriver",
    "ProcessContract",
    "ProcessTicketDriver",
    "QueueContract",
    "QueueFactory",
    "StoreContract",
    "StoreFailureContract",
    "TicketAgentDriver",
    "TicketStore",
    "contract_override",
]
