/* inspect.c — see inspect.h. Each inspection is one pass of SQL over the snapshot's rows (and,
 * for collections and delegates, their references read with jansson). */
#include "query/inspect.h"

#include "query/snapshot_graph.h"
#include "wire/hl_wire.h"

#include <inttypes.h>
#include <string.h>

/* Runs `sql` (parameters: ?1 the snapshot, ?2 .. the given integers) calling `row` per row. */
typedef gboolean (*inspect_row_fn)(sqlite3_stmt *st, void *ctx, GError **error);

static gboolean each_row(sqlite3 *db, const char *sql, int64_t snapshot, int64_t p2, double p3,
                         inspect_row_fn row, void *ctx, GError **error)
{
    sqlite3_stmt *st = query_db_prepare(db, sql, error);
    gboolean ok = FALSE, more = FALSE;
    if (!st)
        return FALSE;
    sqlite3_bind_int64(st, 1, snapshot);
    if (sqlite3_bind_parameter_count(st) >= 2)
        sqlite3_bind_int64(st, 2, p2);
    if (sqlite3_bind_parameter_count(st) >= 3)
        sqlite3_bind_double(st, 3, p3);
    for (;;) {
        if (!query_db_step(st, &more, error))
            goto out;
        if (!more)
            break;
        if (!row(st, ctx, error))
            goto out;
    }
    ok = TRUE;
out:
    sqlite3_finalize(st);
    return ok;
}

static void finding_add(json_t *findings, json_t *f, int64_t rank_bytes)
{
    json_object_set_new(f, "rank_bytes", json_integer((json_int_t)rank_bytes));
    json_array_append_new(findings, f);
}

static const char *column_text(sqlite3_stmt *st, int i)
{
    return (const char *)sqlite3_column_text(st, i);
}

/* ---- duplicate strings ------------------------------------------------------------------ */

static gboolean duplicate_row(sqlite3_stmt *st, void *ctx, GError **error)
{
    (void)error;
    int64_t count = sqlite3_column_int64(st, 1), bytes = sqlite3_column_int64(st, 2);
    int64_t wasted = count > 0 ? bytes - bytes / count : 0;
    json_t *value = sqlite3_column_type(st, 0) == SQLITE_NULL
                        ? json_null()
                        : query_json_string(column_text(st, 0));
    json_t *f = json_pack("{s:s, s:o, s:I, s:I, s:I, s:I}", "kind", "duplicate-strings", "value",
                          value, "length", (json_int_t)sqlite3_column_int64(st, 3), "count",
                          (json_int_t)count, "bytes", (json_int_t)bytes, "wasted",
                          (json_int_t)wasted);
    if (sqlite3_column_int64(st, 4) == count)
        json_object_set_new(f, "origin", json_string("event-metadata"));
    finding_add(ctx, f, wasted);
    return TRUE;
}

/* The runtime's own event metadata. The runtime's managed EventSource NativeRuntimeEventSource
 * has the name of its native provider, Microsoft-Windows-DotNETRuntime: when an EventPipe session
 * enables that provider (heaplens' own in every recording and attach session, for the samples,
 * GC reasons and survivor ranges; dotnet-gcdump's for a dump) it is enabled too and builds its
 * events' metadata by reflection, a RuntimeParameterInfo with its own name string per parameter:
 * 125 "ClrInstanceID", 19 "MethodID", ... on .NET 10, in every program. A duplicate whose every
 * copy a RuntimeParameterInfo holds, in a snapshot holding a NativeRuntimeEventSource, is said
 * to be that ("origin": "event-metadata"), not the program's waste. */
#define RUNTIME_EVENT_SOURCE "System.Diagnostics.Tracing.NativeRuntimeEventSource"
#define PARAMETER_INFO "System.Reflection.RuntimeParameterInfo"

