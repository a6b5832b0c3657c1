/* estimates.c — exact or estimated allocation figures (estimates.h). */
#include "query/estimates.h"

#include "query/query.h"
#include "store/store.h"

#include <string.h>

gboolean query_estimates_get(sqlite3 *db, query_estimates *e, GError **error)
{
    gboolean row = FALSE;
    gboolean ok = FALSE;
    memset(e, 0, sizeof *e);
    e->mean_distance_bytes = -1;
    sqlite3_stmt *stmt = query_db_prepare(db, "SELECT mode FROM run WHERE id = 1", error);
    if (!stmt || !query_db_step(stmt, &row, error))
        goto out;
    if (row && sqlite3_column_text(stmt, 0))
        e->mode = g_strdup((const char *)sqlite3_column_text(stmt, 0));
    sqlite3_finalize(stmt);
    e->attach = g_strcmp0(e->mode, "attach") == 0;
    e->uncounted = e->attach || g_strcmp0(e->mode, "sampled") == 0;

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

char *query_estimates_note_new(const query_estimates *e)
{
    if (!e->uncounted)
        return NULL;
    const char *exact = e->attach ? "large-object" : "large-object and pinned-object";
    if (e->census) {
        char samples[QUERY_FORMAT_MAX];
        g_autofree char *sampled =
            e->samples > 0 ? g_strdup_printf("ESTIMATES from %s allocation samples (%s), scaled "
                                             "to the exact totals per type",
                                             query_count_format(e->samples, samples), e->source)
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
                               "per stack they are %s; survivors, GCs and snapshots are exact",
                               e->mode, exact, gaps, sampled);
    }
    if (!e->estimated)
        return g_strdup_printf("%s mode: allocation counts are not recorded (only %s allocations "
                               "are counted exactly, and no allocation was sampled); survivors, "
                               "GCs and snapshots are exact",
                               e->mode, exact);
    char samples[QUERY_FORMAT_MAX], dropped[QUERY_FORMAT_MAX];
    g_autofree char *lost =
        e->samples_dropped > 0
            ? g_strdup_printf("; %s samples were lost: estimates are low",
                              query_count_format(e->samples_dropped, dropped))
            : g_strdup("");
    return g_strdup_printf("%s mode: allocation figures are ESTIMATES: small objects from %s "
                           "allocation samples (%s%s%s), %s allocations counted exactly; "
                           "survivors, GCs and snapshots are exact",
                           e->mode, query_count_format(e->samples, samples), e->source,
                           e->biased ? ", biased toward large objects" : ", unbiased", lost,
                           exact);
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
    return json_pack("{s:o, s:b, s:b, s:o, s:o}", "mode", query_json_string(e->mode),
                     "estimated", e->estimated, "exact_per_type", !e->uncounted || e->census,
                     "note", query_json_string(note), "sampling", sampling);
}

char *query_estimates_sql_new(const query_estimates *e, const char *group, const char *where)
{
    /* Estimates are summed as reals and rounded once, per group. The samples of the objects
     * alloc_counts already holds exactly (LOH; POH except in attach mode) are left out. */
    /* Only a question about threads needs the census spread over them; one about intervals
     * (allocations --between) keeps its exact counts per interval. */
    gboolean spread = (where && strstr(where, "thread")) || (group && strstr(group, "thread"));
    const char *source =
        e->census ? (spread ? "(" STORE_ALLOCATIONS_SPREAD_SQL ")" : "(" STORE_ALLOCATIONS_EXACT_SQL ")")
        : !e->estimated ? "alloc_counts"
        : e->attach
            ? "(SELECT gc, type_id, thread, heap, count, bytes FROM alloc_counts UNION ALL"
              " SELECT gc, type_id, thread, heap, est_count, est_bytes FROM alloc_samples"
              " WHERE heap = 0 OR heap = 4)"
            : "(SELECT gc, type_id, thread, heap, count, bytes FROM alloc_counts UNION ALL"
              " SELECT gc, type_id, thread, heap, est_count, est_bytes FROM alloc_samples"
              " WHERE heap = 0)";
    const char *sums = e->estimated || e->census ? "CAST(round(total(count)) AS INTEGER) AS count,"
                                      " CAST(round(total(bytes)) AS INTEGER) AS bytes"
                                    : "coalesce(sum(count), 0) AS count,"
                                      " coalesce(sum(bytes), 0) AS bytes";
    return g_strdup_printf("SELECT %s%s%s FROM %s%s%s%s%s", group ? group : "", group ? ", " : "",
                           sums, source, where ? " WHERE " : "", where ? where : "",
                           group ? " GROUP BY " : "", group ? group : "");
}
