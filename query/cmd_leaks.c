/* cmd_leaks.c — `heaplens leaks FILE [--top K] [--all] [--json] [--progress]`: the leak suspects
 * of leaks.c, as text or JSON. */
#include "query/commands.h"
#include "query/leaks.h"
#include "query/query.h"
#include "query/retention.h"

int cmd_leaks(int argc, char **argv)
{
    int status = 1;
    gboolean json = FALSE, all = FALSE, progress_flag = FALSE;
    const char *path = NULL, *top_text = NULL;
    const query_option options[] = {
        {"json", QUERY_OPT_FLAG, &json},
        {"top", QUERY_OPT_VALUE, &top_text},
        {"all", QUERY_OPT_FLAG, &all},
        {"progress", QUERY_OPT_FLAG, &progress_flag},
        {NULL, 0, NULL},
    };
    g_autoptr(GError) error = NULL;
    g_autoptr(query_progress) progress = NULL;
    g_autoptr(leaks) found = NULL;
    g_autofree char *note = NULL;
    uint64_t top = 10;
    sqlite3 *db = NULL;

    switch (query_args_parse(argc, argv, options, &path, &error)) {
    case QUERY_ARGS_HELP:
        status = 0;
        goto out;
    case QUERY_ARGS_ERROR:
        goto out;
    case QUERY_ARGS_OK:
        break;
    }
    if (top_text && !query_args_parse_uint("leaks", "top", top_text, 1, INT64_MAX,
                                           "a positive number", &top, &error))
        goto out;
    db = query_db_open(path, &error);
    if (!db)
        goto out;
    progress = query_progress_new("leaks", progress_flag);
    found = leaks_find(db, path, top, all, progress, &error);
    if (!found)
        goto out;
    query_progress_done(progress);
    if (json) {
        query_json_rows rows;
        json_t *head = leaks_json_head(found);
        query_json_rows_begin(&rows, stdout, head);
        json_decref(head);
        for (guint i = 0; i < leaks_count(found); i++)
            query_json_rows_add(&rows, leaks_json_row(found, i));
        query_json_rows_end(&rows);
    } else {
        leaks_print(found, stdout);
    }
    leaks_notes_print(found, json);
    if (!query_db_note_print(db, json, &error) || !query_output_finish(stdout, &error))
        goto out;
    /* Last, when everything is read and printed: a failure leaves the file as it was. */
    if (!retention_commit(db, path, progress, &note, &error))
        goto out;
    retention_note_print(note, json);
    if (!query_output_finish(stdout, &error))
        goto out;
    status = 0;
out:
    g_clear_pointer(&found, leaks_free);
    sqlite3_close(db);
    if (error)
        query_error_report(error);
    return status;
}
