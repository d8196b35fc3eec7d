-- 010: one state head per signing key (kid), not one for the store, so a process holding another key (a
-- generated one, say) no longer replaces the authority's head. The head kept so far stays, under the kid
-- its token's header (base64url JSON) names; a row naming no kid is not a head and is dropped.
ALTER TABLE state_heads RENAME TO state_heads_one;
ALTER INDEX state_heads_pkey RENAME TO state_heads_one_pkey;
CREATE TABLE state_heads (
    kid text PRIMARY KEY,
    issued_at timestamptz NOT NULL,
    token text NOT NULL
);
DO $$
DECLARE
    legacy record;
    header text;
BEGIN
    FOR legacy IN SELECT issued_at, token FROM state_heads_one LOOP
        header := translate(split_part(legacy.token, '.', 1), '-_', '+/');
        BEGIN
            INSERT INTO state_heads (kid, issued_at, token) VALUES (
                convert_from(decode(rpad(header, (length(header) + 3) / 4 * 4, '='), 'base64'), 'UTF8')::jsonb
                    ->> 'kid',
                legacy.issued_at,
                legacy.token
            );
        EXCEPTION WHEN others THEN
            NULL;  -- not a token naming a kid: not a head
        END;
    END LOOP;
END
$$;
DROP TABLE state_heads_one;
