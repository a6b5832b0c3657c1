/* hl_wire.h — the heaplens record stream: what the collector sends and the writer reads.
 *
 * This header is the whole specification of the format. Both ends are little-endian x86-64;
 * every payload below is a struct of fixed-width fields whose layout (including explicit
 * padding) is checked with static_assert, so the producer can memcpy records into its buffers
 * and the reader can memcpy them out without any per-field encoding. One exception, for its
 * volume: GC_SURVIVORS_PACKED, a fixed head and then variable-length numbers (varints, below).
 *
 * Stream  = hl_stream_header, then records until HL_REC_RUN_END (or until the stream breaks).
 * Record  = hl_rec_header {type, size} followed by `size` payload bytes. `size` never exceeds
 *           HL_REC_MAX_PAYLOAD; a reader treats a larger size as corruption. Unknown record types
 *           are skipped by size, so newer producers can add types without breaking old readers.
 * Strings = hl_str: u32 byte length, then that many UTF-8 bytes (no NUL), at the payload's end.
 *
 * Completeness: a GC is complete only when its HL_REC_GC_END arrives; the stream is complete
 * only when HL_REC_RUN_END arrives. Anything after the last GC_END of a broken stream is a
 * truncated tail: the reader keeps allocations that arrived whole and discards a GC whose
 * GC_END never came.
 *
 * Ordering guarantees given by the collector:
 *  - a TYPE or THREAD record precedes the first record that uses its id;
 *  - HANDLE_CREATED / HANDLE_DESTROYED come between GCs, in allocation order;
 *  - GC n's records come in the order GC_START, ALLOC_COUNTS*, GC_SURVIVORS(_PACKED)*, GC_DEATHS*,
 *    GC_PROMOTIONS*, GC_HANDLES_FREED*,
 *    GC_HANDLE_KINDS*, (DISCOVERED*, SNAPSHOT_START,
 *    SNAPSHOT_OBJECTS|REFS|REF_FIELDS|STATICS|STRINGS|ROOTS*, SNAPSHOT_END)?, GC_END (TYPE, FIELD and
 *    STATIC records may come in between), and GCs come in
 *    ordinal order
 *    1, 2, 3, ... without gaps (a GC whose input the collector lost is still sent, with
 *    HL_GC_FLAG_INCOMPLETE set and its interval's allocations counted unclassified).
 * The collector drops no record for a slow writer: its own thread waits for room as long as the
 * writer keeps taking bytes. It gives the writer up only when the socket breaks or the writer
 * took nothing for 10 s (writer_lost); from then on nothing is sent, and what was not sent is
 * counted in records/bytes_dropped and in the user's units (allocs_dropped_writer, gcs_dropped,
 * snapshots_dropped). Those counts cannot travel on the stream it gave up, so at its end (the
 * runtime's Shutdown, or a detach) a collector that lost its writer writes them into the *end
 * file* `end.<pid>` beside the socket it connected to (0600, in the session's private
 * directory, written whole under another name and renamed): a stream header and one RUN_END
 * record, nothing else. The writer (or `heaplens record`, when the writer died) reads it when
 * the stream itself ended without RUN_END. The only other gap: a GC whose capture found the collector's queue of
 * 1024 unapplied GCs full has no records at all (counted in gc_events_dropped; its interval's
 * allocations are counted with the next GC's).
 */
#ifndef HEAPLENS_WIRE_H
#define HEAPLENS_WIRE_H

