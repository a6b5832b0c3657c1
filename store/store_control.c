/* store_control.c — the control socket: `heaplens snapshot PID` asks for a heap snapshot now.
 *
 *   client ── "snapshot\n" ──▶ writer ── hl_rec_header{HL_CMD_SNAPSHOT, 0} ──▶ collector
 *                                                  ... the collector forces a full GC ...
 *   client ◀── "ok S G\n" ─── writer ◀── GC G with snapshot S (trigger 'requested') committed
 *
 * One request per connection, one answer line, then the writer closes it. Answers:
 *   ok <snapshot> <gc> <objects> <ms>   a GC holding a 'requested' snapshot committed: the
 *                                       snapshot, its objects, ms from this request to the commit
 *   lost <snapshot> <gc> <why>          a 'requested' snapshot was taken but will not be stored
 *                                       (snapshot 0: the collector dropped it whole)
 *   ok detached                         to "detach\n" (an attach session): the collector was told
 *                                       to end (HL_CMD_DETACH) and its stream has ended; and to
 *                                       "detach now\n" (HL_CMD_DETACH_NOW: the last snapshot not
 *                                       waited for), which may follow a "detach" under way
 *   error <reason>                      no collector connected yet, the recording has ended,
 *                                       the program ended first, or an unknown request
 * Before the answer, while a 'requested' snapshot's records arrive, a waiting client gets
 *   progress <snapshot> <items>         (at most twice a second), then
 *   progress <snapshot> writing <items> when its rows are being written,
 * so that it can tell a slow snapshot from a lost one.
 * Every waiting client is answered by the first 'requested' snapshot that commits and was
 * asked for by its request: the collector says in SNAPSHOT_START how many snapshot commands it
 * had taken when the snapshot's GC took the request (hl_snapshot_start.commands), and a client
 * waits for one that counts the command its request sent or rode on. Before, a snapshot whose
 * GC had started before the request (an attach's first, another client's) answered it too. A
 * collector that does not say (0) answers every waiting client, as before. A command that the
 * collector socket cannot take at once waits in `out` (POLLOUT); while one is waiting, further
 * requests ride on it.
 *
 * Clients are served by the serve loop's poll (store_serve.c): nothing here blocks. A client of
 * another uid is closed unanswered; a client that does not read its answer is dropped; at most
 * STORE_CONTROL_CLIENTS at a time (the others wait in the listen backlog).
 */
#define _GNU_SOURCE /* struct ucred */
#include "store/store_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <sys/socket.h>
#include <unistd.h>

#define STORE_CONTROL_LINE 64 /* longest request line, newline included */

typedef enum store_control_phase {
    STORE_CONTROL_NO_COLLECTOR, /* no collector connected yet */
    STORE_CONTROL_RECORDING,    /* requests go to the collector */
    STORE_CONTROL_ENDED,        /* the stream ended */
} store_control_phase;

typedef struct store_control_client {
    int fd;
    char line[STORE_CONTROL_LINE];
    size_t len;
    gboolean waiting; /* its request went to the collector: it waits for a snapshot */
    gboolean detach;  /* ... or, "detach", for the end of the stream */
    gint64 since_us;  /* when its request arrived */
    uint32_t command; /* the snapshot command its request sent or rode on (1, 2, ...) */
    gboolean eof;     /* it shut down its sending side (or went away): not polled any more */
} store_control_client;

struct store_control {
    int listen_fd;
    store_control_phase phase;
    int collector_fd;
    /* Commands not yet sent to the collector: a snapshot, a detach and a detach now at most. */
    uint8_t out[3 * sizeof(hl_rec_header)];
    size_t out_len;
    gboolean detach_sent, detach_now_sent;
    uint32_t snapshot_commands; /* HL_CMD_SNAPSHOT commands queued so far */
    store_control_client clients[STORE_CONTROL_CLIENTS];
    int n_clients;
};

static const char store_control_ended_first[] =
    "error the program ended before the snapshot was taken\n";

/* Sends the one answer line without blocking, then closes the client (whatever it sent beyond
 * its request is read off first, so that closing does not reset the connection before the
 * client reads the answer). Removes it from the array: the last one moves to index i. */
static void store_control_answer(store_control *c, int i, const char *text)
{
    store_control_client *cl = &c->clients[i];
    char sink[256];
    /* A client that does not read gets dropped: MSG_DONTWAIT, no retry. */
    (void)!send(cl->fd, text, strlen(text), MSG_DONTWAIT | MSG_NOSIGNAL);
    for (int k = 0; k < 16 && recv(cl->fd, sink, sizeof sink, MSG_DONTWAIT) > 0; k++)
        ;
    close(cl->fd);
    c->clients[i] = c->clients[--c->n_clients];
}

static void store_control_drop(store_control *c, int i)
{
    close(c->clients[i].fd);
    c->clients[i] = c->clients[--c->n_clients];
}

