"""The neutral approval model: tool calls, verdicts, requests, decisions, standing rules, parked runs."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, JsonValue, TypeAdapter, field_validator, model_validator

from crossgate.fingerprint import canonical_json, fingerprint, json_string

JsonObject = dict[str, JsonValue]

FRAMEWORKS = (
    "openai-agents",
    "claude-agent-sdk",
    "langgraph",
    "langchain",
    "pydantic-ai",
    "aap",
    "ai-sdk",
    "mastra",
    "openai-agents-ts",
    "claude-agent-sdk-ts",
    "langgraph-ts",
    "langchain-ts",
)
"""Frameworks the bundled adapters report: the names a policy rule's ``frameworks`` may use (any other name,
such as a typo for one of these, would never match, so a policy naming one is refused). ``aap`` is an agent
speaking the Agent Approval Protocol to the server; the last six are the TypeScript packages
(adapters/typescript), where an SDK that has a Python adapter too is named with ``-ts``: its calls, requests
and parked runs (whose state only that package can resume) stay apart from the Python adapter's."""

CONTEXT_KEYS: dict[str, frozenset[str]] = {
    "openai-agents": frozenset({"requested_by"}),
    "claude-agent-sdk": frozenset(
        {
            "requested_by",
            # every PreToolUse hook and can_use_tool call
            "agent_id",
            "claude_tool",
            # a subagent's calls
            "parent_agent",
            "parent_agent_id",
            "parent_tool_use_id",
            # PreToolUse hook input
            "permission_mode",
            "cwd",
            "mcp_server",
            # can_use_tool's ToolPermissionContext
            "display_name",
            "title",
            "description",
            "blocked_path",
            "decision_reason",
            "suggestions",
        }
    ),
    "langgraph": frozenset({"requested_by"}),
    "langchain": frozenset({"requested_by"}),
    "pydantic-ai": frozenset({"requested_by"}),
    "aap": frozenset({"aap_instance", "aap_context", "aap_agent_reasoning", "aap_server"}),
    "ai-sdk": frozenset({"requested_by"}),
    "mastra": frozenset({"requested_by"}),
    "openai-agents-ts": frozenset({"requested_by"}),
    "langgraph-ts": frozenset({"requested_by"}),
    "langchain-ts": frozenset({"requested_by"}),
    "claude-agent-sdk-ts": frozenset(
        {
            "requested_by",
            "claude_tool",
            "mcp_server",
            "agent_id",
            # PreToolUse hook input
            "permission_mode",
            "cwd",
            # canUseTool's options
            "title",
            "description",
            "display_name",
        }
    ),
}
"""The context keys each bundled adapter puts on a call (besides what the app passes as ``context``), so
``crossgate policy check`` can tell a rule that tests a key no adapter sets. Keep it in step with the adapters."""

EXPIRY_MESSAGE = (
    "No reviewer answered this request in time, so the tool call was not run. "
    "Do not retry it; tell the user it needs a person's approval."
)
APPROVAL_LAPSED_MESSAGE = (
    "A person approved this {tool} call, but it was not run within {seconds:g} seconds of the approval, so the "
    "approval lapsed and the call was not run. Do not retry it on your own; tell the user it needs a fresh approval."
)
CANCEL_MESSAGE = "This tool call was cancelled before anyone decided it, so it was not run. Do not retry it."
EDITED_RETRY = "aap:edit-once"
"""``created_by`` of the one-shot standing allow of exactly the call a reviewer wrote in an edit, for a channel
that carries an edit as "call again with these arguments" (AAP). The reviewer decided that very call, so an
ask that is not ``rememberable`` does not stop it (rule evaluation, step 3)."""


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


_Model = TypeVar("_Model", bound=BaseModel)


def trusted(cls: type[_Model], values: dict[str, Any]) -> _Model:
    """An instance of ``cls`` holding ``values`` as they are: every field given, each already of its type.

    ``model_construct`` without its per-field work (aliases, defaults), for the models built on every tool
    call (events). The instance is what ``model_construct(**values)`` gives; ``values`` becomes its state,
    so the caller hands over a dict it no longer uses. Values that are not exactly the model's fields are
    left to ``model_construct``, which fills defaults and drops the rest.
    """
    if values.keys() != cls.__pydantic_fields__.keys():
        return cls.model_construct(**values)
    instance = cls.__new__(cls)
    _set = object.__setattr__
    _set(instance, "__dict__", values)
    _set(instance, "__pydantic_fields_set__", set(values))
    _set(instance, "__pydantic_extra__", None)
    _set(instance, "__pydantic_private__", None)
    return instance


