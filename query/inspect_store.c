/* inspect_store.c — inspections computed once per snapshot and options, kept in the recording
 * (inspect.h; store/SCHEMA.md "inspections"). A command keeps what it computed in a TEMP table
 * of the same name on its read-only connection (which then answers a second question from it)
 * and writes it into the file last, as retained sizes are written (retention.h): a read-write
 * connection, the file checked first (store_db_damage_new: not again when the last heaplens
 * command that wrote it noted it intact and nothing changed it since), one transaction. */
#include "query/inspect.h"

#include "store/store.h"

#include <inttypes.h>

/* How heaplens inspects: rows of another version are computed again (and replaced). */
#define INSPECT_VERSION 1

#define INSPECTIONS_TABLE(schema)                                                                  \
    "CREATE TABLE IF NOT EXISTS " schema "inspections (\n"                                         \
    "  snapshot INTEGER NOT NULL,\n"                                                               \
    "  min_duplicates INTEGER NOT NULL,\n"                                                         \
    "  max_fill REAL NOT NULL,\n"                                                                  \
    "  min_subscribers INTEGER NOT NULL,\n"                                                        \
    "  version INTEGER NOT NULL,\n"                                                                \
    "  gc INTEGER NOT NULL,\n"                                                                     \
    "  objects INTEGER NOT NULL,\n"                                                                \
    "  refs INTEGER NOT NULL,\n"                                                                   \
    "  roots INTEGER NOT NULL,\n"                                                                  \
    "  findings INTEGER NOT NULL,\n"                                                               \
    "  document TEXT NOT NULL,\n"                                                                  \
    "  producer TEXT,\n"                                                                           \
    "  PRIMARY KEY (snapshot, min_duplicates, max_fill, min_subscribers)\n"                        \
    ") WITHOUT ROWID;\n"

#define INSPECTIONS_COLUMNS                                                                        \
    "snapshot, min_duplicates, max_fill, min_subscribers, version, gc, objects, refs, roots,"    \
    " findings, document, producer"

/* The findings array a stored row holds, validated: every element an object with a text kind
 * and an integer rank_bytes, `count` of them. NULL (damage, one line) otherwise. */
static json_t *findings_parse(const char *text, int64_t count, int64_t snapshot, GError **error)
{
    json_t *findings = text ? json_loads(text, JSON_REJECT_DUPLICATES, NULL) : NULL;
    gboolean sound = json_is_array(findings) && (int64_t)json_array_size(findings) == count;
    size_t i;
    json_t *f;
    json_array_foreach(findings, i, f) {
        if (!sound)
            break;
        sound = json_is_object(f) && json_is_string(json_object_get(f, "kind")) &&
                json_is_integer(json_object_get(f, "rank_bytes"));
    }
    if (sound)
        return findings;
    json_decref(findings);
    query_db_damaged(error, "the stored inspections of snapshot %" PRId64
                            " are not what heaplens writes", snapshot);
    return NULL;
}

/* The row of `schema`.inspections for `info` and `o`, when it is of this version and of this
 * very snapshot (its snapshots row unchanged): its findings into *findings (new reference),
 * else *findings NULL. */
static gboolean stored_read(sqlite3 *db, const char *schema, const snapshot_info *info,
                            const inspect_options *o, json_t **findings, GError **error)
{
    gboolean row = FALSE, ok = FALSE;
    *findings = NULL;
    g_autofree char *sql = g_strdup_printf(
        "SELECT version, gc, objects, refs, roots, findings, document FROM %s.inspections"
        " WHERE snapshot = ?1 AND min_duplicates = ?2 AND max_fill = ?3 AND min_subscribers = ?4",
        schema);
    sqlite3_stmt *st = query_db_prepare(db, sql, error);
    if (!st)
        return FALSE;
    sqlite3_bind_int64(st, 1, info->snapshot);
    sqlite3_bind_int64(st, 2, o->min_duplicates);
    sqlite3_bind_double(st, 3, o->max_fill);
    sqlite3_bind_int64(st, 4, o->min_subscribers);
    if (!query_db_step(st, &row, error))
        goto out;
    ok = TRUE;
    /* another heaplens' inspections, or of a snapshot since replaced: computed again */
    if (!row || sqlite3_column_int64(st, 0) != INSPECT_VERSION ||
        sqlite3_column_int64(st, 1) != info->gc || sqlite3_column_int64(st, 2) != info->objects ||
        sqlite3_column_int64(st, 3) != info->refs || sqlite3_column_int64(st, 4) != info->roots)
        goto out;
    if (sqlite3_column_type(st, 5) != SQLITE_INTEGER || sqlite3_column_type(st, 6) != SQLITE_TEXT) {
        ok = query_db_damaged(error, "the stored inspections of snapshot %" PRId64
                                     " are not what heaplens writes", info->snapshot);
        goto out;
    }
    /* the file's row: only from a file found intact (query_db_stored_sound) */
    if (strcmp(schema, "main") == 0 && !query_db_stored_sound(db, error)) {
        ok = FALSE;
        goto out;
    }
    *findings = findings_parse((const char *)sqlite3_column_text(st, 6),
                               sqlite3_column_int64(st, 5), info->snapshot, error);
    ok = *findings != NULL;
out:
    sqlite3_finalize(st);
    return ok;
}

