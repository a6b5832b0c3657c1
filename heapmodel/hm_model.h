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
 * Results are reported through a sink so the caller (the collector, or a test) decides what
 * to keep. Pure C, no runtime, no I/O, no locks: one thread owns a model.
 *
 * Cost: adding is amortised O(1); applying a GC costs O(c log c + r log r) where c is the number
 * of objects in condemned generations and r the number of ranges — objects of uncondemned
 * generations are not visited, so a gen0 GC on a large gen2 heap stays cheap.
 * Memory: about 16 bytes per live tracked object plus slack of the per-region arrays.
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

typedef struct hm_model hm_model;

/* One range of the runtime's generation bounds (COR_PRF_GC_GENERATION_RANGE). Ranges of one
 * generation need not be contiguous or ordered; `length` is the bytes in use. */
typedef struct hm_gen_range {
    uint64_t start;
    uint64_t length;
    uint32_t generation; /* HM_GEN_0 .. HM_GEN_POH */
    uint32_t reserved;
} hm_gen_range;

/* One moved or surviving range: every object whose old address a satisfies
 * old_start <= a < old_start + length now lives at new_start + (a - old_start).
 * A surviving (non-moving) range has new_start == old_start. */
typedef struct hm_move {
    uint64_t old_start;
    uint64_t new_start;
    uint64_t length;
} hm_move;

/* Everything the runtime told us about one GC. All arrays are borrowed for the call only. */
typedef struct hm_gc_input {
    uint32_t gc;             /* ordinal, for diagnostics */
    uint32_t condemned_mask; /* bit g set when generation g (0..4) was condemned */
    const hm_gen_range *bounds_before; /* at GarbageCollectionStarted (pre-GC addresses) */
    size_t n_bounds_before;
    const hm_gen_range *bounds_after;  /* at GarbageCollectionFinished (post-GC addresses) */
    size_t n_bounds_after;
    const hm_move *moves;    /* all MovedReferences2 and SurvivingReferences2 ranges of this GC, */
    size_t n_moves;          /* every batch concatenated, in any order; must not overlap */
} hm_gc_input;

/* Where apply_gc reports what happened. Callbacks may be NULL. For one GC, every `classified`
 * call comes before any `died` or `survived` call. Ids are reported at most once per callback
 * kind per GC. */
typedef struct hm_gc_sink {
    void *ctx;
    /* An object added since the previous GC was classified: `heap` is HM_GEN_0 (small-object
     * heap; any of gen 0..2 at GC start reports HM_GEN_0), HM_GEN_LOH, HM_GEN_POH or
     * HM_GEN_NONGC (its address was in no bounds range). */
    void (*classified)(void *ctx, uint64_t id, uint32_t heap);
    /* An object of a condemned generation was not covered by any range: it is gone. */
    void (*died)(void *ctx, uint64_t id, uint32_t gen_before);
    /* An object of a condemned generation survived; gen_after may equal gen_before. */
    void (*survived)(void *ctx, uint64_t id, uint32_t gen_before, uint32_t gen_after);
} hm_gc_sink;

typedef struct hm_gc_stats {
    size_t classified; /* objects classified in step 1 */
    size_t condemned;  /* objects in condemned generations at GC start */
    size_t survived;   /* of those, covered by a range */
    size_t died;       /* of those, not covered (includes evicted objects, see hm_model_add) */
    size_t live_after; /* objects in the model after the GC */
    size_t anomalies;  /* runtime data the model could not place: a survivor whose new address
                          lies in no bounds range (it keeps its generation), ranges that overlap
                          (the later one is ignored), ranges with zero length or that wrap */
} hm_gc_stats;

/* A new, empty model, or NULL when out of memory. Free with hm_model_free (NULL is accepted). */
hm_model *hm_model_new(void);
void hm_model_free(hm_model *m);

/* Adds an object allocated at `addr` with stable id `id` (ids need not arrive in order).
 * Its generation is HM_GEN_UNKNOWN until the next apply_gc classifies it.
 * If the model already holds an object at `addr`, that object must have died unseen: it is
 * evicted, counted as an anomaly, and reported through `died` at the next apply_gc.
 * Returns HM_OK, HM_ERR_NOMEM (nothing changed) or HM_ERR_INVALID (addr 0). */
int hm_model_add(hm_model *m, uint64_t addr, uint64_t id);

/* Applies one GC (see the top of this file). Returns HM_OK, or HM_ERR_NOMEM, in which case the
 * model is unchanged and the GC's effects are lost (the caller counts this). `stats` may be NULL. */
int hm_model_apply_gc(hm_model *m, const hm_gc_input *in, const hm_gc_sink *sink,
                      hm_gc_stats *stats);

/* Looks up the object at exactly `addr`. Returns true and fills *id and *generation (either may
 * be NULL) when the model holds one. */
bool hm_model_lookup(const hm_model *m, uint64_t addr, uint64_t *id, uint32_t *generation);

/* Calls fn for every object the model holds, in ascending address order. Stops early and
 * returns false when fn returns false. The model must not be changed from inside fn. */
typedef bool (*hm_object_fn)(void *ctx, uint64_t addr, uint64_t id, uint32_t generation);
bool hm_model_foreach(const hm_model *m, hm_object_fn fn, void *ctx);

/* Number of objects the model holds. */
size_t hm_model_count(const hm_model *m);

/* Bytes of memory the model holds (for the collector's accounting and the benchmark). */
size_t hm_model_memory(const hm_model *m);

/* Debug check of every invariant (see hm_model.c); returns false and writes a message to
 * `why` (may be NULL) when one is broken. Costs O(n); tests call it after every step. */
bool hm_model_check(const hm_model *m, char *why, size_t why_size);

#endif /* HEAPLENS_HM_MODEL_H */
