/* snapshots.c — the heap snapshots of a recording (snapshots.h). */
#include "query/snapshots.h"

#include "query/query.h"

/* %s: the reason column (schema 8), or NULL before it. */
static const char snapshots_sql[] =
    "SELECT snapshot, gc, trigger, objects, refs, roots, handles, bytes, model_missing,"
    " model_extra, frozen, unresolved, walk_ns, model_unreported, %s FROM snapshots"
    " ORDER BY snapshot";

static void snapshot_clear(void *row)
{
    g_free(((query_snapshot *)row)->trigger);
    g_free(((query_snapshot *)row)->reason);
}

static void snapshot_read(sqlite3_stmt *stmt, void *row)
{
    int64_t v[14];
    for (int i = 0; i < 14; i++)
        v[i] = sqlite3_column_int64(stmt, i);
    *(query_snapshot *)row = (query_snapshot){
        .snapshot = v[0], .gc = v[1],
        .trigger = g_strdup((const char *)sqlite3_column_text(stmt, 2)),
        .objects = v[3], .refs = v[4], .roots = v[5], .handles = v[6], .bytes = v[7],
        .model_missing = v[8], .model_extra = v[9], .frozen = v[10], .unresolved = v[11],
        .walk_ns = v[12], .model_unreported = v[13],
        .reason = g_strdup((const char *)sqlite3_column_text(stmt, 14)),
    };
}

GArray *query_snapshots_read(sqlite3 *db, int64_t *drift, GError **error)
{
    int64_t version = 0;
    if (!query_db_int(db, "PRAGMA user_version", &version, error))
        return NULL;
    g_autofree char *sql = g_strdup_printf(snapshots_sql, version >= 8 ? "reason" : "NULL");
    GArray *snapshots = query_db_rows_read(query_db_prepare(db, sql, error),
                                           sizeof(query_snapshot), snapshot_read,
                                           snapshot_clear, error);
    *drift = 0;
    if (!snapshots)
        return NULL;
    for (guint i = 0; i < snapshots->len; i++) {
        const query_snapshot *s = &g_array_index(snapshots, query_snapshot, i);
        *drift += s->model_missing + s->model_extra;
    }
    return snapshots;
}
