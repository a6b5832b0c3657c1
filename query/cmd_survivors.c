/* cmd_survivors.c — `heaplens survivors FILE [--gc N] [--top K] [--by age] [--json]`: objects alive right
 * after GC N, grouped by generation and type — or, with --by age, by how many GCs they have
 * survived (the object-age histogram), then generation and type. */
#include "query/commands.h"
#include "query/query.h"

#include <inttypes.h>
#include <string.h>

/* "Alive after GC n in generation g" (SCHEMA.md): from_gc <= n < until_gc. The range on from_gc
 * can use object_generations_by_gc; objects are joined by primary key. */
/* ?2: --top K keeps the K groups with the most bytes (all when NULL); the totals and the group
 * count (columns 4..6) are over all groups. */
/* Rows read that no recording holds (a size or type that is not a number, a negative size, an
 * unknown generation), counted over all groups as they are read: column 7 (8 by age). */
#define SURVIVORS_DAMAGED "SUM(" QUERY_LIVE_GROUP_DAMAGED_SQL ") OVER () AS damaged"

static const char survivors_sql[] =
    "SELECT s.generation, COALESCE(t.name, '<type ' || s.type_id || '>'), s.n, s.bytes,"
    "       s.all_n, s.all_bytes, s.groups, s.damaged"
    "  FROM (SELECT og.generation, o.type_id, COUNT(*) AS n, SUM(o.size) AS bytes,"
    "               SUM(COUNT(*)) OVER () AS all_n, SUM(SUM(o.size)) OVER () AS all_bytes,"
    "               " SURVIVORS_DAMAGED ","
    "               COUNT(*) OVER () AS groups,"
    "               ROW_NUMBER() OVER (ORDER BY SUM(o.size) DESC, COUNT(*) DESC) AS rank"
    "          FROM object_generations AS og LEFT JOIN objects AS o ON o.id = og.object_id"
    "         WHERE og.from_gc <= ?1 AND (og.until_gc IS NULL OR og.until_gc > ?1)"
    "         GROUP BY og.generation, o.type_id) AS s"
    "  LEFT JOIN types AS t ON t.id = s.type_id"
    " WHERE ?2 IS NULL OR s.rank <= ?2"
    " ORDER BY s.generation, s.bytes DESC, s.n DESC, 2";

/* The same objects, grouped by age: GCs survived = N - first_gc + 1 (first_gc is the first GC
 * after the allocation; an object found in a heap walk is as old as that walk, a lower bound).
 * ?2 and columns 6..8 as in survivors_sql: --top K keeps the K groups with the most bytes. */
static const char survivors_age_sql[] =
    "SELECT s.age, s.generation, COALESCE(t.name, '<type ' || s.type_id || '>'), s.n, s.bytes,"
    "       s.all_n, s.all_bytes, s.groups, s.damaged"
    "  FROM (SELECT ?1 - o.first_gc + 1 AS age, og.generation, o.type_id, COUNT(*) AS n,"
    "               SUM(o.size) AS bytes, " SURVIVORS_DAMAGED ","
    "               SUM(COUNT(*)) OVER () AS all_n, SUM(SUM(o.size)) OVER () AS all_bytes,"
    "               COUNT(*) OVER () AS groups,"
    "               ROW_NUMBER() OVER (ORDER BY SUM(o.size) DESC, COUNT(*) DESC) AS rank"
    "          FROM object_generations AS og LEFT JOIN objects AS o ON o.id = og.object_id"
    "         WHERE og.from_gc <= ?1 AND (og.until_gc IS NULL OR og.until_gc > ?1)"
    "         GROUP BY age, og.generation, o.type_id) AS s"
    "  LEFT JOIN types AS t ON t.id = s.type_id"
    " WHERE ?2 IS NULL OR s.rank <= ?2"
    " ORDER BY s.age, s.generation, s.bytes DESC, s.n DESC, 3";

static void survivors_damaged(int64_t gc, GError **error)
{
    query_db_damaged(error,
                     "objects alive after GC %" PRId64 " have sizes, types or generations that "
                     "no recording holds", gc);
}

