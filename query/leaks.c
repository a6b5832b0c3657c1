/* leaks.c — leak suspects (leaks.h): types whose live count and bytes keep growing from heap
 * snapshot to heap snapshot, with what holds them and a path to a root.
 *
 * The series: the snapshots taken after full (gen2) GCs; a snapshot after a younger GC also
 * holds garbage of the generations it did not collect. With fewer than two of those, every
 * snapshot is used (and a note says so). For each type, its objects and bytes per snapshot
 * (c_1 .. c_k, b_1 .. b_k). A type is a suspect when
 *   - c_k > c_1 and b_k > b_1 (it grew overall),
 *   - c_k > c_(k-1) (it still grows at the end: a cache that warmed up and stopped is not),
 *   - the count rose in at least two thirds of the k-1 intervals and fell in at most a quarter
 *     (churn goes up and down; a steady cache stays flat),
 *   - it grew by a meaningful amount: at least LEAKS_MIN_OBJECTS_PER_INTERVAL objects per
 *     interval on average, or at least 1/LEAKS_MIN_HEAP_SHARE of the last snapshot's bytes (a
 *     few large objects). The runtime's own state moves by an object or two between snapshots
 *     of a heap that does not change (an Object[], a Thread, a String): that is no leak.
 * Suspects are ranked by how much more their instances retain in the last snapshot than in the
 * first (retained size per type: what the instances dominate, each object once), then by bytes
 * grown: a leaking type ranks above the objects it drags along (its buffers, strings), which
 * grow just as steadily but retain only themselves.
 *
 * The holder, in the last snapshot: for each instance, walk up the dominator tree past objects
 * of the same type and collection plumbing (arrays, System.Collections.* types) to the first
 * other object; the holder is the one holding most instances. The path: the shortest path from
 * a GC root to that holder's largest instance — it passes through the holder, which dominates it.
 */
#include "query/leaks.h"

#include "query/query.h"
#include "query/retention.h"
#include "query/root_paths.h"
#include "store/store.h"
#include "wire/hl_wire.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* What the leak analysis found for one type. */
typedef struct suspect {
    uint32_t type_id;
    gboolean flagged;
    int64_t growth_count, growth_bytes;
    int64_t retained_first, retained_last;
    leaks_holder holder; /* in the last snapshot: computed, or read back */
} suspect;

static void suspect_release(suspect *s)
{
    leaks_holder_clear(&s->holder);
}

static int suspect_cmp(const void *a, const void *b)
{
    const suspect *x = a, *y = b;
    int64_t gx = x->retained_last - x->retained_first, gy = y->retained_last - y->retained_first;
    if (x->flagged != y->flagged)
        return x->flagged ? -1 : 1;
    if (gx != gy)
        return gx > gy ? -1 : 1;
    if (x->growth_bytes != y->growth_bytes)
        return x->growth_bytes > y->growth_bytes ? -1 : 1;
    if (x->growth_count != y->growth_count)
        return x->growth_count > y->growth_count ? -1 : 1;
    return x->type_id < y->type_id ? -1 : x->type_id > y->type_id;
}

/* Retained bytes of every type in a stored snapshot, into retained[type]. */
static gboolean type_retained_read(sqlite3 *db, int64_t snapshot, uint32_t n_types,
                                   int64_t *retained, GError **error)
{
    gboolean row = FALSE;
    sqlite3_stmt *stmt = query_db_prepare(
        db, "SELECT type_id, retained_bytes FROM retention_types WHERE snapshot = ?1", error);
    if (!stmt)
        return FALSE;
    sqlite3_bind_int64(stmt, 1, snapshot);
    while (query_db_step(stmt, &row, error) && row) {
        int64_t type = sqlite3_column_int64(stmt, 0);
        if (type >= 0 && type < n_types)
            retained[type] = sqlite3_column_int64(stmt, 1);
    }
    sqlite3_finalize(stmt);
    return !(error && *error);
}

/* Collection plumbing: what a holder walk passes through. */
static gboolean is_plumbing(const snapshot_types *types, uint32_t type_id)
{
    char buf[QUERY_FORMAT_MAX];
    return snapshot_types_is_array(types, type_id) ||
           g_str_has_prefix(snapshot_types_name(types, type_id, buf), "System.Collections.");
}

