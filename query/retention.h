/* retention.h — retained sizes of a heap snapshot: computed once, stored in the recording.
 *
 *   retention_compute   snapshot_graph_load (forward) -> an_domtree_compute -> per-type sums
 *   retention_store     kept for the command (see below) until retention_commit writes it into
 *                       the tables retention_snapshots, retention, retention_top and
 *                       retention_types
 *                       (store/SCHEMA.md, "Retention"), created on first use
 *   retention_ensure    both, unless the tables already hold the snapshot
 *   retention_commit    what was stored, into the file: last, after every read
 *
 * The recording is otherwise read-only for queries. Storing puts the summary and the rows per
 * type into TEMP tables of the same names on the command's own connection, which then sees them,
 * and keeps the rows per object in memory (retention_top_objects and
 * retention_largest_instance read them there). A command writes them into the file last, when it
 * has read everything it needs (so that it never fails after changing the file): retention_commit
 * opens a second, read-write connection, checks the file (PRAGMA quick_check: a damaged file is
 * never written), and writes everything in one transaction, the rows per object straight from
 * the arrays; any failure rolls it back. When the file cannot be written — a read-only file or
 * directory, or a recording whose writer is still running (run.status 'recording') — the command
 * works the same, the next one computes again, and a note says why.
 *
 * Errors: GError ** last, one line. Single-threaded.
 */
#ifndef HEAPLENS_QUERY_RETENTION_H
#define HEAPLENS_QUERY_RETENTION_H

#include "analysis/an_dominators.h"
#include "query/progress.h"
#include "query/snapshot_graph.h"

#include <glib.h>
#include <jansson.h>
#include <sqlite3.h>

typedef struct retention retention;

/* Loads the snapshot and computes its dominator tree, retained sizes per object and per type. */
retention *retention_compute(sqlite3 *db, const snapshot_info *info, query_progress *progress,
                             GError **error);
/* Drops a reference (retention_store keeps one until retention_commit); accepts NULL. */
void retention_free(retention *r);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(retention, retention_free)

/* Borrowed from `r`: the forward graph of the snapshot and its dominator tree (node indexes of
 * the graph). */
const snapshot_graph *retention_graph(const retention *r);
const an_domtree *retention_tree(const retention *r);

/* Per type, indexed by type id (retention_type_count entries): reachable instances, their
 * shallow bytes, and what the type retains (an_domtree_group_retained). */
uint32_t retention_type_count(const retention *r);
const uint64_t *retention_type_instances(const retention *r);
const uint64_t *retention_type_shallow(const retention *r);
const uint64_t *retention_type_retained_bytes(const retention *r);
const uint64_t *retention_type_retained_counts(const retention *r);

/* TRUE in *stored when the retention tables visible through `db` (the file's, or TEMP ones)
 * hold snapshot `snapshot`. */
gboolean retention_is_stored(sqlite3 *db, int64_t snapshot, gboolean *stored, GError **error);

/* Keeps `r` for the command on `db`, its read-only connection (see above: the summary and rows
 * per type in TEMP tables, a reference to `r` for the rows per object, and its objects and bytes
 * per type as retention_counts_keep keeps them: leaks' series need not count this snapshot);
 * retention_commit writes them into the file and tells if it cannot. Nothing when the
 * snapshot's retained sizes are stored already. */
gboolean retention_store(retention *r, sqlite3 *db, query_progress *progress, GError **error);

/* Objects and bytes per type of one snapshot (leaks' series), as computed once and stored:
 * added into count[type] and bytes[type] (n_types each; a type id beyond them is counted as
 * 0), *found FALSE when neither the file nor this command holds them. A row that no recording
 * holds, or rows that do not add up to the snapshot's objects, are damage. */
gboolean retention_counts_read(sqlite3 *db, const snapshot_info *info, uint32_t n_types,
                               int64_t *count, int64_t *bytes, gboolean *found, GError **error);
/* Keeps them (TEMP table snapshot_type_counts of `db`); retention_commit stores them in the file
 * with the retained sizes (store/SCHEMA.md, "Retention"). */
gboolean retention_counts_keep(sqlite3 *db, int64_t snapshot, uint32_t n_types,
                               const int64_t *count, const int64_t *bytes, GError **error);
