/* cmd_report.c — `heaplens report FILE [-o OUT] [--json]`: the per-GC report as one
 * self-contained HTML page, or the same content as JSON (report.h). */
#include "query/commands.h"
#include "query/query.h"
#include "query/report.h"
#include "query/retention.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
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

/* The output. A regular file (or a new one) is written beside its final name and renamed into
 * place when complete, so that a failure never leaves half a report (nor destroys an older one);
 * through a symbolic link, the link's target is the file replaced, never the link. Anything else
 * the user names (a FIFO, a terminal, /dev/null, /dev/full) is written through as it is: it is
 * not ours to replace. /dev/stdout and its kin are heaplens' own standard output. */
typedef struct report_file {
    char *path;     /* what the user named, for messages */
    char *final;    /* the regular file replaced: `path` with its symbolic links resolved */
    char *tmp_path; /* beside `final`; NULL when writing through */
    FILE *out;
    gboolean is_stdout;
} report_file;

static gboolean report_file_fail(report_file *file, const char *why, GError **error)
{
    g_set_error(error, QUERY_ERROR, QUERY_ERROR_IO, "cannot write %s: %s", file->path, why);
    return FALSE;
}

/* A new temporary file beside `file->final`, with `mode` (0666 less the umask for a new file,
 * the replaced file's own mode otherwise). */
static gboolean report_file_open_temporary(report_file *file, mode_t mode, GError **error)
{
    file->tmp_path = g_strconcat(file->final, ".tmp-XXXXXX", NULL);
    int fd = g_mkstemp_full(file->tmp_path, O_WRONLY | O_CLOEXEC, 0600);
    if (fd < 0) {
        int saved = errno;
        g_clear_pointer(&file->tmp_path, g_free);
        return report_file_fail(file, g_strerror(saved), error);
    }
    (void)fchmod(fd, mode); /* on failure it stays readable by its owner */
    file->out = fdopen(fd, "w");
    if (!file->out) {
        int saved = errno;
        close(fd);
        return report_file_fail(file, g_strerror(saved), error);
    }
    return TRUE;
}

static gboolean report_file_open(report_file *file, const char *path, GError **error)
{
    memset(file, 0, sizeof *file);
    file->path = g_strdup(path);
    struct stat st, out_st, link_st;
    if (stat(path, &st) != 0) {
        int saved = errno;
        if (saved == ENOENT && lstat(path, &link_st) == 0)
            return report_file_fail(file, "it is a symbolic link to nothing", error);
        if (saved != ENOENT)
            return report_file_fail(file, g_strerror(saved), error);
        mode_t mask = umask(0);
        umask(mask);
        file->final = g_strdup(path);
        return report_file_open_temporary(file, 0666 & ~mask, error);
    }
    if (fstat(STDOUT_FILENO, &out_st) == 0 && st.st_dev == out_st.st_dev &&
        st.st_ino == out_st.st_ino) {
        file->is_stdout = TRUE; /* /dev/stdout, /proc/self/fd/1, or where stdout already goes */
        file->out = stdout;
        return TRUE;
    }
    if (S_ISDIR(st.st_mode))
        return report_file_fail(file, "it is a directory", error);
    if (S_ISBLK(st.st_mode))
        return report_file_fail(file, "it is a block device", error);
    if (S_ISREG(st.st_mode)) {
        file->final = realpath(path, NULL);
        if (!file->final)
            return report_file_fail(file, g_strerror(errno), error);
        return report_file_open_temporary(file, st.st_mode & 07777, error);
    }
    /* A FIFO (opening waits for its reader, as any writer's would), a character device, a
     * socket: written as it is, never created, truncated or replaced. */
    int fd = open(path, O_WRONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0 || !(file->out = fdopen(fd, "w"))) {
        int saved = errno;
        if (fd >= 0)
            close(fd);
        return report_file_fail(file, g_strerror(saved), error);
    }
    return TRUE;
}

/* Flushes and closes the output; renames a temporary file into place. */
static gboolean report_file_commit(report_file *file, GError **error)
{
    if (!query_output_finish(file->out, NULL)) {
        int saved = errno;
        return report_file_fail(file, saved ? g_strerror(saved) : "I/O error", error);
    }
    if (file->is_stdout) {
        file->out = NULL;
        return TRUE;
    }
    int closed = fclose(file->out);
    int saved = errno;
    file->out = NULL;
    if (closed != 0)
        return report_file_fail(file, g_strerror(saved), error);
    if (file->tmp_path && g_rename(file->tmp_path, file->final) != 0)
        return report_file_fail(file, g_strerror(errno), error);
    g_clear_pointer(&file->tmp_path, g_free);
    return TRUE;
}

/* Removes what a failed report left behind. */
static void report_file_release(report_file *file)
{
    if (file->out && !file->is_stdout)
        fclose(file->out);
    if (file->tmp_path)
        g_unlink(file->tmp_path);
    g_free(file->tmp_path);
    g_free(file->path);
    free(file->final);
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
    uint64_t data_bytes = 0;
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
    long start = ftell(out); /* -1 for a FIFO or a terminal: the size is then not known */
    if (json)
        report_json_write(data, out, FALSE);
    else
        report_html_write(data, out);
    long end = ftell(out);
    data_bytes = start >= 0 && end >= start ? (uint64_t)(end - start) : 0;
    if (to_stdout ? !query_output_finish(stdout, &error) : !report_file_commit(&file, &error))
        goto out;
    if (!to_stdout) {
        char count[QUERY_FORMAT_MAX], size[QUERY_FORMAT_MAX];
        GStatBuf st;
        int64_t bytes = g_stat(output, &st) == 0 && S_ISREG(st.st_mode) ? (int64_t)st.st_size
                                                                          : (int64_t)data_bytes;
        guint n = data->gcs->len;
        if (bytes > 0) /* not known for a FIFO or a pipe */
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
        retention_note_print(g_ptr_array_index(data->notes, i), TRUE);
    status = 0;
out:
    report_file_release(&file);
    sqlite3_close(db);
    if (error)
        query_error_report(error);
    return status;
}
