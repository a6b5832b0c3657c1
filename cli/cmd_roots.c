/* cmd_roots.c — `heaplens roots FILE (--object ID | --type NAME) [--snapshot S] [--all]`: why an
 * object is alive — the shortest path from a GC root to it, hop by hop (query/root_paths.h). */
#include "cli/cli.h"
#include "cli/commands.h"
#include "query/retention.h"
#include "query/root_paths.h"

#include <inttypes.h>
#include <string.h>

static const query_column hop_columns[] = {
    {"hop", QUERY_ALIGN_RIGHT, NULL},
    {"object", QUERY_ALIGN_RIGHT, NULL},
    {"size", QUERY_ALIGN_RIGHT, NULL},
    {"type", QUERY_ALIGN_LEFT, NULL},
    {"holds the next in", QUERY_ALIGN_LEFT, NULL},
};

int cmd_roots(int argc, char **argv)
{
    int status = 1;
    gboolean json = FALSE, all = FALSE, progress_flag = FALSE;
    const char *path = NULL, *snapshot_text = NULL, *object_text = NULL, *type_name = NULL,
               *limit_text = NULL;
    const query_option options[] = {
        {"json", QUERY_OPT_FLAG, &json},
        {"snapshot", QUERY_OPT_VALUE, &snapshot_text},
        {"object", QUERY_OPT_VALUE, &object_text},
        {"type", QUERY_OPT_VALUE, &type_name},
        {"all", QUERY_OPT_FLAG, &all},
        {"limit", QUERY_OPT_VALUE, &limit_text},
        {"progress", QUERY_OPT_FLAG, &progress_flag},
        {NULL, 0, NULL},
    };
    g_autoptr(GError) error = NULL;
    g_autoptr(query_progress) progress = NULL;
    root_paths_answer found = {0};
    uint64_t limit = 10, object_id = 0;
    sqlite3 *db = NULL;
    char a[QUERY_FORMAT_MAX], b[QUERY_FORMAT_MAX], target_buf[QUERY_FORMAT_MAX];

    if (!query_args_take(argc, argv, options, &path, &status, &error))
        goto out;
    if (!object_text == !type_name) {
        g_set_error(&error, QUERY_ERROR, QUERY_ERROR_USAGE,
                    "roots: give either --object ID or --type NAME; see 'heaplens roots --help'");
        goto out;
    }
    if (object_text && !query_args_parse_uint("roots", "object", object_text, 1, INT64_MAX,
                                              "an object id (1, 2, ...)", &object_id, &error))
        goto out;
    if (limit_text && !query_args_parse_uint("roots", "limit", limit_text, 1, 1000000,
                                             "a number from 1 to 1,000,000", &limit, &error))
        goto out;
    if (!all)
        limit = 1;
    db = query_db_open(path, &error);
    if (!db)
        goto out;
    progress = query_progress_new("roots", progress_flag);
    if (!root_paths_answer_read(db, path, snapshot_text, object_id, type_name, limit, progress,
                                &found, &error))
        goto out;
    query_progress_done(progress);

    const snapshot_graph *g = found.graph;
    const snapshot_types *types = found.types;
    const snapshot_info info = found.info;
    const GPtrArray *paths = found.paths;
    const int64_t object = found.object;
    const uint32_t target = found.target;
    const char *target_type = snapshot_types_name(types, g->type_ids[target], target_buf);
    if (json) {
        query_json_rows rows;
        json_t *head =
            json_pack("{s:I, s:I, s:I, s:o, s:I}", "snapshot", (json_int_t)info.snapshot, "gc",
                      (json_int_t)info.gc, "object", (json_int_t)object, "type",
                      query_json_string(target_type), "size", (json_int_t)g->sizes[target]);
        query_json_rows_begin(&rows, stdout, head);
        json_decref(head);
        for (guint i = 0; i < paths->len; i++) {
            const root_path *p = paths->pdata[i];
            query_json_rows_add(&rows, json_pack("{s:o, s:I, s:o}", "roots",
                                                 root_path_roots_json(g, p), "length",
                                                 (json_int_t)(p->len - 1 - p->start), "path",
                                                 root_path_hops_json(g, types, p)));
        }
        query_json_rows_end(&rows);
    } else if (paths->len == 0) {
        printf("object %" PRId64 " (%s) in snapshot %" PRId64 " (GC %" PRId64
               ") is not reachable from any GC root: it is garbage that GC %" PRId64
               " did not collect (its generation was not condemned)\n",
               object, target_type, info.snapshot, info.gc, info.gc);
    } else {
        for (guint i = 0; i < paths->len; i++) {
            const root_path *p = paths->pdata[i];
            g_autofree char *roots = root_path_root_text(g, p);
            if (i == 0)
                printf("%s from a GC root to object %" PRId64 " (%s), snapshot %" PRId64
                       " (GC %" PRId64 "):\n",
                       all ? "paths" : "shortest path", object, target_type, info.snapshot,
                       info.gc);
            if (all)
                printf("%spath %u of %u, %u %s; root: %s\n", i ? "\n" : "", i + 1, paths->len,
                       p->len - 1 - p->start, p->len - p->start == 2 ? "hop" : "hops", roots);
            else
                printf("root: %s\n", roots);
            /* the last column only for a named path (a recording with fields) */
            g_autoptr(query_table) table = query_table_new(
                hop_columns, G_N_ELEMENTS(hop_columns) - (p->fields ? 0 : 1));
            for (uint32_t k = p->start; k < p->len; k++) {
                uint32_t v = p->nodes[k];
                query_table_addf(table, "%u", k - p->start);
                query_table_addf(table, "%" PRIu64, g->ids[v]);
                query_table_add(table, query_size_format((int64_t)g->sizes[v], b));
                query_table_add(table, snapshot_types_name(types, g->type_ids[v], a));
                if (p->fields && p->fields[k])
                    query_table_addf(table, ".%s", p->fields[k]);
                else if (p->fields && p->index[k] >= 0)
                    query_table_addf(table, "[%" PRId64 "]", p->index[k]);
                else if (p->fields)
                    query_table_add(table, "");
            }
            query_table_print(table, stdout);
        }
    }
    if (!query_output_finish_retained(db, path, progress, json, &error))
        goto out;
    status = 0;
out:
    root_paths_answer_clear(&found);
    sqlite3_close(db);
    if (error)
        query_error_report(error);
    return status;
}
