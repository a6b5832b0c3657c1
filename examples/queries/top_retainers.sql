-- Top retainers of the last heap snapshot: the 20 objects that keep the most memory alive
-- (their retained size: what would be freed if only they stopped being referenced), then the 20
-- types whose instances retain the most. Needs the retention tables: run
-- `heaplens retention app.db` once (it stores them in the file).
--   sqlite3 -header -column app.db < examples/queries/top_retainers.sql
-- Another snapshot: replace "(SELECT max(snapshot) FROM retention_snapshots)" in both `pick`s.
WITH pick(snapshot) AS (SELECT (SELECT max(snapshot) FROM retention_snapshots))
SELECT r.object_id, r.type, r.retained_bytes, r.retained_count, r.shallow_bytes,
       r.dominator_type AS held_by
FROM retained_objects AS r
JOIN pick USING (snapshot)
ORDER BY r.retained_bytes DESC, r.object_id
LIMIT 20;

WITH pick(snapshot) AS (SELECT (SELECT max(snapshot) FROM retention_snapshots))
SELECT t.type, t.count, t.retained_bytes, t.retained_count, t.shallow_bytes,
       round(100.0 * t.retained_bytes / rs.reachable_bytes, 1) AS pct_of_heap
FROM retained_by_type AS t
JOIN pick USING (snapshot)
JOIN retention_snapshots AS rs USING (snapshot)
ORDER BY t.retained_bytes DESC, t.type
LIMIT 20;
