-- 004: reserved for the signed decisions and standing rules (branch "sign"), which land apart from
-- 005. It changes nothing; the file goes when that migration takes its number.
SELECT 1;
