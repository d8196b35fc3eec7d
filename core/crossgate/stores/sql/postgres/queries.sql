-- Named queries of PostgresStore. Each block starts with "-- name: <name>" and runs with psycopg's
-- %(param)s placeholders inside the store's schema (the connection's search_path). Blocks with
-- {placeholders} are completed with psycopg.sql composition, never with string formatting of values.

-- name: create_version_table
CREATE TABLE IF NOT EXISTS schema_version (
    version integer PRIMARY KEY,
    name text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
);

-- name: applied_versions
SELECT version FROM schema_version ORDER BY version;

-- name: record_version
INSERT INTO schema_version (version, name) VALUES (%(version)s, %(name)s);

-- The lock order: every write locks the chain head until it commits. Inserts and request updates lock it first (a batch
-- of request updates may change several requests, and a request row is only ever locked by a holder of
-- the head); the standing-rule and parked-run changes lock their own row first, then the head (so a
-- losing compare-and-set of theirs locks nothing): no transaction waits for a row while holding the head
-- and another holds that row while waiting for the head, so there are no deadlocks. The sealing
-- functions (migration 011) keep this order.

-- name: read_head
SELECT seq, hash FROM audit_head;

-- name: rules_version
SELECT rules_version FROM audit_head;

-- name: seal_events
-- Locks the heads and seals the events (crossgate_seal): one row per event, its seq, previous hash, hash.
SELECT event_seq, event_prev, event_hash FROM crossgate_seal(
    %(partitions)s::integer[], %(before)s::text[], %(between)s::text[], %(bodies)s::text[], %(ats)s::timestamptz[],
    %(kinds)s::text[], %(request_ids)s::text[]
);

