/* eventpipe.h — allocation samples with call stacks, from an EventPipe session the collector
 * starts inside the process (ICorProfilerInfo12::EventPipeStartSession) and whose events the
 * runtime hands to ICorProfilerCallback10::EventPipeEventDelivered, synchronously, on the thread
 * that wrote them: for allocation events, the allocating thread, inside the allocation.
 *
 * Source by runtime: AllocationSampled (.NET 10+: keyword 0x80000000000, level 4; every
 * allocated byte sampled with p = 1/102400, so an unbiased estimate) or, on older runtimes,
 * GCAllocationTick (GCKeyword 0x1, level 5: the allocation that crossed each ~100 KB of
 * allocation; biased toward large objects). The events come without a stack: the collector
 * walks it (DoStackSnapshot). Full mode uses no session: the collector draws the same sampling
 * itself in ObjectAllocated (hl_eventpipe_on_object_allocated), on every runtime.
 *
 * The callback copies the sample (type, size, address, heap, frames) into the thread's buffer
 * chunk (thread_buffers.h, HL_EV_SAMPLE events) and returns: no lock, no allocation, no system
 * call after the thread's first event. The collector thread resolves the frames and sends
 * METHOD, STACK and ALLOC_SAMPLES records (frames.c, collector_thread.c).
 */
#ifndef HEAPLENS_EVENTPIPE_H
#define HEAPLENS_EVENTPIPE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "collector/clr_abi.h"
#include "wire/hl_wire.h"

#define HL_ALLOC_SAMPLED_MEAN_BYTES 102400u /* AllocationSampled: mean distance between samples */

/* The walks' times (HEAPLENS_STATS, `walk_us_p50`): their mean is wall time, which a loaded
 * machine stretches by preemption far beyond what a walk costs (a mean of 10-20 us at a load of
 * 15 for a median under 1 us), so they are also counted in bins: under 64 ns, then a quarter of
 * a power of two each (64-80, 80-96, 96-112, 112-128 ns, 128-160 ...), the last one open (from
 * 3.1 ms). */
#define HL_WALK_HIST_BINS 64u
typedef struct hl_sampling {
    uint32_t source;            /* HL_SAMPLE_SOURCE_* (0: no samples); kept after the stop:
                                 * the last interval's samples are of this source */
    bool session_on;            /* a session runs (for samples, GC survivor ranges, or both) */
    bool ranges;                /* GC survivor ranges come from the session (profiler.c, modes) */
    bool walk_at_object_allocated; /* full mode: stacks walked at the object's ObjectAllocated */
    bool own_sampler;           /* full mode: the collector draws the samples in ObjectAllocated
                                 * itself (same statistics as AllocationSampled), no session */
    bool no_walk;               /* HEAPLENS_STACK_WALK=off (benchmark): samples without stacks */
    uint32_t budget;            /* sampled and attach: small-object samples per second of a
                                 * thread's CPU time beyond which they are thinned
                                 * (HEAPLENS_SAMPLE_BUDGET; 0: never; full mode: 0); below,
                                 * hl_sample_budget_factor */
    EVENTPIPE_SESSION session;
    /* The providers of delivered events, learned by name at their first event (EventPipe
     * hands a provider handle, and the runtime's GCStart and our Checkpoint are both event 1). */
    _Atomic uintptr_t runtime_provider, heaplens_provider;
    atomic_uint_fast64_t seen;    /* sample events delivered */
    atomic_uint_fast64_t dropped; /* ... lost: no buffer slot or chunk */
    atomic_uint_fast64_t budgeted; /* ... left out by the sample budget (no stack, not stored: the
                                    * kept ones of their thread and window weigh for them) */
    atomic_uint_fast64_t unparsed; /* ... whose payload was not understood (dropped too) */
    atomic_uint_fast64_t walk_failures; /* ... whose stack DoStackSnapshot refused (kept, no stack) */
    _Atomic uint32_t walk_failure_hr;   /* the last refusal's HRESULT */
    atomic_uint_fast64_t walk_ns;       /* time inside DoStackSnapshot, all threads */
    atomic_uint_fast64_t walk_frames;   /* frames it reported */
    atomic_uint_fast64_t walk_hist[HL_WALK_HIST_BINS]; /* walks by their time (hl_walk_hist_bin) */
} hl_sampling;

struct hl_profiler;
struct hl_tbuf;

/* The runtime provider's GCHeapSurvivalAndMovement keyword. Its only use here: while a session
 * has it on (level Informational), the runtime reports every GC's survivor ranges, sweeping
 * GCs' included, to a profiler that asked only for COR_PRF_HIGH_MONITOR_GC_MOVED_OBJECTS
 * (gcenv.ee.cpp DiagWalkSurvivors/DiagWalkUOHSurvivors: ETW::GCLog::ShouldTrackMovementForEtw;
 * eventtrace.cpp ETW::GCLog::MovedReference notifies the profiler too). The GCBulk*ObjectRanges
 * events it also produces are ignored by the callback. */
