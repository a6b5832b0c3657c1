/* census.c — see census.h. Runs inside GC callbacks on a GC thread (runtime suspended): no lock,
 * no I/O; hl_mem_* allocation as gc_capture.c explains. */
#include "collector/census.h"
#include "collector/collector.h"
#include "collector/mem.h"

#include <stdlib.h>
#include <string.h>

/* The EE/GC object layout (the GC's own stepping): not a profiler ABI, so every method table is
 * checked once against GetObjectSize2 before its objects are counted. */
#define MT_HAS_COMPONENT_SIZE 0x80000000u
#define OBJECT_ALIGN 8u
#define MIN_OBJECT 24u

uint64_t hl_census_object_size(const void *object) {
    const uint8_t *mt = (const uint8_t *)(*(const uintptr_t *)object & ~(uintptr_t)7);
    uint32_t flags, base;
    memcpy(&flags, mt, sizeof flags);
    memcpy(&base, mt + 4, sizeof base);
    uint64_t size = base;
    if (flags & MT_HAS_COMPONENT_SIZE) {
        uint32_t length;
        memcpy(&length, (const uint8_t *)object + 8, sizeof length);
        size += (uint64_t)length * (flags & 0xffffu);
    }
    return size;
}

void hl_census_init(hl_census *s, bool on) {
    memset(s, 0, sizeof *s);
    s->on = on;
    hl_u64map_init(&s->checked);
    /* Recording from the start: the first GC's gen0 is all new. After an attach it is not (the
     * first walk then only learns; hl_census_start_unknown). */
    s->old_valid = true;
}

void hl_census_release(hl_census *s) {
    hl_u64map_release(&s->checked);
    hl_mem_free(s->types);
    hl_mem_free(s->old);
    memset(s, 0, sizeof *s);
}

enum { MT_ERROR = -1, MT_FREE = 0, MT_OBJECT = 1 };

/* Whether `mt` (the method table of the object at `at`) is the free objects' one; on first
 * sight of a method table, the runtime tells (ClassID 0 for a free object) and the size computed
 * from the layout is compared with the runtime's. */
static int mt_classify(hl_census *s, ICorProfilerInfo *info, uint64_t at, uint64_t mt) {
    if (mt == s->free_mt)
        return MT_FREE;
    if (hl_u64map_get(&s->checked, mt))
        return MT_OBJECT;
    ClassID cls = 0;
    if (HR_FAILED(info_get_class_from_object(info, at, &cls)))
        return MT_ERROR;
    if (cls == 0) {
        if (s->free_mt && s->free_mt != mt)
            return MT_ERROR; /* two "free" method tables: not what this code knows */
        s->free_mt = mt;
        return MT_FREE;
    }
    SIZE_T size = 0;
    if (cls != mt || HR_FAILED(info_get_object_size2(info, at, &size)) ||
        size != hl_census_object_size((const void *)(uintptr_t)at)) {
        s->broken = true;
        return MT_ERROR;
    }
    if (!hl_u64map_put(&s->checked, mt, 1))
        return MT_ERROR;
    return MT_OBJECT;
}

/* The table's first probe for `mt`: a multiplicative hash (method tables are 8-aligned and a
 * few dozen bytes apart; the multiply is off the path to the next object). */
static inline size_t type_home(const hl_census *s, uint64_t mt) {
    return (size_t)((mt * UINT64_C(0x9E3779B97F4A7C15)) >> 32) & (s->types_cap - 1);
}

/* Makes the table hold at least `cap` slots, rehashing what it has; false when out of memory
 * (the table is then unchanged). */
static bool types_grow(hl_census *s, size_t cap) {
    struct hl_census_type *old = s->types, *grown = hl_mem_calloc(cap, sizeof *grown);
    size_t old_cap = s->types_cap;
    if (!grown)
        return false;
    s->types = grown;
    s->types_cap = cap;
    for (size_t i = 0; i < old_cap; i++) {
        if (!old[i].mt)
            continue;
        size_t j = type_home(s, old[i].mt);
        while (grown[j].mt)
            j = (j + 1) & (cap - 1);
        grown[j] = old[i];
    }
    hl_mem_free(old);
    return true;
}

/* The slot of `mt` (the method table of the object at `at`) when the first probe missed: the
 * next probes, or a new slot, the method table classified (mt_classify) on first sight in this
 * walk. NULL when the object cannot be counted (the walk is then not exact). */
