/* cmd_record.c — `heaplens record`: run a program with the collector and store what it does.
 *
 *   heaplens ──fork──▶ writer process (store_writer_serve: socket → SQLite)
 *      │                   ▲ unix socket in a private 0700 directory, socket file 0600
 *      └──fork/exec──▶ PROGRAM with libheaplens.so loaded (CORECLR_* variables)
 *
 * The writer creates the database before the program starts, so a file that cannot be written is
 * reported before anything runs. When the program exits, its status goes to the writer through
 * the stop pipe (stored in run.exit_status) and heaplens exits with that same status.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "query/commands.h"
#include "query/query.h"
#include "query/session.h"
#include "store/store.h"

#define PROFILER_CLSID "{A3E1B5C2-6D4F-4E8A-9B17-2C5D8E0F4A61}" /* collector/clr_guids.c */
#define COLLECTOR_NAME "libheaplens.so"
#define STOP_WAIT_MS 5000
#define WRITER_EXIT_STOPPED 3 /* the writer stopped at a write error and said so */

typedef struct record_options {
    const char *output;
    const char *snapshot; /* policy for HEAPLENS_SNAPSHOT, validated */
    gboolean force, quiet, json;
    char **program; /* argv of the program, NULL-terminated, borrowed */
} record_options;

/* The policies the collector understands (collector/profiler.c). */
static gboolean snapshot_policy_valid(const char *p) {
    if (strcmp(p, "induced") == 0 || strcmp(p, "gen2") == 0 || strcmp(p, "none") == 0)
        return TRUE;
    if (strncmp(p, "every:", 6) != 0 || !p[6])
        return FALSE;
    char *end = NULL;
    long n = strtol(p + 6, &end, 10);
    return *end == 0 && n >= 1 && n <= 1000000;
}

static gboolean parse_options(int argc, char **argv, record_options *o, gboolean *help,
                              GError **error) {
    int i = 1;
    for (; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0) {
            i++;
            break;
        }
        if (a[0] != '-' || a[1] == 0)
            break; /* the program */
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            *help = TRUE;
            return TRUE;
        } else if (strcmp(a, "-o") == 0 || strcmp(a, "--output") == 0) {
            if (i + 1 >= argc) {
                g_set_error(error, QUERY_ERROR, QUERY_ERROR_USAGE, "record: %s needs a file name", a);
                return FALSE;
            }
            o->output = argv[++i];
        } else if (strncmp(a, "--output=", 9) == 0) {
            o->output = a + 9;
        } else if (strcmp(a, "--snapshot") == 0 || strncmp(a, "--snapshot=", 11) == 0) {
            if (a[10] == 0 && i + 1 >= argc) {
                g_set_error(error, QUERY_ERROR, QUERY_ERROR_USAGE, "record: --snapshot needs a policy");
                return FALSE;
            }
            o->snapshot = a[10] == '=' ? a + 11 : argv[++i];
            if (!snapshot_policy_valid(o->snapshot)) {
                g_set_error(error, QUERY_ERROR, QUERY_ERROR_USAGE,
                            "record: --snapshot takes induced, gen2, every:N (N >= 1) or none, not '%s'",
                            o->snapshot);
                return FALSE;
            }
        } else if (strcmp(a, "--force") == 0) {
            o->force = TRUE;
        } else if (strcmp(a, "--quiet") == 0 || strcmp(a, "-q") == 0) {
            o->quiet = TRUE;
        } else if (strcmp(a, "--json") == 0) {
            o->json = TRUE;
        } else {
            g_set_error(error, QUERY_ERROR, QUERY_ERROR_USAGE,
                        "record: unknown option '%s'; see 'heaplens record --help'", a);
            return FALSE;
        }
    }
    if (i >= argc) {
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_USAGE,
                    "record: no program to run; usage: heaplens record [-o FILE] -- PROGRAM [ARGS...]");
        return FALSE;
    }
    o->program = argv + i;
    return TRUE;
}

