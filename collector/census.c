/* census.c — see census.h. Runs inside GC callbacks on a GC thread (runtime suspended), and on
 * helper threads of its own that this thread wakes and waits for (a futex each): no lock, no
 * I/O; hl_mem_* allocation as gc_capture.c explains. */
#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include "collector/census.h"
#include "collector/collector.h"
#include "collector/mem.h"

#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* The EE/GC object layout (the GC's own stepping): not a profiler ABI, so every method table is
 * checked once against GetObjectSize2 before its objects are counted. */
#define MT_HAS_COMPONENT_SIZE 0x80000000u
#define OBJECT_ALIGN 8u
#define MIN_OBJECT 24u
/* A walk of less than PACK_LIMIT bytes of gen0 counts an object and its bytes with one add to
 * one word, count << PACK_SHIFT | bytes: no type there has 2^24 objects (of 24 bytes or more)
 * nor 2^40 bytes. A larger one (server GC's can be) adds to two words. One add instead of two
 * took AllocBench's census p50 from 534-548 to 511-532 us (3 runs each). */
#define PACK_SHIFT 40
#define PACK_ONE ((uint64_t)1 << PACK_SHIFT)
#define PACK_LIMIT (((uint64_t)1 << (64 - PACK_SHIFT)) * MIN_OBJECT)

uint64_t hl_census_object_size(const void *object) {
    const uint8_t *mt = (const uint8_t *)(*(const uintptr_t *)object & ~(uintptr_t)7);
    uint32_t flags, base;
    memcpy(&flags, mt, sizeof flags);
    memcpy(&base, mt + 4, sizeof base);
    uint64_t size = base;
    if (flags & MT_HAS_COMPONENT_SIZE) {
        uint32_t length;
        memcpy(&length, (const uint8_t *)object + 8, sizeof length);
        size += (uint64_t)length * (flags & 0xffffu);
    }
    return size;
}

/* Threads that walk, this one included: the CPUs this process may run on (at most
 * CENSUS_THREADS_MAX), or HEAPLENS_CENSUS_THREADS (1 to 64). During the pause the program's
 * threads are stopped and the collector thread keeps off the CPUs by itself
 * (collector_thread.c: from its next pass on it idles while a GC is in progress), so the CPUs
 * are the walk's but for the writer (another process) and other programs: a helper preempts
 * them for the walk, and where it does not get its CPU in time the walk goes on without it
 * (helpers_join) or, lately slower with it, alone (walk_count). Before the helpers were kept
 * off the GC thread's CPU (helpers_place), one CPU was left to heaplens: on this 2-core
 * machine a helper then made AllocBench's census slower (p50 1,081-1,183 us against 956-1,012
 * alone). */
#define CENSUS_THREADS_MAX 8
static unsigned census_threads(const cpu_set_t *cpus) {
    const char *env = getenv("HEAPLENS_CENSUS_THREADS");
    if (env && *env) {
        char *end;
        unsigned long n = strtoul(env, &end, 10);
        if (!*end && n >= 1 && n <= 64)
            return (unsigned)n;
    }
    long n = CPU_COUNT(cpus);
    return n < 1 ? 1 : n > CENSUS_THREADS_MAX ? CENSUS_THREADS_MAX : (unsigned)n;
}

/* Gen0 ranges walked at once by one thread: each object's address waits for the previous
 * object's size (two dependent loads), which leaves the core mostly idle; walking
 * CENSUS_LANES pieces (ranges, or parts of them) in one loop overlaps their waits
 * (bench_census: 3.7 -> 2.5 ns per object). */
#define CENSUS_LANES 4
/* How far ahead each lane prefetches (lane_step). */
#define CENSUS_PREFETCH 2048
/* Pieces per lane when cutting: lanes that end at different times leave the last ones to
 * finish alone, and threads take pieces until none is left, so smaller pieces share the work
 * more evenly; but on AllocBench's real gen0 (four 4 MiB regions) one thread walked cut
 * regions 10% slower than whole ones (bench_census, in the caches, says the opposite), so a
 * thread alone cuts only a heap of fewer ranges than lanes (segments). */
#define PIECES_PER_LANE 2
/* No piece is cut shorter than this, and a thread joins the walk per CENSUS_LANES such
 * pieces of gen0: waking one costs some microseconds, 256 KiB of objects take ~15 us. */
#define CENSUS_PIECE_MIN ((uint64_t)256 << 10)
/* Walks between two tries of the kind (alone, with helpers) that paused more lately. */
#define CENSUS_RETRY 8

void hl_census_init(hl_census *s, bool on) {
    memset(s, 0, sizeof *s);
    s->on = on;
    hl_u64map_init(&s->checked);
    /* Recording from the start: the first GC's gen0 is all new. After an attach it is not (the
     * first walk then only learns; hl_census_start_unknown). */
    s->old_valid = true;
    if (sched_getaffinity(0, sizeof s->cpus, &s->cpus) != 0) {
        CPU_ZERO(&s->cpus);
        for (long c = 0, n = sysconf(_SC_NPROCESSORS_ONLN); c < n && c < CPU_SETSIZE; c++)
            CPU_SET(c, &s->cpus);
    }
    s->helpers_cpu = -2; /* never placed (sched_getcpu may say -1) */
    s->threads = on ? census_threads(&s->cpus) : 1;
    s->piece_min = CENSUS_PIECE_MIN;
    s->pack_limit = PACK_LIMIT;
    const char *floor_env = getenv("HEAPLENS_CENSUS_FLOOR");
    s->floor = on && floor_env && strcmp(floor_env, "1") == 0;
}

/* A helper thread's life: IDLE (asleep on the futex `state`) -> WAKE (the GC thread has
 * pieces for it) -> RUN (it took the wake) -> DONE (its counts are in `tab`) -> IDLE (the GC
 * thread added them). The GC thread cancels a wake the helper has not taken by the time every
 * piece is walked (WAKE -> IDLE): on a loaded machine it never waits for a thread that has not
 * been scheduled. QUIT: release. */
