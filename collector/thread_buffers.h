/* thread_buffers.h — allocation events between ObjectAllocated and the collector thread, in
 * slots of 16 bytes (an allocation is one slot: its id is implied, below), in fixed-size chunks
 * from one shared pool.
 *
 * Memory is bounded by the pool, whatever the number of threads: the pool is mapped once at
 * start (HEAPLENS_POOL_MB, default 128 MiB, of address space; pages become resident as chunks are
 * first used, and freed chunks are reused last-in first-out so the resident part is the high-water
 * mark of chunks in flight). Each managed thread that allocates claims a slot (a few cache lines);
 * the slot holds a list of chunks in push order: the thread appends to the last one (single
 * producer), the collector thread reads from the first one (single consumer), even while it is
 * partly filled, and gives each chunk back to the pool once it has read all of it and the thread
 * has moved on. A push is a few stores; once per chunk (4096 slots) it takes a chunk from the
 * pool's lock-free free stack. It never allocates and makes no system call (only a thread's
 * first event does: gettid and the exit hook) while the pool has a free chunk. An empty pool makes
 * the pushing thread wait (a futex) until the consumer frees a chunk: nothing is lost while the
 * consumer makes progress. The wait is counted (waits, nanoseconds) per slot. A push drops its
 * event (counted) only when the consumer is gone (hl_tbufs_close) or freed no chunk for
 * `stall_ns` (10 s); after such a drop, pushes drop at once until a chunk is freed again. The
 * consumer keeps chunks free while it cannot consume (a GC boundary, a slow writer) by moving
 * the events of full chunks into its own memory (hl_tbufs_spill). A thread that exits retires its
 * slot; the collector drains it and frees it for the next thread.
 */
#ifndef HEAPLENS_THREAD_BUFFERS_H
#define HEAPLENS_THREAD_BUFFERS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define HL_TBUF_SLOTS 512           /* threads allocating at the same time */
#define HL_TBUF_CHUNK_EVENTS 4096u  /* slots per chunk: 4096 x 16 bytes = 64 KiB */
#define HL_TBUF_POOL_DEFAULT_MB 128 /* 2048 chunks, about 8M allocations in flight */

/* Events from runtime threads, in slots of 16 bytes. Allocations, handle events and samples share
 * the chunks so that the collector sees them in the order they happened, and their ids come from
 * one counter (collector.h `next_id`) so that a GC's first id after it splits them.
 *
 * An allocation is one slot and carries no id: a thread takes its allocation ids in blocks
 * (HL_ID_BLOCK, hl_tbuf_push_alloc), and pushes a MARK with the block's first id before the
 * block's first allocation; each allocation after it has the next id. So the program's threads
 * write, and the collector reads, 16 bytes per allocation instead of 32 (an id, an address, a
 * class id and a size at 8 bytes each): half the cache lines carried from the allocating core to
 * the collector's, and half the pool's pages. The address and the size share a word: addresses
 * of user space lie below 2^48 (x86-64 and arm64 with their default 48-bit address space), sizes
 * of small objects below 64 KiB; an allocation outside both takes the two slots of ALLOC_WIDE.
 *
 * The kind is the top 4 bits of `b` in every slot; a slot that continues an event (its second
 * slot and later) has kind CONT. Multi-slot events are pushed whole into one chunk and
 * published at once (hl_tbuf_push_n), so a consumer always sees whole events, and only the first
 * slot of an event (a MARK, a handle event or a sample's head) carries an id: the drain's limit
 * is compared with those alone (hl_ev_next). User-space pointers (class ids,
 * handles, instruction pointers) fit in 60 bits (below 2^57 even with 5-level paging). */
typedef struct hl_alloc_event {
    uint64_t a;
    uint64_t b; /* kind in the top four bits */
} hl_alloc_event;

