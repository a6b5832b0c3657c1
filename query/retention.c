/* retention.c — dominator tree of a snapshot, retained sizes, and their tables (retention.h). */
#include "query/retention.h"

#include "query/query.h"
#include "store/store.h"
#include "wire/hl_wire.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

struct retention {
    int refs; /* retention_free drops one; the pending list of its connection holds one */
    snapshot_graph *graph;
    an_domtree *tree;
    uint32_t n_types;
    uint64_t *type_instances;
    uint64_t *type_shallow;
    uint64_t *type_retained_bytes;
    uint64_t *type_retained_counts;
    /* the reachable nodes retaining at least RETENTION_TOP_BYTES, in node (id) order, and the
     * element type of each (retention_top) */
    uint32_t *top_nodes, *top_elements;
    size_t n_top;
};

/* The objects that retain at least this much are kept apart, with what the listing shows of
 * them (retention_top: the largest retainers read back without `objects`). */
#define RETENTION_TOP_BYTES 65536

/* The tables and views of store/SCHEMA.md, "Retention". Created on first use, by the first
 * command that stores retained sizes in the file. The two small tables are also TEMP tables of a
 * command's read-only connection (the summary and the rows per type of what it computed, beside
 * the file's: what its later steps read); the rows per object never are (retention_pending). */
#define SUMMARY_TABLES(temp)                                                                       \
    "CREATE " temp "TABLE IF NOT EXISTS retention_snapshots (\n"                                   \
    "  snapshot INTEGER PRIMARY KEY,\n"                                                            \
    "  objects INTEGER NOT NULL,\n"                                                                \
    "  reachable INTEGER NOT NULL,\n"                                                              \
    "  reachable_bytes INTEGER NOT NULL,\n"                                                        \
    "  root_edges INTEGER NOT NULL,\n"                                                             \
    "  unresolved_refs INTEGER NOT NULL,\n"                                                        \
    "  unresolved_roots INTEGER NOT NULL,\n"                                                       \
    "  producer TEXT\n"                                                                            \
    ");\n"                                                                                         \
    "CREATE " temp "TABLE IF NOT EXISTS retention_types (\n"                                       \
    "  snapshot INTEGER NOT NULL,\n"                                                               \
    "  type_id INTEGER NOT NULL,\n"                                                                \
    "  count INTEGER NOT NULL,\n"                                                                  \
    "  shallow_bytes INTEGER NOT NULL,\n"                                                          \
    "  retained_bytes INTEGER NOT NULL,\n"                                                         \
    "  retained_count INTEGER NOT NULL,\n"                                                         \
    "  PRIMARY KEY (snapshot, type_id)\n"                                                          \
    ") WITHOUT ROWID;\n"

/* The rows per object: packed per block (store.h STORE_RETBLOCKS_DDL: the table
 * retention_blocks and the view `retention`), or in a file whose older heaplens made it a
 * table, rows of that table (RETENTION_ROWS_TABLE). */
#define RETENTION_TABLES                                                                           \
    SUMMARY_TABLES("")                                                                             \
    "CREATE TABLE IF NOT EXISTS retention_top (\n"                                                 \
    "  snapshot INTEGER NOT NULL,\n"                                                               \
    "  object_id INTEGER NOT NULL,\n"                                                              \
    "  type_id INTEGER NOT NULL,\n"                                                                \
    "  shallow_bytes INTEGER NOT NULL,\n"                                                          \
    "  element_type_id INTEGER NOT NULL,\n"                                                        \
    "  retained_bytes INTEGER NOT NULL,\n"                                                         \
    "  retained_count INTEGER NOT NULL,\n"                                                         \
    "  PRIMARY KEY (snapshot, retained_bytes DESC, object_id)\n"                                   \
    ") WITHOUT ROWID;\n"

#define RETENTION_ROWS_TABLE                                                                       \
    "CREATE TABLE IF NOT EXISTS retention (\n"                                                     \
    "  snapshot INTEGER NOT NULL,\n"                                                               \
    "  object_id INTEGER NOT NULL,\n"                                                              \
    "  idom_id INTEGER,\n"                                                                         \
    "  retained_bytes INTEGER NOT NULL,\n"                                                         \
    "  retained_count INTEGER NOT NULL,\n"                                                         \
    "  PRIMARY KEY (snapshot, object_id)\n"                                                        \
    ") WITHOUT ROWID;\n"                                                                           \
    "CREATE INDEX IF NOT EXISTS retention_large"                                                   \
    " ON retention (snapshot, retained_bytes) WHERE retained_bytes >= 65536;\n"

#define TYPE_NAME(t, o)                                                                            \
    "CASE WHEN " o ".id IS NULL THEN '<unknown>' ELSE coalesce(" t ".name, '<type ' || " o         \
    ".type_id || '>') END"

static const char retention_views[] =
    "CREATE VIEW IF NOT EXISTS retained_objects AS\n"
    "SELECT r.snapshot AS snapshot, s.gc AS gc, r.object_id AS object_id,\n"
    "       " TYPE_NAME(
        "t",
        "o") " AS type, o.size AS shallow_bytes,\n"
             "       r.retained_bytes AS retained_bytes, r.retained_count AS retained_count,\n"
             "       r.idom_id AS dominator_id,\n"
             "       CASE WHEN r.idom_id IS NULL THEN NULL ELSE " TYPE_NAME(
                 "dt",
                 "d") " END\n"
                      "         AS dominator_type\n"
                      "FROM retention r\n"
                      "JOIN snapshots s ON s.snapshot = r.snapshot\n"
                      "LEFT JOIN objects o ON o.id = r.object_id\n"
                      "LEFT JOIN types t ON t.id = o.type_id\n"
                      "LEFT JOIN objects d ON d.id = r.idom_id\n"
                      "LEFT JOIN types dt ON dt.id = d.type_id;\n"
                      "CREATE VIEW IF NOT EXISTS retained_by_type AS\n"
                      "SELECT rt.snapshot AS snapshot, s.gc AS gc,\n"
                      "       CASE WHEN rt.type_id = 0 THEN '<unknown>'\n"
                      "            ELSE coalesce(t.name, '<type ' || rt.type_id || '>') END AS "
                      "type,\n"
                      "       rt.count AS count, rt.shallow_bytes AS shallow_bytes,\n"
                      "       rt.retained_bytes AS retained_bytes, rt.retained_count AS "
                      "retained_count\n"
                      "FROM retention_types rt\n"
                      "JOIN snapshots s ON s.snapshot = rt.snapshot\n"
                      "LEFT JOIN types t ON t.id = rt.type_id;\n"
                      "CREATE VIEW IF NOT EXISTS snapshot_root_objects AS\n"
                      "SELECT sr.snapshot AS snapshot, s.gc AS gc, sr.object_id AS object_id,\n"
                      "       " TYPE_NAME(
                          "t",
                          "o") " AS type, o.size AS size, sr.kind AS kind,\n"
                               "       sr.flags AS flags, sr.root_id AS root_id, r.retained_bytes "
                               "AS retained_bytes\n"
                               "FROM snapshot_roots sr\n"
                               "JOIN snapshots s ON s.snapshot = sr.snapshot\n"
                               "LEFT JOIN objects o ON o.id = sr.object_id\n"
                               "LEFT JOIN types t ON t.id = o.type_id\n"
                               "LEFT JOIN retention r ON r.snapshot = sr.snapshot AND r.object_id "
                               "= sr.object_id\n"
                               "WHERE sr.object_id IS NOT NULL;\n"
                               "CREATE VIEW IF NOT EXISTS snapshot_references AS\n"
                               "SELECT sr.snapshot AS snapshot, sr.from_id AS from_id, " TYPE_NAME(
                                   "ft", "f") " AS from_type,\n"
                                              "       sr.to_id AS to_id, " TYPE_NAME(
                                                  "tt",
                                                  "x") " AS to_type, x.size AS to_size\n"
                                                       "FROM snapshot_refs sr\n"
                                                       "LEFT JOIN objects f ON f.id = sr.from_id\n"
                                                       "LEFT JOIN types ft ON ft.id = f.type_id\n"
                                                       "LEFT JOIN objects x ON x.id = sr.to_id\n"
                                                       "LEFT JOIN types tt ON tt.id = x.type_id;\n";

/* ---- element types from the graph -----------------------------------------------------------
 * What retention_element_type asks of the file (an object's references joined with `objects`
 * and `types`), answered from the snapshot's graph: node v's edges are its references, each
 * one (duplicates kept), and a node of type 0 has no objects row, which the SQL's join leaves
 * out. The same answers (test leaks.element_types compares them). */