static gboolean duplicates(sqlite3 *db, int64_t snapshot, const inspect_options *o,
                           json_t *findings, GError **error)
{
    return each_row(db,
                    "WITH p AS (SELECT j.value AS id FROM types t"
                    "  JOIN objects po ON po.type_id = t.id"
                    "  JOIN snapshot_objects so ON so.snapshot = ?1 AND so.object_id = po.id,"
                    "  json_each(so.refs) j"
                    "  WHERE t.name = '" PARAMETER_INFO "' AND EXISTS (SELECT 1 FROM types et"
                    "   JOIN objects eo ON eo.type_id = et.id JOIN snapshot_objects es"
                    "   ON es.snapshot = ?1 AND es.object_id = eo.id"
                    "   WHERE et.name = '" RUNTIME_EVENT_SOURCE "'))"
                    " SELECT min(s.value), count(*), sum(o.size), s.length,"
                    "  sum(s.object_id IN (SELECT id FROM p))"
                    " FROM snapshot_strings s"
                    " JOIN objects o ON o.id = s.object_id WHERE s.snapshot = ?1"
                    " GROUP BY s.hash, s.length HAVING count(*) >= ?2",
                    snapshot, o->min_duplicates, 0, duplicate_row, findings, error);
}

/* ---- empty collections -------------------------------------------------------------------- */

typedef struct collections {
    sqlite3 *db;
    int64_t snapshot;
    sqlite3_stmt *field, *size, *own, *refs;
    GHashTable *by_type; /* type name -> int64_t[2] {count, bytes} */
} collections;

/* The target of the reference of `refs`/`fields` held in field `name` of type `type_id`; 0. */
static int64_t field_target(collections *c, int64_t type_id, const char *refs_text,
                            const char *fields_text, const char *name)
{
    int64_t target = 0;
    json_t *refs = refs_text ? json_loads(refs_text, 0, NULL) : NULL;
    json_t *fields = fields_text ? json_loads(fields_text, 0, NULL) : NULL;
    size_t i;
    json_t *f;
    json_array_foreach(fields, i, f) {
        if (!json_is_integer(f))
            continue;
        sqlite3_reset(c->field);
        sqlite3_bind_int64(c->field, 1, type_id);
        sqlite3_bind_int64(c->field, 2, json_integer_value(f));
        if (sqlite3_step(c->field) == SQLITE_ROW && strcmp(column_text(c->field, 0), name) == 0) {
            target = json_integer_value(json_array_get(refs, i));
            break;
        }
    }
    json_decref(refs);
    json_decref(fields);
    return target;
}

static gboolean collection_row(sqlite3_stmt *st, void *ctx, GError **error)
{
    (void)error;
    collections *c = ctx;
    const char *type = column_text(st, 1);
    int64_t type_id = sqlite3_column_int64(st, 0), bytes = sqlite3_column_int64(st, 2);
    const char *refs = column_text(st, 3), *fields = column_text(st, 4);
    gboolean empty;
    if (c->own) { /* its own count, read in the heap walk (schema 8), where the class was known */
        sqlite3_reset(c->own);
        sqlite3_bind_int64(c->own, 1, c->snapshot);
        sqlite3_bind_int64(c->own, 2, sqlite3_column_int64(st, 5));
        if (sqlite3_step(c->own) == SQLITE_ROW) {
            empty = sqlite3_column_int64(c->own, 0) == 0;
            goto found;
        }
    }
    if (g_str_has_prefix(type, "System.Collections.Concurrent.ConcurrentDictionary<")) {
        /* no count field: empty when its buckets array holds no node (_tables -> _buckets) */
        int64_t tables = field_target(c, type_id, refs, fields, "_tables"), buckets = 0;
        sqlite3_reset(c->refs);
        sqlite3_bind_int64(c->refs, 1, c->snapshot);
        sqlite3_bind_int64(c->refs, 2, tables);
        if (tables && sqlite3_step(c->refs) == SQLITE_ROW)
            buckets = field_target(c, sqlite3_column_int64(c->refs, 0), column_text(c->refs, 1),
                                   column_text(c->refs, 2), "_buckets");
        sqlite3_reset(c->refs);
        sqlite3_bind_int64(c->refs, 1, c->snapshot);
        sqlite3_bind_int64(c->refs, 2, buckets);
        empty = buckets && sqlite3_step(c->refs) == SQLITE_ROW &&
                sqlite3_column_type(c->refs, 1) == SQLITE_NULL;
    } else if (g_str_has_prefix(type, "System.Collections.Generic.Dictionary<") ||
        g_str_has_prefix(type, "System.Collections.Generic.HashSet<")) {
        empty = field_target(c, type_id, refs, fields, "_entries") == 0 &&
                field_target(c, type_id, refs, fields, "_buckets") == 0;
    } else {
        const char *storage =
            g_str_has_prefix(type, "System.Collections.Generic.List<") ? "_items" : "_array";
        int64_t array = field_target(c, type_id, refs, fields, storage);
        sqlite3_reset(c->size);
        sqlite3_bind_int64(c->size, 1, array);
        /* an array of no element: its method table, length and padding (x64: 24 bytes) */
        empty = array && sqlite3_step(c->size) == SQLITE_ROW &&
                sqlite3_column_int64(c->size, 0) <= 24;
    }
found:
    if (!empty)
        return TRUE;
    int64_t *agg = g_hash_table_lookup(c->by_type, type);
    if (!agg) {
        agg = g_new0(int64_t, 2);
        g_hash_table_insert(c->by_type, g_strdup(type), agg);
    }
    agg[0]++;
    agg[1] = query_add_saturating(agg[1], bytes);
    return TRUE;
}

