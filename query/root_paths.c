/* root_paths.c — shortest paths from GC roots (root_paths.h). */
#include "query/root_paths.h"

#include "query/query.h"
#include "query/retention.h"
#include "wire/hl_wire.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static void root_path_free(gpointer p)
{
    root_path *path = p;
    g_free(path->nodes);
    g_free(path);
}

typedef struct candidate {
    uint32_t dist;
    uint32_t node;
} candidate;

static int candidate_cmp(const void *a, const void *b)
{
    const candidate *x = a, *y = b;
    if (x->dist != y->dist)
        return x->dist < y->dist ? -1 : 1;
    return x->node < y->node ? -1 : x->node > y->node;
}

GPtrArray *root_paths_find(const snapshot_graph *g, const an_graph *reversed, uint32_t target,
                           size_t limit, GError **error)
{
    GPtrArray *paths = g_ptr_array_new_with_free_func(root_path_free);
    uint32_t *next = g_try_new(uint32_t, g->n);
    uint32_t *dist = g_try_new(uint32_t, g->n);
    GArray *cands = g_array_new(FALSE, FALSE, sizeof(candidate));
    if (!reversed)
        reversed = g->graph;
    if (!next || !dist || an_graph_bfs(reversed, target, next, dist) != AN_OK) {
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_SQLITE, "out of memory finding root paths");
        g_clear_pointer(&paths, g_ptr_array_unref);
        goto out;
    }
    /* rooted objects that reach the target, each once */
    for (size_t i = 0; i < g->n_roots; i++) {
        const snapshot_root *r = &g->roots[i];
        if ((r->flags & HL_ROOT_WEAK) || dist[r->node] == AN_NONE)
            continue;
        candidate c = {dist[r->node], r->node};
        g_array_append_val(cands, c);
    }
    if (cands->len > 1)
        qsort(cands->data, cands->len, sizeof(candidate), candidate_cmp);
    for (guint i = 0; i < cands->len && paths->len < limit; i++) {
        const candidate *c = &g_array_index(cands, candidate, i);
        if (i > 0 && c->node == g_array_index(cands, candidate, i - 1).node)
            continue;
        root_path *path = g_new0(root_path, 1);
        path->len = c->dist + 1;
        path->nodes = g_new(uint32_t, path->len);
        uint32_t v = c->node;
        for (uint32_t k = 0; k < path->len; k++) {
            path->nodes[k] = v;
            v = next[v];
        }
        g_ptr_array_add(paths, path);
    }
out:
    g_free(next);
    g_free(dist);
    g_array_unref(cands);
    return paths;
}

static const char *handle_kind(uint32_t flags)
{
    /* as the view snapshot_handles names them */
    if (flags & HL_ROOT_PINNING)
        return "pinned";
    if (flags & HL_ROOT_REFCOUNTED)
        return "refcounted";
    if (flags & HL_ROOT_WEAK)
        return "weak";
    return "strong";
}

json_t *root_paths_roots_json(const snapshot_graph *g, uint32_t node)
{
    static const struct {
        uint32_t bit;
        const char *name;
    } flag_names[] = {{HL_ROOT_PINNING, "pinning"},
                      {HL_ROOT_WEAK, "weak"},
                      {HL_ROOT_INTERIOR, "interior"},
                      {HL_ROOT_REFCOUNTED, "refcounted"}};
    json_t *list = json_array();
    for (size_t i = 0; i < g->n_roots; i++) {
        const snapshot_root *r = &g->roots[i];
        if (r->node != node || (r->flags & HL_ROOT_WEAK))
            continue;
        json_t *flags = json_array();
        for (size_t f = 0; f < G_N_ELEMENTS(flag_names); f++)
            if (r->flags & flag_names[f].bit)
                json_array_append_new(flags, json_string(flag_names[f].name));
        json_t *root =
            json_pack("{s:s, s:o, s:o}", "kind", snapshot_root_kind_name(r->kind), "flags", flags,
                      "root_id", r->root_id ? json_integer((json_int_t)r->root_id) : json_null());
        if (r->kind == HL_ROOT_HANDLE)
            json_object_set_new(root, "handle", json_string(handle_kind(r->flags)));
        json_array_append_new(list, root);
    }
    return list;
}