static int u32_cmp(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/* The type more than half of v's references point to (ties: the lower id), or 0. */
static uint32_t graph_referenced_type(const snapshot_graph *g, uint32_t v)
{
    uint32_t n = 0, best = 0, type = 0;
    const uint32_t *to = an_graph_successors(g->graph, v, &n);
    g_autofree uint32_t *types = g_new(uint32_t, MAX(n, 1));
    size_t k = 0;
    for (uint32_t i = 0; i < n; i++)
        if (g->type_ids[to[i]] != 0)
            types[k++] = g->type_ids[to[i]];
    qsort(types, k, sizeof *types, u32_cmp);
    for (size_t i = 0, j; i < k; i = j) {
        for (j = i + 1; j < k && types[j] == types[i]; j++)
            ;
        if (j - i > best) { /* ascending: the first of equal counts is the lower id */
            best = (uint32_t)(j - i);
            type = types[i];
        }
    }
    return 2 * (uint64_t)best > k ? type : 0;
}

/* retention_element_type of node v (>= 1) of a forward graph. */
static uint32_t graph_element_type(const snapshot_graph *g, const snapshot_types *types,
                                   uint32_t v)
{
    char buf[QUERY_FORMAT_MAX];
    uint32_t t = g->type_ids[v];
    if (t == 0)
        return 0;
    if (snapshot_types_is_array(types, t))
        return graph_referenced_type(g, v);
    if (!g_str_has_prefix(snapshot_types_name(types, t, buf), "System.Collections."))
        return 0;
    /* its largest array (ties: the lower id, the earlier node) */
    uint32_t n = 0, largest = AN_NONE;
    const uint32_t *to = an_graph_successors(g->graph, v, &n);
    for (uint32_t i = 0; i < n; i++) {
        uint32_t w = to[i];
        if (g->type_ids[w] != 0 && snapshot_types_is_array(types, g->type_ids[w]) &&
            (largest == AN_NONE || g->sizes[w] > g->sizes[largest] ||
             (g->sizes[w] == g->sizes[largest] && w < largest)))
            largest = w;
    }
    return largest == AN_NONE ? 0 : graph_referenced_type(g, largest);
}

/* The large retainers of r (RETENTION_TOP_BYTES) and their element types. */
static gboolean top_compute(retention *r, sqlite3 *db, GError **error)
{
    const snapshot_graph *g = r->graph;
    const uint32_t *idom = an_domtree_idoms(r->tree);
    const uint64_t *rb = an_domtree_retained_bytes(r->tree);
    g_autoptr(snapshot_types) types = snapshot_types_new(db, error);
    if (!types)
        return FALSE;
    size_t n = 0;
    for (uint32_t v = 1; v < g->n; v++)
        n += idom[v] != AN_NONE && rb[v] >= RETENTION_TOP_BYTES;
    r->top_nodes = g_new(uint32_t, MAX(n, 1));
    r->top_elements = g_new(uint32_t, MAX(n, 1));
    for (uint32_t v = 1; v < g->n; v++) {
        if (idom[v] == AN_NONE || rb[v] < RETENTION_TOP_BYTES)
            continue;
        r->top_nodes[r->n_top] = v;
        r->top_elements[r->n_top++] = graph_element_type(g, types, v);
    }
    return TRUE;
}

retention *retention_compute(sqlite3 *db, const snapshot_info *info, query_progress *progress,
                             GError **error)
{
    retention *r = g_new0(retention, 1);
    r->refs = 1;
    r->graph = snapshot_graph_load(db, info, SNAPSHOT_GRAPH_FORWARD, progress, error);
    if (!r->graph)
        goto fail;
    const snapshot_graph *g = r->graph;
    int rc = an_domtree_compute(g->graph, g->sizes, query_progress_analysis, progress, &r->tree);
    if (rc != AN_OK) {
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_SQLITE,
                    "out of memory while computing the dominator tree of snapshot %" PRId64,
                    info->snapshot);
        goto fail;
    }
    query_progress_update(progress, "adding up per type", 0, 0);
    uint32_t max_type = 0;
    for (uint32_t v = 1; v < g->n; v++)
        max_type = MAX(max_type, g->type_ids[v]);
    r->n_types = max_type + 1;
    r->type_instances = g_new0(uint64_t, r->n_types);
    r->type_shallow = g_new0(uint64_t, r->n_types);
    r->type_retained_bytes = g_new0(uint64_t, r->n_types);
    r->type_retained_counts = g_new0(uint64_t, r->n_types);
    uint32_t *group = g_try_new(uint32_t, g->n);
    if (!group) {
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_SQLITE, "out of memory");
        goto fail;
    }
    const uint32_t *idom = an_domtree_idoms(r->tree);
    group[0] = AN_NONE;
    for (uint32_t v = 1; v < g->n; v++) {
        if (idom[v] == AN_NONE) { /* unreachable */
            group[v] = AN_NONE;
            continue;
        }
        group[v] = g->type_ids[v];
        r->type_instances[g->type_ids[v]]++;
        r->type_shallow[g->type_ids[v]] += g->sizes[v];
    }
    rc = an_domtree_group_retained(r->tree, group, r->n_types, r->type_retained_bytes,
                                   r->type_retained_counts);
    g_free(group);
    if (rc != AN_OK) {
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_SQLITE, "out of memory");
        goto fail;
    }
    if (!top_compute(r, db, error))
        goto fail;
    query_progress_step_done(progress);
    return r;
fail:
    retention_free(r);
    return NULL;
}

void retention_free(retention *r)
{
    if (!r || --r->refs > 0)
        return;
    snapshot_graph_free(r->graph);
    an_domtree_free(r->tree);
    g_free(r->type_instances);
    g_free(r->type_shallow);
    g_free(r->type_retained_bytes);
    g_free(r->type_retained_counts);
    g_free(r->top_nodes);
    g_free(r->top_elements);
    g_free(r);
}

const snapshot_graph *retention_graph(const retention *r)
{
    return r->graph;
}

const an_domtree *retention_tree(const retention *r)
{
    return r->tree;
}

uint32_t retention_type_count(const retention *r)
{
    return r->n_types;
}

const uint64_t *retention_type_instances(const retention *r)
{
    return r->type_instances;
}

const uint64_t *retention_type_shallow(const retention *r)
{
    return r->type_shallow;
}

const uint64_t *retention_type_retained_bytes(const retention *r)
{
    return r->type_retained_bytes;
}

const uint64_t *retention_type_retained_counts(const retention *r)
{
    return r->type_retained_counts;
}

gboolean retention_is_stored(sqlite3 *db, int64_t snapshot, gboolean *stored, GError **error)
{
    gboolean row = FALSE;
    int64_t exists = 0;
    *stored = FALSE;
    /* the file's tables, or TEMP ones of this connection */
    if (!query_db_int(
            db,
            "SELECT (SELECT COUNT(*) FROM sqlite_schema WHERE name = 'retention_snapshots')"
            " + (SELECT COUNT(*) FROM sqlite_temp_schema"
            "    WHERE name = 'retention_snapshots')",
            &exists, error))
        return FALSE;
    if (!exists)
        return TRUE;
    sqlite3_stmt *stmt =
        query_db_prepare(db, "SELECT 1 FROM retention_snapshots WHERE snapshot = ?1", error);
    if (!stmt)
        return FALSE;
    sqlite3_bind_int64(stmt, 1, snapshot);
    gboolean ok = query_db_step(stmt, &row, error);
    sqlite3_finalize(stmt);
    *stored = row;
    /* stored in the file (not this command's TEMP rows): read only from a file found intact */
    if (ok && row) {
        gboolean temp = FALSE;
        int64_t mine = 0;
        g_autofree char *sql = g_strdup_printf(
            "SELECT count(*) FROM temp.retention_snapshots WHERE snapshot = %" PRId64, snapshot);
        ok = query_db_table_exists(db, "temp", "retention_snapshots", &temp, error) &&
             (!temp || query_db_int(db, sql, &mine, error)) &&
             (mine > 0 || query_db_stored_sound(db, error));
    }
    return ok;
}

static gboolean sql_fail(sqlite3 *db, const char *what, GError **error)
{
    if (query_db_temp_failed(db, error))
        return FALSE;
    g_set_error(error, QUERY_ERROR, QUERY_ERROR_SQLITE, "%s: %s", what, sqlite3_errmsg(db));
    return FALSE;
}

/* ---- the rows of `retention`, as an eponymous virtual table ------------------------------
 * heaplens_retention_rows(object_id, idom_id, retained_bytes, retained_count): one row per
 * reachable object of the snapshot, in id order; idom_id NULL when only the virtual root
 * dominates it. Registered on a connection only while rows_write runs. */

typedef struct rows_source {
    const retention *r;
    query_progress *progress;
} rows_source;

typedef struct rows_vtab {
    sqlite3_vtab base;
    rows_source *source;
} rows_vtab;

typedef struct rows_cursor {
    sqlite3_vtab_cursor base;
    const rows_source *source;
    uint32_t v; /* current node; n at the end */
} rows_cursor;

static int rows_connect(sqlite3 *db, void *aux, int argc, const char *const *argv,
                        sqlite3_vtab **vtab, char **err)
{
    (void)argc, (void)argv, (void)err;
    int rc = sqlite3_declare_vtab(
        db, "CREATE TABLE x(object_id INTEGER, idom_id INTEGER, retained_bytes INTEGER,"
            " retained_count INTEGER)");
    if (rc != SQLITE_OK)
        return rc;
    rows_vtab *t = sqlite3_malloc(sizeof *t);
    if (!t)
        return SQLITE_NOMEM;
    memset(t, 0, sizeof *t);
    t->source = aux;
    *vtab = &t->base;
    return SQLITE_OK;
}

static int rows_disconnect(sqlite3_vtab *vtab)
{
    sqlite3_free(vtab);
    return SQLITE_OK;
}