enum { HELPER_IDLE, HELPER_WAKE, HELPER_RUN, HELPER_DONE, HELPER_QUIT };

struct hl_census_helper {
    hl_census *census;
    pthread_t thread;
    _Atomic uint32_t state; /* the futex word */
    hl_census_table tab;
    bool started;
};

static void types_release(hl_census_table *t);

static void futex_wait(_Atomic uint32_t *word, uint32_t seen) {
    syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, seen, NULL, NULL, 0);
}
static void futex_wake(_Atomic uint32_t *word) {
    syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

static void helpers_stop(hl_census *s) {
    for (unsigned i = 0; i < s->n_helpers; i++) {
        hl_census_helper *h = &s->helpers[i];
        if (!h->started)
            continue;
        atomic_store(&h->state, HELPER_QUIT);
        futex_wake(&h->state);
        pthread_join(h->thread, NULL);
        types_release(&h->tab);
    }
    hl_mem_free(s->helpers);
    s->helpers = NULL;
    s->n_helpers = 0;
}

void hl_census_release(hl_census *s) {
    helpers_stop(s);
    hl_u64map_release(&s->checked);
    types_release(&s->tab);
    hl_mem_free(s->old);
    hl_mem_free(s->pieces);
    for (size_t i = 0; i < s->cap_piece_spans; i++)
        hl_mem_free(s->piece_spans[i].v);
    hl_mem_free(s->piece_spans);
    memset(s, 0, sizeof *s);
}

enum { MT_ERROR = -1, MT_FREE = 0, MT_OBJECT = 1 };

/* Whether `mt` (the method table of the object at `at`) is the free objects' one; on first
 * sight of a method table, the runtime tells (ClassID 0 for a free object) and the size computed
 * from the layout is compared with the runtime's. */
static int mt_classify(hl_census *s, ICorProfilerInfo *info, uint64_t at, uint64_t mt) {
    if (mt == s->free_mt)
        return MT_FREE;
    if (hl_u64map_get(&s->checked, mt))
        return MT_OBJECT;
    ClassID cls = 0;
    if (HR_FAILED(info_get_class_from_object(info, at, &cls)))
        return MT_ERROR;
    if (cls == 0) {
        if (s->free_mt && s->free_mt != mt)
            return MT_ERROR; /* two "free" method tables: not what this code knows */
        s->free_mt = mt;
        return MT_FREE;
    }
    SIZE_T size = 0;
    if (cls != mt || HR_FAILED(info_get_object_size2(info, at, &size)) ||
        size != hl_census_object_size((const void *)(uintptr_t)at)) {
        s->broken = true;
        return MT_ERROR;
    }
    if (!hl_u64map_put(&s->checked, mt, 1))
        return MT_ERROR;
    return MT_OBJECT;
}

/* A method table checked before this walk (or the free objects'): safe to read at an address
 * not yet known to be an object's. Read-only on `checked`, which no thread changes while
 * several walk. */
static inline bool mt_known(const hl_census *s, uint64_t mt) {
    return mt == s->free_mt || hl_u64map_get(&s->checked, mt);
}

/* The table's first probe for `mt`: direct-mapped by the method table's address bits above a
 * slot's size (method tables are a few dozen bytes or more apart: a program's types mostly
 * get slots of their own). The walk computes the same slot as a byte offset in one AND
 * (type_offsets); a multiplicative hash cost it 10% more in bench_census (1.50 against 1.35 ns
 * per object). */
static inline size_t type_home(const hl_census_table *t, uint64_t mt) {
    return (size_t)(mt / sizeof *t->types) & (t->cap - 1);
}
static inline size_t type_offsets(const hl_census_table *t) {
    return (t->cap - 1) * sizeof *t->types;
}

/* Slots 0 and 1 hold this key and never count: every other empty slot's key (0) can only equal
 * a header word of 0, whose home is slot 0 and second probe slot 1, so the walk's two compares
 * never take an empty slot for a method table's (a word of 0 or any other where no object is
 * goes to type_find). The slot after the last, types[cap], is never used and keeps the key 0:
 * the second probe of the last slot's home, which only a header word of 0 could equal, and
 * that one's home is slot 0. */
#define TYPE_GUARD UINT64_MAX
#define TYPE_GUARDS 2

static void types_release(hl_census_table *t) {
    hl_mem_free(t->types);
    hl_mem_free(t->used);
    memset(t, 0, sizeof *t);
}

/* Makes the table hold `cap` slots (a power of 2, more than twice its types), rehashing what it
 * has; false when out of memory (the table is then unchanged). */
static bool types_grow(hl_census_table *t, size_t cap) {
    struct hl_census_type *grown = hl_mem_calloc(cap + 1, sizeof *grown);
    uint32_t *used = hl_mem_malloc((cap / 2 + 1) * sizeof *used);
    if (!grown || !used) {
        hl_mem_free(grown);
        hl_mem_free(used);
        return false;
    }
    for (size_t g = 0; g < TYPE_GUARDS; g++)
        grown[g].mt = TYPE_GUARD;
    for (size_t k = 0; k < t->n; k++) {
        const struct hl_census_type *old = &t->types[t->used[k]];
        size_t j = (size_t)(old->mt / sizeof *grown) & (cap - 1);
        while (grown[j].mt)
            j = (j + 1) & (cap - 1);
        grown[j] = *old;
        used[k] = (uint32_t)j;
    }
    hl_mem_free(t->types);
    hl_mem_free(t->used);
    t->types = grown;
    t->used = used;
    t->cap = cap;
    return true;
}

/* The slot of `mt` in `t`, a new empty one if it has none; NULL when out of memory. */
static struct hl_census_type *types_slot(hl_census_table *t, uint64_t mt) {
    size_t i = type_home(t, mt);
    while (t->types[i].mt) {
        if (t->types[i].mt == mt)
            return &t->types[i];
        i = (i + 1) & (t->cap - 1);
    }
    if ((t->n + TYPE_GUARDS + 1) * 2 > t->cap) {
        if (!types_grow(t, t->cap * 2))
            return NULL;
        i = type_home(t, mt);
        while (t->types[i].mt)
            i = (i + 1) & (t->cap - 1);
    }
    t->used[t->n++] = (uint32_t)i;
    t->types[i].mt = mt;
    return &t->types[i];
}

/* The slot of `mt` (the method table of the object at `at`, its low bits masked) when the
 * first probe missed. A method table new to this walk is classified (mt_classify) when `info`
 * is given; a thread without it (several walk) leaves an unchecked one for the GC thread
 * (check_at). In a piece not yet trusted only a method table known before the walk is
 * accepted: the piece may start at a word that only looked like an object. A base size that
 * aligns to less than the smallest object (never a real class's; a string's is 22) is refused
 * too: the walk's step needs no check that it moves on. NULL when the object cannot be
 * counted. */
static struct hl_census_type *type_find(hl_census *s, hl_census_table *t, ICorProfilerInfo *info,
                                        uint64_t at, uint64_t mt, bool trusted) {
    if (!mt)
        return NULL;
    size_t i = type_home(t, mt);
    while (t->types[i].mt) {
        if (t->types[i].mt == mt)
            return &t->types[i];
        i = (i + 1) & (t->cap - 1);
    }
    uint64_t check_at = 0;
    if (!trusted) {
        if (!mt_known(s, mt))
            return NULL;
    } else if (info) {
        if (mt_classify(s, info, at, mt) == MT_ERROR)
            return NULL;
    } else if (!mt_known(s, mt)) {
        check_at = at;
    }
    uint32_t base;
    memcpy(&base, (const uint8_t *)(uintptr_t)mt + 4, sizeof base);
    if (((base + OBJECT_ALIGN - 1) & ~(OBJECT_ALIGN - 1)) < MIN_OBJECT)
        return NULL;
    struct hl_census_type *slot = types_slot(t, mt);
    if (slot)
        slot->check_at = check_at;
    return slot;
}

/* Empties a table for a walk (allocated at the first one): only the slots this walk used, so
 * that a table once grown by a program's many types costs no more than the types of each walk
 * (csc.dll: 8,192 slots after a GC with 2,804 types, 450-550 in each later one); false when
 * out of memory. */
static bool types_clear(hl_census_table *t) {
    if (!t->types)
        return types_grow(t, 1024);
    for (size_t k = 0; k < t->n; k++)
        t->types[t->used[k]] = (struct hl_census_type){0};
    t->n = 0;
    return true;
}

/* Adds a helper's counts to the GC thread's table; false when out of memory. */
static bool types_add(hl_census_table *to, const hl_census_table *from) {
    for (size_t k = 0; k < from->n; k++) {
        const struct hl_census_type *f = &from->types[from->used[k]];
        size_t before = to->n;
        struct hl_census_type *t = types_slot(to, f->mt);
        if (!t)
            return false;
        if (to->n != before) /* new here: as checked (or not) as the helper found it */
            t->check_at = f->check_at;
        t->count += f->count;
        t->bytes += f->bytes;
    }
    return true;
}

/* One walk in progress over a piece. The loop keeps only the next object's address in a
 * register (lanes_walk); the rest is here, read by its one compare per object (`stop`) and
 * by lane_stop. */
typedef struct lane {
    uint64_t stop;     /* min(the next span's start, last): at or past it, lane_stop decides */
    uint64_t last;     /* the piece's end - MIN_OBJECT + 1: no object starts at or past it */
    uint64_t end;
    const hl_census_span *old, *old_end; /* the remembered spans not yet passed */
    uint64_t at;       /* the next object, while the loop does not hold it */
    uint64_t span;     /* remembering: where the run of objects since the last free one began */
    size_t piece;      /* its index in s->pieces */
    bool trusted;      /* the piece starts at an object (see "Splitting") */
} lane;

static inline void lane_stop_set(lane *l) {
    uint64_t next_old = l->old != l->old_end ? l->old->start : UINT64_MAX;
    l->stop = next_old < l->last ? next_old : l->last;
}

/* Starts `l` on a piece: the first remembered span that ends after its start by binary
 * search, then one compare per object. */
static void lane_start(const hl_census *s, lane *l, size_t piece) {
    const hl_census_piece *p = &s->pieces[piece];
    const hl_census_span *old = s->old;
    size_t lo = 0, hi = s->n_old;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (old[mid].end <= p->start)
            lo = mid + 1;
        else
            hi = mid;
    }
    *l = (lane){.at = p->start, .last = p->end - MIN_OBJECT + 1, .end = p->end, .old = old + lo,
                .old_end = old + s->n_old, .piece = piece, .trusted = p->trusted,
                .span = p->start};
    lane_stop_set(l);
}