class DecisionKind(StrEnum):
    """The four answers a reviewer can give."""

    APPROVE = "approve"
    EDIT = "edit"
    REJECT = "reject"
    RESPOND = "respond"


ALL_DECISIONS: tuple[DecisionKind, ...] = tuple(DecisionKind)


class VerdictKind(StrEnum):
    """What the policy says before any human: deny beats ask beats allow."""

    ALLOW = "allow"
    ASK = "ask"
    DENY = "deny"


class RequestStatus(StrEnum):
    """Life of an approval request, each status named for what a reviewer needs to know.

    ``pending`` (waiting for a reviewer) → ``decided`` (a reviewer decided; the agent has not acted on it
    yet) → once the decision reached the agent, what became of the call: ``applied`` (an approve or edit,
    handed to its tool; the outcome event says whether it ``ran``), ``rejected`` (the model read the
    rejection; nothing ran) or ``answered`` (the model read the reviewer's answer; nothing ran). A pending
    request, or a decided approval that lapsed or that the policy now denies, ends ``expired`` or
    ``cancelled`` instead, and nothing runs.
    """

    PENDING = "pending"
    DECIDED = "decided"
    APPLIED = "applied"
    REJECTED = "rejected"
    ANSWERED = "answered"
    EXPIRED = "expired"
    CANCELLED = "cancelled"


APPLIED_STATUSES = frozenset({RequestStatus.APPLIED, RequestStatus.REJECTED, RequestStatus.ANSWERED})
"""The statuses of a request whose decision reached the agent (``mark_applied`` moved it there, once)."""
DECIDED_STATUSES = APPLIED_STATUSES | {RequestStatus.DECIDED}
"""The statuses of a request a reviewer's decision stands for: decided, and every status it is applied as."""


def applied_status(kind: DecisionKind) -> RequestStatus:
    """The status a decision of ``kind`` leaves its request in once it reached the agent."""
    if kind is DecisionKind.REJECT:
        return RequestStatus.REJECTED
    if kind is DecisionKind.RESPOND:
        return RequestStatus.ANSWERED
    return RequestStatus.APPLIED


class EventKind(StrEnum):
    """What an entry of the audit log records. Stored kinds never change: the hash chain covers them."""

    SUBMITTED = "submitted"
    """A request was made (it is pending)."""
    APPROVED = "approved"
    """One reviewer approved a call that needs several; the last approval is the ``decided`` event."""
    DECIDED = "decided"
    APPLIED = "applied"
    """The decision reached the agent (payload ``kind``: which decision); the request's status says what
    became of the call."""
    RAN = "ran"
    """Outcome: the tool ran (``error`` says if it failed)."""
    NOT_RUN = "not_run"
    """Outcome: the tool did not run; ``result`` (or ``error``) is what the model read instead."""
    EXPIRED = "expired"
    CANCELLED = "cancelled"
    AUTO_ALLOWED = "auto_allowed"
    AUTO_DENIED = "auto_denied"
    RULE_ADDED = "rule_added"
    RULE_REVOKED = "rule_revoked"
    RUN_PARKED = "run_parked"
    RUN_CLAIMED = "run_claimed"
    RUN_RESUMED = "run_resumed"
    RUN_RETRIED = "run_retried"
    PARKED_STATES_PRUNED = "parked_states_pruned"


LEGACY_OUTCOME = "executed"
"""The kind outcomes were written under before ``ran`` and ``not_run`` (with ``payload.ran`` saying which).
Such events stay as written, so the chain still verifies; :func:`event_kind` reads them by the new names."""
OUTCOME_KINDS = frozenset({EventKind.RAN.value, EventKind.NOT_RUN.value, LEGACY_OUTCOME})
"""Every stored kind of an outcome event, old and new."""


def outcome_kind(ran: bool) -> EventKind:
    """The kind of the outcome event of a call that ``ran`` or did not."""
    return EventKind.RAN if ran else EventKind.NOT_RUN


class RememberScope(StrEnum):
    """How long a remembered decision stands."""

    ONCE = "once"
    RUN = "run"
    SESSION = "session"
    FOREVER = "forever"


class RememberMatch(StrEnum):
    """Which later calls a remembered decision covers."""

    TOOL = "tool"
    PATTERN = "pattern"
    EXACT = "exact"


