"""What a stored credential costs per request: ``Authenticator.reviewer_for`` on each store.

    python tests/benchmarks/bench_credentials.py

A token the tokens file holds is answered from memory; a stored one is looked up in the store on every
request (one indexed read, no cache, so a revocation holds at once everywhere) and its row's signature is
checked once per row; an unknown token is looked up as a reviewer and as an agent. 20 file reviewers and
51 stored ones. Environment: ``CROSSGATE_BENCH_POSTGRES_URL`` (else ``CROSSGATE_TEST_POSTGRES_URL``;
PostgreSQL is skipped if neither is set), ``CG_BENCH_LOOKUPS`` (default 3000). Not collected by pytest.
"""

from __future__ import annotations

import os
import tempfile
import time
import uuid

from crossgate.authority import Authority
from crossgate.credentials import Credentials
from crossgate.server.access import Authenticator
from crossgate.server.settings import ServerSettings, reviewer
from crossgate.stores import open_store

LOOKUPS = int(os.environ.get("CG_BENCH_LOOKUPS", "3000"))


def bench(url: str, label: str, authority: Authority) -> None:
    """Print the microseconds per lookup of a file token, a stored token and an unknown one."""
    store = open_store(url)
    manager = Credentials(store, authority=authority)
    stored = manager.add("reviewer", "ann", actor="bench").token
    for i in range(50):
        manager.add("reviewer", f"r{i}", actor="bench")
    in_file = tuple(reviewer(f"f{i}", f"file-token-{i:04d}") for i in range(20))
    auth = Authenticator(ServerSettings(reviewers=in_file), manager)
    for token, what in (("file-token-0007", "tokens file"), (stored, "stored"), ("cgr_unknown-xxxxxxxx", "unknown")):
        auth.reviewer_for(token)
        started = time.perf_counter()
        for _ in range(LOOKUPS):
            auth.reviewer_for(token)
        per = (time.perf_counter() - started) / LOOKUPS * 1e6
        print(f"{label:10s} {what:12s} {per:8.1f} µs per lookup")
    store.close()


def main() -> None:
    """Run the benchmark on memory, SQLite and (when configured) PostgreSQL."""
    authority = Authority.generate()
    bench("memory:", "memory", authority)
    bench(os.path.join(tempfile.mkdtemp(), "bench.db"), "sqlite", authority)
    postgres = os.environ.get("CROSSGATE_BENCH_POSTGRES_URL") or os.environ.get("CROSSGATE_TEST_POSTGRES_URL")
    if postgres:
        schema = f"bench_{uuid.uuid4().hex[:12]}"
        separator = "&" if "?" in postgres else "?"
        bench(f"{postgres}{separator}schema={schema}", "postgres", authority)
        import psycopg

        with psycopg.connect(postgres, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")


if __name__ == "__main__":
    main()
