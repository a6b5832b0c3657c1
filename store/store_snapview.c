/* store_snapview.c — snapshot_objects for heaplens' own statements on a schema 8 file.
 *
 * The file's view snapshot_objects unpacks snapshot_blocks in SQL alone (json_each, window sums:
 * store_schema.c), so that plain sqlite3 reads it; it decodes whole snapshots even for one object.
 * heaplens' connections get a TEMP virtual table of the same name and columns, which SQLite finds
 * before the file's view for unqualified names in the connection's own statements (the file's
 * other views keep using the file's view): the same rows, decoded in C (store_snapblock.c), and a
 * point lookup (snapshot = ? AND object_id = ?) reads one block. The file's views over it
 * (snapshot_refs, snapshot_ref_fields, snapshot_contents) get TEMP copies over the virtual table.
 *
 *   xBestIndex  snapshot = ? (idxNum bit 1), object_id = ? (bit 2); rows come ordered by
 *               (snapshot, object_id); a scan that reads neither refs nor fields (bit 4 clear)
 *               reads and decodes neither (most of a block's text: a scan of ids and
 *               generations costs a third as much; nor does it check them)
 *   xFilter     the snapshots (one, or all), per snapshot its blocks in id order (or the one
 *               block that may hold the object)
 *   xColumn     refs and fields rebuilt as the JSON text of schema 7's table
 */
#include "store/store_internal.h"

/* Statements of a cursor, prepared at its first use and reused by every later xFilter (a join
 * filters once per outer row). */
enum {
    SNAPVIEW_SNAPSHOT,
    SNAPVIEW_SNAPSHOTS,
    SNAPVIEW_BLOCKS,
    SNAPVIEW_BLOCK_OF,
    SNAPVIEW_BLOCKS_SHORT,   /* the same without refs and fields (NULL) */
    SNAPVIEW_BLOCK_OF_SHORT,
    SNAPVIEW_STMTS
};
#define SNAPVIEW_SHORT (SNAPVIEW_BLOCKS_SHORT - SNAPVIEW_BLOCKS)

/* idxNum: which constraints xFilter gets, and whether refs or fields are read. */
#define SNAPVIEW_IDX_SNAPSHOT 1
#define SNAPVIEW_IDX_OBJECT 2
#define SNAPVIEW_IDX_REFS 4

static const char *const store_snapview_sql[SNAPVIEW_STMTS] = {
    [SNAPVIEW_SNAPSHOT] = "SELECT snapshot FROM snapshots WHERE snapshot = ?1",
    [SNAPVIEW_SNAPSHOTS] = "SELECT snapshot FROM snapshots ORDER BY snapshot",
    [SNAPVIEW_BLOCKS] = STORE_SNAPBLOCKS_SQL,
    [SNAPVIEW_BLOCK_OF] = "SELECT first_id, objects, ids, kinds, refs, fields FROM snapshot_blocks"
                          " INDEXED BY snapshot_blocks_by_id WHERE first_id <= ?2"
                          " AND last_snapshot >= ?1 AND first_snapshot <= ?1"
                          " ORDER BY first_id DESC LIMIT 1",
    [SNAPVIEW_BLOCKS_SHORT] = "SELECT first_id, objects, ids, kinds, NULL, NULL FROM snapshot_blocks"
                              " WHERE last_snapshot >= ?1 AND first_snapshot <= ?1"
                              " ORDER BY first_id",
    [SNAPVIEW_BLOCK_OF_SHORT] = "SELECT first_id, objects, ids, kinds, NULL, NULL"
                                " FROM snapshot_blocks INDEXED BY snapshot_blocks_by_id"
                                " WHERE first_id <= ?2 AND last_snapshot >= ?1"
                                " AND first_snapshot <= ?1 ORDER BY first_id DESC LIMIT 1",
};

typedef struct store_snapview_cursor {
    sqlite3_vtab_cursor base;
    sqlite3 *db;
    sqlite3_stmt *stmt[SNAPVIEW_STMTS];
    sqlite3_stmt *snapshots; /* the snapshots to read: stmt[SNAPVIEW_SNAPSHOT(S)] or NULL */
    sqlite3_stmt *blocks;    /* the current snapshot's blocks: stmt[...] or NULL */
    int64_t snapshot;
    gboolean one_object;
    uint64_t object_id;
    store_snapblock b;
    int64_t b_snapshot; /* b is a block of this snapshot (0: b holds nothing) */
    gboolean refs;      /* the scan reads refs or fields: b decodes them */
    gboolean b_refs;    /* b holds them */
    uint32_t k; /* the current object of b */
    gboolean eof;
    int64_t rowid;
    GString *text;
} store_snapview_cursor;

