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
#define HANDLE_EVERY 997 /* a handle event (an id of its own from the counter) now and then */
#define LIMITS 8         /* counter values read before: the limits a drain may use */

static hl_tbufs bufs;
static atomic_uint_fast64_t next_id = 1;
static atomic_uint_fast64_t epoch;      /* bumped now and then, as a GC start does */
static atomic_uint_fast64_t next_key = 1; /* a number per allocation, carried in its address */
static atomic_uint_fast64_t pushed_ok, handles_ok;
static atomic_int producers_done;
static uint8_t *seen;             /* per id: times consumed */
static size_t seen_cap;
static uint64_t *last_per_thread; /* by os tid: last id seen, for order */
static uint32_t *pushed_id, *drained_id; /* per key: the id the producer used, the one decoded */
static size_t keys_cap;
static bool small_only;           /* no ALLOC_WIDE (the phases that count a full pool) */

/* What an allocation with key k carries: its address names k, the class and size follow from
 * it. Every seventh is too large for ALLOC (ALLOC_WIDE), unless small_only. */
static uint64_t key_class(uint64_t k) {
    return (k ^ 0x5a5a) << 3;
}
static uint64_t key_size(uint64_t k) {
    return !small_only && k % 7 == 3 ? 65536 + k % 100000 : 24 + (k % 5) * 8;
}

static void push_one(hl_tbuf *b) {
    uint64_t k = atomic_fetch_add(&next_key, 1);
    hl_tbuf_count_allocation(b);
    if (hl_tbuf_push_alloc(b, &next_id, &epoch, k * 16, key_class(k), key_size(k))) {
        CHECK(k < keys_cap);
        if (k < keys_cap)
            pushed_id[k] = (uint32_t)(b->id_next - 1);
        atomic_fetch_add(&pushed_ok, 1);
    }
}

static void push_handle(hl_tbuf *b, uint64_t k) {
    uint64_t seq = atomic_fetch_add(&next_id, 1);
    if (hl_tbuf_push_handle(b, HL_EV_HANDLE_DESTROYED, seq, k * 16, 0))
        atomic_fetch_add(&handles_ok, 1);
}

static void *producer(void *arg) {
    (void)arg;
    for (int i = 0; i < PER_THREAD; i++) {
        hl_tbuf *b = hl_tbufs_current(&bufs);
        if (b)
            push_one(b);
        if (b && i % HANDLE_EVERY == HANDLE_EVERY - 1)
            push_handle(b, (uint64_t)i);
    }
    atomic_fetch_add(&producers_done, 1);
    return NULL;
}

static uint64_t overfill_count;
/* After its count: wait until told to go on (overfill_go), then push overfill_more. */
static uint64_t overfill_more;
static atomic_int overfill_paused, overfill_go;

static void *overfill(void *arg) {
    (void)arg;
    hl_tbuf *b = hl_tbufs_current(&bufs);
    for (uint64_t i = 0; i < overfill_count; i++)
        push_one(b);
    if (overfill_more) {
        atomic_store(&overfill_paused, 1);
        while (!atomic_load(&overfill_go))
            sched_yield();
        for (uint64_t i = 0; i < overfill_more; i++)
            push_one(b);
    }
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
    uint64_t limit, consumed, handles;
} drain_ctx;

static void consume_one(drain_ctx *d, uint64_t id, const hl_alloc_event *ev, uint32_t os_tid) {
    hl_ev_alloc a = hl_ev_alloc_decode(ev);
    uint64_t k = a.addr / 16;
    CHECK(id < d->limit);
    CHECK(a.addr == k * 16 && a.class_id == key_class(k) && a.size == key_size(k));
    CHECK(HL_EV_KIND(ev) == (a.size > 0xffff ? HL_EV_ALLOC_WIDE : HL_EV_ALLOC));
    CHECK(id < seen_cap && k < keys_cap);
    if (id >= seen_cap || k >= keys_cap)
        return;
    CHECK(seen[id] == 0);
    seen[id]++;
    drained_id[k] = (uint32_t)id; /* compared with pushed_id once the producers are done */
    uint64_t *last = &last_per_thread[os_tid % 65536];
    CHECK(id > *last); /* ids of one thread arrive in increasing order */
    *last = id;
    d->consumed++;
}

