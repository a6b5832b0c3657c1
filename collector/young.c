/* young.c — see young.h. */
#include "collector/mem.h"
#include "collector/young.h"

#include <stdlib.h>
#include <string.h>

/* A vector's first block: 4 KiB, from the C library. A vector made afresh at every GC (the
 * interval's counts and samples, handed to the outbox and released) then costs no mapping of its
 * own: blocks of 64 KiB and more are mappings (mem.c), and with 4,096 elements first (192 KiB of
 * counts, 160 KiB of samples) each GC made two and unmapped them, every munmap a TLB shootdown
 * of the CPUs running the program — on examples/WebApi (a GC every 75 requests) 40% of the
 * collector thread's CPU (bench/README.md, "Sampled mode's cost on a service"). A vector that
 * grows large still becomes a mapping at 64 KiB. */
enum { VEC_FIRST_BYTES = 4096 };

bool hl_vec_grow(id_vec *v) {
    size_t first = v->elem < VEC_FIRST_BYTES ? VEC_FIRST_BYTES / v->elem : 1;
    size_t cap = v->cap ? v->cap * 2 : first;
    void *grown = hl_mem_realloc(v->p, cap * v->elem);
    if (!grown)
        return false;
    v->p = grown;
    v->cap = cap;
    return true;
}

bool hl_vec_push(id_vec *v, const void *elem) {
    void *slot = hl_vec_append(v);
    if (!slot)
        return false;
    memcpy(slot, elem, v->elem);
    return true;
}

void hl_vec_release(id_vec *v) {
    hl_mem_free(v->p);
    v->p = NULL;
    v->n = v->cap = 0;
}

#define FATE_UNKNOWN HL_YOUNG_FATE(HL_GEN_NONE, HL_GEN_NONE)
#define TIX_MASK ((1u << HL_YOUNG_TIX_BITS) - 1)
#define NO_RUN SIZE_MAX /* run_next: the next add starts a run */

void hl_young_init(hl_young *y, uint64_t first) {
    memset(y, 0, sizeof *y);
    y->first = first;
    y->counts.elem = sizeof(hl_alloc_count);
    y->runs.elem = sizeof(uint64_t);
    y->run_next = NO_RUN;
    hl_u64map_init(&y->count_keys);
    hl_u64map_init(&y->tid_index);
    hl_u64map_init(&y->big_sizes);
}

void hl_young_release(hl_young *y) {
    hl_mem_free(y->type);
    hl_mem_free(y->size);
    hl_mem_free(y->fate);
    hl_mem_free(y->tids);
    hl_vec_release(&y->counts);
    hl_vec_release(&y->runs);
    hl_u64map_release(&y->count_keys);
    hl_u64map_release(&y->tid_index);
    hl_u64map_release(&y->big_sizes);
    memset(y, 0, sizeof *y);
}

/* The small index of an OS thread (index 0 stands in when memory runs out: counts stay exact,
 * only the thread is wrong). */
static uint32_t thread_index(hl_young *y, uint32_t os_tid) {
    if (os_tid == y->last_tid && y->n_tids)
        return y->last_tix;
    uint64_t *known = hl_u64map_get(&y->tid_index, (uint64_t)os_tid + 1);
    uint32_t tix = 0;
    if (known) {
        tix = (uint32_t)*known;
    } else if (y->n_tids <= TIX_MASK) {
        if (y->n_tids == y->cap_tids) {
            size_t cap = y->cap_tids ? y->cap_tids * 2 : 256;
            uint32_t *grown = hl_mem_realloc(y->tids, cap * sizeof *grown);
            if (grown) {
                y->tids = grown;
                y->cap_tids = cap;
            }
        }
        if (y->n_tids < y->cap_tids &&
            hl_u64map_put(&y->tid_index, (uint64_t)os_tid + 1, y->n_tids)) {
            tix = (uint32_t)y->n_tids;
            y->tids[y->n_tids++] = os_tid;
        } else {
            y->failures++;
        }
    }
    y->last_tid = os_tid;
    y->last_tix = tix;
    return tix;
}

/* count_entry's cache miss: the map, or a new entry, then the cache slot. */
static __attribute__((noinline)) hl_alloc_count *count_entry_miss(hl_young *y, uint64_t key,
                                                                  size_t slot) {
    uint32_t type_id = (uint32_t)(key >> 32), tix = (uint32_t)(key >> 4) & TIX_MASK;
    uint32_t heap = (uint32_t)key & 0x0f;
    uint64_t *at = hl_u64map_get(&y->count_keys, key);
    size_t index;
    if (at) {
        index = (size_t)*at;
    } else {
        hl_alloc_count e = {.type_id = type_id, .os_tid = y->n_tids ? y->tids[tix] : 0,
                            .heap = heap};
        if (!hl_vec_push(&y->counts, &e) ||
            !hl_u64map_put(&y->count_keys, key, y->counts.n - 1)) {
            y->failures++;
            return NULL;
        }
        index = y->counts.n - 1;
    }
    y->count_cache[slot].key = key;
    y->count_cache[slot].at = index;
    return (hl_alloc_count *)y->counts.p + index;
}

