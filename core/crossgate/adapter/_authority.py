"""The authority check where the tool runs: decisions and standing rules verified with keys pinned here.

A gate's queue is a :class:`VerifiedQueue`: the adapter's queue with this process's pinned
:class:`~crossgate.authority.TrustedKeys`. Before a reviewed call runs (``mark_applied``, the step of
:func:`~crossgate.adapter.apply_decision` before anything runs) it verifies the request's decision
tokens: signed by a pinned, unrevoked key, for this request and this call, with the decision as stored,
the arguments about to run the ones signed, enough different approvers, not past its signed
``apply_by``. Before a call a standing rule allowed runs (``submit``, ``prepare``, ``evaluate``) it
verifies the rule's token and that the rule covers the call. What does not verify does not run: the
request is closed with a refusal the model reads, the refusal is recorded with its reason
(``ReviewQueue.refuse_unverified``), and a refused rule's call gets a deny verdict.

The keys come from the gate's own configuration, never from the store: ``Gate(authority=...)`` (a
``TrustedKeys``, a ``PublicKey``, an ``Authority`` whose public key is taken, a pin file's path or the
pin text), else ``$CROSSGATE_AUTHORITY_PUBKEY`` or ``$CROSSGATE_AUTHORITY_PUBKEY_FILE``, else, for an
in-process ``ReviewQueue`` that signs with an authority, that authority's public key. With none of
them the gate runs **unverified**, as crossgate did before signatures: it warns once per process
(:class:`UnverifiedWarning`) that any writer of the store can let a call run.
"""

from __future__ import annotations

import contextlib
import os
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias
from weakref import WeakKeyDictionary

from crossgate.adapter._heads import CONSUMED, REVOKED_RULE, ROLLED_BACK, STALE, HeadFile, HeadGuard, default_head_file
from crossgate.adapter._protocol import AdapterQueue
from crossgate.authority.claims import DecisionClaims, StateHeadClaims
from crossgate.authority.keyring import default_pin_path
from crossgate.authority.keys import PUBKEY_ENV, Authority, PublicKey, TrustedKeys
from crossgate.clock import Clock, utc_now
from crossgate.errors import ConfigurationError, RequestCancelledError, RequestExpiredError, SignatureError
from crossgate.fingerprint import fingerprint
from crossgate.model import (
    ALL_DECISIONS,
    APPROVAL_LAPSED_MESSAGE,
    CANCEL_MESSAGE,
    ApprovalRequest,
    DecisionKind,
    Event,
    JsonObject,
    ParkedRun,
    ParkedRunStatus,
    RequestStatus,
    StandingRule,
    ToolCall,
    Verdict,
    VerdictKind,
)
from crossgate.policy.rules import standing_rule_matches

if TYPE_CHECKING:
    from crossgate.policy.rules import Policy
    from crossgate.queue import Submission
    from crossgate.stores.base import Page, RequestQuery

AuthorityPin: TypeAlias = TrustedKeys | PublicKey | Authority | str | os.PathLike[str] | None
"""What ``Gate(authority=...)`` takes: keys, one key, an authority (its public key), a pin file's path, pin text,
or ``"unverified"`` (run without verifying, by choice)."""

