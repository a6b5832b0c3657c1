/* test_outbox.c — the collector's outbox against a real unix socket whose reader we control:
 * a slow writer costs no record (put waits while the writer takes bytes, calling on_wait), and
 * what arrives is the records in order and byte for byte; a writer that takes nothing for the
 * stall limit, or goes away, is given up: every record not delivered — queued or put later — is
 * counted and reported to on_lost, and no signal is raised. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "collector/outbox.h"
#include "tests/unit/common/check.h"
#include "wire/hl_wire.h"

#define CAP (1u << 20) /* 1 MiB: the smallest HEAPLENS_BUFFER_MB */
#define PAYLOAD 1000

/* A listening socket at a fresh path; the outbox connects to it, we accept: the writer's end. */
typedef struct peer {
    char path[108];
    int listen_fd, fd;
} peer;

/* What on_lost and on_wait saw. */
typedef struct seen {
    uint64_t lost, lost_bytes, waits;
    uint32_t first_lost_seq, last_lost_seq;
} seen;

static void on_lost(void *ctx, uint16_t type, const void *a, size_t na, const void *b, size_t nb) {
    seen *s = ctx;
    (void)type, (void)b;
    uint32_t seq = 0;
    if (na >= 4)
        memcpy(&seq, a, 4);
    if (!s->lost++)
        s->first_lost_seq = seq;
    s->last_lost_seq = seq;
    s->lost_bytes += sizeof(hl_rec_header) + na + nb;
}

static void on_wait(void *ctx) { ((seen *)ctx)->waits++; }