char *root_paths_roots_text(const snapshot_graph *g, uint32_t node)
{
    GString *text = g_string_new(NULL);
    char flags[64];
    for (size_t i = 0; i < g->n_roots; i++) {
        const snapshot_root *r = &g->roots[i];
        if (r->node != node || (r->flags & HL_ROOT_WEAK))
            continue;
        if (text->len)
            g_string_append(text, "; ");
        g_string_append(text, snapshot_root_kind_name(r->kind));
        if (r->kind == HL_ROOT_HANDLE) {
            g_string_append_printf(text, " (%s", handle_kind(r->flags));
            if (r->root_id)
                g_string_append_printf(text, ", 0x%" PRIx64, r->root_id);
            g_string_append(text, ")");
        } else if (r->flags) {
            g_string_append_printf(text, " (%s)", snapshot_root_flags_text(r->flags, flags));
        }
    }
    return g_string_free(text, FALSE);
}

json_t *root_path_hops_json(const snapshot_graph *g, const snapshot_types *types,
                            const root_path *path)
{
    char buf[QUERY_FORMAT_MAX];
    json_t *hops = json_array();
    for (uint32_t k = 0; k < path->len; k++) {
        uint32_t v = path->nodes[k];
        json_array_append_new(
            hops, json_pack("{s:I, s:o, s:I}", "object", (json_int_t)g->ids[v], "type",
                            query_json_string(snapshot_types_name(types, g->type_ids[v], buf)),
                            "size", (json_int_t)g->sizes[v]));
    }
    return hops;
}

char *root_path_text(const snapshot_graph *g, const snapshot_types *types, const root_path *path)
{
    char buf[QUERY_FORMAT_MAX];
    GString *text = g_string_new(NULL);
    for (uint32_t k = 0; k < path->len; k++) {
        uint32_t v = path->nodes[k];
        if (k)
            g_string_append(text, " -> ");
        g_string_append_printf(text, "%s #%" PRIu64,
                               snapshot_types_name(types, g->type_ids[v], buf), g->ids[v]);
    }
    return g_string_free(text, FALSE);
}

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

gboolean root_paths_answer_read(sqlite3 *db, const char *path, const char *snapshot_text,
                                uint64_t object_id, const char *type_name, size_t limit,
                                query_progress *progress, root_paths_answer *a, GError **error)
{
    int64_t unreachable = 0;
    char type_buf[QUERY_FORMAT_MAX];

    memset(a, 0, sizeof *a);
    if (!snapshot_pick(db, path, "roots", "snapshot", snapshot_text, &a->info, error))
        return FALSE;
    a->types = snapshot_types_new(db, error);
    if (!a->types)
        return FALSE;
    if (type_name) {
        uint32_t type_id = snapshot_types_resolve(a->types, type_name, path, error);
        if (type_id == 0)
            return FALSE;
        /* the full name, in messages */
        type_name = snapshot_types_name(a->types, type_id, type_buf);
        if (!largest_instance(db, &a->info, type_id, progress, &a->object, &unreachable, error))
            return FALSE;
        if (a->object == 0) {
            if (unreachable > 0)
                g_set_error(error, QUERY_ERROR, QUERY_ERROR_NOT_FOUND,
                            "no instance of %s in snapshot %" PRId64
                            " is reachable from a GC root (%" PRId64
                            " unreachable: garbage of a generation its GC did not collect)",
                            type_name, a->info.snapshot, unreachable);
            else
                g_set_error(error, QUERY_ERROR, QUERY_ERROR_NOT_FOUND,
                            "no instance of %s in snapshot %" PRId64, type_name,
                            a->info.snapshot);
            return FALSE;
        }
    } else {
        a->object = (int64_t)object_id;
    }
    a->graph = snapshot_graph_load(db, &a->info, SNAPSHOT_GRAPH_REVERSED, progress, error);
    if (!a->graph)
        return FALSE;
    a->target = snapshot_graph_node(a->graph, (uint64_t)a->object);
    if (a->target == AN_NONE) {
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_NOT_FOUND,
                    "object %" PRId64 " is not in snapshot %" PRId64
                    " (not allocated yet, dead, or never tracked)",
                    a->object, a->info.snapshot);
        return FALSE;
    }
    query_progress_update(progress, "finding paths", 0, 0);
    a->paths = root_paths_find(a->graph, NULL, a->target, limit, error);
    return a->paths != NULL;
}

void root_paths_answer_clear(root_paths_answer *a)
{
    g_clear_pointer(&a->paths, g_ptr_array_unref);
    g_clear_pointer(&a->graph, snapshot_graph_free);
    g_clear_pointer(&a->types, snapshot_types_free);
}
