/* stacks.c — allocation sites from the sampled allocations and their stacks (stacks.h). */
#include "query/stacks.h"

#include "query/query.h"
#include "query/snapshot_graph.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

gboolean stacks_present(sqlite3 *db, GError **error)
{
    /* The tables exist in every file query_db_open accepts (schema 3); no sampling row: stacks
     * were off. */
    int64_t rows = 0;
    if (!query_db_int(db, "SELECT count(*) FROM sampling", &rows, error))
        return FALSE;
    return rows > 0;
}

char *stacks_absent_message_new(const char *path)
{
    return g_strdup_printf("%s has no allocation stacks: recorded with --stacks off", path);
}

/* One GROUP BY over the samples. ?1 type name (NULL: all), ?2..?3 the allocation intervals
 * (NULL: open), ?4 fate: 0 every sample, 1 promoted to gen2, 2 promoted to gen2 and died. A
 * sample's fate is known only when its object is tracked (object_id): an object that died
 * before its first GC never reached gen2 either. */
static const char sites_sql[] =
    "SELECT coalesce(s.stack_id, -1), s.type_id, coalesce(t.name, '<type ' || s.type_id || '>'),"
    "       sum(s.est_count), sum(s.est_bytes), count(*),"
    "       sum(typeof(s.type_id) <> 'integer' OR typeof(s.stack_id) NOT IN ('integer', 'null')"
    "           OR typeof(s.gc) <> 'integer' OR typeof(s.est_count) NOT IN ('integer', 'real')"
    "           OR typeof(s.est_bytes) NOT IN ('integer', 'real') OR s.est_count < 0"
    "           OR s.est_bytes < 0 OR s.size < 0)"
    "  FROM alloc_samples AS s LEFT JOIN types AS t ON t.id = s.type_id"
    " WHERE (?1 IS NULL OR t.name = ?1)"
    "   AND (?2 IS NULL OR s.gc >= ?2) AND (?3 IS NULL OR s.gc <= ?3)"
    "   AND (?4 = 0 OR (s.object_id IS NOT NULL"
    "        AND EXISTS (SELECT 1 FROM object_generations AS og"
    "                     WHERE og.object_id = s.object_id AND og.generation = 2)"
    "        AND (?4 = 1 OR EXISTS (SELECT 1 FROM objects AS o"
    "                                WHERE o.id = s.object_id AND o.died_gc IS NOT NULL))))"
    " GROUP BY s.stack_id, s.type_id";

static const char frames_sql[] =
    "SELECT sf.frame_id, f.name, typeof(sf.frame_id) = 'integer' AND typeof(sf.position) = 'integer'"
    "  FROM stack_frames AS sf LEFT JOIN frames AS f ON f.id = sf.frame_id"
    " WHERE sf.stack_id = ?1 ORDER BY sf.position";

typedef struct site_order {
    stacks_sort sort;
} site_order;

/* Heaviest first by the chosen measure, then the other, then samples, type and stack id, so
 * that the order is the same on every run. */
static gint site_compare(gconstpointer a, gconstpointer b, gpointer data)
{
    const stacks_site *x = a, *y = b;
    const site_order *o = data;
    double x1 = o->sort == STACKS_SORT_COUNT ? x->count : x->bytes;
    double y1 = o->sort == STACKS_SORT_COUNT ? y->count : y->bytes;
    double x2 = o->sort == STACKS_SORT_COUNT ? x->bytes : x->count;
    double y2 = o->sort == STACKS_SORT_COUNT ? y->bytes : y->count;
    if (x1 != y1)
        return x1 > y1 ? -1 : 1;
    if (x2 != y2)
        return x2 > y2 ? -1 : 1;
    if (x->samples != y->samples)
        return x->samples > y->samples ? -1 : 1;
    int c = strcmp(x->type, y->type);
    if (c)
        return c;
    return x->stack_id < y->stack_id ? -1 : x->stack_id > y->stack_id;
}

