/* recording.c — see recording.h. */
#define _GNU_SOURCE
#include "query/recording.h"

#include "query/estimates.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "query/query.h"
#include "store/store.h"

/* The policies the collector understands (collector/profiler.c). */
gboolean recording_snapshot_policy_valid(const char *p) {
    if (strcmp(p, "induced") == 0 || strcmp(p, "gen2") == 0 || strcmp(p, "none") == 0)
        return TRUE;
    if (strncmp(p, "every:", 6) != 0 || !p[6])
        return FALSE;
    char *end = NULL;
    long n = strtol(p + 6, &end, 10);
    return *end == 0 && n >= 1 && n <= 1000000;
}

/* libheaplens.so next to the heaplens executable (build tree), or in ../lib/heaplens (installed). */
char *recording_collector_path(GError **error) {
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) {
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_USAGE, "record: cannot find the heaplens executable");
        return NULL;
    }
    exe[n] = 0;
    g_autofree char *dir = g_path_get_dirname(exe);
    const char *candidates[] = {COLLECTOR_NAME, "../lib/heaplens/" COLLECTOR_NAME};
    for (size_t i = 0; i < G_N_ELEMENTS(candidates); i++) {
        g_autofree char *p = g_build_filename(dir, candidates[i], NULL);
        char resolved[PATH_MAX];
        if (realpath(p, resolved) && access(resolved, R_OK) == 0)
            return g_strdup(resolved);
    }
    g_set_error(error, QUERY_ERROR, QUERY_ERROR_USAGE,
                "record: the collector %s is not next to heaplens (%s) nor in %s/../lib/heaplens",
                COLLECTOR_NAME, dir, dir);
    return NULL;
}

/* A fresh private (0700) directory for the recording's sockets. */
char *recording_private_dir(GError **error) {
    const char *tmp = g_get_tmp_dir();
    char *dir = g_build_filename(tmp, "heaplens-XXXXXX", NULL);
    if (!mkdtemp(dir)) { /* mkdtemp creates it 0700 */
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_IO, "record: cannot create a directory in %s: %s",
                    tmp, g_strerror(errno));
        g_free(dir);
        return NULL;
    }
    return dir;
}

/* A listening unix socket `path` (0600). */
int recording_socket_listen(const char *path, GError **error) {
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || strlen(path) >= sizeof addr.sun_path) {
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_IO, "record: cannot create a socket: %s",
                    g_strerror(errno));
        if (fd >= 0)
            close(fd);
        return -1;
    }
    strcpy(addr.sun_path, path);
    mode_t old = umask(0177); /* the socket file is created 0600 */
    int ok = bind(fd, (struct sockaddr *)&addr, sizeof addr) == 0 && listen(fd, 8) == 0;
    umask(old);
    if (!ok || chmod(path, 0600) != 0) {
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_IO, "record: cannot listen on %s: %s", path,
                    g_strerror(errno));
        close(fd);
        unlink(path);
        return -1;
    }
    return fd;
}


void recording_sockets_remove(recording_sockets *s) {
    if (s->collector_fd >= 0)
        close(s->collector_fd);
    if (s->control_fd >= 0)
        close(s->control_fd);
    if (s->collector_path)
        unlink(s->collector_path);
    if (s->control_path)
        unlink(s->control_path);
    if (s->claim_path)
        unlink(s->claim_path);
    if (s->children_path)
        unlink(s->children_path);
    if (s->dir)
        rmdir(s->dir);
    g_free(s->dir);
    g_free(s->collector_path);
    g_free(s->control_path);
    g_free(s->claim_path);
    g_free(s->children_path);
    memset(s, 0, sizeof *s);
    s->collector_fd = s->control_fd = -1;
}

gboolean recording_sockets_create(recording_sockets *s, GError **error) {
    memset(s, 0, sizeof *s);
    s->collector_fd = s->control_fd = -1;
    s->dir = recording_private_dir(error);
    if (!s->dir)
        return FALSE;
    s->collector_path = g_build_filename(s->dir, "collector.sock", NULL);
    s->control_path = g_build_filename(s->dir, "control.sock", NULL);
    s->claim_path = g_build_filename(s->dir, "recorded", NULL);
    s->collector_fd = recording_socket_listen(s->collector_path, error);
    if (s->collector_fd >= 0)
        s->control_fd = recording_socket_listen(s->control_path, error);
    if (s->control_fd < 0) {
        recording_sockets_remove(s);
        return FALSE;
    }
    return TRUE;
}

