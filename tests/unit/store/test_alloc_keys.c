/* test_alloc_keys.c — the writer's set of ALLOC_COUNTS keys (store_alloc_keys, store_gc.c),
 * against GLib's hash table with a fixed seed.
 *
 * Usage: test_alloc_keys <case>   (ctest runs each case as store.<case>).
 */
#include "store/store_internal.h"
#include "tests/unit/common/check.h"
#include "tests/unit/common/test_rng.h"

static guint key_hash(gconstpointer p)
{
    const store_alloc_key *k = p;
    return k->gc ^ k->type_id * 31u ^ k->os_tid * 131u ^ k->heap * 7u;
}

static gboolean key_equal(gconstpointer a, gconstpointer b)
{
    return memcmp(a, b, sizeof(store_alloc_key)) == 0;
}

/* Random keys from small ranges (repeats are common), emptied at random points as the writer
 * does at each GC's end: every add answers as a GHashTable of the same keys does, across
 * growths, and with the stamp about to wrap. */
static void test_alloc_keys_differential(void)
{
    test_rng_seed(20261127);
    for (int round = 0; round < 2; round++) {
        store_alloc_keys set = {0};
        GHashTable *naive = g_hash_table_new_full(key_hash, key_equal, g_free, NULL);
        uint64_t adds = 0, added = 0, mismatches = 0;
        uint32_t gc = 1;
        for (int interval = 0; interval < 400; interval++) {
            if (round == 1 && interval == 5) /* a wrap soon: stamps of old slots come back */
                set.stamp = UINT32_MAX - 100;
            gboolean big = interval % 50 == 0; /* a large GC's many keys: the set grows */
            uint32_t n = (uint32_t)(rng() % (big ? 40000 : 300));
            uint32_t types = 1 + (uint32_t)(rng() % (big ? 10000 : 200));
            uint32_t threads = 1 + (uint32_t)(rng() % 8);
            for (uint32_t i = 0; i < n; i++) {
                store_alloc_key k = {gc, (uint32_t)(rng() % types), (uint32_t)(rng() % threads),
                                     (uint32_t)(rng() % 5)};
                gboolean want = !g_hash_table_contains(naive, &k);
                if (want)
                    g_hash_table_add(naive, g_memdup2(&k, sizeof k));
                gboolean got = store_alloc_keys_add(&set, k);
                mismatches += got != want;
                adds++;
                added += got;
            }
            CHECK_INT(set.count, g_hash_table_size(naive));
            store_alloc_keys_clear(&set);
            g_hash_table_remove_all(naive);
            gc += (uint32_t)(rng() % 2); /* the tail's interval is the next GC's number too */
        }
        CHECK_INT(mismatches, 0);
        CHECK(added > 0 && added < adds); /* both answers were given */
        CHECK(set.capacity >= 32768);     /* it grew */
        store_alloc_keys_release(&set);
        CHECK(set.slots == NULL && set.capacity == 0);
        g_hash_table_unref(naive);
    }
}

static const struct {
    const char *name;
    void (*fn)(void);
} cases[] = {
    {"alloc_keys_differential", test_alloc_keys_differential},
};

int main(int argc, char **argv)
{
    gboolean ran = FALSE;
    if (argc != 2) {
        fprintf(stderr, "usage: %s <case>|all\n", argv[0]);
        return 2;
    }
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        if (strcmp(argv[1], "all") == 0 || strcmp(argv[1], cases[i].name) == 0) {
            int before = failures;
            cases[i].fn();
            fprintf(stderr, "%s: %s\n", cases[i].name, failures == before ? "ok" : "FAILED");
            ran = TRUE;
        }
    }
    if (!ran) {
        fprintf(stderr, "no such case: %s\n", argv[1]);
        return 2;
    }
    return failures == 0 ? 0 : 1;
}
