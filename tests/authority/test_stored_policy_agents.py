"""A replaced stored policy, and a replaced public key "in the store", through each adapter's real code path.

The operator applies a signed policy (deletes ask a person) and approves one delete. Then the "agent", who can
write the database but holds no private key, makes the stored policy say "allow everything" and resumes its
run. Its queue evaluates the store's policy with the public key the agent process pinned. For each adapter,
on SQLite and PostgreSQL: the approved delete does not run, the next delete (which the forged policy would
allow outright) does not run either, the model is told why, the refusal is recorded, and ``audit verify
--authority`` reports the replaced policy.

The second attempt plants the attacker's own public key everywhere in the store an agent might look for one,
and a policy signed with it: the agent still refuses (``unknown_key``), and constructs no key at all while it
runs. It reads keys only from its own configuration.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from crossgate import Approve, Policy, PolicyRule, ReviewQueue, VerdictKind, open_store
from crossgate.authority import Authority, PublicKey, TrustedKeys, policy_version_claims
from crossgate.checkpoints import verify_signed_log
from crossgate.policy.versions import POLICY_REFUSED, apply_policy, policy_document
from crossgate.runs import Finished, Parked
from crossgate.testing import TicketAgentDriver, TicketStore
from crossgate.testing.postgres import database_url
from tests.authority.raw import raw_access

ASK_DELETES = Policy(rules=(PolicyRule(name="ask-deletes", verdict=VerdictKind.ASK, tool="delete_ticket"),))
ALLOW_ALL = Policy(rules=(PolicyRule(name="anything-goes", verdict=VerdictKind.ALLOW, tool="*"),))


def _driver(name: str) -> type[TicketAgentDriver]:
    if name == "openai":
        from tests.adapters.openai.driver import OpenAITicketDriver

        return OpenAITicketDriver
    if name == "langgraph":
        from tests.adapters.langgraph.driver import LangGraphTicketDriver

        return LangGraphTicketDriver
    if name == "langchain":
        from tests.adapters.langgraph.driver import LangChainTicketDriver

        return LangChainTicketDriver
    if name == "pydantic-ai":
        from tests.adapters.pydantic_ai.driver import PydanticAITicketDriver

        return PydanticAITicketDriver
    from tests.adapters.claude.driver import ClaudeTicketDriver

    return ClaudeTicketDriver


DRIVERS = [
    "openai",
    "langgraph",
    "langchain",
    "pydantic-ai",
    pytest.param("claude", marks=[pytest.mark.slow, pytest.mark.claude_cli]),
]


class Scene:
    """The operator (with the key) and the agent (with the store and the pinned public key) on one database."""

    def __init__(self, url: str, workdir: Path, driver: type[TicketAgentDriver], authority: Authority) -> None:
        self.url, self.authority = url, authority
        self.operator = ReviewQueue(open_store(url), authority=authority)
        apply_policy(self.operator.store, authority, ASK_DELETES, created_by="ops")
        self.pinned = TrustedKeys.parse(authority.public_key.pin)  # the agent's own configuration
        self.agent = ReviewQueue(open_store(url), trusted=self.pinned)
        self.tickets = TicketStore(workdir / "tickets.db")
        self.tickets.seed()
        self.driver = driver(self.agent, self.tickets, workdir, url)
        self.raw = raw_access(url)

    async def approved_delete_then_parked(self) -> str:
        """Start the run (deletes t3, then t1): it parks on t3, which the operator approves."""
        outcome = await self.driver.start(["t3", "t1"], run="run-forged")
        assert isinstance(outcome, Parked) and len(outcome.request_ids) == 1
        self.operator.decide(outcome.request_ids[0], Approve(), reviewer="ann")
        return outcome.parked_run

    def replace_policy(self, document: str, token: str | None = None) -> None:
        """The attacker's UPDATE of the stored policy (and the bump any stored change makes)."""
        if token is None:
            self.raw.execute("UPDATE policy_versions SET document = ?", document)
        else:
            self.raw.execute("UPDATE policy_versions SET document = ?, token = ?", document, token)
        self.raw.bump_rules_version()

    async def resume_refused(self, parked_run: str) -> list[str]:
        """Resume: nothing runs; the model is told for each delete. What it was told."""
        done = await self.driver.resume(parked_run)
        while isinstance(done, Parked):  # an adapter may park again on the second call; nothing is approved
            done = await self.driver.resume(done.parked_run)
        assert isinstance(done, Finished)
        assert self.tickets.delete_runs() == 0
        assert self.tickets.ids() == ["t1", "t2", "t3"]
        return self.driver.tool_results("run-forged")

    def close(self) -> None:
        self.agent.close()
        self.operator.close()


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    with database_url(request.param, tmp_path) as found:
        yield found


