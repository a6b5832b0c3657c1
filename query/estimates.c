/* estimates.c — exact or estimated allocation figures (estimates.h). */
#include "query/estimates.h"

#include "query/query.h"
#include "store/store.h"

#include <math.h>
#include <string.h>

gboolean query_estimates_get(sqlite3 *db, query_estimates *e, GError **error)
{
    gboolean row = FALSE;
    gboolean ok = FALSE;
    memset(e, 0, sizeof *e);
    e->mean_distance_bytes = -1;
    sqlite3_stmt *stmt = query_db_prepare(
        db,
        "SELECT mode, instr(coalesce(flags, ''), 'samples-followed') > 0,"
        "       instr(coalesce(flags, ''), 'census-off') > 0 FROM run WHERE id = 1",
        error);
    if (!stmt || !query_db_step(stmt, &row, error))
        goto out;
    if (row && sqlite3_column_text(stmt, 0))
        e->mode = g_strdup((const char *)sqlite3_column_text(stmt, 0));
    e->followed = row && sqlite3_column_int(stmt, 1) != 0;
    e->attach = g_strcmp0(e->mode, "attach") == 0;
    e->uncounted = e->attach || g_strcmp0(e->mode, "sampled") == 0;
    e->census_off = e->uncounted && row && sqlite3_column_int(stmt, 2) != 0;
    sqlite3_finalize(stmt);

    /* The sampling table exists from schema 3 on; an older file has none and no samples. */
    stmt = query_db_prepare(db,
                            "SELECT source, mean_distance_bytes, biased, samples, samples_dropped"
                            "  FROM sampling WHERE id = 1",
                            error);
    if (!stmt || !query_db_step(stmt, &row, error))
        goto out;
    if (row) {
        const char *source = (const char *)sqlite3_column_text(stmt, 0);
        e->source = g_strdup(source ? source : "unknown");
        if (sqlite3_column_type(stmt, 1) != SQLITE_NULL)
            e->mean_distance_bytes = MAX(sqlite3_column_int64(stmt, 1), 0);
        e->biased = sqlite3_column_int(stmt, 2) != 0;
        e->samples = MAX(sqlite3_column_int64(stmt, 3), 0);
        e->samples_dropped = MAX(sqlite3_column_int64(stmt, 4), 0);
    }
    e->estimated = e->uncounted && e->samples > 0;
    sqlite3_finalize(stmt);
    stmt = NULL;
    if (e->source && !query_db_int(db,
                                   "SELECT coalesce((SELECT value FROM counters"
                                   "  WHERE name = 'samples_budgeted'), 0)",
                                   &e->samples_budgeted, error))
        goto out;
    if (e->uncounted) {
        /* The census exists from schema 6 on (gcs.census_objects). */
        stmt = query_db_prepare(db, "PRAGMA user_version", error);
        if (!stmt || !query_db_step(stmt, &row, error))
            goto out;
        gboolean v6 = row && sqlite3_column_int(stmt, 0) >= 6;
        sqlite3_finalize(stmt);
        stmt = NULL;
        if (v6) {
            stmt = query_db_prepare(
                db, "SELECT EXISTS (SELECT 1 FROM alloc_counts WHERE flags & 2)", error);
            if (!stmt || !query_db_step(stmt, &row, error))
                goto out;
            e->census = row && sqlite3_column_int(stmt, 0) != 0;
            sqlite3_finalize(stmt);
            stmt = NULL;
            if (e->census &&
                !query_db_int(db, "SELECT count(*) FROM gcs WHERE census_objects IS NULL",
                              &e->census_missing, error))
                goto out;
        }
    }
    ok = TRUE;
out:
    sqlite3_finalize(stmt);
    if (!ok)
        query_estimates_clear(e);
    return ok;
}

