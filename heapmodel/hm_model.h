/* hm_model.h — the remapped ObjectID model: stable object ids across every GC.
 *
 * The runtime names objects by address (ObjectID), and addresses change when a GC compacts.
 * The model keeps, for every tracked live object, its current address, its stable id (the
 * allocation sequence number the collector assigned) and its current generation. After each GC
 * the caller hands it that GC's inputs — generation bounds before and after, the condemned
 * generations, and every moved/surviving range — and the model:
 *   1. classifies objects added since the previous GC by the heap their address lies in at GC
 *      start (small-object heap, LOH, POH, or none of them: NonGC/frozen);
 *   2. for each object in a condemned generation: if a moved or surviving range covers its old
 *      address it survives at new = new_start + (old - old_start), otherwise it is dead;
 *   3. leaves objects of uncondemned generations (and NonGC objects) untouched;
 *   4. gives every survivor the generation of the bounds range its new address lies in.
 * Precisely: an object is in a condemned generation when its address lies in a bounds_before
 * range whose generation is condemned — the runtime's table at GC start decides, not the
 * generation the model remembers — unless it is a NonGC object (those are never condemned).
 * Objects in no bounds_before range are never condemned; new ones among them become NonGC.
 * Survivors are placed after every condemned object has left its old address, so objects that
 * slide over each other never collide; an object the model still holds at a survivor's new
 * address must have died unseen and is evicted (reported `died`, counted as an anomaly).
 * Results are reported through a sink so the caller (the collector, or a test) decides what
 * to keep. Pure C, no runtime, no I/O, no locks: one thread owns a model (the collector's own
 * thread, never a runtime callback); no function may be called from inside a sink callback.
 *
 * Cost: adding is an append, amortised O(1) with no lookup (a duplicate address is found later,
 * with the same result: see hm_model_add); applying a GC costs O(c log c + r log r + w) where c
 * is the number of objects added since the last GC or lying in condemned bounds ranges, r the
 * number of ranges and w the number of 4 MiB address windows holding objects — objects of
 * uncondemned generations are not visited, so a gen0 GC on a large gen2 heap stays cheap. The
 * log factors vanish when ranges and survivors arrive in address order, as they usually do.
 * Memory: 16 bytes per classified object plus at most an eighth of slack in windows that grow;
 * objects added since the last GC cost 16 bytes plus 16–32 bytes of hash. A GC borrows scratch,
 * about 64 bytes per object added since the last GC or moved out of a window (each buffer is kept
 * for the next GC while below 8 MiB, freed otherwise).
 */
#ifndef HEAPLENS_HM_MODEL_H
#define HEAPLENS_HM_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Generations. 0..4 match COR_PRF_GC_GENERATION; NONGC marks frozen objects (never collected). */
enum {
    HM_GEN_0 = 0,
    HM_GEN_1 = 1,
    HM_GEN_2 = 2,
    HM_GEN_LOH = 3,
    HM_GEN_POH = 4,
    HM_GEN_NONGC = 5,
    HM_GEN_UNKNOWN = 15, /* added, not yet classified by a GC */
};

/* Error codes (int, 0 = success). */
enum { HM_OK = 0, HM_ERR_NOMEM = -1, HM_ERR_INVALID = -2 };

/* Largest stable id the model stores (ids share a 64-bit word with the generation). */
#define HM_ID_MAX ((UINT64_C(1) << 56) - 1)

typedef struct hm_model hm_model;

/* One range of the runtime's generation bounds (COR_PRF_GC_GENERATION_RANGE). Ranges of one
 * generation need not be contiguous or ordered; `length` is the bytes in use, so take the bounds
 * inside GarbageCollectionStarted/Finished, where it is exact. Zero-length ranges (empty regions)
 * are ignored; ranges that wrap, name a generation above HM_GEN_POH, or overlap one that starts
 * earlier are dropped and counted as anomalies. */
typedef struct hm_gen_range {
    uint64_t start;
    uint64_t length;
    uint32_t generation; /* HM_GEN_0 .. HM_GEN_POH */
    uint32_t reserved;
} hm_gen_range;

/* One moved or surviving range: every object whose old address a satisfies
 * old_start <= a < old_start + length now lives at new_start + (a - old_start).
 * A surviving (non-moving) range has new_start == old_start. Dropped and counted as anomalies:
 * zero length, wrapping, an old range overlapping one that starts earlier (on a tie: the later in
 * the input is dropped), a new range overlapping a kept new range that starts earlier. Objects of
 * a dropped range are not covered by it. */
typedef struct hm_move {
    uint64_t old_start;
    uint64_t new_start;
    uint64_t length;
} hm_move;

