/* cmd_retention.c — `heaplens retention FILE [--snapshot S] [--top K] [--by object|type]`: the
 * largest retainers of a heap snapshot, from its dominator tree.
 *
 * The first run on a snapshot computes the dominator tree and stores the retained sizes
 * (query/retention.h); every later run reads them back with one indexed query. */
#include "cli/cli.h"
#include "cli/commands.h"
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
    g_autoptr(query_progress) progress = NULL;
    retention_top found = {0};
    uint64_t top = 20;
    gboolean by_type = FALSE;
    sqlite3 *db = NULL;
    char a[QUERY_FORMAT_MAX], b[QUERY_FORMAT_MAX], c[QUERY_FORMAT_MAX], d[QUERY_FORMAT_MAX];
    char name_buf[QUERY_FORMAT_MAX], element_buf[QUERY_FORMAT_MAX];

    if (!query_args_take(argc, argv, options, &path, &status, &error))
        goto out;
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
    if (!db)
        goto out;
    progress = query_progress_new("retention", progress_flag);
    if (!retention_top_read(db, path, snapshot_text, top, by_type, progress, &found, &error))
        goto out;
    query_progress_done(progress);
    const snapshot_info *info = &found.info;
    const retention_summary *summary = &found.summary;
    if (json) {
        query_json_rows rows;
        json_t *head =
            json_pack("{s:I, s:I, s:s, s:I, s:I, s:I, s:I, s:I}", "snapshot",
                      (json_int_t)info->snapshot, "gc", (json_int_t)info->gc, "by",
                      by_type ? "type" : "object", "objects", (json_int_t)summary->objects,
                      "reachable", (json_int_t)summary->reachable, "reachable_bytes",
                      (json_int_t)summary->reachable_bytes, "root_edges",
                      (json_int_t)summary->root_edges, "roots", (json_int_t)info->roots);
        query_json_rows_begin(&rows, stdout, head);
        json_decref(head);
        for (guint i = 0; i < found.rows->len; i++) {
            if (!by_type) {
                const retention_object *o = &g_array_index(found.rows, retention_object, i);
                query_json_rows_add(&rows, retention_object_json(o, found.types));
                continue;
            }
            const retention_type_row *r = &g_array_index(found.rows, retention_type_row, i);
            query_json_rows_add(
                &rows, json_pack("{s:o, s:I, s:I, s:I, s:I}", "type",
                                 query_json_string(snapshot_types_name(found.types, r->type_id,
                                                                       name_buf)),
                                 "count", (json_int_t)r->count, "retained_bytes",
                                 (json_int_t)r->retained_bytes, "retained_count",
                                 (json_int_t)r->retained_count, "shallow_bytes",
                                 (json_int_t)r->shallow_bytes));
        }
        query_json_rows_end(&rows);
    } else {
        g_autoptr(query_table) table =
            by_type ? query_table_new(type_columns, G_N_ELEMENTS(type_columns))
                    : query_table_new(object_columns, G_N_ELEMENTS(object_columns));
        for (guint i = 0; by_type && i < found.rows->len; i++) {
            const retention_type_row *r = &g_array_index(found.rows, retention_type_row, i);
            query_table_add(table, query_size_format(r->retained_bytes, a));
            query_table_add(table, query_count_format(r->retained_count, b));
            query_table_add(table, query_count_format(r->count, c));
            query_table_add(table, query_size_format(r->shallow_bytes, d));
            query_table_add(table, snapshot_types_name(found.types, r->type_id, name_buf));
        }
        for (guint i = 0; !by_type && i < found.rows->len; i++) {
            const retention_object *o = &g_array_index(found.rows, retention_object, i);
            const char *type = snapshot_types_name(found.types, o->type_id, name_buf);
            const char *element = o->element_type_id ? snapshot_types_name(
                                                           found.types, o->element_type_id,
                                                           element_buf)
                                                     : NULL;
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
        /* `snapshots` counts every root the runtime reported: csc's "993 roots" were 399 here,
         * the rest weak handles and stack slots holding null, which hold nothing alive */
        char e[QUERY_FORMAT_MAX], f[QUERY_FORMAT_MAX];
        g_autofree char *others =
            info->roots > summary->root_edges
                ? g_strdup_printf(" (of %s; %s weak or holding no object of the snapshot)",
                                  query_count_format(info->roots, e),
                                  query_count_format(info->roots - summary->root_edges, f))
                : g_strdup("");
        printf("snapshot %" PRId64 " (GC %" PRId64
               "): %s objects, %s reachable from %s roots%s, %s\n",
               info->snapshot, info->gc, query_count_format(summary->objects, a),
               query_count_format(summary->reachable, b),
               query_count_format(summary->root_edges, c), others,
               query_size_format(summary->reachable_bytes, d));
        if (query_table_rows(table) > 0)
            query_table_print(table, stdout);
    }
    if (!query_output_finish_retained(db, path, progress, json, &error))
        goto out;
    status = 0;
out:
    retention_top_clear(&found);
    sqlite3_close(db);
    if (error)
        query_error_report(error);
    return status;
}
