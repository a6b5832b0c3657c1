/* test_thread_buffers.c — the chunked thread buffers under real threads: several producer
 * threads push events with ids from one counter (as ObjectAllocated does) while the consumer
 * drains with a moving limit. Checks: every event arrives exactly once, per-thread order is kept,
 * nothing at or above the limit is consumed, a thread that finds the pool empty waits until the
 * consumer frees a chunk (here by spilling: events moved into the consumer's memory, still
 * delivered in order and under the limit) and loses nothing, a wait gives up after the stall
 * limit and then drops and counts exactly what does not fit, chunks go back to the pool and are
 * reused, slots of exited threads are reused. */
#include <sched.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/thread_buffers.h"
#include "tests/unit/common/check.h"

#define THREADS 6
#define PER_THREAD 300000
#define ROUNDS 3
#define POOL_CHUNKS 64 /* 4 MiB: small enough that producers outrun the consumer now and then */

static hl_tbufs bufs;
static atomic_uint_fast64_t next_id = 1;
static atomic_uint_fast64_t pushed_ok;
static atomic_int producers_done;
static uint8_t *seen;             /* per id: times consumed */
static uint64_t *last_per_thread; /* by os tid: last id seen, for order */

static void push_one(hl_tbuf *b) {
    uint64_t id = atomic_fetch_add(&next_id, 1);
    hl_tbuf_count_allocation(b);
    /* Every other event as four values (ObjectAllocated's push), the rest as a struct. */
    bool ok;
    if (id & 1) {
        ok = hl_tbuf_push_fields(b, id, id * 16, id ^ 0x5a5a, HL_EV_KIND_SIZE(HL_EV_ALLOC, 24));
    } else {
        hl_alloc_event ev = {.id = id, .addr = id * 16, .class_id = id ^ 0x5a5a,
                             .kind_size = HL_EV_KIND_SIZE(HL_EV_ALLOC, 24)};
        ok = hl_tbuf_push(b, &ev);
    }
    if (ok)
        atomic_fetch_add(&pushed_ok, 1);
}

static void *producer(void *arg) {
    (void)arg;
    for (int i = 0; i < PER_THREAD; i++) {
        hl_tbuf *b = hl_tbufs_current(&bufs);
        if (b)
            push_one(b);
    }
    atomic_fetch_add(&producers_done, 1);
    return NULL;
}

static uint64_t overfill_count;

static void *overfill(void *arg) {
    (void)arg;
    hl_tbuf *b = hl_tbufs_current(&bufs);
    for (uint64_t i = 0; i < overfill_count; i++)
        push_one(b);
    return NULL;
}

/* Slot overflow: HL_TBUF_SLOTS threads hold a slot while one more asks for one. */
static pthread_barrier_t hold, release_all;

static void *holder(void *arg) {
    (void)arg;
    CHECK(hl_tbufs_current(&bufs) != NULL);
    pthread_barrier_wait(&hold);
    pthread_barrier_wait(&release_all);
    return NULL;
}

static void *latecomer(void *arg) {
    int *got = arg;
    for (int i = 0; i < 10000; i++)
        *got += hl_tbufs_current(&bufs) != NULL;
    return NULL;
}

typedef struct drain_ctx {
    uint64_t limit, consumed;
} drain_ctx;

static void consume_one(drain_ctx *d, const hl_alloc_event *ev, uint32_t os_tid) {
    CHECK(ev->id < d->limit);
    CHECK(ev->addr == ev->id * 16 && ev->class_id == (ev->id ^ 0x5a5a) && HL_EV_SIZE(ev) == 24 &&
          HL_EV_KIND(ev) == HL_EV_ALLOC);
    CHECK(seen[ev->id] == 0);
    seen[ev->id]++;
    uint64_t *last = &last_per_thread[os_tid % 65536];
    CHECK(ev->id > *last); /* ids of one thread arrive in increasing order */
    *last = ev->id;
    d->consumed++;
}

static void consume(void *ctx, const hl_alloc_event *ev, size_t n, uint32_t os_tid) {
    CHECK(n >= 1 && n <= HL_TBUF_CHUNK_EVENTS); /* a run lies within one chunk */
    for (size_t i = 0; i < n; i++)
        consume_one(ctx, &ev[i], os_tid);
}

