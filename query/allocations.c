/* allocations.c — allocated count and bytes per type (allocations.h). */
#include "query/allocations.h"

#include "query/query.h"
#include "store/store.h"

#include <string.h>

/* Allocations are counted per (interval, type, thread, heap) by the collector (alloc_counts: a
 * few rows per type), or estimated from samples (sampled and attach recordings), summed per type
 * by the SQL of estimates.h. ?1: the thread filter, a JSON array of OS thread ids. */
static const char thread_filter[] = "thread IN (SELECT value FROM json_each(?1))";

/* Most bytes first, then most objects, then by name, so that the order is stable. */
static int allocation_compare(const void *a, const void *b)
{
    const query_allocation *x = a, *y = b;
    if (x->bytes != y->bytes)
        return x->bytes > y->bytes ? -1 : 1;
    if (x->count != y->count)
        return x->count > y->count ? -1 : 1;
    return strcmp(x->name, y->name);
}

static void allocation_clear(void *row)
{
    g_free(((query_allocation *)row)->name);
}

/* The part of each type's figures that the samples estimate, into its row of `rows` (`index`:
 * type id -> 1 + its index): the rows estimates.h's source marks `sampled` with the census, the
 * small objects' samples without it; every figure of a thread in a sampled or attach recording
 * (the census's totals spread over the threads by their samples). Rounded per type as the
 * totals are, so that the exact part is count - estimated_count. */
static gboolean allocations_estimated_parts(sqlite3 *db, const query_estimates *e,
                                            gboolean per_thread, const char *intervals,
                                            GHashTable *index, GArray *rows, GError **error)
{
    if (!e->uncounted)
        return TRUE;
    if (per_thread) {
        for (guint i = 0; i < rows->len; i++) {
            query_allocation *r = &g_array_index(rows, query_allocation, i);
            r->estimated_count = r->count;
            r->estimated_bytes = r->bytes;
        }
        return TRUE;
    }
    if (!e->census && !e->estimated)
        return TRUE;
    const char *source =
        e->census ? "SELECT gc, type_id, count, bytes FROM (" STORE_ALLOCATIONS_EXACT_SQL
                    ") WHERE sampled"
        : e->attach ? "SELECT gc, type_id, est_count AS count, est_bytes AS bytes"
                      " FROM alloc_samples WHERE heap = 0 OR heap = 4"
                    : "SELECT gc, type_id, est_count AS count, est_bytes AS bytes"
                      " FROM alloc_samples WHERE heap = 0";
    g_autofree char *sql = g_strdup_printf(
        "SELECT type_id, CAST(round(total(count)) AS INTEGER), CAST(round(total(bytes)) AS"
        " INTEGER) FROM (%s)%s%s GROUP BY type_id",
        source, intervals ? " WHERE " : "", intervals ? intervals : "");
    gboolean row = FALSE, stepped = FALSE;
    sqlite3_stmt *stmt = query_db_prepare(db, sql, error);
    if (!stmt)
        return FALSE;
    while ((stepped = query_db_step(stmt, &row, error)) && row) {
        int64_t type_id = sqlite3_column_int64(stmt, 0);
        gpointer slot = NULL;
        if (!g_hash_table_lookup_extended(index, &type_id, NULL, &slot))
            continue;
        query_allocation *r = &g_array_index(rows, query_allocation, GPOINTER_TO_UINT(slot) - 1);
        r->estimated_count = CLAMP(sqlite3_column_int64(stmt, 1), 0, r->count);
        r->estimated_bytes = CLAMP(sqlite3_column_int64(stmt, 2), 0, r->bytes);
    }
    sqlite3_finalize(stmt);
    return stepped;
}

/* Sums the allocations (of the threads in `thread_ids`, a JSON array, when not NULL) per type into
 * `rows`, sorted, every row named ("<type N>" for a type id without a name, as the views do). */
