-- crossgate SQLite schema, version 7: a request's status says what became of the call.
-- Until now every request whose decision reached the agent was `applied`. A rejected one is now
-- `rejected`, an answered one (respond) `answered`; `applied` is left to approvals and edits.
-- Events are not rewritten: the hash chain covers their kinds. Outcomes logged as `executed` stay so,
-- and are read as `ran` or `not_run` by their `ran` field (crossgate.model.event_kind).
-- json_set replaces the top-level status only and keeps every other byte of the body as written.

UPDATE requests SET status = 'rejected', body = json_set(body, '$.status', 'rejected')
WHERE status = 'applied' AND json_extract(body, '$.decision.kind') = 'reject';
UPDATE requests SET status = 'answered', body = json_set(body, '$.status', 'answered')
WHERE status = 'applied' AND json_extract(body, '$.decision.kind') = 'respond';
