/* gcs.c — the GCs of a recording (gcs.h). */
#include "query/gcs.h"

#include "query/query.h"

/* One row per GC with its per-generation sizes pivoted into columns; GROUP BY the primary key
 * keeps it in GC order. */
#define GCS_SQL(census, skipped)                                                               \
    "SELECT g.gc, g.generation, g.reason, g.induced, g.compacting, g.pause_ns, g.start_ns,"    \
    "       g.end_ns, g.survived_bytes, g.moved_bytes, " QUERY_GC_OBJECTS_LIVE_SQL("g") ","      \
    "       g.incomplete,"                                                                      \
    "       MAX(CASE WHEN s.generation = 0 THEN s.size_before END),"                           \
    "       MAX(CASE WHEN s.generation = 0 THEN s.size_after END),"                            \
    "       MAX(CASE WHEN s.generation = 1 THEN s.size_before END),"                           \
    "       MAX(CASE WHEN s.generation = 1 THEN s.size_after END),"                            \
    "       MAX(CASE WHEN s.generation = 2 THEN s.size_before END),"                           \
    "       MAX(CASE WHEN s.generation = 2 THEN s.size_after END),"                            \
    "       MAX(CASE WHEN s.generation = 3 THEN s.size_before END),"                           \
    "       MAX(CASE WHEN s.generation = 3 THEN s.size_after END),"                            \
    "       MAX(CASE WHEN s.generation = 4 THEN s.size_before END),"                           \
    "       MAX(CASE WHEN s.generation = 4 THEN s.size_after END), " census ", " skipped        \
    "  FROM gcs AS g LEFT JOIN gc_generations AS s ON s.gc = g.gc"                             \
    " GROUP BY g.gc ORDER BY g.gc"
/* The census of gen0 (sampled mode, schema 6): its pause time and objects per GC; the snapshot
 * a GC went without (schema 9). Indexed [census][skipped]. */
static const char *const gcs_sql[2][2] = {
    {GCS_SQL("NULL, NULL", "NULL"), GCS_SQL("NULL, NULL", "g.snapshot_skipped")},
    {GCS_SQL("g.census_ns, g.census_objects", "NULL"),
     GCS_SQL("g.census_ns, g.census_objects", "g.snapshot_skipped")},
};

static const char *const size_gen_names[QUERY_SIZE_GENS] = {"gen0", "gen1", "gen2", "loh", "poh"};

void query_gc_read(sqlite3_stmt *stmt, query_gc *gc)
{
    const char *reason = (const char *)sqlite3_column_text(stmt, 2);
    *gc = (query_gc){
        .gc = sqlite3_column_int64(stmt, 0),
        .generation = query_db_column_value(stmt, 1),
        .reason = reason ? g_intern_string(reason) : NULL, /* a handful of names */
        .induced = query_db_column_flag(stmt, 3),
        .compacting = query_db_column_flag(stmt, 4),
        .pause_ns = query_db_column_value(stmt, 5),
        .start_ns = query_db_column_value(stmt, 6),
        .end_ns = query_db_column_value(stmt, 7),
        .survived_bytes = query_db_column_value(stmt, 8),
        .moved_bytes = query_db_column_value(stmt, 9),
        .objects_live = query_db_column_value(stmt, 10),
        .incomplete = query_db_column_flag(stmt, 11),
        .pinned_objects = QUERY_NULL,
        .census_ns = QUERY_NULL,
        .census_objects = QUERY_NULL,
    };
    for (int g = 0; g < QUERY_SIZE_GENS; g++) {
        gc->size_before[g] = query_db_column_value(stmt, 12 + 2 * g);
        gc->size_after[g] = query_db_column_value(stmt, 13 + 2 * g);
    }
}

json_t *query_gc_json(const query_gc *gc)
{
    json_t *before = json_object();
    json_t *after = json_object();
    for (int g = 0; g < QUERY_SIZE_GENS; g++) {
        json_object_set_new(before, size_gen_names[g], query_json_value(gc->size_before[g]));
        json_object_set_new(after, size_gen_names[g], query_json_value(gc->size_after[g]));
    }
    return json_pack("{s:I, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o}",
                     "gc", (json_int_t)gc->gc,
                     "generation", query_json_value(gc->generation),
                     "reason", query_json_string(gc->reason),
                     "induced", query_json_flag(gc->induced),
                     "compacting", query_json_flag(gc->compacting),
                     "pause_ns", query_json_value(gc->pause_ns),
                     "start_ns", query_json_value(gc->start_ns),
                     "end_ns", query_json_value(gc->end_ns),
                     "survived_bytes", query_json_value(gc->survived_bytes),
                     "moved_bytes", query_json_value(gc->moved_bytes),
                     "objects_live", query_json_value(gc->objects_live),
                     "incomplete", query_json_flag(gc->incomplete),
                     "snapshot_skipped", query_json_string(gc->snapshot_skipped),
                     "size_before", before,
                     "size_after", after);
}

static void gc_row_read(sqlite3_stmt *stmt, void *row)
{
    query_gc *gc = row;
    query_gc_read(stmt, gc);
    gc->census_ns = query_db_column_value(stmt, 22);
    gc->census_objects = query_db_column_value(stmt, 23);
    gc->snapshot_skipped = query_gc_snapshot_skipped_read(stmt, 24);
}

const char *query_gc_snapshot_skipped_read(sqlite3_stmt *stmt, int column)
{
    const char *skipped = (const char *)sqlite3_column_text(stmt, column);
    return skipped ? g_intern_string(skipped) : NULL; /* two names */
}

gboolean query_gcs_skips_known(sqlite3 *db, gboolean *known, GError **error)
{
    int64_t version = 0;
    if (!query_db_int(db, "PRAGMA user_version", &version, error))
        return FALSE;
    *known = version >= 9;
    return TRUE;
}

gboolean query_gcs_census(sqlite3 *db, gboolean *census, GError **error)
{
    int64_t version = 0, census_gcs = 0;
    *census = FALSE;
    if (!query_db_int(db, "PRAGMA user_version", &version, error) ||
        (version >= 6 &&
         !query_db_int(db, "SELECT count(census_ns) FROM gcs", &census_gcs, error)))
        return FALSE;
    *census = census_gcs > 0;
    return TRUE;
}

GArray *query_gcs_read(sqlite3 *db, gboolean *census, GError **error)
{
    gboolean skips_known = FALSE;
    if (!query_gcs_census(db, census, error) || !query_gcs_skips_known(db, &skips_known, error))
        return NULL;
    return query_db_rows_read(query_db_prepare(db, gcs_sql[*census][skips_known], error),
                              sizeof(query_gc), gc_row_read, NULL, error);
}