static int store_snapview_connect(sqlite3 *db, void *aux, int argc, const char *const *argv,
                                  sqlite3_vtab **out, char **err)
{
    (void)aux, (void)argc, (void)argv, (void)err;
    return store_vtab_declare(db, NULL, "CREATE TABLE x(snapshot INTEGER, object_id INTEGER,"
                                  " generation INTEGER, flags INTEGER, refs TEXT,"
                                  " fields TEXT, ref_fields TEXT HIDDEN)", out);
}

static int store_snapview_best_index(sqlite3_vtab *vt, sqlite3_index_info *info)
{
    (void)vt;
    int snap, obj;
    store_vtab_key_constraints(info, &snap, &obj);
    int argv = 1;
    /* columns 4 (refs), 5 (fields) and 6 (ref_fields); bit 63 stands for every column past it */
    info->idxNum = info->colUsed & (7ull << 4 | 1ull << 63) ? SNAPVIEW_IDX_REFS : 0;
    if (snap >= 0) {
        info->idxNum |= SNAPVIEW_IDX_SNAPSHOT;
        info->aConstraintUsage[snap].argvIndex = argv++;
        info->aConstraintUsage[snap].omit = 1;
    }
    if (obj >= 0) {
        info->idxNum |= SNAPVIEW_IDX_OBJECT;
        info->aConstraintUsage[obj].argvIndex = argv++;
        info->aConstraintUsage[obj].omit = 1;
    }
    /* A snapshot's objects are estimated as schema 7's table estimated them, by SQLite's default
     * for an equality on the first column of its key (snapshot, object_id): 10 rows. So a join
     * scans the snapshot and looks the other tables up, as it did on schema 7, instead of
     * scanning `objects` and looking each object up here (a block decoded per lookup: the
     * plan a million-object estimate made SQLite choose, 1.5x the CPU of `inspect`). */
    info->estimatedCost = snap >= 0 && obj >= 0 ? 10.0 : obj >= 0 ? 100.0 : snap >= 0 ? 30.0 : 1e7;
    info->estimatedRows = obj >= 0 ? 1 : snap >= 0 ? 10 : 10000000;
    if (obj >= 0 && snap >= 0)
        info->idxFlags = SQLITE_INDEX_SCAN_UNIQUE;
    /* rows come by (snapshot, object_id), ascending: ORDER BY snapshot[, object_id], or
     * object_id alone for one snapshot */
    gboolean ordered = info->nOrderBy > 0 && info->nOrderBy <= 2;
    int first = info->nOrderBy == 1 && info->aOrderBy[0].iColumn == 1 && snap >= 0 ? 1 : 0;
    for (int i = 0; ordered && i < info->nOrderBy; i++)
        ordered = info->aOrderBy[i].iColumn == first + i && !info->aOrderBy[i].desc;
    info->orderByConsumed = ordered;
    return SQLITE_OK;
}

static int store_snapview_open(sqlite3_vtab *vt, sqlite3_vtab_cursor **out)
{
    store_snapview_cursor *c = sqlite3_malloc(sizeof *c);
    if (!c)
        return SQLITE_NOMEM;
    memset(c, 0, sizeof *c);
    c->db = ((store_vtab *)vt)->db;
    c->text = g_string_sized_new(256);
    *out = &c->base;
    return SQLITE_OK;
}

static void store_snapview_reset(store_snapview_cursor *c)
{
    if (c->snapshots)
        sqlite3_reset(c->snapshots);
    if (c->blocks)
        sqlite3_reset(c->blocks);
    c->snapshots = c->blocks = NULL;
    c->eof = TRUE;
}

