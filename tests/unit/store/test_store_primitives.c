/* test_store_primitives.c — the writer's small tools against plain ones:
 * store_radix_sort against a stable comparison sort, store_sort_ids against qsort, store_put_u64
 * against printf.
 *
 * Usage: test_store_primitives <case>|all   (ctest runs each case as store.<case>).
 * What the store's tests share: store_test.h.
 */
#define _GNU_SOURCE
#include "tests/unit/store/store_test.h"

/* store_radix_sort against a stable comparison sort: random keys with repeats (the items keep
 * their order among equal keys), and inputs sorted already or but for their last item (the
 * sorted ones are left as they are, without a pass). */
typedef struct radix_item {
    uint64_t key, seq;
} radix_item;

static int radix_item_cmp(const void *a, const void *b)
{
    const radix_item *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static void test_radix_sort(void)
{
    enum { N = 5000 };
    static radix_item items[N], want[N];
    uint64_t rng = 0x9e3779b97f4a7c15u;
    for (int shape = 0; shape < 4; shape++) {
        for (size_t i = 0; i < N; i++) {
            rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
            uint64_t key = shape == 0 ? rng % 97 : shape == 1 ? rng : 1000 + 3 * i;
            if (shape == 3 && i == N - 1)
                key = 5; /* sorted but for the last */
            items[i] = (radix_item){.key = key, .seq = i};
        }
        memcpy(want, items, sizeof items);
        qsort(want, N, sizeof *want, radix_item_cmp);
        store_radix_sort(items, N, sizeof *items, G_STRUCT_OFFSET(radix_item, key));
        CHECK(memcmp(items, want, sizeof items) == 0);
    }
}

static int u64_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* store_sort_ids against qsort: ids in 1 to 40 ascending runs (merged up to
 * STORE_SORT_MERGE_RUNS, radix-sorted past it) of uneven lengths, runs that interleave (a GC's
 * deaths: each thread's blocks in address order) and runs that follow one another, repeats
 * included; and no id, one, two out of order. */
static void test_sort_ids(void)
{
    enum { N = 8192 };
    static uint64_t ids[N], want[N], scratch[N];
    uint64_t rng = 0x2545f4914f6cdd1du;
    for (int runs = 1; runs <= 40; runs++)
        for (int shape = 0; shape < 3; shape++) {
            size_t n = shape == 2 ? 1 + (size_t)runs * 37 % N : N;
            uint64_t id = 1000;
            size_t run_end = 0, run = 0;
            for (size_t i = 0; i < n; i++) {
                if (i == run_end) { /* a new run: back to a lower id, uneven lengths */
                    run++;
                    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
                    run_end = run == (size_t)runs ? n : i + 1 + rng % (2 * n / (size_t)runs);
                    run_end = run_end > n ? n : run_end;
                    id = shape == 1 ? 1000 + (uint64_t)(runs - run) * 4 * N : 1000 + rng % 64;
                }
                rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
                id += rng % 4; /* 0: a repeat */
                ids[i] = id;
            }
            memcpy(want, ids, n * sizeof *ids);
            qsort(want, n, sizeof *want, u64_cmp);
            store_sort_ids(ids, n, scratch);
            if (memcmp(ids, want, n * sizeof *ids) != 0) {
                CHECK(!"store_sort_ids sorts like qsort");
                fprintf(stderr, "  %d runs, shape %d, %zu ids\n", runs, shape, n);
                return;
            }
        }
    uint64_t two[2] = {7, 3}, one[1] = {5};
    store_sort_ids(two, 2, scratch);
    CHECK(two[0] == 3 && two[1] == 7);
    store_sort_ids(one, 1, scratch);
    CHECK(one[0] == 5);
    store_sort_ids(NULL, 0, scratch);
}

/* store_put_u64 writes what printf("%" PRIu64) writes: every number below 100,000, each power
 * of ten and its neighbours, and the largest. */
static gboolean put_u64_agrees(uint64_t x)
{
    char got[STORE_U64_DIGITS + 1], want[32];
    got[store_put_u64(got, x) - got] = 0;
    snprintf(want, sizeof want, "%" PRIu64, x);
    if (strcmp(got, want) == 0)
        return TRUE;
    CHECK_STR(got, want);
    return FALSE;
}

static void test_put_u64(void)
{
    for (uint64_t x = 0; x < 100000; x++)
        if (!put_u64_agrees(x))
            return;
    for (uint64_t p = 10; p <= UINT64_MAX / 10; p *= 10)
        if (!put_u64_agrees(p - 1) || !put_u64_agrees(p) || !put_u64_agrees(p + 1))
            return;
    put_u64_agrees(UINT64_MAX);
}

static const test_case cases[] = {
    {"radix_sort", test_radix_sort},
    {"sort_ids", test_sort_ids},
    {"put_u64", test_put_u64},
};

int main(int argc, char **argv)
{
    return test_cases_main(argc, argv, cases, G_N_ELEMENTS(cases), &failures);
}
