"""`crossgate review`: one pending request at a time, decided with the checks of the decide commands."""

from __future__ import annotations

from collections.abc import Callable

from crossgate import ReviewQueue
from crossgate.cli import CliContext, app
from crossgate.cli.exit_codes import INVALID
from crossgate.model import DecisionKind, RequestStatus
from tests.cli.conftest import Cli


def review(cli: Cli, keys: str, *options: str) -> tuple[int, str, str]:
    result = cli.runner.invoke(
        app, ["review", "--reviewer", "ann", *options], obj=CliContext(queue=cli.queue), input=keys
    )
    return result.exit_code, result.stdout, result.stderr


def test_the_walk_approves_edits_and_rejects_oldest_first(cli: Cli, submit_call: Callable[..., str]) -> None:
    first, second, third = (submit_call(args={"id": t}) for t in ("t1", "t2", "t3"))
    code, out, err = review(cli, 'a\ne\n{"id": "t9"}\nr\nKeep t3: it is a real ticket.\n')
    assert (code, err) == (0, "")
    assert out.index(first) < out.index(second) < out.index(third), "oldest first"
    assert "-- 1 of 3" in out and "fingerprint" in out, "each request is shown as `show` shows it"
    q: ReviewQueue = cli.queue
    assert q.get(first).resolution().kind is DecisionKind.APPROVE  # type: ignore[union-attr]
    assert q.get(second).decision.args == {"id": "t9"}  # type: ignore[union-attr]
    assert q.get(third).decision.message == "Keep t3: it is a real ticket."  # type: ignore[union-attr]
    assert {q.get(r).decision.reviewer for r in (first, second, third)} == {"ann"}  # type: ignore[union-attr]
    assert {q.get(r).decision.channel for r in (first, second, third)} == {"cli"}  # type: ignore[union-attr]
    assert out.rstrip().endswith("1 approved, 1 edited, 1 rejected, 0 skipped")


def test_skip_quit_and_the_end_of_input_decide_nothing(cli: Cli, submit_call: Callable[..., str]) -> None:
    ids = [submit_call(args={"id": t}) for t in ("t1", "t2", "t3")]
    before = cli.snapshot()
    code, out, _ = review(cli, "s\nq\n")
    assert code == 0 and ids[1] in out and ids[2] not in out, "q stops at the second request"
    code, out, _ = review(cli, "s\n")  # input ends at the second request
    assert code == 0
    assert out.rstrip().endswith("0 approved, 0 edited, 0 rejected, 1 skipped")
    assert ids[2] not in out, "the walk stopped at the end of input"
    assert cli.snapshot() == before
    assert all(cli.queue.get(r).status is RequestStatus.PENDING for r in ids)


def test_an_unknown_key_asks_again(cli: Cli, submit_call: Callable[..., str]) -> None:
    rid = submit_call()
    code, out, _ = review(cli, "y\nyes\napprove\n")
    assert code == 0
    assert out.count("type one of a, e, r, s, q") == 2, "y is no key; a word counts by its first letter"
    assert cli.queue.get(rid).status is RequestStatus.DECIDED


def test_refusals_are_the_decide_commands_own_and_the_walk_goes_on(cli: Cli, submit_call: Callable[..., str]) -> None:
    own = submit_call(args={"id": "t1"}, requested_by="ann")
    no_edit = submit_call(args={"id": "t2"}, capabilities=(DecisionKind.APPROVE, DecisionKind.REJECT))
    fine = submit_call(args={"id": "t3"})
    code, out, err = review(cli, 'a\ne\n{"id": "t8"}\na\n')
    assert code == INVALID, "the first refusal's exit code, as a batch approve gives"
    lines = err.splitlines()
    assert len(lines) == 2
    assert lines[0].startswith(f"crossgate: error: {own}: ") and "ann" in lines[0]
    assert lines[1].startswith(f"crossgate: error: {no_edit}: ") and "edit" in lines[1]
    assert cli.queue.get(own).status is RequestStatus.PENDING
    assert cli.queue.get(no_edit).status is RequestStatus.PENDING
    assert cli.queue.get(fine).status is RequestStatus.DECIDED
    assert out.rstrip().endswith("1 approved, 0 edited, 0 rejected, 0 skipped")


def test_bad_edit_json_is_refused_and_nothing_changes(cli: Cli, submit_call: Callable[..., str]) -> None:
    rid = submit_call()
    code, _, err = review(cli, "e\n{nope\n")
    assert code == INVALID
    assert err.startswith(f"crossgate: error: {rid}: arguments: ")
    assert cli.queue.get(rid).status is RequestStatus.PENDING


def test_nothing_pending(cli: Cli) -> None:
    assert review(cli, "") == (0, "no pending requests\n", "")
