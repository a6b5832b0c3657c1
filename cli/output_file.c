/* output_file.c — writing an output file the user named (output_file.h). */
#include "cli/output_file.h"

#include "cli/cli.h"
#include "session/recording.h"

#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static gboolean query_output_file_fail(query_output_file *file, const char *why, GError **error)
{
    g_set_error(error, QUERY_ERROR, QUERY_ERROR_IO, "cannot write %s: %s", file->path, why);
    return FALSE;
}

/* The temporary file being written, removed by a signal that ends heaplens meanwhile: Ctrl-C
 * during a long `report -o page.html` left page.html.tmp-XXXXXX behind. One at a time: a
 * command writes one output file. The handlers are there only while it is: a signal's own
 * disposition is back once it is renamed into place or removed; one ignored stays ignored. */
static const int tmp_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
static char tmp_pending[4096];
static volatile sig_atomic_t tmp_pending_set;
static struct sigaction tmp_old[G_N_ELEMENTS(tmp_signals)];
static gboolean tmp_handled[G_N_ELEMENTS(tmp_signals)];

static void tmp_pending_remove(int sig)
{
    if (tmp_pending_set)
        unlink(tmp_pending);
    struct sigaction dfl = {.sa_handler = SIG_DFL};
    sigemptyset(&dfl.sa_mask);
    sigaction(sig, &dfl, NULL);
    raise(sig); /* delivered once the handler returns: heaplens ends by it, as it would have */
}

static void tmp_pending_watch(const char *tmp_path)
{
    if (strlen(tmp_path) >= sizeof tmp_pending)
        return; /* not removed on a signal: left as before */
    strcpy(tmp_pending, tmp_path);
    tmp_pending_set = 1;
    for (size_t i = 0; i < G_N_ELEMENTS(tmp_signals); i++) {
        struct sigaction handler = {.sa_handler = tmp_pending_remove};
        sigemptyset(&handler.sa_mask);
        tmp_handled[i] = sigaction(tmp_signals[i], NULL, &tmp_old[i]) == 0 &&
                         tmp_old[i].sa_handler == SIG_DFL &&
                         sigaction(tmp_signals[i], &handler, NULL) == 0;
    }
}

static void tmp_pending_unwatch(void)
{
    if (!tmp_pending_set)
        return;
    for (size_t i = 0; i < G_N_ELEMENTS(tmp_signals); i++)
        if (tmp_handled[i])
            sigaction(tmp_signals[i], &tmp_old[i], NULL);
    tmp_pending_set = 0;
}

/* A new temporary file beside `file->final`, with `mode` (0666 less the umask for a new file,
 * the replaced file's own mode otherwise). */
static gboolean query_output_file_open_temporary(query_output_file *file, mode_t mode, GError **error)
{
    file->tmp_path = g_strconcat(file->final, ".tmp-XXXXXX", NULL);
    int fd = g_mkstemp_full(file->tmp_path, O_WRONLY | O_CLOEXEC, 0600);
    if (fd < 0) {
        int saved = errno;
        g_clear_pointer(&file->tmp_path, g_free);
        return query_output_file_fail(file, g_strerror(saved), error);
    }
    (void)fchmod(fd, mode); /* on failure it stays readable by its owner */
    tmp_pending_watch(file->tmp_path);
    file->out = fdopen(fd, "w");
    if (!file->out) {
        int saved = errno;
        close(fd);
        return query_output_file_fail(file, g_strerror(saved), error);
    }
    return TRUE;
}

/* `path` with its directory resolved (`path` itself need not exist); NULL if the directory
 * does not resolve. */
static char *query_output_file_canonical_new(const char *path)
{
    g_autofree char *dir = g_path_get_dirname(path);
    g_autofree char *base = g_path_get_basename(path);
    char *real_dir = realpath(dir, NULL);
    if (!real_dir)
        return NULL;
    char *canonical = g_build_filename(real_dir, base, NULL);
    free(real_dir);
    return canonical;
}

/* TRUE when `a` and `b` both exist and are one file (after following links). */
static gboolean query_output_file_same(const char *a, const char *b)
{
    struct stat sa, sb;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
           sa.st_ino == sb.st_ino;
}

/* A database's file and the files SQLite keeps beside it. */
static const char *const query_output_db_files[] = {"", "-wal", "-shm", "-journal"};

/* Refuses a target that is, or would become, a file the command reads: an input, or its SQLite
 * -wal, -shm or -journal file (which SQLite may create later: compared by name as well; a
 * -journal that is not SQLite's is a hot journal to it, and no read-only connection opens the
 * file any more). */
static gboolean query_output_file_check_inputs(query_output_file *file,
                                               const char *const *inputs, GError **error)
{
    g_autofree char *target = query_output_file_canonical_new(file->path);
    for (const char *const *input = inputs; input && *input; input++) {
        char *real_input = realpath(*input, NULL);
        const char *suffix = NULL;
        for (size_t i = 0; i < G_N_ELEMENTS(query_output_db_files) && !suffix; i++) {
            g_autofree char *name = g_strconcat(*input, query_output_db_files[i], NULL);
            g_autofree char *real_name =
                real_input ? g_strconcat(real_input, query_output_db_files[i], NULL) : NULL;
            if (query_output_file_same(file->path, name) ||
                (target && real_name && strcmp(target, real_name) == 0))
                suffix = query_output_db_files[i];
        }
        free(real_input);
        if (suffix) {
            g_autofree char *why =
                g_strdup_printf("it is %s%s, which this command reads; name another file", *input,
                                suffix);
            return query_output_file_fail(file, why, error);
        }
    }
    return TRUE;
}