#include <assert.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define HL_STREAM_MAGIC "HEAPLENS"  /* 8 bytes, no NUL on the wire */
#define HL_STREAM_VERSION 6u  /* 2: allocations aggregated (ALLOC_COUNTS), rows for survivors;
                               * 3: counters carry the threads' waits (GC_END 224 bytes, RUN_END
                               * 152; a reader takes version 2's 208 and 136 with waits 0);
                               * 4: GC_END carries the census (240 bytes; 3's 224: census 0);
                               * 5: survivors packed (GC_SURVIVORS_PACKED; GC_SURVIVORS stays
                               * valid: heap dump imports send it) */
#define HL_STREAM_VERSION_MIN 2u /* the oldest version a reader takes */
#define HL_REC_MAX_PAYLOAD (16u * 1024u * 1024u)

typedef struct hl_stream_header {
    char magic[8];     /* HL_STREAM_MAGIC */
    uint32_t version;  /* HL_STREAM_VERSION; a reader refuses versions outside
                        * HL_STREAM_VERSION_MIN..HL_STREAM_VERSION */
    uint32_t flags;    /* reserved, 0 */
} hl_stream_header;
static_assert(sizeof(hl_stream_header) == 16, "wire layout");

typedef enum hl_rec_type {
    HL_REC_RUN_START = 1,
    HL_REC_TYPE = 2,
    HL_REC_THREAD = 3,
    /* 4 (ALLOC_BATCH: a row per allocation) and 6 (GC_YOUNG_FATE) were version 1 only */
    HL_REC_GC_START = 5,
    HL_REC_GC_DEATHS = 7,
    HL_REC_GC_PROMOTIONS = 8,
    HL_REC_GC_END = 9,
    HL_REC_RUN_END = 10,
    HL_REC_HANDLE_CREATED = 11,
    HL_REC_HANDLE_DESTROYED = 12,
    HL_REC_GC_HANDLE_KINDS = 13,
    HL_REC_DISCOVERED = 14,
    HL_REC_SNAPSHOT_START = 15,
    HL_REC_SNAPSHOT_OBJECTS = 16,
    HL_REC_SNAPSHOT_REFS = 17,
    HL_REC_SNAPSHOT_ROOTS = 18,
    HL_REC_SNAPSHOT_END = 19,
    HL_REC_ALLOC_COUNTS = 20,
    HL_REC_GC_SURVIVORS = 21,
    HL_REC_GC_HANDLES_FREED = 22,
    HL_REC_METHOD = 23,
    HL_REC_STACK = 24,
    HL_REC_ALLOC_SAMPLES = 25,
    HL_REC_FIELD = 26,
    HL_REC_SNAPSHOT_REF_FIELDS = 27,
    HL_REC_STATIC = 28,
    HL_REC_SNAPSHOT_STATICS = 29,
    HL_REC_SNAPSHOT_STRINGS = 30,
    HL_REC_CHECKPOINT = 31,
    HL_REC_COUNT_SITE = 40, /* counted sites (--count), numbered apart from the others' growth */
    HL_REC_ROOT_METHOD = 41,   /* the method of stack roots' frames */
    HL_REC_SNAPSHOT_COLLECTIONS = 42, /* the collections' own counts */
    HL_REC_STATIC_THREAD = 43, /* a static that is one thread's slot of a thread static */
    HL_REC_SNAPSHOT_REASON = 45, /* why a trigger took this snapshot (snapshot triggers) */
    HL_REC_SNAPSHOT_ROOT_THREADS = 46, /* the thread of stack roots, found by the stacks */
    HL_REC_GC_SURVIVORS_PACKED = 47, /* version 5: GC_SURVIVORS as variable-length numbers */
    HL_REC_FINAL_SNAPSHOT_MISSED = 48, /* an attach session ended without its last snapshot */
    HL_REC_FORCERS_LEFT = 49, /* a detach went on with ForceGC threads still in the runtime */
} hl_rec_type;

typedef struct hl_rec_header {
    uint16_t type;     /* hl_rec_type */
    uint16_t reserved; /* 0 */
    uint32_t size;     /* payload bytes that follow */
} hl_rec_header;
static_assert(sizeof(hl_rec_header) == 8, "wire layout");

/* Generations as heaplens stores them. 0..2 are the small-object heap generations; LOH and POH
 * objects are collected with gen 2 (GC.GetGeneration reports 2 for them); NonGC (frozen) objects
 * are never collected (GC.GetGeneration reports int.MaxValue). */
enum {
    HL_GEN_0 = 0,
    HL_GEN_1 = 1,
    HL_GEN_2 = 2,
    HL_GEN_LOH = 3,
    HL_GEN_POH = 4,
    HL_GEN_NONGC = 5,
    HL_GEN_COUNT_GC = 5, /* generations that have bounds: 0..4 */
    HL_GEN_NONE = 15,    /* unknown, or (in a fate) dead */
};

/* Recording modes (run metadata). IMPORT: no program ran; the stream was made from a heap dump
 * file (`heaplens import`, gcdump/gcdump.h): one GC whose survivors are the dump's objects, and
 * its snapshot. */
enum { HL_MODE_FULL = 1, HL_MODE_SAMPLED = 2, HL_MODE_ATTACH = 3, HL_MODE_IMPORT = 4 };

/* Counters kept by the collector; cumulative since the start, sent in GC_END and RUN_END.
 * Losses are counted in the units users think in (allocations, GCs, snapshots), each with its
 * reason, so the writer can store the true one. */
typedef struct hl_counters {
    uint64_t allocs_seen;        /* ObjectAllocated callbacks */
    uint64_t allocs_dropped;     /* allocations lost, any reason (the sum of the next two) */
    uint64_t allocs_dropped_buffer; /* ... the thread buffer pool was full: never reached the
                                     * collector thread */
    uint64_t allocs_dropped_writer; /* ... counted or described in records the writer never
                                     * received (writer behind or gone) */
    uint64_t gc_events_dropped;  /* GC inputs lost (range batches, bounds): model may be wrong */
    uint64_t records_dropped;    /* records built but not sent (writer slow or gone) */
    uint64_t bytes_dropped;      /* payload bytes of those records */
    uint64_t model_anomalies;    /* runtime data the model could not place (see heapmodel) */
    uint64_t threads_overflowed; /* threads that found no free buffer slot */
    uint64_t gcs_dropped;        /* GCs whose GC_START/GC_END the writer never received */
    uint64_t snapshots_dropped;  /* snapshots taken whose records the writer never received */
    uint64_t writer_lost;        /* 1 once the writer went away (EPIPE) or took nothing for the
                                  * stall limit; then nothing more is sent */
    /* Version 3. Full mode: a thread whose allocation found the collector's buffers full waits
     * for it instead of dropping (collector/README.md). */
    uint64_t thread_waits;       /* waits of program threads for a free buffer chunk */
    uint64_t thread_wait_ns;     /* ... their total time, summed over threads */
    /* Version 6. Sampled and attach modes: the small-object allocations the census of gen0
     * counted (the CENSUS entries of ALLOC_COUNTS) and their bytes, every GC's whether its
     * records reached the writer or not: what the writer stored of them is the rest, lost. */
    uint64_t census_allocs;
    uint64_t census_bytes;
} hl_counters;
static_assert(sizeof(hl_counters) == 128, "wire layout");
#define HL_COUNTERS_V2_SIZE 96u /* without thread_waits and thread_wait_ns */
#define HL_COUNTERS_V3_SIZE 112u /* without census_allocs and census_bytes (versions 3 to 5) */

/* HL_REC_RUN_START. Followed by three hl_str: command line (arguments joined by spaces),
 * runtime version ("10.0.12"), producer ("heaplens 0.1.0"). */
typedef struct hl_run_start {
    uint32_t pid;
    uint32_t mode;           /* HL_MODE_* */
    uint64_t start_unix_ns;  /* CLOCK_REALTIME */
    uint64_t start_mono_ns;  /* CLOCK_MONOTONIC; all other times in the stream use this clock */
    uint32_t flags;          /* HL_RUN_FLAG_* */
    uint32_t pointer_size;   /* 8 */
} hl_run_start;
static_assert(sizeof(hl_run_start) == 32, "wire layout");
enum {
    HL_RUN_FLAG_EMPTY_PROFILER = 1, /* benchmark mode: flags set, callbacks do nothing */
    HL_RUN_FLAG_HANDLES = 2,        /* full mode with MONITOR_GC at every GC (record --handles):
                                     * handle lifetimes and unreported allocation counts */
    HL_RUN_FLAG_SAMPLES_FOLLOWED = 4, /* sampled mode: between snapshots only the allocation
                                       * samples' objects are followed (objects rows for them,
                                       * LOH/POH objects and snapshots' objects only): survivors
                                       * per type are estimates (collector/README.md) */
    HL_RUN_FLAG_CENSUS_OFF = 8,     /* sampled or attach mode without the census of gen0
                                     * (`--census off`, HEAPLENS_CENSUS=off): small-object
                                     * allocations are only estimated from the samples */
};

/* HL_REC_TYPE. Followed by one hl_str: the type name (format in collector/README.md). */
typedef struct hl_type {
    uint32_t type_id;    /* 1, 2, 3, ... dense, assigned by the collector */
    uint32_t flags;      /* HL_TYPE_FLAG_* */
    uint64_t class_id;   /* the runtime's ClassID (MethodTable address), for diagnostics */
} hl_type;
static_assert(sizeof(hl_type) == 16, "wire layout");
enum { HL_TYPE_FLAG_ARRAY = 1, HL_TYPE_FLAG_VALUE_TYPE = 2, HL_TYPE_FLAG_UNRESOLVED = 4,
       HL_TYPE_FLAG_VALUE_ELEMENTS = 8, /* an array whose elements are a value type (structs) */
       HL_TYPE_FLAG_FINALIZER = 16 /* its instances need finalization: the runtime's own
                                    * MethodTable::HasFinalizer (a Finalize override other than
                                    * System.Object's), the bit the GC registers objects by */ };

/* HL_REC_THREAD: names a thread. Followed by one hl_str: the managed thread name (may be empty). */
typedef struct hl_thread {
    uint32_t os_tid;
    uint32_t reserved;
    uint64_t thread_id;  /* the runtime's ThreadID */
} hl_thread;
static_assert(sizeof(hl_thread) == 16, "wire layout");

/* ---- allocations: exact counts for all, a row for each survivor -------------------------
 * Allocation interval n = the allocations made after GC n-1 began and before GC n began
 * (ids in [GC_START(n-1).first_id_after, GC_START(n).first_id_after)); interval 1 starts with
 * the run. The tail interval (after the last GC) is numbered last GC + 1.
 *
 * HL_REC_ALLOC_COUNTS: every allocation of interval `gc`, counted exactly per (type, allocating
 * thread, heap). Sent inside GC `gc` (after its GC_START), when the GC's fate of each object is
 * known; the tail interval's counts come after the last GC_END, before RUN_END. Several records
 * may carry one interval; a key appears once per interval. `count` hl_alloc_count follow. */
typedef struct hl_alloc_counts {
    uint32_t gc;        /* the interval: GC that ended it (last GC + 1 for the tail) */
    uint32_t count;
} hl_alloc_counts;
typedef struct hl_alloc_count {
    uint32_t type_id;
    uint32_t os_tid;       /* allocating thread */
    uint32_t heap;         /* HL_GEN_0 (small-object heap), HL_GEN_LOH, HL_GEN_POH, HL_GEN_NONGC,
                            * or HL_GEN_NONE: not classified (tail interval, incomplete GC) */
    uint32_t flags;        /* HL_ALLOC_FLAG_* */
    uint64_t count;        /* allocations */
    uint64_t bytes;        /* their sizes, as GetObjectSize2 reports */
    uint64_t survived;     /* of those, alive after GC `gc` (each has a GC_SURVIVORS entry);
                            * 0 in the tail interval */
    uint64_t survived_bytes;
} hl_alloc_count;
static_assert(sizeof(hl_alloc_counts) == 8 && sizeof(hl_alloc_count) == 48, "wire layout");
/* UNREPORTED: allocations the runtime made without ObjectAllocated (hl_discovered,
 * HL_DISCOVERED_UNREPORTED), estimated at GC `gc`'s start from ObjectsAllocatedByClass (the
 * runtime's count of gen0 objects per class) minus the interval's reported small-object-heap
 * allocations of that class, for delegate and value-type (boxed) classes only. os_tid 0 (not
 * known), heap HL_GEN_0, survived 0 (not known), bytes = count x the class's object size when the
 * collector has seen one (else 0). Not part of allocs_seen: sum(count of unflagged entries) +
 * allocs_dropped == allocs_seen. */
/* CENSUS: small-object allocations of interval `gc` counted by the census of gen0 at GC `gc`'s
 * start (sampled and attach modes without ObjectAllocated: collector/census.h): exact per
 * class, os_tid 0 (no thread is known), heap HL_GEN_0, survived 0 (not known per class).
 * Not part of allocs_seen either. */
enum { HL_ALLOC_FLAG_UNREPORTED = 1, HL_ALLOC_FLAG_CENSUS = 2 };

/* HL_REC_GC_SURVIVORS, inside GC `gc`: the objects of interval `gc` alive after it (survivors
 * of their first GC, and objects of heaps it did not condemn), in ascending id order. From
 * then on they are ordinary objects (GC_DEATHS, GC_PROMOTIONS). An object that died in its
 * first GC appears only in ALLOC_COUNTS. `count` hl_survivor follow. */
typedef struct hl_gc_survivors {
    uint32_t gc;
    uint32_t count;
} hl_gc_survivors;
typedef struct hl_survivor {
    uint64_t id;           /* allocation sequence number, from 1, never reused */
    uint64_t size;
    uint32_t type_id;
    uint32_t os_tid;
    uint8_t heap;          /* as in hl_alloc_count */
    uint8_t generation;    /* HL_GEN_* after GC `gc` */
    uint16_t reserved;
    uint32_t reserved2;
} hl_survivor;
static_assert(sizeof(hl_gc_survivors) == 8 && sizeof(hl_survivor) == 32, "wire layout");

/* HL_REC_GC_SURVIVORS_PACKED (version 5), inside GC `gc`: the same objects as GC_SURVIVORS, with
 * the same promises (ascending ids, within and across the GC's records), in about 5 bytes each
 * instead of 32 (MidLife: 184 of its 242 MB of stream were survivors). Head hl_gc_survivors,
 * then `count` objects up to the payload's end, each four or six varints (below):
 *
 *     gap << 4 | generation << 1 | key   gap: the id minus the previous object's in this record
 *                                        (the first one's: the id itself), at least 1;
 *                                        generation: HL_GEN_* after GC `gc` (0..5);
 *                                        key: 1 when (os_tid, heap) follow
 *     os_tid, heap                       only with key 1: the object's allocating thread and
 *                                        heap, which hold for the objects after it until the
 *                                        next key (the record's first object has one)
 *     type_id
 *     size
 *
 * A thread allocates its ids in runs (collector/README.md), so in id order a key comes once per
 * run, not once per object, and the writer keeps the chunk of the run's (thread, heap) at hand.
 * A payload that is not exactly `count` such objects (a varint past its end or longer than 10
 * bytes, os_tid or type_id above 32 bits, heap above 255, a first object without its key,
 * bytes left over) is a corrupt record; values that break a promise (a gap of 0, a generation
 * above HL_GEN_NONGC, an id out of the interval) are the writer's anomalies, as in
 * GC_SURVIVORS. */
#define HL_SURVIVOR_PACKED_MAX 32u /* bytes of one object at most: 10 + 5 + 2 + 5 + 10 */

/* Varint: an unsigned LEB128 number, 7 bits a byte, the lowest first, the high bit set on every
 * byte but the last; at most HL_VARINT_MAX bytes for 64 bits. */
#define HL_VARINT_MAX 10u
static inline uint8_t *hl_varint_put(uint8_t *p, uint64_t v) {
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}
/* One object of a GC_SURVIVORS_PACKED payload: the encoder's state between objects. A payload
 * starts from {0} (its first object carries its key). */
typedef struct hl_survivor_pack_state {
    uint64_t prev; /* the id before, 0 at a payload's start */
    uint32_t tid, heap;
    bool started;
} hl_survivor_pack_state;
/* Encodes one survivor (its id above st->prev) at p, at most HL_SURVIVOR_PACKED_MAX bytes;
 * returns the end. The one encoder: hl_survivors_pack below, and the collector's closing pass
 * (collector/young.c), which packs each survivor as it finds it. */
static inline uint8_t *hl_survivor_pack_one(uint8_t *p, hl_survivor_pack_state *st, uint64_t id,
                                            uint32_t generation, uint32_t os_tid, uint32_t heap,
                                            uint32_t type_id, uint64_t size) {
    uint64_t key = !st->started || os_tid != st->tid || heap != st->heap;
    p = hl_varint_put(p, (id - st->prev) << 4 | (uint64_t)(generation & 7) << 1 | key);
    if (key) {
        st->started = true;
        st->tid = os_tid;
        st->heap = heap;
        p = hl_varint_put(p, os_tid);
        p = hl_varint_put(p, heap);
    }
    p = hl_varint_put(p, type_id);
    p = hl_varint_put(p, size);
    st->prev = id;
    return p;
}
/* Encodes survivors v[0..n) (ascending ids) as the objects of one GC_SURVIVORS_PACKED payload
 * at `out`: as many as surely fit in `room` bytes, at most `max`. Returns the bytes written;
 * *taken = the objects encoded (at least one when room >= HL_SURVIVOR_PACKED_MAX). The tests'
 * and the benchmark's encoder. */
static inline size_t hl_survivors_pack(const hl_survivor *v, size_t n, size_t max, uint8_t *out,
                                       size_t room, size_t *taken) {
    uint8_t *p = out;
    hl_survivor_pack_state st = {0};
    size_t i = 0;
    for (; i < n && i < max && (size_t)(p - out) + HL_SURVIVOR_PACKED_MAX <= room; i++)
        p = hl_survivor_pack_one(p, &st, v[i].id, v[i].generation, v[i].os_tid, v[i].heap,
                                 v[i].type_id, v[i].size);
    *taken = i;
    return (size_t)(p - out);
}

/* Reads one varint at *p, not past `end`; advances *p. 0 when it runs past `end` or past 64
 * bits (nothing read), else 1. */
static inline int hl_varint_get(const uint8_t **p, const uint8_t *end, uint64_t *v) {
    const uint8_t *q = *p;
    uint64_t r = 0;
    for (unsigned shift = 0; q < end && shift < 64; shift += 7) {
        uint8_t b = *q++;
        if (shift == 63 && b > 1)
            return 0; /* the tenth byte holds bit 63 only */
        r |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *p = q;
            *v = r;
            return 1;
        }
    }
    return 0;
}