static size_t consume(void *ctx, const hl_alloc_event *ev, size_t n, uint64_t limit, uint64_t *id,
                      uint32_t os_tid) {
    drain_ctx *d = ctx;
    CHECK(n >= 1 && n <= HL_TBUF_CHUNK_EVENTS); /* a run lies within one chunk */
    CHECK(limit == d->limit);
    hl_ev_iter it = {.ev = ev, .n = n, .limit = limit, .id = *id};
    for (const hl_alloc_event *e; (e = hl_ev_next(&it));) {
        switch (HL_EV_KIND(e)) {
        case HL_EV_ALLOC:
        case HL_EV_ALLOC_WIDE:
            consume_one(d, it.id - 1, e, os_tid);
            break;
        case HL_EV_HANDLE_DESTROYED:
            CHECK(e->a < limit && e->a < seen_cap);
            if (e->a < seen_cap) {
                CHECK(seen[e->a] == 0);
                seen[e->a]++;
            }
            d->handles++;
            break;
        default:
            CHECK(!"an event of a kind never pushed");
        }
    }
    CHECK(it.at <= n);
    *id = it.id;
    return it.at;
}

/* Every key pushed was decoded with the id its producer used (ids implied by the MARKs). */
static void check_ids(uint64_t from, uint64_t to) {
    uint64_t wrong = 0;
    for (uint64_t k = from; k < to && k < keys_cap; k++)
        wrong += pushed_id[k] != drained_id[k];
    CHECK_INT(wrong, 0);
}

/* ---- the decoding, step by step ------------------------------------------------------------
 * Threads take turns (the main thread hands each a command and waits until it is done: no
 * timing), so that every id is known: the allocations' ids implied by the MARKs must decode to
 * the ids their producers used, across a block boundary, a chunk boundary, a spill, a "GC" (the
 * epoch moves: the rest of a block is left), a drain limit, ALLOC_WIDE (a large size, an address
 * above 2^48), a handle event between, and a thread switch (a slot freed and claimed by a new
 * thread). */
#define DEC_MAX 8192
static hl_tbufs dec;
static atomic_uint_fast64_t dec_next_id = 1, dec_epoch;
static uint64_t dec_keys = 1;
static struct {
    uint64_t id, addr, class_id, size;
    int consumed;
} dec_log[DEC_MAX];
static uint64_t dec_handle_seq[4];
static int dec_handles_pushed, dec_handles_consumed;

enum { ACT_ALLOCS = 1, ACT_HANDLE = 2, ACT_EXIT = 3 };
typedef struct actor {
    pthread_t t;
    atomic_int cmd, done;
    int n;
    hl_tbuf *slot;
} actor;

static void dec_alloc(hl_tbuf *b) {
    uint64_t k = dec_keys++;
    CHECK(k < DEC_MAX);
    if (k >= DEC_MAX)
        return;
    /* Sizes around ALLOC's limit, and now and then an address ALLOC cannot hold. */
    uint64_t size = k % 11 == 5 ? 0x10000 + k : k % 13 == 6 ? 0xffff : 16 + k % 200;
    uint64_t addr = (k % 17 == 8 ? 1ull << 48 : 0) + k * 16;
    uint64_t cls = 0x7f0000000000ull + (k % 5) * 0x40;
    CHECK(hl_tbuf_push_alloc(b, &dec_next_id, &dec_epoch, addr, cls, size));
    dec_log[k].id = b->id_next - 1;
    dec_log[k].addr = addr;
    dec_log[k].class_id = cls;
    dec_log[k].size = size;
}

static void *actor_main(void *arg) {
    actor *a = arg;
    a->slot = hl_tbufs_current(&dec);
    for (;;) {
        int cmd;
        while ((cmd = atomic_load(&a->cmd)) == 0)
            sched_yield();
        if (cmd == ACT_EXIT)
            return NULL;
        if (cmd == ACT_HANDLE) {
            uint64_t seq = atomic_fetch_add(&dec_next_id, 1);
            dec_handle_seq[dec_handles_pushed++] = seq;
            CHECK(hl_tbuf_push_handle(a->slot, HL_EV_HANDLE_CREATED, seq, 0x1000 + seq, 0x2000));
        }
        for (int i = 0; i < a->n; i++)
            dec_alloc(a->slot);
        atomic_store(&a->cmd, 0);
        atomic_fetch_add(&a->done, 1);
    }
}

static void actor_run(actor *a, int cmd, int n) {
    int done = atomic_load(&a->done);
    a->n = n;
    atomic_store(&a->cmd, cmd);
    if (cmd != ACT_EXIT)
        while (atomic_load(&a->done) == done)
            sched_yield();
}

