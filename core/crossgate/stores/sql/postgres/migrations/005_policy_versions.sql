-- 005: signed policy versions and signed audit checkpoints. A policy version keeps the policy's
-- canonical JSON and the authority's token over it; the other columns are copies for listing. A
-- checkpoint keeps the authority's token over one chain head: one per seq, and an authored one (signed
-- by the writer of that event) replaces one that is not.
CREATE TABLE policy_versions (
    version integer PRIMARY KEY CHECK (version >= 1),
    created_at timestamptz NOT NULL,
    created_by text NOT NULL,
    digest text NOT NULL,
    source text,
    document text NOT NULL,
    token text NOT NULL
);

CREATE TABLE audit_checkpoints (
    seq bigint PRIMARY KEY CHECK (seq >= 0),
    head_hash text NOT NULL,
    at timestamptz NOT NULL,
    authored boolean NOT NULL,
    token text NOT NULL
);
