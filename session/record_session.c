/* record_session.c — `heaplens record`: run a program with the collector and store what it does
 * (record_session.h).
 *
 *   heaplens ──fork──▶ writer process (store_writer_serve: socket → SQLite)
 *      │                   ▲ unix socket in a private 0700 directory, socket file 0600
 *      └──fork/exec──▶ PROGRAM with libheaplens.so loaded (CORECLR_* variables)
 *
 * The writer creates the database before the program starts, so a file that cannot be written is
 * reported before anything runs. When the program exits, its status goes to the writer through
 * the stop pipe (stored in run.exit_status) and heaplens exits with that same status.
 *
 * With --children[=PATTERN] a second process serves the descendants (children_main):
 *
 *   heaplens ──fork──▶ children server: accepts on children.sock, one writer process per
 *                      connection (store_writer_serve_connection) into FILE's stem.PID.ext
 *
 * The collector of a matching descendant connects there (collector/profiler.c, session_claim);
 * the peer's pid (SO_PEERCRED) names its database and its session file (heaplens snapshot PID).
 * When the program has exited, the children server stops accepting and closes the writers' stop
 * pipe: a descendant still running gets STOP_WAIT_MS more, then its recording ends (truncated).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <poll.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "session/record_session.h"

#include "query/query.h"
#include "query/replaced.h"
#include "session/counted.h"
#include "session/recording.h"
#include "session/session.h"
#include "store/store.h"


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

/* The signals heaplens passes on to the program while it runs: those a terminal, a service
 * manager or a script sends, and SIGUSR1/SIGUSR2, which a program may handle (a log reopened, a
 * reload) and which by default would end heaplens alone and leave the program running on. */
static const int forwarded_signals[] = {SIGINT, SIGQUIT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2};
#define N_FORWARDED G_N_ELEMENTS(forwarded_signals)

static volatile sig_atomic_t child_pid;      /* the running program, 0 before and after */
static volatile sig_atomic_t pending_signal; /* arrived before the program was started */
/* The program has ended and heaplens waits for its writer to store the rest: 1, a signal is
 * said and changes nothing (2: --quiet or --json, not said). */
static volatile sig_atomic_t program_ended;

/* A signal sent to heaplens goes on to the program. One the terminal generated (Ctrl-C, Ctrl-\,
 * hangup: si_code SI_KERNEL) went to the whole foreground process group, the program included,
 * so it is not sent a second time. */
static void forward_signal(int sig, siginfo_t *info, void *context) {
    (void)context;
    if (program_ended) {
        /* Ending heaplens now would not end the writer (it ignores signals and finishes the
         * recording alone), only lose the summary and the program's exit status (130). */
        static const char line[] = "heaplens: the program has ended; its recording is being "
                                   "finished (the summary follows)\n";
        if (program_ended == 1 && write(STDERR_FILENO, line, sizeof line - 1) < 0) {
            /* nothing to do in a handler */
        }
        return;
    }
    if (child_pid <= 0)
        pending_signal = sig; /* a Ctrl-C too: the program is not started (record_session_run) */
    else if (!info || info->si_code != SI_KERNEL)
        kill((pid_t)child_pid, sig);
}

/* The forwarded signal that arrived before the program started (0: none), with `block` blocked:
 * one still pending in the kernel is let through to forward_signal first. */
static int pending_signal_take(const sigset_t *block, const sigset_t *original_mask) {
    sigset_t pending;
    if (sigpending(&pending) == 0)
        for (size_t i = 0; i < N_FORWARDED; i++)
            if (sigismember(&pending, forwarded_signals[i]) &&
                !sigismember(original_mask, forwarded_signals[i])) {
                sigprocmask(SIG_UNBLOCK, block, NULL);
                sigprocmask(SIG_BLOCK, block, NULL);
                break;
            }
    return (int)pending_signal;
}

