/* attach_session.c — `heaplens attach PID`: record a running .NET process, then detach
 * (attach_session.h).
 *
 *   heaplens ──fork──▶ writer process (recording_writer_start), as for `heaplens record`
 *      │
 *      └── AttachProfiler over PID's diagnostic socket (attach_ipc.c): the runtime loads
 *          libheaplens.so, InitializeForAttach reads the client data (where the writer
 *          listens, the snapshot policy) and the collector connects; it forces the first
 *          snapshot at once.
 *
 * The session ends at --duration, at Ctrl-C (SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2)
 * or when the process exits. heaplens asks the writer ("detach" on the control socket), the
 * writer tells the collector (HL_CMD_DETACH): last snapshot, end record, RequestProfilerDetach.
 * The writer answers once the stream has ended; heaplens then closes the stop pipe (no exit
 * status: the process runs on) and the writer finishes the database. A second signal during the
 * detach gives the last snapshot up ("detach now": request_detach); one after the detach waits
 * until the summary is said, and is then dropped (signals_restore). A failed attach leaves
 * nothing: the writer stops with 'no-data' and the file is removed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "session/attach_session.h"
#include "session/counted.h"
#include "session/resident_client.h"

#include "collector/attach_config.h"
#include "query/query.h"
#include "session/attach_ipc.h"
#include "session/recording.h"
#include "session/session.h"

static char *default_output(pid_t pid) {
    g_autofree char *path = g_strdup_printf("/proc/%ld/comm", (long)pid);
    g_autofree char *comm = NULL;
    if (!g_file_get_contents(path, &comm, NULL, NULL))
        comm = g_strdup("process");
    g_strchomp(comm);
    g_strdelimit(comm, "/ ", '_');
    time_t now = time(NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    char stamp[32];
    strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
    return g_strdup_printf("heaplens-%s-%ld-%s.db", comm, (long)pid, stamp);
}

/* How long a detach runs before heaplens says it still runs: the collector gives the last
 * snapshot up after 10 s while it is behind the program's GCs, 60 s for the snapshot's own GC
 * (collector/README.md, "Ending an attach session"), then the writer stores what is left. */
#define DETACH_SAY_AFTER_MS 5000

/* A signal this soon after the one that asked for the detach, of the same number and from the
 * same process, is that request said twice, not a second one: coreutils `timeout` sends its
 * signal to heaplens and then to its whole process group, heaplens included. */
#define SIGNAL_REPEAT_MS 1000

void attach_session_ending_signals(sigset_t *set) {
    sigemptyset(set);
    sigaddset(set, SIGINT);
    sigaddset(set, SIGTERM);
    sigaddset(set, SIGHUP);
    sigaddset(set, SIGQUIT);
    sigaddset(set, SIGUSR1);
    sigaddset(set, SIGUSR2);
}

void attach_session_signals_discard(const sigset_t *set) {
    const struct timespec now = {0, 0};
    while (sigtimedwait(set, NULL, &now) > 0)
        ;
}

/* One request line on a new connection to the writer's control socket; its fd, or -1. */
static int control_send(const char *control, const char *request) {
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    g_strlcpy(addr.sun_path, control, sizeof addr.sun_path);
    size_t len = strlen(request);
    if (fd < 0 || connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0 ||
        write(fd, request, len) != (ssize_t)len) {
        int saved = errno;
        if (fd >= 0)
            close(fd);
        errno = saved;
        return -1;
    }
    return fd;
}

/* The signal that started a detach (signo 0: --duration did), for telling a repeat of it. */
typedef struct detach_cause {
    uint32_t signo, sender;
    uint64_t at_ms;
} detach_cause;

/* "detach" on the writer's control socket; waits for its answer: the stream has ended. `say`:
 * one line on stderr if it takes longer than DETACH_SAY_AFTER_MS, and one when a signal makes it
 * hurry. A signal meanwhile (`signals`, a signalfd) that is not `cause` said again asks the
 * writer to "detach now": the collector gives its last snapshot up at once (loss
 * final-snapshot-missed, reason 3); the recording is still finished whole. */
