"""Agent processes for the HTTP scenarios: the OpenAI ticket driver's CLI, given only the server URL and a token."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from crossgate.remote import TOKEN_ENV
from tests.remote.server import AGENT_TOKEN, ROOT

DRIVER = f"import sys; sys.path.insert(0, {str(ROOT)!r}); from tests.adapters.openai.driver import main; main()"
STORE_ENV = ("CROSSGATE_DB", "CROSSGATE_TEST_POSTGRES_URL", "CROSSGATE_TOKENS")


def agent_env() -> dict[str, str]:
    """This process's environment without anything naming the store, with the agent credential."""
    env = {k: v for k, v in os.environ.items() if k not in STORE_ENV}
    env[TOKEN_ENV] = AGENT_TOKEN
    return env


def agent(url: str, workdir: Path, tickets: Path, *args: str, timeout: float = 120) -> dict[str, Any]:
    """Run one step of the agent (``start --run R ids...`` or ``resume PARKED``) in a fresh process."""
    command, *rest = args
    argv = [sys.executable, "-c", DRIVER, command, "--db", url, "--tickets", str(tickets), "--workdir", str(workdir)]
    done = subprocess.run([*argv, *rest], capture_output=True, text=True, timeout=timeout, env=agent_env(), check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result