DECISION_REFUSED = (
    "crossgate did not run {tool}: the decision on request {request} did not verify against the authority key "
    "pinned where the tool runs ({problem}), so nothing ran. Do not retry it; tell the user a reviewer must decide "
    "it again."
)
RULE_REFUSED = (
    "standing rule {rule} allowed this {tool} call, but the rule did not verify against the authority key pinned "
    "where the tool runs ({problem}), so it was not run. Do not retry it; tell the user it needs a reviewer's decision."
)
UNVERIFIED_CHOICE = "unverified"
"""``Gate(authority="unverified")``: run without verifying anything, by choice (development, tests)."""
UNVERIFIED_ENV = "CROSSGATE_UNVERIFIED"
"""``CROSSGATE_UNVERIFIED=1``: the same choice, for a gate given no pin, when none is found either."""
UNVERIFIED = (
    'crossgate: this gate runs UNVERIFIED (chosen with Gate(authority="unverified") or ${unverified}=1): '
    "decisions and standing rules are not verified where tools run, so any writer of the store can let a call "
    "run. See docs/security.md."
)
NO_PIN = (
    "crossgate: no authority public key is pinned, so this gate refuses to start: pin the key "
    "(Gate(authority=...), ${env}, or the pin file {path} that crossgate serve writes), "
    'or choose to run unverified (Gate(authority="unverified") or {unverified}=1)'
).replace("${env}", "$" + PUBKEY_ENV)
HEAD_RULE = "crossgate-state-head"
"""The rule a deny verdict names when the state head refused the call (so ``submit(verdict=)`` records it)."""
HEAD_REASONS = frozenset({"stale_head", "rolled_back", "consumed", "revoked_rule"})
"""Refusal reasons of the state head check, beside the signature's (see docs/security.md)."""
RULE_CACHE_SIZE = 1024
"""Verified standing rules a gate remembers (a rule verifies once, not on every call it allows)."""


class UnverifiedWarning(UserWarning):
    """A gate lets reviewed calls run without verifying signatures: no authority public key is pinned."""


# Shown every time, not once per place in the code as Python shows a warning by default; a filter of the
# application's own (inserted before this one) still wins.
warnings.filterwarnings("always", category=UnverifiedWarning, append=True)


def _warn_unverified() -> None:
    warnings.warn(UNVERIFIED.replace("${unverified}", UNVERIFIED_ENV), UnverifiedWarning, stacklevel=3)


def pinned_keys(
    authority: AuthorityPin = None, *, queue: object = None, environ: Mapping[str, str] | None = None
) -> TrustedKeys | None:
    """The keys a gate verifies with: ``authority``, else the environment's, else an in-process queue's own,
    else the pin file at :data:`~crossgate.authority.DEFAULT_PIN_PATH`.

    A string is a pin file's path when such a file exists, else pin text (``ed25519:…``). None when running
    unverified was chosen (``authority="unverified"``, or ``$CROSSGATE_UNVERIFIED=1`` with nothing pinned);
    ConfigurationError, one line saying how to pin or opt out, when nothing is pinned and it was not.
    """
    if authority == UNVERIFIED_CHOICE:
        return None
    if isinstance(authority, TrustedKeys):
        return authority
    if isinstance(authority, PublicKey):
        return TrustedKeys([authority])
    if isinstance(authority, Authority):
        return authority.trusted_keys()
    if isinstance(authority, os.PathLike):
        return TrustedKeys.from_file(authority)
    if isinstance(authority, str):
        return _from_text_or_path(authority)
    if authority is not None:
        raise ConfigurationError(
            "authority must be TrustedKeys, a PublicKey, an Authority, a path or pin text, "
            f"not {type(authority).__name__}"
        )
    from_env = TrustedKeys.from_env(environ)
    if from_env is not None:
        return from_env
    from crossgate.queue import ReviewQueue

    # The queue object of this very process (never anything read from its store) signs with this key.
    if isinstance(queue, ReviewQueue) and queue.authority is not None:
        return queue.authority.trusted_keys()
    pin_file = default_pin_path()
    if pin_file.is_file():
        return TrustedKeys.from_file(pin_file)
    values = os.environ if environ is None else environ
    if values.get(UNVERIFIED_ENV, "").strip().lower() in ("1", "true", "yes"):
        return None
    raise ConfigurationError(NO_PIN.format(path=pin_file, env=PUBKEY_ENV, unverified=UNVERIFIED_ENV))


def _from_text_or_path(value: str) -> TrustedKeys:
    text = value.strip()
    if text and "\n" not in text and Path(text).is_file():
        return TrustedKeys.from_file(text)
    try:
        return TrustedKeys.parse(value)
    except ConfigurationError:
        if os.sep in text or text.endswith((".pub", ".json", ".pem", ".txt")):
            raise ConfigurationError(f"no authority public key file at {text}") from None
        raise


