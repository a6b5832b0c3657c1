-- Survivors after a GC, per generation: what each generation held right after the GC, then
-- the biggest types per generation. Uses the last GC of the recording; to look at GC 7 instead,
-- replace "(SELECT max(gc) FROM gcs)" by 7 in both `pick` lines.
--   sqlite3 -header -column app.db < examples/queries/survivors_after_gc.sql
-- Generations as stored: 0, 1, 2, 3 = LOH, 4 = POH, 5 = NonGC (store/SCHEMA.md).
WITH pick(gc) AS (SELECT (SELECT max(gc) FROM gcs)),
     gen_name(generation, name) AS (
       VALUES (0, 'gen0'), (1, 'gen1'), (2, 'gen2'), (3, 'loh'), (4, 'poh'), (5, 'nongc'))
SELECT s.gc,
       coalesce(g.name, s.generation) AS generation,
       sum(s.count) AS objects,
       sum(s.bytes) AS bytes,
       count(*) AS types
FROM survivors_by_generation AS s
JOIN pick USING (gc)
LEFT JOIN gen_name AS g ON g.generation = s.generation
GROUP BY s.gc, s.generation
ORDER BY s.generation;

WITH pick(gc) AS (SELECT (SELECT max(gc) FROM gcs)),
     gen_name(generation, name) AS (
       VALUES (0, 'gen0'), (1, 'gen1'), (2, 'gen2'), (3, 'loh'), (4, 'poh'), (5, 'nongc')),
     ranked AS (
       SELECT s.gc, s.generation, s.type, s.count, s.bytes,
              row_number() OVER (PARTITION BY s.generation ORDER BY s.bytes DESC) AS rank
       FROM survivors_by_generation AS s JOIN pick USING (gc))
SELECT r.gc, coalesce(g.name, r.generation) AS generation, r.rank, r.type, r.count, r.bytes
FROM ranked AS r
LEFT JOIN gen_name AS g ON g.generation = r.generation
WHERE r.rank <= 10
ORDER BY r.generation, r.rank;
