/* store_schema.c — the heaplens database: its SQL, and recognising one.
 *
 * SCHEMA.md documents every table and view below; keep the two in step. A change to a table or
 * a view's columns bumps STORE_SCHEMA_VERSION (readers refuse other versions).
 */
#include "store/store_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

G_DEFINE_QUARK(heaplens-store-error-quark, store_error)

/* Connection settings of the writer: 8 KiB pages (set before the first table; SQLite's WAL
 * writes each page as two writes, a frame header and the page, and the checkpoint copies it with
 * a read and a write: half the system calls of 4 KiB pages. Measured with `bench_store replay`
 * on MidLife's stream, writer CPU 0.467 s -> 0.413 s, the file 93.3 -> 92.2 MB, its first read
 * no slower; 16 KiB saved a little more CPU but made the file 3% larger, each table's pages
 * less full), WAL so a reader sees every committed GC while recording,
 * synchronous=OFF, set first so that even the switch to WAL (a rollback-journal transaction) and
 * the schema's commit are not synced: the writer never calls fsync. What it promises holds
 * without: a commit is in the kernel once written, so it survives the writer's or the program's
 * death (SIGKILL), and WAL recovery finds it; only an OS crash or a power failure during the
 * recording or in the seconds after (before the kernel writes the file back) can leave the file
 * damaged, and a damaged file fails the commands that read it with one line. NORMAL synced the
 * WAL and the file at every checkpoint and four times at the start and five at the end (14 in a
 * recording of /bin/true): the whole file's writeback in the writer's time and at its end (the
 * `heaplens record` exit waited for it), and 13% of its CPU on MidLife's stream (`bench_store
 * replay`, 0.295 -> 0.259 s). A page cache of up to 4 MiB (the writer appends: packed rows
 * and snapshots in key order, no UPDATE of older objects since they are packed, so it needs
 * the right edge of each tree and little else; a larger cache only grows into fresh memory, a
 * page fault per 4 KiB: with 256 MiB MidLife's writer CPU was 0.418 s against 0.382 s with 32
 * MiB, and with 32 MiB 0.281 s against 0.264 s with 4 MiB, Workload's 0.111 against 0.102 s,
 * `bench_store replay`; a GC larger than the cache spills its pages into the WAL before its
 * commit, each once; a 2M-object snapshot is as fast with 4 MiB as with 32, `bench_store
 * snapshot`), checkpoints every 4 MiB of
 * WAL: the copying happens in small steps while recording, so the checkpoint at the end of a
 * recording is short (Workload's finishing: 130 ms with 64 MiB steps, 25 ms). The writer's
 * connection replaces this autocheckpoint by its own WAL hook, so that the copy runs after a
 * GC's commit and the answers to its snapshots, not inside the commit (store_writer.c,
 * STORE_WAL_CHECKPOINT_FRAMES). No mmap: an I/O
 * error would become SIGBUS instead of an error. temp_store FILE: when a GC was a SAVEPOINT,
 * every statement inside it had a statement sub-journal, and SQLite truncates an in-memory one by
 * walking it from its start at each statement's end — quadratic in a GC that touches many old
 * pages (a 10M-object snapshot took over 13 minutes); a file sub-journal is never truncated
 * (measured: 36 s, most of it the writer catching up). A GC is a transaction of its own now
 * (store_gc_start): no sub-journal for it; a statement that may have to undo itself (a multi-row
 * INSERT) still can have one. */
/* synchronous also here, before WAL: switching the journal would otherwise sync the new file. */
static const char store_schema_pragmas[] =
    "PRAGMA page_size = 8192;\n"
    "PRAGMA synchronous = OFF;\n"
    "PRAGMA journal_mode = WAL;\n";
/* The settings a connection does not find in the file (page_size and WAL are in its header):
 * applied on every writer's connection, after store_schema_pragmas or on the image's file. */
static const char store_schema_connection_pragmas[] =
    "PRAGMA synchronous = OFF;\n"
    "PRAGMA cache_size = -4096;\n"
    "PRAGMA temp_store = FILE;\n"
    "PRAGMA wal_autocheckpoint = 512;\n";