/* Starts `l` on the next piece not taken by any thread; false when none is left (or a thread
 * failed: the walk will be done again). */
static bool lane_next(hl_census *s, lane *l) {
    if (atomic_load_explicit(&s->failed, memory_order_relaxed))
        return false;
    size_t i = atomic_fetch_add_explicit(&s->next_piece, 1, memory_order_relaxed);
    if (i >= s->n_pieces)
        return false;
    lane_start(s, l, i);
    return true;
}

/* Remembering: the run of objects [start, end), between two free objects (or a piece's start or
 * end), added to its piece's spans; false when out of memory. A lane remembers a run at the
 * free object that ends it, not object by object (AllocBench: 16,400 objects in ~650 runs). */
static bool span_push(hl_census *s, size_t piece, uint64_t start, uint64_t end) {
    struct hl_census_spans *o = &s->piece_spans[piece];
    if (!hl_mem_reserve((void **)&o->v, &o->cap, o->n + 1, sizeof *o->v, 256))
        return false;
    o->v[o->n++] = (hl_census_span){start, end};
    return true;
}

/* `at` reached the lane's stop: the end of its piece, which it must meet exactly (for a cut
 * piece, that proves the next piece's start an object's), and then the next piece; or a
 * remembered span, whose objects it jumps over uncounted (at its start, or inside it when a
 * cut piece starts there: every object in a span is old). A span that reaches past the piece
 * makes the walk fail (then done again uncut). Remembering (which starts with no spans), the
 * piece's last run of objects is added to its spans at its end. Returns the address to go on
 * from (below l->stop), or 0 when the lane has no piece left or the walk failed (s->failed). */
