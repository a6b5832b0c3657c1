-- Strong GC handles the program created and never freed (GCHandle.Alloc without Free): each
-- keeps its target alive for as long as the process runs. Per target type, then each handle
-- with its target and, when the last heap snapshot has retained sizes (`heaplens retention`),
-- what the target retains; without them that column is empty.
--   sqlite3 -header -column app.db < examples/queries/strong_handles_never_freed.sql
SELECT coalesce(h.type, '(no target)') AS target_type, count(*) AS handles,
       min(h.created_after_gc) AS first_created_after_gc,
       max(h.created_after_gc) AS last_created_after_gc
FROM strong_handles_never_freed AS h
GROUP BY h.type
ORDER BY handles DESC, target_type;

SELECT h.handle, printf('0x%x', h.handle_id) AS handle_id, h.created_after_gc,
       h.object_id, h.type, h.size,
       (SELECT r.retained_bytes FROM snapshot_root_objects AS r
         WHERE r.object_id = h.object_id AND r.root_id = h.handle_id
           AND r.snapshot = (SELECT max(snapshot) FROM snapshots)) AS retained_bytes
FROM strong_handles_never_freed AS h
ORDER BY h.created_after_gc, h.handle;