gboolean query_estimates_survivors(sqlite3 *db, int64_t gc, gboolean *estimated, GError **error)
{
    gboolean row = FALSE;
    sqlite3_stmt *stmt = query_db_prepare(
        db,
        "SELECT instr(coalesce((SELECT flags FROM run WHERE id = 1), ''), 'samples-followed') > 0"
        "   AND NOT EXISTS (SELECT 1 FROM snapshots WHERE gc = ?1)",
        error);
    gboolean ok = stmt != NULL;
    if (ok) {
        sqlite3_bind_int64(stmt, 1, gc);
        ok = query_db_step(stmt, &row, error);
    }
    *estimated = ok && row && sqlite3_column_int(stmt, 0) != 0;
    sqlite3_finalize(stmt);
    return ok;
}

/* The rows less the objects left in gen0 at a snapshot's GC but the last's (estimates.h,
 * QUERY_SURVIVED_ROWS_SQL_HEAD), count and bytes, from the summary's spans (an object's first
 * span starts at its first_gc, in its first generation) or the packed rows (each chunk holds
 * one first generation; an entry without a size has the size of its row's first object of its
 * type: estimates per chunk and type, one pass over the JSON, only when `?2` asks for bytes).
 * ?1: the first GC whose rows count (after an attach's first snapshot; 0: every one). */
static const char survived_rows_spans_sql[] =
    QUERY_SURVIVED_ROWS_SQL_HEAD
    " SELECT total(CASE WHEN generation < 5 AND first_gc > ?1 THEN count END),"
    "        total(CASE WHEN generation < 5 AND first_gc > ?1 THEN bytes END),"
    "        total(CASE WHEN generation = 0 AND first_gc IN snapshot_gcs THEN count END),"
    "        total(CASE WHEN generation = 0 AND first_gc IN snapshot_gcs THEN bytes END)"
    " FROM object_spans WHERE from_gc = first_gc";
static const char survived_rows_chunks_sql[] =
    QUERY_SURVIVED_ROWS_SQL_HEAD
    " SELECT total(CASE WHEN generation < 5 AND gc > ?1 THEN count END),"
    "        total(CASE WHEN generation < 5 AND gc > ?1 THEN b END),"
    "        total(CASE WHEN generation = 0 AND gc IN snapshot_gcs THEN count END),"
    "        total(CASE WHEN generation = 0 AND gc IN snapshot_gcs THEN b END)"
    " FROM (SELECT c.gc, c.generation, c.count,"
    "              CASE WHEN ?2 THEN (SELECT total(e + i * f) FROM"
    "                   (SELECT total(j.value ->> 2) AS e, total(j.value ->> 2 IS NULL) AS i,"
    "                           j.value ->> 2 AS f, min(j.key)"
    "                    FROM json_each(c.objects) j GROUP BY j.value ->> 1)) END AS b"
    "       FROM object_chunks c)";

static gboolean survived_rows_query(sqlite3 *db, const char *sql, int64_t base, gboolean bytes,
                                    int64_t v[4], GError **error)
{
    gboolean row = FALSE;
    sqlite3_stmt *stmt = query_db_prepare(db, sql, error);
    gboolean ok = stmt != NULL;
    if (ok) {
        sqlite3_bind_int64(stmt, 1, base);
        sqlite3_bind_int(stmt, 2, bytes);
        ok = query_db_step(stmt, &row, error);
    }
    for (int i = 0; ok && i < 4; i++)
        v[i] = row ? MAX((int64_t)sqlite3_column_double(stmt, i), 0) : 0;
    sqlite3_finalize(stmt);
    return ok;
}

/* Raises s->proven to what the objects rows prove, and sets s->exact when they are the count
 * (estimates.h, QUERY_SURVIVED_ROWS_SQL_HEAD). */