static const char store_schema_tables[] =
    "CREATE TABLE run (\n"
    "  id INTEGER PRIMARY KEY CHECK (id = 1),\n"
    "  command TEXT,\n"
    "  pid INTEGER,\n"
    "  runtime_version TEXT,\n"
    "  producer TEXT,\n"
    "  mode TEXT,\n"
    "  start_time TEXT,\n"
    "  end_time TEXT,\n"
    "  start_mono_ns INTEGER,\n"
    "  end_mono_ns INTEGER,\n"
    "  status TEXT NOT NULL,\n"
    "  exit_status INTEGER,\n"
    "  flags TEXT,\n"
    "  loss TEXT\n"
    ");\n"
    "CREATE TABLE counters (\n"
    "  name TEXT PRIMARY KEY,\n"
    "  value INTEGER NOT NULL\n"
    ") WITHOUT ROWID;\n"
    "CREATE TABLE types (\n"
    "  id INTEGER PRIMARY KEY,\n"
    "  name TEXT NOT NULL,\n"
    "  class_id INTEGER,\n"
    "  flags INTEGER NOT NULL DEFAULT 0\n"
    ");\n"
    /* The instance fields of each type that has references in a snapshot (wire HL_REC_FIELD):
     * what snapshot_objects.fields numbers. */
    "CREATE TABLE fields (\n"
    "  type_id INTEGER NOT NULL,\n"
    "  field INTEGER NOT NULL,\n"
    "  name TEXT NOT NULL,\n"
    "  PRIMARY KEY (type_id, field)\n"
    ") WITHOUT ROWID;\n"
    /* Static fields the collector named (wire HL_REC_STATIC), and per snapshot the references
     * that are statics: the slot (field or element) of a runtime object holding it. */
    "CREATE TABLE statics (\n"
    "  id INTEGER PRIMARY KEY,\n"
    "  type_id INTEGER NOT NULL,\n"
    "  name TEXT NOT NULL,\n"
    "  thread INTEGER\n"
    ");\n"
    /* The methods of stack roots' frames (wire HL_REC_ROOT_METHOD): snapshot_roots.root_id. */
    "CREATE TABLE root_methods (\n"
    "  function_id INTEGER PRIMARY KEY,\n"
    "  name TEXT NOT NULL\n"
    ");\n"
    /* Each List/Dictionary/HashSet/Queue/Stack of a snapshot: its own count and its storage's
     * capacity, read in the GC's heap walk (wire HL_REC_SNAPSHOT_COLLECTIONS). */
    "CREATE TABLE snapshot_collections (\n"
    "  snapshot INTEGER NOT NULL,\n"
    "  object_id INTEGER NOT NULL,\n"
    "  count INTEGER NOT NULL,\n"
    "  capacity INTEGER NOT NULL,\n"
    "  PRIMARY KEY (snapshot, object_id)\n"
    ") WITHOUT ROWID;\n"
    "CREATE TABLE snapshot_statics (\n"
    "  snapshot INTEGER NOT NULL,\n"
    "  object_id INTEGER NOT NULL,\n"
    "  field INTEGER NOT NULL,\n"
    "  static_id INTEGER NOT NULL,\n"
    "  PRIMARY KEY (snapshot, object_id, field)\n"
    ") WITHOUT ROWID;\n"
    /* The value of each string of a snapshot: length, hash, first 64 characters. */
    "CREATE TABLE snapshot_strings (\n"
    "  snapshot INTEGER NOT NULL,\n"
    "  object_id INTEGER NOT NULL,\n"
    "  length INTEGER NOT NULL,\n"
    "  hash INTEGER NOT NULL,\n"
    "  value TEXT,\n"
    "  PRIMARY KEY (snapshot, object_id)\n"
    ") WITHOUT ROWID;\n"
    "CREATE TABLE threads (\n"
    "  os_tid INTEGER PRIMARY KEY,\n"
    "  thread_id INTEGER,\n"
    "  name TEXT\n"
    ");\n"
    "CREATE TABLE gcs (\n"
    "  gc INTEGER PRIMARY KEY,\n"
    "  generation INTEGER NOT NULL,\n"
    "  reason TEXT NOT NULL,\n"
    "  induced INTEGER NOT NULL,\n"
    "  compacting INTEGER NOT NULL,\n"
    "  start_ns INTEGER,\n"
    "  end_ns INTEGER,\n"
    "  pause_ns INTEGER,\n"
    "  survived_bytes INTEGER,\n"
    "  moved_bytes INTEGER,\n"
    "  first_object_id INTEGER,\n"
    "  objects_live INTEGER,\n"
    "  incomplete INTEGER NOT NULL,\n"
    "  roots INTEGER,\n"
    "  pinned_roots INTEGER,\n"
    "  census_ns INTEGER,\n"
    "  census_objects INTEGER,\n"
    "  snapshot_skipped TEXT\n"
    ");\n"
    /* Moments the program marked (EventSource "HeapLens", Checkpoint(name)): gc is the number
     * of GCs finished when it was written. */
    "CREATE TABLE checkpoints (\n"
    "  id INTEGER PRIMARY KEY,\n"
    "  name TEXT NOT NULL,\n"
    "  gc INTEGER NOT NULL,\n"
    "  time_ns INTEGER,\n"
    "  thread INTEGER\n"
    ");\n"
    "CREATE TABLE gc_generations (\n"
    "  gc INTEGER NOT NULL,\n"
    "  generation INTEGER NOT NULL,\n"
    "  size_before INTEGER,\n"
    "  size_after INTEGER,\n"
    "  PRIMARY KEY (gc, generation)\n"
    ") WITHOUT ROWID;\n"
    /* Every allocation, counted per (interval, type, thread, heap) by the collector; objects
     * that survive a GC also get an objects row. Few rows: no index. */
    "CREATE TABLE alloc_counts (\n"
    "  gc INTEGER NOT NULL,\n"
    "  type_id INTEGER NOT NULL,\n"
    "  thread INTEGER,\n"
    "  heap INTEGER,\n"
    "  count INTEGER NOT NULL,\n"
    "  bytes INTEGER NOT NULL,\n"
    "  survived INTEGER NOT NULL,\n"
    "  survived_bytes INTEGER NOT NULL,\n"
    "  flags INTEGER NOT NULL DEFAULT 0\n"
    ");\n"
    /* Allocation samples and their call stacks (collector/eventpipe.h): frames and stacks
     * interned by the collector, a row per sample with its weight (unbiased for
     * AllocationSampled). */
    "CREATE TABLE frames (\n"
    "  id INTEGER PRIMARY KEY,\n"
    "  name TEXT NOT NULL\n"
    ");\n"
    "CREATE TABLE stacks (\n"
    "  id INTEGER PRIMARY KEY,\n"
    "  depth INTEGER NOT NULL\n"
    ");\n"
    "CREATE TABLE stack_frames (\n"
    "  stack_id INTEGER NOT NULL,\n"
    "  position INTEGER NOT NULL,\n"
    "  frame_id INTEGER NOT NULL,\n"
    "  PRIMARY KEY (stack_id, position)\n"
    ") WITHOUT ROWID;\n"
    "CREATE TABLE alloc_samples (\n"
    "  id INTEGER PRIMARY KEY,\n"
    "  gc INTEGER NOT NULL,\n"
    "  type_id INTEGER NOT NULL,\n"
    "  thread INTEGER,\n"
    "  heap INTEGER,\n"
    "  size INTEGER NOT NULL,\n"
    "  stack_id INTEGER,\n"
    "  object_id INTEGER,\n"
    "  est_count REAL NOT NULL,\n"
    "  est_bytes REAL NOT NULL\n"
    ");\n"
    "CREATE TABLE unrecorded_processes (\n"
    "  pid INTEGER NOT NULL,\n"
    "  command TEXT NOT NULL\n"
    ");\n"
    "CREATE TABLE sampling (\n"
    "  id INTEGER PRIMARY KEY CHECK (id = 1),\n"
    "  source TEXT NOT NULL,\n"
    "  mean_distance_bytes INTEGER,\n"
    "  biased INTEGER NOT NULL,\n"
    "  samples INTEGER NOT NULL,\n"
    "  samples_dropped INTEGER NOT NULL\n"
    ");\n"
    /* The objects that survived a GC, packed as the GCs found them (store_gc.c): a row per
     * (GC, thread, heap, first generation) and at most 8192 objects, each a JSON array
     * [id gap, type_id, size] (ids ascending in a row: the first one's gap is the id itself),
     * or [id gap, type_id] when the size is that of the row's first object of the type
     * (schema 11).
     * `generation` is their first generation change (schema 10; before, generation_changes
     * held it, each id written again). The view `objects` derives their rows while recording;
     * the first reader of the finished file expands them into the table `objects`
     * (store_history.c). */
    "CREATE TABLE object_chunks (\n"
    "  gc INTEGER NOT NULL,\n"
    "  thread INTEGER,\n"
    "  heap INTEGER,\n"
    "  generation INTEGER NOT NULL,\n"
    "  count INTEGER NOT NULL,\n"
    "  objects TEXT NOT NULL\n"
    ");\n"
    /* The deaths of objects that had survived a GC: a row per GC and at most 8192 ids, a JSON
     * array of the first id and the gaps after it, like generation_changes. */
    "CREATE TABLE object_deaths (\n"
    "  gc INTEGER NOT NULL,\n"
    "  count INTEGER NOT NULL,\n"
    "  ids TEXT NOT NULL\n"
    ");\n"
    /* Generation changes as the GCs made them, appended: the ids of the objects that hold
     * `generation` from GC `gc` on (promotions; before schema 10 also survivors' and
     * discovered objects' first generation, now object_chunks.generation), ascending, a JSON
     * array per row: the first id, then the gap to each next one. Moved into object_generation_rows by the first reader of the finished file
     * (store_history.c). */
    "CREATE TABLE generation_changes (\n"
    "  gc INTEGER NOT NULL,\n"
    "  generation INTEGER NOT NULL,\n"
    "  count INTEGER NOT NULL,\n"
    "  ids TEXT NOT NULL\n"
    ");\n"
    /* Each object's generation history with its end, built from generation_changes at the end
     * of the recording; empty before (the view object_generations derives it then). Keyed by
     * GC: "alive after GC n" is a range of the key, and the rows are written in key order. */
    "CREATE TABLE object_generation_rows (\n"
    "  object_id INTEGER NOT NULL,\n"
    "  generation INTEGER NOT NULL,\n"
    "  from_gc INTEGER NOT NULL,\n"
    "  until_gc INTEGER,\n"
    "  PRIMARY KEY (from_gc, object_id)\n"
    ") WITHOUT ROWID;\n"
    /* Heap snapshots. The two big tables are WITHOUT ROWID, keyed by what they are read by, and
     * written in key order (store_snapshot.c sorts a snapshot before writing it), so their pages
     * fill up and a snapshot's rows are contiguous: reading all edges of one is one range scan. */
    "CREATE TABLE snapshots (\n"
    "  snapshot INTEGER PRIMARY KEY,\n"
    "  gc INTEGER NOT NULL,\n"
    "  trigger TEXT,\n"
    "  objects INTEGER NOT NULL,\n"
    "  refs INTEGER NOT NULL,\n"
    "  roots INTEGER NOT NULL,\n"
    "  handles INTEGER NOT NULL,\n"
    "  bytes INTEGER NOT NULL,\n"
    "  model_missing INTEGER NOT NULL,\n"
    "  model_extra INTEGER NOT NULL,\n"
    "  frozen INTEGER NOT NULL,\n"
    "  unresolved INTEGER NOT NULL,\n"
    "  walk_ns INTEGER,\n"
    "  model_unreported INTEGER NOT NULL DEFAULT 0,\n"
    "  reason TEXT\n"
    ");\n"
    /* A snapshot's objects, compactly (schema 8; store_snapblock.c has the format): a row per
     * block of objects with consecutive ids, once for the snapshots first..last it is in.
     * snapshot_objects (a view, below) gives schema 7's row per object. */
    "CREATE TABLE snapshot_blocks (\n"
    "  id INTEGER PRIMARY KEY,\n"
    "  first_snapshot INTEGER NOT NULL,\n"
    "  last_snapshot INTEGER NOT NULL,\n"
    "  first_id INTEGER NOT NULL,\n"
    "  objects INTEGER NOT NULL,\n"
    "  ids TEXT NOT NULL,\n"
    "  kinds TEXT NOT NULL,\n"
    "  refs TEXT,\n"
    "  fields TEXT\n"
    ");\n"
    "CREATE INDEX snapshot_blocks_by_snapshot ON snapshot_blocks (last_snapshot, first_id);\n"
    "CREATE INDEX snapshot_blocks_by_id ON snapshot_blocks (first_id);\n"
    "CREATE TABLE snapshot_roots (\n"
    "  snapshot INTEGER NOT NULL,\n"
    "  object_id INTEGER,\n"
    "  kind TEXT NOT NULL,\n"
    "  flags INTEGER NOT NULL,\n"
    "  root_id INTEGER,\n"
    "  thread INTEGER DEFAULT NULL\n"
    ");\n"
    "CREATE INDEX snapshot_roots_by_object ON snapshot_roots (snapshot, object_id);\n"
    "CREATE TABLE handles (\n"
    "  id INTEGER PRIMARY KEY,\n"
    "  handle_id INTEGER NOT NULL,\n"
    "  kind TEXT NOT NULL,\n"
    "  object_id INTEGER,\n"
    "  created_after_gc INTEGER,\n"
    "  destroyed_after_gc INTEGER\n"
    ");\n"
    "CREATE INDEX handles_by_handle_id ON handles (handle_id);\n";