/* The interval's count entry of (type, thread index, heap), created on first use; NULL when out
 * of memory (counted in failures). The cache's hit is inline: the closing pass asks at every
 * change of type or heap in a thread's run, several times per survivor on MidLife (the call
 * was 4% of the collector thread's CPU). */
static inline __attribute__((always_inline)) hl_alloc_count *
count_entry(hl_young *y, uint32_t type_id, uint32_t tix, uint32_t heap) {
    uint64_t key = (uint64_t)type_id << 32 | (uint64_t)tix << 4 | heap;
    size_t slot = (size_t)((key >> 32) * 31 + (key >> 4) * 7 + key) & 255;
    if (y->count_cache[slot].key == key)
        return (hl_alloc_count *)y->counts.p + y->count_cache[slot].at;
    return count_entry_miss(y, key, slot);
}

static bool grow(hl_young *y, size_t index) {
    size_t cap = y->cap ? y->cap : 65536;
    while (cap <= index)
        cap *= 2;
    /* Each array keeps what realloc gave it: a partial failure leaves valid, larger arrays
     * and the old capacity. */
    uint32_t *type = hl_mem_realloc(y->type, cap * sizeof *type);
    if (type)
        y->type = type;
    uint16_t *size = hl_mem_realloc(y->size, cap * sizeof *size);
    if (size)
        y->size = size;
    uint8_t *fate = hl_mem_realloc(y->fate, cap);
    if (fate)
        y->fate = fate;
    if (!type || !size || !fate)
        return false;
    memset(y->type + y->cap, 0, (cap - y->cap) * sizeof *type);
    y->cap = cap;
    return true;
}

/* Places `id` (type word `type`: a type id, HL_YOUNG_FOLLOWED for a followed object) of thread
 * index `tix`: its run, its size, its type. False when it cannot (out of memory, an id below
 * the interval): nothing of it is kept. */
static bool place(hl_young *y, uint64_t id, uint32_t type, uint32_t tix, uint64_t size) {
    size_t i = (size_t)(id - y->first);
    if (id < y->first || (i >= y->cap && !grow(y, i)))
        return false;
    if (size >= HL_YOUNG_SIZE_BIG && !hl_u64map_put(&y->big_sizes, (uint64_t)i + 1, size)) {
        y->failures++;
        return false;
    }
    if (i != y->run_next || tix != y->run_tix) {
        uint64_t *run = hl_vec_append(&y->runs);
        if (!run) {
            y->failures++;
            return false;
        }
        *run = (uint64_t)i << HL_YOUNG_TIX_BITS | tix;
        y->run_tix = tix;
    }
    y->type[i] = type;
    y->size[i] = size < HL_YOUNG_SIZE_BIG ? (uint16_t)size : (uint16_t)HL_YOUNG_SIZE_BIG;
    y->run_next = i + 1;
    if (i >= y->n)
        y->n = i + 1;
    return true;
}

void hl_young_add_any(hl_young *y, uint64_t id, uint32_t type_id, uint32_t os_tid,
                      uint64_t size) {
    uint32_t tix = thread_index(y, os_tid);
    if (place(y, id, type_id, tix, size))
        return;
    /* No room to describe it: count it now, unclassified. The next add starts a run. */
    y->run_next = NO_RUN;
    hl_alloc_count *e = count_entry(y, type_id, tix, HL_GEN_NONE);
    if (e) {
        e->count++;
        e->bytes += size;
    }
    y->lost = true;
}

void hl_young_add_followed(hl_young *y, uint64_t id, uint32_t type_id, uint32_t os_tid,
                           uint64_t size) {
    if (!place(y, id, HL_YOUNG_FOLLOWED | type_id, thread_index(y, os_tid), size)) {
        y->run_next = NO_RUN;
        y->lost = true;
    }
}

void hl_young_fate_reset(hl_young *y) {
    if (y->n)
        memset(y->fate, FATE_UNKNOWN, y->n);
}

void hl_young_packed_init(hl_young_packed *p, size_t max_objects, size_t max_bytes) {
    memset(p, 0, sizeof *p);
    p->max_objects = max_objects;
    p->max_bytes = max_bytes;
    p->bytes.elem = 1;
    p->records.elem = sizeof(hl_young_packed_record);
}

void hl_young_packed_release(hl_young_packed *p) {
    hl_vec_release(&p->bytes);
    hl_vec_release(&p->records);
    p->n = 0;
}

/* A survivor, packed into the last payload, or a new one where hl_survivors_pack would start it
 * (max_objects taken, or fewer than HL_SURVIVOR_PACKED_MAX bytes of room left). */