/* Loads the frames of `site` through `stmt` (frames_sql), interning their names. */
static gboolean site_frames_load(stacks_result *r, stacks_site *site, sqlite3_stmt *stmt,
                                 GError **error)
{
    gboolean row = FALSE;
    gboolean stepped = FALSE;
    g_autoptr(GArray) frames = g_array_new(FALSE, FALSE, sizeof(guint));
    sqlite3_reset(stmt);
    sqlite3_bind_int64(stmt, 1, site->stack_id);
    while ((stepped = query_db_step(stmt, &row, error)) && row) {
        if (!sqlite3_column_int(stmt, 2))
            return query_db_damaged(error, "a frame of stack %" PRId64 " is not a number",
                                    site->stack_id);
        int64_t frame_id = sqlite3_column_int64(stmt, 0);
        gpointer slot = g_hash_table_lookup(r->frame_index, &frame_id);
        if (!slot) {
            const char *name = (const char *)sqlite3_column_text(stmt, 1);
            char *copy = name ? g_strdup(name)
                              : g_strdup_printf("[frame %" PRId64 "]", frame_id);
            g_ptr_array_add(r->frame_names, copy);
            slot = GUINT_TO_POINTER(r->frame_names->len);
            g_hash_table_insert(r->frame_index, g_memdup2(&frame_id, sizeof frame_id), slot);
        }
        guint index = GPOINTER_TO_UINT(slot) - 1;
        g_array_append_val(frames, index);
    }
    if (!stepped)
        return FALSE;
    site->depth = frames->len;
    site->frames = (guint *)g_array_free(g_steal_pointer(&frames), FALSE);
    return TRUE;
}

stacks_result *stacks_load(sqlite3 *db, const stacks_query *q, GError **error)
{
    g_autoptr(stacks_result) r = g_new0(stacks_result, 1);
    gboolean row = FALSE;
    gboolean stepped = FALSE;
    gboolean ok = FALSE;
    sqlite3_stmt *stmt = NULL;
    sqlite3_stmt *frames = NULL;
    site_order order = {q->sort};

    r->sites = g_array_new(FALSE, TRUE, sizeof(stacks_site));
    r->frame_names = g_ptr_array_new_with_free_func(g_free);
    r->strings = g_string_chunk_new(4096);
    r->frame_index = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL);
    if (!query_estimates_get(db, &r->sampling, error))
        goto out;

    stmt = query_db_prepare(db, sites_sql, error);
    if (!stmt)
        goto out;
    if (q->type)
        sqlite3_bind_text(stmt, 1, q->type, -1, SQLITE_STATIC);
    if (q->gc_from)
        sqlite3_bind_int64(stmt, 2, q->gc_from);
    if (q->gc_to)
        sqlite3_bind_int64(stmt, 3, q->gc_to);
    sqlite3_bind_int(stmt, 4, q->by == STACKS_BY_ALLOCATED ? 0 : q->by == STACKS_BY_SURVIVED ? 1 : 2);
    while ((stepped = query_db_step(stmt, &row, error)) && row) {
        if (sqlite3_column_int64(stmt, 6) > 0) {
            query_db_damaged(error, "allocation samples hold values no recording holds (a type, "
                                    "stack, GC or estimate that is not a number, or a negative one)");
            goto out;
        }
        const char *type = (const char *)sqlite3_column_text(stmt, 2);
        stacks_site site = {
            .stack_id = sqlite3_column_int64(stmt, 0),
            .type = g_string_chunk_insert_const(r->strings, type ? type : "<unknown>"),
            .count = sqlite3_column_double(stmt, 3),
            .bytes = sqlite3_column_double(stmt, 4),
            .samples = sqlite3_column_int64(stmt, 5),
        };
        /* Huge estimates sum to infinity: still finite and not negative here. */
        if (!isfinite(site.count) || site.count < 0)
            site.count = 0;
        if (!isfinite(site.bytes) || site.bytes < 0)
            site.bytes = 0;
        r->total_count += site.count;
        r->total_bytes += site.bytes;
        r->total_samples = query_add_saturating(r->total_samples, site.samples);
        g_array_append_val(r->sites, site);
    }
    if (!stepped)
        goto out;
    g_array_sort_with_data(r->sites, site_compare, &order);
    r->sites_all = r->sites->len;
    if (q->top && r->sites->len > q->top)
        g_array_set_size(r->sites, q->top);

    frames = query_db_prepare(db, frames_sql, error);
    if (!frames)
        goto out;
    for (guint i = 0; i < r->sites->len; i++) {
        stacks_site *site = &g_array_index(r->sites, stacks_site, i);
        if (site->stack_id >= 0 && !site_frames_load(r, site, frames, error))
            goto out;
    }
    ok = TRUE;
out:
    sqlite3_finalize(stmt);
    sqlite3_finalize(frames);
    return ok ? g_steal_pointer(&r) : NULL;
}

void stacks_result_free(stacks_result *r)
{
    if (!r)
        return;
    for (guint i = 0; r->sites && i < r->sites->len; i++)
        g_free(g_array_index(r->sites, stacks_site, i).frames);
    if (r->sites)
        g_array_free(r->sites, TRUE);
    if (r->frame_names)
        g_ptr_array_free(r->frame_names, TRUE);
    if (r->strings)
        g_string_chunk_free(r->strings);
    if (r->frame_index)
        g_hash_table_destroy(r->frame_index);
    query_estimates_clear(&r->sampling);
    g_free(r);
}