static void actor_start(actor *a) {
    memset(a, 0, sizeof *a);
    pthread_create(&a->t, NULL, actor_main, a);
    actor_run(a, ACT_ALLOCS, 0); /* its slot claimed */
}

static void actor_end(actor *a) {
    actor_run(a, ACT_EXIT, 0);
    pthread_join(a->t, NULL);
}

typedef struct dec_ctx {
    uint64_t limit, consumed;
} dec_ctx;

static size_t dec_consume(void *ctx, const hl_alloc_event *ev, size_t n, uint64_t limit,
                          uint64_t *id, uint32_t os_tid) {
    dec_ctx *d = ctx;
    (void)os_tid;
    hl_ev_iter it = {.ev = ev, .n = n, .limit = limit, .id = *id};
    for (const hl_alloc_event *e; (e = hl_ev_next(&it));) {
        unsigned kind = HL_EV_KIND(e);
        if (kind == HL_EV_HANDLE_CREATED) {
            CHECK(e->a < d->limit);
            CHECK(dec_handles_consumed < dec_handles_pushed &&
                  e->a == dec_handle_seq[dec_handles_consumed]);
            CHECK((e->b & HL_EV_LOW60) == 0x1000 + e->a && e[1].a == 0x2000);
            dec_handles_consumed++;
        } else if (kind == HL_EV_ALLOC || kind == HL_EV_ALLOC_WIDE) {
            hl_ev_alloc a = hl_ev_alloc_decode(e);
            uint64_t k = (a.addr & HL_EV_LOW48) / 16, got = it.id - 1;
            CHECK(k > 0 && k < dec_keys);
            if (k == 0 || k >= dec_keys)
                continue;
            CHECK_INT(got, dec_log[k].id);
            CHECK(got < d->limit);
            CHECK(a.addr == dec_log[k].addr && a.class_id == dec_log[k].class_id);
            CHECK_INT(a.size, dec_log[k].size);
            CHECK(dec_log[k].consumed++ == 0);
            d->consumed++;
        } else {
            CHECK(!"an event of a kind never pushed");
        }
    }
    *id = it.id;
    return it.at;
}

static void test_decode(void) {
    CHECK(hl_tbufs_init(&dec, (size_t)64 * HL_TBUF_CHUNK_EVENTS * sizeof(hl_alloc_event)) == 0);
    actor a, b, c;
    dec_ctx d = {0};
    actor_start(&a);
    actor_start(&b);
    actor_run(&a, ACT_ALLOCS, 300); /* across a block boundary */
    d.limit = atomic_load(&dec_next_id);
    hl_tbufs_drain(&dec, d.limit, dec_consume, &d);
    CHECK_INT(d.consumed, 300);
    actor_run(&b, ACT_ALLOCS, 10);
    actor_run(&a, ACT_ALLOCS, 5000); /* across a chunk boundary */
    uint64_t spilled = hl_tbufs_spill(&dec); /* a's first chunk, read from the spill */
    CHECK(spilled > 0);
    /* A GC starts: its first id after it is the limit until it is applied. */
    atomic_fetch_add(&dec_epoch, 1);
    d.limit = atomic_load(&dec_next_id);
    actor_run(&a, ACT_ALLOCS, 5);
    actor_run(&b, ACT_HANDLE, 250); /* a handle event, then b's next block */
    hl_tbufs_drain(&dec, d.limit, dec_consume, &d);
    CHECK_INT(d.consumed, 300 + 10 + 5000);
    CHECK_INT(dec_handles_consumed, 0);
    hl_tbuf *a_slot = a.slot;
    actor_end(&a);
    d.limit = UINT64_MAX;
    hl_tbufs_drain(&dec, d.limit, dec_consume, &d); /* also frees a's slot */
    CHECK_INT(d.consumed, 300 + 10 + 5000 + 5 + 250);
    CHECK_INT(dec_handles_consumed, 1);
    /* A new thread in a's slot: its ids are its own. */
    actor_start(&c);
    CHECK(c.slot == a_slot);
    actor_run(&c, ACT_ALLOCS, 3);
    actor_run(&b, ACT_ALLOCS, 2);
    hl_tbufs_drain(&dec, d.limit, dec_consume, &d);
    CHECK_INT(d.consumed, 300 + 10 + 5000 + 5 + 250 + 5);
    for (uint64_t k = 1; k < dec_keys; k++)
        CHECK(dec_log[k].consumed == 1);
    actor_end(&b);
    actor_end(&c);
    hl_tbufs_drain(&dec, d.limit, dec_consume, &d);
    hl_tbufs_release(&dec);
}