/* HL_REC_GC_START. */
typedef struct hl_gc_start {
    uint32_t gc;                  /* ordinal: 1, 2, 3, ... == GC.CollectionCount(0) after it */
    uint32_t generation;          /* highest condemned generation, 0..2 */
    uint32_t reason;              /* 0 other, 1 induced (COR_PRF_GC_REASON: all a profiler is
                                   * told in GarbageCollectionStarted) */
    uint32_t condemned_mask;      /* bit g set when generation g (0..4) is condemned */
    uint64_t start_mono_ns;       /* GarbageCollectionStarted */
    uint64_t suspend_mono_ns;     /* RuntimeSuspendStarted for this GC, or 0 if unknown */
    uint64_t first_id_after;      /* ids >= this were allocated after this GC started */
    uint64_t size_before[HL_GEN_COUNT_GC]; /* bytes in use per generation 0..4, from the bounds */
    uint32_t gc_reason;           /* the runtime's gc_reason (its GCStart event: HL_GC_REASON_*),
                                   * valid when flags has HL_GC_START_REASON_KNOWN */
    uint32_t flags;               /* HL_GC_START_* */
} hl_gc_start;
static_assert(sizeof(hl_gc_start) == 88, "wire layout");
enum { HL_GC_START_REASON_KNOWN = 1 };
/* The runtime's gc_reason values (gc.h; the names are those of its GCStart event's GCReason map,
 * the store writes them: store/SCHEMA.md, gcs.reason). */
