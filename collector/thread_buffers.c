/* thread_buffers.c — see thread_buffers.h.
 *
 * Ring protocol (Lamport single-producer/single-consumer queue): `tail` is written only by the
 * producer (release), `head` only by the consumer (release); each side reads the other's index
 * with acquire. Indexes grow without wrapping (64-bit) and are reduced modulo the capacity.
 * Slot states: FREE -> ACTIVE (a thread claimed it, CAS) -> RETIRED (its thread exited) -> FREE
 * (the consumer emptied it). A retired ring is never pushed to again, so emptying it is final.
 */
#include "collector/thread_buffers.h"

#include <pthread.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

enum { SLOT_FREE = 0, SLOT_ACTIVE = 1, SLOT_RETIRED = 2 };

struct hl_tbuf {
    _Alignas(64) atomic_uint_fast64_t head; /* consumer */
    _Alignas(64) atomic_uint_fast64_t tail; /* producer */
    uint64_t head_seen;                     /* producer's cached copy of head */
    atomic_uint_fast64_t dropped;           /* written by the producer only */
    atomic_uint_fast64_t allocations;       /* written by the producer only */
    atomic_int state;
    uint32_t os_tid;
    _Alignas(64) hl_alloc_event events[HL_TBUF_EVENTS];
};

/* The calling thread's ring. The key only exists to hear about thread exit. */
static _Thread_local hl_tbuf *tls_ring;
static pthread_key_t exit_key;
static pthread_once_t exit_key_once = PTHREAD_ONCE_INIT;

static void ring_thread_exited(void *ring) {
    hl_tbuf *b = ring;
    tls_ring = NULL;
    atomic_store_explicit(&b->state, SLOT_RETIRED, memory_order_release);
}

static void exit_key_create(void) {
    (void)pthread_key_create(&exit_key, ring_thread_exited);
}

int hl_tbufs_init(hl_tbufs *r) {
    for (unsigned i = 0; i < HL_TBUF_SLOTS; i++)
        atomic_init(&r->slots[i], NULL);
    atomic_init(&r->overflowed, 0);
    return pthread_once(&exit_key_once, exit_key_create);
}

void hl_tbufs_release(hl_tbufs *r) {
    for (unsigned i = 0; i < HL_TBUF_SLOTS; i++) {
        hl_tbuf *b = atomic_exchange(&r->slots[i], NULL);
        if (b)
            munmap(b, sizeof *b);
    }
}

static bool ring_claim(hl_tbuf *b) {
    int expected = SLOT_FREE;
    return atomic_compare_exchange_strong_explicit(&b->state, &expected, SLOT_ACTIVE,
                                                   memory_order_acquire, memory_order_relaxed);
}

static hl_tbuf *ring_new(void) {
    /* mmap, not malloc: untouched pages of a quiet thread's ring cost nothing. */
    void *mem = mmap(NULL, sizeof(hl_tbuf), PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                     -1, 0);
    if (mem == MAP_FAILED)
        return NULL;
    hl_tbuf *b = mem; /* zeroed: head = tail = 0, state FREE */
    atomic_store_explicit(&b->state, SLOT_ACTIVE, memory_order_relaxed);
    return b;
}

hl_tbuf *hl_tbufs_current(hl_tbufs *r) {
    if (tls_ring)
        return tls_ring;
    hl_tbuf *b = NULL;
    for (unsigned i = 0; i < HL_TBUF_SLOTS && !b; i++) {
        hl_tbuf *s = atomic_load_explicit(&r->slots[i], memory_order_acquire);
        if (s) {
            if (ring_claim(s))
                b = s;
            continue;
        }
        hl_tbuf *fresh = ring_new();
        if (!fresh)
            break;
        hl_tbuf *expected = NULL;
        if (atomic_compare_exchange_strong(&r->slots[i], &expected, fresh))
            b = fresh;
        else
            munmap(fresh, sizeof *fresh); /* another thread took this slot first */
    }
    if (!b) {
        atomic_fetch_add_explicit(&r->overflowed, 1, memory_order_relaxed);
        return NULL;
    }
    b->os_tid = (uint32_t)syscall(SYS_gettid);
    b->head_seen = atomic_load_explicit(&b->head, memory_order_acquire);
    tls_ring = b;
    (void)pthread_setspecific(exit_key, b);
    return b;
}

