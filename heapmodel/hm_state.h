/* hm_state.h — the model's state and the helpers shared by hm_model.c and hm_young.c; not
 * part of the module's API. The data structure and its invariants are described at the top of
 * hm_model.c.
 *
 * hm_model.c  windows of classified objects, add, apply_gc (prepare, commit), queries, checks.
 * hm_young.c  the young objects: the lazily synced hash, lookups, and the duplicate checks that
 *             hm_model_add defers (by a sync, or by the runs the next GC records).
 * hm_ranges.c takes only the window size from here (it cuts the moves into batches by window).
 */
#ifndef HEAPLENS_HM_STATE_H
#define HEAPLENS_HM_STATE_H

#include "heapmodel/hm_internal.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HM_WINDOW_SHIFT 22
#define HM_WINDOW_LAST ((UINT64_C(1) << HM_WINDOW_SHIFT) - 1)
#define HM_GEN_TOMB 14u /* internal: an entry evicted by a young object, dropped at the next GC */
#define HM_GEN_MASK 15u
#define HM_TOMB_GEN_SHIFT 60 /* a tombstone keeps the evicted object's generation here */
/* Bit 0 of a young object's address (addresses are multiples of 8): a newer young object has
 * this address. */
#define HM_Y_EVICTED UINT64_C(1)
#ifdef HM_TESTING
#define HM_EPOCH_MAX 7u /* the tests must see the epoch wrap around */
#else
#define HM_EPOCH_MAX 0xffffu
#endif
#define HM_SLOT_TAGS UINT64_C(0xffffffff00000000) /* epoch and tag */

/* A lookup first compares the newest young objects not yet in the hash directly: the collector
 * mostly looks up objects allocated moments before, and this spares it the sync. */
#define HM_TAIL_SCAN 64
/* Windows (4 MiB) that hold young objects, listed so that a lookup of an old object elsewhere
 * needs no sync; a young list spread over more windows switches this filter off until the GC. */
#define HM_YOUNG_WINDOWS 256
/* How far ahead a sync prefetches hash slots: enough to overlap the cache misses of a hash that
 * is larger than the caches. */
#define HM_SYNC_PREFETCH 12
/* A GC syncs the hash instead of scanning the young list when at most 1/HM_SYNC_RATIO of it is
 * not hashed yet. */
#define HM_SYNC_RATIO 32

#if defined(__GNUC__) || defined(__clang__)
#define HM_PREFETCH_W(p) __builtin_prefetch((p), 1)
#define HM_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define HM_LIKELY(x) __builtin_expect(!!(x), 1)
#else
#define HM_PREFETCH_W(p) ((void)(p))
#define HM_UNLIKELY(x) (x)
#define HM_LIKELY(x) (x)
#endif

/* Insert-list val: id << 8 | gen_before << 4 | gen_after; gen_before == HM_GEN_UNKNOWN marks a
 * kept young object (inserted, but it did not go through this GC as a survivor). */
#define HM_INS_KEEP HM_GEN_UNKNOWN
/* In the low nibble of a survivor's insert-list val: it is a young object (its generation after,
 * below 8, is in the three bits under this one), so commit may write its young_fates byte. */
#define HM_INS_YOUNG 8u
#define HM_INS_AFTER 7u

/* Scratch buffers above this size are freed after a GC that needed less than a quarter of them
 * (HM_SCRATCH_SLACK): a full GC of a big heap needs 32 bytes per survivor for a moment, and
 * holding that forever would double the model's footprint. A program whose every GC is that
 * large keeps them: freed and mapped again at each GC, their pages were faulted in anew every
 * time (a third of the collector thread's CPU on MidLife, 2.3M young objects per GC). */
#define HM_SCRATCH_KEEP_BYTES ((size_t)8 << 20)
#define HM_SCRATCH_SLACK 4

typedef struct hm_entry {
    uint64_t addr;
    uint64_t idgen; /* id << 4 | gen */
} hm_entry;

/* Ids of the young list: young[start..] have ids id, id + 1, ... up to the next run's start. */
typedef struct hm_idrun {
    uint64_t start;
    uint64_t id;
} hm_idrun;

typedef struct hm_window {
    uint64_t key; /* addr >> HM_WINDOW_SHIFT of every entry */
    hm_entry *e;
    uint32_t n, cap;
    uint32_t n_tomb;
    uint32_t touched; /* a GC removed entries (it may shrink it); cleared when the GC ends */
} hm_window;

