/* cmd_gcs.c — `heaplens gcs FILE [--json]`: one row per GC (query/gcs.h). */
#include "cli/cli.h"
#include "cli/commands.h"
#include "query/gcs.h"
#include "store/store.h"

#include <string.h>

static const query_column gcs_columns[] = {
    {"gc", QUERY_ALIGN_RIGHT, NULL},
    {"gen", QUERY_ALIGN_RIGHT, NULL},
    {"reason", QUERY_ALIGN_LEFT, NULL},
    {"induced", QUERY_ALIGN_LEFT, NULL},
    {"compacting", QUERY_ALIGN_LEFT, NULL},
    {"pause (ms)", QUERY_ALIGN_RIGHT, NULL},
    {"gen0", QUERY_ALIGN_RIGHT, NULL},
    {"", QUERY_ALIGN_RIGHT, " → "},
    {"gen1", QUERY_ALIGN_RIGHT, NULL},
    {"", QUERY_ALIGN_RIGHT, " → "},
    {"gen2", QUERY_ALIGN_RIGHT, NULL},
    {"", QUERY_ALIGN_RIGHT, " → "},
    {"loh", QUERY_ALIGN_RIGHT, NULL},
    {"", QUERY_ALIGN_RIGHT, " → "},
    {"poh", QUERY_ALIGN_RIGHT, NULL},
    {"", QUERY_ALIGN_RIGHT, " → "},
    {"survived", QUERY_ALIGN_RIGHT, NULL},
};
/* Shown only with a census, and only when some GC went without a snapshot due at it. */
static const query_column census_column = {"census (ms)", QUERY_ALIGN_RIGHT, NULL};
static const query_column skipped_column = {"snapshot", QUERY_ALIGN_LEFT, NULL};

/* The row of query_gc_json, and with a census its time and objects. */
static json_t *gcs_row_json(const query_gc *gc, gboolean census)
{
    json_t *j = query_gc_json(gc);
    if (census && j) {
        json_object_set_new(j, "census_ns", query_json_value(gc->census_ns));
        json_object_set_new(j, "census_objects", query_json_value(gc->census_objects));
    }
    return j;
}

static const char *yes_no(int64_t v)
{
    return v == QUERY_NULL ? NULL : v ? "yes" : "no";
}

static void size_cell_add(query_table *table, int64_t v)
{
    char buf[QUERY_FORMAT_MAX];
    query_table_add(table, v == QUERY_NULL ? NULL : query_size_format(v, buf));
}

/* The cell of a GC that went without its snapshot: why, in words a user reads (SCHEMA.md). */
static const char *skipped_cell(const char *skipped)
{
    if (!skipped)
        return "";
    if (strcmp(skipped, STORE_SNAPSHOT_SKIPPED_HELD) == 0)
        return "skipped (held)";
    if (strcmp(skipped, STORE_SNAPSHOT_SKIPPED_DETACH) == 0)
        return "skipped (detach)";
    return skipped; /* a newer reason: as stored */
}

static void gcs_row_add(query_table *table, const query_gc *gc, gboolean census,
                        gboolean skips)
{
    char buf[QUERY_FORMAT_MAX];
    query_table_add(table, query_count_format(gc->gc, buf));
    /* (a damaged file's NULL generation reads as 0, as SQLite reads it) */
    query_table_addf(table, "%lld", (long long)(gc->generation == QUERY_NULL ? 0 : gc->generation));
    query_table_add(table, gc->reason);
    query_table_add(table, yes_no(gc->induced));
    query_table_add(table, yes_no(gc->compacting));
    query_table_add(table,
                    gc->pause_ns == QUERY_NULL ? NULL : query_ms_format(gc->pause_ns, buf));
    for (int g = 0; g < QUERY_SIZE_GENS; g++) {
        size_cell_add(table, gc->size_before[g]);
        size_cell_add(table, gc->size_after[g]);
    }
    size_cell_add(table, gc->survived_bytes);
    if (census)
        query_table_add(table, gc->census_ns == QUERY_NULL ? NULL
                                                           : query_ms_format(gc->census_ns, buf));
    if (skips)
        query_table_add(table, skipped_cell(gc->snapshot_skipped));
}

int cmd_gcs(int argc, char **argv)
{
    int status = 1;
    gboolean json = FALSE;
    const char *path = NULL;
    const query_option options[] = {
        {"json", QUERY_OPT_FLAG, &json},
        {NULL, 0, NULL},
    };
    g_autoptr(GError) error = NULL;
    g_autoptr(GArray) gcs = NULL;
    gboolean census = FALSE;
    sqlite3 *db = NULL;

    if (!query_args_take(argc, argv, options, &path, &status, &error))
        goto out;
    db = query_db_open(path, &error);
    if (!db || !(gcs = query_gcs_read(db, &census, &error)))
        goto out;
    if (json) {
        query_json_rows rows;
        query_json_rows_begin(&rows, stdout, NULL);
        for (guint i = 0; i < gcs->len; i++)
            query_json_rows_add(&rows, gcs_row_json(&g_array_index(gcs, query_gc, i), census));
        query_json_rows_end(&rows);
    } else if (gcs->len == 0) {
        printf("no GC was recorded\n");
    } else {
        gboolean skips = FALSE;
        for (guint i = 0; i < gcs->len; i++)
            skips |= g_array_index(gcs, query_gc, i).snapshot_skipped != NULL;
        query_column columns[G_N_ELEMENTS(gcs_columns) + 2];
        size_t n = G_N_ELEMENTS(gcs_columns);
        memcpy(columns, gcs_columns, sizeof gcs_columns);
        if (census)
            columns[n++] = census_column;
        if (skips)
            columns[n++] = skipped_column;
        g_autoptr(query_table) table = query_table_new(columns, n);
        for (guint i = 0; i < gcs->len; i++)
            gcs_row_add(table, &g_array_index(gcs, query_gc, i), census, skips);
        query_table_print(table, stdout);
    }
    if (!query_db_note_print(db, json, &error) || !query_output_finish(stdout, &error))
        goto out;
    status = 0;
out:
    sqlite3_close(db);
    if (error)
        query_error_report(error);
    return status;
}