bool hl_tbuf_push(hl_tbuf *b, const hl_alloc_event *ev) {
    uint64_t tail = atomic_load_explicit(&b->tail, memory_order_relaxed);
    if (tail - b->head_seen >= HL_TBUF_EVENTS) {
        b->head_seen = atomic_load_explicit(&b->head, memory_order_acquire);
        if (tail - b->head_seen >= HL_TBUF_EVENTS) {
            uint64_t d = atomic_load_explicit(&b->dropped, memory_order_relaxed);
            atomic_store_explicit(&b->dropped, d + 1, memory_order_relaxed);
            return false;
        }
    }
    b->events[tail % HL_TBUF_EVENTS] = *ev;
    atomic_store_explicit(&b->tail, tail + 1, memory_order_release);
    return true;
}

static uint64_t ring_drain(hl_tbuf *b, uint64_t limit, hl_alloc_event_fn fn, void *ctx) {
    uint64_t head = atomic_load_explicit(&b->head, memory_order_relaxed);
    uint64_t tail = atomic_load_explicit(&b->tail, memory_order_acquire);
    uint64_t n = 0;
    while (head != tail) {
        const hl_alloc_event *ev = &b->events[head % HL_TBUF_EVENTS];
        if (ev->id >= limit)
            break;
        fn(ctx, ev, b->os_tid);
        head++;
        n++;
        /* Hand space back in chunks so a busy producer sees progress early. */
        if ((n & 1023) == 0)
            atomic_store_explicit(&b->head, head, memory_order_release);
    }
    atomic_store_explicit(&b->head, head, memory_order_release);
    return n;
}

uint64_t hl_tbufs_drain(hl_tbufs *r, uint64_t limit, hl_alloc_event_fn fn, void *ctx) {
    uint64_t n = 0;
    for (unsigned i = 0; i < HL_TBUF_SLOTS; i++) {
        hl_tbuf *b = atomic_load_explicit(&r->slots[i], memory_order_acquire);
        if (!b)
            break; /* slots fill in order and are never emptied while running */
        int state = atomic_load_explicit(&b->state, memory_order_acquire);
        if (state == SLOT_FREE)
            continue;
        n += ring_drain(b, limit, fn, ctx);
        if (state == SLOT_RETIRED &&
            atomic_load_explicit(&b->head, memory_order_relaxed) ==
                atomic_load_explicit(&b->tail, memory_order_acquire)) {
            /* Its thread is gone and everything it pushed is consumed: recycle it. `dropped`
             * is never reset, so the sum in hl_tbufs_dropped stays right across reuse. */
            atomic_store_explicit(&b->state, SLOT_FREE, memory_order_release);
        }
    }
    return n;
}

void hl_tbuf_count_allocation(hl_tbuf *b) {
    uint64_t n = atomic_load_explicit(&b->allocations, memory_order_relaxed);
    atomic_store_explicit(&b->allocations, n + 1, memory_order_relaxed);
}

uint64_t hl_tbufs_allocations(hl_tbufs *r) {
    uint64_t n = 0;
    for (unsigned i = 0; i < HL_TBUF_SLOTS; i++) {
        hl_tbuf *b = atomic_load_explicit(&r->slots[i], memory_order_acquire);
        if (!b)
            break;
        n += atomic_load_explicit(&b->allocations, memory_order_relaxed);
    }
    return n;
}

uint64_t hl_tbufs_dropped(hl_tbufs *r) {
    uint64_t n = 0;
    for (unsigned i = 0; i < HL_TBUF_SLOTS; i++) {
        hl_tbuf *b = atomic_load_explicit(&r->slots[i], memory_order_acquire);
        if (!b)
            break;
        n += atomic_load_explicit(&b->dropped, memory_order_relaxed);
    }
    return n;
}
