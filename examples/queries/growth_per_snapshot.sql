-- Leak hunting in SQL: live objects per type in every heap snapshot, for the types that grew
-- from the first snapshot to the last, most grown first (`heaplens leaks` adds the trend test,
-- the holder and a path to a root). One row per type: objects in the first and last snapshot,
-- the growth, and the whole series as "first -> ... -> last".
--   sqlite3 -header -column app.db < examples/queries/growth_per_snapshot.sql
WITH per_snapshot AS (
       SELECT c.snapshot, c.type, count(*) AS objects, sum(c.size) AS bytes
       FROM snapshot_contents AS c GROUP BY c.snapshot, c.type),
     bounds AS (SELECT min(snapshot) AS first, max(snapshot) AS last FROM snapshots),
     grown AS (
       SELECT l.type, coalesce(f.objects, 0) AS first_objects, l.objects AS last_objects,
              l.bytes - coalesce(f.bytes, 0) AS grown_bytes
       FROM per_snapshot AS l
       JOIN bounds AS b ON l.snapshot = b.last
       LEFT JOIN per_snapshot AS f ON f.snapshot = b.first AND f.type = l.type
       WHERE l.objects > coalesce(f.objects, 0))
SELECT g.type, g.first_objects, g.last_objects, g.last_objects - g.first_objects AS grown,
       g.grown_bytes,
       (SELECT group_concat(objects, ' -> ') FROM
          (SELECT coalesce(p.objects, 0) AS objects FROM snapshots AS s
           LEFT JOIN per_snapshot AS p ON p.snapshot = s.snapshot AND p.type = g.type
           ORDER BY s.snapshot)) AS series
FROM grown AS g
ORDER BY g.grown_bytes DESC, g.type
LIMIT 20;
