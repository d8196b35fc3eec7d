"""The crossgate demo: an agent per SDK (six Python, one TypeScript) feeding one review queue under one policy.

    python examples/demo.py            # prints the review page's address; decide there, watch the runs finish
    python examples/demo.py --auto     # a scripted reviewer decides through the HTTP API (or CROSSGATE_DEMO_AUTO=1)

Everything is offline: scripted models, a local server on 127.0.0.1, a SQLite queue in a temporary folder.
Each agent asks to delete one ticket; the policy (examples/policy.yaml) sends every delete to a person.
The demo makes an authority key pair in that folder: the server holds the private key, the policy is
stored as a version signed with it, and the agents pin only the public key (the file ``authority.pub``),
with which they verify the stored policy before they evaluate it. The TypeScript agent (the AI SDK, run
with node, see examples/typescript_agent.py) reaches the queue through the server's agent API with an agent
token and the same public key; without node or the built npm workspace it is skipped, with the reason.
In ``--auto`` mode the reviewer approves the first, edits the second to the ticket that really is the
duplicate, rejects the third with a message, and approves the others, then the demo checks which tickets
are left.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import errno
import json
import os
import secrets
import shlex
import shutil
import socket
import sys
import tempfile
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))

import typescript_agent
from demo_agents import SPECS, TICKETS, AgentSpec, DemoAgent, DemoTickets, build_agents

from crossgate import ReviewQueue
from crossgate.authority import Keyring, TrustedKeys
from crossgate.authority.keyring import KEYRING_FILE
from crossgate.authority.keys import PUBKEY_ENV, PUBKEY_FILE_ENV
from crossgate.checkpoints import verify_signed_log
from crossgate.policy import resolve_policy
from crossgate.policy.versions import apply_policy
from crossgate.runs import Finished, Parked
from crossgate.stores import open_store

AUTO_ENV = "CROSSGATE_DEMO_AUTO"
POLICY = Path(__file__).parent / "policy.yaml"
EXPECTED_LEFT = ["T-202", "T-303"]
"""After --auto: T-101, T-404, T-606 and T-707 approved and deleted, T-202 edited to T-204 (deleted instead),
T-303 rejected; the TypeScript agent's T-505 approved and deleted."""
TYPESCRIPT_SPEC = AgentSpec("typescript", typescript_agent.SDK, "support-ai-sdk", "T-505", "approve")
"""The TypeScript agent: what --auto decides for it (by its framework, ai-sdk)."""
ALL_SPECS = (*SPECS, TYPESCRIPT_SPEC)
"""Every agent the scripted reviewer may meet."""

Reviewer = Callable[[str, str], Awaitable[None]]
"""A reviewer that works against the running server: ``(base_url, token)``; cancelled when the runs end."""


@dataclass
class DemoReport:
    """What happened: each agent's final result, the tickets left, and every delete that ran."""

    address: str
    results: dict[str, str] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)
    tickets_left: list[str] = field(default_factory=list)
    deletes_run: list[str] = field(default_factory=list)
    policy_version: int | None = None
    """The signed policy version the agents evaluated."""
    audit: str = ""
    """What ``audit verify --authority`` says about the log at the end; empty when it is intact."""
    typescript: str | None = None
    """Why the TypeScript agent did not run; None when it ran."""

    @property
    def as_expected(self) -> bool:
        expected = ["T-101", "T-204", "T-404", "T-606", "T-707"] + (["T-505"] if self.typescript is None else [])
        deletes = sorted(self.deletes_run) == sorted(expected)
        return self.tickets_left == EXPECTED_LEFT and deletes and self.policy_version is not None and not self.audit


async def drive(agent: DemoAgent, queue: ReviewQueue, run: str, *, key: str = "") -> Finished[object]:
    """Run one agent to the end: start, and after each park wait for the decisions and resume.

    Prints the run's result as soon as it finishes (with ``key``), not only once every run is done.
    """
    outcome = await agent.start(run)
    while isinstance(outcome, Parked):
        for request_id in outcome.request_ids:
            while queue.get(request_id).is_open:
                await queue.wait(request_id, timeout=30)
        outcome = await agent.resume(outcome.parked_run)
    if key:
        print(f"  finished {key}: {outcome.result}", flush=True)
    return outcome


