/* test_sample_records.c — the ALLOC_SAMPLES records of samples.c as the writer receives them
 * (through the real outbox, over a socket pair): one per GC interval while sampling is on, also
 * for an interval without samples (its cumulative counters must arrive: a drop in the last
 * interval would otherwise be lost), the tail included; none when sampling is off. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "collector/collector_internal.h"
#include "tests/unit/common/check.h"

/* samples.c names the type of a sample it assembles from thread events; these tests hand it
 * finished samples, so the collector thread's type table is not needed. */
uint32_t hl_collector_type_id_resolve(collector *c, ClassID cls) {
    (void)c, (void)cls;
    return 1;
}

/* One ALLOC_SAMPLES record received. */
typedef struct got_record {
    hl_alloc_samples head;
    hl_alloc_sample first; /* the first sample, when count > 0 */
} got_record;

typedef struct fixture {
    hl_profiler p;
    collector c;
    int reader; /* the writer's end of the socket pair */
} fixture;

static void fixture_init(fixture *f, bool stacks, uint32_t source) {
    memset(f, 0, sizeof *f);
    f->p.stacks = stacks;
    f->p.sampling.source = source;
    f->c.p = &f->p;
    f->c.samples = (id_vec){.elem = sizeof(hl_alloc_sample)};
    hl_young_init(&f->c.young, 1);
    hl_young_packed_init(&f->c.survivors, CHUNK, CHUNK_BYTES);
    hl_frames_init(&f->c.frames);
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0 || hl_outbox_init(&f->c.out, NULL, 1u << 20) != 0)
        abort();
    fcntl(sv[0], F_SETFL, fcntl(sv[0], F_GETFL) | O_NONBLOCK);
    f->c.out.fd = sv[0];
    f->reader = sv[1];
}

static void fixture_release(fixture *f) {
    hl_outbox_release(&f->c.out);
    close(f->reader);
    hl_frames_release(&f->c.frames);
    hl_vec_release(&f->c.samples);
    hl_young_release(&f->c.young);
    hl_young_packed_release(&f->c.survivors);
}

/* What collector_thread.c does for GC `gc` (or the tail): the interval's samples closed against
 * the objects the GC left alive (young.h), then sent, and the interval closed. */
static void end_interval(fixture *f, uint32_t gc) {
    id_vec samples, counts;
    hl_samples_close(&f->c, &f->c.young, true, &samples);
    hl_samples_send(&f->c, gc, &samples);
    hl_young_close(&f->c.young, true, f->c.young.first + f->c.young.n, &counts, &f->c.survivors);
    hl_vec_release(&counts);
}

/* Sends what is queued and reads the ALLOC_SAMPLES records that arrived, up to `max`. */
static size_t receive(fixture *f, got_record *out, size_t max) {
    hl_outbox_flush(&f->c.out, 1000);
    static uint8_t buf[1 << 20];
    size_t n = 0;
    for (;;) {
        ssize_t k = recv(f->reader, buf + n, sizeof buf - n, MSG_DONTWAIT);
        if (k <= 0)
            break;
        n += (size_t)k;
    }
    size_t got = 0;
    for (size_t off = 0; off + sizeof(hl_rec_header) <= n;) {
        hl_rec_header h;
        memcpy(&h, buf + off, sizeof h);
        off += sizeof h;
        if (h.type == HL_REC_ALLOC_SAMPLES && got < max && h.size >= sizeof(hl_alloc_samples)) {
            memset(&out[got], 0, sizeof out[got]);
            memcpy(&out[got].head, buf + off, sizeof out[got].head);
            if (h.size >= sizeof(hl_alloc_samples) + sizeof(hl_alloc_sample))
                memcpy(&out[got].first, buf + off + sizeof(hl_alloc_samples), sizeof out[got].first);
            got++;
        }
        off += h.size;
    }
    return got;
}

/* The interval `gc` sent one ALLOC_SAMPLES record with no sample: only the counters. */
static void check_counters_only(fixture *f, uint32_t gc, uint64_t seen, uint64_t dropped) {
    got_record r[4];
    CHECK_INT(receive(f, r, 4), 1);
    CHECK_INT(r[0].head.gc, gc);
    CHECK_INT(r[0].head.count, 0);
    CHECK_INT(r[0].head.samples_seen, seen);
    CHECK_INT(r[0].head.samples_dropped, dropped);
}