/* `objects` as a table: built by the first reader of a finished recording from object_chunks and
 * object_deaths (schema 4 and earlier: written by the writer; the first reader adds the last two
 * columns, NULL). first_generation: the generation the object held from first_gc on, until
 * next_gc (its next generation change; NULL: none, held until died_gc) — the first row of its
 * history, kept here because most objects never change generation: it saves a row of
 * object_generation_rows each (NULL: every generation is a row there). */
static const char store_schema_objects_table[] =
    "CREATE TABLE objects (\n"
    "  id INTEGER PRIMARY KEY,\n"
    "  type_id INTEGER NOT NULL,\n"
    "  size INTEGER NOT NULL,\n"
    "  thread INTEGER,\n"
    "  heap INTEGER,\n"
    "  first_gc INTEGER NOT NULL,\n"
    "  died_gc INTEGER,\n"
    "  first_generation INTEGER,\n"
    "  next_gc INTEGER\n"
    ");\n";

/* What `survivors`, `report` and `info` read instead of every object: object_generations
 * added up per (type, generation, first_gc, from_gc, until_gc, reset), and the objects' totals.
 * Written by the first reader of a finished file (store_history.c), which leaves the packed
 * rows as they are until a command needs the objects one by one. In a sampled recording that
 * follows its samples, est_count and est_bytes add up the objects' weights (store.h
 * STORE_SURVIVOR_SAMPLE_ON; NULL: every object counts 1), which hold before GC `reset` (the
 * first snapshot at or after the samples' interval; NULL: never reset), and object_totals.weights
 * is 1 (0: no weights written, the estimates are read from the objects). */
const char store_schema_object_spans[] =
    "CREATE TABLE object_spans (\n"
    "  type_id INTEGER NOT NULL,\n"
    "  generation INTEGER NOT NULL,\n"
    "  first_gc INTEGER NOT NULL,\n"
    "  from_gc INTEGER NOT NULL,\n"
    "  until_gc INTEGER,\n"
    "  count INTEGER NOT NULL,\n"
    "  bytes INTEGER NOT NULL,\n"
    "  reset INTEGER,\n"
    "  est_count REAL,\n"
    "  est_bytes REAL\n"
    ");\n"
    "CREATE TABLE object_totals (\n"
    "  objects INTEGER NOT NULL,\n"
    "  bytes INTEGER NOT NULL,\n"
    "  alive INTEGER NOT NULL,\n"
    "  weights INTEGER NOT NULL DEFAULT 0\n"
    ");\n";

/* A type id without a TYPE record (the collector lost it) still shows, as "<type 17>". */
#define STORE_TYPE_NAME(t, o) "coalesce(" t ".name, '<type ' || " o ".type_id || '>')"

/* survivors_by_generation: the groups `grouped` selects (gc, generation, type_id, and rn, rb:
 * objects and bytes, weighed in a sampled recording that follows its samples) rounded once per
 * GC, as the survivors command rounds them (store.h STORE_APPORTIONED_CTES). The column
 * `estimated` says which rows are estimates (1), as `survivors --json` does. */
#define SURVIVORS_BY_GENERATION_VIEW(grouped)                                                     \
    "CREATE VIEW survivors_by_generation AS\n"                                                   \
    "WITH grp AS (" grouped "),\n"                                                               \
    STORE_APPORTIONED_CTES("PARTITION BY gc", "generation, type_id") "\n"                        \
    "SELECT fit.gc AS gc, fit.generation AS generation, " STORE_TYPE_NAME("t", "fit") " AS type,\n" \
    "       n AS count, bytes,\n"                                                                 \
    "       (instr(coalesce((SELECT flags FROM run WHERE id = 1), ''), 'samples-followed') > 0\n" \
    "        AND NOT EXISTS (SELECT 1 FROM snapshots sn WHERE sn.gc = fit.gc)) AS estimated\n"   \
    "FROM fit LEFT JOIN types t ON t.id = fit.type_id;\n"

/* survivors_by_generation over object_spans, swapped in by store_history.c with the spans
 * (when they hold the weights a sampled recording's estimates need): the same rows from a few
 * rows per type and GC instead of a pass over every object per query. A span counts its
 * weights before GC `reset` and its objects from then on, as the objects' view does. */
const char store_schema_spans_views[] =
    "DROP VIEW IF EXISTS survivors_by_generation;\n"
    SURVIVORS_BY_GENERATION_VIEW(
        "SELECT g.gc AS gc, sp.generation AS generation, sp.type_id AS type_id,\n"
        "       total(CASE WHEN sp.reset <= g.gc THEN sp.count\n"
        "             ELSE coalesce(sp.est_count, sp.count) END) AS rn,\n"
        "       total(CASE WHEN sp.reset <= g.gc THEN sp.bytes\n"
        "             ELSE coalesce(sp.est_bytes, sp.bytes) END) AS rb\n"
        "FROM gcs g\n"
        "JOIN object_spans sp\n"
        "  ON sp.from_gc <= g.gc AND (sp.until_gc IS NULL OR sp.until_gc > g.gc)\n"
        "GROUP BY g.gc, sp.generation, sp.type_id");

/* object_lifetimes up to its last column (final_generation), which comes from either form of
 * the generation history. */
#define OBJECT_LIFETIMES_HEAD                                                                    \
    "CREATE VIEW object_lifetimes AS\n"                                                          \
    "SELECT o.id AS id, o.type_id AS type_id, " STORE_TYPE_NAME("t", "o") " AS type,\n"          \
    "       o.size AS size, o.thread AS thread, th.name AS thread_name, o.heap AS heap,\n"       \
    "       o.first_gc AS first_gc, o.died_gc AS died_gc,\n"                                     \
    "       max(0, coalesce(o.died_gc, coalesce((SELECT max(gc) FROM gcs), 0) + 1)\n"           \
    "              - o.first_gc) AS gcs_survived,\n"

/* Each object's generations, from the generation changes (until the first reader of the
 * finished file builds the rows): a window over every change — correct, and slower than the
 * rows. An object's first change is its chunk's generation (schema 10; chunk 0: before any
 * change of its GC in generation_changes, whose rowids start at 1). A row's ids are its first id and the gaps after it: a running sum per row gives them.
 * next_gc: the object's next change (NULL for its latest); until_gc: that, or its death.
 * Two changes of one object in one GC (never sent) leave the later one, as the rows do. */
