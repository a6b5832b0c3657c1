/* statics.h — naming the slots that hold static fields, for heap snapshots.
 *
 * The runtime keeps a class's static references in slots of its own heap objects (Object[]
 * arrays held by strong handles, on .NET 8 and 10): a path to a root runs "handle -> Object[] ->
 * the object a static holds". GetAppDomainStaticAddress gives a static's slot address; a walked
 * reference whose slot (object + offset) is that address is the static. Which classes: those of
 * walked objects, those with JIT-compiled methods (EnumJITedFunctions: a class whose statics are
 * set has run code — its static constructor or a method — unless precompiled) and those of the
 * methods on the stack (the enumeration leaves out a running Main). Never a class
 * the runtime has not loaded (GetClassFromToken would load it). A class's static reference
 * fields are read from metadata once (EnumFields, GetFieldProps: static, not literal, not RVA,
 * not a primitive); their addresses before each snapshot (a class initialised since then is
 * found; one not initialised yet has none). A thread static ([ThreadStatic]: GetStaticFieldInfo)
 * is published for the GC thread (thread_statics.h; ClassLoadFinished publishes it first, this is
 * for the classes loaded before an attach), which finds each thread's slot inside the snapshots'
 * GCs; each (field, thread) slot is named as a static of its own with its OS
 * thread (HL_REC_STATIC_THREAD). The methods of the stack roots' frames (their FunctionIDs) are
 * named once each (HL_REC_ROOT_METHOD). Collector thread only.
 */
#ifndef HEAPLENS_COLLECTOR_STATICS_H
#define HEAPLENS_COLLECTOR_STATICS_H

#include <stdbool.h>
#include <stdint.h>

#include "collector/clr_info.h"
#include "collector/gc_capture.h"
#include "collector/u64map.h"
#include "collector/young.h"

typedef struct hl_statics {
    hl_u64map classes;  /* ClassID -> 1: its statics listed */
    id_vec fields;      /* static_field: the static reference fields found, by id - 1 */
    id_vec pending;     /* STATIC records not sent yet */
    id_vec slots;       /* static_slot of the snapshot being built, by address */
    uint64_t lo, hi;    /* the addresses' range */
    ClassID last;       /* the last class noted (most objects follow one of their class) */
    size_t jited_seen;  /* JIT-compiled functions already looked at */
    hl_u64map methods;  /* FunctionIDs of stack roots named */
    id_vec pending_methods; /* ROOT_METHOD records not sent yet */
    uint32_t next_id;   /* static ids given: fields, and thread statics' slots per thread */
    hl_u64map per_thread; /* (field index + 1) << 32 | OS tid -> the slot's static id */
    id_vec pending_threads; /* STATIC_THREAD records not sent yet */
} hl_statics;

struct collector;

void hl_statics_init(hl_statics *s);
void hl_statics_release(hl_statics *s);

/* Lists the static reference fields of `cls` the first time it is seen. */
void hl_statics_note_class(struct collector *c, ClassID cls);
/* Before a snapshot's references: notes the classes of JIT-compiled methods and of the methods
 * of `g`'s stack roots (and names those methods), then asks each static's slot address, and
 * takes the thread statics' slots `g` found. */
void hl_statics_prepare(struct collector *c, const hl_gc_capture *g);
/* Before a GC the collector itself asks for (`heaplens snapshot PID`): notes the classes of
 * JIT-compiled methods and publishes their thread statics, so that this snapshot's GC already
 * finds their slots. */
void hl_statics_before_gc(struct collector *c);
/* The static held at slot address `addr`, or 0. */
uint32_t hl_statics_at(const hl_statics *s, uint64_t addr);
/* Sends the STATIC, STATIC_THREAD and ROOT_METHOD records not sent yet. */
void hl_statics_flush(struct collector *c);

#endif /* HEAPLENS_COLLECTOR_STATICS_H */