/* libheaplens.so next to the heaplens executable (build tree), or in ../lib/heaplens (installed). */
static char *collector_path(GError **error) {
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

/* Fails early, with execvp's own reason, for a program that cannot be run. */
static gboolean program_check(const char *program, GError **error) {
    if (strchr(program, '/')) {
        if (access(program, X_OK) == 0)
            return TRUE;
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_USAGE, "cannot run '%s': %s", program,
                    g_strerror(errno));
        return FALSE;
    }
    g_autofree char *found = g_find_program_in_path(program);
    if (found)
        return TRUE;
    g_set_error(error, QUERY_ERROR, QUERY_ERROR_USAGE, "cannot run '%s': not found in PATH", program);
    return FALSE;
}

static char *default_output(const char *program) {
    g_autofree char *base = g_path_get_basename(program);
    time_t now = time(NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    char stamp[32];
    strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
    return g_strdup_printf("heaplens-%s-%s.db", base, stamp);
}

/* A fresh private (0700) directory for the recording's sockets. */
static char *private_dir(GError **error) {
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
static int socket_listen(const char *path, GError **error) {
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

/* The recording's sockets: the collector's and the control socket for `heaplens snapshot`. */
typedef struct record_sockets {
    char *dir, *collector_path, *control_path;
    int collector_fd, control_fd;
} record_sockets;

static void sockets_remove(record_sockets *s) {
    if (s->collector_fd >= 0)
        close(s->collector_fd);
    if (s->control_fd >= 0)
        close(s->control_fd);
    if (s->collector_path)
        unlink(s->collector_path);
    if (s->control_path)
        unlink(s->control_path);
    if (s->dir)
        rmdir(s->dir);
    g_free(s->dir);
    g_free(s->collector_path);
    g_free(s->control_path);
    memset(s, 0, sizeof *s);
    s->collector_fd = s->control_fd = -1;
}

static gboolean sockets_create(record_sockets *s, GError **error) {
    memset(s, 0, sizeof *s);
    s->collector_fd = s->control_fd = -1;
    s->dir = private_dir(error);
    if (!s->dir)
        return FALSE;
    s->collector_path = g_build_filename(s->dir, "collector.sock", NULL);
    s->control_path = g_build_filename(s->dir, "control.sock", NULL);
    s->collector_fd = socket_listen(s->collector_path, error);
    if (s->collector_fd >= 0)
        s->control_fd = socket_listen(s->control_path, error);
    if (s->control_fd < 0) {
        sockets_remove(s);
        return FALSE;
    }
    return TRUE;
}

/* The writer process. Reports "ok" or the error on `ready_fd`, then serves the recording. */
static G_NORETURN void writer_main(const char *output, const char *command, int listen_fd,
                                   int control_fd, int stop_fd, int ready_fd) {
    /* Ctrl-C goes to the whole process group; the writer must outlive the program to finish. */
    signal(SIGINT, SIG_IGN);
    signal(SIGQUIT, SIG_IGN);
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

static pid_t child_pid; /* forwarded SIGTERM/SIGHUP go here */

static void forward_signal(int sig) {
    if (child_pid > 0)
        kill(child_pid, sig);
}

/* Runs the program; returns its pid, or -1 with the exec error. */
static pid_t program_start(char **program, const char *collector, const char *socket_path,
                           const char *snapshot_policy, GError **error) {
    int report[2];
    if (pipe2(report, O_CLOEXEC) != 0) {
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_IO, "record: pipe: %s", g_strerror(errno));
        return -1;
    }
    pid_t pid = fork();
    if (pid == 0) {
        close(report[0]);
        setenv("CORECLR_ENABLE_PROFILING", "1", 1);
        setenv("CORECLR_PROFILER", PROFILER_CLSID, 1);
        setenv("CORECLR_PROFILER_PATH", collector, 1);
        unsetenv("CORECLR_PROFILER_PATH_64"); /* it would take precedence over ours */
        setenv("HEAPLENS_SOCKET", socket_path, 1);
        if (snapshot_policy)
            setenv("HEAPLENS_SNAPSHOT", snapshot_policy, 1);
        else
            unsetenv("HEAPLENS_SNAPSHOT");
        execvp(program[0], program);
        int e = errno;
        if (write(report[1], &e, sizeof e) < 0) {
            /* the parent sees EOF and reports a generic failure */
        }
        _exit(127);
    }
    close(report[1]);
    if (pid < 0) {
        close(report[0]);
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_IO, "record: fork: %s", g_strerror(errno));
        return -1;
    }
    int e = 0;
    ssize_t n = read(report[0], &e, sizeof e); /* EOF: exec succeeded (CLOEXEC closed it) */
    close(report[0]);
    if (n == sizeof e) {
        waitpid(pid, NULL, 0);
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_USAGE, "cannot run '%s': %s", program[0],
                    g_strerror(e));
        return -1;
    }
    return pid;
}

static int exit_status_of(int status) {
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return 1;
}

static void summary_print(const char *output, const record_options *o) {
    g_autoptr(GError) error = NULL;
    sqlite3 *db = query_db_open(output, &error);
    if (!db) {
        query_error_report(error);
        return;
    }
    int64_t gcs = 0, objects = 0, types = 0, nodata = 0;
    int64_t allocations = 0, survived = 0, allocs_lost = 0, gcs_lost = 0;
    query_db_int(db, "SELECT count(*) FROM gcs", &gcs, NULL);
    query_db_int(db, "SELECT count(*) FROM objects", &objects, NULL);
    query_db_int(db, "SELECT count(*) FROM types", &types, NULL);
    query_db_int(db, "SELECT total(count) FROM alloc_counts", &allocations, NULL);
    query_db_int(db, "SELECT total(survived) FROM alloc_counts", &survived, NULL);
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
        query_json_print(j, stdout);
        json_decref(j);
        return;
    }
    if (o->quiet)
        return;
    if (nodata) {
        fprintf(stderr, "heaplens: warning: the program never loaded the collector (is it a .NET "
                        "program?); %s holds no data\n", output);
        return;
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
    fprintf(stderr,
            "heaplens: recorded %s GCs, %s allocations (%s survived a GC) of %s types, %s -> %s "
            "(%s)\n",
            query_count_format(gcs, a), query_count_format(allocations, b),
            query_count_format(survived, c), query_count_format(types, d), lost, output,
            query_size_format(st.st_size, e));
    if (note)
        fprintf(stderr, "heaplens: %s\n", note);
}

/* A database is a set of files: FILE and SQLite's FILE-wal, FILE-shm, FILE-journal. A leftover
 * of a killed writer must never be taken into a new recording, so --force removes the whole set
 * and without it any member of the set means "exists". */
static gboolean output_prepare(const char *output, gboolean force, GError **error) {
    static const char *const suffixes[] = {"", "-wal", "-shm", "-journal"};
    for (size_t i = 0; i < G_N_ELEMENTS(suffixes); i++) {
        g_autofree char *path = g_strconcat(output, suffixes[i], NULL);
        if (force && unlink(path) != 0 && errno != ENOENT) {
            g_set_error(error, QUERY_ERROR, QUERY_ERROR_IO, "cannot replace %s: %s", path,
                        g_strerror(errno));
            return FALSE;
        }
        if (!force && access(path, F_OK) == 0) {
            g_set_error(error, QUERY_ERROR, QUERY_ERROR_USAGE,
                        "%s already exists; choose another name with -o, or --force to replace it",
                        path);
            return FALSE;
        }
    }
    return TRUE;
}

int cmd_record(int argc, char **argv) {
    record_options o = {0};
    gboolean help = FALSE;
    g_autoptr(GError) error = NULL;
    if (!parse_options(argc, argv, &o, &help, &error))
        return query_error_report(error);
    if (help) {
        query_command_help("record", stdout);
        return 0;
    }
    g_autofree char *collector = collector_path(&error);
    if (!collector || !program_check(o.program[0], &error))
        return query_error_report(error);
    g_autofree char *output = o.output ? g_strdup(o.output) : default_output(o.program[0]);
    if (!output_prepare(output, o.force, &error))
        return query_error_report(error);
    g_autofree char *command = g_strjoinv(" ", o.program);

    record_sockets sockets;
    if (!sockets_create(&sockets, &error))
        return query_error_report(error);
    int stop[2], ready[2];
    if (pipe2(stop, O_CLOEXEC) != 0 || pipe2(ready, O_CLOEXEC) != 0) {
        g_set_error(&error, QUERY_ERROR, QUERY_ERROR_IO, "record: pipe: %s", g_strerror(errno));
        return query_error_report(error);
    }
    fflush(NULL);
    pid_t writer = fork();
    if (writer == 0) {
        close(stop[1]);
        close(ready[0]);
        writer_main(output, command, sockets.collector_fd, sockets.control_fd, stop[0], ready[1]);
    }
    close(sockets.collector_fd);
    close(sockets.control_fd);
    sockets.collector_fd = sockets.control_fd = -1;
    close(stop[0]);
    close(ready[1]);
    int exit_status = 1;
    char msg[1024] = "";
    ssize_t n = writer > 0 ? read(ready[0], msg, sizeof msg - 1) : -1;
    close(ready[0]);
    msg[n > 0 ? n : 0] = 0;
    g_strchomp(msg);
    if (writer < 0 || strcmp(msg, "ok") != 0) {
        g_set_error(&error, QUERY_ERROR, QUERY_ERROR_IO, "cannot record to %s: %s", output,
                    writer < 0 ? g_strerror(errno) : (msg[0] ? msg : "the writer failed to start"));
        close(stop[1]);
        if (writer > 0)
            waitpid(writer, NULL, 0);
        sockets_remove(&sockets);
        return query_error_report(error);
    }

    /* Like system(): the program owns the terminal's Ctrl-C; heaplens waits for it. */
    struct sigaction ignore = {.sa_handler = SIG_IGN}, forward = {.sa_handler = forward_signal};
    struct sigaction old_int, old_quit, old_term, old_hup;
    sigaction(SIGINT, &ignore, &old_int);
    sigaction(SIGQUIT, &ignore, &old_quit);
    sigaction(SIGTERM, &forward, &old_term);
    sigaction(SIGHUP, &forward, &old_hup);
    pid_t program = program_start(o.program, collector, sockets.collector_path, o.snapshot, &error);
    gboolean started = program > 0;
    int status = 0;
    if (started) {
        child_pid = program;
        g_autoptr(GError) session_error = NULL; /* without it, only `heaplens snapshot` is lost */
        if (!query_session_write(program, sockets.control_path, output, &session_error))
            fprintf(stderr, "heaplens: warning: %s; 'heaplens snapshot %ld' will not find this "
                            "recording\n", session_error->message, (long)program);
        while (waitpid(program, &status, 0) < 0 && errno == EINTR)
            ;
        child_pid = 0;
        query_session_remove(program);
        exit_status = exit_status_of(status);
    }
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGQUIT, &old_quit, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    sigaction(SIGHUP, &old_hup, NULL);

    /* Tell the writer the program is gone and how it ended, then wait for it to finish. The
     * writer may have died: no SIGPIPE for heaplens (set only now, so that the program was not
     * started with SIGPIPE ignored). */
    signal(SIGPIPE, SIG_IGN);
    char line[64];
    if (WIFSIGNALED(status) && started)
        snprintf(line, sizeof line, "signal %d\n", WTERMSIG(status));
    else
        snprintf(line, sizeof line, "exit %d\n", started ? exit_status : 127);
    if (write(stop[1], line, strlen(line)) < 0) {
        /* the writer is gone; its own exit status tells */
    }
    close(stop[1]);
    int writer_status = 0;
    while (waitpid(writer, &writer_status, 0) < 0 && errno == EINTR)
        ;
    sockets_remove(&sockets);

    if (!started) {
        unlink(output); /* nothing was recorded: leave no empty database behind */
        return query_error_report(error);
    }
    if (!WIFEXITED(writer_status) || WEXITSTATUS(writer_status) != 0) {
        /* The program's exit status still passes through unchanged: scripts that wrap a program
         * in `heaplens record` must see what the program did. The loss is said here (unless the
         * writer's own line said it already). */
        if (!WIFEXITED(writer_status) || WEXITSTATUS(writer_status) != WRITER_EXIT_STOPPED)
            fprintf(stderr, "heaplens: the writer failed; %s holds what was committed before\n",
                    output);
        return exit_status;
    }
    summary_print(output, &o);
    return exit_status;
}
