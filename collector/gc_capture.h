/* gc_capture.h — copies what the runtime says about one GC, inside the GC callbacks, for the
 * collector thread to apply later.
 *
 * The GC callbacks only copy: generation bounds at start and end, the condemned generations,
 * and every MovedReferences2 / SurvivingReferences2 range. The remap itself runs on the
 * collector thread, so the GC pause grows only by these copies. Captures travel in GC order
 * through a single-producer/single-consumer ring: GCs are serialised by the runtime (with
 * MONITOR_GC there is no background GC), so one producer at a time; range batches of one GC may
 * arrive from several server-GC threads at once and take a spinlock that only GC threads touch.
 */
#ifndef HEAPLENS_GC_CAPTURE_H
#define HEAPLENS_GC_CAPTURE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "collector/census.h"
#include "collector/collections.h"
#include "collector/follow.h"
#include "collector/stack_roots.h"
#include "collector/thread_statics.h"
#include "collector/clr_info.h"
#include "heapmodel/hm_model.h"
#include "wire/hl_wire.h"

#define HL_GC_QUEUE 1024                 /* GCs the collector thread may lag behind... */
#define HL_GC_QUEUE_STALL_NS (10ull * 1000000000u) /* ...before a GC waits; given up after this */
#define HL_GC_MAX_MOVES (64u << 20)       /* ranges kept per GC (1.5 GiB) before giving up */
#define HL_GC_SPARE2_MAX_BYTES (1u << 20) /* the second spare ranges buffer's largest size */
/* A followed objects' moves buffer made afresh (hl_gc_add_move) starts this small, from the C
 * library's heap: a few dozen moves a GC in sampled mode, and a GC whose spares are both taken
 * (three or more in flight) made it inside its pause. */
#define HL_GC_FOLLOW_MOVES_FIRST 256u

typedef struct hl_root {
    ObjectID object;
    UINT_PTR root_id;
    uint32_t kind, flags;
} hl_root;

typedef struct hl_class_count { /* ObjectsAllocatedByClass: gen0 objects of a class */
    ClassID class_id;
    uint64_t objects;
} hl_class_count;

typedef struct hl_walk_object {
    ObjectID object;
    ClassID class_id;
    uint64_t size;
    uint64_t n_refs;
} hl_walk_object;

/* Bytes of one walked object in hl_gc_capture.walk: the hl_walk_object, its `n_refs` ObjectIDs,
 * then the offset of each reference's slot in the object (uint32; 0: no slot found). */
static inline size_t hl_walk_object_bytes(uint64_t n_refs) {
    return sizeof(hl_walk_object) + (size_t)n_refs * (sizeof(ObjectID) + sizeof(uint32_t));
}

/* A string's value, read during a snapshot's walk (in walk order). */
typedef struct hl_walk_string {
    ObjectID object;
    uint64_t hash;
    uint32_t length;
    uint32_t n_chars;
    uint16_t chars[HL_STRING_CHARS];
} hl_walk_string;

/* A collection's own count and capacity, read during a snapshot's walk (collections.h). */
typedef struct hl_walk_collection {
    ObjectID object;
    uint32_t count, capacity;
} hl_walk_collection;

/* An object found alive after a GC without ObjectAllocated (sampled mode, attach: discovery.h). */
typedef struct hl_found_object {
    ObjectID object; /* post-GC address */
    ClassID class_id;
    uint64_t size;
} hl_found_object;

