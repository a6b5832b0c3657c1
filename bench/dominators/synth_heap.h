/* synth_heap.h — a synthetic heap graph of N objects for the dominator benchmarks.
 *
 * Shapes (deterministic for a seed): components hanging off a GC root or off an earlier object —
 * bushy object trees (each node's parent a recent node), long linked lists (up to 200,000, half
 * of them doubly linked), arrays of up to 100,000 elements each owning 0..3 objects; a pool of
 * N/100 shared objects (interned strings, a cache) held by one cache array and referenced from
 * 20% of the objects; back pointers to the parent from 10%; random cross references from 5%;
 * 2,000 more roots (stack slots, handles) at random objects. About 1.6 references per object,
 * sizes of 24..280 bytes (arrays 8 bytes per element), 2,000 types.
 *
 * Objects are 1 .. N; "node 0" stands for the roots: an edge from 0 is a GC root.
 */
#ifndef HEAPLENS_BENCH_SYNTH_HEAP_H
#define HEAPLENS_BENCH_SYNTH_HEAP_H

#include <stdint.h>

#define SYNTH_TYPES 2000

typedef struct synth_heap {
    uint32_t n_objects;
    uint64_t *sizes; /* n_objects + 1, [0] = 0 */
    uint32_t *types; /* n_objects + 1, type ids 1 .. SYNTH_TYPES ([0] unused) */
    uint32_t roots;  /* edges from 0 */
} synth_heap;

/* Fills `h` and calls edge(ctx, from, to) for every reference and root (from = 0), in creation
 * order (not grouped by source). Exits on out-of-memory. */
void synth_heap_generate(synth_heap *h, uint32_t n_objects, uint64_t seed,
                         void (*edge)(void *ctx, uint32_t from, uint32_t to), void *ctx);
void synth_heap_release(synth_heap *h);

#endif /* HEAPLENS_BENCH_SYNTH_HEAP_H */