/* Everything the runtime told us about one GC. All arrays are borrowed for the call only. */
typedef struct hm_gc_input {
    uint32_t gc;             /* ordinal, for diagnostics */
    uint32_t condemned_mask; /* bit g set when generation g (0..4) was condemned; others ignored */
    const hm_gen_range *bounds_before; /* at GarbageCollectionStarted (pre-GC addresses); must
                                          not be empty: a GC without them is rejected */
    size_t n_bounds_before;
    const hm_gen_range *bounds_after;  /* at GarbageCollectionFinished (post-GC addresses) */
    size_t n_bounds_after;
    const hm_move *moves;    /* all MovedReferences2 and SurvivingReferences2 ranges of this GC, */
    size_t n_moves;          /* every batch concatenated, in any order (overlaps: see hm_move) */
} hm_gc_input;

/* Where apply_gc reports what happened. Callbacks may be NULL and must not call into the model.
 * For one GC, every `classified` call comes before any `died` or `survived` call; `died` and
 * `survived` calls interleave in no particular order. When ids are unique (the caller's
 * promise), each id is reported at most once per callback kind per GC. */
typedef struct hm_gc_sink {
    void *ctx;
    /* An object added since the previous GC was classified: `heap` is HM_GEN_0 (small-object
     * heap; any of gen 0..2 at GC start reports HM_GEN_0), HM_GEN_LOH, HM_GEN_POH or
     * HM_GEN_NONGC (its address was in no bounds range). */
    void (*classified)(void *ctx, uint64_t id, uint32_t heap);
    /* An object of a condemned generation was not covered by any range: it is gone. Also used
     * for evicted objects (see hm_model_add, and survivors landing on a held address), with the
     * generation the model had for them: HM_GEN_UNKNOWN if they were never classified. */
    void (*died)(void *ctx, uint64_t id, uint32_t gen_before);
    /* An object of a condemned generation survived; gen_after may equal gen_before. */
    void (*survived)(void *ctx, uint64_t id, uint32_t gen_before, uint32_t gen_after);
    /* Optional batch forms for the objects added since the previous GC, which are most of what
     * a gen0 GC reports: a caller counting millions of objects per second spares itself an
     * indirect call per object. When set, each replaces its per-object form for those objects
     * (and only those): one call per GC (none when there is nothing to report) with every
     * report as a packed word, id << HM_REPORT_SHIFT | value (HM_REPORT_ID, HM_REPORT_VALUE),
     * in the order the per-object form would have used. `classified_young` gives the heap as
     * `classified` does, for every object `classified` would have been called for;
     * `died_young` gives gen_before (always a generation at GC start, never HM_GEN_UNKNOWN) for
     * the objects added since the previous GC that a condemned generation took; evicted ones
     * still go through `died`. The ordering rule above holds: every classified report, batched
     * or not, comes before any `died`, `died_young` or `survived`. */
    void (*classified_young)(void *ctx, const uint64_t *reports, size_t n);
    void (*died_young)(void *ctx, const uint64_t *reports, size_t n);
    /* With classified_young set: the objects added since the previous GC that a condemned
     * generation took are not reported at all (neither died_young nor died); instead each
     * classified_young word of an object whose generation was condemned carries
     * HM_REPORT_CONDEMNED beside its heap, and such an object is alive only if `survived`
     * names it. The model then writes no word per young death (most of a gen0 GC's objects):
     * a caller that marks a condemned object dead until `survived` says otherwise needs none.
     * Evicted objects still go through `died`; the counts in hm_gc_stats are the same. */
    bool young_deaths_in_classified;
    /* Optional, with classified_young and young_deaths_in_classified (ignored otherwise): a
     * byte per id for the objects added since the previous GC, written instead of reported. The
     * fate of such an object whose id lies in [young_fates_first, young_fates_first +
     * young_fates_n) goes into young_fates[id - young_fates_first]: HM_FATE(heap, gen_after),
     * heap as `classified` gives it, gen_after its generation after the GC, HM_GEN_UNKNOWN when
     * a condemned generation took it, `heap` itself when its generation was not condemned. It
     * gets no classified_young word and no `survived` call. Evictions still go through `died`
     * (one evicted before the GC has the fate HM_FATE(HM_GEN_UNKNOWN, HM_GEN_UNKNOWN)), and the
     * counts in hm_gc_stats are the same. Bytes of ids the model does not hold are left alone.
     * They are written while the GC is prepared: after HM_ERR_NOMEM they are undefined. A
     * caller that keeps a byte per allocation anyway (the collector) is spared the batch words,
     * the pass over them and a call per young survivor. */
    uint8_t *young_fates;
    uint64_t young_fates_first;
    size_t young_fates_n;
} hm_gc_sink;