class Verifier:
    """Checks decision and standing-rule tokens with pinned keys; with no keys, checks nothing."""

    __slots__ = ("_clock", "_rules", "keys")

    def __init__(self, keys: TrustedKeys | None, *, clock: Clock = utc_now) -> None:
        self.keys = keys
        self._clock = clock
        self._rules: dict[str, StandingRule] = {}

    @property
    def verified(self) -> bool:
        """True when keys are pinned, so unsigned or badly signed decisions and rules let nothing run."""
        return self.keys is not None

    def check_decision(self, request: ApprovalRequest, run_args: JsonObject | None) -> DecisionClaims | None:
        """The signed claims of ``request``'s decision, checked against it and ``run_args`` (what will run).

        Raises SignatureError (``unsigned`` when it carries no token) or RequestExpiredError (a real
        approval past its signed ``apply_by``). None when no keys are pinned.
        """
        keys = self.keys
        if keys is None:
            return None
        decision, rid = request.decision, request.id
        if decision is None or not request.signatures:
            raise SignatureError(f"the decision on request {rid} is not signed", reason="unsigned")
        now = self._clock()
        fp, tokens = request.fingerprint, request.signatures
        signed: Sequence[DecisionClaims]
        if decision.kind is DecisionKind.APPROVE:
            required = request.approvals_required
            signed = keys.verify_approvals(tokens, request_id=rid, fingerprint=fp, required=required, now=now)
        elif len(tokens) == 1:
            signed = [keys.verify_decision(tokens[0], request_id=rid, fingerprint=fp, decision=decision, now=now)]
        else:
            raise _binding(f"request {rid} carries {len(request.signatures)} tokens for one {decision.kind.value}")
        claims = next((c for c in signed if not c.differences(decision)), None)
        if claims is None:
            differ = ", ".join(signed[0].differences(decision))
            raise _binding(f"the stored decision on request {rid} differs from the signed one: {differ}")
        if claims.tool != request.call.tool:
            raise _binding(f"the decision on request {rid} was signed for tool {claims.tool}")
        runs = claims.runs_fingerprint
        if runs is not None and (run_args is None or fingerprint(claims.tool, run_args) != runs):
            raise _binding(f"the arguments about to run are not the ones signed for request {rid}")
        return claims

    def rule_problem(self, rule: StandingRule, call: ToolCall) -> SignatureError | None:
        """Why the allow rule ``rule`` may not let ``call`` run (its token, or not covering it); None if it may."""
        keys = self.keys
        if keys is None:
            return None
        known = self._rules.get(rule.id)
        if known is not rule and known != rule:
            if rule.signature is None:
                return SignatureError(f"standing rule {rule.id} is not signed", reason="unsigned")
            try:
                claims = keys.verify_standing_rule(rule.signature, rule)
            except SignatureError as exc:
                return exc
            if claims.verdict is not VerdictKind.ALLOW:
                return _binding(f"standing rule {rule.id} was signed as a {claims.verdict.value} rule")
            if len(self._rules) >= RULE_CACHE_SIZE:
                self._rules.clear()
            self._rules[rule.id] = rule
        if not standing_rule_matches(rule, call, self._clock()):
            return _binding(f"standing rule {rule.id} does not cover this call of {call.tool}")
        return None


