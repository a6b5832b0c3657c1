/* collector.h — the profiler instance: the only mutable global of libheaplens.so.
 *
 * Who runs what:
 *   runtime threads  ObjectAllocated, thread naming  -> thread chunks / name events (copy, return)
 *   GC thread(s)     GarbageCollectionStarted, MovedReferences2, SurvivingReferences2,
 *                    GarbageCollectionFinished       -> GC captures (copy, return)
 *   collector thread drains rings and captures in allocation-id order, keeps the heap model,
 *                    resolves type names, encodes records, sends them to the writer.
 * Nothing on a runtime thread does I/O, blocks, or allocates after a thread's first event.
 */
#ifndef HEAPLENS_COLLECTOR_H
#define HEAPLENS_COLLECTOR_H

#include "collector/clock.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "collector/clr_abi.h"
#include "collector/clr_info.h"
#include "collector/eventpipe.h"
#include "collector/follow.h"
#include "collector/gc_capture.h"
#include "collector/snapshot_policy.h"
#include "collector/thread_buffers.h"

#define HL_NAME_EVENTS 256

/* A thread was named or got its OS thread (ThreadNameChanged, ThreadAssignedToOSThread). */
typedef struct hl_name_event {
    ThreadID thread;
    uint32_t os_tid;  /* 0 when this event only carries a name */
    bool has_name;
    char name[64];
} hl_name_event;

/* A checkpoint the program wrote (eventpipe.c), waiting for the collector thread to send it. */
#define HL_CHECKPOINT_EVENTS 64
#define HL_CHECKPOINT_NAME_MAX 200 /* bytes of UTF-8 kept; a longer name is cut */
typedef struct hl_checkpoint_event {
    hl_checkpoint rec;
    char name[HL_CHECKPOINT_NAME_MAX + 1];
} hl_checkpoint_event;

typedef struct hl_profiler {
    const ICorProfilerCallback11Vtbl *vtbl; /* must stay first: this is the COM object */
    ICorProfilerInfo *info;
    int info_version;
    bool empty;                 /* HEAPLENS_EMPTY=1: flags set, callbacks do nothing */
    /* HEAPLENS_EMPTY_MASK_OFF=LOW:HIGH (benchmark, empty profiler only): event-mask bits the
     * empty profiler never sets, to measure what each flag costs the runtime (profiler.c) */
    uint32_t bench_mask_off_low, bench_mask_off_high;
    uint32_t mode;              /* HL_MODE_*: what the collector hears (profiler.c, modes) */
    bool active;                /* callbacks record (false in empty mode and after Shutdown) */
    bool attach;                /* attached by `heaplens attach` (InitializeForAttach) */
    atomic_bool detach_requested; /* attach: end the session and detach (writer asked or gone) */
    bool thread_started;
    atomic_bool thread_joined;

    /* Own cache lines: every allocating thread adds to next_id once per block of ids, and each
     * add took the line from the others, with `active` and the flags every ObjectAllocated
     * reads (7% of its samples were the load of `active`). id_epoch is read by every
     * ObjectAllocated and written only at GC starts. */
    _Alignas(64) atomic_uint_fast64_t next_id; /* the next id (or block of ids: hl_tbuf_push_alloc) not given */
    _Alignas(64) atomic_uint_fast64_t id_epoch; /* changes at every GC start: id blocks serve one epoch */
    hl_tbufs rings;             /* the thread buffers: slots and the chunk pool */
    hl_gc_queue gcs;
    atomic_uint_fast64_t suspend_ns; /* last RuntimeSuspendStarted for a GC */
    hl_snapshot_policy policy;  /* HEAPLENS_SNAPSHOT: which GCs take a snapshot */
    /* The next GC takes a snapshot with this trigger (HL_SNAPSHOT_*, 0: none): REQUESTED by
     * `heaplens snapshot PID` and attach, a trigger's by the collector thread. */
    atomic_uint snapshot_requested;
    /* HL_CMD_SNAPSHOT commands taken (take_requests), and for the last GCs that took a
     * requested snapshot how many had been taken then (by gc % 16; written on the GC thread at
     * its start, read by the collector thread when it sends the snapshot:
     * hl_snapshot_start.commands). */
    atomic_uint snapshot_commands;
    struct {
        uint32_t gc, commands;
    } requested_at[16];
    atomic_bool attach_snapshot; /* attach complete: the collector thread asks the first snapshot */
    atomic_uint snapshots_by_policy; /* taken by policy, for --max-snapshots */
    bool stacks;                /* HEAPLENS_STACKS (default on): allocation samples with stacks */
    bool follow;                /* sampled mode: identity only for the samples' objects, LOH/POH
                                 * allocations and snapshots' objects (no discovery at GCs) */
    bool walk_on_demand;        /* the mode has MONITOR_GC only during the GCs that walk
                                 * (profiler.c, modes): no handle lifetimes */
    bool walk_toggles;          /* ... and the runtime allows it (the EventPipe session runs) */
    bool handles;               /* full mode with MONITOR_GC at every GC (`record --handles`,
                                 * or no session): handle lifetimes and unreported counts */
    bool census_off;            /* sampled or attach mode without the census of gen0 (`--census
                                 * off`, HEAPLENS_CENSUS=off): RUN_START says so */
    bool walk_on;               /* MONITOR_GC is on now (changed on GC threads only) */
    hl_sampling sampling;       /* the EventPipe session (eventpipe.h) */
    hl_follow followed;         /* sampled mode: the followed objects' weak handles (follow.h) */

    atomic_flag names_lock;
    hl_name_event names[HL_NAME_EVENTS];
    atomic_uint_fast64_t names_written, names_read, names_dropped;
    /* Checkpoints: a ring like names' (rare events; a full ring drops and counts). */
    atomic_flag checkpoints_lock;
    hl_checkpoint_event checkpoints[HL_CHECKPOINT_EVENTS];
    atomic_uint_fast64_t checkpoints_written, checkpoints_read, checkpoints_dropped;

    char socket_path[256];
    uint64_t start_unix_ns, start_mono_ns;
    char runtime_version[32];
    struct collector *collector; /* the collector thread's own state */
    pthread_t thread;
    atomic_bool stopping;
    uint64_t shutdown_ns;       /* when Shutdown called hl_collector_stop (before the join) */
    /* The recording's own program under `heaplens record` without -q or --json
     * (HEAPLENS_EXIT_NOTE_MS, read at Initialize): when Shutdown waits longer than
     * exit_note_ms for the collector to hand over what it holds, one line on stderr says so.
     * Off for an attach, a --children descendant, the collector loaded without record. */
    bool exit_note;
    unsigned exit_note_ms;
    int wake_fd;                /* eventfd: Shutdown and half-full rings wake the collector thread */
    struct hl_rejit *rejit;     /* counted sites (`--count`, rejit.h); NULL when not counting */
} hl_profiler;

