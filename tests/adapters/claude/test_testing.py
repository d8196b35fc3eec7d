"""crossgate_claude.testing on its own: the scripted Messages API over plain HTTP, and that it stays optional."""

from __future__ import annotations

import json
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from crossgate_claude.testing import (
    FINAL_TEXT,
    MessagesAPI,
    agent_call,
    first_prompt,
    recorded,
    scripted_calls,
    tool_results,
    tool_uses,
)


def post(api: MessagesAPI, body: dict[str, Any]) -> list[dict[str, Any]]:
    request = urllib.request.Request(
        api.base_url + "/v1/messages", data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=5) as response:
        text = response.read().decode()
    return [json.loads(line[len("data: ") :]) for line in text.splitlines() if line.startswith("data: ")]


def test_the_prompt_scripts_tool_calls_then_a_final_answer(tmp_path: Path) -> None:
    record = tmp_path / "requests.jsonl"
    tools = [{"name": "mcp__tickets__delete_ticket"}]
    prompt = 'CALL delete_ticket {"id": "t3"}\nALSO delete_ticket {"id": "t1"}'
    first = {"model": "m", "tools": tools, "messages": [{"role": "user", "content": prompt}]}
    with MessagesAPI(record_path=record) as api:
        events = post(api, first)
        starts = [e["content_block"] for e in events if e["type"] == "content_block_start"]
        assert [(b["type"], b["name"]) for b in starts] == [("tool_use", "mcp__tickets__delete_ticket")] * 2
        partial = [e["delta"]["partial_json"] for e in events if e["type"] == "content_block_delta"]
        assert json.loads(partial[0] + partial[1]) == {"id": "t3"}
        assert events[-2]["delta"]["stop_reason"] == "tool_use"

        uses = [{"type": "tool_use", "id": b["id"], "name": b["name"], "input": {}} for b in starts]
        answers = [{"type": "tool_result", "tool_use_id": b["id"], "content": "no", "is_error": True} for b in starts]
        turns = [{"role": "assistant", "content": uses}, {"role": "user", "content": answers}]
        second = {**first, "messages": [*first["messages"], *turns]}
        events = post(api, second)
        assert events[-2]["delta"]["stop_reason"] == "end_turn"
        assert [e["delta"]["text"] for e in events if e["type"] == "content_block_delta"] == [FINAL_TEXT]

    assert api.requests == [first, second] == recorded(record)
    assert [b["id"] for b in tool_uses(api.requests)] == [b["id"] for b in starts]
    assert tool_results(second) == answers


def test_base_url_before_start_is_a_clear_error() -> None:
    with pytest.raises(RuntimeError, match="start the MessagesAPI"):
        _ = MessagesAPI().base_url


def test_importing_the_adapter_does_not_load_the_test_double() -> None:
    loaded = "'crossgate_claude.testing' in sys.modules, 'http.server' in sys.modules"
    code = f"import sys, crossgate_claude; print({loaded})"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


def test_agent_call_scripts_a_subagent_through_the_prompt_it_is_given() -> None:
    line = agent_call("ticket-cleaner", ("delete_ticket", {"id": "t3"}), ("list_tickets", {}), background=False)
    [(tool, args)] = scripted_calls(line)
    assert tool == "Agent"
    assert (args["subagent_type"], args["run_in_background"]) == ("ticket-cleaner", False)
    assert scripted_calls(args["prompt"]) == [("delete_ticket", {"id": "t3"}), ("list_tickets", {})]
    assert "run_in_background" not in scripted_calls(agent_call("x", ("list_tickets", {})))[0][1]
    # The subagent's conversation starts with that prompt, which is how its requests are told apart.
    body = {"messages": [{"role": "user", "content": [{"type": "text", "text": args["prompt"]}]}]}
    assert first_prompt(body) == args["prompt"]
    assert first_prompt({"messages": []}) == ""
