/* cmd_allocations.c — `heaplens allocations FILE [--json] [--top K] [--thread TID|NAME]
 * [--between FROM..TO]`: allocated count and bytes per type, most bytes first
 * (query/allocations.h), between two checkpoints of the program (query/checkpoints.h). */
#include "cli/cli.h"
#include "cli/commands.h"
#include "query/allocations.h"
#include "query/checkpoints.h"

static const query_column allocations_columns[] = {
    {"count", QUERY_ALIGN_RIGHT, NULL},
    {"bytes", QUERY_ALIGN_RIGHT, NULL},
    {"type", QUERY_ALIGN_LEFT, NULL},
};

int cmd_allocations(int argc, char **argv)
{
    int status = 1;
    gboolean json = FALSE;
    const char *path = NULL;
    const char *top_text = NULL;
    const char *thread = NULL;
    const char *between = NULL;
    int64_t from_gc = 0, to_gc = INT64_MAX;
    const query_option options[] = {
        {"between", QUERY_OPT_VALUE, &between},
        {"json", QUERY_OPT_FLAG, &json},
        {"top", QUERY_OPT_VALUE, &top_text},
        {"thread", QUERY_OPT_VALUE, &thread},
        {NULL, 0, NULL},
    };
    g_autoptr(GError) error = NULL;
    g_auto(query_estimates) estimates = {0};
    g_autoptr(query_table) table = NULL;
    g_autofree char *note = NULL;
    g_autoptr(GArray) types = NULL;
    query_json_rows rows;
    uint64_t top = G_MAXUINT64;
    sqlite3 *db = NULL;
    char count[QUERY_FORMAT_MAX];
    char bytes[QUERY_FORMAT_MAX];

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
    if (!db || (between && !checkpoint_range(db, path, argv[0], between, &from_gc, &to_gc,
                                             &error)) ||
        !(types = query_allocations_read_between(db, path, thread, from_gc, to_gc, &estimates,
                                                 &error)))
        goto out;
    note = query_estimates_note_new(&estimates);

    if (json) {
        json_t *head = note ? query_estimates_json(&estimates) : NULL;
        if (between) {
            if (!head)
                head = json_object();
            json_object_set_new(head, "between", json_pack("{s:s, s:I, s:I}", "checkpoints",
                                                           between, "from_gc",
                                                           (json_int_t)from_gc, "to_gc",
                                                           (json_int_t)to_gc));
        }
        query_json_rows_begin(&rows, stdout, head);
        json_decref(head);
    } else {
        if (note)
            printf("%s\n\n", note);
        if (between)
            printf("between checkpoints %s: GC intervals %" G_GINT64_FORMAT " to %" G_GINT64_FORMAT
                   " (allocations after GC %" G_GINT64_FORMAT " began, before GC %" G_GINT64_FORMAT
                   " began)\n\n",
                   between, from_gc, to_gc, from_gc - 1, to_gc);
        table = query_table_new(allocations_columns, G_N_ELEMENTS(allocations_columns));
    }
    for (guint i = 0; i < types->len && i < top; i++) {
        const query_allocation *r = &g_array_index(types, query_allocation, i);
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
