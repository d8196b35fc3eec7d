"""Agent and provisioner credentials in the tokens file, as docs/agents-over-http.md shows them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from crossgate.errors import ConfigurationError
from crossgate.server.settings import ServerSettings, agent_token, load_config, reviewer

DOC = Path(__file__).parents[3] / "docs" / "agents-over-http.md"
ENV = {"ALICE_TOKEN": "alice-token-0001", "AAP_PROVISIONER_TOKEN": "p" * 20, "BILLING_BOT_TOKEN": "b" * 20}


def test_the_documented_tokens_files_load(tmp_path: Path) -> None:
    blocks = re.findall(r"```toml\n(.*?)```", DOC.read_text(encoding="utf-8"), re.S)
    loaded = []
    for index, block in enumerate(blocks):
        path = tmp_path / f"tokens-{index}.toml"
        path.write_text("\n".join(line.strip() for line in block.splitlines()), encoding="utf-8")
        loaded.append([(a.name, a.scope) for a in ServerSettings(**load_config(path, ENV)).agents])
    assert loaded == [[("billing-bot", "agent")], [("ops", "provisioner"), ("billing-bot", "agent")]]


def test_the_registry_path_is_relative_to_the_tokens_file(tmp_path: Path) -> None:
    path = tmp_path / "tokens.toml"
    path.write_text('aap_registry = "aap.jsonl"\n', encoding="utf-8")
    assert load_config(path, {})["aap_registry_path"] == str(tmp_path / "aap.jsonl")


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        ('name = "x"\ntoken = "' + "t" * 20 + '"\nscope = "reviewer"', "scope must be agent or provisioner"),
        ('name = "x"\ntoken = "short"', "too short"),
        ('name = "x"', "needs token or token_env"),
        ('name = "x"\ntoken = "' + "t" * 20 + '"\ndecide = true', "unknown keys decide"),
    ],
)
def test_a_bad_agent_entry_is_one_line_naming_the_file(tmp_path: Path, entry: str, problem: str) -> None:
    path = tmp_path / "tokens.toml"
    path.write_text(f"[[agents]]\n{entry}\n", encoding="utf-8")
    with pytest.raises(ConfigurationError, match=problem) as exc:
        load_config(path, {})
    assert str(path) in str(exc.value) and "\n" not in str(exc.value)


def test_an_agent_may_not_share_a_reviewers_token() -> None:
    token = "shared-token-00001"
    with pytest.raises(ConfigurationError, match="listed twice"):
        ServerSettings(reviewers=(reviewer("alice", token),), agents=(agent_token("bot", token),))


def test_the_tokens_file_may_let_aap_receivers_be_private(tmp_path: Path) -> None:
    path = tmp_path / "tokens.toml"
    path.write_text("aap_webhook_allow_private = true\n", encoding="utf-8")
    assert ServerSettings(**load_config(path, {})).aap_webhook_allow_private is True
    path.write_text('aap_webhook_allow_private = "yes"\n', encoding="utf-8")
    with pytest.raises(ConfigurationError, match="aap_webhook_allow_private must be true or false"):
        load_config(path, {})
