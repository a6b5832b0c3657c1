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
    int64_t samples_budgeted;    /* counters.samples_budgeted: of `samples`, left out by the
                                  * sample budget (the kept ones weigh for them); 0: none */
    gboolean followed;           /* run.flags 'samples-followed' (sampled mode): between
                                  * snapshots only the samples' objects are followed, survivors
                                  * per type are estimates (query_estimates_survivors) */
    gboolean census;             /* small objects counted per type and GC interval by the census
                                  * of gen0 (schema 6, alloc_counts flags 2): exact per type */
    gboolean census_off;         /* run.flags 'census-off': recorded without the census
                                  * (`record`/`attach --census off`, HEAPLENS_CENSUS=off), so
                                  * small objects are estimated from the samples alone */
    int64_t census_missing;      /* with the census: GC intervals it did not count
                                  * (gcs.census_objects NULL: the first GC after an attach),
                                  * estimated like the tail after the last GC */
} query_estimates;

/* Reads run.mode and the sampling row. A recording without either (an older file) is full. */
gboolean query_estimates_get(sqlite3 *db, query_estimates *e, GError **error);
void query_estimates_clear(query_estimates *e);
G_DEFINE_AUTO_CLEANUP_CLEAR_FUNC(query_estimates, query_estimates_clear)

/* Whether the objects alive after GC `gc` are estimates: in a sampled recording that follows its
 * samples (run.flags 'samples-followed'), at every GC that took no snapshot (store.h
 * STORE_SURVIVOR_SAMPLE_ON weights them); exact otherwise (a snapshot names every live object,
 * and full and attach recordings follow every object). */
gboolean query_estimates_survivors(sqlite3 *db, int64_t gc, gboolean *estimated, GError **error);

/* How many objects survived their first GC, and their bytes (one row, two integers), in a
 * sampled recording that follows its samples: the large and pinned objects counted exactly
 * (alloc_counts.survived) plus the weights of the followed samples whose object survived a GC
 * (an estimate). Other recordings: alloc_counts.survived, or one objects row per survivor. */
#define QUERY_ESTIMATES_FOLLOWED_SURVIVED_SQL                                                     \
    "SELECT CAST(round((SELECT total(survived) FROM alloc_counts) + (SELECT total(est_count)"   \
    " FROM alloc_samples WHERE heap = 0 AND object_id IS NOT NULL)) AS INTEGER),"              \
    " CAST(round((SELECT total(survived_bytes) FROM alloc_counts) + (SELECT total(est_bytes)"  \
    " FROM alloc_samples WHERE heap = 0 AND object_id IS NOT NULL)) AS INTEGER)"

/* What survived a GC in a recording that follows its samples (run.flags 'samples-followed'),
 * as `info` and the record/attach summary give it. The followed samples' estimate
 * (QUERY_ESTIMATES_FOLLOWED_SURVIVED_SQL) can fall far below what the snapshots show — a type
 * that grows by a few hundred bytes a second between two snapshots of an attach session may get
 * no sample at all —, so the snapshots' lower bound is read too: every object of a snapshot
 * (frozen ones left out) was allocated while recording and is alive after that snapshot's GC;
 * in an attach session those of the first snapshot (the heap found at the attach) do not count,
 * so a later snapshot proves at least its objects less the first one's. Bytes likewise, from
 * snapshots.bytes (the runtime's walk: the frozen objects it walked included). The figure shown
 * is the snapshots' when they prove more objects than the samples estimate (count and bytes
 * both), else the estimate: never below what the snapshots prove; or, when every GC's snapshot
 * named every survivor once (QUERY_SURVIVED_ROWS_SQL_HEAD), the exact count. */
typedef struct query_survived {
    int64_t count, bytes;               /* the figure to show: one of the two below */
    int64_t estimated, estimated_bytes; /* from the followed samples (and LOH/POH, exact) */
    int64_t proven, proven_bytes;       /* at least this many, by the snapshots (0: none) */
    gboolean at_least;                  /* count is the snapshots' (above the estimate): a lower
                                         * bound, not an estimate */
    gboolean exact;                     /* count is every survivor, named (below): neither an
                                         * estimate nor a bound */
    gboolean named;                     /* every GC's snapshot named every survivor: the count
                                         * is exact, or at least and at most `at_most` */
    int64_t at_most;                    /* named: the rows, each survivor one or more (those
                                         * left in gen0 at a snapshot, below); else -1 */
} query_survived;

/* The objects rows prove more than the largest snapshot: every row (frozen objects left out; in
 * an attach session those of the first snapshot's GC, the heap found there) is an object
 * allocated while recording that survived a GC, and rows name distinct objects but for one
 * case: an object a snapshot found still in gen0 (a pinned one, its neighbours) is named for
 * that snapshot only, and again with a new id by the next one if it still lives. So at least
 * the rows less the objects in gen0 after each snapshot's GC but the last survived a GC. When
 * every GC had a snapshot (none lost or incomplete), every survivor got a row: with no object
 * left in gen0 at a snapshot but the last, the rows are the exact count (record --mode sampled
 * --snapshot every:1; an attach session never: what its first GC found includes objects
 * allocated after the attach, not told apart). Read from the first read's summary
 * (object_spans), else from the packed rows (object_chunks: the record/attach summary), else
 * not at all (a file an older heaplens built: the largest snapshot's bound alone). */
