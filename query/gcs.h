/* gcs.h — the GCs of a recording, one row each (the analysis behind `heaplens gcs`).
 *
 * Errors: GError ** last, one line (QUERY_ERROR_SQLITE for a damaged file). Single-threaded.
 */
#ifndef HEAPLENS_QUERY_GCS_H
#define HEAPLENS_QUERY_GCS_H

#include <glib.h>
#include <sqlite3.h>
#include <stdint.h>

/* One GC (table gcs) with its per-generation sizes (gc_generations, generations 0..4). Every
 * field but gc and generation may be QUERY_NULL (query.h); induced, compacting and incomplete
 * are 0 or 1. */
typedef struct query_gc {
    int64_t gc, generation;
    char *reason; /* owned; NULL when NULL in the file */
    int64_t induced, compacting, pause_ns, start_ns, end_ns, survived_bytes, moved_bytes,
        objects_live, incomplete;
    int64_t size_before[5], size_after[5]; /* gen0, gen1, gen2, loh, poh */
} query_gc;

/* Every GC of `db`, in GC order: a new array of query_gc (its free function releases the rows). */
GArray *query_gcs_read(sqlite3 *db, GError **error);

#endif /* HEAPLENS_QUERY_GCS_H */
