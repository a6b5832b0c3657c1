/* report_data.c — gathers what `heaplens report` shows (report.h).
 *
 * A handful of statements, none per GC: the run row, the counters, the totals, one row per GC
 * from the gc_summary view, and one sweep over object_generations that yields both the
 * survivors per generation and the live bytes per type after every GC:
 *
 *   every row (object, generation g, from_gc f, until_gc u) of an object of type t, size s
 *   adds s to generation g and to type t from GC f up to, not including, GC u. Rows with the
 *   same (t, g, f, u) are summed by SQLite first; then +s at f and -s at u go into difference
 *   arrays indexed by GC ordinal, and prefix sums give the bytes after every GC.
 */
#include "report/report.h"

#include "query/allocations.h"
#include "query/checkpoints.h"
#include "query/count_sites.h"
#include "query/estimates.h"
#include "query/gcs.h"
#include "query/info.h"
#include "query/inspect.h"
#include "query/leaks.h"
#include "query/query.h"
#include "query/retention.h"
#include "query/snapshots.h"
#include "query/stacks.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- the run, counters, totals ---------------------------------------------------------- */

/* The run row, every column as stored but id (query_info_run_read), plus duration_ns when both
 * clocks are known; the counters, name -> value. */
static gboolean report_run_get(sqlite3 *db, report_data *data, GError **error)
{
    int64_t start = REPORT_NULL, end = REPORT_NULL;
    g_autoptr(GArray) run = query_info_run_read(db, error);
    g_autoptr(GArray) counters = run ? query_info_counters_read(db, error) : NULL;
    if (!counters)
        return FALSE;
    for (guint i = 0; i < run->len; i++) {
        const query_info_value *v = &g_array_index(run, query_info_value, i);
        if (strcmp(v->name, "start_mono_ns") == 0 && v->text)
            start = v->value;
        if (strcmp(v->name, "end_mono_ns") == 0 && v->text)
            end = v->value;
        json_object_set(data->run, v->name, v->json);
    }
    json_object_set_new(data->run, "duration_ns",
                        start != REPORT_NULL && end != REPORT_NULL ? json_integer(end - start)
                                                                   : json_null());
    for (guint i = 0; i < counters->len; i++) {
        const query_info_value *v = &g_array_index(counters, query_info_value, i);
        json_object_set(data->counters, v->name, v->json);
    }
    return TRUE;
}

static gboolean report_totals_get(sqlite3 *db, report_data *data, GError **error)
{
    report_totals *t = &data->totals;

    for (guint i = 0; i < data->gcs->len; i++) {
        const report_gc *gc = &g_array_index(data->gcs, report_gc, i);
        t->gcs++;
        if (gc->generation >= 0 && gc->generation < 3)
            t->gcs_by_generation[gc->generation]++;
        t->gcs_induced += gc->induced == 1;
        t->gcs_compacting += gc->compacting == 1;
        t->gcs_incomplete += gc->incomplete == 1;
        if (gc->pause_ns != REPORT_NULL) {
            t->pause_ns = query_add_saturating(t->pause_ns, gc->pause_ns);
            t->pause_ns_max = MAX(t->pause_ns_max, gc->pause_ns);
        }
    }
    /* The allocation totals (t->allocations, t->allocation_bytes) come from report_allocations_get. */
    return query_db_objects_totals(db, NULL, NULL, &t->objects_alive_at_end, error) &&
           query_db_int(db, "SELECT COUNT(*) FROM types", &t->types, error) &&
           query_db_int(db, "SELECT COUNT(*) FROM threads", &t->threads, error);
}

/* ---- one row per GC --------------------------------------------------------------------- */

/* objects_live as `heaplens gcs` gives it: NULL at a GC where the model held only the followed
 * samples' objects (a sampled recording between snapshots), no count of live objects. */
#define REPORT_GCS_SQL(census, skipped)                                                        \
    "SELECT gc, generation, reason, induced, compacting, pause_ns, start_ns, end_ns,"          \
    "       survived_bytes, moved_bytes, " QUERY_GC_OBJECTS_LIVE_SQL("gc_summary") ","           \
    "       incomplete,"                                                                        \
    "       gen0_before, gen0_after, gen1_before, gen1_after, gen2_before, gen2_after,"        \
    "       loh_before, loh_after, poh_before, poh_after, pinned_roots, " census ", " skipped   \
    "  FROM gc_summary ORDER BY gc"
/* The census's columns exist from schema 6 on (query_gcs_census), snapshot_skipped from 9 on
 * (query_gcs_skips_known). Indexed [census][skipped]. */
