/* stacks.h — allocation call stacks of a recording, aggregated: the sites that allocate most,
 * and the methods (inclusive and exclusive allocations, callers and callees of one).
 *
 * Reads the tables frames, stacks, stack_frames, alloc_samples and sampling (store/SCHEMA.md,
 * "Allocation samples and stacks"), and alloc_counts for the totals. Every sample stands for
 * est_count allocations and est_bytes bytes (the collector's estimator); a site is one stack,
 * recursion folded, and the type allocated there. Its count and bytes are the sums of its
 * samples' estimates, scaled per type (unless q->unscaled) so that each type's sites add up to
 * the type's allocations as `heaplens allocations` gives them in the same GC intervals: its
 * exact count in a full recording (alloc_counts), the census's exact counts and the large
 * objects plus the estimates after the last GC in a sampled or attach one. A type counted but
 * never sampled is one site `[not sampled]`; allocations the runtime did not report (full mode,
 * record --handles) one site per type `[not reported by the runtime]`: so the sites add up to
 * the allocation total of `info` and `allocations` (query_totals_read).
 *
 * Recursion: each run of a block of up to STACKS_FOLD_MAX frames repeated back to back is kept
 * once, with its number of repeats (a fold); stacks that differ only in those numbers are one
 * site (the fold then carries the range of repeats).
 *
 * Used by `heaplens stacks` (text, JSON, speedscope) and by `heaplens report` (the flame graph
 * and the top allocation sites), so they agree.
 *
 *   stacks_load ── one GROUP BY over alloc_samples (filtered by type, GC interval and fate),
 *        │         each stack's frames by stack_frames' key, folded; sites merged, scaled,
 *        │         sorted; the methods (q->methods) and one method's callers and callees
 *        ├──▶ cmd_stacks.c        the text / JSON rows, --by method, --method, --speedscope
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
    guint top;              /* keep the first `top` sites (and methods); 0 = all */
    gboolean unscaled;      /* the samples' own estimates, not scaled to the allocations */
    gboolean methods;       /* also the methods (stacks_result.methods) */
    const char *path;       /* the recording's name, for messages (stacks_find sets it) */
    const char *method;     /* also this method's callers and callees (stacks_result.focus): a
                             * frame name, or its end after a '.' or '+' ("Type.Method") */
} stacks_query;

/* The longest block of frames a fold repeats. */
#define STACKS_FOLD_MAX 32

/* A block of frames repeated back to back in a stack (recursion), kept once. */
typedef struct stacks_fold {
    guint first, frames;     /* frames[first .. first + frames) of the site */
    guint repeats_min, repeats_max; /* times it ran back to back (>= 2), over the merged stacks */
} stacks_fold;

/* Pseudo stack ids of sites without a stack of their own; their one frame says why. */
#define STACKS_NO_STACK (-1)     /* samples without a stack (alloc_samples.stack_id NULL) */
#define STACKS_NOT_SAMPLED (-2)  /* a type allocated, never sampled */
#define STACKS_UNREPORTED (-3)   /* allocations the runtime did not report (alloc_counts flags 1) */

/* One allocation site: a stack (recursion folded) and the type allocated there. */
typedef struct stacks_site {
    int64_t stack_id; /* the smallest stack id merged into it, or STACKS_NO_STACK ... */
    const char *type; /* borrowed from the result */
    double count, bytes; /* scaled: whole numbers that add up per type to its allocations */
    int64_t samples;
    guint stacks;     /* stacks merged (they differ in the repeats of a fold) */
    guint depth;      /* frames, folded */
    guint *frames;    /* depth indexes into stacks_result.frame_names, innermost first; a site
                       * without a stack has one, its pseudo frame (STACKS_NO_STACK_FRAME ...) */
    guint n_folds;
    stacks_fold *folds; /* by first */
} stacks_site;

/* A method (a frame name) over every site: inclusive = of the sites whose stack holds it (each
 * site once, however often recursion repeats it), exclusive = of those where it is the innermost
 * frame (it allocated). The exclusive figures add up to the total. */
typedef struct stacks_method {
    const char *name; /* borrowed from the result */
    double inclusive_count, inclusive_bytes, exclusive_count, exclusive_bytes;
    int64_t samples; /* inclusive */
} stacks_method;

/* A caller or a callee of the focused method, and what went through it. */
typedef struct stacks_edge {
    const char *name; /* a frame name; "new TYPE" for what the method allocates itself; "[none]"
                       * for a caller of an outermost frame */
    double count, bytes;
} stacks_edge;

