-- crossgate SQLite schema, version 9: stored credentials (crossgate reviewers|agents add, rotate, revoke).
-- A credential keeps the sha256 of its token, never the token, and the authority's signature over the
-- row (crossgate.credential.v1 claims), so a writer of the store cannot add one. Rows change only to be
-- revoked; a rotation revokes the old row and adds a new one. At most one live row per kind and name.

CREATE TABLE credentials (
    id           TEXT PRIMARY KEY,
    kind         TEXT NOT NULL CHECK (kind IN ('reviewer', 'agent')),
    name         TEXT NOT NULL,
    token_sha256 TEXT NOT NULL UNIQUE,
    scope        TEXT NOT NULL,
    created_at   TEXT NOT NULL,
    created_by   TEXT NOT NULL,
    signature    TEXT NOT NULL,
    revoked_at   TEXT,
    revoked_by   TEXT
);

CREATE UNIQUE INDEX credentials_live_name ON credentials (kind, name) WHERE revoked_at IS NULL;