def scripted_decision(spec: AgentSpec, request: dict[str, Any]) -> dict[str, Any]:
    """The scripted reviewer's answer for one request, limited to what the request allows."""
    allowed = request["allowed_decisions"]
    base = {"fingerprint": request["fingerprint"], "note": "scripted reviewer (demo --auto)"}
    args = request["call"]["args"]
    if spec.decision == "edit" and "edit" in allowed and spec.edit_to and "id" in args:
        return {**base, "kind": "edit", "args": {**args, "id": spec.edit_to}}
    if spec.decision == "reject" or "approve" not in allowed:
        return {**base, "kind": "reject", "message": spec.reject_message}
    return {**base, "kind": "approve"}


def scripted_reviewer(specs: Sequence[AgentSpec]) -> Reviewer:
    """A reviewer that follows the live stream and decides each new request as ``specs`` say."""
    by_framework = {spec.framework: spec for spec in specs}

    async def review(base_url: str, token: str) -> None:
        import httpx

        headers = {"Authorization": f"Bearer {token}"}
        async with httpx.AsyncClient(base_url=base_url, headers=headers, timeout=30) as http:
            params = {"after": 0}
            async with http.stream("GET", "/api/stream", params=params, timeout=None) as stream:
                async for line in stream.aiter_lines():
                    if not line.startswith("data:"):
                        continue
                    change = json.loads(line.removeprefix("data:"))
                    if change["kind"] != "submitted":
                        continue
                    request = (await http.get(f"/api/requests/{change['request_id']}")).json()
                    spec = by_framework.get(request["call"]["framework"])
                    if request["status"] != "pending" or spec is None:
                        continue
                    body = scripted_decision(spec, request)
                    response = await http.post(f"/api/requests/{request['id']}/decision", json=body)
                    print(
                        f"  reviewer: {body['kind']} {request['call']['tool']} {json.dumps(request['call']['args'])}"
                        f" from {spec.framework} -> HTTP {response.status_code}"
                    )

    return review


class PortInUseError(Exception):
    """The demo's port is taken: the message is the one line the demo prints."""


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on ``host:port``; PortInUseError when something else holds the port."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        if exc.errno != errno.EADDRINUSE:
            raise
        raise PortInUseError(
            f"demo: port {port} on {host} is in use; pick another: make demo PORT={port + 1} "
            "(or python examples/demo.py --port 0 for any free port)"
        ) from None
    sock.listen(128)
    return sock


async def start_server(app: Any, host: str, port: int) -> tuple[Any, asyncio.Task[None], int]:
    """Serve ``app`` with uvicorn in this event loop; return the server, its task and the bound port."""
    import uvicorn

    sock = bind(host, port)  # bound here, so that a busy port is one line and not uvicorn's traceback
    config = uvicorn.Config(app, host=host, port=port, log_level="warning", timeout_graceful_shutdown=1)
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        if task.done():
            task.result()
            raise RuntimeError(f"the server did not start on {host}:{port}")
        await asyncio.sleep(0.02)
    bound = server.servers[0].sockets[0].getsockname()[1]
    return server, task, bound


async def run_demo(
    *,
    reviewer: Reviewer | None = None,
    host: str = "127.0.0.1",
    port: int = 8700,
    workdir: Path | None = None,
    synthetic: bool = False,
    keep_serving: bool = False,
    specs: Sequence[AgentSpec] = SPECS,
    on_ready: Callable[[str, str], None] | None = None,
    wait_for_reviewer: bool = False,
    typescript: bool = False,
) -> DemoReport:
    """Start the server and the agents, let ``reviewer`` (or a person) decide, and report the outcome.

    The reviewer is cancelled once every run finished, unless ``wait_for_reviewer`` lets it end by itself.
    Without ``workdir`` the queue lives in a new temporary folder, removed when the demo ends. ``typescript``
    adds the TypeScript agent when node and the built workspace are there.
    """
    folder = workdir or Path(tempfile.mkdtemp(prefix="crossgate-demo-"))
    try:
        return await _run_in(
            folder, reviewer, host, port, synthetic, keep_serving, specs, on_ready, wait_for_reviewer, typescript
        )
    finally:
        if workdir is None:  # a folder of our own: nothing in it outlives the demo
            shutil.rmtree(folder, ignore_errors=True)