struct hm_model {
    /* First (hm_model.h's inline add reads it): young (the address | HM_Y_EVICTED), n_young,
     * add_room (hm_young_room: min(cap_young, cap_slots / 2), so that an add below it needs
     * neither a larger list nor a larger hash) and next_id (the last id run's next id). */
    hm_young_tail yt;
    /* The young objects' ids: runs of consecutive ids, by ascending start (the first at 0). */
    hm_idrun *idruns;
    size_t n_idruns, cap_idruns;
    hm_window *win;
    size_t n_win, cap_win;
    size_t n_live_win; /* entries in windows that are not tombstones */
    size_t n_tomb;

    /* Which window the last duplicate check looked at: allocations come in runs in one region. */
    bool cache_valid;
    uint64_t cache_key;
    size_t cache_wi; /* HM_NONE when no window has that key */

    /* Where hm_model_lookup found its last object: a hint only (checked before use, never
     * trusted), so that lookups in ascending address order — a snapshot's walk, references to
     * neighbours — search forward from there instead of from the whole window. */
    size_t finger_wi;
    uint32_t finger_ei;

    size_t cap_young; /* of yt.young */
    size_t n_yflagged; /* young objects flagged HM_Y_EVICTED */
    /* Slot: epoch << 48 | tag << 32 | young index + 1; a slot of another epoch is empty, so a GC
     * empties the hash by bumping the epoch instead of clearing it. Capacity a power of two, at
     * least twice n_young (reserved by add), so the load stays at most 1/2. */
    uint64_t *slots;
    size_t cap_slots;
    unsigned slot_shift; /* 64 - log2(cap_slots) */
    uint64_t epoch;      /* 1..HM_EPOCH_MAX */
    size_t n_hashed;     /* young[0..n_hashed) went through the hash (see hm_young_sync) */
    /* Sorted window keys of young[0..n_keyed), unless ywin_full (too many to list). */
    uint64_t ywin[HM_YOUNG_WINDOWS];
    size_t n_ywin, n_keyed;
    bool ywin_full;

    /* Scratch reused across GCs (see HM_SCRATCH_KEEP_BYTES). */
    hm_span *bb, *ba, *cr, *mv; /* bounds before/after, condemned bounds, moves */
    size_t cap_bb, cap_ba, cap_cr, cap_mv;
    hm_pair *ins; /* objects to insert into windows at the end of a GC */
    size_t cap_ins;
    hm_pair *tmp; /* sort scratch */
    size_t cap_tmp;
    uint64_t *dead; /* young objects that die in this GC: id << 4 | gen (an HM_REPORT word) */
    size_t cap_dead;
    uint64_t *cls; /* young objects classified, id << 4 | heap, for a batch sink */
    size_t cap_cls;
    const hm_allocator *alloc; /* every allocation of the model (hm_model_new_with) */

#ifdef HM_TESTING
    long fail_after; /* allocations to let through before failing one; < 0: never fail */
#endif
};

/* Everything prepare computes for commit. */
typedef struct hm_gc_work {
    uint32_t mask;
    size_t n_bb, n_ba, n_cr, n_mv;
    hm_pair *ins; /* sorted, points at m->ins or m->tmp */
    size_t n_ins;
    size_t anomalies;
    size_t n_dead; /* young objects that die, in m->dead */
    bool batch_classified; /* the sink takes classified_young: fill m->cls */
    bool quiet_young_deaths; /* ... with young_deaths_in_classified: m->dead is one slot */
    size_t n_cls;  /* young objects classified, in m->cls when batch_classified */
    /* The sink's young_fates when quiet_young_deaths (else NULL, n 0). */
    uint8_t *fates;
    uint64_t fates_first;
    size_t fates_n;
} hm_gc_work;

/* Larger than the distance between neighbouring small objects, smaller than an allocation
 * context (8 KiB in CoreCLR): a thread moving on to its next context jumps over the contexts of
 * other threads, and a run bridging them would overlap theirs. A wrong guess costs a sort. */
#define HM_YOUNG_RUN_GAP 2048u

/* The runs found by the classification pass, in m->tmp: {first address, run number} in runs,
 * {last address, start << 32 | end} by run number in info, and sort scratch. */
typedef struct hm_young_runs {
    hm_pair *runs, *info, *scratch;
    size_t max, r;
    bool overflow; /* more than max runs: not worth it, sort instead */
} hm_young_runs;

/* ---- small helpers ---------------------------------------------------------------------- */

static inline uint32_t hm_heap_of(uint32_t gen)
{
    return gen <= HM_GEN_2 ? HM_GEN_0 : gen;
}

static inline uint64_t hm_entry_id(const hm_entry *x)
{
    return x->idgen >> 4 & HM_ID_MAX; /* a tombstone keeps a generation above the id */
}

