/* hm_sort.c — the stable pair sort behind every GC step of the model.
 *
 * A GC sorts survivors by new address, moves by old (and new) address and the generation bounds.
 * qsort spends about 16 callback comparisons per element on 50k survivors, a few milliseconds,
 * which alone would blow the 0.5 ms budget of a gen0 GC; this sort exploits what the data
 * usually looks like:
 *   - already sorted (one thread allocating, one heap compacting): one read pass;
 *   - ascending runs that mostly occupy disjoint address intervals (several threads
 *     bump-allocating in their own allocation contexts, survivors packed into several destination
 *     regions): sort the runs by their first key and concatenate them, merging the odd run that
 *     overlaps into the tail of the output. A run also ends where the key jumps by more than
 *     HM_RUN_GAP: a thread moving on to its next allocation context jumps over the other
 *     threads' contexts, and a run bridging them would overlap theirs;
 *   - anything else: LSD radix sort on the bytes where the keys differ (addresses of one process
 *     share their top bytes, so typically 3–5 passes). */
#include "heapmodel/hm_internal.h"

#include <string.h>

enum { HM_SMALL_SORT = 32 };

/* Larger than the distance between neighbouring small objects, smaller than an allocation
 * context (8 KiB in CoreCLR). Only a heuristic: a wrong guess costs speed, never correctness. */
#define HM_RUN_GAP 2048u

/* True when b cannot continue a run that ended with a. */
static bool hm_run_breaks(uint64_t a, uint64_t b)
{
    return b < a || b - a > HM_RUN_GAP;
}

size_t hm_sort_tmp_size(size_t n)
{
    return n + 2 * (n / 8 + 1);
}

/* Stable insertion sort for tiny inputs, where the radix histograms would dominate. */
static void hm_pairs_insertion_sort(hm_pair *a, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        hm_pair x = a[i];
        size_t j = i;
        while (j > 0 && a[j - 1].key > x.key) {
            a[j] = a[j - 1];
            j--;
        }
        a[j] = x;
    }
}

/* LSD radix sort, one byte per pass, skipping bytes in which no two keys differ (diff has a bit
 * set wherever some key differs from another). Stable because every pass scatters in order. */
static hm_pair *hm_pairs_radix(hm_pair *a, hm_pair *b, size_t n, uint64_t diff)
{
    size_t count[8][256];
    unsigned digits[8];
    unsigned n_digits = 0;

    for (unsigned d = 0; d < 8; d++)
        if ((diff >> (8 * d)) & 0xff)
            digits[n_digits++] = d;
    if (n_digits == 0)
        return a;
    memset(count, 0, sizeof(count));
    for (size_t i = 0; i < n; i++) {
        uint64_t k = a[i].key;
        for (unsigned t = 0; t < n_digits; t++)
            count[t][(k >> (8 * digits[t])) & 0xff]++;
    }
    for (unsigned t = 0; t < n_digits; t++) {
        unsigned shift = 8 * digits[t];
        size_t sum = 0;
        for (unsigned v = 0; v < 256; v++) {
            size_t c = count[t][v];
            count[t][v] = sum;
            sum += c;
        }
        for (size_t i = 0; i < n; i++)
            b[count[t][(a[i].key >> shift) & 0xff]++] = a[i];
        hm_pair *swap = a;
        a = b;
        b = swap;
    }
    return a;
}

/* Merges the run r[0..len) into the sorted out[0..o), which has room behind it: from the back,
 * touching only the part of out that lies above r's first key. Returns the number of elements
 * moved, or 0 when a key of r equals one in out (then stability would need the input positions,
 * which are gone: the caller falls back to radix). */
static size_t hm_pairs_merge_run(hm_pair *out, size_t o, const hm_pair *r, size_t len)
{
    size_t lo = 0, hi = o;
    while (lo < hi) { /* first element of out above r's first key */
        size_t mid = lo + (hi - lo) / 2;
        if (out[mid].key <= r[0].key)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo > 0 && out[lo - 1].key == r[0].key)
        return 0;
    size_t i = o, j = len, w = o + len;
    while (j > 0) {
        if (i > lo && out[i - 1].key > r[j - 1].key)
            out[--w] = out[--i];
        else if (i > lo && out[i - 1].key == r[j - 1].key)
            return 0;
        else
            out[--w] = r[--j];
    }
    return (o - lo) + len;
}

/* The run path: a[0..n) consists of at most n/8 ascending runs (the caller checks). Ordered by
 * their first key, the runs usually occupy disjoint intervals and are simply concatenated; a run
 * that overlaps what is already output is merged into its tail. Returns the sorted buffer (tmp),
 * or NULL when merging would cost more than a few passes or meets equal keys from two runs
 * (a stable result would need input positions): the caller then uses radix. */
static hm_pair *hm_pairs_concat_runs(hm_pair *a, hm_pair *tmp, size_t n)
{
    hm_pair *runs = tmp + n;
    hm_pair *runs_tmp = runs + (n / 8 + 1);
    size_t r = 0, start = 0;
    uint64_t diff = 0;

    for (size_t i = 1; i <= n; i++) {
        if (i == n || hm_run_breaks(a[i - 1].key, a[i].key)) {
            /* n fits in 32 bits here (checked by the caller), so start and length pack. */
            runs[r].key = a[start].key;
            runs[r].val = (uint64_t)start << 32 | (uint64_t)(i - start);
            diff |= runs[r].key ^ runs[0].key;
            r++;
            start = i;
        }
    }
    hm_pair *order = runs;
    if (r < HM_SMALL_SORT)
        hm_pairs_insertion_sort(runs, r);
    else
        order = hm_pairs_radix(runs, runs_tmp, r, diff);
    size_t out = 0, budget = 2 * n;
    for (size_t k = 0; k < r; k++) {
        size_t s = (size_t)(order[k].val >> 32), len = (size_t)(order[k].val & 0xffffffffu);
        if (out == 0 || tmp[out - 1].key < a[s].key) {
            memcpy(tmp + out, a + s, len * sizeof(*a));
        } else {
            size_t moved = hm_pairs_merge_run(tmp, out, a + s, len);
            if (moved == 0 || moved > budget)
                return NULL;
            budget -= moved;
        }
        out += len;
    }
    return tmp;
}

hm_pair *hm_pairs_sort(hm_pair *a, hm_pair *tmp, size_t n)
{
    size_t n_runs = 1;
    bool sorted = true;
    uint64_t diff = 0;

    if (n < 2)
        return a;
    for (size_t i = 1; i < n; i++) {
        sorted &= a[i].key >= a[i - 1].key;
        n_runs += hm_run_breaks(a[i - 1].key, a[i].key);
        diff |= a[i].key ^ a[0].key;
    }
    if (sorted)
        return a;
    if (n < HM_SMALL_SORT) {
        hm_pairs_insertion_sort(a, n);
        return a;
    }
    if (n_runs <= n / 8 && n <= UINT32_MAX) {
        hm_pair *out = hm_pairs_concat_runs(a, tmp, n);
        if (out)
            return out;
    }
    return hm_pairs_radix(a, tmp, n, diff);
}
