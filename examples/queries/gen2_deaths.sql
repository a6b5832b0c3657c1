-- Objects that reached gen2 and died there: the expensive garbage — promoted twice, copied or
-- kept across gen0/gen1 GCs, and freed only by a full GC. Per type: how many, how many bytes,
-- how many GCs they lived on average, and in which GCs they died.
--   sqlite3 -header -column app.db < examples/queries/gen2_deaths.sql
-- "Reached gen2 and died there": the generation it held last (its row whose until_gc is the GC
-- that collected it) is gen2.
WITH died_in_gen2 AS (
  SELECT o.id, o.type_id, o.size, o.first_gc, o.died_gc
  FROM objects AS o
  JOIN object_generations AS og ON og.object_id = o.id AND og.until_gc = o.died_gc
  WHERE o.died_gc IS NOT NULL AND og.generation = 2)
SELECT coalesce(t.name, '<type ' || d.type_id || '>') AS type,
       count(*) AS objects, sum(d.size) AS bytes,
       round(avg(d.died_gc - d.first_gc), 1) AS avg_gcs_lived,
       min(d.died_gc) AS first_death_gc, max(d.died_gc) AS last_death_gc
FROM died_in_gen2 AS d
LEFT JOIN types AS t ON t.id = d.type_id
GROUP BY d.type_id
ORDER BY bytes DESC, type
LIMIT 30;
