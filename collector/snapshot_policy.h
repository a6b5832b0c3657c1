/* snapshot_policy.h — which moments take a heap snapshot: the `--snapshot` policies, parsed, and
 * the snapshot triggers decided from what each GC left (pure: no runtime, no allocation, no I/O
 * but hl_memory_limit_read; the clock is a parameter).
 *
 * The policy text is what `heaplens record --snapshot` (repeatable) and `attach --snapshot` pass
 * to the collector (HEAPLENS_SNAPSHOT, the attach client data's `snapshot=`): items joined by
 * ',':
 *   induced            every GC the program induced (GC.Collect): the default
 *   gen2               every full GC
 *   every:N            every Nth GC
 *   none               no snapshot but those asked for (`heaplens snapshot PID`)
 *   gen2-growth:PCT    after a full GC whose gen2 grew by PCT % since the last snapshot (before
 *                      any snapshot: since the first full GC)
 *   heap:SIZE          after a GC that left the heap (all generations) at SIZE or more
 *                      (bytes, or with K, M, G: KiB, MiB, GiB)
 *   limit:PCT          after a GC that left the heap at PCT % of the memory limit or more
 *                      (hl_memory_limit_read)
 *   pause:MS           after a GC that paused the program longer than MS milliseconds
 *   every:Ns           every N seconds (a number followed by 's')
 *   max-snapshots:N    (from --max-snapshots) at most N snapshots taken by policy
 *   min-interval:S     (from --snapshot-interval) at least S seconds between two snapshots of
 *                      the conditions gen2-growth, heap, limit and pause (default 10)
 *
 * Where each is decided: induced, gen2 and every:N at the GC's start, on its GC thread (the
 * snapshot is that GC's walk). The conditions and every:Ns on the collector thread, from the
 * GCs it applies and its clock: it then asks for a snapshot as `heaplens snapshot PID` does (a
 * GC forced from a thread of its own), so no runtime thread does more than read a flag.
 * heap and limit fire once when the heap reaches their threshold and again only after a GC left
 * it below; a condition met within the minimum interval waits for the first GC after it that
 * still meets it (a pause is that GC's own). A GC that took a snapshot is not judged by its
 * pause (the snapshot's walk is part of it). */
#ifndef HEAPLENS_SNAPSHOT_POLICY_H
#define HEAPLENS_SNAPSHOT_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wire/hl_wire.h"

#define HL_SNAPSHOT_POLICY_MAX 256 /* bytes of policy text, its NUL included */
#define HL_SNAPSHOT_MIN_INTERVAL_DEFAULT_S 10
#define HL_SNAPSHOT_REASON_MAX 160 /* bytes of a trigger's reason, its NUL included */

typedef struct hl_snapshot_policy {
    bool induced;              /* GC.Collect */
    bool gen2;                 /* every full GC */
    uint32_t every_gcs;        /* every:N; 0 = off */
    uint32_t gen2_growth_pct;  /* 0 = off */
    uint64_t heap_bytes;       /* 0 = off */
    uint32_t limit_pct;        /* 0 = off */
    uint64_t pause_ns;         /* 0 = off */
    uint64_t every_ns;         /* every:Ns; 0 = off */
    uint32_t max_snapshots;    /* 0 = no cap */
    uint64_t min_interval_ns;
    bool walks_unbounded;      /* HEAPLENS_SNAPSHOT_WALKS_BOUND=off (tests): no bound below */
} hl_snapshot_policy;

/* The snapshots a policy takes at a GC's start (induced, gen2, every:N) wait for none: a program
 * whose GCs come faster than the collector applies its snapshots (GC.Collect in a loop) would
 * have the collector hold a heap walk per GC, each as large as the heap's objects and their
 * references (measured: 7.4 GiB held on examples/GcLoop, 300,000 live objects, GC.Collect(0)
 * every 5 ms), and its GCs would wait inside their pause for room in the GC queue. So such a GC
 * takes no snapshot while HL_SNAPSHOTS_HELD_MAX (4) snapshots or more are taken and not yet
 * applied and their walks hold HL_SNAPSHOT_WALKS_HELD_MAX_BYTES (64 MiB) or more (wire/hl_wire.h;
 * the note says both); it is counted and said (gcs flag, counter snapshots_skipped_queued).
 * Both, because either alone fails a program: a count alone lets a small heap's snapshots (a
 * test's GC.Collect(); GC.Collect();) be skipped, bytes alone a large heap's checkpoints
 * (MidLife's million objects walk 88 MB: its next GC.Collect, the collector still applying the
 * last, was skipped). With walks of W bytes the collector then holds at most 4 of them, or 64
 * MiB + W when 4 are less. Explicit requests (`heaplens snapshot PID`, the final snapshot of an
 * attach) and the triggers (one pending at a time already) are not bounded by it. Tests of a
 * collector that has fallen behind (the end of an attach session on a GC.Collect loop) switch it
 * off with HEAPLENS_SNAPSHOT_WALKS_BOUND=off in the program's environment: off, nothing is
 * skipped, so the note's bound is always the one that held. */

