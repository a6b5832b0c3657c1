/* thread_buffers.c — see thread_buffers.h.
 *
 * Chunk list protocol (one producer, one consumer per slot):
 *  - the producer writes an event into its tail chunk, then publishes it by storing the chunk's
 *    `fill` (release); when the chunk is full it takes a fresh one from the pool, and links it
 *    with the old chunk's `next` (release) — or, for its first chunk, with the slot's
 *    `head_chunk`; the fresh chunk's `fill` and `next` are reset before that release;
 *  - the consumer reads `fill` (acquire) and consumes up to it; a chunk it has read to the end
 *    whose `next` is set will never be written again, so it goes back to the pool and `next`
 *    becomes the head.
 * Slot states: FREE -> ACTIVE (a thread claimed it, CAS) -> RETIRED (its thread exited) -> FREE
 * (the consumer emptied it and gave its last chunk back). A retired slot is never pushed to
 * again, so emptying it is final; the consumer reads the state before the chunks, so RETIRED
 * (release by the exiting thread) makes every event of that thread visible.
 */
#include "collector/mem.h"
#include "collector/thread_buffers.h"

#include <limits.h>
#include <linux/futex.h>
#include <pthread.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

enum { SLOT_FREE = 0, SLOT_ACTIVE = 1, SLOT_RETIRED = 2 };

#define CHUNK_BYTES ((size_t)HL_TBUF_CHUNK_EVENTS * sizeof(hl_alloc_event))

/* The calling thread's slot (thread_buffers.h). The key only exists to hear about thread exit.
 * After a detach and a new attach the same slots are set up again (hl_tbufs_init) while threads
 * still hold their old slot pointer: a pointer of an older epoch is forgotten, never pushed to
 * (it may name a slot another thread owns now). */
_Thread_local hl_tbuf_tls hl_tbuf_tls_self __attribute__((tls_model("initial-exec")));
static atomic_uint tbufs_epoch;
static pthread_key_t exit_key;
static pthread_once_t exit_key_once = PTHREAD_ONCE_INIT;
static int exit_key_error;

static void slot_thread_exited(void *slot) {
    hl_tbuf *b = slot;
    hl_tbuf_tls *t = &hl_tbuf_tls_self;
    bool ours = t->slot == b && b->owner && t->epoch == b->owner->epoch;
    t->slot = NULL;
    if (ours) /* a slot of an older session belongs to someone else now */
        atomic_store_explicit(&b->state, SLOT_RETIRED, memory_order_release);
}

static void exit_key_create(void) {
    exit_key_error = pthread_key_create(&exit_key, slot_thread_exited);
}

/* ---- the pool's free stack (Treiber stack with a tag against ABA) ------------------------ */

static uint32_t pool_pop(hl_tbufs *r) {
    uint64_t top = atomic_load_explicit(&r->free_top, memory_order_acquire);
    for (;;) {
        uint32_t plus1 = (uint32_t)top;
        if (!plus1)
            return HL_TBUF_NONE;
        /* May read the link of a chunk another thread popped meanwhile: then the tag changed
         * and the CAS below fails, so the stale value is never installed. */
        uint32_t next = atomic_load_explicit(&r->desc[plus1 - 1].next_free, memory_order_relaxed);
        uint64_t want = ((top >> 32) + 1) << 32 | next;
        if (atomic_compare_exchange_weak_explicit(&r->free_top, &top, want, memory_order_acquire,
                                                  memory_order_acquire)) {
            atomic_fetch_add_explicit(&r->in_use, 1, memory_order_relaxed);
            return plus1 - 1;
        }
    }
}