static struct hl_census_type *type_find(hl_census *s, ICorProfilerInfo *info, uint64_t at,
                                        uint64_t mt) {
    size_t i = type_home(s, mt);
    while (s->types[i].mt) {
        if (s->types[i].mt == mt)
            return &s->types[i];
        i = (i + 1) & (s->types_cap - 1);
    }
    if (mt_classify(s, info, at, mt) == MT_ERROR)
        return NULL;
    if ((s->n_types + 1) * 2 > s->types_cap) {
        if (!types_grow(s, s->types_cap * 2))
            return NULL;
        i = type_home(s, mt);
        while (s->types[i].mt)
            i = (i + 1) & (s->types_cap - 1);
    }
    s->n_types++;
    s->types[i].mt = mt;
    return &s->types[i];
}

/* Empties the table for a walk (allocated at the first one); false when out of memory. */
static bool types_clear(hl_census *s) {
    if (!s->types)
        return types_grow(s, 1024);
    memset(s->types, 0, s->types_cap * sizeof *s->types);
    s->n_types = 0;
    return true;
}

/* One walk in progress over a gen0 range: the next object, the range's end, and (counting) the
 * remembered addresses not yet passed. */
typedef struct lane {
    uint64_t at, end, next_old;
    const uint64_t *old, *old_end;
} lane;

/* Starts `l` on [at, end): the first remembered address at or after `at` by binary search,
 * then one compare per object. */
static void lane_start(const hl_census *s, lane *l, uint64_t at, uint64_t end, bool count) {
    const uint64_t *old = count ? s->old : NULL, *old_end = count ? s->old + s->n_old : NULL;
    size_t lo = 0, hi = (size_t)(old_end - old);
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (old[mid] < at)
            lo = mid + 1;
        else
            hi = mid;
    }
    *l = (lane){.at = at, .end = end, .old = old + lo, .old_end = old_end};
    l->next_old = l->old != old_end ? *l->old : UINT64_MAX;
}

/* One object of a lane with room for one (end - at >= MIN_OBJECT), stepped as the GC steps.
 * count: the object is counted in its method table's slot unless remembered from the
 * previous GC; else (remembering) its address is appended to s->old unless it is free. false
 * when it does not parse (no method table, a size past the range's end), its method table
 * cannot be classified, or memory runs out. */
__attribute__((always_inline)) static inline bool lane_step(hl_census *s, ICorProfilerInfo *info, lane *l, bool count) {
    uint64_t at = l->at;
    /* The step reads the method table itself (in L1: a program interleaves a few) rather than
     * a table of sizes: the next object's address then waits for two loads only, and the
     * table lookup for the counting runs beside it, not before it. */
    uint64_t mt = *(const uint64_t *)(uintptr_t)at & ~(uint64_t)7;
    if (__builtin_expect(!mt, 0))
        return false;
    uint32_t flags, base;
    memcpy(&flags, (const void *)(uintptr_t)mt, sizeof flags);
    memcpy(&base, (const uint8_t *)(uintptr_t)mt + 4, sizeof base);
    uint64_t raw = base;
    if (flags & MT_HAS_COMPONENT_SIZE) {
        uint32_t length;
        memcpy(&length, (const uint8_t *)(uintptr_t)at + 8, sizeof length);
        raw += (uint64_t)length * (flags & 0xffffu);
    }
    uint64_t size = (raw + OBJECT_ALIGN - 1) & ~(uint64_t)(OBJECT_ALIGN - 1);
    if (__builtin_expect(size < MIN_OBJECT || size > l->end - at, 0))
        return false;
    l->at = at + size;
    struct hl_census_type *t = &s->types[type_home(s, mt)];
    if (__builtin_expect(t->mt != mt, 0) && !(t = type_find(s, info, at, mt)))
        return false;
    if (count) {
        if (__builtin_expect(at >= l->next_old, 0)) {
            while (l->old != l->old_end && *l->old < at)
                l->old++;
            l->next_old = l->old != l->old_end ? *l->old : UINT64_MAX;
        }
        if (at != l->next_old) { /* free objects count in their own slot, never reported */
            t->count++;
            t->bytes += raw;
        }
    } else if (mt != s->free_mt) {
        if (s->n_old == s->cap_old) {
            size_t cap = s->cap_old ? s->cap_old * 2 : 4096;
            uint64_t *grown = hl_mem_realloc(s->old, cap * sizeof *grown);
            if (!grown)
                return false;
            s->old = grown;
            s->cap_old = cap;
        }
        s->old[s->n_old++] = at;
    }
    return true;
}

