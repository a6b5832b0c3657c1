/* young.c — see young.h. */
#include "collector/mem.h"
#include "collector/young.h"

#include <stdlib.h>
#include <string.h>

bool hl_vec_grow(id_vec *v) {
    size_t cap = v->cap ? v->cap * 2 : 4096;
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
#define FOLLOWED (1ull << 63) /* in size_tix: hl_young_add_followed (sizes stay below 2^43) */

void hl_young_init(hl_young *y, uint64_t first) {
    memset(y, 0, sizeof *y);
    y->first = first;
    y->counts.elem = sizeof(hl_alloc_count);
    hl_u64map_init(&y->count_keys);
    hl_u64map_init(&y->tid_index);
}

void hl_young_release(hl_young *y) {
    hl_mem_free(y->type);
    hl_mem_free(y->size_tix);
    hl_mem_free(y->fate);
    hl_mem_free(y->tids);
    hl_vec_release(&y->counts);
    hl_u64map_release(&y->count_keys);
    hl_u64map_release(&y->tid_index);
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

/* The interval's count entry of (type, thread index, heap), created on first use; NULL when out
 * of memory (counted in failures). */
static hl_alloc_count *count_entry(hl_young *y, uint32_t type_id, uint32_t tix, uint32_t heap) {
    uint64_t key = (uint64_t)type_id << 32 | (uint64_t)tix << 4 | heap;
    size_t slot = (size_t)((key >> 32) * 31 + (key >> 4) * 7 + key) & 255;
    if (y->count_cache[slot].key == key)
        return (hl_alloc_count *)y->counts.p + y->count_cache[slot].at;
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

static bool grow(hl_young *y, size_t index) {
    size_t cap = y->cap ? y->cap : 65536;
    while (cap <= index)
        cap *= 2;
    /* Each array keeps what realloc gave it: a partial failure leaves valid, larger arrays
     * and the old capacity. */
    uint32_t *type = hl_mem_realloc(y->type, cap * sizeof *type);
    if (type)
        y->type = type;
    uint64_t *size_tix = hl_mem_realloc(y->size_tix, cap * sizeof *size_tix);
    if (size_tix)
        y->size_tix = size_tix;
    uint8_t *fate = hl_mem_realloc(y->fate, cap);
    if (fate)
        y->fate = fate;
    if (!type || !size_tix || !fate)
        return false;
    memset(y->type + y->cap, 0, (cap - y->cap) * sizeof *type);
    y->cap = cap;
    return true;
}

void hl_young_add_any(hl_young *y, uint64_t id, uint32_t type_id, uint32_t os_tid,
                      uint64_t size) {
    uint32_t tix = thread_index(y, os_tid);
    size_t i = (size_t)(id - y->first);
    if (id >= y->first && (i < y->cap || grow(y, i))) {
        y->type[i] = type_id;
        y->size_tix[i] = size << HL_YOUNG_TIX_BITS | tix;
        if (i >= y->n)
            y->n = i + 1;
        return;
    }
    /* No room to describe it: count it now, unclassified. */
    hl_alloc_count *e = count_entry(y, type_id, tix, HL_GEN_NONE);
    if (e) {
        e->count++;
        e->bytes += size;
    }
    y->lost = true;
}

void hl_young_add_followed(hl_young *y, uint64_t id, uint32_t type_id, uint32_t os_tid,
                           uint64_t size) {
    uint32_t tix = thread_index(y, os_tid);
    size_t i = (size_t)(id - y->first);
    if (id < y->first || (i >= y->cap && !grow(y, i))) {
        y->lost = true;
        return;
    }
    y->type[i] = type_id;
    y->size_tix[i] = FOLLOWED | size << HL_YOUNG_TIX_BITS | tix;
    if (i >= y->n)
        y->n = i + 1;
}

void hl_young_fate_reset(hl_young *y) {
    if (y->n)
        memset(y->fate, FATE_UNKNOWN, y->n);
}

/* A survivor row, written in place (the fields stored straight into the vector). */
static inline void survivor_put(hl_young *y, id_vec *survivors, uint64_t id, uint64_t size,
                                uint32_t type_id, uint32_t os_tid, uint32_t heap, uint32_t gen) {
    hl_survivor *s = hl_vec_append(survivors);
    if (!s) {
        y->failures++;
        return;
    }
    *s = (hl_survivor){.id = id, .size = size, .type_id = type_id, .os_tid = os_tid,
                       .heap = (uint8_t)heap, .generation = (uint8_t)gen};
}

void hl_young_close(hl_young *y, bool classified, uint64_t end, id_vec *counts,
                    id_vec *survivors) {
    survivors->n = 0;
    for (size_t i = 0; i < y->n; i++) {
        uint32_t type_id = y->type[i];
        if (!type_id)
            continue;
        uint64_t st = y->size_tix[i], size = (st & ~FOLLOWED) >> HL_YOUNG_TIX_BITS;
        uint32_t heap = HL_GEN_NONE, gen = HL_GEN_NONE;
        if (classified) {
            heap = HL_YOUNG_FATE_HEAP(y->fate[i]);
            gen = HL_YOUNG_FATE_GEN(y->fate[i]);
        }
        if (st & FOLLOWED) { /* a survivor row when it survived, never a count */
            uint32_t tix = (uint32_t)(st & TIX_MASK);
            if (gen != HL_GEN_NONE)
                survivor_put(y, survivors, y->first + i, size, type_id,
                             tix < y->n_tids ? y->tids[tix] : 0, heap, gen);
            continue;
        }
        hl_alloc_count *e = count_entry(y, type_id, (uint32_t)(st & TIX_MASK), heap);
        if (!e)
            continue;
        e->count++;
        e->bytes += size;
        if (gen == HL_GEN_NONE)
            continue;
        e->survived++;
        e->survived_bytes += size;
        survivor_put(y, survivors, y->first + i, size, type_id, e->os_tid, heap, gen);
    }
    if (y->cap > HL_YOUNG_KEEP && y->n < y->cap / 4) {
        /* A burst grew the arrays far beyond this interval: give the memory back. */
        hl_mem_free(y->type);
        hl_mem_free(y->size_tix);
        hl_mem_free(y->fate);
        y->type = NULL;
        y->size_tix = NULL;
        y->fate = NULL;
        y->cap = 0;
    } else if (y->n) {
        memset(y->type, 0, y->n * sizeof *y->type);
    }
    y->n = 0;
    y->first = end > y->first ? end : y->first;
    y->lost = false;
    *counts = y->counts;
    y->counts = (id_vec){.elem = sizeof(hl_alloc_count)};
    hl_u64map_clear(&y->count_keys);
    memset(y->count_cache, 0, sizeof y->count_cache);
}
