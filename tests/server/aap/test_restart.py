"""With ``aap_registry_path``, instances, credentials and idempotency keys survive a server restart."""

from __future__ import annotations

import stat
from pathlib import Path

import httpx
import pytest
from agentapprovalprotocol import Client

from crossgate import ReviewQueue
from crossgate.server.app import create_app
from crossgate.stores import open_store
from tests.server.aap.conftest import PROVISIONER, aap_settings
from tests.server.conftest import POLICY, TOKENS
from tests.server.live import live_server

pytestmark = pytest.mark.slow


def serve(tmp_path: Path) -> tuple[ReviewQueue, object]:
    queue = ReviewQueue(open_store(str(tmp_path / "q.db")), POLICY)
    return queue, create_app(queue, aap_settings(aap_registry_path=str(tmp_path / "aap.jsonl")))


def test_a_restart_keeps_instances_keys_and_requests(tmp_path: Path) -> None:
    provision = {"Authorization": f"Bearer {PROVISIONER}", "Idempotency-Key": "p-1"}
    body = {"tool": "delete_ticket", "arguments": {"id": "t3"}, "timeout": "10m"}
    queue, app = serve(tmp_path)
    with live_server(app) as url:
        made = httpx.post(f"{url}/aap/v1/instances", json={"instance_name": "laptop"}, headers=provision).json()
        token, iid = made["credential"]["token"], made["instance"]["id"]
        request = Client(f"{url}/aap", token).create(body, "c-1")
    queue.close()
    assert stat.S_IMODE((tmp_path / "aap.jsonl").stat().st_mode) == 0o600
    with (tmp_path / "aap.jsonl").open("a") as journal:
        journal.write('{"kind": "request", "da')  # a crash mid-write leaves a torn line

    queue, app = serve(tmp_path)
    with live_server(app) as url:
        again = httpx.post(f"{url}/aap/v1/instances", json={"instance_name": "laptop"}, headers=provision)
        assert again.status_code == 200 and again.json()["credential"]["token"] == token
        client = Client(f"{url}/aap", token)
        assert client.create(body, "c-1").id == request.id  # the key still names the same request
        alice = {"Authorization": f"Bearer {TOKENS['alice']}"}
        httpx.post(f"{url}/api/requests/{request.id}/decision", json={"kind": "approve"}, headers=alice)
        assert client.get(request.id, wait=5).status == "approved"
        deleted = httpx.delete(f"{url}/aap/v1/instances/{iid}", headers={"Authorization": f"Bearer {PROVISIONER}"})
        assert deleted.status_code == 204
    queue.close()

    queue, app = serve(tmp_path)
    with live_server(app) as url:
        r = httpx.get(f"{url}/aap/v1/requests/{request.id}", headers={"Authorization": f"Bearer {token}"})
        assert r.status_code == 401  # a deleted instance stays deleted
    queue.close()
