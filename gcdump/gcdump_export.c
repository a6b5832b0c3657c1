/* gcdump_export.c — one snapshot of a heaplens database as a gcdump_graph.
 *
 * The graph is laid out as dotnet-gcdump lays out its own: a root node "[.NET Roots]" whose
 * children are one pseudo-node per kind of root ("[local vars]", and under "[other roots]" the
 * handles by kind), each holding the objects those roots point to; then every object, with its
 * references. Weak roots are left out, as dotnet-gcdump leaves them out: they keep nothing
 * alive. A snapshot has no addresses: each object's address is its heaplens id.
 */
#include "gcdump/gcdump.h"
#include "wire/hl_wire.h"

#include <string.h>

enum {
    EXPORT_ROOT,
    EXPORT_LOCALS,
    EXPORT_OTHER_ROOTS,
    EXPORT_FINALIZER,
    EXPORT_STRONG,
    EXPORT_PINNING,
    EXPORT_REFCOUNTED,
    EXPORT_OTHER_HANDLES,
    EXPORT_PSEUDO, /* nodes before the objects; also the pseudo-types after UNDEFINED */
};

static const char *const export_pseudo_names[EXPORT_PSEUDO] = {
    "[.NET Roots]",       "[local vars]",     "[other roots]",       "[finalizer Handles]",
    "[strong Handles]",   "[pinning Handles]", "[COM/WinRT Objects]", "[other Handles]",
};

/* The pseudo-node that holds a root of this kind. */
static uint32_t export_root_node(const snapshot_root *r)
{
    switch (r->kind) {
    case HL_ROOT_STACK:
        return EXPORT_LOCALS;
    case HL_ROOT_FINALIZER:
        return EXPORT_FINALIZER;
    case HL_ROOT_HANDLE:
        if (r->flags & HL_ROOT_REFCOUNTED)
            return EXPORT_REFCOUNTED;
        return (r->flags & HL_ROOT_PINNING) ? EXPORT_PINNING : EXPORT_STRONG;
    default:
        return EXPORT_OTHER_HANDLES;
    }
}

/* run.pid and the program's name (the command's first word, without its folder). */
static void export_run_read(sqlite3 *db, gcdump_meta *meta)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "SELECT pid, command FROM run WHERE id = 1", -1, &st, NULL) ==
            SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW) {
        int64_t pid = sqlite3_column_int64(st, 0);
        meta->process_id = pid > 0 && pid <= INT32_MAX ? (int32_t)pid : 0;
        const char *command = (const char *)sqlite3_column_text(st, 1);
        if (command && *command) {
            g_autofree char *first = g_strndup(command, strcspn(command, " "));
            meta->process_name = g_path_get_basename(first);
        }
    }
    sqlite3_finalize(st);
}