static void pool_push(hl_tbufs *r, uint32_t chunk) {
    uint64_t top = atomic_load_explicit(&r->free_top, memory_order_relaxed);
    for (;;) {
        atomic_store_explicit(&r->desc[chunk].next_free, (uint32_t)top, memory_order_relaxed);
        uint64_t want = ((top >> 32) + 1) << 32 | (chunk + 1);
        /* release: the consumer's reads of the chunk happen before a producer reuses it */
        if (atomic_compare_exchange_weak_explicit(&r->free_top, &top, want, memory_order_release,
                                                  memory_order_relaxed))
            break;
    }
    atomic_fetch_sub_explicit(&r->in_use, 1, memory_order_relaxed);
    /* Against a waiter's "waiters++, then pop": one of the two sees the other's write. */
    atomic_thread_fence(memory_order_seq_cst);
    bool waiting = atomic_load_explicit(&r->waiters, memory_order_relaxed) != 0;
    if (waiting || atomic_load_explicit(&r->stalled, memory_order_relaxed)) {
        atomic_store_explicit(&r->stalled, 0, memory_order_relaxed); /* progress again */
        atomic_fetch_add_explicit(&r->freed, 1, memory_order_release);
        if (waiting)
            syscall(SYS_futex, &r->freed, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
    }
}

/* ---- waiting for a chunk ------------------------------------------------------------------ */

static uint64_t mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts); /* vDSO: no system call */
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void count_add(atomic_uint_fast64_t *counter, uint64_t n) {
    uint64_t v = atomic_load_explicit(counter, memory_order_relaxed);
    atomic_store_explicit(counter, v + n, memory_order_relaxed); /* producer only */
}