/* Sends what `out` holds, as far as the collector socket takes it now. */
static void store_control_flush(store_control *c)
{
    if (c->out_len == 0 || c->collector_fd < 0)
        return;
    ssize_t n = send(c->collector_fd, c->out, c->out_len, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n > 0) {
        memmove(c->out, c->out + n, c->out_len - (size_t)n);
        c->out_len -= (size_t)n;
    } else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        c->out_len = 0; /* the collector is gone; the stream's end will answer the clients */
    }
}

store_control *store_control_new(int listen_fd, GError **error)
{
    if (listen_fd < 0)
        return NULL;
    int flags = fcntl(listen_fd, F_GETFL);
    if (flags < 0 || fcntl(listen_fd, F_SETFL, flags | O_NONBLOCK) != 0) {
        g_set_error(error, STORE_ERROR, STORE_ERROR_IO, "control socket: %s", g_strerror(errno));
        return NULL;
    }
    store_control *c = g_new0(store_control, 1);
    c->listen_fd = listen_fd;
    c->collector_fd = -1;
    return c;
}

void store_control_free(store_control *c)
{
    if (c == NULL)
        return;
    store_control_end(c);
    while (c->n_clients > 0)
        store_control_answer(c, c->n_clients - 1, "error the recording has ended\n");
    g_free(c);
}

void store_control_set_collector(store_control *c, int collector_fd)
{
    if (c == NULL)
        return;
    c->collector_fd = collector_fd;
    c->phase = STORE_CONTROL_RECORDING;
}

void store_control_end(store_control *c)
{
    store_control_stop(c, NULL);
}

void store_control_stop(store_control *c, const char *why)
{
    if (c == NULL)
        return;
    g_autofree char *line = why != NULL ? g_strdup_printf("error %s\n", why) : NULL;
    c->phase = STORE_CONTROL_ENDED;
    c->collector_fd = -1;
    c->out_len = 0;
    for (int i = c->n_clients - 1; i >= 0; i--) {
        if (!c->clients[i].waiting)
            continue;
        if (c->clients[i].detach)
            store_control_answer(c, i, line != NULL ? line : "ok detached\n");
        else
            store_control_answer(c, i, line != NULL ? line : store_control_ended_first);
    }
}

int store_control_poll_fds(const store_control *c, struct pollfd *fds)
{
    int n = 0;
    if (c == NULL)
        return 0;
    if (c->n_clients < STORE_CONTROL_CLIENTS)
        fds[n++] = (struct pollfd){.fd = c->listen_fd, .events = POLLIN};
    for (int i = 0; i < c->n_clients; i++)
        if (!c->clients[i].eof)
            fds[n++] = (struct pollfd){.fd = c->clients[i].fd, .events = POLLIN};
    if (c->out_len > 0 && c->collector_fd >= 0)
        fds[n++] = (struct pollfd){.fd = c->collector_fd, .events = POLLOUT};
    return n;
}

gboolean store_control_waiting(const store_control *c)
{
    for (int i = 0; c != NULL && i < c->n_clients; i++)
        if (c->clients[i].waiting || c->clients[i].detach)
            return TRUE;
    return FALSE;
}

/* Accepts the pending connections there is room for; other uids are closed unanswered. */
static void store_control_accept(store_control *c)
{
    while (c->n_clients < STORE_CONTROL_CLIENTS) {
        struct ucred cred;
        socklen_t len = sizeof cred;
        int fd = accept4(c->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0)
            return; /* EAGAIN, or a transient error: try again at the next poll */
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 || cred.uid != getuid()) {
            close(fd);
            continue;
        }
        c->clients[c->n_clients++] = (store_control_client){.fd = fd};
    }
}

/* Queues command `type` once (`*sent`). */
static void store_control_send_once(store_control *c, uint32_t type, gboolean *sent)
{
    if (c == NULL || c->phase != STORE_CONTROL_RECORDING || *sent ||
        c->out_len + sizeof(hl_rec_header) > sizeof c->out)
        return;
    hl_rec_header h = {.type = type, .size = 0};
    memcpy(c->out + c->out_len, &h, sizeof h);
    c->out_len += sizeof h;
    *sent = TRUE;
    store_control_flush(c);
}

void store_control_detach(store_control *c)
{
    if (c != NULL)
        store_control_send_once(c, HL_CMD_DETACH, &c->detach_sent);
}