/* What a GC's start tells the policy (on its GC thread). */
typedef struct hl_snapshot_gc_start {
    uint32_t gc;               /* ordinal from 1 */
    uint32_t generation;       /* highest condemned generation */
    bool induced;              /* the program called GC.Collect */
    uint32_t taken;            /* snapshots the policies took so far (max-snapshots) */
    uint32_t snapshots_held;   /* snapshots taken and not yet applied */
    uint64_t walks_held_bytes; /* bytes of their walks */
} hl_snapshot_gc_start;

/* The snapshot a policy takes at this GC (HL_SNAPSHOT_INDUCED, _GEN2, _EVERY) or 0. `skipped`
 * is set when one was due and not taken because the snapshots held reached their bound (above;
 * not when --max-snapshots was reached: that is the user's). */
uint32_t hl_snapshot_policy_at_gc(const hl_snapshot_policy *p, const hl_snapshot_gc_start *g,
                                  bool *skipped);

/* Parses `text` (NULL or empty: the default, induced). Returns true, or false with one line in
 * `why` (what item was wrong and what is taken). `out` is always set (the default on failure). */
bool hl_snapshot_policy_parse(const char *text, hl_snapshot_policy *out, char *why, size_t why_len);

/* Whether any condition or time trigger is on (the collector thread has work to do). */
bool hl_snapshot_policy_triggers(const hl_snapshot_policy *p);

/* The conditions' state between GCs (collector thread). Zero it, then set `start_ns` (the
 * session's start: every:Ns counts from there) and `limit_bytes`/`limit_source` (limit:). */
typedef struct hl_trigger_state {
    uint64_t start_ns;
    uint64_t limit_bytes;
    char limit_source[64];     /* where limit_bytes came from, for the reason */
    bool gen2_base_known;
    uint64_t gen2_base;        /* gen2 bytes after the last snapshot, or the first full GC */
    uint32_t gen2_base_snapshot; /* that snapshot (0: the first full GC, gen2_base_gc) */
    uint32_t gen2_base_gc;
    bool heap_fired, limit_fired; /* fired, and no GC has left the heap below since */
    uint64_t last_condition_ns;  /* the last condition trigger that fired; 0 = none */
    uint64_t last_time_ns;       /* the last every:Ns snapshot (start_ns before) */
} hl_trigger_state;

/* What a GC left, as the collector thread applied it. */
typedef struct hl_trigger_gc {
    uint32_t gc;
    uint32_t generation;       /* highest condemned generation: 2 is a full GC */
    uint32_t snapshot;         /* the snapshot this GC took (its number), 0 = none */
    uint64_t gen2_bytes;       /* gen2 after the GC, from its bounds */
    uint64_t heap_bytes;       /* all generations after the GC (0..POH), from its bounds */
    uint64_t pause_ns;         /* suspension to resumption, as `heaplens gcs` shows it */
} hl_trigger_gc;

/* After each GC applied: the trigger that fires (HL_SNAPSHOT_GEN2_GROWTH, _HEAP, _LIMIT,
 * _PAUSE) with its reason in `reason`, or 0. `taken` is how many snapshots the policy has taken
 * (max-snapshots); UINT32_MAX while an earlier one is pending: nothing fires, the state still
 * follows the GC (baseline, re-arming). The caller asks for the snapshot. */
uint32_t hl_triggers_after_gc(hl_trigger_state *s, const hl_snapshot_policy *p,
                              const hl_trigger_gc *g, uint64_t now_ns, uint32_t taken,
                              char *reason, size_t reason_len);

/* Between GCs: HL_SNAPSHOT_TIME with its reason when every:Ns is due, or 0. `last_snapshot`:
 * the number of the last snapshot taken (0: none), for the reason. */
uint32_t hl_triggers_tick(hl_trigger_state *s, const hl_snapshot_policy *p, uint64_t now_ns,
                          uint32_t taken, uint32_t last_snapshot, char *reason, size_t reason_len);

/* The memory limit the process lives under, in bytes, with where it came from in `source`:
 * the cgroup's (v2 memory.max, the smallest of the process's cgroup and its parents; v1
 * memory.limit_in_bytes), else the machine's physical memory. `root` prefixes every path
 * (tests; "" for the real files). Reads files: the collector thread only. */
uint64_t hl_memory_limit_read(const char *root, char *source, size_t source_len);

/* The GC's own hard limit from the environment value of DOTNET_GCHeapHardLimit (hexadecimal, as
 * every DOTNET_ GC setting), 0 when `text` is NULL or not a number. */
uint64_t hl_heap_hard_limit_parse(const char *text);

/* "41.2 MiB": bytes in binary units, into `buf`. */
void hl_bytes_format(uint64_t bytes, char *buf, size_t len);

#endif /* HEAPLENS_SNAPSHOT_POLICY_H */