enum { HL_GC_REASON_ALLOC_SMALL = 0, HL_GC_REASON_INDUCED = 1, HL_GC_REASON_ALLOC_LARGE = 4 };

/* HL_REC_GC_DEATHS: older objects (survivors of an earlier GC) that died in GC `gc`.
 * `count` uint64 ids follow. */
typedef struct hl_gc_deaths {
    uint32_t gc;
    uint32_t count;
} hl_gc_deaths;
static_assert(sizeof(hl_gc_deaths) == 8, "wire layout");

/* HL_REC_GC_PROMOTIONS: older objects (survivors of an earlier GC) whose generation changed in
 * GC `gc`.
 * `count` hl_promotion follow. */
typedef struct hl_gc_promotions {
    uint32_t gc;
    uint32_t count;
} hl_gc_promotions;
typedef struct hl_promotion {
    uint64_t id;
    uint32_t generation;  /* HL_GEN_* after the GC */
    uint32_t reserved;
} hl_promotion;
static_assert(sizeof(hl_gc_promotions) == 8 && sizeof(hl_promotion) == 16, "wire layout");

/* HL_REC_GC_END. */
typedef struct hl_gc_end {
    uint32_t gc;
    uint32_t flags;               /* HL_GC_FLAG_* */
    uint64_t end_mono_ns;         /* GarbageCollectionFinished */
    uint64_t resume_mono_ns;      /* RuntimeResumeFinished after this GC, or 0 if unknown */
    uint64_t size_after[HL_GEN_COUNT_GC]; /* bytes in use per generation 0..4, from the bounds */
    uint64_t survived_bytes;      /* bytes in moved + surviving ranges (condemned generations) */
    uint64_t moved_bytes;         /* bytes in moved ranges whose distance is not 0 */
    uint32_t moved_ranges;        /* MovedReferences2 ranges */
    uint32_t surviving_ranges;    /* SurvivingReferences2 ranges */
    uint64_t objects_live;        /* objects the model holds after the GC */
    uint64_t roots;               /* RootReferences2 entries reported at the end of this GC */
    uint64_t pinned_roots;        /* of those, with the PINNING flag */
    hl_counters counters;         /* cumulative */
    /* The census of gen0 (sampled mode, collector/census.h): pause time of the walk at this
     * GC's start and of remembering gen0 at its end, and the objects it counted; 0 without.
     * Its counts are the interval's exact ones only with HL_GC_FLAG_CENSUS. */
    uint64_t census_ns;
    uint64_t census_objects;
} hl_gc_end;
static_assert(sizeof(hl_gc_end) == 256, "wire layout");
#define HL_GC_END_V2_SIZE 208u /* counters of version 2, no census */
#define HL_GC_END_V3_SIZE 224u /* counters of version 3, no census */
#define HL_GC_END_V4_SIZE 240u /* counters of version 3, then census_ns and census_objects */
enum {
    HL_GC_FLAG_COMPACTING = 1, /* MovedReferences2 was reported */
    HL_GC_FLAG_INCOMPLETE = 2, /* the collector lost part of this GC's input */
    HL_GC_FLAG_CENSUS = 4,     /* the census counted this interval's small objects (exact) */
    /* Sampled mode following by handles (collector/follow.h): the runtime gave no survivor
     * ranges at this GC. moved_bytes and the range counts are unknown (0); survived_bytes is
     * the runtime's promoted bytes of the condemned generations (GCHeapStats) with
     * HL_GC_FLAG_SURVIVED_PROMOTED, unknown without; COMPACTING is the runtime's own
     * (GCGlobalHeapHistory), else whether a followed object moved. */
    HL_GC_FLAG_NO_RANGES = 8,
    HL_GC_FLAG_SURVIVED_PROMOTED = 16,
    /* A --snapshot policy (induced, gen2, every:N) was due at this GC and took no snapshot: the
     * snapshots taken and not yet applied held their bound (collector/snapshot_policy.h,
     * HL_SNAPSHOTS_HELD_MAX and HL_SNAPSHOT_WALKS_HELD_MAX_BYTES). Added in version 6
     * without a version change: an older writer ignores the flag. */
    HL_GC_FLAG_SNAPSHOT_SKIPPED = 32,
    /* A snapshot (a --snapshot policy's or a request's) was due at this GC and was not built:
     * an attach session's detach was past its bound (HL_REC_FINAL_SNAPSHOT_MISSED's
     * snapshots_skipped counts these GCs). Added in version 6 without a version change. */
    HL_GC_FLAG_SNAPSHOT_GIVEN_UP = 64,
};
/* ... that bound: at least this many snapshots held (taken, not yet applied) whose walks hold at
 * least this many bytes (collector/snapshot_policy.h). */
