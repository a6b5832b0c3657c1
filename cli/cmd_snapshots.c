/* cmd_snapshots.c — `heaplens snapshots FILE [--json]`: the heap snapshots of a recording, with
 * their size and the model's self-check (query/snapshots.h). */
#include "cli/cli.h"
#include "cli/commands.h"
#include "query/checkpoints.h"
#include "query/snapshots.h"

static const query_column snapshots_columns[] = {
    {"snapshot", QUERY_ALIGN_RIGHT, NULL}, {"gc", QUERY_ALIGN_RIGHT, NULL},
    {"trigger", QUERY_ALIGN_LEFT, NULL},   {"objects", QUERY_ALIGN_RIGHT, NULL},
    {"references", QUERY_ALIGN_RIGHT, NULL}, {"roots", QUERY_ALIGN_RIGHT, NULL},
    {"handles", QUERY_ALIGN_RIGHT, NULL},  {"bytes", QUERY_ALIGN_RIGHT, NULL},
    {"frozen", QUERY_ALIGN_RIGHT, NULL},   {"missing", QUERY_ALIGN_RIGHT, NULL},
    {"extra", QUERY_ALIGN_RIGHT, NULL},    {"unreported", QUERY_ALIGN_RIGHT, NULL},
    {"walk (ms)", QUERY_ALIGN_RIGHT, NULL},
};

static const query_column checkpoints_columns[] = {
    {"checkpoint", QUERY_ALIGN_LEFT, NULL},
    {"after gc", QUERY_ALIGN_RIGHT, NULL},
    {"at (s)", QUERY_ALIGN_RIGHT, NULL},
    {"thread", QUERY_ALIGN_RIGHT, NULL},
};

/* The program's checkpoints under the snapshots: what a snapshot is compared with. */
static void checkpoints_print(const GArray *list)
{
    if (list->len == 0)
        return;
    g_autoptr(query_table) table = query_table_new(checkpoints_columns,
                                                   G_N_ELEMENTS(checkpoints_columns));
    for (guint i = 0; i < list->len; i++) {
        const checkpoint_info *c = &g_array_index(list, checkpoint_info, i);
        query_table_add(table, c->name);
        query_table_addf(table, "%" G_GINT64_FORMAT, c->gc);
        query_table_addf(table, "%.3f", (double)c->since_start_ns / 1e9);
        query_table_addf(table, "%" G_GINT64_FORMAT, c->thread);
    }
    printf("\n");
    query_table_print(table, stdout);
}

int cmd_snapshots(int argc, char **argv)
{
    int status = 1;
    gboolean json = FALSE;
    const char *path = NULL;
    const query_option options[] = {
        {"json", QUERY_OPT_FLAG, &json},
        {NULL, 0, NULL},
    };
    g_autoptr(GError) error = NULL;
    g_autoptr(GArray) snapshots = NULL;
    g_autoptr(GArray) checkpoints = NULL;
    sqlite3 *db = NULL;
    int64_t drift = 0;
    char f[10][QUERY_FORMAT_MAX];

    if (!query_args_take(argc, argv, options, &path, &status, &error))
        goto out;
    db = query_db_open(path, &error);
    if (!db || !(snapshots = query_snapshots_read(db, &drift, &error)) ||
        !(checkpoints = checkpoint_list_new(db, &error)))
        goto out;
    if (json) {
        query_json_rows rows;
        json_t *list = checkpoint_list_json(db, &error);
        if (!list)
            goto out;
        json_t *head = json_pack("{s:o}", "checkpoints", list);
        query_json_rows_begin(&rows, stdout, head);
        json_decref(head);
        for (guint i = 0; i < snapshots->len; i++) {
            const query_snapshot *s = &g_array_index(snapshots, query_snapshot, i);
            query_json_rows_add(
                &rows, json_pack("{s:I, s:I, s:o, s:o, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
                                 "snapshot", (json_int_t)s->snapshot, "gc", (json_int_t)s->gc,
                                 "trigger", query_json_string(s->trigger), "reason",
                                 query_json_string(s->reason), "objects",
                                 (json_int_t)s->objects, "references", (json_int_t)s->refs,
                                 "roots", (json_int_t)s->roots, "handles", (json_int_t)s->handles,
                                 "bytes", (json_int_t)s->bytes, "model_missing",
                                 (json_int_t)s->model_missing, "model_extra",
                                 (json_int_t)s->model_extra, "frozen", (json_int_t)s->frozen,
                                 "unresolved", (json_int_t)s->unresolved, "walk_ns",
                                 (json_int_t)s->walk_ns, "model_unreported",
                                 (json_int_t)s->model_unreported));
        }
        query_json_rows_end(&rows);
    } else if (snapshots->len == 0) {
        printf("%s has no snapshots: record with --snapshot (default: one at every GC.Collect), "
               "or take one with 'heaplens snapshot PID'\n", path);
        checkpoints_print(checkpoints);
    } else {
        g_autoptr(query_table) table =
            query_table_new(snapshots_columns, G_N_ELEMENTS(snapshots_columns));
        for (guint i = 0; i < snapshots->len; i++) {
            const query_snapshot *s = &g_array_index(snapshots, query_snapshot, i);
            query_table_addf(table, "%" G_GINT64_FORMAT, s->snapshot);
            query_table_addf(table, "%" G_GINT64_FORMAT, s->gc);
            query_table_add(table, s->trigger);
            query_table_add(table, query_count_format(s->objects, f[0]));
            query_table_add(table, query_count_format(s->refs, f[1]));
            query_table_add(table, query_count_format(s->roots, f[2]));
            query_table_add(table, query_count_format(s->handles, f[3]));
            query_table_add(table, query_size_format(s->bytes, f[4]));
            query_table_add(table, query_count_format(s->frozen, f[5]));
            /* with separators as every other count (csc's "unreported" read 7392) */
            query_table_add(table, query_count_format(s->model_missing, f[7]));
            query_table_add(table, query_count_format(s->model_extra, f[8]));
            query_table_add(table, query_count_format(s->model_unreported, f[9]));
            query_table_add(table, query_ms_format(s->walk_ns, f[6]));
        }
        query_table_print(table, stdout);
        /* Why each trigger took its snapshot: a line each, too long for a column. */
        for (guint i = 0; i < snapshots->len; i++) {
            const query_snapshot *s = &g_array_index(snapshots, query_snapshot, i);
            if (s->reason)
                printf("snapshot %" G_GINT64_FORMAT " (%s): %s\n", s->snapshot,
                       s->trigger ? s->trigger : "?", s->reason);
        }
        /* The self-check: missing = the model holds it, the runtime's walk does not; extra = the
         * other way round (objects the collector never saw allocated). Unreported objects (the
         * runtime allocated them without telling) are no disagreement. */
        if (drift)
            printf("self-check: the model and the runtime's heap walk disagree on %s %s (see "
                   "store/SCHEMA.md, snapshots)\n", query_count_format(drift, f[0]),
                   drift == 1 ? "object" : "objects");
        else
            printf("self-check: the model agrees with the runtime's heap walk in every snapshot\n");
        checkpoints_print(checkpoints);
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
