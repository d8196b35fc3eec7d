-- crossgate SQLite schema, version 10: one state head per signing key (kid), not one for the store, so a
-- process holding another key (a generated one, say) no longer replaces the authority's head. The head
-- kept so far stays, under the kid its token's header names (crossgate_token_kid, registered by the
-- store); a row naming no kid is not a head and is dropped.
ALTER TABLE state_heads RENAME TO state_heads_one;
CREATE TABLE state_heads (
    kid       TEXT PRIMARY KEY,
    issued_at TEXT NOT NULL,
    token     TEXT NOT NULL
);
INSERT INTO state_heads (kid, issued_at, token)
    SELECT crossgate_token_kid(token), issued_at, token FROM state_heads_one
    WHERE crossgate_token_kid(token) IS NOT NULL;
DROP TABLE state_heads_one;
