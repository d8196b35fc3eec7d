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
from crossgate.testing.fixtures import QueueFactory
from crossgate.testing.queue import QueueContract
from crossgate.testing.stores import StoreContract
from crossgate.testing.tickets import TicketStore

__all__ = [
    "AdapterContract",
    "Contract",
    "ContractOverrideError",
    "FakeClock",
    "QueueContract",
    "QueueFactory",
    "StoreContract",
    "TicketAgentDriver",
    "TicketStore",
    "contract_override",
]
