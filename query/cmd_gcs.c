/* cmd_gcs.c — `heaplens gcs FILE [--json]`: one row per GC. */
#include "query/commands.h"
#include "query/query.h"

/* One row per GC with its per-generation sizes pivoted into columns; GROUP BY the primary key
 * keeps it streaming in GC order. */
#define GCS_SQL(census)                                                                        \
    "SELECT g.gc, g.generation, g.reason, g.induced, g.compacting, g.pause_ns, g.start_ns,"    \
    "       g.end_ns, g.survived_bytes, g.moved_bytes, g.objects_live, g.incomplete,"          \
    "       MAX(CASE WHEN s.generation = 0 THEN s.size_before END),"                           \
    "       MAX(CASE WHEN s.generation = 0 THEN s.size_after END),"                            \
    "       MAX(CASE WHEN s.generation = 1 THEN s.size_before END),"                           \
    "       MAX(CASE WHEN s.generation = 1 THEN s.size_after END),"                            \
    "       MAX(CASE WHEN s.generation = 2 THEN s.size_before END),"                           \
    "       MAX(CASE WHEN s.generation = 2 THEN s.size_after END),"                            \
    "       MAX(CASE WHEN s.generation = 3 THEN s.size_before END),"                           \
    "       MAX(CASE WHEN s.generation = 3 THEN s.size_after END),"                            \
    "       MAX(CASE WHEN s.generation = 4 THEN s.size_before END),"                           \
    "       MAX(CASE WHEN s.generation = 4 THEN s.size_after END), " census                    \
    "  FROM gcs AS g LEFT JOIN gc_generations AS s ON s.gc = g.gc"                             \
    " GROUP BY g.gc ORDER BY g.gc"
/* The census of gen0 (sampled mode, schema 6): its pause time and objects per GC. */
static const char gcs_sql[] = GCS_SQL("NULL, NULL");
static const char gcs_census_sql[] = GCS_SQL("g.census_ns, g.census_objects");

enum {
    COL_GC,
    COL_GENERATION,
    COL_REASON,
    COL_INDUCED,
    COL_COMPACTING,
    COL_PAUSE_NS,
    COL_START_NS,
    COL_END_NS,
    COL_SURVIVED,
    COL_MOVED,
    COL_OBJECTS_LIVE,
    COL_INCOMPLETE,
    COL_SIZES, /* before, after for generations 0..4 */
    COL_CENSUS_NS = COL_SIZES + 10,
    COL_CENSUS_OBJECTS,
};

static const char *const size_names[] = {"gen0", "gen1", "gen2", "loh", "poh"};

static const query_column gcs_columns[] = {
    {"gc", QUERY_ALIGN_RIGHT, NULL},
    {"gen", QUERY_ALIGN_RIGHT, NULL},
    {"reason", QUERY_ALIGN_LEFT, NULL},
    {"induced", QUERY_ALIGN_LEFT, NULL},
    {"compacting", QUERY_ALIGN_LEFT, NULL},
    {"pause (ms)", QUERY_ALIGN_RIGHT, NULL},
    {"gen0", QUERY_ALIGN_RIGHT, NULL},
    {"", QUERY_ALIGN_RIGHT, " → "},
    {"gen1", QUERY_ALIGN_RIGHT, NULL},
    {"", QUERY_ALIGN_RIGHT, " → "},
    {"gen2", QUERY_ALIGN_RIGHT, NULL},
    {"", QUERY_ALIGN_RIGHT, " → "},
    {"loh", QUERY_ALIGN_RIGHT, NULL},
    {"", QUERY_ALIGN_RIGHT, " → "},
    {"poh", QUERY_ALIGN_RIGHT, NULL},
    {"", QUERY_ALIGN_RIGHT, " → "},
    {"survived", QUERY_ALIGN_RIGHT, NULL},
    {"census (ms)", QUERY_ALIGN_RIGHT, NULL}, /* shown only with a census */
};

static json_t *json_bool_column(sqlite3_stmt *stmt, int column)
{
    if (sqlite3_column_type(stmt, column) == SQLITE_NULL)
        return json_null();
    return json_boolean(sqlite3_column_int64(stmt, column) != 0);
}