static unsigned slots_active(void) {
    unsigned n = 0;
    for (unsigned i = 0; i < HL_TBUF_SLOTS; i++)
        n += atomic_load(&bufs.slots[i].state) != 0;
    return n;
}

int main(void) {
    const uint64_t overfill_total = POOL_CHUNKS * HL_TBUF_CHUNK_EVENTS + 1000;
    const uint64_t total = (uint64_t)THREADS * PER_THREAD * ROUNDS + overfill_total;
    seen = calloc(total + 2, 1);
    last_per_thread = calloc(65536, sizeof *last_per_thread);
    size_t pool = (size_t)POOL_CHUNKS * HL_TBUF_CHUNK_EVENTS * sizeof(hl_alloc_event);
    CHECK(hl_tbufs_init(&bufs, pool) == 0);
    CHECK_INT(bufs.n_chunks, POOL_CHUNKS);
    drain_ctx d = {0};
    for (int round = 0; round < ROUNDS; round++) {
        pthread_t t[THREADS];
        producers_done = 0;
        for (int i = 0; i < THREADS; i++)
            pthread_create(&t[i], NULL, producer, NULL);
        /* Drain concurrently with a limit that trails the counter, as the collector does. */
        for (int k = 0; atomic_load(&producers_done) < THREADS; k++) {
            d.limit = atomic_load(&next_id) - (k % 3) * 1000;
            hl_tbufs_drain(&bufs, d.limit, consume, &d);
        }
        for (int i = 0; i < THREADS; i++)
            pthread_join(t[i], NULL);
        d.limit = UINT64_MAX;
        hl_tbufs_drain(&bufs, UINT64_MAX, consume, &d); /* also frees the exited threads' slots */
        CHECK_INT(slots_active(), 0);
        CHECK_INT(hl_tbufs_chunks_in_use(&bufs), 0); /* every chunk is back in the pool */
        memset(last_per_thread, 0, 65536 * sizeof *last_per_thread); /* tids may be reused */
    }
    CHECK(d.consumed == atomic_load(&pushed_ok));
    CHECK(hl_tbufs_chunks_max(&bufs) <= POOL_CHUNKS);
    /* Slots of exited threads were reused: never more slots than threads alive at once. */
    CHECK(atomic_load(&bufs.slots_used) <= THREADS);
    uint64_t dropped_concurrent = hl_tbufs_dropped(&bufs);

    /* A full pool makes the thread wait; spilling frees every chunk it has left... */
    pushed_ok = 0;
    overfill_count = overfill_total;
    uint64_t before = atomic_load(&next_id);
    pthread_t over;
    pthread_create(&over, NULL, overfill, NULL);
    while (hl_tbufs_waiters(&bufs) == 0)
        sched_yield(); /* no timing: the thread waits until we spill, however long that takes */
    /* At least every chunk but the one it waits on; more when it got a chunk back meanwhile
     * and moved on from that one too. */
    uint64_t spilled = hl_tbufs_spill(&bufs);
    CHECK(spilled >= (uint64_t)(POOL_CHUNKS - 1) * HL_TBUF_CHUNK_EVENTS);
    pthread_join(over, NULL);
    CHECK_INT(atomic_load(&pushed_ok), overfill_total);
    CHECK_INT(hl_tbufs_dropped(&bufs), dropped_concurrent);
    CHECK(hl_tbufs_waits(&bufs) >= 1 && hl_tbufs_wait_ns(&bufs) > 0);
    /* ...and the spilled events come out first, in order, under the limit. */
    uint64_t consumed_before = d.consumed;
    d.limit = before + 10;
    hl_tbufs_drain(&bufs, d.limit, consume, &d);
    CHECK_INT(d.consumed - consumed_before, 10);
    d.limit = UINT64_MAX;
    hl_tbufs_drain(&bufs, UINT64_MAX, consume, &d);
    CHECK_INT(d.consumed - consumed_before, overfill_total);
    CHECK_INT(atomic_load(&next_id) - before, overfill_total);
    CHECK_INT(hl_tbufs_chunks_in_use(&bufs), 0);
    CHECK_INT(bufs.spilled, 0);

    /* Nobody drains: the wait gives up after the stall limit, then what does not fit is dropped
     * (at once: no second wait until a chunk is freed) and counted exactly. */
    memset(last_per_thread, 0, 65536 * sizeof *last_per_thread);
    free(seen);
    seen = calloc(total + 2 * overfill_total + 2, 1);
    bufs.stall_ns = 20000000;
    pushed_ok = 0;
    before = atomic_load(&next_id);
    pthread_create(&over, NULL, overfill, NULL);
    pthread_join(over, NULL);
    CHECK_INT(atomic_load(&pushed_ok), POOL_CHUNKS * HL_TBUF_CHUNK_EVENTS);
    CHECK_INT(hl_tbufs_dropped(&bufs) - dropped_concurrent, 1000);
    CHECK_INT(hl_tbufs_chunks_in_use(&bufs), POOL_CHUNKS);
    consumed_before = d.consumed;
    hl_tbufs_drain(&bufs, UINT64_MAX, consume, &d);
    CHECK_INT(d.consumed - consumed_before, POOL_CHUNKS * HL_TBUF_CHUNK_EVENTS);
    CHECK_INT(atomic_load(&next_id) - before, overfill_total);
    CHECK_INT(hl_tbufs_chunks_in_use(&bufs), 0);

    /* The recycled pool takes a full pool's worth again. */
    memset(last_per_thread, 0, 65536 * sizeof *last_per_thread);
    pushed_ok = 0;
    overfill_count = POOL_CHUNKS * HL_TBUF_CHUNK_EVENTS;
    free(seen);
    seen = calloc(total + 2 * overfill_total + overfill_count + 2, 1);
    pthread_create(&over, NULL, overfill, NULL);
    pthread_join(over, NULL);
    CHECK_INT(atomic_load(&pushed_ok), overfill_count);
    consumed_before = d.consumed;
    hl_tbufs_drain(&bufs, UINT64_MAX, consume, &d);
    CHECK_INT(d.consumed - consumed_before, overfill_count);

    /* Every slot taken: a further thread gets none, counts as overflowed once however often it
     * asks, and the slots are free again once their threads have exited and been drained. */
    static pthread_t holders[HL_TBUF_SLOTS];
    pthread_barrier_init(&hold, NULL, HL_TBUF_SLOTS + 1);
    pthread_barrier_init(&release_all, NULL, HL_TBUF_SLOTS + 1);
    for (int i = 0; i < HL_TBUF_SLOTS; i++)
        pthread_create(&holders[i], NULL, holder, NULL);
    pthread_barrier_wait(&hold);
    int got = 0;
    pthread_t late;
    pthread_create(&late, NULL, latecomer, &got);
    pthread_join(late, NULL);
    CHECK_INT(got, 0);
    CHECK_INT(atomic_load(&bufs.overflowed), 1);
    pthread_barrier_wait(&release_all);
    for (int i = 0; i < HL_TBUF_SLOTS; i++)
        pthread_join(holders[i], NULL);
    hl_tbufs_drain(&bufs, UINT64_MAX, consume, &d);
    CHECK_INT(slots_active(), 0);
    pthread_barrier_destroy(&hold);
    pthread_barrier_destroy(&release_all);

    uint64_t dropped = hl_tbufs_dropped(&bufs), allocations = hl_tbufs_allocations(&bufs);
    CHECK_INT(d.consumed + dropped, total + overfill_total + overfill_count);
    CHECK_INT(allocations, total + overfill_total + overfill_count);
    CHECK_INT(hl_tbufs_chunks_in_use(&bufs), 0);
    printf("%s: %llu events, %llu consumed, %llu dropped (%llu while draining), %u slots, "
           "%u chunks at most, %d failures\n",
           failures ? "FAIL" : "ok", (unsigned long long)(total + overfill_total + overfill_count),
           (unsigned long long)d.consumed, (unsigned long long)dropped,
           (unsigned long long)dropped_concurrent, atomic_load(&bufs.slots_used),
           hl_tbufs_chunks_max(&bufs), failures);
    hl_tbufs_release(&bufs);
    free(seen);
    free(last_per_thread);
    return failures != 0;
}