-- name: insert_request_sealed
-- A submission in one statement: the event sealed (its partition's head locked), the request stored at its seq.
SELECT event_seq, event_prev, event_hash FROM crossgate_insert_request(
    %(id)s, %(status)s, %(framework)s, %(tool)s, %(agent)s, %(run)s, %(expires_at)s, %(data)s, %(signatures)s,
    %(partitions)s::integer[], %(before)s::text[], %(between)s::text[], %(bodies)s::text[], %(ats)s::timestamptz[],
    %(kinds)s::text[], %(request_ids)s::text[]
);

-- name: update_requests_sealed
-- A batch of compare-and-sets in one statement (crossgate_update_requests): one row per update that changed.
SELECT update_index, event_seq, event_prev, event_hash FROM crossgate_update_requests(
    %(ids)s::text[], %(statuses)s::text[], %(expires_ats)s::timestamptz[], %(data)s::text[],
    %(signatures)s::text[], %(expected)s::text[],
    %(partitions)s::integer[], %(before)s::text[], %(between)s::text[], %(bodies)s::text[], %(ats)s::timestamptz[],
    %(kinds)s::text[], %(request_ids)s::text[]
);

-- name: insert_request
-- Stores a request at the seq of its event, sealed just before in the same transaction.
INSERT INTO requests (id, position, status, framework, tool, agent, run, expires_at, data, signatures)
VALUES (%(id)s, %(position)s, %(status)s, %(framework)s, %(tool)s, %(agent)s, %(run)s, %(expires_at)s, %(data)s,
    %(signatures)s)
RETURNING position;

-- name: get_request
SELECT data, signatures FROM requests WHERE id = %(id)s;

-- name: request_status
SELECT status FROM requests WHERE id = %(id)s;

-- name: list_requests
SELECT position, data, signatures FROM requests {where} ORDER BY position {direction} LIMIT %(limit)s;

-- name: overdue_requests
SELECT data, signatures FROM requests
WHERE status = 'pending' AND expires_at IS NOT NULL AND expires_at <= %(now)s
ORDER BY position LIMIT %(limit)s;

-- name: insert_rule
-- Bumps the rules version (partition 0's head, locked already by the rule's event, sealed just before), then
-- stores the rule at that event's seq.
WITH head AS (
    UPDATE audit_head SET rules_version = rules_version + 1 RETURNING seq
), inserted AS (
    INSERT INTO standing_rules (id, position, revoked_at, data, signature)
    SELECT %(id)s, %(position)s, %(revoked_at)s, %(data)s, %(signature)s FROM head
    RETURNING position
)
SELECT position FROM inserted;

-- name: get_rule
SELECT data, signature FROM standing_rules WHERE id = %(id)s;

-- name: list_rules
SELECT data, signature FROM standing_rules WHERE %(include_revoked)s OR revoked_at IS NULL ORDER BY position;

-- name: revoke_rule
WITH changed AS (
    UPDATE standing_rules SET revoked_at = %(revoked_at)s, data = %(data)s
    WHERE id = %(id)s AND revoked_at IS NULL
    RETURNING position
)
UPDATE audit_head SET rules_version = rules_version + 1 WHERE EXISTS (SELECT FROM changed) RETURNING seq, hash;

-- name: insert_parked_run
-- Stores a parked run at the seq of its event, sealed just before in the same transaction.
INSERT INTO parked_runs (id, position, framework, run, status, lease_owner, lease_until, data)
VALUES (%(id)s, %(position)s, %(framework)s, %(run)s, %(status)s, %(lease_owner)s, %(lease_until)s, %(data)s)
RETURNING position;

-- name: get_parked_run
SELECT data FROM parked_runs WHERE id = %(id)s;

-- name: list_parked_runs
SELECT data FROM parked_runs {where} ORDER BY position;

-- name: lock_parked_run
SELECT data FROM parked_runs WHERE id = %(id)s FOR UPDATE;

-- name: lock_parked_run_skip_locked
-- A row another transaction holds (a resumer claiming the run right now) is skipped, not waited for.
SELECT data FROM parked_runs WHERE id = %(id)s FOR UPDATE SKIP LOCKED;

-- name: lock_parked_runs
-- Locks in position order, so two such changes never deadlock. A row another change holds is waited
-- for, and read as that change committed it.
SELECT data FROM parked_runs WHERE id = ANY(%(ids)s) ORDER BY position FOR UPDATE;

-- name: update_parked_run
-- The row is locked already (lock_parked_run*); returns the head, locked.
WITH changed AS (
    UPDATE parked_runs
    SET status = %(status)s, lease_owner = %(lease_owner)s, lease_until = %(lease_until)s, data = %(data)s
    WHERE id = %(id)s
    RETURNING position
)
SELECT seq, hash FROM audit_head WHERE EXISTS (SELECT FROM changed) FOR UPDATE;

-- name: update_parked_runs
-- The rows are locked already (lock_parked_runs); returns the head, locked.
WITH changed AS (
    UPDATE parked_runs p
    SET status = v.status, lease_owner = v.lease_owner, lease_until = v.lease_until, data = v.data
    FROM unnest(
        %(ids)s::text[], %(statuses)s::text[], %(lease_owners)s::text[], %(lease_untils)s::timestamptz[],
        %(data)s::text[]
    ) AS v (id, status, lease_owner, lease_until, data)
    WHERE p.id = v.id
    RETURNING p.position
)
SELECT seq, hash FROM audit_head WHERE EXISTS (SELECT FROM changed) FOR UPDATE;

-- name: list_events
-- Events in seq order, up to the watermark (upto_watermark below).
SELECT data FROM events WHERE seq > %(after)s AND seq <= ({watermark}) ORDER BY seq LIMIT %(limit)s;

-- name: list_request_events
SELECT data FROM events WHERE request_id = %(request_id)s AND seq > %(after)s AND seq <= ({watermark})
ORDER BY seq LIMIT %(limit)s;

-- name: events_after
-- Every event after a seq, past the watermark too (audit_snapshot, which reads the head rows beside them).
SELECT data FROM events WHERE seq > %(after)s ORDER BY seq;

-- name: heads
-- Every partition's head as committed (partition 0's in audit_head), with the xid of a transaction that
-- holds it locked, or 0.
SELECT 0 AS partition, seq, hash, xmax::text::bigint AS locker FROM audit_head
UNION ALL
SELECT partition, seq, hash, xmax::text::bigint FROM audit_partitions