/* The writer process. Reports "ok" or the error on `ready_fd`, then serves the recording
 * until the stream ended and `stop_fd` gave the exit status (or end of file). */
static G_NORETURN void writer_main(const char *output, const char *command, int listen_fd,
                                   int control_fd, int stop_fd, int ready_fd) {
    /* Ctrl-C and a kill of the whole process group reach the writer too; it must outlive the
     * program to finish the recording. It ends when heaplens closes the stop pipe (heaplens
     * itself killed: end of file). */
    signal(SIGINT, SIG_IGN);
    signal(SIGQUIT, SIG_IGN);
    signal(SIGTERM, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
    signal(SIGPIPE, SIG_IGN);
    g_autoptr(GError) error = NULL;
    store_writer *w = store_writer_create(output, command, &error);
    g_autofree char *msg = g_strdup_printf("%s\n", w ? "ok" : error->message);
    if (write(ready_fd, msg, strlen(msg)) < 0 || !w)
        _exit(1);
    close(ready_fd);
    gboolean ok = store_writer_serve(w, listen_fd, control_fd, stop_fd, STOP_WAIT_MS, &error);
    close(control_fd); /* a client connecting now gets EOF at once instead of waiting */
    store_summary summary;
    g_autoptr(GError) finish_error = NULL;
    gboolean finished = store_writer_finish(w, &summary, &finish_error);
    if (!finished && g_error_matches(finish_error, STORE_ERROR, STORE_ERROR_IO)) {
        /* The database could take no more (disk full, I/O error): the one line that says so,
         * with what is kept; the program was not stopped (its collector saw the writer go). */
        fprintf(stderr, "heaplens: writer: %s; the program runs on unrecorded\n",
                finish_error->message);
        _exit(WRITER_EXIT_STOPPED);
    }
    if (!ok || !finished) {
        fprintf(stderr, "heaplens: writer: %s\n", error ? error->message : finish_error->message);
        _exit(1);
    }
    _exit(0);
}

/* Waits for the writer forked as `writer` (< 0: the fork failed) to say on `ready_fd` that it
 * has created `output` ("ok"), and closes ready_fd; FALSE with the writer's reason otherwise. */
static gboolean writer_ready(pid_t writer, int ready_fd, const char *output, GError **error) {
    char msg[1024] = "";
    ssize_t n = writer > 0 ? read(ready_fd, msg, sizeof msg - 1) : -1;
    int read_errno = errno;
    close(ready_fd);
    msg[n > 0 ? n : 0] = 0;
    g_strchomp(msg);
    if (writer > 0 && strcmp(msg, "ok") == 0)
        return TRUE;
    g_set_error(error, QUERY_ERROR, QUERY_ERROR_IO, "cannot record to %s: %s", output,
                writer < 0 ? g_strerror(read_errno) : (msg[0] ? msg : "the writer failed to start"));
    return FALSE;
}

pid_t recording_writer_start(const char *who, const char *output, const char *command,
                             recording_sockets *sockets, int *stop_fd, int *gone_fd,
                             GError **error) {
    int stop[2], ready[2], gone[2] = {-1, -1};
    if (pipe2(stop, O_CLOEXEC) != 0 || pipe2(ready, O_CLOEXEC) != 0 ||
        (gone_fd && pipe2(gone, O_CLOEXEC) != 0)) {
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_IO, "%s: pipe: %s", who, g_strerror(errno));
        return -1;
    }
    fflush(NULL);
    pid_t writer = fork();
    if (writer == 0) {
        close(stop[1]);
        close(ready[0]);
        if (gone_fd)
            close(gone[0]); /* gone[1] stays open in the writer: end of file when it exits */
        writer_main(output, command, sockets->collector_fd, sockets->control_fd, stop[0],
                    ready[1]);
    }
    close(sockets->collector_fd);
    close(sockets->control_fd);
    sockets->collector_fd = sockets->control_fd = -1;
    close(stop[0]);
    close(ready[1]);
    if (gone_fd) {
        close(gone[1]);
        *gone_fd = gone[0];
    }
    if (!writer_ready(writer, ready[0], output, error)) {
        close(stop[1]);
        if (gone_fd) {
            close(*gone_fd);
            *gone_fd = -1;
        }
        if (writer > 0)
            waitpid(writer, NULL, 0);
        recording_sockets_remove(sockets);
        return -1;
    }
    *stop_fd = stop[1];
    return writer;
}

