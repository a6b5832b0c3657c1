/* gcs.c — the GCs of a recording (gcs.h). */
#include "query/gcs.h"

#include "query/query.h"

/* One row per GC with its per-generation sizes pivoted into columns; GROUP BY the primary key
 * keeps it in GC order. */
static const char gcs_sql[] =
    "SELECT g.gc, g.generation, g.reason, g.induced, g.compacting, g.pause_ns, g.start_ns,"
    "       g.end_ns, g.survived_bytes, g.moved_bytes, g.objects_live, g.incomplete,"
    "       MAX(CASE WHEN s.generation = 0 THEN s.size_before END),"
    "       MAX(CASE WHEN s.generation = 0 THEN s.size_after END),"
    "       MAX(CASE WHEN s.generation = 1 THEN s.size_before END),"
    "       MAX(CASE WHEN s.generation = 1 THEN s.size_after END),"
    "       MAX(CASE WHEN s.generation = 2 THEN s.size_before END),"
    "       MAX(CASE WHEN s.generation = 2 THEN s.size_after END),"
    "       MAX(CASE WHEN s.generation = 3 THEN s.size_before END),"
    "       MAX(CASE WHEN s.generation = 3 THEN s.size_after END),"
    "       MAX(CASE WHEN s.generation = 4 THEN s.size_before END),"
    "       MAX(CASE WHEN s.generation = 4 THEN s.size_after END)"
    "  FROM gcs AS g LEFT JOIN gc_generations AS s ON s.gc = g.gc"
    " GROUP BY g.gc ORDER BY g.gc";

static void gc_clear(void *row)
{
    g_free(((query_gc *)row)->reason);
}

GArray *query_gcs_read(sqlite3 *db, GError **error)
{
    gboolean row = FALSE, stepped = FALSE;
    GArray *gcs = g_array_new(FALSE, TRUE, sizeof(query_gc));
    g_array_set_clear_func(gcs, gc_clear);
    sqlite3_stmt *stmt = query_db_prepare(db, gcs_sql, error);
    if (!stmt)
        goto fail;
    while ((stepped = query_db_step(stmt, &row, error)) && row) {
        query_gc gc = {
            .gc = sqlite3_column_int64(stmt, 0),
            .generation = sqlite3_column_int64(stmt, 1),
            .reason = g_strdup((const char *)sqlite3_column_text(stmt, 2)),
            .induced = query_db_column_flag(stmt, 3),
            .compacting = query_db_column_flag(stmt, 4),
            .pause_ns = query_db_column_value(stmt, 5),
            .start_ns = query_db_column_value(stmt, 6),
            .end_ns = query_db_column_value(stmt, 7),
            .survived_bytes = query_db_column_value(stmt, 8),
            .moved_bytes = query_db_column_value(stmt, 9),
            .objects_live = query_db_column_value(stmt, 10),
            .incomplete = query_db_column_flag(stmt, 11),
        };
        for (int g = 0; g < 5; g++) {
            gc.size_before[g] = query_db_column_value(stmt, 12 + 2 * g);
            gc.size_after[g] = query_db_column_value(stmt, 13 + 2 * g);
        }
        g_array_append_val(gcs, gc);
    }
    if (!stepped)
        goto fail;
    sqlite3_finalize(stmt);
    return gcs;
fail:
    sqlite3_finalize(stmt);
    g_array_unref(gcs);
    return NULL;
}
