"""``Gate``: a review queue in front of every tool call of a Claude Agent SDK session."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from claude_agent_sdk import ClaudeAgentOptions, ClaudeSDKClient, ResultMessage, Transport

from crossgate import (
    AdapterError,
    AlreadyAppliedError,
    ConfigurationError,
    ConflictError,
    ParkedRun,
    ParkedRunStatus,
    RequestCancelledError,
    RequestExpiredError,
    RequestStatus,
)
from crossgate.adapter import AdapterQueue, AuthorityPin, app_context, resume_leased, resumer_owner, verified_queue
from crossgate.model import JsonObject
from crossgate.runs import Finished, Parked
from crossgate_claude._agents import Agents
from crossgate_claude._callbacks import Binding
from crossgate_claude._names import known_servers
from crossgate_claude._offered import OfferedCheck
from crossgate_claude._options import merge
from crossgate_claude._schemas import Schemas
from crossgate_claude._transcripts import past_call, transcript_path
from crossgate_claude._translate import FRAMEWORK
from crossgate_claude._turns import TOOL_DEFERRED, read_run

TransportFactory = Callable[[ClaudeAgentOptions], Transport]


class Gate:
    """Builds gated ``ClaudeAgentOptions`` from a ``ReviewQueue``, runs sessions, and resumes parked ones.

    ``hold`` is how long the CLI is held inside the hook waiting for a decision before the call is
    deferred. With 0 (the default) a pending call is deferred at once, so a crash loses nothing: the
    session and the request wait in the store. A process that dies during a longer hold fails closed
    (the CLI blocks the call as a failed hook) and that call cannot be resumed. With ``defer=False`` the
    call is never deferred: ``can_use_tool`` waits up to ``hold`` seconds (None: until decided or
    expired), then cancels the request and denies. The CLI cannot defer a subagent's call, nor the
    main agent's while a subagent runs (it would lose it), so a deferring gate holds those inline for up
    to ``subagent_hold`` seconds (None: until decided or expired) and then denies. ``agent`` names the
    main agent in requests and rules; a subagent's calls are named by its type, and so are the main
    thread's when the options run it as a named agent (``extra_args={"agent": name}``, the CLI's
    ``--agent``; ``agent`` must then be that name or None). ``resume_timeout``
    bounds how long a resumed session may take to re-ask the deferred call (the CLI otherwise waits
    forever), or, when a killed resumer's CLI got past the call itself, to end its turn. ``transport``
    builds a custom SDK transport for each session (tests use an in-process double of the CLI).

    ``authority`` pins the authority's public key(s) this gate verifies decisions and standing rules with
    before a tool runs (``TrustedKeys``, a ``PublicKey``, an ``Authority``, a pin file's path or the pin
    text; default: ``$CROSSGATE_AUTHORITY_PUBKEY`` or ``$CROSSGATE_AUTHORITY_PUBKEY_FILE``); see
    ``crossgate.adapter.verified_queue`` and docs/security.md.
    """

    framework = FRAMEWORK

    def __init__(
        self,
        queue: AdapterQueue,
        *,
        options: ClaudeAgentOptions | None = None,
        hold: float | None = 0.0,
        defer: bool = True,
        subagent_hold: float | None = 300.0,
        agent: str | None = None,
        context: JsonObject | None = None,
        args_schemas: Mapping[str, JsonObject] | None = None,
        hook_timeout: float | None = None,
        resume_timeout: float = 60.0,
        lease_seconds: float = 600.0,
        strict: bool = False,
        transport: TransportFactory | None = None,
        authority: AuthorityPin = None,
    ) -> None:
        if defer and hold is None:
            raise ConfigurationError("a gate that defers needs a finite hold (seconds the hook may wait)")
        if (hold is not None and hold < 0) or (subagent_hold is not None and subagent_hold < 0):
            raise ConfigurationError("hold cannot be negative")
        self.queue: AdapterQueue = verified_queue(queue, authority, announce=True)
        self.base_options = options or ClaudeAgentOptions()
        self.hold = hold
        self.defer = defer
        self.subagent_hold = subagent_hold
        self.agent = agent
        self.context: JsonObject = app_context(context)
        self.args_schemas: dict[str, JsonObject] = dict(args_schemas or {})
        self.hook_timeout = hook_timeout if hook_timeout is not None else 30.0 + (hold if defer and hold else 0.0)
        if defer and hold and self.hook_timeout <= hold:
            raise ConfigurationError("hook_timeout must exceed hold, or the CLI cancels the hook mid-wait")
        self.resume_timeout = resume_timeout
        self.lease_seconds = lease_seconds
        self.strict = strict
        self._transport = transport
        self._offered = OfferedCheck()

    def options(
        self,
        base: ClaudeAgentOptions | None = None,
        *,
        requested_by: str | None = None,
        call_context: JsonObject | None = None,
    ) -> ClaudeAgentOptions:
        """``base`` (or the gate's options) with crossgate's ``can_use_tool`` and hooks, for your own client.

        ``requested_by`` and ``call_context`` are as in :meth:`run`.
        """
        options, _ = self._bind(base or self.base_options, requested_by=requested_by, context=call_context)
        return options

    async def run(
        self,
        prompt: str,
        options: ClaudeAgentOptions | None = None,
        *,
        wait: float | None = 0.0,
        requested_by: str | None = None,
        call_context: JsonObject | None = None,
    ) -> Finished[ResultMessage] | Parked:
        """Run one turn; finish, or park when a call is deferred and not decided within ``wait`` seconds.

        Within ``wait`` (None: no limit) a decided deferral is resumed here in a fresh CLI process.
        Refuses to prompt a session that has a deferred call: the CLI would lose that call.
        ``requested_by`` is who the run acts for: every request of the run carries it (deferred or held
        inline, and in later resumes: it is parked with the call), and the queue refuses a decision by
        that reviewer. ``call_context`` adds to the gate's ``context`` for this run's calls; both are parked
        with a deferred call and read back by ``resume``.
        """
        base = options or self.base_options
        if base.resume is not None:
            self._refuse_if_deferred(base.resume)
        bound, binding = self._bind(base, requested_by=requested_by, context=call_context)
        result = await self._turn(bound, binding, prompt)
        return await self._outcome(result, wait, base)

    async def resume(
        self, parked_run: str, *, options: ClaudeAgentOptions | None = None, wait: float | None = 0.0
    ) -> Finished[ResultMessage] | Parked:
        """Continue a parked session once its request is decided: reconnect with ``resume`` and no prompt.

        The CLI re-asks permission for the deferred ``tool_use_id`` and ``can_use_tool`` answers from the
        stored decision. ``options`` (default: the gate's) must offer the parked session's tools. A run
        whose request is still pending comes back as ``Parked`` unchanged; a run resumed before raises
        ``ParkedRunClaimedError``. Who the run acts for is read from the parked run, never from the caller.
        The resume holds the run under a lease (``crossgate.adapter.resume_leased``): a resumer that dies
        mid-resume leaves it to the next one once the lease runs out, and a failing one marks it failed.
        """
        parked = self.queue.get_parked(parked_run)
        if parked.framework != FRAMEWORK:
            raise ConfigurationError(f"parked run {parked_run} belongs to {parked.framework}, not {FRAMEWORK}")
        base = options or self.base_options
        run_as = _main_agent_overrides(base, _parked_agent(parked.state))
        self._cli_agent(run_as.get("extra_args", base.extra_args))  # refuse a conflict before claiming
        self.queue.expire_overdue()
        if parked.status is ParkedRunStatus.PARKED and not self.queue.is_ready(parked):
            return Parked(run=parked.run, parked_run=parked.id, request_ids=parked.request_ids)
        owner = resumer_owner(FRAMEWORK)

        async def body(claimed: ParkedRun) -> Finished[ResultMessage] | Parked:
            state = json.loads(claimed.state)
            session, tool_use_id = str(state["session_id"]), str(state["tool_use_id"])
            overrides: dict[str, Any] = dict(run_as)
            if base.cwd is None and state.get("cwd"):
                overrides["cwd"] = state["cwd"]
            acts_for = claimed.metadata.get("requested_by")
            requested_by = acts_for if isinstance(acts_for, str) else None
            parked_context = state.get("context")
            bound, binding = self._bind(
                base,
                requested_by=requested_by,
                context=None,
                parked_context=parked_context if isinstance(parked_context, dict) else None,
                resume=session,
                **overrides,
            )
            binding.session, binding.expect = session, tool_use_id
            request_id = state.get("request_id")
            if isinstance(request_id, str):  # a retried call waits on its queued request
                binding.retries[tool_use_id] = request_id
            path = transcript_path(bound.env, session)
            if path is not None and past_call(path, tool_use_id) is not None:
                rid = request_id if isinstance(request_id, str) else claimed.request_ids[0]
                return await self._past_the_call(path, session, tool_use_id, rid, owner)
            result = await self._turn(bound, binding, None)
            return await self._outcome(result, wait, base)

        return await resume_leased(self.queue, parked, owner=owner, lease_seconds=self.lease_seconds, body=body)

    # internals ----------------------------------------------------------------------------------
    async def _past_the_call(
        self, path: Path, session: str, tool_use_id: str, request_id: str, owner: str
    ) -> Finished[ResultMessage]:
        """Finish a run whose session already has a result for its deferred call; nothing runs here.

        An earlier resumer was killed while its CLI child lived on: that CLI recorded a result for the
        call (the tool ran, failed or was cut off, as the dead resumer's applied mark allowed) and went
        on with the turn. A resumed CLI would not re-ask the call and would wait for a prompt forever, so
        no CLI is started. The turn's end is read from the transcript (waiting up to ``resume_timeout``
        for a CLI still finishing it); a decision the dead resumer never applied is closed as not run,
        since the CLI cannot run a call it had no permission for. The ``ResultMessage`` is built from
        the transcript: ``num_turns`` 0, as no turn ran in this resume.
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.resume_timeout
        while (past := past_call(path, tool_use_id)) is None or past.final is None:
            if loop.time() >= deadline:
                raise AdapterError(
                    f"session {session} has a result for tool use {tool_use_id} from an earlier resume, but its "
                    f"turn did not end within {self.resume_timeout:g} s; nothing ran"
                )
            await asyncio.sleep(0.2)
        request = self.queue.get(request_id)
        if request.status is RequestStatus.DECIDED:
            reason = f"the session answered the call without crossgate ({_clip(past.result)}), so it did not run"
            try:
                self.queue.mark_applied(request, args=request.approved_args(), actor=owner)
            except (AlreadyAppliedError, RequestCancelledError, RequestExpiredError):
                pass  # closed meanwhile (a late check, another resumer): that record stands
            else:
                self.queue.record_outcome(request, ran=False, error=reason)
        result = ResultMessage(
            subtype="success",
            duration_ms=0,
            duration_api_ms=0,
            is_error=False,
            num_turns=0,
            session_id=session,
            stop_reason="end_turn",
            result=past.final,
        )
        return Finished(run=session, result=result)

    def _bind(
        self,
        base: ClaudeAgentOptions,
        *,
        requested_by: str | None,
        context: JsonObject | None,
        parked_context: JsonObject | None = None,
        **overrides: Any,
    ) -> tuple[ClaudeAgentOptions, Binding]:
        """Options bound to a new ``Binding``; app context: a parked run's, else the gate's plus ``context``."""
        cli_agent = self._cli_agent(overrides.get("extra_args", base.extra_args))
        agents = Agents(main=cli_agent or self.agent, cli_agent=cli_agent)
        binding = Binding(
            self,
            agents,
            defer=self.defer,
            requested_by=requested_by,
            context=dict(parked_context) if parked_context is not None else {**self.context, **app_context(context)},
            servers=known_servers(base.mcp_servers),
            schemas=Schemas(given=self.args_schemas),
        )
        options = merge(base, binding, hook_timeout=self.hook_timeout, strict=self.strict, **overrides)
        return options, binding

    def _cli_agent(self, extra_args: Mapping[str, str | None]) -> str | None:
        """The agent the options run the main thread as (the CLI's ``--agent``); it must agree with ``agent``."""
        cli_agent = extra_args.get("agent")
        if self.agent is not None and cli_agent is not None and cli_agent != self.agent:
            raise ConfigurationError(
                f"Gate(agent={self.agent!r}) names the main agent, but the options run it as {cli_agent!r} "
                "(extra_args 'agent'); a main thread run as an agent is named by that agent's name"
            )
        return cli_agent

    def _refuse_if_deferred(self, session: str) -> None:
        waiting = self.queue.parked_runs(
            statuses=(ParkedRunStatus.PARKED, ParkedRunStatus.RESUMING), framework=FRAMEWORK, run=session
        )
        if waiting:
            raise ConflictError(
                f"session {session} has a deferred call (parked run {waiting[0].id}); resume it, "
                "a new prompt would make the CLI drop the call"
            )

    async def _turn(self, options: ClaudeAgentOptions, binding: Binding, prompt: str | None) -> ResultMessage:
        await binding.schemas.list_sdk_servers(options.mcp_servers)
        client = ClaudeSDKClient(options, transport=self._transport(options) if self._transport else None)
        async with client:
            if prompt is not None:
                await client.query(prompt)
            drain = asyncio.ensure_future(read_run(client, self._offered))
            if binding.expect is not None:
                reasked = asyncio.ensure_future(binding.reasked.wait())
                done, _ = await asyncio.wait(
                    {drain, reasked}, timeout=self.resume_timeout, return_when="FIRST_COMPLETED"
                )
                reasked.cancel()
                if not done:
                    drain.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await drain
                    raise AdapterError(
                        f"the resumed session did not re-ask tool use {binding.expect} within "
                        f"{self.resume_timeout:g} s; nothing ran"
                    )
            result = await drain
        return result  # noqa: RET504  (mypy: the client context may swallow exceptions)

    def outcome(self, result: ResultMessage) -> Finished[ResultMessage] | Parked:
        """What a turn that ended with ``result`` means: finished, or parked on the call crossgate deferred.

        For sessions driven with your own client and :meth:`options`: on ``Parked``, disconnect (never
        prompt the session again) and :meth:`resume` later.
        """
        if result.stop_reason != TOOL_DEFERRED and result.terminal_reason != TOOL_DEFERRED:
            return Finished(run=result.session_id, result=result)
        deferred = result.deferred_tool_use
        candidates = self.queue.parked_runs(framework=FRAMEWORK, run=result.session_id)
        parked = next(
            (p for p in reversed(candidates) if deferred is None or p.metadata.get("tool_use_id") == deferred.id),
            None,
        )
        if parked is None:
            raise AdapterError(f"the CLI deferred {deferred.id if deferred else 'a call'} that crossgate did not defer")
        return Parked(run=parked.run, parked_run=parked.id, request_ids=parked.request_ids)

    async def _outcome(
        self, result: ResultMessage, wait: float | None, options: ClaudeAgentOptions
    ) -> Finished[ResultMessage] | Parked:
        outcome = self.outcome(result)
        if isinstance(outcome, Finished) or wait == 0:
            return outcome
        loop = asyncio.get_running_loop()
        deadline = None if wait is None else loop.time() + wait
        for rid in outcome.request_ids:
            remaining = None if deadline is None else max(0.0, deadline - loop.time())
            if (await self.queue.wait(rid, remaining)).is_open:
                return outcome
        remaining = None if deadline is None else max(0.0, deadline - loop.time())
        return await self.resume(outcome.parked_run, options=options, wait=remaining)


def _parked_agent(state: str) -> str | None:
    """The agent a parked session's main thread ran as, if any (a malformed state fails later, when claimed)."""
    try:
        agent = json.loads(state).get("agent")
    except (ValueError, AttributeError):
        return None
    return agent if isinstance(agent, str) else None


def _main_agent_overrides(options: ClaudeAgentOptions, parked_agent: str | None) -> dict[str, Any]:
    """Options that resume a session's main thread as the agent it was parked as (the CLI's ``--agent``).

    Resumed without it, the CLI would run the main thread as no agent: other tools, another name.
    """
    if parked_agent is None:
        return {}
    current = options.extra_args.get("agent")
    if current is None:
        return {"extra_args": {**options.extra_args, "agent": parked_agent}}
    if current != parked_agent:
        raise ConfigurationError(
            f"the parked session runs its main thread as the agent {parked_agent!r}, but these options run it "
            f"as {current!r}"
        )
    return {}


def _clip(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"
