/* test_hm_sort.c — the internal pieces: the adaptive pair sort against a stable reference on
 * every input shape it special-cases, the cursor search of span indexes against a scan, and
 * the moves' span index against the rules of hm_internal.h applied step by step. */
#include "heapmodel/hm_internal.h"
#include "hm_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng_next(uint64_t *s)
{
    /* splitmix64: small, seedable, good enough for test data */
    uint64_t z = (*s += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

/* Stable reference: merge sort. */
static void ref_sort(hm_pair *a, hm_pair *t, size_t n)
{
    if (n < 2)
        return;
    size_t h = n / 2;
    ref_sort(a, t, h);
    ref_sort(a + h, t, n - h);
    size_t i = 0, j = h, k = 0;
    while (i < h || j < n)
        t[k++] = (j >= n || (i < h && a[i].key <= a[j].key)) ? a[i++] : a[j++];
    memcpy(a, t, n * sizeof(*a));
}

enum { SHAPE_SORTED, SHAPE_RUNS, SHAPE_RUNS_OVERLAP, SHAPE_RUNS_TIES, SHAPE_INTERLEAVED,
       SHAPE_RANDOM, SHAPE_DUPS, SHAPE_REVERSED, SHAPE_COUNT };

static void fill(hm_pair *a, size_t n, int shape, uint64_t *rng)
{
    uint64_t base = UINT64_C(0x7f0000000000);
    size_t run = 1 + rng_next(rng) % 300;
    for (size_t i = 0; i < n; i++) {
        uint64_t k;
        switch (shape) {
        case SHAPE_SORTED:
            k = base + 8 * i;
            break;
        case SHAPE_RUNS: /* runs over disjoint chunks, chunks in shuffled order */
            k = base + ((i / run) * 7919 % (n / run + 1)) * 0x100000 + 8 * (i % run);
            break;
        case SHAPE_RUNS_OVERLAP: /* the same, with a few short runs inside other chunks */
            k = base + ((i / run) * 7919 % (n / run + 1)) * 0x100000 + 8 * (i % run);
            if (i % (run * 5) < 3)
                k = base + 0x100000 * (rng_next(rng) % (n / run + 1)) + 4 + 8 * (i % 3);
            break;
        case SHAPE_RUNS_TIES: /* the same, the short runs repeating keys of other chunks */
            k = base + ((i / run) * 7919 % (n / run + 1)) * 0x100000 + 8 * (i % run);
            if (i % (run * 5) < 3)
                k = base + 0x100000 * (rng_next(rng) % (n / run + 1)) +
                    (i % run % 2 ? 8 * (i % 3) : 4 + 8 * (i % 3)); /* a tie first, or later */
            break;
        case SHAPE_INTERLEAVED: /* runs whose intervals overlap */
            k = base + (i % run) * 16 + (i / run) * 8;
            break;
        case SHAPE_DUPS:
            k = base + 8 * (rng_next(rng) % 16);
            break;
        case SHAPE_REVERSED:
            k = base + 8 * (n - i);
            break;
        default:
            k = rng_next(rng);
            break;
        }
        a[i].key = k;
        a[i].val = i; /* original position: proves stability */
    }
}

static void test_sort(uint64_t *rng)
{
    for (int shape = 0; shape < SHAPE_COUNT; shape++) {
        for (int round = 0; round < 40; round++) {
            size_t n = (size_t)(rng_next(rng) % (round < 20 ? 64 : 20000));
            hm_pair *a = malloc((n + 1) * sizeof(*a));
            hm_pair *want = malloc((n + 1) * sizeof(*a));
            hm_pair *t = malloc((hm_sort_tmp_size(n) + 1) * sizeof(*a));
            fill(a, n, shape, rng);
            memcpy(want, a, n * sizeof(*a));
            ref_sort(want, t, n);
            hm_pair *got = hm_pairs_sort(a, t, n);
            CHECK(got == a || got == t);
            for (size_t i = 0; i < n; i++) {
                CHECK_EQ(got[i].key, want[i].key);
                CHECK_EQ(got[i].val, want[i].val);
            }
            free(a);
            free(want);
            free(t);
        }
    }
}

/* A short run that comes first in the input but sorts after a long run, and repeats one of its
 * keys past its own first key: the run merge must keep the short run's element first. */
static void test_sort_tie_inside_merge(void)
{
    hm_pair a[43], t[43 + 2 * (43 / 8 + 1)];
    const uint64_t shorty[3] = {1004, 1016, 1020};
    for (size_t i = 0; i < 3; i++)
        a[i] = (hm_pair){shorty[i], i};
    for (size_t i = 0; i < 40; i++)
        a[3 + i] = (hm_pair){1000 + 8 * i, 3 + i};
    hm_pair *got = hm_pairs_sort(a, t, 43);
    for (size_t i = 1; i < 43; i++) {
        CHECK(got[i - 1].key <= got[i].key);
        if (got[i - 1].key == got[i].key)
            CHECK(got[i - 1].val < got[i].val);
    }
}

static void test_spans_find(uint64_t *rng)
{
    for (int round = 0; round < 200; round++) {
        size_t n = (size_t)(rng_next(rng) % 50);
        hm_span s[64];
        uint64_t at = 1000;
        for (size_t i = 0; i < n; i++) {
            at += rng_next(rng) % 3 * 10; /* sometimes adjacent, sometimes a gap */
            s[i].start = at;
            s[i].end = at + 1 + rng_next(rng) % 40;
            s[i].aux = i;
            at = s[i].end;
        }
        size_t hint = 0;
        for (int q = 0; q < 500; q++) {
            /* first a sweep in ascending order, then random keys */
            uint64_t key = q < 250 ? 990 + (uint64_t)q * (at - 980) / 250
                                   : 990 + rng_next(rng) % (at - 980);
            size_t want = HM_NONE;
            for (size_t i = 0; i < n; i++)
                if (s[i].start <= key && key < s[i].end)
                    want = i;
            CHECK_EQ(hm_spans_find(s, n, key, &hint), want);
            CHECK(hint <= n);
        }
    }
}

/* hm_spans_from_moves' rules one by one (hm_internal.h): invalid moves dropped, the rest stably
 * by old start, a move overlapping a kept one that starts earlier dropped, then by new start
 * (ties: old start) one overlapping a kept destination dropped. */
static size_t ref_moves(hm_span *out, const hm_move *mv, size_t n, size_t *anomalies)
{
    hm_pair *p = calloc(n + 1, sizeof(*p)), *t = calloc(n + 1, sizeof(*t));
    size_t k = 0, kept = 0;
    for (size_t i = 0; i < n; i++) {
        if (mv[i].length == 0 || mv[i].old_start + mv[i].length < mv[i].old_start ||
            mv[i].new_start + mv[i].length < mv[i].new_start)
            (*anomalies)++;
        else
            p[k++] = (hm_pair){mv[i].old_start, i};
    }
    ref_sort(p, t, k);
    hm_span *o = calloc(n + 1, sizeof(*o));
    for (size_t i = 0; i < k; i++) {
        const hm_move *x = &mv[p[i].val];
        if (kept > 0 && x->old_start < o[kept - 1].end)
            (*anomalies)++;
        else
            o[kept++] = (hm_span){x->old_start, x->old_start + x->length, x->new_start};
    }
    for (size_t i = 0; i < kept; i++)
        p[i] = (hm_pair){o[i].aux, i};
    ref_sort(p, t, kept);
    uint64_t last_end = 0;
    for (size_t i = 0; i < kept; i++) {
        hm_span *x = &o[p[i].val];
        if (i > 0 && x->aux < last_end) {
            x->end = x->start;
            (*anomalies)++;
        } else {
            last_end = x->aux + (x->end - x->start);
        }
    }
    size_t w = 0;
    for (size_t i = 0; i < kept; i++)
        if (o[i].end != o[i].start)
            out[w++] = o[i];
    free(p);
    free(t);
    free(o);
    return w;
}

/* Moves shaped as the runtime sends them — batches ascending in old and new addresses, in any
 * order — which the batch copy takes whole, and the same spoiled in each way that must send
 * them to the general path: batches overlapping in old or in new addresses, an invalid move,
 * batches of one move. */
static void test_moves(uint64_t *rng)
{
    enum { MAXN = 4000 };
    hm_move *mv = calloc(MAXN, sizeof(*mv));
    hm_span *got = calloc(MAXN, sizeof(*got)), *want = calloc(MAXN, sizeof(*want));
    hm_pair *scratch = calloc(MAXN + hm_sort_tmp_size(MAXN), sizeof(*scratch));
    for (int round = 0; round < 400; round++) {
        int spoil = round % 6; /* 0, 1: clean; 2: old overlap; 3: new overlap; 4: invalid; 5: ones */
        size_t n_batches = 1 + (size_t)(rng_next(rng) % 40), n = 0;
        size_t order[40];
        for (size_t b = 0; b < n_batches; b++)
            order[b] = b;
        for (size_t b = n_batches; b > 1; b--) {
            size_t j = (size_t)(rng_next(rng) % b), x = order[b - 1];
            order[b - 1] = order[j];
            order[j] = x;
        }
        for (size_t bi = 0; bi < n_batches; bi++) {
            size_t b = order[bi], len = spoil == 5 ? 1 : 1 + (size_t)(rng_next(rng) % 90);
            /* batch b's old addresses in 4 MiB region b; its new ones in region b * 7 % 41:
             * both disjoint between batches */
            uint64_t old_at = UINT64_C(0x7f0000000000) + (uint64_t)b * 0x400000;
            uint64_t new_at = UINT64_C(0x7f8000000000) + (uint64_t)(b * 7 % 41) * 0x400000;
            for (size_t i = 0; i < len && n < MAXN; i++) {
                uint64_t l = 8 * (1 + rng_next(rng) % 40);
                old_at += 8 * (rng_next(rng) % 30);
                mv[n++] = (hm_move){old_at, new_at, l};
                old_at += l;
                new_at += l + 8 * (rng_next(rng) % 3);
            }
        }
        if (n > 1 && spoil == 2) /* a move inside another batch's old range, at its end */
            mv[n - 1].old_start = mv[rng_next(rng) % (n - 1)].old_start + 8;
        if (n > 1 && spoil == 3) /* a destination inside another's */
            mv[n - 1].new_start = mv[rng_next(rng) % (n - 1)].new_start;
        if (n > 1 && spoil == 4)
            mv[rng_next(rng) % n].length = 0;
        size_t a_got = 0, a_want = 0;
        size_t k_got = hm_spans_from_moves(got, scratch, mv, n, &a_got);
        size_t k_want = ref_moves(want, mv, n, &a_want);
        CHECK_EQ(k_got, k_want);
        CHECK_EQ(a_got, a_want);
        for (size_t i = 0; i < k_want; i++) {
            CHECK_EQ(got[i].start, want[i].start);
            CHECK_EQ(got[i].end, want[i].end);
            CHECK_EQ(got[i].aux, want[i].aux);
        }
    }
    free(mv);
    free(got);
    free(want);
    free(scratch);
}

int main(void)
{
    uint64_t seed = 12345;
    const char *env = getenv("HM_TEST_SEED");
    if (env)
        seed = strtoull(env, NULL, 0);
    printf("test_hm_sort: seed %llu (set HM_TEST_SEED to change)\n", (unsigned long long)seed);
    uint64_t rng = seed;
    test_sort(&rng);
    test_sort_tie_inside_merge();
    test_spans_find(&rng);
    test_moves(&rng);
    printf("test_hm_sort: ok\n");
    return 0;
}
