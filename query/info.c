/* info.c — the run, its counters and totals (info.h). */
#include "query/info.h"

#include "query/allocations.h"
#include "query/checkpoints.h"

#include "query/query.h"

#include <glib/gstdio.h>
#include <string.h>

/* totals->survived and survived_bytes: the two columns of `sql`'s one row. */
static gboolean info_survived_read(sqlite3 *db, const char *sql, query_info_totals *totals,
                                   GError **error)
{
    gboolean row = FALSE;
    sqlite3_stmt *stmt = query_db_prepare(db, sql, error);
    gboolean ok = stmt && query_db_step(stmt, &row, error);
    if (ok) {
        totals->survived = sqlite3_column_int64(stmt, 0);
        totals->survived_bytes = sqlite3_column_int64(stmt, 1);
    }
    sqlite3_finalize(stmt);
    return ok;
}

static gboolean info_totals_get(sqlite3 *db, const char *path, const query_estimates *estimates,
                                const query_totals *allocations, query_info_totals *totals,
                                GError **error)
{
    gboolean ok = FALSE;
    gboolean row = FALSE;
    GStatBuf st;
    sqlite3_stmt *stmt = query_db_prepare(
        db,
        "SELECT COUNT(*), TOTAL(generation = 0), TOTAL(generation = 1), TOTAL(generation = 2),"
        "       TOTAL(induced <> 0), TOTAL(compacting <> 0), TOTAL(incomplete <> 0),"
        "       TOTAL(pause_ns)"
        "  FROM gcs",
        error);
    if (!stmt || !query_db_step(stmt, &row, error))
        goto out;
    totals->gcs = sqlite3_column_int64(stmt, 0);
    for (int g = 0; g < 3; g++)
        totals->gcs_gen[g] = sqlite3_column_int64(stmt, 1 + g);
    totals->gcs_induced = sqlite3_column_int64(stmt, 4);
    totals->gcs_compacting = sqlite3_column_int64(stmt, 5);
    totals->gcs_incomplete = sqlite3_column_int64(stmt, 6);
    totals->pause_ns = sqlite3_column_int64(stmt, 7);
    sqlite3_finalize(stmt);
    stmt = NULL;

    /* Every allocation is counted (alloc_counts); objects rows are those that survived a GC
     * (and objects first seen in a heap walk). The allocation total is the one every command
     * gives (estimates.h, query_totals_read): without ObjectAllocated, the large (and pinned)
     * objects and the census's counts plus the estimates of the small objects. */
    if (!info_survived_read(db, "SELECT TOTAL(survived), TOTAL(survived_bytes) FROM alloc_counts",
                            totals, error))
        goto out;
    totals->allocations = allocations->count;
    totals->allocation_bytes = allocations->bytes;

    if (!query_db_objects_totals(db, &totals->objects, &totals->object_bytes,
                                 &totals->objects_alive, error))
        goto out;
    /* Uncounted small objects: every object that survived a GC is an objects row (given its id
     * at the first GC that found it alive), as the record summary counts them. */
    totals->survived_proven = -1; /* not read: every survivor counted */
    totals->survived_at_most = -1;
    if (estimates->followed) { /* only the samples' objects have rows: estimated */
        query_survived survived;
        if (!query_survived_read(db, estimates, TRUE, &survived, error))
            goto out;
        totals->survived = survived.count;
        totals->survived_bytes = survived.bytes;
        totals->survived_at_least = survived.at_least;
        totals->survived_exact = survived.exact;
        totals->survived_at_most = survived.at_most;
        totals->survived_proven = survived.proven;
    } else if (estimates->uncounted) {
        totals->survived = totals->objects;
        totals->survived_bytes = totals->object_bytes;
    }

    /* Counted as `allocations` counts them: info said "types 4,398" of a recording whose
     * `allocations` and summary said "of 4,238 types" (the rest only a snapshot found). */
    if (!query_allocation_types_count(db, path, &totals->allocation_types, error) ||
        !query_db_int(db, "SELECT COUNT(*) FROM types", &totals->types, error) ||
        !query_db_int(db, "SELECT COUNT(*) FROM threads", &totals->threads, error))
        goto out;
    totals->file_bytes = g_stat(path, &st) == 0 ? (int64_t)st.st_size : -1;
    ok = TRUE;
out:
    sqlite3_finalize(stmt);
    return ok;
}

