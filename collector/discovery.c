/* discovery.c — see discovery.h. The first half runs inside GarbageCollectionFinished on a GC
 * thread (copy and return: no lock, no I/O; malloc as gc_capture.c explains), the second on the
 * collector thread. */
#include "collector/discovery.h"
#include "collector/collector_internal.h"

#include <stdlib.h>

static bool found_push(hl_gc_capture *c, ObjectID object, ClassID class_id, uint64_t size) {
    if (c->n_found == c->cap_found) {
        size_t cap = c->cap_found ? c->cap_found * 2 : 16384;
        hl_found_object *grown = realloc(c->found, cap * sizeof *grown);
        if (!grown) {
            c->discover_incomplete = true;
            return false;
        }
        c->found = grown;
        c->cap_found = cap;
    }
    c->found[c->n_found++] = (hl_found_object){object, class_id, size};
    return true;
}

void hl_discover_walked(hl_gc_capture *c, ObjectID object, ClassID class_id, uint64_t size) {
    found_push(c, object, class_id, size);
}

/* Bounds at GC start sorted by address, for a binary search per range. */
static int range_cmp(const void *a, const void *b) {
    const hm_gen_range *x = a, *y = b;
    return x->start < y->start ? -1 : x->start > y->start;
}

/* The non-empty ranges of r[0..n) sorted by address into out (room for n); returns how many.
 * An empty range may start where a non-empty one does (an empty gen1 at gen0's start with
 * segments): kept, it could sort after it and hide it from generation_of. */
static size_t ranges_sorted(const hm_gen_range *r, size_t n, hm_gen_range *out) {
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (r[i].length != 0)
            out[k++] = r[i];
    qsort(out, k, sizeof *out, range_cmp);
    return k;
}

static uint32_t generation_of(const hm_gen_range *r, size_t n, uint64_t addr) {
    size_t lo = 0, hi = n;
    while (lo < hi) { /* last range starting at or below addr */
        size_t mid = lo + (hi - lo) / 2;
        if (r[mid].start <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0 || addr - r[lo - 1].start >= r[lo - 1].length)
        return HL_GEN_NONE;
    return r[lo - 1].generation;
}

/* Objects are 8-byte aligned on 64-bit; GetObjectSize2 gives the unaligned size. */
#define OBJECT_ALIGN 8u
/* Smaller than any object (method table, header, and a field or the array length). */
#define MIN_OBJECT 24u

void hl_discover_ranges(hl_gc_capture *c, ICorProfilerInfo *info) {
    uint64_t t0 = hl_now_ns();
    hm_gen_range *before = malloc((c->n_before ? c->n_before : 1) * sizeof *before);
    if (!before) {
        c->discover_incomplete = true;
        return;
    }
    size_t n_before = ranges_sorted(c->before, c->n_before, before);
    bool full = c->generation == 2;
    for (size_t i = 0; i < c->n_moves && !c->discover_incomplete; i++) {
        const hm_move *mv = &c->moves[i];
        uint32_t gen = generation_of(before, n_before, mv->old_start);
        /* gen0 holds every object allocated since the last GC; gen1 and gen2 hold only
         * objects that survived a GC, found then. LOH and POH objects are condemned only by
         * gen2 GCs (LOH allocations arrive by ObjectAllocated too; the model skips known ones). */
        if (!(gen == HL_GEN_0 || (full && (gen == HL_GEN_LOH || gen == HL_GEN_POH))))
            continue;
        uint64_t at = mv->new_start, end = mv->new_start + mv->length;
        while (at < end) {
            ClassID cls = 0;
            SIZE_T size = 0;
            if (HR_FAILED(info_get_class_from_object(info, at, &cls)) ||
                HR_FAILED(info_get_object_size2(info, at, &size)) || size < MIN_OBJECT / 2 ||
                size > end - at) {
                c->discover_incomplete = true; /* not a run of objects: the next GC walks */
                break;
            }
            if (!found_push(c, at, cls, size))
                break;
            at += (size + OBJECT_ALIGN - 1) & ~(uint64_t)(OBJECT_ALIGN - 1);
        }
    }
    free(before);
    c->discover_ns = hl_now_ns() - t0;
}

/* ---- collector thread ------------------------------------------------------------------- */

uint64_t hl_discover_apply(collector *c, const hl_gc_capture *g, id_vec *out) {
    if (!g->n_found)
        return 0;
    hm_found *found = malloc(g->n_found * sizeof *found);
    hm_gen_range *after = malloc((g->n_after ? g->n_after : 1) * sizeof *after);
    if (!found || !after) {
        free(found);
        free(after);
        c->model_failures++;
        return 0;
    }
    size_t n_after = ranges_sorted(g->after, g->n_after, after);
    for (size_t i = 0; i < g->n_found; i++) {
        uint32_t gen = generation_of(after, n_after, g->found[i].object);
        /* In no range: a frozen (NonGC) object, which only a full walk reports. */
        found[i] = (hm_found){.addr = g->found[i].object, .tag = i,
                              .generation = gen == HL_GEN_NONE ? HM_GEN_NONGC : gen};
    }
    free(after);
    uint64_t next = HL_DISCOVERED_ID_BASE + c->discovered + 1;
    size_t n_new = 0;
    if (hm_model_discover(c->model, found, g->n_found, &next, &n_new) != HM_OK) {
        c->model_failures++;
        free(found);
        return 0;
    }
    for (size_t i = 0; i < g->n_found; i++) {
        if (found[i].status != HM_FOUND_NEW)
            continue;
        const hl_found_object *f = &g->found[found[i].tag];
        uint32_t type_id = hl_collector_type_id(c, f->class_id);
        hl_discovered d = {.id = found[i].id, .size = f->size, .type_id = type_id,
                           .generation = found[i].generation};
        if (!hl_vec_push(out, &d))
            c->model_failures++;
    }
    free(found);
    c->discovered += n_new;
    c->discovered_at_gcs += n_new;
    return n_new;
}

void hl_discover_send(collector *c, const hl_gc_capture *g, id_vec *out) {
    if (!out->n)
        return;
    hl_collector_flush_types(c); /* TYPE records before their first use */
    hl_discovered_head head = {.gc = g->gc};
    hl_collector_put_chunked(c, HL_REC_DISCOVERED, &head, sizeof head, &head.count, out->p,
                             out->n, sizeof(hl_discovered));
    hl_vec_release(out);
}