static int rows_best_index(sqlite3_vtab *vtab, sqlite3_index_info *info)
{
    (void)vtab;
    info->estimatedCost = 1e6;
    info->orderByConsumed = 0;
    return SQLITE_OK;
}

static void rows_skip(rows_cursor *c)
{
    const snapshot_graph *g = c->source->r->graph;
    const uint32_t *idom = an_domtree_idoms(c->source->r->tree);
    while (c->v < g->n && idom[c->v] == AN_NONE) /* unreachable: no row */
        c->v++;
}

static int rows_open(sqlite3_vtab *vtab, sqlite3_vtab_cursor **cursor)
{
    rows_cursor *c = sqlite3_malloc(sizeof *c);
    if (!c)
        return SQLITE_NOMEM;
    memset(c, 0, sizeof *c);
    c->source = ((rows_vtab *)vtab)->source;
    *cursor = &c->base;
    return SQLITE_OK;
}

static int rows_close(sqlite3_vtab_cursor *cursor)
{
    sqlite3_free(cursor);
    return SQLITE_OK;
}

static int rows_filter(sqlite3_vtab_cursor *cursor, int idx, const char *idx_str, int argc,
                       sqlite3_value **argv)
{
    (void)idx, (void)idx_str, (void)argc, (void)argv;
    rows_cursor *c = (rows_cursor *)cursor;
    c->v = 1;
    rows_skip(c);
    return SQLITE_OK;
}

static int rows_next(sqlite3_vtab_cursor *cursor)
{
    rows_cursor *c = (rows_cursor *)cursor;
    c->v++;
    rows_skip(c);
    if ((c->v & 0xffff) == 0)
        query_progress_update(c->source->progress, "storing retained sizes", c->v,
                              c->source->r->graph->n);
    return SQLITE_OK;
}

static int rows_eof(sqlite3_vtab_cursor *cursor)
{
    rows_cursor *c = (rows_cursor *)cursor;
    return c->v >= c->source->r->graph->n;
}

static int rows_column(sqlite3_vtab_cursor *cursor, sqlite3_context *ctx, int column)
{
    rows_cursor *c = (rows_cursor *)cursor;
    const snapshot_graph *g = c->source->r->graph;
    const an_domtree *t = c->source->r->tree;
    uint32_t v = c->v;
    switch (column) {
    case 0:
        sqlite3_result_int64(ctx, (int64_t)g->ids[v]);
        break;
    case 1: {
        uint32_t d = an_domtree_idoms(t)[v];
        if (d == 0)
            sqlite3_result_null(ctx);
        else
            sqlite3_result_int64(ctx, (int64_t)g->ids[d]);
        break;
    }
    case 2:
        sqlite3_result_int64(ctx, (int64_t)an_domtree_retained_bytes(t)[v]);
        break;
    default:
        sqlite3_result_int64(ctx, an_domtree_retained_counts(t)[v]);
        break;
    }
    return SQLITE_OK;
}

static int rows_rowid(sqlite3_vtab_cursor *cursor, sqlite3_int64 *rowid)
{
    *rowid = ((rows_cursor *)cursor)->v;
    return SQLITE_OK;
}

static const sqlite3_module rows_module = {
    .iVersion = 0,
    .xCreate = NULL, /* eponymous only */
    .xConnect = rows_connect,
    .xBestIndex = rows_best_index,
    .xDisconnect = rows_disconnect,
    .xDestroy = rows_disconnect,
    .xOpen = rows_open,
    .xClose = rows_close,
    .xFilter = rows_filter,
    .xNext = rows_next,
    .xEof = rows_eof,
    .xColumn = rows_column,
    .xRowid = rows_rowid,
};

/* Writes the summary row and the rows per type of `r` into `schema`'s retention_snapshots and
 * retention_types through `db` (a transaction is open; the tables exist). */
static gboolean summary_write(const retention *r, sqlite3 *db, const char *schema,
                              GError **error)
{
    gboolean ok = FALSE;
    const snapshot_graph *g = r->graph;
    const an_domtree *t = r->tree;
    const int64_t snapshot = g->info.snapshot;
    sqlite3_stmt *ins = NULL;
    g_autofree char *summary_sql = g_strdup_printf(
        "INSERT INTO %s.retention_snapshots (snapshot, objects, reachable, reachable_bytes,"
        " root_edges, unresolved_refs, unresolved_roots, producer)"
        " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)", schema);
    g_autofree char *types_sql = g_strdup_printf(
        "INSERT INTO %s.retention_types (snapshot, type_id, count, shallow_bytes, retained_bytes,"
        " retained_count) VALUES (?1, ?2, ?3, ?4, ?5, ?6)", schema);

    if (sqlite3_prepare_v2(db, summary_sql, -1, &ins, NULL) != SQLITE_OK)
        goto sql;
    sqlite3_bind_int64(ins, 1, snapshot);
    sqlite3_bind_int64(ins, 2, (int64_t)g->n - 1);
    sqlite3_bind_int64(ins, 3, (int64_t)an_domtree_reachable(t) - 1);
    sqlite3_bind_int64(ins, 4, (int64_t)an_domtree_retained_bytes(t)[0]);
    sqlite3_bind_int64(ins, 5, (int64_t)g->root_edges);
    sqlite3_bind_int64(ins, 6, (int64_t)g->refs_unresolved);
    sqlite3_bind_int64(ins, 7, (int64_t)g->roots_unresolved);
    sqlite3_bind_text(ins, 8, "heaplens " HEAPLENS_VERSION, -1, SQLITE_STATIC);
    if (sqlite3_step(ins) != SQLITE_DONE)
        goto sql;
    sqlite3_finalize(ins);
    ins = NULL;

    if (sqlite3_prepare_v2(db, types_sql, -1, &ins, NULL) != SQLITE_OK)
        goto sql;
    sqlite3_bind_int64(ins, 1, snapshot);
    for (uint32_t type = 0; type < r->n_types; type++) {
        if (r->type_instances[type] == 0)
            continue;
        sqlite3_bind_int64(ins, 2, type);
        sqlite3_bind_int64(ins, 3, (int64_t)r->type_instances[type]);
        sqlite3_bind_int64(ins, 4, (int64_t)r->type_shallow[type]);
        sqlite3_bind_int64(ins, 5, (int64_t)r->type_retained_bytes[type]);
        sqlite3_bind_int64(ins, 6, (int64_t)r->type_retained_counts[type]);
        if (sqlite3_step(ins) != SQLITE_DONE)
            goto sql;
        sqlite3_reset(ins);
    }
    ok = TRUE;
    goto out;
sql:
    sql_fail(db, "storing retained sizes failed", error);
out:
    sqlite3_finalize(ins);
    return ok;
}

/* Writes the large retainers of `r` (retention_top) through `rw` (a transaction is open; the
 * table exists). */