gcdump_graph *gcdump_export_graph(sqlite3 *db, const snapshot_info *info, GError **error)
{
    g_autoptr(GError) load_error = NULL;
    g_autoptr(snapshot_graph) sg = NULL;
    g_autoptr(snapshot_types) types = NULL;
    if (!(types = snapshot_types_new(db, &load_error)) ||
        !(sg = snapshot_graph_load(db, info, SNAPSHOT_GRAPH_FORWARD, NULL, &load_error))) {
        g_set_error(error, GCDUMP_ERROR, GCDUMP_ERROR_STORE, "%s", load_error->message);
        return NULL;
    }
    uint32_t objects = sg->n - 1;
    if ((uint64_t)objects + EXPORT_PSEUDO > INT32_MAX) {
        g_set_error(error, GCDUMP_ERROR, GCDUMP_ERROR_IO,
                    "snapshot %" G_GINT64_FORMAT " has more objects than a .gcdump holds",
                    info->snapshot);
        return NULL;
    }

    gcdump_graph *g = g_new0(gcdump_graph, 1);
    g->meta.version = 10;
    g->meta.is64bit = TRUE;
    g->meta.creation_tool = g_strdup("heaplens");
    g->meta.average_count_multiplier = g->meta.average_size_multiplier = 1.0f;
    export_run_read(db, &g->meta);

    /* Types: UNDEFINED (as every Graph has), the pseudo-nodes', then each heaplens type an
     * object has, in the order first met; its size is its first object's (as Graph keeps). */
    uint32_t n_htypes = snapshot_types_count(types);
    uint32_t *type_of = g_new0(uint32_t, (gsize)n_htypes + 1);
    GArray *gtypes = g_array_new(FALSE, TRUE, sizeof(gcdump_type));
    gcdump_type undefined = {.name = g_strdup("UNDEFINED")};
    g_array_append_val(gtypes, undefined);
    for (uint32_t p = 0; p < EXPORT_PSEUDO; p++) {
        gcdump_type t = {.name = g_strdup(export_pseudo_names[p])};
        g_array_append_val(gtypes, t);
    }

    g->n_nodes = EXPORT_PSEUDO + objects;
    g->root = EXPORT_ROOT;
    g->node_type = g_new(uint32_t, g->n_nodes);
    g->node_size = g_new0(uint32_t, g->n_nodes);
    g->node_address = g_new0(uint64_t, g->n_nodes);
    g->first_child = g_new0(uint64_t, (gsize)g->n_nodes + 1);
    for (uint32_t p = 0; p < EXPORT_PSEUDO; p++)
        g->node_type[p] = 1 + p;
    for (uint32_t i = 1; i < sg->n; i++) {
        uint32_t node = EXPORT_PSEUDO + i - 1, ht = MIN(sg->type_ids[i], n_htypes);
        uint32_t size = (uint32_t)MIN(sg->sizes[i], (uint64_t)INT32_MAX);
        if (type_of[ht] == 0) {
            char buf[QUERY_FORMAT_MAX];
            gcdump_type t = {.name = g_strdup(snapshot_types_name(types, sg->type_ids[i], buf)),
                             .size = (int32_t)size};
            type_of[ht] = gtypes->len;
            g_array_append_val(gtypes, t);
        }
        g->node_type[node] = type_of[ht];
        g->node_size[node] = size;
        g->node_address[node] = sg->ids[i];
        g->total_size += size;
    }
    g_free(type_of);
    g->n_types = gtypes->len;
    g->types = (gcdump_type *)(void *)g_array_free(gtypes, FALSE);

    /* Children: count them per node, then place them (roots in the order given, references in
     * field order). */
    static const uint32_t tree[][2] = {
        {EXPORT_ROOT, EXPORT_LOCALS},         {EXPORT_ROOT, EXPORT_OTHER_ROOTS},
        {EXPORT_OTHER_ROOTS, EXPORT_FINALIZER}, {EXPORT_OTHER_ROOTS, EXPORT_STRONG},
        {EXPORT_OTHER_ROOTS, EXPORT_PINNING}, {EXPORT_OTHER_ROOTS, EXPORT_REFCOUNTED},
        {EXPORT_OTHER_ROOTS, EXPORT_OTHER_HANDLES},
    };
    uint64_t *count = g_new0(uint64_t, g->n_nodes);
    for (size_t k = 0; k < G_N_ELEMENTS(tree); k++)
        count[tree[k][0]]++;
    for (size_t k = 0; k < sg->n_roots; k++)
        if (!(sg->roots[k].flags & HL_ROOT_WEAK) && sg->roots[k].node != 0)
            count[export_root_node(&sg->roots[k])]++;
    for (uint32_t i = 1; i < sg->n; i++) {
        uint32_t n;
        an_graph_successors(sg->graph, i, &n);
        count[EXPORT_PSEUDO + i - 1] = n;
    }
    for (uint32_t i = 0; i < g->n_nodes; i++)
        g->first_child[i + 1] = g->first_child[i] + count[i];
    g->children = g_new(uint32_t, MAX(g->first_child[g->n_nodes], 1));
    uint64_t *at = count; /* reused: where the next child of each node goes */
    for (uint32_t i = 0; i < g->n_nodes; i++)
        at[i] = g->first_child[i];
    for (size_t k = 0; k < G_N_ELEMENTS(tree); k++)
        g->children[at[tree[k][0]]++] = tree[k][1];
    for (size_t k = 0; k < sg->n_roots; k++)
        if (!(sg->roots[k].flags & HL_ROOT_WEAK) && sg->roots[k].node != 0)
            g->children[at[export_root_node(&sg->roots[k])]++] =
                EXPORT_PSEUDO + sg->roots[k].node - 1;
    for (uint32_t i = 1; i < sg->n; i++) {
        uint32_t n;
        const uint32_t *to = an_graph_successors(sg->graph, i, &n);
        for (uint32_t k = 0; k < n; k++)
            g->children[at[EXPORT_PSEUDO + i - 1]++] = EXPORT_PSEUDO + to[k] - 1;
    }
    g_free(count);
    return g;
}