__attribute__((noinline)) static uint64_t lane_stop(hl_census *s, lane *l, uint64_t at,
                                                    bool remember) {
    for (;;) {
        if (at >= l->last) {
            if (at != l->end)
                goto failed; /* the piece ends inside an object */
            if (remember && at != l->span && !span_push(s, l->piece, l->span, at))
                goto failed;
            if (!lane_next(s, l))
                return 0;
            at = l->at;
        } else {
            while (l->old != l->old_end && l->old->end <= at)
                l->old++;
            if (l->old != l->old_end && l->old->start <= at) {
                at = l->old->end;
                l->old++;
                if (at > l->end)
                    goto failed;
            }
        }
        lane_stop_set(l);
        if (at < l->stop)
            return at;
    }
failed:
    atomic_store_explicit(&s->failed, true, memory_order_relaxed);
    return 0;
}

/* One object of lane K at A (below its stop once lane_stop has had its say), stepped as the GC
 * steps and counted in its method table's slot of `t` (free objects count in their own slot,
 * never reported), in one word when `packed` (PACK_SHIFT); or, remembering (!count), a free
 * object ends the lane's run of objects, added to its piece's spans (span_push). Per object:
 * the header, the slot (the header word is its key: one AND and one compare, and on a miss one
 * more with the slot after it; low bits set, never seen at GC start, or a method table new to
 * the walk go to type_find), the method table's two words, the length, all read before
 * anything waits for them.
 * - The second probe: a type whose home slot another type took (a program with many types
 *   has some: csc.dll 1-7% of each walk's objects) was counted through type_find, a call and
 *   a loop, for every object. bench_census with 1,024 types at scattered addresses: 5.1 ->
 *   4.4 ns per object (a select instead of the branch, 3.1-3.5, cost AllocBench's mix 1.2 ->
 *   1.3-1.5: its types all sit in their homes).
 * - The size without a branch: the length masked to 0 unless the flags' sign bit
 *   (HasComponentSize) is set. A branch costs nothing where types come in a fixed order, but a
 *   program's mixed arrays and classes mispredict it (bench_census's heaps, 64 types a third
 *   of them arrays in random order: 4.2 ns per object with it, 1.8 without).
 * - The empty asm hides that `mt` equals the slot's key on this path: otherwise the compiler
 *   reads the method table through the key just loaded, and the slot's load joins the path
 *   from one object to the next.
 * - Gen0 is larger than L2: each lane's next header would come from L3 or memory, and the
 *   hardware's prefetch stops at every 4 KiB page. Asking for the line CENSUS_PREFETCH bytes
 *   ahead in the lane's own stream (a prefetch never faults past the range's end) took
 *   AllocBench's census from 1,012 to 934 us per GC (p50, 3 runs each) at 1 KiB; with this
 *   loop 2 KiB took it from 657-678 to 597-613 us (3 runs each; 3 KiB the same, 4 KiB
 *   698-729). */
#define LANE_STEP(A, K)                                                                        \
    do {                                                                                       \
        if (__builtin_expect(A >= lanes[K].stop, 0) &&                                         \
            !(A = lane_stop(s, &lanes[K], A, !count))) {                                       \
            dry = K;                                                                           \
            goto out;                                                                          \
        }                                                                                      \
        uint64_t hdr_ = *(const uint64_t *)(uintptr_t)A, mt_ = hdr_;                           \
        __asm__("" : "+r"(mt_));                                                               \
        __builtin_prefetch((const void *)(uintptr_t)(A + CENSUS_PREFETCH), 0, 3);              \
        struct hl_census_type *slot_ =                                                         \
            (struct hl_census_type *)((uint8_t *)types + (hdr_ & offsets));                    \
        if (__builtin_expect(slot_->mt != hdr_, 0) &&                                          \
            __builtin_expect((++slot_)->mt != hdr_, 0)) {                                      \
            slot_ = type_find(s, t, info, A, hdr_ & ~(uint64_t)7, lanes[K].trusted);           \
            if (!slot_)                                                                        \
                goto failed;                                                                   \
            mt_ = slot_->mt;                                                                   \
            types = t->types; /* it may have grown */                                          \
            offsets = type_offsets(t);                                                         \
        }                                                                                      \
        uint32_t flags_, base_, length_;                                                       \
        memcpy(&flags_, (const void *)(uintptr_t)mt_, sizeof flags_);                          \
        memcpy(&base_, (const uint8_t *)(uintptr_t)mt_ + 4, sizeof base_);                     \
        memcpy(&length_, (const uint8_t *)(uintptr_t)A + 8, sizeof length_);                   \
        length_ &= 0u - (flags_ >> 31);                                                        \
        uint64_t raw_ = base_ + (uint64_t)length_ * (flags_ & 0xffffu);                        \
        uint64_t at_ = A;                                                                      \
        A = (A + raw_ + OBJECT_ALIGN - 1) & ~(uint64_t)(OBJECT_ALIGN - 1);                     \
        if (count && packed) {                                                                 \
            slot_->count += raw_ + PACK_ONE;                                                   \
        } else if (count) {                                                                    \
            slot_->count++;                                                                    \
            slot_->bytes += raw_;                                                              \
        } else if (mt_ == s->free_mt) {                                                        \
            if (at_ != lanes[K].span && !span_push(s, lanes[K].piece, lanes[K].span, at_))     \
                goto failed;                                                                   \
            lanes[K].span = A;                                                                 \
        }                                                                                      \
        (void)at_;                                                                             \
    } while (0)

