-- 009: stored credentials (crossgate reviewers|agents add, rotate, revoke). A credential keeps the sha256
-- of its token, never the token, and the authority's signature over the row (crossgate.credential.v1
-- claims), so a writer of the store cannot add one. Rows change only to be revoked; a rotation revokes the
-- old row and adds a new one. At most one live row per kind and name.
CREATE TABLE credentials (
    id text PRIMARY KEY,
    kind text NOT NULL CHECK (kind IN ('reviewer', 'agent')),
    name text NOT NULL,
    token_sha256 text NOT NULL UNIQUE,
    scope text NOT NULL,
    created_at timestamptz NOT NULL,
    created_by text NOT NULL,
    signature text NOT NULL,
    revoked_at timestamptz,
    revoked_by text
);

CREATE UNIQUE INDEX credentials_live_name ON credentials (kind, name) WHERE revoked_at IS NULL;
