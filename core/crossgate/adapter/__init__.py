"""The adapter kit: the steps every crossgate adapter shares, written once.

An adapter translates between its SDK's objects and crossgate's requests and decisions; everything
else it needs is here, and nothing else decides whether a reviewed tool runs:

- :func:`request_id` is the one recipe for deterministic request ids: ``request_id(tag, *parts)``
  with whatever identifies a call in the framework (run, agent, call id; a thread and turn).
- :func:`run_checked` is the check immediately before a tool runs. Given the request, the arguments
  the model proposed and the tool body, it marks the call applied (exactly once; the queue refuses a
  lapsed approval and a call the policy denies now), runs the body only for approve or edit (with the
  edited arguments), answers respond with the reviewer's content and reject with its message, and
  records the outcome. Its :class:`ToolAnswer` is what the model is told. :func:`run_checked_sync`
  is the same for a synchronous body; :func:`apply_decision` (and ``apply_decision_sync``) is the
  check alone, for an SDK that runs the tool itself after a permission answer (record the outcome
  when the SDK reports it);
  :func:`run_recorded` runs and records a call the policy allowed outright.
- :func:`resume_leased` is the resume sequence: claim the parked run (taking over one whose resumer
  died once its lease ran out), run the adapter's body (apply each decision through ``run_checked``,
  finish or park again), close the claim, and mark the run failed with the error if the body raises;
  :func:`resumer_owner` is the name a gate claims under (``Gate(owner=...)`` overrides it).
- :func:`store_call` is the one crossing from async SDK code into the synchronous queue (inline; see
  its docstring for why).
- :func:`run_excerpt` builds the size-capped excerpt of the run (the user's request, the model's last
  messages, the calls that ran before) a gate attaches to its new requests when the app consents
  (``Gate(excerpt=True)``; off by default).
- :func:`crossgate_cause` finds crossgate's error inside an SDK's wrapper exception, for a gate to raise again.
- :func:`app_context` checks the app's context for a gate's calls (``Gate(context=)``, ``run(call_context=)``).
- :class:`RunScope` is one gated run (id, session, who it acts for, app context, the calls it asked), which
  builds each call's neutral ``ToolCall`` and the parked run's metadata; :func:`parked_for_resume` reads a
  parked run back for a resume (its framework and agent checked, ``Parked`` while a request is open) and
  :func:`deny_message` is what the model reads for a policy deny.
- :class:`AdapterQueue` is exactly what an adapter may call on the queue; type the ``queue`` parameter
  of a ``Gate`` with it. ``ReviewQueue`` implements it, and so will a queue served over HTTP.
- :func:`verified_queue` puts a gate's queue behind the authority check: ``Gate(authority=...)`` (or
  ``$CROSSGATE_AUTHORITY_PUBKEY`` / ``$CROSSGATE_AUTHORITY_PUBKEY_FILE``) pins the public keys, and every
  decision and every standing rule that lets a call run is verified with them before it runs
  (:class:`VerifiedQueue`). With nothing pinned it verifies nothing and warns once (:class:`UnverifiedWarning`).

Porting an adapter: take ``authority`` in the Gate and keep ``verified_queue(queue, authority)`` as its
queue, name its calls with ``request_id``, submit asks with ``request_id=``, and route
every reviewed call through ``run_checked`` (or ``apply_decision``) and every resume through
``resume_leased``; keep ``agent`` a string name, and the decision union is ``crossgate.decisions.AnyDecision``
(``crossgate.Decision`` is the same union, tagged for pydantic to parse).
"""

from crossgate.adapter._authority import (
    AuthorityPin,
    UnverifiedWarning,
    VerifiedQueue,
    Verifier,
    pinned_keys,
    verified_queue,
)
from crossgate.adapter._cause import crossgate_cause
from crossgate.adapter._check import (
    Application,
    ToolAnswer,
    apply_decision,
    apply_decision_sync,
    run_checked,
    run_checked_sync,
    run_recorded,
)
from crossgate.adapter._context import app_context
from crossgate.adapter._crossing import store_call
from crossgate.adapter._excerpt import run_excerpt
from crossgate.adapter._ids import request_id
from crossgate.adapter._lookup import find_request
from crossgate.adapter._protocol import AdapterQueue
from crossgate.adapter._resume import resume_leased, resumer_owner
from crossgate.adapter._runs import Resumable, RunScope, deny_message, parked_for_resume

__all__ = [
    "AdapterQueue",
    "Application",
    "AuthorityPin",
    "Resumable",
    "RunScope",
    "ToolAnswer",
    "UnverifiedWarning",
    "VerifiedQueue",
    "Verifier",
    "app_context",
    "apply_decision",
    "apply_decision_sync",
    "crossgate_cause",
    "deny_message",
    "find_request",
    "parked_for_resume",
    "pinned_keys",
    "request_id",
    "resume_leased",
    "resumer_owner",
    "run_checked",
    "run_checked_sync",
    "run_excerpt",
    "run_recorded",
    "store_call",
    "verified_queue",
]