static gboolean survived_rows_read(sqlite3 *db, const query_estimates *e, gboolean bytes,
                                   query_survived *s, GError **error)
{
    gboolean spans = FALSE;
    int64_t chunk_generations = 0, view = 0, base = 0, every = 0, lost = 0;
    int64_t v[4] = {0};
    if (!query_db_has_spans(db, FALSE, &spans, error) ||
        (!spans &&
         (!query_db_int(db, "SELECT count(*) FROM sqlite_schema"
                            " WHERE type = 'view' AND name = 'objects'", &view, error) ||
          !query_db_int(db, "SELECT count(*) FROM pragma_table_info('object_chunks')"
                            " WHERE name = 'generation'", &chunk_generations, error))))
        return FALSE;
    if (!spans && !(view && chunk_generations))
        return TRUE; /* objects built by an older heaplens, without the summary */
    if (e->attach && !query_db_int(db, "SELECT coalesce(min(gc), 0) FROM snapshots", &base,
                                   error))
        return FALSE;
    const char *sql = spans ? survived_rows_spans_sql : survived_rows_chunks_sql;
    /* counts first: the chunks' bytes cost a pass over their JSON, read only when they show */
    if (!survived_rows_query(db, sql, base, spans, v, error))
        return FALSE;
    int64_t rows = v[0], in_gen0 = v[2];
    if (!query_db_int(db,
                      "SELECT (SELECT count(*) FROM gcs) > 0"
                      "   AND NOT EXISTS (SELECT 1 FROM gcs WHERE incomplete <> 0"
                      "                   OR gc NOT IN (SELECT gc FROM snapshots))",
                      &every, error) ||
        !query_db_gcs_lost(db, &lost, error))
        return FALSE;
    /* Every survivor has a row when every GC's snapshot named them (the rows must hold what the
     * largest snapshot proves: else the snapshots and objects disagree, a damaged or edited
     * file); the samples' estimate is then no figure: it can fall outside [rows - in gen0,
     * rows] either way (Checkpoints: ~6,462 for 4,464). */
    s->named = every && lost == 0 && !e->attach && rows >= s->proven;
    s->at_most = s->named ? rows : -1;
    /* exact: no row twice, or the largest snapshot holds as many as the rows */
    gboolean exact = s->named && (in_gen0 == 0 || s->proven >= rows);
    gboolean more = rows - in_gen0 > s->proven && (s->named || rows - in_gen0 > s->estimated);
    if (!more && !exact)
        return TRUE;
    if (!spans && bytes && !survived_rows_query(db, sql, base, TRUE, v, error))
        return FALSE;
    s->exact = exact;
    s->proven = exact ? v[0] : v[0] - v[2];
    s->proven_bytes = MAX(exact ? v[1] : v[1] - v[3], 0);
    return TRUE;
}

gboolean query_survived_read(sqlite3 *db, const query_estimates *e, gboolean bytes,
                             query_survived *s, GError **error)
{
    gboolean row = FALSE;
    gboolean ok = FALSE;
    memset(s, 0, sizeof *s);
    s->at_most = -1;
    sqlite3_stmt *stmt = query_db_prepare(db, QUERY_ESTIMATES_FOLLOWED_SURVIVED_SQL, error);
    if (!stmt || !query_db_step(stmt, &row, error))
        goto out;
    if (row) {
        s->estimated = sqlite3_column_int64(stmt, 0);
        s->estimated_bytes = sqlite3_column_int64(stmt, 1);
    }
    sqlite3_finalize(stmt);
    /* The largest snapshot; in an attach session less the first one (the heap found there): a
     * set less another holds at least the difference of their sizes. */
    stmt = query_db_prepare(
        db,
        "WITH s AS (SELECT snapshot, objects - coalesce(frozen, 0) AS n, coalesce(bytes, 0) AS b"
        "           FROM snapshots),"
        "     base AS (SELECT n, b FROM s WHERE ?1 ORDER BY snapshot LIMIT 1)"
        " SELECT max(0, coalesce(max(n), 0) - coalesce((SELECT n FROM base), 0)),"
        "        max(0, coalesce(max(b), 0) - coalesce((SELECT b FROM base), 0))"
        " FROM s",
        error);
    if (!stmt)
        goto out;
    sqlite3_bind_int(stmt, 1, e->attach);
    if (!query_db_step(stmt, &row, error))
        goto out;
    if (row) {
        s->proven = MAX(sqlite3_column_int64(stmt, 0), 0);
        s->proven_bytes = MAX(sqlite3_column_int64(stmt, 1), 0);
    }
    sqlite3_finalize(stmt);
    stmt = NULL;
    if (!survived_rows_read(db, e, bytes, s, error))
        goto out;
    if (s->exact) {
        s->count = s->proven;
        s->bytes = s->proven_bytes;
        ok = TRUE;
        goto out;
    }
    /* One figure or the other, count and bytes together: a lower bound is not mixed with an
     * estimate; every survivor named, the bound is the figure (and the rows one above). */
    s->at_least = s->proven > s->estimated || s->named;
    s->count = s->at_least ? s->proven : s->estimated;
    s->bytes = s->at_least ? s->proven_bytes : s->estimated_bytes;
    ok = TRUE;
out:
    sqlite3_finalize(stmt);
    return ok;
}

