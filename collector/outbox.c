/* outbox.c — see outbox.h. */
#include "collector/mem.h"
#include "collector/clock.h"
#include "collector/outbox.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "wire/hl_wire.h"

static int socket_connect(const char *path) {
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    if (!path || strlen(path) >= sizeof addr.sun_path)
        return -1;
    strcpy(addr.sun_path, path);
    /* CLOEXEC: a child process of the program must not inherit the session. */
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    if (connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0 ||
        fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

int hl_outbox_init(hl_outbox *o, const char *path, size_t cap) {
    memset(o, 0, sizeof *o);
    o->stall_ms = HL_OUTBOX_STALL_MS;
    o->data = hl_mem_malloc(cap);
    if (!o->data)
        return -1;
    o->cap = cap;
    o->fd = socket_connect(path);
    return 0;
}

/* The writer is lost: every queued record from the first one not wholly sent (the writer drops
 * a partial record with the truncated tail) is reported and counted, and nothing more is sent. */
static void writer_lost(hl_outbox *o) {
    if (o->fd >= 0)
        close(o->fd);
    o->fd = -1;
    o->lost = true;
    for (size_t off = o->boundary; off + sizeof(hl_rec_header) <= o->end;) {
        hl_rec_header h;
        memcpy(&h, o->data + off, sizeof h);
        size_t whole = sizeof h + h.size;
        o->records_dropped++;
        o->bytes_dropped += whole;
        if (o->on_lost)
            o->on_lost(o->ctx, h.type, o->data + off + sizeof h, h.size, NULL, 0);
        off += whole;
    }
    o->start = o->end = o->boundary = 0;
}

void hl_outbox_release(hl_outbox *o) {
    if (o->fd >= 0)
        close(o->fd);
    hl_mem_free(o->data);
    memset(o, 0, sizeof *o);
    o->fd = -1;
}

/* Moves what is not wholly sent to the front. The partly sent record stays whole, so that
 * writer_lost can still read its header. Only when the bytes to move are no more than the room
 * it gains: a full queue behind a slow writer would otherwise move all of itself each time the
 * writer took a socket's worth (most of the collector thread's time on MidLife went there).
 * So every byte moved was sent before it, and a put waits at most until half the queue is out. */
static void compact(hl_outbox *o) {
    size_t from = o->boundary < o->start ? o->boundary : o->start;
    if (!from || o->end - from > from)
        return;
    memmove(o->data, o->data + from, o->end - from);
    o->bytes_moved += o->end - from;
    o->start -= from;
    o->end -= from;
    o->boundary -= from;
}

/* Space for n more bytes, waiting for the writer while it takes bytes; NULL when it is lost. */
static uint8_t *reserve(hl_outbox *o, size_t n) {
    if (o->fd < 0 || n > o->cap)
        return NULL;
    if (o->cap - o->end < n)
        compact(o);
    if (o->cap - o->end < n) {
        uint64_t t0 = hl_now_ns(), progress = t0;
        while (o->fd >= 0 && o->cap - o->end < n) {
            if (hl_outbox_send(o)) {
                progress = hl_now_ns();
                compact(o);
                continue;
            }
            if (o->fd < 0)
                break;
            uint64_t t = hl_now_ns();
            if (t - progress >= (uint64_t)o->stall_ms * 1000000u) {
                o->stalled = true;
                writer_lost(o); /* it took nothing for the stall limit */
                break;
            }
            /* Short waits: the caller's hook runs between them (it keeps the pool drained). */
            struct pollfd p = {.fd = o->fd, .events = POLLOUT};
            if (poll(&p, 1, 1) < 0 && errno != EINTR) {
                writer_lost(o);
                break;
            }
            if (o->on_wait)
                o->on_wait(o->ctx);
        }
        o->wait_ns += hl_now_ns() - t0;
        if (o->fd < 0)
            return NULL;
    }
    uint8_t *p = o->data + o->end;
    o->end += n;
    return p;
}

bool hl_outbox_put(hl_outbox *o, uint16_t type, const void *a, size_t na, const void *b, size_t nb,
                   const void *c, size_t nc) {
    size_t payload = na + nb + nc;
    uint8_t *p = payload <= HL_REC_MAX_PAYLOAD ? reserve(o, sizeof(hl_rec_header) + payload) : NULL;
    if (!p) {
        o->records_dropped++;
        o->bytes_dropped += sizeof(hl_rec_header) + payload;
        if (o->on_lost)
            o->on_lost(o->ctx, type, a, na, b, nb);
        return false;
    }
    hl_rec_header h = {.type = type, .size = (uint32_t)payload};
    memcpy(p, &h, sizeof h);
    p += sizeof h;
    if (na)
        memcpy(p, a, na);
    if (nb)
        memcpy(p + na, b, nb);
    if (nc)
        memcpy(p + na + nb, c, nc);
    return true;
}

bool hl_outbox_put_raw(hl_outbox *o, const void *src, size_t n) {
    bool at_boundary = o->boundary == o->end;
    uint8_t *p = reserve(o, n);
    if (!p) {
        o->bytes_dropped += n;
        return false;
    }
    memcpy(p, src, n);
    if (at_boundary)
        o->boundary = o->end; /* raw bytes are no record: the next record starts after them */
    return true;
}

/* Moves `boundary` past the records the writer now has whole. */
static void advance_boundary(hl_outbox *o) {
    while (o->boundary + sizeof(hl_rec_header) <= o->end && o->boundary < o->start) {
        hl_rec_header h;
        memcpy(&h, o->data + o->boundary, sizeof h);
        size_t next = o->boundary + sizeof h + h.size;
        if (next > o->start)
            break;
        o->boundary = next;
    }
}

bool hl_outbox_send(hl_outbox *o) {
    bool progressed = false;
    while (o->fd >= 0 && o->end > o->start) {
        ssize_t n = send(o->fd, o->data + o->start, o->end - o->start, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0) {
            o->start += (size_t)n;
            o->bytes_sent += (uint64_t)n;
            progressed = true;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        writer_lost(o); /* EPIPE, ECONNRESET: the writer is gone */
    }
    advance_boundary(o);
    if (o->start == o->end && o->boundary >= o->start)
        o->start = o->end = o->boundary = 0;
    return progressed;
}

void hl_outbox_flush(hl_outbox *o, int stall_ms) {
    while (o->fd >= 0 && hl_outbox_pending(o)) {
        if (hl_outbox_send(o))
            continue;
        if (o->fd < 0)
            return;
        /* poll's timeout restarts after every progress: no limit while the writer takes bytes */
        struct pollfd p = {.fd = o->fd, .events = POLLOUT};
        int r = poll(&p, 1, stall_ms);
        if (r == 0) {
            o->stalled = true;
            writer_lost(o); /* the writer has stalled for stall_ms: give up, count the rest */
            return;
        }
        if (r < 0 && errno != EINTR)
            writer_lost(o);
    }
}

int hl_outbox_read_command(hl_outbox *o) {
    while (o->fd >= 0) {
        if (o->in_len >= sizeof(hl_rec_header)) {
            hl_rec_header h;
            memcpy(&h, o->in, sizeof h);
            size_t whole = sizeof h + h.size;
            if (h.size > sizeof o->in - sizeof h) { /* not a request we know: drop the stream */
                o->in_len = 0;
                return 0;
            }
            if (o->in_len >= whole) {
                memmove(o->in, o->in + whole, o->in_len - whole);
                o->in_len -= whole;
                if (h.type)
                    return h.type;
                continue;
            }
        }
        ssize_t n = recv(o->fd, o->in + o->in_len, sizeof o->in - o->in_len, MSG_DONTWAIT);
        if (n > 0) {
            o->in_len += (size_t)n;
            continue;
        }
        if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
            writer_lost(o); /* the writer closed the socket: it is gone */
        return 0;
    }
    return 0;
}