/* retention_is_stored, else retention_compute and retention_store. */
gboolean retention_ensure(sqlite3 *db, const snapshot_info *info, query_progress *progress,
                          GError **error);
/* The snapshot's graph, dominator tree and sums (a reference: retention_free it): the ones this
 * command computed and keeps, else computed now and kept (retention_store). `leaks` needs the
 * last snapshot's tree whether stored or not; `report` computed it just before. */
retention *retention_get(sqlite3 *db, const snapshot_info *info, query_progress *progress,
                         GError **error);
/* The retention this command computed last and has not written (a reference: retention_free
 * it), or NULL: its graph is in memory (leaks counts the objects per type of the snapshots that
 * share its blocks from it). */
retention *retention_pending_last(sqlite3 *db);

/* Writes the rows stored by this command into the file at `path` in one transaction, after
 * checking the file; call it last. TRUE when written or nothing was pending; TRUE with a new
 * one-line *note (may be NULL) when the file cannot be written (the rows stay in TEMP tables);
 * FALSE with *error when the file is damaged or the write failed: nothing was written. */
gboolean retention_commit(sqlite3 *db, const char *path, query_progress *progress, char **note,
                          GError **error);

/* The element type of a collection object, for display: for an array, the type more than half
 * of its references point to; for a System.Collections type, that of its largest referenced
 * array.
 * *type_id = 0 when the object is neither or references nothing. */
gboolean retention_element_type(sqlite3 *db, int64_t snapshot, int64_t object_id, uint32_t *type_id,
                                GError **error);

/* One of the largest retainers of a stored snapshot. element_type_id: see
 * retention_element_type (0: none). */
typedef struct retention_object {
    int64_t object;
    uint32_t type_id, element_type_id;
    int64_t shallow_bytes, retained_bytes, retained_count;
} retention_object;

/* The `top` objects of stored snapshot `snapshot` that retain the most, largest first (ties:
 * lower id), as retention_object: from this command's arrays (element types from the graph),
 * else the table retention_top when it holds `top` rows of the snapshot (no `objects` row is
 * read), else `retention` joined with `objects` (the partial index retention_large serves them
 * when at least `top` objects retain 64 KiB or more, a scan otherwise). NULL on error. */
GArray *retention_top_objects(sqlite3 *db, int64_t snapshot, uint64_t top, GError **error);
/* The reachable instance of type `type_id` (not 0) that retains the most in snapshot `snapshot`
 * (ties: the lower id), after retention_ensure: *object its id, 0 when none is reachable. */
gboolean retention_largest_instance(sqlite3 *db, int64_t snapshot, uint32_t type_id,
                                    int64_t *object, GError **error);
/* One row of `heaplens retention --json` (by object):
 * {"object","type","element_type","retained_bytes","retained_count","shallow_bytes"}. */
json_t *retention_object_json(const retention_object *o, const snapshot_types *types);

/* The snapshot's row of retention_snapshots. */
typedef struct retention_summary {
    int64_t objects, reachable, reachable_bytes, root_edges, unresolved_refs;
} retention_summary;

/* One row of `heaplens retention --by type` (retention_types). */
typedef struct retention_type_row {
    uint32_t type_id;
    int64_t count, shallow_bytes, retained_bytes, retained_count;
} retention_type_row;

/* What `heaplens retention` shows. */
typedef struct retention_top {
    snapshot_info info;
    retention_summary summary;
    snapshot_types *types; /* owned: names for the type ids below */
    GArray *rows;          /* retention_object, or with by_type retention_type_row; largest first */
} retention_top;

/* The largest retainers of a snapshot of the recording at `path` (open as `db`): snapshot_pick
 * (`snapshot_text`, the --snapshot value; NULL: the last), retention_ensure (reporting to
 * `progress`), then the top `top` objects (retention_top_objects) or with `by_type` types
 * (retained bytes, then type id). Fills *t (release with retention_top_clear, also after a
 * failure). The caller prints, then calls retention_commit. */
gboolean retention_top_read(sqlite3 *db, const char *path, const char *snapshot_text,
                            uint64_t top, gboolean by_type, query_progress *progress,
                            retention_top *t, GError **error);
void retention_top_clear(retention_top *t);

#endif /* HEAPLENS_QUERY_RETENTION_H */
