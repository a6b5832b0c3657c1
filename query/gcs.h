/* gcs.h — the GCs of a recording, one row each (the analysis behind `heaplens gcs`).
 *
 * Errors: GError ** last, one line (QUERY_ERROR_SQLITE for a damaged file). Single-threaded.
 */
#ifndef HEAPLENS_QUERY_GCS_H
#define HEAPLENS_QUERY_GCS_H

#include <glib.h>
#include <jansson.h>
#include <sqlite3.h>
#include <stdint.h>

/* Generations with a size in gc_generations: gen0, gen1, gen2, loh, poh (SCHEMA.md). */
#define QUERY_SIZE_GENS 5

/* gcs.objects_live of the GC row `g`, or NULL where it is no count of live objects: in a sampled
 * recording that follows its samples the model holds only the followed objects between
 * snapshots (every live object at a snapshot's GC). */
#define QUERY_GC_OBJECTS_LIVE_SQL(g)                                                             \
    "CASE WHEN instr(coalesce((SELECT flags FROM run WHERE id = 1), ''), 'samples-followed') > 0" \
    " AND NOT EXISTS (SELECT 1 FROM snapshots AS sn WHERE sn.gc = " g ".gc) THEN NULL"          \
    " ELSE " g ".objects_live END"

/* One GC: the columns of `gcs` and its gc_generations sizes. Every field may be QUERY_NULL
 * (query.h) except gc; induced, compacting and incomplete are 0 or 1. */
typedef struct query_gc {
    int64_t gc;
    int64_t generation;
    const char *reason; /* interned (g_intern_string); NULL when unknown */
    int64_t induced, compacting, incomplete;
    int64_t pause_ns, start_ns, end_ns;
    int64_t survived_bytes, moved_bytes, objects_live;
    int64_t size_before[QUERY_SIZE_GENS];
    int64_t size_after[QUERY_SIZE_GENS];
    /* Filled by `heaplens report` only (QUERY_NULL and 0 otherwise): roots with the pinning flag
     * at the end of the GC; what was allocated in this GC's interval (after the previous GC
     * began, before this one began): exact in full recordings, estimates in sampled and attach
     * ones. */
    int64_t pinned_objects;
    int64_t allocated_count, allocated_bytes;
    /* The census of gen0 at the GC's start (sampled mode, schema 6): its time and objects;
     * QUERY_NULL without one (filled by query_gcs_read and `heaplens report`). */
    int64_t census_ns, census_objects;
    /* gcs.snapshot_skipped (schema 9): why a snapshot due at this GC was not built,
     * STORE_SNAPSHOT_SKIPPED_HELD or _DETACH (interned); NULL when none was skipped or the file
     * does not say (filled by query_gcs_read and `heaplens report`). */
    const char *snapshot_skipped;
} query_gc;

/* The GC of columns 0..21 of the current row of `stmt`: gc, generation, reason, induced,
 * compacting, pause_ns, start_ns, end_ns, survived_bytes, moved_bytes, objects_live,
 * incomplete, then size before and after of each of the QUERY_SIZE_GENS generations (the
 * columns of the gc_summary view, in its order). */
void query_gc_read(sqlite3_stmt *stmt, query_gc *gc);
/* One row of `heaplens gcs --json`: {"gc","generation","reason","induced","compacting",
 * "pause_ns","start_ns","end_ns","survived_bytes","moved_bytes","objects_live","incomplete",
 * "snapshot_skipped","size_before":{"gen0",...,"poh"},"size_after":{...}} (new reference). */
json_t *query_gc_json(const query_gc *gc);

/* *census: some GC of `db` has a census of gen0 (gcs.census_ns, schema 6 on). FALSE and an
 * error when the file cannot be read. */
gboolean query_gcs_census(sqlite3 *db, gboolean *census, GError **error);

/* The text of gcs.snapshot_skipped in `column` of the current row, interned; NULL for NULL. */
const char *query_gc_snapshot_skipped_read(sqlite3_stmt *stmt, int column);
/* *known: `db` says per GC which snapshot it went without (gcs.snapshot_skipped, schema 9 on).
 * FALSE and an error when the file cannot be read. */
gboolean query_gcs_skips_known(sqlite3 *db, gboolean *known, GError **error);

/* Every GC of `db`, in GC order: a new array of query_gc. *census: some GC has a census (then
 * `heaplens gcs` shows its time). */
GArray *query_gcs_read(sqlite3 *db, gboolean *census, GError **error);

#endif /* HEAPLENS_QUERY_GCS_H */
