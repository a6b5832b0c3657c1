/* allocations.h — allocated count and bytes per type, exact or estimated as the recording allows
 * (estimates.h), of every thread or of some (the analysis behind `heaplens allocations`).
 *
 * Errors: GError ** last, one line (QUERY_ERROR_NOT_FOUND for a thread that is not in the
 * recording). Single-threaded.
 */
#ifndef HEAPLENS_QUERY_ALLOCATIONS_H
#define HEAPLENS_QUERY_ALLOCATIONS_H

#include "query/estimates.h"

#include <glib.h>
#include <sqlite3.h>
#include <stdint.h>

typedef struct query_allocation {
    int64_t type_id;
    int64_t count;
    int64_t bytes;
    /* Of count and bytes, what the samples estimate (sampled and attach recordings: after the
     * last GC, in an interval no census counted, every small object without a census, and
     * every figure of one thread); 0 where every allocation was counted. */
    int64_t estimated_count;
    int64_t estimated_bytes;
    char *name; /* owned; "<type N>" for a type id without a name, as the views say */
} query_allocation;

/* The allocations of the recording at `path` (open as `db`) per type, most bytes first (then
 * most objects, then by name): of the threads `thread` names (an OS thread id of a thread in the
 * recording, or else the name of one or more threads), of every thread when NULL. Fills
 * *estimates (query_estimates_clear) and *totals: the recording's allocation total and its terms
 * (query_totals_read, the same as `info` and `stacks`; of every thread also with `thread`). A
 * new array of query_allocation (its free function releases the rows); NULL on error. */
GArray *query_allocations_read(sqlite3 *db, const char *path, const char *thread,
                               query_estimates *estimates, query_totals *totals, GError **error);

/* The same for the allocation intervals from_gc..to_gc only (inclusive; interval n: after GC
 * n-1 began, before GC n began; the tail is the last GC + 1): `allocations --between`. `totals`
 * (the whole recording's, as above) may be NULL. */
GArray *query_allocations_read_between(sqlite3 *db, const char *path, const char *thread,
                                       int64_t from_gc, int64_t to_gc,
                                       query_estimates *estimates, query_totals *totals,
                                       GError **error);

/* How many types the recording allocated, as `allocations` lists them (info's "types
 * allocated", the summary line's "of T types"; not every type named), into *types. FALSE on
 * error. */
gboolean query_allocation_types_count(sqlite3 *db, const char *path, int64_t *types,
                                      GError **error);

#endif /* HEAPLENS_QUERY_ALLOCATIONS_H */
