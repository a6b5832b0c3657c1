/* store_serve.c — serving one recording over the listening unix socket.
 *
 *   poll(listen_fd, stop_fd)
 *     listen_fd readable → accept; SO_PEERCRED uid != ours → close it, count it, keep waiting
 *                          uid ok → ingest the stream (reading with poll on the connection and
 *                          stop_fd), then read the exit status from stop_fd
 *     stop_fd readable   → the program exited and no collector ever connected: 'no-data'
 *
 * Every poll here also serves the control socket (store_control.c), so `heaplens snapshot`
 * gets its answer whatever the writer is waiting for: store_serve_poll.
 *
 * While GCs wait for their group's commit and the last read was small, the connection is read
 * again only when the commit is due (store_conn_read, "reading in steps"): a sampled recording's
 * sends then cost the writer a wake-up per commit, not one each.
 *
 * stop_fd carries one line from `heaplens record`: "exit N PID" or "signal N PID" (PID: the
 * program's, which may be absent; a recorded process that is not the program gets no exit
 * status: a .NET descendant of a program that is not .NET). Once it has arrived
 * the collector's process is gone, so whatever the connection still holds is already buffered:
 * a connection that stays silent for stop_wait_ms after that is treated as ended (a child the
 * program forked may have inherited it).
 */
#define _GNU_SOURCE /* accept4, struct ucred */
#include "store/store_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>

/* The program's exit status as read from stop_fd. */
typedef struct store_stop {
    int fd;
    char line[64];
    size_t len;
    gboolean done;  /* a full line arrived, or stop_fd reached end of file */
    gboolean known; /* `status` is valid */
    gboolean signalled; /* "signal N": the program was killed */
    int status;
    long pid;       /* the program's pid, 0 when the line did not say it */
} store_stop;

/* Parses "exit N [PID]" or "signal N [PID]" (128 + N; PID: the program's). */
static void store_stop_parse(store_stop *s)
{
    unsigned n;
    long pid = 0;
    s->line[s->len] = '\0';
    if (sscanf(s->line, "exit %u %ld", &n, &pid) >= 1 && n <= 255) {
        s->status = (int)n;
        s->known = TRUE;
    } else if (sscanf(s->line, "signal %u %ld", &n, &pid) >= 1 && n < 128) {
        s->status = 128 + (int)n;
        s->known = TRUE;
        s->signalled = TRUE;
    }
    s->pid = pid > 0 ? pid : 0;
}

/* Reads what stop_fd has (call when poll says it is readable). */
static gboolean store_stop_read(store_stop *s, GError **error)
{
    ssize_t n;
    do
        n = read(s->fd, s->line + s->len, sizeof s->line - 1 - s->len);
    while (n < 0 && errno == EINTR);
    if (n < 0) {
        if (errno == EAGAIN)
            return TRUE;
        g_set_error(error, STORE_ERROR, STORE_ERROR_IO, "reading the exit status: %s",
                    g_strerror(errno));
        return FALSE;
    }
    s->len += (size_t)n;
    if (n == 0 || memchr(s->line, '\n', s->len) != NULL || s->len == sizeof s->line - 1) {
        s->done = TRUE;
        store_stop_parse(s);
    }
    return TRUE;
}

/* poll() on the caller's `n` fds (n <= 2) and, on the side, the control socket's, whose events
 * are handled here. Returns like poll() for the caller's fds alone: how many have events, 0 when
 * `timeout_ms` (-1: none) passed first, -1 with errno on failure (EINTR is retried). */
