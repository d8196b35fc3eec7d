-- crossgate SQLite schema, version 5: the authority's tokens, beside what they sign.
-- requests.signatures holds a decided request's decision tokens (JWS compact, separated by single
-- spaces: one, or one per approver of a request needing several); standing_rules.signature holds a
-- rule's token. NULL for none (pending requests, and everything a queue without an authority records).

ALTER TABLE requests ADD COLUMN signatures TEXT;
ALTER TABLE standing_rules ADD COLUMN signature TEXT;
