/* info.h — what `heaplens info` says of a recording: the run row, the counters and the totals
 * (GCs, allocations, survivors, objects, types, threads, file size), exact or estimated as the
 * recording allows (estimates.h).
 *
 * Errors: GError ** last, one line. Single-threaded.
 */
#ifndef HEAPLENS_QUERY_INFO_H
#define HEAPLENS_QUERY_INFO_H

#include "query/estimates.h"

#include <glib.h>
#include <jansson.h>
#include <sqlite3.h>
#include <stdint.h>

typedef struct query_info_totals {
    int64_t gcs, gcs_gen[3], gcs_induced, gcs_compacting, gcs_incomplete, pause_ns;
    int64_t allocations, allocation_bytes, survived, survived_bytes;
    /* Sampled and attach recordings that follow their samples (query_survived_read): survived
     * is the followed samples' estimate, or what the snapshots prove when that is more
     * (survived_at_least; survived_proven: the snapshots' figure either way, -1 in other
     * recordings, whose survived counts every survivor), or every survivor when every GC had
     * a snapshot that named them all (survived_exact). */
    gboolean survived_at_least, survived_exact;
    int64_t survived_at_most; /* every GC's snapshot named them: at most this many; else -1 */
    int64_t survived_proven;
    int64_t objects, object_bytes, objects_alive;
    /* types: every type the recording names (allocated, or found by a snapshot or a field);
     * allocation_types: those `allocations` lists, the summary line's "of T types". */
    int64_t types, allocation_types, threads;
    int64_t file_bytes; /* -1 when the file cannot be stat'ed */
} query_info_totals;

/* A column of the run row or a counter, as stored (the schema may grow columns). */
typedef struct query_info_value {
    char *name;   /* owned */
    char *text;   /* owned; the value as text, NULL when NULL */
    int64_t value; /* the value as an integer */
    json_t *json; /* owned: integer, real, string or null, as stored */
} query_info_value;

typedef struct query_info {
    query_estimates estimates;
    GArray *run;      /* query_info_value: the run row's columns but id, in order */
    GArray *counters; /* query_info_value: by name */
    query_info_totals totals;
    query_totals allocations; /* the allocation total and its terms (totals.allocations is
                               * allocations.count) */
    json_t *unrecorded; /* query_info_unrecorded_json */
    json_t *checkpoints; /* checkpoint_list_json (checkpoints.h): the program's checkpoints */
} query_info;

/* The run row's columns but id, in order; the counters, by name: new arrays of
 * query_info_value (their free function releases the values); NULL on error. `heaplens report`
 * shows them too. */
GArray *query_info_run_read(sqlite3 *db, GError **error);
GArray *query_info_counters_read(sqlite3 *db, GError **error);
/* The values as one JSON object, name -> value as stored (new reference). */
json_t *query_info_values_json(const GArray *values);

/* The .NET processes started under the program that declined to be recorded (record without
 * --children; table unrecorded_processes): [{"pid":N,"command":"..."}], empty when none or when
 * the file has no such table (new reference; never fails). */
json_t *query_info_unrecorded_json(sqlite3 *db);

/* Reads what `heaplens info` says of the recording at `path` (open as `db`) into *info
 * (release with query_info_clear, also after a failure). */
gboolean query_info_read(sqlite3 *db, const char *path, query_info *info, GError **error);
void query_info_clear(query_info *info);

#endif /* HEAPLENS_QUERY_INFO_H */