class VerifiedQueue:
    """An :class:`AdapterQueue` that verifies, with its :class:`Verifier`, whatever lets a call run.

    Every other call goes to ``inner`` unchanged. Build one with :func:`verified_queue`.
    """

    def __init__(self, inner: AdapterQueue, verifier: Verifier, heads: HeadGuard | None = None) -> None:
        self.inner = inner
        self.verifier = verifier
        self.heads = heads
        """The newest state head this gate has seen (None unverified): see :mod:`crossgate.adapter._heads`."""

    @property
    def verified(self) -> bool:
        """True when keys are pinned (see :class:`Verifier`)."""
        return self.verifier.verified

    @property
    def policy(self) -> Policy:
        """The inner queue's policy."""
        return self.inner.policy

    # judging and asking: an allow by a standing rule is verified --------------------------------
    def evaluate(self, call: ToolCall) -> Verdict:
        verdict = self.inner.evaluate(call)
        refusal = self._rule_refusal(call, verdict) or self._head_refusal(call, verdict)
        return verdict if refusal is None else refusal[0]

    def submit(
        self,
        call: ToolCall,
        *,
        args_schema: JsonObject | None = None,
        description: str | None = None,
        requested_by: str | None = None,
        capabilities: Sequence[DecisionKind] = ALL_DECISIONS,
        request_id: str | None = None,
        timeout_seconds: float | None = None,
        verdict: Verdict | None = None,
    ) -> Submission:
        if verdict is not None and (refused := self._judged_refusal(call, verdict)) is not None:
            return refused
        submission = self.inner.submit(
            call,
            verdict=self._still_judged(verdict),
            args_schema=args_schema,
            description=description,
            requested_by=requested_by,
            capabilities=capabilities,
            request_id=request_id,
            timeout_seconds=timeout_seconds,
        )
        return self._checked(call, submission)

    def prepare(
        self,
        call: ToolCall,
        *,
        args_schema: JsonObject | None = None,
        description: str | None = None,
        requested_by: str | None = None,
        capabilities: Sequence[DecisionKind] = ALL_DECISIONS,
        request_id: str | None = None,
        timeout_seconds: float | None = None,
        verdict: Verdict | None = None,
    ) -> Submission:
        if verdict is not None and (refused := self._judged_refusal(call, verdict)) is not None:
            return refused
        submission = self.inner.prepare(
            call,
            verdict=self._still_judged(verdict),
            args_schema=args_schema,
            description=description,
            requested_by=requested_by,
            capabilities=capabilities,
            request_id=request_id,
            timeout_seconds=timeout_seconds,
        )
        return self._checked(call, submission)

    def _checked(self, call: ToolCall, submission: Submission) -> Submission:
        if submission.request is not None:
            return submission  # asked: nothing runs before its approval is checked (mark_applied)
        refusal = self._rule_refusal(call, submission.verdict) or self._head_refusal(call, submission.verdict)
        if refusal is None:
            return submission
        return self._refused(call, *refusal)

    def _refused(self, call: ToolCall, verdict: Verdict, error: SignatureError, rule: str | None) -> Submission:
        self.inner.refuse_unverified(
            call, reason=error.reason, problem=str(error), message=verdict.reason, rule=rule, actor=call.framework
        )
        from crossgate.queue import Submission

        return Submission(verdict)

    def _judged_refusal(self, call: ToolCall, verdict: Verdict) -> Submission | None:
        """A refusal :meth:`evaluate` returned, handed back as ``verdict=``: recorded here, as a refusal.

        None when ``verdict`` is no such refusal, or the rule verifies by now (then it is judged again).
        """
        if verdict.kind is VerdictKind.DENY and verdict.rule == HEAD_RULE:
            refusal = self._head_refusal(call, self.inner.evaluate(call))
            return None if refusal is None else self._refused(call, *refusal)
        rule = verdict.standing_rule
        if verdict.kind is not VerdictKind.DENY or rule is None or rule.effect is not VerdictKind.ALLOW:
            return None
        error = self.verifier.rule_problem(rule, call)
        return None if error is None else self._refused(call, verdict, error, rule.id)

    @staticmethod
    def _still_judged(verdict: Verdict | None) -> Verdict | None:
        # A refusal whose rule verifies by now (or whose head is fresh by now) is judged afresh, never passed
        # on as the policy's deny.
        judged = verdict is not None and verdict.kind is VerdictKind.DENY
        if judged and verdict is not None and (verdict.standing_rule is not None or verdict.rule == HEAD_RULE):
            return None
        return verdict

    def _head_refusal(self, call: ToolCall, verdict: Verdict) -> tuple[Verdict, SignatureError, str | None] | None:
        """A deny verdict when the state head refuses the allow ``verdict`` for ``call``; else None."""
        heads = self.heads
        if heads is None or verdict.kind is not VerdictKind.ALLOW:
            return None
        try:
            head = heads.current()
            self._check_policy(head)
        except SignatureError as exc:
            template = STALE if exc.reason == "stale_head" else ROLLED_BACK
            reason = template.format(tool=call.tool, problem=exc)
            return Verdict(kind=VerdictKind.DENY, reason=reason, rule=HEAD_RULE), exc, None
        rule = verdict.standing_rule
        if rule is not None and rule.id in head.revoked_rules:
            error = SignatureError(f"standing rule {rule.id} is revoked in the state head", reason="revoked_rule")
            reason = REVOKED_RULE.format(rule=rule.id, tool=call.tool)
            return Verdict(kind=VerdictKind.DENY, reason=reason, rule=HEAD_RULE), error, rule.id
        return None

    def _check_policy(self, head: StateHeadClaims) -> None:
        """SignatureError ``rolled_back`` when the inner queue evaluates a policy older than the head's."""
        evaluated = getattr(self.inner, "evaluated_policy", None)
        if evaluated is None or head.policy_version is None:
            return  # the server evaluates (a RemoteQueue), or no policy version was ever signed
        local, version, digest = evaluated()
        if local or (version is not None and version > head.policy_version):
            return  # a local policy (development), or one signed after this head
        if version is None:
            named = head.policy_version
            problem = f"the store holds no verified policy, and the authority's state head names version {named}"
        elif version < head.policy_version:
            problem = (
                f"the store's current policy is version {version}, older than version {head.policy_version} "
                "that the authority's state head names"
            )
        elif digest != head.policy_digest:
            problem = f"policy version {version} is not the document the authority's state head names"
        else:
            return
        raise SignatureError(problem + " (a rollback)", reason="rolled_back")

    def _rule_refusal(self, call: ToolCall, verdict: Verdict) -> tuple[Verdict, SignatureError, str | None] | None:
        rule = verdict.standing_rule
        if verdict.kind is not VerdictKind.ALLOW or rule is None:
            return None
        error = self.verifier.rule_problem(rule, call)
        if error is None:
            return None
        reason = RULE_REFUSED.format(rule=rule.id, tool=call.tool, problem=error)
        # The refused rule stays on the deny verdict, so a refusal handed back as submit(verdict=) is known.
        return Verdict(kind=VerdictKind.DENY, reason=reason, rule=rule.id, standing_rule=rule), error, rule.id

    # applying: the decision is verified before it is marked applied ------------------------------
    def mark_applied(
        self, request_id: str | ApprovalRequest, *, args: JsonObject | None = None, actor: str | None = None
    ) -> ApprovalRequest:
        """Verify the decision (see :meth:`Verifier.check_decision`), then mark it applied on the inner queue.

        A decision that does not verify closes the request with the refusal as its reason and raises
        RequestCancelledError (RequestExpiredError past its signed ``apply_by``); nothing may run.
        """
        if isinstance(request_id, ApprovalRequest) and request_id.status is RequestStatus.DECIDED:
            request = request_id
        else:
            request = self.inner.get(request_id.id if isinstance(request_id, ApprovalRequest) else request_id)
        claims = None
        if request.status is RequestStatus.DECIDED and self.verifier.verified:
            claims = self._verify_or_refuse(request, args, actor)
        applied = self.inner.mark_applied(request, args=args, actor=actor)
        if claims is not None and claims.runs_fingerprint is not None and self.heads is not None:
            self.heads.applied(request.id, claims.apply_by)
        return applied

    def _verify_or_refuse(
        self, request: ApprovalRequest, args: JsonObject | None, actor: str | None
    ) -> DecisionClaims | None:
        tool = request.call.tool
        try:
            claims = self.verifier.check_decision(request, args)
            if claims is not None and claims.runs_fingerprint is not None:
                self._check_head_before_applying(request)
        except SignatureError as exc:
            if exc.reason in HEAD_REASONS:
                template = {"stale_head": STALE, "rolled_back": ROLLED_BACK}.get(exc.reason, CONSUMED)
                message = template.format(tool=tool, problem=exc, request=request.id)
            else:
                message = DECISION_REFUSED.format(tool=tool, request=request.id, problem=exc)
            self.inner.refuse_unverified(request, reason=exc.reason, problem=str(exc), message=message, actor=actor)
            raise RequestCancelledError(message) from exc
        except RequestExpiredError as exc:
            window = request.apply_within_seconds or 0.0
            message = APPROVAL_LAPSED_MESSAGE.format(tool=tool, seconds=window)
            self.inner.refuse_unverified(request, reason="lapsed", problem=str(exc), message=message, actor=actor)
            raise
        return claims

    def _check_head_before_applying(self, request: ApprovalRequest) -> None:
        """SignatureError (``stale_head``, ``rolled_back``, ``consumed``) when the head refuses this approval."""
        heads = self.heads
        if heads is None:
            return
        self._check_policy(heads.current())
        if heads.consumed(request.id):
            raise SignatureError(
                f"the approval on request {request.id} was applied already (the store shows it decided again)",
                reason="consumed",
            )

    def check_applied(self, request: ApprovalRequest, args: JsonObject) -> bool:
        """True if ``request`` (applied before) holds a decision that verifies for ``args``; for a call the SDK
        continues after it was applied (an ``as_tool`` agent's paused inner run). Always True unverified."""
        try:
            self.verifier.check_decision(request, args)
        except (SignatureError, RequestExpiredError):
            return False
        return True

    def refuse_unverified(
        self,
        target: ApprovalRequest | ToolCall,
        *,
        reason: str,
        problem: str,
        message: str,
        rule: str | None = None,
        actor: str | None = None,
    ) -> ApprovalRequest | None:
        return self.inner.refuse_unverified(
            target, reason=reason, problem=problem, message=message, rule=rule, actor=actor
        )

    # everything else, unchanged ------------------------------------------------------------------
    def get(self, request_id: str) -> ApprovalRequest:
        return self.inner.get(request_id)

    def list_requests(self, query: RequestQuery | None = None) -> Page[ApprovalRequest]:
        return self.inner.list_requests(query)

    async def wait(self, request_id: str, timeout: float | None = None) -> ApprovalRequest:
        return await self.inner.wait(request_id, timeout)

    def cancel(self, request_id: str, *, reason: str = CANCEL_MESSAGE, actor: str | None = None) -> ApprovalRequest:
        return self.inner.cancel(request_id, reason=reason, actor=actor)

    def expire_overdue(self) -> list[ApprovalRequest]:
        return self.inner.expire_overdue()

    def record_outcome(
        self,
        request_id: str | ApprovalRequest | None,
        *,
        ran: bool,
        result: str | None = None,
        error: str | None = None,
        call: ToolCall | None = None,
    ) -> None:
        self.inner.record_outcome(request_id, ran=ran, result=result, error=error, call=call)

    def outcome(self, request_id: str) -> Event | None:
        return self.inner.outcome(request_id)

    def park(
        self,
        *,
        framework: str,
        run: str,
        request_ids: Sequence[str],
        state: str,
        metadata: JsonObject | None = None,
        new_requests: Sequence[ApprovalRequest] = (),
    ) -> ParkedRun:
        return self.inner.park(
            framework=framework,
            run=run,
            request_ids=request_ids,
            state=state,
            metadata=metadata,
            new_requests=new_requests,
        )

    def get_parked(self, parked_id: str) -> ParkedRun:
        return self.inner.get_parked(parked_id)

    def parked_runs(
        self,
        *,
        statuses: Sequence[ParkedRunStatus] = (ParkedRunStatus.PARKED,),
        framework: str | None = None,
        run: str | None = None,
    ) -> list[ParkedRun]:
        return self.inner.parked_runs(statuses=statuses, framework=framework, run=run)

    def is_ready(self, parked: ParkedRun) -> bool:
        return self.inner.is_ready(parked)

    def claim_parked(self, parked_id: str | ParkedRun, *, owner: str, lease_seconds: float = 300.0) -> ParkedRun:
        return self.inner.claim_parked(parked_id, owner=owner, lease_seconds=lease_seconds)

    def finish_parked(
        self,
        parked_id: str | ParkedRun,
        *,
        owner: str,
        status: ParkedRunStatus = ParkedRunStatus.RESUMED,
        outcome: str | None = None,
    ) -> ParkedRun:
        return self.inner.finish_parked(parked_id, owner=owner, status=status, outcome=outcome)

    def __getattr__(self, name: str) -> object:
        # What is not part of AdapterQueue (a test's queue.decide, an app's queue.rules()) reaches the inner
        # queue as it is: none of it lets a call run in this process.
        return getattr(self.inner, name)

    def __repr__(self) -> str:
        return f"VerifiedQueue({self.inner!r}, keys={self.verifier.keys!r})"