static gboolean top_write(const retention *r, sqlite3 *rw, GError **error)
{
    const snapshot_graph *g = r->graph;
    const uint64_t *rb = an_domtree_retained_bytes(r->tree);
    const uint32_t *rc = an_domtree_retained_counts(r->tree);
    sqlite3_stmt *ins = NULL;
    if (sqlite3_prepare_v2(rw,
                           "INSERT INTO main.retention_top (snapshot, object_id, type_id,"
                           " shallow_bytes, element_type_id, retained_bytes, retained_count)"
                           " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                           -1, &ins, NULL) != SQLITE_OK)
        return sql_fail(rw, "storing retained sizes failed", error);
    sqlite3_bind_int64(ins, 1, g->info.snapshot);
    for (size_t i = 0; i < r->n_top; i++) {
        uint32_t v = r->top_nodes[i];
        sqlite3_bind_int64(ins, 2, (int64_t)g->ids[v]);
        sqlite3_bind_int64(ins, 3, g->type_ids[v]);
        sqlite3_bind_int64(ins, 4, (int64_t)g->sizes[v]);
        sqlite3_bind_int64(ins, 5, r->top_elements[i]);
        sqlite3_bind_int64(ins, 6, (int64_t)rb[v]);
        sqlite3_bind_int64(ins, 7, rc[v]);
        if (sqlite3_step(ins) != SQLITE_DONE) {
            sql_fail(rw, "storing retained sizes failed", error);
            sqlite3_finalize(ins);
            return FALSE;
        }
        sqlite3_reset(ins);
    }
    sqlite3_finalize(ins);
    return TRUE;
}

/* Writes the rows per object of `r` packed (retention_blocks) through `rw` (a transaction is
 * open; the table exists): the reachable nodes in id order, STORE_RETBLOCK_OBJECTS a row. */
static gboolean blocks_write(const retention *r, sqlite3 *rw, query_progress *progress,
                             GError **error)
{
    const snapshot_graph *g = r->graph;
    const uint32_t *idom = an_domtree_idoms(r->tree);
    const uint64_t *rb = an_domtree_retained_bytes(r->tree);
    const uint32_t *rc = an_domtree_retained_counts(r->tree);
    sqlite3_stmt *ins = NULL;
    gboolean ok = FALSE;
    uint64_t ids[STORE_RETBLOCK_OBJECTS], idoms[STORE_RETBLOCK_OBJECTS],
        bytes[STORE_RETBLOCK_OBJECTS], counts[STORE_RETBLOCK_OBJECTS];
    store_retblock b = {.ids = ids, .idoms = idoms, .bytes = bytes, .counts = counts};
    g_autoptr(GString) t_ids = g_string_sized_new(1024), t_idoms = g_string_sized_new(1024),
                       t_bytes = g_string_sized_new(1024), t_counts = g_string_sized_new(512);
    if (sqlite3_prepare_v2(rw, STORE_RETBLOCK_INSERT_SQL, -1, &ins, NULL) != SQLITE_OK) {
        sql_fail(rw, "storing retained sizes failed", error);
        goto out;
    }
    for (uint32_t v = 1; v <= g->n; v++) {
        if (v < g->n && idom[v] == AN_NONE) /* unreachable: no row */
            continue;
        if (b.n == STORE_RETBLOCK_OBJECTS || (v == g->n && b.n > 0)) {
            store_retblock_bind(ins, g->info.snapshot, &b, t_ids, t_idoms, t_bytes, t_counts);
            if (sqlite3_step(ins) != SQLITE_DONE) {
                sql_fail(rw, "storing retained sizes failed", error);
                goto out;
            }
            sqlite3_reset(ins);
            b.n = 0;
            query_progress_update(progress, "storing retained sizes", v, g->n);
        }
        if (v == g->n)
            break;
        ids[b.n] = g->ids[v];
        idoms[b.n] = idom[v] == 0 ? 0 : g->ids[idom[v]];
        bytes[b.n] = rb[v];
        counts[b.n] = rc[v];
        b.n++;
    }
    ok = TRUE;
out:
    sqlite3_finalize(ins);
    return ok;
}

/* Writes everything of `r` into the file's tables through `rw` (a transaction is open; the
 * tables exist): the summary, the rows per type, the large retainers and, straight from the
 * arrays, the row of each reachable object: packed (`packed`), else rows of the table
 * `retention`. */
static gboolean rows_write(const retention *r, sqlite3 *rw, gboolean packed,
                           query_progress *progress, GError **error)
{
    sqlite3_stmt *ins = NULL;
    gboolean ok = FALSE;
    if (!summary_write(r, rw, "main", error))
        return FALSE;
    if (packed)
        return blocks_write(r, rw, progress, error) && top_write(r, rw, error);
    /* One INSERT ... SELECT over a virtual table reading the arrays: a single statement keeps
     * the table's cursor open and appends each row after the previous one (they come in key
     * order) — about twice as fast as binding rows into INSERT statements. */
    rows_source source = {.r = r, .progress = progress};
    if (sqlite3_create_module_v2(rw, "heaplens_retention_rows", &rows_module, &source, NULL) !=
            SQLITE_OK ||
        sqlite3_prepare_v2(rw,
                           "INSERT INTO main.retention (snapshot, object_id, idom_id,"
                           " retained_bytes, retained_count) SELECT ?1, object_id, idom_id,"
                           " retained_bytes, retained_count FROM heaplens_retention_rows",
                           -1, &ins, NULL) != SQLITE_OK) {
        sql_fail(rw, "storing retained sizes failed", error);
        goto out;
    }
    sqlite3_bind_int64(ins, 1, r->graph->info.snapshot);
    if (sqlite3_step(ins) != SQLITE_DONE) {
        sql_fail(rw, "storing retained sizes failed", error);
        goto out;
    }
    if (!top_write(r, rw, error))
        goto out;
    ok = TRUE;
out:
    sqlite3_finalize(ins);
    /* unregistered: the next snapshot's rows register their own source */
    sqlite3_create_module_v2(rw, "heaplens_retention_rows", NULL, NULL, NULL);
    return ok;
}

/* One prepared statement on `db`, or FALSE with *error. */
static gboolean prepare(sqlite3 *db, const char *sql, sqlite3_stmt **stmt, const char *what,
                        GError **error)
{
    if (sqlite3_prepare_v2(db, sql, -1, stmt, NULL) == SQLITE_OK)
        return TRUE;
    sql_fail(db, what, error);
    return FALSE;
}

/* ---- rows of another connection's statement, as an eponymous virtual table ---------------
 * heaplens_copied_rows(c0, c1, ...): the rows of a statement prepared on the read-only
 * connection (the TEMP tables), for one INSERT ... SELECT on the read-write one: its cursor stays
 * open and each row is appended after the previous one, where an INSERT per row seeks its place
 * again (about twice as fast on 5M rows). Registered on the read-write connection only while
 * rows_copy runs. */

typedef struct copy_source {
    sqlite3_stmt *get; /* on the read-only connection, bound */
    int columns, rc;   /* rc: the last step's */
} copy_source;

typedef struct copy_vtab {
    sqlite3_vtab base;
    copy_source *source;
} copy_vtab;

typedef struct copy_cursor {
    sqlite3_vtab_cursor base;
    copy_source *source;
    sqlite3_int64 row;
} copy_cursor;

static int copy_connect(sqlite3 *db, void *aux, int argc, const char *const *argv,
                        sqlite3_vtab **vtab, char **err)
{
    (void)argc, (void)argv, (void)err;
    copy_source *source = aux;
    g_autoptr(GString) decl = g_string_new("CREATE TABLE x(c0");
    for (int i = 1; i < source->columns; i++)
        g_string_append_printf(decl, ", c%d", i);
    g_string_append(decl, ")");
    int rc = sqlite3_declare_vtab(db, decl->str);
    if (rc != SQLITE_OK)
        return rc;
    copy_vtab *t = sqlite3_malloc(sizeof *t);
    if (!t)
        return SQLITE_NOMEM;
    memset(t, 0, sizeof *t);
    t->source = source;
    *vtab = &t->base;
    return SQLITE_OK;
}

static int copy_open(sqlite3_vtab *vtab, sqlite3_vtab_cursor **cursor)
{
    copy_cursor *c = sqlite3_malloc(sizeof *c);
    if (!c)
        return SQLITE_NOMEM;
    memset(c, 0, sizeof *c);
    c->source = ((copy_vtab *)vtab)->source;
    *cursor = &c->base;
    return SQLITE_OK;
}

static int copy_step(copy_cursor *c)
{
    c->source->rc = sqlite3_step(c->source->get);
    c->row++;
    return c->source->rc == SQLITE_ROW || c->source->rc == SQLITE_DONE ? SQLITE_OK : SQLITE_ERROR;
}

static int copy_filter(sqlite3_vtab_cursor *cursor, int idx, const char *idx_str, int argc,
                       sqlite3_value **argv)
{
    (void)idx, (void)idx_str, (void)argc, (void)argv;
    copy_cursor *c = (copy_cursor *)cursor;
    sqlite3_reset(c->source->get);
    return copy_step(c);
}

static int copy_next(sqlite3_vtab_cursor *cursor)
{
    return copy_step((copy_cursor *)cursor);
}

static int copy_eof(sqlite3_vtab_cursor *cursor)
{
    return ((copy_cursor *)cursor)->source->rc != SQLITE_ROW;
}

static int copy_column(sqlite3_vtab_cursor *cursor, sqlite3_context *ctx, int column)
{
    copy_cursor *c = (copy_cursor *)cursor;
    sqlite3_result_value(ctx, sqlite3_column_value(c->source->get, column));
    return SQLITE_OK;
}

static int copy_rowid(sqlite3_vtab_cursor *cursor, sqlite3_int64 *rowid)
{
    *rowid = ((copy_cursor *)cursor)->row;
    return SQLITE_OK;
}

static const sqlite3_module copy_module = {
    .iVersion = 0,
    .xCreate = NULL, /* eponymous only */
    .xConnect = copy_connect,
    .xBestIndex = rows_best_index,
    .xDisconnect = rows_disconnect,
    .xDestroy = rows_disconnect,
    .xOpen = copy_open,
    .xClose = rows_close,
    .xFilter = copy_filter,
    .xNext = copy_next,
    .xEof = copy_eof,
    .xColumn = copy_column,
    .xRowid = copy_rowid,
};

/* Copies the rows of `snapshot` (-1: all) from the TEMP table `table` (`columns` columns) of
 * `from` into the same table of `to`, in key order: one INSERT ... SELECT over
 * heaplens_copied_rows. */
static gboolean rows_copy(sqlite3 *from, sqlite3 *to, const char *table, int columns,
                          int64_t snapshot, GError **error)
{
    gboolean ok = FALSE;
    copy_source source = {.columns = columns};
    sqlite3_stmt *put = NULL;
    g_autofree char *select =
        g_strdup_printf("SELECT * FROM temp.%s WHERE ?1 < 0 OR snapshot = ?1", table);
    g_autofree char *insert =
        g_strdup_printf("INSERT OR IGNORE INTO main.%s SELECT * FROM heaplens_copied_rows", table);
    if (!prepare(from, select, &source.get, "reading retained sizes failed", error))
        goto out;
    if (sqlite3_column_count(source.get) != columns) {
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_SQLITE,
                    "storing retained sizes failed: %s has %d columns, not %d", table,
                    sqlite3_column_count(source.get), columns);
        goto out;
    }
    sqlite3_bind_int64(source.get, 1, snapshot);
    if (sqlite3_create_module_v2(to, "heaplens_copied_rows", &copy_module, &source, NULL) !=
            SQLITE_OK ||
        !prepare(to, insert, &put, "storing retained sizes failed", error))
        goto out;
    if (sqlite3_step(put) != SQLITE_DONE) {
        if (source.rc != SQLITE_ROW && source.rc != SQLITE_DONE)
            sql_fail(from, "reading retained sizes failed", error);
        else
            sql_fail(to, "storing retained sizes failed", error);
        goto out;
    }
    ok = TRUE;
out:
    sqlite3_finalize(put);
    sqlite3_finalize(source.get);
    /* unregistered: the next copy registers its own source */
    sqlite3_create_module_v2(to, "heaplens_copied_rows", NULL, NULL, NULL);
    return ok;
}

/* ---- objects and bytes per type of a snapshot (leaks' series) ----------------------------
 * snapshot_type_counts: kept in a TEMP table by retention_counts_keep, copied into the file by
 * retention_commit like the retained sizes; read back by retention_counts_read. */

#define COUNTS_TABLE(schema)                                                                       \
    "CREATE TABLE IF NOT EXISTS " schema "snapshot_type_counts (\n"                                 \
    "  snapshot INTEGER NOT NULL,\n"                                                               \
    "  type_id INTEGER NOT NULL,\n"                                                                \
    "  count INTEGER NOT NULL,\n"                                                                  \
    "  bytes INTEGER NOT NULL,\n"                                                                  \
    "  PRIMARY KEY (snapshot, type_id)\n"                                                          \
    ") WITHOUT ROWID;\n"

/* Reads the rows of `info`'s snapshot from `schema`.snapshot_type_counts (see
 * retention_counts_read). */
static gboolean counts_read_from(sqlite3 *db, const char *schema, const snapshot_info *info,
                                 uint32_t n_types, int64_t *count, int64_t *bytes,
                                 gboolean *found, GError **error)
{
    gboolean row = FALSE, ok = FALSE;
    int64_t objects = 0;
    g_autofree char *sql = g_strdup_printf(
        "SELECT type_id, count, bytes,"
        "       typeof(type_id) = 'integer' AND typeof(count) = 'integer'"
        "       AND typeof(bytes) = 'integer' AND type_id >= 0 AND count > 0 AND bytes >= 0"
        "  FROM %s.snapshot_type_counts WHERE snapshot = ?1", schema);
    sqlite3_stmt *stmt = query_db_prepare(db, sql, error);
    if (!stmt)
        return FALSE;
    sqlite3_bind_int64(stmt, 1, info->snapshot);
    while ((ok = query_db_step(stmt, &row, error)) && row) {
        *found = TRUE;
        int64_t type = sqlite3_column_int64(stmt, 0), n = sqlite3_column_int64(stmt, 1);
        if (!sqlite3_column_int(stmt, 3) || n > info->objects - objects) {
            ok = query_db_damaged(error, "snapshot_type_counts holds figures of snapshot %" PRId64
                                         " that no recording holds", info->snapshot);
            break;
        }
        if (type >= n_types)
            type = 0;
        count[type] += n;
        bytes[type] = query_add_saturating(bytes[type], sqlite3_column_int64(stmt, 2));
        objects += n;
    }
    sqlite3_finalize(stmt);
    if (ok && *found && objects != info->objects)
        ok = query_db_damaged(error, "snapshot_type_counts counts %" PRId64 " objects of snapshot %"
                                     PRId64 ", its snapshots row %" PRId64,
                              objects, info->snapshot, info->objects);
    return ok;
}

gboolean retention_counts_read(sqlite3 *db, const snapshot_info *info, uint32_t n_types,
                               int64_t *count, int64_t *bytes, gboolean *found, GError **error)
{
    static const char *const schemas[] = {"main", "temp"}; /* the file's, then this command's */
    *found = FALSE;
    for (size_t i = 0; i < G_N_ELEMENTS(schemas) && !*found; i++) {
        int64_t exists = 0;
        g_autofree char *sql = g_strdup_printf(
            "SELECT COUNT(*) FROM %s.sqlite_schema WHERE name = 'snapshot_type_counts'", schemas[i]);
        if (!query_db_int(db, sql, &exists, error) ||
            (exists && !counts_read_from(db, schemas[i], info, n_types, count, bytes, found,
                                         error)))
            return FALSE;
    }
    return TRUE;
}

gboolean retention_counts_keep(sqlite3 *db, int64_t snapshot, uint32_t n_types,
                               const int64_t *count, const int64_t *bytes, GError **error)
{
    sqlite3_stmt *ins = NULL;
    gboolean ok = FALSE;
    /* a savepoint, not BEGIN: also inside a read transaction of the caller's (report's moment) */
    if (sqlite3_exec(db, "SAVEPOINT counts_keep; " COUNTS_TABLE("temp."), NULL, NULL, NULL) !=
            SQLITE_OK ||
        !prepare(db, "INSERT OR IGNORE INTO temp.snapshot_type_counts VALUES (?1, ?2, ?3, ?4)",
                 &ins, "keeping counts per type failed", error))
        goto out;
    sqlite3_bind_int64(ins, 1, snapshot);
    for (uint32_t t = 0; t < n_types; t++) {
        if (count[t] == 0)
            continue;
        sqlite3_bind_int64(ins, 2, t);
        sqlite3_bind_int64(ins, 3, count[t]);
        sqlite3_bind_int64(ins, 4, bytes[t]);
        if (sqlite3_step(ins) != SQLITE_DONE) {
            sql_fail(db, "keeping counts per type failed", error);
            goto out;
        }
        sqlite3_reset(ins);
    }
    ok = TRUE;
out:
    sqlite3_finalize(ins);
    if (!ok && error && !*error)
        sql_fail(db, "keeping counts per type failed", error);
    sqlite3_exec(db, ok ? "RELEASE counts_keep" : "ROLLBACK TO counts_keep; RELEASE counts_keep",
                 NULL, NULL, NULL);
    return ok;
}

/* Whether this command kept counts per type the file lacks. */
static gboolean counts_pending(sqlite3 *db, gboolean *pending, GError **error)
{
    int64_t in_main = 0, in_temp = 0, n = 0;
    *pending = FALSE;
    if (!query_db_int(db, "SELECT COUNT(*) FROM temp.sqlite_schema"
                          " WHERE name = 'snapshot_type_counts'", &in_temp, error))
        return FALSE;
    if (!in_temp)
        return TRUE;
    if (!query_db_int(db, "SELECT COUNT(*) FROM main.sqlite_schema"
                          " WHERE name = 'snapshot_type_counts'", &in_main, error) ||
        !query_db_int(db,
                      in_main ? "SELECT COUNT(*) FROM temp.snapshot_type_counts WHERE snapshot"
                                " NOT IN (SELECT snapshot FROM main.snapshot_type_counts)"
                              : "SELECT COUNT(*) FROM temp.snapshot_type_counts",
                      &n, error))
        return FALSE;
    *pending = n > 0;
    return TRUE;
}

/* ---- retained sizes computed and not written yet ------------------------------------------
 * What a command computes stays in memory until retention_commit writes it into the file,
 * straight from the arrays (no rows per object in TEMP tables, no copy of them): per
 * connection, the retentions in the order computed, each holding a reference. The readers of
 * the rows per object (retention_top_objects, retention_largest_instance) read the arrays of a
 * snapshot found here. A connection is forgotten when it closes (the destructor of a function
 * registered on it). Single-threaded, as the query tools are. */

static GHashTable *pending_by_db; /* sqlite3 * -> GPtrArray of retention * */

static void pending_forget(void *db)
{
    if (pending_by_db)
        g_hash_table_remove(pending_by_db, db);
}

static void pending_function(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    (void)argc, (void)argv;
    sqlite3_result_null(ctx);
}

/* The list of `db`, created on first use (NULL without `create` when it has none). */
static GPtrArray *pending_list(sqlite3 *db, gboolean create)
{
    GPtrArray *list = pending_by_db ? g_hash_table_lookup(pending_by_db, db) : NULL;
    if (list || !create)
        return list;
    if (!pending_by_db)
        pending_by_db = g_hash_table_new_full(g_direct_hash, g_direct_equal, NULL,
                                              (GDestroyNotify)g_ptr_array_unref);
    /* registered once per connection (the list is emptied, never removed, by a commit): its
     * destructor runs when `db` closes */
    sqlite3_create_function_v2(db, "heaplens_retention_pending", 0, SQLITE_UTF8, db,
                               pending_function, NULL, NULL, pending_forget);
    list = g_ptr_array_new_with_free_func((GDestroyNotify)retention_free);
    g_hash_table_insert(pending_by_db, db, list);
    return list;
}

/* The retention of `snapshot` this command computed and has not written, or NULL. */
static retention *pending_find(sqlite3 *db, int64_t snapshot)
{
    GPtrArray *list = pending_list(db, FALSE);
    for (guint i = 0; list && i < list->len; i++) {
        retention *r = g_ptr_array_index(list, i);
        if (r->graph->info.snapshot == snapshot)
            return r;
    }
    return NULL;
}

retention *retention_pending_last(sqlite3 *db)
{
    GPtrArray *list = pending_list(db, FALSE);
    if (!list || list->len == 0)
        return NULL;
    retention *r = g_ptr_array_index(list, list->len - 1);
    r->refs++;
    return r;
}

/* Whether the file's retention_snapshots (through the read-write `rw`, the tables created)
 * holds `snapshot`: another command may have stored it since this one looked. */
static gboolean stored_in_file(sqlite3 *rw, int64_t snapshot, gboolean *stored, GError **error)
{
    sqlite3_stmt *stmt = NULL;
    *stored = FALSE;
    if (!prepare(rw, "SELECT 1 FROM main.retention_snapshots WHERE snapshot = ?1", &stmt,
                 "storing retained sizes failed", error))
        return FALSE;
    sqlite3_bind_int64(stmt, 1, snapshot);
    int rc = sqlite3_step(stmt);
    *stored = rc == SQLITE_ROW;
    sqlite3_finalize(stmt);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return sql_fail(rw, "storing retained sizes failed", error);
    return TRUE;
}

/* Opens `path` read-write, checks it, and writes the pending retentions (with the tables and
 * views) and, with `counts`, the counts per type kept in TEMP, in one transaction. FALSE with
 * *reason set (not an error) when the file cannot be written; FALSE with *error on failure
 * (nothing was written). */
static gboolean file_store(sqlite3 *db, const GPtrArray *pending, gboolean counts,
                           const char *path, query_progress *progress, char **reason,
                           GError **error)
{
    gboolean ok = FALSE;
    char *errmsg = NULL;
    store_db_check check = {0};
    sqlite3 *rw = query_db_open_store(db, path, "PRAGMA cache_size = -262144; BEGIN IMMEDIATE",
                                      "retained sizes", &check, progress, reason, error);
    if (!rw)
        return FALSE;
    /* the rows per object packed, unless an older heaplens made `retention` a table; a file
     * that has retention_blocks keeps getting blocks whatever `retention` is (a table made by
     * hand beside them): readers read the blocks then (store_retention_view_attach), and rows
     * put in the table would be read by none */
    int64_t rows_table = 0;
    if (!query_db_int(rw, "SELECT count(*) FROM main.sqlite_schema WHERE type = 'table'"
                          " AND name = 'retention' AND NOT EXISTS (SELECT 1 FROM"
                          " main.sqlite_schema WHERE type = 'table' AND name = 'retention_blocks')",
                      &rows_table, error))
        goto out;
    int rc = sqlite3_exec(rw, RETENTION_TABLES, NULL, NULL, &errmsg);
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(rw, rows_table ? RETENTION_ROWS_TABLE : STORE_RETBLOCKS_DDL, NULL, NULL,
                          &errmsg);
    if (rc == SQLITE_OK)
        rc = sqlite3_exec(rw, retention_views, NULL, NULL, &errmsg);
    if (rc != SQLITE_OK) {
        int code = sqlite3_errcode(rw) & 0xff;
        if (code == SQLITE_READONLY)
            *reason = g_strdup_printf("%s cannot be written (%s)", path, errmsg);
        else
            g_set_error(error, QUERY_ERROR, QUERY_ERROR_SQLITE, "storing retained sizes failed: %s",
                        errmsg);
        goto out;
    }
    query_progress_update(progress, "storing retained sizes", 0, 0);
    for (guint i = 0; pending && i < pending->len; i++) {
        const retention *r = g_ptr_array_index(pending, i);
        gboolean there = FALSE;
        if (!stored_in_file(rw, r->graph->info.snapshot, &there, error) ||
            (!there && !rows_write(r, rw, !rows_table, progress, error)))
            goto out;
    }
    if (counts) { /* the counts per type leaks kept: every snapshot's (OR IGNORE: those stored) */
        rc = sqlite3_exec(rw, COUNTS_TABLE("main."), NULL, NULL, &errmsg);
        if (rc != SQLITE_OK) {
            g_set_error(error, QUERY_ERROR, QUERY_ERROR_SQLITE,
                        "storing counts per type failed: %s", errmsg);
            goto out;
        }
        if (!rows_copy(db, rw, "snapshot_type_counts", 4, -1, error))
            goto out;
    }
    query_progress_update(progress, "committing", 0, 0);
    if (!store_db_commit_sound(rw, &check)) { /* the next writer need not check again */
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_SQLITE, "storing retained sizes failed: %s",
                    sqlite3_errmsg(rw));
        goto out;
    }
    ok = TRUE;
out:
    if (!ok)
        query_db_store_full(rw, path, reason, error); /* a full disk: a note */
    sqlite3_free(errmsg);
    sqlite3_close(rw); /* an open transaction is rolled back */
    return ok;
}

