/* inspect.c — see inspect.h. A schema 8 snapshot: one pass over its blocks for every inspection
 * (below, "one pass over the compact form"); an older file's: one pass of SQL per inspection over
 * its rows (and, for collections and delegates, their references read with jansson). What was
 * found is stored and read back by inspect_store.c. */
#include "query/inspect.h"

#include "query/snapshot_graph.h"
#include "store/store.h"
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

/* One value held by `count` strings of `length` characters (`value`: NULL when not kept),
 * `metadata` of them held by the runtime's event metadata. */
static void duplicate_add(json_t *findings, const char *value, int64_t length, int64_t count,
                          int64_t bytes, int64_t metadata)
{
    int64_t wasted = count > 0 ? bytes - bytes / count : 0;
    json_t *f = json_pack("{s:s, s:o, s:I, s:I, s:I, s:I}", "kind", "duplicate-strings", "value",
                          value ? query_json_string(value) : json_null(), "length",
                          (json_int_t)length, "count", (json_int_t)count, "bytes",
                          (json_int_t)bytes, "wasted", (json_int_t)wasted);
    if (metadata == count)
        json_object_set_new(f, "origin", json_string("event-metadata"));
    finding_add(findings, f, wasted);
}

static gboolean duplicate_row(sqlite3_stmt *st, void *ctx, GError **error)
{
    (void)error;
    duplicate_add(ctx, sqlite3_column_type(st, 0) == SQLITE_NULL ? NULL : column_text(st, 0),
                  sqlite3_column_int64(st, 3), sqlite3_column_int64(st, 1),
                  sqlite3_column_int64(st, 2), sqlite3_column_int64(st, 4));
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

/* Whether a collection of type `type_id` named `type` (refs and fields: its snapshot_objects
 * texts, NULL for none) holds nothing, by its fields: a List/Queue/Stack whose
 * storage array is empty, a Dictionary/HashSet without entries or buckets, a ConcurrentDictionary
 * whose buckets array holds no node. */
static gboolean collection_empty_by_fields(collections *c, int64_t type_id, const char *type,
                                           const char *refs, const char *fields)
{
    gboolean empty;
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
    return empty;
}

/* An empty collection of type `type` counted (per type name, in the order found). */
static void collection_count(collections *c, const char *type, int64_t bytes)
{
    int64_t *agg = g_hash_table_lookup(c->by_type, type);
    if (!agg) {
        agg = g_new0(int64_t, 2);
        g_hash_table_insert(c->by_type, g_strdup(type), agg);
    }
    agg[0]++;
    agg[1] = query_add_saturating(agg[1], bytes);
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
    empty = collection_empty_by_fields(c, type_id, type, refs, fields);
found:
    if (empty)
        collection_count(c, type, bytes);
    return TRUE;
}

/* The statements the collections' checks use (own: schema 8's own counts, NULL before). */
static gboolean collections_open(collections *c, sqlite3 *db, int64_t snapshot, int64_t version,
                                 GError **error)
{
    *c = (collections){.db = db, .snapshot = snapshot};
    c->by_type = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    c->field = query_db_prepare(db, "SELECT name FROM fields WHERE type_id = ?1 AND field = ?2",
                                error);
    c->size = c->field ? query_db_prepare(db, "SELECT size FROM objects WHERE id = ?1", error)
                       : NULL;
    c->refs = c->size ? query_db_prepare(db,
                                         "SELECT o.type_id, so.refs, so.fields"
                                         " FROM snapshot_objects so"
                                         " JOIN objects o ON o.id = so.object_id"
                                         " WHERE so.snapshot = ?1 AND so.object_id = ?2",
                                         error)
                      : NULL;
    if (c->refs && version >= 8)
        c->own = query_db_prepare(db, "SELECT count FROM snapshot_collections"
                                      " WHERE snapshot = ?1 AND object_id = ?2",
                                  error);
    return c->refs && (version < 8 || c->own);
}

static void collections_close(collections *c)
{
    sqlite3_finalize(c->field);
    sqlite3_finalize(c->size);
    sqlite3_finalize(c->refs);
    sqlite3_finalize(c->own);
    g_hash_table_unref(c->by_type);
}

/* The empty collections found, per type, in the order their types were first found. */
static void collections_add_findings(collections *c, json_t *findings)
{
    GHashTableIter it;
    gpointer key, value;
    g_hash_table_iter_init(&it, c->by_type);
    while (g_hash_table_iter_next(&it, &key, &value)) {
        const int64_t *agg = value;
        finding_add(findings,
                    json_pack("{s:s, s:o, s:I, s:I, s:I}", "kind", "empty-collections", "type",
                              query_json_string(key), "count", (json_int_t)agg[0], "bytes",
                              (json_int_t)agg[1], "retained", (json_int_t)agg[1]),
                    agg[1]);
    }
}

static gboolean empty_collections(sqlite3 *db, int64_t snapshot, int64_t version,
                                  json_t *findings, GError **error)
{
    collections c;
    gboolean ok = collections_open(&c, db, snapshot, version, error) &&
                  each_row(db,
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
                  snapshot, 0, 0, collection_row, &c, error);
    if (ok)
        collections_add_findings(&c, findings);
    collections_close(&c);
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

/* `count` arrays of type `type` with `slots` elements, `set` of them set. */
static void sparse_add(json_t *findings, const char *type, int64_t count, int64_t slots,
                       int64_t set)
{
    int64_t unset = query_sub_saturating(slots, set); /* sums of a file's values: clamped */
    int64_t wasted = unset > INT64_MAX / 8 ? INT64_MAX : unset * 8;
    finding_add(findings,
                json_pack("{s:s, s:o, s:I, s:f, s:I}", "kind", "sparse", "type",
                          query_json_string(type), "count", (json_int_t)count, "fill",
                          slots ? (double)set / (double)slots : 0.0, "wasted", (json_int_t)wasted),
                wasted);
}

static gboolean sparse_row(sqlite3_stmt *st, void *ctx, GError **error)
{
    (void)error;
    sparse_add(ctx, column_text(st, 0), sqlite3_column_int64(st, 1), sqlite3_column_int64(st, 2),
               sqlite3_column_int64(st, 3));
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

/* Delegate `delegate` whose invocation list `list` (of `bytes`) holds `subscribers` handlers:
 * its owner and its handlers' targets. */
static gboolean handler_add(handlers *h, int64_t delegate, int64_t list, int64_t subscribers,
                            int64_t bytes, GError **error)
{
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

static gboolean handler_row(sqlite3_stmt *st, void *ctx, GError **error)
{
    return handler_add(ctx, sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1),
                       sqlite3_column_int64(st, 2), sqlite3_column_int64(st, 3), error);
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

static void finalizable_add(json_t *findings, const char *type, int64_t count, int64_t bytes,
                            int64_t queued)
{
    finding_add(findings,
                json_pack("{s:s, s:o, s:I, s:I, s:I}", "kind", "finalizable", "type",
                          query_json_string(type), "count", (json_int_t)count, "bytes",
                          (json_int_t)bytes, "queued", (json_int_t)queued),
                bytes);
}

static gboolean finalizable_row(sqlite3_stmt *st, void *ctx, GError **error)
{
    (void)error;
    finalizable_add(ctx, column_text(st, 0), sqlite3_column_int64(st, 1),
                    sqlite3_column_int64(st, 2), sqlite3_column_int64(st, 3));
    return TRUE;
}

static void finalized_add(json_t *findings, const char *type, int64_t count, int64_t bytes)
{
    finding_add(findings,
                json_pack("{s:s, s:o, s:I, s:I}", "kind", "finalized-reachable", "type",
                          query_json_string(type), "count", (json_int_t)count, "bytes",
                          (json_int_t)bytes),
                bytes);
}

static gboolean finalized_row(sqlite3_stmt *st, void *ctx, GError **error)
{
    (void)error;
    finalized_add(ctx, column_text(st, 0), sqlite3_column_int64(st, 1),
                  sqlite3_column_int64(st, 2));
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

static void pinned_add(json_t *findings, const char *type, int64_t generation, int64_t count,
                       int64_t bytes)
{
    finding_add(findings,
                json_pack("{s:s, s:o, s:I, s:I, s:I}", "kind", "pinned", "type",
                          query_json_string(type), "generation", (json_int_t)generation, "count",
                          (json_int_t)count, "bytes", (json_int_t)bytes),
                bytes);
}

static gboolean pinned_row(sqlite3_stmt *st, void *ctx, GError **error)
{
    (void)error;
    pinned_add(ctx, column_text(st, 0), sqlite3_column_int64(st, 1), sqlite3_column_int64(st, 2),
               sqlite3_column_int64(st, 3));
    return TRUE;
}

/* The LOH's bytes in use after the snapshot's GC (`known` FALSE: not recorded) and the live
 * objects' bytes in it. */
static void loh_add(json_t *findings, gboolean known, int64_t in_use, int64_t live)
{
    if (!known || in_use <= live)
        return;
    finding_add(findings,
                json_pack("{s:s, s:I, s:I}", "kind", "loh-free", "free",
                          (json_int_t)(in_use - live), "live", (json_int_t)live),
                in_use - live);
}

static gboolean loh_row(sqlite3_stmt *st, void *ctx, GError **error)
{
    (void)error;
    loh_add(ctx, sqlite3_column_type(st, 0) != SQLITE_NULL, sqlite3_column_int64(st, 0),
            sqlite3_column_int64(st, 1));
    return TRUE;
}

/* The LOH's bytes in use after snapshot `snapshot`'s GC: *known FALSE when not recorded. */
#define LOH_IN_USE_SQL                                                                             \
    "SELECT gg.size_after FROM gc_generations gg JOIN snapshots sn"                                \
    " ON sn.gc = gg.gc WHERE sn.snapshot = ?1 AND gg.generation = 3"

/* ---- one pass over the compact form (schema 8) ---------------------------------------------
 * Every inspection but under-filled from one pass over the snapshot's blocks in id order
 * (store_snapblock_decode), each block's types and sizes from one range of `objects`, beside
 * cursors over the snapshot's strings and collections' own counts (keyed by object id as well)
 * and the sorted ids of its finalizer and pinning roots. The findings are those of the SQL passes
 * above, in the same order (each kind's rows as their SQL orders them), so that their ranking
 * keeps its ties (under-filled: its SQL, a lookup per under-filled collection). The passes above
 * stay for older files, whose rows need no decoding. */

/* What the pass needs of a type (types.flags, the name's kind, the fields it looks for). */
typedef struct pass_type {
    const char *name; /* NULL: no types row */
    int64_t flags;
    gboolean collection, sparse, parameter_info, event_source;
    uint32_t invocation_first, invocation_count; /* its `_invocationList` fields in pass.fields */
} pass_type;

typedef struct string_row {
    int64_t hash, length, size, id;
} string_row;

typedef struct per_type {
    int64_t count, bytes, queued; /* finalizable; finalized-reachable: count, bytes */
} per_type;

typedef struct sparse_sum {
    int64_t count, slots, set;
    gboolean holds;
} sparse_sum;

typedef struct pinned_sum {
    const char *name;
    int64_t generation, count, bytes;
} pinned_sum;

typedef struct delegate_ref {
    int64_t delegate, list;
} delegate_ref;

typedef struct pass {
    sqlite3 *db;
    int64_t snapshot;
    const inspect_options *o;
    uint32_t n_types;
    pass_type *types;
    GArray *invocation_fields; /* int64_t field numbers, per type (pass_type.invocation_*) */
    GStringChunk *names;
    /* the sorted object ids of the snapshot's finalizer roots (queued), of earlier snapshots'
     * (finalized), of its pinning roots; a cursor in each */
    GArray *queued, *finalized, *pinned;
    guint queued_at, finalized_at, pinned_at;
    sqlite3_stmt *strings, *own, *size;
    gboolean strings_row, own_row;
    GArray *string_rows;  /* string_row, in id order */
    GArray *parameters;   /* int64_t: what RuntimeParameterInfo objects reference */
    gboolean event_source;
    collections c;
    GString *refs_text, *fields_text;
    per_type *finalizable, *finalized_by_type;
    sparse_sum *sparse;
    GArray *pinned_rows;  /* pinned_sum */
    GArray *delegates;    /* delegate_ref, in delegate id order */
    int64_t loh_live;
} pass;

static int i64_cmp(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* The object ids `sql` (?1: the snapshot) gives, sorted and distinct. */
static GArray *ids_read(sqlite3 *db, const char *sql, int64_t snapshot, GError **error)
{
    sqlite3_stmt *st = query_db_prepare(db, sql, error);
    gboolean row = FALSE;
    if (!st)
        return NULL;
    GArray *ids = g_array_new(FALSE, FALSE, sizeof(int64_t));
    sqlite3_bind_int64(st, 1, snapshot);
    while (query_db_step(st, &row, error) && row) {
        int64_t id = sqlite3_column_int64(st, 0);
        g_array_append_val(ids, id);
    }
    sqlite3_finalize(st);
    if (error && *error) {
        g_array_unref(ids);
        return NULL;
    }
    g_array_sort(ids, i64_cmp);
    guint n = 0;
    for (guint i = 0; i < ids->len; i++)
        if (n == 0 || g_array_index(ids, int64_t, i) != g_array_index(ids, int64_t, n - 1))
            g_array_index(ids, int64_t, n++) = g_array_index(ids, int64_t, i);
    g_array_set_size(ids, n);
    return ids;
}

/* Whether sorted `ids` holds `id`, the ids asked for ascending (*at: the cursor). */
static gboolean ids_hold(const GArray *ids, guint *at, int64_t id)
{
    while (*at < ids->len && g_array_index(ids, int64_t, *at) < id)
        (*at)++;
    return *at < ids->len && g_array_index(ids, int64_t, *at) == id;
}

static gboolean ids_find(const GArray *ids, int64_t id)
{
    return bsearch(&id, ids->data, ids->len, sizeof(int64_t), i64_cmp) != NULL;
}

/* The types and the fields the pass looks for. */
static gboolean pass_types_read(pass *p, GError **error)
{
    int64_t max_id = 0;
    gboolean row = FALSE, ok = FALSE;
    if (!query_db_int(p->db,
                      "SELECT max(coalesce((SELECT max(id) FROM types), 0),"
                      " coalesce((SELECT max(type_id) FROM fields), 0))",
                      &max_id, error))
        return FALSE;
    if (max_id < 0 || max_id >= (int64_t)1 << 26)
        return query_db_damaged(error, "a type id is %" PRId64, max_id);
    p->n_types = (uint32_t)max_id + 1;
    p->types = g_new0(pass_type, p->n_types);
    sqlite3_stmt *st = query_db_prepare(p->db, "SELECT id, name, flags FROM types", error);
    if (!st)
        return FALSE;
    while (query_db_step(st, &row, error) && row) {
        int64_t id = sqlite3_column_int64(st, 0);
        const char *name = column_text(st, 1);
        if (id < 0 || id >= p->n_types || !name)
            continue; /* a type no object can have (type ids are those of `types`) */
        pass_type *t = &p->types[id];
        size_t len = strlen(name);
        t->name = g_string_chunk_insert(p->names, name);
        t->flags = sqlite3_column_int64(st, 2);
        /* as the SQL passes' GLOBs: not nested types ('*>+*'), not arrays ('*]') */
        t->collection = (g_str_has_prefix(name, "System.Collections.Generic.List<") ||
                         g_str_has_prefix(name, "System.Collections.Generic.Dictionary<") ||
                         g_str_has_prefix(name, "System.Collections.Generic.HashSet<") ||
                         g_str_has_prefix(name, "System.Collections.Generic.Queue<") ||
                         g_str_has_prefix(name, "System.Collections.Generic.Stack<") ||
                         g_str_has_prefix(name, "System.Collections.Concurrent.ConcurrentDictionary<")) &&
                        !strstr(name, ">+") && !(len > 0 && name[len - 1] == ']');
        /* reference arrays, not multi-dimensional ones ('*,*]') */
        t->sparse = (t->flags & 9) == 1 && !(len > 0 && name[len - 1] == ']' && strchr(name, ','));
        t->parameter_info = strcmp(name, PARAMETER_INFO) == 0;
        t->event_source = strcmp(name, RUNTIME_EVENT_SOURCE) == 0;
    }
    sqlite3_finalize(st);
    if (error && *error)
        return FALSE;
    /* delegates: their types' `_invocationList` fields, in field order */
    st = query_db_prepare(p->db,
                          "SELECT type_id, field FROM fields WHERE name = '_invocationList'"
                          " ORDER BY type_id, field",
                          error);
    if (!st)
        return FALSE;
    while (query_db_step(st, &row, error) && row) {
        int64_t type = sqlite3_column_int64(st, 0), field = sqlite3_column_int64(st, 1);
        if (type < 0 || type >= p->n_types)
            continue;
        pass_type *t = &p->types[type];
        if (t->invocation_count == 0)
            t->invocation_first = p->invocation_fields->len;
        t->invocation_count++;
        g_array_append_val(p->invocation_fields, field);
    }
    ok = !(error && *error);
    sqlite3_finalize(st);
    return ok;
}

/* The snapshot's strings up to id `upto` (all with INT64_MAX), each with the size of its
 * objects row: from the block being read (`b`, `sizes`, `rows`; NULL: none) when it holds it,
 * else looked up (strings without an objects row are left out, as the SQL join leaves them). */
static gboolean pass_strings_take(pass *p, int64_t upto, const store_snapblock *b,
                                  const int64_t *sizes, const gboolean *rows, GError **error)
{
    uint32_t k = 0;
    while (p->strings_row) {
        int64_t id = sqlite3_column_int64(p->strings, 0);
        if (id > upto)
            break;
        if (sqlite3_column_type(p->strings, 1) != SQLITE_INTEGER ||
            sqlite3_column_type(p->strings, 2) != SQLITE_INTEGER)
            return query_db_damaged(error, "string %" PRId64 " of snapshot %" PRId64
                                           " has a length or hash that is not a number",
                                    id, p->snapshot);
        string_row r = {.hash = sqlite3_column_int64(p->strings, 2),
                        .length = sqlite3_column_int64(p->strings, 1), .id = id};
        gboolean found = FALSE;
        while (b && k < b->n && (int64_t)b->ids[k] < id)
            k++;
        if (b && k < b->n && (int64_t)b->ids[k] == id) {
            found = rows[k];
            r.size = sizes[k];
        } else { /* not an object of the snapshot: its objects row, if any */
            sqlite3_reset(p->size);
            sqlite3_bind_int64(p->size, 1, id);
            if (sqlite3_step(p->size) == SQLITE_ROW) {
                found = TRUE;
                r.size = sqlite3_column_int64(p->size, 0);
            }
        }
        if (found)
            g_array_append_val(p->string_rows, r);
        if (!query_db_step(p->strings, &p->strings_row, error))
            return FALSE;
    }
    return TRUE;
}

/* Object k of block `b` is a collection of type `type_id`: counted when it holds nothing (its own
 * count, else its fields). */
static void pass_collection(pass *p, const store_snapblock *b, uint32_t k, uint32_t type_id,
                            int64_t size)
{
    int64_t id = (int64_t)b->ids[k];
    gboolean empty;
    while (p->own_row && sqlite3_column_int64(p->own, 0) < id)
        p->own_row = sqlite3_step(p->own) == SQLITE_ROW;
    if (p->own_row && sqlite3_column_int64(p->own, 0) == id) {
        empty = sqlite3_column_int64(p->own, 1) == 0;
    } else { /* no count of its own: its fields, as snapshot_objects says them */
        gboolean has_refs = b->ref_start[k + 1] > b->ref_start[k];
        if (has_refs) {
            store_snapblock_refs_json(b, k, p->refs_text);
            if (b->field_known[k])
                store_snapblock_fields_json(b, k, p->fields_text);
        }
        empty = collection_empty_by_fields(&p->c, type_id, p->types[type_id].name,
                                           has_refs ? p->refs_text->str : NULL,
                                           has_refs && b->field_known[k] ? p->fields_text->str
                                                                         : NULL);
    }
    if (empty)
        collection_count(&p->c, p->types[type_id].name, size);
}

/* Object k of block `b`, of type `type_id` (a types row) and `size`. */
static void pass_object(pass *p, const store_snapblock *b, uint32_t k, uint32_t type_id,
                        int64_t size)
{
    const pass_type *t = &p->types[type_id];
    int64_t id = (int64_t)b->ids[k];
    uint32_t r0 = b->ref_start[k], r1 = b->ref_start[k + 1];
    if (t->parameter_info)
        for (uint32_t i = r0; i < r1; i++) {
            int64_t to = (int64_t)b->to[i];
            g_array_append_val(p->parameters, to);
        }
    if (t->event_source)
        p->event_source = TRUE;
    if (t->collection)
        pass_collection(p, b, k, type_id, size);
    if (t->sparse) {
        sparse_sum *s = &p->sparse[type_id];
        int64_t slots = (size - 24) / 8, set = r1 - r0;
        s->holds |= r1 > r0;
        if (slots > 0 && (double)set <= (double)slots * p->o->max_fill) {
            s->count++;
            s->slots = query_add_saturating(s->slots, slots);
            s->set = query_add_saturating(s->set, set);
        }
    }
    for (uint32_t f = 0; f < t->invocation_count && b->field_known[k]; f++) {
        int64_t field = g_array_index(p->invocation_fields, int64_t, t->invocation_first + f);
        for (uint32_t i = r0; i < r1; i++)
            if (b->field[i] == field) { /* the first reference it holds there */
                delegate_ref d = {.delegate = id, .list = (int64_t)b->to[i]};
                g_array_append_val(p->delegates, d);
                break;
            }
    }
    gboolean queued = ids_hold(p->queued, &p->queued_at, id);
    if (t->flags & 16) {
        per_type *f = &p->finalizable[type_id];
        f->count++;
        f->bytes = query_add_saturating(f->bytes, size);
        f->queued += queued;
    }
    if (ids_hold(p->finalized, &p->finalized_at, id) && !queued) {
        per_type *f = &p->finalized_by_type[type_id];
        f->count++;
        f->bytes = query_add_saturating(f->bytes, size);
    }
    if ((b->generation[k] == 0 || b->generation[k] == 1) &&
        ids_hold(p->pinned, &p->pinned_at, id)) {
        pinned_sum s = {.name = t->name, .generation = b->generation[k], .count = 1,
                        .bytes = size};
        g_array_append_val(p->pinned_rows, s);
    }
}

/* The blocks, in id order. */
static gboolean pass_blocks(pass *p, query_progress *progress, const char *step, int64_t total,
                            GError **error)
{
    gboolean row = FALSE, ok = FALSE;
    store_snapblock b = {0};
    g_autofree int64_t *sizes = NULL;
    g_autofree uint32_t *type_ids = NULL;
    g_autofree gboolean *rows = NULL;
    size_t cap = 0;
    int64_t done = 0;
    sqlite3_stmt *blocks = query_db_prepare(p->db, STORE_SNAPBLOCKS_SQL, error);
    snapshot_block_objects objects = {0};
    if (!blocks || !snapshot_block_objects_init(&objects, p->db, error))
        goto out;
    sqlite3_bind_int64(blocks, 1, p->snapshot);
    while (query_db_step(blocks, &row, error) && row) {
        if (!store_snapblock_decode_row(&b, blocks, error))
            goto out;
        if (b.n > cap) {
            cap = b.n;
            sizes = g_renew(int64_t, sizes, cap);
            type_ids = g_renew(uint32_t, type_ids, cap);
            rows = g_renew(gboolean, rows, cap);
        }
        memset(rows, 0, b.n * sizeof *rows);
        snapshot_block_objects_bind(&objects, &b);
        uint32_t k = 0;
        while (snapshot_block_objects_next(&objects, &b, &k, error)) {
            uint64_t id = b.ids[k];
            int64_t type = objects.type_id, size = objects.size;
            if (objects.type_type != SQLITE_INTEGER || objects.size_type != SQLITE_INTEGER ||
                size < 0) {
                query_db_damaged(error, "object %" PRIu64 " has a size or type id that no "
                                        "recording holds", id);
                goto out;
            }
            rows[k] = TRUE;
            sizes[k] = size;
            /* a type without a types row is left out, as the SQL joins leave it */
            type_ids[k] = type > 0 && type < p->n_types && p->types[type].name ? (uint32_t)type : 0;
            k++;
        }
        if (error && *error)
            goto out;
        if (!pass_strings_take(p, (int64_t)b.ids[b.n - 1], &b, sizes, rows, error))
            goto out;
        for (k = 0; k < b.n; k++) {
            if (!rows[k])
                continue;
            if (b.generation[k] == 3)
                p->loh_live = query_add_saturating(p->loh_live, sizes[k]);
            if (type_ids[k])
                pass_object(p, &b, k, type_ids[k], sizes[k]);
        }
        done += b.n;
        query_progress_update(progress, step, (uint64_t)done, (uint64_t)total);
    }
    ok = !(error && *error) && pass_strings_take(p, INT64_MAX, NULL, NULL, NULL, error);
out:
    store_snapblock_clear(&b);
    sqlite3_finalize(blocks);
    snapshot_block_objects_release(&objects);
    return ok;
}

static int string_row_cmp(const void *a, const void *b)
{
    const string_row *x = a, *y = b;
    if (x->hash != y->hash)
        return x->hash < y->hash ? -1 : 1;
    if (x->length != y->length)
        return x->length < y->length ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

typedef struct string_group {
    int64_t hash, length, count, bytes, metadata;
    char *value; /* the least of the copies' values (SQL's min), NULL when none is kept */
} string_group;

/* Duplicate strings: the strings grouped by (hash, length), the groups of `min_duplicates` or
 * more in that order (SQL's GROUP BY), each with the least of its values (a second read of the
 * strings, their values only for those groups). */
static gboolean pass_duplicates(pass *p, json_t *findings, GError **error)
{
    GArray *rows = p->string_rows;
    g_array_sort(rows, string_row_cmp);
    g_array_sort(p->parameters, i64_cmp);
    g_autoptr(GArray) groups = g_array_new(FALSE, TRUE, sizeof(string_group));
    for (guint i = 0, j; i < rows->len; i = j) {
        const string_row *r = &g_array_index(rows, string_row, i);
        string_group g = {.hash = r->hash, .length = r->length};
        for (j = i; j < rows->len && g_array_index(rows, string_row, j).hash == r->hash &&
                    g_array_index(rows, string_row, j).length == r->length;
             j++) {
            const string_row *x = &g_array_index(rows, string_row, j);
            g.count++;
            g.bytes = query_add_saturating(g.bytes, x->size);
            g.metadata += p->event_source && ids_find(p->parameters, x->id);
        }
        if (g.count >= p->o->min_duplicates)
            g_array_append_val(groups, g);
    }
    gboolean ok = TRUE;
    if (groups->len > 0) {
        GHashTable *wanted = g_hash_table_new(g_bytes_hash, g_bytes_equal);
        g_autoptr(GPtrArray) keys = g_ptr_array_new_with_free_func((GDestroyNotify)g_bytes_unref);
        for (guint i = 0; i < groups->len; i++) {
            string_group *g = &g_array_index(groups, string_group, i);
            GBytes *key = g_bytes_new(g, 2 * sizeof(int64_t));
            g_ptr_array_add(keys, key);
            g_hash_table_insert(wanted, key, g);
        }
        sqlite3_stmt *st = query_db_prepare(
            p->db, "SELECT hash, length, value FROM snapshot_strings WHERE snapshot = ?1", error);
        gboolean row = FALSE;
        ok = st != NULL;
        if (st)
            sqlite3_bind_int64(st, 1, p->snapshot);
        while (ok && (ok = query_db_step(st, &row, error)) && row) {
            int64_t key[2] = {sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1)};
            GBytes *k = g_bytes_new_static(key, sizeof key);
            string_group *g = g_hash_table_lookup(wanted, k);
            g_bytes_unref(k);
            if (!g || sqlite3_column_type(st, 2) == SQLITE_NULL)
                continue;
            const char *v = column_text(st, 2);
            int n = sqlite3_column_bytes(st, 2);
            size_t have = g->value ? strlen(g->value) : 0;
            int c = g->value ? memcmp(v, g->value, MIN((size_t)n, have)) : -1;
            if (!g->value || c < 0 || (c == 0 && (size_t)n < have)) { /* SQL's BINARY order */
                g_free(g->value);
                g->value = g_strndup(v, (gsize)n);
            }
        }
        sqlite3_finalize(st);
        g_hash_table_unref(wanted);
    }
    for (guint i = 0; i < groups->len; i++) {
        string_group *g = &g_array_index(groups, string_group, i);
        if (ok)
            duplicate_add(findings, g->value, g->length, g->count, g->bytes, g->metadata);
        g_free(g->value);
    }
    return ok;
}

static int pinned_cmp(const void *a, const void *b)
{
    const pinned_sum *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : (x->generation < y->generation ? -1 : x->generation > y->generation);
}

/* The findings of the pass, in the SQL passes' order. */
static gboolean pass_findings(pass *p, json_t *findings, GError **error)
{
    if (!pass_duplicates(p, findings, error))
        return FALSE;
    collections_add_findings(&p->c, findings);
    if (!under_filled(p->db, p->snapshot, p->o, findings, error))
        return FALSE;
    for (uint32_t t = 0; t < p->n_types; t++) {
        const sparse_sum *s = &p->sparse[t];
        if (s->holds && s->count > 0)
            sparse_add(findings, p->types[t].name, s->count, s->slots, s->set);
    }
    handlers h = {.db = p->db, .snapshot = p->snapshot, .min_subscribers = p->o->min_subscribers,
                  .findings = findings};
    g_autoptr(GArray) to = g_array_new(FALSE, FALSE, sizeof(uint64_t));
    g_autoptr(GArray) field = g_array_new(FALSE, FALSE, sizeof(int64_t));
    for (guint i = 0; i < p->delegates->len; i++) {
        const delegate_ref *d = &g_array_index(p->delegates, delegate_ref, i);
        gboolean found = FALSE, known = FALSE;
        if (!store_snapshot_object_get(p->db, p->snapshot, (uint64_t)d->list, &found, to, field,
                                       &known, error))
            return FALSE;
        if (!found || (int64_t)to->len < p->o->min_subscribers)
            continue;
        sqlite3_reset(p->size);
        sqlite3_bind_int64(p->size, 1, d->list);
        if (sqlite3_step(p->size) != SQLITE_ROW)
            continue; /* the list has no objects row */
        if (!handler_add(&h, d->delegate, d->list, (int64_t)to->len,
                         sqlite3_column_int64(p->size, 0), error))
            return FALSE;
    }
    for (uint32_t t = 0; t < p->n_types; t++)
        if (p->finalizable[t].count)
            finalizable_add(findings, p->types[t].name, p->finalizable[t].count,
                            p->finalizable[t].bytes, p->finalizable[t].queued);
    for (uint32_t t = 0; t < p->n_types; t++)
        if (p->finalized_by_type[t].count)
            finalized_add(findings, p->types[t].name, p->finalized_by_type[t].count,
                          p->finalized_by_type[t].bytes);
    GArray *pins = p->pinned_rows;
    g_array_sort(pins, pinned_cmp);
    for (guint i = 0, j; i < pins->len; i = j) {
        pinned_sum s = g_array_index(pins, pinned_sum, i);
        for (j = i + 1; j < pins->len && pinned_cmp(&s, &g_array_index(pins, pinned_sum, j)) == 0;
             j++) {
            s.count++;
            s.bytes = query_add_saturating(s.bytes, g_array_index(pins, pinned_sum, j).bytes);
        }
        pinned_add(findings, s.name, s.generation, s.count, s.bytes);
    }
    sqlite3_stmt *st = query_db_prepare(p->db, LOH_IN_USE_SQL, error);
    gboolean row = FALSE;
    if (!st)
        return FALSE;
    sqlite3_bind_int64(st, 1, p->snapshot);
    gboolean ok = query_db_step(st, &row, error);
    if (ok)
        loh_add(findings, row && sqlite3_column_type(st, 0) != SQLITE_NULL,
                row ? sqlite3_column_int64(st, 0) : 0, p->loh_live);
    sqlite3_finalize(st);
    return ok;
}

/* The inspections of snapshot `info` of a schema 8 file into `findings` (`step`: the progress
 * shown). */
static gboolean inspect_blocks(sqlite3 *db, const snapshot_info *info, const inspect_options *o,
                               json_t *findings, query_progress *progress, const char *step,
                               GError **error)
{
    pass p = {.db = db, .snapshot = info->snapshot, .o = o};
    gboolean ok = FALSE;
    p.names = g_string_chunk_new(4096);
    p.invocation_fields = g_array_new(FALSE, FALSE, sizeof(int64_t));
    p.string_rows = g_array_new(FALSE, FALSE, sizeof(string_row));
    p.parameters = g_array_new(FALSE, FALSE, sizeof(int64_t));
    p.pinned_rows = g_array_new(FALSE, FALSE, sizeof(pinned_sum));
    p.delegates = g_array_new(FALSE, FALSE, sizeof(delegate_ref));
    p.refs_text = g_string_new(NULL);
    p.fields_text = g_string_new(NULL);
    if (!collections_open(&p.c, db, info->snapshot, 8, error) || !pass_types_read(&p, error))
        goto out;
    p.finalizable = g_new0(per_type, p.n_types);
    p.finalized_by_type = g_new0(per_type, p.n_types);
    p.sparse = g_new0(sparse_sum, p.n_types);
    p.queued = ids_read(db, "SELECT object_id FROM snapshot_roots WHERE snapshot = ?1"
                            " AND kind = 'finalizer' AND object_id IS NOT NULL", info->snapshot,
                        error);
    p.finalized = p.queued ? ids_read(db, "SELECT object_id FROM snapshot_roots"
                                          " WHERE snapshot < ?1 AND kind = 'finalizer'"
                                          " AND object_id IS NOT NULL",
                                      info->snapshot, error)
                           : NULL;
    p.pinned = p.finalized ? ids_read(db, "SELECT object_id FROM snapshot_roots"
                                          " WHERE snapshot = ?1 AND flags & 1"
                                          " AND object_id IS NOT NULL",
                                      info->snapshot, error)
                           : NULL;
    p.strings = p.pinned ? query_db_prepare(db, "SELECT object_id, length, hash FROM snapshot_strings"
                                                " WHERE snapshot = ?1 ORDER BY object_id", error)
                         : NULL;
    p.own = p.strings ? query_db_prepare(db, "SELECT object_id, count FROM snapshot_collections"
                                             " WHERE snapshot = ?1 ORDER BY object_id", error)
                      : NULL;
    p.size = p.own ? query_db_prepare(db, "SELECT size FROM objects WHERE id = ?1", error) : NULL;
    if (!p.size)
        goto out;
    sqlite3_bind_int64(p.strings, 1, info->snapshot);
    sqlite3_bind_int64(p.own, 1, info->snapshot);
    p.own_row = sqlite3_step(p.own) == SQLITE_ROW;
    ok = query_db_step(p.strings, &p.strings_row, error) &&
         pass_blocks(&p, progress, step, info->objects, error) && pass_findings(&p, findings, error);
out:
    collections_close(&p.c); /* also after a failed open */
    sqlite3_finalize(p.strings);
    sqlite3_finalize(p.own);
    sqlite3_finalize(p.size);
    g_free(p.types);
    g_string_chunk_free(p.names);
    g_array_unref(p.invocation_fields);
    g_array_unref(p.string_rows);
    g_array_unref(p.parameters);
    g_array_unref(p.pinned_rows);
    g_array_unref(p.delegates);
    if (p.queued)
        g_array_unref(p.queued);
    if (p.finalized)
        g_array_unref(p.finalized);
    if (p.pinned)
        g_array_unref(p.pinned);
    g_string_free(p.refs_text, TRUE);
    g_string_free(p.fields_text, TRUE);
    g_free(p.finalizable);
    g_free(p.finalized_by_type);
    g_free(p.sparse);
    return ok;
}

static int finding_cmp(const void *a, const void *b)
{
    json_int_t x = json_integer_value(json_object_get(*(json_t *const *)a, "rank_bytes"));
    json_int_t y = json_integer_value(json_object_get(*(json_t *const *)b, "rank_bytes"));
    return x > y ? -1 : x < y;
}

json_t *inspect_snapshot(sqlite3 *db, const char *path, const char *snapshot_text,
                         const inspect_options *o, query_progress *progress, GError **error)
{
    snapshot_info info;
    int64_t version = 0;
    json_t *findings = NULL;
    if (!snapshot_pick(db, path, "inspect", "snapshot", snapshot_text, &info, error) ||
        !query_db_int(db, "PRAGMA user_version", &version, error) ||
        !inspect_stored_read(db, &info, o, &findings, error))
        return NULL;
    g_autofree char *step = NULL;
    if (findings) { /* computed by an earlier command (or call) */
        step = g_strdup_printf("stored inspections of snapshot %" PRId64, info.snapshot);
        query_progress_update(progress, step, 0, 0);
        query_progress_step_done(progress);
        return json_pack("{s:I, s:I, s:o}", "snapshot", (json_int_t)info.snapshot, "gc",
                         (json_int_t)info.gc, "findings", findings);
    }
    step = g_strdup_printf("inspecting snapshot %" PRId64, info.snapshot);
    query_progress_update(progress, step, 0, 0);
    findings = json_array();
    const int64_t s = info.snapshot;
    gboolean ok;
    if (store_snapshot_blocks_present(db))
        ok = inspect_blocks(db, &info, o, findings, progress, step, error);
    else
        ok = (version < 7 || (duplicates(db, s, o, findings, error) &&
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
                      "SELECT (" LOH_IN_USE_SQL "),"
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
    query_progress_step_done(progress);
    if (!inspect_keep(db, &info, o, findings, error)) {
        json_decref(findings);
        return NULL;
    }
    return json_pack("{s:I, s:I, s:o}", "snapshot", (json_int_t)s, "gc", (json_int_t)info.gc,
                     "findings", findings);
}
