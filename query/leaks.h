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
 * the retained sizes of the first and last snapshot of the series when needed. */
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

#endif /* HEAPLENS_QUERY_LEAKS_H */