/* What holder_find finds: the holder node (AN_NONE: none) and its counts. */
typedef struct holder_found {
    uint32_t holder;  /* node: the holder object holding most; AN_NONE when none */
    uint64_t held;    /* instances held by objects of the holder's type */
    uint64_t holders; /* objects of the holder's type holding some */
    uint64_t instances;
} holder_found;

/* Finds the holder of type `T` in the last snapshot, and the instance to draw a path to. */
static uint32_t holder_find(const snapshot_graph *g, const an_domtree *tree,
                            const snapshot_types *types, uint32_t T, holder_found *s,
                            uint32_t *memo)
{
    const uint32_t *idom = an_domtree_idoms(tree);
    const uint64_t *rb = an_domtree_retained_bytes(tree);
    GHashTable *held = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, g_free);
    GArray *stack = g_array_new(FALSE, FALSE, sizeof(uint32_t));
    /* memo[u]: the holder found from u upwards (AN_NONE: none), or AN_NONE - 1: not known */
    const uint32_t unknown = AN_NONE - 1;
    for (uint32_t u = 0; u < g->n; u++)
        memo[u] = unknown;
    memo[0] = AN_NONE;
    for (uint32_t v = 1; v < g->n; v++) {
        if (g->type_ids[v] != T || idom[v] == AN_NONE)
            continue;
        s->instances++;
        /* climb until a node whose answer is known, or a holder */
        uint32_t u = idom[v];
        g_array_set_size(stack, 0);
        while (memo[u] == unknown) {
            uint32_t type = g->type_ids[u];
            if (type != T && !is_plumbing(types, type)) {
                memo[u] = u;
                break;
            }
            g_array_append_val(stack, u);
            u = idom[u];
        }
        uint32_t h = memo[u];
        for (guint i = 0; i < stack->len; i++)
            memo[g_array_index(stack, uint32_t, i)] = h;
        if (h == AN_NONE) { /* nothing but plumbing up to the roots: the first other object */
            for (u = idom[v]; u != 0 && g->type_ids[u] == T; u = idom[u])
                ;
            h = u == 0 ? AN_NONE : u;
        }
        if (h == AN_NONE)
            continue;
        uint64_t *entry = g_hash_table_lookup(held, GUINT_TO_POINTER(h));
        if (!entry) {
            entry = g_new0(uint64_t, 2);
            entry[1] = v;
            g_hash_table_insert(held, GUINT_TO_POINTER(h), entry);
        }
        entry[0]++;
        uint32_t best = (uint32_t)entry[1];
        if (rb[v] > rb[best] || (rb[v] == rb[best] && v < best))
            entry[1] = v;
    }
    /* The holder type holding most instances; within it, the holder object holding most (then
     * the one retaining more, then the lower id). Many holders of one type (each session holds
     * its own buffer) read "held by 1,200 App.Session objects". */
    typedef struct by_type {
        uint64_t held, objects;
        uint32_t best;
        uint64_t best_held;
        uint32_t instance;
    } by_type;
    GHashTable *types_held = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL, g_free);
    GHashTableIter it;
    gpointer key, value;
    g_hash_table_iter_init(&it, held);
    while (g_hash_table_iter_next(&it, &key, &value)) {
        uint32_t h = GPOINTER_TO_UINT(key);
        const uint64_t *entry = value;
        by_type *bt = g_hash_table_lookup(types_held, GUINT_TO_POINTER(g->type_ids[h]));
        if (!bt) {
            bt = g_new0(by_type, 1);
            bt->best = h;
            bt->best_held = entry[0];
            bt->instance = (uint32_t)entry[1];
            g_hash_table_insert(types_held, GUINT_TO_POINTER(g->type_ids[h]), bt);
        } else if (entry[0] > bt->best_held ||
                   (entry[0] == bt->best_held &&
                    (rb[h] > rb[bt->best] || (rb[h] == rb[bt->best] && h < bt->best)))) {
            bt->best = h;
            bt->best_held = entry[0];
            bt->instance = (uint32_t)entry[1];
        }
        bt->held += entry[0];
        bt->objects++;
    }
    uint32_t instance = AN_NONE;
    s->holder = AN_NONE;
    g_hash_table_iter_init(&it, types_held);
    while (g_hash_table_iter_next(&it, &key, &value)) {
        const by_type *bt = value;
        uint32_t type = GPOINTER_TO_UINT(key);
        if (s->holder == AN_NONE || bt->held > s->held ||
            (bt->held == s->held &&
             (bt->objects < s->holders ||
              (bt->objects == s->holders && type < g->type_ids[s->holder])))) {
            s->holder = bt->best;
            s->held = bt->held;
            s->holders = bt->objects;
            instance = bt->instance;
        }
    }
    g_hash_table_unref(types_held);
    g_hash_table_unref(held);
    g_array_unref(stack);
    return instance;
}

