-- 006: a request's status says what became of the call. Until now every request whose decision reached
-- the agent was `applied`. A rejected one is now `rejected`, an answered one (respond) `answered`;
-- `applied` is left to approvals and edits. Events are not rewritten: the hash chain covers their kinds.
-- Outcomes logged as `executed` stay so, and are read as `ran` or `not_run` by their `ran` field.
-- `data` is text (jsonb would rewrite numbers; see schema.sql), so its top-level status is replaced as
-- text: the `"status":"applied"` right after the request's own fingerprint, and only where that text
-- occurs once. A body left as it was still reads right: the model takes `applied` with a reject or
-- respond decision as `rejected` or `answered`. `::json` (not jsonb) only reads, and accepts any body.
UPDATE requests AS r
SET status = m.status,
    data = CASE
        WHEN length(r.data) - length(replace(r.data, m.old, '')) = length(m.old) THEN replace(r.data, m.old, m.new)
        ELSE r.data
    END
FROM (
    SELECT id, status,
           '"fingerprint":"' || fingerprint || '","status":"applied"' AS old,
           '"fingerprint":"' || fingerprint || '","status":"' || status || '"' AS new
    FROM (
        SELECT id,
               data::json ->> 'fingerprint' AS fingerprint,
               CASE data::json -> 'decision' ->> 'kind' WHEN 'reject' THEN 'rejected' ELSE 'answered' END AS status
        FROM requests
        WHERE status = 'applied' AND data::json -> 'decision' ->> 'kind' IN ('reject', 'respond')
    ) AS found
) AS m
WHERE r.id = m.id;