enum {
    /* {address | size << 48, class id}: the next id of the thread's block; an address below
     * 2^48, a size below 2^16 (the class id, a pointer, leaves the kind's bits 0) */
    HL_EV_ALLOC = 0,
    /* {first id of a block, -}: the thread's next allocations have ids from there on */
    HL_EV_MARK = 1,
    /* {address, class id} {size, -}: an allocation whose address or size does not fit ALLOC */
    HL_EV_ALLOC_WIDE = 2,
    /* {sequence id, handle} {target object (CREATED), -}: ids from the shared counter, so that
     * they are applied in order with the GCs (profiler.c handle_event) */
    HL_EV_HANDLE_CREATED = 3,
    HL_EV_HANDLE_DESTROYED = 4,
    /* an allocation sample: HL_SAMPLE_SLOTS slots, below */
    HL_EV_SAMPLE = 5,
    /* fills the end of a chunk a multi-slot event did not fit in (hl_tbuf_push_n) */
    HL_EV_PAD = 6,
    /* the second and later slots of an event */
    HL_EV_CONT = 7,
};
#define HL_EV_KIND(ev) ((unsigned)((ev)->b >> 60))
#define HL_EV_LOW60 ((1ull << 60) - 1)
#define HL_EV_WORD(kind, low) ((uint64_t)(kind) << 60 | ((uint64_t)(low) & HL_EV_LOW60))
#define HL_EV_LOW48 ((1ull << 48) - 1)

/* An allocation decoded (ALLOC or ALLOC_WIDE at `ev`), without its id (the consumer counts). */
typedef struct hl_ev_alloc {
    uint64_t addr, class_id, size;
} hl_ev_alloc;
static inline hl_ev_alloc hl_ev_alloc_decode(const hl_alloc_event *ev) {
    if (HL_EV_KIND(ev) == HL_EV_ALLOC)
        return (hl_ev_alloc){.addr = ev->a & HL_EV_LOW48, .class_id = ev->b, .size = ev->a >> 48};
    return (hl_ev_alloc){.addr = ev->a, .class_id = ev->b & HL_EV_LOW60, .size = ev[1].a};
}

/* An allocation sample (EventPipe AllocationSampled / AllocationTick, or full mode's own) is
 * 4 + ceil(frames / 2) slots, pushed at once (hl_tbuf_push_n):
 *   HEAD    {id, SAMPLE | heap << 56 | frames kept << 48 | weight}
 *   CONT    {address, class id}
 *   CONT    {size, frames the runtime reported}
 *   CONT    {amount, -}
 *   CONT    {ip, ip} x ceil(frames kept / 2), innermost first
 * `amount` is AllocationTick's AllocationAmount64, or AllocationSampled's SampledByteOffset; the
 * weight is the sample budget's factor K (eventpipe.h): the sample was kept with probability 1/K
 * and stands for K samples (0 or 1: itself). The id comes from the shared counter. */
#define HL_SAMPLE_MAX_FRAMES 96u /* frames kept per sample (innermost); the rest are counted */
#define HL_SAMPLE_MAX_EVENTS (4u + (HL_SAMPLE_MAX_FRAMES + 1) / 2u)
#define HL_SAMPLE_HEAD_HEAP(ev) ((unsigned)((ev)->b >> 56) & 3u)
#define HL_SAMPLE_HEAD_FRAMES(ev) ((unsigned)((ev)->b >> 48) & 255u)
#define HL_SAMPLE_HEAD_WEIGHT(ev) ((uint32_t)((ev)->b & 0xffffu))
#define HL_SAMPLE_SLOTS(ev) (4u + (HL_SAMPLE_HEAD_FRAMES(ev) + 1u) / 2u)

/* Encodes one sample into `out` (room for HL_SAMPLE_MAX_EVENTS); returns the slots used.
 * `heap` is the runtime's AllocationKind (0 small, 1 large, 2 pinned). Frames beyond
 * HL_SAMPLE_MAX_FRAMES are cut (innermost kept); `n_frames` is stored as reported. */
uint32_t hl_sample_encode(hl_alloc_event *out, uint64_t id, uint64_t address, uint64_t class_id,
                          unsigned heap, uint64_t size, uint64_t amount, uint32_t weight,
                          uint32_t n_frames, const uintptr_t *frames);

/* The slots of the event that starts at `ev` (1 for a slot that starts none: PAD, CONT). */
static inline uint32_t hl_ev_slots(const hl_alloc_event *ev) {
    switch (HL_EV_KIND(ev)) {
    case HL_EV_ALLOC_WIDE:
    case HL_EV_HANDLE_CREATED:
    case HL_EV_HANDLE_DESTROYED:
        return 2;
    case HL_EV_SAMPLE:
        return HL_SAMPLE_SLOTS(ev);
    default:
        return 1;
    }
}

typedef struct hl_tbufs hl_tbufs;

/* The collector's own allocation sampler, per thread (eventpipe.c): kept in the thread's slot,
 * which ObjectAllocated holds anyway, so that an allocation costs one thread-local lookup. */
