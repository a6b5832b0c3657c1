/* survivors.h — the objects alive right after a GC, grouped by generation and type, or by age
 * (GCs survived), generation and type (the analysis behind `heaplens survivors`).
 *
 * Errors: GError ** last, one line: QUERY_ERROR_USAGE for a bad --gc, QUERY_ERROR_NOT_FOUND for
 * a GC that is not in the recording (or a recording without GCs). Single-threaded.
 */
#ifndef HEAPLENS_QUERY_SURVIVORS_H
#define HEAPLENS_QUERY_SURVIVORS_H

#include <glib.h>
#include <sqlite3.h>
#include <stdint.h>

typedef struct query_survivor_group {
    int64_t age; /* GCs survived (by age only; 0 otherwise) */
    int64_t generation;
    char *type; /* owned; "<type N>" for a type without a name */
    int64_t count, bytes;
} query_survivor_group;

typedef struct query_survivors {
    int64_t gc;
    gboolean estimated; /* counts and bytes are estimates from followed samples (sampled mode,
                         * no snapshot at this GC: query_estimates_survivors) */
    gboolean ages_estimated; /* by age, in a sampled recording that follows its samples or an
                              * attach recording: most objects were named by a snapshot's heap
                              * walk and count their GCs from it (lower bounds), even at a
                              * snapshot's GC */
    GArray *groups; /* query_survivor_group: by generation, then bytes (or by age first) */
    /* over all groups, also when only the top ones are kept (0 when none survived) */
    int64_t total_count, total_bytes, total_groups;
} query_survivors;

/* The objects of the recording at `path` (open as `db`) alive right after GC `gc_text` (the
 * --gc value of `heaplens survivors`, parsed here; NULL: the last GC), grouped by generation and
 * type, or with `by_age` by GCs survived first; `top` > 0 keeps the `top` groups with the most
 * bytes. Fills *s (release with query_survivors_clear). */
gboolean query_survivors_read(sqlite3 *db, const char *path, const char *gc_text,
                              gboolean by_age, uint64_t top, query_survivors *s, GError **error);
void query_survivors_clear(query_survivors *s);

#endif /* HEAPLENS_QUERY_SURVIVORS_H */