typedef struct hl_gc_capture {
    uint32_t gc;             /* ordinal from 1 */
    uint32_t generation;     /* highest condemned SOH generation */
    uint32_t reason;         /* COR_PRF_GC_REASON: induced or other */
    uint32_t gc_reason;      /* the runtime's own (GCStart event), when gc_reason_known */
    bool gc_reason_known;
    uint32_t condemned_mask;
    uint64_t start_ns, suspend_ns, end_ns;
    uint64_t first_id_after; /* allocation ids >= this came after the GC began */
    uint64_t drops_at_start; /* allocations dropped for want of buffer room, until this GC */
    hm_gen_range *before;
    size_t n_before;
    hm_gen_range *after;
    size_t n_after;
    hm_move *moves;
    size_t n_moves, cap_moves;
    uint32_t moved_ranges, surviving_ranges;
    uint64_t survived_bytes, moved_bytes;
    bool incomplete;         /* some input was lost (memory, table full, bounds failed) */
    /* Sampled mode following by handles (follow.h): whether the runtime gave this GC's
     * survivor ranges (MONITOR_GC on during it); without them `moves` holds one range of
     * length 1 per followed object and survived_bytes/moved_bytes are not known. */
    bool ranges_taken;
    bool follow_moves;       /* moves came from handles (no ranges) */
    /* The runtime's GCHeapStats and GCGlobalHeapHistory events (GC threads; they may come
     * after GarbageCollectionFinished, before the resume): bytes that survived in each
     * generation, and whether it compacted. `*_known` set last. */
    _Atomic uint64_t promoted[5];
    atomic_bool promoted_known;
    atomic_bool compacted, compacted_known;
    ObjectHandleID *dead_handles; /* handles whose object died: destroyed off the pause */
    size_t n_dead_handles, cap_dead_handles;
    hl_follow_seen *follow_seen; /* HEAPLENS_FOLLOW_CHECK: each handle's answer */
    size_t n_follow_seen, cap_follow_seen;
    /* ObjectsAllocatedByClass, right after GarbageCollectionStarted: the runtime's own walk of
     * gen0, per class (it pays for it under MONITOR_GC anyway). */
    hl_class_count *by_class;
    size_t n_by_class, cap_by_class;
    /* Roots (RootReferences2), kept at every GC: they reveal handle kinds and pinning. */
    hl_root *roots;
    size_t n_roots, cap_roots;
    /* The runtime's heap walk (ObjectReferences), kept only when this GC takes a snapshot:
     * a sequence of hl_walk_object, each followed by its `n_refs` ObjectIDs and their slots'
     * offsets (hl_walk_object_bytes). */
    uint32_t snapshot_trigger; /* HL_SNAPSHOT_*, 0 = no snapshot at this GC */
    bool snapshot_skipped;   /* a policy's snapshot was due and not taken: the snapshots held
                              * had reached their bound (snapshot_policy.h) */
    bool snapshot_held;      /* counted into the queue's snapshots_held (held_add) */
    /* What this capture holds once finished (its buffers' bytes, and of them its snapshot's
     * walk, strings and collections): added to the queue's figures at hl_gc_on_finished, taken
     * off at hl_gc_pop. */
    uint64_t held_bytes, walk_held_bytes;
    bool walk_shared;        /* induced gen2 GC: let the runtime's walk run to the end even
                              * without a snapshot (another tool's heap dump may share it) */
    uint8_t *walk;
    size_t walk_len, walk_cap;
    uint64_t walk_objects;
    uint64_t walk_first_ns, walk_last_ns;
    /* The values of the walk's strings (System.String objects), in walk order. */
    hl_walk_string *strings;
    size_t n_strings, cap_strings;
    /* Every thread's slot of every thread static known (thread_statics.h), found at the end of
     * a snapshot's GC. */
    hl_tls_slot *tls;
    size_t n_tls, cap_tls;
    /* Per root, the OS id of the thread whose stack holds it (stack roots; 0: not known), found
     * at the end of a snapshot's GC (stack_roots.h); NULL when not looked for. */
    uint32_t *root_threads;
    hl_stack_search stack_search;
    /* The known collections' counts (collections.h), in walk order. */
    hl_walk_collection *collections;
    size_t n_collections, cap_collections;
    /* Discovery (sampled mode, attach; discovery.h): the objects found alive after this GC, in
     * the survivor ranges of its young generations or, when `discover_walk`, by the runtime's
     * walk of the whole heap. */
    bool discover_walk;
    bool discover_incomplete; /* a range could not be parsed or memory ran out */
    hl_found_object *found;
    size_t n_found, cap_found;
    uint64_t discover_ns;    /* pause time spent parsing ranges (GC thread) */
    /* The census (sampled mode: census.h): this interval's small-object allocations per class,
     * counted in gen0 at this GC's start; census_done false when there is none. census_ns is
     * the pause time of the walk at the start and of remembering gen0 at the end. */
    bool census_done;
    hl_census_count *census;
    size_t n_census;
    uint64_t census_objects, census_ns;
    atomic_bool finished;    /* set last, at GarbageCollectionFinished */
    atomic_uint_fast64_t resume_ns; /* RuntimeResumeFinished after it; 0 until then */
} hl_gc_capture;

