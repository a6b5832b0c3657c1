-- Survival rate per type per GC: of the objects allocated since the previous GC (the young
-- objects every GC condemns), how many survived this GC, per type. A type that survives often
-- is promoted and ages; one that never survives is cheap churn. Types with fewer than 10 new
-- objects in a GC are left out.
--   sqlite3 -header -column app.db < examples/queries/survival_rate_per_type.sql
-- alloc_counts counts every allocation of interval gc (allocated before GC gc began, after the
-- GC before it) and how many survived GC gc; the tail after the last GC has no GC (left out by
-- the join), and allocations no GC classified (heap NULL) are not counted.
SELECT a.gc AS gc,
       coalesce(t.name, '<type ' || a.type_id || '>') AS type,
       sum(a.count) AS allocated,
       sum(a.survived) AS survived,
       round(100.0 * sum(a.survived) / sum(a.count), 1) AS survival_pct,
       sum(a.bytes) AS bytes_allocated
FROM alloc_counts AS a
JOIN gcs AS g ON g.gc = a.gc
LEFT JOIN types AS t ON t.id = a.type_id
WHERE a.heap IS NOT NULL
GROUP BY a.gc, a.type_id
HAVING sum(a.count) >= 10
ORDER BY gc, allocated DESC, type;