gboolean inspect_stored_read(sqlite3 *db, const snapshot_info *info, const inspect_options *o,
                             json_t **findings, GError **error)
{
    static const char *const schemas[] = {"temp", "main"}; /* this command's, then the file's */
    *findings = NULL;
    for (size_t i = 0; i < G_N_ELEMENTS(schemas) && !*findings; i++) {
        gboolean exists = FALSE;
        if (!query_db_table_exists(db, schemas[i], "inspections", &exists, error) ||
            (exists && !stored_read(db, schemas[i], info, o, findings, error)))
            return FALSE;
    }
    return TRUE;
}

/* Binds the row of `info`, `o` and `findings` to `st` (INSERT ... INSPECTIONS_COLUMNS). */
static void row_bind(sqlite3_stmt *st, const snapshot_info *info, const inspect_options *o,
                     const json_t *findings, char *text)
{
    sqlite3_bind_int64(st, 1, info->snapshot);
    sqlite3_bind_int64(st, 2, o->min_duplicates);
    sqlite3_bind_double(st, 3, o->max_fill);
    sqlite3_bind_int64(st, 4, o->min_subscribers);
    sqlite3_bind_int64(st, 5, INSPECT_VERSION);
    sqlite3_bind_int64(st, 6, info->gc);
    sqlite3_bind_int64(st, 7, info->objects);
    sqlite3_bind_int64(st, 8, info->refs);
    sqlite3_bind_int64(st, 9, info->roots);
    sqlite3_bind_int64(st, 10, (sqlite3_int64)json_array_size(findings));
    sqlite3_bind_text(st, 11, text, -1, free);
    sqlite3_bind_text(st, 12, "heaplens " HEAPLENS_VERSION, -1, SQLITE_STATIC);
}

gboolean inspect_keep(sqlite3 *db, const snapshot_info *info, const inspect_options *o,
                      const json_t *findings, GError **error)
{
    char *errmsg = NULL;
    sqlite3_stmt *st = NULL;
    if (sqlite3_exec(db, INSPECTIONS_TABLE("temp."), NULL, NULL, &errmsg) != SQLITE_OK ||
        sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO temp.inspections (" INSPECTIONS_COLUMNS
                               ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)",
                           -1, &st, NULL) != SQLITE_OK) {
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_SQLITE, "keeping inspections failed: %s",
                    errmsg ? errmsg : sqlite3_errmsg(db));
        sqlite3_free(errmsg);
        return FALSE;
    }
    /* the order and every digit of the findings kept: jansson writes reals so that they read
     * back the same */
    row_bind(st, info, o, findings, json_dumps(findings, JSON_COMPACT));
    gboolean ok = sqlite3_step(st) == SQLITE_DONE;
    if (!ok)
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_SQLITE, "keeping inspections failed: %s",
                    sqlite3_errmsg(db));
    sqlite3_finalize(st);
    return ok;
}

gboolean inspect_commit(sqlite3 *db, const char *path, query_progress *progress, char **note,
                        GError **error)
{
    return query_db_kept_commit(db, path, "inspections", INSPECTIONS_TABLE("main."), "inspections",
                                progress, note, error);
}