static const char store_schema_derived_views[] =
    /* The objects rows, from the packed chunks: a running sum of the gaps per chunk gives the
     * ids; died_gc from the deaths (the first one, as the UPDATE it replaces kept). The CASTs
     * give the derived columns the table's INTEGER affinity: a join on objects.id (snapshot
     * objects, handles) then gets an automatic index instead of a scan of every object per
     * row.
     * Each running sum is ordered by j.key although json_each gives a row's entries in that
     * order: without an ORDER BY, SQLite leaves the order in which a window sees its rows
     * undefined, and another SQLite's plan could change it under a user's sqlite3.
     * A size left out (schema 11) is that of the row's first object of its type: first_sizes
     * holds, per packed row, a JSON object of type -> that size, made from the few entries
     * that have one (min(key): the first), looked up once per row by its rowid. */
    "CREATE VIEW object_death_rows AS\n"
    "SELECT CAST(sum(j.value) OVER (PARTITION BY d.rowid ORDER BY j.key)\n"
    "            AS INTEGER) AS object_id,\n"
    "       d.gc AS gc\n"
    "FROM object_deaths d CROSS JOIN json_each(d.ids) j;\n"
    "\n"
    "CREATE VIEW objects AS\n"
    "WITH first_sizes AS MATERIALIZED (\n"
    "  SELECT k.rowid AS chunk,\n"
    "         (SELECT json_group_object(t, s)\n"
    "          FROM (SELECT e.value ->> 1 AS t, e.value ->> 2 AS s, min(e.key)\n"
    "                FROM json_each(k.objects) e WHERE e.value ->> 2 IS NOT NULL GROUP BY 1))\n"
    "         AS sizes\n"
    "  FROM object_chunks k)\n"
    "SELECT o.id AS id, o.type_id AS type_id, o.size AS size, o.thread AS thread, o.heap AS heap,\n"
    "       o.first_gc AS first_gc, d.gc AS died_gc, NULL AS first_generation,\n"
    "       NULL AS next_gc\n"
    "FROM (SELECT CAST(sum(j.value ->> 0) OVER (PARTITION BY c.rowid ORDER BY j.key)\n"
    "                  AS INTEGER) AS id,\n"
    "             CAST(j.value ->> 1 AS INTEGER) AS type_id,\n"
    "             CAST(coalesce(j.value ->> 2, f.sizes ->> ('$.\"' || (j.value ->> 1) || '\"'))\n"
    "                  AS INTEGER) AS size,\n"
    "             c.thread AS thread,\n"
    "             c.heap AS heap, c.gc AS first_gc\n"
    "      FROM object_chunks c LEFT JOIN first_sizes f ON f.chunk = c.rowid\n"
    "      CROSS JOIN json_each(c.objects) j) o\n"
    "LEFT JOIN (SELECT object_id, min(gc) AS gc FROM object_death_rows GROUP BY object_id) d\n"
    "  ON d.object_id = o.id;\n"
    "\n"
    "CREATE VIEW generation_change_rows AS\n"
    "SELECT c.object_id AS object_id, c.generation AS generation, c.from_gc AS from_gc,\n"
    "       c.chunk AS chunk, c.nth AS nth,\n"
    "       lead(c.from_gc) OVER w AS next_gc,\n"
    "       coalesce(lead(c.from_gc) OVER w, o.died_gc) AS until_gc\n"
    "FROM (SELECT CAST(sum(j.value ->> 0) OVER (PARTITION BY k.rowid ORDER BY j.key)\n"
    "                  AS INTEGER) AS object_id,\n"
    "             k.generation AS generation, k.gc AS from_gc, 0 AS chunk, j.key AS nth\n"
    "      FROM object_chunks k CROSS JOIN json_each(k.objects) j\n"
    "      UNION ALL\n"
    "      SELECT CAST(sum(j.value) OVER (PARTITION BY g.rowid ORDER BY j.key)\n"
    "                  AS INTEGER) AS object_id,\n"
    "             g.generation AS generation, g.gc AS from_gc, g.rowid AS chunk, j.key AS nth\n"
    "      FROM generation_changes g CROSS JOIN json_each(g.ids) j) c\n"
    "JOIN objects o ON o.id = c.object_id\n"
    "WINDOW w AS (PARTITION BY c.object_id ORDER BY c.from_gc, c.chunk, c.nth);\n"
    "\n"
    "CREATE VIEW object_generations AS\n"
    "SELECT object_id, generation, from_gc, until_gc FROM generation_change_rows;\n"
    "\n"
    /* Every object has a change (its first generation is written with its row), so the
     * latest changes, in one pass, find every object by its key (CROSS JOIN keeps that order:
     * the other one would scan the derived rows once per object). */
    OBJECT_LIFETIMES_HEAD
    "       f.generation AS final_generation\n"
    "FROM (SELECT object_id, generation FROM generation_change_rows WHERE next_gc IS NULL) f\n"
    "CROSS JOIN objects o ON o.id = f.object_id\n"
    "LEFT JOIN types t ON t.id = o.type_id\n"
    "LEFT JOIN threads th ON th.os_tid = o.thread;\n";

/* The same views over the built rows (store_schema_use_history_rows swaps them in). */
static const char store_schema_final_views[] =
    "DROP VIEW object_lifetimes;\n"
    "DROP VIEW object_generations;\n"
    "DROP VIEW generation_change_rows;\n"
    /* An object's first row is in its objects row (first_generation), the later ones in
     * object_generation_rows (all of them when first_generation is NULL). */
    "CREATE VIEW object_generations AS\n"
    "SELECT id AS object_id, first_generation AS generation, first_gc AS from_gc,\n"
    "       coalesce(next_gc, died_gc) AS until_gc\n"
    "FROM objects WHERE first_generation IS NOT NULL\n"
    "UNION ALL\n"
    "SELECT object_id, generation, from_gc, until_gc FROM object_generation_rows;\n"
    "\n"
    OBJECT_LIFETIMES_HEAD
    "       coalesce(f.generation, o.first_generation) AS final_generation\n"
    "FROM objects o\n"
    "LEFT JOIN types t ON t.id = o.type_id\n"
    "LEFT JOIN threads th ON th.os_tid = o.thread\n"
    /* Each object's latest row (SQLite: a bare column next to max() comes from the row that
     * holds the max), in one pass over the rows, joined through an automatic index. */
    "LEFT JOIN (SELECT object_id, generation, max(from_gc) FROM object_generation_rows\n"
    "           GROUP BY object_id) f ON f.object_id = o.id;\n";

