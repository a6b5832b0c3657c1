/* report.h — `heaplens report`: what the report shows, gathered once, and its two renderings.
 *
 *   cmd_report.c   arguments, the output file (written to a temporary file, then renamed)
 *     │
 *     ▼
 *   report_data.c  report_data_new: the run, counters, totals, one row per GC, and one sweep
 *     │            over object_generations for survivors per generation and live bytes per type
 *     ├──▶ report_json.c  report_json_write: the JSON document (--json)
 *     └──▶ report_html.c  report_html_write: the page = template + CSS + JS + the same document
 *                         embedded in a <script type="application/json">; the page's JS renders
 *                         everything from it, so the HTML and the JSON cannot disagree.
 *   report_page/   the page's template, CSS and JS as ordinary files, embedded into the
 *                  executable as C strings at build time (report_page/assets.cmake).
 *
 * Internal to the report command; single-threaded like the whole of `heaplens`.
 */
#ifndef HEAPLENS_REPORT_H
#define HEAPLENS_REPORT_H

#include "query/gcs.h"
#include "query/progress.h"
#include "query/query.h"

#include <glib.h>
#include <jansson.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>

/* A value the recording does not have (SQL NULL); written as null in JSON. */
#define REPORT_NULL QUERY_NULL

#define REPORT_SIZE_GENS QUERY_SIZE_GENS
/* Generations an object can hold: the five above and nongc. */
#define REPORT_LIVE_GENS 6
/* Types shown in the "top types by live bytes" plot. */
#define REPORT_TOP_TYPES 8

/* One GC (query/gcs.h), with pinned_objects, allocated_count/bytes and (with a census)
 * census_ns/census_objects filled. */
typedef query_gc report_gc;

/* One of the top types: its live bytes right after every GC. */
typedef struct report_type {
    int64_t type_id;
    char *name;
    int64_t peak_bytes; /* max over the GCs of bytes[] */
    int64_t last_bytes; /* bytes[n_gcs - 1] */
    int64_t *bytes;     /* n_gcs values, one per report_data.gcs entry */
} report_type;

/* Totals over the whole run. */
typedef struct report_totals {
    int64_t gcs, gcs_by_generation[3], gcs_induced, gcs_compacting, gcs_incomplete;
    int64_t pause_ns, pause_ns_max;
    /* allocations: every allocation of the run (allocs_seen's figure, as info's 'allocations'),
     * not info's 'objects' (the objects tracked: those that survived a GC) */
    int64_t allocations, allocation_bytes, objects_alive_at_end, types, threads;
    /* types: every type the recording names; allocation_types: those allocated, as `allocations`
     * and the summary line count them (the "Allocated" card said the first) */
    int64_t allocation_types;
} report_totals;

/* Everything the report shows. Invariants (checked by report_data_check in debug builds):
 * gcs is sorted by gc, strictly increasing; survivors[g] and each top type's bytes have
 * gcs->len entries; top_types holds at most REPORT_TOP_TYPES, largest peak first. */
