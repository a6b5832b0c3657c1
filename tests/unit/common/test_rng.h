/* test_rng.h — random numbers for the differential tests: xorshift64*, seeded with the test's
 * own fixed seed unless HEAPLENS_SEED gives another; the seed is printed, so a failure can be
 * replayed. */
#ifndef HEAPLENS_TEST_RNG_H
#define HEAPLENS_TEST_RNG_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static uint64_t test_rng_state;

static inline void test_rng_seed(uint64_t fallback) {
    const char *seed = getenv("HEAPLENS_SEED");
    test_rng_state = seed ? strtoull(seed, NULL, 10) : fallback;
    if (!test_rng_state)
        test_rng_state = 1; /* xorshift stays at 0 */
    printf("seed %llu\n", (unsigned long long)test_rng_state);
}

static inline uint64_t rng(void) {
    test_rng_state ^= test_rng_state >> 12;
    test_rng_state ^= test_rng_state << 25;
    test_rng_state ^= test_rng_state >> 27;
    return test_rng_state * 2685821657736338717ull;
}

#endif
