/* survivors.c — the objects alive right after a GC (survivors.h). */
#include "query/survivors.h"

#include "query/estimates.h"
#include "query/query.h"
#include "store/store.h"

#include <inttypes.h>
#include <string.h>

/* "Alive after GC n in generation g" (SCHEMA.md): from_gc <= n < until_gc. The range on from_gc
 * can use object_generations_by_gc; objects are joined by primary key. */
/* ?2: --top K keeps the K groups with the most bytes (all when NULL); the totals and the group
 * count (columns 4..6) are over all groups. */
/* Rows read that no recording holds (a size or type that is not a number, a negative size, an
 * unknown generation), counted over all groups as they are read: column 7 (8 by age). */
#define SURVIVORS_DAMAGED "SUM(" QUERY_LIVE_GROUP_DAMAGED_SQL ") OVER () AS damaged"
/* A group's objects and bytes before rounding: each object counts 1, or its sample's weight in
 * a sampled recording that follows its samples, between snapshots (store.h
 * STORE_SURVIVOR_SAMPLE_ON): estimates, rounded by SURVIVORS_APPORTIONED. */
#define SURVIVORS_N "total(coalesce(s.est_count, 1))"
#define SURVIVORS_BYTES "total(coalesce(s.est_count, 1) * o.size)"
#define SURVIVORS_FROM                                                                            \
    "FROM object_generations AS og LEFT JOIN objects AS o ON o.id = og.object_id"                 \
    " LEFT JOIN alloc_samples AS s ON " STORE_SURVIVOR_SAMPLE_ON("s", "o", "?1")                \
    " WHERE og.from_gc <= ?1 AND (og.until_gc IS NULL OR og.until_gc > ?1)"

/* Estimates rounded once (store.h STORE_APPORTIONED_CTES). `grouped` selects the groups: `keys`
 * (the grouping's columns, type_id last), rn and rb (objects and bytes before rounding) and
 * damaged. The rows: `cols` (the keys but type_id), the type's name, objects, bytes, then the
 * totals and the group count over all groups; ?2 (--top K) keeps the K groups with the most
 * bytes. */
#define SURVIVORS_APPORTIONED(keys, grouped, cols, order)                                         \
    "WITH grp AS (" grouped ")," STORE_APPORTIONED_CTES("", keys) ","                             \
    " ranked AS (SELECT fit.*, ROW_NUMBER() OVER (ORDER BY bytes DESC, n DESC) AS rank FROM fit)"  \
    " SELECT " cols ", COALESCE(t.name, '<type ' || ranked.type_id || '>'), n, bytes,"             \
    "        all_n, all_bytes, groups, damaged"                                                    \
    "   FROM ranked LEFT JOIN types AS t ON t.id = ranked.type_id"                                 \
    "  WHERE ?2 IS NULL OR rank <= ?2"                                                             \
    "  ORDER BY " order

static const char survivors_sql[] = SURVIVORS_APPORTIONED(
    "generation, type_id",
    "SELECT og.generation AS generation, o.type_id AS type_id, " SURVIVORS_N " AS rn, "
    SURVIVORS_BYTES " AS rb, " SURVIVORS_DAMAGED " " SURVIVORS_FROM
    " GROUP BY og.generation, o.type_id",
    "generation", "generation, bytes DESC, n DESC, 2");

/* The same objects, grouped by age: GCs survived = N - first_gc + 1 (first_gc is the first GC
 * after the allocation; an object found in a heap walk is as old as that walk, a lower bound).
 * ?2 and the columns after the type as in survivors_sql. */
static const char survivors_age_sql[] = SURVIVORS_APPORTIONED(
    "age, generation, type_id",
    "SELECT ?1 - o.first_gc + 1 AS age, og.generation AS generation, o.type_id AS type_id, "
    SURVIVORS_N " AS rn, " SURVIVORS_BYTES " AS rb, " SURVIVORS_DAMAGED " " SURVIVORS_FROM
    " GROUP BY 1, og.generation, o.type_id",
    "age, generation", "age, generation, bytes DESC, n DESC, 3");

/* The same two questions over object_spans (query_db_has_spans): a span is the objects of one
 * type and first GC that held one generation over the same GCs, so the groups, their sums and
 * their order are those above, read from a few rows instead of every object. Damage: counts or
 * bytes that are negative or not numbers, an unknown generation or type, GCs that are not
 * numbers (read as damage, not as alive or not). */
#define SURVIVORS_SPANS_DAMAGED(more)                                                              \
    "SUM(MIN(sp.count) < 0 OR MIN(sp.bytes) < 0"                                                   \
    " OR typeof(SUM(sp.bytes)) NOT IN ('integer', 'null')"                                         \
    " OR typeof(SUM(sp.count)) NOT IN ('integer', 'null')"                                         \
    " OR NOT (sp.generation BETWEEN 0 AND 5) OR NOT (sp.type_id BETWEEN 0 AND 4294967295)"         \
    " OR MAX(NOT (sp.first_gc BETWEEN 0 AND 4294967295)"                                           \
    "        OR NOT (sp.from_gc BETWEEN 0 AND 4294967295)"                                         \
    "        OR NOT (coalesce(sp.until_gc, 0) BETWEEN 0 AND 4294967295))" more ") OVER () AS damaged"