/* The statement `id`, prepared once; NULL with the vtab's message set. */
static sqlite3_stmt *store_snapview_stmt(store_snapview_cursor *c, int id)
{
    if (!c->stmt[id] &&
        sqlite3_prepare_v3(c->db, store_snapview_sql[id], -1, SQLITE_PREPARE_PERSISTENT,
                           &c->stmt[id], NULL) != SQLITE_OK) {
        sqlite3_free(c->base.pVtab->zErrMsg);
        c->base.pVtab->zErrMsg = sqlite3_mprintf("%s", sqlite3_errmsg(c->db));
        c->stmt[id] = NULL;
    }
    return c->stmt[id];
}

static int store_snapview_close(sqlite3_vtab_cursor *cur)
{
    store_snapview_cursor *c = (store_snapview_cursor *)cur;
    store_snapview_reset(c);
    for (int i = 0; i < SNAPVIEW_STMTS; i++)
        sqlite3_finalize(c->stmt[i]);
    store_snapblock_clear(&c->b);
    g_string_free(c->text, TRUE);
    sqlite3_free(c);
    return SQLITE_OK;
}

static int store_snapview_error(store_snapview_cursor *c, const char *message)
{
    sqlite3_free(c->base.pVtab->zErrMsg);
    c->base.pVtab->zErrMsg = sqlite3_mprintf("%s", message);
    return SQLITE_ERROR;
}

/* Object `c->object_id` in block b: c->k at it, TRUE; FALSE when b does not hold it. */
static gboolean store_snapview_find(store_snapview_cursor *c)
{
    uint32_t lo = hl_ids_lower_bound(c->b.ids, 0, c->b.n, c->object_id);
    c->k = lo;
    return lo < c->b.n && c->b.ids[lo] == c->object_id;
}

/* Moves to the next object: the next of the block, the next block's first, the next snapshot's
 * first block's first. */
static int store_snapview_advance(store_snapview_cursor *c)
{
    GError *error = NULL;
    for (;;) {
        if (c->blocks && c->k + 1 < c->b.n && !c->one_object) {
            c->k++;
            return SQLITE_OK;
        }
        if (c->blocks) {
            int rc = sqlite3_step(c->blocks);
            if (rc == SQLITE_ROW) {
                c->b_snapshot = 0;
                if (!store_snapblock_decode_row(&c->b, c->blocks, &error)) {
                    rc = store_snapview_error(c, error->message);
                    g_error_free(error);
                    return rc;
                }
                c->b_snapshot = c->snapshot;
                c->b_refs = c->refs;
                if (!c->one_object) {
                    c->k = 0;
                    return SQLITE_OK;
                }
                if (store_snapview_find(c))
                    return SQLITE_OK;
                continue; /* LIMIT 1: the statement ends next */
            }
            if (rc != SQLITE_DONE)
                return store_snapview_error(c, sqlite3_errmsg(c->db));
            sqlite3_reset(c->blocks);
            c->blocks = NULL;
        }
        if (!c->snapshots) { /* the one snapshot was read already */
            c->eof = TRUE;
            return SQLITE_OK;
        }
        int rc = sqlite3_step(c->snapshots);
        if (rc == SQLITE_DONE) {
            c->eof = TRUE;
            return SQLITE_OK;
        }
        if (rc != SQLITE_ROW)
            return store_snapview_error(c, sqlite3_errmsg(c->db));
        c->snapshot = sqlite3_column_int64(c->snapshots, 0);
        /* one object of a snapshot whose block that may hold it is decoded already (lookups
         * in id order: the next one is often in the same block) */
        if (c->one_object && c->b_snapshot == c->snapshot && c->b.n > 0 &&
            (c->b_refs || !c->refs) &&
            c->b.ids[0] <= c->object_id && c->object_id <= c->b.ids[c->b.n - 1]) {
            if (store_snapview_find(c))
                return SQLITE_OK; /* c->blocks NULL: xNext moves on to the next snapshot */
            continue;
        }
        c->blocks = store_snapview_stmt(c, (c->one_object ? SNAPVIEW_BLOCK_OF : SNAPVIEW_BLOCKS) +
                                               (c->refs ? 0 : SNAPVIEW_SHORT));
        if (!c->blocks)
            return SQLITE_ERROR;
        sqlite3_bind_int64(c->blocks, 1, c->snapshot);
        if (c->one_object)
            sqlite3_bind_int64(c->blocks, 2, (int64_t)MIN(c->object_id, (uint64_t)INT64_MAX));
        c->k = 0;
        if (!c->one_object)
            c->b.n = 0;
    }
}

