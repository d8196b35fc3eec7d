-- crossgate SQLite schema, version 3: delivery cursors, one per consumer of the event log.
-- A webhook target's cursor is named by a digest of its URL (never the URL: it may carry a token).
-- `seq` is the last event the consumer is done with; the lease says which process delivers now.

CREATE TABLE delivery_cursors (
    name        TEXT PRIMARY KEY,
    seq         INTEGER NOT NULL CHECK (seq >= 0),
    lease_owner TEXT,
    lease_until REAL
);