static const char store_schema_views[] =
    /* Schema 7's table as a view of snapshot_blocks, in SQL alone (plain sqlite3 reads it): per
     * block and snapshot, json_each(ids) gives the objects; the window sums undo the deltas
     * (ids; each object's first target from the previous one's), and each object's own array
     * the rest. heaplens reads the blocks itself (store_snapview.c, snapshot_graph.c). */
    "CREATE VIEW snapshot_objects AS\n"
    "SELECT snapshot, object_id,\n"
    "       CASE WHEN kind % 8 < 6 THEN kind % 8 END AS generation, kind / 8 AS flags,\n"
    "       CASE WHEN typeof(r) = 'text' THEN\n"
    "         (SELECT json_group_array(t0 + d) FROM\n"
    "            (SELECT sum(CASE WHEN key > 0 THEN value ELSE 0 END) OVER (ORDER BY key) AS d\n"
    "             FROM json_each(r)))\n"
    "       END AS refs,\n"
    "       CASE WHEN typeof(f) = 'text' THEN\n"
    "         (SELECT json_group_array(CASE WHEN type != 'null' THEN d END) FROM\n"
    "            (SELECT type, sum(value) OVER (ORDER BY key) AS d FROM json_each(f)))\n"
    "       END AS fields\n"
    "FROM (SELECT s.snapshot AS snapshot, b.first_id + sum(i.value) OVER w AS object_id,\n"
    "             unicode(substr(b.kinds, i.key + 1, 1)) - 48 AS kind,\n"
    "             json_extract(b.refs, '$[' || i.key || ']') AS r,\n"
    "             json_extract(b.fields, '$[' || i.key || ']') AS f,\n"
    "             b.first_id + sum(json_extract(b.refs, '$[' || i.key || '][0]')) OVER w AS t0\n"
    "      FROM snapshots s\n"
    "      JOIN snapshot_blocks b\n"
    "        ON b.last_snapshot >= s.snapshot AND b.first_snapshot <= s.snapshot,\n"
    "           json_each(b.ids) i\n"
    "      WINDOW w AS (PARTITION BY s.snapshot, b.first_id ORDER BY i.key));\n"
    "CREATE VIEW gc_summary AS\n"
    "SELECT g.gc, g.generation, g.reason, g.induced, g.compacting, g.start_ns, g.end_ns,\n"
    "       g.pause_ns, g.survived_bytes, g.moved_bytes, g.first_object_id, g.objects_live,\n"
    "       g.incomplete, g.roots, g.pinned_roots, g.census_ns, g.census_objects,\n"
    "       g.snapshot_skipped,\n"
    "       g0.size_before AS gen0_before, g0.size_after AS gen0_after,\n"
    "       g1.size_before AS gen1_before, g1.size_after AS gen1_after,\n"
    "       g2.size_before AS gen2_before, g2.size_after AS gen2_after,\n"
    "       g3.size_before AS loh_before, g3.size_after AS loh_after,\n"
    "       g4.size_before AS poh_before, g4.size_after AS poh_after\n"
    "FROM gcs g\n"
    "LEFT JOIN gc_generations g0 ON g0.gc = g.gc AND g0.generation = 0\n"
    "LEFT JOIN gc_generations g1 ON g1.gc = g.gc AND g1.generation = 1\n"
    "LEFT JOIN gc_generations g2 ON g2.gc = g.gc AND g2.generation = 2\n"
    "LEFT JOIN gc_generations g3 ON g3.gc = g.gc AND g3.generation = 3\n"
    "LEFT JOIN gc_generations g4 ON g4.gc = g.gc AND g4.generation = 4;\n"
    "\n"
    "CREATE VIEW allocations_by_type AS\n"
    "SELECT " STORE_TYPE_NAME("t", "a") " AS type, sum(a.count) AS count, sum(a.bytes) AS bytes\n"
    "FROM alloc_counts a LEFT JOIN types t ON t.id = a.type_id\n"
    "GROUP BY a.type_id;\n"
    "\n"
    "CREATE VIEW allocations_by_type_thread AS\n"
    "SELECT " STORE_TYPE_NAME("t", "a") " AS type, a.thread AS thread, th.name AS thread_name,\n"
    "       sum(a.count) AS count, sum(a.bytes) AS bytes, sum(a.survived) AS survived,\n"
    "       sum(a.survived_bytes) AS survived_bytes\n"
    "FROM alloc_counts a LEFT JOIN types t ON t.id = a.type_id\n"
    "LEFT JOIN threads th ON th.os_tid = a.thread\n"
    "GROUP BY a.type_id, a.thread;\n"
    "\n"
    "CREATE VIEW live_objects AS\n"
    "SELECT g.gc AS gc, og.object_id AS object_id, " STORE_TYPE_NAME("t", "o") " AS type,\n"
    "       o.size AS size, og.generation AS generation, o.thread AS thread\n"
    "FROM gcs g\n"
    "JOIN object_generations og\n"
    "  ON og.from_gc <= g.gc AND (og.until_gc IS NULL OR og.until_gc > g.gc)\n"
    "JOIN objects o ON o.id = og.object_id\n"
    "LEFT JOIN types t ON t.id = o.type_id;\n"
    "\n"
    /* Sampled recordings that follow their samples: estimates between snapshots, each
     * sampled object weighted (store.h STORE_SURVIVOR_SAMPLE_ON); counts 1 otherwise. */
    SURVIVORS_BY_GENERATION_VIEW(
        "SELECT g.gc AS gc, og.generation AS generation, o.type_id AS type_id,\n"
        "       total(coalesce(s.est_count, 1)) AS rn,\n"
        "       total(coalesce(s.est_count, 1) * o.size) AS rb\n"
        "FROM gcs g\n"
        "JOIN object_generations og\n"
        "  ON og.from_gc <= g.gc AND (og.until_gc IS NULL OR og.until_gc > g.gc)\n"
        "JOIN objects o ON o.id = og.object_id\n"
        "LEFT JOIN alloc_samples s ON " STORE_SURVIVOR_SAMPLE_ON("s", "o", "g.gc") "\n"
        "GROUP BY g.gc, og.generation, o.type_id")
    "\n"
    /* A handle is alive after GC g when created_after_gc < g (created before g began; NULL:
     * before the collector could see it) and destroyed_after_gc is NULL or >= g. */
    "CREATE VIEW snapshot_handles AS\n"
    "SELECT r.snapshot AS snapshot, s.gc AS gc, r.root_id AS handle_id,\n"
    "       CASE WHEN r.flags & 1 THEN 'pinned' WHEN r.flags & 8 THEN 'refcounted'\n"
    "            WHEN r.flags & 2 THEN 'weak' ELSE 'strong' END AS kind,\n"
    "       r.object_id AS object_id, r.flags AS flags, h.id AS handle,\n"
    "       h.created_after_gc AS created_after_gc\n"
    "FROM snapshot_roots r\n"
    "JOIN snapshots s ON s.snapshot = r.snapshot\n"
    "LEFT JOIN handles h ON h.handle_id = r.root_id\n"
    "  AND coalesce(h.created_after_gc, 0) < s.gc\n"
    "  AND (h.destroyed_after_gc IS NULL OR h.destroyed_after_gc >= s.gc)\n"
    "WHERE r.kind = 'handle';\n"
    "\n"
    "CREATE VIEW strong_handles_never_freed AS\n"
    "SELECT h.id AS handle, h.handle_id AS handle_id, h.object_id AS object_id,\n"
    "       " STORE_TYPE_NAME("t", "o") " AS type, o.size AS size,\n"
    "       h.created_after_gc AS created_after_gc\n"
    "FROM handles h\n"
    "LEFT JOIN objects o ON o.id = h.object_id\n"
    "LEFT JOIN types t ON t.id = o.type_id\n"
    "WHERE h.kind = 'strong' AND h.destroyed_after_gc IS NULL;\n"
    "\n"
    "CREATE VIEW stack_text AS\n"
    "SELECT sf.stack_id AS stack_id, group_concat(f.name, ' <- ') AS innermost_first\n"
    "FROM (SELECT stack_id, position, frame_id FROM stack_frames ORDER BY stack_id, position) sf\n"
    "JOIN frames f ON f.id = sf.frame_id\n"
    "GROUP BY sf.stack_id;\n"
    "\n"
    "CREATE VIEW stack_folded AS\n"
    "SELECT sf.stack_id AS stack_id, group_concat(f.name, ';') AS folded\n"
    "FROM (SELECT stack_id, position, frame_id FROM stack_frames\n"
    "      ORDER BY stack_id, position DESC) sf\n"
    "JOIN frames f ON f.id = sf.frame_id\n"
    "GROUP BY sf.stack_id;\n"
    "\n"
    "CREATE VIEW allocation_estimates_by_type AS\n"
    "SELECT coalesce(t.name, '<type ' || s.type_id || '>') AS type, sum(s.est_count) AS est_count,\n"
    "       sum(s.est_bytes) AS est_bytes, count(*) AS samples\n"
    "FROM alloc_samples s LEFT JOIN types t ON t.id = s.type_id\n"
    "GROUP BY s.type_id;\n"
    "\n"
    "CREATE VIEW pinned_handles_per_gc AS\n"
    "SELECT g.gc AS gc, h.id AS handle, h.handle_id AS handle_id, h.object_id AS object_id,\n"
    "       h.created_after_gc AS created_after_gc, h.destroyed_after_gc AS destroyed_after_gc\n"
    "FROM gcs g\n"
    "JOIN handles h ON h.kind = 'pinned' AND coalesce(h.created_after_gc, 0) < g.gc\n"
    "  AND (h.destroyed_after_gc IS NULL OR h.destroyed_after_gc >= g.gc);\n"
    /* ---- helper "estimates" (issue 11): allocations per type and thread, exact or estimated.
     * Without ObjectAllocated (run.mode 'sampled', 'attach') alloc_counts holds the allocations
     * the runtime still reports (LOH; POH in sampled mode) and the census's exact small-object
     * counts per type, without threads: this view spreads those over the threads by their
     * samples and adds the samples of what no census counted (STORE_ALLOCATIONS_SPREAD_SQL),
     * the same figures as `heaplens allocations --thread` (query/estimates.c). In a full
     * recording it is alloc_counts, exact (samples 0). */
    "\n"
    "CREATE VIEW allocations_estimated_by_type_thread AS\n"
    "SELECT coalesce(t.name, '<type ' || a.type_id || '>') AS type, a.thread AS thread,\n"
    "       th.name AS thread_name, sum(a.count) AS count, sum(a.bytes) AS bytes,\n"
    "       sum(a.sampled) AS samples\n"
    "FROM (" STORE_ALLOCATIONS_SPREAD_SQL ") a\n"
    "LEFT JOIN types t ON t.id = a.type_id\n"
    "LEFT JOIN threads th ON th.os_tid = a.thread\n"
    "GROUP BY a.type_id, a.thread;\n";

/* The views over snapshot_objects: created in the file after it (schema 8: a view), and again
 * as TEMP views on heaplens' own connections (store_snapview.c), where snapshot_objects is the
 * virtual table. */
const char store_schema_snapshot_views[] =
    /* A row per reference, as the references were stored before they moved into
     * snapshot_objects.refs. nth tells apart two fields of from_id pointing to the same to_id;
     * a filter on snapshot and from_id (PARTITION BY columns) is pushed down to the key. */
    "CREATE VIEW snapshot_refs AS\n"
    "SELECT snapshot, from_id, to_id,\n"
    "       row_number() OVER (PARTITION BY snapshot, from_id, to_id ORDER BY field) - 1 AS nth\n"
    "FROM (SELECT so.snapshot AS snapshot, so.object_id AS from_id, j.value AS to_id,\n"
    "             j.key AS field\n"
    "      FROM snapshot_objects so, json_each(so.refs) j WHERE so.refs IS NOT NULL);\n"
    /* A row per reference with the field that holds it (snapshot_objects.fields) and its name:
     * `fields` for objects, "[index]" for arrays. Its own view, so that snapshot_refs stays
     * as cheap as it was: the element of `fields` is looked up per reference (quadratic in a
     * large array's length). */
    "CREATE VIEW snapshot_ref_fields AS\n"
    "SELECT r.snapshot, r.from_id, r.to_id,\n"
    "       row_number() OVER (PARTITION BY r.snapshot, r.from_id, r.to_id ORDER BY r.k) - 1\n"
    "         AS nth, r.field,\n"
    "       CASE WHEN r.field IS NULL THEN NULL\n"
    "            WHEN t.flags & 1 THEN '[' || r.field || ']'\n"
    "            ELSE f.name END AS name\n"
    "FROM " STORE_REF_FIELDS_SOURCE " r\n"
    "LEFT JOIN objects o ON o.id = r.from_id\n"
    "LEFT JOIN types t ON t.id = o.type_id\n"
    "LEFT JOIN fields f ON f.type_id = o.type_id AND f.field = r.field;\n"
    "\n"
    "CREATE VIEW snapshot_contents AS\n"
    "SELECT so.snapshot AS snapshot, s.gc AS gc, so.object_id AS object_id,\n"
    "       " STORE_TYPE_NAME("t", "o") " AS type, o.size AS size,\n"
    "       so.generation AS generation, (so.flags & 1) != 0 AS frozen,\n"
    "       (so.flags & 2) != 0 AS discovered, o.thread AS thread, th.name AS thread_name\n"
    "FROM snapshot_objects so\n"
    "JOIN snapshots s ON s.snapshot = so.snapshot\n"
    "LEFT JOIN objects o ON o.id = so.object_id\n"
    "LEFT JOIN types t ON t.id = o.type_id\n"
    "LEFT JOIN threads th ON th.os_tid = o.thread;\n"
    "\n"
    ;

