"""How much each SQLite commit survives: the store's ``durability`` and the sync level of each write.

A write is named (``update_request``, ``change_parked_run``, ...); :func:`sync_level` gives the
``PRAGMA synchronous`` value it commits with under a durability. Why a lighter commit is sound is in
:mod:`crossgate.stores.sqlite`'s docstring; what each setting can lose is below and in docs/benchmarks.md.
"""

from __future__ import annotations

from typing import Literal, get_args

Durability = Literal["full", "decisions", "normal"]
DURABILITIES: tuple[Durability, ...] = get_args(Durability)

SYNC_FULL = 2
SYNC_NORMAL = 1
"""The values ``PRAGMA synchronous`` reports."""

LIGHT_WRITES = frozenset({"change_parked_run", "change_parked_runs", "append_outcome", "put_state_head"})
"""The writes that commit with ``synchronous=NORMAL`` under ``durability="full"`` (every other is FULL).

Claims, finishes, retries and prunes of parked runs, the outcome record (``ran``/``not_run``) of a
reviewed call, and the stored state head. Nobody acts on one as on a durable fact, and losing one in a
power cut leaves what a process crash at that point leaves (see ``DURABLE_WRITES`` for each; a state
head lost is one a writer of the store could delete, and the signer rebuilds what it vouches for from
the durable rows). It is lost only when no FULL commit
followed it: the next FULL commit syncs the whole WAL, this one included. A transaction that also
commits enqueued events stays FULL (:func:`sync_level`), so their loss is what it was.
"""

DURABLE_WRITES = frozenset(
    {
        "setup",
        "update_request",
        "revoke_rule",
        "insert_policy_version",
        "insert_checkpoint",
        "insert_credential",
        "revoke_credential",
        "rotate_credential",
    }
)
"""The writes that commit with ``synchronous=FULL`` under ``durability="decisions"``.

What a power cut (or kernel crash) can lose under ``decisions``: the NORMAL commits made after the last
FULL one, and only those (a tail; see the module docstring). Those are: new requests (``submitted``),
parked runs, claims, finishes and prunes of parked runs, standing rules added (by hand or by
``remember``), and bare events (policy ``allowed``/``denied`` records, call outcomes). Why the
invariants hold:

- A decided request is never lost: the decision is a FULL commit, and it returns only after the sync,
  so a reviewer who was told "decided" is right after any power cut. The same holds for an expiry or a
  cancellation, and for a revoked standing rule (losing one would silently grant again).
- A stored policy version and a signed audit checkpoint are FULL commits too: an operator told "applied"
  is right, and a decision's own checkpoint (see ``crossgate.checkpoints``) is not lost after it.
- The stored state head (``put_state_head``) is a NORMAL commit (under ``full`` too): the signer writes a
  new one every few seconds and after each signed write, gates remember the newest they saw in their own
  files, and one lost with a power cut is what a writer of the store deleting the row would do, which the
  gates refuse (docs/security.md). What a head vouches for is durable without it: the policy versions,
  revocations and applied marks it names are FULL commits, which a restarted signer reads again.
- An applied mark is never lost: ``mark_applied`` is a FULL commit and adapters run the tool only after
  it returns, so after a power cut the request is still ``applied`` and the compare-and-set refuses to
  apply it again: no approved call runs twice.
- A lost ``submitted``/``parked`` tail is work nobody acted on durably: no decision or application
  followed it (a FULL commit would have made it durable), so it belongs to runs whose process died with
  the machine. Such a run asks again when it is restarted; a reviewer may have seen the request in a
  listing before the cut, but could not have decided it.
- A lost claim or finish of a parked run leaves the state a process crash at that point leaves in any
  mode: the run is parked (or its lease runs out) and a worker resumes it again; the gated tool's
  applied mark keeps it from running twice. (Ungated steps after it may run again, as after a crash.)
- A lost rule added by ``remember`` fails safe: the next matching call asks again.
- A lost prune of parked states brings the states back, with no event saying they went: the next prune
  clears them again.
- A lost claim, advance or release of a delivery cursor moves the cursor back to an earlier seq: the
  notifications after it are sent again (delivery is at-least-once anyway, with an idempotency key).
- Lost tail events (a policy ``allowed`` record, a call's outcome) are audit records of things that
  happened just before the cut; the audit chain stays verifiable, because the chain head and each event
  commit in one transaction and what survives is a prefix.
"""


def sync_level(durability: Durability, write: str, *, carries_enqueued: bool = False) -> int:
    """The ``PRAGMA synchronous`` value the write named ``write`` commits with under ``durability``.

    ``carries_enqueued``: the transaction also commits events waiting in the group commit; under
    ``full`` it is then FULL whatever the write, so those records are lost only while not committed.
    """
    if durability == "full":
        return SYNC_NORMAL if write in LIGHT_WRITES and not carries_enqueued else SYNC_FULL
    if durability == "decisions" and write in DURABLE_WRITES:
        return SYNC_FULL
    return SYNC_NORMAL
