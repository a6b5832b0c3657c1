/* gen_lookup.h — which generation an address lies in, by a GC's generation bounds.
 *
 * Discovery (the generation of a survivor range before the GC, and of a found object after it)
 * and a snapshot (the generation of a walked object the model does not know) ask it.
 */
#ifndef HEAPLENS_GEN_LOOKUP_H
#define HEAPLENS_GEN_LOOKUP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "heapmodel/hm_model.h"

/* The generation of an address by one set of a GC's bounds (its `before` or `after`): the
 * non-empty ranges sorted once, then a binary search per address. (An empty range may start
 * where a non-empty one does, an empty gen1 at gen0's start with segments: kept, it could sort
 * after that one and hide it.) */
typedef struct hl_gen_lookup {
    hm_gen_range *ranges;
    size_t n;
} hl_gen_lookup;

/* False when out of memory (then every address is in no range). */
bool hl_gen_lookup_init(hl_gen_lookup *l, const hm_gen_range *r, size_t n);
/* The generation of the range holding addr, HL_GEN_NONE when none does. */
uint32_t hl_gen_lookup_find(const hl_gen_lookup *l, uint64_t addr);
void hl_gen_lookup_release(hl_gen_lookup *l);

#endif
