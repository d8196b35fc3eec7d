"""What the AAP provider keeps besides the queue: instances, their credentials, and idempotency records.

The requests themselves, their decisions and the audit trail live in the queue's store like any other
request. This registry maps AAP's instances and idempotency keys onto them. It is held in the server
process; with a ``journal`` (``aap_registry_path``) every change is also appended to a file and
replayed on start, so instances, credentials and keys survive a restart. See docs/agents-over-http.md.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from crossgate.fingerprint import canonical_json
from crossgate.model import JsonObject
from crossgate.server.aap.journal import Journal, dumps_record, when
from crossgate.server.settings import AgentToken, hash_token

SERVICE_NAMESPACE = uuid.UUID("6f1f3c1e-8a43-4d0b-9a55-6c0a5f7f2b10")
"""Instance ids of agents from the tokens file are uuid5 of their name in this namespace: stable across restarts."""
TOKEN_PREFIX = "cgagent_"


def digest(body: object) -> str:
    """The sha256 of a body's canonical JSON: what an idempotency key is bound to."""
    return hashlib.sha256(canonical_json(body).encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True, kw_only=True)
class Delivery:
    """A verified receiver: where notifications go and the secret they are signed with (never returned)."""

    url: str
    registration_id: str
    secret: str = field(repr=False)

    def public(self) -> JsonObject:
        """The WebhookDelivery object: no secret."""
        return {"type": "webhook", "url": self.url, "registration_id": self.registration_id}


@dataclass(frozen=True, slots=True, kw_only=True)
class Instance:
    """An AAP instance: the identity (agent and run) of every request made with its credential."""

    id: str
    name: str
    token_sha256: str
    owner: str | None
    """The provisioner that created it; None for an agent service from the tokens file."""
    deleted_at: datetime | None = None
    delivery: Delivery | None = None


def service_instance(agent: AgentToken) -> Instance:
    """The instance of an agent service (tokens file or store): its id is stable, uuid5 of its name."""
    iid = str(uuid.uuid5(SERVICE_NAMESPACE, agent.name))
    return Instance(id=iid, name=agent.name, token_sha256=agent.token_sha256, owner=None)


@dataclass(frozen=True, slots=True, kw_only=True)
class Immediate:
    """A terminal outcome the policy gave at once (allow, deny, a pre-approved retry): no crossgate request."""

    status: str
    decided_at: datetime
    note: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Submitted:
    """One AAP request: what was submitted, under which key, and what happened to it on the AAP side."""

    id: str
    instance_id: str
    key: str
    digest: str
    body: JsonObject
    created_at: datetime
    deadline_at: datetime
    immediate: Immediate | None = None
    consumed_at: datetime | None = None
    consume_key: str | None = None
    outcome: JsonObject | None = None
    notified: bool = False
    """Whether its ``request.resolved`` event was made (never twice, across restarts)."""


@dataclass(slots=True)
class _Provisioned:
    instance_id: str
    digest: str
    token: str


