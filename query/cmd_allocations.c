/* cmd_allocations.c — `heaplens allocations FILE [--json] [--top K] [--thread TID|NAME]`:
 * allocated count and bytes per type, most bytes first. */
#include "query/commands.h"
#include "query/estimates.h"
#include "query/query.h"

#include <string.h>

/* Allocations are counted per (interval, type, thread, heap) by the collector (alloc_counts: a
 * few rows per type), or estimated from samples (sampled and attach recordings), summed per type
 * by the SQL of estimates.h. ?1: the thread filter, a JSON array of OS thread ids. */
static const char thread_filter[] = "thread IN (SELECT value FROM json_each(?1))";

typedef struct alloc_row {
    int64_t type_id;
    int64_t count;
    int64_t bytes;
    char *name; /* owned */
} alloc_row;

/* Most bytes first, then most objects, then by name, so that the order is stable. */
static int alloc_row_compare(const void *a, const void *b)
{
    const alloc_row *x = a, *y = b;
    if (x->bytes != y->bytes)
        return x->bytes > y->bytes ? -1 : 1;
    if (x->count != y->count)
        return x->count > y->count ? -1 : 1;
    return strcmp(x->name, y->name);
}

static void alloc_row_clear(void *row)
{
    g_free(((alloc_row *)row)->name);
}

/* Sums the allocations (of the threads in `thread_ids`, a JSON array, when not NULL) per type into
 * `rows`, sorted, every row named ("<type N>" for a type id without a name, as the views do). */
static gboolean allocations_sum(sqlite3 *db, const query_estimates *estimates,
                                const char *thread_ids, GArray *rows, GError **error)
{
    gboolean ok = FALSE;
    gboolean row = FALSE;
    gboolean stepped = FALSE;
    /* type id → 1 + index of its row in `rows` */
    g_autoptr(GHashTable) index = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL);
    sqlite3_stmt *names = NULL;
    g_autofree char *sql =
        query_estimates_sql_new(estimates, "type_id", thread_ids ? thread_filter : NULL);
    sqlite3_stmt *stmt = query_db_prepare(db, sql, error);
    if (!stmt)
        goto out;
    if (thread_ids)
        sqlite3_bind_text(stmt, 1, thread_ids, -1, SQLITE_STATIC);
    while ((stepped = query_db_step(stmt, &row, error)) && row) {
        int64_t type_id = sqlite3_column_int64(stmt, 0);
        gpointer slot = NULL;
        if (!g_hash_table_lookup_extended(index, &type_id, NULL, &slot)) {
            alloc_row fresh = {.type_id = type_id};
            g_array_append_val(rows, fresh);
            slot = GUINT_TO_POINTER(rows->len);
            g_hash_table_insert(index, g_memdup2(&type_id, sizeof type_id), slot);
        }
        alloc_row *r = &g_array_index(rows, alloc_row, GPOINTER_TO_UINT(slot) - 1);
        r->count = query_add_saturating(r->count, sqlite3_column_int64(stmt, 1));
        r->bytes = query_add_saturating(r->bytes, sqlite3_column_int64(stmt, 2));
    }
    if (!stepped)
        goto out;

    names = query_db_prepare(db, "SELECT id, name FROM types", error);
    if (!names)
        goto out;
    while ((stepped = query_db_step(names, &row, error)) && row) {
        int64_t type_id = sqlite3_column_int64(names, 0);
        const char *name = (const char *)sqlite3_column_text(names, 1);
        gpointer slot = NULL;
        if (name && g_hash_table_lookup_extended(index, &type_id, NULL, &slot)) {
            alloc_row *r = &g_array_index(rows, alloc_row, GPOINTER_TO_UINT(slot) - 1);
            g_free(r->name);
            r->name = g_strdup(name);
        }
    }
    if (!stepped)
        goto out;
    for (guint i = 0; i < rows->len; i++) {
        alloc_row *r = &g_array_index(rows, alloc_row, i);
        if (!r->name)
            r->name = g_strdup_printf("<type %" G_GINT64_FORMAT ">", r->type_id);
    }
    g_array_sort(rows, alloc_row_compare);
    ok = TRUE;
out:
    sqlite3_finalize(stmt);
    sqlite3_finalize(names);
    return ok;
}

static const query_column allocations_columns[] = {
    {"count", QUERY_ALIGN_RIGHT, NULL},
    {"bytes", QUERY_ALIGN_RIGHT, NULL},
    {"type", QUERY_ALIGN_LEFT, NULL},
};

/* The OS thread ids `spec` names, as a JSON array text: `spec` is an OS thread id of a thread in
 * the recording, or else the name of one or more threads. */