gboolean store_sql_fail(sqlite3 *db, const char *path, const char *what, GError **error)
{
    g_set_error(error, STORE_ERROR, STORE_ERROR_SQLITE, "%s: %s: %s", path, what,
                db != NULL ? sqlite3_errmsg(db) : "out of memory");
    return FALSE;
}

void store_sql_set_error(sqlite3 *db, const char *path, int rc, const char *msg, GError **error)
{
    int primary = rc & 0xff;
    int sys = db != NULL ? sqlite3_system_errno(db) : 0;
    /* "disk I/O error" alone does not say which: the errno of the failed write does (EFBIG,
     * EIO, ENOSPC). */
    gboolean io = primary == SQLITE_FULL || primary == SQLITE_IOERR;
    g_set_error(error, STORE_ERROR, io ? STORE_ERROR_IO : STORE_ERROR_SQLITE, "%s: %s%s%s%s", path,
                msg != NULL ? msg : sqlite3_errstr(rc), io && sys != 0 ? " (" : "",
                io && sys != 0 ? g_strerror(sys) : "", io && sys != 0 ? ")" : "");
}

gboolean store_sql_exec(sqlite3 *db, const char *path, const char *sql, GError **error)
{
    char *msg = NULL;
    int rc = sqlite3_exec(db, sql, NULL, NULL, &msg);
    if (rc != SQLITE_OK) {
        store_sql_set_error(db, path, db != NULL ? sqlite3_extended_errcode(db) : rc, msg, error);
        sqlite3_free(msg);
        return FALSE;
    }
    return TRUE;
}

gboolean store_schema_create(sqlite3 *db, const char *path, GError **error)
{
    g_autofree char *ids = g_strdup_printf("PRAGMA application_id = %d;\n"
                                           "PRAGMA user_version = %d;\n",
                                           (int)STORE_APPLICATION_ID, STORE_SCHEMA_VERSION);
    gboolean ok = FALSE;

    if (!store_sql_exec(db, path, store_schema_pragmas, error) ||
        !store_schema_connect(db, path, error))
        goto out;
    if (!store_sql_exec(db, path, "BEGIN", error))
        goto out;
    if (!store_sql_exec(db, path, store_schema_tables, error) ||
        !store_sql_exec(db, path, store_schema_derived_views, error) ||
        !store_sql_exec(db, path, store_schema_views, error) ||
        !store_sql_exec(db, path, store_schema_snapshot_views, error) ||
        !store_sql_exec(db, path, ids, error)) {
        sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
        goto out;
    }
    if (!store_sql_exec(db, path, "COMMIT", error))
        goto out;
    ok = TRUE;
out:
    return ok;
}

gboolean store_schema_connect(sqlite3 *db, const char *path, GError **error)
{
    return store_sql_exec(db, path, store_schema_connection_pragmas, error);
}

gboolean store_schema_image_write(int fd, const char *path, GError **error)
{
    const store_image *image = &store_schema_image;
    /* One write of the whole file: its zeros filled in here, not stored in heaplens. */
    g_autofree unsigned char *file = g_malloc0(image->size);
    const unsigned char *bytes = image->bytes;
    for (size_t i = 0; i < image->n_runs; i++) {
        memcpy(file + image->runs[i].offset, bytes, image->runs[i].length);
        bytes += image->runs[i].length;
    }
    for (size_t done = 0; done < image->size;) {
        ssize_t n = write(fd, file + done, image->size - done);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            g_set_error(error, STORE_ERROR, STORE_ERROR_IO, "cannot create %s: %s", path,
                        g_strerror(n < 0 ? errno : ENOSPC));
            return FALSE;
        }
        done += (size_t)n;
    }
    return TRUE;
}

gboolean store_schema_use_object_rows(sqlite3 *db, const char *path, GError **error)
{
    return store_sql_exec(db, path,
                          "DELETE FROM object_chunks; DELETE FROM object_deaths;\n"
                          "DROP VIEW objects; DROP VIEW object_death_rows;\n",
                          error) &&
           store_sql_exec(db, path, store_schema_objects_table, error);
}

gboolean store_schema_use_history_rows(sqlite3 *db, const char *path, GError **error)
{
    return store_sql_exec(db, path, "DELETE FROM generation_changes", error) &&
           store_sql_exec(db, path, store_schema_final_views, error);
}

gboolean store_db_unrecorded_add(const char *path, const store_unrecorded *list, size_t n,
                                 GError **error)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *insert = NULL;
    gboolean ok = FALSE;

    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK) {
        store_sql_fail(db, path, "cannot open", error);
        goto out;
    }
    sqlite3_extended_result_codes(db, 1);
    sqlite3_busy_timeout(db, 2000);
    /* A file of schema 4 recorded before the table existed gets it. */
    if (!store_sql_exec(db, path, "BEGIN IMMEDIATE", error) ||
        !store_sql_exec(db, path,
                        "CREATE TABLE IF NOT EXISTS unrecorded_processes (pid INTEGER NOT NULL, "
                        "command TEXT NOT NULL)", error))
        goto out;
    if (sqlite3_prepare_v2(db, "INSERT INTO unrecorded_processes (pid, command) VALUES (?1, ?2)",
                           -1, &insert, NULL) != SQLITE_OK) {
        store_sql_fail(db, path, "cannot prepare", error);
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        sqlite3_bind_int64(insert, 1, list[i].pid);
        sqlite3_bind_text(insert, 2, list[i].command ? list[i].command : "", -1, SQLITE_STATIC);
        int rc = sqlite3_step(insert);
        sqlite3_reset(insert);
        if (rc != SQLITE_DONE) {
            store_sql_set_error(db, path, sqlite3_extended_errcode(db), NULL, error);
            goto out;
        }
    }
    ok = store_sql_exec(db, path, "COMMIT", error);
out:
    sqlite3_finalize(insert);
    if (!ok && db)
        sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
    sqlite3_close(db);
    return ok;
}