class ToolCall(_Frozen):
    """A tool call a model proposed, as any SDK reports it."""

    framework: str = Field(min_length=1)
    tool: str = Field(min_length=1)
    args: JsonObject = Field(default_factory=dict)
    call_id: str | None = None
    run: str | None = None
    """The SDK-side handle of the run: OpenAI run id, Claude session id, LangGraph thread id."""
    session: str | None = None
    """A longer-lived grouping of runs (a conversation); standing rules of scope ``session`` bind to it."""
    agent: str | None = None
    context: JsonObject = Field(default_factory=dict)

    @property
    def fingerprint(self) -> str:
        """The sha256 binding of ``{tool, args}``."""
        return fingerprint(self.tool, self.args)

    @property
    def session_key(self) -> str | None:
        """The session a standing rule of scope ``session`` binds to (the run when no session is known)."""
        return self.session or self.run


class Verdict(_Frozen):
    """The policy's answer for one call, before any human."""

    kind: VerdictKind
    reason: str = ""
    rule: str | None = None
    """Name of the policy rule or id of the standing rule that decided; None for the default."""
    allowed_decisions: tuple[DecisionKind, ...] = ALL_DECISIONS
    description: str | None = None
    timeout_seconds: float | None = None
    """How long a reviewer has before the request expires; None means it never expires."""
    apply_within_seconds: float | None = None
    """How long an approval stays good to apply after it is given; None means it never lapses."""
    approvals: int = 1
    """How many different reviewers must approve before the call may run."""
    standing_rule: StandingRule | None = None
    """The standing rule that allowed the call, when one did: the gate verifies its signature before it runs."""


class Remember(_Frozen):
    """Turn a decision into a standing rule."""

    scope: RememberScope = RememberScope.FOREVER
    match: RememberMatch = RememberMatch.EXACT
    """Which later calls it covers; by default the narrowest: only these exact arguments (``tool`` is every call
    of the tool, ``pattern`` the calls whose arguments match ``arg_patterns``)."""
    arg_patterns: dict[str, str] = Field(default_factory=dict)
    """For ``match=pattern``: argument name to glob pattern (``*`` any text, ``**`` across ``/``)."""
    this_agent_only: bool = False
    expires_at: datetime | None = None


class _DecisionBase(_Frozen):
    remember: Remember | None = None
    note: str | None = None
    fingerprint: str | None = None
    """The fingerprint the reviewer saw; checked against the request's, and always set once recorded."""
    reviewer: str | None = None
    channel: str | None = None
    decided_at: datetime | None = None


class Approve(_DecisionBase):
    """Run the call as proposed."""

    kind: Literal[DecisionKind.APPROVE] = DecisionKind.APPROVE


class Edit(_DecisionBase):
    """Run the same tool with these arguments instead."""

    kind: Literal[DecisionKind.EDIT] = DecisionKind.EDIT
    args: JsonObject


class Reject(_DecisionBase):
    """Do not run the call; the message is what the model reads, so write it as an instruction."""

    kind: Literal[DecisionKind.REJECT] = DecisionKind.REJECT
    message: str = Field(min_length=1)

    @field_validator("message")
    @classmethod
    def _message_has_text(cls, message: str) -> str:
        if not message.strip():
            raise ValueError("a rejection needs a message: it is what the model reads")
        return message


class Respond(_DecisionBase):
    """The reviewer is the tool: the content is returned as the tool's result and the tool does not run."""

    kind: Literal[DecisionKind.RESPOND] = DecisionKind.RESPOND
    content: str


Decision = Annotated[Approve | Edit | Reject | Respond, Field(discriminator="kind")]
DECISION_ADAPTER: TypeAdapter[Approve | Edit | Reject | Respond] = TypeAdapter(Decision)


def parse_decision(data: Any) -> Approve | Edit | Reject | Respond:
    """Validate a decision from JSON-like data; raises ``pydantic.ValidationError``."""
    return DECISION_ADAPTER.validate_python(data)


class RunExcerpt(_Frozen):
    """What the run did before it asked, for the reviewer: the user's request, the model's last messages, and the
    calls that ran before in the same run. An adapter hands it over only when the app consents
    (``Gate(excerpt=True)``); it is size-capped (:func:`crossgate.adapter.run_excerpt`), shown folded on
    the request page and sent to a webhook only when its target asks for it (``include_excerpt``)."""

    user_request: str | None = None
    messages: tuple[str, ...] = ()
    """The model's last messages before the call, oldest first."""
    calls: tuple[str, ...] = ()
    """The calls that ran before in the run, oldest first: tool, arguments and what came back."""


