-- crossgate SQLite schema, version 6: signed policy versions and signed audit checkpoints.
-- (Version 5 belongs to the signed decisions and standing rules; the two are numbered apart.)
-- A policy version keeps the policy's canonical JSON and the authority's token over it; the other
-- columns are copies for listing. A checkpoint keeps the authority's token over one chain head; one
-- per seq, and an authored one (signed by the writer of that event) replaces one that is not.

CREATE TABLE policy_versions (
    version    INTEGER PRIMARY KEY CHECK (version >= 1),
    created_at TEXT NOT NULL,
    created_by TEXT NOT NULL,
    digest     TEXT NOT NULL,
    source     TEXT,
    document   TEXT NOT NULL,
    token      TEXT NOT NULL
);

CREATE TABLE audit_checkpoints (
    seq       INTEGER PRIMARY KEY CHECK (seq >= 0),
    head_hash TEXT NOT NULL,
    at        TEXT NOT NULL,
    authored  INTEGER NOT NULL CHECK (authored IN (0, 1)),
    token     TEXT NOT NULL
);