/* Runs the program; returns its pid, or -1 with the exec error. */
static pid_t program_start(char **program, const char *collector, const char *socket_path,
                           const char *snapshot_policy, const char *children,
                           const char *stacks, gboolean exit_note,
                           const struct sigaction *original, const sigset_t *original_mask,
                           GError **error) {
    int report[2];
    if (pipe2(report, O_CLOEXEC) != 0) {
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_IO, "record: pipe: %s", g_strerror(errno));
        return -1;
    }
    pid_t pid = fork();
    if (pid == 0) {
        close(report[0]);
        /* The program starts with the dispositions and mask heaplens was given, as if heaplens
         * were not there: exec keeps an ignored signal ignored, and the runtime never handles
         * a SIGINT or SIGQUIT that was ignored at its start. */
        for (size_t i = 0; i < N_FORWARDED; i++)
            sigaction(forwarded_signals[i], &original[i], NULL);
        sigprocmask(SIG_SETMASK, original_mask, NULL);
        setenv("CORECLR_ENABLE_PROFILING", "1", 1);
        setenv("CORECLR_PROFILER", PROFILER_CLSID, 1);
        setenv("CORECLR_PROFILER_PATH", collector, 1);
        /* Each would take precedence over ours where it applies (_ARM64 on arm64 even before
         * _64, _32 and _ARM32 on 32-bit hosts): another profiler of the user's would load. */
        unsetenv("CORECLR_PROFILER_PATH_64");
        unsetenv("CORECLR_PROFILER_PATH_ARM64");
        unsetenv("CORECLR_PROFILER_PATH_32");
        unsetenv("CORECLR_PROFILER_PATH_ARM32");
        setenv("HEAPLENS_SOCKET", socket_path, 1);
        /* The program's exit says when it waits for the collector over a second (collector.h
         * exit_note); the tests set another bound. -q and --json: not said. */
        if (!exit_note)
            unsetenv("HEAPLENS_EXIT_NOTE_MS");
        else if (!getenv("HEAPLENS_EXIT_NOTE_MS"))
            setenv("HEAPLENS_EXIT_NOTE_MS", "1000", 1);
        /* Only this process is recorded (or, if it is no .NET program, its first .NET
         * descendant): the collector declines in any other (they inherit the variables through
         * the runtime's copy of the environment). */
        char pid_text[24];
        snprintf(pid_text, sizeof pid_text, "%ld", (long)getpid());
        setenv("HEAPLENS_PID", pid_text, 1);
        if (snapshot_policy)
            setenv("HEAPLENS_SNAPSHOT", snapshot_policy, 1);
        else
            unsetenv("HEAPLENS_SNAPSHOT");
        /* --stacks: allocation samples with call stacks (collector/eventpipe.h), on by default. */
        if (stacks)
            setenv("HEAPLENS_STACKS", stacks, 1);
        else
            unsetenv("HEAPLENS_STACKS");
        /* --children: matching descendants record too, each to children.sock. */
        if (children)
            setenv("HEAPLENS_CHILDREN", children, 1);
        else
            unsetenv("HEAPLENS_CHILDREN");
        execvp(program[0], program);
        int e = errno;
        if (write(report[1], &e, sizeof e) < 0) {
            /* the parent sees EOF and reports a generic failure */
        }
        _exit(127);
    }
    close(report[1]);
    if (pid > 0) {
        child_pid = pid;
        if (pending_signal)
            kill(pid, pending_signal);
    }
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
        child_pid = 0;
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_USAGE, "cannot run '%s': %s", program[0],
                    g_strerror(e));
        return -1;
    }
    return pid;
}

/* The first look at the program's processes for a veto (recording_program_veto_new), and the
 * longest wait between two: the waits double from the first, so a short program gets a few
 * looks, a long one one a second (about 0.1 ms of CPU each at a .NET process of 11 threads). */
#define VETO_LOOK_FIRST_MS 5
#define VETO_LOOK_MAX_MS 1000