class ApprovalRequest(_Frozen):
    """A tool call the policy sent to a human, and everything that happened to it."""

    id: str
    call: ToolCall
    fingerprint: str
    status: RequestStatus = RequestStatus.PENDING
    reason: str = ""
    """Why the policy asked."""
    rule: str | None = None
    description: str | None = None
    allowed_decisions: tuple[DecisionKind, ...] = ALL_DECISIONS
    args_schema: JsonObject | None = None
    requested_by: str | None = None
    created_at: datetime
    expires_at: datetime | None = None
    decision: Approve | Edit | Reject | Respond | None = Field(default=None, discriminator="kind")
    decided_at: datetime | None = None
    applied_at: datetime | None = None
    closed_reason: str | None = None
    """Why an expired or cancelled request closed."""
    apply_within_seconds: float | None = None
    """An approve or edit not applied this long after ``decided_at`` lapses (the request expires); None: never."""
    approvals_required: int = Field(default=1, ge=1)
    """Different reviewers who must approve before the call runs; each approval before the last is an
    ``approved`` event, and the last one decides. Edit, respond and remembered approvals are not offered."""
    excerpt: RunExcerpt | None = None
    """What the run did before it asked (only with the app's consent); see :class:`RunExcerpt`."""
    signatures: tuple[str, ...] = ()
    """The authority's tokens over the decision (JWS compact, see ``crossgate.authority``): one, or one per
    approver for a request that needs several; empty while pending, or when the queue signs nothing."""

    @model_validator(mode="after")
    def _read_legacy_status(self) -> ApprovalRequest:
        # Before ``rejected`` and ``answered``, every decision that reached the agent was stored as
        # ``applied``; JSON written then (an old store's body, an old client's copy) reads as it is now.
        if self.status is RequestStatus.APPLIED and self.decision is not None:
            self.__dict__["status"] = applied_status(self.decision.kind)
        return self

    @property
    def is_open(self) -> bool:
        """True while a reviewer can still decide it."""
        return self.status is RequestStatus.PENDING

    @property
    def is_applied(self) -> bool:
        """True once its decision reached the agent (status ``applied``, ``rejected`` or ``answered``)."""
        return self.status in APPLIED_STATUSES

    def resolution(self) -> Approve | Edit | Reject | Respond | None:
        """The answer the SDK gets: the decision, or a rejection for an expired or cancelled request.

        None while the request is pending.
        """
        if self.status in DECIDED_STATUSES:
            return self.decision
        if self.status is RequestStatus.EXPIRED:
            return Reject(message=self.closed_reason or EXPIRY_MESSAGE, fingerprint=self.fingerprint)
        if self.status is RequestStatus.CANCELLED:
            return Reject(message=self.closed_reason or CANCEL_MESSAGE, fingerprint=self.fingerprint)
        return None

    def approved_args(self) -> JsonObject | None:
        """The arguments that may run: the proposal for approve, the edit for edit, else None."""
        decision = self.resolution()
        if isinstance(decision, Approve):
            return self.call.args
        if isinstance(decision, Edit):
            return decision.args
        return None

    def approved_fingerprint(self) -> str | None:
        """Fingerprint of :meth:`approved_args`, or None when nothing may run."""
        args = self.approved_args()
        return None if args is None else fingerprint(self.call.tool, args)


class StandingRule(_Frozen):
    """A remembered decision that the policy consults on every later call."""

    id: str
    effect: Literal[VerdictKind.ALLOW, VerdictKind.DENY]
    tool: str
    """Exact tool name or a glob such as ``read_*``."""
    match: RememberMatch = RememberMatch.TOOL
    arg_patterns: dict[str, str] = Field(default_factory=dict)
    args_fingerprint: str | None = None
    """For ``match=exact``: the fingerprint the call must have."""
    agent: str | None = None
    framework: str | None = None
    scope: RememberScope = RememberScope.FOREVER
    run: str | None = None
    session: str | None = None
    message: str | None = None
    """For deny rules: what the model reads."""
    created_at: datetime
    created_by: str | None = None
    source_request: str | None = None
    expires_at: datetime | None = None
    revoked_at: datetime | None = None
    revoked_by: str | None = None
    signature: str | None = None
    """The authority's token over the rule (JWS compact); revocation is not part of what it signs."""

    def is_active(self, now: datetime) -> bool:
        """True if not revoked and not expired at ``now``."""
        if self.revoked_at is not None:
            return False
        return self.expires_at is None or now < self.expires_at


