"""Signed decisions still let the approved call run: every adapter, both databases, every way to decide.

The agent pins the authority's public key (see ``tests.authority.world``); each decision comes from a
party that holds a credential: the reviewer side's queue, the server's API and page, a signed link, the
CLI through the server with a reviewer token, and the CLI holding the key as an operator.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest
from typer.testing import CliRunner

from crossgate import Approve, DecisionKind, Edit, Reject, Remember, RememberMatch, RequestStatus, Respond
from crossgate.authority import Authority, Keyring, ReviewerKind
from crossgate.cli import app as cli_app
from crossgate.runs import Finished
from crossgate.server.app import create_app
from crossgate.testing.driver import TicketAgentDriver
from tests.authority.world import DATABASES, DRIVERS, World, world_of
from tests.server.conftest import TOKENS, auth, make_settings
from tests.server.live import live_server


@pytest.fixture(params=list(DRIVERS), ids=list(DRIVERS))
def driver_class(request: pytest.FixtureRequest) -> type[TicketAgentDriver]:
    return DRIVERS[request.param]


@pytest.fixture(params=DATABASES)
def world(driver_class: type[TicketAgentDriver], request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[World]:
    with world_of(driver_class, request.param, tmp_path) as built:
        yield built


def signed_claims(world: World, request_id: str) -> tuple[str, ReviewerKind, str | None]:
    """Who the authority signed the request's decision for, as what, through which channel."""
    request = world.server.get(request_id)
    [token] = request.signatures
    claims = world.authority.trusted_keys().verify_decision(
        token, request_id=request_id, fingerprint=request.fingerprint
    )
    return claims.reviewer, claims.reviewer_kind, claims.channel


# every adapter, both databases --------------------------------------------------------------------
async def test_a_signed_approval_runs_the_call_once(world: World) -> None:
    parked, request_id = await world.park("t3", "run-signed")
    world.server.decide(request_id, Approve(), reviewer="ann")
    assert isinstance(await world.resume(parked), Finished)
    assert world.tickets.ids() == ["t1", "t2"] and world.tickets.delete_runs("t3") == 1
    assert world.server.get(request_id).status is RequestStatus.APPLIED
    assert world.driver.tool_results("run-signed") == ["deleted ticket t3"]
    assert signed_claims(world, request_id) == ("ann", ReviewerKind.REVIEWER, "api")


async def test_a_signed_edit_runs_the_edited_arguments(world: World) -> None:
    if DecisionKind.EDIT not in world.driver.capabilities:
        pytest.skip(f"{world.driver.framework} cannot express edit")
    parked, request_id = await world.park("t3", "run-edit")
    world.server.decide(request_id, Edit(args={"id": "t2"}), reviewer="ann")
    assert isinstance(await world.resume(parked), Finished)
    assert world.tickets.ids() == ["t1", "t3"] and world.tickets.delete_runs() == 1


@pytest.mark.parametrize("kind", [DecisionKind.REJECT, DecisionKind.RESPOND])
async def test_a_signed_reject_or_respond_reaches_the_model_and_runs_nothing(world: World, kind: DecisionKind) -> None:
    if kind not in world.driver.capabilities:
        pytest.skip(f"{world.driver.framework} cannot express {kind.value}")
    parked, request_id = await world.park("t1", "run-no")
    text = "t1 is a live customer ticket; close t2 instead."
    decision = Reject(message=text) if kind is DecisionKind.REJECT else Respond(content=text)
    world.server.decide(request_id, decision, reviewer="ann")
    assert isinstance(await world.resume(parked), Finished)
    assert world.tickets.delete_runs() == 0
    assert text in world.driver.tool_results("run-no")[-1]
    done = RequestStatus.REJECTED if kind is DecisionKind.REJECT else RequestStatus.ANSWERED
    assert world.server.get(request_id).status is done


async def test_a_signed_remembered_rule_lets_a_later_call_run_without_asking(world: World) -> None:
    parked, request_id = await world.park("t3", "run-remember")
    decided = world.server.decide(request_id, Approve(remember=Remember(match=RememberMatch.TOOL)), reviewer="ann")
    assert decided.signatures
    await world.resume(parked)
    [rule] = world.server.rules()
    assert rule.signature is not None
    world.authority.trusted_keys().verify_standing_rule(rule.signature, rule)
    again = await world.driver.start(["t2"], run="run-remember-2")
    assert isinstance(again, Finished)
    assert world.tickets.ids() == ["t1"]
    assert not [e for e in world.server.events() if e.kind == "refused"]


# every way to decide (one adapter, SQLite) -----------------------------------------------------------
@pytest.fixture
def openai_world(tmp_path: Path) -> Iterator[World]:
    with world_of(DRIVERS["openai"], "sqlite", tmp_path) as built:
        yield built


@pytest.fixture
async def http(openai_world: World) -> AsyncIterator[httpx.AsyncClient]:
    server_app = create_app(openai_world.server, make_settings())
    async with server_app.router.lifespan_context(server_app):
        transport = httpx.ASGITransport(app=server_app)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
            yield client


async def test_an_api_decision_is_signed_for_the_token_holder_and_runs(
    openai_world: World, http: httpx.AsyncClient
) -> None:
    parked, request_id = await openai_world.park("t3", "run-api")
    response = await http.post(f"/api/requests/{request_id}/decision", json={"kind": "approve"}, headers=auth("alice"))
    assert response.status_code == 200, response.text
    assert response.json()["signatures"], "the API shows the token with the request"
    assert isinstance(await openai_world.resume(parked), Finished)
    assert openai_world.tickets.delete_runs("t3") == 1
    assert signed_claims(openai_world, request_id) == ("alice", ReviewerKind.REVIEWER, "api")