static gboolean empty_collections(sqlite3 *db, int64_t snapshot, int64_t version,
                                  json_t *findings, GError **error)
{
    collections c = {.db = db, .snapshot = snapshot};
    gboolean ok = FALSE;
    c.field = query_db_prepare(db, "SELECT name FROM fields WHERE type_id = ?1 AND field = ?2",
                               error);
    c.size = query_db_prepare(db, "SELECT size FROM objects WHERE id = ?1", error);
    c.refs = query_db_prepare(db, "SELECT o.type_id, so.refs, so.fields FROM snapshot_objects so"
                                  " JOIN objects o ON o.id = so.object_id"
                                  " WHERE so.snapshot = ?1 AND so.object_id = ?2",
                              error);
    if (version >= 8)
        c.own = query_db_prepare(db, "SELECT count FROM snapshot_collections"
                                     " WHERE snapshot = ?1 AND object_id = ?2",
                                 error);
    c.by_type = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    if (!c.field || !c.size || !c.refs || (version >= 8 && !c.own))
        goto out;
    if (!each_row(db,
                  "SELECT o.type_id, t.name, o.size, so.refs, so.fields, so.object_id"
                  " FROM snapshot_objects so"
                  " JOIN objects o ON o.id = so.object_id JOIN types t ON t.id = o.type_id"
                  " WHERE so.snapshot = ?1 AND ("
                  "t.name GLOB 'System.Collections.Generic.List<*' OR"
                  " t.name GLOB 'System.Collections.Generic.Dictionary<*' OR"
                  " t.name GLOB 'System.Collections.Generic.HashSet<*' OR"
                  " t.name GLOB 'System.Collections.Generic.Queue<*' OR"
                  " t.name GLOB 'System.Collections.Generic.Stack<*' OR"
                  " t.name GLOB 'System.Collections.Concurrent.ConcurrentDictionary<*')"
                  " AND t.name NOT GLOB '*>+*' AND t.name NOT GLOB '*]'", /* not their nested
                                                                        * types, not arrays */
                  snapshot, 0, 0, collection_row, &c, error))
        goto out;
    GHashTableIter it;
    gpointer key, value;
    g_hash_table_iter_init(&it, c.by_type);
    while (g_hash_table_iter_next(&it, &key, &value)) {
        const int64_t *agg = value;
        finding_add(findings,
                    json_pack("{s:s, s:o, s:I, s:I, s:I}", "kind", "empty-collections", "type",
                              query_json_string(key), "count", (json_int_t)agg[0], "bytes",
                              (json_int_t)agg[1], "retained", (json_int_t)agg[1]),
                    agg[1]);
    }
    ok = TRUE;
out:
    sqlite3_finalize(c.field);
    sqlite3_finalize(c.size);
    sqlite3_finalize(c.refs);
    sqlite3_finalize(c.own);
    g_hash_table_unref(c.by_type);
    return ok;
}

/* ---- under-filled collections -------------------------------------------------------------- */

static gboolean under_filled_row(sqlite3_stmt *st, void *ctx, GError **error)
{
    (void)error;
    int64_t elements = sqlite3_column_int64(st, 2), capacity = sqlite3_column_int64(st, 3);
    int64_t wasted = sqlite3_column_int64(st, 4);
    finding_add(ctx,
                json_pack("{s:s, s:o, s:I, s:f, s:I, s:I, s:I}", "kind", "under-filled", "type",
                          query_json_string(column_text(st, 0)), "count",
                          (json_int_t)sqlite3_column_int64(st, 1), "fill",
                          capacity ? (double)elements / (double)capacity : 0.0, "wasted",
                          (json_int_t)wasted, "elements", (json_int_t)elements, "capacity",
                          (json_int_t)capacity),
                wasted);
    return TRUE;
}