static const char *const report_gcs_sql[2][2] = {
    {REPORT_GCS_SQL("NULL, NULL", "NULL"), REPORT_GCS_SQL("NULL, NULL", "snapshot_skipped")},
    {REPORT_GCS_SQL("census_ns, census_objects", "NULL"),
     REPORT_GCS_SQL("census_ns, census_objects", "snapshot_skipped")},
};

static gboolean report_gcs_get(sqlite3 *db, report_data *data, GError **error)
{
    gboolean row = FALSE;
    gboolean stepped = FALSE;
    gboolean skips_known = FALSE;
    if (!query_gcs_census(db, &data->census, error) ||
        !query_gcs_skips_known(db, &skips_known, error))
        return FALSE;
    sqlite3_stmt *stmt = query_db_prepare(db, report_gcs_sql[data->census][skips_known], error);
    if (!stmt)
        return FALSE;
    while ((stepped = query_db_step(stmt, &row, error)) && row) {
        report_gc gc;
        query_gc_read(stmt, &gc);
        gc.pinned_objects = query_db_column_value(stmt, 22);
        gc.census_ns = query_db_column_value(stmt, 23);
        gc.census_objects = query_db_column_value(stmt, 24);
        gc.snapshot_skipped = query_gc_snapshot_skipped_read(stmt, 25);
        g_array_append_val(data->gcs, gc);
    }
    sqlite3_finalize(stmt);
    return stepped;
}

double report_gc_survival_rate(const report_gc *gc)
{
    /* A gen-N GC condemns gen0..genN; a gen2 GC also collects the LOH and the POH. */
    static const int condemned[3][REPORT_SIZE_GENS] = {
        {1, 0, 0, 0, 0},
        {1, 1, 0, 0, 0},
        {1, 1, 1, 1, 1},
    };
    int64_t before = 0;
    if (gc->survived_bytes == REPORT_NULL || gc->generation < 0 || gc->generation > 2)
        return -1.0;
    for (int g = 0; g < REPORT_SIZE_GENS; g++) {
        if (!condemned[gc->generation][g])
            continue;
        if (gc->size_before[g] == REPORT_NULL)
            return -1.0;
        before += gc->size_before[g];
    }
    if (before <= 0)
        return -1.0;
    return (double)gc->survived_bytes / (double)before;
}

/* ---- the sweep over object_generations --------------------------------------------------- */

/* Rows of one type, generation and lifetime summed: typically a few hundred groups for a
 * hundred thousand objects. */
/* A sampled recording that follows its samples (store.h STORE_SURVIVOR_SAMPLE_ON) weights each
 * sampled object by its sample until the first snapshot at or after its allocation interval
 * (`reset`, column 7), and counts it once from then on: column 6 is the bytes weighted. */
static const char report_sweep_sql[] =
    "SELECT o.type_id, og.generation, og.from_gc, og.until_gc, SUM(o.size),"
    "       " QUERY_LIVE_GROUP_DAMAGED_SQL " OR typeof(og.from_gc) <> 'integer'"
    "       OR NOT (coalesce(og.until_gc, 0) BETWEEN 0 AND 4294967295),"
    "       CAST(round(total(coalesce(s.est_count, 1) * o.size)) AS INTEGER),"
    "       (SELECT min(sn.gc) FROM snapshots AS sn WHERE sn.gc >= s.gc) AS reset"
    "  FROM object_generations AS og LEFT JOIN objects AS o ON o.id = og.object_id"
    "  LEFT JOIN alloc_samples AS s ON s.object_id = o.id AND s.heap = 0"
    "   AND instr(coalesce((SELECT flags FROM run WHERE id = 1), ''), 'samples-followed') > 0"
    " GROUP BY o.type_id, og.generation, og.from_gc, og.until_gc, reset";

/* The same groups from object_spans (query_db_has_spans): a few rows instead of every object. */
static const char report_sweep_spans_sql[] =
    "SELECT type_id, generation, from_gc, until_gc, SUM(bytes),"
    "       MIN(bytes) < 0 OR MIN(count) < 0 OR typeof(SUM(bytes)) NOT IN ('integer', 'null')"
    "       OR NOT (generation BETWEEN 0 AND 5) OR NOT (type_id BETWEEN 0 AND 4294967295)"
    "       OR typeof(from_gc) <> 'integer'"
    "       OR NOT (coalesce(until_gc, 0) BETWEEN 0 AND 4294967295),"
    "       SUM(bytes), NULL" /* no weights: each object counts once */
    "  FROM object_spans"
    " GROUP BY type_id, generation, from_gc, until_gc";

