/* thread_statics.h — naming the slots of [ThreadStatic] fields, thread by thread, for heap
 * snapshots.
 *
 * A thread static has a slot per thread, in per-thread arrays the GC moves (.NET 9+), so its
 * address (GetThreadStaticAddress2) is only the snapshot's when asked inside the snapshot's GC:
 * at its GarbageCollectionFinished, on the GC thread, with the runtime suspended (the call is
 * GC_NOTRIGGER and takes no lock). That needs, there, without asking the runtime:
 *   - the managed threads: kept by the ThreadCreated / ThreadDestroyed callbacks themselves
 *     (hl_thread_set), so that a ThreadID is never used after its thread is gone; only from
 *     `record` (an attach would have to list the threads that already exist, and one could end
 *     between that list and its entry here);
 *   - the thread-static fields: found by statics.c on the collector thread (GetStaticFieldInfo)
 *     and published in an append-only list (hl_tls_fields) the GC thread reads up to its
 *     published count.
 * Each (field, thread) slot found is captured as {address, field, OS thread id}; statics.c then
 * gives it a static id of its own with its thread (HL_REC_STATIC_THREAD). A thread static of a
 * class noted only at a snapshot's own preparation is named from the next snapshot on.
 */
#ifndef HEAPLENS_COLLECTOR_THREAD_STATICS_H
#define HEAPLENS_COLLECTOR_THREAD_STATICS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "collector/clr_info.h"

#define HL_THREAD_SET_MAX 4096 /* managed threads alive at once that are looked at */
#define HL_TLS_FIELDS_MAX 1024 /* thread-static reference fields named */

typedef struct hl_thread_set {
    atomic_flag lock; /* held for a few stores by a callback, or for the GC thread's reading */
    uint32_t n;
    uint64_t overflowed; /* threads not kept: the set was full */
    ThreadID ids[HL_THREAD_SET_MAX];
} hl_thread_set;

typedef struct hl_tls_field {
    ClassID cls;
    mdToken token;
    AppDomainID domain;
    uint32_t field; /* statics.c's index of the field */
} hl_tls_field;

typedef struct hl_tls_fields {
    _Atomic uint32_t n; /* published: entries below it are whole and never change */
    hl_tls_field items[HL_TLS_FIELDS_MAX];
} hl_tls_fields;

/* One thread's slot of one thread static, found in a snapshot's GC. */
typedef struct hl_tls_slot {
    uint64_t addr;
    uint32_t field; /* hl_tls_field.field */
    uint32_t os_tid;
} hl_tls_slot;

void hl_thread_set_init(hl_thread_set *s);
/* ThreadCreated / ThreadDestroyed (any thread). */
void hl_thread_set_add(hl_thread_set *s, ThreadID thread);
void hl_thread_set_remove(hl_thread_set *s, ThreadID thread);

void hl_tls_fields_init(hl_tls_fields *f);
/* Collector thread only. False when the list is full. */
bool hl_tls_fields_add(hl_tls_fields *f, const hl_tls_field *field);

/* Inside a snapshot's GC (GC thread): every thread's slot of every published field, appended to
 * *out (grown with hl_mem_realloc; *n, *cap as gc_capture.c's vectors). False when memory ran
 * out (what was found is kept). */
bool hl_tls_capture(hl_thread_set *threads, const hl_tls_fields *fields, ICorProfilerInfo *info,
                    hl_tls_slot **out, size_t *n, size_t *cap);

#endif /* HEAPLENS_COLLECTOR_THREAD_STATICS_H */