static gboolean request_detach(const char *control, int writer_gone_fd, int signals,
                               const detach_cause *cause, gboolean say, GError **error) {
    int fd = control_send(control, "detach\n");
    if (fd < 0) {
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_IO, "cannot reach the writer: %s",
                    g_strerror(errno));
        return FALSE;
    }
    int now_fd = -1; /* the "detach now" connection, open until the end: its answer is fd's */
    gboolean hurried = FALSE, said_again = FALSE, say_slow = say;
    char line[256];
    size_t n = 0;
    uint64_t asked = query_now_ms();
    while (n + 1 < sizeof line) {
        struct pollfd p[3] = {{.fd = fd, .events = POLLIN},
                              {.fd = writer_gone_fd, .events = POLLIN},
                              {.fd = signals, .events = POLLIN}};
        int r = poll(p, 3, say_slow ? 1000 : -1);
        if (r < 0 && errno == EINTR)
            continue;
        if (r == 0) {
            if (query_now_ms() - asked >= DETACH_SAY_AFTER_MS) {
                fprintf(stderr, "heaplens: still detaching after %d s: the collector waits for "
                                "the last snapshot (10 s at most while it is behind the "
                                "program's GCs; Ctrl-C again: without it), then the writer "
                                "stores the rest\n",
                        DETACH_SAY_AFTER_MS / 1000);
                say_slow = FALSE;
            }
            continue;
        }
        if (p[2].revents) {
            struct signalfd_siginfo si;
            if (read(signals, &si, sizeof si) != (ssize_t)sizeof si)
                continue;
            if (cause->signo && si.ssi_signo == cause->signo && si.ssi_pid != 0 &&
                si.ssi_pid == cause->sender && query_now_ms() - cause->at_ms < SIGNAL_REPEAT_MS)
                continue; /* the same request twice (coreutils timeout) */
            if (!hurried) {
                hurried = TRUE;
                now_fd = control_send(control, "detach now\n");
                if (say)
                    fprintf(stderr, "heaplens: %s during the detach: detaching at once, "
                                    "without the last snapshot unless the collector has "
                                    "already taken it (the recording is finished whole)\n",
                            strsignal((int)si.ssi_signo));
            } else if (say && !said_again) {
                fprintf(stderr, "heaplens: already detaching at once: the writer stores what "
                                "the collector sent\n");
                said_again = TRUE;
            }
            continue;
        }
        if (p[0].revents == 0 && p[1].revents != 0)
            break;
        if (p[0].revents == 0)
            continue;
        ssize_t k = read(fd, line + n, 1);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0 || line[n] == '\n')
            break;
        n++;
    }
    line[n] = 0;
    close(fd);
    if (now_fd >= 0)
        close(now_fd);
    if (strcmp(line, "ok detached") == 0)
        return TRUE;
    g_set_error(error, QUERY_ERROR, QUERY_ERROR_IO, "the session did not end cleanly: %s",
                n ? line : "the writer went away");
    return FALSE;
}

/* Every way out once the ending signals are blocked. Those still pending asked for an end that
 * has come (a repeat, a Ctrl-C once the detach was over): let through, they ended heaplens with
 * 130 before it said what it had recorded (the recording complete all the same). Dropped. */
static void signals_restore(const sigset_t *ending, const sigset_t *original_mask) {
    attach_session_signals_discard(ending);
    sigprocmask(SIG_SETMASK, original_mask, NULL);
}