/* The same with the weights of a recording that follows its samples (query_db_has_spans with
 * weights): the groups of report_sweep_sql, whose `reset` the spans keep, and their weighted
 * bytes rounded once per group as there. */
static const char report_sweep_spans_weighed_sql[] =
    "SELECT type_id, generation, from_gc, until_gc, SUM(bytes),"
    "       MIN(bytes) < 0 OR MIN(count) < 0 OR typeof(SUM(bytes)) NOT IN ('integer', 'null')"
    "       OR NOT (generation BETWEEN 0 AND 5) OR NOT (type_id BETWEEN 0 AND 4294967295)"
    "       OR typeof(from_gc) <> 'integer'"
    "       OR NOT (coalesce(until_gc, 0) BETWEEN 0 AND 4294967295)"
    "       OR MIN(est_bytes) < 0 OR typeof(MAX(est_bytes)) NOT IN ('integer', 'real', 'null')"
    "       OR NOT (coalesce(reset, 0) BETWEEN 0 AND 4294967295),"
    "       CAST(round(total(coalesce(est_bytes, bytes))) AS INTEGER), reset"
    "  FROM object_spans"
    " GROUP BY type_id, generation, from_gc, until_gc, reset";

/* A change of a type's live bytes at a GC ordinal. */
typedef struct type_event {
    int64_t gc;
    int64_t delta;
} type_event;

static int type_event_cmp(const void *a, const void *b)
{
    const type_event *x = a, *y = b;
    return (x->gc > y->gc) - (x->gc < y->gc);
}

/* Ranks types by peak live bytes; the smaller type id wins a tie. */
static int report_type_rank_cmp(gconstpointer a, gconstpointer b)
{
    const report_type *x = *(report_type *const *)a, *y = *(report_type *const *)b;
    if (x->peak_bytes != y->peak_bytes)
        return x->peak_bytes > y->peak_bytes ? -1 : 1;
    return (x->type_id > y->type_id) - (x->type_id < y->type_id);
}

static void report_type_free(gpointer p)
{
    report_type *t = p;
    if (!t)
        return;
    g_free(t->name);
    g_free(t->bytes);
    g_free(t);
}

