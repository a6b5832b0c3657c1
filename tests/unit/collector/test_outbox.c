/* test_outbox.c — the collector's outbox against a real unix socket whose reader we control:
 * what is dropped first when the writer does not read (allocation batches, then GC details,
 * never a GC's frame or the run's end while room is kept for them), that what arrives is the
 * records in order and byte for byte, and that a writer that goes away costs counted drops and
 * no signal. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "collector/outbox.h"
#include "tests/unit/common/check.h"
#include "wire/hl_wire.h"

#define CAP (1u << 20) /* 1 MiB: the smallest HEAPLENS_BUFFER_MB */

/* A listening socket at a fresh path; the outbox connects to it, we accept: the writer's end. */
typedef struct peer {
    char path[108];
    int listen_fd, fd;
} peer;

static int peer_open(peer *pr, hl_outbox *o) {
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    snprintf(pr->path, sizeof pr->path, "/tmp/heaplens-outbox-test-%d.sock", (int)getpid());
    unlink(pr->path);
    strcpy(addr.sun_path, pr->path);
    pr->listen_fd = socket(AF_UNIX, SOCK_STREAM, 0);
    if (pr->listen_fd < 0 || bind(pr->listen_fd, (struct sockaddr *)&addr, sizeof addr) != 0 ||
        listen(pr->listen_fd, 1) != 0)
        return -1;
    if (hl_outbox_init(o, pr->path, CAP) != 0 || o->fd < 0)
        return -1;
    pr->fd = accept(pr->listen_fd, NULL, NULL);
    return pr->fd < 0 ? -1 : 0;
}

static void peer_close(peer *pr) {
    if (pr->fd >= 0)
        close(pr->fd);
    close(pr->listen_fd);
    unlink(pr->path);
    pr->fd = -1;
}

/* Reads everything the outbox sends (flushing it) and returns the record types in order. */
static size_t receive_types(peer *pr, hl_outbox *o, uint16_t *types, size_t max, uint8_t *last_byte) {
    static uint8_t buf[4 * CAP];
    size_t have = 0;
    while (hl_outbox_pending(o)) {
        hl_outbox_send(o);
        ssize_t n = recv(pr->fd, buf + have, sizeof buf - have, MSG_DONTWAIT);
        if (n > 0)
            have += (size_t)n;
    }
    ssize_t n;
    while ((n = recv(pr->fd, buf + have, sizeof buf - have, MSG_DONTWAIT)) > 0)
        have += (size_t)n;
    size_t count = 0;
    for (size_t off = 0; off + sizeof(hl_rec_header) <= have && count < max;) {
        hl_rec_header h;
        memcpy(&h, buf + off, sizeof h);
        types[count++] = h.type;
        off += sizeof h + h.size;
        if (h.size)
            *last_byte = buf[off - 1];
    }
    return count;
}

/* Fills the outbox with records of `type` (payload `size` bytes) until one is refused. */
static size_t fill(hl_outbox *o, uint16_t type, size_t size) {
    static uint8_t payload[HL_REC_MAX_PAYLOAD];
    size_t n = 0;
    while (hl_outbox_put(o, type, payload, size, NULL, 0, NULL, 0))
        n++;
    return n;
}

static void test_drop_order(void) {
    hl_outbox o;
    peer pr;
    CHECK(peer_open(&pr, &o) == 0);
    const size_t rec = sizeof(hl_rec_header) + 1000;

    /* The writer does not read (nothing is sent): batches stop at three quarters. */
    size_t batches = fill(&o, HL_REC_ALLOC_BATCH, 1000);
    CHECK(batches == (CAP - CAP / 4) / rec);
    CHECK(o.records_dropped == 1);
    /* GC details take the next part, up to the reserved tail. */
    size_t details = fill(&o, HL_REC_GC_YOUNG_FATE, 1000);
    CHECK(o.end <= CAP - HL_OUTBOX_ESSENTIAL && o.end + rec > CAP - HL_OUTBOX_ESSENTIAL);
    CHECK(details > 0);
    /* Batches and details are refused now, a GC's frame and the run's end are not. */
    static uint8_t big[1000];
    CHECK(!hl_outbox_put(&o, HL_REC_ALLOC_BATCH, big, sizeof big, NULL, 0, NULL, 0));
    CHECK(!hl_outbox_put(&o, HL_REC_TYPE, big, sizeof big, NULL, 0, NULL, 0));
    hl_gc_start s = {.gc = 7};
    hl_gc_end e = {.gc = 7};
    hl_run_end r = {.gcs = 7};
    CHECK(hl_outbox_put(&o, HL_REC_GC_START, &s, sizeof s, NULL, 0, NULL, 0));
    CHECK(hl_outbox_put(&o, HL_REC_GC_END, &e, sizeof e, NULL, 0, NULL, 0));
    CHECK(hl_outbox_put(&o, HL_REC_RUN_END, &r, sizeof r, NULL, 0, NULL, 0));
    CHECK(o.records_dropped == 4);

    /* Everything accepted arrives, in order, whole. */
    static uint16_t types[8192];
    uint8_t last = 0;
    size_t got = receive_types(&pr, &o, types, 8192, &last);
    CHECK(got == batches + details + 3);
    CHECK(types[0] == HL_REC_ALLOC_BATCH && types[batches - 1] == HL_REC_ALLOC_BATCH);
    CHECK(types[batches] == HL_REC_GC_YOUNG_FATE);
    CHECK(got >= 3 && types[got - 3] == HL_REC_GC_START && types[got - 2] == HL_REC_GC_END &&
          types[got - 1] == HL_REC_RUN_END);
    CHECK(o.bytes_sent == batches * rec + details * rec + 3 * sizeof(hl_rec_header) + sizeof s +
                             sizeof e + sizeof r);

    /* Sent space is reused (the queue compacts): a full outbox again takes as many batches. */
    CHECK(fill(&o, HL_REC_ALLOC_BATCH, 1000) == batches);
    peer_close(&pr);
    hl_outbox_release(&o);
}

static void test_writer_gone(void) {
    hl_outbox o;
    peer pr;
    CHECK(peer_open(&pr, &o) == 0);
    CHECK(hl_outbox_put(&o, HL_REC_GC_START, "abcd", 4, NULL, 0, NULL, 0));
    peer_close(&pr); /* the writer dies with a record queued */
    for (int i = 0; i < 4 && o.fd >= 0; i++)
        hl_outbox_send(&o); /* no SIGPIPE (it would end this test) */
    CHECK(o.fd < 0);
    CHECK(!hl_outbox_pending(&o));
    uint64_t dropped = o.records_dropped;
    CHECK(!hl_outbox_put(&o, HL_REC_RUN_END, "x", 1, NULL, 0, NULL, 0));
    CHECK(o.records_dropped == dropped + 1);
    hl_outbox_flush(&o, 10); /* returns at once: nobody to wait for */
    hl_outbox_release(&o);
}

int main(void) {
    signal(SIGPIPE, SIG_DFL); /* a SIGPIPE would kill the test: MSG_NOSIGNAL must prevent it */
    test_drop_order();
    test_writer_gone();
    if (failures)
        fprintf(stderr, "%d checks failed\n", failures);
    else
        printf("outbox: all checks passed\n");
    return failures != 0;
}