/* Waits for the program to exit (its waitpid status into *status). Meanwhile, unless *veto is
 * already known (NULL), looks at its processes' environments for what keeps the runtime from
 * loading the collector: once the program has exited, its environment cannot be read any more
 * (a zombie has none), and a wrapper script's `DOTNET_EnableDiagnostics=0 dotnet app.dll` is
 * seen nowhere else. The looks end when a collector has claimed the session (`claimed`, the
 * file `recorded` it creates in the session's directory: collector/profiler.c session_claim):
 * nothing is vetoed then. No pidfd (a kernel before 5.3): no looks. */
static void program_wait(pid_t program, const char *claimed, int *status, char **veto) {
    int exited = *veto ? -1 : (int)syscall(SYS_pidfd_open, program, 0);
    for (int delay = VETO_LOOK_FIRST_MS; exited >= 0 && !*veto;) {
        struct pollfd p = {.fd = exited, .events = POLLIN};
        int n = poll(&p, 1, delay);
        if (n > 0 || (n < 0 && errno != EINTR))
            break; /* it exited (or poll cannot tell: waitpid will) */
        if (n == 0 && access(claimed, F_OK) == 0)
            break; /* recorded */
        if (n == 0) {
            *veto = recording_program_veto_new(program);
            delay = MIN(delay * 2, VETO_LOOK_MAX_MS);
        }
    }
    if (exited >= 0)
        close(exited);
    while (waitpid(program, status, 0) < 0 && errno == EINTR)
        ;
}

/* Nothing was recorded into `output`: its set is removed, and with --force the old recording set
 * `aside` goes back in its place (*error, when given, then says so). TRUE when it went back. */
static gboolean output_drop(const char *output, const char *aside, GError **error) {
    if (aside)
        return recording_output_kept(aside, output, error);
    for (size_t i = 0; i < QUERY_REPLACED_MEMBERS; i++) {
        g_autofree char *path = g_strconcat(output, query_replaced_suffixes[i], NULL);
        unlink(path);
    }
    return FALSE;
}

static int exit_status_of(int status) {
    if (WIFEXITED(status))
        return WEXITSTATUS(status);
    if (WIFSIGNALED(status))
        return 128 + WTERMSIG(status);
    return 1;
}

/* ---- --children: the descendants' writers ---------------------------------------------------- */

/* FILE's stem + "." + pid + FILE's extension, beside FILE: app.db -> app.12345.db. */
static char *child_output(const char *output, pid_t pid) {
    g_autofree char *dir = g_path_get_dirname(output);
    g_autofree char *base = g_path_get_basename(output);
    char *dot = strrchr(base, '.');
    g_autofree char *name = NULL;
    if (dot && dot != base) {
        *dot = 0;
        name = g_strdup_printf("%s.%ld.%s", base, (long)pid, dot + 1);
    } else {
        name = g_strdup_printf("%s.%ld", base, (long)pid);
    }
    return strcmp(dir, ".") == 0 && !g_str_has_prefix(output, "./") ? g_strdup(name)
                                                                    : g_build_filename(dir, name, NULL);
}

typedef struct child_writer {
    pid_t pid, writer;
    char *path;
} child_writer;

/* The writer of one descendant's connection: its own database, control socket and session
 * file. Runs in a process of its own (forked by children_main). */
