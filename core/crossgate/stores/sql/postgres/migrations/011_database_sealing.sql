-- 010: events are sealed in the database. Until now a write locked the chain head, brought it back to
-- the Python process, hashed its event there and sent it back, and committed: the head stayed locked for
-- three round trips and whatever the writer's process did between them (on a busy server, waiting for
-- its interpreter lock). These functions take the head, hash and insert the events and move the head in
-- the statement that makes the change, so a write is one statement, committed by the server on its own
-- (autocommit), and the head is held only for the server's work and the commit.
--
-- The hash is the one crossgate.audit.seal computes, byte for byte: the writer sends each event's
-- canonical text without its two chain values (crossgate.model.chained_parts: the text before the
-- previous hash, the text between it and the seq) and its JSON without them; the function fills in the
-- locked head's hash and the next seq, and hashes the UTF-8 bytes with sha256. The Python verifier reads
-- the stored JSON back and checks it as before.

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

-- Lock the head and seal the events given (one per array position), in order; the head moves once and
-- one NOTIFY goes out at commit. One row per event: its seq, previous hash and hash. No row at all when
-- the head is missing (the caller reports that).
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
    PERFORM pg_notify(p_channel, v_seq::text);
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
        PERFORM pg_notify(p_channel, v_seq::text);
    END IF;
END $$;