struct leaks {
    sqlite3 *db; /* borrowed */
    snapshot_types *types;
    GArray *series; /* snapshot_info of the series */
    size_t k;       /* series->len */
    retention *last;
    char *series_note;
    int64_t *counts, *bytes; /* [type * k + i] */
    suspect *suspects;       /* n_types, the first n_suspects shown */
    uint32_t n_types, n_suspects, n_flagged;
};

void leaks_free(leaks *l)
{
    if (!l)
        return;
    if (l->suspects)
        for (uint32_t t = 0; t < l->n_types; t++)
            suspect_release(&l->suspects[t]);
    g_free(l->suspects);
    snapshot_types_free(l->types);
    if (l->series)
        g_array_unref(l->series);
    retention_free(l->last);
    g_free(l->series_note);
    g_free(l->counts);
    g_free(l->bytes);
    g_free(l);
}

/* The series of snapshots to compare (leaks.c's top comment). */
static gboolean series_pick(leaks *l, const char *path, GError **error)
{
    g_autoptr(GArray) snapshots = snapshot_list_new(l->db, error);
    if (!snapshots)
        return FALSE;
    if (snapshots->len < 2) {
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_NOT_FOUND,
                    "leaks needs at least two heap snapshots to see growth; %s has %u (take one "
                    "per GC.Collect() with 'heaplens record', or with 'heaplens snapshot PID')",
                    path, snapshots->len);
        return FALSE;
    }
    l->series = g_array_new(FALSE, FALSE, sizeof(snapshot_info));
    for (guint i = 0; i < snapshots->len; i++)
        if (g_array_index(snapshots, snapshot_info, i).gc_generation == 2)
            g_array_append_val(l->series, g_array_index(snapshots, snapshot_info, i));
    if (l->series->len < 2) {
        g_array_set_size(l->series, 0);
        g_array_append_vals(l->series, snapshots->data, snapshots->len);
        l->series_note = g_strdup("note: fewer than two snapshots were taken after full GCs, so "
                                  "all snapshots are compared; garbage of generations a GC did "
                                  "not collect counts as live");
    }
    l->k = l->series->len;
    return TRUE;
}

/* Objects and bytes per type of the blocks snapshot `info` shares with another snapshot whose
 * graph this command holds (`g`: its objects in id order; snapshots of a heap that changed
 * little share most of their blocks): into count and bytes (zeroed first), their objects into
 * *shared. The same figures as counting the blocks (snapshot_objects_per_type): the loader took
 * each object's type and size from the same `objects` row (none: type 0, 0 bytes). *usable
 * FALSE when a shared block is not what the graph holds: counted from the blocks then. */
static gboolean counts_from_graph(sqlite3 *db, const snapshot_graph *g, const snapshot_info *info,
                                  uint32_t n_types, int64_t *count, int64_t *bytes,
                                  int64_t *shared, gboolean *usable, GError **error)
{
    gboolean row = FALSE, ok = FALSE;
    *shared = 0;
    *usable = FALSE;
    memset(count, 0, n_types * sizeof *count);
    memset(bytes, 0, n_types * sizeof *bytes);
    sqlite3_stmt *st = query_db_prepare(
        db, "SELECT first_id, objects FROM snapshot_blocks"
            " WHERE first_snapshot <= min(?1, ?2) AND last_snapshot >= max(?1, ?2)", error);
    if (!st)
        return FALSE;
    sqlite3_bind_int64(st, 1, info->snapshot);
    sqlite3_bind_int64(st, 2, g->info.snapshot);
    while (query_db_step(st, &row, error) && row) {
        int64_t first = sqlite3_column_int64(st, 0), n = sqlite3_column_int64(st, 1);
        /* the block's objects: consecutive in the graph from its first id (node 0 is the
         * virtual root) */
        uint32_t lo = hl_ids_lower_bound(g->ids, 1, g->n, (uint64_t)first);
        if (first <= 0 || n <= 0 || lo == g->n || g->ids[lo] != (uint64_t)first ||
            (uint64_t)n > g->n - lo || n > info->objects - *shared) {
            ok = TRUE; /* not what the graph holds */
            goto out;
        }
        for (uint32_t v = lo; v < lo + (uint32_t)n; v++) {
            uint32_t t = g->type_ids[v] < n_types ? g->type_ids[v] : 0;
            count[t]++;
            bytes[t] = query_add_saturating(bytes[t], (int64_t)g->sizes[v]);
        }
        *shared += n;
    }
    ok = !(error && *error);
    *usable = ok;
out:
    sqlite3_finalize(st);
    return ok;
}