int64_t store_db_pragma_int(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st = NULL;
    int64_t v = -1;
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

int64_t store_db_objects_count(sqlite3 *db)
{
    return store_db_pragma_int(db, "SELECT type = 'view' FROM sqlite_schema WHERE name = 'objects'") == 1
               ? store_db_pragma_int(db, "SELECT coalesce(sum(count), 0) FROM object_chunks")
               : store_db_pragma_int(db, "SELECT count(*) FROM objects");
}

/* The file of `db` as its header and inode say: its modification time and the file change
 * counter (header offset 24). */
typedef struct store_db_file {
    int64_t mtime_ns;
    uint32_t counter;
    gboolean rollback; /* header bytes 18-19: 1, rollback-journal mode (WAL: 2) */
} store_db_file;

/* Reads them for `db`: the header through SQLite's own handle of the file, the time by its path;
 * FALSE when they cannot be read (no path: in memory). Never through a descriptor of our own:
 * its close() would drop every POSIX lock this process holds on the file, SQLite's included (the
 * write transaction's RESERVED lock), and let another command write into it at the same time. */
static gboolean store_db_file_read(sqlite3 *db, store_db_file *f)
{
    const char *path = sqlite3_db_filename(db, "main");
    sqlite3_file *file = NULL;
    unsigned char head[28];
    struct stat st;
    if (path == NULL || *path == '\0' || stat(path, &st) != 0 || !S_ISREG(st.st_mode) ||
        sqlite3_file_control(db, "main", SQLITE_FCNTL_FILE_POINTER, &file) != SQLITE_OK ||
        file == NULL || file->pMethods == NULL ||
        file->pMethods->xRead(file, head, sizeof head, 0) != SQLITE_OK)
        return FALSE;
    f->mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
    f->counter = (uint32_t)head[24] << 24 | (uint32_t)head[25] << 16 | (uint32_t)head[26] << 8 |
                 head[27];
    f->rollback = head[18] == 1 && head[19] == 1;
    return TRUE;
}

/* Whether the file's note (table file_check, store_db_commit_sound) says that it was found
 * intact and is unchanged since: its counter and modification time are the ones noted. */
static gboolean store_db_sound_noted(sqlite3 *db, const store_db_file *f)
{
    sqlite3_stmt *st = NULL;
    gboolean noted = FALSE;
    /* no table (a file no heaplens checked, or an older one's): not noted */
    if (sqlite3_prepare_v2(db, "SELECT counter, mtime_ns FROM main.file_check LIMIT 2", -1, &st,
                           NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW) {
        noted = sqlite3_column_type(st, 0) == SQLITE_INTEGER &&
                sqlite3_column_type(st, 1) == SQLITE_INTEGER &&
                sqlite3_column_int64(st, 0) == (int64_t)f->counter &&
                sqlite3_column_int64(st, 1) == f->mtime_ns;
        noted = noted && sqlite3_step(st) == SQLITE_DONE; /* one row, or it is not ours */
    }
    sqlite3_finalize(st);
    return noted;
}

char *store_db_damage_new(sqlite3 *db, store_db_check *check)
{
    sqlite3_stmt *st = NULL;
    char *damage = NULL;
    store_db_file f;
    store_db_check seen = {0};
    /* In WAL mode commits leave the counter as it was: a note cannot tell that nothing changed. */
    if (store_db_file_read(db, &f) && f.rollback) {
        seen.counted = TRUE;
        seen.counter = f.counter;
    }
    if (check)
        *check = seen;
    /* Found intact by an earlier heaplens command, and changed by nobody since. */
    if (seen.counted && store_db_sound_noted(db, &f))
        return NULL;
    if (sqlite3_prepare_v2(db, "PRAGMA quick_check(1)", -1, &st, NULL) != SQLITE_OK ||
        sqlite3_step(st) != SQLITE_ROW) {
        damage = g_strdup(sqlite3_errmsg(db));
    } else {
        const char *verdict = (const char *)sqlite3_column_text(st, 0);
        if (!verdict || strcmp(verdict, "ok") != 0)
            damage = g_strdup(verdict ? verdict : "quick_check failed");
    }
    sqlite3_finalize(st);
    return damage;
}

/* How far back store_db_commit_sound sets the modification time: any later write to the file,
 * SQLite's or anybody's, sets it to its own time, never to that one (also on a file system that
 * keeps whole seconds, or two). */
#define STORE_SOUND_MTIME_BACK_NS INT64_C(10000000000)

gboolean store_db_commit_sound(sqlite3 *db, const store_db_check *check)
{
    struct timespec now;
    int64_t mtime_ns = 0;
    sqlite3_stmt *st = NULL;
    gboolean note = check != NULL && check->counted && clock_gettime(CLOCK_REALTIME, &now) == 0;
    if (note) {
        mtime_ns = (int64_t)now.tv_sec * 1000000000 + now.tv_nsec - STORE_SOUND_MTIME_BACK_NS;
        /* the counter this commit leaves: one more than when the transaction began */
        if (sqlite3_exec(db,
                         "CREATE TABLE IF NOT EXISTS main.file_check (counter INTEGER NOT NULL,"
                         " mtime_ns INTEGER NOT NULL, producer TEXT); DELETE FROM main.file_check",
                         NULL, NULL, NULL) != SQLITE_OK ||
            sqlite3_prepare_v2(db, "INSERT INTO main.file_check VALUES (?1, ?2, ?3)", -1, &st,
                               NULL) != SQLITE_OK)
            goto fail;
        sqlite3_bind_int64(st, 1, (int64_t)(uint32_t)(check->counter + 1));
        sqlite3_bind_int64(st, 2, mtime_ns);
        sqlite3_bind_text(st, 3, "heaplens " HEAPLENS_VERSION, -1, SQLITE_STATIC);
        if (sqlite3_step(st) != SQLITE_DONE)
            goto fail;
        sqlite3_finalize(st);
        st = NULL;
    }
    if (sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
        return FALSE;
    if (!note)
        return TRUE;
    /* The modification time noted, set while a read transaction keeps other writers out: only
     * if the file is still the one this commit left (its counter the one noted). A file whose
     * time cannot be set keeps its own, and the next writer checks it. */
    store_db_file f;
    if (sqlite3_exec(db, "BEGIN; SELECT count(*) FROM main.file_check", NULL, NULL, NULL) ==
            SQLITE_OK &&
        store_db_file_read(db, &f) && f.rollback && f.counter == (uint32_t)(check->counter + 1)) {
        const struct timespec times[2] = {
            {.tv_sec = 0, .tv_nsec = UTIME_OMIT},
            {.tv_sec = mtime_ns / 1000000000, .tv_nsec = mtime_ns % 1000000000},
        };
        /* the owner's right: anybody else's file keeps its time */
        (void)utimensat(AT_FDCWD, sqlite3_db_filename(db, "main"), times, 0);
    }
    sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
    return TRUE;
fail:
    sqlite3_finalize(st);
    return FALSE;
}

/* Checks that `path` is a readable regular file starting with the SQLite header (O_NONBLOCK: a
 * FIFO swapped in after the stat is not waited on either); *wal: its header says WAL mode (the
 * file format's read and write versions 2). */
static gboolean store_db_check_file(const char *path, gboolean *wal, GError **error)
{
    static const char sqlite_magic[16] = "SQLite format 3";
    unsigned char head[20];
    struct stat st;
    gboolean ok = FALSE;
    int fd = -1;

    if (!*path) { /* it said "heaplens:  does not exist" */
        g_set_error(error, STORE_ERROR, STORE_ERROR_IO,
                    "'' (empty) names no file: give the path of a recording");
        goto out;
    }
    if (stat(path, &st) != 0) {
        if (errno == ENOENT)
            g_set_error(error, STORE_ERROR, STORE_ERROR_IO, "%s does not exist", path);
        else
            g_set_error(error, STORE_ERROR, STORE_ERROR_IO, "%s: %s", path, g_strerror(errno));
        goto out;
    }
    if (S_ISDIR(st.st_mode)) {
        g_set_error(error, STORE_ERROR, STORE_ERROR_IO, "%s is a directory, not a heaplens database",
                    path);
        goto out;
    }
    /* A FIFO, a device or a socket is never a recording, and opening one may wait forever. */
    if (!S_ISREG(st.st_mode)) {
        g_set_error(error, STORE_ERROR, STORE_ERROR_IO,
                    "%s is not a regular file (%s), not a heaplens database", path,
                    S_ISFIFO(st.st_mode)  ? "a FIFO"
                    : S_ISSOCK(st.st_mode) ? "a socket"
                    : S_ISCHR(st.st_mode)  ? "a character device"
                    : S_ISBLK(st.st_mode)  ? "a block device"
                                           : "a special file");
        goto out;
    }
    fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
        g_set_error(error, STORE_ERROR, STORE_ERROR_IO, "%s: %s", path, g_strerror(errno));
        goto out;
    }
    ssize_t n;
    do
        n = read(fd, head, sizeof head);
    while (n < 0 && errno == EINTR);
    if (n < 0) {
        g_set_error(error, STORE_ERROR, STORE_ERROR_IO, "%s: %s", path, g_strerror(errno));
        goto out;
    }
    if (n < (ssize_t)sizeof sqlite_magic || memcmp(head, sqlite_magic, sizeof sqlite_magic) != 0) {
        g_set_error(error, STORE_ERROR, STORE_ERROR_IO,
                    "%s is not a heaplens database (not an SQLite file)", path);
        goto out;
    }
    *wal = n == (ssize_t)sizeof head && head[18] == 2 && head[19] == 2;
    ok = TRUE;
out:
    if (fd >= 0)
        close(fd);
    return ok;
}

/* A recording left in WAL mode (a reader kept it open when it ended: store_writer_finish) made
 * into one self-contained file again by the first read once nobody else has it open: the last
 * GCs are in `path`-wal until then, and a read-only connection never copies them. Best effort:
 * refused at once while another connection is open (the writer of a recording in progress, a
 * user's sqlite3) or when this user may not write the file; it stays in WAL mode, whole. */
static gboolean store_db_may_leave_wal(const char *path)
{
    g_autofree char *dir = g_path_get_dirname(path);
    return access(path, W_OK) == 0 && access(dir, W_OK) == 0;
}

static void store_db_leave_wal(const char *path)
{
    sqlite3 *db = NULL;
    if (!store_db_may_leave_wal(path))
        return;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) == SQLITE_OK)
        sqlite3_exec(db, "PRAGMA journal_mode = DELETE", NULL, NULL, NULL);
    sqlite3_close(db);
}

