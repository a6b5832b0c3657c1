/* test_store_primitives.c — the writer's small tools against plain ones:
 * store_radix_sort against a stable comparison sort, store_put_u64 against printf.
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
    {"put_u64", test_put_u64},
};

int main(int argc, char **argv)
{
    return test_cases_main(argc, argv, cases, G_N_ELEMENTS(cases), &failures);
}
