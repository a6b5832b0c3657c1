/* cmd_retention.c — `heaplens retention FILE [--snapshot S] [--top K] [--by object|type]`: the
 * largest retainers of a heap snapshot, from its dominator tree.
 *
 * The first run on a snapshot computes the dominator tree and stores the retained sizes
 * (retention.h); every later run reads them back with one indexed query. */
#include "cli/commands.h"
#include "cli/cli.h"
#include "query/retention.h"

#include <inttypes.h>
#include <string.h>

static const query_column object_columns[] = {
    {"retained", QUERY_ALIGN_RIGHT, NULL}, {"objects", QUERY_ALIGN_RIGHT, NULL},
    {"shallow", QUERY_ALIGN_RIGHT, NULL},  {"object", QUERY_ALIGN_RIGHT, NULL},
    {"type", QUERY_ALIGN_LEFT, NULL},
};

static const query_column type_columns[] = {
    {"retained", QUERY_ALIGN_RIGHT, NULL}, {"objects", QUERY_ALIGN_RIGHT, NULL},
    {"count", QUERY_ALIGN_RIGHT, NULL},    {"shallow", QUERY_ALIGN_RIGHT, NULL},
    {"type", QUERY_ALIGN_LEFT, NULL},
};

/* The summary of the snapshot's retention row. */
typedef struct retention_summary {
    int64_t objects, reachable, reachable_bytes, root_edges, unresolved_refs;
} retention_summary;

static gboolean summary_read(sqlite3 *db, int64_t snapshot, retention_summary *s, GError **error)
{
    gboolean row = FALSE;
    sqlite3_stmt *stmt = query_db_prepare(db,
                                          "SELECT objects, reachable, reachable_bytes, root_edges,"
                                          " unresolved_refs FROM retention_snapshots"
                                          " WHERE snapshot = ?1",
                                          error);
    if (!stmt)
        return FALSE;
    sqlite3_bind_int64(stmt, 1, snapshot);
    gboolean ok = query_db_step(stmt, &row, error);
    if (ok && row) {
        s->objects = sqlite3_column_int64(stmt, 0);
        s->reachable = sqlite3_column_int64(stmt, 1);
        s->reachable_bytes = sqlite3_column_int64(stmt, 2);
        s->root_edges = sqlite3_column_int64(stmt, 3);
        s->unresolved_refs = sqlite3_column_int64(stmt, 4);
    }
    sqlite3_finalize(stmt);
    return ok;
}