/* Starts `l` on the next gen0 range of `ranges` from *next; false when none is left. */
static bool lane_next(const hl_census *s, lane *l, const hm_gen_range *ranges, size_t n,
                      size_t *next, bool count) {
    while (*next < n && ranges[*next].generation != HM_GEN_0)
        ++*next;
    if (*next == n)
        return false;
    const hm_gen_range *r = &ranges[(*next)++];
    lane_start(s, l, r->start, r->start + r->length, count);
    return true;
}

/* Walks the rest of `l`'s range alone; false as lane_step, or when the range ends inside an
 * object. */
__attribute__((always_inline)) static inline bool lane_finish(hl_census *s, ICorProfilerInfo *info,
                                                              lane *l, bool count) {
    while (l->end - l->at >= MIN_OBJECT)
        if (!lane_step(s, info, l, count))
            return false;
    return l->at == l->end;
}

/* Gen0 ranges walked at once: each object's address waits for the previous object's size (two
 * dependent loads), which leaves the core mostly idle; with regions gen0 is many ranges (one
 * per region), and walking CENSUS_LANES of them in one loop overlaps their waits
 * (bench_census: 3.7 -> 2.5 ns per object). The ranges left when too few remain for every
 * lane (a segment's single gen0 range) are walked one at a time. */
#define CENSUS_LANES 4

/* Walks every gen0 range of `ranges` (see lane_step for `count`); false when one does not
 * parse into whole objects or a step fails. Inlined into both callers with `count` constant. */
__attribute__((always_inline)) static inline bool walk_gen0(hl_census *s, ICorProfilerInfo *info,
                                                            const hm_gen_range *ranges, size_t n,
                                                            bool count) {
    lane lanes[CENSUS_LANES];
    size_t next = 0;
    int active = 0;
    while (active < CENSUS_LANES && lane_next(s, &lanes[active], ranges, n, &next, count))
        active++;
    bool refill = active == CENSUS_LANES;
    while (refill) {
        for (int k = 0; k < CENSUS_LANES; k++) {
            lane *l = &lanes[k];
            if (__builtin_expect(l->end - l->at >= MIN_OBJECT, 1)) {
                if (!lane_step(s, info, l, count))
                    return false;
                continue;
            }
            if (l->at != l->end)
                return false; /* the range ends inside an object */
            if (!lane_next(s, l, ranges, n, &next, count)) {
                refill = false; /* no range left for this lane: the others finish alone */
                break;
            }
        }
    }
    for (int k = 0; k < active; k++)
        if (!lane_finish(s, info, &lanes[k], count))
            return false;
    return true;
}

hl_census_result hl_census_walk(hl_census *s, ICorProfilerInfo *info, const hm_gen_range *before,
                                size_t n_before) {
    hl_census_result r = {0};
    if (!s->on || s->broken)
        return r;
    if (!before) {
        s->old_valid = false;
        return r;
    }
    uint64_t t0 = hl_now_ns();
    bool ok = types_clear(s) && walk_gen0(s, info, before, n_before, true);
    /* Not exact unless the previous GC's gen0 is known (it is not at the first GC after an
     * attach, nor after a GC whose end could not be remembered). */
    r.done = ok && s->old_valid;
    s->old_valid = false; /* until this GC's end is remembered */
    if (r.done && s->n_types) {
        r.counts = hl_mem_malloc(s->n_types * sizeof *r.counts);
        for (size_t i = 0; r.counts && i < s->types_cap; i++) {
            const struct hl_census_type *t = &s->types[i];
            if (!t->mt || t->mt == s->free_mt || !t->count) /* free; or only remembered ones */
                continue;
            r.counts[r.n++] = (hl_census_count){.class_id = t->mt, .count = t->count,
                                                .bytes = t->bytes};
            r.objects += t->count;
        }
        r.done = r.counts != NULL;
    }
    r.walk_ns = hl_now_ns() - t0;
    return r;
}

static int u64_cmp(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

uint64_t hl_census_remember(hl_census *s, ICorProfilerInfo *info, const hm_gen_range *after,
                            size_t n_after) {
    if (!s->on || s->broken)
        return 0;
    uint64_t t0 = hl_now_ns();
    s->n_old = 0;
    s->old_valid = false;
    if (!after)
        return hl_now_ns() - t0;
    if (!types_clear(s) || !walk_gen0(s, info, after, n_after, false))
        return hl_now_ns() - t0; /* old_valid stays false: the next walk is not exact */
    qsort(s->old, s->n_old, sizeof *s->old, u64_cmp);
    s->old_valid = true;
    return hl_now_ns() - t0;
}