/* Walks `n` lanes side by side (a constant after inlining: their addresses stay in registers)
 * until one has no piece left, counting or remembering (LANE_STEP): returns its index, the
 * others' addresses saved; -1 when the walk failed. Each lane's object waits for its previous
 * one's size (two dependent loads); four lanes overlap those waits (bench_census: 3.7 -> 2.5
 * ns per object; six or eight gave nothing more: the loop is then bound by its instructions,
 * about 20 per object, not by the waits). */
__attribute__((always_inline)) static inline int lanes_walk(hl_census *s, hl_census_table *t,
                                                            ICorProfilerInfo *info, lane *lanes,
                                                            const int n, const bool count,
                                                            const bool packed) {
    struct hl_census_type *types = t->types;
    size_t offsets = type_offsets(t);
    uint64_t a0 = lanes[0].at, a1 = n > 1 ? lanes[1].at : 0, a2 = n > 2 ? lanes[2].at : 0,
             a3 = n > 3 ? lanes[3].at : 0;
    int dry;
    for (;;) {
        LANE_STEP(a0, 0);
        if (n > 1)
            LANE_STEP(a1, 1);
        if (n > 2)
            LANE_STEP(a2, 2);
        if (n > 3)
            LANE_STEP(a3, 3);
    }
out:
    lanes[0].at = a0;
    if (n > 1)
        lanes[1].at = a1;
    if (n > 2)
        lanes[2].at = a2;
    if (n > 3)
        lanes[3].at = a3;
    return atomic_load_explicit(&s->failed, memory_order_relaxed) ? -1 : dry;
failed:
    atomic_store_explicit(&s->failed, true, memory_order_relaxed);
    return -1;
}
#undef LANE_STEP

/* Walks pieces taken from s->pieces until none is left, CENSUS_LANES at once and fewer as
 * they run out, counting into `t` (`count`) or remembering (each piece's spans in
 * s->piece_spans). false (and s->failed set) when a piece does not parse into whole objects,
 * an object cannot be counted (type_find), or memory runs out. Inlined into each caller with
 * `count` constant. */
__attribute__((always_inline)) static inline bool walk_pieces(hl_census *s, hl_census_table *t,
                                                              ICorProfilerInfo *info,
                                                              const bool count,
                                                              const bool packed) {
    _Static_assert(CENSUS_LANES == 4, "lanes_walk holds four lanes");
    lane lanes[CENSUS_LANES];
    int n = 0;
    while (n < CENSUS_LANES && lane_next(s, &lanes[n]))
        n++;
    while (n > 0) {
        int dry = n == 4   ? lanes_walk(s, t, info, lanes, 4, count, packed)
                  : n == 3 ? lanes_walk(s, t, info, lanes, 3, count, packed)
                  : n == 2 ? lanes_walk(s, t, info, lanes, 2, count, packed)
                           : lanes_walk(s, t, info, lanes, 1, count, packed);
        if (dry < 0)
            return false;
        lanes[dry] = lanes[--n];
    }
    return !atomic_load_explicit(&s->failed, memory_order_relaxed);
}

/* The counting walk of pieces into `t` (walk_pieces), packed when s->packed says so, its
 * slots' count and bytes apart afterwards either way. */
static bool walk_counting(hl_census *s, hl_census_table *t, ICorProfilerInfo *info) {
    if (!s->packed)
        return walk_pieces(s, t, info, true, false);
    bool ok = walk_pieces(s, t, info, true, true);
    for (size_t k = 0; k < t->n; k++) {
        struct hl_census_type *u = &t->types[t->used[k]];
        uint64_t v = u->count;
        u->count = v >> PACK_SHIFT;
        u->bytes = v & (PACK_ONE - 1);
    }
    return ok;
}

/* Splitting. A gen0 range is cut into pieces that threads (and lanes) walk apart. An object's
 * start inside a range is not known without walking to it, so a cut is a guess checked later:
 * the first 8-aligned word at or after the target whose value is the free objects' method
 * table (an allocation context's tail: one every few KiB; a runtime global no program stores
 * as data, where any class's method table could be a type handle in a field), from which
 * CUT_CHAIN objects in a row parse with method tables known before the walk. The piece
 * before it must then end exactly there: its lane, started at
 * an object, lands on every object after it, so landing on the cut proves the cut an object;
 * stepping over it fails the walk, which is then done again whole on the GC thread (exact
 * either way). A piece from a cut reads only method tables known before the walk (type_find),
 * so a wrong guess never reads through a word that is not a method table's address. */
#define CUT_CHAIN 16
#define CUT_SEARCH ((uint64_t)64 << 10)

/* Whether CUT_CHAIN objects (or every object to `end`) parse from `at` with known method
 * tables. */
static bool cut_chain(const hl_census *s, uint64_t at, uint64_t end) {
    for (int k = 0; k < CUT_CHAIN && at != end; k++) {
        if (end - at < MIN_OBJECT)
            return false;
        uint64_t mt = *(const uint64_t *)(uintptr_t)at & ~(uint64_t)7;
        if (!mt || !mt_known(s, mt))
            return false;
        uint64_t size = (hl_census_object_size((const void *)(uintptr_t)at) + OBJECT_ALIGN - 1) &
                        ~(uint64_t)(OBJECT_ALIGN - 1);
        if (size < MIN_OBJECT || size > end - at)
            return false;
        at += size;
    }
    return true;
}

/* The cut at or after `target` in a range ending at `end` (see above); 0 when none is found
 * within CUT_SEARCH bytes. */
static uint64_t cut_find(const hl_census *s, uint64_t target, uint64_t end) {
    uint64_t at = (target + 7) & ~(uint64_t)7, stop = end - at > CUT_SEARCH ? at + CUT_SEARCH : end;
    for (; at + MIN_OBJECT <= stop; at += 8) {
        uint64_t mt = *(const uint64_t *)(uintptr_t)at & ~(uint64_t)7;
        if (mt == s->free_mt && cut_chain(s, at, end))
            return at;
    }
    return 0;
}