/* Collections holding something but at most `max_fill` of their capacity (their own count read
 * in the heap walk: snapshot_collections, schema 8), per type; wasted = the unused share of the
 * arrays each references (a List's _items, a Dictionary's _buckets and _entries), less their
 * 24-byte headers. */
static gboolean under_filled(sqlite3 *db, int64_t snapshot, const inspect_options *o,
                             json_t *findings, GError **error)
{
    return each_row(db,
                    "WITH c AS (SELECT c.object_id, c.count, c.capacity,"
                    "  (SELECT coalesce(sum(max(a.size - 24, 0)), 0)"
                    "   FROM snapshot_objects so, json_each(so.refs) j"
                    "   JOIN objects a ON a.id = j.value JOIN types at ON at.id = a.type_id"
                    "   WHERE so.snapshot = ?1 AND so.object_id = c.object_id AND at.flags & 1)"
                    "  AS storage"
                    "  FROM snapshot_collections c WHERE c.snapshot = ?1 AND c.count > 0"
                    "  AND c.count <= c.capacity * ?3)"
                    " SELECT t.name, count(*), sum(c.count), sum(c.capacity),"
                    "  sum(c.storage * (c.capacity - c.count) / c.capacity)"
                    " FROM c JOIN objects o ON o.id = c.object_id JOIN types t ON t.id = o.type_id"
                    " GROUP BY t.id",
                    snapshot, 0, o->max_fill, under_filled_row, findings, error);
}

/* ---- sparse arrays ------------------------------------------------------------------------ */

static gboolean sparse_row(sqlite3_stmt *st, void *ctx, GError **error)
{
    (void)error;
    int64_t slots = sqlite3_column_int64(st, 2), set = sqlite3_column_int64(st, 3);
    int64_t unset = query_sub_saturating(slots, set); /* sums of a file's values: clamped */
    int64_t wasted = unset > INT64_MAX / 8 ? INT64_MAX : unset * 8;
    finding_add(ctx,
                json_pack("{s:s, s:o, s:I, s:f, s:I}", "kind", "sparse", "type",
                          query_json_string(column_text(st, 0)), "count",
                          (json_int_t)sqlite3_column_int64(st, 1), "fill",
                          slots ? (double)set / (double)slots : 0.0, "wasted", (json_int_t)wasted),
                wasted);
    return TRUE;
}

static gboolean sparse(sqlite3 *db, int64_t snapshot, const inspect_options *o, json_t *findings,
                       GError **error)
{
    /* One-dimensional reference arrays (a type some instance of which holds a reference): on
     * x64 24 bytes and 8 per element; the elements set are the references. One pass over the
     * snapshot: each array type's sparse instances added up, kept when some instance of the
     * type holds a reference. */
    return each_row(db,
                    "WITH a AS (SELECT o.type_id, (o.size - 24) / 8 AS slots,"
                    "  coalesce(json_array_length(so.refs), 0) AS used,"
                    "  so.refs IS NOT NULL AS holds"
                    "  FROM snapshot_objects so JOIN objects o ON o.id = so.object_id"
                    "  JOIN types t ON t.id = o.type_id"
                    "  WHERE so.snapshot = ?1 AND t.flags & 9 = 1 AND t.name NOT GLOB '*,*]'),"
                    " s AS (SELECT *, slots > 0 AND used <= slots * ?3 AS sparse FROM a)"
                    " SELECT t.name, count(*) FILTER (WHERE sparse),"
                    "  sum(slots) FILTER (WHERE sparse), sum(used) FILTER (WHERE sparse) FROM s"
                    " JOIN types t ON t.id = s.type_id"
                    " GROUP BY s.type_id HAVING max(holds) AND count(*) FILTER (WHERE sparse) > 0",
                    snapshot, 0, o->max_fill, sparse_row, findings, error);
}

/* ---- event handlers ------------------------------------------------------------------------ */

typedef struct handlers {
    sqlite3 *db;
    int64_t snapshot, min_subscribers;
    json_t *findings;
} handlers;

/* Who holds delegate `id`: a static ("Ns.Type.Field" in *owner, NULL field), or an object's
 * field (its type in *owner, the field's name in *field). */