async def test_a_page_decision_is_signed_for_the_signed_in_reviewer_and_runs(
    openai_world: World, http: httpx.AsyncClient
) -> None:
    parked, request_id = await openai_world.park("t3", "run-page")
    await http.get("/login", params={"token": TOKENS["alice"]})
    response = await http.post(f"/api/requests/{request_id}/decision", json={"kind": "approve"})
    assert response.status_code == 200, response.text
    assert isinstance(await openai_world.resume(parked), Finished)
    assert openai_world.tickets.delete_runs("t3") == 1
    assert signed_claims(openai_world, request_id) == ("alice", ReviewerKind.REVIEWER, "web")


async def test_a_signed_link_decision_is_signed_for_the_reviewer_it_was_issued_to_and_runs(
    openai_world: World, http: httpx.AsyncClient
) -> None:
    parked, request_id = await openai_world.park("t3", "run-link")
    links = (await http.post(f"/api/requests/{request_id}/links", headers=auth("alice"))).json()
    base = make_settings().base_url
    assert (await http.post(links["approve"].removeprefix(base))).status_code == 200
    assert isinstance(await openai_world.resume(parked), Finished)
    assert openai_world.tickets.delete_runs("t3") == 1
    assert signed_claims(openai_world, request_id) == ("alice", ReviewerKind.REVIEWER, "link")


def cli(*args: str, **env: str | None) -> tuple[int, str, str]:
    defaults: dict[str, str | None] = {"CROSSGATE_DB": None, "CROSSGATE_POLICY": None, "CROSSGATE_TOKEN": None}
    result = CliRunner().invoke(cli_app, list(args), env={**defaults, "CROSSGATE_AUTHORITY_DIR": None, **env})
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.slow
async def test_the_cli_through_the_server_decides_as_the_tokens_reviewer_and_the_call_runs(
    openai_world: World, tmp_path: Path
) -> None:
    parked, request_id = await openai_world.park("t3", "run-cli-server")
    token_file = tmp_path / "token"
    token_file.write_text(TOKENS["alice"] + "\n")
    with live_server(create_app(openai_world.server, make_settings())) as url:
        code, out, err = cli("approve", "--server", url, "--reviewer", "security-lead", request_id)
        assert (code, "leave --reviewer out with --server" in err) == (2, True)
        code, out, err = cli("approve", "--server", url, request_id, XDG_CONFIG_HOME=str(tmp_path))
        assert code == 6 and "needs a reviewer token" in err  # denied: no credential
        code, out, err = cli("approve", "--server", url, "--token-file", str(token_file), request_id, "--json")
        assert code == 0, err
    assert '"reviewer": "alice"' in out
    assert isinstance(await openai_world.resume(parked), Finished)
    assert openai_world.tickets.delete_runs("t3") == 1
    assert signed_claims(openai_world, request_id) == ("alice", ReviewerKind.REVIEWER, "cli")  # the CLI through the API


@pytest.mark.slow
async def test_the_cli_through_the_server_with_a_token_in_the_environment_adds_a_signed_rule(
    openai_world: World,
) -> None:
    with live_server(create_app(openai_world.server, make_settings())) as url:
        code, _, err = cli(
            "rules", "add", "--server", url, "--tool", "delete_ticket", "--effect", "allow", "--json",
            CROSSGATE_TOKEN=TOKENS["alice"],
        )  # fmt: skip
        assert code == 0, err
    [rule] = openai_world.server.rules()
    assert rule.created_by == "alice" and rule.signature is not None
    assert isinstance(await openai_world.driver.start(["t2"], run="run-rule"), Finished)
    assert openai_world.tickets.ids() == ["t1", "t3"]


async def test_the_cli_with_the_key_decides_as_an_operator_and_the_call_runs(tmp_path: Path) -> None:
    keyring = Keyring.init(tmp_path / "keys")
    with world_of(DRIVERS["openai"], "sqlite", tmp_path, authority=keyring.authority()) as world:
        parked, request_id = await world.park("t3", "run-cli-key")
        keys = {"CROSSGATE_AUTHORITY_DIR": str(keyring.directory)}
        code, _, err = cli("--db", world.url, "approve", request_id, "--reviewer", "ops-oncall", **keys)
        assert code == 0, err
        assert isinstance(await world.resume(parked), Finished)
        assert world.tickets.delete_runs("t3") == 1
        assert signed_claims(world, request_id) == ("ops-oncall", ReviewerKind.OPERATOR, "cli")
        code, _, err = cli("--db", world.url, "rules", "add", "--tool", "delete_ticket", "--effect", "allow", **keys)
        assert code == 0, err
        assert isinstance(await world.driver.start(["t2"], run="run-cli-rule"), Finished)
        assert world.tickets.ids() == ["t1"]


def test_a_key_other_users_can_read_is_refused_by_the_cli(tmp_path: Path) -> None:
    keyring = Keyring.init(tmp_path / "keys")
    os.chmod(keyring.private_path(keyring.current), 0o644)
    code, _, err = cli("--db", "memory:", "approve", "req_x", CROSSGATE_AUTHORITY_DIR=str(keyring.directory))
    assert code == 1 and "other users may read or change it" in err and err.count("\n") == 1


def test_one_line_in_a_notebook_makes_its_gates_verify() -> None:
    from crossgate import MemoryStore, ReviewQueue
    from crossgate_openai import Gate

    queue = ReviewQueue(MemoryStore(), authority=Authority.generate())
    assert Gate(queue).queue.verified  # type: ignore[attr-defined]
