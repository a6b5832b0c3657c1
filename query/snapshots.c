/* snapshots.c — the heap snapshots of a recording (snapshots.h). */
#include "query/snapshots.h"

#include "query/query.h"

static const char snapshots_sql[] =
    "SELECT snapshot, gc, trigger, objects, refs, roots, handles, bytes, model_missing,"
    " model_extra, frozen, unresolved, walk_ns, model_unreported FROM snapshots ORDER BY snapshot";

static void snapshot_clear(void *row)
{
    g_free(((query_snapshot *)row)->trigger);
}

GArray *query_snapshots_read(sqlite3 *db, int64_t *drift, GError **error)
{
    gboolean row = FALSE, stepped = FALSE;
    GArray *snapshots = g_array_new(FALSE, TRUE, sizeof(query_snapshot));
    g_array_set_clear_func(snapshots, snapshot_clear);
    sqlite3_stmt *stmt = query_db_prepare(db, snapshots_sql, error);
    *drift = 0;
    if (!stmt)
        goto fail;
    while ((stepped = query_db_step(stmt, &row, error)) && row) {
        int64_t v[14];
        for (int i = 0; i < 14; i++)
            v[i] = sqlite3_column_int64(stmt, i);
        query_snapshot s = {
            .snapshot = v[0], .gc = v[1],
            .trigger = g_strdup((const char *)sqlite3_column_text(stmt, 2)),
            .objects = v[3], .refs = v[4], .roots = v[5], .handles = v[6], .bytes = v[7],
            .model_missing = v[8], .model_extra = v[9], .frozen = v[10], .unresolved = v[11],
            .walk_ns = v[12], .model_unreported = v[13],
        };
        *drift += v[8] + v[9];
        g_array_append_val(snapshots, s);
    }
    if (!stepped)
        goto fail;
    sqlite3_finalize(stmt);
    return snapshots;
fail:
    sqlite3_finalize(stmt);
    g_array_unref(snapshots);
    return NULL;
}
