/* test_hm_sort.c — the internal pieces: the adaptive pair sort against a stable reference on
 * every input shape it special-cases, and the cursor search of span indexes against a scan. */
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
    printf("test_hm_sort: ok\n");
    return 0;
}