static int store_serve_poll(store_control *control, struct pollfd *fds, nfds_t n, int timeout_ms)
{
    struct pollfd all[2 + STORE_CONTROL_MAX_FDS];
    gint64 deadline = timeout_ms < 0 ? -1 : g_get_monotonic_time() + (gint64)timeout_ms * 1000;

    g_assert(n <= 2);
    for (;;) {
        int wait = -1;
        if (deadline >= 0) {
            gint64 left_us = deadline - g_get_monotonic_time();
            wait = left_us > 0 ? (int)((left_us + 999) / 1000) : 0;
        }
        memcpy(all, fds, n * sizeof *fds);
        int k = store_control_poll_fds(control, all + n);
        int r = poll(all, n + (nfds_t)k, wait);
        if (r < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        store_control_dispatch(control, all + n, k);
        int ready = 0;
        for (nfds_t i = 0; i < n; i++) {
            fds[i].revents = all[i].revents;
            ready += all[i].revents != 0;
        }
        if (ready > 0 || wait == 0 || (r == 0 && deadline >= 0))
            return ready;
    }
}

/* The stop pipe reached end of file before any line: the recorder (store_writer_set_session)
 * died without a word. It always writes a line before it closes the pipe ("exit N", "signal
 * N", or attach's "detached"), so this is the recorder killed, not merely done. */
static gboolean store_stop_recorder_gone(store_writer *w, const store_stop *s)
{
    if (s->done && s->len == 0 && w->recorder > 0)
        w->recorder_killed = TRUE;
    return w->recorder_killed;
}

/* Waits at most `wait_ms` for the rest of the exit status line. */
static gboolean store_stop_wait(store_stop *s, store_control *control, int wait_ms,
                                GError **error)
{
    gint64 deadline = g_get_monotonic_time() + (gint64)wait_ms * 1000;
    while (!s->done) {
        gint64 left_ms = (deadline - g_get_monotonic_time()) / 1000;
        if (left_ms <= 0)
            break;
        struct pollfd pfd = {.fd = s->fd, .events = POLLIN};
        int r = store_serve_poll(control, &pfd, 1, (int)left_ms);
        if (r < 0) {
            g_set_error(error, STORE_ERROR, STORE_ERROR_IO, "poll: %s", g_strerror(errno));
            return FALSE;
        }
        if (r > 0 && !store_stop_read(s, error))
            return FALSE;
    }
    return TRUE;
}

/* The connection as a stream source: reads wait on the connection and on stop_fd. */
typedef struct store_conn_source {
    store_writer *w;      /* store_writer_serve: its recorder is watched (NULL: not) */
    store_writer *writer; /* whose group of GCs is committed when the stream goes idle */
    int fd;
    store_stop *stop;
    int stop_wait_ms;
    store_control *control;
    gboolean bounded;  /* store_writer_serve_connection: the stream ends stop_wait_ms after stop */
    gint64 end_by_us;  /* then: the monotonic time it ends (0: stop has not arrived) */
    gboolean cut;      /* the stream was ended at end_by_us */
    gboolean last_small; /* the last read took less than STORE_READ_STEP_BYTES */
} store_conn_source;

static ssize_t store_conn_read(void *ctx, void *buf, size_t len, GError **error)
{
    store_conn_source *src = ctx;
    for (;;) {
        struct pollfd pfd[2] = {{.fd = src->fd, .events = POLLIN},
                                {.fd = src->stop->fd, .events = POLLIN}};
        nfds_t n = src->stop->done ? 1 : 2;
        /* A killed recorder sends no status: the program may run on, the stream goes on. */
        gboolean to_end = src->w != NULL && store_stop_recorder_gone(src->w, src->stop);
        /* ... but an attach session's process runs on for good, and only its recorder would
         * have ended the session (at --duration, Ctrl-C): the stream would go on into the file
         * until the process exits, the collector loaded and every later attach refused. The
         * session ends now, as its recorder would have ended it. */
        if (to_end && src->w->ends_session)
            store_control_detach(src->control);
        int wait_ms = src->stop->done && !to_end ? src->stop_wait_ms : -1;
        if (src->bounded && src->stop->done) {
            gint64 now = g_get_monotonic_time();
            if (src->end_by_us == 0)
                src->end_by_us = now + (gint64)src->stop_wait_ms * 1000;
            if (now >= src->end_by_us) {
                src->cut = TRUE;
                return 0; /* recording ends: the process outlives `heaplens record` */
            }
            wait_ms = (int)((src->end_by_us - now + 999) / 1000);
        }
        /* GCs applied whole wait for their commit (store_writer.c, "grouped commits"): the
         * wait for more data ends when it is due, so that a reader sees every GC at most
         * STORE_GROUP_COMMIT_MS after the writer has it, whether more comes or not. */
        gint64 due_us = store_writer_group_due_us(src->writer);
        if (due_us == 0) {
            if (!store_writer_group_commit(src->writer, error))
                return -1;
            due_us = -1;
        }
        gboolean group_wait = FALSE;
        if (due_us > 0 && (wait_ms < 0 || (due_us + 999) / 1000 < wait_ms)) {
            wait_ms = (int)((due_us + 999) / 1000);
            group_wait = TRUE;
        }
        /* Reading in steps: while a group waits for its commit and what came last was small (a
         * sampled recording's GC, samples), the connection is not read again before the commit
         * is due; what came meanwhile is read then, in one wake-up, and joins the group (every
         * GC is still committed at most STORE_GROUP_COMMIT_MS after it came). A wake-up per
         * send cost more than the records it read: the poll, the recv, the switch, and SQLite's
         * statements run on cold caches GC by GC (store/README.md, "Transaction rules"). The
         * connection's hang-up, the program's exit (stop_fd) and a client waiting for a
         * snapshot end the step. */
        gboolean step = group_wait && src->last_small && !src->stop->done &&
                        !store_control_waiting(src->control);
        if (step)
            pfd[0].events = 0; /* POLLHUP and POLLERR only */
        int r = store_serve_poll(src->control, pfd, n, wait_ms);
        if (r < 0) {
            g_set_error(error, STORE_ERROR, STORE_ERROR_IO, "poll: %s", g_strerror(errno));
            return -1;
        }
        if (step && (r == 0 || pfd[0].revents != 0)) {
            /* The commit is due (or the collector hung up): what came meanwhile first, so that
             * it joins the group before its commit. */
            src->last_small = FALSE;
            pfd[0].revents = POLLIN;
            r = 1;
        }
        if (r == 0 && group_wait)
            continue; /* the group is due: committed at the top */
        if (r == 0 && src->bounded)
            continue; /* the deadline above decides */
        if (r == 0)
            return 0; /* the program has exited and the connection stays silent: ended */
        if (n == 2 && pfd[1].revents != 0 && !store_stop_read(src->stop, error))
            return -1;
        if (pfd[0].revents != 0) {
            ssize_t got = recv(src->fd, buf, len, MSG_DONTWAIT);
            if (got >= 0) {
                src->last_small = got > 0 && got < STORE_READ_STEP_BYTES;
                return got;
            }
            if (errno == EAGAIN || errno == EINTR)
                continue;
            if (errno == ECONNRESET)
                return 0; /* the collector's process died: a truncated stream */
            g_set_error(error, STORE_ERROR, STORE_ERROR_IO, "reading the record stream: %s",
                        g_strerror(errno));
            return -1;
        }
    }
}

pid_t store_process_parent(pid_t pid)
{
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%ld/stat", (long)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    const char *end_of_name = strrchr(buf, ')'); /* the name may hold ')' and spaces */
    char state;
    long parent;
    if (!end_of_name || sscanf(end_of_name + 1, " %c %ld", &state, &parent) != 2)
        return 0;
    return (pid_t)parent;
}

/* Accepts one pending connection. Returns TRUE with *conn = -1 when there was none after all or
 * it was refused (another uid: counted in w->connections_refused, *refused_uid set). */
static gboolean store_serve_accept(store_writer *w, int listen_fd, int *conn, uid_t *refused_uid,
                                   GError **error)
{
    struct ucred cred;
    socklen_t cred_len = sizeof cred;
    gboolean ok = FALSE;
    int fd = accept4(listen_fd, NULL, NULL, SOCK_CLOEXEC);

    *conn = -1;
    if (fd < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR || errno == ECONNABORTED)
            ok = TRUE;
        else
            g_set_error(error, STORE_ERROR, STORE_ERROR_IO, "accept: %s", g_strerror(errno));
        goto out;
    }
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &cred_len) != 0) {
        g_set_error(error, STORE_ERROR, STORE_ERROR_IO, "SO_PEERCRED: %s", g_strerror(errno));
        goto out;
    }
    if (cred.uid != getuid()) {
        w->connections_refused++;
        *refused_uid = cred.uid;
        ok = TRUE;
        goto out;
    }
    w->peer_is_program = w->recorder > 0 && store_process_parent(cred.pid) == w->recorder;
    *conn = fd;
    fd = -1;
    ok = TRUE;