/* Makes s->pieces the gen0 ranges of `ranges`, each cut into pieces of about `piece` bytes
 * when piece > 0; false when out of memory. */
static bool pieces_build(hl_census *s, const hm_gen_range *ranges, size_t n, uint64_t piece) {
    s->n_pieces = 0;
    atomic_store_explicit(&s->next_piece, 0, memory_order_relaxed);
    atomic_store_explicit(&s->failed, false, memory_order_relaxed);
    for (size_t i = 0; i < n; i++) {
        if (ranges[i].generation != HM_GEN_0)
            continue;
        uint64_t at = ranges[i].start, end = at + ranges[i].length;
        for (;;) {
            if (!hl_mem_reserve((void **)&s->pieces, &s->cap_pieces, s->n_pieces + 1,
                                sizeof *s->pieces, 64))
                return false;
            hl_census_piece *p = &s->pieces[s->n_pieces++];
            *p = (hl_census_piece){.start = at, .end = end, .trusted = at == ranges[i].start};
            /* The last piece of a range is not left shorter than half a piece. */
            uint64_t cut = piece && end - at >= piece + piece / 2 ? cut_find(s, at + piece, end) : 0;
            if (!cut || end - cut < piece / 2)
                break;
            p->end = cut;
            at = cut;
        }
    }
    return true;
}

static uint64_t thread_cpu_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* A helper thread: walks pieces whenever the GC thread wakes it (see HELPER_*). */
static void *helper_main(void *arg) {
    hl_census_helper *h = arg;
    hl_census *s = h->census;
    for (;;) {
        uint32_t state = atomic_load_explicit(&h->state, memory_order_acquire);
        if (state == HELPER_QUIT)
            return NULL;
        if (state != HELPER_WAKE) {
            futex_wait(&h->state, state);
            continue;
        }
        uint32_t wake = HELPER_WAKE;
        if (!atomic_compare_exchange_strong_explicit(&h->state, &wake, HELPER_RUN,
                                                     memory_order_acquire, memory_order_acquire))
            continue; /* cancelled: every piece was walked without us */
        /* Late (scheduled after the others took most pieces): its lanes would take the last
         * pieces at once and leave the GC thread waiting for them; it takes none. */
        size_t taken = atomic_load_explicit(&s->next_piece, memory_order_relaxed);
        uint64_t c0 = s->floor ? thread_cpu_ns() : 0;
        if (!types_clear(&h->tab) ||
            (taken + 2 * CENSUS_LANES <= s->n_pieces && !walk_counting(s, &h->tab, NULL)))
            atomic_store_explicit(&s->failed, true, memory_order_relaxed);
        if (s->floor)
            atomic_fetch_add_explicit(&s->floor_helper_cpu_ns, thread_cpu_ns() - c0,
                                      memory_order_relaxed);
        atomic_store_explicit(&h->state, HELPER_DONE, memory_order_release);
        futex_wake(&h->state);
    }
}

/* Starts the helper threads at the first walk that wants them (inside the pause: a native
 * thread of ours, unknown to the runtime, all signals blocked); false when none could be. */
static bool helpers_start(hl_census *s) {
    if (s->helpers || s->helpers_failed)
        return s->n_helpers > 0;
    s->helpers = hl_mem_calloc(s->threads - 1, sizeof *s->helpers);
    if (!s->helpers) {
        s->helpers_failed = true;
        return false;
    }
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, (size_t)256 << 10);
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    for (unsigned i = 0; i < s->threads - 1; i++) {
        hl_census_helper *h = &s->helpers[i];
        h->census = s;
        atomic_init(&h->state, HELPER_IDLE);
        if (pthread_create(&h->thread, &attr, helper_main, h) != 0)
            break;
        h->started = true;
        s->n_helpers++;
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&attr);
    if (!s->n_helpers)
        s->helpers_failed = true;
    return s->n_helpers > 0;
}

/* Keeps the helpers off the CPU this thread walks on, on the CPUs this process may use. Without
 * it the scheduler may wake a helper on this very CPU (wake-affine) and run it there at once,
 * preempting this thread: the helper then walks everything while this thread waits inside
 * futex_wake, and the pause is no shorter (AllocBench on 2 CPUs: most walks with a helper; kept
 * off, the helped walks take 240-330 us against ~480 alone). Helpers are also started from a
 * GC thread and inherit its affinity, a single CPU for server GC's threads. The GC thread is
 * the allocating thread that triggered the GC (workstation GC), so its CPU changes from walk to
 * walk; the helpers' affinity is set again (a system call each) only when it did. */
static void helpers_place(hl_census *s) {
    int cpu = sched_getcpu();
    if (cpu == s->helpers_cpu)
        return;
    cpu_set_t others = s->cpus;
    if (cpu >= 0 && cpu < CPU_SETSIZE && CPU_COUNT(&others) > 1)
        CPU_CLR(cpu, &others);
    for (unsigned i = 0; i < s->n_helpers; i++)
        pthread_setaffinity_np(s->helpers[i].thread, sizeof others, &others);
    s->helpers_cpu = cpu;
}

pthread_t hl_census_helper_thread(const hl_census *s, unsigned i) {
    return s->helpers[i].thread;
}

/* After the GC thread's own part: each woken helper either never took its wake (cancelled) or
 * is waited for and its counts added. false when out of memory. */