@dataclass(slots=True)
class MemoryRegistry:
    """The registry in this process's memory; every method is safe to call from several threads."""

    services: tuple[AgentToken, ...] = ()
    journal: Journal | None = None
    stored_services: Callable[[str], AgentToken | None] | None = None
    """Agent credentials the store keeps (``crossgate agents add``), by token: looked up on each use, so a
    revoked one is refused at once; each is an instance as a tokens file service is."""
    _instances: dict[str, Instance] = field(default_factory=dict)
    _provisions: dict[tuple[str, str], _Provisioned] = field(default_factory=dict)
    _updates: dict[tuple[str, str, str], tuple[str, JsonObject]] = field(default_factory=dict)
    _requests: dict[str, Submitted] = field(default_factory=dict)
    _keys: dict[tuple[str, str], str] = field(default_factory=dict)
    lock: threading.RLock = field(default_factory=threading.RLock)

    def __post_init__(self) -> None:
        for agent in self.services:
            if agent.scope == "agent":
                service = service_instance(agent)
                self._instances[service.id] = service
        if self.journal is not None:
            for kind, data in self.journal.entries():
                self._replay(kind, data)

    def _replay(self, kind: str, data: dict[str, Any]) -> None:
        if kind == "instance":
            delivery = Delivery(**data["delivery"]) if data.get("delivery") else None
            fields = {**data, "deleted_at": when(data.get("deleted_at")), "delivery": delivery}
            self._instances[data["id"]] = Instance(**fields)
        elif kind == "provision":
            self._provisions[(data["owner"], data["key"])] = _Provisioned(
                data["instance_id"], data["digest"], data["token"]
            )
        elif kind == "update":
            self._updates[(data["owner"], data["instance_id"], data["key"])] = (data["digest"], data["response"])
        elif kind == "request":
            immediate = data.get("immediate")
            record = Submitted(
                **{
                    **data,
                    "created_at": when(data["created_at"]),
                    "deadline_at": when(data["deadline_at"]),
                    "consumed_at": when(data.get("consumed_at")),
                    "immediate": None
                    if immediate is None
                    else Immediate(**{**immediate, "decided_at": when(immediate["decided_at"])}),
                }
            )
            self._requests[record.id] = record
            self._keys[(record.instance_id, record.key)] = record.id

    def close(self) -> None:
        """Close the journal, if any."""
        if self.journal is not None:
            self.journal.close()

    def _log(self, kind: str, data: dict[str, Any]) -> None:
        if self.journal is not None:
            self.journal.append(kind, data)

    def _put(self, instance: Instance) -> Instance:
        self._instances[instance.id] = instance
        if instance.owner is not None:  # services come from the tokens file
            self._log("instance", dumps_record(instance))
        return instance

    # instances ----------------------------------------------------------------------------------
    def provisioned(self, owner: str, key: str) -> tuple[Instance, str, str] | None:
        """The instance, token and body digest an earlier provisioning with this key gave, if any."""
        with self.lock:
            found = self._provisions.get((owner, key))
            if found is None:
                return None
            return self._instances[found.instance_id], found.token, found.digest

    def provision(
        self,
        owner: str,
        key: str,
        body_digest: str,
        name: str | None,
        *,
        instance_id: str | None = None,
        delivery: Delivery | None = None,
    ) -> tuple[Instance, str]:
        """Create an instance with a fresh credential, under ``owner``'s idempotency ``key``."""
        token = TOKEN_PREFIX + secrets.token_urlsafe(32)
        iid = instance_id or str(uuid.uuid4())
        instance = Instance(
            id=iid, name=name or f"instance-{iid[:8]}", token_sha256=hash_token(token), owner=owner, delivery=delivery
        )
        with self.lock:
            self._put(instance)
            self._provisions[(owner, key)] = _Provisioned(iid, body_digest, token)
            provision = {"owner": owner, "key": key, "instance_id": iid, "digest": body_digest, "token": token}
            self._log("provision", provision)
        return instance, token

    def instance(self, instance_id: str) -> Instance | None:
        """The instance with this id, deleted or not."""
        with self.lock:
            return self._instances.get(instance_id)

    def instance_for(self, token: str) -> Instance | None:
        """The live instance whose credential is ``token``, or None (unknown, or deleted: refused)."""
        wanted = hash_token(token)
        found = None
        with self.lock:
            for instance in self._instances.values():  # no early exit: timing says nothing about the match
                if hmac.compare_digest(wanted, instance.token_sha256):
                    found = instance
        if found is None and (stored := self._stored_service(token)) is not None:
            return stored
        return found if found is not None and found.deleted_at is None else None

    def _stored_service(self, token: str) -> Instance | None:
        agent = self.stored_services(token) if self.stored_services is not None else None
        return service_instance(agent) if agent is not None and agent.scope == "agent" else None

    def is_instance_token(self, token: str) -> bool:
        """True if ``token`` is (or was) an instance's credential."""
        wanted = hash_token(token)
        with self.lock:
            if any(hmac.compare_digest(wanted, i.token_sha256) for i in self._instances.values()):
                return True
        return self._stored_service(token) is not None

    def rename(self, instance_id: str, name: str) -> Instance:
        """Give the instance a new name."""
        with self.lock:
            return self._put(replace(self._instances[instance_id], name=name))

    def set_delivery(self, instance_id: str, delivery: Delivery | None) -> Instance:
        """Replace (or, with None, remove) the instance's receiver."""
        with self.lock:
            return self._put(replace(self._instances[instance_id], delivery=delivery))

    def update_record(self, owner: str, instance_id: str, key: str) -> tuple[str, JsonObject] | None:
        """The digest and response of an earlier update with this key, if any."""
        with self.lock:
            return self._updates.get((owner, instance_id, key))

    def remember_update(self, owner: str, instance_id: str, key: str, body_digest: str, response: JsonObject) -> None:
        """Keep an update's response for replays of its key."""
        with self.lock:
            self._updates[(owner, instance_id, key)] = (body_digest, response)
            update = {"owner": owner, "instance_id": instance_id, "key": key, "digest": body_digest}
            self._log("update", {**update, "response": response})

    def delete(self, instance_id: str, now: datetime) -> list[Submitted]:
        """Retire the instance (its credential is refused from now on); return its requests."""
        with self.lock:
            instance = self._instances[instance_id]
            if instance.deleted_at is None:
                self._put(replace(instance, deleted_at=now))
            return [r for r in self._requests.values() if r.instance_id == instance_id]

    # requests -----------------------------------------------------------------------------------
    def by_key(self, instance_id: str, key: str) -> Submitted | None:
        """The request this instance created under ``key``, if any."""
        with self.lock:
            found = self._keys.get((instance_id, key))
            return self._requests[found] if found is not None else None

    def add(self, record: Submitted) -> None:
        """Keep a new request and its key."""
        with self.lock:
            self._requests[record.id] = record
            self._keys[(record.instance_id, record.key)] = record.id
            self._log("request", dumps_record(record))

    def get(self, request_id: str) -> Submitted | None:
        """The request with this AAP id, if any."""
        with self.lock:
            return self._requests.get(request_id)

    def all_requests(self) -> list[Submitted]:
        """Every request, in the order they were made."""
        with self.lock:
            return list(self._requests.values())

    def save(self, record: Submitted) -> None:
        """Replace a request's record (consumption, outcome, notification)."""
        with self.lock:
            self._requests[record.id] = record
            self._log("request", dumps_record(record))