/* Refuses to replace a database with the output: a file that opens with SQLite's header, or one
 * with its -wal, -shm or -journal beside it (a recording still being written has them before its
 * first page is written). The rename would leave a live writer writing into a file nobody can
 * reach any more (the whole recording lost, its -wal and -shm removed at its end), and a finished
 * recording would be gone for a report typed with the wrong name. `final`: the regular file the
 * output would replace. */
static gboolean query_output_file_check_database(query_output_file *file, const char *final,
                                                 GError **error)
{
    static const char header[16] = "SQLite format 3";
    char head[sizeof header];
    int fd = open(final, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    gboolean database = fd >= 0 && read(fd, head, sizeof head) == (ssize_t)sizeof head &&
                        memcmp(head, header, sizeof header) == 0;
    if (fd >= 0)
        close(fd);
    for (size_t i = 1; i < G_N_ELEMENTS(query_output_db_files) && !database; i++) {
        g_autofree char *member = g_strconcat(final, query_output_db_files[i], NULL);
        struct stat st;
        database = lstat(member, &st) == 0;
    }
    if (database)
        return query_output_file_fail(file,
                                      "it is an SQLite database (a recording?), which heaplens "
                                      "never replaces; name another file",
                                      error);
    return TRUE;
}

/* Opens a FIFO, a character device or a socket for writing as it is. A FIFO is opened without
 * waiting: with no reader there (ENXIO) nothing would ever take the output. */
static gboolean query_output_file_open_special(query_output_file *file, GError **error)
{
    int fd = open(file->path, O_WRONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0 && errno == ENXIO)
        return query_output_file_fail(file, "it is a FIFO that no process is reading", error);
    int flags = fd >= 0 ? fcntl(fd, F_GETFL) : -1;
    /* Blocking writes from here on: a slow reader is waited for, as any writer's would be. */
    if (fd < 0 || flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0 ||
        !(file->out = fdopen(fd, "w"))) {
        int saved = errno;
        if (fd >= 0)
            close(fd);
        return query_output_file_fail(file, g_strerror(saved), error);
    }
    return TRUE;
}

gboolean query_output_file_open(query_output_file *file, const char *path,
                                const char *const *inputs, GError **error)
{
    memset(file, 0, sizeof *file);
    file->path = g_strdup(path);
    struct stat st, out_st, link_st;
    if (strcmp(path, "-") == 0) {
        file->is_stdout = TRUE;
        file->out = stdout;
        return TRUE;
    }
    if (!query_output_file_check_inputs(file, inputs, error) ||
        !recording_output_not_sibling("cannot write", path, error))
        return FALSE;
    if (stat(path, &st) != 0) {
        int saved = errno;
        if (saved == ENOENT && lstat(path, &link_st) == 0)
            return query_output_file_fail(file, "it is a symbolic link to nothing", error);
        if (saved != ENOENT)
            return query_output_file_fail(file, g_strerror(saved), error);
        mode_t mask = umask(0);
        umask(mask);
        file->final = g_strdup(path);
        return query_output_file_open_temporary(file, 0666 & ~mask, error);
    }
    if (fstat(STDOUT_FILENO, &out_st) == 0 && st.st_dev == out_st.st_dev &&
        st.st_ino == out_st.st_ino) {
        file->is_stdout = TRUE; /* /dev/stdout, /proc/self/fd/1, or where stdout already goes */
        file->out = stdout;
        return TRUE;
    }
    if (S_ISDIR(st.st_mode))
        return query_output_file_fail(file, "it is a directory", error);
    if (S_ISBLK(st.st_mode))
        return query_output_file_fail(file, "it is a block device", error);
    if (S_ISREG(st.st_mode)) {
        file->final = realpath(path, NULL);
        if (!file->final)
            return query_output_file_fail(file, g_strerror(errno), error);
        if (!query_output_file_check_database(file, file->final, error))
            return FALSE;
        return query_output_file_open_temporary(file, st.st_mode & 07777, error);
    }
    /* A FIFO, a character device, a socket: written as it is, never created, truncated or
     * replaced. */
    return query_output_file_open_special(file, error);
}

/* Flushes and closes the output; renames a temporary file into place. */
gboolean query_output_file_commit(query_output_file *file, GError **error)
{
    if (!query_output_finish(file->out, NULL)) {
        int saved = errno;
        return query_output_file_fail(file, saved ? g_strerror(saved) : "I/O error", error);
    }
    if (file->is_stdout) {
        file->out = NULL;
        return TRUE;
    }
    int closed = fclose(file->out);
    int saved = errno;
    file->out = NULL;
    if (closed != 0)
        return query_output_file_fail(file, g_strerror(saved), error);
    if (file->tmp_path && g_rename(file->tmp_path, file->final) != 0)
        return query_output_file_fail(file, g_strerror(errno), error);
    tmp_pending_unwatch();
    g_clear_pointer(&file->tmp_path, g_free);
    return TRUE;
}

/* Removes what a failed report left behind. */
void query_output_file_release(query_output_file *file)
{
    if (file->out && !file->is_stdout)
        fclose(file->out);
    if (file->tmp_path) {
        g_unlink(file->tmp_path);
        tmp_pending_unwatch();
    }
    g_free(file->tmp_path);
    g_free(file->path);
    free(file->final);
    memset(file, 0, sizeof *file);
}

