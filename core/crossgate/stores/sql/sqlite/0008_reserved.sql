-- crossgate SQLite schema, version 8: reserved for another branch's migration (issue 25, the signed
-- state head), which the credentials migration (0009) follows. Delete this file when that one is merged.
SELECT 1;
