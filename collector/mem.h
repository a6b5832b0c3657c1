/* mem.h — the collector's memory, counted.
 *
 * Every heap allocation of the collector (and of its heap model, through hl_mem_model_allocator)
 * goes through these, and the thread buffers' pool reports its mapping, so that the collector
 * can tell how much it holds at any moment: at the end of an attach session it must hold
 * nothing (hl_session_reset, ProfilerDetachSucceeded; HEAPLENS_STATS=1 prints it). Sizes are the
 * C library's usable sizes (malloc_usable_size), counted on the way in and out. Any thread may
 * call them (the GC callbacks, the collector thread, the runtime's attach and detach threads):
 * the counters are atomic.
 *
 * The counters are process-wide statics (like thread_buffers.c's exit_key): a second attach
 * session of the same process starts from whatever the first left, which is 0. */
#ifndef HEAPLENS_COLLECTOR_MEM_H
#define HEAPLENS_COLLECTOR_MEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "heapmodel/hm_model.h"

/* Blocks of this size and more are anonymous mappings of their own (unmapped when freed: an
 * munmap, a TLB shootdown of every CPU running the process); smaller ones come from the C
 * library's heap. A buffer made or freed often where that matters (a GC's pause) stays below. */
#define HL_MEM_LARGE (64u * 1024u)

/* malloc, calloc, realloc and free, counted. hl_mem_free(NULL) does nothing. */
void *hl_mem_malloc(size_t size);
void *hl_mem_calloc(size_t n, size_t size);
void *hl_mem_realloc(void *p, size_t size);
void hl_mem_free(void *p);
/* Grows the array *p of *cap elements of `elem` bytes to hold at least `need`, doubling from
 * `first`; false, with *p and *cap as they were, when the memory is not there. */
bool hl_mem_reserve(void **p, size_t *cap, size_t need, size_t elem, size_t first);

/* An anonymous mapping of `bytes` was made (> 0) or unmapped (< 0): the pool's. */
void hl_mem_mapped_add(int64_t bytes);

/* What the collector holds now: heap bytes (usable sizes) and mapped bytes; and the most heap
 * bytes it held at once since the process loaded it. */
typedef struct hl_mem_stats {
    uint64_t heap_bytes, mapped_bytes, heap_peak_bytes;
} hl_mem_stats;
hl_mem_stats hl_mem_stats_get(void);

/* For hm_model_new_with: the model's memory counted with the collector's. */
extern const hm_allocator hl_mem_model_allocator;

#endif /* HEAPLENS_COLLECTOR_MEM_H */