/* Objects and bytes per type of the whole snapshot of `r` (reachable or not: leaks' series),
 * kept beside the retained sizes, so that `leaks` need not count this snapshot again. */
static gboolean counts_keep_from(const retention *r, sqlite3 *db, GError **error)
{
    const snapshot_graph *g = r->graph;
    g_autofree int64_t *count = g_new0(int64_t, r->n_types);
    g_autofree int64_t *bytes = g_new0(int64_t, r->n_types);
    for (uint32_t v = 1; v < g->n; v++) {
        count[g->type_ids[v]]++;
        bytes[g->type_ids[v]] += (int64_t)g->sizes[v]; /* the loader bounds their total */
    }
    return retention_counts_keep(db, g->info.snapshot, r->n_types, count, bytes, error);
}

gboolean retention_store(retention *r, sqlite3 *db, query_progress *progress, GError **error)
{
    (void)progress;
    char *errmsg = NULL;
    const int64_t snapshot = r->graph->info.snapshot;
    /* Stored already (leaks computes the last snapshot's tree for its holders every time):
     * nothing to keep. */
    gboolean stored = FALSE;
    if (!retention_is_stored(db, snapshot, &stored, error))
        return FALSE;
    if (stored)
        return TRUE;
    /* The summary and the rows per type into TEMP tables of the read-only connection, the same
     * names (the file's rows copied in: TEMP tables hide the file's); the rows per object stay
     * in memory until retention_commit writes them into the file once the command has read
     * everything it needs. */
    int64_t in_file = 0, in_temp = 0;
    if (!query_db_int(db,
                      "SELECT COUNT(*) FROM main.sqlite_schema WHERE name = 'retention_snapshots'",
                      &in_file, error) ||
        !query_db_int(db,
                      "SELECT COUNT(*) FROM temp.sqlite_schema WHERE name = 'retention_snapshots'",
                      &in_temp, error))
        return FALSE;
    /* a savepoint, not BEGIN: also inside a read transaction of the caller's (report's moment) */
    if (sqlite3_exec(db, "SAVEPOINT summary_keep; " SUMMARY_TABLES("TEMP "), NULL, NULL, &errmsg) !=
            SQLITE_OK ||
        (in_file && !in_temp &&
         sqlite3_exec(db,
                      "INSERT OR IGNORE INTO temp.retention_snapshots"
                      " SELECT * FROM main.retention_snapshots;"
                      "INSERT OR IGNORE INTO temp.retention_types"
                      " SELECT * FROM main.retention_types;",
                      NULL, NULL, &errmsg) != SQLITE_OK)) {
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_SQLITE, "keeping retained sizes failed: %s",
                    errmsg);
        sqlite3_free(errmsg);
        sqlite3_exec(db, "ROLLBACK TO summary_keep; RELEASE summary_keep", NULL, NULL, NULL);
        return FALSE;
    }
    if (!summary_write(r, db, "temp", error)) {
        sqlite3_exec(db, "ROLLBACK TO summary_keep; RELEASE summary_keep", NULL, NULL, NULL);
        return FALSE;
    }
    sqlite3_exec(db, "RELEASE summary_keep", NULL, NULL, NULL);
    if (!counts_keep_from(r, db, error))
        return FALSE;
    r->refs++;
    g_ptr_array_add(pending_list(db, TRUE), r);
    return TRUE;
}

