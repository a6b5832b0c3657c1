/* test_values.c — the values every command says alike (query/query.h), linked from hlquery as
 * the executable links it: sizes, counts and times as text, generation names, a number the user
 * gave, saturating sums, NULL-able values as JSON, rows read into an array, and the census's
 * allocations lost with GCs (query_db_census_lost: each counter read once). */
#include "query/query.h"
#include "tests/unit/common/check.h"

static void check_formats(void)
{
    char buf[QUERY_FORMAT_MAX];
    CHECK_STR(query_size_format(0, buf), "0 B");
    CHECK_STR(query_size_format(1023, buf), "1023 B");
    CHECK_STR(query_size_format(1024, buf), "1.0 KiB");
    CHECK_STR(query_size_format(1536, buf), "1.5 KiB");
    /* 1023.95 KiB would print as 1024.0 KiB: one unit up instead */
    CHECK_STR(query_size_format(1048524, buf), "1023.9 KiB");
    CHECK_STR(query_size_format(1048525, buf), "1.0 MiB");
    CHECK_STR(query_size_format(-2048, buf), "-2.0 KiB");
    CHECK_STR(query_size_format(INT64_MIN, buf), "-8.0 EiB");
    CHECK_STR(query_count_format(0, buf), "0");
    CHECK_STR(query_count_format(999, buf), "999");
    CHECK_STR(query_count_format(1234567, buf), "1,234,567");
    CHECK_STR(query_count_format(-1000, buf), "-1,000");
    CHECK_STR(query_count_format(INT64_MIN, buf), "-9,223,372,036,854,775,808");
    CHECK_STR(query_ms_format(412345, buf), "0.412");
    CHECK_STR(query_ms_format(499, buf), "0.000");
    CHECK_STR(query_ms_format(500, buf), "0.001");
    CHECK_STR(query_ms_format(-1500000, buf), "-1.500");
    CHECK_STR(query_duration_format(0, buf), "0 ns");
    CHECK_STR(query_duration_format(999, buf), "999 ns");
    CHECK_STR(query_duration_format(4249, buf), "4.2 µs");
    CHECK_STR(query_duration_format(9999, buf), "10 µs"); /* not "10.0 µs" */
    CHECK_STR(query_duration_format(412345, buf), "412 µs");
    CHECK_STR(query_duration_format(999600, buf), "1.0 ms"); /* not "1000 µs" */
    CHECK_STR(query_duration_format(2345678, buf), "2.3 ms");
    CHECK_STR(query_duration_format(23456789, buf), "23 ms");
    CHECK_STR(query_duration_format(999600000, buf), "1.0 s"); /* not "1000 ms" */
    CHECK_STR(query_duration_format(1234567890, buf), "1.2 s");
    CHECK_STR(query_duration_format(13001628235, buf), "13.0 s");
    CHECK_STR(query_duration_format(59960000000, buf), "1 min 0 s"); /* not "60.0 s" */
    CHECK_STR(query_duration_format(315445336000, buf), "5 min 15 s");
    CHECK_STR(query_duration_format(3599600000000, buf), "1 h 0 min"); /* not "60 min 0 s" */
    CHECK_STR(query_duration_format(7380000000000, buf), "2 h 3 min");
    CHECK_STR(query_duration_format(-1500000, buf), "-1.5 ms");
    CHECK_STR(query_duration_format(INT64_MIN, buf), "-2562047 h 47 min");
    CHECK_STR(query_generation_name(0, buf), "gen0");
    CHECK_STR(query_generation_name(5, buf), "nongc");
    CHECK_STR(query_generation_name(9, buf), "gen9");
}

static void check_parse(void)
{
    uint64_t v = 0;
    GError *error = NULL;
    CHECK(query_args_parse_uint("gcs", "top", "42", 1, 100, "a number", &v, &error));
    CHECK_INT(v, 42);
    CHECK(!query_args_parse_uint("gcs", "top", "0", 1, 100, "a positive number", &v, &error));
    CHECK_STR(error ? error->message : NULL, "gcs: --top expects a positive number, not '0'");
    g_clear_error(&error);
    CHECK(!query_args_parse_uint("gcs", "top", "+5", 1, 100, "a number", &v, &error));
    g_clear_error(&error);
    CHECK(!query_args_parse_uint("gcs", "top", "5 ", 1, 100, "a number", &v, &error));
    g_clear_error(&error);
}