#define HL_SNAPSHOTS_HELD_MAX 4u
#define HL_SNAPSHOT_WALKS_HELD_MAX_BYTES (64ull << 20)

/* HL_REC_RUN_END: the program is shutting down; nothing follows. */
typedef struct hl_run_end {
    uint64_t end_unix_ns;
    uint64_t end_mono_ns;
    uint32_t gcs;          /* GCs recorded */
    uint32_t flags;        /* HL_RUN_END_FLAG_* (only in the end file; 0 on the stream) */
    uint64_t shutdown_mono_ns; /* when the runtime called Shutdown: end_mono_ns - this is the
                                * time the program's exit waited for the collector */
    hl_counters counters;  /* final */
    uint64_t program_peak_rss_bytes; /* the program's peak resident memory (VmHWM of
                                      * /proc/self/status, read at Shutdown), 0 if unknown */
} hl_run_end;
static_assert(sizeof(hl_run_end) == 168, "wire layout");
enum {
    /* The writer was given up because it took nothing for the stall limit (it was stopped or
     * frozen), not because the connection broke. */
    HL_RUN_END_FLAG_WRITER_STALLED = 1,
};
/* HL_REC_FINAL_SNAPSHOT_MISSED, just before RUN_END: an attach session's detach did not get
 * its last snapshot within its bound (collector/README.md, "Ending an attach session"), and
 * ended all the same. Added in version 6 without a version change: older readers skip it. */
typedef struct hl_final_snapshot_missed {
    uint32_t reason;            /* HL_FINAL_SNAPSHOT_* */
    uint32_t gcs_behind;        /* the program's GCs started but not yet applied by the collector
                                 * when it gave up (its backlog) */
    uint32_t waited_ms;         /* how long it waited for the snapshot's GC */
    uint32_t snapshots_skipped; /* snapshots of that backlog (--snapshot policies, requests)
                                 * not built, so that the detach ends */
} hl_final_snapshot_missed;
static_assert(sizeof(hl_final_snapshot_missed) == 16, "wire layout");
enum {
    /* The collector was still applying the program's own earlier GCs (they came faster than
     * it applied them: typically a snapshot at every GC.Collect of a program that calls it in
     * a loop). */
    HL_FINAL_SNAPSHOT_BEHIND = 1,
    /* The forced GC had not even started (ForceGC had not returned). */
    HL_FINAL_SNAPSHOT_NO_GC = 2,
    /* Given up before its bound: heaplens asked to detach at once (HL_CMD_DETACH_NOW: a second
     * Ctrl-C to `heaplens attach` during the detach). */
    HL_FINAL_SNAPSHOT_GIVEN_UP = 3,
};
/* HL_REC_FORCERS_LEFT, before RUN_END: an attach session's detach waited its bound for the
 * ForceGC threads the collector started to leave the runtime (collector/forcers.h) and went on
 * with some still inside. Nothing of the recording is missing for it; the runtime is asked to
 * unload the profiler while they are there (clr-profiler-facts.md 7.5). Added in version 6
 * without a version change: older readers skip it. */
typedef struct hl_forcers_left {
    uint32_t threads;   /* ForceGC threads still in the runtime when the wait ended */
    uint32_t waited_ms; /* how long the detach waited for them (its bound) */
} hl_forcers_left;
static_assert(sizeof(hl_forcers_left) == 8, "wire layout");
#define HL_RUN_END_V2_SIZE 136u /* counters of version 2, then program_peak_rss_bytes */
#define HL_RUN_END_V3_SIZE 152u /* counters of version 3 (to 5), then program_peak_rss_bytes */

/* ---- allocation samples and call stacks -------------------------------------------------
 * The runtime samples allocations (EventPipe, read in-process: collector/eventpipe.h) and walks
 * the managed stack of each sample. Frames and stacks are interned by the collector: a METHOD
 * record names a frame id, a STACK record lists a stack's frame ids; each is sent once, before
 * the first record that uses it (like TYPE). Samples of interval n are sent inside GC n, right
 * after its ALLOC_COUNTS (the tail interval's after the last GC_END, before RUN_END). */

/* HL_REC_METHOD. Followed by one hl_str: 'Namespace.Type.Method' (type and method generic
 * arguments where the runtime tells them), or '[native]' / '[unknown]'. */
typedef struct hl_method {
    uint32_t frame_id;    /* 1, 2, 3, ... dense; names are unique (one id per name) */
    uint32_t flags;       /* HL_METHOD_FLAG_* */
    uint64_t function_id; /* the runtime's FunctionID of the first IP named so, 0 if none */
} hl_method;
static_assert(sizeof(hl_method) == 16, "wire layout");
enum { HL_METHOD_FLAG_NATIVE = 1, HL_METHOD_FLAG_UNKNOWN = 2 };

/* HL_REC_COUNT_SITE (`--count`): one counted allocation site, or one matched method that was
 * not rewritten (kind HL_COUNT_KIND_REFUSED, il_offset its HL_COUNT_REFUSED_* reason), sent at
 * the session's end after the tail interval, before RUN_END. Followed by one hl_str:
 * 'module\nmethod\ntype' (module: the file name without directory; method:
 * 'Namespace.Type.Method'; type: the allocated type, for newarr the array type, empty for a
 * refused method). */
typedef struct hl_count_site {
    uint64_t count;         /* executions of the probe while the rewritten code ran */
    uint32_t il_offset;     /* of the allocating instruction in the original IL */
    uint32_t method_token;  /* the method's MethodDef token */
    uint8_t kind;           /* HL_COUNT_KIND_* */
    uint8_t flags;          /* HL_COUNT_FLAG_* */
    uint16_t reserved;
    uint32_t reserved2;
} hl_count_site;
static_assert(sizeof(hl_count_site) == 24, "wire layout");
enum {
    HL_COUNT_KIND_REFUSED = 0,
    HL_COUNT_KIND_NEWOBJ = 1,
    HL_COUNT_KIND_NEWARR = 2,
    HL_COUNT_KIND_BOX = 3,
};
enum {
    HL_COUNT_FLAG_MAY_ELIDE = 1, /* a box the JIT may fold away: the count may exceed the objects */
    HL_COUNT_FLAG_MAYBE = 2,     /* may allocate nothing: box of a generic parameter, or a type
                                  * the collector could not place (value or reference) */
};
enum {
    HL_COUNT_REFUSED_NO_BODY = 1,   /* abstract, extern, runtime-implemented: no IL */
    HL_COUNT_REFUSED_MALFORMED = 2, /* the IL did not decode */
    HL_COUNT_REFUSED_TOO_BIG = 3,   /* maxstack or size past what IL can say */
    HL_COUNT_REFUSED_NO_SITE = 4,   /* nothing to count (not an error) */
    HL_COUNT_REFUSED_REJIT = 5,     /* the runtime refused the recompilation (ReJITError) */
    HL_COUNT_REFUSED_MODULE = 6,    /* dynamic or collectible module, or metadata not writable */
    HL_COUNT_REFUSED_NO_MATCH = 7,  /* a pattern that matched no method: 'method' is the
                                     * pattern, 'type' the closest names, ', '-separated */
    HL_COUNT_REFUSED_NO_REJIT = 8,  /* the runtime refused ENABLE_REJIT (disabled after attach,
                                     * or too old): 'method' is the pattern, nothing counted */
};