static G_NORETURN void child_writer_main(const char *path, const char *aside, pid_t pid,
                                         int conn, const char *control_path, int control_fd,
                                         int stop_fd) {
    g_autoptr(GError) error = NULL;
    store_writer *w = store_writer_create(path, NULL, &error); /* RUN_START has the command */
    if (!w) {
        recording_output_kept(aside, path, &error); /* --force: the old one goes back */
        fprintf(stderr, "heaplens: cannot record pid %ld to %s: %s\n", (long)pid, path,
                error->message);
        _exit(1);
    }
    recording_output_replaced(aside);
    recording_output_id id; /* as the program's writer keeps it (recording_writer_start) */
    recording_output_id_take(path, &id);
    gboolean session = control_fd >= 0 && query_session_write(pid, control_path, path, NULL);
    gboolean ok = store_writer_serve_connection(w, conn, control_fd, stop_fd, STOP_WAIT_MS, &error);
    if (control_fd >= 0) {
        close(control_fd);
        unlink(control_path);
    }
    if (session)
        query_session_remove(pid);
    close(conn);
    g_autoptr(GError) finish_error = NULL;
    store_summary summary;
    gboolean finished = store_writer_finish(w, &summary, &finish_error);
    if (!ok || !finished) {
        /* A file removed or replaced while it recorded failed its next write: that is said
         * instead of SQLite's "attempt to write a readonly database", and the recorder must not
         * say that the file now named so holds this recording. */
        g_autofree char *who = g_strdup_printf("the writer of pid %ld", (long)pid);
        if (!recording_output_ours(who, path, &id))
            _exit(WRITER_EXIT_LOST);
        fprintf(stderr, "heaplens: writer of pid %ld: %s\n", (long)pid,
                error ? error->message : finish_error->message);
        _exit(1);
    }
    if (summary.wal_kept)
        recording_wal_kept_say(path);
    _exit(0);
}