void query_estimates_clear(query_estimates *e)
{
    g_clear_pointer(&e->mode, g_free);
    g_clear_pointer(&e->source, g_free);
}

char *query_estimates_sampling_text_new(const query_estimates *e)
{
    char samples[QUERY_FORMAT_MAX], distance[QUERY_FORMAT_MAX], dropped[QUERY_FORMAT_MAX];
    if (!e->source)
        return g_strdup("none");
    GString *text = g_string_new(NULL);
    g_string_append_printf(text, "%s %s (%s, %s", query_count_format(e->samples, samples),
                           e->samples == 1 ? "sample" : "samples", e->source,
                           e->biased ? "biased toward large objects" : "unbiased");
    if (e->mean_distance_bytes > 0)
        g_string_append_printf(text, ", one per %s allocated on average",
                               query_size_format(e->mean_distance_bytes, distance));
    g_string_append_printf(text, "), %s dropped", query_count_format(e->samples_dropped, dropped));
    return g_string_free(text, FALSE);
}

/* The note's last words: what is exact beyond the allocations. */
static const char *query_estimates_survivors_text(const query_estimates *e)
{
    return e->followed ? "GCs and snapshots are exact; survivors after a GC without a snapshot "
                         "are ESTIMATES from the objects of the samples, followed"
                       : "survivors, GCs and snapshots are exact";
}

char *query_estimates_note_new(const query_estimates *e)
{
    if (!e->uncounted)
        return NULL;
    const char *exact = e->attach ? "large-object" : "large-object and pinned-object";
    if (e->census) {
        char samples[QUERY_FORMAT_MAX];
        char budgeted[QUERY_FORMAT_MAX];
        g_autofree char *thinned =
            e->samples_budgeted > 0
                ? g_strdup_printf("; %s of them left out by the sample budget, the kept ones "
                                  "weighing for them",
                                  query_count_format(e->samples_budgeted, budgeted))
                : g_strdup("");
        g_autofree char *sampled =
            e->samples > 0 ? g_strdup_printf("ESTIMATES from %s allocation samples (%s%s), "
                                             "scaled to the exact totals per type",
                                             query_count_format(e->samples, samples), e->source,
                                             thinned)
                           : g_strdup("not known (no allocation was sampled)");
        char missing[QUERY_FORMAT_MAX];
        g_autofree char *gaps =
            e->census_missing > 0
                ? g_strdup_printf(" and in %s GC %s it did not count",
                                  query_count_format(e->census_missing, missing),
                                  e->census_missing == 1 ? "interval" : "intervals")
                : g_strdup("");
        return g_strdup_printf("%s mode: allocation counts per type are EXACT (small objects by a "
                               "census of gen0 at every GC, %s allocations reported by the "
                               "runtime), except after the last GC%s (estimated); per thread and "
                               "per stack they are %s; %s",
                               e->mode, exact, gaps, sampled, query_estimates_survivors_text(e));
    }
    /* Recorded with --census off: why small objects are not counted, said first. */
    const char *off = e->census_off ? " (recorded with --census off: no census of gen0 counted "
                                      "the small objects)"
                                    : "";
    if (!e->estimated && e->census_off)
        return g_strdup_printf("%s mode: small-object allocations are not counted (recorded with "
                               "--census off and no allocation sampled): only %s allocations "
                               "are counted exactly; %s",
                               e->mode, exact, query_estimates_survivors_text(e));
    if (!e->estimated)
        return g_strdup_printf("%s mode: allocation counts are not recorded (only %s allocations "
                               "are counted exactly, and no allocation was sampled); %s",
                               e->mode, exact, query_estimates_survivors_text(e));
    char samples[QUERY_FORMAT_MAX], dropped[QUERY_FORMAT_MAX];
    g_autofree char *lost =
        e->samples_dropped > 0
            ? g_strdup_printf("; %s samples were lost: estimates are low",
                              query_count_format(e->samples_dropped, dropped))
            : g_strdup("");
    return g_strdup_printf("%s mode: allocation figures are ESTIMATES%s: small objects from %s "
                           "allocation samples (%s%s%s), %s allocations counted exactly; %s",
                           e->mode, off, query_count_format(e->samples, samples), e->source,
                           e->biased ? ", biased toward large objects" : ", unbiased", lost,
                           exact, query_estimates_survivors_text(e));
}

