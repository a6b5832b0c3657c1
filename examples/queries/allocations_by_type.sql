-- Allocations by type: what the program allocated, most bytes first.
--   sqlite3 -header -column app.db < examples/queries/allocations_by_type.sql
-- Uses the allocations_by_type view (store/SCHEMA.md); the share column is of all bytes.
SELECT type,
       count,
       bytes,
       round(100.0 * bytes / (SELECT sum(bytes) FROM allocations_by_type), 1) AS pct_bytes,
       bytes / count AS avg_size
FROM allocations_by_type
ORDER BY bytes DESC, count DESC
LIMIT 30;
