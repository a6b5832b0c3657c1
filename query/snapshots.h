/* snapshots.h — the heap snapshots of a recording, one row each, with the model's self-check
 * (the analysis behind `heaplens snapshots`; store/SCHEMA.md, table snapshots).
 *
 * Errors: GError ** last, one line. Single-threaded.
 */
#ifndef HEAPLENS_QUERY_SNAPSHOTS_H
#define HEAPLENS_QUERY_SNAPSHOTS_H

#include <glib.h>
#include <sqlite3.h>
#include <stdint.h>

typedef struct query_snapshot {
    int64_t snapshot, gc;
    char *trigger; /* owned; NULL when NULL in the file */
    int64_t objects, refs, roots, handles, bytes;
    int64_t model_missing, model_extra, frozen, unresolved, walk_ns, model_unreported;
    char *reason;  /* owned; why a trigger took it (schema 8), NULL for the other policies */
} query_snapshot;

/* Every snapshot of `db`, in order: a new array of query_snapshot (its free function releases
 * the rows). *drift: the objects the model and the runtime's heap walk disagree on, summed over
 * the snapshots (model_missing + model_extra). */
GArray *query_snapshots_read(sqlite3 *db, int64_t *drift, GError **error);

#endif /* HEAPLENS_QUERY_SNAPSHOTS_H */
