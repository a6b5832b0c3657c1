/* root_paths.c — shortest paths from GC roots (root_paths.h). */
#include "query/root_paths.h"

#include "query/query.h"
#include "query/retention.h"
#include "store/store.h"
#include "wire/hl_wire.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

void root_path_free(root_path *path)
{
    if (!path)
        return;
    if (path->fields)
        for (uint32_t k = 0; k < path->len; k++)
            g_free(path->fields[k]);
    g_free(path->fields);
    g_free(path->index);
    g_free(path->static_name);
    g_free(path->static_thread_name);
    g_free(path->stack_thread_name);
    if (path->methods)
        g_hash_table_unref(path->methods);
    g_free(path->nodes);
    g_free(path);
}

static void root_path_free_cb(gpointer p)
{
    root_path_free(p);
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
    GPtrArray *paths = g_ptr_array_new_with_free_func(root_path_free_cb);
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

/* The roots of `node` in words; a stack root's method from `methods` (root_id -> name), its
 * thread from `path` (NULL: none). Each text once: the runtime reports an object once per stack
 * slot that holds it, so two locals of one frame (or two frames of one method) are two
 * snapshot_roots rows that say the same in words. */
static char *roots_text(const snapshot_graph *g, uint32_t node, GHashTable *methods,
                        const root_path *path)
{
    GString *text = g_string_new(NULL);
    GString *one = g_string_new(NULL);
    GPtrArray *said = g_ptr_array_new_with_free_func(g_free);
    char flags[64];
    for (size_t i = 0; i < g->n_roots; i++) {
        const snapshot_root *r = &g->roots[i];
        if (r->node != node || (r->flags & HL_ROOT_WEAK))
            continue;
        g_string_assign(one, snapshot_root_kind_name(r->kind));
        if (r->kind == HL_ROOT_HANDLE) {
            g_string_append_printf(one, " (%s", handle_kind(r->flags));
            if (r->root_id)
                g_string_append_printf(one, ", 0x%" PRIx64, r->root_id);
            g_string_append(one, ")");
        } else {
            int64_t key = (int64_t)r->root_id;
            const char *method = r->kind == HL_ROOT_STACK && methods
                                     ? g_hash_table_lookup(methods, &key)
                                     : NULL;
            g_autofree char *thread =
                r->kind == HL_ROOT_STACK && path && path->stack_thread
                    ? g_strdup_printf("thread %s, %" PRId64,
                                      path->stack_thread_name ? path->stack_thread_name
                                                              : "unnamed",
                                      path->stack_thread)
                    : NULL;
            GString *what = g_string_new(method);
            if (thread)
                g_string_append_printf(what, "%s%s", what->len ? ", " : "", thread);
            if (r->flags)
                g_string_append_printf(what, "%s%s", what->len ? ", " : "",
                                       snapshot_root_flags_text(r->flags, flags));
            if (what->len)
                g_string_append_printf(one, " (%s)", what->str);
            g_string_free(what, TRUE);
        }
        if (g_ptr_array_find_with_equal_func(said, one->str, g_str_equal, NULL))
            continue;
        g_ptr_array_add(said, g_strdup(one->str));
        g_string_append_printf(text, "%s%s", text->len ? "; " : "", one->str);
    }
    g_ptr_array_unref(said);
    g_string_free(one, TRUE);
    return g_string_free(text, FALSE);
}

char *root_paths_roots_text(const snapshot_graph *g, uint32_t node)
{
    return roots_text(g, node, NULL, NULL);
}

json_t *root_path_hops_json(const snapshot_graph *g, const snapshot_types *types,
                            const root_path *path)
{
    char buf[QUERY_FORMAT_MAX];
    json_t *hops = json_array();
    for (uint32_t k = path->start; k < path->len; k++) {
        uint32_t v = path->nodes[k];
        json_t *hop =
            json_pack("{s:I, s:o, s:I}", "object", (json_int_t)g->ids[v], "type",
                      query_json_string(snapshot_types_name(types, g->type_ids[v], buf)), "size",
                      (json_int_t)g->sizes[v]);
        if (path->fields && path->fields[k])
            json_object_set_new(hop, "field", query_json_string(path->fields[k]));
        else if (path->index && path->index[k] >= 0)
            json_object_set_new(hop, "index", json_integer((json_int_t)path->index[k]));
        json_array_append_new(hops, hop);
    }
    return hops;
}

/* A type's name without namespaces, also inside its type arguments:
 * "System.Collections.Generic.List<App.Session>" -> "List<Session>". */
static void append_short_type(GString *out, const char *name)
{
    size_t segment = out->len; /* where the current dotted name began */
    for (const char *c = name; *c; c++) {
        if (*c == '.') {
            g_string_truncate(out, segment);
            continue;
        }
        g_string_append_c(out, *c);
        if (strchr("<>, [+", *c))
            segment = out->len;
    }
}

char *root_path_text(const snapshot_graph *g, const snapshot_types *types, const root_path *path)
{
    char buf[QUERY_FORMAT_MAX];
    GString *text = g_string_new(NULL);
    GString *hop = g_string_new(NULL), *prev = g_string_new(NULL);
    uint64_t run = 0; /* hops in a row written as `prev` */
    for (uint32_t k = path->start; k <= path->len; k++) {
        g_string_truncate(hop, 0);
        if (k < path->len) {
            uint32_t v = path->nodes[k];
            const char *type = snapshot_types_name(types, g->type_ids[v], buf);
            if (path->fields && path->fields[k]) {
                append_short_type(hop, type);
                g_string_append_printf(hop, ".%s", path->fields[k]);
            } else if (path->index && path->index[k] >= 0) {
                append_short_type(hop, type);
                g_string_append_printf(hop, "[%" PRId64 "]", path->index[k]);
            } else if (path->fields) {
                append_short_type(hop, type);
                g_string_append_printf(hop, " #%" PRIu64, g->ids[v]);
            } else {
                g_string_append_printf(hop, "%s #%" PRIu64, type, g->ids[v]);
            }
            /* A linked list's run of the same hop ("CacheEntry.Next" thousands of times: one
             * line of 130 KB) is written once, with its count. */
            if (run > 0 && g_string_equal(hop, prev)) {
                run++;
                continue;
            }
        }
        if (run > 0) {
            g_string_append_printf(text, "%s%s", text->len ? " -> " : "", prev->str);
            if (run > 1)
                g_string_append_printf(text, " (%s times)",
                                       query_count_format((int64_t)run, buf));
        }
        g_string_assign(prev, hop->str);
        run = 1;
    }
    g_string_free(hop, TRUE);
    g_string_free(prev, TRUE);
    return g_string_free(text, FALSE);
}

json_t *root_path_roots_json(const snapshot_graph *g, const root_path *path)
{
    if (path->static_name) {
        json_t *root = json_pack("{s:s, s:o}", "kind", "static", "static",
                                 query_json_string(path->static_name));
        if (path->static_thread)
            json_object_set_new(root, "thread",
                                json_pack("{s:I, s:o}", "os_tid", (json_int_t)path->static_thread,
                                          "name", path->static_thread_name
                                                      ? query_json_string(path->static_thread_name)
                                                      : json_null()));
        return json_pack("[o]", root);
    }
    json_t *roots = root_paths_roots_json(g, path->nodes[0]);
    size_t i;
    json_t *r;
    json_array_foreach(roots, i, r) {
        int64_t key = (int64_t)json_integer_value(json_object_get(r, "root_id"));
        const char *method = path->methods && g_strcmp0(json_string_value(json_object_get(r, "kind")),
                                                        "stack") == 0
                                 ? g_hash_table_lookup(path->methods, &key)
                                 : NULL;
        if (method)
            json_object_set_new(r, "method", query_json_string(method));
        if (path->stack_thread &&
            g_strcmp0(json_string_value(json_object_get(r, "kind")), "stack") == 0)
            json_object_set_new(r, "thread",
                                json_pack("{s:I, s:o}", "os_tid", (json_int_t)path->stack_thread,
                                          "name", path->stack_thread_name
                                                      ? query_json_string(path->stack_thread_name)
                                                      : json_null()));
    }
    return roots;
}

char *root_path_root_text(const snapshot_graph *g, const root_path *path)
{
    if (!path->static_name)
        return roots_text(g, path->nodes[0], path->methods, path);
    /* "Ns.Type.Field": the type without namespaces, then the field */
    GString *text = g_string_new("static ");
    const char *field = strrchr(path->static_name, '.');
    g_autofree char *type =
        field ? g_strndup(path->static_name, (gsize)(field - path->static_name)) : NULL;
    if (type) {
        append_short_type(text, type);
        g_string_append(text, field);
    } else {
        g_string_append(text, path->static_name);
    }
    if (path->static_thread)
        g_string_append_printf(text, " (thread %s, %" PRId64 ")",
                               path->static_thread_name ? path->static_thread_name : "unnamed",
                               path->static_thread);
    return g_string_free(text, FALSE);
}

/* Schema 8: the methods of the stack roots holding the path's first hop (root_methods). */
static gboolean stack_methods(sqlite3 *db, const snapshot_graph *g, root_path *path,
                              GError **error)
{
    sqlite3_stmt *st = NULL;
    gboolean row = FALSE;
    for (size_t i = 0; i < g->n_roots; i++) {
        const snapshot_root *r = &g->roots[i];
        if (r->node != path->nodes[0] || r->kind != HL_ROOT_STACK || !r->root_id)
            continue;
        if (!st && !(st = query_db_prepare(db, "SELECT name FROM root_methods"
                                               " WHERE function_id = ?1", error)))
            return FALSE;
        sqlite3_reset(st);
        sqlite3_bind_int64(st, 1, (int64_t)r->root_id);
        if (!query_db_step(st, &row, error)) {
            sqlite3_finalize(st);
            return FALSE;
        }
        if (!row)
            continue;
        if (!path->methods)
            path->methods = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, g_free);
        int64_t *key = g_new(int64_t, 1);
        *key = (int64_t)r->root_id;
        g_hash_table_replace(path->methods, key,
                             g_strdup((const char *)sqlite3_column_text(st, 0)));
    }
    sqlite3_finalize(st);
    return TRUE;
}