/* A young_fates byte: the heap, and the generation after the GC (HM_GEN_UNKNOWN: died). */
#define HM_FATE(heap, gen_after) ((uint8_t)((uint32_t)(gen_after) << 4 | (uint32_t)(heap)))
#define HM_FATE_HEAP(f) ((uint32_t)(f) & 15u)
#define HM_FATE_GEN(f) ((uint32_t)(f) >> 4)

/* A batch report word (see hm_gc_sink): the id, and the heap or generation. */
#define HM_REPORT_SHIFT 4
#define HM_REPORT_ID(word) ((word) >> HM_REPORT_SHIFT)
#define HM_REPORT_VALUE(word) ((uint32_t)((word) & ((1u << HM_REPORT_SHIFT) - 1)))
/* In a classified_young word under young_deaths_in_classified: the object's generation was
 * condemned (HM_REPORT_VALUE & ~HM_REPORT_CONDEMNED is the heap). */
#define HM_REPORT_CONDEMNED 8u

/* Counts of one GC; condemned == survived + died - evicted. */
typedef struct hm_gc_stats {
    size_t classified; /* objects classified in step 1 */
    size_t condemned;  /* objects in condemned generations at GC start */
    size_t survived;   /* of those, covered by a range */
    size_t died;       /* `died` reports: condemned objects not covered, plus evicted ones */
    size_t live_after; /* objects in the model after the GC */
    size_t anomalies;  /* runtime data the model could not place: a survivor whose new address
                          lies in no bounds range (it keeps its generation), dropped ranges (see
                          hm_gen_range and hm_move), evicted objects */
    size_t evicted;    /* objects that died unseen: added over (hm_model_add) or landed on by a
                          survivor; reported through `died` and counted in `anomalies` */
} hm_gc_stats;

/* A new, empty model, or NULL when out of memory. Free with hm_model_free (NULL is accepted). */
hm_model *hm_model_new(void);
/* Where a model's memory comes from: `realloc` with the C library's meaning (a NULL pointer
 * allocates), `free` accepting NULL, and optionally `calloc` (NULL: realloc, then memset). A
 * host that counts its memory passes its own (the collector does: collector/mem.h). The young
 * list's hash is large and mostly never touched: a calloc that maps fresh zero pages spares
 * zeroing (and faulting in) all of it. */
typedef struct hm_allocator {
    void *(*realloc)(void *p, size_t size);
    void (*free)(void *p);
    void *(*calloc)(size_t n, size_t size);
} hm_allocator;
/* hm_model_new with `alloc` for every allocation of the model, itself included (borrowed: it
 * must outlive the model); NULL: the C library's. */
hm_model *hm_model_new_with(const hm_allocator *alloc);
void hm_model_free(hm_model *m);

/* A {key, val} record; the model's sorts order by key only, stably. The young list's entry:
 * key the address, val id << 8 | scratch (hm_state.h). */
typedef struct hm_pair {
    uint64_t key;
    uint64_t val;
} hm_pair;

/* The end of the young list, the first member of every model, so that hm_model_add's common
 * case is inline: the collector adds every allocation of the program, and the call was 7% of
 * its thread's CPU on MidLife (heapmodel/README.md, "Adds, duplicate addresses and lookups").
 * The list holds 8 bytes per object, its address: the ids are kept apart as runs of consecutive
 * ids (the collector's come in blocks per thread), so an add whose id follows the last one's is
 * one store. Only hm_model_add reads it outside the model; only the model changes it otherwise. */
typedef struct hm_young_tail {
    uint64_t *young;  /* addresses, in arrival order (bit 0: model's scratch) */
    size_t n_young;
    size_t add_room;  /* an add while n_young is below needs no growth of the list or the hash */
    uint64_t next_id; /* the id that extends the last id run (UINT64_MAX when there is none) */
} hm_young_tail;

/* hm_model_add's other cases: a NULL model, invalid arguments, growth, an id that starts a run. */
int hm_model_add_slow(hm_model *m, uint64_t addr, uint64_t id);

/* Adds an object allocated at `addr` with stable id `id` (ids need not arrive in order, but must
 * be unique among the objects the model holds). Its generation is HM_GEN_UNKNOWN until the next
 * apply_gc classifies it. If the model already holds an object at `addr`, that object must have
 * died unseen: it is evicted, counted as an anomaly, and reported through `died` at the next
 * apply_gc. Amortised O(1), and only an append: whether `addr` is already held is settled later
 * (by the next lookup or count that needs it, or by the next apply_gc), which changes nothing
 * any function reports. Ids in ascending steps of one cost 8 bytes each, any other 24. Returns
 * HM_OK, HM_ERR_NOMEM (nothing changed) or HM_ERR_INVALID (addr 0 or not a multiple of 8, as
 * every object's is, or id above HM_ID_MAX). */
