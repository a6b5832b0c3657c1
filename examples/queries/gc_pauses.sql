-- GC pause table: one row per GC, then a summary per generation.
--   sqlite3 -header -column app.db < examples/queries/gc_pauses.sql
-- Times are nanoseconds of the collector's monotonic clock in the database; shown here in ms.
SELECT gc,
       generation,
       reason,
       CASE compacting WHEN 1 THEN 'compacting' ELSE 'sweeping' END AS kind,
       round(pause_ns / 1e6, 3) AS pause_ms,
       round((start_ns - (SELECT start_mono_ns FROM run)) / 1e6, 1) AS at_ms,
       survived_bytes,
       moved_bytes,
       objects_live,
       CASE incomplete WHEN 1 THEN 'INCOMPLETE' ELSE '' END AS note
FROM gcs
ORDER BY gc;

SELECT generation,
       count(*) AS gcs,
       sum(induced) AS induced,
       round(sum(pause_ns) / 1e6, 3) AS total_pause_ms,
       round(avg(pause_ns) / 1e6, 3) AS avg_pause_ms,
       round(max(pause_ns) / 1e6, 3) AS max_pause_ms
FROM gcs
GROUP BY generation
ORDER BY generation;