/* A whole request line from client i: act on it. */
static void store_control_request(store_control *c, int i)
{
    store_control_client *cl = &c->clients[i];
    gboolean detach_now = strcmp(cl->line, "detach now") == 0;
    gboolean detach = detach_now || strcmp(cl->line, "detach") == 0;
    if (!detach && strcmp(cl->line, "snapshot") != 0) {
        store_control_answer(c, i, "error unknown request\n");
        return;
    }
    switch (c->phase) {
    case STORE_CONTROL_NO_COLLECTOR:
        store_control_answer(c, i, "error the program's collector is not connected (yet)\n");
        return;
    case STORE_CONTROL_ENDED:
        store_control_answer(c, i, "error the recording has ended\n");
        return;
    case STORE_CONTROL_RECORDING:
        break;
    }
    if (detach) {
        /* The attach session's end: answered when the stream has ended ("ok detached"). */
        store_control_detach(c);
        if (detach_now)
            store_control_send_once(c, HL_CMD_DETACH_NOW, &c->detach_now_sent);
        cl->detach = TRUE;
    } else if (c->out_len == 0) {
        hl_rec_header h = {.type = HL_CMD_SNAPSHOT, .size = 0};
        memcpy(c->out, &h, sizeof h);
        c->out_len = sizeof h;
        c->snapshot_commands++;
        store_control_flush(c);
    }
    cl->command = c->snapshot_commands;
    cl->waiting = TRUE;
    cl->since_us = g_get_monotonic_time();
}

/* Reads what client i sent. */
static void store_control_read(store_control *c, int i)
{
    store_control_client *cl = &c->clients[i];
    char sink[256];
    char *buf = cl->waiting ? sink : cl->line + cl->len;
    size_t room = cl->waiting ? sizeof sink : sizeof cl->line - 1 - cl->len;
    ssize_t n = recv(cl->fd, buf, room, MSG_DONTWAIT);

    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        return;
    if (n < 0) {
        store_control_drop(c, i);
        return;
    }
    if (n == 0) {
        /* End of its input: a client that shut down writing after its request still reads
         * its answer (one that is gone just holds a slot until it is answered). */
        if (cl->waiting)
            cl->eof = TRUE;
        else
            store_control_answer(c, i, "error unknown request\n");
        return;
    }
    if (cl->waiting)
        return; /* one request per connection: anything more is ignored */
    cl->len += (size_t)n;
    cl->line[cl->len] = '\0';
    char *nl = strchr(cl->line, '\n');
    if (nl == NULL) {
        if (cl->len == sizeof cl->line - 1 || strlen(cl->line) != cl->len)
            store_control_answer(c, i, "error unknown request\n"); /* too long, or a NUL */
        return;
    }
    *nl = '\0';
    if (nl > cl->line && nl[-1] == '\r')
        nl[-1] = '\0';
    store_control_request(c, i);
}

void store_control_dispatch(store_control *c, const struct pollfd *fds, int n)
{
    if (c == NULL)
        return;
    for (int k = 0; k < n; k++) {
        if (fds[k].revents == 0)
            continue;
        if (fds[k].fd == c->listen_fd) {
            store_control_accept(c);
        } else if (fds[k].fd == c->collector_fd && (fds[k].events & POLLOUT)) {
            store_control_flush(c);
        } else {
            for (int i = 0; i < c->n_clients; i++) {
                if (c->clients[i].fd == fds[k].fd) {
                    store_control_read(c, i);
                    break;
                }
            }
        }
    }
}

void store_control_snapshot_committed(void *ctx, const store_snapshot_done *done)
{
    store_control *c = ctx;
    char line[128];
    if (c == NULL || done->trigger != HL_SNAPSHOT_REQUESTED)
        return;
    gint64 now = g_get_monotonic_time();
    for (int i = c->n_clients - 1; i >= 0; i--) {
        if (!c->clients[i].waiting || c->clients[i].detach)
            continue;
        /* a snapshot its request did not ask for: it started before the command was taken */
        if (done->commands != 0 && done->commands - 1 < c->clients[i].command)
            continue;
        snprintf(line, sizeof line, "ok %" PRIu32 " %" PRIu32 " %" PRIu64 " %" PRId64 "\n",
                 done->snapshot, done->gc, done->objects,
                 (int64_t)((now - c->clients[i].since_us) / 1000));
        store_control_answer(c, i, line);
    }
}

void store_control_snapshot_lost(void *ctx, uint32_t snapshot, uint32_t gc, uint32_t trigger,
                                 const char *why)
{
    store_control *c = ctx;
    char line[256];
    if (c == NULL || trigger != HL_SNAPSHOT_REQUESTED)
        return;
    snprintf(line, sizeof line, "lost %" PRIu32 " %" PRIu32 " %s\n", snapshot, gc, why);
    for (int i = c->n_clients - 1; i >= 0; i--)
        if (c->clients[i].waiting && !c->clients[i].detach)
            store_control_answer(c, i, line);
}

void store_control_snapshot_progress(void *ctx, uint32_t snapshot, uint32_t trigger,
                                     uint64_t items, gboolean writing)
{
    store_control *c = ctx;
    char line[96];
    if (c == NULL || trigger != HL_SNAPSHOT_REQUESTED)
        return;
    snprintf(line, sizeof line, "progress %" PRIu32 " %s%" PRIu64 "\n", snapshot,
             writing ? "writing " : "", items);
    /* Not an answer: a client that cannot take it now simply misses this one. */
    for (int i = 0; i < c->n_clients; i++)
        if (c->clients[i].waiting && !c->clients[i].detach)
            (void)!send(c->clients[i].fd, line, strlen(line), MSG_DONTWAIT | MSG_NOSIGNAL);
}
