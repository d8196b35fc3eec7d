"""Who makes each tool call of one Claude session: the main thread, subagents, and who started them.

What the bundled CLI (2.1.332, verified) reports:

- The main thread's hook inputs carry no ``agent_id``. They carry ``agent_type`` when the session runs its
  main thread as a named agent: ``--agent <name>`` (``ClaudeAgentOptions(extra_args={"agent": ...})``,
  which also finds agents given with ``agents=``), or the ``agent`` setting (only for agents defined in
  ``.claude/agents``). An ``--agent`` naming no agent is ignored: no ``agent_type``, no restriction.
- A subagent's hook inputs carry ``agent_id`` (one invocation) and ``agent_type`` (its name);
  ``can_use_tool`` only ``agent_id``. A subagent whose definition lists ``Agent`` can start subagents
  itself, to a depth of three (a third-level subagent is not offered ``Agent``).
- Nothing in a hook input names the parent. SubagentStart (``agent_id``, ``agent_type``) follows the
  ``Agent`` call that started it, once that call is allowed, so ``Agents`` links the two: the start of
  a subagent of type T goes to the allowed, not yet started launch of T. When launches by different
  parents could match, the parent is left unknown rather than guessed.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field, replace
from typing import Any

log = logging.getLogger("crossgate_claude")

SUBAGENT_TOOLS = frozenset({"Agent", "Task"})
"""The tool an agent starts a subagent with (``Agent``; ``Task`` in the CLI's init message)."""
UNKNOWN_AGENT = "crossgate could not tell which agent made this tool call, so it was not run."
NOT_RUN_AS = (
    "This session was started to run as the agent {agent!r}, but the CLI does not run it as that agent "
    "(is it defined?), so crossgate did not run this tool call."
)
MAIN_MISMATCH = (
    "crossgate names this session's main agent {named!r}, but the CLI runs it as the agent {running!r} "
    "(an 'agent' setting?), so crossgate did not run this tool call."
)


class UnnamedCaller(Exception):
    """The call cannot be attributed to an agent crossgate can name; the message is what the model reads."""


@dataclass(frozen=True)
class Caller:
    """Who made one tool call: the neutral agent name, and the subagent invocation when there is one."""

    agent: str | None
    agent_id: str | None = None


@dataclass
class Launch:
    """An ``Agent`` call: who made it, the type it asked for, and the invocation it started."""

    tool_use_id: str | None
    parent: Caller
    subagent_type: str | None
    allowed: bool = False
    agent_id: str | None = None
    """The invocation it started, once SubagentStart came."""
    finished: bool = False
    """Its PostToolUse came (for a background subagent that may be before SubagentStart)."""


@dataclass
class Agents:
    """The agents of one session, as its hooks report them."""

    main: str | None = None
    """The main thread's name: ``Gate(agent=...)``, or the ``--agent`` the options pass."""
    cli_agent: str | None = None
    """The ``--agent`` the options pass, if any: the CLI must then report it for main-thread calls."""
    types: dict[str, str] = field(default_factory=dict)
    """Subagent invocation (``agent_id``) -> its type, from SubagentStart and PreToolUse inputs."""
    live: set[str] = field(default_factory=set)
    """Subagent invocations started and not yet stopped."""
    launches: dict[str, Launch] = field(default_factory=dict)
    """tool_use_id -> ``Agent`` calls not refused, until both their subagent started and the call finished."""
    parents: dict[str, Launch] = field(default_factory=dict)
    """Subagent invocation -> the launch that started it, when that is certain."""

    def of_hook(self, data: dict[str, Any]) -> Caller:
        """The agent of a hook input; raises ``UnnamedCaller`` when crossgate cannot name it."""
        agent_id = str(data.get("agent_id") or "") or None
        agent_type = str(data.get("agent_type") or "") or None
        if agent_id is None:
            return self._main(agent_type)
        if agent_type is not None:
            self.types[agent_id] = agent_type
        agent_type = agent_type or self.types.get(agent_id)
        if agent_type is None:
            raise UnnamedCaller(UNKNOWN_AGENT)
        return Caller(agent_type, agent_id)

    def of_permission(self, agent_id: str | None) -> Caller:
        """The agent of a ``can_use_tool`` request the hook did not see (its context has only ``agent_id``)."""
        if agent_id is None:
            return Caller(self.main)
        agent_type = self.types.get(agent_id)
        if agent_type is None:
            raise UnnamedCaller(UNKNOWN_AGENT)
        return Caller(agent_type, agent_id)

    def _main(self, agent_type: str | None) -> Caller:
        # A main agent named by crossgate but run as another (or as none) would escape the rules for it.
        if agent_type is None:
            if self.cli_agent is not None:
                raise UnnamedCaller(NOT_RUN_AS.format(agent=self.cli_agent))
            return Caller(self.main)
        if self.main is not None and agent_type != self.main:
            raise UnnamedCaller(MAIN_MISMATCH.format(named=self.main, running=agent_type))
        return Caller(agent_type)

    def context(self, caller: Caller) -> dict[str, Any]:
        """What the call's context says about the subagent and who started it (empty for the main thread)."""
        if caller.agent_id is None:
            return {}
        launch = self.parents.get(caller.agent_id)
        if launch is None:
            return {"agent_id": caller.agent_id}
        return {
            "agent_id": caller.agent_id,
            "parent_agent": launch.parent.agent,
            "parent_agent_id": launch.parent.agent_id,
            "parent_tool_use_id": launch.tool_use_id,
        }

    # launches -----------------------------------------------------------------------------------
    def launch(self, tool_use_id: str, caller: Caller, args: dict[str, Any], *, allowed: bool) -> None:
        """Note an ``Agent`` call the gate did not refuse (``allowed``: nothing more will be asked)."""
        kind = args.get("subagent_type")
        known = self.launches.get(tool_use_id)
        if known is not None:
            known.allowed = known.allowed or allowed
            return
        self.launches[tool_use_id] = Launch(tool_use_id, caller, str(kind) if kind else None, allowed)

    def allowed(self, tool_use_id: str) -> None:
        """``can_use_tool`` allowed the call: if it is a launch, its subagent may start now."""
        if tool_use_id in self.launches:
            self.launches[tool_use_id].allowed = True

    def refused(self, tool_use_id: str) -> None:
        """The call was refused: no subagent will start from it."""
        self.launches.pop(tool_use_id, None)

    def finished(self, tool_use_id: str) -> None:
        """The call finished. A background launch may finish before its subagent starts: kept until then."""
        launch = self.launches.get(tool_use_id)
        if launch is not None:
            launch.finished = True
            if launch.agent_id is not None:
                del self.launches[tool_use_id]

    @property
    def launching(self) -> bool:
        """Some ``Agent`` call has not started its subagent yet: one may be about to start."""
        return any(launch.agent_id is None for launch in self.launches.values())

    def started(self, agent_id: str, agent_type: str) -> None:
        """A subagent invocation started: note its type, and link it to the launch that started it."""
        self.live.add(agent_id)
        if agent_type:
            self.types[agent_id] = agent_type
        if agent_id in self.parents:
            return
        candidates = [
            launch
            for launch in self.launches.values()
            if launch.allowed and launch.agent_id is None and launch.subagent_type in (agent_type, None)
        ]
        if not candidates:
            return
        launch = candidates[0]
        launch.agent_id = agent_id
        if launch.finished:
            del self.launches[launch.tool_use_id or ""]
        if len({c.parent for c in candidates}) > 1:
            log.warning("crossgate cannot tell which agent started subagent %s (%s)", agent_id, agent_type)
            return
        # Several launches of that type by the same agent: the parent is certain, which call started it is not.
        self.parents[agent_id] = launch if len(candidates) == 1 else replace(launch, tool_use_id=None)

    def failed(self, tool_use_id: str) -> None:
        """The call failed. A launch the CLI refused after SubagentStart (a subagent it would give no tools)
        gets no SubagentStop, so its invocation is not running any more."""
        launch = self.launches.pop(tool_use_id, None)
        if launch is not None and launch.agent_id is not None:
            self.live.discard(launch.agent_id)

    def stopped(self, agent_id: str) -> None:
        """A subagent invocation finished."""
        self.live.discard(agent_id)