typedef struct hl_sampler_state {
    uint64_t rng;  /* xorshift64* state, 0 until the thread's first allocation */
    uint64_t left; /* bytes until the next sampling point (>= 1) */
} hl_sampler_state;

/* Method tables whose objects' size a thread computes itself (profiler.c), direct-mapped. */
#define HL_TBUF_SIZED 32

/* One thread's slot. Fields are grouped by the side that writes them, one cache line each, so
 * the producer and the consumer do not bounce a line on every event. */
typedef struct hl_tbuf {
    /* producer (the slot's thread) */
    _Alignas(64) hl_tbufs *owner;
    /* The chunk being filled: its slots and its `fill` word (tail_chunk's, kept as pointers so
     * that a push loads nothing but the slot), HL_TBUF_NONE / NULL before the first event. */
    hl_alloc_event *tail_events;
    atomic_uint *tail_fill_word;
    uint32_t tail_chunk;
    uint32_t tail_fill;           /* slots used in it (the producer's own copy of its `fill`) */
    uint32_t os_tid;
    /* events dropped: no chunk, and the wait gave up or the consumer is gone (producer only) */
    atomic_uint_fast64_t dropped;         /* allocation events */
    atomic_uint_fast64_t handles_dropped; /* handle events */
    atomic_uint_fast64_t allocations; /* allocations seen on this slot (producer writes only) */
    atomic_uint_fast64_t waits;   /* pushes that waited for a free chunk (producer only) */
    atomic_uint_fast64_t wait_ns; /* ... and the time they waited */
    /* The thread's block of allocation ids (hl_tbuf_push_alloc): the next id, and the end of
     * the ids it may use without a MARK first (id_block_end, or id_next while the block's MARK
     * is still to be pushed); the GC epoch the block was taken in. */
    uint64_t id_next, id_end, id_block_end;
    uint64_t id_epoch;
    hl_sampler_state sampler;     /* full mode's own sampler (eventpipe.c) */
    /* Method tables checked against GetObjectSize2 by this slot's threads (profiler.c
     * object_size): their objects' size is read from the table, no runtime call. */
    uint64_t sized[HL_TBUF_SIZED];
    /* shared: the first chunk of the list. Written by the producer only while it is
     * HL_TBUF_NONE (its first chunk), by the consumer otherwise (it advances or frees it). */
    _Alignas(64) atomic_uint head_chunk;
    atomic_int state;             /* FREE -> ACTIVE (claimed) -> RETIRED (thread exited) -> FREE */
    /* consumer (the collector thread) */
    _Alignas(64) uint32_t head_pos; /* slots of head_chunk already consumed */
    uint64_t drain_id;              /* the id of the next allocation the consumer reads */
    /* Events moved out of full chunks by hl_tbufs_spill, consumed before head_chunk: they were
     * pushed before every event still in the chunks. spill[spill_pos..spill_n) are unread. */
    hl_alloc_event *spill;
    size_t spill_pos, spill_n, spill_cap;
} hl_tbuf;

#define HL_TBUF_NONE UINT32_MAX

/* Per chunk, beside the pool (the chunk itself holds only events). */
typedef struct hl_chunk_desc {
    atomic_uint fill;      /* events published in the chunk (producer, release) */
    atomic_uint next;      /* the thread's next chunk, HL_TBUF_NONE until it moves on */
    atomic_uint next_free; /* link in the pool's free stack */
    uint32_t reserved;
} hl_chunk_desc;