Verdict.model_rebuild()


class ParkedRunStatus(StrEnum):
    """Life of a parked run: parked until resumed once."""

    PARKED = "parked"
    RESUMING = "resuming"
    RESUMED = "resumed"
    FAILED = "failed"


class ParkedRun(_Frozen):
    """SDK state of a run that waits for decisions, kept server-side so any process can resume it."""

    id: str
    framework: str
    run: str
    request_ids: tuple[str, ...]
    state: str
    """The SDK's serialised state (RunState JSON, Claude session id and deferred call, thread config)."""
    metadata: JsonObject = Field(default_factory=dict)
    status: ParkedRunStatus = ParkedRunStatus.PARKED
    created_at: datetime
    updated_at: datetime
    lease_owner: str | None = None
    lease_until: datetime | None = None
    attempts: int = 0
    outcome: str | None = None


class Event(_Frozen):
    """One entry of the append-only, hash-chained audit log."""

    seq: int
    at: datetime
    kind: str
    request_id: str | None = None
    run: str | None = None
    actor: str | None = None
    channel: str | None = None
    payload: JsonObject = Field(default_factory=dict)
    prev_hash: str
    hash: str

    def chained_text(self) -> str:
        """The canonical text ``hash`` covers: every field but the hash, with ``at`` in ISO 8601.

        Equal to ``canonical_json`` of those nine fields; assembled here in sorted key order so that
        only the payload goes through the general canonical form (every event is sealed with it).
        """
        return chained_text(self, seq=self.seq, at=self.at.isoformat(), prev_hash=self.prev_hash)


def chained_text(
    fields: Event | NewEvent, *, seq: int, at: str, prev_hash: str, payload_text: str | None = None
) -> str:
    """:meth:`Event.chained_text` of ``fields`` placed at ``seq`` after ``prev_hash``, ``at`` in ISO 8601.

    The one place the text is assembled: a store sealing a batch hashes its NewEvents with it directly.
    ``payload_text``: ``canonical_json(fields.payload)``, when the caller has it already (a store that keeps it).
    """
    if payload_text is None:
        payload_text = canonical_json(fields.payload)
    return (
        f'{{"actor":{_text_or_null(fields.actor)},"at":{json_string(at)},'
        f'"channel":{_text_or_null(fields.channel)},"kind":{json_string(fields.kind)},'
        f'"payload":{payload_text},"prev_hash":{json_string(prev_hash)},'
        f'"request_id":{_text_or_null(fields.request_id)},"run":{_text_or_null(fields.run)},"seq":{int(seq)}}}'
    )


def chained_parts(fields: Event | NewEvent, *, at: str) -> tuple[str, str]:
    """:func:`chained_text` of ``fields`` without its two chain values: the text before the previous hash's
    hex digits and the text between them and the seq's digits (then ``}``).

    For a store that seals in the database (PostgreSQL's ``crossgate_seal``), which knows the head only
    under its lock: ``before + prev_hash + between + str(seq) + "}"`` is exactly ``chained_text``.
    """
    before = (
        f'{{"actor":{_text_or_null(fields.actor)},"at":{json_string(at)},'
        f'"channel":{_text_or_null(fields.channel)},"kind":{json_string(fields.kind)},'
        f'"payload":{canonical_json(fields.payload)},"prev_hash":"'
    )
    between = f'","request_id":{_text_or_null(fields.request_id)},"run":{_text_or_null(fields.run)},"seq":'
    return before, between


def event_kind(event: Event) -> str:
    """``event``'s kind in the current vocabulary: an outcome written as ``executed`` reads ``ran`` or ``not_run``."""
    if event.kind == LEGACY_OUTCOME:
        return outcome_kind(event.payload.get("ran") is True).value
    return event.kind


def is_outcome(event: Event) -> bool:
    """True for an outcome event (``ran`` or ``not_run``, or the ``executed`` of older logs)."""
    return event.kind in OUTCOME_KINDS


def _text_or_null(value: str | None) -> str:
    return "null" if value is None else json_string(value)


class NewEvent(_Frozen):
    """An event before the store assigns its sequence number and hash."""

    kind: str
    at: datetime
    request_id: str | None = None
    run: str | None = None
    actor: str | None = None
    channel: str | None = None
    payload: JsonObject = Field(default_factory=dict)