/* Schema 8 with snapshot_roots.thread (recordings since the stacks were read): the thread whose
 * stack holds the path's first hop. */
static gboolean stack_thread(sqlite3 *db, const snapshot_graph *g, root_path *path,
                             GError **error)
{
    int64_t has = 0;
    gboolean row = FALSE;
    if (!query_db_int(db, "SELECT count(*) FROM pragma_table_info('snapshot_roots')"
                          " WHERE name = 'thread'", &has, error))
        return FALSE;
    if (!has)
        return TRUE;
    sqlite3_stmt *st = query_db_prepare(db, "SELECT r.thread, th.name FROM snapshot_roots r"
                                            " LEFT JOIN threads th ON th.os_tid = r.thread"
                                            " WHERE r.snapshot = ?1 AND r.object_id = ?2"
                                            " AND r.kind = 'stack' AND r.thread IS NOT NULL"
                                            " LIMIT 1", error);
    if (!st)
        return FALSE;
    sqlite3_bind_int64(st, 1, g->info.snapshot);
    sqlite3_bind_int64(st, 2, (int64_t)g->ids[path->nodes[0]]);
    gboolean ok = query_db_step(st, &row, error);
    if (ok && row) {
        path->stack_thread = sqlite3_column_int64(st, 0);
        if (sqlite3_column_type(st, 1) == SQLITE_TEXT)
            path->stack_thread_name = g_strdup((const char *)sqlite3_column_text(st, 1));
    }
    sqlite3_finalize(st);
    return ok;
}