static gboolean delegate_owner(handlers *h, int64_t id, char **owner, char **field, GError **error)
{
    sqlite3_stmt *st = query_db_prepare(
        h->db,
        "SELECT so.object_id, o.type_id, t.name, json_extract(so.fields, '$[' || j.key || ']')"
        " FROM snapshot_objects so, json_each(so.refs) j"
        " LEFT JOIN objects o ON o.id = so.object_id LEFT JOIN types t ON t.id = o.type_id"
        " WHERE so.snapshot = ?1 AND j.value = ?2 LIMIT 1",
        error);
    gboolean ok = FALSE, row = FALSE;
    if (!st)
        return FALSE;
    sqlite3_bind_int64(st, 1, h->snapshot);
    sqlite3_bind_int64(st, 2, id);
    if (!query_db_step(st, &row, error))
        goto out;
    ok = TRUE;
    if (!row)
        goto out;
    int64_t holder = sqlite3_column_int64(st, 0), type_id = sqlite3_column_int64(st, 1);
    int64_t number = sqlite3_column_int64(st, 3);
    *owner = g_strdup(column_text(st, 2) ? column_text(st, 2) : "?");
    sqlite3_finalize(st);
    st = query_db_prepare(h->db,
                          "SELECT t.name, s.name FROM snapshot_statics ss"
                          " JOIN statics s ON s.id = ss.static_id JOIN types t ON t.id = s.type_id"
                          " WHERE ss.snapshot = ?1 AND ss.object_id = ?2 AND ss.field = ?3"
                          " UNION ALL SELECT NULL, name FROM fields"
                          " WHERE type_id = ?4 AND field = ?3",
                          error);
    if (!st) {
        ok = FALSE;
        goto out;
    }
    sqlite3_bind_int64(st, 1, h->snapshot);
    sqlite3_bind_int64(st, 2, holder);
    sqlite3_bind_int64(st, 3, number);
    sqlite3_bind_int64(st, 4, type_id);
    if (!query_db_step(st, &row, error)) {
        ok = FALSE;
        goto out;
    }
    if (row) {
        if (sqlite3_column_type(st, 0) != SQLITE_NULL) { /* a static */
            g_free(*owner);
            *owner = g_strdup(column_text(st, 0));
        }
        *field = g_strdup(column_text(st, 1));
    }
out:
    sqlite3_finalize(st);
    return ok;
}

static gboolean handler_row(sqlite3_stmt *st, void *ctx, GError **error)
{
    handlers *h = ctx;
    int64_t delegate = sqlite3_column_int64(st, 0), list = sqlite3_column_int64(st, 1);
    int64_t subscribers = sqlite3_column_int64(st, 2), bytes = sqlite3_column_int64(st, 3);
    g_autofree char *owner = NULL, *field = NULL;
    if (!delegate_owner(h, delegate, &owner, &field, error))
        return FALSE;
    /* the handlers' targets, per type */
    sqlite3_stmt *t = query_db_prepare(
        h->db,
        "SELECT tt.name, count(*), sum(ho.size) FROM snapshot_objects l, json_each(l.refs) j"
        " JOIN objects ho ON ho.id = j.value"
        " JOIN snapshot_ref_fields r ON r.snapshot = l.snapshot AND r.from_id = j.value"
        "  AND r.name = '_target'"
        " JOIN objects tobj ON tobj.id = r.to_id JOIN types tt ON tt.id = tobj.type_id"
        " WHERE l.snapshot = ?1 AND l.object_id = ?2 GROUP BY tt.name ORDER BY 2 DESC",
        error);
    if (!t)
        return FALSE;
    sqlite3_bind_int64(t, 1, h->snapshot);
    sqlite3_bind_int64(t, 2, list);
    json_t *targets = json_array();
    gboolean row = FALSE;
    while (query_db_step(t, &row, NULL) && row) {
        json_array_append_new(targets, json_pack("{s:o, s:I}", "type",
                                                 query_json_string(column_text(t, 0)), "count",
                                                 (json_int_t)sqlite3_column_int64(t, 1)));
        bytes = query_add_saturating(bytes, sqlite3_column_int64(t, 2));
    }
    sqlite3_finalize(t);
    finding_add(h->findings,
                json_pack("{s:s, s:o, s:o, s:I, s:I, s:I, s:o}", "kind", "event-handlers", "owner",
                          owner ? query_json_string(owner) : json_null(), "field",
                          field ? query_json_string(field) : json_null(), "subscribers",
                          (json_int_t)subscribers, "bytes", (json_int_t)bytes, "object",
                          (json_int_t)delegate, "targets", targets),
                bytes);
    return TRUE;
}