/* HL_REC_STACK: `depth` uint32 frame ids follow, innermost (the allocating method) first. */
typedef struct hl_stack {
    uint32_t stack_id;    /* 1, 2, 3, ... dense */
    uint32_t depth;
} hl_stack;
static_assert(sizeof(hl_stack) == 8, "wire layout");

/* Where samples come from. */
enum {
    HL_SAMPLE_SOURCE_NONE = 0,
    HL_SAMPLE_SOURCE_ALLOCATION_SAMPLED = 1, /* .NET 10+: each byte sampled with p = 1/mean */
    HL_SAMPLE_SOURCE_ALLOCATION_TICK = 2,    /* GCAllocationTick: ~every 100 KB, biased */
    HL_SAMPLE_SOURCE_OBJECT_ALLOCATED = 3,   /* full mode: the collector samples in ObjectAllocated,
                                              * with AllocationSampled's statistics */
};

/* HL_REC_ALLOC_SAMPLES, inside GC `gc`: the samples of allocation interval `gc` (same numbering
 * as ALLOC_COUNTS). Sent at every GC while sampling is on, and for the tail (after the last
 * GC_END), with count 0 when the interval had none, so the cumulative counters always arrive.
 * `count` hl_alloc_sample follow. */
typedef struct hl_alloc_samples {
    uint32_t gc;
    uint32_t count;
    uint32_t source;              /* HL_SAMPLE_SOURCE_* */
    uint32_t samples_budgeted;    /* cumulative (saturating): of samples_seen, left out by the
                                   * sample budget: no stack, not sent; the kept samples of
                                   * their thread weigh for them (hl_alloc_sample.weight).
                                   * 0 in streams of before (they had none) */
    uint64_t mean_distance_bytes; /* AllocationSampled, ObjectAllocated: 102400; AllocationTick: 0 */
    uint64_t samples_seen;        /* cumulative: sample events the runtime delivered */
    uint64_t samples_dropped;     /* cumulative: of those, lost (buffer full, no slot, payload
                                   * not understood, writer gone) */
} hl_alloc_samples;
typedef struct hl_alloc_sample {
    uint64_t object_id;   /* allocation id of the sampled object (full mode), 0 if unknown */
    uint64_t size;        /* object size in bytes */
    uint64_t amount;      /* AllocationTick: bytes allocated since the previous tick
                           * (AllocationAmount64); AllocationSampled: SampledByteOffset */
    uint32_t type_id;
    uint32_t os_tid;
    uint32_t stack_id;    /* 0: no stack */
    uint8_t heap;         /* HL_GEN_0 (small-object heap), HL_GEN_LOH, HL_GEN_POH */
    uint8_t flags;        /* HL_SAMPLE_FLAG_* */
    uint16_t weight;      /* the sample budget's factor K: kept with probability 1/K, the
                           * sample stands for K samples (its estimates times K); 0 or 1: kept
                           * as drawn (collector/README.md, "The sample budget") */
} hl_alloc_sample;
static_assert(sizeof(hl_alloc_samples) == 40 && sizeof(hl_alloc_sample) == 40, "wire layout");
enum { HL_SAMPLE_FLAG_TRUNCATED = 1 }; /* the stack was cut (deeper than the collector keeps) */

/* ---- requests from the writer to the collector ------------------------------------------
 * The writer may send these on the same socket, in the other direction: an hl_rec_header with
 * one of these types and no payload. */
enum {
    HL_CMD_SNAPSHOT = 1, /* take a snapshot now: force a full GC and snapshot it */
    HL_CMD_DETACH = 2,   /* attach session: take the last snapshot, end the run (RUN_END) and
                          * detach from the process (ignored by a collector loaded at startup) */
    HL_CMD_DETACH_NOW = 3, /* as HL_CMD_DETACH, but without waiting for the last snapshot: one
                            * not yet taken is given up (HL_FINAL_SNAPSHOT_GIVEN_UP); may follow
                            * HL_CMD_DETACH. A collector without it skips it (an unknown type) */
};

/* HL_REC_CHECKPOINT: the program marked a moment by writing event 1, Checkpoint(string name),
 * of its EventSource named "HeapLens" (collector/README.md, checkpoints). Followed by one hl_str:
 * the name. Sent between GCs or inside GC after_gc + 1 before its counts; readers place it by
 * after_gc, not by its position in the stream. Added in version 4 without a version change:
 * older readers skip it by size. */
typedef struct hl_checkpoint {
    uint32_t after_gc;  /* GCs completed when it was written (0 = before the first GC) */
    uint32_t os_tid;    /* the thread that wrote it */
    uint64_t time_ns;   /* CLOCK_MONOTONIC, as every time in the stream */
} hl_checkpoint;
static_assert(sizeof(hl_checkpoint) == 16, "wire layout");

/* ---- GC handles ------------------------------------------------------------------------
 * HandleCreated / HandleDestroyed, in allocation order: `after_gc` is the number of GCs that
 * had completed when it happened (0 = before the first GC). The handle's kind is not told at
 * creation; it is learned from the root flags of the first GC that reports the handle
 * (HL_REC_GC_HANDLE_KINDS). A handle created and destroyed between two GCs keeps kind 0. */
enum {
    HL_HANDLE_UNKNOWN = 0,
    HL_HANDLE_STRONG = 1,
    HL_HANDLE_WEAK = 2,
    HL_HANDLE_PINNED = 3,
    HL_HANDLE_REFCOUNTED = 4,
};
typedef struct hl_handle_created {
    uint64_t handle_id;   /* GCHandleID: the handle's address */
    uint64_t object_id;   /* its initial target, 0 if none or unknown to the model */
    uint32_t after_gc;
    uint32_t reserved;
} hl_handle_created;
typedef struct hl_handle_destroyed {
    uint64_t handle_id;
    uint32_t after_gc;
    uint32_t reserved;
} hl_handle_destroyed;
static_assert(sizeof(hl_handle_created) == 24 && sizeof(hl_handle_destroyed) == 16, "wire layout");

