"""``aap_webhook_allow_private`` reaches a real ``crossgate serve``: from its option and from its settings file.

A receiver on 127.0.0.1 (the AAP client's own ``Receiver``) is verified and its instance created when the
setting is on, and refused as ``invalid_webhook_url`` when it is not.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
from agentapprovalprotocol import Receiver
from agentapprovalprotocol.receiver import new_secret

from tests.server.aap.conftest import PROVISIONER
from tests.server.live import live_server
from tests.server.test_commands import CLI, ROOT, free_port

pytestmark = pytest.mark.slow
TOKENS_FILE = f"""
[[reviewers]]
name = "alice"
token = "alice-token-0001"

[[agents]]
name = "ops"
scope = "provisioner"
token = "{PROVISIONER}"
"""


class Served:
    """A running ``crossgate serve``: its address, and once stopped, what it wrote to stderr."""

    def __init__(self, base: str) -> None:
        self.base, self.err = base, ""


@contextmanager
def serve(tmp_path: Path, *, option: bool, in_file: bool) -> Iterator[Served]:
    tokens = tmp_path / "tokens.toml"
    tokens.write_text(("aap_webhook_allow_private = true\n" if in_file else "") + TOKENS_FILE, encoding="utf-8")
    port = free_port()
    args = [*CLI, "--db", "memory:", "serve", "--port", str(port), "--tokens", str(tokens), "--log-level", "warning"]
    if option:
        args.append("--aap-webhook-allow-private")
    env = {k: v for k, v in os.environ.items() if k != "CROSSGATE_TOKENS"}
    process = subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 30
    while True:
        try:
            if httpx.get(f"{base}/api/health", timeout=1).status_code == 200:
                break
        except httpx.HTTPError:
            pass
        assert process.poll() is None, process.stderr.read() if process.stderr else ""
        assert time.monotonic() < deadline, "serve did not come up"
        time.sleep(0.2)
    served = Served(base)
    try:
        yield served
    finally:
        process.send_signal(signal.SIGINT)
        served.err = process.communicate(timeout=20)[1]


@pytest.mark.parametrize(("option", "in_file"), [(True, False), (False, True)], ids=["option", "settings file"])
def test_a_loopback_receiver_is_verified_when_the_setting_is_on(tmp_path: Path, option: bool, in_file: bool) -> None:
    receiver = Receiver(resumers={})
    with live_server(receiver.asgi()) as hook, serve(tmp_path, option=option, in_file=in_file) as server:
        provisioned = asyncio.run(
            receiver.provision(provider_url=f"{server.base}/aap", provisioner_token=PROVISIONER, url=f"{hook}/aap")
        )
        assert provisioned.instance_id and provisioned.token
    assert "AAP webhook receivers may be plain-HTTP, loopback or private addresses" in server.err
    assert "Traceback" not in server.err


def test_without_the_setting_a_loopback_receiver_is_refused(tmp_path: Path) -> None:
    receiver = Receiver(resumers={})
    with live_server(receiver.asgi()) as hook, serve(tmp_path, option=False, in_file=False) as server:
        delivery = {
            "type": "webhook",
            "url": f"{hook}/aap",
            "registration_id": str(uuid.uuid4()),
            "signing_secret": new_secret(),
        }
        headers = {"Authorization": f"Bearer {PROVISIONER}", "Idempotency-Key": "k"}
        r = httpx.post(f"{server.base}/aap/v1/instances", json={"delivery": delivery}, headers=headers)
        assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_webhook_url", r.text
    assert "AAP webhook receivers" not in server.err and "Traceback" not in server.err
