/* mem.c — see mem.h.
 *
 * Every block starts with a 16-byte header (its size, and the length of its own mapping or 0),
 * so that the count needs nothing from the C library. Blocks of HL_MEM_LARGE bytes and more
 * (the heap model's windows, the young arrays, a snapshot's walk, the outbox) are mappings of
 * their own: unmapped when freed, their memory goes back to the system at once. Given to
 * malloc instead, they would stay in the C library's arenas after the session (a freed block
 * of an arena's top is kept up to the trim threshold, which glibc raises to 64 MiB once large
 * blocks have been freed, and malloc_trim leaves an arena's top alone): 48 MiB of a
 * 4M-object process stayed resident after the detach that way. */
#define _GNU_SOURCE
#include "collector/mem.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define HL_MEM_HEADER 16

typedef struct mem_header {
    size_t size;   /* bytes asked for */
    size_t mapped; /* length of the block's own mapping (header included); 0: from malloc */
} mem_header;
_Static_assert(sizeof(mem_header) <= HL_MEM_HEADER, "the header keeps 16-byte alignment");

static _Atomic uint64_t mem_heap, mem_heap_peak, mem_mapped;

/* What a block holds: its mapping, or its size and header. */
static uint64_t mem_held(const mem_header *h) {
    return h->mapped ? h->mapped : h->size + HL_MEM_HEADER;
}

static void mem_count_in(const mem_header *h) {
    uint64_t n = mem_held(h);
    uint64_t now = atomic_fetch_add(&mem_heap, n) + n;
    uint64_t peak = atomic_load(&mem_heap_peak);
    while (now > peak && !atomic_compare_exchange_weak(&mem_heap_peak, &peak, now))
        ;
}

static size_t mem_map_length(size_t size) {
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    return (size + HL_MEM_HEADER + page - 1) / page * page;
}

/* A block of `size` bytes, zeroed when `zero` (mappings always are); NULL when out of memory. */
static void *mem_block(size_t size, bool zero) {
    if (size > SIZE_MAX - HL_MEM_HEADER - (1u << 16))
        return NULL;
    mem_header *h;
    if (size >= HL_MEM_LARGE) {
        size_t length = mem_map_length(size);
        void *m = mmap(NULL, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED)
            return NULL;
        h = m;
        h->mapped = length;
    } else {
        h = zero ? calloc(1, size + HL_MEM_HEADER) : malloc(size + HL_MEM_HEADER);
        if (!h)
            return NULL;
        h->mapped = 0;
    }
    h->size = size;
    mem_count_in(h);
    return (char *)h + HL_MEM_HEADER;
}

static mem_header *mem_header_of(void *p) {
    return (mem_header *)(void *)((char *)p - HL_MEM_HEADER);
}

void *hl_mem_malloc(size_t size) {
    return mem_block(size, false);
}

void *hl_mem_calloc(size_t n, size_t size) {
    if (n > 0 && size > SIZE_MAX / n)
        return NULL;
    return mem_block(n * size, true);
}

void hl_mem_free(void *p) {
    if (!p)
        return;
    mem_header *h = mem_header_of(p);
    atomic_fetch_sub(&mem_heap, mem_held(h));
    if (h->mapped)
        munmap(h, h->mapped);
    else
        free(h);
}

void *hl_mem_realloc(void *p, size_t size) {
    if (!p)
        return mem_block(size, false);
    if (size == 0) {
        hl_mem_free(p);
        return NULL;
    }
    mem_header *h = mem_header_of(p);
    uint64_t before = mem_held(h);
    bool large = size >= HL_MEM_LARGE;
    if (large != (h->mapped != 0)) {
        /* From malloc to a mapping or back: a new block, the contents copied. */
        void *q = mem_block(size, false);
        if (!q)
            return NULL;
        memcpy(q, p, h->size < size ? h->size : size);
        hl_mem_free(p);
        return q;
    }
    mem_header *g;
    if (large) {
        size_t length = mem_map_length(size);
        void *m = length == h->mapped ? (void *)h : mremap(h, h->mapped, length, MREMAP_MAYMOVE);
        if (m == MAP_FAILED)
            return NULL;
        g = m;
        g->mapped = length;
    } else {
        g = realloc(h, size + HL_MEM_HEADER);
        if (!g)
            return NULL;
    }
    g->size = size;
    atomic_fetch_sub(&mem_heap, before);
    mem_count_in(g);
    return (char *)g + HL_MEM_HEADER;
}

bool hl_mem_reserve(void **p, size_t *cap, size_t need, size_t elem, size_t first) {
    if (need <= *cap)
        return true;
    size_t grown_cap = *cap ? *cap * 2 : first;
    while (grown_cap < need)
        grown_cap *= 2;
    void *grown = hl_mem_realloc(*p, grown_cap * elem);
    if (!grown)
        return false;
    *p = grown;
    *cap = grown_cap;
    return true;
}

void hl_mem_mapped_add(int64_t bytes) {
    atomic_fetch_add(&mem_mapped, (uint64_t)bytes); /* two's complement: < 0 subtracts */
}

hl_mem_stats hl_mem_stats_get(void) {
    return (hl_mem_stats){.heap_bytes = atomic_load(&mem_heap),
                          .mapped_bytes = atomic_load(&mem_mapped),
                          .heap_peak_bytes = atomic_load(&mem_heap_peak)};
}

const hm_allocator hl_mem_model_allocator = {.realloc = hl_mem_realloc, .free = hl_mem_free,
                                              .calloc = hl_mem_calloc};