/* HL_REC_GC_HANDLES_FREED, inside GC `gc`: handles the runtime freed during GC `gc` without a
 * HandleDestroyed: those of WeakReference / WeakReference<T> objects that died in it (the GC
 * eagerly finalizes them: EagerFinalized -> FinalizeWeakReference destroys the handle). GC
 * `gc` - 1 was their last GC. Any HandleCreated at the same address comes after this record.
 * `count` uint64 handle ids follow. */
typedef struct hl_gc_handles_freed {
    uint32_t gc;
    uint32_t count;
} hl_gc_handles_freed;
static_assert(sizeof(hl_gc_handles_freed) == 8, "wire layout");

/* HL_REC_GC_HANDLE_KINDS, inside GC `gc`: handles whose kind this GC's roots revealed.
 * `count` hl_handle_kind follow. */
typedef struct hl_gc_handle_kinds {
    uint32_t gc;
    uint32_t count;
} hl_gc_handle_kinds;
typedef struct hl_handle_kind {
    uint64_t handle_id;
    uint32_t kind;        /* HL_HANDLE_* */
    uint32_t reserved;
} hl_handle_kind;
static_assert(sizeof(hl_gc_handle_kinds) == 8 && sizeof(hl_handle_kind) == 16, "wire layout");

/* ---- objects first seen in a heap walk ----------------------------------------------------
 * Live objects the runtime's walk reports but the model never saw allocated (allocated before
 * the collector loaded, or whose allocation record was dropped). They get ids from a range of
 * their own, >= HL_DISCOVERED_ID_BASE, so they can never be taken for allocations.
 * HL_REC_DISCOVERED inside GC `gc`: `count` hl_discovered follow; each is alive after `gc` in
 * `generation`. From then on they are ordinary objects (deaths, promotions). */
#define HL_DISCOVERED_ID_BASE (1ull << 48)

/* The first index in [lo, hi) of the ascending ids whose id is >= `id` (hi if none): the one
 * search over sorted object ids that the snapshot blocks, the graphs and the views share. */
