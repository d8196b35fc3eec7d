"""Benchmark: what signing and verifying a decision adds, per decision, in microseconds.

    python -m tests.benchmarks.bench_authority

One approve decision recorded by a real ReviewQueue (MemoryStore) on a call with ten arguments:

- fingerprint: ``fingerprint(tool, args)`` of the call alone, the baseline every adapter already pays;
- sign: ``decision_claims`` + ``Authority.sign`` (what the server will do when it records a decision);
- verify: ``TrustedKeys.verify_decision`` with the request id, fingerprint, stored decision and ``now``
  (what the adapter will do right before the tool runs);
- Ed25519 alone: the raw ``cryptography`` sign and verify of a token-sized message, the floor;
- round trip, unsigned: submit + decide + mark applied on a MemoryStore queue without an authority, and
  no keys pinned (crossgate before signatures);
- round trip, signed decision: the same with ``ReviewQueue(authority=...)`` (the decision is signed when
  recorded) and the mark applied through the adapter kit's ``verified_queue`` with the public key pinned
  (verified before it may run), with the queue's audit checkpoints left out: what signing and verifying
  the decision add to its round trip;
- round trip, signed + checkpoint: the same with the signed audit checkpoint and state head such a queue
  also writes after each decision (``crossgate.checkpoints``, ``crossgate.state_head``), as it runs by default;
- allowed call, gate, with and without the state head check; round trip, signed, without it: what the
  gate's state head check (``crossgate.adapter._heads``: the cached head's expiry, the policy version, the
  consumed list, and recording the applied approval in the gate's head file) adds.

The rows alternate in short rounds in one process, so machine noise hits all alike; the table gives
medians over rounds and ratios to the fingerprint. Target (issue 14): sign + verify under 200 µs.
Environment: ``CG_BENCH_DECISIONS`` (operations per round, default 2000), ``CG_BENCH_ROUNDS`` (default 7).
Not collected by pytest.
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from crossgate import Approve, MemoryStore, Policy, ReviewQueue, ToolCall, VerdictKind
from crossgate.adapter import VerifiedQueue, Verifier, verified_queue
from crossgate.authority import Authority, decision_claims
from crossgate.fingerprint import fingerprint

DECISIONS = int(os.environ.get("CG_BENCH_DECISIONS", "2000"))
ROUNDS = int(os.environ.get("CG_BENCH_ROUNDS", "7"))
TARGET_US = 200.0
ARGS = {f"field_{i}": f"value {i} " * 3 for i in range(8)} | {"id": "t3", "count": 12}


def call(i: int = 0) -> ToolCall:
    """The call every row works on (ten arguments)."""
    return ToolCall(framework="langgraph", tool="delete_ticket", args={**ARGS, "id": f"t{i}"}, run="run-1")


class DecisionsOnly(ReviewQueue):
    """A queue that signs decisions but writes no audit checkpoints: the decision's own cost, measured alone."""

    @property
    def checkpointer(self) -> None:  # type: ignore[override]
        return None


def per_op_us(operation: Callable[[], object], n: int) -> float:
    """Mean CPU microseconds of ``operation`` over ``n`` calls (CPU time: the machine is shared)."""
    start = time.process_time_ns()
    for _ in range(n):
        operation()
    return (time.process_time_ns() - start) / n / 1000


