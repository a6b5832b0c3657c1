/* discovery.c — see discovery.h. The first half runs inside GarbageCollectionFinished on a GC
 * thread (copy and return: no lock, no I/O; malloc as gc_capture.c explains), the second on the
 * collector thread. */
#include "collector/mem.h"
#include "collector/discovery.h"
#include "collector/collector_internal.h"
#include "collector/gen_lookup.h"

#include <stdlib.h>

static bool found_push(hl_gc_capture *c, ObjectID object, ClassID class_id, uint64_t size) {
    if (!hl_mem_reserve((void **)&c->found, &c->cap_found, c->n_found + 1, sizeof *c->found,
                        16384)) {
        c->discover_incomplete = true;
        return false;
    }
    c->found[c->n_found++] = (hl_found_object){object, class_id, size};
    return true;
}

void hl_discover_walked(hl_gc_capture *c, ObjectID object, ClassID class_id, uint64_t size) {
    found_push(c, object, class_id, size);
}

/* Objects are 8-byte aligned on 64-bit; GetObjectSize2 gives the unaligned size. */
#define OBJECT_ALIGN 8u
/* Smaller than any object (method table, header, and a field or the array length). */
#define MIN_OBJECT 24u

void hl_discover_ranges(hl_gc_capture *c, ICorProfilerInfo *info) {
    uint64_t t0 = hl_now_ns();
    hl_gen_lookup before;
    if (!hl_gen_lookup_init(&before, c->before, c->n_before)) {
        c->discover_incomplete = true;
        return;
    }
    bool full = c->generation == 2;
    for (size_t i = 0; i < c->n_moves && !c->discover_incomplete; i++) {
        const hm_move *mv = &c->moves[i];
        uint32_t gen = hl_gen_lookup_find(&before, mv->old_start);
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
    hl_gen_lookup_release(&before);
    c->discover_ns = hl_now_ns() - t0;
}

/* ---- collector thread ------------------------------------------------------------------- */

uint64_t hl_discover_apply(collector *c, const hl_gc_capture *g, id_vec *out) {
    if (!g->n_found)
        return 0;
    hm_found *found = hl_mem_malloc(g->n_found * sizeof *found);
    hl_gen_lookup after;
    if (!found || !hl_gen_lookup_init(&after, g->after, g->n_after)) {
        hl_mem_free(found);
        c->model_failures++;
        return 0;
    }
    for (size_t i = 0; i < g->n_found; i++) {
        uint32_t gen = hl_gen_lookup_find(&after, g->found[i].object);
        /* In no range: a frozen (NonGC) object, which only a full walk reports. */
        found[i] = (hm_found){.addr = g->found[i].object, .tag = i,
                              .generation = gen == HL_GEN_NONE ? HM_GEN_NONGC : gen};
    }
    hl_gen_lookup_release(&after);
    uint64_t next = HL_DISCOVERED_ID_BASE + c->discovered + 1;
    size_t n_new = 0;
    if (hm_model_discover(c->model, found, g->n_found, &next, &n_new) != HM_OK) {
        c->model_failures++;
        hl_mem_free(found);
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
    hl_mem_free(found);
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
