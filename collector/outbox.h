/* outbox.h — the collector thread's bounded queue of encoded records and the socket to the writer.
 *
 * Only the collector thread uses it. Records are appended whole. When the queue is full the
 * collector thread waits for the writer — it is our own thread, and no runtime thread ever waits
 * for it — as long as the writer keeps taking bytes: a put returns only once its record is
 * queued, or the writer is lost. While it waits it calls `on_wait` every millisecond or so (the
 * collector drains thread chunks there, so allocating threads keep finding room in the pool).
 * The writer is lost when the socket breaks (EPIPE, ECONNRESET, the writer closed it) or when it
 * took nothing for `stall_ms` (HL_OUTBOX_STALL_MS) while we had something to send; from then on
 * nothing is sent, and every record not delivered — those still queued (a partly sent one
 * included) and every later put — is dropped, counted in records/bytes_dropped and reported
 * to `on_lost`, so the caller can count what was lost in its own units. Sending is
 * non-blocking; MSG_NOSIGNAL keeps a dead writer from raising SIGPIPE in the profiled process.
 */
#ifndef HEAPLENS_OUTBOX_H
#define HEAPLENS_OUTBOX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HL_OUTBOX_STALL_MS 10000 /* a writer that takes nothing for this long is given up */
/* The queue's default size (HEAPLENS_BUFFER_MB). Every byte sent passes through it, and the
 * writer is slower than the collector's bursts at GC ends, so the queue fills to its size and
 * each page of it is faulted in (and zeroed) once a run: 64 MiB cost MidLife's collector 13k
 * page faults, ~40 ms of system time and 43 MiB of RSS more than 16 MiB, with no program
 * thread waiting either way and a shorter exit wait (less is queued at the end); 8 MiB took
 * no fewer faults than 16 and waited longer (bench/README.md, "The collector's system time per
 * survivor"). */
#define HL_OUTBOX_DEFAULT_MB 16

/* A record that will never reach the writer: its type and its payload, in two pieces whose
 * concatenation is the payload (b may be empty). Called on the collector thread; must not put. */
typedef void (*hl_outbox_lost_fn)(void *ctx, uint16_t type, const void *a, size_t na,
                                  const void *b, size_t nb);

typedef struct hl_outbox {
    int fd;              /* -1 when not connected or the writer was lost */
    bool lost;           /* the writer went away or stalled (not set when never connected) */
    bool stalled;        /* ... and it was given up for taking nothing for stall_ms */
    uint8_t *data;
    size_t cap, start, end;
    size_t boundary;     /* offset of the first record not wholly sent (start may be inside it) */
    uint64_t records_dropped, bytes_dropped;
    uint64_t bytes_sent;
    uint64_t bytes_moved; /* moved to the front to make room: never more than bytes_sent */
    uint64_t wait_ns;    /* time spent waiting for room (for the benchmark and tests) */
    int stall_ms;        /* HL_OUTBOX_STALL_MS; tests set less */
    void (*on_wait)(void *ctx);
    hl_outbox_lost_fn on_lost;
    void *ctx;
    uint8_t in[64];      /* a partly received request from the writer */
    size_t in_len;
} hl_outbox;

/* Allocates the queue (`cap` bytes) and connects to the unix socket `path` (NULL: stays
 * disconnected and counts everything as dropped). Returns 0, or -1 when out of memory. The
 * hooks (on_wait, on_lost, ctx) start NULL; set them after init. */
int hl_outbox_init(hl_outbox *o, const char *path, size_t cap);
void hl_outbox_release(hl_outbox *o);

/* Appends one record (header + payload from up to three pieces), waiting for room while the
 * writer makes progress. Returns false when the record was dropped instead: the writer is lost
 * or absent, or the record can never fit (payload above HL_REC_MAX_PAYLOAD or the record larger
 * than the queue); drops are counted and reported to on_lost with pieces a and b. */
bool hl_outbox_put(hl_outbox *o, uint16_t type, const void *a, size_t na, const void *b, size_t nb,
                   const void *c, size_t nc);
/* Appends raw bytes (the stream header, first thing on the stream). Same waiting rules. */
bool hl_outbox_put_raw(hl_outbox *o, const void *p, size_t n);

/* Sends what the socket takes now without blocking. Returns true when something was sent. */
bool hl_outbox_send(hl_outbox *o);
/* Sends everything, waiting for the socket as long as the writer makes progress; gives the
 * writer up (counting the rest as dropped) after `stall_ms` without progress. */
void hl_outbox_flush(hl_outbox *o, int stall_ms);

static inline bool hl_outbox_pending(const hl_outbox *o) { return o->end > o->start; }

/* Reads one request the writer sent back (HL_CMD_*) without blocking: its type, 0 when none is
 * complete yet. Unknown or malformed requests are skipped. */
int hl_outbox_read_command(hl_outbox *o);

#endif /* HEAPLENS_OUTBOX_H */
