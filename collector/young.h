/* young.h — the young interval: what the collector thread keeps per allocation between two GCs,
 * and the allocation counts and survivor rows built from it when a GC closes the interval.
 *
 * Most objects die before their first GC, so per allocation this is only two array stores,
 * 6 bytes (the type id; the size in 16 bits, a larger one kept aside by id), indexed by
 * id - first: ids are dense, and ids without an allocation (handle events, dropped events) stay
 * 0. The allocating thread is not stored per allocation: a thread takes its ids in blocks
 * (thread_buffers.h), so in id order the thread changes once per block, and the interval keeps
 * one entry per run of ids of one thread (its first id and the thread's index), sorted at the
 * close. When a GC has been applied the caller records each young object's heap and fate
 * (hl_young_fate_reset, then hl_young_set_heap / hl_young_set_gen from the model's sink, or the
 * model writes the bytes itself: hm_gc_sink.young_fates over `fate`, the same encoding), and
 * hl_young_close makes one sequential pass: every allocation into its (type, thread, heap) count
 * entry, every object alive after the GC into a survivor row, in id order; then the arrays start
 * over. 7 bytes per allocation in all (13 before: a 64-bit size and thread word), so the drain,
 * the model's fate bytes and the closing pass touch about half the cache lines and pages.
 *
 * Collector thread only. Nothing here sends records or loses a count: an allocation the arrays
 * cannot take (out of memory) is counted at once, unclassified, and the interval marked `lost`.
 */
#ifndef HEAPLENS_YOUNG_H
#define HEAPLENS_YOUNG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "collector/u64map.h"
#include "wire/hl_wire.h"

/* A growable array of fixed-size elements (elem bytes each). */
typedef struct id_vec {
    void *p;
    size_t n, cap, elem;
} id_vec;

/* Appends a copy of *elem; false when out of memory (nothing changed). */
bool hl_vec_push(id_vec *v, const void *elem);
void hl_vec_release(id_vec *v);
/* Room for one more element, counted in n, for the caller to fill in place; NULL when out of
 * memory (nothing changed). Inline: the collector appends a survivor, death or promotion per
 * object, millions per GC, and a push of a copy was a call and a memcpy of a variable size. */
bool hl_vec_grow(id_vec *v);
static inline void *hl_vec_append(id_vec *v) {
    if (__builtin_expect(v->n == v->cap, 0) && !hl_vec_grow(v))
        return NULL;
    return (char *)v->p + v->n++ * v->elem;
}

#define HL_YOUNG_TIX_BITS 20          /* thread index bits: up to 1M threads per run */
#define HL_YOUNG_KEEP (1u << 20)      /* entries (7 MiB) kept however small an interval */
#define HL_YOUNG_SIZE_BIG 0xffffu     /* in `size`: the size is in big_sizes */
#define HL_YOUNG_FOLLOWED (1u << 31)  /* in `type`: hl_young_add_followed (type ids stay below) */

typedef struct hl_young {
    uint64_t first;       /* first id of the interval */
    size_t n;             /* ids below first + n may be filled */
    size_t cap;
    uint32_t *type;       /* 0 = no allocation with this id; HL_YOUNG_FOLLOWED | type */
    uint16_t *size;       /* the size, or HL_YOUNG_SIZE_BIG: big_sizes holds it (key index + 1) */
    uint8_t *fate;        /* per GC: heap | generation after << 4 */
    hl_u64map big_sizes;
    /* Runs of ids of one thread, in the order added: index << HL_YOUNG_TIX_BITS | thread index.
     * An id whose index is run_next, added by the thread of the run being added to (run_tix),
     * extends it; any other starts a run. Sorted at the close, they give every id its thread. */
    id_vec runs;
    size_t run_next;
    uint32_t run_tix;
    bool lost;            /* an allocation found no room in the arrays (counted, undescribed) */
    /* Count entries of the interval: (type, thread index, heap) -> index in counts, with a
     * direct-mapped cache in front (programs alternate a few hot keys). */
    hl_u64map count_keys;
    id_vec counts;        /* hl_alloc_count */
    struct { uint64_t key; size_t at; } count_cache[256];
    /* Thread index <-> OS tid. */
    uint32_t *tids;
    size_t n_tids, cap_tids;
    hl_u64map tid_index;
    uint32_t last_tid, last_tix;
    uint64_t failures;    /* out-of-memory events (the caller adds them to its failure count) */
} hl_young;

/* An empty interval starting at id `first`. */
void hl_young_init(hl_young *y, uint64_t first);
void hl_young_release(hl_young *y);

/* One allocation of the interval (id >= first; an id below is counted at once, as when memory
 * runs out). The common case (the thread's next id, room in the arrays, a size below 64 KiB) is
 * inline: it runs for every allocation of the program; hl_young_add_any handles everything. */