static int peer_open(peer *pr, hl_outbox *o, seen *s) {
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
    o->on_lost = on_lost;
    o->on_wait = on_wait;
    o->ctx = s;
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

static uint64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* A record whose payload starts with its sequence number and repeats its low byte. */
static bool put_seq(hl_outbox *o, uint32_t seq) {
    uint8_t payload[PAYLOAD];
    memset(payload, (int)(seq & 0xff), sizeof payload);
    memcpy(payload, &seq, 4);
    return hl_outbox_put(o, HL_REC_GC_SURVIVORS, payload, 500, payload + 500, PAYLOAD - 500,
                         NULL, 0);
}

/* The slow writer: reads in small pieces with pauses, checks every record. */
typedef struct reader {
    int fd;
    uint32_t expected; /* records to read */
    uint32_t got, bad;
} reader;

static void *slow_reader(void *arg) {
    reader *r = arg;
    static uint8_t rec[sizeof(hl_rec_header) + PAYLOAD];
    size_t have = 0;
    while (r->got < r->expected) {
        ssize_t n = recv(r->fd, rec + have, sizeof rec - have, 0);
        if (n <= 0)
            break;
        have += (size_t)n;
        if (have < sizeof rec)
            continue;
        hl_rec_header h;
        memcpy(&h, rec, sizeof h);
        uint32_t seq;
        memcpy(&seq, rec + sizeof h, 4);
        bool ok = h.type == HL_REC_GC_SURVIVORS && h.size == PAYLOAD && seq == r->got;
        for (size_t i = sizeof h + 4; i < sizeof rec && ok; i++)
            ok = rec[i] == (seq & 0xff);
        r->bad += !ok;
        r->got++;
        have = 0;
        if (r->got % 256 == 0)
            usleep(2000); /* slower than the producer: the outbox fills and put waits */
    }
    return NULL;
}

static void test_slow_writer_loses_nothing(void) {
    hl_outbox o;
    peer pr;
    seen s = {0};
    CHECK(peer_open(&pr, &o, &s) == 0);
    const uint32_t n = 4 * CAP / PAYLOAD; /* four outboxes' worth */
    reader r = {.fd = pr.fd, .expected = n};
    pthread_t t;
    pthread_create(&t, NULL, slow_reader, &r);
    for (uint32_t i = 0; i < n; i++)
        CHECK(put_seq(&o, i));
    hl_outbox_flush(&o, 1000);
    pthread_join(t, NULL);
    CHECK_INT(r.got, n);
    CHECK_INT(r.bad, 0);
    CHECK_INT(o.records_dropped, 0);
    CHECK_INT(s.lost, 0);
    CHECK(!o.lost && o.fd >= 0);
    CHECK(s.waits > 0); /* it did wait, and called the hook meanwhile */
    CHECK(o.wait_ns > 0);
    CHECK_INT(o.bytes_sent, (uint64_t)n * (sizeof(hl_rec_header) + PAYLOAD));
    peer_close(&pr);
    hl_outbox_release(&o);
}

/* The writer takes 64 KiB each time put waits (on_wait reads them): the queue is full the
 * whole time and the writer's pace sets the put's. Making room moves bytes to the front, never
 * more than were sent: moving the whole queue after each read of the writer made the collector
 * thread's time grow with the square of what waited (MidLife: 45% of it in memmove). */
typedef struct drip {
    int fd;
    uint64_t got;
} drip;

static void drip_read(void *ctx) {
    drip *d = ctx;
    static uint8_t buf[64 << 10];
    ssize_t n = recv(d->fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n > 0)
        d->got += (uint64_t)n;
}

static void test_full_queue_moves_little(void) {
    hl_outbox o;
    peer pr;
    seen s = {0};
    CHECK(peer_open(&pr, &o, &s) == 0);
    drip d = {.fd = pr.fd};
    o.on_wait = drip_read;
    o.ctx = &d;
    const uint32_t n = 4 * CAP / PAYLOAD;
    for (uint32_t i = 0; i < n; i++)
        CHECK(put_seq(&o, i));
    while (hl_outbox_pending(&o) && !o.lost) {
        hl_outbox_send(&o);
        drip_read(&d);
    }
    CHECK_INT(o.records_dropped, 0);
    CHECK_INT(o.bytes_sent, (uint64_t)n * (sizeof(hl_rec_header) + PAYLOAD));
    CHECK(o.bytes_moved > 0); /* it did make room */
    CHECK(o.bytes_moved <= o.bytes_sent);
    peer_close(&pr);
    hl_outbox_release(&o);
}

static void test_stalled_writer_given_up(void) {
    hl_outbox o;
    peer pr;
    seen s = {0};
    CHECK(peer_open(&pr, &o, &s) == 0);
    o.stall_ms = 200;
    /* A record larger than the whole queue can never fit: dropped, the writer is not lost. */
    static uint8_t big[CAP];
    CHECK(!hl_outbox_put(&o, HL_REC_SNAPSHOT_REFS, big, sizeof big, NULL, 0, NULL, 0));
    CHECK(!o.lost && o.fd >= 0);
    CHECK_INT(s.lost, 1);
    s = (seen){0};
    /* The writer reads nothing: puts fill the queue and the socket, then one waits the stall
     * limit and gives the writer up. */
    uint64_t t0 = now_ms();
    uint32_t accepted = 0;
    while (put_seq(&o, accepted))
        accepted++;
    uint64_t waited = now_ms() - t0;
    CHECK(o.lost && o.fd < 0);
    CHECK(waited >= 200);
    CHECK(s.waits > 0);
    /* What the socket took before the stall reached the peer; everything else was reported:
     * the queued records (a partly sent one included) and the refused put, in order. */
    static uint8_t buf[8 * CAP];
    size_t have = 0;
    ssize_t k;
    while ((k = recv(pr.fd, buf + have, sizeof buf - have, MSG_DONTWAIT)) > 0)
        have += (size_t)k;
    uint32_t whole = (uint32_t)(have / (sizeof(hl_rec_header) + PAYLOAD));
    CHECK_INT(s.first_lost_seq, whole);
    CHECK_INT(s.last_lost_seq, accepted);
    CHECK_INT(s.lost, accepted + 1 - whole);
    CHECK_INT(o.records_dropped, 1 + s.lost);
    /* Later puts are dropped and reported at once. */
    CHECK(!put_seq(&o, 77777));
    CHECK_INT(s.last_lost_seq, 77777);
    peer_close(&pr);
    hl_outbox_release(&o);
}

static void test_writer_gone(void) {
    hl_outbox o;
    peer pr;
    seen s = {0};
    CHECK(peer_open(&pr, &o, &s) == 0);
    CHECK(hl_outbox_put(&o, HL_REC_GC_START, "abcd", 4, NULL, 0, NULL, 0));
    peer_close(&pr); /* the writer dies with a record queued */
    for (int i = 0; i < 4 && o.fd >= 0; i++)
        hl_outbox_send(&o); /* no SIGPIPE (it would end this test) */
    CHECK(o.fd < 0 && o.lost);
    CHECK(!hl_outbox_pending(&o));
    CHECK_INT(s.lost, 1);
    CHECK_INT(o.records_dropped, 1);
    CHECK(!hl_outbox_put(&o, HL_REC_RUN_END, "x", 1, NULL, 0, NULL, 0));
    CHECK_INT(o.records_dropped, 2);
    CHECK_INT(s.lost, 2);
    hl_outbox_flush(&o, 10); /* returns at once: nobody to wait for */
    hl_outbox_release(&o);
}

int main(void) {
    signal(SIGPIPE, SIG_DFL); /* a SIGPIPE would kill the test: MSG_NOSIGNAL must prevent it */
    test_slow_writer_loses_nothing();
    test_full_queue_moves_little();
    test_stalled_writer_given_up();
    test_writer_gone();
    if (failures)
        fprintf(stderr, "%d checks failed\n", failures);
    else
        printf("outbox: all checks passed\n");
    return failures != 0;
}
