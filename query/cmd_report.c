/* cmd_report.c — `heaplens report FILE [-o OUT] [--json]`: the per-GC report as one
 * self-contained HTML page, or the same content as JSON (report.h). */
#include "query/commands.h"
#include "query/query.h"
#include "query/report.h"
#include "query/retention.h"

#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* query_args_parse takes long options only: "-o X" and "-oX" become "--output X", "--output=X".
 * Returns a new argv (strings borrowed from `argv`, but "--output=X" ones owned by `owned`). */
static char **report_argv_new(int argc, char **argv, GPtrArray *owned)
{
    char **out = g_new0(char *, (size_t)argc + 1);
    gboolean options_done = FALSE;
    for (int i = 0; i < argc; i++) {
        char *arg = argv[i];
        if (i > 0 && !options_done && strcmp(arg, "--") == 0)
            options_done = TRUE;
        if (i > 0 && !options_done && strcmp(arg, "-o") == 0) {
            arg = "--output";
        } else if (i > 0 && !options_done && strncmp(arg, "-o", 2) == 0) {
            arg = g_strconcat("--output=", arg + 2, NULL);
            g_ptr_array_add(owned, arg);
        }
        out[i] = arg;
    }
    return out;
}

/* The output file, written beside its final name and renamed into place when complete, so that
 * a failure never leaves half a report (nor destroys an older one). */
typedef struct report_file {
    char *path;
    char *tmp_path;
    FILE *out;
} report_file;

static gboolean report_file_open(report_file *file, const char *path, GError **error)
{
    memset(file, 0, sizeof *file);
    if (g_file_test(path, G_FILE_TEST_IS_DIR)) {
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_IO, "cannot write %s: it is a directory", path);
        return FALSE;
    }
    file->path = g_strdup(path);
    file->tmp_path = g_strconcat(path, ".tmp-XXXXXX", NULL);
    int fd = g_mkstemp_full(file->tmp_path, O_WRONLY | O_CLOEXEC, 0600);
    if (fd < 0) {
        int saved = errno;
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_IO, "cannot write %s: %s", path,
                    g_strerror(saved));
        g_clear_pointer(&file->tmp_path, g_free);
        return FALSE;
    }
    /* mkstemp creates 0600; a report is an ordinary file: 0666 less the umask. */
    mode_t mask = umask(0);
    umask(mask);
    (void)fchmod(fd, 0666 & ~mask); /* on failure it stays readable by its owner */
    file->out = fdopen(fd, "w");
    if (!file->out) {
        int saved = errno;
        close(fd);
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_IO, "cannot write %s: %s", path,
                    g_strerror(saved));
        return FALSE;
    }
    return TRUE;
}

/* Closes the file and renames it into place. */
static gboolean report_file_commit(report_file *file, GError **error)
{
    gboolean ok = query_output_finish(file->out, error);
    if (fclose(file->out) != 0 && ok) {
        int saved = errno;
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_IO, "cannot write %s: %s", file->path,
                    g_strerror(saved));
        ok = FALSE;
    }
    file->out = NULL;
    if (ok && g_rename(file->tmp_path, file->path) != 0) {
        int saved = errno;
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_IO, "cannot write %s: %s", file->path,
                    g_strerror(saved));
        ok = FALSE;
    }
    if (ok)
        g_clear_pointer(&file->tmp_path, g_free);
    return ok;
}

/* Removes what a failed report left behind. */
static void report_file_release(report_file *file)
{
    if (file->out)
        fclose(file->out);
    if (file->tmp_path)
        g_unlink(file->tmp_path);
    g_free(file->tmp_path);
    g_free(file->path);
    memset(file, 0, sizeof *file);
}

static gboolean same_file(const char *a, const char *b)
{
    GStatBuf sa, sb;
    return g_stat(a, &sa) == 0 && g_stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
           sa.st_ino == sb.st_ino;
}

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
    g_autofree char **args = report_argv_new(argc, argv, owned);
    g_autoptr(report_data) data = NULL;
    g_autoptr(query_progress) progress = NULL;
    report_file file = {0};
    gboolean to_stdout = FALSE;
    FILE *out = stdout;
    sqlite3 *db = NULL;

    switch (query_args_parse(argc, args, options, &path, &error)) {
    case QUERY_ARGS_HELP:
        status = 0;
        goto out;
    case QUERY_ARGS_ERROR:
        goto out;
    case QUERY_ARGS_OK:
        break;
    }
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
    if (!db)
        goto out;
    /* Open the output before the work, so that an unwritable one fails at once. */
    if (!to_stdout && same_file(path, output)) {
        g_set_error(&error, QUERY_ERROR, QUERY_ERROR_USAGE,
                    "report: %s is the recording itself; give -o another file", output);
        goto out;
    }
    if (!to_stdout) {
        if (!report_file_open(&file, output, &error))
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
    if (to_stdout ? !query_output_finish(stdout, &error) : !report_file_commit(&file, &error))
        goto out;
    if (!to_stdout) {
        char count[QUERY_FORMAT_MAX], size[QUERY_FORMAT_MAX];
        GStatBuf st;
        int64_t bytes = g_stat(output, &st) == 0 ? (int64_t)st.st_size : 0;
        guint n = data->gcs->len;
        fprintf(stderr, "heaplens: report of %s GC%s -> %s (%s)\n",
                query_count_format(n, count), n == 1 ? "" : "s", output,
                query_size_format(bytes, size));
    }
    /* The page shows the accuracy note; the terminal gets it too, and the retention notes. */
    if (data->note)
        fprintf(stderr, "heaplens: %s\n", data->note);
    for (guint i = 0; i < data->notes->len; i++)
        retention_note_print(g_ptr_array_index(data->notes, i), TRUE);
    status = 0;
out:
    report_file_release(&file);
    sqlite3_close(db);
    if (error)
        query_error_report(error);
    return status;
}
