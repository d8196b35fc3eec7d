"""An in-process double of the Claude Code CLI that speaks the SDK's control protocol.

It runs the SDK's real ``Query`` and ``ClaudeSDKClient`` unchanged and copies the CLI's observed
behaviour (see the SDK notes): PreToolUse hooks first (deny > defer > ask > allow, a failing hook
blocks when its matcher says so), then allow rules and modes, then ``can_use_tool``; SDK MCP tools run
through ``mcp_message``; a ``defer`` ends the turn with ``tool_deferred`` and a later connection with
``resume`` and no prompt replays the hook and re-asks permission for the same ``tool_use_id``. It is
not the CLI's policy engine, so the real-CLI tests cover the same paths once more.

An ``Agent`` call runs a subagent in the foreground, as the CLI 2.1.332 was seen to: SubagentStart, then
the calls its prompt scripts, with ``agent_id`` and ``agent_type`` in every hook input and only
``agent_id`` in ``can_use_tool``; a call deferred inside the subagent is dropped (no result, no
``tool_deferred``, no SubagentStop) and the subagent reports that it returned no output.

The scripted model is the one of ``crossgate_claude.testing``: ``CALL <tool> <json>`` lines, one call per turn.
"""

from __future__ import annotations

import asyncio
import json
import re
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from claude_agent_sdk import ClaudeAgentOptions, Transport

from crossgate_claude.testing import FINAL_TEXT, scripted_calls

NO_OUTPUT = "(Subagent completed but returned no output.)"


@dataclass(frozen=True)
class Subagent:
    """One invocation of a subagent."""

    agent_id: str
    agent_type: str


@dataclass
class Session:
    """What the CLI keeps on disk for one session."""

    id: str
    calls: list[tuple[str, dict[str, Any]]]
    next_call: int = 0
    deferred: dict[str, Any] | None = None
    allowed: set[str] = field(default_factory=set)
    """Tools a session ``addRules allow`` update allowed."""


@dataclass
class World:
    """State shared by every fake CLI process of one test: sessions, what ran, what the model was told."""

    sessions: dict[str, Session] = field(default_factory=dict)
    ran: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    """(tool, input) of every tool the CLI executed."""
    told: dict[str, dict[str, Any]] = field(default_factory=dict)
    """tool_use_id -> the tool_result the model received."""
    permission_asks: list[str] = field(default_factory=list)
    """tool_use_id of every can_use_tool request, in order."""
    permission_agents: list[str | None] = field(default_factory=list)
    """The ``agent_id`` each can_use_tool request carried, in order."""
    subagents: list[Subagent] = field(default_factory=list)
    """Every subagent invocation, in order."""
    run_instead: dict[str, Any] | None = None
    """Input a faulty CLI runs in place of the permitted one (to test the executed-input check)."""
    counter: int = 0

    def transport(self, options: ClaudeAgentOptions) -> FakeCLI:
        return FakeCLI(self, options)

    def results_text(self) -> list[tuple[bool, str]]:
        return [(bool(b.get("is_error")), str(b.get("content"))) for b in self.told.values()]