/* One method's callers and callees (PerfView's caller/callee view): for each site holding it,
 * the caller is the frame just outside its outermost occurrence, the callee the frame just
 * inside its innermost one. Both add up to the method's inclusive figures. */
typedef struct stacks_focus {
    stacks_method method;
    GArray *callers, *callees; /* stacks_edge, most bytes first */
} stacks_focus;

typedef struct stacks_result {
    query_estimates sampling; /* the sampling row (query_estimates_get) */
    query_totals totals;      /* the recording's allocation total (query_totals_read) */
    gboolean scaled;          /* sites scaled to the allocations per type */
    GArray *sites;           /* stacks_site, heaviest first (by the query's sort); at most top */
    guint sites_all;         /* sites before --top */
    guint stacks_merged;     /* stacks that fell into a site with another (recursion folded) */
    GPtrArray *frame_names;  /* char *, every frame of the sites */
    double total_count, total_bytes; /* over all sites that matched, also beyond top */
    int64_t total_samples;
    GArray *methods;         /* stacks_method, heaviest first (inclusive); at most top; NULL
                              * unless q->methods */
    guint methods_all;       /* methods before top */
    stacks_focus *focus;     /* NULL unless q->method */
    GStringChunk *strings;
    GHashTable *frame_index; /* frame id -> 1 + index into frame_names */
} stacks_result;

/* TRUE when `db` holds allocation samples: the tables exist and the sampling row is there. */
gboolean stacks_present(sqlite3 *db, GError **error);

/* The one line a command prints when stacks_present is FALSE. Free with g_free. */
char *stacks_absent_message_new(const char *path);

/* The sites matching `q`. The recording must have samples (stacks_present). NULL and an error
 * when reading fails, and QUERY_ERROR_NOT_FOUND when q->method names no frame of the sites or
 * more than one. */
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

/* "scaled to the exact count per type; estimated from 1,234 samples, mean distance 102,400
 * bytes (100.0 KiB); source AllocationSampled" — "scaled ..." when the sites were scaled to exact
 * counts, ", biased: ..." for a biased source. Free with g_free. */
char *stacks_sampling_text_new(const stacks_result *r);
/* An estimate as a whole number (estimates are sums of real-valued weights), saturated. */
int64_t stacks_round(double v);

/* The sampling metadata as JSON (new reference):
 * {"source","mean_distance_bytes","biased","samples","samples_dropped","estimated":true}. */
json_t *stacks_sampling_json(const query_estimates *s);

/* Whether the site's text is only its pseudo frame (a site without a stack of its own). */
static inline gboolean stacks_site_stackless(const stacks_site *s)
{
    return s->stack_id < 0;
}

/* The fold that starts at frame `i` of `s`, or NULL. */
const stacks_fold *stacks_site_fold_at(const stacks_site *s, guint i);

/* `name` cut to at most `width` characters for a terminal (UTF-8 "…" counted as one): generic
 * argument lists are shortened to "<…>" from the longest, then the name loses its leading
 * namespaces ("…CSharp.Binder.Bind"). `name` itself when it fits. Free with g_free. */
char *stacks_name_fit_new(const char *name, guint width);

/* The sites as a flame graph tree, outermost frame at the top and the type as the leaf:
 * {"name":"all","bytes":N,"count":N,"children":[{"name","bytes","count","children"}...]},
 * children heaviest first; a leaf (the type) also has "type":true. Sites without a stack hang
 * under a "[no stack captured]" frame. Nodes with less than `min_fraction` of the total bytes are left
 * out (their bytes stay in their parent's). New reference. Needs every site's frames (top 0). */
json_t *stacks_flame_json(const stacks_result *r, double min_fraction);

/* A site as JSON: {"type","frames":[innermost first, folded],"count","bytes","samples"}, and
 * when recursion was folded "folds":[{"first","frames","repeats":[min,max]}] and "stacks": the
 * stacks merged. `depth` > 0 keeps the first `depth` frames ("more_frames": the others). New
 * reference. */
json_t *stacks_site_json(const stacks_result *r, const stacks_site *s, guint depth);

/* A method as JSON: {"method","inclusive":{"count","bytes"},"exclusive":{...},"samples"}. */
json_t *stacks_method_json(const stacks_method *m);

/* The pseudo frames of the sites without a stack of their own. */
#define STACKS_NO_STACK_FRAME "[no stack captured]"
#define STACKS_NOT_SAMPLED_FRAME "[not sampled]"
#define STACKS_UNREPORTED_FRAME "[not reported by the runtime]"

#endif /* HEAPLENS_QUERY_STACKS_H */