async def _run_in(
    folder: Path,
    reviewer: Reviewer | None,
    host: str,
    port: int,
    synthetic: bool,
    keep_serving: bool,
    specs: Sequence[AgentSpec],
    on_ready: Callable[[str, str], None] | None,
    wait_for_reviewer: bool,
    typescript: bool,
) -> DemoReport:
    from crossgate.server import ServerSettings, create_app
    from crossgate.server.settings import agent_token
    from crossgate.server.settings import reviewer as make_reviewer

    database = folder / "crossgate.db"
    keyring, pin_file = authority_keys(folder)
    authority = keyring.authority()
    server_queue = ReviewQueue(open_store(str(database)), authority=authority, trusted=keyring.trusted_keys())
    apply_policy(server_queue.store, authority, resolve_policy(POLICY), created_by="demo", source=POLICY.name)
    # The agents' queue holds the public key only, from the pin file, never from the store.
    queue = ReviewQueue(open_store(str(database)), trusted=TrustedKeys.from_file(pin_file))
    tickets = DemoTickets(folder / "tickets.db")
    tickets.seed(TICKETS)
    person, bot, agent = (secrets.token_urlsafe(16) for _ in range(3))
    settings = ServerSettings(
        reviewers=(make_reviewer("you", person), make_reviewer("scripted-reviewer", bot)),
        agents=(agent_token("demo-typescript", agent),),
        base_url=f"http://{host}:{port}",
        title="crossgate demo",
    )
    app = create_app(server_queue, settings)
    try:
        server, server_task, bound = await start_server(app, host, port)
    except BaseException:
        queue.close()
        server_queue.close()
        raise
    base_url = f"http://{host}:{bound}"
    report = DemoReport(address=f"{base_url}/login?token={app.state.crossgate.auth.issue_sign_in('you')}")  # once
    restore = pin_in_environment(pin_file)
    try:
        agents: list[DemoAgent] = build_agents(queue, tickets, folder, specs=specs, synthetic=synthetic)
    finally:
        restore()
    report.policy_version = queue.policy_version
    report.typescript = typescript_agent.unavailable() if typescript else "not asked for"
    ts_tickets = typescript_agent.JsonTickets(folder / "typescript-tickets.json")
    if report.typescript is None:
        ts_tickets.seed([TYPESCRIPT_SPEC.ticket])
        ts = typescript_agent.TypeScriptAgent(
            base_url, agent, pin_file.read_text(encoding="utf-8"), TYPESCRIPT_SPEC.ticket, ts_tickets, folder / "ts"
        )
        specs, agents = [*specs, TYPESCRIPT_SPEC], [*agents, ts]
    print(f"crossgate demo: review page {report.address}")
    print(f"  database: {database}")
    print(f"  policy: {POLICY.name}, stored as version {report.policy_version}, signed by the demo's authority")
    print(f"  authority: private key in {keyring.directory} (0600); the agents pin only {pin_file}")
    print(f"  decide from a terminal: {terminal_command(database, keyring.directory)}")
    for spec, built in zip(specs, agents, strict=True):
        report.labels[spec.key] = built.label
        print(f"  agent {spec.key}: {built.label}, asks to delete {spec.ticket}")
    if report.typescript is not None and typescript:
        print(f"  agent typescript: skipped: {report.typescript}")
    if on_ready is not None:
        on_ready(base_url, person)
    review = asyncio.create_task(reviewer(base_url, bot)) if reviewer else None
    try:
        pairs = zip(specs, agents, strict=True)
        runs = [drive(built, queue, f"demo-{spec.key}", key=spec.key) for spec, built in pairs]
        finished = await _until_runs_end(asyncio.gather(*runs), review)
        for spec, outcome in zip(specs, finished, strict=True):
            report.results[spec.key] = str(outcome.result)
        typescript_left = ts_tickets.ids() if report.typescript is None else []
        report.tickets_left = sorted(tickets.ids() + typescript_left)
        report.deletes_run = tickets.delete_runs() + (ts_tickets.delete_runs() if report.typescript is None else [])
        audit = verify_signed_log(server_queue.store, TrustedKeys.from_file(pin_file))
        report.audit = "" if audit.ok else (audit.problem or "broken")
        _print_report(report, specs)
        print(
            f"  audit log: {audit.checked} events, {audit.checkpoints} signed checkpoints: "
            f"{'intact' if audit.ok else report.audit}"
        )
        if review is not None and wait_for_reviewer:
            await review
        if keep_serving:
            print("All runs finished. The page stays up for the history; press Ctrl-C to stop.")
            await server_task
    finally:
        if review is not None:
            review.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await review
        server.should_exit = True
        with contextlib.suppress(asyncio.CancelledError):
            await server_task
        for built in agents:
            close = getattr(built, "close", None)
            if close is not None:
                close()
        queue.close()
        server_queue.close()
    return report


