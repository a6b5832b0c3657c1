/* gen_lookup.c — see gen_lookup.h. */
#include "collector/mem.h"
#include "collector/gen_lookup.h"
#include "wire/hl_wire.h"

#include <stdlib.h>

static int range_cmp(const void *a, const void *b) {
    const hm_gen_range *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

bool hl_gen_lookup_init(hl_gen_lookup *l, const hm_gen_range *r, size_t n) {
    l->n = 0;
    l->ranges = hl_mem_malloc((n ? n : 1) * sizeof *l->ranges);
    if (!l->ranges)
        return false;
    for (size_t i = 0; i < n; i++)
        if (r[i].length != 0)
            l->ranges[l->n++] = r[i];
    qsort(l->ranges, l->n, sizeof *l->ranges, range_cmp);
    return true;
}

uint32_t hl_gen_lookup_find(const hl_gen_lookup *l, uint64_t addr) {
    const hm_gen_range *r = l->ranges;
    size_t lo = 0, hi = l->n;
    while (lo < hi) { /* past the last range starting at or below addr */
        size_t mid = lo + (hi - lo) / 2;
        if (r[mid].start <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0 || addr - r[lo - 1].start >= r[lo - 1].length)
        return HL_GEN_NONE;
    return r[lo - 1].generation;
}

void hl_gen_lookup_release(hl_gen_lookup *l) {
    hl_mem_free(l->ranges);
    l->ranges = NULL;
    l->n = 0;
}