-- name: watermark
-- The highest seq up to which every event is committed. With N > 1 seqs are taken from a sequence under
-- each partition's own lock, so a transaction may commit seq 7 while the one that took seq 6 has not: a
-- reader that moved past 7 would never see 6. A writer locks its partition's head before it takes a seq
-- (and the lock gives it a transaction id first), so every seq not yet committed is above the committed
-- head of a partition whose head a running transaction holds: the watermark is the lowest such head, or
-- the highest head when none is held. (The head's xmax is the locker's 32-bit xid; the running ones are
-- those of this statement's snapshot.) With N = 1 it is partition 0's committed head. Without partition 0's
-- head row (a database changed outside crossgate, refusing every write) nothing is in flight: every event.
SELECT CASE WHEN NOT EXISTS (SELECT FROM audit_head) THEN 9223372036854775807 ELSE coalesce(
    (SELECT min(h.seq) FROM ({heads}) h WHERE h.locker <> 0 AND h.locker IN (
        SELECT mod(x::text::bigint, 4294967296) FROM pg_snapshot_xip(pg_current_snapshot()) AS x
    )),
    (SELECT max(h.seq) FROM ({heads}) h)
) END

-- name: audit_cut
-- Every partition's head as of the watermark, in one snapshot: its head row when the row is at or below it,
-- else the last event of the partition at or below it (the row moved on past a seq still in flight);
-- (0, genesis) for a partition without one. The watermark on every row.
WITH mark AS MATERIALIZED (SELECT ({watermark}) AS upto)
SELECT h.partition, coalesce(cut.seq, 0), coalesce(cut.hash, repeat('0', 64)), mark.upto
FROM ({heads}) h CROSS JOIN mark
LEFT JOIN LATERAL (
    SELECT h.seq AS seq, h.hash AS hash WHERE h.seq <= mark.upto
    UNION ALL
    (
        SELECT e.seq, e.data::json ->> 'hash' FROM events e
        WHERE h.seq > mark.upto AND e.partition = h.partition AND e.seq <= mark.upto
        ORDER BY e.seq DESC LIMIT 1
    )
) cut ON true
ORDER BY h.partition;

-- name: read_latest
-- The highest seq any partition's head has committed (what the listener wakes waiters with).
SELECT greatest(h.seq, coalesce((SELECT max(a.seq) FROM audit_partitions a), 0)) FROM audit_head h;

-- name: set_partitions
SELECT crossgate_set_partitions(%(partitions)s);

-- name: partitions
SELECT partitions FROM audit_head;

-- name: claim_delivery_cursor
-- One statement: create the cursor at the start seq, or take its lease when it is released, already
-- ours, or ran out. A racing claimer waits for the row lock and then sees the winner's live lease, so
-- no row comes back for it. Cursors are bookkeeping: no event, no chain head, no NOTIFY.
INSERT INTO delivery_cursors AS c (name, seq, lease_owner, lease_until)
VALUES (%(name)s, %(start)s, %(owner)s, %(lease_until)s)
ON CONFLICT (name) DO UPDATE SET lease_owner = excluded.lease_owner, lease_until = excluded.lease_until
WHERE c.lease_owner IS NULL OR c.lease_owner = %(owner)s OR c.lease_until IS NULL OR c.lease_until <= %(now)s
RETURNING c.name, c.seq, c.lease_owner, c.lease_until;

-- name: advance_delivery_cursor
-- Compare-and-set on the lease owner; never backwards.
UPDATE delivery_cursors SET seq = %(seq)s, lease_until = %(lease_until)s
WHERE name = %(name)s AND lease_owner = %(owner)s AND seq <= %(seq)s
RETURNING name, seq, lease_owner, lease_until;

-- name: release_delivery_cursor
UPDATE delivery_cursors SET lease_owner = NULL, lease_until = NULL
WHERE name = %(name)s AND lease_owner = %(owner)s
RETURNING name, seq, lease_owner, lease_until;

-- name: get_delivery_cursor
SELECT name, seq, lease_owner, lease_until FROM delivery_cursors WHERE name = %(name)s;

-- name: insert_policy_version
-- Locks the head (bumping the rules version), then stores the version if it is the next number; returns
-- the locked head, or no row when it is not the next one (the caller then rolls back, bump included). Two
-- racing inserts of the same number: the primary key refuses the second.
WITH head AS (
    UPDATE audit_head SET rules_version = rules_version + 1 RETURNING seq, hash
), inserted AS (
    INSERT INTO policy_versions (version, created_at, created_by, digest, source, document, token)
    SELECT %(version)s, %(created_at)s, %(created_by)s, %(digest)s, %(source)s, %(document)s, %(token)s FROM head
    WHERE %(version)s = (SELECT coalesce(max(version), 0) + 1 FROM policy_versions)
    RETURNING version
)
SELECT head.seq, head.hash FROM head, inserted;

-- name: get_policy_version
SELECT version, document, token, digest, created_by, created_at, source FROM policy_versions
WHERE version = %(version)s;

-- name: current_policy_version
SELECT version, document, token, digest, created_by, created_at, source FROM policy_versions
ORDER BY version DESC LIMIT 1;

-- name: list_policy_versions
SELECT version, document, token, digest, created_by, created_at, source FROM policy_versions ORDER BY version;

-- name: insert_checkpoint
-- Bookkeeping, not audited state: no event. One per seq; an authored checkpoint replaces one that is not.
INSERT INTO audit_checkpoints AS c (seq, head_hash, at, authored, token)
VALUES (%(seq)s, %(head_hash)s, %(at)s, %(authored)s, %(token)s)
ON CONFLICT (seq) DO UPDATE SET
    head_hash = excluded.head_hash, at = excluded.at, authored = excluded.authored, token = excluded.token
WHERE excluded.authored AND NOT c.authored;

-- name: list_checkpoints
SELECT seq, head_hash, at, token, authored FROM audit_checkpoints ORDER BY seq;

-- name: latest_checkpoint
SELECT seq, head_hash, at, token, authored FROM audit_checkpoints ORDER BY seq DESC LIMIT 1;

-- name: insert_credential
INSERT INTO credentials (id, kind, name, token_sha256, scope, created_at, created_by, signature)
VALUES (%(id)s, %(kind)s, %(name)s, %(token_sha256)s, %(scope)s, %(created_at)s, %(created_by)s, %(signature)s);

-- name: revoke_credential
UPDATE credentials SET revoked_at = %(at)s, revoked_by = %(by)s
WHERE id = %(id)s AND revoked_at IS NULL
RETURNING id;

-- name: credential_for
SELECT id, kind, name, token_sha256, scope, created_at, created_by, signature, revoked_at, revoked_by
FROM credentials WHERE token_sha256 = %(token_sha256)s AND revoked_at IS NULL;

-- name: list_credentials
SELECT id, kind, name, token_sha256, scope, created_at, created_by, signature, revoked_at, revoked_by
FROM credentials
WHERE (%(kind)s::text IS NULL OR kind = %(kind)s) AND (%(include_revoked)s OR revoked_at IS NULL)
ORDER BY created_at, id;

-- name: put_state_head
-- Bookkeeping, not audited state: no event. One row per signing key, always replaced: a row a writer of the
-- store forged (dated in the future) must not keep the signer's heads out; gates keep the newest valid head
-- they saw anyway.
INSERT INTO state_heads (kid, issued_at, token) VALUES (%(kid)s, %(issued_at)s, %(token)s)
ON CONFLICT (kid) DO UPDATE SET issued_at = excluded.issued_at, token = excluded.token;

-- name: get_state_head
SELECT token FROM state_heads WHERE kid = %(kid)s;