/* Objects and bytes of every type in every snapshot of the series. */
static gboolean series_count(leaks *l, query_progress *progress, GError **error)
{
    const size_t k = l->k;
    const uint32_t n_types = l->n_types;
    l->counts = g_new0(int64_t, (size_t)n_types * k);
    l->bytes = g_new0(int64_t, (size_t)n_types * k);
    /* Counted once per snapshot, then read back from the few rows stored. The ones not stored
     * yet: the blocks they share with the snapshot whose graph this command holds (report's
     * last) from that graph, the other blocks counted together (snapshot_objects_per_type reads
     * a block shared by several once). */
    g_autofree int64_t *cs = g_new0(int64_t, (size_t)n_types * k);
    g_autofree int64_t *bs = g_new0(int64_t, (size_t)n_types * k);
    g_autofree gboolean *found = g_new0(gboolean, k), *stored = g_new0(gboolean, k);
    g_autoptr(GArray) missing = g_array_new(FALSE, FALSE, sizeof(snapshot_info));
    g_autoptr(retention) held = store_snapshot_blocks_present(l->db)
                                    ? retention_pending_last(l->db)
                                    : NULL;
    int64_t skip = held ? retention_graph(held)->info.snapshot : 0;
    for (size_t i = 0; i < k; i++) {
        const snapshot_info *info = &g_array_index(l->series, snapshot_info, i);
        if (!retention_counts_read(l->db, info, n_types, cs + i * n_types, bs + i * n_types,
                                   &stored[i], error))
            return FALSE;
        found[i] = stored[i];
    }
    for (size_t i = 0; i < k && skip; i++) {
        const snapshot_info *info = &g_array_index(l->series, snapshot_info, i);
        int64_t shared = 0;
        gboolean usable = FALSE;
        if (found[i])
            continue;
        query_progress_update(progress, "counting objects per snapshot from the graph held", i, k);
        if (!counts_from_graph(l->db, retention_graph(held), info, n_types, cs + i * n_types,
                               bs + i * n_types, &shared, &usable, error))
            return FALSE;
        if (!usable) { /* every snapshot not stored counted from its blocks */
            for (size_t j = 0; j < k; j++) {
                if (stored[j])
                    continue;
                found[j] = FALSE;
                memset(cs + j * n_types, 0, n_types * sizeof *cs);
                memset(bs + j * n_types, 0, n_types * sizeof *bs);
            }
            g_array_set_size(missing, 0);
            skip = 0;
            break;
        }
        found[i] = shared == info->objects;
        if (!found[i]) { /* the rest from its other blocks */
            snapshot_info rest = *info;
            rest.objects -= shared;
            g_array_append_val(missing, rest);
        }
    }
    query_progress_update(progress, "counting objects per snapshot", 0, k);
    for (size_t i = 0; i < k && !skip; i++)
        if (!found[i])
            g_array_append_val(missing, g_array_index(l->series, snapshot_info, i));
    g_autofree int64_t *mc = g_new0(int64_t, (size_t)n_types * MAX(missing->len, 1));
    g_autofree int64_t *mb = g_new0(int64_t, (size_t)n_types * MAX(missing->len, 1));
    if (!snapshot_objects_per_type(l->db, (const snapshot_info *)(void *)missing->data,
                                   missing->len, n_types, skip, mc, mb, error))
        return FALSE;
    for (size_t i = 0, m = 0; i < k; i++) {
        const snapshot_info *info = &g_array_index(l->series, snapshot_info, i);
        if (!found[i]) { /* added to what the graph gave (nothing without one) */
            for (uint32_t t = 0; t < n_types; t++) {
                cs[i * n_types + t] += mc[m * n_types + t];
                bs[i * n_types + t] = query_add_saturating(bs[i * n_types + t],
                                                           mb[m * n_types + t]);
            }
            m++;
        }
        if (!stored[i]) /* counted now: kept, stored by retention_commit */
            if (!retention_counts_keep(l->db, info->snapshot, n_types, cs + i * n_types,
                                       bs + i * n_types, error))
                return FALSE;
        for (uint32_t t = 0; t < n_types; t++) {
            l->counts[(size_t)t * k + i] = cs[i * n_types + t];
            l->bytes[(size_t)t * k + i] = bs[i * n_types + t];
        }
    }
    query_progress_update(progress, "counting objects per snapshot", k, k);
    return TRUE;
}

