/* test_mem.c — the collector's memory accounting (collector/mem.h): every allocation counted in
 * and out, a heap model built through hl_mem_model_allocator and the thread buffers' pool
 * counted, and nothing held once they are all given back (what an attach session's end must
 * reach: ProfilerDetachSucceeded). */
#include "collector/mem.h"
#include "collector/thread_buffers.h"
#include "heapmodel/hm_model.h"
#include "tests/unit/common/check.h"

#include <stdlib.h>

int main(void) {
    hl_mem_stats s = hl_mem_stats_get();
    CHECK_INT(s.heap_bytes, 0);
    CHECK_INT(s.mapped_bytes, 0);

    /* malloc, calloc, realloc (growing, shrinking, to 0) and free */
    void *a = hl_mem_malloc(100), *b = hl_mem_calloc(10, 1000);
    CHECK(a && b);
    CHECK(hl_mem_stats_get().heap_bytes >= 100 + 10000);
    a = hl_mem_realloc(a, 1 << 20);
    CHECK(a != NULL);
    CHECK(hl_mem_stats_get().heap_bytes >= (1 << 20) + 10000);
    a = hl_mem_realloc(a, 8);
    b = hl_mem_realloc(b, 0); /* frees it (the C library's realloc) */
    hl_mem_free(b);
    hl_mem_free(a);
    hl_mem_free(NULL);
    CHECK_INT(hl_mem_stats_get().heap_bytes, 0);
    CHECK(hl_mem_stats_get().heap_peak_bytes >= (1 << 20) + 10000);

    /* a model of 300,000 objects, counted with the collector's */
    hm_model *m = hm_model_new_with(&hl_mem_model_allocator);
    CHECK(m != NULL);
    for (uint64_t i = 1; i <= 300000; i++)
        CHECK_INT(hm_model_add(m, 0x100000 + i * 32, i), HM_OK);
    CHECK(hl_mem_stats_get().heap_bytes >= 300000 * 8);
    hm_model_free(m);
    CHECK_INT(hl_mem_stats_get().heap_bytes, 0);

    /* the pool: mapped while it exists */
    hl_tbufs r = {0};
    CHECK_INT(hl_tbufs_init(&r, 4u << 20), 0);
    CHECK_INT(hl_mem_stats_get().mapped_bytes, 4u << 20);
    CHECK(hl_mem_stats_get().heap_bytes > 0); /* its chunk descriptors */
    hl_tbufs_release(&r);
    s = hl_mem_stats_get();
    CHECK_INT(s.mapped_bytes, 0);
    CHECK_INT(s.heap_bytes, 0);
    return failures ? 1 : 0;
}