static void test_every_interval(void) {
    fixture f;
    fixture_init(&f, true, HL_SAMPLE_SOURCE_ALLOCATION_SAMPLED);
    got_record r[4];

    /* GC 1: one sample of object 5, which survived. */
    hl_alloc_sample s = {.object_id = 5, .size = 24, .type_id = 1, .os_tid = 42, .heap = HL_GEN_0};
    CHECK(hl_vec_push(&f.c.samples, &s));
    hl_young_add(&f.c.young, 5, 1, 42, 24); /* object 5, alive after GC 1 */
    hl_young_fate_reset(&f.c.young);
    hl_young_set_heap(&f.c.young, 5, HL_GEN_0);
    hl_young_set_gen(&f.c.young, 5, HL_GEN_1);
    atomic_store(&f.p.sampling.seen, 1);
    end_interval(&f, 1);
    CHECK_INT(receive(&f, r, 4), 1);
    CHECK_INT(r[0].head.gc, 1);
    CHECK_INT(r[0].head.count, 1);
    CHECK_INT(r[0].head.source, HL_SAMPLE_SOURCE_ALLOCATION_SAMPLED);
    CHECK_INT(r[0].head.mean_distance_bytes, HL_ALLOC_SAMPLED_MEAN_BYTES);
    CHECK_INT(r[0].head.samples_seen, 1);
    CHECK_INT(r[0].first.object_id, 5);

    /* GC 2: the interval's only sample was dropped (no buffer room): no samples to send, but the
     * counters changed and must reach the writer. */
    atomic_store(&f.p.sampling.seen, 2);
    atomic_store(&f.p.sampling.dropped, 1);
    end_interval(&f, 2);
    check_counters_only(&f, 2, 2, 1);

    /* The tail (after the last GC, numbered last GC + 1): another drop, no sample. */
    atomic_store(&f.p.sampling.seen, 3);
    atomic_store(&f.p.sampling.dropped, 2);
    end_interval(&f, 3);
    check_counters_only(&f, 3, 3, 2);
    fixture_release(&f);
}

/* A sample keeps its object only when the GC left that object alive (its fate byte): one that
 * died, and one of an id the interval never had, are sent without. */
static void test_dead_objects(void) {
    fixture f;
    fixture_init(&f, true, HL_SAMPLE_SOURCE_ALLOCATION_SAMPLED);
    got_record r[4];
    hl_alloc_sample s = {.object_id = 6, .size = 24, .type_id = 1, .os_tid = 42, .heap = HL_GEN_0};
    CHECK(hl_vec_push(&f.c.samples, &s));
    hl_young_add(&f.c.young, 6, 1, 42, 24);
    hl_young_fate_reset(&f.c.young);
    hl_young_set_heap(&f.c.young, 6, HL_GEN_0);
    hl_young_set_gen(&f.c.young, 6, HL_GEN_NONE); /* died in GC 1 */
    atomic_store(&f.p.sampling.seen, 1);
    end_interval(&f, 1);
    CHECK_INT(receive(&f, r, 4), 1);
    CHECK_INT(r[0].head.count, 1);
    CHECK_INT(r[0].first.object_id, 0);
    s.object_id = 2; /* before the interval */
    CHECK(hl_vec_push(&f.c.samples, &s));
    hl_young_add(&f.c.young, f.c.young.first, 1, 42, 24);
    hl_young_fate_reset(&f.c.young);
    hl_young_set_heap(&f.c.young, f.c.young.first, HL_GEN_0);
    atomic_store(&f.p.sampling.seen, 2);
    end_interval(&f, 2);
    CHECK_INT(receive(&f, r, 4), 1);
    CHECK_INT(r[0].first.object_id, 0);
    fixture_release(&f);
}

static void test_no_sampling(void) {
    got_record r[4];
    fixture f;
    /* Stacks on but no source (the session did not start): no record, no sampling row. */
    fixture_init(&f, true, HL_SAMPLE_SOURCE_NONE);
    end_interval(&f, 1);
    CHECK_INT(receive(&f, r, 4), 0);
    fixture_release(&f);
    /* Stacks off (HEAPLENS_STACKS=off): nothing, whatever the source. */
    fixture_init(&f, false, HL_SAMPLE_SOURCE_ALLOCATION_SAMPLED);
    end_interval(&f, 1);
    CHECK_INT(receive(&f, r, 4), 0);
    fixture_release(&f);
}

int main(void) {
    test_every_interval();
    test_dead_objects();
    test_no_sampling();
    if (failures)
        return 1;
    puts("ok");
    return 0;
}
