/* test_u64map.c — differential test of the collector's hash map against a plain array, with a
 * fixed seed (HEAPLENS_SEED overrides it): random puts, overwrites, removes and lookups, keys
 * drawn from a small range so that probe runs collide and backward-shift deletion is exercised. */
#include <stdio.h>
#include <stdlib.h>

#include "collector/u64map.h"
#include "tests/unit/common/test_rng.h"

#define KEYS 2048
#define STEPS 400000

static int failures;
#define CHECK(cond)                                                                            \
    do {                                                                                       \
        if (!(cond)) {                                                                         \
            fprintf(stderr, "%s:%d: check failed: %s (step %ld)\n", __FILE__, __LINE__, #cond, \
                    step);                                                                     \
            if (++failures > 10)                                                               \
                return 1;                                                                      \
        }                                                                                      \
    } while (0)

int main(void) {
    test_rng_seed(20261122);

    static uint64_t naive[KEYS + 1];  /* value + 1; 0 = absent */
    hl_u64map m;
    hl_u64map_init(&m);
    size_t count = 0;
    long step = 0;
    for (; step < STEPS; step++) {
        /* keys look like addresses: multiples of 8, clustered */
        uint64_t k = rng() % KEYS + 1, key = 0x7f0000000000ull + k * 8;
        unsigned op = (unsigned)(rng() % 10);
        if (op < 5) {
            uint64_t v = rng();
            CHECK(hl_u64map_put(&m, key, v));
            count += naive[k] == 0;
            naive[k] = v + 1;
            if (naive[k] == 0)
                naive[k] = 1; /* v = UINT64_MAX: keep "present" distinguishable */
        } else if (op < 8) {
            bool removed = hl_u64map_remove(&m, key);
            CHECK(removed == (naive[k] != 0));
            count -= naive[k] != 0;
            naive[k] = 0;
        } else {
            uint64_t *v = hl_u64map_get(&m, key);
            CHECK((v != NULL) == (naive[k] != 0));
        }
        CHECK(m.count == count);
        if (step % 50000 == 0) { /* full comparison now and then */
            for (uint64_t j = 1; j <= KEYS; j++) {
                uint64_t *v = hl_u64map_get(&m, 0x7f0000000000ull + j * 8);
                CHECK((v != NULL) == (naive[j] != 0));
            }
        }
    }
    hl_u64map_clear(&m);
    CHECK(m.count == 0 && hl_u64map_get(&m, 0x7f0000000008ull) == NULL);
    hl_u64map_release(&m);
    printf("%s: %ld steps, %d failures\n", failures ? "FAIL" : "ok", step, failures);
    return failures != 0;
}