struct hl_tbufs {
    hl_tbuf slots[HL_TBUF_SLOTS];
    atomic_uint slots_used;            /* slots ever claimed: the drain looks no further */
    atomic_uint_fast64_t overflowed;   /* threads that found every slot taken */
    atomic_uint_fast64_t overflow_allocations; /* their allocations: seen and dropped */
    /* The pool: n_chunks chunks of HL_TBUF_CHUNK_EVENTS events. */
    uint32_t epoch;                    /* hl_tbufs_init of this session (thread_buffers.c) */
    hl_alloc_event *pool;
    hl_chunk_desc *desc;
    uint32_t n_chunks;
    size_t pool_bytes;
    /* Free stack: the low 32 bits are the top chunk + 1 (0 = empty), the high 32 bits a tag
     * bumped by every change, so a pop that read a stale `next_free` fails its CAS (ABA). */
    _Alignas(64) atomic_uint_fast64_t free_top;
    atomic_uint in_use;                /* chunks out of the pool */
    uint32_t in_use_max;               /* high-water mark, updated by the consumer */
    /* Waiting for a chunk. `freed` is the futex word: bumped (and waiters woken) when a chunk
     * goes back while someone waits or after a wait gave up. */
    _Alignas(64) atomic_uint waiters;  /* threads waiting for a chunk now */
    atomic_uint freed;
    atomic_uint stalled;               /* `freed` + 1 when a wait gave up: drop until it moves */
    atomic_bool closed;                /* the consumer is gone: never wait */
    atomic_bool consumer_known;        /* consumer_clock is the consumer thread's CPU clock */
    clockid_t consumer_clock;
    uint64_t stall_ns;                 /* give up after this long without a chunk (10 s) */
    /* consumer: events held in the slots' spill arrays, and the most it may hold */
    size_t spilled, spill_limit;
};

/* Sets up the slots and maps the pool (`pool_bytes` rounded down to whole chunks, at least 64
 * chunks). Call once, before any thread pushes. Returns 0, or -1 when the pool cannot be mapped
 * or the exit hook not be created. */
int hl_tbufs_init(hl_tbufs *r, size_t pool_bytes);
/* Unmaps the pool. Only when no thread can push any more (tests; the process keeps it). */
void hl_tbufs_release(hl_tbufs *r);

/* The calling thread's slot and the session (`epoch`) it belongs to. Initial-exec TLS: a read
 * is one %fs-relative load. The default model for a shared library calls __tls_get_addr on every
 * access (2-3% of the allocating threads' CPU in ObjectAllocated); a library that dlopen loads
 * gets initial-exec variables from the static TLS surplus glibc keeps for that (these are 16
 * bytes of it). Only thread_buffers.c writes it. */
typedef struct hl_tbuf_tls {
    hl_tbuf *slot;
    uint32_t epoch;  /* the session `slot` belongs to (a slot of an older one is never used) */
    uint32_t missed; /* calls since this thread found no free slot */
} hl_tbuf_tls;
extern _Thread_local hl_tbuf_tls hl_tbuf_tls_self __attribute__((tls_model("initial-exec")));

/* The calling thread's slot, claimed on first use; NULL when every slot is taken (counted in
 * `overflowed`; count its allocations with hl_tbufs_count_overflow_allocation). Inline: it runs
 * for every allocation; hl_tbufs_claim is the rest (a new thread, session or slot). */
hl_tbuf *hl_tbufs_claim(hl_tbufs *r);
static inline hl_tbuf *hl_tbufs_current(hl_tbufs *r) {
    hl_tbuf_tls *t = &hl_tbuf_tls_self;
    if (__builtin_expect(t->slot != NULL && t->epoch == r->epoch, 1))
        return t->slot;
    return hl_tbufs_claim(r);
}
/* An allocation on a thread without a slot: counted as seen and as dropped. */
void hl_tbufs_count_overflow_allocation(hl_tbufs *r);

/* Producer side, called by the slot's own thread. Waits while the pool has no chunk left (see
 * above); returns false when the wait gives up or the consumer is gone (nothing is pushed; the
 * callers below count what they lost). One slot: inline, two stores and a release once the
 * thread has a chunk with room; the rest is hl_tbuf_push_slow (a new chunk: once per
 * HL_TBUF_CHUNK_EVENTS slots). The words go straight into the chunk: an event built on the
 * stack and copied is written as 8-byte stores and read back as a 16-byte load, which the CPU
 * cannot forward from its store buffer (that stall was half of ObjectAllocated's own samples,
 * perf annotate on MidLife). */
bool hl_tbuf_push_slow(hl_tbuf *b, uint64_t a, uint64_t w);
static inline bool hl_tbuf_push_slot(hl_tbuf *b, uint64_t a, uint64_t w) {
    uint32_t fill = b->tail_fill;
    if (__builtin_expect(b->tail_events == NULL || fill == HL_TBUF_CHUNK_EVENTS, 0))
        return hl_tbuf_push_slow(b, a, w);
    hl_alloc_event *slot = &b->tail_events[fill];
    slot->a = a;
    slot->b = w;
    b->tail_fill = fill + 1;
    atomic_store_explicit(b->tail_fill_word, fill + 1, memory_order_release);
    return true;
}
/* Pushes the `n` slots of one or more whole events (at most HL_TBUF_CHUNK_EVENTS) into one
 * chunk, published together: the consumer sees all of them or none. A chunk without room for
 * them is closed with PAD slots. Waits like a push; returns false when it gives up (nothing is
 * pushed or counted: the caller counts what it lost). */
