/* leaks.h — leak suspects across the heap snapshots of a recording (the analysis behind
 * `heaplens leaks`, also shown by `heaplens report`). The method is described in leaks.c.
 *
 * Errors: GError ** last, one line (QUERY_ERROR_NOT_FOUND when there are fewer than two
 * snapshots). Call from one thread.
 */
#ifndef HEAPLENS_QUERY_LEAKS_H
#define HEAPLENS_QUERY_LEAKS_H

#include "query/progress.h"
#include "query/query.h"
#include "query/snapshot_graph.h"

#include <glib.h>
#include <jansson.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>

typedef struct leaks leaks;

/* Ranks the types of the recording at `path` (open as `db`) and finds the holder and a root path
 * of the first `top`; `all`: also types that grew without being flagged. Computes and stores
 * the retained sizes of the first and last snapshot of the series when needed, and the holders
 * not stored yet (the last snapshot's tree then: leaks_holder_read). */
leaks *leaks_find(sqlite3 *db, const char *path, uint64_t top, gboolean all,
                  query_progress *progress, GError **error);
void leaks_free(leaks *l); /* accepts NULL */
G_DEFINE_AUTOPTR_CLEANUP_FUNC(leaks, leaks_free)

/* The JSON of `heaplens leaks --json`: the head {"snapshots","gcs","full_gcs_only"} and one row
 * per suspect shown, most suspect first (new references). */
json_t *leaks_json_head(const leaks *l);
guint leaks_count(const leaks *l);
json_t *leaks_json_row(const leaks *l, guint i);
/* The series compared: k snapshots from *first to *last; *note says why it is not the
 * snapshots after full GCs (NULL when it is). Borrowed from `l`. */
void leaks_series_get(const leaks *l, size_t *k, const snapshot_info **first,
                      const snapshot_info **last, const char **note);
/* Why the series is not the snapshots after full GCs (a note for the user); NULL when it is.
 * Borrowed from `l`. */
const char *leaks_series_note(const leaks *l);
/* The rule of a suspect (leaks.c): a type with `k` >= 2 objects counts `cv` and bytes `bv`, one
 * per snapshot in order, and `heap_last` bytes in the last snapshot (across files,
 * leaks_files.h has a stricter one). */
gboolean leaks_trend_flagged(const int64_t *cv, const int64_t *bv, size_t k, int64_t heap_last);

/* How many of the suspects shown (leaks_count) are flagged. */
guint leaks_flagged_count(const leaks *l);

/* One suspect shown, as the text of `heaplens leaks` says it. */
typedef struct leaks_suspect {
    const char *type; /* borrowed from `l` or the caller's buf */
    gboolean flagged;
    int64_t growth_count, growth_bytes, growth_retained_bytes;
    const int64_t *counts;   /* objects per snapshot of the series (k values); borrowed */
    const char *holder_type; /* NULL: held by nothing but GC roots and collections */
    guint holder_rank;       /* the holder's type is flagged suspect number holder_rank (1..);
                              * 0 when it is not */
    uint64_t holder_object, holder_retained_bytes;
    uint64_t held, holders, instances;
} leaks_suspect;

/* Suspect i (< leaks_count), most suspect first; names may be formatted into buf and
 * holder_buf. */
void leaks_suspect_get(const leaks *l, guint i, leaks_suspect *out, char buf[QUERY_FORMAT_MAX],
                       char holder_buf[QUERY_FORMAT_MAX]);
/* The path of suspect i from a GC root to the holder's largest instance, as text
 * ("handle (strong) -> A #1 -> B #2"); NULL when it has none. Free with g_free. */
char *leaks_suspect_path_text_new(const leaks *l, guint i);

/* ---- holders, computed once per snapshot and type (leaks_store.c) ----------------------
 * The holder and path of a type's instances in a snapshot depend on that snapshot alone (its
 * dominator tree and graph): leaks_find keeps those it computes on `db` (TEMP table
 * leak_holders) and reads them back from there or from the file (store/SCHEMA.md
 * "leak_holders"; a row of another version, or of a snapshot whose snapshots row changed since,
 * is computed again), so that a later `leaks` or `report` computes no tree for its holders. */

/* What holds the instances of one type in a snapshot (leaks.c's top comment). */
typedef struct leaks_holder {
    gboolean found;          /* FALSE: held by nothing but GC roots and collections */
    uint32_t type_id;        /* the holder's type */
    uint64_t object;         /* the holder object holding most */
    uint64_t retained_bytes; /* what it retains */
    uint64_t held;           /* instances held by objects of the holder's type */
    uint64_t holders;        /* objects of that type holding some */
    uint64_t instances;      /* reachable instances of the type */
    json_t *path, *roots;    /* owned; NULL: no path (the hops and the root as JSON) */
    char *path_text;         /* owned: "roots -> hops" as `leaks` prints it; NULL: no path */
} leaks_holder;
void leaks_holder_clear(leaks_holder *h);

/* The holder of `type_id` in snapshot `info` kept by this command, else stored in the file:
 * *found FALSE (and *h zeroed) when neither holds it; a row that is not what heaplens writes is
 * damage (QUERY_ERROR_DAMAGED). */
gboolean leaks_holder_read(sqlite3 *db, const snapshot_info *info, uint32_t type_id,
                           leaks_holder *h, gboolean *found, GError **error);
/* Keeps `h` for leaks_commit (TEMP table leak_holders of `db`). */
gboolean leaks_holder_keep(sqlite3 *db, const snapshot_info *info, uint32_t type_id,
                           const leaks_holder *h, GError **error);
/* Writes the holders kept on `db` into the file at `path` (query_db_kept_commit: one
 * transaction, the file checked first; call it last, after retention_commit). TRUE when written
 * or nothing was kept; TRUE with a new one-line *note when the file cannot be written; FALSE
 * with *error when it is damaged or the write failed: nothing was written. */
gboolean leaks_commit(sqlite3 *db, const char *path, query_progress *progress, char **note,
                      GError **error);

#endif /* HEAPLENS_QUERY_LEAKS_H */