static bool helpers_join(hl_census *s, unsigned woken) {
    bool ok = true;
    for (unsigned i = 0; i < woken; i++) {
        hl_census_helper *h = &s->helpers[i];
        uint32_t state = HELPER_WAKE;
        if (atomic_compare_exchange_strong_explicit(&h->state, &state, HELPER_IDLE,
                                                    memory_order_acquire, memory_order_acquire))
            continue;
        for (int spin = 0; spin < 4096 && state != HELPER_DONE; spin++) {
            __builtin_ia32_pause();
            state = atomic_load_explicit(&h->state, memory_order_acquire);
        }
        while ((state = atomic_load_explicit(&h->state, memory_order_acquire)) != HELPER_DONE)
            futex_wait(&h->state, state);
        if (ok && !atomic_load_explicit(&s->failed, memory_order_relaxed))
            ok = types_add(&s->tab, &h->tab);
        atomic_store_explicit(&h->state, HELPER_IDLE, memory_order_relaxed);
    }
    return ok;
}

/* The counting walk of gen0 into s->tab: cut into pieces and spread over the helpers when gen0
 * is large enough, then done again whole on this thread if a cut was wrong. false when it does
 * not parse or memory runs out. */
/* The median of the pauses per MiB remembered for one kind of walk (0 until one was), robust
 * to a walk the scheduler stretched (preemption only adds). */
static uint64_t pause_median(const uint64_t last[CENSUS_PAUSES]) {
    uint64_t v[CENSUS_PAUSES];
    size_t n = 0;
    for (size_t i = 0; i < CENSUS_PAUSES; i++)
        if (last[i]) {
            size_t j = n++;
            for (; j > 0 && v[j - 1] > last[i]; j--)
                v[j] = v[j - 1];
            v[j] = last[i];
        }
    return n ? v[n / 2] : 0;
}

static bool walk_count(hl_census *s, ICorProfilerInfo *info, const hm_gen_range *ranges, size_t n) {
    uint64_t total = 0;
    size_t n_gen0 = 0;
    for (size_t i = 0; i < n; i++)
        if (ranges[i].generation == HM_GEN_0) {
            total += ranges[i].length;
            n_gen0++;
        }
    s->packed = total < s->pack_limit;
    /* The first walk of a run knows no method table: it asks the runtime about each and cuts
     * nothing, slower either way, so its pause is no sample of its kind (kept, it held the
     * helpers' median up for the next 8 walks and more: AllocBench under SCHED_FIFO walked its
     * first 16 GCs alone, 450-520 us, against 235-265 helped). */
    bool timed = s->checked.count > 0;
    uint64_t per_thread = s->piece_min * CENSUS_LANES;
    unsigned threads = s->threads;
    if (per_thread && total / per_thread < threads)
        threads = total / per_thread > 1 ? (unsigned)(total / per_thread) : 1;
    /* Alone or with the helpers: whichever paused less per MiB of gen0 lately (the median of
     * the last CENSUS_PAUSES walks of each kind). On a loaded machine a helper seldom gets a core
     * inside the pause, and one that shares the GC thread's core, or takes pieces and then
     * loses its CPU, makes the pause longer than walking alone; on an idle one it nearly
     * halves it. Every CENSUS_RETRY-th walk tries the other kind, so a change of load is
     * noticed. */
    int helped = -1; /* -1: too small a gen0 for helpers; else 0 alone, 1 with them */
    if (threads > 1) {
        uint64_t per[2] = {pause_median(s->pause_per_mib[0]), pause_median(s->pause_per_mib[1])};
        helped = !per[1] ? 1 : !per[0] ? 0 : per[1] <= per[0];
        if (per[0] && per[1] && ++s->since_retry >= CENSUS_RETRY) {
            helped = !helped;
            s->since_retry = 0;
        }
        if (!helped)
            threads = 1;
    }
    if (threads > 1 && !helpers_start(s))
        threads = 1;
    if (threads > s->n_helpers + 1)
        threads = s->n_helpers + 1;
    if (threads > 1)
        helpers_place(s);
    /* Cut into PIECES_PER_LANE pieces per lane of every thread (one thread: only a heap of
     * fewer ranges than lanes), none under piece_min; only with method tables known (none at
     * the first walk: the ranges are then walked whole). */
    uint64_t want = (uint64_t)threads * CENSUS_LANES * PIECES_PER_LANE, piece = 0;
    if (s->checked.count && (threads > 1 || n_gen0 < CENSUS_LANES)) {
        piece = total / want;
        if (piece < s->piece_min)
            piece = s->piece_min;
    }
    if (!pieces_build(s, ranges, n, piece))
        return false;
    bool cut = s->n_pieces > n_gen0;
    s->walks_split += cut;
    for (unsigned i = 0; i + 1 < threads; i++) {
        atomic_store_explicit(&s->helpers[i].state, HELPER_WAKE, memory_order_release);
        futex_wake(&s->helpers[i].state);
    }
    /* Several threads: none asks the runtime (the GC thread classifies after them). */
    uint64_t t0 = hl_now_ns();
    bool ok = walk_counting(s, &s->tab, threads > 1 ? NULL : info);
    ok = helpers_join(s, threads - 1) && ok && !atomic_load(&s->failed);
    if (helped >= 0 && ok && total && timed) {
        uint64_t *last = s->pause_per_mib[helped];
        memmove(last + 1, last, (CENSUS_PAUSES - 1) * sizeof *last);
        last[0] = (hl_now_ns() - t0) * ((uint64_t)1 << 20) / total + 1; /* 0: none */
    }
    s->walks_helped += ok && threads > 1;
    if (!ok && (cut || threads > 1)) {
        s->walks_redone++;
        ok = types_clear(&s->tab) && pieces_build(s, ranges, n, 0) &&
             walk_counting(s, &s->tab, info);
    }
    /* Method tables first seen by a thread that could not ask the runtime. */
    for (size_t k = 0; ok && k < s->tab.n; k++) {
        struct hl_census_type *t = &s->tab.types[s->tab.used[k]];
        if (t->check_at) {
            ok = mt_classify(s, info, t->check_at, t->mt) != MT_ERROR;
            t->check_at = 0;
        }
    }
    return ok;
}

/* HEAPLENS_CENSUS_FLOOR: one word of every cache line of gen0's ranges, prefetched
 * CENSUS_PREFETCH ahead as a lane prefetches, timed into s->floor_read_cpu_ns. */
