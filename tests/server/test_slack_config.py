"""The Slack app's configuration: the ``[slack]`` table, secrets from the environment or files, the CLI options."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from crossgate.errors import ConfigurationError
from crossgate.server.settings import ServerSettings, load_config, reviewer
from tests.server.slack_fake import BOT_TOKEN, SIGNING_SECRET
from tests.server.test_commands import run_cli

ENV = {"SLACK_BOT_TOKEN": BOT_TOKEN, "SLACK_SIGNING_SECRET": SIGNING_SECRET, "ALICE": "alice-token-0001"}


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "reviewers.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_slack_table_reads_secrets_from_env_and_files(tmp_path: Path) -> None:
    (tmp_path / "secret").write_text(SIGNING_SECRET + "\n", encoding="utf-8")
    path = write(
        tmp_path,
        f"""
[slack]
channel = "C0REVIEWS"
bot_token_env = "SLACK_BOT_TOKEN"
signing_secret_file = "{tmp_path / "secret"}"
escalate_after = 900

[[reviewers]]
name = "alice"
token_env = "ALICE"
slack_user = "U0ALICE"
""",
    )
    fields = load_config(path, ENV)
    settings = ServerSettings(**fields)
    assert settings.slack is not None
    assert (settings.slack.channel, settings.slack.bot_token, settings.slack.signing_secret) == (
        "C0REVIEWS",
        BOT_TOKEN,
        SIGNING_SECRET,
    )
    assert settings.slack.escalate_after == 900
    assert BOT_TOKEN not in repr(settings.slack) and SIGNING_SECRET not in repr(settings.slack)
    found = settings.slack_reviewer("U0ALICE")
    assert found is not None and found.name == "alice"
    assert settings.slack_reviewer("U0OTHER") is None


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ('bot_token = "xoxb-1"\nsigning_secret_env = "SLACK_SIGNING_SECRET"', "write bot_token_env or bot_token_file"),
        ('bot_token_env = "NOT_SET"\nsigning_secret_env = "SLACK_SIGNING_SECRET"', "$NOT_SET, which is not set"),
        ('bot_token_file = "/nonexistent/token"\nsigning_secret_env = "X"', "cannot read /nonexistent/token"),
        ('bot_token_env = "ALICE"\nsigning_secret_env = "SLACK_SIGNING_SECRET"', "must be a bot token (xoxb-"),
        ('bot_token_env = "SLACK_BOT_TOKEN"\nsigning_secret_env = "SLACK_SIGNING_SECRET"\nhook = 1', "slack takes"),
    ],
)
def test_bad_slack_tables_are_refused_in_one_line(tmp_path: Path, table: str, message: str) -> None:
    path = write(tmp_path, f'[slack]\nchannel = "C1"\n{table}\n')
    with pytest.raises(ConfigurationError) as raised:
        ServerSettings(**load_config(path, ENV))
    assert message in str(raised.value)
    assert "\n" not in str(raised.value)


def test_a_slack_user_is_one_reviewer() -> None:
    with pytest.raises(ConfigurationError, match="Slack user id is given to two reviewers"):
        ServerSettings(
            reviewers=(
                reviewer("alice", "alice-token-0001", slack_user="U1"),
                reviewer("bob", "bob-token-00002", slack_user="U1"),
            )
        )


@pytest.mark.slow
def test_serve_without_the_slack_secrets_says_where_they_come_from(tmp_path: Path) -> None:
    result = run_cli(
        "--db", "memory:", "serve", "--slack-channel", "C0REVIEWS", env={"CROSSGATE_TOKENS": "a:aaaaaaaa11"}
    )
    assert result.returncode != 0
    assert "--slack-bot-token-file or $CROSSGATE_SLACK_BOT_TOKEN" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.slow
def test_serve_runs_the_slack_app_with_secrets_from_files(tmp_path: Path) -> None:
    import subprocess
    import time

    import httpx

    from tests.server.demo_loader import ROOT
    from tests.server.slack_fake import signed
    from tests.server.test_commands import CLI, free_port

    (tmp_path / "token").write_text(BOT_TOKEN, encoding="utf-8")
    (tmp_path / "secret").write_text(SIGNING_SECRET, encoding="utf-8")
    port = free_port()
    args = [*CLI, "--db", "memory:", "serve", "--port", str(port), "--log-level", "warning"]
    args += ["--slack-channel", "C0REVIEWS", "--slack-bot-token-file", str(tmp_path / "token")]
    args += ["--slack-signing-secret-file", str(tmp_path / "secret")]
    env = {**os.environ, "CROSSGATE_TOKENS": "ops:ops-token-123"}
    process = subprocess.Popen(args, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 30
        while True:
            try:
                if httpx.get(f"{base}/api/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert process.poll() is None and time.monotonic() < deadline, "serve did not come up"
            time.sleep(0.2)
        closed = {"type": "view_closed", "user": {"id": "U0ALICE"}}
        body, headers = signed(closed)
        assert httpx.post(f"{base}/slack/interactions", content=body, headers=headers).status_code == 200
        body, headers = signed(closed, secret="another-apps-signing-secret")
        forged = httpx.post(f"{base}/slack/interactions", content=body, headers=headers)
        assert forged.status_code == 401
    finally:
        process.terminate()
        process.communicate(timeout=20)