class FakeCLI(Transport):
    """One CLI process."""

    def __init__(self, world: World, options: ClaudeAgentOptions) -> None:
        self.world = world
        self.options = options
        self._out: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        self._pending: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self._hooks: dict[str, list[dict[str, Any]]] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self._ready = False
        self._mcp_ready: set[str] = set()
        self._seq = 0

    # Transport ------------------------------------------------------------------------------------
    async def connect(self) -> None:
        self._ready = True

    def is_ready(self) -> bool:
        return self._ready

    async def end_input(self) -> None:
        return None

    async def close(self) -> None:
        self._ready = False
        for task in self._tasks:
            task.cancel()
        await self._out.put(None)

    async def read_messages(self) -> AsyncIterator[dict[str, Any]]:
        while True:
            message = await self._out.get()
            if message is None:
                return
            yield message

    async def write(self, data: str) -> None:
        for line in data.splitlines():
            if line.strip():
                self._receive(json.loads(line))

    # protocol ------------------------------------------------------------------------------------
    def _receive(self, message: dict[str, Any]) -> None:
        kind = message.get("type")
        if kind == "control_response":
            response = message["response"]
            future = self._pending.pop(response["request_id"], None)
            if future is not None and not future.done():
                future.set_result(response)
        elif kind == "control_request" and message["request"]["subtype"] == "initialize":
            self._hooks = message["request"].get("hooks") or {}
            reply = {"commands": [], "agents": [], "output_style": "default", "hook_on_failure_supported": True}
            self._emit(_control_success(message["request_id"], reply))
            if self.options.resume:
                self._spawn(self._resume(self.options.resume))
        elif kind == "control_request":
            self._emit(_control_success(message["request_id"], {}))
        elif kind == "user":
            self._spawn(self._prompt(_text(message["message"]["content"])))

    def _spawn(self, coro: Any) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _emit(self, message: dict[str, Any]) -> None:
        self._out.put_nowait(message)

    async def _request(self, request: dict[str, Any]) -> dict[str, Any]:
        self._seq += 1
        rid = f"cli_req_{self._seq}"
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[rid] = future
        self._emit({"type": "control_request", "request_id": rid, "request": request})
        return await future

    # turns ---------------------------------------------------------------------------------------
    async def _prompt(self, prompt: str) -> None:
        session = Session(id=str(uuid.uuid4()), calls=scripted_calls(prompt))
        self.world.sessions[session.id] = session
        self._emit({"type": "system", "subtype": "init", "session_id": session.id, "tools": [], "model": "fake"})
        await self._loop(session)

    async def _resume(self, session_id: str) -> None:
        session = self.world.sessions.get(session_id)
        if session is None or session.deferred is None:
            return  # like the CLI: a resume with nothing pending waits for input forever
        call, session.deferred = session.deferred, None
        self._emit({"type": "system", "subtype": "init", "session_id": session.id, "tools": [], "model": "fake"})
        if await self._call(session, call["name"], call["input"], call["id"], replay=True):
            await self._loop(session)

    async def _loop(self, session: Session) -> None:
        while session.next_call < len(session.calls):
            name, args = session.calls[session.next_call]
            session.next_call += 1
            self.world.counter += 1
            tool_use_id = f"toolu_fake_{self.world.counter:04d}"
            tool = self._resolve(name)
            self._emit(_assistant(session.id, [{"type": "tool_use", "id": tool_use_id, "name": tool, "input": args}]))
            if not await self._call(session, tool, args, tool_use_id, replay=False):
                return
        self._emit(_assistant(session.id, [{"type": "text", "text": FINAL_TEXT}]))
        self._emit(_result(session.id, "end_turn"))

    def _resolve(self, name: str) -> str:
        servers = list(self.options.mcp_servers) if isinstance(self.options.mcp_servers, dict) else []
        if name.startswith("mcp__") or name[:1].isupper() or not servers:
            return name
        return f"mcp__{servers[0]}__{name}"

    async def _call(
        self,
        session: Session,
        tool: str,
        args: dict[str, Any],
        tool_use_id: str,
        *,
        replay: bool,
        agent: Subagent | None = None,
    ) -> bool:
        """One tool use; False when the turn ended (deferred)."""
        verdict, reason, args = await self._pre_tool_use(session, tool, args, tool_use_id, replay=replay, agent=agent)
        if verdict == "defer" and agent is not None:
            return False  # the CLI drops a subagent's deferred call and ends the subagent's turn
        if verdict == "defer":
            session.deferred = {"id": tool_use_id, "name": tool, "input": args}
            self._emit(_result(session.id, "tool_deferred", deferred=session.deferred))
            return False
        if verdict == "deny":
            return self._tell(session, tool_use_id, f"PreToolUse:{tool} hook error: {reason}", error=True)
        auto = verdict == "allow" or (verdict is None and self._auto_allowed(session, tool))
        if not auto:
            answer = await self._can_use_tool(tool, args, tool_use_id, reason if verdict == "ask" else None, agent)
            if answer.get("subtype") == "error":
                message = f"Tool permission request failed: Error: {answer.get('error')}"
                return self._tell(session, tool_use_id, message, error=True)
            payload = answer["response"]
            if payload.get("behavior") != "allow":
                return self._tell(session, tool_use_id, payload.get("message", ""), error=True)
            args = payload.get("updatedInput", args)
            for update in payload.get("updatedPermissions") or []:
                if update.get("type") == "addRules" and update.get("behavior") == "allow":
                    session.allowed.update(r["toolName"] for r in update.get("rules", []))
        if self.world.run_instead is not None:
            args = self.world.run_instead
        output = await self._subagent(session, args) if tool == "Agent" else await self._run_tool(tool, args)
        await self._hook("PostToolUse", session, tool, args, tool_use_id, extra={"tool_response": output}, agent=agent)
        return self._tell(session, tool_use_id, output, error=False)

    async def _subagent(self, session: Session, args: dict[str, Any]) -> str:
        """Run a subagent in the foreground; its report is the Agent tool's result."""
        self.world.counter += 1
        agent = Subagent(f"agent_{self.world.counter:04d}", str(args.get("subagent_type") or "general-purpose"))
        self.world.subagents.append(agent)
        await self._fire("SubagentStart", {"session_id": session.id, **_agent_fields(agent)}, tool=None)
        for name, sub_args in scripted_calls(str(args.get("prompt") or "")):
            self.world.counter += 1
            tool_use_id = f"toolu_fake_{self.world.counter:04d}"
            if not await self._call(session, self._resolve(name), sub_args, tool_use_id, replay=False, agent=agent):
                return NO_OUTPUT
        await self._fire("SubagentStop", {"session_id": session.id, **_agent_fields(agent)}, tool=None)
        return FINAL_TEXT

    def _auto_allowed(self, session: Session, tool: str) -> bool:
        if self.options.permission_mode == "bypassPermissions" or tool in session.allowed:
            return True
        return any(entry in (tool, f"{tool}()", f"{tool}(*)") for entry in self.options.allowed_tools)

    async def _pre_tool_use(
        self,
        session: Session,
        tool: str,
        args: dict[str, Any],
        tool_use_id: str,
        *,
        replay: bool,
        agent: Subagent | None,
    ) -> tuple[str | None, str | None, dict[str, Any]]:
        extra: dict[str, Any] | None = {} if replay else None
        outputs = await self._hook("PreToolUse", session, tool, args, tool_use_id, extra=extra, agent=agent)
        decisions: dict[str, str | None] = {}
        for output in outputs:
            if output is None:
                decisions.setdefault("deny", '[callback]: failed; blocking because onFailure is "block"')
                continue
            specific = output.get("hookSpecificOutput") or {}
            if "updatedInput" in specific:
                args = specific["updatedInput"]
            if decision := specific.get("permissionDecision"):
                decisions.setdefault(decision, specific.get("permissionDecisionReason"))
        for decision in ("deny", "defer", "ask", "allow"):
            if decision in decisions:
                return decision, decisions[decision], args
        return None, None, args

    async def _hook(
        self,
        event: str,
        session: Session,
        tool: str,
        args: dict[str, Any],
        tool_use_id: str,
        *,
        extra: dict[str, Any] | None,
        agent: Subagent | None = None,
    ) -> list[dict[str, Any] | None]:
        """Call every matching hook; None stands for a failure of a blocking matcher."""
        data = {
            "session_id": session.id,
            "hook_event_name": event,
            "tool_name": tool,
            "tool_input": args,
            "tool_use_id": tool_use_id,
            "permission_mode": self.options.permission_mode or "default",
            "cwd": "/fake",
            **(_agent_fields(agent) if agent else {}),
            **(extra or {}),
        }
        if extra is None:
            data["prompt_id"] = str(uuid.uuid4())
        return await self._fire(event, data, tool=tool, tool_use_id=tool_use_id)

    async def _fire(
        self, event: str, data: dict[str, Any], *, tool: str | None, tool_use_id: str | None = None
    ) -> list[dict[str, Any] | None]:
        """Send ``data`` to every hook of ``event`` whose matcher fits ``tool``."""
        data = {"hook_event_name": event, "cwd": "/fake", **data}
        tool_use_id = tool_use_id or str(uuid.uuid4())  # the CLI sends a random id for non-tool events
        outputs: list[dict[str, Any] | None] = []
        for matcher in self._hooks.get(event, []):
            pattern = matcher.get("matcher")
            if pattern and tool is not None and not re.fullmatch(pattern, tool):
                continue
            for callback_id in matcher["hookCallbackIds"]:
                request = {
                    "subtype": "hook_callback",
                    "callback_id": callback_id,
                    "input": data,
                    "tool_use_id": tool_use_id,
                }
                try:
                    reply = await asyncio.wait_for(self._request(request), matcher.get("timeout") or 60)
                except TimeoutError:
                    outputs.append(
                        {"hookSpecificOutput": {"permissionDecision": "deny", "permissionDecisionReason": "timeout"}}
                    )
                    continue
                if reply.get("subtype") == "error":
                    if matcher.get("onFailure") == "block":
                        outputs.append(None)
                    continue
                outputs.append(reply.get("response") or {})
        return outputs

    async def _can_use_tool(
        self, tool: str, args: dict[str, Any], tool_use_id: str, reason: str | None, agent: Subagent | None
    ) -> dict[str, Any]:
        self.world.permission_asks.append(tool_use_id)
        self.world.permission_agents.append(agent.agent_id if agent else None)
        request: dict[str, Any] = {
            "subtype": "can_use_tool",
            "tool_name": tool,
            "input": args,
            "tool_use_id": tool_use_id,
            "display_name": tool.rsplit("__", 1)[-1].replace("_", " ").title(),
            "permission_suggestions": [
                {"type": "addRules", "rules": [{"toolName": tool}], "behavior": "allow", "destination": "localSettings"}
            ],
        }
        if reason:
            request["decision_reason"] = reason
        if agent is not None:
            request["agent_id"] = agent.agent_id  # never agent_type, as the CLI
        return await self._request(request)

    async def _run_tool(self, tool: str, args: dict[str, Any]) -> str:
        self.world.ran.append((tool, args))
        if not tool.startswith("mcp__"):
            return f"ran {tool} {json.dumps(args, sort_keys=True)}"
        _, server, name = tool.split("__", 2)
        if server not in self._mcp_ready:
            await self._mcp(server, {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": _MCP_INIT})
            await self._mcp(server, {"jsonrpc": "2.0", "method": "notifications/initialized"})
            self._mcp_ready.add(server)
        reply = await self._mcp(
            server, {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": args}}
        )
        result = reply["response"]["mcp_response"].get("result", {})
        return "".join(c.get("text", "") for c in result.get("content", []))

    async def _mcp(self, server: str, message: dict[str, Any]) -> dict[str, Any]:
        return await self._request({"subtype": "mcp_message", "server_name": server, "message": message})

    def _tell(self, session: Session, tool_use_id: str, content: str, *, error: bool) -> bool:
        block = {"type": "tool_result", "tool_use_id": tool_use_id, "content": content, "is_error": error}
        self.world.told[tool_use_id] = block
        self._emit({"type": "user", "session_id": session.id, "message": {"role": "user", "content": [block]}})
        return True


_MCP_INIT = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "fake-cli", "version": "0"}}


def _agent_fields(agent: Subagent) -> dict[str, str]:
    return {"agent_id": agent.agent_id, "agent_type": agent.agent_type}


def _control_success(request_id: str, payload: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "control_response",
        "response": {"subtype": "success", "request_id": request_id, "response": payload},
    }


def _assistant(session: str, content: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "type": "assistant",
        "session_id": session,
        "message": {"role": "assistant", "model": "fake", "content": content},
        "parent_tool_use_id": None,
    }


def _result(session: str, stop_reason: str, *, deferred: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "type": "result",
        "subtype": "success",
        "duration_ms": 1,
        "duration_api_ms": 1,
        "is_error": False,
        "num_turns": 1,
        "session_id": session,
        "stop_reason": stop_reason,
        "terminal_reason": stop_reason if stop_reason == "tool_deferred" else "completed",
        "result": "" if deferred else FINAL_TEXT,
        "deferred_tool_use": deferred,
    }


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(b.get("text", "") for b in content if isinstance(b, dict))