static const query_column survivors_age_columns[] = {
    {"age", QUERY_ALIGN_RIGHT, NULL},
    {"gen", QUERY_ALIGN_LEFT, NULL},
    {"count", QUERY_ALIGN_RIGHT, NULL},
    {"bytes", QUERY_ALIGN_RIGHT, NULL},
    {"type", QUERY_ALIGN_LEFT, NULL},
};

static const query_column survivors_columns[] = {
    {"gen", QUERY_ALIGN_LEFT, NULL},
    {"count", QUERY_ALIGN_RIGHT, NULL},
    {"bytes", QUERY_ALIGN_RIGHT, NULL},
    {"type", QUERY_ALIGN_LEFT, NULL},
};

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

/* --by age: the rows of survivors_age_sql; returns the exit status (0, or 1 with *error). */
static int survivors_by_age(sqlite3 *db, int64_t gc, uint64_t top, gboolean json, GError **error)
{
    int status = 1;
    gboolean row = FALSE;
    g_autoptr(query_table) table = NULL;
    query_json_rows rows;
    int64_t total_count = 0, total_bytes = 0, groups = 0;
    char name[QUERY_FORMAT_MAX], count[QUERY_FORMAT_MAX], bytes[QUERY_FORMAT_MAX];
    sqlite3_stmt *stmt = query_db_prepare(db, survivors_age_sql, error);
    if (!stmt)
        goto out;
    sqlite3_bind_int64(stmt, 1, gc);
    if (top)
        sqlite3_bind_int64(stmt, 2, (sqlite3_int64)top);
    if (json) {
        json_t *head = json_pack("{s:I, s:s}", "gc", (json_int_t)gc, "by", "age");
        query_json_rows_begin(&rows, stdout, head);
        json_decref(head);
    } else {
        table = query_table_new(survivors_age_columns, G_N_ELEMENTS(survivors_age_columns));
    }
    while (query_db_step(stmt, &row, error) && row) {
        if (sqlite3_column_int64(stmt, 8) > 0) {
            survivors_damaged(gc, error);
            break;
        }
        int64_t age = sqlite3_column_int64(stmt, 0);
        int64_t generation = sqlite3_column_int64(stmt, 1);
        const char *type = (const char *)sqlite3_column_text(stmt, 2);
        int64_t n = sqlite3_column_int64(stmt, 3);
        int64_t size = sqlite3_column_int64(stmt, 4);
        total_count = sqlite3_column_int64(stmt, 5); /* over all groups, also with --top */
        total_bytes = sqlite3_column_int64(stmt, 6);
        groups = sqlite3_column_int64(stmt, 7);
        if (json) {
            query_json_rows_add(&rows, json_pack("{s:I, s:I, s:o, s:I, s:I}", "age",
                                                 (json_int_t)age, "generation",
                                                 (json_int_t)generation, "type",
                                                 query_json_string(type), "count", (json_int_t)n,
                                                 "bytes", (json_int_t)size));
        } else {
            query_table_addf(table, "%" PRId64, age);
            query_table_add(table, query_generation_name(generation, name));
            query_table_add(table, query_count_format(n, count));
            query_table_add(table, query_size_format(size, bytes));
            query_table_add(table, type);
        }
    }
    if (error && *error)
        goto out;
    if (json) {
        query_json_rows_end(&rows);
    } else {
        printf("alive after GC %" PRId64 ": %s %s, %s", gc,
               query_count_format(total_count, count), total_count == 1 ? "object" : "objects",
               query_size_format(total_bytes, bytes));
        if (top && (uint64_t)groups > top)
            printf(" (the %" PRIu64 " largest of %" PRId64 " groups)", top, groups);
        printf("; age = GCs survived\n");
        if (query_table_rows(table) > 0)
            query_table_print(table, stdout);
    }
    if (!query_db_note_print(db, json, error) || !query_output_finish(stdout, error))
        goto out;
    status = 0;
out:
    sqlite3_finalize(stmt);
    return status;
}

