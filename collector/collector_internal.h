/* collector_internal.h — the collector thread's state, shared by collector_thread.c (the loop,
 * allocations, GCs) and snapshot.c (roots, handles, heap snapshots). Collector thread only. */
#ifndef HEAPLENS_COLLECTOR_INTERNAL_H
#define HEAPLENS_COLLECTOR_INTERNAL_H

#include "collector/collector.h"
#include "collector/fields.h"
#include "collector/statics.h"
#include "collector/frames.h"
#include "collector/outbox.h"
#include "collector/type_names.h"
#include "collector/u64map.h"
#include "collector/young.h"
#include "heapmodel/hm_model.h"
#include "wire/hl_wire.h"

#define CHUNK 65536 /* array elements per record (ids, survivors, snapshot rows) at most */
#define CHUNK_BYTES (512u << 10) /* ... and payload bytes: fits the smallest outbox (1 MiB) */

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
    hl_fields fields;     /* classes' field layouts, for snapshot references (fields.h) */
    hl_statics statics;   /* static fields and their slots, for snapshot references (statics.h) */
    hl_outbox out;
    /* A direct-mapped cache in front of `types`: programs alternate a few hot types, and a
     * hash probe per allocation would double the drain's cost. */
    struct { ClassID cls; uint32_t id; } type_cache[256];
    id_vec pending_types; /* hl_type: TYPE records not sent yet (sent before their first use) */
    uint8_t *type_traits; /* TYPE_TRAIT_* by type id (index 0 unused) */
    uint32_t *type_sizes; /* object size by type id, for delegate and value types (0: unseen) */
    size_t cap_traits;
    hl_young young;       /* allocations since the last GC (young.h) */
    uint32_t interval_gc; /* last GC whose interval is closed (== gcs_applied between GCs) */
    bool drain_while_waiting; /* the model may take post-GC allocations while the outbox waits */
    bool ending; /* finish(): the callbacks are off, no resume will be reported any more */
    /* An attach session's detach gave its last snapshot up (final_snapshot): `final_missed`
     * says why (reason 0: it did not), and from then on the GCs still queued are applied
     * without their snapshots, which made the collector fall behind. */
    hl_final_snapshot_missed final_missed;
    bool detach_now; /* HL_CMD_DETACH_NOW: the last snapshot is not waited for (final_snapshot) */
    hl_forcers_left forcers_left; /* a detach's ForceGC threads still in the runtime past the
                                   * bound (threads 0: none), sent as HL_REC_FORCERS_LEFT */
    hl_young_packed survivors; /* per GC, packed by hl_young_close */
    uint32_t gcs_applied;
    bool model_stale;     /* full mode: a GC was not applied; no later one is (apply_gc) */
    /* Losses in the user's units, counted as records are given up (outbox on_lost). */
    uint64_t allocs_dropped_writer, gcs_dropped, snapshots_dropped;
    uint32_t last_gc_dropped, last_snapshot_dropped;
    /* The census's counts built into ALLOC_COUNTS (sent or not): the writer's file holds what
     * reached it, so the rest is what a lost GC took along (hl_counters.census_allocs). */
    uint64_t census_allocs, census_bytes;
    /* Where the collector thread's time goes (HEAPLENS_STATS=1 prints it at Shutdown; timed only
     * then: the thread's CPU clock is a system call, two per pass and four per GC). */
    bool stats;
    uint64_t counted; /* allocations in ALLOC_COUNTS built (sent or not) */
    uint64_t drained, drained_waiting, drain_ns, model_ns, aggregate_ns;
    uint64_t spilled; /* events moved out of the pool for waiting threads (hl_tbufs_spill) */
    unsigned idle_ms;  /* the last idle sleep (collector_main): 0 after work, doubled while idle */
    uint64_t wakeups;  /* idle sleeps ended (HEAPLENS_STATS) */
    uint64_t anomalies;
    uint64_t model_failures;
    uint64_t unreported_drops; /* drops_at_start of the last GC applied */
    known_thread *threads;
    size_t n_threads, cap_threads;
    hl_u64map handles;    /* live GCHandleID -> HL_HANDLE_* kind */
    /* WeakReference objects and the handle each owns. The runtime frees that handle inside the
     * GC in which the object dies, without HandleDestroyed (EagerFinalized ->
     * FinalizeWeakReference): the death is the only notice. The owner is the WeakReference
     * whose ObjectAllocated came right before the HandleCreated on the same thread (its
     * constructor allocates the handle and nothing else). */
    hl_u64map weak_pending; /* os_tid -> id of the WeakReference it allocated last */
    hl_u64map weak_owned;   /* WeakReference object id -> its handle */
    id_vec handles_freed;   /* per GC: handles freed by the deaths of their WeakReferences */
    uint32_t snapshots;
    /* Following: ids a snapshot named in gen0 and did not follow (snapshot.c): sent as deaths
     * at the next GC, which has no way to tell their fate (the next snapshot names them again). */
    id_vec unfollowed;
    uint64_t discovered;  /* ids handed out from HL_DISCOVERED_ID_BASE */
    uint64_t discovered_at_gcs; /* ... of those, by discovery after GCs (sampled mode, attach) */
    uint64_t discover_pause_ns, discover_apply_ns, discover_found; /* HEAPLENS_STATS */
    /* Per-GC scratch. */
    id_vec deaths, promotions;
    id_vec handle_events; /* HANDLE_* events of one drain, applied in sequence order */
    /* Allocation samples (samples.c): frames and stacks interned, the open interval's samples,
     * the one being read from its HL_EV_SAMPLE slots, and the last one waiting for its
     * ObjectAllocated (full mode: the next allocation of the same thread at the same address). */
    hl_frames frames;
    id_vec samples;       /* hl_alloc_sample of the open interval */
    struct {
        hl_alloc_sample s;
        uint64_t address;
        uint32_t kept, got, reported;
        uintptr_t ips[HL_SAMPLE_MAX_FRAMES];
    } sample;
    struct {
        bool waiting;
        uint32_t os_tid;
        uint64_t address;
        size_t index;     /* in `samples` */
    } link;
    uint64_t samples_dropped_writer; /* samples in ALLOC_SAMPLES records the writer never got */
    uint64_t samples_linked, samples_taken;
    uint64_t samples_followed; /* sampled mode: samples whose object the model follows */
    /* Snapshot triggers (snapshot_triggers.c): their state, and the one asked for and not yet
     * applied (0: none; only one at a time) with its reason, sent with its snapshot. */
    hl_trigger_state triggers;
    bool triggers_ready;
    uint32_t trigger_pending;
    char trigger_reason[HL_SNAPSHOT_REASON_MAX];
    char name[4096];
    char traits_name[4096]; /* type_traits_resolve's, apart: it runs while `name` may wait */
} collector;

