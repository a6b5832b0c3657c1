/* thread_statics.h — naming the slots of [ThreadStatic] fields, thread by thread, for heap
 * snapshots.
 *
 * A thread static has a slot per thread, in per-thread arrays the GC moves (.NET 9+), so its
 * address (GetThreadStaticAddress2) is only the snapshot's when asked inside the snapshot's GC:
 * at its GarbageCollectionFinished, on the GC thread, with the runtime suspended (the call is
 * GC_NOTRIGGER and takes no lock). That needs, there, without asking the runtime:
 *   - the managed threads (hl_thread_set): kept by the ThreadCreated / ThreadDestroyed callbacks
 *     themselves, so that a ThreadID is never used after its thread is gone; after an attach the
 *     threads that already exist are added from EnumThreads (hl_thread_set_enum_begin/_end: a
 *     thread whose ThreadDestroyed comes between the list and its entry here is left out);
 *   - the thread-static fields (hl_tls_fields), published before any thread can have a value in
 *     them: by ClassLoadFinished on the loading thread (hl_tls_class_loaded), and by statics.c
 *     for the classes loaded before an attach (GetStaticFieldInfo), in an append-only list the
 *     GC thread reads up to its published count. So every snapshot names every thread static of
 *     every class loaded by then (after an attach: of the classes the collector knew of before
 *     the snapshot's GC: collector/README.md, "Thread statics").
 * Each (field, thread) slot found is captured as {address, field, OS thread id}; statics.c then
 * gives it a static id of its own with its thread (HL_REC_STATIC_THREAD).
 */
#ifndef HEAPLENS_COLLECTOR_THREAD_STATICS_H
#define HEAPLENS_COLLECTOR_THREAD_STATICS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "collector/clr_info.h"

#define HL_THREAD_SET_MAX 4096 /* managed threads alive at once that are looked at */
#define HL_TLS_FIELDS_MAX 1024 /* thread-static reference fields named */

#define HL_THREAD_SET_GONE 256 /* threads ended while an EnumThreads list is taken */

typedef struct hl_thread_set {
    atomic_flag lock; /* held for a few stores by a callback, or for the GC thread's reading */
    uint32_t n;
    uint64_t overflowed; /* threads not kept: the set was full, or an enumeration was lost */
    bool enumerating;    /* an EnumThreads list is being taken: ThreadDestroyed notes its id */
    uint32_t n_gone;     /* ... in gone[]; more than fit: the whole list is dropped */
    ThreadID gone[HL_THREAD_SET_GONE];
    ThreadID ids[HL_THREAD_SET_MAX];
} hl_thread_set;

typedef struct hl_tls_field {
    ClassID cls;
    mdToken token;
    AppDomainID domain;
    ModuleID module; /* where its name is (the field token's metadata) */
} hl_tls_field;

typedef struct hl_tls_fields {
    atomic_flag lock;   /* held by one publisher for a duplicate check and a store */
    _Atomic uint32_t n; /* published: entries below it are whole and never change */
    /* hl_tls_class_loaded's classes and wall time in them (HEAPLENS_STATS) */
    _Atomic uint64_t classes_seen, class_ns;
    hl_tls_field items[HL_TLS_FIELDS_MAX];
} hl_tls_fields;

/* One thread's slot of one thread static, found in a snapshot's GC. */
typedef struct hl_tls_slot {
    uint64_t addr;
    uint32_t field; /* the index of its hl_tls_field in hl_tls_fields.items */
    uint32_t os_tid;
} hl_tls_slot;

void hl_thread_set_init(hl_thread_set *s);
/* ThreadCreated / ThreadDestroyed (any thread). Adding a thread the set holds does nothing. */
void hl_thread_set_add(hl_thread_set *s, ThreadID thread);
void hl_thread_set_remove(hl_thread_set *s, ThreadID thread);
/* The threads that existed before an attach: _begin before EnumThreads is called, _end with
 * every ThreadID it listed. EnumThreads leaves out a thread once its ThreadDestroyed is due
 * (profilingenumerators.cpp: TS_Dead/TS_Stopped are set before the callback), and one whose
 * ThreadDestroyed runs between _begin and _end is noted then and not added; the others are
 * added (once). Any thread. */
void hl_thread_set_enum_begin(hl_thread_set *s);
void hl_thread_set_enum_end(hl_thread_set *s, const ThreadID *ids, size_t n);

/* The OS ids of the set's threads (those with an OS thread), at most `cap` into out; returns how
 * many. The ThreadIDs are used under the set's lock only. */
size_t hl_thread_set_os_tids(hl_thread_set *s, ICorProfilerInfo *info, uint32_t *out, size_t cap);

void hl_tls_fields_init(hl_tls_fields *f);
/* Publishes a thread static (any thread); one already published is not added again. False
 * when the list is full. */
bool hl_tls_fields_add(hl_tls_fields *f, const hl_tls_field *field);
/* ClassLoadFinished (the loading thread): publishes the class's thread-static reference fields
 * (its own, not its parents': a parent is a class loaded on its own). A few metadata calls per
 * class; arrays and classes without such fields publish nothing. */
void hl_tls_class_loaded(hl_tls_fields *f, ICorProfilerInfo *info, ClassID cls);

/* Shared with statics.c: calls `fn` for each static field of `td` whose value may be a heap
 * reference (not a literal, not RVA data, not a primitive, pointer or function pointer); and
 * the AppDomain a module's statics live in (there is one in .NET Core; 0 if unknown). */
typedef void (*hl_static_field_fn)(void *ctx, mdToken field);
void hl_static_reference_fields(IMetaDataImport *mdi, mdTypeDef td, hl_static_field_fn fn,
                                void *ctx);
AppDomainID hl_module_domain(ICorProfilerInfo *info, ModuleID module);

/* Inside a snapshot's GC (GC thread): every thread's slot of every published field, appended to
 * *out (grown with hl_mem_realloc; *n, *cap as gc_capture.c's vectors). False when memory ran
 * out (what was found is kept). */
bool hl_tls_capture(hl_thread_set *threads, const hl_tls_fields *fields, ICorProfilerInfo *info,
                    hl_tls_slot **out, size_t *n, size_t *cap);

#endif /* HEAPLENS_COLLECTOR_THREAD_STATICS_H */
