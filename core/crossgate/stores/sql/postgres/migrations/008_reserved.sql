-- 008: reserved for another branch's migration (issue 25, the signed state head), which the credentials
-- migration (009) follows. Delete this file when that one is merged.
SELECT 1;