/* One connection on children.sock: checks the peer and forks its writer. */
static void children_accept(const record_options *o, const char *output, const char *dir, int conn,
                            int stop_fd, int *close_in_writer, size_t n_close, GArray *writers) {
    struct ucred cred;
    socklen_t len = sizeof cred;
    if (getsockopt(conn, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || cred.uid != getuid()) {
        fprintf(stderr, "heaplens: refused a descendant's connection from another user (uid %u)\n",
                (unsigned)cred.uid);
        close(conn);
        return;
    }
    g_autofree char *named = child_output(output, cred.pid);
    g_autofree char *path = NULL, *aside = NULL;
    g_autoptr(GError) error = NULL;
    if (!recording_output_prepare(named, o->force, &path, &aside, &error)) {
        fprintf(stderr, "heaplens: not recording pid %ld: %s\n", (long)cred.pid, error->message);
        close(conn);
        return;
    }
    g_autofree char *control_path = g_strdup_printf("%s/control.%ld.sock", dir, (long)cred.pid);
    int control_fd = recording_socket_listen(control_path, NULL); /* without it: no heaplens snapshot */
    fflush(NULL);
    pid_t writer = fork();
    int fork_errno = errno;
    if (writer == 0) {
        for (size_t i = 0; i < n_close; i++)
            close(close_in_writer[i]);
        child_writer_main(path, aside, cred.pid, conn, control_path, control_fd, stop_fd);
    }
    close(conn);
    if (control_fd >= 0)
        close(control_fd);
    if (writer < 0) {
        g_set_error(&error, QUERY_ERROR, QUERY_ERROR_IO, "fork: %s", g_strerror(fork_errno));
        if (control_fd >= 0)
            unlink(control_path);
        if (aside)
            recording_output_kept(aside, path, &error); /* --force: the old one goes back */
        else
            unlink(path);
        fprintf(stderr, "heaplens: not recording pid %ld: %s\n", (long)cred.pid, error->message);
        return;
    }
    child_writer c = {.pid = cred.pid, .writer = writer, .path = g_steal_pointer(&path)};
    g_array_append_val(writers, c);
}

/* The children server: accepts descendants' connections until `stop_fd` is readable (the
 * program has exited) or at its end, takes what is pending, tells the writers to end (end of
 * file on their stop pipe), waits for them and reports one line per database on `report_fd`:
 * "PID STATUS PATH" (STATUS: its writer's exit status, 0 when it finished, WRITER_EXIT_LOST
 * when its file was lost and it said so; 128+N for a signal N). */
static G_NORETURN void children_main(const record_options *o, const char *output, const char *dir,
                                     int listen_fd, int stop_fd, int report_fd) {
    signal(SIGINT, SIG_IGN);
    signal(SIGQUIT, SIG_IGN);
    signal(SIGTERM, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
    signal(SIGUSR1, SIG_IGN);
    signal(SIGUSR2, SIG_IGN);
    signal(SIGPIPE, SIG_IGN);
    int ends[2];
    if (pipe2(ends, O_CLOEXEC) != 0 || fcntl(listen_fd, F_SETFL, O_NONBLOCK) != 0) {
        fprintf(stderr, "heaplens: children: %s\n", g_strerror(errno));
        _exit(1);
    }
    GArray *writers = g_array_new(FALSE, TRUE, sizeof(child_writer));
    int close_in_writer[] = {listen_fd, stop_fd, report_fd, ends[1]};
    for (gboolean stopping = FALSE; !stopping;) {
        struct pollfd pfd[2] = {{.fd = listen_fd, .events = POLLIN},
                                {.fd = stop_fd, .events = POLLIN}};
        if (poll(pfd, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        stopping = pfd[1].revents != 0;
        /* Every pending connection, also when stopping: a descendant that already exited left
         * its whole stream in its connection. */
        for (;;) {
            int conn = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);
            if (conn < 0)
                break;
            children_accept(o, output, dir, conn, ends[0], close_in_writer,
                            G_N_ELEMENTS(close_in_writer), writers);
        }
    }
    close(listen_fd);
    close(ends[1]); /* the writers' stop: end of file */
    GString *report = g_string_new(NULL);
    for (guint i = 0; i < writers->len; i++) {
        child_writer *c = &g_array_index(writers, child_writer, i);
        int status = 0;
        while (waitpid(c->writer, &status, 0) < 0 && errno == EINTR)
            ;
        g_string_append_printf(report, "%ld %d %s\n", (long)c->pid,
                               WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status),
                               c->path);
    }
    for (size_t off = 0; off < report->len;) {
        ssize_t n = write(report_fd, report->str + off, report->len - off);
        if (n <= 0 && errno != EINTR)
            break;
        off += n > 0 ? (size_t)n : 0;
    }
    _exit(0);
}

/* Starts the children server on `dir`/children.sock. Returns its pid (-1 on failure, error
 * set); *stop_w ends it, *report_r carries its report. */
static pid_t children_start(const record_options *o, const char *output, recording_sockets *s,
                            int main_stop_w, int *stop_w, int *report_r, GError **error) {
    s->children_path = g_build_filename(s->dir, "children.sock", NULL);
    int listen_fd = recording_socket_listen(s->children_path, error);
    if (listen_fd < 0)
        return -1;
    int stop[2], report[2];
    if (pipe2(stop, O_CLOEXEC) != 0 || pipe2(report, O_CLOEXEC) != 0) {
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_IO, "record: pipe: %s", g_strerror(errno));
        close(listen_fd);
        return -1;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid == 0) {
        close(main_stop_w); /* the main writer must see end of file when heaplens is gone */
        close(stop[1]);
        close(report[0]);
        children_main(o, output, s->dir, listen_fd, stop[0], report[1]);
    }
    close(listen_fd);
    close(stop[0]);
    close(report[1]);
    if (pid < 0) {
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_IO, "record: fork: %s", g_strerror(errno));
        close(stop[1]);
        close(report[0]);
        return -1;
    }
    *stop_w = stop[1];
    *report_r = report[0];
    return pid;
}