def authority_keys(folder: Path) -> tuple[Keyring, Path]:
    """The demo's key directory in ``folder`` (made on first use) and the pin file the agents read."""
    directory = folder / "authority"
    keyring = Keyring.open(directory) if (directory / KEYRING_FILE).exists() else Keyring.init(directory)
    pin_file = folder / "authority.pub"
    pin_file.write_text(keyring.pin_text(), encoding="utf-8")
    return keyring, pin_file


def pin_in_environment(pin_file: Path) -> Callable[[], None]:
    """Point ``$CROSSGATE_AUTHORITY_PUBKEY_FILE`` at the pin file while the agents are built; the undo."""
    saved = {name: os.environ.get(name) for name in (PUBKEY_ENV, PUBKEY_FILE_ENV)}
    os.environ.pop(PUBKEY_ENV, None)
    os.environ[PUBKEY_FILE_ENV] = str(pin_file)

    def restore() -> None:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value

    return restore


async def _until_runs_end(runs: Awaitable[list[Finished[object]]], review: asyncio.Task[None] | None) -> list[Any]:
    """Wait for the runs; a reviewer that fails before they end fails the demo instead of hanging it."""
    gathered = asyncio.ensure_future(runs)
    watched: set[asyncio.Future[Any]] = {gathered} | ({review} if review is not None else set())
    while True:
        try:
            done, _ = await asyncio.wait(watched, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:  # Ctrl-C: stop the runs and take their cancellation, so none is left unread
            gathered.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await gathered
            raise
        if gathered in done:
            return gathered.result()
        if review is not None and review in done:
            watched.discard(review)
            if not review.cancelled() and review.exception() is not None:
                gathered.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await gathered
                raise RuntimeError("the reviewer failed before the runs finished") from review.exception()


def terminal_command(database: Path, authority_dir: Path) -> str:
    """The exact command that walks the demo's pending requests from another terminal, with the demo's key."""
    return f"CROSSGATE_AUTHORITY_DIR={shlex.quote(str(authority_dir))} " + shlex.join(
        ["crossgate", "--db", str(database), "review"]
    )


def _print_report(report: DemoReport, specs: Sequence[AgentSpec]) -> None:
    print("All runs finished:")
    width = max((len(spec.key) for spec in specs), default=0)
    for spec in specs:
        print(f"  {spec.key:<{width}} {report.results[spec.key]}")
    left = ", ".join(report.tickets_left) or "none"
    print(f"  tickets left: {left}; deletes that ran: {', '.join(report.deletes_run) or 'none'}")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the demo; exit status 0 when every run finished (and, with --auto, as expected)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--auto", action="store_true", help=f"a scripted reviewer decides (or ${AUTO_ENV}=1)")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8700, help="0 picks a free port")
    parser.add_argument("--workdir", type=Path, help="where the queue and tickets live [default: a new temp folder]")
    parser.add_argument("--synthetic", action="store_true", help="use the stand-in agents even where an adapter exists")
    options = parser.parse_args(argv)
    auto = options.auto or os.environ.get(AUTO_ENV, "") not in ("", "0", "false")
    try:
        report = asyncio.run(
            run_demo(
                reviewer=scripted_reviewer(ALL_SPECS) if auto else None,
                host=options.host,
                port=options.port,
                workdir=options.workdir,
                synthetic=options.synthetic,
                keep_serving=not auto,
                typescript=True,
            )
        )
    except KeyboardInterrupt:
        return 0
    except PortInUseError as exc:
        print(exc, file=sys.stderr)
        return 1
    if auto and not report.as_expected:
        print("demo: the outcome is not the expected one", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
