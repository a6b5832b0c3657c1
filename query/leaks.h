/* leaks.h — leak suspects across the heap snapshots of a recording (the analysis behind
 * `heaplens leaks`, also shown by `heaplens report`). The method is described in leaks.c.
 *
 * Errors: GError ** last, one line (QUERY_ERROR_NOT_FOUND when there are fewer than two
 * snapshots). Call from one thread.
 */
#ifndef HEAPLENS_QUERY_LEAKS_H
#define HEAPLENS_QUERY_LEAKS_H

#include "query/progress.h"

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
/* The text of `heaplens leaks`: a summary line, the table, then the holder and path of each
 * flagged suspect. */
void leaks_print(const leaks *l, FILE *out);
/* The notes (series of all snapshots, retained sizes not stored), on stdout or, with json, stderr. */
void leaks_notes_print(const leaks *l, gboolean json);

#endif /* HEAPLENS_QUERY_LEAKS_H */