/* resident.c: a fresh attach session in a collector the runtime kept (no InitializeForAttach
 * comes): what InitializeForAttach and ProfilerAttachComplete do, on a thread of ours, from the
 * client data `data` (attach_config.h). S_OK, or why not (nothing left running). */
HRESULT hl_profiler_session_resume(hl_profiler *p, void *info, const void *data, size_t size);

/* Starts the collector thread (connects to the writer there). Returns 0 or an errno. */
int hl_collector_start(hl_profiler *p);
/* Drains everything, sends the tail interval and the end-of-run record, waits for the writer
 * to take them (as long as it makes progress; 10 s without progress gives it up), and joins
 * the thread; says so on stderr once the wait passes p->exit_note_ms (p->exit_note). */
void hl_collector_stop(hl_profiler *p);
/* The same, but waits at most `ms` for the thread (the process is dying: a thread that cannot
 * finish must not keep it from its end). */
void hl_collector_stop_within(hl_profiler *p, unsigned ms);
/* The program is failing fast (Environment.FailFast, a fatal runtime error: the runtime's FailFast
 * event, on the failing thread, right before it aborts the process without Shutdown): ends the
 * session as Shutdown would, so that what the collector had not yet sent is stored. */
void hl_profiler_failing(hl_profiler *p);

/* Wakes the collector thread from its idle sleep (an eventfd write: one system call, any
 * thread, no lock): a ring that fills faster than the idle period drains it. */
void hl_collector_wake(hl_profiler *p);
/* Asks for a snapshot at the next GC with `trigger` (HL_SNAPSHOT_*) and forces a GC from a
 * thread of our own. */
void hl_collector_request_snapshot(hl_profiler *p, uint32_t trigger);
/* Back to the state of a freshly loaded library: joins the collector thread if it ran, gives the
 * thread buffers' pool and the GC queue back, zeroes everything but the vtable. Only when no
 * callback can run (ProfilerDetachSucceeded, InitializeForAttach, a failed start). */
void hl_session_reset(hl_profiler *p);


#endif /* HEAPLENS_COLLECTOR_H */
