-- 008: the newest signed state head (crossgate.state_head.v1). One row: the authority's token over the
-- current policy version, the revoked standing rules, the audit head and the approvals already consumed,
-- for a few minutes. Gates read it and remember the newest one in their own file, never here: a writer
-- of this table can hide a head, not forge or roll one back.
CREATE TABLE state_heads (
    one smallint PRIMARY KEY CHECK (one = 1),
    issued_at timestamptz NOT NULL,
    token text NOT NULL
);
