"""Exit codes of the ``crossgate`` command, mapped from the error tree in this one place.

==== ==========================================================================
code meaning
==== ==========================================================================
0    ok
1    any other crossgate error (configuration, store), a tampered audit log, a reviewer token the
     review server refuses (401), or a review server that fails or does not answer
2    usage: an unknown option, a missing or malformed value (click's own), an id start naming several,
     a command that works on a local database only run with a review server chosen (``LocalOnlyError``)
3    not found: no request, standing rule or parked run has this id, or no database is at ``--db``
4    conflict: already decided or applied, expired, cancelled, already revoked
5    invalid decision or arguments: not allowed, bad JSON, schema failure, wrong fingerprint, a
     decision by the person the run acts for (``SelfDecisionError``), or outside the reviewer's
     scope on a review server, or not an admin there (403)
6    denied: ``submit``'s call was denied by the policy (the verdict is printed, nothing was stored), or
     a command holds no credential it needs (``NoCredentialsError``: no reviewer token for a review
     server; no authority key to decide on the local database)
==== ==========================================================================
"""

from __future__ import annotations

from crossgate.cli.deciding import LocalOnlyError, NoCredentialsError
from crossgate.errors import ConflictError, CrossgateError, InvalidDecisionError, NotFoundError

OK = 0
FAILURE = 1
USAGE = 2
NOT_FOUND = 3
CONFLICT = 4
INVALID = 5
DENIED = 6

_BY_ERROR: tuple[tuple[type[CrossgateError], int], ...] = (
    (NoCredentialsError, DENIED),
    (LocalOnlyError, USAGE),
    (NotFoundError, NOT_FOUND),
    (ConflictError, CONFLICT),
    (InvalidDecisionError, INVALID),
)


def exit_code_for(error: CrossgateError) -> int:
    """The exit code for a crossgate error: its branch of the tree, else 1."""
    for error_type, code in _BY_ERROR:
        if isinstance(error, error_type):
            return code
    return FAILURE


def one_line(message: str) -> str:
    """``message`` folded onto one line, for stderr."""
    return " ".join(message.split())
