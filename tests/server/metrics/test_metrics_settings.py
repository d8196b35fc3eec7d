"""Where the metrics token comes from: the tokens file's ``metrics_token_env``, or ``serve --metrics-token-env``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from crossgate.errors import ConfigurationError
from crossgate.server.settings import hash_token, load_config

TOKEN = "metrics-token-000001"


def tokens_file(tmp_path: Path) -> Path:
    path = tmp_path / "reviewers.toml"
    path.write_text('metrics_token_env = "METRICS"\n\n[[reviewers]]\nname = "ann"\ntoken = "ann-token-0001"\n')
    return path


def test_the_tokens_file_names_the_variable_that_holds_the_metrics_token(tmp_path: Path) -> None:
    config = load_config(tokens_file(tmp_path), env={"METRICS": TOKEN})
    assert config["metrics_token_sha256"] == hash_token(TOKEN)
    assert TOKEN not in repr(config)


@pytest.mark.parametrize(("env", "problem"), [({}, "which is not set"), ({"METRICS": "short"}, "too short")])
def test_an_unset_or_short_metrics_token_is_refused(tmp_path: Path, env: dict[str, str], problem: str) -> None:
    with pytest.raises(ConfigurationError, match=problem):
        load_config(tokens_file(tmp_path), env=env)


@pytest.mark.slow
def test_serve_refuses_an_unset_metrics_token_variable_in_one_line() -> None:
    env = {k: v for k, v in os.environ.items() if k != "NO_SUCH_METRICS_TOKEN"}
    argv = [
        sys.executable,
        "-m",
        "crossgate.cli",
        "--db",
        "memory:",
        "serve",
        "--metrics-token-env",
        "NO_SUCH_METRICS_TOKEN",
    ]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=60, env=env, check=False)
    assert done.returncode != 0
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, done.stderr
    assert "$NO_SUCH_METRICS_TOKEN" in lines[0] and "not set" in lines[0]
