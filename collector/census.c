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
    hl_u64map_init(&s->index);
    hl_u64map_init(&s->checked);
    /* Recording from the start: the first GC's gen0 is all new. After an attach it is not (the
     * first walk then only learns; hl_census_start_unknown). */
    s->old_valid = true;
}

void hl_census_release(hl_census *s) {
    hl_u64map_release(&s->index);
    hl_u64map_release(&s->checked);
    hl_mem_free(s->counts);
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

static bool old_contains(const hl_census *s, uint64_t at) {
    if (!s->n_old || at < s->old[0] || at > s->old[s->n_old - 1])
        return false;
    size_t lo = 0, hi = s->n_old;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->old[mid] < at)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < s->n_old && s->old[lo] == at;
}

static hl_census_count *count_slot(hl_census *s, uint64_t mt) {
    uint64_t *ix = hl_u64map_get(&s->index, mt);
    if (ix)
        return &s->counts[*ix - 1];
    if (s->n_counts == s->cap_counts) {
        size_t cap = s->cap_counts ? s->cap_counts * 2 : 256;
        hl_census_count *grown = hl_mem_realloc(s->counts, cap * sizeof *grown);
        if (!grown)
            return NULL;
        s->counts = grown;
        s->cap_counts = cap;
    }
    if (!hl_u64map_put(&s->index, mt, s->n_counts + 1))
        return NULL;
    s->counts[s->n_counts] = (hl_census_count){.class_id = mt};
    return &s->counts[s->n_counts++];
}

/* One object's step: its size aligned (its own size in *raw), or 0 when the range does not
 * parse. */
static uint64_t step(uint64_t at, uint64_t end, uint64_t *raw) {
    *raw = hl_census_object_size((const void *)(uintptr_t)at);
    uint64_t size = (*raw + OBJECT_ALIGN - 1) & ~(uint64_t)(OBJECT_ALIGN - 1);
    return size < MIN_OBJECT || size > end - at ? 0 : size;
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
    bool ok = true;
    s->n_counts = 0;
    hl_u64map_clear(&s->index);
    memset(s->cache, 0, sizeof s->cache);
    for (size_t i = 0; i < n_before && ok; i++) {
        if (before[i].generation != HM_GEN_0)
            continue;
        uint64_t at = before[i].start, end = before[i].start + before[i].length;
        while (at < end) {
            uint64_t mt = *(const uint64_t *)(uintptr_t)at & ~(uint64_t)7, raw = 0;
            uint64_t size = mt ? step(at, end, &raw) : 0;
            if (!size) {
                ok = false;
                break;
            }
            if (mt == s->free_mt) {
                at += size;
                continue;
            }
            struct hl_census_cache *e = &s->cache[(mt >> 3) & 255];
            if (e->mt != mt) {
                int kind = mt_classify(s, info, at, mt);
                if (kind == MT_ERROR) {
                    ok = false;
                    break;
                }
                if (kind == MT_FREE) {
                    at += size;
                    continue;
                }
                hl_census_count *slot = count_slot(s, mt);
                if (!slot) {
                    ok = false;
                    break;
                }
                *e = (struct hl_census_cache){mt, (size_t)(slot - s->counts)};
            }
            if (!old_contains(s, at)) {
                hl_census_count *slot = &s->counts[e->ix];
                slot->count++;
                slot->bytes += raw;
                r.objects++;
            }
            at += size;
        }
    }
    /* Not exact unless the previous GC's gen0 is known (it is not at the first GC after an
     * attach, nor after a GC whose end could not be remembered). */
    r.done = ok && s->old_valid;
    s->old_valid = false; /* until this GC's end is remembered */
    if (r.done && s->n_counts) {
        r.counts = hl_mem_malloc(s->n_counts * sizeof *r.counts);
        if (r.counts) {
            for (size_t i = 0; i < s->n_counts; i++) /* classes seen only among the skipped */
                if (s->counts[i].count)
                    r.counts[r.n++] = s->counts[i];
        } else {
            r.done = false;
        }
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
    for (size_t i = 0; i < n_after; i++) {
        if (after[i].generation != HM_GEN_0)
            continue;
        uint64_t at = after[i].start, end = after[i].start + after[i].length;
        while (at < end) {
            uint64_t mt = *(const uint64_t *)(uintptr_t)at & ~(uint64_t)7, raw = 0;
            uint64_t size = mt ? step(at, end, &raw) : 0;
            int kind = size ? mt_classify(s, info, at, mt) : MT_ERROR;
            if (kind == MT_ERROR)
                return hl_now_ns() - t0; /* old_valid stays false: the next walk is not exact */
            if (kind == MT_OBJECT) {
                if (s->n_old == s->cap_old) {
                    size_t cap = s->cap_old ? s->cap_old * 2 : 4096;
                    uint64_t *grown = hl_mem_realloc(s->old, cap * sizeof *grown);
                    if (!grown)
                        return hl_now_ns() - t0;
                    s->old = grown;
                    s->cap_old = cap;
                }
                s->old[s->n_old++] = at;
            }
            at += size;
        }
    }
    qsort(s->old, s->n_old, sizeof *s->old, u64_cmp);
    s->old_valid = true;
    return hl_now_ns() - t0;
}
