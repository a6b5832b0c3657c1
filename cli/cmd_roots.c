/* cmd_roots.c — `heaplens roots FILE (--object ID | --type NAME) [--snapshot S] [--all]`: why an
 * object is alive — the shortest path from a GC root to it, hop by hop. */
#include "cli/commands.h"
#include "cli/cli.h"
#include "query/retention.h"
#include "query/root_paths.h"

#include <inttypes.h>
#include <string.h>

static const query_column hop_columns[] = {
    {"hop", QUERY_ALIGN_RIGHT, NULL},
    {"object", QUERY_ALIGN_RIGHT, NULL},
    {"size", QUERY_ALIGN_RIGHT, NULL},
    {"type", QUERY_ALIGN_LEFT, NULL},
};

/* The instance of `type_id` that retains the most (retention is ensured first), or 0 with
 * *unreachable set to how many instances the snapshot holds that no root reaches. */
static gboolean largest_instance(sqlite3 *db, const snapshot_info *info, uint32_t type_id,
                                 query_progress *progress, int64_t *object, int64_t *unreachable,
                                 GError **error)
{
    gboolean row = FALSE, ok = FALSE;
    sqlite3_stmt *stmt = NULL;
    *object = 0;
    *unreachable = 0;
    if (!retention_ensure(db, info, progress, error))
        goto out;
    stmt =
        query_db_prepare(db,
                         "SELECT r.object_id FROM retention r JOIN objects o ON o.id = r.object_id"
                         " WHERE r.snapshot = ?1 AND o.type_id = ?2"
                         " ORDER BY r.retained_bytes DESC, r.object_id LIMIT 1",
                         error);
    if (!stmt)
        goto out;
    sqlite3_bind_int64(stmt, 1, info->snapshot);
    sqlite3_bind_int64(stmt, 2, type_id);
    if (!query_db_step(stmt, &row, error))
        goto out;
    if (row) {
        *object = sqlite3_column_int64(stmt, 0);
        ok = TRUE;
        goto out;
    }
    sqlite3_finalize(stmt);
    stmt = query_db_prepare(db,
                            "SELECT COUNT(*) FROM snapshot_objects so JOIN objects o"
                            " ON o.id = so.object_id WHERE so.snapshot = ?1 AND o.type_id = ?2",
                            error);
    if (!stmt)
        goto out;
    sqlite3_bind_int64(stmt, 1, info->snapshot);
    sqlite3_bind_int64(stmt, 2, type_id);
    if (!query_db_step(stmt, &row, error))
        goto out;
    *unreachable = sqlite3_column_int64(stmt, 0);
    ok = TRUE;
out:
    sqlite3_finalize(stmt);
    return ok;
}

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
    g_autoptr(snapshot_types) types = NULL;
    g_autoptr(snapshot_graph) g = NULL;
    g_autoptr(GPtrArray) paths = NULL;
    g_autofree char *note = NULL;
    snapshot_info info;
    uint64_t limit = 10, object_id = 0;
    int64_t object = 0, unreachable = 0;
    sqlite3 *db = NULL;
    char a[QUERY_FORMAT_MAX], b[QUERY_FORMAT_MAX], target_buf[QUERY_FORMAT_MAX],
        type_buf[QUERY_FORMAT_MAX];

    switch (query_args_parse(argc, argv, options, &path, &error)) {
    case QUERY_ARGS_HELP:
        status = 0;
        goto out;
    case QUERY_ARGS_ERROR:
        goto out;
    case QUERY_ARGS_OK:
        break;
    }
    if (!object_text == !type_name) {
        g_set_error(&error, QUERY_ERROR, QUERY_ERROR_USAGE,
                    "roots: give either --object ID or --type NAME; see 'heaplens roots --help'");
        goto out;
    }
    if (object_text && !query_args_parse_uint("roots", "object", object_text, 1, INT64_MAX,
                                              "an object id (1, 2, ...)", &object_id, &error))
        goto out;
    if (limit_text && !query_args_parse_uint("roots", "limit", limit_text, 1, 1000000,
                                             "a positive number", &limit, &error))
        goto out;
    if (!all)
        limit = 1;
    db = query_db_open(path, &error);
    if (!db || !snapshot_pick(db, path, "roots", "snapshot", snapshot_text, &info, &error))
        goto out;
    types = snapshot_types_new(db, &error);
    if (!types)
        goto out;
    progress = query_progress_new("roots", progress_flag);
    if (type_name) {
        uint32_t type_id = snapshot_types_resolve(types, type_name, path, &error);
        if (type_id == 0)
            goto out;
        type_name = snapshot_types_name(types, type_id, type_buf); /* the full name, in messages */
        if (!largest_instance(db, &info, type_id, progress, &object, &unreachable, &error))
            goto out;
        if (object == 0) {
            if (unreachable > 0)
                g_set_error(&error, QUERY_ERROR, QUERY_ERROR_NOT_FOUND,
                            "no instance of %s in snapshot %" PRId64
                            " is reachable from a GC root (%" PRId64
                            " unreachable: garbage of a generation its GC did not collect)",
                            type_name, info.snapshot, unreachable);
            else
                g_set_error(&error, QUERY_ERROR, QUERY_ERROR_NOT_FOUND,
                            "no instance of %s in snapshot %" PRId64, type_name, info.snapshot);
            goto out;
        }
    } else {
        object = (int64_t)object_id;
    }

    g = snapshot_graph_load(db, &info, SNAPSHOT_GRAPH_REVERSED, progress, &error);
    if (!g)
        goto out;
    uint32_t target = snapshot_graph_node(g, (uint64_t)object);
    if (target == AN_NONE) {
        g_set_error(&error, QUERY_ERROR, QUERY_ERROR_NOT_FOUND,
                    "object %" PRId64 " is not in snapshot %" PRId64
                    " (not allocated yet, dead, or never tracked)",
                    object, info.snapshot);
        goto out;
    }
    query_progress_update(progress, "finding paths", 0, 0);
    paths = root_paths_find(g, NULL, target, limit, &error);
    if (!paths)
        goto out;
    query_progress_done(progress);

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
                                                 root_paths_roots_json(g, p->nodes[0]), "length",
                                                 (json_int_t)(p->len - 1), "path",
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
            g_autofree char *roots = root_paths_roots_text(g, p->nodes[0]);
            if (i == 0)
                printf("%s from a GC root to object %" PRId64 " (%s), snapshot %" PRId64
                       " (GC %" PRId64 "):\n",
                       all ? "paths" : "shortest path", object, target_type, info.snapshot,
                       info.gc);
            if (all)
                printf("%spath %u of %u, %u %s; root: %s\n", i ? "\n" : "", i + 1, paths->len,
                       p->len - 1, p->len == 2 ? "hop" : "hops", roots);
            else
                printf("root: %s\n", roots);
            g_autoptr(query_table) table = query_table_new(hop_columns, G_N_ELEMENTS(hop_columns));
            for (uint32_t k = 0; k < p->len; k++) {
                uint32_t v = p->nodes[k];
                query_table_addf(table, "%u", k);
                query_table_addf(table, "%" PRIu64, g->ids[v]);
                query_table_add(table, query_size_format((int64_t)g->sizes[v], b));
                query_table_add(table, snapshot_types_name(types, g->type_ids[v], a));
            }
            query_table_print(table, stdout);
        }
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
    sqlite3_close(db);
    if (error)
        query_error_report(error);
    return status;
}