def main() -> None:
    """Measure each row in alternating rounds and print medians and ratios."""
    os.environ.setdefault("CROSSGATE_HEAD_DIR", tempfile.mkdtemp(prefix="crossgate-bench-heads-"))
    queue = ReviewQueue(MemoryStore(), Policy())
    submitted = queue.submit(call()).request
    assert submitted is not None
    request = queue.decide(submitted.id, Approve(), reviewer="ana", channel="page")
    decision = request.decision
    assert decision is not None
    authority = Authority.generate()
    trusted = authority.trusted_keys()
    token = authority.sign(decision_claims(request, decision))
    now = queue.now()
    counter = iter(range(10**9))

    unsigned = ReviewQueue(MemoryStore(), Policy())
    signing = DecisionsOnly(MemoryStore(), Policy(), authority=authority)
    gate_queue = verified_queue(signing, trusted)  # a gate's queue: the check with the pinned key in front
    assert gate_queue.verified and signing.checkpointer is None
    checkpointing = ReviewQueue(MemoryStore(), Policy(), authority=authority)
    checkpointing_gate = verified_queue(checkpointing, trusted)
    assert checkpointing.checkpointer is not None

    def round_trip() -> None:
        pending = unsigned.submit(call(next(counter))).request
        assert pending is not None
        decided = unsigned.decide(pending.id, Approve(), reviewer="ana")
        unsigned.mark_applied(decided, args=decided.approved_args())

    def signed_round_trip() -> None:
        pending = signing.submit(call(next(counter))).request
        assert pending is not None
        decided = signing.decide(pending.id, Approve(), reviewer="ana")
        assert decided.signatures
        gate_queue.mark_applied(decided, args=decided.approved_args())

    headless_gate = VerifiedQueue(signing, Verifier(trusted, clock=signing.now))  # the same, without the head

    def headless_round_trip() -> None:
        pending = signing.submit(call(next(counter))).request
        assert pending is not None
        decided = signing.decide(pending.id, Approve(), reviewer="ana")
        headless_gate.mark_applied(decided, args=decided.approved_args())

    allowing = ReviewQueue(MemoryStore(), Policy(default=VerdictKind.ALLOW), authority=authority)
    allowed_gate = verified_queue(allowing, trusted)
    assert allowed_gate.heads is not None
    allowed_headless = VerifiedQueue(allowing, Verifier(trusted, clock=allowing.now))
    allowed_call = call()

    def allowed_with_head() -> None:
        allowed_gate.submit(allowed_call)

    def allowed_without_head() -> None:
        allowed_headless.submit(allowed_call)

    def checkpointed_round_trip() -> None:
        pending = checkpointing.submit(call(next(counter))).request
        assert pending is not None
        decided = checkpointing.decide(pending.id, Approve(), reviewer="ana")
        checkpointing_gate.mark_applied(decided, args=decided.approved_args())

    def sign_and_verify() -> None:
        signed = authority.sign(decision_claims(request, decision))
        trusted.verify_decision(
            signed, request_id=request.id, fingerprint=request.fingerprint, decision=decision, now=now
        )

    raw_key = Ed25519PrivateKey.generate()
    raw_public = raw_key.public_key()
    message = token.rsplit(".", 1)[0].encode("ascii")

    def raw_ed25519() -> None:
        raw_public.verify(raw_key.sign(message), message)

    rows: dict[str, tuple[Callable[[], object], int]] = {
        "fingerprint": (lambda: fingerprint(request.call.tool, request.call.args), DECISIONS),
        "Ed25519 alone (sign+verify)": (raw_ed25519, DECISIONS),
        "sign": (lambda: authority.sign(decision_claims(request, decision)), DECISIONS),
        "verify": (
            lambda: trusted.verify_decision(
                token, request_id=request.id, fingerprint=request.fingerprint, decision=decision, now=now
            ),
            DECISIONS,
        ),
        "sign+verify": (sign_and_verify, DECISIONS),
        "allowed call, gate, no head": (allowed_without_head, DECISIONS),
        "allowed call, gate + head": (allowed_with_head, DECISIONS),
        "round trip, unsigned": (round_trip, max(1, DECISIONS // 10)),
        "round trip, signed, no head": (headless_round_trip, max(1, DECISIONS // 10)),
        "round trip, signed decision": (signed_round_trip, max(1, DECISIONS // 10)),
        "round trip, +checkpoint": (checkpointed_round_trip, max(1, DECISIONS // 10)),
    }
    for operation, _ in rows.values():  # warm up
        per_op_us(operation, 20)
    samples: dict[str, list[float]] = {name: [] for name in rows}
    for _ in range(ROUNDS):
        for name, (operation, n) in rows.items():
            samples[name].append(per_op_us(operation, n))
    medians = {name: statistics.median(values) for name, values in samples.items()}
    base = medians["fingerprint"]
    print(f"authority, {DECISIONS} decisions per round, {ROUNDS} rounds (median µs per operation)")
    print(f"{'':<30}{'µs':>10}{'× fingerprint':>16}")
    for name, value in medians.items():
        print(f"{name:<30}{value:>10.1f}{value / base:>16.1f}")
    both = medians["sign+verify"]
    plain = medians["round trip, unsigned"]
    added = medians["round trip, signed decision"] - plain
    checkpoint = medians["round trip, +checkpoint"] - medians["round trip, signed decision"]
    verdict = "ok" if added < TARGET_US else "over target"
    print(f"sign+verify per decision: {both:.1f} µs alone")
    print(
        f"added to a decision's round trip by the wiring: {added:.1f} µs (target < {TARGET_US:.0f} µs: {verdict}); "
        f"+{100 * added / plain:.0f}% of a memory-store round trip ({plain:.1f} µs)"
    )
    print(f"the signed audit checkpoint after each decision adds {checkpoint:.1f} µs more")
    with_head, without_head = medians["allowed call, gate + head"], medians["allowed call, gate, no head"]
    trip_head, trip_plain = medians["round trip, signed decision"], medians["round trip, signed, no head"]
    print(
        f"the state head check: allowed call x{with_head / without_head:.2f} ({with_head - without_head:+.1f} µs), "
        f"round trip x{trip_head / trip_plain:.2f} ({trip_head - trip_plain:+.1f} µs)"
    )
    floor = medians["Ed25519 alone (sign+verify)"]
    print(f"of which Ed25519 itself: {floor:.1f} µs; crossgate's own share: {both - floor:.1f} µs")


if __name__ == "__main__":
    main()
