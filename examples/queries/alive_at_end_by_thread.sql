-- Objects still alive when the run ended (never collected), by the name of the thread that
-- allocated them, then by type. Unnamed threads show as "tid <os thread id>".
-- Objects that survived a GC (objects rows); allocations after the last GC are only counted
-- (alloc_counts, the last interval): no GC judged them.
--   sqlite3 -header -column app.db < examples/queries/alive_at_end_by_thread.sql
SELECT coalesce(th.name, 'tid ' || o.thread, '(unknown)') AS thread,
       count(*) AS objects,
       sum(o.size) AS bytes
FROM objects AS o
LEFT JOIN threads AS th ON th.os_tid = o.thread
WHERE o.died_gc IS NULL
GROUP BY 1
ORDER BY bytes DESC;

SELECT coalesce(th.name, 'tid ' || o.thread, '(unknown)') AS thread,
       t.name AS type,
       count(*) AS objects,
       sum(o.size) AS bytes
FROM objects AS o
JOIN types AS t ON t.id = o.type_id
LEFT JOIN threads AS th ON th.os_tid = o.thread
WHERE o.died_gc IS NULL
GROUP BY 1, 2
ORDER BY bytes DESC
LIMIT 40;
