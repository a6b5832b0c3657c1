/* cmd_report.c — `heaplens report FILE [-o OUT] [--json]`: the per-GC report as one
 * self-contained HTML page, or the same content as JSON (report.h). */
#include "cli/commands.h"
#include "cli/output_file.h"
#include "cli/cli.h"
#include "report/report.h"
#include "query/retention.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <glib/gstdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int cmd_report(int argc, char **argv)
{
    int status = 1;
    gboolean json = FALSE, progress_flag = FALSE;
    const char *output = NULL;
    const char *path = NULL;
    const query_option options[] = {
        {"json", QUERY_OPT_FLAG, &json},
        {"output", QUERY_OPT_VALUE, &output},
        {"progress", QUERY_OPT_FLAG, &progress_flag},
        {NULL, 0, NULL},
    };
    g_autoptr(GError) error = NULL;
    g_autoptr(GPtrArray) owned = g_ptr_array_new_with_free_func(g_free);
    g_autofree char **args = query_args_short_output_new(argc, argv, owned);
    g_autoptr(report_data) data = NULL;
    g_autoptr(query_progress) progress = NULL;
    query_output_file file = {0};
    gboolean to_stdout = FALSE;
    FILE *out = stdout;
    sqlite3 *db = NULL;

    if (!query_args_take(argc, args, options, &path, &status, &error))
        goto out;
    to_stdout = !output || strcmp(output, "-") == 0;
    if (output && !*output) {
        g_set_error(&error, QUERY_ERROR, QUERY_ERROR_USAGE,
                    "report: -o needs a file name");
        goto out;
    }
    if (to_stdout && !json && isatty(STDOUT_FILENO)) {
        g_set_error(&error, QUERY_ERROR, QUERY_ERROR_USAGE,
                    "report: the HTML page needs a file: heaplens report %s -o report.html "
                    "(or --json)",
                    path);
        goto out;
    }
    db = query_db_open(path, &error);
    if (!db || !query_db_check_alloc_counts(db, &error))
        goto out;
    /* Open the output before the work, so that an unwritable one fails at once. */
    if (!to_stdout) {
        const char *const inputs[] = {path, NULL};
        if (!query_output_file_open(&file, output, inputs, &error))
            goto out;
        out = file.out;
    }
    progress = query_progress_new("report", progress_flag);
    data = report_data_new(db, path, progress, &error);
    if (!data)
        goto out;
    query_progress_done(progress);
    if (json)
        report_json_write(data, out, FALSE);
    else
        report_html_write(data, out);
    if (to_stdout ? !query_output_finish(stdout, &error) : !query_output_file_commit(&file, &error))
        goto out;
    if (!to_stdout) {
        char count[QUERY_FORMAT_MAX], size[QUERY_FORMAT_MAX];
        GStatBuf st;
        /* A regular file's size only: ftell of a device that seeks and keeps nothing
         * (/dev/null) counted the last buffer alone ("(2.1 KiB)" of a 310 KiB page). */
        int64_t bytes = g_stat(output, &st) == 0 && S_ISREG(st.st_mode) ? (int64_t)st.st_size : 0;
        guint n = data->gcs->len;
        if (bytes > 0) /* not known for a FIFO, a pipe or a device */
            g_snprintf(size, sizeof size, " (%s)", query_size_format(bytes, count));
        else
            size[0] = 0;
        fprintf(stderr, "heaplens: report of %s GC%s -> %s%s\n",
                query_count_format(n, count), n == 1 ? "" : "s", output, size);
    }
    /* The page shows the accuracy note; the terminal gets it too, and the retention notes. */
    if (data->note)
        fprintf(stderr, "heaplens: %s\n", data->note);
    for (guint i = 0; i < data->notes->len; i++)
        query_note_print(g_ptr_array_index(data->notes, i), TRUE);
    status = 0;
out:
    query_output_file_release(&file);
    sqlite3_close(db);
    if (error)
        query_error_report(error);
    return status;
}
