"""``crossgate policy apply | show | history | diff``: the one policy, stored and signed.

``apply`` signs the next version with the operator's key (:mod:`crossgate.cli.operator`) and records who
changed it and the diff; every process that has no ``--policy`` of its own then evaluates it. On a review
server (:mod:`crossgate.cli.deciding`) it takes an admin's token, and the server signs. ``show``,
``history`` and ``diff`` read the stored versions, locally or from a server, and say whether each one's
signature verifies with the keys this command trusts (never the server's word). Standard output carries
the policy or the diff; notes go to standard error.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from crossgate.authority import TrustedKeys
from crossgate.cli.backend import LocalBackend, ReviewerBackend
from crossgate.cli.context import CliContext
from crossgate.cli.deciding import ServerOpt, TokenFileOpt, reviewer_backend
from crossgate.cli.exit_codes import FAILURE
from crossgate.cli.operator import AuthorityDirOpt, require_authority
from crossgate.cli.options import JsonFlag
from crossgate.cli.output import list_json, print_json, say
from crossgate.display import visible
from crossgate.errors import ConfigurationError, NotFoundError, SignatureError
from crossgate.policy import Policy, load_policy
from crossgate.policy.versions import (
    policy_diff,
    policy_from_document,
    policy_text,
    verify_policy_version,
)
from crossgate.stores.base import PolicyVersion

NO_VERSION = "no policy version is stored yet; store one with: crossgate policy apply FILE"


def apply(
    ctx: typer.Context,
    file: Annotated[str, typer.Argument(metavar="FILE", help="The policy file (YAML, TOML or JSON).")],
    by: Annotated[
        str | None, typer.Option("--by", metavar="NAME", help="Who changes the policy. [default: the OS user]")
    ] = None,
    directory: AuthorityDirOpt = None,
    server: ServerOpt = None,
    token_file: TokenFileOpt = None,
    as_json: JsonFlag = False,
) -> None:
    """Store FILE as the next policy version, signed with the authority's key; every agent evaluates it.

    On a review server it takes an admin's token; the server signs, and records the admin.
    """
    policy = load_policy(file)
    state = ctx.ensure_object(CliContext)
    if directory is not None:
        state.key_dir = directory
    backend = reviewer_backend(
        ctx, "policy apply", server=server, token_file=token_file, reviewer=by, reviewer_option="--by"
    )
    trusted = state.keys().trusted
    if isinstance(backend, LocalBackend):
        backend.signer = require_authority(state.keys(), "crossgate policy apply")
        trusted = backend.signer.trusted_keys()
        if not backend.actor.strip():
            raise ConfigurationError("--by cannot be empty: the audit log records who changed the policy")
    applied = backend.apply_policy(policy, source=file)
    record = _version_json(applied.version, _check(applied.version, trusted))
    if as_json:
        print_json({**record, "unchanged": applied.unchanged, "changes": applied.changes})
        return
    if applied.unchanged:
        say(f"policy unchanged: version {applied.version.version} is this policy already")
        return
    stored = applied.version
    say(f"applied policy version {stored.version} (sha256 {stored.digest[:12]}, by {stored.created_by})")
    _note(_changes_line(applied.changes))


def show(
    ctx: typer.Context,
    version: Annotated[
        int | None, typer.Argument(metavar="[VERSION]", min=1, help="[default: the current one]")
    ] = None,
    server: ServerOpt = None,
    token_file: TokenFileOpt = None,
    as_json: JsonFlag = False,
) -> None:
    """Print a stored policy version (the current one by default) as a policy file; exit 1 if it does not verify."""
    backend, trusted = _reading(ctx, "policy show", server, token_file)
    stored = _stored(backend, version)
    check = _check(stored, trusted)
    if as_json:
        print_json({**_version_json(stored, check), "policy": _policy_json(stored)})
    else:
        _print_lines(_document_text(stored))
        source = f" from {stored.source}" if stored.source else ""
        when = stored.created_at.isoformat(timespec="seconds")
        _note(
            f"policy version {stored.version}, applied by {stored.created_by} at {when}{source}; {_check_text(check)}"
        )
    if check["status"] == "invalid":
        raise typer.Exit(FAILURE)


def history(
    ctx: typer.Context, server: ServerOpt = None, token_file: TokenFileOpt = None, as_json: JsonFlag = False
) -> None:
    """List every stored policy version, oldest first, with who applied it and whether its signature verifies."""
    backend, trusted = _reading(ctx, "policy history", server, token_file)
    versions = backend.policy_versions()
    records = [_version_json(v, _check(v, trusted)) for v in versions]
    if as_json:
        print_json(list_json(records))
        return
    if not versions:
        say(NO_VERSION)
        return
    for record in records:
        current = "  (current)" if record["version"] == versions[-1].version else ""
        source = f"  {record['source']}" if record["source"] else ""
        say(
            f"{record['version']:>4}  {record['created_at'][:19]}  {record['created_by']}  "
            f"sha256 {record['digest'][:12]}  {record['signature']['status']}{source}{current}"
        )


def diff(
    ctx: typer.Context,
    before: Annotated[
        str | None, typer.Argument(metavar="[A]", help="A version number or a policy file. [default: the previous one]")
    ] = None,
    after: Annotated[
        str | None, typer.Argument(metavar="[B]", help="A version number or a policy file. [default: the current one]")
    ] = None,
    server: ServerOpt = None,
    token_file: TokenFileOpt = None,
    as_json: JsonFlag = False,
) -> None:
    """Show what changes from A to B: rules added, removed or changed, settings, and the text diff."""
    backend, _trusted = _reading(ctx, "policy diff", server, token_file)
    if before is None:  # the previous version to the current one
        current = _stored(backend, None)
        old: Policy | None = None
        old_name = "no policy"
        if current.version > 1:
            old, old_name = _side(backend, str(current.version - 1))
        new, new_name = _side(backend, str(current.version))
    else:
        old, old_name = _side(backend, before)
        new, new_name = _side(backend, after if after is not None else str(_stored(backend, None).version))
    found = policy_diff(old, new, old_name=old_name, new_name=new_name)
    if as_json:
        print_json({"from": old_name, "to": new_name, "changes": found.summary(), "diff": found.text})
        return
    if found.empty:
        say(f"no differences between {old_name} and {new_name}")
        return
    _print_lines(found.text)
    _note(_changes_line(found.summary()))


def _side(backend: ReviewerBackend, given: str) -> tuple[Policy, str]:
    """A policy named on the command line: a stored version's number, or a file."""
    if given.isdigit():
        if len(given) > 19:  # past any version a store holds (int64), and past what int() reads at all
            raise NotFoundError(f"no policy version {given[:20]}… is stored")
        stored = _stored(backend, int(given))
        return policy_from_document(stored.document, version=stored.version), f"version {stored.version}"
    return load_policy(given), given