const char *stacks_site_frame(const stacks_result *r, const stacks_site *s, guint i)
{
    return g_ptr_array_index(r->frame_names, s->frames[i]);
}

char *stacks_sampling_text_new(const query_estimates *s)
{
    char samples[QUERY_FORMAT_MAX], distance[QUERY_FORMAT_MAX], dropped[QUERY_FORMAT_MAX];
    GString *text = g_string_new(NULL);
    g_string_append_printf(text, "estimated from %s %s", query_count_format(s->samples, samples),
                           s->samples == 1 ? "sample" : "samples");
    if (s->mean_distance_bytes >= 0)
        g_string_append_printf(text, ", mean distance %s bytes (%s)",
                               query_count_format(s->mean_distance_bytes, distance),
                               query_size_format(s->mean_distance_bytes, dropped));
    g_string_append_printf(text, "; source %s", s->source);
    if (s->biased)
        g_string_append(text, ", biased: a sample every ~100 KiB allocated, attributed to the "
                              "allocation that crossed it, so large objects and their sites weigh "
                              "more than their share");
    if (s->samples_dropped > 0)
        g_string_append_printf(text, "; %s samples were lost",
                               query_count_format(s->samples_dropped, dropped));
    return g_string_free(text, FALSE);
}

json_t *stacks_sampling_json(const query_estimates *s)
{
    return json_pack("{s:o, s:o, s:b, s:I, s:I, s:b}", "source", query_json_string(s->source),
                     "mean_distance_bytes",
                     s->mean_distance_bytes >= 0 ? json_integer(s->mean_distance_bytes)
                                                 : json_null(),
                     "biased", s->biased, "samples", (json_int_t)s->samples, "samples_dropped",
                     (json_int_t)s->samples_dropped, "estimated", 1);
}

int64_t stacks_round(double v)
{
    return v >= 9.2e18 ? INT64_MAX : (int64_t)llround(v);
}

json_t *stacks_site_json(const stacks_result *r, const stacks_site *s)
{
    json_t *frames = json_array();
    if (s->stack_id < 0)
        json_array_append_new(frames, json_string(STACKS_NO_STACK_FRAME));
    for (guint i = 0; i < s->depth; i++)
        json_array_append_new(frames, query_json_string(stacks_site_frame(r, s, i)));
    return json_pack("{s:o, s:o, s:I, s:I, s:I}", "type", query_json_string(s->type), "frames",
                     frames, "count", (json_int_t)stacks_round(s->count), "bytes", (json_int_t)stacks_round(s->bytes), "samples",
                     (json_int_t)s->samples);
}

/* ---- the flame graph tree -------------------------------------------------------------- */

typedef struct flame_node {
    const char *name;
    gboolean is_type; /* a leaf: the type allocated (kept apart from a frame of the same name) */
    double bytes, count;
    GHashTable *children; /* name -> flame_node * */
} flame_node;

static flame_node *flame_node_new(const char *name)
{
    flame_node *n = g_new0(flame_node, 1);
    n->name = name;
    return n;
}

static void flame_node_free(gpointer p)
{
    flame_node *n = p;
    if (n->children)
        g_hash_table_destroy(n->children);
    g_free(n);
}

/* Children are keyed by name, types by their name after a byte no name holds. */
static flame_node *flame_child(flame_node *parent, const char *name, gboolean is_type,
                               GStringChunk *keys)
{
    if (!parent->children)
        parent->children = g_hash_table_new_full(g_str_hash, g_str_equal, NULL, flame_node_free);
    const char *key = name;
    if (is_type) {
        g_autofree char *typed = g_strconcat("\x01", name, NULL);
        key = g_string_chunk_insert_const(keys, typed);
    }
    flame_node *child = g_hash_table_lookup(parent->children, key);
    if (!child) {
        child = flame_node_new(name);
        child->is_type = is_type;
        g_hash_table_insert(parent->children, (gpointer)key, child);
    }
    return child;
}

static gint flame_compare(gconstpointer a, gconstpointer b)
{
    const flame_node *x = *(flame_node *const *)a, *y = *(flame_node *const *)b;
    if (x->bytes != y->bytes)
        return x->bytes > y->bytes ? -1 : 1;
    return strcmp(x->name, y->name);
}