_guarded: WeakKeyDictionary[object, VerifiedQueue] = WeakKeyDictionary()


def verified_queue(
    queue: AdapterQueue,
    authority: AuthorityPin = None,
    *,
    head_file: str | os.PathLike[str] | None = None,
    announce: bool = False,
) -> VerifiedQueue:
    """``queue`` behind the authority check, with the keys :func:`pinned_keys` finds for ``authority``.

    Keys given here pin ``queue`` for the whole process: every later ``verified_queue(queue)`` (the
    adapter kit's own checks, a LangChain middleware built on the same queue) uses them too. A
    :class:`VerifiedQueue` is returned as it is when ``authority`` is None. ``head_file``: where the gate
    remembers the newest state head (default :func:`~crossgate.adapter._heads.default_head_file`).
    ConfigurationError when nothing is pinned and running unverified was not chosen; an unverified gate
    issues :class:`UnverifiedWarning` each time one is built, and each time a Gate starts (``announce``).
    """
    if isinstance(queue, VerifiedQueue):
        if authority is None and head_file is None:
            if announce and not queue.verified:
                _warn_unverified()
            return queue
        queue = queue.inner
    if authority is None and head_file is None and (cached := _cached(queue)) is not None:
        if announce and not cached.verified:
            _warn_unverified()
        return cached
    keys = pinned_keys(authority, queue=queue)
    from crossgate.queue import ReviewQueue

    clock: Clock = queue.now if isinstance(queue, ReviewQueue) else utc_now
    heads = None
    if keys is None:
        _warn_unverified()
    else:
        fetch = getattr(queue, "state_head_token", None)
        signs = isinstance(queue, ReviewQueue) and queue.authority is not None
        heads = HeadGuard(
            keys,
            fetch if callable(fetch) else _no_head,
            HeadFile(head_file if head_file is not None else default_head_file(keys)),
            clock,
            sign=queue.sign_state_head if signs and isinstance(queue, ReviewQueue) else None,
        )
    guarded = VerifiedQueue(queue, Verifier(keys, clock=clock), heads)
    with contextlib.suppress(TypeError):  # not weakly referenceable: resolved on every call instead
        _guarded[queue] = guarded
    return guarded


def _no_head(kid: str) -> str | None:
    return None


def _cached(queue: AdapterQueue) -> VerifiedQueue | None:
    try:
        return _guarded.get(queue)
    except TypeError:
        return None


def _binding(message: str) -> SignatureError:
    return SignatureError(message, reason="binding")