typedef struct hl_gc_queue {
    hl_gc_capture *ring[HL_GC_QUEUE];
    atomic_uint_fast64_t written; /* captures published (producer) */
    atomic_uint_fast64_t read;    /* captures consumed (consumer) */
    atomic_bool closed;           /* the consumer is gone: a full queue loses the GC */
    hl_gc_capture *current;       /* the GC in progress, producer side */
    hl_gc_capture *_Atomic awaiting_resume; /* finished, its RuntimeResumeFinished not seen yet */
    atomic_bool dozing; /* the consumer sleeps past its idle period (hl_gc_doze_begin) */
    atomic_flag moves_lock;
    uint32_t gcs_started;
    _Atomic uint32_t last_finished; /* the ordinal of the last GC finished (0: none): any thread
                                     * reads it (a checkpoint's after_gc) */
    COR_PRF_GC_GENERATION_RANGE *scratch; /* GetGenerationBounds buffer, grown as needed */
    ULONG scratch_cap;
    /* The largest ranges buffer of the captures applied so far, kept for the next GC (under
     * moves_lock): a fresh one per GC took its pages again inside the pause, a page fault per
     * 170 ranges (MidLife: 6 MiB of ranges per GC). And a second one of at most
     * HL_GC_SPARE2_MAX_BYTES: a GC often starts before the collector has applied the one
     * before (two in flight), and with one spare the second buffer was mapped inside that
     * GC's pause and unmapped once applied (sampled mode's moves of followed objects: 96 KiB,
     * an mmap in the pause and an munmap, a TLB shootdown of the program's CPUs, per GC). */
    hm_move *spare_moves;
    size_t spare_cap_moves;
    hm_move *spare2_moves;
    size_t spare2_cap_moves;
    atomic_uint_fast64_t lost;    /* GC inputs lost: counted into gc_events_dropped */
    /* The captures finished and not yet applied (popped): the bytes of their buffers, and of
     * them those of their snapshots' walks, which bound the policies' snapshots
     * (snapshot_policy.h); with the most each held at once, and the policies' snapshots not
     * taken for that bound (HEAPLENS_STATS=1: "heaplens: captures:"). */
    atomic_uint_fast64_t held_bytes, held_peak_bytes;
    atomic_uint_fast64_t walks_held_bytes, walks_held_peak_bytes;
    atomic_uint_fast64_t snapshots_held, snapshots_held_peak;
    atomic_uint_fast64_t snapshots_skipped;
    /* The runtime's GCStart events (its reason) are matched to GCs by count: the first one
     * fixes the difference between the runtime's count and our ordinal (0 when recording from
     * the start, the GCs before an attach otherwise); an event whose count does not fit is
     * not the current GC's. */
    bool count_offset_known;
    uint32_t count_offset;
    /* Discovery (sampled mode, attach): on, and whether the next GC must walk the whole heap
     * (the first GC, and the GC after one whose discovery was incomplete). */
    bool discover;
    bool discover_full_next;
    hl_census census; /* sampled mode: allocation counts by a census of gen0 (census.h) */
    /* System.String's ClassID once a snapshot's walk met a string (gc_capture.c), the last class
     * found not to be it, and whether characters are kept (--no-strings: not). */
    _Atomic ClassID string_class;
    ClassID not_string;
    bool string_chars;
    /* The collection classes the collector thread registered (collections.h), read by the walk. */
    hl_collections collections;
    /* Thread statics (thread_statics.h): the managed threads, kept by the thread callbacks, and
     * the thread-static fields statics.c published; `tls_on` when a snapshot's GC asks their
     * slots (record, not attach). */
    hl_thread_set threads;
    hl_tls_fields tls_fields;
    bool tls_on;
    /* The stack ranges of managed threads, noted on each thread; `stack_roots_on` when a
     * snapshot's GC looks for its stack roots' threads (stack_roots.h; record, not attach). */
    hl_stack_ranges stacks;
    bool stack_roots_on;
} hl_gc_queue;

void hl_gc_queue_init(hl_gc_queue *q);
void hl_gc_queue_release(hl_gc_queue *q);

/* Producer side: GC callbacks. `snapshot_policy` says whether this GC takes a snapshot (its
 * HL_SNAPSHOT_* trigger, 0: none), told the snapshots held and the bytes of their walks; it sets
 * `skipped` when a policy's snapshot was due and not taken for their bound. */
