"""``Gate``: run a LangGraph graph or a LangChain agent on a thread; park it while people decide; resume it once.

The queue is the index of waiting threads: when a run pauses, the gate submits one crossgate request
per gated call and parks the thread (its id, the graph's name, the checkpoint and the pending
interrupt ids) in the queue's store. ``resume`` may then run in any process that compiled the same
graph on the same checkpointer.

One gate serves plain graphs and ``create_agent`` agents alike: both pause the same way (a LangGraph
thread in a checkpointer), so the gate and its parked runs use ``framework = "langgraph"``, while the
requests of agent tool calls say ``framework = "langchain"`` so that policy rules can tell them apart.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

from langgraph.errors import is_invalid_resume
from langgraph.types import Command, Interrupt

from crossgate import (
    AdapterError,
    AlreadyAppliedError,
    ApprovalRequest,
    ConfigurationError,
    ConflictError,
    DecisionKind,
    ParkedRun,
    ParkedRunClaimedError,
    ParkedRunStatus,
    Reject,
    RequestCancelledError,
    RequestExpiredError,
    RequestStatus,
    Respond,
    ToolCall,
    VerdictKind,
    fingerprint,
)
from crossgate.adapter import (
    AdapterQueue,
    AuthorityPin,
    app_context,
    apply_decision_sync,
    find_request,
    resume_leased,
    resumer_owner,
    verified_queue,
)
from crossgate.model import JsonObject
from crossgate.runs import Finished, Parked
from crossgate_langgraph._arguments import args_json_schema, tool_args
from crossgate_langgraph._calls import (
    PausedCall,
    agent_call,
    agent_request_id,
    judged_call,
    last_tool_calls,
    paused_under,
)
from crossgate_langgraph._excerpt import excerpt_of
from crossgate_langgraph._nested import nested_matches
from crossgate_langgraph._parking import (
    Graph,
    Origin,
    ParkState,
    Pending,
    Scope,
    descends,
    match_batched,
    refusal_text,
    thread_config,
    tools_of,
)
from crossgate_langgraph._shapes import hitl_decision, interrupt_shape, resume_command


class Gate:
    """Run graphs and agents through crossgate; implements ``crossgate.runs.Resumer``.

    ``graphs`` are the compiled graphs this gate may resume, by name (``compile(name=...)`` or
    ``create_agent(name=...)``); ``run`` adds the graph it is given.

    ``authority`` pins the authority's public key(s) this gate, and every middleware, tool wrapper
    and ``request_approval`` on the same queue object, verify decisions and standing rules with before a
    tool runs (``TrustedKeys``, a ``PublicKey``, an ``Authority``, a pin file's path or the pin
    text; default: ``$CROSSGATE_AUTHORITY_PUBKEY`` or ``$CROSSGATE_AUTHORITY_PUBKEY_FILE``); see
    ``crossgate.adapter.verified_queue`` and docs/security.md.
    """

    framework = "langgraph"

    def __init__(
        self,
        queue: AdapterQueue,
        *graphs: Graph,
        owner: str | None = None,
        agent: str | None = None,
        context: JsonObject | None = None,
        lease_seconds: float = 300.0,
        authority: AuthorityPin = None,
        excerpt: bool = False,
    ) -> None:
        self.queue: AdapterQueue = verified_queue(queue, authority, announce=True)
        self.excerpt = excerpt
        """The app's consent to show reviewers what an agent's thread did before it asked (its ``messages``:
        the user's request, the model's last messages, the calls that ran), with each request it parks."""
        self.context: JsonObject = app_context(context)
        """App context (a tenant, say) for every call of every run, as ``crossgate_openai.Gate(context=)``;
        ``run(call_context=...)`` adds to it for one run."""
        self.owner = owner or resumer_owner(self.framework)
        self.agent = agent
        """Agent name of the calls (default: the graph's name); must match an ``agent`` given to
        :func:`crossgate_middleware` or :func:`gated_tool_wrapper`."""
        self.lease_seconds = lease_seconds
        self._graphs: dict[str, Graph] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        for graph in graphs:
            self.add_graph(graph)

    def add_graph(self, graph: Graph) -> None:
        """Let this gate resume ``graph``; names must be unique per gate."""
        name = str(getattr(graph, "name", "") or "")
        if getattr(graph, "checkpointer", None) in (None, False):
            raise ConfigurationError(
                f"graph {name!r} has no checkpointer, so a paused thread could never resume; "
                "compile it with one (see open_checkpointer)"
            )
        if not name:
            raise ConfigurationError("the graph has no name; compile(name=...) or create_agent(name=...)")
        known = self._graphs.get(name)
        if known is not None and known is not graph:
            raise ConfigurationError(f"two graphs are named {name!r}; give each its own name")
        self._graphs[name] = graph

    # running ------------------------------------------------------------------------------------
    async def run(
        self,
        graph: Graph,
        input: Any,
        *,
        thread: str,
        wait: float = 0.0,
        requested_by: str | None = None,
        call_context: JsonObject | None = None,
    ) -> Finished[Any] | Parked:
        """Run ``graph`` on ``thread`` until it ends or pauses for approval.

        A pause submits its requests and parks the thread. With ``wait`` > 0, waits up to that many
        seconds for every decision and resumes in place when all arrived. ``requested_by`` is who the
        run acts for: every request of the run carries it (nodes' ``request_approval`` gets it through
        the config; it is parked with the thread for later resumes), and the queue refuses a decision by
        that reviewer. ``call_context`` adds to the gate's ``context`` for this run (a tenant, say): every
        call of the run carries it in ``ToolCall.context``, where policy rules can test it; it is parked
        with the thread too.
        Every call is named after ``Gate(agent=...)``, else the graph's ``name``.
        """
        self.add_graph(graph)
        scope = Scope(requested_by, {**self.context, **app_context(call_context)})
        async with self._lock(thread):
            if self.queue.parked_runs(statuses=(ParkedRunStatus.PARKED, ParkedRunStatus.RESUMING), run=thread):
                raise ConflictError(f"thread {thread} is parked waiting for decisions; resume it instead")
            output = await graph.ainvoke(input, self._config(graph, thread, scope), version="v2")
            outcome = await self._settle(graph, thread, output, scope)
        if isinstance(outcome, Parked) and wait > 0:
            await asyncio.gather(*(self.queue.wait(r, wait) for r in outcome.request_ids))
            if self.queue.is_ready(self.queue.get_parked(outcome.parked_run)):
                return await self.resume(outcome.parked_run)
        return outcome

    async def park(
        self, graph: Graph, *, thread: str, requested_by: str | None = None, call_context: JsonObject | None = None
    ) -> Finished[Any] | Parked:
        """Park a thread that is already paused without a parked run (say, the process died right
        after the pause); submitting finds existing requests, so this is safe to repeat.

        ``requested_by`` is who the run acts for, as in :meth:`run`; when None, the person the thread's
        stored requests were made for is kept. ``call_context`` is the run's app context, as in :meth:`run`.
        """
        self.add_graph(graph)
        async with self._lock(thread):
            if self.queue.parked_runs(statuses=(ParkedRunStatus.PARKED, ParkedRunStatus.RESUMING), run=thread):
                raise ConflictError(f"thread {thread} is parked already")
            snapshot = await graph.aget_state(thread_config(thread))
            if snapshot.created_at is None:
                raise ConflictError(f"thread {thread} never started in this graph's checkpointer")
            return await self._settle(
                graph, thread, snapshot, Scope(requested_by, {**self.context, **app_context(call_context)})
            )

    async def resume(self, parked_run: str, *, partial: bool = False) -> Finished[Any] | Parked:
        """Resume a parked thread once its requests are decided; a parked run is resumed once.

        While a request is still pending this returns the same ``Parked`` and changes nothing; with
        ``partial=True`` the decided interrupts are answered and the rest park again. Refuses (and
        marks the parked run failed) a thread that never started, has finished, or moved on since it
        parked. Who the run acts for is read from the parked run, never from the caller.
        """
        parked = self.queue.get_parked(parked_run)
        if parked.framework != self.framework:
            raise ConfigurationError(f"parked run {parked_run} belongs to {parked.framework}, not {self.framework}")
        if parked.status not in (ParkedRunStatus.PARKED, ParkedRunStatus.RESUMING):
            raise ParkedRunClaimedError(
                f"parked run {parked_run} is {parked.status.value}; a parked state is resumed once"
            )
        state = ParkState.loads(parked.state)
        graph = self._graph(state.graph)
        self.queue.expire_overdue()
        requests = {r: self.queue.get(r) for r in parked.request_ids}
        answerable = [p for p in state.interrupts if all(not requests[r].is_open for r in p.request_ids)]
        if not answerable or (len(answerable) < len(state.interrupts) and not partial):
            return Parked(parked.run, parked.id, parked.request_ids)
        scope = Scope.of(parked)

        async def body(claimed: ParkedRun) -> Finished[Any] | Parked:
            return await self._resume_claimed(graph, state, requests, scope, earlier=claimed.attempts > 1)

        async with self._lock(state.thread):
            # A resumer that died mid-resume leaves the run resuming: once its lease runs out, this
            # claim takes it over (the same path every adapter uses).
            return await resume_leased(
                self.queue, parked, owner=self.owner, lease_seconds=self.lease_seconds, body=body
            )

    # internals ----------------------------------------------------------------------------------
    def _lock(self, thread: str) -> asyncio.Lock:
        # In-process exclusion; across processes the queue's claim on the parked run is the lock.
        return self._locks.setdefault(thread, asyncio.Lock())

    def _graph(self, name: str) -> Graph:
        graph = self._graphs.get(name)
        if graph is None:
            raise ConfigurationError(f"this gate does not know graph {name!r}; pass it to Gate(queue, graph)")
        return graph

    async def _resume_claimed(
        self,
        graph: Graph,
        state: ParkState,
        requests: Mapping[str, ApprovalRequest],
        scope: Scope,
        *,
        earlier: bool,
    ) -> Finished[Any] | Parked:
        """Answer the parked interrupts, or, after an ``earlier`` attempt, go on from where it stopped.

        An earlier attempt (killed mid-resume, or failed and retried) may have moved the thread past the
        parked checkpoint, or completed some of its tasks: the thread then goes on from where it is, as
        long as it descends from the parked checkpoint. Whatever that attempt applied is not run again
        (``mark_applied`` refuses it, and the model is told).
        """
        config = self._config(graph, state.thread, scope)
        snapshot = await graph.aget_state(config)
        if snapshot.created_at is None:
            raise ConflictError(
                f"thread {state.thread} never started in this graph's checkpointer; refusing to resume it "
                "(LangGraph would start it from the beginning)"
            )
        pending = {i.id: i for i in snapshot.interrupts}
        expected = {p.id for p in state.interrupts}
        at_park = snapshot.config["configurable"].get("checkpoint_id") == state.checkpoint_id
        command: Command[Any] | None
        if pending and at_park and (set(pending) == expected or (earlier and set(pending) <= expected)):
            answered = {
                entry.id: None
                for entry in state.interrupts
                if entry.id in pending and all(not requests[r].is_open for r in entry.request_ids)
            }
            # Rejections and responses are applied (and their signatures checked) before any answer is
            # built: one that does not verify is closed with the refusal, which is then the answer.
            self._apply_unrun(state, answered, requests)
            current = {r: self.queue.get(r) for e in state.interrupts if e.id in answered for r in e.request_ids}
            answers = {
                entry.id: self._answer(entry, [current[r] for r in entry.request_ids])
                for entry in state.interrupts
                if entry.id in answered
            }
            command = resume_command(list(pending.values()), answers)
        elif earlier and await descends(graph, config, state.checkpoint_id):
            command = None  # LangGraph goes on from the earlier attempt's last checkpoint
            self._apply_unrun(state, {p.id: None for p in state.interrupts}, requests)
        elif not pending:
            raise ConflictError(
                f"thread {state.thread} has no pending interrupt: it finished, was resumed elsewhere, "
                "or its state was changed since it parked"
            )
        else:
            raise ConflictError(f"thread {state.thread} moved on since it parked; its pending interrupts changed")
        try:
            output = await graph.ainvoke(command, config, version="v2")
        except Exception as exc:
            if command is None or not is_invalid_resume(exc):
                raise
            output = await self._refuse_unappliable(graph, config, state, requests, set(command.resume or ()), exc)
        return await self._settle(graph, state.thread, output, scope)

    async def _refuse_unappliable(
        self,
        graph: Graph,
        config: dict[str, Any],
        state: ParkState,
        requests: Mapping[str, ApprovalRequest],
        answered: set[str],
        error: Exception,
    ) -> Any:
        """End each call whose decision LangGraph refused as refused, tell the model why, and go on.

        LangGraph checks the middleware's answers against the tool's own schema (an edit a custom
        validator refuses, say); the refused interrupts stay pending with the same ids while the
        siblings answered with them ran. Each refused call is closed (marked applied, outcome "not run"
        with the reason) and answered with a rejection the model reads, so the run is not stuck.
        """
        snapshot = await graph.aget_state(config)
        pending = {i.id: i for i in snapshot.interrupts}
        refused = [e for e in state.interrupts if e.id in answered and e.id in pending]
        if not refused or any(e.shape != "tool_approval" for e in refused):
            raise AdapterError(f"LangGraph refused crossgate's answer for thread {state.thread}: {error}") from error
        reason = refusal_text(error)
        answers = {}
        for entry in refused:
            [request_id] = entry.request_ids
            tool = requests[request_id].call.tool
            message = self._close_refused(
                requests[request_id], f"crossgate could not apply the decision on {tool}: {reason}"
            )
            answers[entry.id] = {"type": "reject", "message": message}
        return await graph.ainvoke(resume_command(list(pending.values()), answers), config, version="v2")

    def _close_refused(self, request: ApprovalRequest, reason: str) -> str:
        """Close a decided request the SDK refused: applied, with "not run" and ``reason`` as its outcome."""
        try:
            self.queue.mark_applied(request, args=request.approved_args(), actor=self.owner)
        except (RequestCancelledError, RequestExpiredError):
            return self.queue.get(request.id).closed_reason or reason  # a late check closed it: its reason wins
        except AlreadyAppliedError:
            pass
        self.queue.record_outcome(request, ran=False, error=reason)
        return f"{reason}. It did not run; the reviewer may decide again if you call it again with valid arguments."

    def _answer(self, entry: Pending, requests: Sequence[ApprovalRequest]) -> Any:
        decisions = [r.resolution() for r in requests]
        if entry.shape == "crossgate":
            decision = decisions[0]
            assert decision is not None
            return decision.model_dump(mode="json")
        translated = []
        for request, decision in zip(requests, decisions, strict=True):
            assert decision is not None
            translated.append(hitl_decision(decision, request.call.tool))
        return translated[0] if entry.shape == "tool_approval" else {"decisions": translated}

    def _apply_unrun(
        self, state: ParkState, answers: Mapping[str, Any], requests: Mapping[str, ApprovalRequest]
    ) -> None:
        """Apply agent rejections and responses through the kit's check (recorded as not run); the
        middleware delivers them to the model without running a tool."""
        for entry in state.interrupts:
            if entry.id not in answers or entry.shape == "crossgate":
                continue
            for request_id in entry.request_ids:
                request = requests[request_id]
                decision = request.resolution()
                if request.status is RequestStatus.DECIDED and isinstance(decision, Reject | Respond):
                    # Read again: the decision is applied as stored now, and a store that cannot be read
                    # fails the resume before anything is used up.
                    current = self.queue.get(request_id)
                    applied = apply_decision_sync(self.queue, current, None, actor=self.owner)
                    if applied.responded:
                        self.queue.record_outcome(request, ran=False, result=applied.message)

    def _config(self, graph: Graph, thread: str, scope: Scope) -> dict[str, Any]:
        return thread_config(thread, scope.requested_by, agent=self.agent or graph.name, context=scope.context)

    async def _settle(self, graph: Graph, thread: str, output: Any, scope: Scope) -> Finished[Any] | Parked:
        # A GraphOutput from ainvoke(version="v2"), or a StateSnapshot: both list the pending interrupts.
        interrupts: Sequence[Interrupt] = tuple(getattr(output, "interrupts", ()) or ())
        if not interrupts:
            return Finished(thread, getattr(output, "value", getattr(output, "values", output)))
        snapshot = await graph.aget_state(thread_config(thread))
        scope = Scope(self._acting_for(interrupts, scope.requested_by), scope.context)
        # Requests for the middleware's calls are stored together with the parked run (one transaction);
        # a node's request_approval stored its own before interrupting.
        new_requests: list[ApprovalRequest] = []
        origin = Origin(tools_of(graph), self.agent or graph.name, scope)
        # The task of the gate's graph that holds each interrupt: a subagent's pause is held by its ``task`` call.
        holders = {i.id: f"{t.name}:{t.id}" for t in snapshot.tasks for i in t.interrupts}
        entries = [
            self._submit(i, thread, snapshot.values, origin, new_requests, holders.get(i.id)) for i in interrupts
        ]
        state = ParkState(
            graph=graph.name,
            thread=thread,
            checkpoint_id=snapshot.config["configurable"].get("checkpoint_id"),
            interrupts=entries,
        )
        request_ids = [r for e in entries for r in e.request_ids]
        if self.excerpt and (shown := excerpt_of(snapshot.values)) is not None:
            new_requests = [r.model_copy(update={"excerpt": shown}) for r in new_requests]
        parked = self.queue.park(
            framework=self.framework,
            run=thread,
            request_ids=request_ids,
            state=state.dumps(),
            metadata={
                "graph": graph.name,
                "interrupts": [e.id for e in entries],
                "requested_by": scope.requested_by,
                "context": scope.context,
            },
            new_requests=new_requests,
        )
        return Parked(thread, parked.id, tuple(request_ids))

    def _acting_for(self, interrupts: Sequence[Interrupt], requested_by: str | None) -> str | None:
        """Who the parked run acts for: ``requested_by``, else whom the nodes' stored requests name.

        The requests nodes stored are trusted (they come from the store); a run naming someone else, or
        requests naming several people, are refused rather than parked for the wrong person.
        """
        named = set()
        for pending in interrupts:
            if interrupt_shape(pending.value) == "crossgate":
                stored = find_request(self.queue, str(pending.value["request_id"]))
                if stored is not None and stored.requested_by is not None:
                    named.add(stored.requested_by)
        if requested_by is not None:
            named.add(requested_by)
        if len(named) > 1:
            raise AdapterError(f"the thread's requests were made for several people ({sorted(named)}); not parking it")
        return next(iter(named), None)

    def _submit(
        self,
        pending: Interrupt,
        thread: str,
        values: Mapping[str, Any],
        origin: Origin,
        new_requests: list[ApprovalRequest],
        holder: str | None,
    ) -> Pending:
        """Turn one pending interrupt into crossgate requests (stored once; a re-submit finds them).

        Requests not stored yet are appended to ``new_requests`` for ``park`` to store. A HITL pause
        is matched first against the calls the middleware paused inside the task ``holder`` (a
        subagent's, see ``_nested``), then against the thread's latest model message.
        """
        value = pending.value
        shape = interrupt_shape(value)
        if shape == "crossgate":
            request = self.queue.get(value["request_id"])
            if request.call.run != thread:
                raise AdapterError(f"interrupt {pending.id} names request {request.id} of another thread")
            return Pending(pending.id, shape, [request.id], [request.call.tool])
        if shape is None:
            raise AdapterError(f"interrupt {pending.id} is not a crossgate or LangChain approval; cannot park it")
        nested = nested_matches(value, shape, paused_under(thread, holder)) if holder else None
        if nested is not None:
            request_ids = [self._submit_paused(p, d, allowed, origin, new_requests) for p, d, allowed in nested]
            return Pending(pending.id, shape, request_ids, [p.name for p, _, _ in nested])
        turn, calls = last_tool_calls(values.get("messages", []))
        if shape == "tool_approval":
            call = next((c for c in calls if c.get("id") == value["tool_call_id"]), None)
            if call is None:
                raise AdapterError(
                    f"interrupt {pending.id} names tool call {value['tool_call_id']!r}, which is neither in the "
                    "thread's messages nor a call crossgate's middleware paused in this process (a subagent's); "
                    "not parking it"
                )
            matched = [(call, value.get("description"), None)]
        else:
            matched = match_batched(value, calls)
        request_ids = [
            self._submit_call(thread, turn, c, d, allowed, origin, new_requests) for c, d, allowed in matched
        ]
        return Pending(pending.id, shape, request_ids, [c["name"] for c, _, _ in matched])

    def _submit_call(
        self,
        thread: str,
        turn: int,
        call: Mapping[str, Any],
        description: Any,
        allowed: Any,
        origin: Origin,
        new_requests: list[ApprovalRequest],
    ) -> str:
        call_id = str(call.get("id") or "")
        tool = origin.tools.get(call["name"])
        request_id = agent_request_id(thread, turn, call_id)
        # The arguments the tool will receive, as the middleware judged them (it paused only valid ones),
        # with the agent and context it judged them for.
        args = tool_args(tool, call["args"])
        neutral = judged_call(request_id)
        if neutral is None or neutral.fingerprint != fingerprint(call["name"], args):
            neutral = agent_call(
                call["name"], args, call_id=call_id, thread=thread, agent=origin.agent, context=origin.scope.context
            )
        return self._prepare(request_id, neutral, args_json_schema(tool), description, allowed, origin, new_requests)

    def _submit_paused(
        self, paused: PausedCall, description: Any, allowed: Any, origin: Origin, new_requests: list[ApprovalRequest]
    ) -> str:
        """Submit a call a subagent's middleware paused for, as it judged it, under the id it will look up."""
        return self._prepare(
            paused.request_id, paused.call, paused.args_schema, description, allowed, origin, new_requests
        )

    def _prepare(
        self,
        request_id: str,
        neutral: ToolCall,
        args_schema: JsonObject | None,
        description: Any,
        allowed: Any,
        origin: Origin,
        new_requests: list[ApprovalRequest],
    ) -> str:
        requested_by = origin.scope.requested_by
        capabilities = tuple(DecisionKind(k) for k in allowed) if allowed else tuple(DecisionKind)
        submission = self.queue.prepare(
            neutral,
            args_schema=args_schema,
            description=description if isinstance(description, str) else None,
            requested_by=requested_by,
            capabilities=capabilities,
            request_id=request_id,
        )
        if submission.request is None:
            raise AdapterError(
                f"the middleware paused {neutral.tool} but the policy now says {submission.verdict.kind.value}; "
                "check that Gate(agent=...) matches crossgate_middleware(agent=...)"
            )
        if submission.verdict.kind is not VerdictKind.ASK:
            raise AdapterError(f"unexpected verdict {submission.verdict.kind.value} for a paused call")
        if not submission.stored and all(r.id != submission.request.id for r in new_requests):
            new_requests.append(submission.request)
        return submission.request.id
