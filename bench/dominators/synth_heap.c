/* synth_heap.c — the synthetic heap of the dominator benchmarks (synth_heap.h). */
#include "synth_heap.h"

#include <stdio.h>
#include <stdlib.h>

typedef struct rng {
    uint64_t state;
} rng;

static uint64_t rng_next(rng *r) /* splitmix64 */
{
    uint64_t z = (r->state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint32_t rng_below(rng *r, uint32_t n)
{
    return (uint32_t)(rng_next(r) % n);
}

void synth_heap_generate(synth_heap *h, uint32_t n_objects, uint64_t seed,
                         void (*edge)(void *ctx, uint32_t from, uint32_t to), void *ctx)
{
    rng r = {seed};
    const uint32_t n = n_objects + 1;
    const uint32_t n_shared = n_objects / 100 > 0 ? n_objects / 100 : 1;
    const uint32_t first_shared = n - n_shared; /* the pool is the last objects */
    h->n_objects = n_objects;
    h->sizes = malloc((size_t)n * sizeof *h->sizes);
    h->types = malloc((size_t)n * sizeof *h->types);
    h->roots = 0;
    if (!h->sizes || !h->types) {
        fprintf(stderr, "synth_heap: out of memory\n");
        exit(1);
    }
    h->sizes[0] = 0;
    h->types[0] = 0;
    uint32_t v = 1;
    while (v < first_shared) {
        uint32_t start = v;
        uint32_t kind = rng_below(&r, 10); /* 6 trees, 2 lists, 2 arrays */
        uint32_t len = kind < 6   ? 100 + rng_below(&r, 20000)
                       : kind < 8 ? 10 + rng_below(&r, 200000)
                                  : 100 + rng_below(&r, 100000);
        if (len > first_shared - v)
            len = first_shared - v;
        uint32_t holder =
            v == 1 || (h->roots < 2000 && rng_below(&r, 4) == 0) ? 0 : 1 + rng_below(&r, v - 1);
        h->roots += holder == 0;
        edge(ctx, holder, start);
        uint32_t type_base = 1 + rng_below(&r, SYNTH_TYPES - 9);
        if (kind >= 8) { /* an array whose elements own 0..3 objects each */
            h->sizes[v] = 24 + 8ull * len;
            h->types[v] = type_base;
            v++;
            while (v < start + len && v < first_shared) {
                edge(ctx, start, v);
                h->sizes[v] = 24 + 8 * rng_below(&r, 8);
                h->types[v] = type_base + 1;
                uint32_t e = v++;
                for (uint32_t k = rng_below(&r, 4); k > 0 && v < first_shared; k--, v++) {
                    edge(ctx, e, v);
                    h->sizes[v] = 24 + rng_below(&r, 256);
                    h->types[v] = type_base + 2 + k;
                }
            }
        } else {
            for (; v < start + len; v++) {
                h->sizes[v] = 24 + rng_below(&r, 256);
                h->types[v] = type_base + rng_below(&r, 8);
                if (v == start)
                    continue;
                uint32_t parent =
                    kind < 6 ? v - 1 - rng_below(&r, v - start < 64 ? v - start : 64) : v - 1;
                edge(ctx, parent, v);
                if (kind >= 6 && rng_below(&r, 2) == 0)
                    edge(ctx, v, v - 1); /* doubly linked */
                else if (rng_below(&r, 10) == 0)
                    edge(ctx, v, parent); /* back pointer */
            }
        }
    }
    for (; v < n; v++) { /* the shared pool */
        h->sizes[v] = 24 + rng_below(&r, 64);
        h->types[v] = SYNTH_TYPES;
    }
    uint32_t cache = first_shared; /* the first pool object is the cache's array */
    h->sizes[cache] = 24 + 8ull * n_shared;
    edge(ctx, 0, cache);
    h->roots++;
    for (uint32_t k = 0; k < 2000; k++) { /* stack roots and handles into the middle */
        edge(ctx, 0, 1 + rng_below(&r, n - 1));
        h->roots++;
    }
    for (uint32_t s = cache + 1; s < n; s++)
        edge(ctx, cache, s);
    for (uint32_t u = 1; u < first_shared; u++) {
        uint64_t x = rng_next(&r);
        if (x % 10 < 2)
            edge(ctx, u, first_shared + (uint32_t)((x >> 8) % n_shared));
        if ((x >> 40) % 20 == 0)
            edge(ctx, u, 1 + (uint32_t)((x >> 16) % (n - 1)));
    }
}

void synth_heap_release(synth_heap *h)
{
    free(h->sizes);
    free(h->types);
    h->sizes = NULL;
    h->types = NULL;
}
