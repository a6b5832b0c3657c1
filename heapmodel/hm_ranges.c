/* hm_ranges.c — from the runtime's range arrays to sorted, disjoint span indexes.
 *
 * The runtime hands over generation bounds (one range per region, in no particular order) and
 * moved/surviving ranges (in batches per heap, concatenated in any order). The model binary-
 * searches them by address, so they are sorted here; the data comes from another program and is
 * validated with recoverable checks: a range that cannot be right is dropped and counted, never
 * asserted on. The rules are spelled out in hm_internal.h and mirrored by the naive model of the
 * differential test, so both must change together.
 */
#include "heapmodel/hm_state.h"

/* Sorts pairs[0..k) (key = start, val = input index) and returns the sorted array. The pairs were
 * made in input order and the sort is stable, so ties keep input order. */
static hm_pair *hm_ranges_sort(hm_pair *pairs, size_t k)
{
    return hm_pairs_sort(pairs, pairs + k, k);
}

size_t hm_spans_from_bounds(hm_span *out, hm_pair *pairs, const hm_gen_range *r, size_t n,
                            size_t *anomalies)
{
    size_t k = 0, kept = 0;

    for (size_t i = 0; i < n; i++) {
        if (r[i].length == 0)
            continue;
        if (r[i].start + r[i].length < r[i].start || r[i].generation > HM_GEN_POH) {
            (*anomalies)++;
            continue;
        }
        pairs[k].key = r[i].start;
        pairs[k].val = i;
        k++;
    }
    const hm_pair *sorted = hm_ranges_sort(pairs, k);
    for (size_t i = 0; i < k; i++) {
        const hm_gen_range *g = &r[sorted[i].val];
        if (kept > 0 && g->start < out[kept - 1].end) {
            (*anomalies)++;
            continue;
        }
        out[kept].start = g->start;
        out[kept].end = g->start + g->length;
        out[kept].aux = g->generation;
        kept++;
    }
    return kept;
}

/* Drops moves whose destination overlaps the destination of a kept move that starts earlier.
 * Without this two survivors could be given one address. Real data never needs it, so the common
 * case is one pass that finds the destinations already disjoint. */
static size_t hm_spans_check_destinations(hm_span *out, size_t kept, hm_pair *pairs,
                                          size_t *anomalies)
{
    /* Ties on the new start are broken by old start: pairs are made in old-start order. */
    for (size_t i = 0; i < kept; i++) {
        pairs[i].key = out[i].aux;
        pairs[i].val = i;
    }
    const hm_pair *sorted = hm_ranges_sort(pairs, kept);
    uint64_t last_end = 0;
    size_t dropped = 0;
    for (size_t i = 0; i < kept; i++) {
        hm_span *s = &out[sorted[i].val];
        uint64_t new_end = s->aux + (s->end - s->start);
        if (i > 0 && s->aux < last_end) {
            s->end = s->start; /* marks the span dropped: kept spans are never empty */
            dropped++;
            continue;
        }
        last_end = new_end;
    }
    if (dropped == 0)
        return kept;
    *anomalies += dropped;
    size_t w = 0;
    for (size_t i = 0; i < kept; i++)
        if (out[i].end != out[i].start)
            out[w++] = out[i];
    return w;
}

bool hm_spans_copy_if_ordered(hm_span *out, const hm_move *mv, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const hm_move *x = &mv[i];
        if (x->length == 0 || x->old_start + x->length < x->old_start ||
            x->new_start + x->length < x->new_start)
            return false;
        if (i > 0 && (x->old_start < mv[i - 1].old_start + mv[i - 1].length ||
                      x->new_start < mv[i - 1].new_start + mv[i - 1].length))
            return false;
        out[i].start = x->old_start;
        out[i].end = x->old_start + x->length;
        out[i].aux = x->new_start;
    }
    return true;
}

/* The runtime's usual order: a region's moves in a row, ascending by old address, the regions
 * in the order it compacted them (not by address). Cut where the old address goes back or
 * enters another 4 MiB window (a region's granule: consecutive regions that happen to ascend
 * would otherwise make one batch spanning regions listed later), such batches are disjoint, and
 * ordered by their first address they give the spans' order: the spans are then copied batch by
 * batch, without a pair per move, its sort and the gather (a compacting GC of MidLife brings
 * 140,000-260,000 moves in a few dozen batches). Returns false (out then holds nothing that
 * counts) when a move is invalid or two batches overlap, which the general path sorts out.
 * pairs: scratch of n + hm_sort_tmp_size(n). */
static bool hm_spans_copy_batches(hm_span *out, hm_pair *pairs, const hm_move *mv, size_t n)
{
    size_t b = 0, max = n / 4 + 1;
    if (n > UINT32_MAX)
        return false;
    for (size_t i = 0; i < n; i++) {
        const hm_move *x = &mv[i], *p = &mv[i > 0 ? i - 1 : 0];
        if (x->length == 0 || x->old_start + x->length < x->old_start ||
            x->new_start + x->length < x->new_start)
            return false; /* invalid: the general path drops and counts it */
        if (i > 0 && x->old_start >= p->old_start + p->length &&
            x->old_start >> HM_WINDOW_SHIFT == p->old_start >> HM_WINDOW_SHIFT) {
            pairs[b - 1].val++; /* the batch goes on */
            continue;
        }
        if (b == max)
            return false; /* batches too short to be worth it */
        pairs[b++] = (hm_pair){x->old_start, (uint64_t)i << 32 | 1};
    }
    const hm_pair *batch = hm_pairs_sort(pairs, pairs + b, b);
    uint64_t end = 0; /* the old end of the batches so far */
    size_t kept = 0;
    for (size_t k = 0; k < b; k++) {
        if (batch[k].key < end)
            return false;
        const hm_move *x = &mv[batch[k].val >> 32], *last = x + (uint32_t)batch[k].val;
        for (; x < last; x++)
            out[kept++] = (hm_span){x->old_start, x->old_start + x->length, x->new_start};
        end = out[kept - 1].end;
    }
    return true;
}

size_t hm_spans_from_moves(hm_span *out, hm_pair *pairs, const hm_move *mv, size_t n,
                           size_t *anomalies)
{
    size_t k = 0, kept = 0;

    if (hm_spans_copy_if_ordered(out, mv, n))
        return n;
    if (hm_spans_copy_batches(out, pairs, mv, n)) /* valid and disjoint: only the destinations */
        return hm_spans_check_destinations(out, n, pairs, anomalies);

    for (size_t i = 0; i < n; i++) {
        const hm_move *x = &mv[i];
        if (x->length == 0 || x->old_start + x->length < x->old_start ||
            x->new_start + x->length < x->new_start) {
            (*anomalies)++;
            continue;
        }
        pairs[k].key = x->old_start;
        pairs[k].val = i;
        k++;
    }
    const hm_pair *sorted = hm_ranges_sort(pairs, k);
    for (size_t i = 0; i < k; i++) {
        const hm_move *x = &mv[sorted[i].val];
        if (kept > 0 && x->old_start < out[kept - 1].end) {
            (*anomalies)++;
            continue;
        }
        out[kept].start = x->old_start;
        out[kept].end = x->old_start + x->length;
        out[kept].aux = x->new_start;
        kept++;
    }
    return hm_spans_check_destinations(out, kept, pairs, anomalies);
}