@pytest.fixture
def scene(request: pytest.FixtureRequest, url: str, tmp_path: Path, authority: Authority) -> Iterator[Scene]:
    made = Scene(url, tmp_path, _driver(request.param), authority)
    yield made
    made.close()


@pytest.mark.parametrize("scene", DRIVERS, indirect=True)
@pytest.mark.asyncio
async def test_a_replaced_stored_policy_runs_nothing_and_is_reported(scene: Scene) -> None:
    parked = await scene.approved_delete_then_parked()
    scene.replace_policy(policy_document(ALLOW_ALL))
    told = await scene.resume_refused(parked)
    assert told and all("stored policy version 1 is refused" in text for text in told), told
    refused = [e for e in scene.operator.events() if e.kind == POLICY_REFUSED]
    assert [e.payload["reason"] for e in refused] == ["binding"]
    report = verify_signed_log(scene.operator.store, scene.authority.trusted_keys())
    assert not report.ok and "policy version 1 is not the document that was signed" in (report.problem or "")


@pytest.mark.parametrize("scene", ["openai", "langgraph"], indirect=True)
@pytest.mark.asyncio
async def test_a_public_key_planted_in_the_store_is_never_read(
    scene: Scene, attacker: Authority, monkeypatch: pytest.MonkeyPatch
) -> None:
    parked = await scene.approved_delete_then_parked()
    pin = attacker.public_key.pin
    scene.raw.execute("CREATE TABLE authority_keys (kid TEXT PRIMARY KEY, public_key TEXT NOT NULL)")
    scene.raw.execute("INSERT INTO authority_keys (kid, public_key) VALUES (?, ?)", attacker.kid, pin)
    claims = policy_version_claims(version=1, document=ALLOW_ALL, created_by="ops", created_at=scene.agent.now())
    scene.raw.execute("UPDATE policy_versions SET source = ?, created_by = ?", pin, f"ops (key {pin})")
    scene.replace_policy(policy_document(ALLOW_ALL), attacker.sign(claims))
    built = spy_on_key_loading(monkeypatch)

    told = await scene.resume_refused(parked)

    assert built == [], "the agent built a key while it ran: keys come only from its own configuration"
    assert told and all(f"signed with key {attacker.kid}, which is not pinned" in text for text in told), told
    refused = [e for e in scene.operator.events() if e.kind == POLICY_REFUSED]
    assert [e.payload["reason"] for e in refused] == ["unknown_key"]


def spy_on_key_loading(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record every public key or set of trusted keys built from now on, however it is built."""
    built: list[str] = []

    def recording(name: str, original: Callable[..., Any]) -> Callable[..., Any]:
        def spy(*args: Any, **kwargs: Any) -> Any:
            built.append(name)
            return original(*args, **kwargs)

        return spy

    monkeypatch.setattr(PublicKey, "__init__", recording("PublicKey", PublicKey.__init__))
    monkeypatch.setattr(TrustedKeys, "__init__", recording("TrustedKeys", TrustedKeys.__init__))
    return built
