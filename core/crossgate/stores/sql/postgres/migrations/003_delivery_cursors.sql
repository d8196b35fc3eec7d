-- 003: delivery cursors, one per consumer of the event log (a webhook target is named by a digest of
-- its URL, never the URL: it may carry a token). ``seq`` is the last event the consumer is done with;
-- the lease says which process delivers now.
CREATE TABLE delivery_cursors (
    name text PRIMARY KEY,
    seq bigint NOT NULL CHECK (seq >= 0),
    lease_owner text,
    lease_until timestamptz
);
