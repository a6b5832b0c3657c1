-- Why is an object alive? Its chain of dominators in a heap snapshot: each object on the chain
-- is on every path from the GC roots to it, so dropping the reference to any of them frees it.
-- Starts from the largest instance (by retained size) of the type named in `pick` — edit the
-- name; without such an instance, from the largest object that has a dominator — in the last
-- snapshot with retained sizes (run `heaplens retention app.db` once first), then the GC roots
-- that hold the top of the chain. `heaplens roots` gives the full shortest path.
--   sqlite3 -header -column app.db < examples/queries/dominator_chain.sql
WITH pick(snapshot, type) AS (
       SELECT (SELECT max(snapshot) FROM retention_snapshots),
              'HeapLens.Examples.Leaks.LeakedSession'),
     start AS ( -- without an instance of that type: the largest object that has a dominator
       SELECT r.snapshot, r.object_id FROM retained_objects AS r JOIN pick AS p
         ON r.snapshot = p.snapshot AND (r.type = p.type OR r.dominator_id IS NOT NULL)
       ORDER BY r.type = p.type DESC, r.retained_bytes DESC, r.object_id LIMIT 1),
     chain(depth, snapshot, object_id) AS (
       SELECT 0, snapshot, object_id FROM start
       UNION ALL
       SELECT c.depth + 1, c.snapshot, r.idom_id FROM chain AS c
       JOIN retention AS r ON r.snapshot = c.snapshot AND r.object_id = c.object_id
       WHERE r.idom_id IS NOT NULL)
SELECT c.depth, c.object_id, o.type, o.shallow_bytes, o.retained_bytes, o.retained_count
FROM chain AS c
JOIN retained_objects AS o ON o.snapshot = c.snapshot AND o.object_id = c.object_id
ORDER BY c.depth;

WITH pick(snapshot, type) AS (
       SELECT (SELECT max(snapshot) FROM retention_snapshots),
              'HeapLens.Examples.Leaks.LeakedSession'),
     start AS ( -- without an instance of that type: the largest object that has a dominator
       SELECT r.snapshot, r.object_id FROM retained_objects AS r JOIN pick AS p
         ON r.snapshot = p.snapshot AND (r.type = p.type OR r.dominator_id IS NOT NULL)
       ORDER BY r.type = p.type DESC, r.retained_bytes DESC, r.object_id LIMIT 1),
     chain(snapshot, object_id) AS (
       SELECT snapshot, object_id FROM start
       UNION ALL
       SELECT c.snapshot, r.idom_id FROM chain AS c
       JOIN retention AS r ON r.snapshot = c.snapshot AND r.object_id = c.object_id
       WHERE r.idom_id IS NOT NULL),
     top AS ( -- the end of the chain: dominated by the roots alone
       SELECT c.snapshot, c.object_id FROM chain AS c
       JOIN retention AS r ON r.snapshot = c.snapshot AND r.object_id = c.object_id
       WHERE r.idom_id IS NULL)
SELECT ro.object_id AS held_object, ro.type, ro.kind, ro.flags,
       printf('0x%x', ro.root_id) AS root_id
FROM top AS t
JOIN snapshot_root_objects AS ro ON ro.snapshot = t.snapshot AND ro.object_id = t.object_id
WHERE ro.flags & 2 = 0 -- weak roots keep nothing alive
ORDER BY ro.kind, ro.root_id;