/* The summary of one database: printed, or returned as JSON with --json. With --children
 * each database also says whose it is (run.pid, run.command). */
json_t *recording_summary_print(const char *output, const recording_summary_options *o) {
    g_autoptr(GError) error = NULL;
    /* Not query_db_open: the end of a recording does not build the generation history. */
    sqlite3 *db = store_db_open_readonly(output, &error);
    if (!db) {
        query_error_report(error);
        return NULL;
    }
    int64_t pid = 0;
    g_autofree char *command = NULL;
    sqlite3_stmt *run_stmt = NULL;
    if (sqlite3_prepare_v2(db, "SELECT pid, command FROM run WHERE id = 1", -1, &run_stmt,
                           NULL) == SQLITE_OK &&
        sqlite3_step(run_stmt) == SQLITE_ROW) {
        pid = sqlite3_column_int64(run_stmt, 0);
        command = g_strdup(sqlite3_column_text(run_stmt, 1) ? (const char *)sqlite3_column_text(run_stmt, 1) : "");
    }
    sqlite3_finalize(run_stmt);
    g_autofree char *whose = o->whose ? g_strdup_printf(", pid %" PRId64 ": %s", pid,
                                                           command ? command : "")
                                         : g_strdup("");
    int64_t gcs = 0, objects = 0, types = 0, nodata = 0;
    int64_t allocations = 0, survived = 0, allocs_lost = 0, gcs_lost = 0;
    query_db_int(db, "SELECT count(*) FROM gcs", &gcs, NULL);
    objects = MAX(0, store_db_objects_count(db)); /* packed: not every row derived */
    query_db_int(db, "SELECT count(*) FROM types", &types, NULL);
    query_db_int(db, "SELECT total(count) FROM alloc_counts", &allocations, NULL);
    query_db_int(db, "SELECT total(survived) FROM alloc_counts", &survived, NULL);
    /* Sampled and attach recordings: allocations are estimated from the samples (estimates.h),
     * and every object that survived a GC has its objects row. */
    query_estimates estimates = {0};
    int64_t samples = 0;
    if (query_estimates_get(db, &estimates, NULL) && estimates.estimated) {
        g_autofree char *sql = query_estimates_sql_new(&estimates, NULL, NULL);
        samples = estimates.samples;
        query_db_int(db, sql, &allocations, NULL);
        survived = objects;
    }
    query_estimates_clear(&estimates);
    /* Losses in the units users think in; a negative value is not a count (never shown). */
    query_db_int(db, "SELECT max(0, coalesce(sum(value), 0)) FROM counters WHERE name = 'allocs_dropped'",
                 &allocs_lost, NULL);
    query_db_int(db, "SELECT max(0, coalesce(sum(value), 0)) FROM counters WHERE name = 'gcs_dropped'",
                 &gcs_lost, NULL);
    query_db_int(db, "SELECT status = 'no-data' FROM run", &nodata, NULL);
    g_autofree char *loss = NULL; /* run.loss: why, as stored (SCHEMA.md, "Losses") */
    sqlite3_stmt *loss_stmt = NULL;
    if (sqlite3_prepare_v2(db, "SELECT loss FROM run WHERE id = 1", -1, &loss_stmt, NULL) ==
            SQLITE_OK &&
        sqlite3_step(loss_stmt) == SQLITE_ROW && sqlite3_column_text(loss_stmt, 0))
        loss = g_strdup((const char *)sqlite3_column_text(loss_stmt, 0));
    sqlite3_finalize(loss_stmt);
    g_autofree char *note = query_db_note_new(db, NULL);
    sqlite3_close(db);
    struct stat st = {0};
    stat(output, &st);
    if (o->json) {
        json_t *j = json_pack("{s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:b, s:o}", "file",
                              output, "gcs", (json_int_t)gcs, "allocations",
                              (json_int_t)allocations, "allocations_survived",
                              (json_int_t)survived, "objects", (json_int_t)objects, "types",
                              (json_int_t)types, "allocations_lost", (json_int_t)allocs_lost,
                              "gcs_lost", (json_int_t)gcs_lost, "dropped",
                              (json_int_t)(allocs_lost + gcs_lost), "file_bytes",
                              (json_int_t)st.st_size, "collector_loaded", !nodata, "loss",
                              loss ? json_string(loss) : json_null());
        json_object_set_new(j, "allocations_estimated", json_boolean(samples > 0));
        if (o->whose) {
            json_object_set_new(j, "pid", json_integer(pid));
            json_object_set_new(j, "command", json_string(command ? command : ""));
        }
        return j;
    }
    if (o->quiet)
        return NULL;
    if (nodata) {
        fprintf(stderr, "heaplens: warning: the program never loaded the collector (is it a .NET "
                        "program?); %s holds no data\n", output);
        return NULL;
    }
    char a[QUERY_FORMAT_MAX], b[QUERY_FORMAT_MAX], c[QUERY_FORMAT_MAX], d[QUERY_FORMAT_MAX],
        e[QUERY_FORMAT_MAX];
    g_autofree char *lost = NULL;
    if (allocs_lost == 0 && gcs_lost == 0) {
        lost = g_strdup("0 lost");
    } else {
        char f[QUERY_FORMAT_MAX], g[QUERY_FORMAT_MAX];
        lost = g_strdup_printf("lost %s allocations and %s GCs (%s)",
                               query_count_format(allocs_lost, f), query_count_format(gcs_lost, g),
                               loss ? loss : "reason unknown");
    }
    char s[QUERY_FORMAT_MAX];
    g_autofree char *estimated = samples > 0 ? g_strdup_printf(
                                                   " estimated from %s samples",
                                                   query_count_format(samples, s))
                                             : g_strdup("");
    fprintf(stderr,
            "heaplens: recorded %s GCs, %s%s allocations%s (%s survived a GC) of %s types, %s -> "
            "%s (%s)%s\n",
            query_count_format(gcs, a), samples > 0 ? "~" : "", query_count_format(allocations, b),
            estimated, query_count_format(survived, c), query_count_format(types, d), lost, output,
            query_size_format(st.st_size, e), whose);
    if (note)
        fprintf(stderr, "heaplens: %s\n", note);
    return NULL;
}