static gboolean event_handlers(sqlite3 *db, int64_t snapshot, const inspect_options *o,
                               json_t *findings, GError **error)
{
    handlers h = {.db = db, .snapshot = snapshot, .min_subscribers = o->min_subscribers,
                  .findings = findings};
    /* Delegates: objects of a type with a field `_invocationList`; that field's target read from
     * the delegate's own (short) arrays. */
    return each_row(db,
                    "WITH d AS (SELECT so.object_id AS id,"
                    "  (SELECT j.value FROM json_each(so.refs) j"
                    "   WHERE json_extract(so.fields, '$[' || j.key || ']') = f.field) AS list"
                    "  FROM snapshot_objects so JOIN objects o ON o.id = so.object_id"
                    "  JOIN fields f ON f.type_id = o.type_id AND f.name = '_invocationList'"
                    "  WHERE so.snapshot = ?1 AND so.fields IS NOT NULL)"
                    " SELECT d.id, d.list, json_array_length(l.refs), lo.size FROM d"
                    " JOIN snapshot_objects l ON l.snapshot = ?1 AND l.object_id = d.list"
                    " JOIN objects lo ON lo.id = d.list"
                    " WHERE json_array_length(l.refs) >= ?2",
                    snapshot, o->min_subscribers, 0, handler_row, &h, error);
}

/* ---- finalizable objects ------------------------------------------------------------------ */

static gboolean finalizable_row(sqlite3_stmt *st, void *ctx, GError **error)
{
    (void)error;
    int64_t bytes = sqlite3_column_int64(st, 2);
    finding_add(ctx,
                json_pack("{s:s, s:o, s:I, s:I, s:I}", "kind", "finalizable", "type",
                          query_json_string(column_text(st, 0)), "count",
                          (json_int_t)sqlite3_column_int64(st, 1), "bytes", (json_int_t)bytes,
                          "queued", (json_int_t)sqlite3_column_int64(st, 3)),
                bytes);
    return TRUE;
}

static gboolean finalized_row(sqlite3_stmt *st, void *ctx, GError **error)
{
    (void)error;
    int64_t bytes = sqlite3_column_int64(st, 2);
    finding_add(ctx,
                json_pack("{s:s, s:o, s:I, s:I}", "kind", "finalized-reachable", "type",
                          query_json_string(column_text(st, 0)), "count",
                          (json_int_t)sqlite3_column_int64(st, 1), "bytes", (json_int_t)bytes),
                bytes);
    return TRUE;
}

/* Objects of finalizable types (types.flags 16, schema 8), per type; `queued` of them are in the
 * runtime's f-reachable queue (roots of kind 'finalizer': unreachable otherwise, their finalizer
 * not run yet). Then the objects whose finalizer ran and that are reachable again: in that queue
 * at an earlier snapshot, alive here and no longer in it (the finalizer thread takes an object
 * out of the queue to run its finalizer). */
static gboolean finalizable(sqlite3 *db, int64_t snapshot, int64_t version, json_t *findings,
                            GError **error)
{
    return (version < 8 ||
            each_row(db,
                     "SELECT t.name, count(*), sum(o.size), count(q.object_id)"
                     " FROM snapshot_objects so JOIN objects o ON o.id = so.object_id"
                     " JOIN types t ON t.id = o.type_id"
                     " LEFT JOIN (SELECT DISTINCT object_id FROM snapshot_roots"
                     "  WHERE snapshot = ?1 AND kind = 'finalizer') q ON q.object_id = so.object_id"
                     " WHERE so.snapshot = ?1 AND t.flags & 16 GROUP BY t.id",
                     snapshot, 0, 0, finalizable_row, findings, error)) &&
           each_row(db,
                    "SELECT t.name, count(*), sum(o.size) FROM snapshot_objects so"
                    " JOIN objects o ON o.id = so.object_id JOIN types t ON t.id = o.type_id"
                    " WHERE so.snapshot = ?1 AND so.object_id IN (SELECT object_id"
                    "  FROM snapshot_roots WHERE snapshot < ?1 AND kind = 'finalizer')"
                    " AND so.object_id NOT IN (SELECT object_id FROM snapshot_roots"
                    "  WHERE snapshot = ?1 AND kind = 'finalizer' AND object_id IS NOT NULL)"
                    " GROUP BY t.id",
                    snapshot, 0, 0, finalized_row, findings, error);
}

