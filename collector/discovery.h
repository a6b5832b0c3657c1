/* discovery.h — object identity without ObjectAllocated (attach; sampled mode follows its samples
 * instead: collector/README.md, "Sampled mode follows its samples").
 *
 * The collector hears of no allocation, yet every object alive after a GC must have an id. An
 * object unknown to the model can only have been allocated since the previous GC, so it lies
 * in gen0 when a GC starts: the GC either kills it or reports the range it survives in
 * (MovedReferences2, SurvivingReferences2), and after the GC that range is a contiguous run of
 * objects at its new address. So:
 *   GC thread, at GarbageCollectionFinished (the heap is consistent, nothing runs): parse the
 *     survivor ranges whose old address lay in gen0 at GC start (in gen2 GCs also those of the
 *     LOH and POH, which no other GC condemns) object by object — GetClassFromObject and
 *     GetObjectSize2 on each, stepping by the aligned size — and copy {address, class, size}
 *     into the capture. Cost follows gen0 survivors, not the heap or the allocations.
 *   The first GC (and the one after a GC whose discovery failed) keeps the runtime's
 *     ObjectReferences walk instead and copies every object of it: the whole heap gets ids.
 *   Collector thread, right after the model applied the GC: hm_model_discover names the objects
 *     the model knows and inserts the others with ids from HL_DISCOVERED_ID_BASE, in the
 *     generation their address lies in after the GC; they go to the writer as DISCOVERED inside
 *     that GC (an objects row with first_gc = that GC, thread unknown).
 */
#ifndef HEAPLENS_DISCOVERY_H
#define HEAPLENS_DISCOVERY_H

#include "collector/gc_capture.h"

/* GC thread: one object of the runtime's heap walk, in a GC that walks for discovery. */
void hl_discover_walked(hl_gc_capture *c, ObjectID object, ClassID class_id, uint64_t size);
/* GC thread, at GarbageCollectionFinished: parses the young survivor ranges of this GC. */
void hl_discover_ranges(hl_gc_capture *c, ICorProfilerInfo *info);

struct collector;
struct id_vec;
/* Collector thread, right after hm_model_apply_gc succeeded for g: names the found objects the
 * model knows and inserts the others; the new ones go into `out` (hl_discovered). Returns how
 * many. */
uint64_t hl_discover_apply(struct collector *c, const hl_gc_capture *g, struct id_vec *out);
/* Sends them inside GC g (DISCOVERED records, their TYPE records first) and empties `out`. */
void hl_discover_send(struct collector *c, const hl_gc_capture *g, struct id_vec *out);

#endif /* HEAPLENS_DISCOVERY_H */
