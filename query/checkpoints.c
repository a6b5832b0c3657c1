/* checkpoints.c — the program's checkpoints (checkpoints.h). */
#include "query/checkpoints.h"

#include "query/query.h"

#include <string.h>

static void checkpoint_clear(void *p)
{
    g_free(((checkpoint_info *)p)->name);
}

GArray *checkpoint_list_new(sqlite3 *db, GError **error)
{
    GArray *list = g_array_new(FALSE, TRUE, sizeof(checkpoint_info));
    g_array_set_clear_func(list, checkpoint_clear);
    sqlite3_stmt *st = NULL;
    /* Schema 6 and older: no table, no checkpoints. */
    if (sqlite3_prepare_v2(db, "SELECT name, gc, time_ns, thread, coalesce(time_ns - (SELECT "
                           "start_mono_ns FROM run), 0) FROM checkpoints ORDER BY id",
                           -1, &st, NULL) != SQLITE_OK) {
        sqlite3_finalize(st);
        return list;
    }
    gboolean row = FALSE, ok;
    while ((ok = query_db_step(st, &row, error)) && row) {
        const char *name = (const char *)sqlite3_column_text(st, 0);
        checkpoint_info c = {.name = g_strdup(name ? name : ""),
                             .gc = sqlite3_column_int64(st, 1),
                             .time_ns = sqlite3_column_int64(st, 2),
                             .thread = sqlite3_column_int64(st, 3),
                             .since_start_ns = sqlite3_column_int64(st, 4)};
        g_array_append_val(list, c);
    }
    sqlite3_finalize(st);
    if (!ok) {
        g_array_unref(list);
        return NULL;
    }
    return list;
}

json_t *checkpoint_list_json(sqlite3 *db, GError **error)
{
    g_autoptr(GArray) list = checkpoint_list_new(db, error);
    if (!list)
        return NULL;
    json_t *out = json_array();
    for (guint i = 0; i < list->len; i++) {
        const checkpoint_info *c = &g_array_index(list, checkpoint_info, i);
        json_array_append_new(out, json_pack("{s:o, s:I, s:I, s:I, s:I}", "name",
                                             query_json_string(c->name), "gc",
                                             (json_int_t)c->gc, "time_ns",
                                             (json_int_t)c->time_ns, "since_start_ns",
                                             (json_int_t)c->since_start_ns, "thread",
                                             (json_int_t)c->thread));
    }
    return out;
}

gboolean checkpoint_find(sqlite3 *db, const char *path, const char *tool, const char *name,
                         checkpoint_info *out, GError **error)
{
    g_autoptr(GArray) list = checkpoint_list_new(db, error);
    if (!list)
        return FALSE;
    for (guint i = 0; i < list->len; i++) {
        checkpoint_info *c = &g_array_index(list, checkpoint_info, i);
        if (strcmp(c->name, name) == 0) {
            *out = *c;
            c->name = NULL; /* taken: out owns it */
            return TRUE;
        }
    }
    GString *names = g_string_new(NULL);
    for (guint i = 0; i < list->len && i < 10; i++)
        g_string_append_printf(names, "%s'%s'", i ? ", " : "",
                               g_array_index(list, checkpoint_info, i).name);
    if (list->len > 10)
        g_string_append(names, ", ...");
    g_set_error(error, QUERY_ERROR, QUERY_ERROR_NOT_FOUND, "%s: %s has no checkpoint '%s' (%s%s)",
                tool, path, name, list->len ? "it has " : "it has none",
                list->len ? names->str : "");
    g_string_free(names, TRUE);
    return FALSE;
}

gboolean checkpoint_snapshot(sqlite3 *db, const char *path, const char *tool, const char *name,
                             int64_t *snapshot, GError **error)
{
    checkpoint_info c = {0};
    gboolean row = FALSE, ok = FALSE;
    if (!checkpoint_find(db, path, tool, name, &c, error))
        return FALSE;
    /* snapshots exists: checkpoint_find read a recording with checkpoints (schema 7) */
    sqlite3_stmt *stmt = query_db_prepare(db, "SELECT snapshot FROM snapshots WHERE gc = ?1 "
                                              "ORDER BY snapshot DESC LIMIT 1", error);
    if (!stmt)
        goto out;
    sqlite3_bind_int64(stmt, 1, c.gc);
    if (!query_db_step(stmt, &row, error))
        goto out;
    if (!row) {
        if (c.gc == 0)
            g_set_error(error, QUERY_ERROR, QUERY_ERROR_NOT_FOUND,
                        "%s: checkpoint '%s' comes before the first GC of %s, so no snapshot "
                        "shows it; a GC.Collect() right before the checkpoint takes one "
                        "(--snapshot induced, the default)", tool, name, path);
        else
            g_set_error(error, QUERY_ERROR, QUERY_ERROR_NOT_FOUND,
                        "%s: checkpoint '%s' follows GC %" G_GINT64_FORMAT " of %s, and no "
                        "snapshot was taken at that GC; a GC.Collect() right before the "
                        "checkpoint takes one (--snapshot induced, the default)",
                        tool, name, c.gc, path);
        goto out;
    }
    *snapshot = sqlite3_column_int64(stmt, 0);
    ok = TRUE;
out:
    sqlite3_finalize(stmt);
    g_free(c.name);
    return ok;
}

gboolean checkpoint_range(sqlite3 *db, const char *path, const char *tool, const char *range,
                          int64_t *from_gc, int64_t *to_gc, GError **error)
{
    const char *dots = range ? strstr(range, "..") : NULL;
    if (!dots || dots == range || !dots[2]) {
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_USAGE,
                    "%s: a range of checkpoints is FROM..TO, not '%s'", tool, range ? range : "");
        return FALSE;
    }
    g_autofree char *from_name = g_strndup(range, (gsize)(dots - range));
    checkpoint_info from = {0}, to = {0};
    if (!checkpoint_find(db, path, tool, from_name, &from, error))
        return FALSE;
    g_free(from.name);
    if (!checkpoint_find(db, path, tool, dots + 2, &to, error))
        return FALSE;
    g_free(to.name);
    if (to.gc < from.gc || (to.gc == from.gc && to.time_ns < from.time_ns)) {
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_USAGE,
                    "%s: checkpoint '%s' was written before '%s': give FROM..TO in the order "
                    "the program wrote them", tool, dots + 2, from_name);
        return FALSE;
    }
    if (to.gc == from.gc) {
        /* Counts exist per GC interval only: with no GC between them, the allocations between
         * the two cannot be told from those around them. */
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_USAGE,
                    "%s: no GC finished between checkpoints '%s' and '%s' (both after GC %"
                    G_GINT64_FORMAT "): allocations are counted per GC interval; call GC.Collect() "
                    "before each checkpoint",
                    tool, from_name, dots + 2, from.gc);
        return FALSE;
    }
    *from_gc = from.gc + 1;
    *to_gc = to.gc;
    return TRUE;
}