typedef struct report_data {
    char *file;           /* the recording's path as given */
    json_t *run;          /* the run row, every column but id, plus duration_ns */
    json_t *counters;     /* name -> value */
    char *note;           /* the accuracy note (query_db_note_new); NULL when complete */
    report_totals totals;
    GArray *gcs;          /* report_gc, in GC order */
    /* survivors[g][i]: bytes of tracked objects in generation g right after gcs[i]. */
    int64_t *survivors[REPORT_LIVE_GENS];
    GPtrArray *top_types; /* report_type *, largest peak first */
    /* Heap snapshots: -1 when the recording has none, else how many. When it has some: the
     * last one ({"snapshot","gc","objects","references","roots"}), its top retainers
     * ({"snapshot","gc","rows":[rows of `heaplens retention --json`]}) and, with two or more
     * snapshots, the leak suspects (the document of `heaplens leaks --json`); NULL otherwise.
     * Retained sizes are computed (and stored) when the file has none yet; notes says when they
     * could not be stored. */
    int64_t snapshots;
    json_t *last_snapshot, *retainers, *leak_suspects;
    json_t *inspections; /* `heaplens inspect --json` of the last snapshot (query/inspect.h) */
    /* The timeline's marks: every snapshot [{"snapshot","gc","trigger","reason"}] (reason:
     * why a trigger took it, else null) and every checkpoint the program wrote, as
     * checkpoint_list_json gives them ([] when none). */
    json_t *snapshot_list, *checkpoints;
    GPtrArray *notes; /* char *, one line each */
    GStringChunk *strings;
    /* Allocation stacks (stacks.h): NULL when the recording has no samples, else
     * {"sampling":{...},"text":"estimated from ...","total":{"count","bytes","samples","sites"},
     *  "top_sites":[REPORT_TOP_SITES rows of `heaplens stacks --json`],
     *  "flame":{the tree of stacks_flame_json, nodes under REPORT_FLAME_MIN of the bytes left out}} */
    json_t *allocation_stacks;
    /* Whether the allocation figures (totals.allocations/allocation_bytes, gcs[].allocated_*, the
     * allocation plot, top allocating types) are exact or estimates: the head of estimates.h
     * ({"mode","estimated","note","sampling"}) plus "after_last_gc":{"count","bytes"} and
     * "top_types":[{"type","count","bytes"}] (REPORT_TOP_TYPES, most bytes first) and
     * "census": small objects counted exactly per type in the intervals whose GC has
     * census_objects (then "estimated" applies only to the others: the tail after the last GC,
     * the first GC after an attach). */
    json_t *allocations;
    gboolean allocations_estimated;
    gboolean census; /* some GC has a census of gen0: gcs[] carry census_ns, census_objects */
    /* Counted allocation sites (`--count`, count_sites.h): NULL when the recording has none, else
     * {"sites","methods","not_rewritten","not_counted","rows":[REPORT_TOP_COUNTED rows of
     * `heaplens allocations --by site --json`, most counted first]} */
    json_t *counted_sites;
    /* A sampled recording that follows its samples: the survivors and top types series are
     * estimates between snapshots (query/estimates.h, query_estimates.followed). */
    gboolean survivors_estimated;
} report_data;

#define REPORT_TOP_COUNTED 20

#define REPORT_TOP_SITES 10
#define REPORT_FLAME_MIN 0.001

/* Reads everything the report shows from `db` (opened with query_db_open); `file` is the path
 * shown in the report (and where retained sizes are stored). NULL and an error when reading
 * fails. `progress` (may be NULL) reports the retention and leak analysis of the snapshots. */
#define REPORT_TOP_RETAINERS 10
#define REPORT_LEAK_SUSPECTS 10
report_data *report_data_new(sqlite3 *db, const char *file, query_progress *progress,
                             GError **error);
void report_data_free(report_data *data); /* accepts NULL */
G_DEFINE_AUTOPTR_CLEANUP_FUNC(report_data, report_data_free)

/* Survival rate of `gc` (see report_definitions): survived_bytes divided by the bytes in use
 * before the GC in the condemned generations; < 0 when unknown (a size is missing or the
 * condemned generations were empty). */
double report_gc_survival_rate(const report_gc *gc);

/* The definitions the page shows in tooltips and its legend, and the JSON carries, as
 * {"key": "text"}; new reference. */
json_t *report_definitions_new(void);

/* Writes the report document (README.md, "report") to `out`, compact, one GC per line.
 * html_safe: every "<" is written as \u003c, so that the document can be the content of a
 * <script> element. The caller checks `out` for write errors (query_output_finish). */
void report_json_write(const report_data *data, FILE *out, gboolean html_safe);

/* Writes the self-contained page: template, CSS, JS and the document. */
void report_html_write(const report_data *data, FILE *out);

/* The page's sources, embedded at build time (report_page/ → report_assets.c). */
extern const char report_page_template[];
extern const char report_page_css[];
extern const char report_page_js[];

#endif /* HEAPLENS_REPORT_H */