gboolean retention_commit(sqlite3 *db, const char *path, query_progress *progress, char **note,
                          GError **error)
{
    if (note)
        *note = NULL;
    GPtrArray *pending = pending_list(db, FALSE);
    gboolean counts = FALSE;
    if (!counts_pending(db, &counts, error))
        return FALSE;
    if ((!pending || pending->len == 0) && !counts)
        return TRUE;
    g_autofree char *reason = NULL;
    gboolean ok = file_store(db, pending, counts, path, progress, &reason, error);
    if (pending) /* written, or not to be: their rows are in the file or nowhere */
        g_ptr_array_set_size(pending, 0);
    if (ok)
        return TRUE;
    if (!reason)
        return FALSE;
    if (note)
        *note = g_strdup_printf("note: retained sizes were not stored: %s", reason);
    return TRUE;
}

gboolean retention_ensure(sqlite3 *db, const snapshot_info *info, query_progress *progress,
                          GError **error)
{
    gboolean stored = FALSE;
    if (!retention_is_stored(db, info->snapshot, &stored, error))
        return FALSE;
    if (stored)
        return TRUE;
    g_autoptr(retention) r = retention_compute(db, info, progress, error);
    return r && retention_store(r, db, progress, error);
}

retention *retention_get(sqlite3 *db, const snapshot_info *info, query_progress *progress,
                         GError **error)
{
    retention *r = pending_find(db, info->snapshot);
    if (r) {
        r->refs++;
        return r;
    }
    r = retention_compute(db, info, progress, error);
    if (r && !retention_store(r, db, progress, error))
        g_clear_pointer(&r, retention_free);
    return r;
}

