-- 013: the audit log as N hash chains (partitions), each with its own head, so that writes for different
-- runs no longer queue for one row. An event's partition is chosen by the writer (crossgate.stores.
-- _partitions.partition_of: hash(run) mod N; partition 0 for events without a run and for standing rules,
-- policy versions and credentials). Each event's prev_hash is the hash of the event before it in its own
-- partition. Partition 0's head stays in audit_head (with the rules version and N); the others are rows of
-- audit_partitions. With N = 1 (every schema until it is set otherwise) nothing changes: seq is the head's
-- plus one, dense, and the chain is the one chain it was. With N > 1 seq comes from the sequence event_seq,
-- taken after the partition's head is locked (which gives the transaction its id first: the listing's
-- watermark relies on that order, see queries.sql, list_events), unique and growing within a partition but
-- with gaps (a write that fails after taking one). A row's position is its first event's seq, as before:
-- the row is stored after its event is sealed.

ALTER TABLE audit_head ADD COLUMN partitions integer NOT NULL DEFAULT 1 CHECK (partitions BETWEEN 1 AND 1024);

CREATE TABLE audit_partitions (
    partition integer PRIMARY KEY CHECK (partition >= 1),
    seq bigint NOT NULL,
    hash text NOT NULL
);

ALTER TABLE events ADD COLUMN partition integer NOT NULL DEFAULT 0;
CREATE INDEX events_partition_seq ON events (partition, seq);

CREATE SEQUENCE event_seq;

DROP FUNCTION crossgate_insert_request(
    text, text, text, text, text, text, timestamptz, text, text, text[], text[], text[], timestamptz[], text[],
    text[], text
);
DROP FUNCTION crossgate_update_requests(
    text[], text[], timestamptz[], text[], text[], text[], text[], text[], text[], timestamptz[], text[], text[], text
);
DROP FUNCTION crossgate_seal(text[], text[], text[], timestamptz[], text[], text[], text);
DROP FUNCTION crossgate_seal_one(bigint, text, text, text, text, timestamptz, text, text);

