/* census.h — exact small-object allocation counts without ObjectAllocated: a census of gen0 at
 * every GC start (sampled mode).
 *
 * At GarbageCollectionStarted the runtime is suspended and every thread's allocation context
 * has been fixed (its unused tail made a free object) before the callback: gen0 is walkable
 * object by object, and everything in it was allocated since the previous GC except what that
 * GC left in gen0 (survivors it did not promote, pinned regions demoted to gen0). So:
 *   GC thread, GarbageCollectionStarted: walk every gen0 range of the bounds linearly (method
 *     table at +0 with the low bits masked; base size at MT+4, component size in the low 16
 *     bits of the flags at MT+0 when bit 31 is set, length at object+8; the next object at the
 *     size rounded up to 8), skip free objects (their method table, learned once: the runtime's
 *     GetClassFromObject gives ClassID 0 for one) and the objects remembered from the previous
 *     GC, and count per ClassID (= the method table): objects and bytes.
 *   GC thread, GarbageCollectionFinished: remember the objects in gen0 after the GC as spans,
 *     runs of objects with no free one between them (range by range in address order:
 *     sorted), to jump over at the next walk: those objects are still there, unchanged, and
 *     new ones go only after them or into the free objects between them. Nothing moves
 *     between the two callbacks.
 * The first time a method table is seen, its computed size is checked against GetObjectSize2:
 * a difference (a layout this code does not know) turns the census off for the run. No other
 * call into the runtime: per object the walk reads the header, the method table's two words
 * and an array's length, counts in the method table's slot of a hash table, and compares its
 * address once with the lane's next stop (its piece's end or the next remembered span); four
 * pieces of gen0 (regions) are walked side by side so that their dependent loads overlap, each
 * prefetching ahead in its own stream.
 * Helper threads: a gen0 of 2 MiB or more is shared with up to `threads` - 1 native threads
 * of our own (started at the first such walk, all signals blocked, asleep on a futex between
 * GCs), woken in the callback and waited for before it returns: ranges are cut into pieces
 * (at an object found by its method table, proved by the lane before landing on it; a wrong
 * cut makes the GC thread walk everything again alone) that every thread takes one at a time,
 * counting into a table of its own, added after. A helper never calls the runtime: method
 * tables it saw first are checked by the GC thread after the walk. A helper the scheduler has
 * not run by the time every piece is taken is not waited for, and a walk goes with helpers or
 * alone, whichever paused less per MiB lately (median of the last 5; the other tried every 8th
 * walk). See
 * collector/README.md, "The census", Cost.
 * Not walked (the GC's census marked incomplete): a GC that starts while the runtime is not
 * suspended for it (never with background GC off, as every mode has it) and a GC whose bounds
 * were lost. A GC the runtime runs without GarbageCollectionStarted leaves its objects in gen0
 * (counted by the next walk) or promotes them unseen (lost to the census).
 * HEAPLENS_CENSUS_THREADS=N: at most N threads walk (1: the GC thread alone); default the CPUs
 * this process may run on, at most 8. The helpers are kept off the CPU of the thread that walks
 * (their affinity: the process's CPUs but that one), so that none is woken there to walk in its
 * place. HEAPLENS_CENSUS_FLOOR=1 (benchmark): times a plain read of gen0 beside each walk
 * (hl_census.floor). */
#ifndef HEAPLENS_CENSUS_H
#define HEAPLENS_CENSUS_H

#include <pthread.h>
#include <sched.h> /* cpu_set_t (glibc defines the type without _GNU_SOURCE) */
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "collector/clr_info.h"
#include "collector/u64map.h"
#include "heapmodel/hm_model.h"

/* One class's allocations in one GC interval, found by the census. */
typedef struct hl_census_count {
    ClassID class_id;
    uint64_t count, bytes;
} hl_census_count;

/* One walk's counts per method table: open addressing (linear probing, load <= 1/2) keyed by
 * the method table's address, its home slot the address bits above the slot's size (method
 * tables are a few dozen bytes or more apart). The walk looks at the home slot and the one
 * after it inline, and only further in a call (census.c type_find): a type whose home another
 * took is then as fast as the others (csc.dll: 1-7% of each walk's objects missed their home,
 * a few dozen ns each through the call). Slots 0 and 1 hold a guard key and types[cap] stays
 * empty (census.c TYPE_GUARD). `used` lists the slots of the walk's n types, so that clearing
 * and reading the table costs the types of the walk, not its capacity (a table grows with a
 * program's most types in one walk and never shrinks). During a walk of less than 384 MiB
 * `count` holds count << 40 | bytes (one add per object), taken apart after it. The free
 * objects' method table has a slot like any other, never reported. check_at: an object of a
 * method table not yet checked against the runtime, found by a thread that may not ask it
 * (checked after the walk); 0 when checked. */
typedef struct hl_census_table {
    struct hl_census_type { uint64_t mt, count, bytes, check_at; } *types; /* cap + 1 slots */
    uint32_t *used; /* the n slots in use, in the order their types were met */
    size_t cap, n;  /* cap: a power of 2 */
} hl_census_table;

/* A part of one gen0 range, walked as one lane: a whole range, or one cut at an object found
 * by its method table (trusted false until the lane before it lands on it: census.c,
 * "Splitting"). */
