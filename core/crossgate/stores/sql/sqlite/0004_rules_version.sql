-- crossgate SQLite schema, version 4: a counter of standing-rule changes.
-- Bumped in the same transaction as every rule added or revoked, so a queue (in any process) can tell
-- that its cached list of active rules is still current from one small read, without the audit head
-- (which every event moves).

CREATE TABLE rules_version (
    one     INTEGER PRIMARY KEY CHECK (one = 1),
    version INTEGER NOT NULL
);
INSERT INTO rules_version (one, version) VALUES (1, 0);