typedef uint32_t (*hl_gc_snapshot_policy)(void *ctx, uint32_t gc, uint32_t generation,
                                          uint32_t reason, uint32_t snapshots_held,
                                          uint64_t walks_held_bytes, bool *skipped);
void hl_gc_on_started(hl_gc_queue *q, ICorProfilerInfo *info, const BOOL *collected, int n,
                      uint32_t reason, uint64_t next_id, uint64_t suspend_ns,
                      hl_gc_snapshot_policy snapshot_policy, void *policy_ctx);
void hl_gc_on_alloc_by_class(hl_gc_queue *q, ULONG count, const ClassID *classes,
                             const ULONG *objects);
void hl_gc_on_roots(hl_gc_queue *q, ULONG count, const ObjectID *roots, const uint32_t *kinds,
                    const uint32_t *flags, const UINT_PTR *ids);
/* One object of the runtime's heap walk. Returns false when the walk may be stopped: this GC
 * takes no snapshot and is not an induced gen2 GC. An EventPipe/ETW heap dump (dotnet-gcdump)
 * is an induced, blocking gen2 GC that shares this walk, and the profiler cannot tell it from
 * GC.Collect(): stopping there would leave the dump empty. */
bool hl_gc_on_object(hl_gc_queue *q, ICorProfilerInfo *info, ObjectID object, ClassID class_id,
                     ULONG n_refs, const ObjectID *refs);
void hl_gc_on_ranges(hl_gc_queue *q, ULONG count, const ObjectID *old_starts,
                     const ObjectID *new_starts, const SIZE_T *lengths);
/* One range that is not the runtime's (a followed object's old and new address, follow.h):
 * not counted in survived_bytes. GC threads only. */
void hl_gc_add_move(hl_gc_capture *c, const hm_move *m);
/* GCHeapStats and GCGlobalHeapHistory (eventpipe.h), on a GC thread: for the GC in progress,
 * or the one finished whose pause has not ended. */
void hl_gc_on_heap_stats(hl_gc_queue *q, const uint64_t promoted[5]);
void hl_gc_on_mechanisms(hl_gc_queue *q, uint32_t mechanisms);
/* The runtime's GCStart event (its GC count and reason), on a GC thread: it comes after
 * GarbageCollectionStarted (measured on 10.0.12), so it belongs to the current GC. */
void hl_gc_on_start_event(hl_gc_queue *q, uint32_t count, uint32_t reason);
/* The current GC's survivors cannot be known (a range event not understood). */
void hl_gc_mark_incomplete(hl_gc_queue *q);
void hl_gc_on_finished(hl_gc_queue *q, ICorProfilerInfo *info);
/* RuntimeResumeFinished: the end of the last finished GC's pause. True when that GC found the
 * consumer dozing (hl_gc_doze_begin): the caller wakes it, so the GC is applied at once. */
bool hl_gc_on_resumed(hl_gc_queue *q, uint64_t now_ns);
/* Consumer side: whether a finished capture can be applied now. It waits for the resume time of
 * its pause, but not once a newer GC has started, the collector is stopping, or `grace_ns` have
 * passed since the GC finished (a GC without a resume callback). */
bool hl_gc_ready(hl_gc_queue *q, hl_gc_capture *c, uint64_t now_ns, uint64_t grace_ns, bool stopping);

/* Consumer side: the collector thread. Peek returns the oldest unapplied GC (finished or still
 * in progress) or NULL; pop frees it. */
hl_gc_capture *hl_gc_peek(hl_gc_queue *q);
/* Whether the newest GC has started and not finished (the runtime is suspended for it). */
bool hl_gc_in_progress(hl_gc_queue *q);
/* The k-th unapplied GC (0 = the one hl_gc_peek returns), or NULL. */
hl_gc_capture *hl_gc_peek_at(hl_gc_queue *q, size_t k);
void hl_gc_pop(hl_gc_queue *q);
/* The consumer is about to sleep longer than its idle period (an idle sampled or attach
 * session): true when no GC is queued, and then the resume of every GC until hl_gc_doze_end
 * asks for a wake (hl_gc_on_resumed); false, and no doze, when one is. */
bool hl_gc_doze_begin(hl_gc_queue *q);
void hl_gc_doze_end(hl_gc_queue *q);

#endif /* HEAPLENS_GC_CAPTURE_H */
