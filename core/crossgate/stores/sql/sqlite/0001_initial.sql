-- crossgate SQLite schema, version 1.
-- Each object is stored whole as JSON in `body`; the columns beside it exist to filter, order and lock.

CREATE TABLE requests (
    position   INTEGER PRIMARY KEY AUTOINCREMENT,
    id         TEXT NOT NULL UNIQUE,
    status     TEXT NOT NULL,
    framework  TEXT NOT NULL,
    tool       TEXT NOT NULL,
    agent      TEXT,
    run        TEXT,
    expires_at REAL,
    body       TEXT NOT NULL
);
CREATE INDEX requests_by_status ON requests (status, position);
CREATE INDEX requests_by_run ON requests (run, position);
CREATE INDEX requests_by_tool ON requests (tool, position);
CREATE INDEX requests_pending_expiry ON requests (expires_at) WHERE status = 'pending' AND expires_at IS NOT NULL;

CREATE TABLE standing_rules (
    position INTEGER PRIMARY KEY AUTOINCREMENT,
    id       TEXT NOT NULL UNIQUE,
    revoked  INTEGER NOT NULL DEFAULT 0,
    body     TEXT NOT NULL
);

CREATE TABLE parked_runs (
    position  INTEGER PRIMARY KEY AUTOINCREMENT,
    id        TEXT NOT NULL UNIQUE,
    status    TEXT NOT NULL,
    framework TEXT NOT NULL,
    run       TEXT NOT NULL,
    body      TEXT NOT NULL
);
CREATE INDEX parked_runs_by_status ON parked_runs (status, position);

CREATE TABLE events (
    seq        INTEGER PRIMARY KEY,
    at         TEXT NOT NULL,
    kind       TEXT NOT NULL,
    request_id TEXT,
    run        TEXT,
    actor      TEXT,
    channel    TEXT,
    payload    TEXT NOT NULL,
    prev_hash  TEXT NOT NULL,
    hash       TEXT NOT NULL
);
CREATE INDEX events_by_request ON events (request_id, seq);

-- The chain head is kept apart from the events, so deleting the last event is detectable.
CREATE TABLE audit_head (
    one  INTEGER PRIMARY KEY CHECK (one = 1),
    seq  INTEGER NOT NULL,
    hash TEXT NOT NULL
);
INSERT INTO audit_head (one, seq, hash) VALUES (1, 0, '0000000000000000000000000000000000000000000000000000000000000000');