#define HL_KEYWORD_GC_SURVIVAL_AND_MOVEMENT 0x400000ull
/* The runtime provider's GC keyword at level Informational: GCStart (the GC's true reason) and
 * the other per-GC events (GCEnd, heap stats, suspension: a few per GC, ignored). Every mode's
 * session has it. Not Verbose: that adds GCAllocationTick (one per 100 KB allocated). */
#define HL_KEYWORD_GC 0x1ull
#define HL_EVENT_GC_START 1u
#define HL_EVENT_GC_BULK_SURVIVING_RANGES 21u
#define HL_EVENT_GC_BULK_MOVED_RANGES 22u

/* Starts the session for `mode` (HL_MODE_FULL, _SAMPLED or _ATTACH) on the profiler's runtime:
 * adds COR_PRF_HIGH_MONITOR_EVENT_PIPE to the event mask (keeping the rest) and enables the
 * runtime provider: the allocation samples' keyword when `samples`, and `extra_keywords`.
 * Call from Initialize or InitializeForAttach after SetEventMask2. Returns 0, or -1 when the
 * runtime has no ICorProfilerInfo12 or refused; recording goes on without samples then. */
int hl_eventpipe_start(struct hl_profiler *p, uint32_t mode, bool samples, uint64_t extra_keywords);
/* Stops the session (before detach). */
void hl_eventpipe_stop(struct hl_profiler *p);

/* ObjectAllocated (full mode) calls this first, with the object's class and size. With the
 * collector's own sampler (the default in full mode) it counts the thread's bytes down to the
 * next sampling point and, when the object holds that point, walks the stack and pushes the
 * sample; `ring` is the calling thread's slot (NULL: none), which holds the sampler's state.
 * With the EventPipe sampler (HEAPLENS_FULL_SAMPLER=eventpipe): when the calling thread's
 * last sample event is this object, its stack is walked here and the sample is pushed. */
void hl_eventpipe_on_object_allocated(struct hl_profiler *p, struct hl_tbuf *ring,
                                      ObjectID object, ClassID class_id, uint64_t size);

/* The sample budget (collector/README.md, "The sample budget"). A tight allocation loop
 * allocates 100 KiB, one sample on average, in a few tens of microseconds, and a sample costs a
 * few: its stack walk, its weak handle, the collector's and the writer's work. So per thread,
 * in windows of HL_SAMPLE_BUDGET_WINDOW_NS, when the window before saw more small-object samples
 * than the budget allows for the CPU time the thread used in it, this window keeps one sample
 * in K, each by a random draw with probability 1/K, and a kept sample weighs K times its
 * sampling weight (hl_alloc_sample.weight): unbiased, as K is fixed before the window's draws.
 * Except a type's first HL_SAMPLE_BUDGET_FIRSTS samples in the window (hl_budget_first): kept,
 * weight 1, so that a type with a few samples, or a burst after a pause, is not thinned.
 * K is the smallest power of two with (seen - first) / K <= per_second * elapsed (elapsed: the
 * thread's CPU time in the window; first: the samples it kept as firsts; at least one allowed):
 * the draws keep the budget, the firsts add at most HL_SAMPLE_BUDGET_FIRSTS x
 * HL_SAMPLE_BUDGET_TYPES a window. At most HL_SAMPLE_BUDGET_MAX_FACTOR; 1 when per_second is
 * 0 or nothing was seen. Pure (tests/unit/collector). */
#define HL_SAMPLE_BUDGET_WINDOW_NS 100000000ull /* 100 ms of wall time */
/* The default: samples per second of a thread's CPU time. A kept sample costs about 4 us of
 * CPU all in (its walk, weak handle, collector and writer), so the budget caps their cost at
 * about 2% of a thread; 10,000, the default before, capped it at 4% (collector/README.md, "The
 * sample budget": the costs and the estimates' error at 10,000, 5,000, 2,500 and 1,000). */
#define HL_SAMPLE_BUDGET_DEFAULT 5000u
#define HL_SAMPLE_BUDGET_MAX_FACTOR 1024u
uint32_t hl_sample_budget_factor(uint64_t seen, uint64_t first, uint64_t elapsed_ns,
                                 uint64_t per_second);

/* A thread's small-object samples per type in the current budget window: its first
 * HL_SAMPLE_BUDGET_FIRSTS of each type are kept whatever K. A fixed table, no allocation: a
 * type that finds it full (more than HL_SAMPLE_BUDGET_TYPES types in a window) is drawn like
 * any sample beyond its firsts. hl_budget_first counts the sample and says whether it is one
 * of its type's firsts; only what was seen before decides, never a draw. Zeroed: empty. */