static char *thread_ids_new(sqlite3 *db, const char *path, const char *spec, GError **error)
{
    char *ids = NULL;
    gboolean row = FALSE;
    gboolean stepped = FALSE;
    guint64 tid = 0;
    g_autoptr(GString) list = g_string_new("[");
    sqlite3_stmt *stmt = query_db_prepare(
        db, "SELECT os_tid FROM threads WHERE os_tid = ?1 OR (?1 IS NULL AND name = ?2)"
            " ORDER BY os_tid",
        error);
    if (!stmt)
        goto out;
    if (g_ascii_string_to_unsigned(spec, 10, 0, G_MAXINT64, &tid, NULL)) {
        sqlite3_bind_int64(stmt, 1, (sqlite3_int64)tid);
        if (!query_db_step(stmt, &row, error))
            goto out;
        if (row) {
            g_string_append_printf(list, "%lld", (long long)sqlite3_column_int64(stmt, 0));
            row = FALSE;
        } else {
            /* Not a thread id: maybe a thread named with digits. */
            sqlite3_reset(stmt);
            sqlite3_bind_null(stmt, 1);
        }
    } else {
        sqlite3_bind_null(stmt, 1);
    }
    if (list->len == 1) {
        sqlite3_bind_text(stmt, 2, spec, -1, SQLITE_STATIC);
        while ((stepped = query_db_step(stmt, &row, error)) && row)
            g_string_append_printf(list, "%s%lld", list->len > 1 ? "," : "",
                                   (long long)sqlite3_column_int64(stmt, 0));
        if (!stepped)
            goto out;
    }
    if (list->len == 1) {
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_NOT_FOUND,
                    "no thread '%s' in %s: give an OS thread id or a managed thread name", spec,
                    path);
        goto out;
    }
    g_string_append_c(list, ']');
    ids = g_string_free(g_steal_pointer(&list), FALSE);
out:
    sqlite3_finalize(stmt);
    return ids;
}

int cmd_allocations(int argc, char **argv)
{
    int status = 1;
    gboolean json = FALSE;
    const char *path = NULL;
    const char *top_text = NULL;
    const char *thread = NULL;
    const query_option options[] = {
        {"json", QUERY_OPT_FLAG, &json},
        {"top", QUERY_OPT_VALUE, &top_text},
        {"thread", QUERY_OPT_VALUE, &thread},
        {NULL, 0, NULL},
    };
    g_autoptr(GError) error = NULL;
    g_autoptr(query_table) table = NULL;
    g_autofree char *thread_ids = NULL;
    g_auto(query_estimates) estimates = {0};
    g_autofree char *note = NULL;
    g_autoptr(GArray) types = g_array_new(FALSE, TRUE, sizeof(alloc_row));
    query_json_rows rows;
    uint64_t top = G_MAXUINT64;
    sqlite3 *db = NULL;
    char count[QUERY_FORMAT_MAX];
    char bytes[QUERY_FORMAT_MAX];

    g_array_set_clear_func(types, alloc_row_clear);
    switch (query_args_parse(argc, argv, options, &path, &error)) {
    case QUERY_ARGS_HELP:
        status = 0;
        goto out;
    case QUERY_ARGS_ERROR:
        goto out;
    case QUERY_ARGS_OK:
        break;
    }
    if (top_text && !query_args_parse_uint(argv[0], "top", top_text, 1, G_MAXINT64,
                                           "a positive number", &top, &error))
        goto out;
    db = query_db_open(path, &error);
    if (!db || !query_db_check_alloc_counts(db, &error))
        goto out;
    if (thread) {
        thread_ids = thread_ids_new(db, path, thread, &error);
        if (!thread_ids)
            goto out;
    }
    if (!query_estimates_get(db, &estimates, &error) ||
        !allocations_sum(db, &estimates, thread_ids, types, &error))
        goto out;
    note = query_estimates_note_new(&estimates);

    if (json) {
        json_t *head = note ? query_estimates_json(&estimates) : NULL;
        query_json_rows_begin(&rows, stdout, head);
        json_decref(head);
    } else {
        if (note)
            printf("%s\n\n", note);
        table = query_table_new(allocations_columns, G_N_ELEMENTS(allocations_columns));
    }
    for (guint i = 0; i < types->len && i < top; i++) {
        const alloc_row *r = &g_array_index(types, alloc_row, i);
        if (json) {
            query_json_rows_add(&rows, json_pack("{s:o, s:I, s:I}", "type",
                                                 query_json_string(r->name), "count",
                                                 (json_int_t)r->count, "bytes",
                                                 (json_int_t)r->bytes));
        } else {
            query_table_add(table, query_count_format(r->count, count));
            query_table_add(table, query_size_format(r->bytes, bytes));
            query_table_add(table, r->name);
        }
    }
    if (json)
        query_json_rows_end(&rows);
    else if (types->len == 0)
        fputs(thread ? "no allocation by this thread was recorded\n"
                     : "no allocation was recorded\n",
              stdout);
    else
        query_table_print(table, stdout);
    if (!query_db_note_print(db, json, &error) || !query_output_finish(stdout, &error))
        goto out;
    status = 0;
out:
    sqlite3_close(db);
    if (error)
        query_error_report(error);
    return status;
}