static unsigned slots_active(void) {
    unsigned n = 0;
    for (unsigned i = 0; i < HL_TBUF_SLOTS; i++)
        n += atomic_load(&bufs.slots[i].state) != 0;
    return n;
}

int main(void) {
    test_decode();
    const uint64_t overfill_total = POOL_CHUNKS * HL_TBUF_CHUNK_EVENTS + 1000;
    const uint64_t total = (uint64_t)THREADS * PER_THREAD * ROUNDS + overfill_total;
    keys_cap = total + 2 * overfill_total + 2;
    seen_cap = 2 * keys_cap + ((size_t)4 << 20);
    seen = calloc(seen_cap, 1);
    pushed_id = calloc(keys_cap, sizeof *pushed_id);
    drained_id = calloc(keys_cap, sizeof *drained_id);
    last_per_thread = calloc(65536, sizeof *last_per_thread);
    size_t pool = (size_t)POOL_CHUNKS * HL_TBUF_CHUNK_EVENTS * sizeof(hl_alloc_event);
    CHECK(hl_tbufs_init(&bufs, pool) == 0);
    CHECK_INT(bufs.n_chunks, POOL_CHUNKS);
    drain_ctx d = {0};
    for (int round = 0; round < ROUNDS; round++) {
        pthread_t t[THREADS];
        producers_done = 0;
        uint64_t first_key = atomic_load(&next_key);
        for (int i = 0; i < THREADS; i++)
            pthread_create(&t[i], NULL, producer, NULL);
        /* Drain concurrently with a limit that trails the counter, as the collector does: a
         * value the counter held before, never less than the drain before (the collector's
         * limits are the counter read before a drain, or a GC's first id after it). Now and
         * then a "GC" starts: the epoch moves and each thread leaves the rest of its block. */
        uint64_t limits[LIMITS] = {0};
        for (int k = 0, bumps = 0; atomic_load(&producers_done) < THREADS; k++) {
            limits[k % LIMITS] = atomic_load(&next_id);
            d.limit = limits[(k + 1) % LIMITS]; /* read LIMITS - 1 drains ago */
            if (!d.limit)
                d.limit = limits[0];
            hl_tbufs_drain(&bufs, d.limit, consume, &d);
            if (k % 64 == 63 && bumps++ < 200)
                atomic_fetch_add(&epoch, 1);
        }
        for (int i = 0; i < THREADS; i++)
            pthread_join(t[i], NULL);
        d.limit = UINT64_MAX;
        hl_tbufs_drain(&bufs, UINT64_MAX, consume, &d); /* also frees the exited threads' slots */
        CHECK_INT(slots_active(), 0);
        CHECK_INT(hl_tbufs_chunks_in_use(&bufs), 0); /* every chunk is back in the pool */
        check_ids(first_key, atomic_load(&next_key));
        memset(last_per_thread, 0, 65536 * sizeof *last_per_thread); /* tids may be reused */
    }
    CHECK(d.consumed == atomic_load(&pushed_ok));
    CHECK_INT(d.handles, atomic_load(&handles_ok));
    CHECK_INT(d.handles, (uint64_t)THREADS * ROUNDS * (PER_THREAD / HANDLE_EVERY));
    CHECK(hl_tbufs_chunks_max(&bufs) <= POOL_CHUNKS);
    /* Slots of exited threads were reused: never more slots than threads alive at once. */
    CHECK(atomic_load(&bufs.slots_used) <= THREADS);
    uint64_t dropped_concurrent = hl_tbufs_dropped(&bufs);

    /* A full pool makes the thread wait; spilling frees every chunk it has left... */
    pushed_ok = 0;
    overfill_count = overfill_total;
    uint64_t before = atomic_load(&next_id), first_key = atomic_load(&next_key);
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
    /* ...and the spilled events come out first, in order, under the limit: the thread's first
     * block alone (one thread: the counter held before + HL_ID_BLOCK). */
    uint64_t consumed_before = d.consumed;
    d.limit = before;
    hl_tbufs_drain(&bufs, d.limit, consume, &d);
    CHECK_INT(d.consumed - consumed_before, 0);
    d.limit = before + HL_ID_BLOCK;
    hl_tbufs_drain(&bufs, d.limit, consume, &d);
    CHECK_INT(d.consumed - consumed_before, HL_ID_BLOCK);
    d.limit = UINT64_MAX;
    hl_tbufs_drain(&bufs, UINT64_MAX, consume, &d);
    CHECK_INT(d.consumed - consumed_before, overfill_total);
    /* Ids in whole blocks, the last one partly used. */
    CHECK_INT(atomic_load(&next_id) - before,
              (overfill_total + HL_ID_BLOCK - 1) / HL_ID_BLOCK * HL_ID_BLOCK);
    check_ids(first_key, atomic_load(&next_key));
    CHECK_INT(hl_tbufs_chunks_in_use(&bufs), 0);
    CHECK_INT(bufs.spilled, 0);

    /* Nobody drains: the wait gives up after the stall limit, then what does not fit is dropped
     * (at once: no second wait until a chunk is freed) and counted exactly; a dropped
     * allocation uses no id, so the thread's allocations after the drain (chunks free again)
     * decode to their own. Small allocations only: the pool's slots are counted. */
    memset(last_per_thread, 0, 65536 * sizeof *last_per_thread);
    small_only = true;
    bufs.stall_ns = 20000000;
    pushed_ok = 0;
    before = atomic_load(&next_id);
    first_key = atomic_load(&next_key);
    overfill_more = 10;
    pthread_create(&over, NULL, overfill, NULL);
    while (!atomic_load(&overfill_paused))
        sched_yield();
    uint64_t fit = atomic_load(&pushed_ok), marks = (fit + HL_ID_BLOCK - 1) / HL_ID_BLOCK;
    CHECK_INT(fit + marks, POOL_CHUNKS * HL_TBUF_CHUNK_EVENTS); /* every slot used */
    CHECK_INT(hl_tbufs_dropped(&bufs) - dropped_concurrent, overfill_total - fit);
    CHECK_INT(hl_tbufs_chunks_in_use(&bufs), POOL_CHUNKS);
    CHECK(atomic_load(&next_id) - before <= marks * HL_ID_BLOCK + HL_ID_BLOCK);
    consumed_before = d.consumed;
    hl_tbufs_drain(&bufs, UINT64_MAX, consume, &d);
    CHECK_INT(d.consumed - consumed_before, fit);
    atomic_store(&overfill_go, 1);
    pthread_join(over, NULL);
    CHECK_INT(atomic_load(&pushed_ok), fit + overfill_more);
    hl_tbufs_drain(&bufs, UINT64_MAX, consume, &d);
    CHECK_INT(d.consumed - consumed_before, fit + overfill_more);
    check_ids(first_key, atomic_load(&next_key));
    uint64_t resumed = overfill_more;
    overfill_more = 0;
    CHECK_INT(hl_tbufs_chunks_in_use(&bufs), 0);

    /* The recycled pool takes a full pool's worth again (its MARKs included). */
    memset(last_per_thread, 0, 65536 * sizeof *last_per_thread);
    pushed_ok = 0;
    overfill_count = (uint64_t)POOL_CHUNKS * HL_TBUF_CHUNK_EVENTS / (HL_ID_BLOCK + 1) * HL_ID_BLOCK;
    uint64_t recycled = overfill_count;
    first_key = atomic_load(&next_key);
    pthread_create(&over, NULL, overfill, NULL);
    pthread_join(over, NULL);
    CHECK_INT(atomic_load(&pushed_ok), overfill_count);
    consumed_before = d.consumed;
    hl_tbufs_drain(&bufs, UINT64_MAX, consume, &d);
    CHECK_INT(d.consumed - consumed_before, overfill_count);
    check_ids(first_key, atomic_load(&next_key));

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
    CHECK_INT(d.consumed + dropped, total + overfill_total + resumed + recycled);
    CHECK_INT(allocations, total + overfill_total + resumed + recycled);
    CHECK_INT(hl_tbufs_chunks_in_use(&bufs), 0);
    printf("%s: %llu events, %llu consumed, %llu dropped (%llu while draining), %u slots, "
           "%u chunks at most, %d failures\n",
           failures ? "FAIL" : "ok",
           (unsigned long long)(total + overfill_total + resumed + recycled),
           (unsigned long long)d.consumed, (unsigned long long)dropped,
           (unsigned long long)dropped_concurrent, atomic_load(&bufs.slots_used),
           hl_tbufs_chunks_max(&bufs), failures);
    hl_tbufs_release(&bufs);
    free(seen);
    free(pushed_id);
    free(drained_id);
    free(last_per_thread);
    return failures != 0;
}