static inline int hm_model_add(hm_model *m, uint64_t addr, uint64_t id)
{
    hm_young_tail *t = (hm_young_tail *)(void *)m; /* a struct's first member: C11 6.7.2.1 */
    if (m && addr != 0 && (addr & 7) == 0 && id == t->next_id && id <= HM_ID_MAX &&
        t->n_young < t->add_room) {
        t->young[t->n_young++] = addr;
        t->next_id = id + 1;
        return HM_OK;
    }
    return hm_model_add_slow(m, addr, id);
}

/* Applies one GC (see the top of this file). Returns HM_OK; HM_ERR_NOMEM, in which case the
 * model is unchanged, no callback was made and the GC's effects are lost (the caller counts
 * this); or HM_ERR_INVALID (NULL model or input, NULL array with a count, no bounds_before), with
 * the model unchanged. `stats` may be NULL; it is zeroed on error. */
int hm_model_apply_gc(hm_model *m, const hm_gc_input *in, const hm_gc_sink *sink,
                      hm_gc_stats *stats);

/* Looks up the object at exactly `addr`. Returns true and fills *id and *generation (either may
 * be NULL) when the model holds one. Usually O(1) or O(log n); it may first finish deferred work
 * of earlier adds (hashing the objects added since the last lookup, amortised O(1) per add),
 * which is why a model taken as const is still updated: only ever from its one thread. */
bool hm_model_lookup(const hm_model *m, uint64_t addr, uint64_t *id, uint32_t *generation);

/* Calls fn for every object the model holds, in ascending address order. Stops early and
 * returns false when fn returns false. The model must not be changed from inside fn. Objects
 * added since the last GC are sorted into a temporary copy (~36 bytes each); if that allocation
 * fails, foreach returns false without calling fn. */
typedef bool (*hm_object_fn)(void *ctx, uint64_t addr, uint64_t id, uint32_t generation);
bool hm_model_foreach(const hm_model *m, hm_object_fn fn, void *ctx);

/* Number of objects the model holds. Like lookup, it first finishes the deferred work of
 * earlier adds (amortised O(1) per add). */
size_t hm_model_count(const hm_model *m);

/* Bytes of memory the model holds (for the collector's accounting and the benchmark). */
size_t hm_model_memory(const hm_model *m);

/* Debug check of every invariant (listed at the top of hm_model.c); returns false and writes a
 * message to `why` (may be NULL) when one is broken. Costs O(n log n); tests call it after every
 * step. */
bool hm_model_check(const hm_model *m, char *why, size_t why_size);

/* ---- objects found alive by a walk (sampled mode, attach) ------------------------------------
 * Without ObjectAllocated the collector learns objects only by looking at the heap after a GC:
 * the objects in the survivor ranges of the young generations, or every object of a full heap
 * walk. hm_model_discover takes such a list right after hm_model_apply_gc (no object added since,
 * so the model holds no young object) and, for each object, either finds the object the model
 * already holds at that address (its id) or inserts a new one with the next id from *next_id,
 * in the generation the caller names. One merge per 4 MiB window: O(n log n) for the sort of
 * the list (linear when it arrives in address order, as survivor ranges usually do) plus the
 * objects of the windows it touches. */
enum {
    HM_FOUND_NEW = 1,       /* unknown to the model: inserted with a new id */
    HM_FOUND_KNOWN = 2,     /* the model held an object at this address: its id and generation */
    HM_FOUND_DUPLICATE = 3, /* the list named this address twice: the first one's id */
    HM_FOUND_INVALID = 4,   /* address 0 or generation above HM_GEN_NONGC: ignored, id 0 */
};
typedef struct hm_found {
    uint64_t addr;
    uint64_t tag;        /* the caller's own (e.g. an index into its list); kept */
    uint64_t id;         /* out */
    uint32_t generation; /* in: the object's generation now; out: the model's for a known one */
    uint32_t status;     /* out: HM_FOUND_* */
} hm_found;

/* Sorts `found` by address in place and resolves every entry (see above); *n_new gets the number
 * of HM_FOUND_NEW. Returns HM_OK; HM_ERR_NOMEM with the model and *next_id unchanged (statuses
 * undefined); HM_ERR_INVALID when the model holds young objects or tombstones (call it right
 * after apply_gc, before any add), or the next id would pass HM_ID_MAX. */
int hm_model_discover(hm_model *m, hm_found *found, size_t n, uint64_t *next_id, size_t *n_new);

#endif /* HEAPLENS_HM_MODEL_H */
