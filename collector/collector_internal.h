/* collector_internal.h — the collector thread's state, shared by collector_thread.c (the loop,
 * allocations, GCs) and snapshot.c (roots, handles, heap snapshots). Collector thread only. */
#ifndef HEAPLENS_COLLECTOR_INTERNAL_H
#define HEAPLENS_COLLECTOR_INTERNAL_H

#include "collector/collector.h"
#include "collector/outbox.h"
#include "collector/type_names.h"
#include "collector/u64map.h"
#include "heapmodel/hm_model.h"
#include "wire/hl_wire.h"

#define ALLOC_BATCH 4096
#define CHUNK 65536 /* array elements per record (ids, fates, snapshot rows) */

typedef struct id_vec {
    void *p;
    size_t n, cap, elem;
} id_vec;

typedef struct known_thread {
    ThreadID thread;
    uint32_t os_tid;
    char name[64];
} known_thread;

typedef struct collector {
    hl_profiler *p;
    hm_model *model;
    hl_u64map types;      /* ClassID -> type id */
    uint32_t n_types;
    hl_type_names names;
    hl_outbox out;
    hl_alloc batch[ALLOC_BATCH];
    size_t n_batch;
    uint64_t young_first; /* first id allocated after the last applied GC */
    uint32_t gcs_applied;
    uint64_t anomalies;
    uint64_t model_failures;
    known_thread *threads;
    size_t n_threads, cap_threads;
    hl_u64map handles;    /* live GCHandleID -> HL_HANDLE_* kind */
    uint32_t snapshots;
    uint64_t discovered;  /* ids handed out from HL_DISCOVERED_ID_BASE */
    /* Per-GC scratch. */
    uint8_t *fate;
    size_t fate_cap;
    id_vec deaths, promotions;
    id_vec handle_events; /* HANDLE_* events of one drain, applied in sequence order */
    char name[4096];
} collector;

bool hl_vec_push(id_vec *v, const void *elem);
void hl_vec_release(id_vec *v);

/* The dense type id of a ClassID, sending its TYPE record the first time. */
uint32_t hl_collector_type_id(collector *c, ClassID cls);
/* Sends the pending ALLOC_BATCH, so that what follows comes after those allocations. */
void hl_collector_flush_batch(collector *c);
/* Sends `head` followed by `n` elements of `elem_size` bytes, split into records of at most
 * CHUNK elements; `set_count` stores each record's element count into its copy of the head. */
void hl_collector_put_chunked(collector *c, uint16_t type, void *head, size_t head_size,
                              uint32_t *count_field, const void *elems, size_t n, size_t elem_size);

/* snapshot.c: handle events from the rings, then per GC (after the model applied it, before
 * GC_END) roots and, when the GC takes one, the snapshot. */
void hl_handles_created(collector *c, uint64_t handle, uint64_t target_addr);
void hl_handles_destroyed(collector *c, uint64_t handle);
/* Learns handle kinds from the GC's roots and counts roots and pinned roots into `end`. */
void hl_roots_apply(collector *c, const struct hl_gc_capture *g, hl_gc_end *end);
/* Sends the snapshot of this GC, if it takes one. */
void hl_snapshot_send(collector *c, const struct hl_gc_capture *g);

#endif /* HEAPLENS_COLLECTOR_INTERNAL_H */