def _reading(
    ctx: typer.Context, command: str, server: str | None, token_file: Path | None
) -> tuple[ReviewerBackend, TrustedKeys | None]:
    """Where the versions are, and the public keys this command trusts (pinned, else the operator's keyring)."""
    backend = reviewer_backend(ctx, command, server=server, token_file=token_file, reviewer=None)
    return backend, ctx.ensure_object(CliContext).keys().trusted


def _stored(backend: ReviewerBackend, version: int | None) -> PolicyVersion:
    stored = backend.policy_version(version)
    if stored is None:
        raise NotFoundError(NO_VERSION if version is None else f"no policy version {version} is stored")
    return stored


def _check(stored: PolicyVersion, trusted: TrustedKeys | None) -> dict[str, Any]:
    """Whether ``stored`` verifies: ``valid`` (with the kid), ``invalid`` (with the problem), or ``unchecked``."""
    if trusted is None:
        return {"status": "unchecked", "kid": None, "problem": "no authority public key is pinned here"}
    try:
        verify_policy_version(stored, trusted)
    except SignatureError as exc:
        return {"status": "invalid", "kid": None, "problem": str(exc)}
    return {"status": "valid", "kid": _kid(stored.token), "problem": None}


def _kid(token: str) -> str | None:
    import base64
    import json

    try:
        header = token.split(".")[0]
        value = json.loads(base64.urlsafe_b64decode(header + "=" * (-len(header) % 4))).get("kid")
    except (ValueError, AttributeError):
        return None
    return value if isinstance(value, str) else None


def _check_text(check: dict[str, Any]) -> str:
    if check["status"] == "valid":
        return f"signature valid (key {check['kid']})"
    if check["status"] == "invalid":
        return f"signature INVALID: {check['problem']}"
    return "signature not checked: no authority public key is pinned here (CROSSGATE_AUTHORITY_PUBKEY)"


def _version_json(stored: PolicyVersion, check: dict[str, Any]) -> dict[str, Any]:
    return {
        "version": stored.version,
        "digest": stored.digest,
        "created_by": stored.created_by,
        "created_at": stored.created_at.isoformat(),
        "source": stored.source,
        "signature": check,
    }


def _policy_json(stored: PolicyVersion) -> Any:
    try:
        return policy_from_document(stored.document, version=stored.version).model_dump(mode="json")
    except SignatureError:
        return None


def _document_text(stored: PolicyVersion) -> str:
    try:
        return policy_text(policy_from_document(stored.document, version=stored.version))
    except SignatureError:
        return stored.document + "\n"


def _changes_line(summary: dict[str, Any]) -> str:
    parts = [f"{label} {', '.join(summary[key])}" for key, label in _LABELS if summary[key]]
    if summary["moved"]:
        parts.append("rules reordered")
    return "changes: " + ("; ".join(parts) if parts else "none")


_LABELS = (("added", "added"), ("removed", "removed"), ("changed", "changed"), ("settings", "settings"))


def _print_lines(text: str) -> None:
    """Multi-line text on stdout, each line with hidden characters escaped (a stored document is not trusted)."""
    for line in text.splitlines():
        typer.echo(visible(line))


def _note(message: str) -> None:
    typer.echo(f"crossgate: {visible(message)}", err=True)


def register(policy_app: typer.Typer) -> None:
    """Add ``apply``, ``show``, ``history`` and ``diff`` to the ``policy`` group."""
    policy_app.command("apply")(apply)
    policy_app.command("show")(show)
    policy_app.command("history")(history)
    policy_app.command("diff")(diff)