/* The position of `to` in the JSON id array `refs` (its first), or -1. */
static gssize json_ids_find(json_t *refs, uint64_t to)
{
    size_t i;
    json_t *v;
    json_array_foreach(refs, i, v)
        if (json_is_integer(v) && (uint64_t)json_integer_value(v) == to)
            return (gssize)i;
    return -1;
}

/* The field (or element) of object `from` holding `to` in the snapshot: what
 * snapshot_objects.refs and .fields say of it (the first reference to `to`; *number -1: none,
 * unknown, or no fields recorded). A schema 8 file: read from the snapshot's blocks, the block
 * decoded last kept (a path's hops lie in few blocks: a chain of 8,000 list nodes in a few
 * hundred), instead of a lookup through snapshot_objects per hop, which decodes a block and
 * writes its references as text each time. */
typedef struct hop_reader {
    sqlite3 *db;
    int64_t snapshot;
    sqlite3_stmt *refs;  /* older files: snapshot_objects */
    sqlite3_stmt *block; /* schema 8: the block of the snapshot holding an id */
    store_snapblock b;   /* the block decoded last (b.n 0: none) */
} hop_reader;

static gboolean hop_field(hop_reader *r, uint64_t from, uint64_t to, int64_t *number,
                          GError **error)
{
    gboolean row = FALSE;
    *number = -1;
    if (!r->block) {
        sqlite3_reset(r->refs);
        sqlite3_bind_int64(r->refs, 1, r->snapshot);
        sqlite3_bind_int64(r->refs, 2, (int64_t)from);
        if (!query_db_step(r->refs, &row, error))
            return FALSE;
        if (!row || sqlite3_column_type(r->refs, 1) != SQLITE_TEXT)
            return TRUE;
        json_t *ids = json_loads((const char *)sqlite3_column_text(r->refs, 0), 0, NULL);
        json_t *fields = json_loads((const char *)sqlite3_column_text(r->refs, 1), 0, NULL);
        gssize at = ids ? json_ids_find(ids, to) : -1;
        json_t *f = at >= 0 && fields ? json_array_get(fields, (size_t)at) : NULL;
        *number = json_is_integer(f) ? (int64_t)json_integer_value(f) : -1;
        json_decref(ids);
        json_decref(fields);
        return TRUE;
    }
    /* a snapshot's blocks cover its ids without overlapping: an id within the kept block's
     * range is in it or in none */
    store_snapblock *b = &r->b;
    if (b->n == 0 || from < b->ids[0] || from > b->ids[b->n - 1]) {
        GError *local = NULL;
        b->n = 0;
        sqlite3_reset(r->block);
        sqlite3_bind_int64(r->block, 1, r->snapshot);
        sqlite3_bind_int64(r->block, 2, (int64_t)MIN(from, (uint64_t)INT64_MAX));
        if (!query_db_step(r->block, &row, error))
            return FALSE;
        if (!row)
            return TRUE;
        if (!store_snapblock_decode_row(b, r->block, &local)) {
            /* as a lookup through snapshot_objects says it */
            const char *file = store_db_name(r->db);
            g_set_error(error, QUERY_ERROR, QUERY_ERROR_SQLITE, "reading %s failed: %s",
                        file && *file ? file : "the database", local->message);
            g_error_free(local);
            b->n = 0;
            return FALSE;
        }
    }
    uint32_t lo = hl_ids_lower_bound(b->ids, 0, b->n, from);
    if (lo == b->n || b->ids[lo] != from || !b->field_known[lo])
        return TRUE; /* not in the snapshot, or its fields not recorded */
    for (uint32_t i = b->ref_start[lo]; i < b->ref_start[lo + 1]; i++)
        if (b->to[i] == to) {
            *number = b->field[i] < 0 ? -1 : b->field[i];
            break;
        }
    return TRUE;
}