static json_t *gcs_row_json(sqlite3_stmt *stmt, gboolean census)
{
    json_t *before = json_object();
    json_t *after = json_object();
    for (int g = 0; g < 5; g++) {
        json_object_set_new(before, size_names[g], query_json_column(stmt, COL_SIZES + 2 * g));
        json_object_set_new(after, size_names[g], query_json_column(stmt, COL_SIZES + 2 * g + 1));
    }
    json_t *j = json_pack("{s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o}",
                     "gc", query_json_column(stmt, COL_GC),
                     "generation", query_json_column(stmt, COL_GENERATION),
                     "reason", query_json_column(stmt, COL_REASON),
                     "induced", json_bool_column(stmt, COL_INDUCED),
                     "compacting", json_bool_column(stmt, COL_COMPACTING),
                     "pause_ns", query_json_column(stmt, COL_PAUSE_NS),
                     "start_ns", query_json_column(stmt, COL_START_NS),
                     "end_ns", query_json_column(stmt, COL_END_NS),
                     "survived_bytes", query_json_column(stmt, COL_SURVIVED),
                     "moved_bytes", query_json_column(stmt, COL_MOVED),
                     "objects_live", query_json_column(stmt, COL_OBJECTS_LIVE),
                     "incomplete", json_bool_column(stmt, COL_INCOMPLETE),
                     "size_before", before,
                     "size_after", after);
    if (census && j) {
        json_object_set_new(j, "census_ns", query_json_column(stmt, COL_CENSUS_NS));
        json_object_set_new(j, "census_objects", query_json_column(stmt, COL_CENSUS_OBJECTS));
    }
    return j;
}

static const char *yes_no(sqlite3_stmt *stmt, int column)
{
    if (sqlite3_column_type(stmt, column) == SQLITE_NULL)
        return NULL;
    return sqlite3_column_int64(stmt, column) ? "yes" : "no";
}

static void size_cell_add(query_table *table, sqlite3_stmt *stmt, int column)
{
    char buf[QUERY_FORMAT_MAX];
    if (sqlite3_column_type(stmt, column) == SQLITE_NULL)
        query_table_add(table, NULL);
    else
        query_table_add(table, query_size_format(sqlite3_column_int64(stmt, column), buf));
}

static void gcs_row_add(query_table *table, sqlite3_stmt *stmt, gboolean census)
{
    char buf[QUERY_FORMAT_MAX];
    query_table_add(table, query_count_format(sqlite3_column_int64(stmt, COL_GC), buf));
    query_table_addf(table, "%lld", (long long)sqlite3_column_int64(stmt, COL_GENERATION));
    query_table_add(table, (const char *)sqlite3_column_text(stmt, COL_REASON));
    query_table_add(table, yes_no(stmt, COL_INDUCED));
    query_table_add(table, yes_no(stmt, COL_COMPACTING));
    if (sqlite3_column_type(stmt, COL_PAUSE_NS) == SQLITE_NULL)
        query_table_add(table, NULL);
    else
        query_table_add(table, query_ms_format(sqlite3_column_int64(stmt, COL_PAUSE_NS), buf));
    for (int c = COL_SIZES; c < COL_SIZES + 10; c++)
        size_cell_add(table, stmt, c);
    size_cell_add(table, stmt, COL_SURVIVED);
    if (!census)
        return;
    if (sqlite3_column_type(stmt, COL_CENSUS_NS) == SQLITE_NULL)
        query_table_add(table, NULL);
    else
        query_table_add(table, query_ms_format(sqlite3_column_int64(stmt, COL_CENSUS_NS), buf));
}

int cmd_gcs(int argc, char **argv)
{
    int status = 1;
    gboolean json = FALSE;
    const char *path = NULL;
    const query_option options[] = {
        {"json", QUERY_OPT_FLAG, &json},
        {NULL, 0, NULL},
    };
    g_autoptr(GError) error = NULL;
    g_autoptr(query_table) table = NULL;
    query_json_rows rows;
    sqlite3 *db = NULL;
    sqlite3_stmt *stmt = NULL;
    gboolean row = FALSE;

    switch (query_args_parse(argc, argv, options, &path, &error)) {
    case QUERY_ARGS_HELP:
        status = 0;
        goto out;
    case QUERY_ARGS_ERROR:
        goto out;
    case QUERY_ARGS_OK:
        break;
    }
    db = query_db_open(path, &error);
    if (!db)
        goto out;
    int64_t version = 0, census_gcs = 0;
    if (!query_db_int(db, "PRAGMA user_version", &version, &error) ||
        (version >= 6 &&
         !query_db_int(db, "SELECT count(census_ns) FROM gcs", &census_gcs, &error)))
        goto out;
    gboolean census = census_gcs > 0;
    stmt = query_db_prepare(db, census ? gcs_census_sql : gcs_sql, &error);
    if (!stmt)
        goto out;
    if (json)
        query_json_rows_begin(&rows, stdout, NULL);
    else
        table = query_table_new(gcs_columns, G_N_ELEMENTS(gcs_columns) - (census ? 0 : 1));
    while (query_db_step(stmt, &row, &error) && row) {
        if (json)
            query_json_rows_add(&rows, gcs_row_json(stmt, census));
        else
            gcs_row_add(table, stmt, census);
    }
    if (error)
        goto out;
    if (json) {
        query_json_rows_end(&rows);
    } else if (query_table_rows(table) == 0) {
        printf("no GC was recorded\n");
    } else {
        query_table_print(table, stdout);
    }
    if (!query_db_note_print(db, json, &error) || !query_output_finish(stdout, &error))
        goto out;
    status = 0;
out:
    sqlite3_finalize(stmt);
    sqlite3_close(db);
    if (error)
        query_error_report(error);
    return status;
}
