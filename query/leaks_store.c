/* leaks_store.c — what holds a suspect type in a snapshot, computed once and kept in the
 * recording (leaks.h; store/SCHEMA.md "leak_holders"). The holder and path of a type come from
 * the snapshot's dominator tree and graph alone, whatever the series or options of the `leaks`
 * that asked: a few values and the path as `leaks` prints it, so that the next `leaks` and
 * `report` need neither the tree nor the graph. Kept and written as inspections are
 * (inspect_store.c): a TEMP table of the same name on the command's read-only connection, then
 * query_db_kept_commit, the command's last step. */
#include "query/leaks.h"

#include "store/store.h"

#include <inttypes.h>

/* How heaplens finds holders and paths: rows of another version are computed again (and
 * replaced). */
#define LEAKS_HOLDERS_VERSION 3

#define HOLDERS_TABLE(schema)                                                                      \
    "CREATE TABLE IF NOT EXISTS " schema "leak_holders (\n"                                        \
    "  snapshot INTEGER NOT NULL,\n"                                                               \
    "  type_id INTEGER NOT NULL,\n"                                                                \
    "  version INTEGER NOT NULL,\n"                                                                \
    "  gc INTEGER NOT NULL,\n"                                                                     \
    "  objects INTEGER NOT NULL,\n"                                                                \
    "  refs INTEGER NOT NULL,\n"                                                                   \
    "  roots INTEGER NOT NULL,\n"                                                                  \
    "  instances INTEGER NOT NULL,\n"                                                              \
    "  holder_object INTEGER,\n"                                                                   \
    "  holder_type_id INTEGER,\n"                                                                  \
    "  holder_retained_bytes INTEGER,\n"                                                           \
    "  held INTEGER,\n"                                                                            \
    "  holders INTEGER,\n"                                                                         \
    "  path TEXT,\n"                                                                               \
    "  path_roots TEXT,\n"                                                                         \
    "  path_text TEXT,\n"                                                                          \
    "  producer TEXT,\n"                                                                           \
    "  PRIMARY KEY (snapshot, type_id)\n"                                                          \
    ") WITHOUT ROWID;\n"

void leaks_holder_clear(leaks_holder *h)
{
    json_decref(h->path);
    json_decref(h->roots);
    g_free(h->path_text);
    memset(h, 0, sizeof *h);
}

static gboolean holder_damaged(int64_t snapshot, uint32_t type_id, GError **error)
{
    return query_db_damaged(error, "the stored holder of type %u in snapshot %" PRId64
                                   " is not what heaplens writes", type_id, snapshot);
}

/* A JSON array from column `col` of `st` (a new reference), NULL when it is not one. */
static json_t *array_column(sqlite3_stmt *st, int col)
{
    if (sqlite3_column_type(st, col) != SQLITE_TEXT)
        return NULL;
    json_t *v = json_loads((const char *)sqlite3_column_text(st, col), JSON_REJECT_DUPLICATES, NULL);
    if (!json_is_array(v)) {
        json_decref(v);
        return NULL;
    }
    return v;
}

/* The row of `schema`.leak_holders for `info` and `type_id`, when it is of this version and of
 * this very snapshot (its snapshots row unchanged): into *h, *found TRUE. */
static gboolean stored_read(sqlite3 *db, const char *schema, const snapshot_info *info,
                            uint32_t type_id, leaks_holder *h, gboolean *found, GError **error)
{
    gboolean row = FALSE, ok = FALSE;
    g_autofree char *sql = g_strdup_printf(
        "SELECT version, gc, objects, refs, roots, instances, holder_object, holder_type_id,"
        " holder_retained_bytes, held, holders, path, path_roots, path_text FROM %s.leak_holders"
        " WHERE snapshot = ?1 AND type_id = ?2",
        schema);
    sqlite3_stmt *st = query_db_prepare(db, sql, error);
    if (!st)
        return FALSE;
    sqlite3_bind_int64(st, 1, info->snapshot);
    sqlite3_bind_int64(st, 2, type_id);
    if (!query_db_step(st, &row, error))
        goto out;
    ok = TRUE;
    /* another heaplens' holders, or of a snapshot since replaced: computed again */
    if (!row || sqlite3_column_int64(st, 0) != LEAKS_HOLDERS_VERSION ||
        sqlite3_column_int64(st, 1) != info->gc || sqlite3_column_int64(st, 2) != info->objects ||
        sqlite3_column_int64(st, 3) != info->refs || sqlite3_column_int64(st, 4) != info->roots)
        goto out;
    /* counts are integers >= 0; a holder has all its columns, none has none; a path is two
     * arrays and its text */
    gboolean holder = sqlite3_column_type(st, 6) != SQLITE_NULL;
    gboolean sound = sqlite3_column_type(st, 5) == SQLITE_INTEGER && sqlite3_column_int64(st, 5) >= 0;
    for (int c = 6; c <= 10; c++)
        sound = sound && (holder ? sqlite3_column_type(st, c) == SQLITE_INTEGER &&
                                       sqlite3_column_int64(st, c) >= 0
                                 : sqlite3_column_type(st, c) == SQLITE_NULL);
    sound = sound && (!holder || sqlite3_column_int64(st, 7) <= UINT32_MAX);
    if (sound && sqlite3_column_type(st, 11) != SQLITE_NULL) {
        h->path = array_column(st, 11);
        h->roots = array_column(st, 12);
        sound = holder && h->path && h->roots && sqlite3_column_type(st, 13) == SQLITE_TEXT;
        if (sound)
            h->path_text = g_strdup((const char *)sqlite3_column_text(st, 13));
    } else {
        sound = sound && sqlite3_column_type(st, 12) == SQLITE_NULL &&
                sqlite3_column_type(st, 13) == SQLITE_NULL;
    }
    if (!sound) {
        leaks_holder_clear(h);
        ok = holder_damaged(info->snapshot, type_id, error);
        goto out;
    }
    h->instances = (uint64_t)sqlite3_column_int64(st, 5);
    h->found = holder;
    if (holder) {
        h->object = (uint64_t)sqlite3_column_int64(st, 6);
        h->type_id = (uint32_t)sqlite3_column_int64(st, 7);
        h->retained_bytes = (uint64_t)sqlite3_column_int64(st, 8);
        h->held = (uint64_t)sqlite3_column_int64(st, 9);
        h->holders = (uint64_t)sqlite3_column_int64(st, 10);
    }
    /* the file's row: only from a file found intact (query_db_stored_sound) */
    if (strcmp(schema, "main") == 0 && !query_db_stored_sound(db, error)) {
        leaks_holder_clear(h);
        ok = FALSE;
        goto out;
    }
    *found = TRUE;
out:
    sqlite3_finalize(st);
    return ok;
}