/* The trend of each type: the suspects (and, with `all`, every type that grew) first. */
/* The minimum growth of a suspect (see above). */
#define LEAKS_MIN_OBJECTS_PER_INTERVAL 3
#define LEAKS_MIN_HEAP_SHARE 100

gboolean leaks_trend_flagged(const int64_t *cv, const int64_t *bv, size_t k, int64_t heap_last)
{
    int up = 0, down = 0;
    if (k < 2)
        return FALSE;
    for (size_t i = 1; i < k; i++) {
        up += cv[i] > cv[i - 1];
        down += cv[i] < cv[i - 1];
    }
    int64_t growth_count = cv[k - 1] - cv[0], growth_bytes = bv[k - 1] - bv[0];
    size_t intervals = k - 1;
    gboolean meaningful = growth_count >= (int64_t)(LEAKS_MIN_OBJECTS_PER_INTERVAL * intervals) ||
                          growth_bytes >= heap_last / LEAKS_MIN_HEAP_SHARE;
    return growth_count > 0 && growth_bytes > 0 && cv[k - 1] > cv[k - 2] &&
           (size_t)up * 3 >= intervals * 2 && (size_t)down * 4 <= intervals && meaningful;
}

static void trends_classify(leaks *l, gboolean all)
{
    const size_t k = l->k;
    int64_t heap_last = 0;
    for (uint32_t t = 0; t < l->n_types; t++)
        heap_last = query_add_saturating(heap_last, l->bytes[(size_t)t * k + k - 1]);
    l->suspects = g_new0(suspect, l->n_types);
    for (uint32_t t = 0; t < l->n_types; t++) {
        const int64_t *cv = l->counts + (size_t)t * k, *bv = l->bytes + (size_t)t * k;
        suspect *s = &l->suspects[l->n_suspects];
        memset(s, 0, sizeof *s);
        s->type_id = t;
        s->growth_count = cv[k - 1] - cv[0];
        s->growth_bytes = bv[k - 1] - bv[0];
        s->flagged = leaks_trend_flagged(cv, bv, k, heap_last);
        if (s->flagged || (all && s->growth_count > 0)) {
            l->n_flagged += s->flagged;
            l->n_suspects++;
        }
    }
}

/* The holder and path of type `type_id` in the snapshot of `last` (its graph and tree), into *h;
 * `reversed` (created on first use) and `memo` (g->n entries) are the caller's, reused. */
static gboolean holder_compute(leaks *l, const retention *last, uint32_t type_id,
                               an_graph **reversed, uint32_t *memo, leaks_holder *h,
                               GError **error)
{
    const snapshot_graph *g = retention_graph(last);
    holder_found f = {0};
    uint32_t instance = holder_find(g, retention_tree(last), l->types, type_id, &f, memo);
    h->instances = f.instances;
    if (f.holder == AN_NONE)
        return TRUE;
    h->found = TRUE;
    h->object = g->ids[f.holder];
    h->type_id = g->type_ids[f.holder];
    h->retained_bytes = an_domtree_retained_bytes(retention_tree(last))[f.holder];
    h->held = f.held;
    h->holders = f.holders;
    if (instance == AN_NONE)
        return TRUE;
    if (!*reversed && !(*reversed = an_graph_new_reversed(g->graph))) {
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_SQLITE, "out of memory");
        return FALSE;
    }
    g_autoptr(GPtrArray) paths = root_paths_find(g, *reversed, instance, 1, error);
    if (!paths)
        return FALSE;
    g_ptr_array_set_free_func(paths, (GDestroyNotify)root_path_free);
    if (paths->len == 0)
        return TRUE;
    root_path *path = g_ptr_array_index(paths, 0);
    if (!root_path_name(l->db, g, l->types, path, error))
        return FALSE;
    g_autofree char *roots = root_path_root_text(g, path);
    g_autofree char *hops = root_path_text(g, l->types, path);
    h->path = root_path_hops_json(g, l->types, path);
    h->roots = root_path_roots_json(g, path);
    h->path_text = g_strdup_printf("%s -> %s", roots, hops);
    return TRUE;
}

