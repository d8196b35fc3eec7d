-- crossgate SQLite schema, version 2: a parked run's SDK state moves to its own table.
-- The state (often tens of KiB) is written once; claims and finishes rewrite only the small row in
-- parked_runs, whose body keeps every other field and an empty "state".

CREATE TABLE parked_states (
    id    TEXT PRIMARY KEY,
    state TEXT NOT NULL
);
INSERT INTO parked_states (id, state) SELECT id, json_extract(body, '$.state') FROM parked_runs;
UPDATE parked_runs SET body = json_set(body, '$.state', '');
