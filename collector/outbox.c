/* outbox.c — see outbox.h. */
#include "collector/outbox.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
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
    o->data = malloc(cap);
    if (!o->data)
        return -1;
    o->cap = cap;
    o->fd = socket_connect(path);
    return 0;
}

static void disconnect(hl_outbox *o) {
    if (o->fd >= 0)
        close(o->fd);
    o->fd = -1;
    if (o->end > o->start) {
        /* What was queued will never arrive: count it as whole records is not possible any
         * more, so count the bytes (and one record for the partial tail). */
        o->bytes_dropped += o->end - o->start;
        o->records_dropped++;
    }
    o->start = o->end = 0;
}

void hl_outbox_release(hl_outbox *o) {
    if (o->fd >= 0)
        close(o->fd);
    free(o->data);
    memset(o, 0, sizeof *o);
    o->fd = -1;
}

/* How far into the queue a record may reach. Allocation batches may fill only the first three
 * quarters: the last quarter stays for GC, type, handle and snapshot records, so that an
 * overloaded writer costs allocation rows (counted) but GCs keep arriving. The last
 * HL_OUTBOX_ESSENTIAL bytes take only the records that frame a GC and the run (GC_START, GC_END,
 * RUN_END): even when a GC's details no longer fit, the writer learns the GC happened (marked
 * incomplete) and the run's end is never crowded out. */
static size_t limit_for(const hl_outbox *o, uint16_t type) {
    size_t tail = o->cap / 4 < HL_OUTBOX_ESSENTIAL ? o->cap / 4 : HL_OUTBOX_ESSENTIAL;
    switch (type) {
    case HL_REC_ALLOC_BATCH:
        return o->cap - o->cap / 4;
    case HL_REC_GC_START:
    case HL_REC_GC_END:
    case HL_REC_RUN_END:
        return o->cap;
    default:
        return o->cap - tail;
    }
}

/* Space for n more bytes below `limit`, or NULL. */
static uint8_t *reserve(hl_outbox *o, size_t n, size_t limit) {
    if (o->fd < 0)
        return NULL;
    if (limit - o->end < n && o->start > 0) {
        memmove(o->data, o->data + o->start, o->end - o->start);
        o->end -= o->start;
        o->start = 0;
    }
    if (o->end > limit || limit - o->end < n)
        return NULL;
    uint8_t *p = o->data + o->end;
    o->end += n;
    return p;
}

bool hl_outbox_put(hl_outbox *o, uint16_t type, const void *a, size_t na, const void *b, size_t nb,
                   const void *c, size_t nc) {
    size_t payload = na + nb + nc;
    uint8_t *p = payload <= HL_REC_MAX_PAYLOAD
                     ? reserve(o, sizeof(hl_rec_header) + payload, limit_for(o, type))
                     : NULL;
    if (!p) {
        o->records_dropped++;
        o->bytes_dropped += sizeof(hl_rec_header) + payload;
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
    uint8_t *p = reserve(o, n, o->cap);
    if (!p) {
        o->bytes_dropped += n;
        return false;
    }
    memcpy(p, src, n);
    return true;
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
        disconnect(o); /* EPIPE, ECONNRESET: the writer is gone */
    }
    if (o->start == o->end)
        o->start = o->end = 0;
    return progressed;
}

void hl_outbox_flush(hl_outbox *o, int stall_ms) {
    while (o->fd >= 0 && hl_outbox_pending(o)) {
        if (hl_outbox_send(o))
            continue;
        struct pollfd p = {.fd = o->fd, .events = POLLOUT};
        int r = poll(&p, 1, stall_ms);
        if (r == 0) {
            disconnect(o); /* the writer has stalled for stall_ms: give up, count the rest */
            return;
        }
        if (r < 0 && errno != EINTR)
            disconnect(o);
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
            disconnect(o); /* the writer closed the socket: it is gone */
        return 0;
    }
    return 0;
}