json_t *query_estimates_json(const query_estimates *e)
{
    g_autofree char *note = query_estimates_note_new(e);
    json_t *sampling =
        e->source
            ? json_pack("{s:s, s:o, s:b, s:I, s:I}", "source", e->source, "mean_distance_bytes",
                        e->mean_distance_bytes >= 0 ? json_integer(e->mean_distance_bytes)
                                                    : json_null(),
                        "biased", e->biased, "samples", (json_int_t)e->samples,
                        "samples_dropped", (json_int_t)e->samples_dropped)
            : json_null();
    return json_pack("{s:o, s:b, s:b, s:b, s:o, s:o}", "mode", query_json_string(e->mode),
                     "estimated", e->estimated, "exact_per_type", !e->uncounted || e->census,
                     "census_off", e->census_off, "note", query_json_string(note), "sampling",
                     sampling);
}

const char *query_estimates_source_sql(const query_estimates *e)
{
    /* The samples of the objects alloc_counts already holds exactly (LOH; POH except in attach
     * mode) are left out. */
    return e->census ? "(" STORE_ALLOCATIONS_EXACT_SQL ")"
           : !e->estimated ? "(SELECT gc, type_id, thread, heap, count, bytes FROM alloc_counts)"
           : e->attach
               ? "(SELECT gc, type_id, thread, heap, count, bytes FROM alloc_counts UNION ALL"
                 " SELECT gc, type_id, thread, heap, est_count, est_bytes FROM alloc_samples"
                 " WHERE heap = 0 OR heap = 4)"
               : "(SELECT gc, type_id, thread, heap, count, bytes FROM alloc_counts UNION ALL"
                 " SELECT gc, type_id, thread, heap, est_count, est_bytes FROM alloc_samples"
                 " WHERE heap = 0)";
}

char *query_estimates_sql_new(const query_estimates *e, const char *group, const char *where)
{
    /* Estimates are summed as reals and rounded once, per group. Only a question about threads
     * needs the census spread over them; one about intervals (allocations --between) keeps its
     * exact counts per interval. */
    gboolean spread = (where && strstr(where, "thread")) || (group && strstr(group, "thread"));
    const char *source = e->census && spread ? "(" STORE_ALLOCATIONS_SPREAD_SQL ")"
                         : e->census || e->estimated ? query_estimates_source_sql(e)
                                                     : "alloc_counts";
    const char *sums = e->estimated || e->census ? "CAST(round(total(count)) AS INTEGER) AS count,"
                                      " CAST(round(total(bytes)) AS INTEGER) AS bytes"
                                    : "coalesce(sum(count), 0) AS count,"
                                      " coalesce(sum(bytes), 0) AS bytes";
    return g_strdup_printf("SELECT %s%s%s FROM %s%s%s%s%s", group ? group : "", group ? ", " : "",
                           sums, source, where ? " WHERE " : "", where ? where : "",
                           group ? " GROUP BY " : "", group ? group : "");
}

/* ---- the one allocation total ------------------------------------------------------------ */

static int64_t totals_round(double v)
{
    return v >= 9.2e18 ? INT64_MAX : v <= 0 ? 0 : (int64_t)llround(v);
}

