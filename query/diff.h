/* diff.h — what changed between two heap snapshots, per type, by object identity: objects new
 * in the second, dead since the first, survived (the analysis behind `heaplens diff`).
 *
 * Both snapshots are read in object id order (the key of snapshot_objects) and merged: an id in
 * both is a survivor, an id only in the first died, an id only in the second is new (the same id
 * with another type: dead and new). Memory: one entry per type. Across two files, types are
 * matched by name and an object survives when the same allocation number has the same type name
 * in both: exact for a program that allocates the same way on every run.
 *
 * Errors: GError ** last, one line. Single-threaded.
 */
#ifndef HEAPLENS_QUERY_DIFF_H
#define HEAPLENS_QUERY_DIFF_H

#include "query/snapshot_graph.h"

#include <glib.h>
#include <sqlite3.h>
#include <stdint.h>

typedef struct query_diff_row {
    const char *type; /* borrowed from the diff */
    int64_t new_count, dead, survived;
    int64_t new_bytes, dead_bytes, survived_bytes;
} query_diff_row;

typedef struct query_diff query_diff;
struct query_diff {
    snapshot_info from, to;
    query_diff_row total;
    GArray *rows; /* query_diff_row per type name, largest net growth in bytes first (then
                   * objects, then name); types with no object in either snapshot included */
    /* Across files, when either is a sampled or attach recording (ids given as GCs find the
     * objects, not by allocation): that file's path (borrowed) and its mode; NULL otherwise. */
    const char *renumbered_path;
    char *renumbered_mode;
    /* One sampled or attach recording that follows its samples: its mode (NULL otherwise), and
     * how many objects of the first snapshot it had named in gen0, for that snapshot only (dead
     * at the next GC to the model: one still alive is named again, as new, by the second). */
    char *followed_mode;
    int64_t from_gen0_named;
    /* private */
    snapshot_types *from_types, *to_types;
    char (*from_names)[QUERY_FORMAT_MAX], (*to_names)[QUERY_FORMAT_MAX];
};

/* Compares two snapshots: in `from_db` (the recording at `path`) and `to_db` (the recording at
 * `to_path`; the same connection and path for one file). The second is `to_text` (the --to
 * value; NULL: the last snapshot), the first `from_text` (--from; NULL: the snapshot before the
 * second in one file, the last snapshot of the first file across files). NULL on error. */
query_diff *query_diff_new(sqlite3 *from_db, const char *path, sqlite3 *to_db,
                           const char *to_path, const char *from_text, const char *to_text,
                           GError **error);
void query_diff_free(query_diff *d); /* accepts NULL */
G_DEFINE_AUTOPTR_CLEANUP_FUNC(query_diff, query_diff_free)

#endif /* HEAPLENS_QUERY_DIFF_H */