#define QUERY_SURVIVED_ROWS_SQL_HEAD                                                               \
    "WITH snapshot_gcs(gc) AS (SELECT gc FROM snapshots"                                           \
    "                          WHERE gc < (SELECT max(gc) FROM snapshots))"

/* Reads them for a recording with `e->followed` (`e` from query_estimates_get). `bytes` FALSE:
 * the counts only (the record/attach summary, which gives no bytes: without the first read's
 * summary the rows' bytes cost a pass over every packed object, 1.6 s of CPU for MidLife's
 * 1.1M), and the bytes of a bound or count from the rows are 0. */
gboolean query_survived_read(sqlite3 *db, const query_estimates *e, gboolean bytes,
                             query_survived *s, GError **error);

/* The one-line note of a sampled or attach recording ("attach mode: allocation figures are
 * ESTIMATES from 1,234 allocation samples (AllocationSampled, unbiased) for small objects; ...");
 * NULL for a full recording. Free with g_free. */
char *query_estimates_note_new(const query_estimates *e);

/* The sampling in a few words: "1,234 samples (AllocationSampled, unbiased, mean distance
 * 100.0 KiB), 0 dropped"; "none" without samples. Free with g_free. */
char *query_estimates_sampling_text_new(const query_estimates *e);

/* {"mode", "estimated", "exact_per_type", "census_off" (recorded with --census off), "note"
 * (null for full), "sampling": {"source", "mean_distance_bytes", "biased", "samples",
 * "samples_dropped"} or null}: the head every JSON output of allocation figures carries.
 * "estimated" says that some allocation figure of the document is an estimate; as made here,
 * that the recording estimates some from samples (e->estimated: per thread and per stack, which
 * the report gives); a command that gives fewer figures sets it for its own (allocations, info:
 * query_totals_estimated), and rows carry their own. New reference. */
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

/* Every allocation, exact where counted and estimated where not, as a sub-select in parentheses
 * with the columns gc, type_id, thread, heap, count, bytes (estimates as reals): what
 * query_estimates_sql_new sums without a thread (per type and per interval exact where the census
 * counted). A static string. */
const char *query_estimates_source_sql(const query_estimates *e);

/* ---- the one allocation total ----------------------------------------------------------------
 *
 * What `info`, `allocations` and `stacks` give as the recording's allocation total, and the
 * terms it is made of, so that the three agree and say the same words:
 *   count = reported + unreported + census + estimated
 * reported: counted one by one from the runtime's reports (alloc_counts flags 0; in sampled and
 * attach mode the large and pinned objects only); unreported: allocations the runtime made
 * without reporting them, counted in gen0 at each GC (flags 1, full mode with record
 * --handles); census: small objects counted exactly by the census of gen0 (flags 2, sampled and
 * attach mode); estimated: small objects estimated from the allocation samples where nothing
 * counted them (rounded per type, as `allocations` shows them: its rows add up to the total).
 * Not in the total: `lost`, allocations the runtime reported that were dropped before they were
 * counted (counters.allocs_dropped), and `unstored`, those the collector sent and the writer
 * never stored (a recording that ended early: the writer stopped or was given up with records
 * on their way): seen = reported + lost + unstored. */
typedef struct query_totals {
    int64_t count, bytes;
    int64_t reported, reported_bytes;
    int64_t unreported, unreported_bytes;
    int64_t census, census_bytes;
    int64_t estimated, estimated_bytes;
    int64_t seen; /* counters.allocs_seen; QUERY_NULL (query.h) when absent */
    int64_t lost; /* counters.allocs_dropped; 0 when absent or not a count */
    int64_t unstored; /* seen - reported - lost when above 0 (seen known), else 0 */
} query_totals;

/* Reads the totals of the recording (`e` from query_estimates_get). */
gboolean query_totals_read(sqlite3 *db, const query_estimates *e, query_totals *t, GError **error);

/* Whether the total `t` is an estimate in part: the samples' part where no census counted
 * (t->estimated, rounded per type: 0 when the census counted every sampled interval), or every
 * small object of a recording without the census. With the census and nothing to estimate the
 * total is exact even though its recording has samples (JSON heads said "estimated": true of
 * rows and totals that were all exact). */
gboolean query_totals_estimated(const query_totals *t, const query_estimates *e);

/* The terms of the total in words, one line each ("10,975,224 (686.7 MiB) reported by the
 * runtime one by one", "+ 12,719 (406.1 KiB) made by the runtime without reporting them ...",
 * "not in the total: ..."), for a total that is more than the runtime's reports (an empty array
 * when every allocation was reported and counted and none lost). A new array of strings. */
GPtrArray *query_totals_terms_new(const query_totals *t, const query_estimates *e);

/* {"count","bytes","reported":{"count","bytes"},"unreported":{...},"census":{...},
 *  "estimated":{...},"seen":N|null,"lost":N,"unstored":N,"terms":["...", ...]} (new
 * reference). */
json_t *query_totals_json(const query_totals *t, const query_estimates *e);

#endif /* HEAPLENS_QUERY_ESTIMATES_H */