bool hl_tbuf_push_n(hl_tbuf *b, const hl_alloc_event *ev, uint32_t n);

/* An allocation (ObjectAllocated): its id is the next of the thread's block. Ids come in blocks
 * of HL_ID_BLOCK from the shared counter `next_id`: one atomic add per block instead of one per
 * allocation (a shared counter's cache line bouncing between the allocating threads was 86% of
 * ObjectAllocated's time on 4 threads), and a block's first allocation is preceded by a MARK
 * with the block's first id, from which the consumer counts. A block serves only the GC epoch it
 * was taken in: `epoch` changes at every GarbageCollectionStarted, while no thread is inside
 * ObjectAllocated, so every id a thread uses after a GC starts comes from a block taken after
 * it, >= that GC's first_id_after, and the rest of a block taken before is never used. Ids stay
 * unique and ascending per thread, not across threads: the unused rest of each block is a hole
 * (young.c counts holes as nothing). An allocation that cannot be pushed uses no id (the next
 * one takes it: nothing entered the chunk), and one whose MARK cannot be pushed is not pushed
 * either; both count as dropped. Inline; hl_tbuf_ids_slow takes a block and pushes its MARK
 * (once per HL_ID_BLOCK allocations). */
#define HL_ID_BLOCK 256
bool hl_tbuf_ids_slow(hl_tbuf *b, atomic_uint_fast64_t *next_id, uint64_t epoch);
bool hl_tbuf_push_alloc_wide(hl_tbuf *b, uint64_t addr, uint64_t class_id, uint64_t size);
static inline void hl_tbuf_count(atomic_uint_fast64_t *counter) {
    uint64_t n = atomic_load_explicit(counter, memory_order_relaxed);
    atomic_store_explicit(counter, n + 1, memory_order_relaxed); /* producer only */
}
static inline bool hl_tbuf_push_alloc(hl_tbuf *b, atomic_uint_fast64_t *next_id,
                                      const atomic_uint_fast64_t *epoch, uint64_t addr,
                                      uint64_t class_id, uint64_t size) {
    uint64_t e = atomic_load_explicit(epoch, memory_order_acquire);
    bool ok;
    if (__builtin_expect(b->id_next == b->id_end || b->id_epoch != e, 0) &&
        !hl_tbuf_ids_slow(b, next_id, e))
        ok = false;
    else if (__builtin_expect(((addr >> 48) | (size >> 16)) == 0, 1))
        ok = hl_tbuf_push_slot(b, addr | size << 48, class_id);
    else
        ok = hl_tbuf_push_alloc_wide(b, addr, class_id, size);
    if (__builtin_expect(ok, 1))
        b->id_next++;
    else
        hl_tbuf_count(&b->dropped);
    return ok;
}
/* A handle event (HL_EV_HANDLE_CREATED or _DESTROYED) with its sequence id from the shared
 * counter; a drop is counted in handles_dropped. */
bool hl_tbuf_push_handle(hl_tbuf *b, unsigned kind, uint64_t seq, uint64_t handle,
                         uint64_t target);
/* Counts one allocation on the calling thread's slot (producer side). */
static inline void hl_tbuf_count_allocation(hl_tbuf *b) {
    hl_tbuf_count(&b->allocations);
}

/* Consumer side (collector thread only). Hands each slot's events (slots one after another; a
 * slot's spilled events first), in push order, to fn as runs (ev[0..n) slots, n >= 1, never
 * more than a chunk's): one indirect call per run, not per event, since the collector takes
 * tens of millions of events per second. fn consumes the run's events from its start while
 * their ids lie below `limit`, and returns the slots it consumed; the rest is handed again by a
 * later drain. It walks them with hl_ev_next, which keeps the rules: `*id` is the id of the next
 * allocation (ALLOC, ALLOC_WIDE), counted on from there and from each MARK's id, and left at the
 * next one's; the walk stops before the first MARK, handle event or sample whose id is at or
 * above the limit, and before an event cut by the run's end (the spill's runs are cut where a
 * chunk's worth ends). One pass: the limit is compared with those events alone, because a
 * block's allocations lie below a limit exactly when its MARK does — the limit is the id
 * counter read before the drain or a GC's first id after it, and a block serves one GC epoch.
 * So the limits of successive drains must never decrease. Returns the slots consumed. Chunks
 * read to the end go back to the pool; slots whose thread exited are freed for reuse once
 * empty. */