void hl_young_add_any(hl_young *y, uint64_t id, uint32_t type_id, uint32_t os_tid, uint64_t size);
static inline void hl_young_add(hl_young *y, uint64_t id, uint32_t type_id, uint32_t os_tid,
                                uint64_t size) {
    size_t i = (size_t)(id - y->first);
    if (i == y->run_next && os_tid == y->last_tid && i < y->cap && size < HL_YOUNG_SIZE_BIG) {
        y->type[i] = type_id;
        y->size[i] = (uint16_t)size;
        y->run_next = i + 1;
        if (i >= y->n)
            y->n = i + 1;
        return;
    }
    hl_young_add_any(y, id, type_id, os_tid, size);
}

/* A followed object that is no allocation to count (sampled mode: an allocation sample's object,
 * which the census counts): like an add, but hl_young_close gives it a survivor row only, no
 * count. Out of memory: nothing counted, the interval marked `lost`. */
void hl_young_add_followed(hl_young *y, uint64_t id, uint32_t type_id, uint32_t os_tid,
                           uint64_t size);

/* Before a GC's results: every filled id's heap and fate unknown. */
void hl_young_fate_reset(hl_young *y);
/* The type id of `id`, an id of this interval (hl_young_has), 0 if none was added. */
static inline uint32_t hl_young_type(const struct hl_young *y, uint64_t id) {
    return y->type[id - y->first] & ~HL_YOUNG_FOLLOWED;
}
/* Whether `id` has a fate byte (an id of this interval). */
static inline bool hl_young_has(const hl_young *y, uint64_t id) {
    return id >= y->first && id - y->first < y->n;
}
/* The fate byte: heap | generation after << 4. */
#define HL_YOUNG_FATE(heap, gen_after) ((uint8_t)((gen_after) << 4 | (heap)))
#define HL_YOUNG_FATE_HEAP(f) ((uint32_t)(f) & 0x0f)
#define HL_YOUNG_FATE_GEN(f) ((uint32_t)(f) >> 4)
/* The model classified `id` (heap HL_GEN_0, LOH, POH or NONGC): alive in that heap so far. */
static inline void hl_young_set_heap(hl_young *y, uint64_t id, uint32_t heap) {
    if (hl_young_has(y, id))
        y->fate[id - y->first] = HL_YOUNG_FATE(heap, heap);
}
/* The model decided `id`'s fate: its generation after the GC, or HL_GEN_NONE (died). Inline,
 * like set_heap: the model reports every young object, tens of millions per run. */
static inline void hl_young_set_gen(hl_young *y, uint64_t id, uint32_t gen) {
    if (hl_young_has(y, id)) {
        uint8_t *f = &y->fate[id - y->first];
        *f = HL_YOUNG_FATE(HL_YOUNG_FATE_HEAP(*f), gen);
    }
}

/* Whether `id`, an object of this interval, is alive after the GC: its fate byte names a
 * generation (false for any other id). Valid from the GC's fates until hl_young_close. */
static inline bool hl_young_alive(const hl_young *y, uint64_t id) {
    return hl_young_has(y, id) && y->type[id - y->first] &&
           HL_YOUNG_FATE_GEN(y->fate[id - y->first]) != HL_GEN_NONE;
}

/* A GC's survivors as GC_SURVIVORS_PACKED payloads (wire/hl_wire.h), packed by the closing pass
 * as it finds them, in ascending ids: no 32-byte row per survivor written and read back. Each
 * payload holds at most `max_objects` objects and `max_bytes` bytes (the caller's record
 * limits), cut exactly where hl_survivors_pack would cut a list of rows. */
typedef struct hl_young_packed_record {
    size_t at;         /* offset of the payload in `bytes` */
    uint32_t count;    /* objects */
    uint32_t n_bytes;
} hl_young_packed_record;
typedef struct hl_young_packed {
    size_t max_objects, max_bytes;
    id_vec bytes;      /* uint8_t: the payloads one after another */
    id_vec records;    /* hl_young_packed_record */
    size_t n;          /* survivors in all */
    hl_survivor_pack_state state; /* of the last payload */
} hl_young_packed;
/* An empty set with those limits (max_bytes >= HL_SURVIVOR_PACKED_MAX); _release frees it. */
void hl_young_packed_init(hl_young_packed *p, size_t max_objects, size_t max_bytes);
void hl_young_packed_release(hl_young_packed *p);

/* Closes the interval at `end` (the GC's first_id_after, or the current first for the tail):
 * hands over the counts (*counts, hl_alloc_count, owned by the caller) and fills *survivors
 * (emptied first; its memory kept) with the objects alive after the GC, ascending ids. Without
 * `classified` (tail, incomplete GC) every count has heap HL_GEN_NONE and survived 0, and there
 * are no survivors. A survivor that finds no memory is left out (counted in failures). The next
 * interval starts at max(end, first), empty. */
void hl_young_close(hl_young *y, bool classified, uint64_t end, id_vec *counts,
                    hl_young_packed *survivors);

#endif /* HEAPLENS_YOUNG_H */