static inline uint32_t hl_ids_lower_bound(const uint64_t *ids, uint32_t lo, uint32_t hi,
                                          uint64_t id) {
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (ids[mid] < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}
typedef struct hl_discovered_head {
    uint32_t gc;
    uint32_t count;
} hl_discovered_head;
typedef struct hl_discovered {
    uint64_t id;
    uint64_t size;
    uint32_t type_id;
    uint32_t generation;
    uint32_t flags;       /* HL_DISCOVERED_* */
    uint32_t reserved;
} hl_discovered;
static_assert(sizeof(hl_discovered_head) == 8 && sizeof(hl_discovered) == 32, "wire layout");
/* UNREPORTED: allocated by a runtime path that never calls ObjectAllocated, not lost by heaplens.
 * .NET 10's RuntimeTypeHandle.InternalAllocNoChecks_FastPath allocates delegates (Delegate.Combine
 * / Remove: `a + b`, a second `event +=`) and boxes (CastHelpers.Box / Box_Nullable: `(object)(int?)i`,
 * a struct boxed in shared generic code) without it. The collector flags an object the model
 * never saw when its class derives from System.MulticastDelegate or System.ValueType. */
enum { HL_DISCOVERED_UNREPORTED = 1 };

/* ---- heap snapshots ----------------------------------------------------------------------
 * A snapshot is the whole live heap at the end of GC `gc`, sent inside that GC (after its
 * GC_START, before its GC_END): SNAPSHOT_START, then OBJECTS / REFS / ROOTS records in any
 * number, then SNAPSHOT_END. A snapshot without its SNAPSHOT_END is incomplete and discarded. */
enum {
    HL_SNAPSHOT_INDUCED = 1,   /* the program called GC.Collect */
    HL_SNAPSHOT_EVERY = 2,     /* --snapshot every:N */
    HL_SNAPSHOT_GEN2 = 3,      /* --snapshot gen2 */
    HL_SNAPSHOT_REQUESTED = 4, /* heaplens snapshot PID */
    HL_SNAPSHOT_IMPORTED = 5,  /* heaplens import: the heap dump file's graph */
    /* Snapshot triggers (collector/snapshot_policy.h): the collector asked for the snapshot
     * after a GC that met the condition, or when the time came. */
    HL_SNAPSHOT_GEN2_GROWTH = 6, /* --snapshot gen2-growth:PCT */
    HL_SNAPSHOT_HEAP = 7,        /* --snapshot heap:SIZE */
    HL_SNAPSHOT_LIMIT = 8,       /* --snapshot limit:PCT */
    HL_SNAPSHOT_PAUSE = 9,       /* --snapshot pause:MS */
    HL_SNAPSHOT_TIME = 10,       /* --snapshot every:Ns */
};
typedef struct hl_snapshot_start {
    uint32_t snapshot;    /* 1, 2, 3, ... */
    uint32_t gc;
    uint32_t trigger;     /* HL_SNAPSHOT_* */
    /* HL_SNAPSHOT_REQUESTED: 1 + the HL_CMD_SNAPSHOT commands the collector had taken when this
     * GC took the request, so that the writer answers a `heaplens snapshot` client only with a
     * snapshot its own command asked for (store_control.c). 0: not known (another trigger, or
     * a collector before this field, which was `reserved`, 0). */
    uint32_t commands;
} hl_snapshot_start;
static_assert(sizeof(hl_snapshot_start) == 16, "wire layout");

/* HL_REC_SNAPSHOT_REASON, inside a snapshot (after its SNAPSHOT_START, before its END) that a
 * trigger took: head hl_snapshot_batch (`count` 0), then one hl_str, the trigger's reason in
 * words ("gen2 41.2 MiB after GC 12, +63% since snapshot 2"). Added in version 4 without a
 * version change: older readers skip it by size. */

typedef struct hl_snapshot_batch { /* head of OBJECTS, REFS and ROOTS records */
    uint32_t snapshot;
    uint32_t count;
} hl_snapshot_batch;
static_assert(sizeof(hl_snapshot_batch) == 8, "wire layout");

enum { HL_SNAP_OBJ_FROZEN = 1, HL_SNAP_OBJ_DISCOVERED = 2,
       HL_SNAP_OBJ_UNREPORTED = 4 /* with DISCOVERED: HL_DISCOVERED_UNREPORTED */ };
typedef struct hl_snapshot_object {
    uint64_t id;
    uint32_t generation;  /* HL_GEN_* */
    uint32_t flags;       /* HL_SNAP_OBJ_* */
} hl_snapshot_object;
static_assert(sizeof(hl_snapshot_object) == 16, "wire layout");

typedef struct hl_snapshot_ref { /* one reference: `from` has a field that points to `to` */
    uint64_t from;
    uint64_t to;
} hl_snapshot_ref;
static_assert(sizeof(hl_snapshot_ref) == 16, "wire layout");

/* HL_REC_SNAPSHOT_REF_FIELDS (head hl_snapshot_batch, then `count` uint32): which field of its
 * `from` object holds each reference, one value per item of the snapshot's REFS records in the
 * order they were sent. Objects: the field number (HL_REC_FIELD of the object's type); arrays:
 * the element index; HL_FIELD_UNKNOWN: not known (no slot held it, or the runtime would not
 * describe the class). A writer that does not know the record skips it (the
 * references stay, without fields). Added in stream version 4 without changing its number: it
 * is optional. */

/* HL_REC_FIELD: names instance field `field` (1, 2, 3 ... in offset order, inherited fields
 * first: the numbers REF_FIELDS uses) of type `type_id`. Followed by one hl_str: the field's name
 * ("_items"; an auto-property's backing field as the property: "Instance"). Sent once per type,
 * before the first snapshot whose REF_FIELDS use it. */
#define HL_FIELD_UNKNOWN UINT32_MAX
typedef struct hl_field {
    uint32_t type_id;
    uint32_t field;
} hl_field;
static_assert(sizeof(hl_field) == 8, "wire layout");

/* HL_REC_STATIC: names static field `static_id` (1, 2, 3 ... numbered by the collector) of type
 * `type_id`. Followed by one hl_str: the field's name (an auto-property's as the property). */
typedef struct hl_static {
    uint32_t static_id;
    uint32_t type_id;
} hl_static;
static_assert(sizeof(hl_static) == 8, "wire layout");

/* HL_REC_STATIC_THREAD: static `static_id` (an HL_REC_STATIC sent before, naming the field) is
 * the slot of a thread static ([ThreadStatic]) of the thread whose OS id is `os_tid`: each
 * thread's slot is a static of its own (GetThreadStaticAddress2 inside the snapshot's GC).
 * Optional. */
typedef struct hl_static_thread {
    uint32_t static_id;
    uint32_t os_tid;
} hl_static_thread;
static_assert(sizeof(hl_static_thread) == 8, "wire layout");

/* HL_REC_ROOT_METHOD: names the method of stack roots whose root_id (HL_REC_SNAPSHOT_ROOTS) is
 * `function_id`. Followed by one hl_str: 'Namespace.Type.Method' (as HL_REC_METHOD). Sent once
 * per FunctionID, before the snapshot whose roots use it. Optional. */
typedef struct hl_root_method {
    uint64_t function_id;
} hl_root_method;
static_assert(sizeof(hl_root_method) == 8, "wire layout");

/* HL_REC_SNAPSHOT_STATICS (head hl_snapshot_batch, then `count` of these): the reference of
 * `object_id` held in its field (or element) `field` — as in REF_FIELDS — is static field
 * `static_id`: the runtime keeps statics in slots of its own objects (Object[] arrays held by
 * handles), and the slot's address is the static's (GetAppDomainStaticAddress). Optional: a
 * writer that does not know it keeps the references unnamed. */
typedef struct hl_snapshot_static {
    uint64_t object_id;
    uint32_t field;
    uint32_t static_id;
} hl_snapshot_static;
static_assert(sizeof(hl_snapshot_static) == 16, "wire layout");

/* HL_REC_SNAPSHOT_STRINGS (head hl_snapshot_batch, then `count` of these): the value of each
 * System.String of the snapshot, read during the GC's heap walk. `chars` holds its first
 * `n_chars` UTF-16 code units: min(length, HL_STRING_CHARS), or none when the recording keeps
 * no characters (record/attach --no-strings). Optional, like REF_FIELDS. */
#define HL_STRING_CHARS 64
typedef struct hl_snapshot_string {
    uint64_t object_id;
    uint64_t hash;     /* FNV-1a 64 of all its UTF-16 code units (little-endian bytes) */
    uint32_t length;   /* in UTF-16 code units */
    uint32_t n_chars;
    uint16_t chars[HL_STRING_CHARS];
} hl_snapshot_string;
static_assert(sizeof(hl_snapshot_string) == 152, "wire layout");

/* HL_REC_SNAPSHOT_COLLECTIONS (head hl_snapshot_batch, then `count` of these): each
 * List<T>/Queue<T>/Stack<T>/Dictionary<K,V>/HashSet<T> of the snapshot whose class the collector
 * knew when the walk ran (collector/collections.h): its own count and its storage's capacity,
 * read during the GC's heap walk. Optional, like REF_FIELDS. */
typedef struct hl_snapshot_collection {
    uint64_t object_id;
    uint32_t count;    /* List/Queue/Stack _size; Dictionary/HashSet _count - _freeCount */
    uint32_t capacity; /* the length of _items/_array/_buckets; 0 when null */
} hl_snapshot_collection;
static_assert(sizeof(hl_snapshot_collection) == 16, "wire layout");

/* Root kinds and flags as COR_PRF_GC_ROOT_KIND / COR_PRF_GC_ROOT_FLAGS. */
enum { HL_ROOT_OTHER = 0, HL_ROOT_STACK = 1, HL_ROOT_FINALIZER = 2, HL_ROOT_HANDLE = 3 };
enum { HL_ROOT_PINNING = 1, HL_ROOT_WEAK = 2, HL_ROOT_INTERIOR = 4, HL_ROOT_REFCOUNTED = 8 };
typedef struct hl_snapshot_root {
    uint64_t object_id;
    uint64_t root_id;     /* HANDLE: the handle id; STACK: the FunctionID of the frame, or 0 */
    uint32_t kind;        /* HL_ROOT_* */
    uint32_t flags;       /* HL_ROOT_* flag bits */
} hl_snapshot_root;
static_assert(sizeof(hl_snapshot_root) == 24, "wire layout");

/* HL_REC_SNAPSHOT_ROOT_THREADS (head hl_snapshot_batch, then `count` of these), after the
 * snapshot's ROOTS: the stack roots of `object_id` are on the stack of the thread whose OS id is
 * `os_tid` — the one thread whose stack held the object's address inside the snapshot's GC
 * (collector/stack_roots.h). Objects whose thread is not known are not listed. Optional. */
typedef struct hl_snapshot_root_thread {
    uint64_t object_id;
    uint32_t os_tid;
    uint32_t reserved; /* 0 */
} hl_snapshot_root_thread;
static_assert(sizeof(hl_snapshot_root_thread) == 16, "wire layout");

typedef struct hl_snapshot_end {
    uint32_t snapshot;
    uint32_t gc;
    uint64_t objects;          /* objects in the snapshot (frozen ones included) */
    uint64_t refs;
    uint64_t roots;
    uint64_t bytes;            /* sum of object sizes */
    uint64_t model_missing;    /* alive in the model, absent from the runtime's walk */
    uint64_t model_extra;      /* in the walk, unknown to the model (sent as DISCOVERED), and
                                * not explained by a runtime path known not to report them */
    uint64_t frozen;           /* NonGC objects included because something references them */
    uint64_t unresolved;       /* references and roots to addresses nobody knows (dropped) */
    uint64_t walk_ns;          /* time the runtime spent walking (first to last ObjectReferences) */
    uint64_t model_unreported; /* in the walk, unknown to the model, allocated by a runtime path
                                * without ObjectAllocated (HL_DISCOVERED_UNREPORTED) */
} hl_snapshot_end;
static_assert(sizeof(hl_snapshot_end) == 88, "wire layout");

#endif /* HEAPLENS_WIRE_H */
