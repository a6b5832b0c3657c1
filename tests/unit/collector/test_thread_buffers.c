/* test_thread_buffers.c — the allocation rings under real threads: several producer threads push
 * events with ids from one counter (as ObjectAllocated does) while the consumer drains with a
 * moving limit. Checks: every event arrives exactly once, per-thread order is kept, nothing at or
 * above the limit is consumed, drops are counted exactly, and rings of exited threads are reused. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/thread_buffers.h"

#define THREADS 6
#define PER_THREAD 300000
#define ROUNDS 3

static hl_tbufs rings;
static atomic_uint_fast64_t next_id = 1;
static atomic_uint_fast64_t pushed_ok;
static uint8_t *seen; /* per id: times consumed */
static uint64_t *last_per_thread; /* by os tid slot: last id seen, for order */
static int failures;

#define CHECK(cond)                                                                    \
    do {                                                                               \
        if (!(cond) && failures++ < 10)                                                \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
    } while (0)

static void *producer(void *arg) {
    (void)arg;
    for (int i = 0; i < PER_THREAD; i++) {
        hl_tbuf *b = hl_tbufs_current(&rings);
        if (!b)
            continue;
        uint64_t id = atomic_fetch_add(&next_id, 1);
        hl_tbuf_count_allocation(b);
        hl_alloc_event ev = {.id = id, .addr = id * 16, .class_id = 1,
                             .kind_size = HL_EV_KIND_SIZE(HL_EV_ALLOC, 24)};
        if (hl_tbuf_push(b, &ev))
            atomic_fetch_add(&pushed_ok, 1);
    }
    return NULL;
}

#define OVERFILL 1000

static void *overfill(void *arg) {
    (void)arg;
    hl_tbuf *b = hl_tbufs_current(&rings);
    for (uint64_t i = 0; i < HL_TBUF_EVENTS + OVERFILL; i++) {
        uint64_t id = atomic_fetch_add(&next_id, 1);
        hl_tbuf_count_allocation(b);
        hl_alloc_event ev = {.id = id, .addr = id * 16, .class_id = 1,
                             .kind_size = HL_EV_KIND_SIZE(HL_EV_ALLOC, 24)};
        if (hl_tbuf_push(b, &ev))
            atomic_fetch_add(&pushed_ok, 1);
    }
    return NULL;
}

typedef struct drain_ctx {
    uint64_t limit, consumed;
} drain_ctx;

static void consume(void *ctx, const hl_alloc_event *ev, uint32_t os_tid) {
    drain_ctx *d = ctx;
    CHECK(ev->id < d->limit);
    CHECK(ev->addr == ev->id * 16 && HL_EV_SIZE(ev) == 24 && HL_EV_KIND(ev) == HL_EV_ALLOC);
    CHECK(seen[ev->id] == 0);
    seen[ev->id]++;
    uint64_t *last = &last_per_thread[os_tid % 65536];
    CHECK(ev->id > *last); /* ids of one thread arrive in increasing order */
    *last = ev->id;
    d->consumed++;
}

int main(void) {
    const uint64_t total = (uint64_t)THREADS * PER_THREAD * ROUNDS + HL_TBUF_EVENTS + OVERFILL;
    seen = calloc(total + 2, 1);
    last_per_thread = calloc(65536, sizeof *last_per_thread);
    CHECK(hl_tbufs_init(&rings) == 0);
    drain_ctx d = {0};
    for (int round = 0; round < ROUNDS; round++) {
        pthread_t t[THREADS];
        for (int i = 0; i < THREADS; i++)
            pthread_create(&t[i], NULL, producer, NULL);
        /* Drain concurrently with a limit that trails the counter, as the collector does. */
        for (int k = 0; k < 2000; k++) {
            d.limit = atomic_load(&next_id) - (k % 3) * 1000;
            hl_tbufs_drain(&rings, d.limit, consume, &d);
        }
        for (int i = 0; i < THREADS; i++)
            pthread_join(t[i], NULL);
        d.limit = UINT64_MAX;
        hl_tbufs_drain(&rings, UINT64_MAX, consume, &d);
        hl_tbufs_drain(&rings, UINT64_MAX, consume, &d); /* recycles rings of exited threads */
        memset(last_per_thread, 0, 65536 * sizeof *last_per_thread); /* tids may be reused */
    }
    /* A full ring drops and counts exactly what does not fit, and takes events again once
     * drained. */
    pushed_ok = 0;
    uint64_t before = atomic_load(&next_id);
    pthread_t over;
    pthread_create(&over, NULL, overfill, NULL);
    pthread_join(over, NULL);
    CHECK(atomic_load(&pushed_ok) == HL_TBUF_EVENTS);
    CHECK(hl_tbufs_dropped(&rings) == OVERFILL);
    d.limit = UINT64_MAX;
    uint64_t consumed_before = d.consumed;
    hl_tbufs_drain(&rings, UINT64_MAX, consume, &d);
    CHECK(d.consumed - consumed_before == HL_TBUF_EVENTS);
    CHECK(atomic_load(&next_id) - before == HL_TBUF_EVENTS + OVERFILL);
    pushed_ok = d.consumed; /* for the totals below */

    uint64_t dropped = hl_tbufs_dropped(&rings), allocations = hl_tbufs_allocations(&rings);
    CHECK(d.consumed == atomic_load(&pushed_ok));
    CHECK(d.consumed + dropped == total);
    CHECK(allocations == total);
    /* Exited threads' rings were reused: never more rings than threads alive at once. */
    unsigned used = 0;
    for (unsigned i = 0; i < HL_TBUF_SLOTS; i++)
        used += atomic_load(&rings.slots[i]) != NULL;
    CHECK(used <= THREADS);
    printf("%s: %llu events, %llu consumed, %llu dropped, %u rings, %d failures\n",
           failures ? "FAIL" : "ok", (unsigned long long)total, (unsigned long long)d.consumed,
           (unsigned long long)dropped, used, failures);
    hl_tbufs_release(&rings);
    free(seen);
    free(last_per_thread);
    return failures != 0;
}