/* Position of GC ordinal `gc` in data->gcs; the first GC after it when it is absent. */
static guint gc_index_at_or_after(const report_data *data, int64_t gc)
{
    guint lo = 0, hi = data->gcs->len;
    while (lo < hi) {
        guint mid = lo + (hi - lo) / 2;
        if (g_array_index(data->gcs, report_gc, mid).gc < gc)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Live bytes of one type after every GC, from its events (sorted here). Fills `bytes` (may be
 * NULL: only the peak and the last value are wanted) and returns the peak. */
static int64_t type_series(const report_data *data, GArray *events, int64_t *bytes,
                           int64_t *last)
{
    int64_t live = 0, peak = 0;
    guint e = 0;
    qsort(events->data, events->len, sizeof(type_event), type_event_cmp);
    for (guint i = 0; i < data->gcs->len; i++) {
        int64_t gc = g_array_index(data->gcs, report_gc, i).gc;
        while (e < events->len && g_array_index(events, type_event, e).gc <= gc)
            live += g_array_index(events, type_event, e++).delta;
        if (bytes)
            bytes[i] = live;
        peak = MAX(peak, live);
        *last = live;
    }
    return peak;
}

static void type_event_add(GHashTable *types, int64_t type_id, int64_t gc, int64_t delta)
{
    GArray *events = g_hash_table_lookup(types, &type_id);
    if (!events) {
        int64_t *key = g_new(int64_t, 1);
        *key = type_id;
        events = g_array_new(FALSE, FALSE, sizeof(type_event));
        g_hash_table_insert(types, key, events);
    }
    type_event event = {gc, delta};
    g_array_append_val(events, event);
}

static void events_free(gpointer p)
{
    g_array_free(p, TRUE);
}

static gboolean report_type_names_get(sqlite3 *db, report_data *data, GError **error)
{
    gboolean ok = FALSE;
    gboolean row = FALSE;
    sqlite3_stmt *stmt = query_db_prepare(db, "SELECT name FROM types WHERE id = ?1", error);
    if (!stmt)
        goto out;
    for (guint i = 0; i < data->top_types->len; i++) {
        report_type *t = g_ptr_array_index(data->top_types, i);
        sqlite3_reset(stmt);
        sqlite3_bind_int64(stmt, 1, t->type_id);
        if (!query_db_step(stmt, &row, error))
            goto out;
        const char *name = row ? (const char *)sqlite3_column_text(stmt, 0) : NULL;
        /* A type id without a TYPE record shows as the views show it (SCHEMA.md). */
        t->name = name ? g_strdup(name)
                       : g_strdup_printf("<type %" G_GINT64_FORMAT ">", t->type_id);
    }
    ok = TRUE;
out:
    sqlite3_finalize(stmt);
    return ok;
}

/* `bytes` of one type and generation alive from GC `from` until GC `until` (open: to the end). */
static void report_sweep_add(report_data *data, int64_t **diff, GHashTable *types,
                             int64_t type_id, int64_t generation, int64_t from, gboolean open,
                             int64_t until, int64_t bytes)
{
    if (!open && until <= from)
        return; /* held for no GC at all */
    if (generation >= 0 && generation < REPORT_LIVE_GENS) {
        diff[generation][gc_index_at_or_after(data, from)] += bytes;
        if (!open)
            diff[generation][gc_index_at_or_after(data, until)] -= bytes;
    }
    type_event_add(types, type_id, from, bytes);
    if (!open)
        type_event_add(types, type_id, until, -bytes);
}

static gboolean report_sweep(sqlite3 *db, report_data *data, GError **error)
{
    gboolean ok = FALSE;
    gboolean row = FALSE;
    gboolean stepped = FALSE;
    guint n = data->gcs->len;
    /* Difference arrays by position in data->gcs: position n collects what starts after the
     * last GC (nothing is alive then in any GC of the report). */
    int64_t *diff[REPORT_LIVE_GENS] = {NULL};
    g_autoptr(GHashTable) types =
        g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, events_free);
    g_autoptr(GPtrArray) ranked = g_ptr_array_new_with_free_func(report_type_free);
    sqlite3_stmt *stmt = NULL;

    for (int g = 0; g < REPORT_LIVE_GENS; g++) {
        diff[g] = g_new0(int64_t, n + 1);
        data->survivors[g] = g_new0(int64_t, n);
    }
    /* The sums of object_spans count each object once: a recording that follows its samples
     * weights them (report_sweep_sql), read from the spans when they hold the weights. */
    g_auto(query_estimates) estimates = {0};
    gboolean spans = FALSE;
    if (!query_estimates_get(db, &estimates, error) ||
        !query_db_has_spans(db, estimates.followed, &spans, error))
        goto out;
    stmt = query_db_prepare(db,
                            !spans               ? report_sweep_sql
                            : estimates.followed ? report_sweep_spans_weighed_sql
                                                 : report_sweep_spans_sql,
                            error);
    if (!stmt)
        goto out;
    while ((stepped = query_db_step(stmt, &row, error)) && row) {
        if (sqlite3_column_int64(stmt, 5) > 0) {
            query_db_damaged(error, "objects hold sizes, types or generations that no recording "
                                    "holds");
            stepped = FALSE;
            break;
        }
        int64_t type_id = sqlite3_column_int64(stmt, 0);
        int64_t generation = sqlite3_column_int64(stmt, 1);
        int64_t from = sqlite3_column_int64(stmt, 2);
        gboolean open = sqlite3_column_type(stmt, 3) == SQLITE_NULL;
        int64_t until = sqlite3_column_int64(stmt, 3);
        int64_t bytes = sqlite3_column_int64(stmt, 4);
        int64_t weighted = sqlite3_column_int64(stmt, 6);
        if (sqlite3_column_type(stmt, 7) == SQLITE_NULL) { /* weighted all along (or weight 1) */
            report_sweep_add(data, diff, types, type_id, generation, from, open, until, weighted);
            continue;
        }
        /* Estimates until the snapshot, the objects themselves from it on. */
        int64_t reset = sqlite3_column_int64(stmt, 7);
        report_sweep_add(data, diff, types, type_id, generation, from, FALSE,
                         open ? reset : MIN(until, reset), weighted);
        report_sweep_add(data, diff, types, type_id, generation, MAX(from, reset), open, until,
                         bytes);
    }
    if (!stepped)
        goto out;
    for (int g = 0; g < REPORT_LIVE_GENS; g++) {
        int64_t live = 0;
        for (guint i = 0; i < n; i++)
            data->survivors[g][i] = live += diff[g][i];
    }

    /* Rank every type by its peak, then keep the series of the top ones only. */
    GHashTableIter iter;
    gpointer key, value;
    g_hash_table_iter_init(&iter, types);
    while (g_hash_table_iter_next(&iter, &key, &value)) {
        report_type *t = g_new0(report_type, 1);
        t->type_id = *(int64_t *)key;
        t->peak_bytes = type_series(data, value, NULL, &t->last_bytes);
        if (t->peak_bytes > 0)
            g_ptr_array_add(ranked, t);
        else
            report_type_free(t);
    }
    g_ptr_array_sort(ranked, report_type_rank_cmp);
    for (guint i = 0; i < ranked->len && i < REPORT_TOP_TYPES; i++) {
        report_type *t = g_ptr_array_index(ranked, i);
        ranked->pdata[i] = NULL; /* moves to data->top_types */
        t->bytes = g_new0(int64_t, MAX(n, 1u));
        type_series(data, g_hash_table_lookup(types, &t->type_id), t->bytes, &t->last_bytes);
        g_ptr_array_add(data->top_types, t);
    }
    if (!report_type_names_get(db, data, error))
        goto out;
    ok = TRUE;
out:
    for (int g = 0; g < REPORT_LIVE_GENS; g++)
        g_free(diff[g]);
    sqlite3_finalize(stmt);
    return ok;
}

/* ---- allocations: exact or estimated ------------------------------------------------------ */

static int report_gc_cmp(const void *key, const void *element)
{
    int64_t gc = *(const int64_t *)key;
    int64_t other = ((const report_gc *)element)->gc;
    return (gc > other) - (gc < other);
}

/* Allocations per GC interval and per type, and the totals, from the one SQL of estimates.h:
 * alloc_counts in a full recording; in a sampled or attach one, the large objects counted
 * exactly plus the estimates of the small ones from the samples. */
static gboolean report_allocations_get(sqlite3 *db, report_data *data, GError **error)
{
    gboolean ok = FALSE;
    gboolean row = FALSE;
    gboolean stepped = FALSE;
    g_auto(query_estimates) estimates = {0};
    g_autofree char *by_gc = NULL;
    /* here, before the first goto out, so that their cleanup never meets them unset */
    g_auto(query_estimates) read_estimates = {0};
    g_autoptr(GArray) allocated = NULL;
    int64_t last_gc = data->gcs->len ? g_array_index(data->gcs, report_gc, data->gcs->len - 1).gc : 0;
    int64_t tail_count = 0, tail_bytes = 0;
    sqlite3_stmt *stmt = NULL;

    if (!query_estimates_get(db, &estimates, error))
        return FALSE;
    data->allocations_estimated = estimates.estimated;
    data->survivors_estimated = estimates.followed;
    data->allocations = query_estimates_json(&estimates);
    /* With the census the intervals it counted (gcs[].census_objects set) are exact, the
     * others (the tail, the first GC after an attach) estimated. */
    json_object_set_new(data->allocations, "census", json_boolean(estimates.census));
    by_gc = query_estimates_sql_new(&estimates, "gc", NULL);
    stmt = query_db_prepare(db, by_gc, error);
    if (!stmt)
        goto out;
    while ((stepped = query_db_step(stmt, &row, error)) && row) {
        int64_t gc = sqlite3_column_int64(stmt, 0);
        int64_t count = sqlite3_column_int64(stmt, 1), bytes = sqlite3_column_int64(stmt, 2);
        report_gc *g = data->gcs->len ? bsearch(&gc, data->gcs->data, data->gcs->len,
                                                sizeof(report_gc), report_gc_cmp)
                                      : NULL;
        if (g) {
            g->allocated_count = count;
            g->allocated_bytes = bytes;
        } else if (gc > last_gc) {
            tail_count = query_add_saturating(tail_count, count);
            tail_bytes = query_add_saturating(tail_bytes, bytes);
        }
    }
    if (!stepped)
        goto out;
    json_object_set_new(data->allocations, "after_last_gc",
                        json_pack("{s:I, s:I}", "count", (json_int_t)tail_count, "bytes",
                                  (json_int_t)tail_bytes));
    sqlite3_finalize(stmt);
    stmt = NULL;

    /* The top allocating types as `allocations` gives them (its order and names), each with
     * the part the samples estimate (after the last GC, an interval no census counted), so
     * that "exact up to the last GC" marks the rows that are not; and the types allocated and
     * the total, as `allocations` and `info` give them (the total summed per GC interval
     * instead, the estimates' roundings made an attach recording's 11,330,750 of their
     * 11,330,749). */
    query_totals totals;
    allocated = query_allocations_read(db, data->file, NULL, &read_estimates, &totals, error);
    if (!allocated)
        goto out;
    json_t *types = json_array();
    json_object_set_new(data->allocations, "top_types", types);
    for (guint i = 0; i < allocated->len && i < REPORT_TOP_TYPES; i++) {
        const query_allocation *a = &g_array_index(allocated, query_allocation, i);
        json_t *type = json_pack("{s:o, s:I, s:I}", "type", query_json_string(a->name), "count",
                                 (json_int_t)a->count, "bytes", (json_int_t)a->bytes);
        if (read_estimates.uncounted)
            json_object_set_new(type, "estimated_count",
                                json_integer((json_int_t)a->estimated_count));
        json_array_append_new(types, type);
    }
    data->totals.allocation_types = allocated->len;
    data->totals.allocations = totals.count;
    data->totals.allocation_bytes = totals.bytes;
    ok = TRUE;
out:
    sqlite3_finalize(stmt);
    return ok;
}

/* ---- snapshots -------------------------------------------------------------------------- */

/* What the timeline marks: every snapshot (its GC, trigger and reason) and every checkpoint the
 * program wrote (checkpoints.h), as `snapshots --json` gives them. */
static gboolean report_marks_get(sqlite3 *db, report_data *data, GError **error)
{
    int64_t drift = 0;
    g_autoptr(GArray) list = query_snapshots_read(db, &drift, error);
    if (!list)
        return FALSE;
    data->snapshot_list = json_array();
    for (guint i = 0; i < list->len; i++) {
        const query_snapshot *s = &g_array_index(list, query_snapshot, i);
        json_array_append_new(data->snapshot_list,
                              json_pack("{s:I, s:I, s:o, s:o}", "snapshot", (json_int_t)s->snapshot,
                                        "gc", (json_int_t)s->gc, "trigger",
                                        query_json_string(s->trigger), "reason",
                                        query_json_string(s->reason)));
    }
    data->checkpoints = checkpoint_list_json(db, error);
    return data->checkpoints != NULL;
}

/* The last snapshot, its largest retainers, its inspections and the leak suspects over all
 * snapshots: what `heaplens retention --top 10`, `heaplens inspect` and `heaplens leaks --top 10`
 * show, from the same functions. */
static gboolean report_snapshots_get(sqlite3 *db, const char *file, report_data *data,
                                     query_progress *progress, GError **error)
{
    snapshot_info info;
    g_autoptr(GArray) list = snapshot_list_new(db, error);
    if (!list)
        return FALSE;
    data->snapshots = list->len ? (int64_t)list->len : -1;
    if (list->len == 0)
        return TRUE;
    info = g_array_index(list, snapshot_info, list->len - 1);
    data->last_snapshot = json_pack("{s:I, s:I, s:I, s:I, s:I}", "snapshot",
                                    (json_int_t)info.snapshot, "gc", (json_int_t)info.gc,
                                    "objects", (json_int_t)info.objects, "references",
                                    (json_int_t)info.refs, "roots", (json_int_t)info.roots);
    g_autoptr(snapshot_types) types = snapshot_types_new(db, error);
    if (!types || !retention_ensure(db, &info, progress, error))
        return FALSE;
    g_autoptr(GArray) top = retention_top_objects(db, info.snapshot, REPORT_TOP_RETAINERS, error);
    if (!top)
        return FALSE;
    json_t *rows = json_array();
    for (guint i = 0; i < top->len; i++)
        json_array_append_new(rows,
                              retention_object_json(&g_array_index(top, retention_object, i), types));
    data->retainers = json_pack("{s:I, s:I, s:o}", "snapshot", (json_int_t)info.snapshot, "gc",
                                (json_int_t)info.gc, "rows", rows);
    const inspect_options defaults = {.min_duplicates = INSPECT_MIN_DUPLICATES,
                                      .max_fill = INSPECT_MAX_FILL,
                                      .min_subscribers = INSPECT_MIN_SUBSCRIBERS};
    g_autofree char *last = g_strdup_printf("%" PRId64, info.snapshot);
    data->inspections = inspect_snapshot(db, file, last, &defaults, progress, error);
    if (!data->inspections)
        return FALSE;
    if (list->len >= 2) { /* growth needs two snapshots */
        g_autoptr(leaks) found =
            leaks_find(db, file, REPORT_LEAK_SUSPECTS, FALSE, progress, error);
        if (!found)
            return FALSE;
        data->leak_suspects = leaks_json_head(found);
        rows = json_array();
        for (guint i = 0; i < leaks_count(found); i++)
            json_array_append_new(rows, leaks_json_row(found, i));
        json_object_set_new(data->leak_suspects, "rows", rows);
    }
    /* Last: what retention and leaks computed (the last snapshot's and the first of the leak
     * series' retained sizes) is stored, so that the next report, retention or leaks reads it
     * instead of computing it again. */
    char *note = NULL;
    if (!retention_commit(db, file, progress, &note, error))
        return FALSE;
    if (note)
        g_ptr_array_add(data->notes, note);
    /* then the inspections computed; after retained sizes were written, a failure to store them
     * is a note (a command never fails after changing the file), as is a file that cannot be
     * written */
    GError *local = NULL;
    if (!inspect_commit(db, file, progress, &note, &local)) {
        if (g_error_matches(local, QUERY_ERROR, QUERY_ERROR_DAMAGED)) {
            g_propagate_error(error, local);
            return FALSE;
        }
        note = g_strdup_printf("note: inspections were not stored: %s", local->message);
        g_error_free(local);
    }
    if (note)
        g_ptr_array_add(data->notes, note);
    /* and the leak holders found, the same way (a file that could not take the inspections
     * could not take them either: one note says why) */
    char *holders_note = NULL;
    if (!leaks_commit(db, file, progress, &holders_note, &local)) {
        if (g_error_matches(local, QUERY_ERROR, QUERY_ERROR_DAMAGED)) {
            g_propagate_error(error, local);
            return FALSE;
        }
        holders_note = g_strdup_printf("note: leak holders were not stored: %s", local->message);
        g_error_free(local);
    }
    if (holders_note && !note)
        g_ptr_array_add(data->notes, holders_note);
    else
        g_free(holders_note);
    return TRUE;
}

/* ---- the whole ---------------------------------------------------------------------------- */

#ifndef NDEBUG
static void report_data_check(const report_data *data)
{
    for (guint i = 1; i < data->gcs->len; i++)
        g_assert(g_array_index(data->gcs, report_gc, i - 1).gc <
                 g_array_index(data->gcs, report_gc, i).gc);
    g_assert(data->top_types->len <= REPORT_TOP_TYPES);
    for (guint i = 1; i < data->top_types->len; i++) {
        const report_type *a = g_ptr_array_index(data->top_types, i - 1);
        const report_type *b = g_ptr_array_index(data->top_types, i);
        g_assert(a->peak_bytes >= b->peak_bytes);
    }
}
#endif

/* The allocation sites and their flame graph, when the recording has samples (stacks.h). */
static gboolean report_stacks_get(sqlite3 *db, report_data *data, GError **error)
{
    stacks_query q = {.by = STACKS_BY_ALLOCATED, .sort = STACKS_SORT_BYTES};
    if (!stacks_present(db, error))
        return error == NULL || *error == NULL;
    g_autoptr(stacks_result) r = stacks_load(db, &q, error);
    if (!r)
        return FALSE;
    g_autofree char *text = stacks_sampling_text_new(r);
    json_t *sites = json_array();
    for (guint i = 0; i < r->sites->len && i < REPORT_TOP_SITES; i++)
        json_array_append_new(sites, stacks_site_json(r, &g_array_index(r->sites, stacks_site, i), 0));
    data->allocation_stacks = json_pack(
        "{s:o, s:s, s:{s:I, s:I, s:I, s:I}, s:o, s:o}", "sampling",
        stacks_sampling_json(&r->sampling), "text", text, "total", "count",
        (json_int_t)llround(MIN(r->total_count, 9e18)), "bytes", (json_int_t)llround(MIN(r->total_bytes, 9e18)),
        "samples", (json_int_t)r->total_samples, "sites", (json_int_t)r->sites_all, "top_sites",
        sites, "flame", stacks_flame_json(r, REPORT_FLAME_MIN));
    return TRUE;
}

/* The counted sites, when the recording was made with --count (count_sites.h). */
static gboolean report_counted_get(sqlite3 *db, const char *file, report_data *data,
                                   GError **error)
{
    GError *local = NULL;
    query_count_sites s;
    if (!query_count_sites_read(db, file, &s, &local)) {
        gboolean none = g_error_matches(local, QUERY_ERROR, QUERY_ERROR_NOT_FOUND);
        if (none)
            g_error_free(local);
        else
            g_propagate_error(error, local);
        return none;
    }
    json_t *rows = json_array();
    for (guint i = 0; i < s.sites->len && i < REPORT_TOP_COUNTED; i++) {
        const query_count_site *c = &g_array_index(s.sites, query_count_site, i);
        json_array_append_new(rows, json_pack("{s:s, s:s, s:I, s:s, s:s, s:I, s:b}", "module",
                                              c->module, "method", c->method, "il_offset",
                                              (json_int_t)c->il_offset, "kind", c->kind, "type",
                                              c->type, "count", (json_int_t)c->count, "exact",
                                              !c->may_elide && !c->maybe_none));
    }
    data->counted_sites = json_pack("{s:I, s:I, s:I, s:s, s:o}", "sites",
                                    (json_int_t)s.sites->len, "methods", (json_int_t)s.methods,
                                    "not_rewritten", (json_int_t)s.refused->len, "not_counted",
                                    QUERY_COUNT_SITES_NOT_COUNTED, "rows", rows);
    query_count_sites_clear(&s);
    return TRUE;
}

/* A file still being recorded (run status 'recording') is read as of one moment, the whole
 * report: a read transaction, begun here (*open TRUE) and ended by report_moment_end. Without it
 * the objects, read into memory once at their first use (report_totals_get; TEMP `objects`,
 * store_objects_view_attach), are those of an earlier moment than what the later parts read:
 * the sweep's object_generations named objects not among them (a sound file called damaged),
 * and a snapshot committed after them had its new objects read as of no type and size 0
 * (silently) and was of a GC the report's table does not hold. What the snapshots' part
 * computes is kept in TEMP tables inside the moment (savepoints, retention.c) and not stored:
 * a file still being recorded is never written by a reader (query_db_open_store), so this
 * connection need not see another's rows. A finished file does not change: no transaction. */
static void report_moment_begin(sqlite3 *db, gboolean *open)
{
    int64_t recording = 0;
    *open = sqlite3_get_autocommit(db) &&
            query_db_int(db, "SELECT count(*) FROM run WHERE id = 1 AND status = 'recording'",
                         &recording, NULL) &&
            recording && sqlite3_exec(db, "BEGIN", NULL, NULL, NULL) == SQLITE_OK;
}

static void report_moment_end(sqlite3 *db, gboolean *open)
{
    if (*open)
        sqlite3_exec(db, "COMMIT", NULL, NULL, NULL); /* the file only read; TEMP is ours */
    *open = FALSE;
}

report_data *report_data_new(sqlite3 *db, const char *file, query_progress *progress,
                             GError **error)
{
    report_data *data = g_new0(report_data, 1);
    data->file = g_strdup(file);
    data->run = json_object();
    data->counters = json_object();
    data->gcs = g_array_new(FALSE, FALSE, sizeof(report_gc));
    data->top_types = g_ptr_array_new_with_free_func(report_type_free);
    data->strings = g_string_chunk_new(256);
    data->notes = g_ptr_array_new_with_free_func(g_free);
    GError *local = NULL;
    gboolean moment = FALSE;

    report_moment_begin(db, &moment);
    if (!report_run_get(db, data, error) ||
        !report_gcs_get(db, data, error) || !report_totals_get(db, data, error) ||
        !report_allocations_get(db, data, error) ||
        !report_sweep(db, data, error) || !report_marks_get(db, data, error) ||
        !report_snapshots_get(db, file, data, progress, error) ||
        !report_stacks_get(db, data, error) || !report_counted_get(db, file, data, error))
        goto fail;
    data->note = query_db_note_new(db, &local);
    if (local) {
        g_propagate_error(error, local);
        goto fail;
    }
    report_moment_end(db, &moment);
#ifndef NDEBUG
    report_data_check(data);
#endif
    return data;
fail:
    report_moment_end(db, &moment);
    report_data_free(data);
    return NULL;
}

void report_data_free(report_data *data)
{
    if (!data)
        return;
    g_free(data->file);
    json_decref(data->run);
    json_decref(data->counters);
    g_free(data->note);
    g_array_free(data->gcs, TRUE);
    for (int g = 0; g < REPORT_LIVE_GENS; g++)
        g_free(data->survivors[g]);
    g_ptr_array_free(data->top_types, TRUE);
    g_string_chunk_free(data->strings);
    json_decref(data->last_snapshot);
    json_decref(data->retainers);
    json_decref(data->leak_suspects);
    json_decref(data->inspections);
    json_decref(data->snapshot_list);
    json_decref(data->checkpoints);
    json_decref(data->allocation_stacks);
    json_decref(data->counted_sites);
    json_decref(data->allocations);
    if (data->notes)
        g_ptr_array_free(data->notes, TRUE);
    g_free(data);
}