int cmd_survivors(int argc, char **argv)
{
    int status = 1;
    gboolean json = FALSE;
    const char *path = NULL;
    const char *gc_text = NULL;
    const char *by = NULL;
    const char *top_text = NULL;
    uint64_t top = 0;
    int64_t groups = 0;
    gboolean by_age = FALSE;
    const query_option options[] = {
        {"json", QUERY_OPT_FLAG, &json},
        {"gc", QUERY_OPT_VALUE, &gc_text},
        {"by", QUERY_OPT_VALUE, &by},
        {"top", QUERY_OPT_VALUE, &top_text},
        {NULL, 0, NULL},
    };
    g_autoptr(GError) error = NULL;
    g_autoptr(query_table) table = NULL;
    query_json_rows rows;
    int64_t gc = 0;
    int64_t total_count = 0, total_bytes = 0;
    sqlite3 *db = NULL;
    sqlite3_stmt *stmt = NULL;
    gboolean row = FALSE;
    char name[QUERY_FORMAT_MAX];
    char count[QUERY_FORMAT_MAX];
    char bytes[QUERY_FORMAT_MAX];

    switch (query_args_parse(argc, argv, options, &path, &error)) {
    case QUERY_ARGS_HELP:
        status = 0;
        goto out;
    case QUERY_ARGS_ERROR:
        goto out;
    case QUERY_ARGS_OK:
        break;
    }
    static const char *const by_names[] = {"generation", "age"};
    guint by_index = 0;
    if (by && !query_args_parse_choice("survivors", "by", by, by_names, G_N_ELEMENTS(by_names),
                                       &by_index, &error))
        goto out;
    by_age = by_index == 1;
    if (top_text && !query_args_parse_uint(argv[0], "top", top_text, 1, G_MAXINT64,
                                           "a positive number", &top, &error))
        goto out;
    db = query_db_open(path, &error);
    if (!db || !survivors_gc_pick(db, path, gc_text, &gc, &error))
        goto out;
    if (by_age) {
        status = survivors_by_age(db, gc, top, json, &error);
        goto out;
    }
    stmt = query_db_prepare(db, survivors_sql, &error);
    if (!stmt)
        goto out;
    sqlite3_bind_int64(stmt, 1, gc);
    if (top)
        sqlite3_bind_int64(stmt, 2, (sqlite3_int64)top);

    if (json) {
        json_t *head = json_pack("{s:I}", "gc", (json_int_t)gc);
        query_json_rows_begin(&rows, stdout, head);
        json_decref(head);
    } else {
        table = query_table_new(survivors_columns, G_N_ELEMENTS(survivors_columns));
    }
    while (query_db_step(stmt, &row, &error) && row) {
        if (sqlite3_column_int64(stmt, 7) > 0) {
            survivors_damaged(gc, &error);
            break;
        }
        int64_t generation = sqlite3_column_int64(stmt, 0);
        const char *type = (const char *)sqlite3_column_text(stmt, 1);
        int64_t n = sqlite3_column_int64(stmt, 2);
        int64_t size = sqlite3_column_int64(stmt, 3);
        if (json) {
            query_json_rows_add(&rows, json_pack("{s:I, s:o, s:I, s:I}", "generation",
                                                 (json_int_t)generation, "type",
                                                 query_json_string(type), "count", (json_int_t)n,
                                                 "bytes", (json_int_t)size));
        } else {
            query_table_add(table, query_generation_name(generation, name));
            query_table_add(table, query_count_format(n, count));
            query_table_add(table, query_size_format(size, bytes));
            query_table_add(table, type);
            total_count = sqlite3_column_int64(stmt, 4);
            total_bytes = sqlite3_column_int64(stmt, 5);
            groups = sqlite3_column_int64(stmt, 6);
        }
    }
    if (error)
        goto out;
    if (json) {
        query_json_rows_end(&rows);
    } else {
        printf("alive after GC %" PRId64 ": %s %s, %s", gc,
               query_count_format(total_count, count), total_count == 1 ? "object" : "objects",
               query_size_format(total_bytes, bytes));
        if (top && (uint64_t)groups > top)
            printf(" (the %" PRIu64 " largest of %" PRId64 " groups)", top, groups);
        printf("\n");
        if (query_table_rows(table) > 0)
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
