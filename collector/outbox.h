/* outbox.h — the collector thread's bounded queue of encoded records and the socket to the writer.
 *
 * Only the collector thread uses it. Records are appended whole or not at all: when the queue is
 * full (writer slow) or the writer is gone, the record is dropped and counted, never blocking the
 * collector thread, so the GC queue and the thread rings keep draining and the program never
 * waits on the writer. What is dropped first is chosen by record type: allocation batches may
 * use three quarters of the queue, GC details (fates, deaths, roots, snapshots) all but the last
 * HL_OUTBOX_ESSENTIAL bytes, and those are kept for GC_START, GC_END and RUN_END. Sending is
 * non-blocking; MSG_NOSIGNAL keeps a dead writer from raising SIGPIPE in the profiled process.
 */
#ifndef HEAPLENS_OUTBOX_H
#define HEAPLENS_OUTBOX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Bytes at the end of the queue only GC_START, GC_END and RUN_END may use (a quarter of the queue
 * when that is less). About 200 GCs' frames: what a writer stalled for a while still learns. */
#define HL_OUTBOX_ESSENTIAL (64u << 10)

typedef struct hl_outbox {
    int fd;              /* -1 when not connected or the writer went away */
    uint8_t *data;
    size_t cap, start, end;
    uint64_t records_dropped, bytes_dropped;
    uint64_t bytes_sent;
    uint8_t in[64];      /* a partly received request from the writer */
    size_t in_len;
} hl_outbox;

/* Allocates the queue (`cap` bytes) and connects to the unix socket `path` (NULL: stays
 * disconnected and counts everything as dropped). Returns 0, or -1 when out of memory. */
int hl_outbox_init(hl_outbox *o, const char *path, size_t cap);
void hl_outbox_release(hl_outbox *o);

/* Appends one record (header + payload from up to three pieces). Returns false and counts a
 * drop when it does not fit or nobody listens. */
bool hl_outbox_put(hl_outbox *o, uint16_t type, const void *a, size_t na, const void *b, size_t nb,
                   const void *c, size_t nc);
/* Appends raw bytes (the stream header). Same drop rules. */
bool hl_outbox_put_raw(hl_outbox *o, const void *p, size_t n);

/* Sends what the socket takes now without blocking. Returns true when something was sent. */
bool hl_outbox_send(hl_outbox *o);
/* Sends everything, waiting for the socket; gives up (and counts the rest as dropped) after
 * `stall_ms` without progress. */
void hl_outbox_flush(hl_outbox *o, int stall_ms);

static inline bool hl_outbox_pending(const hl_outbox *o) { return o->end > o->start; }

/* Reads one request the writer sent back (HL_CMD_*) without blocking: its type, 0 when none is
 * complete yet. Unknown or malformed requests are skipped. */
int hl_outbox_read_command(hl_outbox *o);

#endif /* HEAPLENS_OUTBOX_H */