gboolean leaks_holder_read(sqlite3 *db, const snapshot_info *info, uint32_t type_id,
                           leaks_holder *h, gboolean *found, GError **error)
{
    static const char *const schemas[] = {"temp", "main"}; /* this command's, then the file's */
    memset(h, 0, sizeof *h);
    *found = FALSE;
    for (size_t i = 0; i < G_N_ELEMENTS(schemas) && !*found; i++) {
        gboolean exists = FALSE;
        if (!query_db_table_exists(db, schemas[i], "leak_holders", &exists, error) ||
            (exists && !stored_read(db, schemas[i], info, type_id, h, found, error)))
            return FALSE;
    }
    return TRUE;
}

gboolean leaks_holder_keep(sqlite3 *db, const snapshot_info *info, uint32_t type_id,
                           const leaks_holder *h, GError **error)
{
    char *errmsg = NULL;
    sqlite3_stmt *st = NULL;
    if (sqlite3_exec(db, HOLDERS_TABLE("temp."), NULL, NULL, &errmsg) != SQLITE_OK ||
        sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO temp.leak_holders VALUES (?1, ?2, ?3, ?4,"
                               " ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17)",
                           -1, &st, NULL) != SQLITE_OK) {
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_SQLITE, "keeping leak holders failed: %s",
                    errmsg ? errmsg : sqlite3_errmsg(db));
        sqlite3_free(errmsg);
        return FALSE;
    }
    sqlite3_bind_int64(st, 1, info->snapshot);
    sqlite3_bind_int64(st, 2, type_id);
    sqlite3_bind_int64(st, 3, LEAKS_HOLDERS_VERSION);
    sqlite3_bind_int64(st, 4, info->gc);
    sqlite3_bind_int64(st, 5, info->objects);
    sqlite3_bind_int64(st, 6, info->refs);
    sqlite3_bind_int64(st, 7, info->roots);
    sqlite3_bind_int64(st, 8, (int64_t)h->instances);
    if (h->found) {
        sqlite3_bind_int64(st, 9, (int64_t)h->object);
        sqlite3_bind_int64(st, 10, h->type_id);
        sqlite3_bind_int64(st, 11, (int64_t)h->retained_bytes);
        sqlite3_bind_int64(st, 12, (int64_t)h->held);
        sqlite3_bind_int64(st, 13, (int64_t)h->holders);
    }
    if (h->path) { /* every digit kept: jansson writes what it reads back the same */
        sqlite3_bind_text(st, 14, json_dumps(h->path, JSON_COMPACT), -1, free);
        sqlite3_bind_text(st, 15, json_dumps(h->roots, JSON_COMPACT), -1, free);
        sqlite3_bind_text(st, 16, h->path_text, -1, SQLITE_TRANSIENT);
    }
    sqlite3_bind_text(st, 17, "heaplens " HEAPLENS_VERSION, -1, SQLITE_STATIC);
    gboolean ok = sqlite3_step(st) == SQLITE_DONE;
    if (!ok)
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_SQLITE, "keeping leak holders failed: %s",
                    sqlite3_errmsg(db));
    sqlite3_finalize(st);
    return ok;
}

gboolean leaks_commit(sqlite3 *db, const char *path, query_progress *progress, char **note,
                      GError **error)
{
    return query_db_kept_commit(db, path, "leak_holders", HOLDERS_TABLE("main."), "leak holders",
                                progress, note, error);
}