-- Seal one event of ``p_partition`` at ``p_seq`` after ``p_prev`` (the caller holds that partition's head)
-- and store it; its hash.
CREATE FUNCTION crossgate_seal_one(
    p_seq bigint, p_partition integer, p_prev text, p_before text, p_between text, p_body text,
    p_at timestamptz, p_kind text, p_request_id text
) RETURNS text LANGUAGE plpgsql AS $$
DECLARE
    v_hash text := encode(sha256(convert_to(p_before || p_prev || p_between || p_seq::text || '}', 'UTF8')), 'hex');
BEGIN
    INSERT INTO events (seq, partition, at, kind, request_id, data) VALUES (
        p_seq, p_partition, p_at, p_kind, p_request_id,
        '{"seq":' || p_seq::text || ',"prev_hash":"' || p_prev || '","hash":"' || v_hash || '",' || substr(p_body, 2)
    );
    RETURN v_hash;
END $$;

-- Lock the heads of the partitions given, each once, in ascending order (every writer takes them in that
-- order, and partition 0's, audit_head, first: no deadlocks). ``o_seqs`` and ``o_hashes`` are indexed by
-- partition + 1; ``o_n`` is N, or NULL when a head is missing.
CREATE FUNCTION crossgate_lock_heads(
    p_partitions integer[], OUT o_n integer, OUT o_seqs bigint[], OUT o_hashes text[]
) LANGUAGE plpgsql AS $$
DECLARE
    v_p integer;
    v_seq bigint;
    v_hash text;
BEGIN
    FOR v_p IN SELECT DISTINCT u FROM unnest(p_partitions) AS u ORDER BY u LOOP
        IF v_p = 0 THEN
            SELECT h.seq, h.hash INTO v_seq, v_hash FROM audit_head h FOR UPDATE;
        ELSE
            SELECT a.seq, a.hash INTO v_seq, v_hash FROM audit_partitions a WHERE a.partition = v_p FOR UPDATE;
        END IF;
        IF NOT FOUND THEN
            o_n := NULL;
            RETURN;
        END IF;
        o_seqs[v_p + 1] := v_seq;
        o_hashes[v_p + 1] := v_hash;
    END LOOP;
    -- Read after the locks: N only grows, and it is raised under partition 0's lock.
    SELECT h.partitions INTO o_n FROM audit_head h;
END $$;

-- Move the heads of the partitions given to ``p_seqs`` / ``p_hashes`` (indexed by partition + 1).
CREATE FUNCTION crossgate_move_heads(p_partitions integer[], p_seqs bigint[], p_hashes text[])
RETURNS void LANGUAGE plpgsql AS $$
DECLARE
    v_p integer;
BEGIN
    FOR v_p IN SELECT DISTINCT u FROM unnest(p_partitions) AS u LOOP
        IF v_p = 0 THEN
            UPDATE audit_head SET seq = p_seqs[1], hash = p_hashes[1];
        ELSE
            UPDATE audit_partitions SET seq = p_seqs[v_p + 1], hash = p_hashes[v_p + 1] WHERE partition = v_p;
        END IF;
    END LOOP;
END $$;

-- Lock the heads and seal the events given (one per array position), each after the one before in its
-- partition; each head moves once. One row per event: its seq, previous hash and hash. No row at all when
-- a head is missing (the caller reports that).
CREATE FUNCTION crossgate_seal(
    p_partitions integer[], p_before text[], p_between text[], p_bodies text[], p_ats timestamptz[],
    p_kinds text[], p_request_ids text[]
) RETURNS TABLE (event_seq bigint, event_prev text, event_hash text) LANGUAGE plpgsql AS $$
DECLARE
    v_n integer;
    v_seqs bigint[];
    v_hashes text[];
    v_p integer;
BEGIN
    SELECT l.o_n, l.o_seqs, l.o_hashes INTO v_n, v_seqs, v_hashes FROM crossgate_lock_heads(p_partitions) l;
    IF v_n IS NULL THEN
        RETURN;
    END IF;
    FOR i IN 1 .. coalesce(array_length(p_before, 1), 0) LOOP
        v_p := p_partitions[i];
        event_seq := CASE WHEN v_n = 1 THEN v_seqs[1] + 1 ELSE nextval('event_seq') END;
        event_prev := v_hashes[v_p + 1];
        event_hash := crossgate_seal_one(
            event_seq, v_p, event_prev, p_before[i], p_between[i], p_bodies[i], p_ats[i], p_kinds[i],
            p_request_ids[i]
        );
        v_seqs[v_p + 1] := event_seq;
        v_hashes[v_p + 1] := event_hash;
        RETURN NEXT;
    END LOOP;
    PERFORM crossgate_move_heads(p_partitions, v_seqs, v_hashes);
END $$;

-- Seal a request's event and store the request at its seq: a submission in one statement.
CREATE FUNCTION crossgate_insert_request(
    p_id text, p_status text, p_framework text, p_tool text, p_agent text, p_run text, p_expires_at timestamptz,
    p_data text, p_signatures text,
    p_partitions integer[], p_before text[], p_between text[], p_bodies text[], p_ats timestamptz[],
    p_kinds text[], p_request_ids text[]
) RETURNS TABLE (event_seq bigint, event_prev text, event_hash text) LANGUAGE plpgsql AS $$
DECLARE
    v_first bigint;
BEGIN
    IF EXISTS (SELECT FROM requests WHERE id = p_id) THEN  -- before a seq is taken: refused without a gap
        RAISE EXCEPTION 'request % already exists', p_id USING ERRCODE = 'unique_violation';
    END IF;
    FOR event_seq, event_prev, event_hash IN
        SELECT * FROM crossgate_seal(p_partitions, p_before, p_between, p_bodies, p_ats, p_kinds, p_request_ids)
    LOOP
        v_first := coalesce(v_first, event_seq);
        RETURN NEXT;
    END LOOP;
    IF v_first IS NOT NULL THEN
        INSERT INTO requests (id, position, status, framework, tool, agent, run, expires_at, data, signatures)
        VALUES (p_id, v_first, p_status, p_framework, p_tool, p_agent, p_run, p_expires_at, p_data, p_signatures);
    END IF;
END $$;

-- Compare-and-set each request given (one per array position; ``p_expected``: its expected statuses,
-- separated by spaces), in order, and seal the event of each one that changed, after the one before in its
-- partition. The heads are locked before any request row (see the lock order in queries.sql). When none of
-- the requests is in an expected status when the statement starts, nothing is locked or written (no sync
-- for a batch of lost races): statuses only move on, so a request that matches none cannot match once the
-- heads are held unless an earlier update of this batch moved it, which needs a match. One row per update
-- that changed: its position in the arrays (from 1), the event's seq, previous hash and hash.
CREATE FUNCTION crossgate_update_requests(
    p_ids text[], p_statuses text[], p_expires_ats timestamptz[], p_data text[], p_signatures text[],
    p_expected text[],
    p_partitions integer[], p_before text[], p_between text[], p_bodies text[], p_ats timestamptz[],
    p_kinds text[], p_request_ids text[]
) RETURNS TABLE (update_index integer, event_seq bigint, event_prev text, event_hash text) LANGUAGE plpgsql AS $$
DECLARE
    v_n integer;
    v_seqs bigint[];
    v_hashes text[];
    v_p integer;
    v_changed integer[] := '{}';
BEGIN
    IF NOT EXISTS (
        SELECT FROM requests r JOIN unnest(p_ids, p_expected) AS u (id, expected) ON r.id = u.id
        WHERE r.status = ANY(string_to_array(u.expected, ' '))
    ) THEN
        RETURN;
    END IF;
    SELECT l.o_n, l.o_seqs, l.o_hashes INTO v_n, v_seqs, v_hashes FROM crossgate_lock_heads(p_partitions) l;
    IF v_n IS NULL THEN
        RAISE EXCEPTION 'the audit log has no head' USING ERRCODE = 'no_data_found';
    END IF;
    FOR i IN 1 .. coalesce(array_length(p_ids, 1), 0) LOOP
        UPDATE requests r
        SET status = p_statuses[i], expires_at = p_expires_ats[i], data = p_data[i], signatures = p_signatures[i]
        WHERE r.id = p_ids[i] AND r.status = ANY(string_to_array(p_expected[i], ' '));
        IF FOUND THEN
            v_p := p_partitions[i];
            update_index := i;
            event_seq := CASE WHEN v_n = 1 THEN v_seqs[1] + 1 ELSE nextval('event_seq') END;
            event_prev := v_hashes[v_p + 1];
            event_hash := crossgate_seal_one(
                event_seq, v_p, event_prev, p_before[i], p_between[i], p_bodies[i], p_ats[i], p_kinds[i],
                p_request_ids[i]
            );
            v_seqs[v_p + 1] := event_seq;
            v_hashes[v_p + 1] := event_hash;
            v_changed := v_changed || v_p;
            RETURN NEXT;
        END IF;
    END LOOP;
    PERFORM crossgate_move_heads(v_changed, v_seqs, v_hashes);
END $$;

-- Raise N to ``p_n`` (never lower: a run's events would change partition, which is allowed, but a head
-- that stops moving would still have to be covered, and nothing is gained). Under partition 0's lock, so
-- a writer that reads N after its locks sees the old N with the old seq rule or the new N with the sequence
-- already past every seq and position the old rule gave.
CREATE FUNCTION crossgate_set_partitions(p_n integer) RETURNS integer LANGUAGE plpgsql AS $$
DECLARE
    v_n integer;
    v_top bigint;
BEGIN
    SELECT h.partitions INTO v_n FROM audit_head h FOR UPDATE;
    IF NOT FOUND OR p_n <= v_n THEN
        RETURN v_n;
    END IF;
    INSERT INTO audit_partitions (partition, seq, hash)
    SELECT p, 0, repeat('0', 64) FROM generate_series(1, p_n - 1) AS p
    ON CONFLICT (partition) DO NOTHING;
    v_top := greatest(
        (SELECT max(seq) FROM events), (SELECT max(seq) FROM audit_head), (SELECT max(seq) FROM audit_partitions),
        (SELECT max(position) FROM requests), (SELECT max(position) FROM standing_rules),
        (SELECT max(position) FROM parked_runs)
    );
    PERFORM setval('event_seq', greatest(v_top, 1), coalesce(v_top, 0) >= 1);  -- next: v_top + 1, or 1
    UPDATE audit_head SET partitions = p_n;
    RETURN p_n;
END $$;