static json_t *flame_json(const flame_node *n, double min_bytes)
{
    json_t *children = json_array();
    if (n->children) {
        g_autoptr(GPtrArray) sorted = g_ptr_array_new();
        GHashTableIter it;
        gpointer value;
        g_hash_table_iter_init(&it, n->children);
        while (g_hash_table_iter_next(&it, NULL, &value))
            g_ptr_array_add(sorted, value);
        g_ptr_array_sort(sorted, flame_compare);
        for (guint i = 0; i < sorted->len; i++) {
            const flame_node *c = g_ptr_array_index(sorted, i);
            if (c->bytes >= min_bytes && c->bytes > 0)
                json_array_append_new(children, flame_json(c, min_bytes));
        }
    }
    json_t *node = json_pack("{s:o, s:I, s:I, s:o}", "name", query_json_string(n->name), "bytes",
                             (json_int_t)stacks_round(n->bytes), "count", (json_int_t)stacks_round(n->count), "children", children);
    if (n->is_type)
        json_object_set_new(node, "type", json_true());
    return node;
}

json_t *stacks_flame_json(const stacks_result *r, double min_fraction)
{
    flame_node *root = flame_node_new("all");
    GStringChunk *keys = g_string_chunk_new(1024);
    for (guint i = 0; i < r->sites->len; i++) {
        const stacks_site *s = &g_array_index(r->sites, stacks_site, i);
        flame_node *n = root;
        root->bytes += s->bytes;
        root->count += s->count;
        if (s->stack_id < 0) {
            n = flame_child(n, STACKS_NO_STACK_FRAME, FALSE, keys);
            n->bytes += s->bytes;
            n->count += s->count;
        }
        for (guint f = s->depth; f-- > 0;) {
            n = flame_child(n, stacks_site_frame(r, s, f), FALSE, keys);
            n->bytes += s->bytes;
            n->count += s->count;
        }
        n = flame_child(n, s->type, TRUE, keys);
        n->bytes += s->bytes;
        n->count += s->count;
    }
    json_t *tree = flame_json(root, root->bytes * min_fraction);
    flame_node_free(root);
    g_string_chunk_free(keys);
    return tree;
}

/* Parses --gc N or --interval A..B into an inclusive range of allocation intervals. The tail
 * interval (after the last GC) is last + 1. */
static gboolean interval_parse(sqlite3 *db, const char *path, const char *gc_text,
                               const char *interval, stacks_query *q, GError **error)
{
    int64_t last = 0;
    uint64_t a = 0, b = 0;
    if (gc_text && interval) {
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_USAGE,
                    "stacks: give --gc N or --interval A..B, not both");
        return FALSE;
    }
    if (!gc_text && !interval)
        return TRUE;
    if (!query_db_int(db, "SELECT max(gc) FROM gcs", &last, error))
        return FALSE;
    if (gc_text) {
        if (!query_args_parse_uint("stacks", "gc", gc_text, 1, G_MAXINT64,
                                   "a GC number (1, 2, ...)", &a, error))
            return FALSE;
        b = a;
    } else {
        const char *dots = strstr(interval, "..");
        g_autofree char *first = dots ? g_strndup(interval, (gsize)(dots - interval)) : NULL;
        if (!dots || !query_args_parse_uint("stacks", "interval", first, 1, G_MAXINT64,
                                            "A..B, two GC numbers", &a, NULL) ||
            !query_args_parse_uint("stacks", "interval", dots + 2, 1, G_MAXINT64,
                                   "A..B, two GC numbers", &b, NULL) ||
            a > b) {
            g_set_error(error, QUERY_ERROR, QUERY_ERROR_USAGE,
                        "stacks: --interval expects A..B, two GC numbers with A <= B, not '%s'",
                        interval);
            return FALSE;
        }
    }
    if (b > (uint64_t)last + 1) {
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_NOT_FOUND,
                    "no GC %" PRIu64 " in %s: allocations were made before GCs 1 to %" PRId64
                    " and after the last (%" PRId64 ")",
                    b, path, last + 1, last + 1);
        return FALSE;
    }
    q->gc_from = (int64_t)a;
    q->gc_to = (int64_t)b;
    return TRUE;
}

stacks_result *stacks_find(sqlite3 *db, const char *path, const char *type, const char *gc_text,
                           const char *interval, stacks_query *q, GError **error)
{
    GError *local = NULL;
    g_autoptr(snapshot_types) types = NULL;
    if (!stacks_present(db, &local)) {
        if (local) {
            g_propagate_error(error, local);
        } else {
            g_autofree char *message = stacks_absent_message_new(path);
            g_set_error_literal(error, QUERY_ERROR, QUERY_ERROR_NOT_FOUND, message);
        }
        return NULL;
    }
    if (type) {
        char buf[QUERY_FORMAT_MAX];
        types = snapshot_types_new(db, error);
        if (!types)
            return NULL;
        uint32_t type_id = snapshot_types_resolve(types, type, path, error);
        if (type_id == 0)
            return NULL;
        q->type = g_intern_string(snapshot_types_name(types, type_id, buf));
    }
    if (!interval_parse(db, path, gc_text, interval, q, error))
        return NULL;
    return stacks_load(db, q, error);
}