gboolean root_path_name(sqlite3 *db, const snapshot_graph *g, const snapshot_types *types,
                        root_path *path, GError **error)
{
    int64_t version = 0;
    gboolean ok = FALSE, row = FALSE;
    sqlite3_stmt *field = NULL, *stat = NULL;
    hop_reader hops = {.db = db, .snapshot = g->info.snapshot};
    if (!query_db_int(db, "PRAGMA user_version", &version, error))
        return FALSE;
    if (version >= 8 && !path->methods && !stack_methods(db, g, path, error))
        return FALSE;
    if (version >= 8 && path->len > 0 && !path->stack_thread && !stack_thread(db, g, path, error))
        return FALSE;
    if (version < 7 || path->len < 2 || path->fields)
        return TRUE; /* no fields recorded, nothing to name, or named already */
    if (store_snapshot_blocks_present(db))
        hops.block = query_db_prepare(db, "SELECT first_id, objects, ids, kinds, refs, fields"
                                          " FROM snapshot_blocks INDEXED BY snapshot_blocks_by_id"
                                          " WHERE first_id <= ?2 AND last_snapshot >= ?1"
                                          " AND first_snapshot <= ?1 ORDER BY first_id DESC LIMIT 1",
                                      error);
    else
        hops.refs = query_db_prepare(db, "SELECT refs, fields FROM snapshot_objects"
                                         " WHERE snapshot = ?1 AND object_id = ?2", error);
    field = query_db_prepare(db, "SELECT name FROM fields WHERE type_id = ?1 AND field = ?2",
                             error);
    stat = query_db_prepare(db,
                            version >= 8
                                ? "SELECT coalesce(t.name, '?') || '.' || s.name, s.thread, th.name"
                                  " FROM snapshot_statics ss JOIN statics s ON s.id = ss.static_id"
                                  " LEFT JOIN types t ON t.id = s.type_id"
                                  " LEFT JOIN threads th ON th.os_tid = s.thread"
                                  " WHERE ss.snapshot = ?1 AND ss.object_id = ?2 AND ss.field = ?3"
                                : "SELECT coalesce(t.name, '?') || '.' || s.name, NULL, NULL"
                                  " FROM snapshot_statics ss JOIN statics s ON s.id = ss.static_id"
                                  " LEFT JOIN types t ON t.id = s.type_id"
                                  " WHERE ss.snapshot = ?1 AND ss.object_id = ?2 AND ss.field = ?3",
                            error);
    if ((!hops.refs && !hops.block) || !field || !stat)
        goto out;
    path->fields = g_new0(char *, path->len);
    path->index = g_new(int64_t, path->len);
    for (uint32_t k = 0; k < path->len; k++)
        path->index[k] = -1;
    for (uint32_t k = 0; k + 1 < path->len; k++) {
        uint32_t from = path->nodes[k], to = path->nodes[k + 1];
        int64_t number = -1;
        if (!hop_field(&hops, g->ids[from], g->ids[to], &number, error))
            goto out;
        if (number < 0)
            continue; /* damaged text, or a field the collector could not tell */
        if (snapshot_types_is_array(types, g->type_ids[from])) {
            path->index[k] = number;
        } else {
            sqlite3_reset(field);
            sqlite3_bind_int64(field, 1, g->type_ids[from]);
            sqlite3_bind_int64(field, 2, number);
            if (!query_db_step(field, &row, error))
                goto out;
            if (row)
                path->fields[k] = g_strdup((const char *)sqlite3_column_text(field, 0));
        }
        if (path->static_name)
            continue;
        sqlite3_reset(stat);
        sqlite3_bind_int64(stat, 1, g->info.snapshot);
        sqlite3_bind_int64(stat, 2, (int64_t)g->ids[from]);
        sqlite3_bind_int64(stat, 3, number);
        if (!query_db_step(stat, &row, error))
            goto out;
        if (row) {
            path->static_name = g_strdup((const char *)sqlite3_column_text(stat, 0));
            path->start = k + 1;
            path->static_thread = sqlite3_column_int64(stat, 1);
            if (sqlite3_column_type(stat, 2) == SQLITE_TEXT)
                path->static_thread_name = g_strdup((const char *)sqlite3_column_text(stat, 2));
        }
    }
    ok = TRUE;
out:
    /* A path with no name found reads as before: full type names and ids. */
    gboolean named = path->static_name != NULL;
    for (uint32_t k = 0; path->fields && k < path->len && !named; k++)
        named = path->fields[k] || path->index[k] >= 0;
    if (!named && path->fields) {
        g_free(path->fields);
        g_clear_pointer(&path->index, g_free);
        path->fields = NULL;
    }
    sqlite3_finalize(hops.refs);
    sqlite3_finalize(hops.block);
    store_snapblock_clear(&hops.b);
    sqlite3_finalize(field);
    sqlite3_finalize(stat);
    return ok;
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
    if (!retention_ensure(db, info, progress, error) ||
        !retention_largest_instance(db, info->snapshot, type_id, object, error))
        goto out;
    if (*object) {
        ok = TRUE;
        goto out;
    }
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
    if (!a->paths)
        return FALSE;
    for (guint i = 0; i < a->paths->len; i++)
        if (!root_path_name(db, a->graph, a->types, a->paths->pdata[i], error))
            return FALSE;
    return TRUE;
}

void root_paths_answer_clear(root_paths_answer *a)
{
    g_clear_pointer(&a->paths, g_ptr_array_unref);
    g_clear_pointer(&a->graph, snapshot_graph_free);
    g_clear_pointer(&a->types, snapshot_types_free);
}