static gboolean allocations_sum(sqlite3 *db, const query_estimates *estimates,
                                const char *thread_ids, const char *intervals, GArray *rows,
                                GError **error)
{
    gboolean ok = FALSE;
    gboolean row = FALSE;
    gboolean stepped = FALSE;
    /* type id → 1 + index of its row in `rows` */
    g_autoptr(GHashTable) index = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL);
    sqlite3_stmt *names = NULL;
    g_autofree char *where =
        thread_ids && intervals ? g_strdup_printf("%s AND %s", thread_filter, intervals)
        : thread_ids            ? g_strdup(thread_filter)
                                : g_strdup(intervals);
    g_autofree char *sql = query_estimates_sql_new(estimates, "type_id", where);
    sqlite3_stmt *stmt = query_db_prepare(db, sql, error);
    if (!stmt)
        goto out;
    if (thread_ids)
        sqlite3_bind_text(stmt, 1, thread_ids, -1, SQLITE_STATIC);
    while ((stepped = query_db_step(stmt, &row, error)) && row) {
        int64_t type_id = sqlite3_column_int64(stmt, 0);
        gpointer slot = NULL;
        if (!g_hash_table_lookup_extended(index, &type_id, NULL, &slot)) {
            query_allocation fresh = {.type_id = type_id};
            g_array_append_val(rows, fresh);
            slot = GUINT_TO_POINTER(rows->len);
            g_hash_table_insert(index, g_memdup2(&type_id, sizeof type_id), slot);
        }
        query_allocation *r = &g_array_index(rows, query_allocation, GPOINTER_TO_UINT(slot) - 1);
        r->count = query_add_saturating(r->count, sqlite3_column_int64(stmt, 1));
        r->bytes = query_add_saturating(r->bytes, sqlite3_column_int64(stmt, 2));
    }
    if (!stepped)
        goto out;
    if (!allocations_estimated_parts(db, estimates, thread_ids != NULL, intervals, index, rows,
                                     error))
        goto out;

    names = query_db_prepare(db, "SELECT id, name FROM types", error);
    if (!names)
        goto out;
    while ((stepped = query_db_step(names, &row, error)) && row) {
        int64_t type_id = sqlite3_column_int64(names, 0);
        const char *name = (const char *)sqlite3_column_text(names, 1);
        gpointer slot = NULL;
        if (name && g_hash_table_lookup_extended(index, &type_id, NULL, &slot)) {
            query_allocation *r = &g_array_index(rows, query_allocation, GPOINTER_TO_UINT(slot) - 1);
            g_free(r->name);
            r->name = g_strdup(name);
        }
    }
    if (!stepped)
        goto out;
    for (guint i = 0; i < rows->len; i++) {
        query_allocation *r = &g_array_index(rows, query_allocation, i);
        if (!r->name)
            r->name = g_strdup_printf("<type %" G_GINT64_FORMAT ">", r->type_id);
    }
    g_array_sort(rows, allocation_compare);
    ok = TRUE;
out:
    sqlite3_finalize(stmt);
    sqlite3_finalize(names);
    return ok;
}

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

GArray *query_allocations_read(sqlite3 *db, const char *path, const char *thread,
                               query_estimates *estimates, query_totals *totals, GError **error)
{
    return query_allocations_read_between(db, path, thread, 0, INT64_MAX, estimates, totals,
                                          error);
}

gboolean query_allocation_types_count(sqlite3 *db, const char *path, int64_t *types,
                                      GError **error)
{
    g_auto(query_estimates) estimates = {0};
    GArray *allocated = query_allocations_read(db, path, NULL, &estimates, NULL, error);
    if (!allocated)
        return FALSE;
    *types = allocated->len;
    g_array_unref(allocated);
    return TRUE;
}

GArray *query_allocations_read_between(sqlite3 *db, const char *path, const char *thread,
                                       int64_t from_gc, int64_t to_gc,
                                       query_estimates *estimates, query_totals *totals,
                                       GError **error)
{
    g_autofree char *thread_ids = NULL;
    /* Integers written into the SQL: ?1 is the thread filter's. */
    g_autofree char *intervals =
        from_gc > 0 || to_gc < INT64_MAX
            ? g_strdup_printf("gc BETWEEN %" G_GINT64_FORMAT " AND %" G_GINT64_FORMAT, from_gc,
                              to_gc)
            : NULL;
    GArray *types = g_array_new(FALSE, TRUE, sizeof(query_allocation));
    g_array_set_clear_func(types, allocation_clear);
    if (!query_db_check_alloc_counts(db, error))
        goto fail;
    if (thread) {
        thread_ids = thread_ids_new(db, path, thread, error);
        if (!thread_ids)
            goto fail;
    }
    if (!query_estimates_get(db, estimates, error) ||
        (totals && !query_totals_read(db, estimates, totals, error)) ||
        !allocations_sum(db, estimates, thread_ids, intervals, types, error))
        goto fail;
    return types;
fail:
    g_array_unref(types);
    return NULL;
}