#define HL_SAMPLE_BUDGET_FIRSTS 4u
#define HL_SAMPLE_BUDGET_TYPES 16u /* a power of two */
typedef struct hl_budget_types {
    uint64_t class_id[HL_SAMPLE_BUDGET_TYPES];
    uint32_t seen[HL_SAMPLE_BUDGET_TYPES]; /* 0: the slot is free */
} hl_budget_types;
bool hl_budget_first(hl_budget_types *t, uint64_t class_id);

/* The walk-time bin of a walk of `ns` nanoseconds, and the median of a histogram of such bins
 * in microseconds: the middle of the bin holding the median walk (the open last bin: its
 * start), within 12.5% of the median; 0 for no walk. Pure (tests/unit/collector). */
uint32_t hl_walk_hist_bin(uint64_t ns);
double hl_walk_hist_median_us(const uint64_t hist[HL_WALK_HIST_BINS]);

/* The next sampling distance in bytes: geometric with mean `mean` (each byte a sampling point
 * with p = 1/mean), from the uniform 64-bit random `u`. Pure (tests/unit/collector). */
uint64_t hl_sample_distance(uint64_t u, uint64_t mean);

/* ICorProfilerCallback10::EventPipeEventDelivered. */
HRESULT hl_eventpipe_on_event(struct hl_profiler *p, UINT_PTR provider, DWORD event_id,
                              DWORD event_version, ULONG metadata_size, const uint8_t *metadata,
                              ULONG data_size, const uint8_t *data, const GUID *activity,
                              const GUID *related_activity, ThreadID thread, ULONG frame_count,
                              UINT_PTR frames[]);

/* Payload decoding (pure; tests/unit/collector). Returns false when the payload is too short or
 * not of a known version. */
typedef struct hl_sample_payload {
    uint32_t kind;      /* AllocationKind: 0 small, 1 large, 2 pinned */
    uint64_t class_id;  /* TypeID */
    uint64_t address;   /* the object (0 if the event version has none) */
    uint64_t size;      /* ObjectSize (0 if the event version has none) */
    uint64_t amount;    /* AllocationTick: AllocationAmount64; AllocationSampled: SampledByteOffset */
} hl_sample_payload;
bool hl_parse_allocation_sampled(const uint8_t *data, uint32_t size, uint32_t version,
                                 hl_sample_payload *out);
bool hl_parse_allocation_tick(const uint8_t *data, uint32_t size, uint32_t version,
                              hl_sample_payload *out);

/* GCStart (event 1, GC keyword, level Informational): the runtime's GC count (its
 * GC.CollectionCount(0) once the GC began) and its gc_reason (hl_wire.h HL_GC_REASON_*), which
 * GarbageCollectionStarted does not tell (induced or other only). */
bool hl_parse_gc_start(const uint8_t *data, uint32_t size, uint32_t version, uint32_t *count,
                       uint32_t *reason);

/* GCHeapStats (event 4, GC keyword, Informational), at the end of every GC: the bytes that
 * survived in each generation the GC condemned (TotalPromotedSize 0..4; POH only from v2). */
#define HL_EVENT_GC_HEAP_STATS 4u
bool hl_parse_gc_heap_stats(const uint8_t *data, uint32_t size, uint32_t version,
                            uint64_t promoted[5]);
/* GCGlobalHeapHistory (event 205, GC keyword, Informational): GlobalMechanisms, whose bit
 * HL_GC_MECHANISM_COMPACTION says the GC compacted. */
#define HL_EVENT_GC_GLOBAL_HEAP_HISTORY 205u
#define HL_GC_MECHANISM_COMPACTION 0x2u
bool hl_parse_gc_global_history(const uint8_t *data, uint32_t size, uint32_t version,
                                uint32_t *mechanisms);

/* Checkpoint(string name) of the program's EventSource "HeapLens" (event 1): the name as UTF-8
 * into out (cap bytes with the NUL, at least 5). False when the payload holds no terminated
 * UTF-16 string. */
#define HL_EVENT_CHECKPOINT 1u
bool hl_parse_checkpoint(const uint8_t *data, uint32_t size, char *out, size_t cap);

/* GCBulkMovedObjectRanges / GCBulkSurvivingObjectRanges: the survivor ranges of a GC, the same
 * ones (same calls, same order) the runtime gives a MONITOR_GC profiler as MovedReferences2 /
 * SurvivingReferences2 (eventtrace.cpp ETW::GCLog::MovedReference feeds both). */
typedef struct hl_ranges_payload {
    bool moved;              /* moved (old, new, length) or surviving (start, length) */
    uint32_t count;
    const uint8_t *values;   /* packed, little endian; read with hl_ranges_at */
} hl_ranges_payload;
bool hl_parse_ranges(const uint8_t *data, uint32_t size, uint32_t event_id, hl_ranges_payload *out);
void hl_ranges_at(const hl_ranges_payload *r, uint32_t i, uint64_t *old_start, uint64_t *new_start,
                  uint64_t *length);

#endif /* HEAPLENS_EVENTPIPE_H */
