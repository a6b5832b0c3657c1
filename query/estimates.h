/* estimates.h — exact or estimated: what a recording's allocation figures are, and the one way
 * every command (allocations, info, report, the record/attach summary) says so.
 *
 * A full recording counts every allocation (alloc_counts, from ObjectAllocated). Sampled and
 * attach recordings (run.mode 'sampled' / 'attach') run without ObjectAllocated: alloc_counts
 * then holds only the allocations the runtime still reports one by one (LOH always, POH in
 * sampled mode), and small-object allocations are estimated from the runtime's allocation
 * samples (alloc_samples: est_count, est_bytes per sample; the sampling row says from which
 * event). GCs, survivors and snapshots stay exact in every mode (store/SCHEMA.md).
 */
#ifndef HEAPLENS_QUERY_ESTIMATES_H
#define HEAPLENS_QUERY_ESTIMATES_H

#include <glib.h>
#include <jansson.h>
#include <sqlite3.h>
#include <stdint.h>

typedef struct query_estimates {
    char *mode;                  /* run.mode; NULL when unknown */
    gboolean uncounted;          /* mode 'sampled' or 'attach': small objects are not counted */
    gboolean attach;             /* mode 'attach': pinned (POH) objects are not counted either */
    gboolean estimated;          /* uncounted and samples > 0: allocation figures are estimates */
    char *source;                /* sampling.source ('AllocationSampled', 'AllocationTick'); NULL: no row */
    int64_t mean_distance_bytes; /* -1 when unknown */
    gboolean biased;
    int64_t samples, samples_dropped;
    gboolean census;             /* small objects counted per type and GC interval by the census
                                  * of gen0 (schema 6, alloc_counts flags 2): exact per type */
    int64_t census_missing;      /* with the census: GC intervals it did not count
                                  * (gcs.census_objects NULL: the first GC after an attach),
                                  * estimated like the tail after the last GC */
} query_estimates;

/* Reads run.mode and the sampling row. A recording without either (an older file) is full. */
gboolean query_estimates_get(sqlite3 *db, query_estimates *e, GError **error);
void query_estimates_clear(query_estimates *e);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(query_estimates, query_estimates_clear)

/* The one-line note of a sampled or attach recording ("attach mode: allocation figures are
 * ESTIMATES from 1,234 allocation samples (AllocationSampled, unbiased) for small objects; ...");
 * NULL for a full recording. Free with g_free. */
char *query_estimates_note_new(const query_estimates *e);

/* The sampling in a few words: "1,234 samples (AllocationSampled, unbiased, mean distance
 * 100.0 KiB), 0 dropped"; "none" without samples. Free with g_free. */
char *query_estimates_sampling_text_new(const query_estimates *e);

/* {"mode", "estimated", "note" (null for full), "sampling": {"source", "mean_distance_bytes",
 * "biased", "samples", "samples_dropped"} or null}: the head every JSON output carries. New
 * reference. */
json_t *query_estimates_json(const query_estimates *e);

/* SQL that sums the allocations, exact or estimated as the recording allows. With the census
 * (store.h STORE_ALLOCATIONS_EXACT_SQL / _SPREAD_SQL): exact per type and interval, plus the
 * samples of the intervals no census counted; a `where` or a group that names the column
 * thread spreads the census's counts over the threads by their samples (estimates adding up to
 * the exact totals, each in its sample's interval); a `where` on gc alone keeps them exact.
 * Without it:
 *   SELECT <group>, count, bytes FROM <every allocation> [WHERE <where>] GROUP BY <group>
 * count and bytes (named so) are integers (estimates rounded after summing). Full recordings and
 * recordings without samples: alloc_counts as it is. Estimated ones: alloc_counts (the large
 * and pinned objects, exact) plus the estimates of the small objects from alloc_samples (and of
 * pinned ones in attach mode), so nothing is counted twice. The source has the columns gc
 * (allocation interval), type_id, thread, heap, count, bytes. `where` may be NULL; `group` is a
 * column list ("type_id", "gc, type_id"). Free with g_free. */
char *query_estimates_sql_new(const query_estimates *e, const char *group, const char *where);

#endif /* HEAPLENS_QUERY_ESTIMATES_H */