gboolean attach_session_run(const attach_options *o, int *status, json_t **summary,
                            GError **error) {
    const long pid = o->pid;
    const char *snapshot = o->snapshot;
    const gboolean json = o->json, quiet = o->quiet;
    const uint64_t duration = o->duration, timeout = o->timeout;
    *summary = NULL;
    *status = 1;
    /* Refusals that need no writer come first: nothing is created for them. */
    g_autofree char *diagnostic = attach_ipc_find_socket((pid_t)pid, error);
    g_autofree char *collector = diagnostic ? recording_collector_path(error) : NULL;
    if (!collector)
        return FALSE;
    /* The collector reads its settings from the process's environment, not from ours. */
    g_auto(GStrv) target_env = attach_ipc_process_environ((pid_t)pid);
    g_autofree char *whose = g_strdup_printf("process %ld's", pid);
    if (!recording_settings_check("attach", target_env, whose, error))
        return FALSE;
    g_autofree char *named = o->output ? g_strdup(o->output) : default_output((pid_t)pid);
    g_autofree char *output = NULL, *aside = NULL;
    if (!recording_output_prepare(named, o->force, &output, &aside, error))
        return FALSE;
    /* A process already under `heaplens record` or `attach` has a session file: say so now. */
    query_session existing;
    if (query_session_read((pid_t)pid, &existing, NULL)) {
        query_session_clear(&existing);
        g_autofree char *why = attach_ipc_refusal((pid_t)pid, ATTACH_E_PROFILER_ALREADY_ACTIVE, 0);
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_USAGE, "%s", why);
        recording_output_kept(aside, output, error); /* --force: the old one goes back */
        return FALSE;
    }

    recording_sockets sockets;
    if (!recording_sockets_create(&sockets, error)) {
        recording_output_kept(aside, output, error);
        return FALSE;
    }
    /* Signals wait in a signalfd from now on: the writer ignores them itself. SIGQUIT, SIGUSR1
     * and SIGUSR2 end the session too: by default they ended heaplens alone, and the writer
     * recorded on, the collector loaded, until the process exited (a later attach refused). */
    sigset_t ending, original_mask;
    attach_session_ending_signals(&ending);
    sigprocmask(SIG_BLOCK, &ending, &original_mask);
    int signals = signalfd(-1, &ending, SFD_CLOEXEC);
    signal(SIGPIPE, SIG_IGN); /* the writer ignores it too */
    int stop_w = -1, gone_r = -1;
    pid_t writer =
        recording_writer_start("attach", output, NULL, &sockets, &stop_w, &gone_r, error);
    if (writer < 0) {
        close(signals);
        signals_restore(&ending, &original_mask);
        recording_output_kept(aside, output, error);
        return FALSE;
    }

    /* The attach itself. */
    g_autofree char *client_data = g_strdup_printf(
        HL_ATTACH_CONFIG_MAGIC "\nsocket=%s\n%s%s%s%s%s%s%s%s%s%s%s", sockets.collector_path,
        snapshot ? "snapshot=" : "", snapshot ? snapshot : "", snapshot ? "\n" : "",
        o->count ? "count=" : "", o->count ? o->count : "", o->count ? "\n" : "",
        o->no_strings ? "strings=off\n" : "", o->no_stacks ? "stacks=off\n" : "",
        o->census ? "census=" : "", o->census ? o->census : "", o->census ? "\n" : "");
    /* --count recompiles methods: the runtime then keeps the collector until the process exits
     * and refuses any later attach (clr-profiler-facts.md §13). Said before it happens. */
    if (o->count && !quiet && !json)
        fprintf(stderr, "heaplens: --count leaves the collector loaded in process %ld until it "
                        "exits (later attaches reach it over its own socket)\n", pid);
    uint64_t attach_started = query_now_ms();
    uint32_t hr = 0;
    /* A collector that stayed after an earlier `attach --count` takes the session over its own
     * socket (the runtime would refuse a second profiler). */
    gboolean resident = resident_client_present((pid_t)pid);
    gboolean answered =
        resident ? resident_client_attach((pid_t)pid, client_data, (uint32_t)timeout * 1000, error)
                 : attach_ipc_attach_profiler((pid_t)pid, diagnostic, (uint32_t)timeout * 1000,
                                              PROFILER_CLSID, collector, client_data,
                                              strlen(client_data), &hr, error);
    if (!answered || hr != 0) {
        if (answered) {
            g_autofree char *why = attach_ipc_refusal((pid_t)pid, hr, (uint32_t)timeout * 1000);
            g_set_error(error, QUERY_ERROR, QUERY_ERROR_USAGE, "%s", why);
        }
        /* The writer ends with no data (a collector that would still connect finds the socket
         * gone, or sees the writer go: it detaches by itself). */
        close(stop_w);
        while (waitpid(writer, NULL, 0) < 0 && errno == EINTR)
            ;
        recording_sockets_remove(&sockets);
        /* an attach refused keeps no database: with --force the old one goes back */
        if (aside)
            recording_output_kept(aside, output, error);
        else
            unlink(output);
        close(signals);
        signals_restore(&ending, &original_mask);
        return FALSE;
    }
    recording_output_replaced(aside);
    uint64_t attached = query_now_ms();
    g_autoptr(GError) session_error = NULL;
    if (!query_session_write((pid_t)pid, sockets.control_path, output, &session_error))
        fprintf(stderr, "heaplens: warning: %s; 'heaplens snapshot %ld' will not find this "
                        "session\n", session_error->message, pid);
    if (!quiet && !json)
        fprintf(stderr, "heaplens: attached to process %ld in %.1f s, recording to %s%s\n", pid,
                (attached - attach_started) / 1000.0, output,
                duration ? "" : " (Ctrl-C ends the session)");

    /* Until --duration, a signal, the process's exit, or the writer's. */
    int target = (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
    uint64_t deadline = duration ? attached + duration * 1000 : 0;
    gboolean detach = FALSE, exited = FALSE, writer_gone = FALSE;
    detach_cause cause = {0};
    while (!detach && !exited && !writer_gone) {
        struct pollfd p[3] = {{.fd = signals, .events = POLLIN},
                              {.fd = gone_r, .events = POLLIN},
                              {.fd = target, .events = POLLIN}};
        int wait = -1;
        if (deadline) {
            uint64_t now = query_now_ms();
            wait = now >= deadline ? 0 : (int)(deadline - now);
        }
        int r = poll(p, target >= 0 ? 3 : 2, target >= 0 ? wait : (wait < 0 || wait > 1000 ? 1000 : wait));
        if (r < 0 && errno != EINTR)
            break;
        if (p[0].revents) {
            struct signalfd_siginfo si;
            if (read(signals, &si, sizeof si) == (ssize_t)sizeof si)
                cause = (detach_cause){si.ssi_signo, si.ssi_pid, query_now_ms()};
            detach = TRUE;
        }
        writer_gone = p[1].revents != 0;
        exited = (target >= 0 && p[2].revents != 0) || (target < 0 && kill((pid_t)pid, 0) != 0);
        if (deadline && query_now_ms() >= deadline)
            detach = TRUE;
    }
    gboolean clean = TRUE;
    uint64_t detach_ms = 0;
    if (detach && !exited && !writer_gone) {
        if (!quiet && !json)
            fprintf(stderr, "heaplens: detaching from process %ld (last snapshot)...\n", pid);
        /* A further signal gives the last snapshot up, never the recording: the collector
         * must finish its detach, not be cut off (request_detach). */
        uint64_t detach_started = query_now_ms();
        clean = request_detach(sockets.control_path, gone_r, signals, &cause, !quiet && !json,
                               error);
        detach_ms = query_now_ms() - detach_started;
        /* A long detach is said (its reason, if the last snapshot was given up, is in the
         * summary's note). */
        if (detach_ms >= 1000 && !quiet && !json)
            fprintf(stderr, "heaplens: detached in %.1f s\n", detach_ms / 1000.0);
    }
    query_session_remove((pid_t)pid);
    /* No exit status: the process runs on (or is not ours to wait for). A line all the same:
     * a stop pipe closed without one means heaplens was killed (store_writer_set_session). */
    if (write(stop_w, "detached\n", 9) < 0) {
        /* the writer is gone; its own exit status tells */
    }
    close(stop_w);
    int writer_status = 0;
    while (waitpid(writer, &writer_status, 0) < 0 && errno == EINTR)
        ;
    close(gone_r);
    if (target >= 0)
        close(target);
    gboolean writer_ok = WIFEXITED(writer_status) && WEXITSTATUS(writer_status) == 0;
    if (!writer_ok) /* said, and what the writer could not store stored (no exit status) */
        recording_writer_died(output, &sockets, writer_status, FALSE, 0, 0, NULL);
    recording_sockets_remove(&sockets);
    if (!clean) {
        query_error_report(*error); /* said now, before the summary */
        g_clear_error(error);
    }
    /* The ending signals stay blocked until the summary is said (signals_restore). */
    if (!writer_ok) {
        close(signals);
        signals_restore(&ending, &original_mask);
        return TRUE; /* *status 1 */
    }
    if (exited && !quiet && !json)
        fprintf(stderr, "heaplens: process %ld exited during the session\n", pid);
    recording_summary_options so = {.json = json, .quiet = quiet};
    /* --quiet: no summary, so the recording is not read again for one. */
    *summary = quiet && !json ? NULL : recording_summary_print(output, &so);
    if (o->count && !quiet && !json)
        counted_summary_print(output);
    if (*summary) {
        if (o->count)
            json_object_set_new(*summary, "counted_sites", counted_summary_json(output));
        json_object_set_new(*summary, "pid", json_integer(pid));
        json_object_set_new(*summary, "attach_seconds",
                            json_real((attached - attach_started) / 1000.0));
        json_object_set_new(*summary, "process_exited", json_boolean(exited));
        json_object_set_new(*summary, "detach_seconds", json_real(detach_ms / 1000.0));
    }
    close(signals);
    signals_restore(&ending, &original_mask);
    *status = clean ? 0 : 1;
    return TRUE;
}