/* Ranks the suspects by retained growth, keeps the first `top`, finds their holders and paths:
 * stored ones read back, the others from the last snapshot's tree (computed only then). */
static gboolean suspects_rank(leaks *l, uint64_t top, query_progress *progress, GError **error)
{
    const snapshot_info *first = &g_array_index(l->series, snapshot_info, 0);
    const snapshot_info *final = &g_array_index(l->series, snapshot_info, l->k - 1);
    const uint32_t n_types = l->n_types;
    g_autofree int64_t *ret_first = g_new0(int64_t, n_types);
    g_autofree int64_t *ret_last = g_new0(int64_t, n_types);
    gboolean last_stored = FALSE;
    if (!retention_ensure(l->db, first, progress, error) ||
        !type_retained_read(l->db, first->snapshot, n_types, ret_first, error) ||
        !retention_is_stored(l->db, final->snapshot, &last_stored, error))
        return FALSE;
    /* the last snapshot's retained sizes per type: stored (or computed by this command), else
     * computed now (its holders will need its tree) */
    if (last_stored) {
        if (!type_retained_read(l->db, final->snapshot, n_types, ret_last, error))
            return FALSE;
    } else {
        l->last = retention_get(l->db, final, progress, error);
        if (!l->last)
            return FALSE;
        const uint64_t *tr = retention_type_retained_bytes(l->last);
        for (uint32_t t = 0; t < retention_type_count(l->last) && t < n_types; t++)
            ret_last[t] = (int64_t)tr[t];
    }
    for (uint32_t i = 0; i < l->n_suspects; i++) {
        l->suspects[i].retained_first = ret_first[l->suspects[i].type_id];
        l->suspects[i].retained_last = ret_last[l->suspects[i].type_id];
    }
    qsort(l->suspects, l->n_suspects, sizeof *l->suspects, suspect_cmp);
    if (l->n_suspects > top)
        l->n_suspects = (uint32_t)top;

    /* holders and paths of the ones shown */
    g_autofree uint32_t *memo = NULL;
    an_graph *reversed = NULL;
    gboolean ok = FALSE;
    query_progress_update(progress, "finding holders and paths", 0, l->n_suspects);
    for (uint32_t i = 0; i < l->n_suspects; i++) {
        suspect *s = &l->suspects[i];
        gboolean found = FALSE;
        query_progress_update(progress, "finding holders and paths", i, l->n_suspects);
        if (!leaks_holder_read(l->db, final, s->type_id, &s->holder, &found, error))
            goto out;
        if (found)
            continue;
        if (!l->last && !(l->last = retention_get(l->db, final, progress, error)))
            goto out;
        if (!memo && !(memo = g_try_new(uint32_t, retention_graph(l->last)->n))) {
            g_set_error(error, QUERY_ERROR, QUERY_ERROR_SQLITE, "out of memory");
            goto out;
        }
        if (!holder_compute(l, l->last, s->type_id, &reversed, memo, &s->holder, error) ||
            !leaks_holder_keep(l->db, final, s->type_id, &s->holder, error))
            goto out;
    }
    ok = TRUE;
out:
    an_graph_free(reversed);
    return ok;
}

leaks *leaks_find(sqlite3 *db, const char *path, uint64_t top, gboolean all,
                  query_progress *progress, GError **error)
{
    leaks *l = g_new0(leaks, 1);
    l->db = db;
    if (!series_pick(l, path, error))
        goto fail;
    l->types = snapshot_types_new(db, error);
    if (!l->types)
        goto fail;
    l->n_types = snapshot_types_count(l->types);
    if (!series_count(l, progress, error))
        goto fail;
    trends_classify(l, all);
    if (l->n_suspects > 0 && !suspects_rank(l, top, progress, error))
        goto fail;
    return l;
fail:
    leaks_free(l);
    return NULL;
}

