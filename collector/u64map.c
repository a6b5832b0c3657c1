/* u64map.c — see u64map.h. */
#include "collector/mem.h"
#include "collector/u64map.h"

#include <stdlib.h>
#include <string.h>

static size_t home(uint64_t key, size_t cap) {
    return (size_t)((key ^ (key >> 29)) * 0x9E3779B97F4A7C15ull >> 7) & (cap - 1);
}

void hl_u64map_init(hl_u64map *m) { memset(m, 0, sizeof *m); }

void hl_u64map_release(hl_u64map *m) {
    hl_mem_free(m->slots);
    memset(m, 0, sizeof *m);
}

void hl_u64map_clear(hl_u64map *m) {
    if (m->slots)
        memset(m->slots, 0, m->cap * sizeof *m->slots);
    m->count = 0;
}

uint64_t *hl_u64map_get(const hl_u64map *m, uint64_t key) {
    if (!m->cap)
        return NULL;
    for (size_t i = home(key, m->cap);; i = (i + 1) & (m->cap - 1)) {
        if (m->slots[i].key == key)
            return &m->slots[i].value;
        if (!m->slots[i].key)
            return NULL;
    }
}

static bool grow(hl_u64map *m) {
    size_t cap = m->cap ? m->cap * 2 : 256;
    struct hl_u64map_slot *slots = hl_mem_calloc(cap, sizeof *slots);
    if (!slots)
        return false;
    for (size_t i = 0; i < m->cap; i++) {
        if (!m->slots[i].key)
            continue;
        size_t j = home(m->slots[i].key, cap);
        while (slots[j].key)
            j = (j + 1) & (cap - 1);
        slots[j] = m->slots[i];
    }
    hl_mem_free(m->slots);
    m->slots = slots;
    m->cap = cap;
    return true;
}

bool hl_u64map_put(hl_u64map *m, uint64_t key, uint64_t value) {
    if ((m->count + 1) * 2 > m->cap && !grow(m))
        return false;
    size_t i = home(key, m->cap);
    while (m->slots[i].key && m->slots[i].key != key)
        i = (i + 1) & (m->cap - 1);
    if (!m->slots[i].key)
        m->count++;
    m->slots[i].key = key;
    m->slots[i].value = value;
    return true;
}

bool hl_u64map_remove(hl_u64map *m, uint64_t key) {
    if (!m->cap)
        return false;
    size_t i = home(key, m->cap);
    while (m->slots[i].key != key) {
        if (!m->slots[i].key)
            return false;
        i = (i + 1) & (m->cap - 1);
    }
    /* Backward shift: pull later members of the probe run into the hole so that lookups never
     * stop early at it. */
    for (size_t j = (i + 1) & (m->cap - 1); m->slots[j].key; j = (j + 1) & (m->cap - 1)) {
        size_t h = home(m->slots[j].key, m->cap);
        /* Move j into the hole i unless its home lies cyclically in (i, j]. */
        if ((j > i && (h <= i || h > j)) || (j < i && (h <= i && h > j))) {
            m->slots[i] = m->slots[j];
            i = j;
        }
    }
    m->slots[i].key = 0;
    m->slots[i].value = 0;
    m->count--;
    return true;
}
