/* hm_internal.h — pieces shared by the heapmodel source files; not part of the module's API.
 *
 * hm_sort.c   sorts 16-byte {key, val} pairs (adaptive: sorted runs cost O(n), else radix).
 * hm_ranges.c turns the runtime's range arrays into sorted, disjoint span indexes and applies
 *             the validation rules promised in hm_model.h (what is dropped and counted).
 * hm_model.c  the model itself (its state in hm_state.h), with hm_young.c for the young
 *             objects (the lazily synced hash, deferred duplicate checks).
 */
#ifndef HEAPLENS_HM_INTERNAL_H
#define HEAPLENS_HM_INTERNAL_H

#include "heapmodel/hm_model.h"

#include <stddef.h>
#include <stdint.h>

#define HM_NONE ((size_t)-1)

/* hm_pair, a sortable record (by key only, stably), is in hm_model.h: the young list's entry,
 * which hm_model_add's inline common case writes. */

/* Number of pairs the `tmp` buffer of hm_pairs_sort must hold for n input pairs: n for the
 * scatter/gather target plus two arrays of run descriptors (at most n/8 runs take that path). */
size_t hm_sort_tmp_size(size_t n);

/* Sorts a[0..n) by key, stably. Returns a or tmp, whichever holds the result; the other buffer
 * is clobbered. Already sorted input costs one read pass; input made of few ascending runs that
 * do not interleave (allocation contexts of several threads) costs O(n + runs log runs);
 * anything else is an LSD radix sort over the key bytes that differ. */
hm_pair *hm_pairs_sort(hm_pair *a, hm_pair *tmp, size_t n);

/* A half-open address interval [start, end) with a payload: the generation for bounds, the new
 * start for moves. Span arrays are sorted by start and disjoint. */
typedef struct hm_span {
    uint64_t start;
    uint64_t end;
    uint64_t aux;
} hm_span;

/* Builds the span index of generation bounds into out[0..n) and returns how many were kept.
 * Zero-length ranges are skipped silently (empty regions are normal); ranges that wrap or name a
 * generation above HM_GEN_POH are dropped, and of overlapping ranges the one that starts later
 * (on a tie: comes later in the input) is dropped — each drop adds one to *anomalies.
 * `pairs` must hold n + hm_sort_tmp_size(n) pairs (scratch). */
size_t hm_spans_from_bounds(hm_span *out, hm_pair *pairs, const hm_gen_range *r, size_t n,
                            size_t *anomalies);

/* Same for moved/surviving ranges, keyed by old address, aux = new start. Dropped (and counted):
 * zero length, old or new range wrapping, old range overlapping a kept one that starts earlier
 * (ties: input order), then destination overlapping a kept destination that starts earlier (ties:
 * the one with the lower old start wins). After this no two survivors can land on one address.
 * Moves in the runtime's order (each region's in a row, ascending) are copied a batch at a time
 * rather than sorted one by one. */
size_t hm_spans_from_moves(hm_span *out, hm_pair *pairs, const hm_move *mv, size_t n,
                           size_t *anomalies);

/* The common case of hm_spans_from_moves: every move valid, old starts ascending without
 * overlap, new ranges too (one heap compacting in address order, or surviving ranges). Then the
 * spans are a plain copy into out[0..n), no scratch and no sort needed, and it returns true;
 * otherwise false, and out holds nothing that counts. */
bool hm_spans_copy_if_ordered(hm_span *out, const hm_move *mv, size_t n);

/* Index of the span containing key, or HM_NONE. *hint is a cursor: lookups with ascending or
 * clustered keys (the common case: objects are visited in address or allocation order) cost O(1);
 * any other key costs a binary search. *hint must start at 0 and stay below n or equal to it. */
static inline size_t hm_spans_find(const hm_span *s, size_t n, uint64_t key, size_t *hint)
{
    size_t lo = 0, hi = n;
    size_t i = *hint;

    if (i < n && s[i].start <= key) {
        if (key < s[i].end)
            return i;
        if (i + 1 >= n || key < s[i + 1].start)
            return HM_NONE; /* in the gap after span i: the cursor stays */
        if (key < s[i + 1].end) {
            *hint = i + 1;
            return i + 1;
        }
        lo = i + 2;
    } else {
        hi = i < n ? i : n;
    }
    /* First span in [lo, hi) whose start is above key; its predecessor is the candidate. */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s[mid].start <= key)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return HM_NONE;
    *hint = lo - 1;
    return key < s[lo - 1].end ? lo - 1 : HM_NONE;
}

/* Like hm_spans_find, for keys that mostly ascend with no span lying wholly between two
 * consecutive keys — objects of one allocation context looked up in moves made of plugs of those
 * objects: the cursor then advances by at most one span per key, which is done without a branch,
 * so that a random pattern of hits and misses does not cost a misprediction per key. Anything
 * else takes the binary search. Returns the span index or HM_NONE; n must be at least 1. */
static inline size_t hm_spans_step(const hm_span *s, size_t n, uint64_t key, size_t *hint)
{
    size_t i = *hint;
    i += i + 1 < n && s[i + 1].start <= key;
    if (i < n && s[i].start <= key && (i + 1 == n || key < s[i + 1].start)) {
        *hint = i;
        size_t miss = key >= s[i].end;
        return i | ((size_t)0 - miss); /* i, or HM_NONE (all ones) */
    }
    return hm_spans_find(s, n, key, hint);
}

#endif /* HEAPLENS_HM_INTERNAL_H */