json_t *leaks_json_head(const leaks *l)
{
    json_t *snaps = json_array(), *gcs = json_array();
    for (size_t i = 0; i < l->k; i++) {
        json_array_append_new(snaps,
                              json_integer(g_array_index(l->series, snapshot_info, i).snapshot));
        json_array_append_new(gcs, json_integer(g_array_index(l->series, snapshot_info, i).gc));
    }
    /* flagged: every suspect, as the text's "27 types kept growing"; rows holds --top of them */
    return json_pack("{s:o, s:o, s:b, s:I}", "snapshots", snaps, "gcs", gcs, "full_gcs_only",
                     l->series_note == NULL, "flagged", (json_int_t)l->n_flagged);
}

guint leaks_count(const leaks *l)
{
    return l->n_suspects;
}

json_t *leaks_json_row(const leaks *l, guint i)
{
    const suspect *s = &l->suspects[i];
    const leaks_holder *h = &s->holder;
    const size_t k = l->k;
    char a[QUERY_FORMAT_MAX];
    json_t *cv = json_array(), *bv = json_array();
    for (size_t j = 0; j < k; j++) {
        json_array_append_new(cv, json_integer(l->counts[(size_t)s->type_id * k + j]));
        json_array_append_new(bv, json_integer(l->bytes[(size_t)s->type_id * k + j]));
    }
    json_t *row = json_pack("{s:o, s:I, s:I, s:I, s:b, s:o, s:o}", "type",
                            query_json_string(snapshot_types_name(l->types, s->type_id, a)),
                            "growth_count", (json_int_t)s->growth_count, "growth_bytes",
                            (json_int_t)s->growth_bytes, "growth_retained_bytes",
                            (json_int_t)(s->retained_last - s->retained_first), "flagged",
                            s->flagged, "counts", cv, "bytes", bv);
    if (h->found) {
        json_object_set_new(row, "holder",
                            query_json_string(snapshot_types_name(l->types, h->type_id, a)));
        json_object_set_new(row, "holder_object", json_integer((json_int_t)h->object));
        json_object_set_new(row, "holder_retained_bytes",
                            json_integer((json_int_t)h->retained_bytes));
        json_object_set_new(row, "held", json_integer((json_int_t)h->held));
        json_object_set_new(row, "holders", json_integer((json_int_t)h->holders));
        json_object_set_new(row, "instances", json_integer((json_int_t)h->instances));
    } else {
        json_object_set_new(row, "holder", json_null());
        json_object_set_new(row, "holder_object", json_null());
    }
    json_object_set_new(row, "path", h->path ? json_incref(h->path) : json_null());
    json_object_set_new(row, "roots", h->roots ? json_incref(h->roots) : json_null());
    return row;
}

void leaks_series_get(const leaks *l, size_t *k, const snapshot_info **first,
                      const snapshot_info **last, const char **note)
{
    *k = l->k;
    *first = &g_array_index(l->series, snapshot_info, 0);
    *last = &g_array_index(l->series, snapshot_info, l->k - 1);
    *note = l->series_note;
}

const char *leaks_series_note(const leaks *l)
{
    return l->series_note;
}

guint leaks_flagged_count(const leaks *l)
{
    return l->n_flagged;
}

void leaks_suspect_get(const leaks *l, guint i, leaks_suspect *out, char buf[QUERY_FORMAT_MAX],
                       char holder_buf[QUERY_FORMAT_MAX])
{
    const suspect *s = &l->suspects[i];
    const leaks_holder *h = &s->holder;
    memset(out, 0, sizeof *out);
    out->type = snapshot_types_name(l->types, s->type_id, buf);
    out->flagged = s->flagged;
    out->growth_count = s->growth_count;
    out->growth_bytes = s->growth_bytes;
    out->growth_retained_bytes = s->retained_last - s->retained_first;
    out->counts = l->counts + (size_t)s->type_id * l->k;
    if (!h->found)
        return;
    out->holder_type = snapshot_types_name(l->types, h->type_id, holder_buf);
    for (uint32_t j = 0; j < l->n_suspects; j++)
        if (l->suspects[j].flagged && l->suspects[j].type_id == h->type_id)
            out->holder_rank = j + 1;
    out->holder_object = h->object;
    out->holder_retained_bytes = h->retained_bytes;
    out->held = h->held;
    out->holders = h->holders;
    out->instances = h->instances;
}

char *leaks_suspect_path_text_new(const leaks *l, guint i)
{
    return g_strdup(l->suspects[i].holder.path_text);
}
