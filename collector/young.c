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
    uint64_t key = HL_YOUNG_COUNT_KEY(type_id, tix, heap);
    size_t slot = hl_young_count_slot(key);
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

void hl_young_count_any(hl_young *y, uint32_t type_id, uint32_t tix, uint64_t size) {
    if (!type_id)
        return;
    hl_alloc_count *e = count_entry(y, type_id, tix, HL_GEN_0);
    if (e) {
        e->count++;
        e->bytes += size;
    }
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
        hl_young_count(y, type_id, tix, size);
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

/* The object young[i], whose fate is not "died in the small-object heap": its row if it
 * survived, its count moved to its heap's entry if that is not the small-object heap (the drain
 * counted it there), its entry's survived counts. */
static void close_one(hl_young *y, size_t i, id_vec *survivors) {
    uint32_t type_id = y->type[i];
    if (!type_id)
        return; /* no allocation with this id */
    uint64_t st = y->size_tix[i], size = (st & ~FOLLOWED) >> HL_YOUNG_TIX_BITS;
    uint32_t tix = (uint32_t)(st & TIX_MASK);
    uint32_t heap = HL_YOUNG_FATE_HEAP(y->fate[i]), gen = HL_YOUNG_FATE_GEN(y->fate[i]);
    if (st & FOLLOWED) { /* a survivor row when it survived, never a count */
        if (gen != HL_GEN_NONE)
            survivor_put(y, survivors, y->first + i, size, type_id,
                         tix < y->n_tids ? y->tids[tix] : 0, heap, gen);
        return;
    }
    if (heap != HL_GEN_0) {
        /* Out of the small-object entry first: creating the other may move the entries. */
        hl_alloc_count *soh = count_entry(y, type_id, tix, HL_GEN_0);
        if (soh && soh->count) {
            soh->count--;
            soh->bytes -= size;
        }
        hl_alloc_count *e = count_entry(y, type_id, tix, heap);
        if (!e)
            return;
        e->count++;
        e->bytes += size;
    }
    if (gen == HL_GEN_NONE)
        return;
    hl_alloc_count *e = count_entry(y, type_id, tix, heap);
    if (!e)
        return;
    e->survived++;
    e->survived_bytes += size;
    survivor_put(y, survivors, y->first + i, size, type_id, e->os_tid, heap, gen);
}

/* Unclassified (tail, incomplete GC): every entry's heap becomes HL_GEN_NONE; an entry the
 * interval already had with that heap (allocations counted at once) takes the other's counts. */
static void counts_unclassify(hl_young *y) {
    hl_alloc_count *c = y->counts.p;
    if (!y->lost) { /* no entry with HL_GEN_NONE yet: no two can meet */
        for (size_t i = 0; i < y->counts.n; i++)
            c[i].heap = HL_GEN_NONE;
        return;
    }
    hl_u64map none; /* type id << 32 | os tid -> index of its entry */
    hl_u64map_init(&none);
    for (size_t i = 0; i < y->counts.n; i++) {
        if (c[i].heap != HL_GEN_NONE)
            continue;
        if (!hl_u64map_put(&none, (uint64_t)c[i].type_id << 32 | c[i].os_tid, i))
            y->failures++;
    }
    for (size_t i = 0; i < y->counts.n; i++) {
        if (c[i].heap == HL_GEN_NONE)
            continue;
        c[i].heap = HL_GEN_NONE;
        uint64_t *at = hl_u64map_get(&none, (uint64_t)c[i].type_id << 32 | c[i].os_tid);
        if (!at) {
            if (!hl_u64map_put(&none, (uint64_t)c[i].type_id << 32 | c[i].os_tid, i))
                y->failures++;
            continue;
        }
        c[*at].count += c[i].count;
        c[*at].bytes += c[i].bytes;
        c[i].count = c[i].bytes = 0; /* dropped below */
    }
    hl_u64map_release(&none);
}

void hl_young_close(hl_young *y, bool classified, uint64_t end, id_vec *counts,
                    id_vec *survivors) {
    survivors->n = 0;
    if (classified) {
        /* Eight fates at a time: most objects died in the small-object heap, where the drain
         * counted them, and need nothing more. */
        const uint8_t dead = HL_YOUNG_FATE(HL_GEN_0, HL_GEN_NONE);
        const uint64_t dead8 = 0x0101010101010101ull * dead;
        size_t i = 0, n = y->n;
        for (; i + 8 <= n; i += 8) {
            uint64_t w;
            memcpy(&w, y->fate + i, sizeof w);
            if (w == dead8)
                continue;
            for (size_t k = i; k < i + 8; k++)
                if (y->fate[k] != dead)
                    close_one(y, k, survivors);
        }
        for (; i < n; i++)
            if (y->fate[i] != dead)
                close_one(y, i, survivors);
    } else {
        counts_unclassify(y);
    }
    /* Entries whose every allocation moved to another heap's entry. */
    hl_alloc_count *c = y->counts.p;
    size_t kept = 0;
    for (size_t i = 0; i < y->counts.n; i++)
        if (c[i].count)
            c[kept++] = c[i];
    y->counts.n = kept;
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
