"""``ReviewQueue``'s policy: a local one, or the store's current signed version (``crossgate.policy.versions``)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from crossgate._queue_base import QueueBase
from crossgate.policy.rules import Policy
from crossgate.policy.versions import PolicySource

if TYPE_CHECKING:
    from crossgate.authority import Authority, TrustedKeys


class PoliciesMixin(QueueBase):
    """Which policy the queue evaluates, read again when the store's ``rules_version`` moves."""

    _policies: PolicySource

    def _use_policy(self, policy: Policy | None, trusted: TrustedKeys | None, authority: Authority | None) -> None:
        """A local ``policy``, or (None) the stored version verified with ``trusted``: the keys given, else the
        ones pinned in the environment, else ``authority``'s own (read when a version is first found)."""
        if trusted is None and authority is not None:
            from crossgate.authority import TrustedKeys

            trusted = TrustedKeys.from_env() or authority.trusted_keys()
        self._policies = PolicySource(self.store, policy, trusted, self._clock)

    @property
    def policy(self) -> Policy:
        """The policy evaluated now: the local one, or the store's current signed version (verified).

        While the stored version does not verify, a policy that denies every call with the refusal as the
        reason (``crossgate.policy.versions.refusing_policy``). Assigning a ``Policy`` makes it local.
        """
        return self._policies.at(self.store.rules_version())[0]

    @policy.setter
    def policy(self, policy: Policy) -> None:
        self._policies = PolicySource(self.store, policy, self._policies.trusted, self._clock)

    @property
    def policy_version(self) -> int | None:
        """The stored policy version evaluated now; None for a local policy, while none is stored, or while
        the stored one is refused."""
        return self._policies.at(self.store.rules_version())[1]

    def evaluated_policy(self) -> tuple[bool, int | None, str | None]:
        """(a local policy?, the stored version, its digest) of the policy evaluated last (a gate checks them
        against the state head); reads the store only before the first evaluation."""
        return self._policies.evaluated(self.store.rules_version)

    def rollback_problem(self) -> str | None:
        """What is wrong when the policy just evaluated is older than the newest version this queue's state
        head signer signed or saw (the store was put back); None when it is not, or nothing signs here.

        The server's own check, for callers with no gate of their own (AAP) and ahead of the gates' check
        (which holds the served policy for a few seconds)."""
        heads = self.head_signer
        floor = heads.policy_floor if heads is not None else None
        if floor is None:
            return None
        local, version, _digest = self.evaluated_policy()
        if local or (version is not None and version >= floor[0]):
            return None
        shown = "no signed policy version" if version is None else f"policy version {version}"
        return f"the store shows {shown}, older than version {floor[0]} already signed"

    def state_head_token(self, kid: str) -> str | None:
        """The store's state head token of key ``kid``, unverified (a gate verifies it with its own pinned keys)."""
        return self.store.get_state_head(kid)

    def _trusted_keys(self) -> TrustedKeys | None:
        return self._policies.trusted