static void value_clear(void *p)
{
    query_info_value *v = p;
    g_free(v->name);
    g_free(v->text);
    json_decref(v->json);
}

static GArray *values_new(void)
{
    GArray *values = g_array_new(FALSE, TRUE, sizeof(query_info_value));
    g_array_set_clear_func(values, value_clear);
    return values;
}

static void value_add(GArray *values, sqlite3_stmt *stmt, const char *name, int column)
{
    query_info_value v = {
        .name = g_strdup(name),
        .text = g_strdup((const char *)sqlite3_column_text(stmt, column)),
        .value = sqlite3_column_int64(stmt, column),
        .json = query_json_column(stmt, column),
    };
    g_array_append_val(values, v);
}

/* The run row, every column as stored (the schema may grow columns). */
GArray *query_info_run_read(sqlite3 *db, GError **error)
{
    gboolean row = FALSE;
    GArray *run = values_new();
    sqlite3_stmt *stmt = query_db_prepare(db, "SELECT * FROM run WHERE id = 1", error);
    if (!stmt || !query_db_step(stmt, &row, error)) {
        g_clear_pointer(&run, g_array_unref);
        goto out;
    }
    for (int c = 0; row && c < sqlite3_column_count(stmt); c++) {
        const char *name = sqlite3_column_name(stmt, c);
        if (strcmp(name, "id") == 0)
            continue;
        value_add(run, stmt, name, c);
    }
out:
    sqlite3_finalize(stmt);
    return run;
}

GArray *query_info_counters_read(sqlite3 *db, GError **error)
{
    gboolean row = FALSE;
    gboolean stepped = FALSE;
    GArray *counters = values_new();
    sqlite3_stmt *stmt =
        query_db_prepare(db, "SELECT name, value FROM counters ORDER BY name", error);
    while (stmt && (stepped = query_db_step(stmt, &row, error)) && row) {
        const char *name = (const char *)sqlite3_column_text(stmt, 0);
        if (name)
            value_add(counters, stmt, name, 1);
    }
    sqlite3_finalize(stmt);
    if (!stepped)
        g_clear_pointer(&counters, g_array_unref);
    return counters;
}

json_t *query_info_values_json(const GArray *values)
{
    json_t *object = json_object();
    for (guint i = 0; i < values->len; i++) {
        const query_info_value *v = &g_array_index(values, query_info_value, i);
        json_object_set(object, v->name, v->json);
    }
    return object;
}

json_t *query_info_unrecorded_json(sqlite3 *db)
{
    json_t *list = json_array();
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "SELECT pid, command FROM unrecorded_processes ORDER BY rowid", -1,
                           &st, NULL) != SQLITE_OK) {
        sqlite3_finalize(st);
        return list;
    }
    while (sqlite3_step(st) == SQLITE_ROW) {
        const char *command = (const char *)sqlite3_column_text(st, 1);
        json_array_append_new(list, json_pack("{s:I, s:s}", "pid",
                                              (json_int_t)sqlite3_column_int64(st, 0), "command",
                                              command ? command : ""));
    }
    sqlite3_finalize(st);
    return list;
}

gboolean query_info_read(sqlite3 *db, const char *path, query_info *info, GError **error)
{
    memset(info, 0, sizeof *info);
    if (!query_db_check_alloc_counts(db, error) ||
        !query_estimates_get(db, &info->estimates, error) ||
        !(info->run = query_info_run_read(db, error)) ||
        !(info->counters = query_info_counters_read(db, error)) ||
        !query_totals_read(db, &info->estimates, &info->allocations, error) ||
        !info_totals_get(db, path, &info->estimates, &info->allocations, &info->totals, error))
        return FALSE;
    info->unrecorded = query_info_unrecorded_json(db);
    if (!(info->checkpoints = checkpoint_list_json(db, error)))
        return FALSE;
    return TRUE;
}

void query_info_clear(query_info *info)
{
    query_estimates_clear(&info->estimates);
    g_clear_pointer(&info->run, g_array_unref);
    g_clear_pointer(&info->counters, g_array_unref);
    g_clear_pointer(&info->unrecorded, json_decref);
    g_clear_pointer(&info->checkpoints, json_decref);
}