/* Reads the children server's report to its end and waits for it. */
static GPtrArray *children_finish(pid_t server, int report_r) {
    GString *text = g_string_new(NULL);
    char buf[4096];
    for (;;) {
        ssize_t n = read(report_r, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        g_string_append_len(text, buf, n);
    }
    close(report_r);
    while (waitpid(server, NULL, 0) < 0 && errno == EINTR)
        ;
    GPtrArray *lines = g_ptr_array_new_with_free_func(g_free);
    gchar **split = g_strsplit(text->str, "\n", -1);
    for (gchar **l = split; *l; l++)
        if (**l)
            g_ptr_array_add(lines, g_strdup(*l));
    g_strfreev(split);
    g_string_free(text, TRUE);
    return lines;
}

/* The dispositions heaplens had before record_session_run (`original`) back. */
static void forwarded_signals_restore(const struct sigaction *original) {
    for (size_t i = 0; i < N_FORWARDED; i++)
        sigaction(forwarded_signals[i], &original[i], NULL);
}

/* record_session_run once the forwarding handlers are installed (`original`: the dispositions
 * they replaced, which the program starts with). */
static gboolean record_session_forwarding(const record_options *options,
                                          const struct sigaction *original, int *exit_status_out,
                                          json_t **summary, GError **error) {
    const record_options o = *options;
    /* The settings the program inherits are checked before anything starts. */
    if (!recording_settings_check("record", environ, NULL, error))
        return FALSE;
    g_autofree char *collector = recording_collector_path(error);
    if (!collector || !program_check(o.program[0], error))
        return FALSE;
    g_autofree char *named = o.output ? g_strdup(o.output) : default_output(o.program[0]);
    g_autofree char *output = NULL, *aside = NULL;
    if (!recording_output_prepare(named, o.force, &output, &aside, error))
        return FALSE;
    g_autofree char *command = g_strjoinv(" ", o.program);
    recording_summary_options so = {.json = o.json, .quiet = o.quiet, .whose = o.children != NULL};
    recording_sockets sockets;
    int writer_stop = -1;
    pid_t writer = -1;
    /* a descendant's database adds ".PID" to the name (child_output; pid_max is 4194304) */
    if ((o.children && !recording_output_name_fits("cannot record to", output,
                                                    strlen(".4194304"), error)) ||
        !recording_sockets_create(&sockets, error) ||
        (writer = recording_writer_start("record", output, command, &sockets, &writer_stop, NULL,
                                         error)) < 0) {
        recording_output_kept(aside, output, error); /* --force: the old one goes back */
        return FALSE;
    }
    /* --force: the old set stays aside until the program has started (below): nothing recorded
     * before (a signal first, a program that cannot be run) puts it back, as attach does when
     * its attach is refused. */
    int exit_status = 1;

    pid_t children = -1;
    int children_stop = -1, children_report = -1;
    if (o.children) {
        children = children_start(&o, output, &sockets, writer_stop, &children_stop,
                                  &children_report, error);
        if (children < 0) {
            close(writer_stop);
            waitpid(writer, NULL, 0);
            recording_sockets_remove(&sockets);
            output_drop(output, aside, error);
            return FALSE;
        }
    }
    /* Blocked around the fork, so that the child never runs our handler. */
    sigset_t block, original_mask;
    sigemptyset(&block);
    for (size_t i = 0; i < N_FORWARDED; i++)
        sigaddset(&block, forwarded_signals[i]);
    sigprocmask(SIG_BLOCK, &block, &original_mask);
    /* The collector's mode travels in the environment the program inherits. */
    if (o.mode)
        setenv("HEAPLENS_MODE", o.mode, 1);
    else
        unsetenv("HEAPLENS_MODE");
    /* --census: sampled mode's census of gen0 (collector/census.h); without it the setting
     * HEAPLENS_CENSUS the program inherits decides (the benchmarks' way), on by default. */
    if (o.census)
        setenv("HEAPLENS_CENSUS", o.census, 1);
    /* --handles: MONITOR_GC at every GC (collector/README.md, "Event mask"). */
    if (o.handles)
        setenv("HEAPLENS_HANDLES", "1", 1);
    else
        unsetenv("HEAPLENS_HANDLES");
    /* --count: the methods whose allocation sites are counted (collector/rejit.h). */
    if (o.count)
        setenv("HEAPLENS_COUNT", o.count, 1);
    else
        unsetenv("HEAPLENS_COUNT");
    /* A signal came before the program started: it is not started, nothing is recorded, and
     * heaplens ends as that signal would have ended it (its status 128+N otherwise). */
    int early = pending_signal_take(&block, &original_mask);
    if (early) {
        close(writer_stop);
        waitpid(writer, NULL, 0);
        if (children > 0) {
            close(children_stop);
            close(children_report);
            waitpid(children, NULL, 0);
        }
        recording_sockets_remove(&sockets);
        gboolean kept = output_drop(output, aside, NULL);
        fprintf(stderr, "heaplens: record: %s before the program started: nothing was recorded%s\n",
                strsignal(early), kept ? " (the old recording was kept)" : "");
        forwarded_signals_restore(original); /* for the signal to end heaplens */
        raise(early);
        sigprocmask(SIG_SETMASK, &original_mask, NULL);
        *exit_status_out = 128 + early;
        return TRUE;
    }
    pid_t program = program_start(o.program, collector, sockets.collector_path, o.snapshot,
                                  o.children, o.stacks, !o.quiet && !o.json, original,
                                  &original_mask, error);
    sigprocmask(SIG_SETMASK, &original_mask, NULL);
    gboolean started = program > 0;
    if (started)
        recording_output_replaced(aside); /* --force: the new recording has begun */
    int status = 0;
    /* what keeps the runtime from loading the collector in the program's environment: an `env`
     * in its command line, or else what program_wait sees in its processes' */
    g_autofree char *veto = recording_launcher_veto_new(o.program);
    if (started) {
        g_autoptr(GError) session_error = NULL; /* without it, only `heaplens snapshot` is lost */
        if (!query_session_write(program, sockets.control_path, output, &session_error))
            fprintf(stderr, "heaplens: warning: %s; 'heaplens snapshot %ld' will not find this "
                            "recording\n", session_error->message, (long)program);
        g_autofree char *claimed = g_build_filename(sockets.dir, "recorded", NULL);
        program_wait(program, claimed, &status, &veto);
        child_pid = 0;
        query_session_remove(program);
        exit_status = exit_status_of(status);
        so.program_signal = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
        so.program_veto = veto;
    }
    /* No program to pass signals on to; they wait for the end of the session (forward_signal)
     * rather than end heaplens while its writer finishes. */
    program_ended = o.quiet || o.json ? 2 : 1;

    /* Tell the writer the program is gone and how it ended, then wait for it to finish. The
     * writer may have died: no SIGPIPE for heaplens (set only now, so that the program was not
     * started with SIGPIPE ignored). */
    signal(SIGPIPE, SIG_IGN);
    char line[64];
    if (WIFSIGNALED(status) && started)
        snprintf(line, sizeof line, "signal %d %ld\n", WTERMSIG(status), (long)program);
    else
        snprintf(line, sizeof line, "exit %d %ld\n", started ? exit_status : 127,
                 started ? (long)program : 0L);
    if (write(writer_stop, line, strlen(line)) < 0) {
        /* the writer is gone; its own exit status tells */
    }
    close(writer_stop);
    if (children > 0)
        close(children_stop); /* descendants still running get STOP_WAIT_MS more */
    int writer_status = 0;
    while (waitpid(writer, &writer_status, 0) < 0 && errno == EINTR)
        ;
    g_autoptr(GPtrArray) recorded = children > 0 ? children_finish(children, children_report)
                                                 : NULL;
    gboolean writer_ok = WIFEXITED(writer_status) && WEXITSTATUS(writer_status) == 0;
    /* The program's exit status still passes through unchanged: scripts that wrap a program in
     * `heaplens record` must see what the program did. A writer that died is said here, and
     * what it could not store is stored now (before the session's directory, which holds the
     * collector's end file, goes). */
    gboolean ours = TRUE; /* `output` is still the recording's file */
    gboolean end_stored = FALSE;
    if (!writer_ok && started)
        ours = recording_writer_died(output, &sockets, writer_status, TRUE, exit_status,
                                     (long)program, &end_stored);
    /* .NET processes of the session that declined (every descendant without --children): the
     * recording says they ran, so that a launcher's summary does not hide its child's work. */
    g_autoptr(GArray) unrecorded = recording_unrecorded_read(&sockets);
    recording_sockets_remove(&sockets);
    g_autoptr(GError) unrecorded_error = NULL;
    if (started && writer_ok && unrecorded->len > 0 &&
        !store_db_unrecorded_add(output, (store_unrecorded *)(void *)unrecorded->data,
                                 unrecorded->len, &unrecorded_error))
        fprintf(stderr, "heaplens: warning: %u .NET processes ran unrecorded, and %s\n",
                unrecorded->len, unrecorded_error->message);

    if (!started) {
        output_drop(output, aside, error); /* nothing was recorded: no empty database left */
        return FALSE;
    }
    *exit_status_out = exit_status;
    /* A killed writer's file now says how it ended: its summary says what it holds and what
     * is missing. So does a writer's stopped by a full disk once its end could be stored: its
     * own line said only how many GCs the file keeps, not what was lost. */
    gboolean stopped = WIFEXITED(writer_status) && WEXITSTATUS(writer_status) == WRITER_EXIT_STOPPED;
    gboolean summarise = writer_ok || (WIFSIGNALED(writer_status) && ours) ||
                         (stopped && ours && end_stored);
    /* --quiet prints no summary: a finished recording is not read again for one (the reading
     * was 1.7 ms of CPU per run). A killed writer's file is, for an error that says it is
     * unreadable. */
    if (o.quiet && !o.json && writer_ok)
        summarise = FALSE;
    if (!summarise && !recorded)
        return TRUE;
    json_t *main_summary = summarise ? recording_summary_print(output, &so) : NULL;
    if (summarise && o.count && !o.quiet && !o.json)
        counted_summary_print(output);
    if (main_summary && o.count)
        json_object_set_new(main_summary, "counted_sites", counted_summary_json(output));
    if (!recorded) {
        *summary = main_summary;
        return TRUE;
    }
    /* --children: one summary per database, the program's first. */
    json_t *list = json_array();
    for (guint i = 0; i < recorded->len; i++) {
        long pid = 0;
        int writer_exit = 1, at = 0;
        const char *entry = g_ptr_array_index(recorded, i);
        if (sscanf(entry, "%ld %d %n", &pid, &writer_exit, &at) < 2 || at == 0)
            continue;
        const char *path = entry + at;
        if (writer_exit == WRITER_EXIT_LOST) /* said by the writer; the file is another's */
            continue;
        if (writer_exit != 0) {
            fprintf(stderr, "heaplens: the writer of pid %ld failed; %s holds what was committed "
                            "before\n", pid, path);
            continue;
        }
        if (o.quiet && !o.json)
            continue;
        json_t *j = recording_summary_print(path, &so);
        if (j)
            json_array_append_new(list, j);
    }
    if (o.json) {
        if (!main_summary)
            main_summary = json_object();
        json_object_set_new(main_summary, "children", list);
        *summary = main_summary;
    } else {
        json_decref(list);
    }
    return TRUE;
}

gboolean record_session_run(const record_options *options, int *exit_status_out,
                            json_t **summary, GError **error) {
    *summary = NULL;
    *exit_status_out = 1;
    pending_signal = 0; /* one of an earlier session that failed before its program started */
    program_ended = 0;
    /* The program gets the terminal's signals itself (same process group, its own
     * dispositions); the ones sent to heaplens alone are passed on. heaplens stays to finish the
     * recording and exits with the program's status. Caught from the start: a Ctrl-C or SIGTERM
     * in the first milliseconds ended heaplens alone, leaving a database `recording` forever,
     * empty, or 'no data' with "is it a .NET program?"; now it ends the session before the
     * program starts (record_session_forwarding). Restored on every return: a session that
     * failed early (a bad setting, output or program) left them installed in its caller. */
    struct sigaction forward = {.sa_sigaction = forward_signal, .sa_flags = SA_SIGINFO | SA_RESTART};
    sigemptyset(&forward.sa_mask);
    struct sigaction original[N_FORWARDED];
    for (size_t i = 0; i < N_FORWARDED; i++)
        sigaction(forwarded_signals[i], &forward, &original[i]);
    gboolean ok = record_session_forwarding(options, original, exit_status_out, summary, error);
    forwarded_signals_restore(original);
    program_ended = 0;
    return ok;
}