static gboolean store_db_in_wal(sqlite3 *db)
{
    sqlite3_stmt *st = NULL;
    gboolean wal = sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &st, NULL) == SQLITE_OK &&
                   sqlite3_step(st) == SQLITE_ROW &&
                   g_strcmp0((const char *)sqlite3_column_text(st, 0), "wal") == 0;
    sqlite3_finalize(st);
    return wal;
}

/* A file in WAL mode that nobody has open: no -shm (each connection to a file in WAL mode keeps
 * one until the last closes, and a writer killed leaves it), and no -wal or an empty one, so the
 * main file holds every page. A read-only connection to it would create an empty -wal and -shm
 * beside it (SQLite cannot delete them without writing), so such a file this user may not write
 * is read as immutable instead: no lock, no file created. Never a live recording's: its writer
 * keeps the -shm. */
static gboolean store_db_wal_quiet(const char *path)
{
    g_autofree char *wal = g_strconcat(path, "-wal", NULL);
    g_autofree char *shm = g_strconcat(path, "-shm", NULL);
    struct stat st;
    if (lstat(shm, &st) == 0 || errno != ENOENT)
        return FALSE;
    if (lstat(wal, &st) != 0)
        return errno == ENOENT;
    return S_ISREG(st.st_mode) && st.st_size == 0;
}

/* Rolls back the transaction a program that died left in `path`-journal (a hot journal): what
 * SQLite does at the first read of a connection that may write. The file is as its last commit
 * left it, whoever wrote it; a journal of a live writer is no hot journal (it holds its lock).
 * Fails in one line when this user may not write the file or its directory. */
static gboolean store_db_roll_back(const char *path, GError **error)
{
    sqlite3 *rw = NULL;
    gboolean ok = store_db_may_leave_wal(path) &&
                  sqlite3_open_v2(path, &rw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX,
                                  NULL) == SQLITE_OK &&
                  sqlite3_busy_timeout(rw, 2000) == SQLITE_OK &&
                  sqlite3_exec(rw, "SELECT count(*) FROM sqlite_schema", NULL, NULL, NULL) ==
                      SQLITE_OK;
    sqlite3_close(rw);
    if (!ok)
        g_set_error(error, STORE_ERROR, STORE_ERROR_SQLITE,
                    "%s-journal holds a transaction a program that was killed left unfinished, "
                    "which only a program that may write %s rolls back (the file's owner: "
                    "heaplens info %s)",
                    path, path, path);
    return ok;
}

/* The query parameter that keeps, on a connection, the file's name as the user gave it
 * (store_db_name): SQLite knows the file by its full path, and keeps the parameters of the URI it
 * was opened by beside it (sqlite3_uri_parameter of sqlite3_db_filename). SQLite and its VFS
 * ignore a parameter they do not know. */
#define STORE_DB_NAME_PARAMETER "heaplens_name"

/* Opens `path` read-only, by a URI that keeps `name` (store_db_name) and asks for immutable. */
static sqlite3 *store_db_open_readonly_once(const char *path, const char *name,
                                            gboolean immutable, GError **error)
{
    sqlite3 *db = NULL;
    g_autofree char *escaped = g_uri_escape_string(path, "/", FALSE);
    g_autofree char *escaped_name = g_uri_escape_string(name, NULL, FALSE);
    g_autofree char *uri =
        g_strconcat("file:", path[0] == '/' ? "//" : "", escaped, "?" STORE_DB_NAME_PARAMETER "=",
                    escaped_name, immutable ? "&immutable=1" : "", NULL);
    /* NOMUTEX: a command's connection serves one thread (the loader's second reader opens its
     * own); serialized, every sqlite3_column_* took the connection's mutex, 5-9% of the CPU of
     * reading a 5M-object snapshot row by row */
    if (sqlite3_open_v2(uri, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_URI,
                        NULL) != SQLITE_OK) {
        store_sql_fail(db, name, "cannot open", error);
        sqlite3_close(db);
        return NULL;
    }
    sqlite3_extended_result_codes(db, 1);
    sqlite3_busy_timeout(db, 2000);
    return db;
}

const char *store_db_name(struct sqlite3 *db)
{
    const char *path = db ? sqlite3_db_filename(db, "main") : NULL;
    if (!path || !*path)
        return NULL;
    const char *name = sqlite3_uri_parameter(path, STORE_DB_NAME_PARAMETER);
    return name && *name ? name : path;
}

struct sqlite3 *store_db_open_again(struct sqlite3 *db)
{
    const char *path = sqlite3_db_filename(db, "main");
    if (!path || !*path)
        return NULL;
    g_autoptr(GError) ignored = NULL;
    return store_db_open_readonly_once(path, store_db_name(db),
                                       sqlite3_uri_boolean(path, "immutable", 0), &ignored);
}

struct sqlite3 *store_db_open_readonly(const char *path, GError **error)
{
    sqlite3 *db = NULL;
    gboolean ok = FALSE, wal_header = FALSE, quiet = FALSE;
    int64_t app_id, version;

    /* Looked at before SQLite opens the file: even a read-only connection creates an empty -wal
     * beside a file in WAL mode. */
    g_autofree char *wal = g_strconcat(path, "-wal", NULL);
    struct stat wal_stat;
    gboolean wal_absent = stat(wal, &wal_stat) != 0 || wal_stat.st_size == 0;
    if (!store_db_check_file(path, &wal_header, error))
        goto out;
    quiet = wal_header && store_db_wal_quiet(path);
    if ((db = store_db_open_readonly_once(path, path, quiet, error)) == NULL)
        goto out;
    app_id = store_db_pragma_int(db, "PRAGMA application_id");
    if (app_id < 0 && sqlite3_extended_errcode(db) == SQLITE_READONLY_ROLLBACK) {
        /* A hot journal: a program that wrote the file died inside a transaction (a Ctrl-C
         * during a command's first read, which stores its summary) and only a connection that
         * may write rolls it back. Read-only, every later command failed with "attempt to write
         * a readonly database" until something else opened the file for writing. */
        sqlite3_close(db);
        db = NULL;
        if (!store_db_roll_back(path, error) ||
            (db = store_db_open_readonly_once(path, path, quiet, error)) == NULL)
            goto out;
        app_id = store_db_pragma_int(db, "PRAGMA application_id");
    }
    if (app_id < 0) {
        store_sql_fail(db, path, "cannot read", error);
        goto out;
    }
    if (app_id != STORE_APPLICATION_ID) {
        /* A recording's main file copied alone while it was written: in WAL mode, everything
         * (its application id too) still in the -wal that was not copied. */
        if (app_id == 0 && (quiet || store_db_in_wal(db)) && wal_absent)
            g_set_error(error, STORE_ERROR, STORE_ERROR_SQLITE,
                        "%s is not a heaplens database, or is one copied without its -wal: it is "
                        "in WAL mode and %s is missing or empty (copy both, or copy after the "
                        "recording ends)",
                        path, wal);
        else
            g_set_error(error, STORE_ERROR, STORE_ERROR_SQLITE, "%s is not a heaplens database",
                        path);
        goto out;
    }
    version = store_db_pragma_int(db, "PRAGMA user_version");
    if (version >= 0 && version < STORE_SCHEMA_OLDEST_READ) {
        /* Schema 1 had a row per allocation, schema 2 object_generations as a table updated per
         * promotion: their files cannot answer as schema 3 does. */
        g_set_error(error, STORE_ERROR, STORE_ERROR_SQLITE,
                    "%s was recorded by an older heaplens (schema %" G_GINT64_FORMAT
                    "); record it again",
                    path, version);
        goto out;
    }
    if (version > STORE_SCHEMA_VERSION || version < 0) {
        g_set_error(error, STORE_ERROR, STORE_ERROR_SQLITE,
                    "%s was recorded by a newer heaplens (schema %" G_GINT64_FORMAT
                    "); this heaplens reads schemas %d to %d",
                    path, version, STORE_SCHEMA_OLDEST_READ, STORE_SCHEMA_VERSION);
        goto out;
    }
    /* A heaplens file (checked above: no one else's file is changed) left in WAL mode; read as
     * immutable (quiet) when this user may not make it one file again. */
    if ((quiet && store_db_may_leave_wal(path)) || (!quiet && store_db_in_wal(db))) {
        sqlite3_close(db);
        store_db_leave_wal(path);
        if ((db = store_db_open_readonly_once(path, path, FALSE, error)) == NULL)
            goto out;
    }
    if (!store_snapshot_view_attach(db, error) || !store_objects_view_attach(db, error) ||
        !store_retention_view_attach(db, error))
        goto out;
    ok = TRUE;
out:
    if (!ok) {
        sqlite3_close(db);
        db = NULL;
    }
    return db;
}
