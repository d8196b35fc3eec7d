-- 007: a counter of the changes that can change a verdict: standing rules added or revoked, policy
-- versions stored. It lives in the chain head's row, which each of those writes locks anyway, and is
-- bumped by the same statement, so a queue (in any process) can tell that its cached rules and policy
-- are still current from one small read. Until now the cache keyed on the head's seq, which every event
-- moves, so every submission after any write read every standing rule and the current policy again.
ALTER TABLE audit_head ADD COLUMN rules_version bigint NOT NULL DEFAULT 0;