/* samples.c: an HL_EV_SAMPLE event (all its slots from `ev` on: frames resolved, stack
 * interned), the link of a sample to its object (the allocation `id` at `addr`), and the
 * records. */
void hl_samples_on_event(collector *c, const hl_alloc_event *ev, uint32_t os_tid);
static inline void hl_samples_on_alloc(collector *c, uint64_t id, uint64_t addr, uint32_t os_tid);
/* Takes the open interval's samples into *out (hl_alloc_sample, owned by the caller); an object
 * id stays only when the GC was classified and `y` has it alive (hl_young_alive: before
 * hl_young_close): objects rows exist for survivors only. */
void hl_samples_close(collector *c, const hl_young *y, bool classified, id_vec *out);
/* Sends the METHOD and STACK records not sent yet. */
void hl_samples_flush_names(collector *c);
/* Sends the interval's ALLOC_SAMPLES (when sampling is on) and frees `samples`. */
void hl_samples_send(collector *c, uint32_t gc, id_vec *samples);

static inline void hl_samples_on_alloc(collector *c, uint64_t id, uint64_t addr, uint32_t os_tid) {
    if (c->link.waiting && c->link.os_tid == os_tid) {
        if (c->link.address == addr && c->link.index < c->samples.n) {
            ((hl_alloc_sample *)c->samples.p)[c->link.index].object_id = id;
            c->samples_linked++;
        }
        c->link.waiting = false;
    }
}

/* Whether an object allocated now enters the model. After an attach, the runtime's generation
 * table at the session's first GC start lacks the regions that existed before the attach
 * (measured on 10.0.12: objects allocated since then in such a region lay in no range, and the
 * model would have taken them for NonGC objects, never condemned): what was allocated before
 * that GC is left to the first snapshot, which names the heap it finds (collector/README.md,
 * "Attach and detach"). follow.c makes no handle before it either (hl_follow.armed). */
static inline bool hl_collector_follows_new(const collector *c) {
    return !c->p->attach || c->interval_gc > 0;
}

