-- The current schema in full, applied to a fresh schema instead of replaying every migration.
-- It must equal migrations/*.sql applied in order (tests/postgres/test_migrations.py checks this).
-- Models are kept whole as JSON text in ``data`` (text, not jsonb: jsonb rewrites numbers such as
-- 1e20 and -0.0, which would change fingerprints and audit hashes); the other columns are copies the
-- queries filter and order on. ``position`` is the seq of the row's first event, so it grows in commit order.
-- ``signatures`` and ``signature`` hold the authority's tokens over a request's decision (separated by
-- single spaces) and over a standing rule, beside what they sign.

CREATE TABLE requests (
    id text PRIMARY KEY,
    position bigint NOT NULL UNIQUE,
    status text NOT NULL,
    framework text NOT NULL,
    tool text NOT NULL,
    agent text,
    run text,
    expires_at timestamptz,
    data text NOT NULL,
    signatures text
);
CREATE INDEX requests_status_position ON requests (status, position);
CREATE INDEX requests_run_position ON requests (run, position);
CREATE INDEX requests_tool_position ON requests (tool, position);
CREATE INDEX requests_overdue ON requests (expires_at) WHERE status = 'pending' AND expires_at IS NOT NULL;

CREATE TABLE standing_rules (
    id text PRIMARY KEY,
    position bigint NOT NULL UNIQUE,
    revoked_at timestamptz,
    data text NOT NULL,
    signature text
);

CREATE TABLE parked_runs (
    id text PRIMARY KEY,
    position bigint NOT NULL UNIQUE,
    framework text NOT NULL,
    run text NOT NULL,
    status text NOT NULL,
    lease_owner text,
    lease_until timestamptz,
    data text NOT NULL
);
CREATE INDEX parked_runs_status_position ON parked_runs (status, position);

CREATE TABLE events (
    seq bigint PRIMARY KEY,
    at timestamptz NOT NULL,
    kind text NOT NULL,
    request_id text,
    data text NOT NULL
);
CREATE INDEX events_request_seq ON events (request_id, seq) WHERE request_id IS NOT NULL;

-- The chain head, kept apart from the events so that deleting the last event is detectable. Every
-- write locks this one row, which serialises the chain. ``rules_version`` counts the changes that can
-- change a verdict (standing rules added or revoked, policy versions stored), bumped by their statements.
CREATE TABLE audit_head (
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    seq bigint NOT NULL,
    hash text NOT NULL,
    rules_version bigint NOT NULL DEFAULT 0
);
INSERT INTO audit_head (singleton, seq, hash) VALUES (true, 0, repeat('0', 64));

-- One row per consumer of the event log (a webhook target is named by a digest of its URL, never the
-- URL: it may carry a token). ``seq`` is the last event the consumer is done with; the lease says
-- which process delivers now.
CREATE TABLE delivery_cursors (
    name text PRIMARY KEY,
    seq bigint NOT NULL CHECK (seq >= 0),
    lease_owner text,
    lease_until timestamptz
);

-- Signed policy versions: the policy's canonical JSON and the authority's token over it; the other
-- columns are copies for listing.
CREATE TABLE policy_versions (
    version integer PRIMARY KEY CHECK (version >= 1),
    created_at timestamptz NOT NULL,
    created_by text NOT NULL,
    digest text NOT NULL,
    source text,
    document text NOT NULL,
    token text NOT NULL
);

-- Signed audit checkpoints: the authority's token over one chain head; one per seq, and an authored
-- one (signed by the writer of that event) replaces one that is not.
CREATE TABLE audit_checkpoints (
    seq bigint PRIMARY KEY CHECK (seq >= 0),
    head_hash text NOT NULL,
    at timestamptz NOT NULL,
    authored boolean NOT NULL,
    token text NOT NULL
);

-- Stored credentials: the sha256 of each token (never the token) and the authority's signature over the
-- row. Rows change only to be revoked; at most one live row per kind and name.
CREATE TABLE credentials (
    id text PRIMARY KEY,
    kind text NOT NULL CHECK (kind IN ('reviewer', 'agent')),
    name text NOT NULL,
    token_sha256 text NOT NULL UNIQUE,
    scope text NOT NULL,
    created_at timestamptz NOT NULL,
    created_by text NOT NULL,
    signature text NOT NULL,
    revoked_at timestamptz,
    revoked_by text
);

CREATE UNIQUE INDEX credentials_live_name ON credentials (kind, name) WHERE revoked_at IS NULL;

-- The newest signed state head (crossgate.state_head.v1) of each signing key (kid), kept for gates to read;
-- they remember the newest one in their own file, never here.
CREATE TABLE state_heads (
    kid text PRIMARY KEY,
    issued_at timestamptz NOT NULL,
    token text NOT NULL
);