typedef struct hl_census_piece {
    uint64_t start, end;
    bool trusted;
} hl_census_piece;

typedef struct hl_census_helper hl_census_helper; /* a walking thread of our own (census.c) */

/* Objects in gen0 after a GC, one after another with no free object between them: from the
 * first one's address to the end of the last. */
typedef struct hl_census_span {
    uint64_t start, end;
} hl_census_span;

typedef struct hl_census {
    bool on;               /* sampled mode, and no layout surprise so far */
    bool broken;           /* a size differed from GetObjectSize2: off for the run */
    uint64_t free_mt;      /* the free objects' method table, 0 until learned */
    hl_u64map checked;     /* method tables whose size was checked against the runtime */
    hl_census_table tab;   /* this walk's counts (the GC thread's, the helpers' added) */
    hl_census_span *old;   /* gen0's objects after the last GC, sorted, never adjacent within a
                            * range */
    size_t n_old, cap_old;
    /* While remembering: each piece's spans, joined into `old` in address order after. */
    struct hl_census_spans { hl_census_span *v; size_t n, cap; } *piece_spans;
    size_t cap_piece_spans;
    bool old_valid;        /* `old` describes the previous GC's end */
    /* The walk's pieces, taken one at a time by every walking thread (next_piece). */
    hl_census_piece *pieces;
    size_t n_pieces, cap_pieces;
    _Atomic size_t next_piece;
    _Atomic bool failed;   /* a thread's lane did not parse (or a cut was wrong): walk again */
    bool packed;           /* this walk counts an object and its bytes in one word (census.c): */
    uint64_t pack_limit;   /* when gen0 is smaller than this (PACK_LIMIT; a test lowers it) */
    unsigned threads;      /* threads that may walk: this one and helpers (the CPUs less one,
                            * at most 8, or HEAPLENS_CENSUS_THREADS) */
    uint64_t piece_min;    /* no piece cut shorter (bytes); a thread per CENSUS_LANES of them */
    hl_census_helper *helpers;
    unsigned n_helpers;
    bool helpers_failed;   /* pthread_create failed once: the GC thread walks alone */
    cpu_set_t cpus;        /* the CPUs this process may run on (at init) */
    int helpers_cpu;       /* the CPU the helpers were last kept off (-2: not yet) */
    /* The pause per MiB of gen0 of the last walks alone [0] and with helpers [1], newest
     * first (0: none yet), and the walks since the kind that paused more was last tried. */
#define CENSUS_PAUSES 5
    uint64_t pause_per_mib[2][CENSUS_PAUSES];
    unsigned since_retry;
    /* walks cut into pieces; redone whole on one thread; walked with helpers */
    uint64_t walks_split, walks_redone, walks_helped;
    /* HEAPLENS_CENSUS_FLOOR=1 (benchmark): what reading gen0 costs with no work per object,
     * against the walk. Each counting walk is timed by the GC thread's CPU clock, and so is a
     * plain read of one word per cache line of the same gen0 ranges (prefetched as the walk
     * prefetches; remembered spans, which the walk jumps over, included), made before the walk
     * at even walks and after it at odd ones, so that neither always finds gen0 warm from the
     * other. Not in census_ns. Totals over the run (HEAPLENS_STATS prints them): the GC
     * thread's CPU in the walks and each helper's apart (a helper times its own part), so that
     * walking alone and with helpers compare in CPU as well as in wall time (the walks' pause),
     * and the objects counted. */
    bool floor;
    uint64_t floor_walks, floor_walk_cpu_ns, floor_read_cpu_ns, floor_bytes;
    uint64_t floor_walk_wall_ns, floor_objects;
    _Atomic uint64_t floor_helper_cpu_ns;
} hl_census;

void hl_census_init(hl_census *s, bool on);
/* Stops and joins the helper threads, frees everything. */
void hl_census_release(hl_census *s);

/* The result of one walk, handed to the GC's capture. */
typedef struct hl_census_result {
    hl_census_count *counts; /* hl_mem_malloc'd; the capture frees it */
    size_t n;
    uint64_t objects;        /* objects counted (free and remembered ones not) */
    uint64_t walk_ns;        /* time in the pause */
    bool done;               /* false: no census for this interval (see above) */
} hl_census_result;

/* GC thread, GarbageCollectionStarted, runtime suspended: walks gen0 of `before`. */
hl_census_result hl_census_walk(hl_census *s, ICorProfilerInfo *info, const hm_gen_range *before,
                                size_t n_before);
/* GC thread, GarbageCollectionFinished: remembers gen0's objects of `after` as spans (NULL, 0:
 * unknown, the next walk is then not exact and says so). Returns the time taken. */
uint64_t hl_census_remember(hl_census *s, ICorProfilerInfo *info, const hm_gen_range *after,
                            size_t n_after);

/* The i-th helper thread (i < n_helpers; exposed for the unit test). */
pthread_t hl_census_helper_thread(const hl_census *s, unsigned i);

/* The object size the GC steps by, from the method table (exposed for the unit test). */
uint64_t hl_census_object_size(const void *object);

#endif /* HEAPLENS_CENSUS_H */