/* A database is a set of files: FILE and SQLite's FILE-wal, FILE-shm, FILE-journal. A leftover
 * of a killed writer must never be taken into a new recording, so --force removes the whole set
 * and without it any member of the set means "exists". A database is a regular file: anything
 * else named (a FIFO, a device, a directory) is refused, never removed; through a symbolic link
 * the set beside its target is the one replaced (SQLite writes there), never the link.
 * Sets *resolved to the path to record to. */
gboolean recording_output_prepare(const char *output, gboolean force, char **resolved,
                               GError **error) {
    static const char *const suffixes[] = {"", "-wal", "-shm", "-journal"};
    struct stat st;
    *resolved = NULL;
    if (stat(output, &st) == 0 && !S_ISREG(st.st_mode)) {
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_USAGE,
                    "cannot record to %s: it is not a regular file (a database needs one)", output);
        return FALSE;
    }
    char *real = force && stat(output, &st) == 0 ? realpath(output, NULL) : NULL;
    *resolved = g_strdup(real ? real : output);
    free(real);
    for (size_t i = 0; i < G_N_ELEMENTS(suffixes); i++) {
        g_autofree char *path = g_strconcat(*resolved, suffixes[i], NULL);
        if (force && lstat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
            g_set_error(error, QUERY_ERROR, QUERY_ERROR_USAGE,
                        "cannot replace %s: it is not a regular file", path);
            return FALSE;
        }
        if (force && unlink(path) != 0 && errno != ENOENT) {
            g_set_error(error, QUERY_ERROR, QUERY_ERROR_IO, "cannot replace %s: %s", path,
                        g_strerror(errno));
            return FALSE;
        }
        if (!force && lstat(path, &st) == 0) {
            g_set_error(error, QUERY_ERROR, QUERY_ERROR_USAGE,
                        "%s already exists; choose another name with -o, or --force to replace it",
                        path);
            return FALSE;
        }
    }
    return TRUE;
}