static int store_snapview_filter(sqlite3_vtab_cursor *cur, int idx_num, const char *idx_str,
                                 int argc, sqlite3_value **argv)
{
    (void)idx_str;
    (void)argc;
    store_snapview_cursor *c = (store_snapview_cursor *)cur;
    store_snapview_reset(c);
    c->eof = FALSE;
    c->rowid = 0;
    int a = 0;
    sqlite3_value *snapshot = idx_num & SNAPVIEW_IDX_SNAPSHOT ? argv[a++] : NULL;
    sqlite3_value *object = idx_num & SNAPVIEW_IDX_OBJECT ? argv[a++] : NULL;
    /* a plan's cursor keeps its columns: the block decoded last has what this one reads */
    c->refs = (idx_num & SNAPVIEW_IDX_REFS) != 0;
    c->one_object = object != NULL;
    if (object) {
        /* an id that is not a positive integer (9.0 is 9, as SQLite compares) is no object's */
        int type = sqlite3_value_numeric_type(object);
        double real = type == SQLITE_FLOAT ? sqlite3_value_double(object) : 0;
        int64_t v = type == SQLITE_INTEGER ? sqlite3_value_int64(object)
                    : type == SQLITE_FLOAT && real >= 1 && real < 9.2e18 && real == (double)(int64_t)real
                        ? (int64_t)real
                        : 0;
        if (v <= 0) {
            c->eof = TRUE;
            return SQLITE_OK;
        }
        c->object_id = (uint64_t)v;
    }
    /* one object of the snapshot of the block decoded last, in its range: no statement at all
     * (a join looks objects up one by one, often in id order) */
    if (object && snapshot && c->b_snapshot != 0 && (c->b_refs || !c->refs) &&
        sqlite3_value_numeric_type(snapshot) == SQLITE_INTEGER &&
        sqlite3_value_int64(snapshot) == c->b_snapshot && c->b.n > 0 &&
        c->b.ids[0] <= c->object_id && c->object_id <= c->b.ids[c->b.n - 1]) {
        c->snapshot = c->b_snapshot;
        c->eof = !store_snapview_find(c);
        return SQLITE_OK;
    }
    c->snapshots = store_snapview_stmt(c, snapshot ? SNAPVIEW_SNAPSHOT : SNAPVIEW_SNAPSHOTS);
    if (!c->snapshots)
        return SQLITE_ERROR;
    if (snapshot)
        sqlite3_bind_value(c->snapshots, 1, snapshot);
    return store_snapview_advance(c);
}

static int store_snapview_next(sqlite3_vtab_cursor *cur)
{
    store_snapview_cursor *c = (store_snapview_cursor *)cur;
    c->rowid++;
    if (c->one_object) /* the one object is the only row of its snapshot */
        c->k = c->b.n;
    return store_snapview_advance(c);
}

static int store_snapview_eof(sqlite3_vtab_cursor *cur)
{
    return ((store_snapview_cursor *)cur)->eof;
}

/* Object k's references with their fields, "[[12,0],[7,null]]": the hidden column ref_fields,
 * which the TEMP snapshot_ref_fields reads in one pass (the file's view looks each field up in
 * `fields` by the reference's index: quadratic in an array's length). */
static void store_snapview_ref_fields_json(const store_snapblock *b, uint32_t k, GString *out)
{
    g_string_truncate(out, 0);
    g_string_append_c(out, '[');
    for (uint32_t i = b->ref_start[k]; i < b->ref_start[k + 1]; i++) {
        g_string_append(out, i > b->ref_start[k] ? ",[" : "[");
        store_append_u64(out, b->to[i]);
        if (!b->field_known[k] || b->field[i] < 0)
            g_string_append(out, ",null]");
        else {
            g_string_append_c(out, ',');
            store_append_u64(out, (uint64_t)b->field[i]);
            g_string_append_c(out, ']');
        }
    }
    g_string_append_c(out, ']');
}