static inline void survivor_put(hl_young *y, hl_young_packed *out, uint64_t id, uint64_t size,
                                uint32_t type_id, uint32_t os_tid, uint32_t heap, uint32_t gen) {
    hl_young_packed_record *rec =
        out->records.n ? (hl_young_packed_record *)out->records.p + out->records.n - 1 : NULL;
    if (!rec || rec->count == out->max_objects ||
        rec->n_bytes + HL_SURVIVOR_PACKED_MAX > out->max_bytes) {
        rec = hl_vec_append(&out->records);
        if (!rec) {
            y->failures++;
            return;
        }
        *rec = (hl_young_packed_record){.at = out->bytes.n};
        out->state = (hl_survivor_pack_state){0};
    }
    while (out->bytes.n + HL_SURVIVOR_PACKED_MAX > out->bytes.cap)
        if (!hl_vec_grow(&out->bytes)) {
            y->failures++;
            if (!rec->count) /* a payload of nothing is no record */
                out->records.n--;
            return;
        }
    uint8_t *at = (uint8_t *)out->bytes.p + out->bytes.n;
    uint8_t *end = hl_survivor_pack_one(at, &out->state, id, gen, os_tid, heap, type_id, size);
    out->bytes.n += (size_t)(end - at);
    rec->n_bytes += (uint32_t)(end - at);
    rec->count++;
    out->n++;
}

static int by_value(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

void hl_young_close(hl_young *y, bool classified, uint64_t end, id_vec *counts,
                    hl_young_packed *survivors) {
    survivors->bytes.n = survivors->records.n = survivors->n = 0;
    /* The runs in id order (each slot's runs come ascending, the slots one after another). */
    uint64_t *runs = y->runs.p;
    size_t n_runs = y->runs.n;
    for (size_t r = 1; r < n_runs; r++)
        if (runs[r] < runs[r - 1]) {
            qsort(runs, n_runs, sizeof *runs, by_value);
            break;
        }
    for (size_t r = 0; r < n_runs; r++) {
        size_t i = (size_t)(runs[r] >> HL_YOUNG_TIX_BITS);
        size_t run_end = r + 1 < n_runs ? (size_t)(runs[r + 1] >> HL_YOUNG_TIX_BITS) : y->n;
        uint32_t tix = (uint32_t)(runs[r] & TIX_MASK);
        uint32_t os_tid = tix < y->n_tids ? y->tids[tix] : 0;
        uint64_t last_key = UINT64_MAX; /* (type, heap) of `last`, in this run's thread */
        hl_alloc_count *last = NULL;
        for (; i < run_end; i++) {
            uint32_t type_id = y->type[i];
            if (!type_id)
                continue;
            uint64_t size = y->size[i];
            if (size == HL_YOUNG_SIZE_BIG) {
                const uint64_t *big = hl_u64map_get(&y->big_sizes, (uint64_t)i + 1);
                size = big ? *big : 0;
            }
            uint32_t heap = HL_GEN_NONE, gen = HL_GEN_NONE;
            if (classified) {
                heap = HL_YOUNG_FATE_HEAP(y->fate[i]);
                gen = HL_YOUNG_FATE_GEN(y->fate[i]);
            }
            if (type_id & HL_YOUNG_FOLLOWED) { /* a survivor row when it survived, never a count */
                if (gen != HL_GEN_NONE)
                    survivor_put(y, survivors, y->first + i, size, type_id & ~HL_YOUNG_FOLLOWED,
                                 os_tid, heap, gen);
                continue;
            }
            /* Consecutive allocations often share their entry (a thread's objects come in
             * runs, a loop allocates the same types): then no lookup. */
            uint64_t key = (uint64_t)type_id << 32 | heap;
            if (key != last_key) {
                last = count_entry(y, type_id, tix, heap);
                last_key = last ? key : UINT64_MAX;
            }
            hl_alloc_count *e = last;
            if (!e)
                continue;
            e->count++;
            e->bytes += size;
            if (gen == HL_GEN_NONE)
                continue;
            e->survived++;
            e->survived_bytes += size;
            survivor_put(y, survivors, y->first + i, size, type_id, os_tid, heap, gen);
        }
    }
    if (y->cap > HL_YOUNG_KEEP && y->n < y->cap / 4) {
        /* A burst grew the arrays far beyond this interval: give the memory back. */
        hl_mem_free(y->type);
        hl_mem_free(y->size);
        hl_mem_free(y->fate);
        y->type = NULL;
        y->size = NULL;
        y->fate = NULL;
        y->cap = 0;
    } else if (y->n) {
        memset(y->type, 0, y->n * sizeof *y->type);
    }
    if (y->runs.cap > HL_YOUNG_KEEP / 64 && y->runs.n < y->runs.cap / 4)
        hl_vec_release(&y->runs);
    y->runs.n = 0;
    y->run_next = NO_RUN;
    if (y->big_sizes.count)
        hl_u64map_clear(&y->big_sizes);
    y->n = 0;
    y->first = end > y->first ? end : y->first;
    y->lost = false;
    *counts = y->counts;
    y->counts = (id_vec){.elem = sizeof(hl_alloc_count)};
    hl_u64map_clear(&y->count_keys);
    memset(y->count_cache, 0, sizeof y->count_cache);
}
