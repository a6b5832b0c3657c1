/* test_gen_lookup.c — differential test of the generation lookup (sorted ranges, binary search)
 * against a scan of the ranges as the runtime gave them, with a fixed seed (HEAPLENS_SEED
 * overrides it): random bounds in random order, empty ranges among them (also starting where a
 * non-empty one starts: an empty gen1 at gen0's start), and addresses inside, at the edges of
 * and between the ranges. */
#include <stdio.h>
#include <stdlib.h>

#include "collector/gen_lookup.h"
#include "tests/unit/common/test_rng.h"
#include "wire/hl_wire.h"

#define ROUNDS 2000
#define PROBES 500
#define MAX_RANGES 12

static int failures;


/* The generation of the non-empty range holding addr, by a scan; HL_GEN_NONE if none. */
static uint32_t scan(const hm_gen_range *r, size_t n, uint64_t addr) {
    for (size_t i = 0; i < n; i++)
        if (r[i].length != 0 && addr >= r[i].start && addr - r[i].start < r[i].length)
            return r[i].generation;
    return HL_GEN_NONE;
}

int main(void) {
    test_rng_seed(20261124);

    for (int round = 0; round < ROUNDS && failures < 10; round++) {
        /* Disjoint ranges laid out in address order with gaps, then shuffled; some empty. */
        hm_gen_range r[MAX_RANGES];
        size_t n = rng() % (MAX_RANGES + 1);
        uint64_t at = 0x10000 + rng() % 4096;
        for (size_t i = 0; i < n; i++) {
            bool empty = rng() % 4 == 0;
            r[i] = (hm_gen_range){.start = at, .length = empty ? 0 : 8 + rng() % 4096,
                                  .generation = (uint32_t)(rng() % 5)};
            if (!empty || rng() % 2)
                at += r[i].length + (rng() % 3 == 0 ? 0 : rng() % 1024); /* adjacent or a gap */
        }
        for (size_t i = n; i > 1; i--) {
            size_t j = rng() % i;
            hm_gen_range t = r[i - 1];
            r[i - 1] = r[j];
            r[j] = t;
        }
        hl_gen_lookup l;
        if (!hl_gen_lookup_init(&l, r, n)) {
            fprintf(stderr, "out of memory\n");
            return 1;
        }
        for (int p = 0; p < PROBES; p++) {
            uint64_t addr;
            if (n > 0 && p % 2 == 0) { /* an edge of a range */
                const hm_gen_range *x = &r[rng() % n];
                uint64_t edges[] = {x->start - 1, x->start, x->start + x->length - 1,
                                    x->start + x->length};
                addr = edges[rng() % 4];
            } else {
                addr = 0x10000 + rng() % (at - 0x10000 + 4096);
            }
            uint32_t want = scan(r, n, addr), got = hl_gen_lookup_find(&l, addr);
            if (want != got && ++failures <= 10)
                fprintf(stderr, "round %d: address 0x%llx: lookup %u, scan %u (%zu ranges)\n",
                        round, (unsigned long long)addr, got, want, n);
        }
        hl_gen_lookup_release(&l);
    }
    if (failures)
        fprintf(stderr, "gen_lookup: FAILED (%d)\n", failures);
    else
        printf("gen_lookup: %d rounds of %d probes agree\n", ROUNDS, PROBES);
    return failures != 0;
}