static int store_snapview_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int col)
{
    store_snapview_cursor *c = (store_snapview_cursor *)cur;
    const store_snapblock *b = &c->b;
    uint32_t k = c->k;
    switch (col) {
    case 0:
        sqlite3_result_int64(ctx, c->snapshot);
        break;
    case 1:
        sqlite3_result_int64(ctx, (int64_t)b->ids[k]);
        break;
    case 2:
        if (b->generation[k] < 0)
            sqlite3_result_null(ctx);
        else
            sqlite3_result_int(ctx, b->generation[k]);
        break;
    case 3:
        sqlite3_result_int(ctx, b->flags[k]);
        break;
    case 4:
        if (b->ref_start[k] == b->ref_start[k + 1]) {
            sqlite3_result_null(ctx);
        } else {
            store_snapblock_refs_json(b, k, c->text);
            sqlite3_result_text(ctx, c->text->str, (int)c->text->len, SQLITE_TRANSIENT);
        }
        break;
    case 6:
        if (b->ref_start[k] == b->ref_start[k + 1]) {
            sqlite3_result_null(ctx);
        } else {
            store_snapview_ref_fields_json(b, k, c->text);
            sqlite3_result_text(ctx, c->text->str, (int)c->text->len, SQLITE_TRANSIENT);
        }
        break;
    default:
        if (!b->field_known[k]) {
            sqlite3_result_null(ctx);
        } else {
            store_snapblock_fields_json(b, k, c->text);
            sqlite3_result_text(ctx, c->text->str, (int)c->text->len, SQLITE_TRANSIENT);
        }
        break;
    }
    return SQLITE_OK;
}

static int store_snapview_rowid(sqlite3_vtab_cursor *cur, sqlite3_int64 *rowid)
{
    *rowid = ((store_snapview_cursor *)cur)->rowid;
    return SQLITE_OK;
}

static const sqlite3_module store_snapview_module = {
    .iVersion = 0,
    .xCreate = store_snapview_connect,
    .xConnect = store_snapview_connect,
    .xBestIndex = store_snapview_best_index,
    .xDisconnect = store_vtab_disconnect,
    .xDestroy = store_vtab_disconnect,
    .xOpen = store_snapview_open,
    .xClose = store_snapview_close,
    .xFilter = store_snapview_filter,
    .xNext = store_snapview_next,
    .xEof = store_snapview_eof,
    .xColumn = store_snapview_column,
    .xRowid = store_snapview_rowid,
};

gboolean store_snapshot_view_attach(sqlite3 *db, GError **error)
{
    if (!store_snapshot_blocks_present(db))
        return TRUE;
    sqlite3_stmt *st = NULL;
    gboolean there = FALSE;
    if (sqlite3_prepare_v2(db, "SELECT 1 FROM temp.sqlite_master WHERE name = 'snapshot_objects'",
                           -1, &st, NULL) == SQLITE_OK)
        there = sqlite3_step(st) == SQLITE_ROW;
    sqlite3_finalize(st);
    if (there)
        return TRUE; /* attached already */
    char *msg = NULL;
    /* the file's views over snapshot_objects would read the file's view: TEMP copies of them
     * read the virtual table (the same text, TEMP) */
    g_auto(GStrv) parts = g_strsplit(store_schema_snapshot_views, "CREATE VIEW ", -1);
    g_autofree char *temp = g_strjoinv("CREATE TEMP VIEW ", parts);
    /* snapshot_ref_fields' references and fields from ref_fields, pair by pair */
    g_auto(GStrv) halves = g_strsplit(temp, STORE_REF_FIELDS_SOURCE, -1);
    if (g_strv_length(halves) != 2) { /* the fragment is store_schema.c's, once */
        g_set_error(error, STORE_ERROR, STORE_ERROR_SQLITE,
                    "reading snapshots: snapshot_ref_fields has no reference source to replace");
        return FALSE;
    }
    g_autofree char *views = g_strjoinv(STORE_REF_FIELDS_SOURCE_PAIRS, halves);
    if (sqlite3_create_module(db, "heaplens_snapshot_objects", &store_snapview_module, NULL) !=
            SQLITE_OK ||
        sqlite3_exec(db,
                     "CREATE VIRTUAL TABLE temp.snapshot_objects USING heaplens_snapshot_objects",
                     NULL, NULL, &msg) != SQLITE_OK ||
        sqlite3_exec(db, views, NULL, NULL, &msg) != SQLITE_OK) {
        g_set_error(error, STORE_ERROR, STORE_ERROR_SQLITE, "reading snapshots: %s",
                    msg ? msg : sqlite3_errmsg(db));
        sqlite3_free(msg);
        return FALSE;
    }
    return TRUE;
}