/* The type most of `object_id`'s references point to, when more than half of them do (0: none;
 * an object[] of statics holding a bit of everything has no element type). */
static gboolean referenced_type(sqlite3 *db, int64_t snapshot, int64_t object_id, uint32_t *type_id,
                                GError **error)
{
    gboolean row = FALSE;
    *type_id = 0;
    sqlite3_stmt *stmt = query_db_prepare(
        db,
        /* the object's refs array (one row of snapshot_objects), not the snapshot_refs view;
         * CROSS JOIN keeps that one row outermost: on a recording still being written,
         * `objects` is a view, and with it outside the refs were rebuilt once per object */
        "SELECT o.type_id, COUNT(*) AS n, SUM(COUNT(*)) OVER ()"
        " FROM snapshot_objects so CROSS JOIN json_each(so.refs) r CROSS JOIN objects o"
        " ON o.id = r.value"
        " WHERE so.snapshot = ?1 AND so.object_id = ?2 GROUP BY o.type_id ORDER BY n DESC, 1"
        " LIMIT 1",
        error);
    if (!stmt)
        return FALSE;
    sqlite3_bind_int64(stmt, 1, snapshot);
    sqlite3_bind_int64(stmt, 2, object_id);
    gboolean ok = query_db_step(stmt, &row, error);
    if (ok && row && 2 * sqlite3_column_int64(stmt, 1) > sqlite3_column_int64(stmt, 2))
        *type_id = (uint32_t)sqlite3_column_int64(stmt, 0);
    sqlite3_finalize(stmt);
    return ok;
}

gboolean retention_element_type(sqlite3 *db, int64_t snapshot, int64_t object_id, uint32_t *type_id,
                                GError **error)
{
    gboolean row = FALSE, ok = FALSE;
    sqlite3_stmt *stmt = NULL;
    *type_id = 0;
    stmt = query_db_prepare(db,
                            "SELECT t.flags, t.name FROM objects o JOIN types t ON t.id = o.type_id"
                            " WHERE o.id = ?1",
                            error);
    if (!stmt)
        goto out;
    sqlite3_bind_int64(stmt, 1, object_id);
    if (!query_db_step(stmt, &row, error))
        goto out;
    if (!row) {
        ok = TRUE;
        goto out;
    }
    int64_t flags = sqlite3_column_int64(stmt, 0);
    const char *name = (const char *)sqlite3_column_text(stmt, 1);
    gboolean collection = name && g_str_has_prefix(name, "System.Collections.");
    sqlite3_finalize(stmt);
    stmt = NULL;
    if (flags & HL_TYPE_FLAG_ARRAY) {
        ok = referenced_type(db, snapshot, object_id, type_id, error);
        goto out;
    }
    if (!collection) {
        ok = TRUE;
        goto out;
    }
    /* its largest array */
    stmt = query_db_prepare(db,
                            "SELECT r.value FROM snapshot_objects so CROSS JOIN json_each(so.refs) r"
                            " CROSS JOIN objects o ON o.id = r.value JOIN types t ON t.id = o.type_id"
                            " WHERE so.snapshot = ?1 AND so.object_id = ?2 AND (t.flags & 1) != 0"
                            " ORDER BY o.size DESC, r.value LIMIT 1",
                            error);
    if (!stmt)
        goto out;
    sqlite3_bind_int64(stmt, 1, snapshot);
    sqlite3_bind_int64(stmt, 2, object_id);
    if (!query_db_step(stmt, &row, error))
        goto out;
    ok = !row || referenced_type(db, snapshot, sqlite3_column_int64(stmt, 0), type_id, error);
out:
    sqlite3_finalize(stmt);
    return ok;
}

/* The largest retainers. The partial index retention_large holds the objects retaining at least
 * 64 KiB: when there are K of them, the top K come from it at once; otherwise from a scan. */
#define OBJECTS_SQL(condition)                                                                     \
    "SELECT r.object_id, o.type_id, o.size, r.retained_bytes, r.retained_count"                    \
    " FROM retention r LEFT JOIN objects o ON o.id = r.object_id"                                  \
    " WHERE r.snapshot = ?1" condition " ORDER BY r.retained_bytes DESC, r.object_id LIMIT ?2"

static gboolean large_enough(sqlite3 *db, int64_t snapshot, uint64_t top, gboolean *large,
                             GError **error)
{
    gboolean row = FALSE;
    sqlite3_stmt *stmt = query_db_prepare(db,
                                          "SELECT COUNT(*) FROM (SELECT 1 FROM retention"
                                          " WHERE snapshot = ?1 AND retained_bytes >= 65536"
                                          " LIMIT ?2)",
                                          error);
    if (!stmt)
        return FALSE;
    sqlite3_bind_int64(stmt, 1, snapshot);
    sqlite3_bind_int64(stmt, 2, (int64_t)MIN(top, (uint64_t)INT64_MAX));
    gboolean ok = query_db_step(stmt, &row, error);
    *large = ok && row && (uint64_t)sqlite3_column_int64(stmt, 0) >= top;
    sqlite3_finalize(stmt);
    return ok;
}

/* Whether node a of `r` ranks before node b among the largest retainers: more retained bytes,
 * then the lower id (nodes are in id order). */
static inline gboolean top_before(const uint64_t *rb, uint32_t a, uint32_t b)
{
    return rb[a] > rb[b] || (rb[a] == rb[b] && a < b);
}

/* Moves heap[i] down the heap of `n` nodes whose root is the one ranking last. */
static void top_sift_down(const uint64_t *rb, uint32_t *heap, size_t n, size_t i)
{
    for (;;) {
        size_t last = i, l = 2 * i + 1, r = l + 1;
        if (l < n && top_before(rb, heap[last], heap[l]))
            last = l;
        if (r < n && top_before(rb, heap[last], heap[r]))
            last = r;
        if (last == i)
            return;
        uint32_t t = heap[i];
        heap[i] = heap[last];
        heap[last] = t;
        i = last;
    }
}

/* retention_top_objects of a retention this command computed: the same rows, from its arrays
 * (a heap of the `top` best while passing over the reachable nodes once). */
static GArray *top_objects_pending(sqlite3 *db, const retention *r, uint64_t top,
                                   GError **error)
{
    const snapshot_graph *g = r->graph;
    const uint32_t *idom = an_domtree_idoms(r->tree);
    const uint64_t *rb = an_domtree_retained_bytes(r->tree);
    const uint32_t *rc = an_domtree_retained_counts(r->tree);
    size_t k = (size_t)MIN(top, (uint64_t)an_domtree_reachable(r->tree) - 1), n = 0;
    g_autofree uint32_t *heap = g_new(uint32_t, MAX(k, 1));
    for (uint32_t v = 1; v < g->n && k > 0; v++) {
        if (idom[v] == AN_NONE) /* unreachable: no row */
            continue;
        if (n < k) {
            heap[n++] = v;
            for (size_t i = n - 1; i > 0 && top_before(rb, heap[(i - 1) / 2], heap[i]);
                 i = (i - 1) / 2) {
                uint32_t t = heap[i];
                heap[i] = heap[(i - 1) / 2];
                heap[(i - 1) / 2] = t;
            }
        } else if (top_before(rb, v, heap[0])) {
            heap[0] = v;
            top_sift_down(rb, heap, n, 0);
        }
    }
    GArray *objects = g_array_sized_new(FALSE, FALSE, sizeof(retention_object), (guint)n);
    g_array_set_size(objects, (guint)n);
    for (size_t i = n; i > 0; i--) { /* the last-ranking node leaves the heap first */
        uint32_t v = heap[0];
        heap[0] = heap[i - 1];
        top_sift_down(rb, heap, i - 1, 0);
        g_array_index(objects, retention_object, i - 1) = (retention_object){
            .object = (int64_t)g->ids[v],
            .type_id = g->type_ids[v],
            .shallow_bytes = (int64_t)g->sizes[v],
            .retained_bytes = (int64_t)rb[v],
            .retained_count = rc[v],
        };
    }
    g_autoptr(snapshot_types) types = snapshot_types_new(db, error);
    if (!types) {
        g_array_unref(objects);
        return NULL;
    }
    for (guint i = 0; i < objects->len; i++) {
        retention_object *o = &g_array_index(objects, retention_object, i);
        o->element_type_id = graph_element_type(g, types, snapshot_graph_node(g, (uint64_t)o->object));
    }
    return objects;
}

/* retention_top_objects from the table retention_top, when it holds at least `top` rows of
 * the snapshot (written with its retained sizes by this heaplens; a file stored by an older one
 * has none): *objects NULL otherwise. No `objects` row is read. */
