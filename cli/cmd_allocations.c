/* cmd_allocations.c — `heaplens allocations FILE [--json] [--top K] [--thread TID|NAME]`:
 * allocated count and bytes per type, most bytes first (query/allocations.h). */
#include "cli/cli.h"
#include "cli/commands.h"
#include "query/allocations.h"

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
    const query_option options[] = {
        {"json", QUERY_OPT_FLAG, &json},
        {"top", QUERY_OPT_VALUE, &top_text},
        {"thread", QUERY_OPT_VALUE, &thread},
        {NULL, 0, NULL},
    };
    g_autoptr(GError) error = NULL;
    g_auto(query_estimates) estimates = {0};
    query_totals totals = {0};
    g_autoptr(query_table) table = NULL;
    g_autofree char *note = NULL;
    g_autoptr(GArray) types = NULL;
    query_json_rows rows;
    uint64_t top = G_MAXUINT64;
    sqlite3 *db = NULL;
    char count[QUERY_FORMAT_MAX];
    char bytes[QUERY_FORMAT_MAX];
    char types_text[QUERY_FORMAT_MAX];

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
    if (!db || !(types = query_allocations_read(db, path, thread, &estimates, &totals, &error)))
        goto out;
    note = query_estimates_note_new(&estimates);

    /* The total: the recording's, with its terms in words (the same as info and stacks); of a
     * thread, the sum of its rows. */
    int64_t thread_count = 0, thread_bytes = 0;
    for (guint i = 0; thread && i < types->len; i++) {
        const query_allocation *r = &g_array_index(types, query_allocation, i);
        thread_count = query_add_saturating(thread_count, r->count);
        thread_bytes = query_add_saturating(thread_bytes, r->bytes);
    }
    if (json) {
        json_t *head = note ? query_estimates_json(&estimates) : json_object();
        json_object_set_new(head, "total",
                            thread ? json_pack("{s:I, s:I}", "count", (json_int_t)thread_count,
                                               "bytes", (json_int_t)thread_bytes)
                                   : query_totals_json(&totals, &estimates));
        query_json_rows_begin(&rows, stdout, head);
        json_decref(head);
    } else {
        if (note)
            printf("%s\n\n", note);
        const char *approx = !thread && totals.estimated > 0 ? "~" : "";
        printf("%s%s %s (%s%s) of %s %s", approx,
               query_count_format(thread ? thread_count : totals.count, count),
               (thread ? thread_count : totals.count) == 1 ? "allocation" : "allocations", approx,
               query_size_format(thread ? thread_bytes : totals.bytes, bytes),
               query_count_format(types->len, types_text), types->len == 1 ? "type" : "types");
        if (thread) {
            printf(" by thread %s\n\n", thread);
        } else {
            g_autoptr(GPtrArray) terms = query_totals_terms_new(&totals, &estimates);
            fputc('\n', stdout);
            for (guint i = 0; i < terms->len; i++)
                printf("  %s\n", (const char *)g_ptr_array_index(terms, i));
            fputc('\n', stdout);
        }
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
