/* follow.h — sampled and attach sessions follow their objects by weak handles
 * (ICorProfilerInfo13), so that most GCs need no survivor ranges from the runtime.
 *
 * Who calls what:
 *   allocating threads  hl_follow_add: the sample's object (EventPipe callback, inside the
 *                       allocation) or a LOH/POH object (ObjectAllocated) gets a long weak
 *                       handle, kept in one shared table with its address
 *   GC thread           hl_follow_gc_start: whether this GC needs the runtime's ranges;
 *                       hl_follow_gc_finished: every handle's object now (GetObjectIDFromHandle),
 *                       as one range per object (old address -> new, length 1) when the GC has
 *                       no ranges of its own; dead handles out of the table into the capture
 *   collector thread    hl_follow_destroy: the dead handles destroyed, off the pause;
 *                       hl_follow_named_publish: which generations hold objects only the ranges
 *                       can follow (those a snapshot named), after each GC it applied;
 *                       hl_follow_check: a handle's answer against the ranges (differential);
 *                       hl_follow_close: at the end of an attach session, every handle left
 *                       destroyed (the process runs on: nothing of ours may stay in its
 *                       handle table)
 *
 * The table: appenders take an index with one atomic add and publish the handle last; the GC
 * thread alone reads and compacts it, inside GarbageCollectionFinished, where no managed thread
 * is inside a callback (a GC suspends threads only outside them), so no append is half done.
 * A long weak handle is cleared when the object's memory is reclaimed, not when it becomes
 * unreachable: a finalizable object that dies survives (f-reachable) in the runtime's ranges as
 * well, so both tell the same fate.
 *
 * The runtime allows an attached profiler all three calls (proftoeeinterfaceimpl.cpp: CreateHandle
 * is PROFILER_TO_CLR_ENTRYPOINT_SYNC_EX(kP2EEAllowableAfterAttach), a callback's or a thread of
 * ours; DestroyHandle and GetObjectIDFromHandle ASYNC_EX(kP2EEAllowableAfterAttach), any thread).
 *
 * Exactness: an object the table could not take (full, or CreateHandle refused) would be lost
 * at its first GC without ranges; so a failure turns `fallback` on, and from then every GC takes
 * the runtime's ranges (as before this table: exact, at the runtime's price).
 */
#ifndef HEAPLENS_FOLLOW_H
#define HEAPLENS_FOLLOW_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "collector/clr_abi.h"
#include "collector/clr_info.h"

struct hl_gc_capture;

#define HL_FOLLOW_MAX (1u << 20) /* objects followed at once (16 MiB of address space) */

typedef struct hl_follow_entry {
    _Atomic ObjectHandleID handle; /* 0: not published yet */
    uint64_t addr;                 /* the object's address before the next GC */
} hl_follow_entry;

/* A handle's answer at a GC with ranges, for the differential check. */
typedef struct hl_follow_seen {
    uint64_t old_addr, new_addr; /* new_addr 0: the handle was cleared (the object died) */
} hl_follow_seen;

typedef struct hl_follow {
    bool on;                   /* sampled or attach session with ICorProfilerInfo13 */
    bool check;                /* HEAPLENS_FOLLOW_CHECK=1: ranges at every GC, compared */
    bool timed;                /* HEAPLENS_STATS=1: lookup_ns measured (two system calls in
                                * each GC's pause otherwise spent for nothing) */
    atomic_bool fallback;      /* a handle could not be made: ranges at every GC from now */
    atomic_bool armed;         /* handles are made (after an attach: from the end of the
                                * session's first GC on, hl_collector_follows_new) */
    hl_follow_entry *entries;  /* HL_FOLLOW_MAX, mapped, touched as used */
    atomic_uint_fast64_t top;  /* indices taken */
    /* Generations (bit g, 0..4) that hold objects a snapshot named, after GC `named_gc`:
     * (gc << 32) | mask, written by the collector thread after each GC it applied. */
    atomic_uint_fast64_t named;
    uint32_t last_snapshot_gc; /* GC thread: the last GC that took a snapshot */
    /* Counters (HEAPLENS_STATS): */
    atomic_uint_fast64_t created, create_failures;
    uint64_t lookups, died, destroyed, ranges_gcs, handle_gcs, lookup_ns;
    uint64_t check_agree, check_disagree;
    uint64_t check_compacting[2];  /* [1]: the runtime's compaction bit agreed with the ranges */
    uint64_t check_promoted_bytes, check_survived_bytes; /* GCHeapStats vs the ranges' bytes */
    int64_t named_count[8];    /* collector thread: named objects per generation */
    /* The end of an attach session (hl_follow_close): a callback that got past its `active`
     * check before the session ended may still add or look up; `users` counts those inside,
     * `closed` turns later ones away. */
    atomic_int users;
    atomic_bool closed;
    uint64_t released;         /* handles destroyed by hl_follow_close */
} hl_follow;

/* Sets the table up (on = false: nothing to follow, every call is a no-op; attach: no handle
 * before the end of the first GC). 0 or -1 (memory). */
int hl_follow_init(hl_follow *f, bool on, bool attach);
void hl_follow_release(hl_follow *f);

/* An allocating thread, inside a callback: follows `object`. On failure (table full, the
 * runtime refused) `fallback` is set. */
void hl_follow_add(hl_follow *f, ICorProfilerInfo *info, ObjectID object);

/* GC thread, GarbageCollectionStarted: whether GC `gc` (condemned_mask, its snapshot trigger)
 * needs the runtime's survivor ranges. */
bool hl_follow_gc_needs_ranges(hl_follow *f, uint32_t gc, uint32_t condemned_mask,
                               bool snapshot);

/* GC thread, GarbageCollectionFinished (before the capture is published): looks every handle
 * up. Without ranges (`c->ranges_taken` false) each live object becomes a range of length 1;
 * with them (in check mode) each answer is kept for hl_follow_check. Dead handles go to
 * `c->dead_handles`. */
void hl_follow_gc_finished(hl_follow *f, ICorProfilerInfo *info, struct hl_gc_capture *c);

/* Collector thread: destroys the capture's dead handles (DestroyHandle is asynchronous: the
 * runtime allows it on any thread). */
void hl_follow_destroy(hl_follow *f, ICorProfilerInfo *info, struct hl_gc_capture *c);

/* Collector thread, at a GC with ranges: each handle's answer against the ranges (covered: the
 * same new address; not covered: dead, or alive in place in a generation not condemned). */
void hl_follow_check(hl_follow *f, const struct hl_gc_capture *c);

/* Collector thread: a named object (a snapshot's, id from HL_DISCOVERED_ID_BASE) appeared in,
 * moved between, or left generations; then, after the GC, publish. gen: HM_GEN_*, anything
 * above 4 is ignored (never condemned). */
void hl_follow_named_add(hl_follow *f, uint32_t gen, int64_t n);
void hl_follow_named_publish(hl_follow *f, uint32_t gc);

/* Collector thread, at the end of an attach session, once the callbacks are off and every GC
 * that finished was applied (its dead handles destroyed): turns later adds and lookups away,
 * waits for those under way, and destroys every handle left in the table (`released`). The
 * process runs on after the detach, and a handle left behind would stay in its handle table. */
void hl_follow_close(hl_follow *f, ICorProfilerInfo *info);

#endif /* HEAPLENS_FOLLOW_H */