static void check_sums_and_json(void)
{
    CHECK_INT(query_add_saturating(INT64_MAX, 1), INT64_MAX);
    CHECK_INT(query_add_saturating(INT64_MIN, -1), INT64_MIN);
    CHECK_INT(query_sub_saturating(INT64_MIN, 1), INT64_MIN);
    CHECK_INT(query_add_saturating(2, 3), 5);
    json_t *v = query_json_value(QUERY_NULL);
    CHECK(json_is_null(v));
    json_decref(v);
    v = query_json_value(7);
    CHECK_INT(json_integer_value(v), 7);
    json_decref(v);
    v = query_json_flag(2);
    CHECK(json_is_true(v));
    json_decref(v);
    v = query_json_flag(QUERY_NULL);
    CHECK(json_is_null(v));
    json_decref(v);
    v = query_json_string("a\xff" "b"); /* invalid UTF-8 is repaired, never lost */
    CHECK(json_is_string(v));
    json_decref(v);
}

static void row_read(sqlite3_stmt *stmt, void *element)
{
    *(int64_t *)element = query_db_column_value(stmt, 0);
}

static void check_rows(void)
{
    sqlite3 *db = NULL;
    GError *error = NULL;
    CHECK_INT(sqlite3_open(":memory:", &db), SQLITE_OK);
    GArray *rows = query_db_rows_read(
        query_db_prepare(db, "SELECT 1 UNION ALL SELECT NULL UNION ALL SELECT 3", &error),
        sizeof(int64_t), row_read, NULL, &error);
    CHECK(rows && rows->len == 3);
    if (rows && rows->len == 3) {
        CHECK_INT(g_array_index(rows, int64_t, 0), 1);
        CHECK(g_array_index(rows, int64_t, 1) == QUERY_NULL);
        CHECK_INT(g_array_index(rows, int64_t, 2), 3);
    }
    if (rows)
        g_array_unref(rows);
    /* a statement that cannot be prepared: NULL and the error, nothing leaked */
    rows = query_db_rows_read(query_db_prepare(db, "SELECT * FROM nothing", &error),
                              sizeof(int64_t), row_read, NULL, &error);
    CHECK(rows == NULL);
    CHECK(error != NULL);
    g_clear_error(&error);
    sqlite3_close(db);
}

/* sqlite3_trace_v2: counts the statements run that read the counter census_allocs. */
static int census_reads_count(unsigned type, void *ctx, void *stmt, void *sql)
{
    (void)type;
    (void)stmt;
    if (strstr((const char *)sql, "census_allocs") != NULL)
        (*(int *)ctx)++;
    return 0;
}

/* 6 GCs the program ran, 2 stored, 1 discarded: 3 lost; the census counted 5,000 (120,000
 * bytes), 1,000 of them stored (24,000 bytes). Each note and `info` asks this: the counters are
 * read in one statement, not one per use. */
static void check_census_lost(void)
{
    sqlite3 *db = NULL;
    GError *error = NULL;
    int reads = 0;
    CHECK_INT(sqlite3_open(":memory:", &db), SQLITE_OK);
    CHECK_INT(sqlite3_exec(db,
                           "CREATE TABLE counters (name TEXT PRIMARY KEY, value INTEGER);"
                           "CREATE TABLE gcs (gc INTEGER PRIMARY KEY);"
                           "CREATE TABLE alloc_counts (count INTEGER, bytes INTEGER, flags INTEGER);"
                           "INSERT INTO counters VALUES ('program_gcs', 6),"
                           " ('gcs_discarded_incomplete', 1), ('census_allocs', 5000),"
                           " ('census_bytes', 120000);"
                           "INSERT INTO gcs VALUES (1), (2);"
                           "INSERT INTO alloc_counts VALUES (1000, 24000, 2), (7, 700, 0);",
                           NULL, NULL, NULL),
              SQLITE_OK);
    sqlite3_trace_v2(db, SQLITE_TRACE_STMT, census_reads_count, &reads);
    query_census_lost lost;
    CHECK(query_db_census_lost(db, &lost, &error));
    CHECK(error == NULL);
    CHECK(lost.known);
    CHECK_INT(lost.gcs, 4); /* 3 lost, 1 discarded */
    CHECK_INT(lost.allocs, 4000);
    CHECK_INT(lost.bytes, 96000);
    CHECK_INT(reads, 1);
    /* no total (full mode, --census off, an older recording): not known, nothing lost */
    CHECK_INT(sqlite3_exec(db, "DELETE FROM counters WHERE name LIKE 'census%'", NULL, NULL, NULL),
              SQLITE_OK);
    CHECK(query_db_census_lost(db, &lost, &error));
    CHECK(!lost.known && lost.allocs == 0 && lost.gcs == 0);
    sqlite3_close(db);
}

int main(void)
{
    check_formats();
    check_parse();
    check_sums_and_json();
    check_rows();
    check_census_lost();
    if (failures)
        fprintf(stderr, "%d checks failed\n", failures);
    return failures ? 1 : 0;
}
