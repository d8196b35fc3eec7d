-- 012: the sealing functions no longer send a NOTIFY. PostgreSQL holds one lock for the whole server from a
-- notifying transaction's pre-commit until its commit is flushed, so every write queued behind every
-- other write's commit there, whatever rows it touched. The store sends the wake-up after the commit
-- (crossgate.stores.postgres_listen.Notifier), and listeners poll the head for one that is lost.
-- ``p_channel`` stays in the signatures, unused, so the statements that call them are unchanged.

CREATE OR REPLACE FUNCTION crossgate_seal(
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

CREATE OR REPLACE FUNCTION crossgate_update_requests(
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