int cmd_retention(int argc, char **argv)
{
    int status = 1;
    gboolean json = FALSE, progress_flag = FALSE;
    const char *path = NULL, *snapshot_text = NULL, *top_text = NULL, *by = NULL;
    const query_option options[] = {
        {"json", QUERY_OPT_FLAG, &json},
        {"snapshot", QUERY_OPT_VALUE, &snapshot_text},
        {"top", QUERY_OPT_VALUE, &top_text},
        {"by", QUERY_OPT_VALUE, &by},
        {"progress", QUERY_OPT_FLAG, &progress_flag},
        {NULL, 0, NULL},
    };
    g_autoptr(GError) error = NULL;
    g_autoptr(query_table) table = NULL;
    g_autoptr(query_progress) progress = NULL;
    g_autoptr(snapshot_types) types = NULL;
    g_autofree char *note = NULL;
    query_json_rows rows;
    snapshot_info info;
    retention_summary summary = {0};
    uint64_t top = 20;
    gboolean by_type = FALSE, row = FALSE;
    g_autoptr(GArray) objects = NULL;
    sqlite3 *db = NULL;
    sqlite3_stmt *stmt = NULL;
    char a[QUERY_FORMAT_MAX], b[QUERY_FORMAT_MAX], c[QUERY_FORMAT_MAX], d[QUERY_FORMAT_MAX];
    char name_buf[QUERY_FORMAT_MAX], element_buf[QUERY_FORMAT_MAX];

    switch (query_args_parse(argc, argv, options, &path, &error)) {
    case QUERY_ARGS_HELP:
        status = 0;
        goto out;
    case QUERY_ARGS_ERROR:
        goto out;
    case QUERY_ARGS_OK:
        break;
    }
    if (top_text && !query_args_parse_uint("retention", "top", top_text, 1, INT64_MAX,
                                           "a positive number", &top, &error))
        goto out;
    static const char *const by_names[] = {"object", "type"};
    guint by_index = 0;
    if (by && !query_args_parse_choice("retention", "by", by, by_names, G_N_ELEMENTS(by_names),
                                       &by_index, &error))
        goto out;
    by_type = by_index == 1;
    db = query_db_open(path, &error);
    if (!db || !snapshot_pick(db, path, "retention", "snapshot", snapshot_text, &info, &error))
        goto out;
    progress = query_progress_new("retention", progress_flag);
    if (!retention_ensure(db, &info, progress, &error))
        goto out;
    query_progress_done(progress);
    if (!summary_read(db, info.snapshot, &summary, &error))
        goto out;
    types = snapshot_types_new(db, &error);
    if (!types)
        goto out;

    if (by_type) {
        stmt = query_db_prepare(db,
                                "SELECT type_id, count, shallow_bytes, retained_bytes,"
                                " retained_count FROM retention_types WHERE snapshot = ?1"
                                " ORDER BY retained_bytes DESC, type_id LIMIT ?2",
                                &error);
        if (!stmt)
            goto out;
        sqlite3_bind_int64(stmt, 1, info.snapshot);
        sqlite3_bind_int64(stmt, 2, (int64_t)MIN(top, (uint64_t)INT64_MAX));
    } else {
        objects = retention_top_objects(db, info.snapshot, top, &error);
        if (!objects)
            goto out;
    }

    if (json) {
        json_t *head =
            json_pack("{s:I, s:I, s:s, s:I, s:I, s:I}", "snapshot", (json_int_t)info.snapshot, "gc",
                      (json_int_t)info.gc, "by", by_type ? "type" : "object", "objects",
                      (json_int_t)summary.objects, "reachable", (json_int_t)summary.reachable,
                      "reachable_bytes", (json_int_t)summary.reachable_bytes);
        query_json_rows_begin(&rows, stdout, head);
        json_decref(head);
    } else {
        table = by_type ? query_table_new(type_columns, G_N_ELEMENTS(type_columns))
                        : query_table_new(object_columns, G_N_ELEMENTS(object_columns));
    }
    while (by_type && query_db_step(stmt, &row, &error) && row) {
        uint32_t type_id = (uint32_t)sqlite3_column_int64(stmt, 0);
        int64_t count = sqlite3_column_int64(stmt, 1);
        int64_t shallow = sqlite3_column_int64(stmt, 2);
        int64_t retained = sqlite3_column_int64(stmt, 3);
        int64_t retained_count = sqlite3_column_int64(stmt, 4);
        const char *type = snapshot_types_name(types, type_id, name_buf);
        if (json) {
            query_json_rows_add(&rows,
                                json_pack("{s:o, s:I, s:I, s:I, s:I}", "type",
                                          query_json_string(type), "count", (json_int_t)count,
                                          "retained_bytes", (json_int_t)retained,
                                          "retained_count", (json_int_t)retained_count,
                                          "shallow_bytes", (json_int_t)shallow));
        } else {
            query_table_add(table, query_size_format(retained, a));
            query_table_add(table, query_count_format(retained_count, b));
            query_table_add(table, query_count_format(count, c));
            query_table_add(table, query_size_format(shallow, d));
            query_table_add(table, type);
        }
    }
    for (guint i = 0; !by_type && i < objects->len; i++) {
        const retention_object *o = &g_array_index(objects, retention_object, i);
        if (json) {
            query_json_rows_add(&rows, retention_object_json(o, types));
            continue;
        }
        const char *type = snapshot_types_name(types, o->type_id, name_buf);
        const char *element =
            o->element_type_id ? snapshot_types_name(types, o->element_type_id, element_buf) : NULL;
        query_table_add(table, query_size_format(o->retained_bytes, a));
        query_table_add(table, query_count_format(o->retained_count, b));
        query_table_add(table, query_size_format(o->shallow_bytes, c));
        query_table_addf(table, "%" PRId64, o->object);
        /* name the element type unless the type's name already does (List<T>, T[]) */
        if (element && !strstr(type, element))
            query_table_addf(table, "%s of %s", type, element);
        else
            query_table_add(table, type);
    }
    if (error)
        goto out;
    if (json) {
        query_json_rows_end(&rows);
    } else {
        printf("snapshot %" PRId64 " (GC %" PRId64
               "): %s objects, %s reachable from %s roots, %s\n",
               info.snapshot, info.gc, query_count_format(summary.objects, a),
               query_count_format(summary.reachable, b), query_count_format(summary.root_edges, c),
               query_size_format(summary.reachable_bytes, d));
        if (query_table_rows(table) > 0)
            query_table_print(table, stdout);
    }
    if (!query_db_note_print(db, json, &error) || !query_output_finish(stdout, &error))
        goto out;
    /* Last, when everything is read and printed: a failure leaves the file as it was. */
    if (!retention_commit(db, path, progress, &note, &error))
        goto out;
    query_note_print(note, json);
    if (!query_output_finish(stdout, &error))
        goto out;
    status = 0;
out:
    sqlite3_finalize(stmt);
    sqlite3_close(db);
    if (error)
        query_error_report(error);
    return status;
}
