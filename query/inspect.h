/* inspect.h — automatic inspections of one heap snapshot (the analysis behind `heaplens
 * inspect`, also shown by `heaplens report`): common waste found without a question asked, each
 * finding with the bytes it wastes or holds, ranked. The kinds and how each is found:
 *
 *   duplicate-strings  a value held by at least `min_duplicates` String objects (same length and
 *                      hash of the contents: snapshot_strings); wasted = all but one copy;
 *                      "origin": "event-metadata" when every copy is a parameter name held by a
 *                      RuntimeParameterInfo and the snapshot holds the runtime's
 *                      NativeRuntimeEventSource: its events' metadata, built by reflection when
 *                      heaplens' own EventPipe session enabled Microsoft-Windows-DotNETRuntime
 *                      (125 "ClrInstanceID" in every recorded .NET 10 program; not the program's)
 *   empty-collections  List<T>, Queue<T>, Stack<T> whose storage is an empty array, and
 *                      Dictionary<K,V>, HashSet<T> without entries (never filled: the runtime
 *                      gives them storage at the first add), per type; an empty collection
 *                      holds nothing of its own, so it retains its own bytes
 *                      (schema 8: by their own count where the heap walk read it,
 *                      snapshot_collections); ConcurrentDictionary<K,V> whose buckets array
 *                      holds no node
 *   sparse             reference arrays (not arrays of structs: types.flags 8) with at most
 *                      `max_fill` of their elements set, per type
 *                      (a List's backing array beyond its count included); wasted = the null
 *                      elements' 8 bytes each
 *   event-handlers     multicast delegates (a field `_invocationList`) with at least
 *                      `min_subscribers` handlers, with the owner (a static, or the type and
 *                      field that hold the delegate) and the handlers' target types
 *   under-filled       (schema 8) collections holding something but at most `max_fill` of their
 *                      capacity by their own count (List/Queue/Stack _size of the storage's
 *                      length, Dictionary/HashSet _count - _freeCount of _buckets' length), per
 *                      type; wasted = the unused share of the arrays each references, less their
 *                      headers
 *   finalizable        (schema 8) objects of classes with a finalizer (types.flags 16), per type,
 *                      with `queued`: those in the runtime's f-reachable queue (roots of kind
 *                      finalizer: unreachable but for it, their finalizer not run yet)
 *   finalized-reachable objects that were in the f-reachable queue at an earlier snapshot and
 *                      are alive here and out of it: their finalizer ran (or runs) and something
 *                      made them reachable again. Only objects queued at a snapshot's GC are
 *                      known: the runtime reports the queue only at the GCs that walk the heap
 *   pinned             objects in gen0 or gen1 a pinning root holds, per type and generation
 *   loh-free           the large-object heap's bytes in use after the snapshot's GC that no
 *                      live object covers (fragmentation)
 *
 * Errors: GError ** last, one line. */
#ifndef HEAPLENS_QUERY_INSPECT_H
#define HEAPLENS_QUERY_INSPECT_H

#include "query/progress.h"
#include "query/query.h"
#include "query/snapshot_graph.h"

#include <glib.h>
#include <jansson.h>
#include <sqlite3.h>
#include <stdint.h>

/* The thresholds: Eclipse MAT's where it has one (duplicate strings: 10; fill ratio: 0.2). */
#define INSPECT_MIN_DUPLICATES 10
#define INSPECT_MAX_FILL 0.21
#define INSPECT_MIN_SUBSCRIBERS 100

typedef struct inspect_options {
    int64_t min_duplicates;
    double max_fill;
    int64_t min_subscribers;
} inspect_options;

/* The inspections of the snapshot `snapshot_text` names (NULL: the last) of the recording at
 * `path` (open as `db`): {"snapshot":S,"gc":G,"findings":[{"kind":...,...,"rank_bytes":B}, ...]},
 * the findings by rank_bytes (what each wastes or holds), largest first. New reference. A
 * recording older than schema 7 has no string values: no duplicate-strings finding; older than
 * schema 8, no under-filled or finalizable finding (finalized-reachable needs only roots).
 * JSON of the kinds added in schema 8: {"kind":"under-filled","type":T,"count":N,"fill":F,
 * "wasted":W,"elements":E,"capacity":C}, {"kind":"finalizable","type":T,"count":N,"bytes":B,
 * "queued":Q}, {"kind":"finalized-reachable","type":T,"count":N,"bytes":B}.
 *
 * Computed once per snapshot and options: read from the file when an earlier command stored
 * them (table inspections, store/SCHEMA.md; rows of another heaplens version, or of a snapshot
 * whose snapshots row changed since, are computed again), else computed — on a schema 8 file in
 * one pass over the snapshot's blocks, on an older one by a pass of SQL per inspection — and kept
 * for inspect_commit (a TEMP table of `db`: a second call reads them there). `progress` (may be
 * NULL) shows the pass ("inspecting snapshot S") or the read ("stored inspections of snapshot
 * S"). */
json_t *inspect_snapshot(sqlite3 *db, const char *path, const char *snapshot_text,
                         const inspect_options *o, query_progress *progress, GError **error);

/* Writes the inspections this command computed on `db` into the file at `path`, in one
 * transaction, after checking the file (store_db_damage_new); call it last, after every read and
 * the output. TRUE when written or nothing was kept; TRUE with a new one-line *note when the file
 * cannot be written (read-only, or still being recorded: the next command computes them again);
 * FALSE with *error when the file is damaged (QUERY_ERROR_DAMAGED) or the write failed: nothing
 * was written. */
gboolean inspect_commit(sqlite3 *db, const char *path, query_progress *progress, char **note,
                        GError **error);

/* Internal to inspect.c and inspect_store.c. The findings stored for snapshot `info` and
 * options `o` (this command's, then the file's): *findings a new reference, NULL when none is
 * stored; a row that is not what heaplens writes is damage. */
gboolean inspect_stored_read(sqlite3 *db, const snapshot_info *info, const inspect_options *o,
                             json_t **findings, GError **error);
/* Keeps `findings` of `info` and `o` for inspect_commit (TEMP table inspections of `db`). */
gboolean inspect_keep(sqlite3 *db, const snapshot_info *info, const inspect_options *o,
                      const json_t *findings, GError **error);

#endif /* HEAPLENS_QUERY_INSPECT_H */
