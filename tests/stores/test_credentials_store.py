"""Stored credentials on every store: one live row per kind and name, revoke and rotate as compare-and-sets,
each change with its audit event, and the token itself never in the database."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from crossgate import ConflictError, MemoryStore, NotFoundError
from crossgate.authority import Authority
from crossgate.credentials import Credentials, Scope, hash_token
from crossgate.stores.credentials import CredentialStore
from crossgate.stores.sqlite import SqliteStore
from tests.support.postgres import postgres_store_factory

AUTHORITY = Authority.generate()


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[CredentialStore]:
    made: CredentialStore
    if request.param == "memory":
        made = MemoryStore()
    elif request.param == "sqlite":
        sqlite = SqliteStore(tmp_path / "q.db")
        sqlite.setup()
        made = sqlite
    else:
        request.applymarker(pytest.mark.postgres)
        factory: Callable[[], CredentialStore] = postgres_store_factory()
        made = factory()
    yield made
    made.close()  # type: ignore[attr-defined]


def test_add_list_rotate_revoke_each_with_its_event(store: CredentialStore) -> None:
    manager = Credentials(store, authority=AUTHORITY)
    ann = manager.add("reviewer", "ann", scope=Scope(tools=("delete_*",)), actor="ops")
    bot = manager.add("agent", "bot", actor="ops")
    assert [c.name for c in manager.list("reviewer")] == ["ann"]
    assert [c.name for c in manager.list()] == ["ann", "bot"]
    assert manager.lookup(hash_token(ann.token)) == ann.credential
    assert manager.lookup(hash_token(bot.token)) == bot.credential

    rotated = manager.rotate("reviewer", "ann", actor="ops")
    assert rotated.token != ann.token and rotated.credential.tools == ("delete_*",)
    assert manager.lookup(hash_token(ann.token)) is None, "the old token is refused at once"
    assert manager.lookup(hash_token(rotated.token)) == rotated.credential

    manager.revoke("reviewer", "ann", actor="ops")
    assert manager.lookup(hash_token(rotated.token)) is None
    assert manager.list("reviewer") == []
    history = manager.list("reviewer", include_revoked=True)
    assert [(c.name, c.revoked_by) for c in history] == [("ann", "ops"), ("ann", "ops")]

    events = [e for e in store.list_events() if e.kind.startswith("credential_")]  # type: ignore[attr-defined]
    assert [e.kind for e in events] == [
        "credential_added",
        "credential_added",
        "credential_rotated",
        "credential_revoked",
    ]
    assert all(e.actor == "ops" for e in events)
    text = repr([e.payload for e in events])
    for token in (ann.token, bot.token, rotated.token):
        assert token not in text and hash_token(token) not in text


def test_a_live_name_is_taken_once_and_a_revoked_name_can_be_added_again(store: CredentialStore) -> None:
    manager = Credentials(store, authority=AUTHORITY)
    manager.add("reviewer", "ann", actor="ops")
    before = store.list_credentials(include_revoked=True)
    with pytest.raises(ConflictError):
        manager.add("reviewer", "ann", actor="ops")
    assert store.list_credentials(include_revoked=True) == before
    manager.add("agent", "ann", actor="ops")  # kinds are apart
    manager.revoke("reviewer", "ann", actor="ops")
    again = manager.add("reviewer", "ann", actor="ops")
    assert manager.lookup(hash_token(again.token)) == again.credential


def test_revoking_or_rotating_what_is_not_live_changes_nothing(store: CredentialStore) -> None:
    manager = Credentials(store, authority=AUTHORITY)
    issued = manager.add("reviewer", "ann", actor="ops")
    manager.revoke("reviewer", "ann", actor="ops")
    seq = len(store.list_events())  # type: ignore[attr-defined]
    at = issued.credential.created_at
    event = manager._event("credential_revoked", issued.credential, "ops", "cli")
    assert store.revoke_credential(issued.credential.id, at, "ops", event) is None
    assert store.rotate_credential(issued.credential.id, issued.credential, event) is None
    assert len(store.list_events()) == seq  # type: ignore[attr-defined]
    with pytest.raises(NotFoundError):
        manager.revoke("reviewer", "ann", actor="ops")
    with pytest.raises(NotFoundError):
        manager.rotate("reviewer", "nobody", actor="ops")


def test_a_row_the_authority_did_not_sign_is_no_credential(store: CredentialStore) -> None:
    """A writer of the store without the private key adds a row of its own, or widens a signed one."""
    from dataclasses import replace

    manager = Credentials(store, authority=AUTHORITY)
    signed = manager.add("reviewer", "ann", scope=Scope(tools=("read_*",)), actor="ops")
    forger = Credentials(store, authority=Authority.generate())
    forged = forger.add("reviewer", "mallory", scope=Scope(admin=True), actor="mallory")
    assert manager.lookup(hash_token(forged.token)) is None

    widened = replace(signed.credential, id="widened", name="ann2", tools=(), admin=True)
    widened = replace(widened, token_sha256=hash_token("a-token-the-forger-knows"))
    store.insert_credential(widened, manager._event("credential_added", widened, "mallory", "cli"))
    assert manager.lookup(hash_token("a-token-the-forger-knows")) is None
    assert not Credentials(store).verifies(signed.credential), "no keys: nothing stored is accepted"


def test_the_sqlite_file_holds_the_digest_never_the_token(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "q.db")
    store.setup()
    manager = Credentials(store, authority=AUTHORITY)
    issued = [manager.add("reviewer", "ann", actor="ops"), manager.add("agent", "bot", actor="ops")]
    issued.append(manager.rotate("agent", "bot", actor="ops"))
    store.close()
    raw = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.name.startswith("q.db"))
    for one in issued:
        assert one.token.encode() not in raw
        assert hash_token(one.token).encode() in raw