out:
    if (fd >= 0)
        close(fd);
    return ok;
}

/* The writer's snapshot events go to the control socket's waiting clients: "progress" lines
 * while a requested snapshot arrives and is written, its answer ("ok" at the commit, "lost"
 * when it will not be stored). The same for the program and for a descendant recorded with
 * `record --children` (store_writer_serve_connection): a client cannot tell them apart. */
static void store_serve_hook_control(store_writer *w, store_control *control)
{
    w->on_snapshot = store_control_snapshot_committed;
    w->on_snapshot_lost = store_control_snapshot_lost;
    w->on_snapshot_progress = store_control_snapshot_progress;
    w->on_snapshot_ctx = control;
}

static void store_serve_unhook_control(store_writer *w)
{
    w->on_snapshot = NULL;
    w->on_snapshot_lost = NULL;
    w->on_snapshot_progress = NULL;
    w->on_snapshot_ctx = NULL;
}

/* After a failed ingest: when the database takes nothing more (disk full), the waiting clients
 * are told why and the collector's requests stop now (it sees the writer go away: writer-lost)
 * rather than filling the socket; the program runs on. FALSE when the failure was another. */
static gboolean store_serve_db_failed(store_writer *w, store_control *control,
                                      const GError *ingest_error)
{
    if (w->db_failure == NULL)
        return FALSE;
    g_autofree char *why = g_strdup_printf("the writer stopped: %s", ingest_error->message);
    store_control_stop(control, why);
    return TRUE;
}

