"""The authority: what can let a tool call run is signed with a key the gated agent never holds.

The review server (and an operator's CLI) hold an :class:`Authority`, an Ed25519 private key, and sign
each decision, standing rule, policy version and audit checkpoint as a JWS compact token (alg
``EdDSA``, header ``kid``). The process where the tool runs holds only :class:`TrustedKeys`, public
keys pinned in its own configuration and never read from the store, and verifies before it runs
anything. A writer of the store who lacks the private key can refuse service but cannot make a tool run.

Refusals are :class:`~crossgate.errors.SignatureError` with a ``reason``: ``malformed``, ``algorithm``,
``unknown_key``, ``revoked_key``, ``bad_signature``, ``wrong_type`` or ``binding``. See docs/security.md.
"""

from crossgate.authority.claims import (
    CheckpointClaims,
    Claims,
    DecisionClaims,
    PolicyVersionClaims,
    ReviewerKind,
    StandingRuleClaims,
    StateHeadClaims,
    decision_claims,
    json_digest,
    policy_digest,
    policy_version_claims,
    standing_rule_claims,
)
from crossgate.authority.keyring import DEFAULT_PIN_PATH, Keyring, default_directory, default_pin_path
from crossgate.authority.keys import Authority, PublicKey, TrustedKeys
from crossgate.errors import SignatureError

__all__ = [  # noqa: RUF022 (sorted plainly, as tests/authority/test_api.py checks)
    "Authority",
    "CheckpointClaims",
    "Claims",
    "DEFAULT_PIN_PATH",
    "DecisionClaims",
    "Keyring",
    "PolicyVersionClaims",
    "PublicKey",
    "ReviewerKind",
    "SignatureError",
    "StandingRuleClaims",
    "StateHeadClaims",
    "TrustedKeys",
    "decision_claims",
    "default_directory",
    "default_pin_path",
    "json_digest",
    "policy_digest",
    "policy_version_claims",
    "standing_rule_claims",
]