typedef size_t (*hl_alloc_events_fn)(void *ctx, const hl_alloc_event *ev, size_t n,
                                     uint64_t limit, uint64_t *id, uint32_t os_tid);
/* A walk over one run's events (hl_alloc_events_fn): {ev, n, 0, limit, *id}. */
typedef struct hl_ev_iter {
    const hl_alloc_event *ev;
    size_t n, at;   /* slots in the run; the slots consumed */
    uint64_t limit;
    uint64_t id;    /* the next allocation's id: an allocation just returned has id - 1 */
} hl_ev_iter;
/* The next event to consume (its first slot: ALLOC, ALLOC_WIDE, a handle event or a sample;
 * MARKs and PADs are taken in passing), or NULL at the run's end or the limit. Inline: the
 * fast path, an ALLOC, is a kind check and two increments. */
static inline const hl_alloc_event *hl_ev_next(hl_ev_iter *it) {
    while (it->at < it->n) {
        const hl_alloc_event *e = &it->ev[it->at];
        unsigned kind = HL_EV_KIND(e);
        if (__builtin_expect(kind == HL_EV_ALLOC, 1)) {
            it->at++;
            it->id++;
            return e;
        }
        if ((kind == HL_EV_MARK || kind == HL_EV_HANDLE_CREATED ||
             kind == HL_EV_HANDLE_DESTROYED || kind == HL_EV_SAMPLE) &&
            e->a >= it->limit)
            return NULL;
        uint32_t slots = hl_ev_slots(e);
        if (slots > it->n - it->at)
            return NULL;
        it->at += slots;
        if (kind == HL_EV_MARK) {
            it->id = e->a;
            continue;
        }
        if (kind == HL_EV_PAD || kind == HL_EV_CONT)
            continue;
        if (kind == HL_EV_ALLOC_WIDE)
            it->id++;
        return e;
    }
    return NULL;
}
uint64_t hl_tbufs_drain(hl_tbufs *r, uint64_t limit, hl_alloc_events_fn fn, void *ctx);

/* Consumer side: threads waiting for a chunk now (a hint: the consumer should spill). */
static inline unsigned hl_tbufs_waiters(hl_tbufs *r) {
    return atomic_load_explicit(&r->waiters, memory_order_relaxed);
}
/* Consumer side: moves the unread slots of every full chunk a thread has moved on from into
 * the slot's spill (malloc'd; at most `spill_limit` slots in all) and gives those chunks back,
 * so waiting threads go on while the consumer cannot consume (no limit applies: the spill keeps
 * push order, the next drains apply their limit to it). Returns the slots moved. */
uint64_t hl_tbufs_spill(hl_tbufs *r);
/* Called on the consumer's thread: its CPU time tells waiting threads that it works (a long
 * model update frees no chunk, but is progress). */
void hl_tbufs_set_consumer(hl_tbufs *r);
/* The consumer is gone (its last drain is done): waiting threads stop waiting, later pushes
 * that find no chunk drop at once. */
void hl_tbufs_close(hl_tbufs *r);
/* Pushes that waited for a chunk, and the nanoseconds they waited (all slots; approximate
 * while running). */
uint64_t hl_tbufs_waits(hl_tbufs *r);
uint64_t hl_tbufs_wait_ns(hl_tbufs *r);

/* Allocation events dropped because the pool was empty, plus allocations of threads without a
 * slot (consumer side; approximate while running). */
uint64_t hl_tbufs_dropped(hl_tbufs *r);
/* Handle events dropped because the pool was empty. */
uint64_t hl_tbufs_handles_dropped(hl_tbufs *r);
/* Allocations seen: pushed, dropped, or on threads without a slot. */
uint64_t hl_tbufs_allocations(hl_tbufs *r);
/* Chunks out of the pool now, and the most ever seen by the consumer (for the README figures
 * and tests). */
uint32_t hl_tbufs_chunks_in_use(hl_tbufs *r);
uint32_t hl_tbufs_chunks_max(hl_tbufs *r);

#endif /* HEAPLENS_THREAD_BUFFERS_H */
