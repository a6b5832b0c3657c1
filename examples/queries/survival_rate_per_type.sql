-- Survival rate per type per GC: of the objects allocated since the previous GC (the young
-- objects every GC condemns), how many survived this GC, per type. A type that survives often
-- is promoted and ages; one that never survives is cheap churn. Types with fewer than 10 new
-- objects in a GC are left out.
--   sqlite3 -header -column app.db < examples/queries/survival_rate_per_type.sql
-- objects.first_gc is the first GC after the allocation; the object survived it unless
-- died_gc = first_gc (objects the collector lost, with no fate, are not counted).
SELECT o.first_gc AS gc,
       coalesce(t.name, '<type ' || o.type_id || '>') AS type,
       count(*) AS allocated,
       sum(o.died_gc IS NULL OR o.died_gc > o.first_gc) AS survived,
       round(100.0 * sum(o.died_gc IS NULL OR o.died_gc > o.first_gc) / count(*), 1)
         AS survival_pct,
       sum(o.size) AS bytes_allocated
FROM objects AS o
JOIN gcs AS g ON g.gc = o.first_gc
LEFT JOIN types AS t ON t.id = o.type_id
WHERE o.heap IS NOT NULL
GROUP BY o.first_gc, o.type_id
HAVING count(*) >= 10
ORDER BY gc, allocated DESC, type;
