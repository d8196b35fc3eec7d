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

-- Events are sealed by these functions, in the statement that makes a change (migration 011): the hash is
-- crossgate.audit.seal's, byte for byte, from the parts crossgate.model.chained_parts gives.
-- Seal one event at ``p_seq`` after ``p_prev`` (the caller holds the head) and store it; its hash.
CREATE FUNCTION crossgate_seal_one(
    p_seq bigint, p_prev text, p_before text, p_between text, p_body text, p_at timestamptz, p_kind text,
    p_request_id text
) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    v_hash text := encode(sha256(convert_to(p_before || p_prev || p_between || p_seq::text || '}', 'UTF8')), 'hex');
BEGIN
    INSERT INTO events (seq, at, kind, request_id, data) VALUES (
        p_seq, p_at, p_kind, p_request_id,
        '{"seq":' || p_seq::text || ',"prev_hash":"' || p_prev || '","hash":"' || v_hash || '",' || substr(p_body, 2)
    );
    RETURN v_hash;
END $$;

-- Lock the head and seal the events given (one per array position), in order; the head moves once (the
-- store sends the NOTIFY after the commit, migration 012). One row per event: its seq, previous hash and
-- hash. No row at all when the head is missing (the caller reports that).
CREATE FUNCTION crossgate_seal(
    p_before text[], p_between text[], p_bodies text[], p_ats timestamptz[], p_kinds text[],
    p_request_ids text[], p_channel text
) RETURNS TABLE (event_seq bigint, event_prev text, event_hash text) LANGUAGE plpgsql AS $$
DECLARE
    v_seq bigint;
    v_hash text;
BEGIN
    SELECT h.seq, h.hash INTO v_seq, v_hash FROM audit_head h FOR UPDATE;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    FOR i IN 1 .. coalesce(array_length(p_before, 1), 0) LOOP
        event_seq := v_seq + 1;
        event_prev := v_hash;
        event_hash := crossgate_seal_one(
            event_seq, event_prev, p_before[i], p_between[i], p_bodies[i], p_ats[i], p_kinds[i], p_request_ids[i]
        );
        v_seq := event_seq;
        v_hash := event_hash;
        RETURN NEXT;
    END LOOP;
    UPDATE audit_head SET seq = v_seq, hash = v_hash;
END $$;

-- Lock the head, store a request at the next position, and seal its event: a submission in one statement.
CREATE FUNCTION crossgate_insert_request(
    p_id text, p_status text, p_framework text, p_tool text, p_agent text, p_run text, p_expires_at timestamptz,
    p_data text, p_signatures text,
    p_before text[], p_between text[], p_bodies text[], p_ats timestamptz[], p_kinds text[],
    p_request_ids text[], p_channel text
) RETURNS TABLE (event_seq bigint, event_prev text, event_hash text) LANGUAGE plpgsql AS $$
DECLARE
    v_seq bigint;
BEGIN
    SELECT h.seq INTO v_seq FROM audit_head h FOR UPDATE;
    IF NOT FOUND THEN
        RETURN;
    END IF;
    INSERT INTO requests (id, position, status, framework, tool, agent, run, expires_at, data, signatures)
    VALUES (p_id, v_seq + 1, p_status, p_framework, p_tool, p_agent, p_run, p_expires_at, p_data, p_signatures);
    RETURN QUERY SELECT * FROM crossgate_seal(p_before, p_between, p_bodies, p_ats, p_kinds, p_request_ids, p_channel);
END $$;

-- Compare-and-set each request given (one per array position; ``p_expected``: its expected statuses,
-- separated by spaces), in order, and seal the event of each one that changed, after the one before.
-- The head is locked before any request row (see the lock order in queries.sql). When none of the requests
-- is in an expected status when the statement starts, nothing is locked or written (no sync for a batch
-- of lost races): statuses only move on, so a request that matches none cannot match once the head is
-- held unless an earlier update of this batch moved it, which needs a match. One row per update that
-- changed: its position in the arrays (from 1), the event's seq, previous hash and hash.
CREATE FUNCTION crossgate_update_requests(
    p_ids text[], p_statuses text[], p_expires_ats timestamptz[], p_data text[], p_signatures text[],
    p_expected text[],
    p_before text[], p_between text[], p_bodies text[], p_ats timestamptz[], p_kinds text[],
    p_request_ids text[], p_channel text
) RETURNS TABLE (update_index integer, event_seq bigint, event_prev text, event_hash text) LANGUAGE plpgsql AS $$
DECLARE
    v_seq bigint;
    v_hash text;
    v_changed boolean := false;
BEGIN
    IF NOT EXISTS (
        SELECT FROM requests r JOIN unnest(p_ids, p_expected) AS u (id, expected) ON r.id = u.id
        WHERE r.status = ANY(string_to_array(u.expected, ' '))
    ) THEN
        RETURN;
    END IF;
    SELECT h.seq, h.hash INTO v_seq, v_hash FROM audit_head h FOR UPDATE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'the audit log has no head' USING ERRCODE = 'no_data_found';
    END IF;
    FOR i IN 1 .. coalesce(array_length(p_ids, 1), 0) LOOP
        UPDATE requests r
        SET status = p_statuses[i], expires_at = p_expires_ats[i], data = p_data[i], signatures = p_signatures[i]
        WHERE r.id = p_ids[i] AND r.status = ANY(string_to_array(p_expected[i], ' '));
        IF FOUND THEN
            update_index := i;
            event_seq := v_seq + 1;
            event_prev := v_hash;
            event_hash := crossgate_seal_one(
                event_seq, event_prev, p_before[i], p_between[i], p_bodies[i], p_ats[i], p_kinds[i], p_request_ids[i]
            );
            v_seq := event_seq;
            v_hash := event_hash;
            v_changed := true;
            RETURN NEXT;
        END IF;
    END LOOP;
    IF v_changed THEN
        UPDATE audit_head SET seq = v_seq, hash = v_hash;
    END IF;
END $$;