static gboolean top_objects_stored(sqlite3 *db, int64_t snapshot, uint64_t top, GArray **objects,
                                   GError **error)
{
    int64_t exists = 0, n = 0;
    gboolean row = FALSE;
    *objects = NULL;
    if (!query_db_int(db, "SELECT count(*) FROM main.sqlite_schema WHERE name = 'retention_top'",
                      &exists, error))
        return FALSE;
    if (!exists)
        return TRUE;
    sqlite3_stmt *stmt = query_db_prepare(db, "SELECT count(*) FROM (SELECT 1 FROM retention_top"
                                              " WHERE snapshot = ?1 LIMIT ?2)", error);
    if (!stmt)
        return FALSE;
    sqlite3_bind_int64(stmt, 1, snapshot);
    sqlite3_bind_int64(stmt, 2, (int64_t)MIN(top, (uint64_t)INT64_MAX));
    gboolean ok = query_db_step(stmt, &row, error);
    n = ok && row ? sqlite3_column_int64(stmt, 0) : 0;
    sqlite3_finalize(stmt);
    if (!ok || (uint64_t)n < top)
        return ok;
    stmt = query_db_prepare(db, "SELECT object_id, type_id, shallow_bytes, element_type_id,"
                                " retained_bytes, retained_count FROM retention_top"
                                " WHERE snapshot = ?1 ORDER BY retained_bytes DESC, object_id"
                                " LIMIT ?2", error);
    if (!stmt)
        return FALSE;
    sqlite3_bind_int64(stmt, 1, snapshot);
    sqlite3_bind_int64(stmt, 2, (int64_t)MIN(top, (uint64_t)INT64_MAX));
    GArray *rows = g_array_new(FALSE, FALSE, sizeof(retention_object));
    while ((ok = query_db_step(stmt, &row, error)) && row) {
        retention_object o = {
            .object = sqlite3_column_int64(stmt, 0),
            .type_id = (uint32_t)sqlite3_column_int64(stmt, 1),
            .shallow_bytes = sqlite3_column_int64(stmt, 2),
            .element_type_id = (uint32_t)sqlite3_column_int64(stmt, 3),
            .retained_bytes = sqlite3_column_int64(stmt, 4),
            .retained_count = sqlite3_column_int64(stmt, 5),
        };
        g_array_append_val(rows, o);
    }
    sqlite3_finalize(stmt);
    if (!ok) {
        g_array_unref(rows);
        return FALSE;
    }
    *objects = rows;
    return TRUE;
}

GArray *retention_top_objects(sqlite3 *db, int64_t snapshot, uint64_t top, GError **error)
{
    gboolean large = FALSE, row = FALSE;
    GArray *objects = NULL;
    const retention *pending = pending_find(db, snapshot);
    if (pending)
        return top_objects_pending(db, pending, top, error);
    if (!top_objects_stored(db, snapshot, top, &objects, error))
        return NULL;
    if (objects)
        return objects;
    if (!large_enough(db, snapshot, top, &large, error))
        return NULL;
    sqlite3_stmt *stmt = query_db_prepare(
        db, large ? OBJECTS_SQL(" AND r.retained_bytes >= 65536") : OBJECTS_SQL(""), error);
    if (!stmt)
        return NULL;
    sqlite3_bind_int64(stmt, 1, snapshot);
    sqlite3_bind_int64(stmt, 2, (int64_t)MIN(top, (uint64_t)INT64_MAX));
    objects = g_array_new(FALSE, FALSE, sizeof(retention_object));
    while (query_db_step(stmt, &row, error) && row) {
        retention_object o = {
            .object = sqlite3_column_int64(stmt, 0),
            .type_id = sqlite3_column_type(stmt, 1) == SQLITE_NULL
                           ? 0
                           : (uint32_t)sqlite3_column_int64(stmt, 1),
            .shallow_bytes = sqlite3_column_int64(stmt, 2),
            .retained_bytes = sqlite3_column_int64(stmt, 3),
            .retained_count = sqlite3_column_int64(stmt, 4),
        };
        if (!retention_element_type(db, snapshot, o.object, &o.element_type_id, error))
            break;
        g_array_append_val(objects, o);
    }
    sqlite3_finalize(stmt);
    if (error && *error)
        g_clear_pointer(&objects, g_array_unref);
    return objects;
}

gboolean retention_largest_instance(sqlite3 *db, int64_t snapshot, uint32_t type_id,
                                    int64_t *object, GError **error)
{
    gboolean row = FALSE;
    *object = 0;
    const retention *r = pending_find(db, snapshot);
    if (r) { /* the first of the most retaining: ids ascend with the nodes */
        const snapshot_graph *g = r->graph;
        const uint32_t *idom = an_domtree_idoms(r->tree);
        const uint64_t *rb = an_domtree_retained_bytes(r->tree);
        uint32_t best = AN_NONE;
        for (uint32_t v = 1; v < g->n; v++)
            if (g->type_ids[v] == type_id && idom[v] != AN_NONE &&
                (best == AN_NONE || rb[v] > rb[best]))
                best = v;
        if (best != AN_NONE)
            *object = (int64_t)g->ids[best];
        return TRUE;
    }
    sqlite3_stmt *stmt =
        query_db_prepare(db,
                         "SELECT r.object_id FROM retention r JOIN objects o ON o.id = r.object_id"
                         " WHERE r.snapshot = ?1 AND o.type_id = ?2"
                         " ORDER BY r.retained_bytes DESC, r.object_id LIMIT 1",
                         error);
    if (!stmt)
        return FALSE;
    sqlite3_bind_int64(stmt, 1, snapshot);
    sqlite3_bind_int64(stmt, 2, type_id);
    gboolean ok = query_db_step(stmt, &row, error);
    if (ok && row)
        *object = sqlite3_column_int64(stmt, 0);
    sqlite3_finalize(stmt);
    return ok;
}

json_t *retention_object_json(const retention_object *o, const snapshot_types *types)
{
    char name_buf[QUERY_FORMAT_MAX], element_buf[QUERY_FORMAT_MAX];
    const char *element =
        o->element_type_id ? snapshot_types_name(types, o->element_type_id, element_buf) : NULL;
    return json_pack("{s:I, s:o, s:o, s:I, s:I, s:I}", "object", (json_int_t)o->object, "type",
                     query_json_string(snapshot_types_name(types, o->type_id, name_buf)),
                     "element_type", query_json_string(element), "retained_bytes",
                     (json_int_t)o->retained_bytes, "retained_count",
                     (json_int_t)o->retained_count, "shallow_bytes", (json_int_t)o->shallow_bytes);
}

static gboolean summary_read(sqlite3 *db, int64_t snapshot, retention_summary *s, GError **error)
{
    gboolean row = FALSE;
    sqlite3_stmt *stmt = query_db_prepare(db,
                                          "SELECT objects, reachable, reachable_bytes, root_edges,"
                                          " unresolved_refs FROM retention_snapshots"
                                          " WHERE snapshot = ?1",
                                          error);
    if (!stmt)
        return FALSE;
    sqlite3_bind_int64(stmt, 1, snapshot);
    gboolean ok = query_db_step(stmt, &row, error);
    if (ok && row) {
        s->objects = sqlite3_column_int64(stmt, 0);
        s->reachable = sqlite3_column_int64(stmt, 1);
        s->reachable_bytes = sqlite3_column_int64(stmt, 2);
        s->root_edges = sqlite3_column_int64(stmt, 3);
        s->unresolved_refs = sqlite3_column_int64(stmt, 4);
    }
    sqlite3_finalize(stmt);
    return ok;
}

static void type_row_read(sqlite3_stmt *stmt, void *row)
{
    *(retention_type_row *)row = (retention_type_row){
        .type_id = (uint32_t)sqlite3_column_int64(stmt, 0),
        .count = sqlite3_column_int64(stmt, 1),
        .shallow_bytes = sqlite3_column_int64(stmt, 2),
        .retained_bytes = sqlite3_column_int64(stmt, 3),
        .retained_count = sqlite3_column_int64(stmt, 4),
    };
}

static GArray *top_types_read(sqlite3 *db, int64_t snapshot, uint64_t top, GError **error)
{
    sqlite3_stmt *stmt = query_db_prepare(db,
                                          "SELECT type_id, count, shallow_bytes, retained_bytes,"
                                          " retained_count FROM retention_types WHERE snapshot = ?1"
                                          " ORDER BY retained_bytes DESC, type_id LIMIT ?2",
                                          error);
    if (stmt) {
        sqlite3_bind_int64(stmt, 1, snapshot);
        sqlite3_bind_int64(stmt, 2, (int64_t)MIN(top, (uint64_t)INT64_MAX));
    }
    return query_db_rows_read(stmt, sizeof(retention_type_row), type_row_read, NULL, error);
}

gboolean retention_top_read(sqlite3 *db, const char *path, const char *snapshot_text,
                            uint64_t top, gboolean by_type, query_progress *progress,
                            retention_top *t, GError **error)
{
    memset(t, 0, sizeof *t);
    if (!snapshot_pick(db, path, "retention", "snapshot", snapshot_text, &t->info, error) ||
        !retention_ensure(db, &t->info, progress, error))
        return FALSE;
    if (!summary_read(db, t->info.snapshot, &t->summary, error))
        return FALSE;
    t->types = snapshot_types_new(db, error);
    if (!t->types)
        return FALSE;
    t->rows = by_type ? top_types_read(db, t->info.snapshot, top, error)
                      : retention_top_objects(db, t->info.snapshot, top, error);
    return t->rows != NULL;
}

void retention_top_clear(retention_top *t)
{
    g_clear_pointer(&t->types, snapshot_types_free);
    g_clear_pointer(&t->rows, g_array_unref);
}