#define SURVIVORS_SPANS_ALIVE                                                                      \
    "  FROM object_spans AS sp"                                                                    \
    " WHERE (sp.from_gc <= ?1 AND (sp.until_gc IS NULL OR sp.until_gc > ?1))"                      \
    "    OR typeof(sp.from_gc) <> 'integer' OR typeof(coalesce(sp.until_gc, 0)) <> 'integer'"
/* Each object once, or (a sampled recording's estimates, query_db_has_spans with weights) the
 * spans' weights before their reset and their objects from it on, rounded as survivors_sql
 * rounds its objects' weights; weights that are negative or not numbers are damage. */
#define SURVIVORS_SPANS_N "SUM(sp.count)"
#define SURVIVORS_SPANS_BYTES "SUM(sp.bytes)"
#define SURVIVORS_SPANS_WEIGHED(count, est)                                                        \
    "total(CASE WHEN sp.reset <= ?1 THEN sp." count " ELSE coalesce(sp." est ", sp." count ") END)"
#define SURVIVORS_SPANS_EST_N SURVIVORS_SPANS_WEIGHED("count", "est_count")
#define SURVIVORS_SPANS_EST_BYTES SURVIVORS_SPANS_WEIGHED("bytes", "est_bytes")
#define SURVIVORS_SPANS_EST_DAMAGED                                                                \
    " OR MIN(sp.est_count) < 0 OR MIN(sp.est_bytes) < 0"                                           \
    " OR typeof(MAX(sp.est_count)) NOT IN ('integer', 'real', 'null')"                             \
    " OR typeof(MAX(sp.est_bytes)) NOT IN ('integer', 'real', 'null')"

#define SURVIVORS_SPANS_SQL(n, bytes, more)                                                        \
    SURVIVORS_APPORTIONED("generation, type_id",                                                   \
                          "SELECT sp.generation AS generation, sp.type_id AS type_id, " n " AS rn, " \
                          bytes " AS rb, " SURVIVORS_SPANS_DAMAGED(more) SURVIVORS_SPANS_ALIVE    \
                          " GROUP BY sp.generation, sp.type_id",                                   \
                          "generation", "generation, bytes DESC, n DESC, 2")

#define SURVIVORS_SPANS_AGE_SQL(n, bytes, more)                                                    \
    SURVIVORS_APPORTIONED("age, generation, type_id",                                              \
                          "SELECT ?1 - sp.first_gc + 1 AS age, sp.generation AS generation,"       \
                          " sp.type_id AS type_id, " n " AS rn, " bytes " AS rb, "                 \
                          SURVIVORS_SPANS_DAMAGED(more) SURVIVORS_SPANS_ALIVE                      \
                          " GROUP BY 1, sp.generation, sp.type_id",                                \
                          "age, generation", "age, generation, bytes DESC, n DESC, 3")

static const char survivors_spans_sql[] =
    SURVIVORS_SPANS_SQL(SURVIVORS_SPANS_N, SURVIVORS_SPANS_BYTES, "");
static const char survivors_spans_age_sql[] =
    SURVIVORS_SPANS_AGE_SQL(SURVIVORS_SPANS_N, SURVIVORS_SPANS_BYTES, "");
static const char survivors_spans_est_sql[] =
    SURVIVORS_SPANS_SQL(SURVIVORS_SPANS_EST_N, SURVIVORS_SPANS_EST_BYTES,
                        SURVIVORS_SPANS_EST_DAMAGED);
static const char survivors_spans_est_age_sql[] =
    SURVIVORS_SPANS_AGE_SQL(SURVIVORS_SPANS_EST_N, SURVIVORS_SPANS_EST_BYTES,
                            SURVIVORS_SPANS_EST_DAMAGED);

static void survivors_damaged(int64_t gc, GError **error)
{
    query_db_damaged(error,
                     "objects alive after GC %" PRId64 " have sizes, types or generations that "
                     "no recording holds", gc);
}

/* Picks the GC: `text` (the --gc value) or, when NULL, the last GC. Fails with one line naming
 * the valid range when there is no such GC, or when the recording has no GC at all. */