gboolean query_totals_read(sqlite3 *db, const query_estimates *e, query_totals *t, GError **error)
{
    gboolean ok = FALSE;
    gboolean row = FALSE;
    gboolean stepped = FALSE;
    memset(t, 0, sizeof *t);
    t->seen = QUERY_NULL;
    /* What was counted, by how: reported one by one (0), unreported (1), the census (2). */
    sqlite3_stmt *stmt = query_db_prepare(
        db, "SELECT flags & 3, total(count), total(bytes) FROM alloc_counts GROUP BY 1", error);
    while (stmt && (stepped = query_db_step(stmt, &row, error)) && row) {
        int64_t count = totals_round(sqlite3_column_double(stmt, 1));
        int64_t bytes = totals_round(sqlite3_column_double(stmt, 2));
        switch (sqlite3_column_int(stmt, 0)) {
        case 0:
            t->reported = count, t->reported_bytes = bytes;
            break;
        case 1:
            t->unreported = count, t->unreported_bytes = bytes;
            break;
        default: /* 2, and 3, which no writer makes: counted, not reported */
            t->census = query_add_saturating(t->census, count);
            t->census_bytes = query_add_saturating(t->census_bytes, bytes);
            break;
        }
    }
    if (!stmt || !stepped)
        goto out;
    sqlite3_finalize(stmt);
    stmt = NULL;
    /* What was estimated: the samples the source adds to alloc_counts, rounded per type as
     * `allocations` and `stacks` show them, so that their rows add up to the total. */
    if (e->census || e->estimated) {
        const char *sql =
            e->census ? "SELECT total(c), total(b) FROM (SELECT round(total(count)) AS c,"
                        " round(total(bytes)) AS b FROM (" STORE_ALLOCATIONS_EXACT_SQL
                        ") WHERE sampled GROUP BY type_id)"
            : e->attach ? "SELECT total(c), total(b) FROM (SELECT round(total(est_count)) AS c,"
                          " round(total(est_bytes)) AS b FROM alloc_samples"
                          " WHERE heap = 0 OR heap = 4 GROUP BY type_id)"
                        : "SELECT total(c), total(b) FROM (SELECT round(total(est_count)) AS c,"
                          " round(total(est_bytes)) AS b FROM alloc_samples"
                          " WHERE heap = 0 GROUP BY type_id)";
        stmt = query_db_prepare(db, sql, error);
        if (!stmt || !query_db_step(stmt, &row, error))
            goto out;
        t->estimated = totals_round(sqlite3_column_double(stmt, 0));
        t->estimated_bytes = totals_round(sqlite3_column_double(stmt, 1));
        sqlite3_finalize(stmt);
        stmt = NULL;
    }
    stmt = query_db_prepare(db,
                            "SELECT (SELECT value FROM counters WHERE name = 'allocs_seen'),"
                            "       (SELECT value FROM counters WHERE name = 'allocs_dropped')",
                            error);
    if (!stmt || !query_db_step(stmt, &row, error))
        goto out;
    if (sqlite3_column_type(stmt, 0) == SQLITE_INTEGER)
        t->seen = sqlite3_column_int64(stmt, 0);
    /* A negative counter is not a count (the note says the file is damaged or edited). */
    if (sqlite3_column_type(stmt, 1) == SQLITE_INTEGER)
        t->lost = MAX(sqlite3_column_int64(stmt, 1), 0);
    if (t->seen != QUERY_NULL)
        t->unstored = MAX(query_sub_saturating(query_sub_saturating(t->seen, t->reported), t->lost),
                          0);
    t->count = query_add_saturating(
        query_add_saturating(t->reported, t->unreported),
        query_add_saturating(t->census, t->estimated));
    t->bytes = query_add_saturating(
        query_add_saturating(t->reported_bytes, t->unreported_bytes),
        query_add_saturating(t->census_bytes, t->estimated_bytes));
    ok = TRUE;
out:
    sqlite3_finalize(stmt);
    return ok;
}

gboolean query_totals_estimated(const query_totals *t, const query_estimates *e)
{
    return t->estimated > 0 || (e->estimated && !e->census);
}

