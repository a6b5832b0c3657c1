/* snapshot_request.c — `heaplens snapshot PID`: ask a running, recorded program for a heap
 * snapshot now (snapshot_request.h). The writer of that recording forwards the request to the collector, which forces a full
 * GC from its own thread; the answer comes once the snapshot is committed to the database, or
 * says that it was taken and lost, and why (protocol in store/README.md). */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "session/snapshot_request.h"

#include "query/query.h"
#include "session/session.h"

static int control_connect(const char *path, GError **error) {
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    int fd = strlen(path) < sizeof addr.sun_path ? socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0) : -1;
    if (fd >= 0) {
        strcpy(addr.sun_path, path);
        if (connect(fd, (struct sockaddr *)&addr, sizeof addr) == 0)
            return fd;
        close(fd);
    }
    g_set_error(error, QUERY_ERROR, QUERY_ERROR_IO,
                "cannot reach the recording's writer (%s): %s; has the program just ended?", path,
                g_strerror(errno));
    return -1;
}

/* Reads one line within the deadline; TRUE with *timed_out when the deadline passed first. */
static gboolean read_line(int fd, char *line, size_t size, uint64_t deadline, gboolean *timed_out,
                          GError **error) {
    size_t n = 0;
    *timed_out = FALSE;
    while (n + 1 < size) {
        uint64_t now = query_now_ms();
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int r = now < deadline ? poll(&p, 1, (int)(deadline - now)) : 0;
        if (r == 0) {
            *timed_out = TRUE;
            return TRUE;
        }
        if (r < 0 && errno == EINTR)
            continue;
        ssize_t got = r > 0 ? read(fd, line + n, 1) : -1;
        if (got <= 0) {
            g_set_error(error, QUERY_ERROR, QUERY_ERROR_IO, "the writer closed the connection without an answer");
            return FALSE;
        }
        if (line[n] == '\n')
            break;
        n++;
    }
    line[n] = 0;
    return TRUE;
}

/* Reads the writer's answer into `line`. "progress" lines come first while the snapshot's
 * records arrive and while it is written: unless `hard`, each one restarts the `timeout_ms`
 * wait, so a large snapshot that is advancing is waited for and a lost one is not. */
static gboolean read_answer(int fd, char *line, size_t size, uint64_t timeout_ms, gboolean hard,
                            GError **error) {
    uint64_t deadline = query_now_ms() + timeout_ms;
    gboolean timed_out = FALSE, progressed = FALSE;
    for (;;) {
        if (!read_line(fd, line, size, deadline, &timed_out, error))
            return FALSE;
        if (timed_out)
            break;
        if (strncmp(line, "progress ", 9) != 0)
            return TRUE;
        progressed = TRUE;
        if (!hard)
            deadline = query_now_ms() + timeout_ms;
    }
    if (progressed)
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_IO,
                    "the snapshot was still on its way after the time limit (see --timeout); "
                    "it may still be stored (heaplens snapshots)");
    else
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_IO,
                    "no sign of the snapshot within the time limit (see --timeout); the request "
                    "stays queued");
    return FALSE;
}

gboolean snapshot_request_send(long pid, uint64_t timeout, gboolean hard, snapshot_answer *answer,
                               GError **error) {
    memset(answer, 0, sizeof *answer);
    query_session session;
    if (!query_session_wait((pid_t)pid, 10 * 1000, &session, error))
        return FALSE;
    int fd = control_connect(session.control, error);
    char line[256] = "";
    /* The default timeout is for silence (progress restarts it); an explicit one is a limit. */
    gboolean ok = fd >= 0 && write(fd, "snapshot\n", 9) == 9 &&
                  read_answer(fd, line, sizeof line, timeout * 1000, hard, error);
    if (fd >= 0)
        close(fd);
    if (ok && strncmp(line, "error ", 6) == 0) {
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_IO, "%s", line + 6);
        ok = FALSE;
    }
    unsigned snapshot = 0, gc = 0;
    int why_at = 0;
    if (ok && sscanf(line, "lost %u %u %n", &snapshot, &gc, &why_at) == 2 && why_at > 0) {
        /* taken, and thrown away: say which and why (the writer's words) */
        if (snapshot != 0)
            g_set_error(error, QUERY_ERROR, QUERY_ERROR_IO,
                        "snapshot %u (GC %u) was taken but not stored: %s", snapshot, gc,
                        line + why_at);
        else
            g_set_error(error, QUERY_ERROR, QUERY_ERROR_IO,
                        "a snapshot (GC %u) was taken but not stored: %s", gc, line + why_at);
        ok = FALSE;
    }
    unsigned long long objects = 0, ms = 0;
    int fields = ok ? sscanf(line, "ok %u %u %llu %llu", &snapshot, &gc, &objects, &ms) : 0;
    if (ok && fields < 2) {
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_IO, "unexpected answer from the writer: %s", line);
        ok = FALSE;
    }
    if (!ok && !(error && *error))
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_IO, "cannot send the request: %s", g_strerror(errno));
    if (!ok) {
        query_session_clear(&session);
        return FALSE;
    }
    answer->snapshot = snapshot;
    answer->gc = gc;
    answer->objects = objects;
    answer->ms = ms;
    answer->timed = fields == 4;
    answer->db = g_steal_pointer(&session.db);
    query_session_clear(&session);
    return TRUE;
}
