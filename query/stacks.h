/* stacks.h — allocation call stacks of a recording, aggregated: the sites that allocate most.
 *
 * Reads the tables frames, stacks, stack_frames, alloc_samples and sampling (store/SCHEMA.md,
 * "Allocation samples and stacks"). Every sample stands for est_count allocations and est_bytes
 * bytes (the collector's estimator); a site is one (stack, type) pair and its count and bytes
 * are the sums of its samples' estimates. Used by `heaplens stacks` (text, JSON, speedscope)
 * and by `heaplens report` (the flame graph and the top allocation sites), so they agree.
 *
 *   stacks_load ── one GROUP BY over alloc_samples (filtered by type, GC interval and fate)
 *        │         → sites, sorted; then each kept site's frames by stack_frames' key
 *        ├──▶ cmd_stacks.c        the text / JSON rows, --speedscope
 *        └──▶ report_data.c       stacks_flame_json + the top sites
 *
 * Errors: GError ** last (QUERY_ERROR_*), one line. Single-threaded.
 */
#ifndef HEAPLENS_QUERY_STACKS_H
#define HEAPLENS_QUERY_STACKS_H

#include "query/estimates.h"

#include <glib.h>
#include <jansson.h>
#include <sqlite3.h>
#include <stdint.h>

/* Which sampled allocations count. */
typedef enum {
    STACKS_BY_ALLOCATED, /* every sample */
    STACKS_BY_SURVIVED,  /* samples whose object was promoted to gen2 (object_generations) */
    STACKS_BY_MIDLIFE,   /* ... and then died there (objects.died_gc set): mid-life crisis */
} stacks_by;

typedef enum { STACKS_SORT_BYTES, STACKS_SORT_COUNT } stacks_sort;

typedef struct stacks_query {
    const char *type; /* full type name, or NULL for every type */
    stacks_by by;
    int64_t gc_from, gc_to; /* allocation intervals (alloc_samples.gc), inclusive; 0 = open */
    stacks_sort sort;
    guint top;              /* keep the first `top` sites (frames loaded only for those); 0 = all */
} stacks_query;

/* One allocation site: a stack and the type allocated there. */
typedef struct stacks_site {
    int64_t stack_id; /* -1: the samples had no stack (alloc_samples.stack_id NULL) */
    const char *type; /* borrowed from the result */
    double count, bytes;
    int64_t samples;
    guint depth;      /* frames loaded: 0 for a site without a stack, or beyond `top` */
    guint *frames;    /* depth indexes into stacks_result.frame_names, innermost first */
} stacks_site;

typedef struct stacks_result {
    query_estimates sampling; /* the sampling row (query_estimates_get) */
    GArray *sites;           /* stacks_site, heaviest first (by the query's sort); at most top */
    guint sites_all;         /* sites before --top */
    GPtrArray *frame_names;  /* char *, the frames used by the kept sites */
    double total_count, total_bytes; /* over all sites that matched, also beyond top */
    int64_t total_samples;
    GStringChunk *strings;
    GHashTable *frame_index; /* frame id -> 1 + index into frame_names */
} stacks_result;

/* TRUE when `db` holds allocation samples: the tables exist and the sampling row is there. */
gboolean stacks_present(sqlite3 *db, GError **error);

/* The one line a command prints when stacks_present is FALSE. Free with g_free. */
char *stacks_absent_message_new(const char *path);

/* The sites matching `q`. The recording must have samples (stacks_present). NULL and an error
 * when reading fails. */
stacks_result *stacks_load(sqlite3 *db, const stacks_query *q, GError **error);
void stacks_result_free(stacks_result *r); /* accepts NULL */

/* What `heaplens stacks` shows of the recording at `path` (open as `db`): without samples a
 * QUERY_ERROR_NOT_FOUND error (stacks_absent_message_new); `type` (NULL: every type) resolved
 * as snapshot_types_resolve does, into q->type (an interned full name); --gc N or --interval
 * A..B (`gc_text`, `interval`, at most one; both NULL: every interval) parsed into q->gc_from
 * and q->gc_to (the tail interval after the last GC is last + 1); then stacks_load. */
stacks_result *stacks_find(sqlite3 *db, const char *path, const char *type, const char *gc_text,
                           const char *interval, stacks_query *q, GError **error);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(stacks_result, stacks_result_free)

/* The name of frame `i` of site `s` (i < s->depth). */
const char *stacks_site_frame(const stacks_result *r, const stacks_site *s, guint i);

/* "estimated from 1,234 samples, mean distance 100 KiB (AllocationSampled)" — and ", biased:
 * ..." for a biased source. Free with g_free. */
char *stacks_sampling_text_new(const query_estimates *s);
/* An estimate as a whole number (estimates are sums of real-valued weights), saturated. */
int64_t stacks_round(double v);

/* The sampling metadata as JSON (new reference):
 * {"source","mean_distance_bytes","biased","samples","samples_dropped","estimated":true}. */
json_t *stacks_sampling_json(const query_estimates *s);

/* The sites as a flame graph tree, outermost frame at the top and the type as the leaf:
 * {"name":"all","bytes":N,"count":N,"children":[{"name","bytes","count","children"}...]},
 * children heaviest first; a leaf (the type) also has "type":true. Sites without a stack hang
 * under a "[no stack captured]" frame. Nodes with less than `min_fraction` of the total bytes are left
 * out (their bytes stay in their parent's). New reference. Needs every site's frames (top 0). */
json_t *stacks_flame_json(const stacks_result *r, double min_fraction);

/* A site as JSON: {"type","frames":[innermost first],"count","bytes","samples"}. */
json_t *stacks_site_json(const stacks_result *r, const stacks_site *s);

/* The frame name shown for a site without a stack. */
#define STACKS_NO_STACK_FRAME "[no stack captured]"

#endif /* HEAPLENS_QUERY_STACKS_H */