GPtrArray *query_totals_terms_new(const query_totals *t, const query_estimates *e)
{
    char a[QUERY_FORMAT_MAX], b[QUERY_FORMAT_MAX], c[QUERY_FORMAT_MAX];
    GPtrArray *terms = g_ptr_array_new_with_free_func(g_free);
    if (t->unreported == 0 && t->census == 0 && t->estimated == 0 && t->lost == 0 &&
        t->unstored == 0 && !e->uncounted)
        return terms;
    /* Each line fits a 120-column terminal after info's indentation (19 columns). */
    const char *plus = "";
    if (t->census > 0) {
        g_ptr_array_add(terms, g_strdup_printf("%s (%s) small objects counted exactly by the "
                                               "census of gen0",
                                               query_count_format(t->census, a),
                                               query_size_format(t->census_bytes, b)));
        plus = "+ ";
    }
    g_ptr_array_add(terms, g_strdup_printf("%s%s (%s) %sreported by the runtime one by one", plus,
                                           query_count_format(t->reported, a),
                                           query_size_format(t->reported_bytes, b),
                                           !e->uncounted ? ""
                                           : e->attach   ? "large objects "
                                                         : "large and pinned objects "));
    if (t->unreported > 0)
        g_ptr_array_add(terms, g_strdup_printf("+ %s (%s) not reported by the runtime (delegates, "
                                               "boxes), counted in gen0 at each GC",
                                               query_count_format(t->unreported, a),
                                               query_size_format(t->unreported_bytes, b)));
    gboolean estimates = t->estimated > 0 || (e->uncounted && !e->census);
    if (estimates)
        g_ptr_array_add(terms, g_strdup_printf("+ ~%s (~%s) small objects ESTIMATED from %s "
                                               "%s%s",
                                               query_count_format(t->estimated, a),
                                               query_size_format(t->estimated_bytes, b),
                                               query_count_format(e->samples, c),
                                               e->samples == 1 ? "sample" : "samples",
                                               e->census       ? ", where the census did not count"
                                               : e->census_off ? " (--census off)"
                                                               : ""));
    int64_t least = query_add_saturating(query_add_saturating(t->count, t->lost), t->unstored);
    g_autofree char *in_all = g_strdup_printf(": at least %s in all", query_count_format(least, b));
    if (t->lost > 0)
        g_ptr_array_add(terms, g_strdup_printf("not in the total: %s reported, then lost uncounted "
                                               "(allocs_dropped)%s",
                                               query_count_format(t->lost, a),
                                               t->unstored > 0 ? "" : in_all));
    if (t->unstored > 0)
        g_ptr_array_add(terms, g_strdup_printf("not in the total: %s reported and sent, never "
                                               "stored (the writer stopped)%s",
                                               query_count_format(t->unstored, a), in_all));
    if (estimates && e->samples_dropped > 0)
        g_ptr_array_add(terms, g_strdup_printf("%s allocation samples were lost: the estimate "
                                               "is low",
                                               query_count_format(e->samples_dropped, a)));
    return terms;
}

static json_t *totals_pair_json(int64_t count, int64_t bytes)
{
    return json_pack("{s:I, s:I}", "count", (json_int_t)count, "bytes", (json_int_t)bytes);
}

json_t *query_totals_json(const query_totals *t, const query_estimates *e)
{
    g_autoptr(GPtrArray) terms = query_totals_terms_new(t, e);
    json_t *words = json_array();
    for (guint i = 0; i < terms->len; i++)
        json_array_append_new(words, query_json_string(g_ptr_array_index(terms, i)));
    return json_pack("{s:I, s:I, s:o, s:o, s:o, s:o, s:o, s:I, s:I, s:o}", "count",
                     (json_int_t)t->count, "bytes", (json_int_t)t->bytes, "reported",
                     totals_pair_json(t->reported, t->reported_bytes), "unreported",
                     totals_pair_json(t->unreported, t->unreported_bytes), "census",
                     totals_pair_json(t->census, t->census_bytes), "estimated",
                     totals_pair_json(t->estimated, t->estimated_bytes), "seen",
                     query_json_value(t->seen), "lost", (json_int_t)t->lost, "unstored",
                     (json_int_t)t->unstored, "terms", words);
}
