"""The authority's tokens in SQL rows: kept in their own columns, beside the JSON body they sign.

A request's ``signatures`` column holds its decision tokens separated by single spaces (a JWS compact
token has no whitespace), NULL for none; a standing rule's ``signature`` column holds its token. The
body never holds them, so a body written before the columns existed reads the same. Whatever a
column holds is only ever verified, never trusted: a writer of the store can put anything there.
"""

from __future__ import annotations

from crossgate.model import ApprovalRequest, StandingRule

_REQUEST_EXCLUDED = {"signatures"}
_RULE_EXCLUDED = {"signature"}


def request_body(request: ApprovalRequest) -> str:
    """The JSON body of a request row: every field but its signatures."""
    return request.model_dump_json(exclude=_REQUEST_EXCLUDED)


def request_signatures(request: ApprovalRequest) -> str | None:
    """The ``signatures`` column of a request row."""
    return " ".join(request.signatures) if request.signatures else None


def request_from_row(body: str, signatures: str | None) -> ApprovalRequest:
    """The request in a row: its body, with the tokens of its ``signatures`` column."""
    request = ApprovalRequest.model_validate_json(body)
    if signatures or request.signatures:
        request = request.model_copy(update={"signatures": tuple((signatures or "").split())})
    return request


def rule_body(rule: StandingRule) -> str:
    """The JSON body of a standing rule row: every field but its signature."""
    return rule.model_dump_json(exclude=_RULE_EXCLUDED)


def rule_from_row(body: str, signature: str | None) -> StandingRule:
    """The standing rule in a row: its body, with the token of its ``signature`` column."""
    rule = StandingRule.model_validate_json(body)
    if signature is not None or rule.signature is not None:
        rule = rule.model_copy(update={"signature": signature})
    return rule
