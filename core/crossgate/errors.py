"""Every error crossgate raises, in one tree.

::

    CrossgateError
    ├── NotFoundError              unknown request, rule or parked run          (CLI exit 3, HTTP 404)
    │   └── DatabaseNotFoundError  no crossgate database where one was named
    ├── ConflictError              the state moved on: decided, applied, ...    (CLI exit 4, HTTP 409)
    │   ├── AlreadyDecidedError
    │   ├── AlreadyAppliedError
    │   ├── RequestExpiredError
    │   ├── RequestCancelledError
    │   └── ParkedRunClaimedError
    ├── InvalidDecisionError       not allowed, bad arguments, wrong binding    (CLI exit 5, HTTP 422)
    │   ├── DecisionNotAllowedError
    │   ├── InvalidArgumentsError
    │   ├── FingerprintMismatchError
    │   ├── SelfDecisionError
    │   └── SignatureError         not signed by a trusted authority key, or signed for something else
    ├── ConfigurationError         a policy file or option that cannot work
    ├── StoreError                 the database failed; driver errors are wrapped here
    │   ├── AuditHeadMissingError  the audit log's recorded head row is gone
    │   └── ServerUnavailableError (crossgate.remote) the review server did not answer; nothing ran
    └── AdapterError               an SDK did something the adapter cannot translate

A pending request is a return value, never an exception.
"""

from __future__ import annotations


class CrossgateError(Exception):
    """Root of every error crossgate raises."""


class NotFoundError(CrossgateError):
    """No request, rule or parked run has this id."""


class DatabaseNotFoundError(NotFoundError):
    """No crossgate database at the SQLite path given; nothing was created (only ``crossgate init`` creates one)."""


class ConflictError(CrossgateError):
    """The object is no longer in a state that allows this operation."""


class AlreadyDecidedError(ConflictError):
    """The request was already decided; a request is decided exactly once."""


class AlreadyAppliedError(ConflictError):
    """The decision was already applied; nothing runs twice."""


class RequestExpiredError(ConflictError):
    """The request expired before anyone decided it."""


class RequestCancelledError(ConflictError):
    """The request was cancelled."""


class ParkedRunClaimedError(ConflictError):
    """The parked run was already resumed, or another resumer holds its lease."""


class InvalidDecisionError(CrossgateError):
    """The decision cannot be accepted for this request."""


class DecisionNotAllowedError(InvalidDecisionError):
    """The request's allowed decisions do not include this kind."""


class InvalidArgumentsError(InvalidDecisionError):
    """Arguments are not a JSON object or fail the tool's argument schema."""


class FingerprintMismatchError(InvalidDecisionError):
    """The decision or the execution names other arguments than the ones reviewed."""


class SelfDecisionError(InvalidDecisionError):
    """A reviewer tried to decide a request they submitted themselves."""


class SignatureError(InvalidDecisionError):
    """What could let a call run is not signed by a trusted authority key, or was signed for something else.

    ``reason`` names the refusal for logs and tests (see :mod:`crossgate.authority`).
    """

    def __init__(self, message: str, *, reason: str = "bad_signature") -> None:
        super().__init__(message)
        self.reason = reason


class ConfigurationError(CrossgateError):
    """A policy, rule or option is malformed or contradicts itself."""


class StoreError(CrossgateError):
    """The store failed; the driver's own exception is the cause."""


class AuditHeadMissingError(StoreError):
    """The audit log's head row is missing: the database was changed outside crossgate.

    No event can be appended (fail closed), and ``crossgate audit verify`` reports the log as broken.
    """

    def __init__(
        self, message: str = "the audit log's head row is missing: the database was changed outside crossgate"
    ) -> None:
        super().__init__(message)


class AdapterError(CrossgateError):
    """An SDK returned something the adapter cannot translate safely."""