/* What the collector must know about a type beyond its name. */
enum {
    TYPE_TRAIT_WEAK_REFERENCE = 1, /* System.WeakReference or System.WeakReference<T> */
    TYPE_TRAIT_DELEGATE = 2,       /* derives from System.MulticastDelegate */
    TYPE_TRAIT_VALUE_TYPE = 4,     /* derives from System.ValueType: a boxed value */
};
static inline uint8_t hl_collector_type_traits(const collector *c, uint32_t type_id) {
    return type_id < c->cap_traits ? c->type_traits[type_id] : 0;
}

/* Notes the object size of a delegate or value type (for counts of unreported allocations). */
static inline void hl_collector_type_size(collector *c, uint32_t type_id, uint64_t size) {
    if (type_id < c->cap_traits && size < UINT32_MAX)
        c->type_sizes[type_id] = (uint32_t)size;
}

/* The dense type id of a ClassID. Its TYPE record is queued, not sent (this runs inside drains,
 * which may run while the outbox waits): hl_collector_flush_types sends it before first use.
 * Inline: the drain asks for every allocation, and the answer is nearly always in the cache
 * (hl_collector_type_id_resolve does the rest). */
uint32_t hl_collector_type_id_resolve(collector *c, ClassID cls);
static inline uint32_t hl_collector_type_id(collector *c, ClassID cls) {
    size_t slot = (size_t)(cls >> 3) & 255; /* MethodTables are 8-byte aligned */
    if (c->type_cache[slot].cls == cls && c->type_cache[slot].id)
        return c->type_cache[slot].id;
    return hl_collector_type_id_resolve(c, cls);
}
/* Sends the queued TYPE records. */
void hl_collector_flush_types(collector *c);

/* records.c: putting records into the outbox. */
/* Sends `head` followed by the string `s` (an hl_str: length, bytes): TYPE, THREAD, METHOD. */
void hl_collector_put_str(collector *c, uint16_t type, const void *head, size_t n_head,
                          const char *s);
/* Sends `head` followed by `n` elements of `elem_size` bytes, split into records of at most
 * CHUNK elements and CHUNK_BYTES; stores each record's element count in *count_field. Sends
 * nothing when `n` is 0 (a caller whose empty record matters puts the head itself). */
void hl_collector_put_chunked(collector *c, uint16_t type, void *head, size_t head_size,
                              uint32_t *count_field, const void *elems, size_t n, size_t elem_size);
/* Sends GC `gc`'s survivors, packed by the closing pass (young.h; payloads of at most CHUNK
 * objects and CHUNK_BYTES), as GC_SURVIVORS_PACKED records. Nothing when there are none. */
void hl_collector_put_survivors(collector *c, uint32_t gc, const hl_young_packed *survivors);

/* snapshot.c: handle events from the thread buffers, then per GC (after the model applied it,
 * before GC_END) roots and, when the GC takes one, the snapshot. */
void hl_handles_created(collector *c, uint64_t handle, uint64_t target_addr);
void hl_handles_destroyed(collector *c, uint64_t handle);
/* Learns handle kinds from the GC's roots and counts roots and pinned roots into `end`. */
void hl_roots_apply(collector *c, const struct hl_gc_capture *g, hl_gc_end *end);
/* Builds the snapshot of this GC, if it takes one (NULL otherwise, or when out of memory,
 * counted): everything that reads the model, so that the model may take newer allocations
 * before the snapshot is sent. */
struct hl_snapshot *hl_snapshot_build(collector *c, const struct hl_gc_capture *g);
/* Sends a built snapshot (its DISCOVERED, SNAPSHOT_* records) and frees it; NULL is accepted. */
void hl_snapshot_send(collector *c, struct hl_snapshot *s);

/* snapshot_triggers.c: the snapshot triggers on the collector thread (snapshot_policy.h). After
 * each GC applied (`size_after` its generations' sizes, `snapshot` the snapshot it sent, 0 =
 * none), and between GCs for every:Ns. Either may ask for a snapshot. */
void hl_collector_triggers_gc(collector *c, const hl_gc_capture *g,
                              const uint64_t size_after[HL_GEN_COUNT_GC], uint32_t snapshot);
void hl_collector_triggers_tick(collector *c);
/* `heaplens snapshot PID` replaced a trigger's request that no GC had taken yet: it is dropped. */
void hl_collector_triggers_replaced(collector *c);

#endif /* HEAPLENS_COLLECTOR_INTERNAL_H */
