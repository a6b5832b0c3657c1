/* checkpoints.h — the moments a program marked (table checkpoints: EventSource "HeapLens",
 * Checkpoint(name)), for `check`, `allocations --between`, `snapshots` and `info`.
 *
 * A checkpoint's gc is the number of GCs finished when the program wrote it: what is known of
 * the heap "at" a checkpoint is its state after that GC, and allocations between two
 * checkpoints are counted per GC interval (query/README.md, checkpoints). A recording made
 * before checkpoints existed (schema 6 and older) has none. Errors: GError ** last, one line.
 * Single-threaded.
 */
#ifndef HEAPLENS_QUERY_CHECKPOINTS_H
#define HEAPLENS_QUERY_CHECKPOINTS_H

#include <glib.h>
#include <jansson.h>
#include <sqlite3.h>
#include <stdint.h>

typedef struct checkpoint_info {
    char *name;      /* owned */
    int64_t gc;      /* GCs finished when it was written */
    int64_t time_ns; /* CLOCK_MONOTONIC, the clock of gcs.start_ns */
    int64_t thread;  /* OS thread id */
    int64_t since_start_ns; /* time_ns - run.start_mono_ns (0 when the run has no start) */
} checkpoint_info;

/* Every checkpoint in the order written; a new array (its clear function frees the names),
 * empty when none. NULL on error. */
GArray *checkpoint_list_new(sqlite3 *db, GError **error);
/* The checkpoints as a JSON array of {name, gc, time_ns, since_start_ns, thread}. NULL on
 * error. */
json_t *checkpoint_list_json(sqlite3 *db, GError **error);

/* The first checkpoint named `name` into *out (free out->name). QUERY_ERROR_NOT_FOUND naming
 * the checkpoints the recording has when there is none of that name; `tool` starts the
 * message. */
gboolean checkpoint_find(sqlite3 *db, const char *path, const char *tool, const char *name,
                         checkpoint_info *out, GError **error);

/* The snapshot at checkpoint `name`: the one taken at the GC the checkpoint was written after
 * (a program that calls GC.Collect() right before its checkpoint has one there under the
 * default --snapshot induced). QUERY_ERROR_NOT_FOUND, naming the GC, when the checkpoint is
 * unknown or no snapshot was taken at its GC. */
gboolean checkpoint_snapshot(sqlite3 *db, const char *path, const char *tool, const char *name,
                             int64_t *snapshot, GError **error);

/* "FROM..TO": the allocation intervals between two checkpoints: GC intervals from..to
 * inclusive, where from = FROM's gc + 1 and to = TO's gc (the allocations made after the last GC
 * before FROM began and before the last GC before TO began). QUERY_ERROR_USAGE for a bad range,
 * TO before FROM, or no GC between them (nothing could be told apart). */
gboolean checkpoint_range(sqlite3 *db, const char *path, const char *tool, const char *range,
                          int64_t *from_gc, int64_t *to_gc, GError **error);

#endif /* HEAPLENS_QUERY_CHECKPOINTS_H */