static inline uint32_t hm_entry_gen(const hm_entry *x)
{
    return (uint32_t)(x->idgen & HM_GEN_MASK);
}

/* First index in [lo, hi) whose address is >= addr (hi when none). */
static inline uint32_t hm_entries_lower_bound(const hm_entry *e, uint32_t lo, uint32_t hi, uint64_t addr)
{
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (e[mid].addr < addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* A slot keeps 16 bits of the address next to the index, so that probing past other objects
 * reads only the slot array; the young array is touched once, to confirm a match. */
static inline uint64_t hm_young_tag(const hm_model *m, uint64_t addr)
{
    return m->epoch << 48 | (uint64_t)(uint16_t)(addr >> 3) << 32;
}

static inline bool hm_slot_used(const hm_model *m, uint64_t v)
{
    return v >> 48 == m->epoch;
}

static inline bool hm_young_flagged(uint64_t y)
{
    return (y & HM_Y_EVICTED) != 0;
}

static inline uint64_t hm_young_addr(uint64_t y)
{
    return y & ~HM_Y_EVICTED;
}

/* A walk of the young ids in ascending index order: zero-initialised, then hm_ids_at(i) for
 * ascending i < n_young. Between calls, `end` is where the id run of the last i ends and
 * `base + j` is the id of every j before it from i on. */
typedef struct hm_ids {
    size_t r, end;
    uint64_t base;
} hm_ids;

static inline uint64_t hm_ids_at(const hm_model *m, hm_ids *c, size_t i)
{
    while (HM_UNLIKELY(i >= c->end)) {
        const hm_idrun *run = &m->idruns[c->r++];
        c->base = run->id - run->start;
        c->end = c->r < m->n_idruns ? (size_t)m->idruns[c->r].start : m->yt.n_young;
    }
    return c->base + i;
}

/* ---- hm_model.c -------------------------------------------------------------------------- */

/* Grows the array at pp (any T **) to at least `need` elements of `size` bytes, geometrically;
 * HM_OK or HM_ERR_NOMEM (the array unchanged). */
int hm_reserve(hm_model *m, void *pp, size_t *cap, size_t need, size_t size);
#define HM_RESERVE(m, ptr, cap, need) hm_reserve((m), &(ptr), &(cap), (need), sizeof(*(ptr)))
/* Zeroed memory for n elements of `size` bytes (fails on purpose under HM_TESTING). */
void *hm_calloc(hm_model *m, size_t n, size_t size);
/* Gives back what the model allocated (through its allocator); NULL: nothing. */
void hm_free(const hm_model *m, void *p);
/* Index of the window with `key`, or HM_NONE. */
size_t hm_windows_find(const hm_model *m, uint64_t key);
/* Index of the live (not tombstone) entry at addr in window w, or HM_NONE. */
size_t hm_window_find_live(const hm_window *w, uint64_t addr);
/* Index of the window with `key` (searching from index `from`), created empty if needed; HM_NONE
 * when out of memory. An empty window changes nothing observable. */
size_t hm_windows_get(hm_model *m, uint64_t key, size_t from);
/* Room for `need` entries in w (HM_OK or HM_ERR_NOMEM, w unchanged). */
int hm_window_reserve(hm_model *m, hm_window *w, size_t need);

/* ---- hm_young.c -------------------------------------------------------------------------- */

/* Brings the hash up to n_young (flags older duplicates, makes tombstones); never allocates. */
void hm_young_sync(hm_model *m);
/* The id of young[i] (a binary search of the id runs). */
uint64_t hm_young_id(const hm_model *m, size_t i);
/* Index of the newest young object at addr, or HM_NONE (syncs only when it must). */
size_t hm_young_lookup(hm_model *m, uint64_t addr);
/* The hashed young object at addr, or HM_NONE. */
size_t hm_young_find_hashed(const hm_model *m, uint64_t addr);
/* Room for one more young object and hash capacity for a sync. */
int hm_young_grow(hm_model *m);
/* After a GC: forget the young objects; `used` is how many the cycle had. */
void hm_young_reset(hm_model *m, size_t used);
/* The classification pass ended the run young[s..e) from first to last: records and checks it.
 * False when there are too many runs (t->overflow set). */
bool hm_young_runs_close(hm_model *m, hm_young_runs *t, size_t s, size_t e, uint64_t first,
                         uint64_t last);
/* Finds the duplicates among the recorded runs (or by a sort); HM_OK or HM_ERR_NOMEM. */
int hm_young_runs_finish(hm_model *m, hm_young_runs *t);

#endif /* HEAPLENS_HM_STATE_H */