/* The consumer thread's CPU time (0 when it did not tell its thread, or it is gone). */
static uint64_t consumer_cpu_ns(hl_tbufs *r) {
    struct timespec ts;
    if (!atomic_load_explicit(&r->consumer_known, memory_order_acquire) ||
        clock_gettime(r->consumer_clock, &ts) != 0)
        return 0;
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void hl_tbufs_set_consumer(hl_tbufs *r) {
    if (pthread_getcpuclockid(pthread_self(), &r->consumer_clock) == 0)
        atomic_store_explicit(&r->consumer_known, true, memory_order_release);
}

/* A chunk for the slot's thread: from the pool, or after waiting until the consumer frees one.
 * HL_TBUF_NONE when the consumer is gone or freed nothing for stall_ns. The thread may be inside
 * an allocation callback and so hold up any GC (suspension waits for it): the consumer must never
 * need a GC to free a chunk (collector README, "Waiting instead of dropping"). */
static uint32_t pool_take(hl_tbufs *r, hl_tbuf *b) {
    uint32_t fresh = pool_pop(r);
    if (fresh != HL_TBUF_NONE || atomic_load_explicit(&r->closed, memory_order_acquire))
        return fresh;
    unsigned seq = atomic_load_explicit(&r->freed, memory_order_acquire);
    if (atomic_load_explicit(&r->stalled, memory_order_relaxed) == seq + 1)
        return HL_TBUF_NONE; /* a wait already gave up, and nothing was freed since */
    atomic_fetch_add_explicit(&r->waiters, 1, memory_order_seq_cst);
    uint64_t t0 = mono_ns(), progress = t0, now = t0, cpu = consumer_cpu_ns(r);
    for (;;) {
        seq = atomic_load_explicit(&r->freed, memory_order_acquire);
        atomic_thread_fence(memory_order_seq_cst);
        fresh = pool_pop(r);
        if (fresh != HL_TBUF_NONE || atomic_load_explicit(&r->closed, memory_order_acquire))
            break;
        /* Sleeps until `freed` moves; 100 ms at most, to notice the stall limit and `closed`. */
        struct timespec most = {0, 100000000};
        syscall(SYS_futex, &r->freed, FUTEX_WAIT_PRIVATE, seq, &most, NULL, 0);
        now = mono_ns();
        uint64_t cpu_now = consumer_cpu_ns(r);
        /* Progress: a chunk freed, or the consumer's thread working (a long model update, a
         * snapshot). A consumer blocked (or gone) for stall_ns is given up. */
        if (atomic_load_explicit(&r->freed, memory_order_acquire) != seq || cpu_now != cpu) {
            progress = now;
            cpu = cpu_now;
        } else if (now - progress >= r->stall_ns) {
            atomic_store_explicit(&r->stalled, seq + 1, memory_order_relaxed);
            break;
        }
    }
    atomic_fetch_sub_explicit(&r->waiters, 1, memory_order_relaxed);
    count_add(&b->waits, 1);
    count_add(&b->wait_ns, mono_ns() - t0);
    return fresh;
}

void hl_tbufs_close(hl_tbufs *r) {
    atomic_store_explicit(&r->consumer_known, false, memory_order_release);
    atomic_store_explicit(&r->closed, true, memory_order_release);
    atomic_fetch_add_explicit(&r->freed, 1, memory_order_release);
    syscall(SYS_futex, &r->freed, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}

/* ---- setup -------------------------------------------------------------------------------- */

int hl_tbufs_init(hl_tbufs *r, size_t pool_bytes) {
    memset(r, 0, sizeof *r);
    r->epoch = atomic_fetch_add(&tbufs_epoch, 1) + 1; /* never 0: a thread's TLS epoch starts 0 */
    for (unsigned i = 0; i < HL_TBUF_SLOTS; i++) {
        r->slots[i].owner = r;
        r->slots[i].tail_chunk = HL_TBUF_NONE;
        atomic_init(&r->slots[i].head_chunk, HL_TBUF_NONE);
        atomic_init(&r->slots[i].state, SLOT_FREE);
    }
    size_t n = pool_bytes / CHUNK_BYTES;
    if (n < 64)
        n = 64; /* more than the threads that hold a chunk each: a waiter finds one freed */
    if (n > UINT32_MAX / 2)
        n = UINT32_MAX / 2;
    r->n_chunks = (uint32_t)n;
    r->pool_bytes = n * CHUNK_BYTES;
    r->stall_ns = 10ull * 1000000000u;
    r->spill_limit = n * HL_TBUF_CHUNK_EVENTS; /* as much again as the pool */
    /* mmap, not malloc: pages of chunks never used cost nothing; NORESERVE because the pool is
     * a ceiling, not an expectation. */
    void *mem = mmap(NULL, r->pool_bytes, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (mem == MAP_FAILED)
        return -1;
    r->pool = mem;
    hl_mem_mapped_add((int64_t)r->pool_bytes);
    r->desc = hl_mem_calloc(n, sizeof *r->desc);
    if (!r->desc) {
        munmap(mem, r->pool_bytes);
        hl_mem_mapped_add(-(int64_t)r->pool_bytes);
        r->pool = NULL;
        return -1;
    }
    /* Chunk 0 on top: chunks are used from the low end, and reused last-in first-out. */
    for (uint32_t i = (uint32_t)n; i-- > 0;)
        atomic_init(&r->desc[i].next_free, i + 1 < n ? i + 2 : 0);
    atomic_init(&r->free_top, n ? 1 : 0);
    if (pthread_once(&exit_key_once, exit_key_create) != 0 || exit_key_error)
        return -1;
    return 0;
}

void hl_tbufs_release(hl_tbufs *r) {
    for (unsigned i = 0; i < HL_TBUF_SLOTS; i++) {
        hl_mem_free(r->slots[i].spill);
        r->slots[i].spill = NULL;
    }
    if (r->pool) {
        munmap(r->pool, r->pool_bytes);
        hl_mem_mapped_add(-(int64_t)r->pool_bytes);
    }
    hl_mem_free(r->desc);
    r->pool = NULL;
    r->desc = NULL;
}

/* ---- producer side -------------------------------------------------------------------------- */

static bool slot_claim(hl_tbuf *b) {
    int expected = SLOT_FREE;
    return atomic_compare_exchange_strong_explicit(&b->state, &expected, SLOT_ACTIVE,
                                                   memory_order_acquire, memory_order_relaxed);
}

hl_tbuf *hl_tbufs_claim(hl_tbufs *r) {
    hl_tbuf_tls *t = &hl_tbuf_tls_self;
    if (t->epoch != r->epoch) {
        t->slot = NULL;
        t->missed = 0;
        t->epoch = r->epoch;
    }
    if (t->slot)
        return t->slot;
    /* A thread that found every slot taken looks again only every 4096 calls: scanning 512
     * slots per allocation would slow it down for nothing. It counts as overflowed once. */
    if (t->missed && (t->missed++ & 4095) != 0)
        return NULL;
    hl_tbuf *b = NULL;
    for (unsigned i = 0; i < HL_TBUF_SLOTS && !b; i++) {
        /* Look before the CAS: a failed CAS still takes the cache line from its owner. */
        if (atomic_load_explicit(&r->slots[i].state, memory_order_relaxed) == SLOT_FREE &&
            slot_claim(&r->slots[i]))
            b = &r->slots[i];
    }
    if (!b) {
        if (!t->missed++)
            atomic_fetch_add_explicit(&r->overflowed, 1, memory_order_relaxed);
        return NULL;
    }
    t->missed = 0;
    unsigned index = (unsigned)(b - r->slots), used = atomic_load(&r->slots_used);
    while (used <= index && !atomic_compare_exchange_weak(&r->slots_used, &used, index + 1))
        ;
    /* The consumer left head_chunk at NONE when it freed the slot (acquired by the claim). */
    b->tail_chunk = HL_TBUF_NONE;
    b->tail_events = NULL;
    b->tail_fill_word = NULL;
    b->tail_fill = 0;
    /* An earlier thread's block is not this thread's: its first allocation takes a block and
     * pushes its MARK. */
    b->id_next = b->id_end = b->id_block_end = 0;
    b->os_tid = (uint32_t)syscall(SYS_gettid);
    t->slot = b;
    (void)pthread_setspecific(exit_key, b);
    return b;
}

void hl_tbufs_count_overflow_allocation(hl_tbufs *r) {
    atomic_fetch_add_explicit(&r->overflow_allocations, 1, memory_order_relaxed);
}

/* Makes chunk `fresh`, just taken from the pool, the slot's new tail: empty, the last one,
 * published after the old tail `chunk` (or as the head when the slot has none yet). The slow
 * path of the pushes: once per chunk of events. */
static inline void tail_append(hl_tbufs *r, hl_tbuf *b, uint32_t chunk, uint32_t fresh) {
    atomic_store_explicit(&r->desc[fresh].fill, 0, memory_order_relaxed);
    atomic_store_explicit(&r->desc[fresh].next, HL_TBUF_NONE, memory_order_relaxed);
    if (chunk == HL_TBUF_NONE)
        atomic_store_explicit(&b->head_chunk, fresh, memory_order_release);
    else
        atomic_store_explicit(&r->desc[chunk].next, fresh, memory_order_release);
    b->tail_chunk = fresh;
    b->tail_events = r->pool + (size_t)fresh * HL_TBUF_CHUNK_EVENTS;
    b->tail_fill_word = &r->desc[fresh].fill;
}

bool hl_tbuf_push_slow(hl_tbuf *b, uint64_t a, uint64_t w) {
    hl_tbufs *r = b->owner;
    uint32_t chunk = b->tail_chunk, fill = b->tail_fill;
    if (chunk == HL_TBUF_NONE || fill == HL_TBUF_CHUNK_EVENTS) {
        uint32_t fresh = pool_take(r, b);
        if (fresh == HL_TBUF_NONE)
            return false;
        tail_append(r, b, chunk, fresh);
        chunk = fresh;
        fill = 0;
    }
    hl_alloc_event *slot = &r->pool[(size_t)chunk * HL_TBUF_CHUNK_EVENTS + fill];
    slot->a = a;
    slot->b = w;
    b->tail_fill = fill + 1;
    atomic_store_explicit(&r->desc[chunk].fill, fill + 1, memory_order_release);
    return true;
}

bool hl_tbuf_push_n(hl_tbuf *b, const hl_alloc_event *ev, uint32_t n) {
    hl_tbufs *r = b->owner;
    uint32_t chunk = b->tail_chunk, fill = b->tail_fill;
    if (n == 0 || n > HL_TBUF_CHUNK_EVENTS)
        return false;
    if (chunk == HL_TBUF_NONE || fill + n > HL_TBUF_CHUNK_EVENTS) {
        uint32_t fresh = pool_take(r, b);
        if (fresh == HL_TBUF_NONE)
            return false;
        if (chunk != HL_TBUF_NONE && fill < HL_TBUF_CHUNK_EVENTS) {
            /* Close the old chunk: the consumer moves on only from a full one. */
            hl_alloc_event pad = {.b = HL_EV_WORD(HL_EV_PAD, 0)};
            for (uint32_t i = fill; i < HL_TBUF_CHUNK_EVENTS; i++)
                r->pool[(size_t)chunk * HL_TBUF_CHUNK_EVENTS + i] = pad;
            atomic_store_explicit(&r->desc[chunk].fill, HL_TBUF_CHUNK_EVENTS, memory_order_release);
        }
        tail_append(r, b, chunk, fresh);
        chunk = fresh;
        fill = 0;
    }
    memcpy(&r->pool[(size_t)chunk * HL_TBUF_CHUNK_EVENTS + fill], ev, n * sizeof *ev);
    b->tail_fill = fill + n;
    atomic_store_explicit(&r->desc[chunk].fill, fill + n, memory_order_release);
    return true;
}

bool hl_tbuf_ids_slow(hl_tbuf *b, atomic_uint_fast64_t *next_id, uint64_t epoch) {
    if (b->id_epoch != epoch || b->id_next >= b->id_block_end) {
        b->id_next = atomic_fetch_add_explicit(next_id, HL_ID_BLOCK, memory_order_relaxed);
        b->id_block_end = b->id_next + HL_ID_BLOCK;
        b->id_epoch = epoch;
        b->id_end = b->id_next; /* no allocation of it before its MARK is in */
    }
    /* Pushed again after a MARK that could not be: the id_next it names is still unused. */
    if (!hl_tbuf_push_slot(b, b->id_next, HL_EV_WORD(HL_EV_MARK, 0)))
        return false;
    b->id_end = b->id_block_end;
    return true;
}

bool hl_tbuf_push_alloc_wide(hl_tbuf *b, uint64_t addr, uint64_t class_id, uint64_t size) {
    hl_alloc_event ev[2] = {{.a = addr, .b = HL_EV_WORD(HL_EV_ALLOC_WIDE, class_id)},
                            {.a = size, .b = HL_EV_WORD(HL_EV_CONT, 0)}};
    return hl_tbuf_push_n(b, ev, 2);
}

bool hl_tbuf_push_handle(hl_tbuf *b, unsigned kind, uint64_t seq, uint64_t handle,
                         uint64_t target) {
    hl_alloc_event ev[2] = {{.a = seq, .b = HL_EV_WORD(kind, handle)},
                            {.a = target, .b = HL_EV_WORD(HL_EV_CONT, 0)}};
    if (hl_tbuf_push_n(b, ev, 2))
        return true;
    hl_tbuf_count(&b->handles_dropped);
    return false;
}

uint32_t hl_sample_encode(hl_alloc_event *out, uint64_t id, uint64_t address, uint64_t class_id,
                          unsigned heap, uint64_t size, uint64_t amount, uint32_t weight,
                          uint32_t n_frames, const uintptr_t *frames) {
    uint32_t kept = n_frames < HL_SAMPLE_MAX_FRAMES ? n_frames : HL_SAMPLE_MAX_FRAMES;
    if (!frames)
        kept = 0;
    out[0] = (hl_alloc_event){.a = id, .b = HL_EV_WORD(HL_EV_SAMPLE, (uint64_t)(heap & 3u) << 56 |
                                                                       (uint64_t)kept << 48 |
                                                                       (weight & 0xffffu))};
    out[1] = (hl_alloc_event){.a = address, .b = HL_EV_WORD(HL_EV_CONT, class_id)};
    out[2] = (hl_alloc_event){.a = size, .b = HL_EV_WORD(HL_EV_CONT, n_frames)};
    out[3] = (hl_alloc_event){.a = amount, .b = HL_EV_WORD(HL_EV_CONT, 0)};
    uint32_t n = 4;
    for (uint32_t i = 0; i < kept; i += 2, n++)
        out[n] = (hl_alloc_event){.a = frames[i],
                                  .b = HL_EV_WORD(HL_EV_CONT, i + 1 < kept ? frames[i + 1] : 0)};
    return n;
}

/* ---- consumer side -------------------------------------------------------------------------- */

/* The slot's spilled events below the limit, in runs of at most a chunk's slots. Returns false
 * when it stopped at the limit (the chunks hold only later events). */
static bool spill_drain(hl_tbufs *r, hl_tbuf *b, uint64_t limit, hl_alloc_events_fn fn, void *ctx,
                        uint64_t *n) {
    size_t pos = b->spill_pos, at = pos;
    while (at < b->spill_n) {
        size_t piece = b->spill_n - at < HL_TBUF_CHUNK_EVENTS ? b->spill_n - at
                                                               : HL_TBUF_CHUNK_EVENTS;
        /* Less than the piece: the limit, or an event the piece's end cut (the next run
         * starts with it); nothing: the limit. */
        size_t used = fn(ctx, &b->spill[at], piece, limit, &b->drain_id, b->os_tid);
        if (!used)
            break;
        at += used;
    }
    *n += at - pos;
    r->spilled -= at - pos;
    b->spill_pos = at;
    if (at < b->spill_n)
        return false;
    b->spill_pos = b->spill_n = 0;
    if (b->spill_cap > 4 * HL_TBUF_CHUNK_EVENTS) { /* a burst's memory goes back */
        hl_mem_free(b->spill);
        b->spill = NULL;
        b->spill_cap = 0;
    }
    return true;
}

static uint64_t slot_drain(hl_tbufs *r, hl_tbuf *b, uint64_t limit, hl_alloc_events_fn fn,
                           void *ctx) {
    int state = atomic_load_explicit(&b->state, memory_order_acquire);
    if (state == SLOT_FREE)
        return 0;
    uint64_t n = 0;
    if (b->spill_n && !spill_drain(r, b, limit, fn, ctx, &n))
        return n;
    uint32_t chunk = atomic_load_explicit(&b->head_chunk, memory_order_acquire);
    if (chunk == HL_TBUF_NONE) {
        if (state == SLOT_RETIRED) /* exited before its first event went through */
            atomic_store_explicit(&b->state, SLOT_FREE, memory_order_release);
        return n;
    }
    uint32_t pos = b->head_pos;
    for (;;) {
        uint32_t fill = atomic_load_explicit(&r->desc[chunk].fill, memory_order_acquire);
        const hl_alloc_event *ev = r->pool + (size_t)chunk * HL_TBUF_CHUNK_EVENTS;
        if (fill > pos) {
            size_t used = fn(ctx, &ev[pos], fill - pos, limit, &b->drain_id, b->os_tid);
            n += used;
            pos += (uint32_t)used;
        }
        if (pos < HL_TBUF_CHUNK_EVENTS)
            break; /* stopped at the limit, or caught up with the producer */
        uint32_t next = atomic_load_explicit(&r->desc[chunk].next, memory_order_acquire);
        if (next == HL_TBUF_NONE)
            break; /* full, but the producer has not moved on yet */
        atomic_store_explicit(&b->head_chunk, next, memory_order_relaxed);
        pool_push(r, chunk);
        chunk = next;
        pos = 0;
    }
    b->head_pos = pos;
    if (state == SLOT_RETIRED &&
        pos == atomic_load_explicit(&r->desc[chunk].fill, memory_order_relaxed) &&
        atomic_load_explicit(&r->desc[chunk].next, memory_order_relaxed) == HL_TBUF_NONE) {
        /* Its thread is gone and everything it pushed is consumed: give the chunk back and
         * free the slot. `dropped` and `allocations` are never reset, so the sums stay right
         * across reuse. */
        atomic_store_explicit(&b->head_chunk, HL_TBUF_NONE, memory_order_relaxed);
        b->head_pos = 0;
        b->drain_id = 0; /* the next thread's first allocation comes after a MARK */
        pool_push(r, chunk);
        atomic_store_explicit(&b->state, SLOT_FREE, memory_order_release);
    }
    return n;
}

uint64_t hl_tbufs_drain(hl_tbufs *r, uint64_t limit, hl_alloc_events_fn fn, void *ctx) {
    uint32_t in_use = atomic_load_explicit(&r->in_use, memory_order_relaxed);
    if (in_use > r->in_use_max)
        r->in_use_max = in_use;
    uint64_t n = 0;
    unsigned used = atomic_load_explicit(&r->slots_used, memory_order_acquire);
    for (unsigned i = 0; i < used; i++)
        n += slot_drain(r, &r->slots[i], limit, fn, ctx);
    return n;
}

/* Moves the unread rest of the slot's full, left chunks into its spill (see hl_tbufs_spill). */
static uint64_t slot_spill(hl_tbufs *r, hl_tbuf *b) {
    if (atomic_load_explicit(&b->state, memory_order_acquire) == SLOT_FREE)
        return 0;
    uint32_t chunk = atomic_load_explicit(&b->head_chunk, memory_order_acquire);
    uint64_t moved = 0;
    while (chunk != HL_TBUF_NONE &&
           atomic_load_explicit(&r->desc[chunk].fill, memory_order_acquire) ==
               HL_TBUF_CHUNK_EVENTS) {
        uint32_t next = atomic_load_explicit(&r->desc[chunk].next, memory_order_acquire);
        if (next == HL_TBUF_NONE)
            break; /* the thread still holds it */
        size_t n = HL_TBUF_CHUNK_EVENTS - b->head_pos;
        if (r->spilled + n > r->spill_limit)
            break;
        if (b->spill_pos == b->spill_n) {
            b->spill_pos = b->spill_n = 0;
        } else if (b->spill_pos) {
            memmove(b->spill, b->spill + b->spill_pos,
                    (b->spill_n - b->spill_pos) * sizeof *b->spill);
            b->spill_n -= b->spill_pos;
            b->spill_pos = 0;
        }
        if (b->spill_n + n > b->spill_cap) {
            size_t cap = b->spill_cap ? b->spill_cap * 2 : 4 * HL_TBUF_CHUNK_EVENTS;
            while (cap < b->spill_n + n)
                cap *= 2;
            hl_alloc_event *grown = hl_mem_realloc(b->spill, cap * sizeof *grown);
            if (!grown)
                break; /* the threads wait for the ordinary drain */
            b->spill = grown;
            b->spill_cap = cap;
        }
        memcpy(b->spill + b->spill_n, r->pool + (size_t)chunk * HL_TBUF_CHUNK_EVENTS + b->head_pos,
               n * sizeof *b->spill);
        b->spill_n += n;
        r->spilled += n;
        moved += n;
        atomic_store_explicit(&b->head_chunk, next, memory_order_relaxed);
        b->head_pos = 0;
        pool_push(r, chunk);
        chunk = next;
    }
    return moved;
}

uint64_t hl_tbufs_spill(hl_tbufs *r) {
    uint64_t n = 0;
    unsigned used = atomic_load_explicit(&r->slots_used, memory_order_acquire);
    for (unsigned i = 0; i < used; i++)
        n += slot_spill(r, &r->slots[i]);
    return n;
}

/* One producer counter summed over the slots in use (each slot's thread writes only its own). */
static uint64_t slots_sum(hl_tbufs *r, size_t counter) {
    uint64_t n = 0;
    unsigned used = atomic_load_explicit(&r->slots_used, memory_order_acquire);
    for (unsigned i = 0; i < used; i++)
        n += atomic_load_explicit((atomic_uint_fast64_t *)((char *)&r->slots[i] + counter),
                                  memory_order_relaxed);
    return n;
}

uint64_t hl_tbufs_waits(hl_tbufs *r) {
    return slots_sum(r, offsetof(hl_tbuf, waits));
}

uint64_t hl_tbufs_wait_ns(hl_tbufs *r) {
    return slots_sum(r, offsetof(hl_tbuf, wait_ns));
}

uint64_t hl_tbufs_allocations(hl_tbufs *r) {
    return atomic_load_explicit(&r->overflow_allocations, memory_order_relaxed) +
           slots_sum(r, offsetof(hl_tbuf, allocations));
}

uint64_t hl_tbufs_dropped(hl_tbufs *r) {
    return atomic_load_explicit(&r->overflow_allocations, memory_order_relaxed) +
           slots_sum(r, offsetof(hl_tbuf, dropped));
}

uint32_t hl_tbufs_chunks_in_use(hl_tbufs *r) {
    return atomic_load_explicit(&r->in_use, memory_order_relaxed);
}

uint32_t hl_tbufs_chunks_max(hl_tbufs *r) {
    uint32_t now = hl_tbufs_chunks_in_use(r);
    return now > r->in_use_max ? now : r->in_use_max;
}

uint64_t hl_tbufs_handles_dropped(hl_tbufs *r) {
    return slots_sum(r, offsetof(hl_tbuf, handles_dropped));
}
