/* cmd_snapshots.c — `heaplens snapshots FILE [--json]`: the heap snapshots of a recording, with
 * their size and the model's self-check (store/SCHEMA.md, table snapshots). */
#include "cli/commands.h"
#include "cli/cli.h"

static const char snapshots_sql[] =
    "SELECT snapshot, gc, trigger, objects, refs, roots, handles, bytes, model_missing,"
    " model_extra, frozen, unresolved, walk_ns, model_unreported FROM snapshots ORDER BY snapshot";

static const query_column snapshots_columns[] = {
    {"snapshot", QUERY_ALIGN_RIGHT, NULL}, {"gc", QUERY_ALIGN_RIGHT, NULL},
    {"trigger", QUERY_ALIGN_LEFT, NULL},   {"objects", QUERY_ALIGN_RIGHT, NULL},
    {"references", QUERY_ALIGN_RIGHT, NULL}, {"roots", QUERY_ALIGN_RIGHT, NULL},
    {"handles", QUERY_ALIGN_RIGHT, NULL},  {"bytes", QUERY_ALIGN_RIGHT, NULL},
    {"frozen", QUERY_ALIGN_RIGHT, NULL},   {"missing", QUERY_ALIGN_RIGHT, NULL},
    {"extra", QUERY_ALIGN_RIGHT, NULL},    {"unreported", QUERY_ALIGN_RIGHT, NULL},
    {"walk (ms)", QUERY_ALIGN_RIGHT, NULL},
};

int cmd_snapshots(int argc, char **argv)
{
    int status = 1;
    gboolean json = FALSE, row = FALSE, stepped = FALSE;
    const char *path = NULL;
    const query_option options[] = {
        {"json", QUERY_OPT_FLAG, &json},
        {NULL, 0, NULL},
    };
    g_autoptr(GError) error = NULL;
    g_autoptr(query_table) table = NULL;
    query_json_rows rows;
    sqlite3 *db = NULL;
    sqlite3_stmt *stmt = NULL;
    int64_t drift = 0;
    size_t n = 0;
    char f[8][QUERY_FORMAT_MAX];

    switch (query_args_parse(argc, argv, options, &path, &error)) {
    case QUERY_ARGS_HELP:
        status = 0;
        goto out;
    case QUERY_ARGS_ERROR:
        goto out;
    case QUERY_ARGS_OK:
        break;
    }
    db = query_db_open(path, &error);
    if (!db || !(stmt = query_db_prepare(db, snapshots_sql, &error)))
        goto out;
    if (json)
        query_json_rows_begin(&rows, stdout, NULL);
    else
        table = query_table_new(snapshots_columns, G_N_ELEMENTS(snapshots_columns));
    while ((stepped = query_db_step(stmt, &row, &error)) && row) {
        int64_t v[14];
        for (int i = 0; i < 14; i++)
            v[i] = sqlite3_column_int64(stmt, i);
        const char *trigger = (const char *)sqlite3_column_text(stmt, 2);
        drift += v[8] + v[9];
        n++;
        if (json) {
            query_json_rows_add(
                &rows, json_pack("{s:I, s:I, s:o, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
                                 "snapshot", (json_int_t)v[0], "gc", (json_int_t)v[1], "trigger",
                                 query_json_string(trigger), "objects", (json_int_t)v[3],
                                 "references", (json_int_t)v[4], "roots", (json_int_t)v[5],
                                 "handles", (json_int_t)v[6], "bytes", (json_int_t)v[7],
                                 "model_missing", (json_int_t)v[8], "model_extra",
                                 (json_int_t)v[9], "frozen", (json_int_t)v[10], "unresolved",
                                 (json_int_t)v[11], "walk_ns", (json_int_t)v[12],
                                 "model_unreported", (json_int_t)v[13]));
            continue;
        }
        query_table_addf(table, "%" G_GINT64_FORMAT, v[0]);
        query_table_addf(table, "%" G_GINT64_FORMAT, v[1]);
        query_table_add(table, trigger);
        query_table_add(table, query_count_format(v[3], f[0]));
        query_table_add(table, query_count_format(v[4], f[1]));
        query_table_add(table, query_count_format(v[5], f[2]));
        query_table_add(table, query_count_format(v[6], f[3]));
        query_table_add(table, query_size_format(v[7], f[4]));
        query_table_add(table, query_count_format(v[10], f[5]));
        query_table_addf(table, "%" G_GINT64_FORMAT, v[8]);
        query_table_addf(table, "%" G_GINT64_FORMAT, v[9]);
        query_table_addf(table, "%" G_GINT64_FORMAT, v[13]);
        query_table_add(table, query_ms_format(v[12], f[6]));
    }
    if (!stepped)
        goto out;
    if (json) {
        query_json_rows_end(&rows);
    } else if (n == 0) {
        printf("%s has no snapshots: record with --snapshot (default: one at every GC.Collect), "
               "or take one with 'heaplens snapshot PID'\n", path);
    } else {
        query_table_print(table, stdout);
        /* The self-check: missing = the model holds it, the runtime's walk does not; extra = the
         * other way round (objects the collector never saw allocated). Unreported objects (the
         * runtime allocated them without telling) are no disagreement. */
        if (drift)
            printf("self-check: the model and the runtime's heap walk disagree on %" G_GINT64_FORMAT
                   " objects (see store/SCHEMA.md, snapshots)\n", drift);
        else
            printf("self-check: the model agrees with the runtime's heap walk in every snapshot\n");
    }
    if (!query_db_note_print(db, json, &error) || !query_output_finish(stdout, &error))
        goto out;
    status = 0;
out:
    sqlite3_finalize(stmt);
    sqlite3_close(db);
    if (error)
        query_error_report(error);
    return status;
}