gboolean store_writer_serve(store_writer *w, int listen_fd, int control_fd, int stop_fd,
                            int stop_wait_ms, GError **error)
{
    store_stop stop = {.fd = stop_fd};
    store_control *control = NULL;
    uid_t refused_uid = 0;
    int conn = -1;
    gboolean ok = FALSE, ingested = TRUE;
    g_autoptr(GError) ingest_error = NULL;
    int flags = fcntl(listen_fd, F_GETFL);

    /* A connection may vanish between poll and accept: accept must not block then. */
    if (flags < 0 || fcntl(listen_fd, F_SETFL, flags | O_NONBLOCK) != 0) {
        g_set_error(error, STORE_ERROR, STORE_ERROR_IO, "listening socket: %s", g_strerror(errno));
        goto out;
    }
    control = store_control_new(control_fd, error);
    if (control_fd >= 0 && control == NULL)
        goto out;
    while (conn < 0 && !stop.done) {
        struct pollfd pfd[2] = {{.fd = listen_fd, .events = POLLIN},
                                {.fd = stop_fd, .events = POLLIN}};
        if (store_serve_poll(control, pfd, 2, -1) < 0) {
            g_set_error(error, STORE_ERROR, STORE_ERROR_IO, "poll: %s", g_strerror(errno));
            goto out;
        }
        /* Every pending connection before the stop: another user's, refused, may stand in the
         * backlog ahead of the collector's, which must not be left there when the stop is read. */
        for (guint64 refused = G_MAXUINT64; pfd[0].revents != 0 && conn < 0 &&
                                            refused != w->connections_refused;) {
            refused = w->connections_refused;
            if (!store_serve_accept(w, listen_fd, &conn, &refused_uid, error))
                goto out;
        }
        if (conn < 0 && pfd[1].revents != 0 && !store_stop_read(&stop, error))
            goto out;
    }
    if (conn >= 0) {
        store_conn_source src = {.w = w, .writer = w, .fd = conn, .stop = &stop,
                                 .stop_wait_ms = stop_wait_ms, .control = control};
        store_control_set_collector(control, conn);
        store_serve_hook_control(w, control);
        ingested = store_writer_ingest(w, store_conn_read, &src, &ingest_error);
        store_serve_unhook_control(w);
        if (!ingested && store_serve_db_failed(w, control, ingest_error)) {
            g_propagate_error(error, g_steal_pointer(&ingest_error));
            goto out;
        }
    } else {
        /* The program exited before its collector connected (if it ever loaded one). */
        w->no_data_forced = TRUE;
    }
    store_control_end(control);
    /* The program's stream ended without RUN_END while the program may run on: it replaced
     * itself by exec (its collector went with the old image), and the recording then lost its
     * exit status and said the program was killed. Its exit (or the recorder's end) is waited
     * for however long it runs, as `heaplens record` waits for it; a killed program's arrives
     * at once. */
    int wait_ms = conn >= 0 && ingested && !w->complete && w->peer_is_program ? G_MAXINT / 1000
                                                                              : stop_wait_ms;
    if (!store_stop_wait(&stop, control, wait_ms, error))
        goto out;
    store_stop_recorder_gone(w, &stop);
    /* The exit status is the recorded process's only when it is the program. */
    gboolean is_program = store_exit_is_programs(stop.pid, w->run_pid);
    w->program_exited = stop.known && is_program && !stop.signalled;
    if (stop.known && is_program && !store_writer_set_exit_status(w, stop.status, error))
        goto out;
    if (!ingested) {
        g_propagate_error(error, g_steal_pointer(&ingest_error));
        goto out;
    }
    if (!w->connected && w->connections_refused > 0) {
        g_set_error(error, STORE_ERROR, STORE_ERROR_PEER,
                    "refused %" G_GUINT64_FORMAT " connection(s) from another user (uid %u); "
                    "the program's collector never connected",
                    w->connections_refused, (unsigned)refused_uid);
        goto out;
    }
    ok = TRUE;
out:
    store_serve_unhook_control(w);
    store_control_free(control);
    if (conn >= 0)
        close(conn);
    return ok;
}

gboolean store_writer_serve_connection(store_writer *w, int conn, int control_fd, int stop_fd,
                                       int stop_wait_ms, GError **error)
{
    store_stop stop = {.fd = stop_fd};
    store_control *control = store_control_new(control_fd, error);
    g_autoptr(GError) ingest_error = NULL;
    gboolean ok;

    if (control_fd >= 0 && control == NULL)
        return FALSE;
    store_conn_source src = {.writer = w, .fd = conn, .stop = &stop, .stop_wait_ms = stop_wait_ms,
                             .control = control, .bounded = TRUE};
    store_control_set_collector(control, conn);
    store_serve_hook_control(w, control);
    ok = store_writer_ingest(w, store_conn_read, &src, &ingest_error);
    w->stopped = src.cut;
    store_serve_unhook_control(w);
    if (ok || !store_serve_db_failed(w, control, ingest_error))
        store_control_end(control);
    store_control_free(control);
    if (!ok)
        g_propagate_error(error, g_steal_pointer(&ingest_error));
    return ok;
}