static void floor_read(hl_census *s, const hm_gen_range *ranges, size_t n) {
    uint64_t c0 = thread_cpu_ns();
    for (size_t i = 0; i < n; i++) {
        if (ranges[i].generation != HM_GEN_0)
            continue;
        const uint8_t *p = (const uint8_t *)(uintptr_t)ranges[i].start;
        for (uint64_t o = 0; o < ranges[i].length; o += 64) { /* lengths are multiples of 8 */
            __builtin_prefetch(p + o + CENSUS_PREFETCH, 0, 3);
            (void)*(const volatile uint64_t *)(p + o);
        }
        s->floor_bytes += ranges[i].length;
    }
    s->floor_read_cpu_ns += thread_cpu_ns() - c0;
}

hl_census_result hl_census_walk(hl_census *s, ICorProfilerInfo *info, const hm_gen_range *before,
                                size_t n_before) {
    hl_census_result r = {0};
    if (!s->on || s->broken)
        return r;
    if (!before) {
        s->old_valid = false;
        return r;
    }
    bool floor_first = s->floor && !(s->floor_walks & 1);
    if (floor_first)
        floor_read(s, before, n_before);
    uint64_t c0 = s->floor ? thread_cpu_ns() : 0;
    uint64_t t0 = hl_now_ns();
    bool ok = types_clear(&s->tab) && walk_count(s, info, before, n_before);
    if (s->floor) {
        s->floor_walk_cpu_ns += thread_cpu_ns() - c0;
        s->floor_walk_wall_ns += hl_now_ns() - t0;
        s->floor_walks++;
    }
    /* Not exact unless the previous GC's gen0 is known (it is not at the first GC after an
     * attach, nor after a GC whose end could not be remembered). */
    r.done = ok && s->old_valid;
    s->old_valid = false; /* until this GC's end is remembered */
    if (r.done && s->tab.n) {
        r.counts = hl_mem_malloc(s->tab.n * sizeof *r.counts);
        for (size_t k = 0; r.counts && k < s->tab.n; k++) {
            const struct hl_census_type *t = &s->tab.types[s->tab.used[k]];
            if (t->mt == s->free_mt || !t->count)
                continue;
            r.counts[r.n++] = (hl_census_count){.class_id = t->mt, .count = t->count,
                                                .bytes = t->bytes};
            r.objects += t->count;
        }
        r.done = r.counts != NULL;
    }
    r.walk_ns = hl_now_ns() - t0;
    s->floor_objects += s->floor ? r.objects : 0;
    if (s->floor && !floor_first)
        floor_read(s, before, n_before);
    return r;
}

static int piece_cmp(const void *a, const void *b) {
    uint64_t x = ((const hl_census_piece *)a)->start, y = ((const hl_census_piece *)b)->start;
    return x < y ? -1 : x > y;
}

/* Remembering: gen0 after the GC walked on this thread by four lanes as a count is, each
 * piece into spans of its own, joined into s->old in address order (the pieces sorted). gen0
 * after a GC holds only what it did not promote (AllocBench: 16,400 objects in one 673 KB
 * range, every GC), so a heap of fewer ranges than lanes is cut (at free objects, as for
 * helpers: "Splitting") into pieces of piece_min / 8 (32 KiB) or more: one lane through that
 * range took 60-80 us, four 25-35. false when it does not parse or memory runs out. */
static bool remember_walk(hl_census *s, ICorProfilerInfo *info, const hm_gen_range *after,
                          size_t n_after, uint64_t piece) {
    if (!types_clear(&s->tab) || !pieces_build(s, after, n_after, piece))
        return false;
    qsort(s->pieces, s->n_pieces, sizeof *s->pieces, piece_cmp);
    size_t had = s->cap_piece_spans;
    if (!hl_mem_reserve((void **)&s->piece_spans, &s->cap_piece_spans, s->n_pieces,
                        sizeof *s->piece_spans, 16))
        return false;
    memset(s->piece_spans + had, 0, (s->cap_piece_spans - had) * sizeof *s->piece_spans);
    for (size_t i = 0; i < s->n_pieces; i++)
        s->piece_spans[i].n = 0;
    if (!walk_pieces(s, &s->tab, info, false, false))
        return false;
    size_t n = 0;
    for (size_t i = 0; i < s->n_pieces; i++)
        n += s->piece_spans[i].n;
    if (!hl_mem_reserve((void **)&s->old, &s->cap_old, n, sizeof *s->old, 256))
        return false;
    for (size_t i = 0; i < s->n_pieces; i++) {
        memcpy(s->old + s->n_old, s->piece_spans[i].v, s->piece_spans[i].n * sizeof *s->old);
        s->n_old += s->piece_spans[i].n;
    }
    return true;
}

uint64_t hl_census_remember(hl_census *s, ICorProfilerInfo *info, const hm_gen_range *after,
                            size_t n_after) {
    if (!s->on || s->broken)
        return 0;
    uint64_t t0 = hl_now_ns();
    s->n_old = 0;
    s->old_valid = false;
    if (!after)
        return hl_now_ns() - t0;
    uint64_t total = 0, piece = 0;
    size_t n_gen0 = 0;
    for (size_t i = 0; i < n_after; i++)
        if (after[i].generation == HM_GEN_0) {
            total += after[i].length;
            n_gen0++;
        }
    if (s->checked.count && n_gen0 < CENSUS_LANES) {
        piece = total / (CENSUS_LANES * PIECES_PER_LANE);
        if (piece < s->piece_min / 8)
            piece = s->piece_min / 8;
    }
    bool ok = remember_walk(s, info, after, n_after, piece);
    if (!ok && piece && !s->broken) { /* a wrong cut: walked again uncut */
        s->n_old = 0;
        ok = remember_walk(s, info, after, n_after, 0);
    }
    s->old_valid = ok; /* false: the next walk is not exact */
    return hl_now_ns() - t0;
}