static gboolean survivors_gc_pick(sqlite3 *db, const char *path, const char *text, int64_t *gc,
                                  GError **error)
{
    gboolean ok = FALSE;
    gboolean row = FALSE;
    uint64_t wanted = 0;
    int64_t first = 0, last = 0, count = 0;
    sqlite3_stmt *stmt = NULL;

    if (text && !query_args_parse_uint("survivors", "gc", text, 0, G_MAXUINT64,
                                       "a GC number (1, 2, ...)", &wanted, error))
        goto out;
    stmt = query_db_prepare(db, "SELECT MIN(gc), MAX(gc), COUNT(*) FROM gcs", error);
    if (!stmt || !query_db_step(stmt, &row, error))
        goto out;
    first = sqlite3_column_int64(stmt, 0);
    last = sqlite3_column_int64(stmt, 1);
    count = sqlite3_column_int64(stmt, 2);
    if (count == 0) {
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_NOT_FOUND,
                    "%s has no GC, so nothing has survived one; see 'heaplens allocations'", path);
        goto out;
    }
    if (!text) {
        *gc = last;
        ok = TRUE;
        goto out;
    }
    if (wanted < (uint64_t)first || wanted > (uint64_t)last) {
        if (first == last)
            g_set_error(error, QUERY_ERROR, QUERY_ERROR_NOT_FOUND,
                        "no GC %" PRIu64 " in %s: it has one GC, GC %" PRId64, wanted, path, first);
        else
            g_set_error(error, QUERY_ERROR, QUERY_ERROR_NOT_FOUND,
                        "no GC %" PRIu64 " in %s: its GCs are %" PRId64 " to %" PRId64, wanted,
                        path, first, last);
        goto out;
    }
    if (count != last - first + 1) {
        /* A gap (should not happen: GCs are stored in order, without gaps). */
        int64_t exists = 0;
        g_autofree char *sql = g_strdup_printf("SELECT COUNT(*) FROM gcs WHERE gc = %" PRIu64,
                                               wanted);
        if (!query_db_int(db, sql, &exists, error))
            goto out;
        if (!exists) {
            g_set_error(error, QUERY_ERROR, QUERY_ERROR_NOT_FOUND,
                        "no GC %" PRIu64 " in %s: GC %" PRIu64 " is missing from %" PRId64
                        " to %" PRId64,
                        wanted, path, wanted, first, last);
            goto out;
        }
    }
    *gc = (int64_t)wanted;
    ok = TRUE;
out:
    sqlite3_finalize(stmt);
    return ok;
}

static void group_clear(void *row)
{
    g_free(((query_survivor_group *)row)->type);
}

void query_survivors_clear(query_survivors *s)
{
    if (s->groups)
        g_array_unref(s->groups);
    s->groups = NULL;
}

gboolean query_survivors_read(sqlite3 *db, const char *path, const char *gc_text,
                              gboolean by_age, uint64_t top, query_survivors *s, GError **error)
{
    gboolean ok = FALSE, row = FALSE, stepped = FALSE;
    sqlite3_stmt *stmt = NULL;
    const int first = by_age ? 1 : 0; /* the age column comes first */

    memset(s, 0, sizeof *s);
    s->groups = g_array_new(FALSE, TRUE, sizeof(query_survivor_group));
    g_array_set_clear_func(s->groups, group_clear);
    if (!survivors_gc_pick(db, path, gc_text, &s->gc, error) ||
        !query_estimates_survivors(db, s->gc, &s->estimated, error))
        goto out;
    /* Ages: exact where every survivor was followed from its allocation (full mode); else
     * the objects a snapshot named (most of them) are as old as that snapshot, at least. */
    if (by_age) {
        int64_t named = 0;
        if (!query_db_int(db,
                          "SELECT coalesce((SELECT mode = 'attach' OR instr(coalesce(flags, ''),"
                          " 'samples-followed') > 0 FROM run WHERE id = 1), 0)",
                          &named, error))
            goto out;
        s->ages_estimated = named != 0;
    }
    /* An estimate needs the spans' weights (a file summed up before they were has none). */
    gboolean spans = FALSE;
    if (!query_db_has_spans(db, s->estimated, &spans, error))
        goto out;
    const char *sql = !spans ? (by_age ? survivors_age_sql : survivors_sql)
                      : s->estimated ? (by_age ? survivors_spans_est_age_sql
                                               : survivors_spans_est_sql)
                                     : (by_age ? survivors_spans_age_sql : survivors_spans_sql);
    stmt = query_db_prepare(db, sql, error);
    if (!stmt)
        goto out;
    sqlite3_bind_int64(stmt, 1, s->gc);
    if (top)
        sqlite3_bind_int64(stmt, 2, (sqlite3_int64)top);
    while ((stepped = query_db_step(stmt, &row, error)) && row) {
        if (sqlite3_column_int64(stmt, first + 7) > 0) {
            survivors_damaged(s->gc, error);
            stepped = FALSE;
            break;
        }
        query_survivor_group g = {
            .age = by_age ? sqlite3_column_int64(stmt, 0) : 0,
            .generation = sqlite3_column_int64(stmt, first),
            .type = g_strdup((const char *)sqlite3_column_text(stmt, first + 1)),
            .count = sqlite3_column_int64(stmt, first + 2),
            .bytes = sqlite3_column_int64(stmt, first + 3),
        };
        g_array_append_val(s->groups, g);
        /* the same on every row: over all groups, also with --top */
        s->total_count = sqlite3_column_int64(stmt, first + 4);
        s->total_bytes = sqlite3_column_int64(stmt, first + 5);
        s->total_groups = sqlite3_column_int64(stmt, first + 6);
    }
    if (!stepped)
        goto out;
    ok = TRUE;
out:
    sqlite3_finalize(stmt);
    return ok;
}