/* ---- pinned objects, LOH free space -------------------------------------------------------- */

static gboolean pinned_row(sqlite3_stmt *st, void *ctx, GError **error)
{
    (void)error;
    finding_add(ctx,
                json_pack("{s:s, s:o, s:I, s:I, s:I}", "kind", "pinned", "type",
                          query_json_string(column_text(st, 0)), "generation",
                          (json_int_t)sqlite3_column_int64(st, 1), "count",
                          (json_int_t)sqlite3_column_int64(st, 2), "bytes",
                          (json_int_t)sqlite3_column_int64(st, 3)),
                sqlite3_column_int64(st, 3));
    return TRUE;
}

static gboolean loh_row(sqlite3_stmt *st, void *ctx, GError **error)
{
    (void)error;
    int64_t in_use = sqlite3_column_int64(st, 0), live = sqlite3_column_int64(st, 1);
    if (sqlite3_column_type(st, 0) == SQLITE_NULL || in_use <= live)
        return TRUE;
    finding_add(ctx,
                json_pack("{s:s, s:I, s:I}", "kind", "loh-free", "free",
                          (json_int_t)(in_use - live), "live", (json_int_t)live),
                in_use - live);
    return TRUE;
}

static int finding_cmp(const void *a, const void *b)
{
    json_int_t x = json_integer_value(json_object_get(*(json_t *const *)a, "rank_bytes"));
    json_int_t y = json_integer_value(json_object_get(*(json_t *const *)b, "rank_bytes"));
    return x > y ? -1 : x < y;
}

json_t *inspect_snapshot(sqlite3 *db, const char *path, const char *snapshot_text,
                         const inspect_options *o, GError **error)
{
    snapshot_info info;
    int64_t version = 0;
    if (!snapshot_pick(db, path, "inspect", "snapshot", snapshot_text, &info, error) ||
        !query_db_int(db, "PRAGMA user_version", &version, error))
        return NULL;
    json_t *findings = json_array();
    const int64_t s = info.snapshot;
    gboolean ok =
        (version < 7 || (duplicates(db, s, o, findings, error) &&
                         empty_collections(db, s, version, findings, error) &&
                         (version < 8 || under_filled(db, s, o, findings, error)) &&
                         sparse(db, s, o, findings, error) &&
                         event_handlers(db, s, o, findings, error))) &&
        finalizable(db, s, version, findings, error) &&
        each_row(db,
                 "SELECT t.name, so.generation, count(DISTINCT r.object_id), sum(o.size)"
                 " FROM (SELECT DISTINCT object_id FROM snapshot_roots"
                 "       WHERE snapshot = ?1 AND flags & 1) r"
                 " JOIN snapshot_objects so ON so.snapshot = ?1 AND so.object_id = r.object_id"
                 " JOIN objects o ON o.id = r.object_id JOIN types t ON t.id = o.type_id"
                 " WHERE so.generation IN (0, 1) GROUP BY t.name, so.generation",
                 s, 0, 0, pinned_row, findings, error) &&
        each_row(db,
                 "SELECT (SELECT gg.size_after FROM gc_generations gg JOIN snapshots sn"
                 "        ON sn.gc = gg.gc WHERE sn.snapshot = ?1 AND gg.generation = 3),"
                 " (SELECT coalesce(sum(o.size), 0) FROM snapshot_objects so"
                 "  JOIN objects o ON o.id = so.object_id"
                 "  WHERE so.snapshot = ?1 AND so.generation = 3)",
                 s, 0, 0, loh_row, findings, error);
    if (!ok) {
        json_decref(findings);
        return NULL;
    }
    /* ranked: what each wastes or holds, largest first */
    size_t n = json_array_size(findings);
    g_autofree json_t **v = g_new(json_t *, n ? n : 1);
    for (size_t i = 0; i < n; i++)
        v[i] = json_incref(json_array_get(findings, i));
    qsort(v, n, sizeof *v, finding_cmp);
    json_array_clear(findings);
    for (size_t i = 0; i < n; i++)
        json_array_append_new(findings, v[i]);
    return json_pack("{s:I, s:I, s:o}", "snapshot", (json_int_t)s, "gc", (json_int_t)info.gc,
                     "findings", findings);
}
