/* store_retblock.c — retained sizes packed per block (SCHEMA.md "retention_blocks"; store.h).
 *
 * `heaplens retention` stores one row per reachable object of a snapshot (its immediate
 * dominator, retained bytes and count): a million B-tree inserts for a million objects, 21
 * bytes each in the file. Packed, a block of up to STORE_RETBLOCK_OBJECTS objects consecutive
 * in id order is one row of four JSON arrays (ids as gaps, dominators as differences from the
 * object's id, retained bytes and counts as numbers): a few characters per value, one insert
 * per block. JSON text rather than a binary form, so that the view `retention` (store.h
 * STORE_RETBLOCKS_DDL) gives the rows in SQL alone.
 *
 * heaplens' own connections read the blocks here instead, through a TEMP virtual table named
 * `retention` with the view's columns:
 *
 *   xBestIndex  snapshot = ? (idxNum bit 1), object_id = ? (bit 2); rows come in (snapshot,
 *               object_id) order; the constraints are not omitted (SQLite checks each row
 *               again: a value of another type is only a looser bound here)
 *   xFilter     the snapshot's blocks (or every block) in key order; for one object, per
 *               snapshot the one block that may hold it (the largest first_id at or below it)
 *   xColumn     the decoded values
 */
#include "store/store_internal.h"

#include <inttypes.h>
#include <math.h>

/* The most objects a block may have when read (the writer writes at most
 * STORE_RETBLOCK_OBJECTS). */
#define STORE_RETBLOCK_MAX_READ 65536

static void store_retblock_append_i64(GString *out, int64_t v)
{
    if (v < 0) {
        g_string_append_c(out, '-');
        store_append_u64(out, (uint64_t)0 - (uint64_t)v);
    } else {
        store_append_u64(out, (uint64_t)v);
    }
}

void store_retblock_bind(sqlite3_stmt *insert, int64_t snapshot, const store_retblock *b,
                         GString *ids, GString *idoms, GString *bytes, GString *counts)
{
    GString *out[4] = {ids, idoms, bytes, counts};
    for (int i = 0; i < 4; i++)
        g_string_assign(out[i], "[");
    for (uint32_t k = 0; k < b->n; k++) {
        if (k > 0)
            for (int i = 0; i < 4; i++)
                g_string_append_c(out[i], ',');
        store_append_u64(ids, k == 0 ? 0 : b->ids[k] - b->ids[k - 1]);
        /* ids are below 2^63: the difference fits */
        store_retblock_append_i64(idoms, b->idoms[k] == 0 ? 0
                                                          : (int64_t)b->ids[k] - (int64_t)b->idoms[k]);
        store_append_u64(bytes, b->bytes[k]);
        store_append_u64(counts, b->counts[k]);
    }
    for (int i = 0; i < 4; i++)
        g_string_append_c(out[i], ']');
    sqlite3_bind_int64(insert, 1, snapshot);
    sqlite3_bind_int64(insert, 2, (int64_t)b->ids[0]);
    sqlite3_bind_int64(insert, 3, b->n);
    for (int i = 0; i < 4; i++)
        sqlite3_bind_text(insert, 4 + i, out[i]->str, (int)out[i]->len, SQLITE_STATIC);
}

void store_retblock_clear(store_retblock *b)
{
    g_free(b->ids);
    g_free(b->idoms);
    g_free(b->bytes);
    g_free(b->counts);
    memset(b, 0, sizeof *b);
}

/* The array `text` of n integers into out[] (each checked by the caller). */
static gboolean store_retblock_array(const char *text, size_t len, uint32_t n, int64_t *out)
{
    store_json_cursor c = {text, text + len};
    if (!text || !store_json_char(&c, '['))
        return FALSE;
    for (uint32_t k = 0; k < n; k++)
        if ((k > 0 && !store_json_char(&c, ',')) || !store_json_int(&c, &out[k]))
            return FALSE;
    return store_json_char(&c, ']') && (store_json_space(&c), c.p == c.end);
}

gboolean store_retblock_decode_row(store_retblock *b, sqlite3_stmt *stmt, GError **error)
{
    int64_t first = sqlite3_column_int64(stmt, 0), objects = sqlite3_column_int64(stmt, 1);
    if (sqlite3_column_type(stmt, 0) != SQLITE_INTEGER || first <= 0 ||
        sqlite3_column_type(stmt, 1) != SQLITE_INTEGER || objects <= 0 ||
        objects > STORE_RETBLOCK_MAX_READ)
        return store_block_damaged(error, "retention", first, "a first id or count");
    uint32_t n = (uint32_t)objects;
    if (n > b->cap) {
        b->cap = n;
        b->ids = g_renew(uint64_t, b->ids, n);
        b->idoms = g_renew(uint64_t, b->idoms, n);
        b->bytes = g_renew(uint64_t, b->bytes, n);
        b->counts = g_renew(uint64_t, b->counts, n);
    }
    b->n = n;
    static const char *const names[4] = {"ids", "idoms", "bytes", "counts"};
    uint64_t *const arrays[4] = {b->ids, b->idoms, b->bytes, b->counts};
    for (int i = 0; i < 4; i++) {
        /* text first, then its length (SQLite's documented order); values read in place */
        const char *text = sqlite3_column_type(stmt, 2 + i) == SQLITE_TEXT
                               ? (const char *)sqlite3_column_text(stmt, 2 + i)
                               : NULL;
        size_t len = (size_t)sqlite3_column_bytes(stmt, 2 + i);
        if (!store_retblock_array(text, len, n, (int64_t *)(void *)arrays[i]))
            return store_block_damaged(error, "retention", first, names[i]);
    }
    int64_t *v = (int64_t *)(void *)b->ids;
    uint64_t id = (uint64_t)first;
    for (uint32_t k = 0; k < n; k++) {
        int64_t gap = v[k];
        if ((k == 0 ? gap != 0 : gap <= 0) || (uint64_t)gap > (uint64_t)INT64_MAX - id)
            return store_block_damaged(error, "retention", first, "ids");
        id += (uint64_t)gap;
        b->ids[k] = id;
        int64_t d = (int64_t)b->idoms[k], bytes = (int64_t)b->bytes[k],
                count = (int64_t)b->counts[k];
        /* the dominator: a positive id other than the object's */
        if (d != 0 && (d >= (int64_t)id || (d < 0 && (uint64_t)-d > (uint64_t)INT64_MAX - id)))
            return store_block_damaged(error, "retention", first, "idoms");
        b->idoms[k] = d == 0 ? 0 : (uint64_t)((int64_t)id - d);
        if (bytes < 0 || count < 1)
            return store_block_damaged(error, "retention", first,
                                       bytes < 0 ? "bytes" : "counts");
    }
    return TRUE;
}

/* ---- the TEMP virtual table `retention` ---------------------------------------------------- */

#define RETVIEW_IDX_SNAPSHOT 1
#define RETVIEW_IDX_OBJECT 2

#define RETVIEW_COLUMNS "first_id, objects, ids, idoms, bytes, counts, snapshot"

enum {
    RETVIEW_ALL,       /* every block, in key order */
    RETVIEW_SNAPSHOT,  /* one snapshot's blocks */
    RETVIEW_SNAPSHOTS, /* the snapshots that have blocks */
    RETVIEW_ONE,       /* the snapshot ?1 alone */
    RETVIEW_BLOCK_OF,  /* the block of snapshot ?1 that may hold object ?2 */
    RETVIEW_STMTS
};

static const char *const store_retview_sql[RETVIEW_STMTS] = {
    [RETVIEW_ALL] = "SELECT " RETVIEW_COLUMNS " FROM retention_blocks ORDER BY snapshot, first_id",
    [RETVIEW_SNAPSHOT] = "SELECT " RETVIEW_COLUMNS " FROM retention_blocks WHERE snapshot = ?1"
                         " ORDER BY first_id",
    [RETVIEW_SNAPSHOTS] = "SELECT DISTINCT snapshot FROM retention_blocks ORDER BY snapshot",
    [RETVIEW_ONE] = "SELECT ?1",
    [RETVIEW_BLOCK_OF] = "SELECT " RETVIEW_COLUMNS " FROM retention_blocks WHERE snapshot = ?1"
                         " AND first_id <= ?2 ORDER BY first_id DESC LIMIT 1",
};

typedef struct store_retview_cursor {
    sqlite3_vtab_cursor base;
    sqlite3 *db;
    sqlite3_stmt *stmt[RETVIEW_STMTS];
    sqlite3_stmt *blocks;    /* the blocks read in turn, or NULL (one object) */
    sqlite3_stmt *snapshots; /* one object: the snapshots to look it up in */
    uint64_t object_id;
    store_retblock b;
    int64_t b_snapshot;
    uint32_t k;
    gboolean eof;
    int64_t rowid;
} store_retview_cursor;

static int store_retview_connect(sqlite3 *db, void *aux, int argc, const char *const *argv,
                                 sqlite3_vtab **out, char **err)
{
    (void)aux, (void)argc, (void)argv, (void)err;
    return store_vtab_declare(db, NULL, "CREATE TABLE x(snapshot INTEGER, object_id INTEGER,"
                                  " idom_id INTEGER, retained_bytes INTEGER,"
                                  " retained_count INTEGER)", out);
}

static int store_retview_best_index(sqlite3_vtab *vt, sqlite3_index_info *info)
{
    (void)vt;
    int snap, obj, argv = 1;
    store_vtab_key_constraints(info, &snap, &obj);
    info->idxNum = 0;
    if (snap >= 0) {
        info->idxNum |= RETVIEW_IDX_SNAPSHOT;
        info->aConstraintUsage[snap].argvIndex = argv++;
    }
    if (obj >= 0) {
        info->idxNum |= RETVIEW_IDX_OBJECT;
        info->aConstraintUsage[obj].argvIndex = argv++;
    }
    /* as the table's key (snapshot, object_id) was estimated by SQLite's defaults */
    info->estimatedCost = snap >= 0 && obj >= 0 ? 10.0 : obj >= 0 ? 100.0 : snap >= 0 ? 1e4 : 1e7;
    info->estimatedRows = obj >= 0 ? 1 : snap >= 0 ? 10000 : 10000000;
    if (obj >= 0 && snap >= 0)
        info->idxFlags = SQLITE_INDEX_SCAN_UNIQUE;
    gboolean ordered = info->nOrderBy >= 1 && info->nOrderBy <= 2;
    for (int i = 0; ordered && i < info->nOrderBy; i++)
        ordered = info->aOrderBy[i].iColumn == i && !info->aOrderBy[i].desc;
    info->orderByConsumed = ordered;
    return SQLITE_OK;
}

static int store_retview_open(sqlite3_vtab *vt, sqlite3_vtab_cursor **out)
{
    store_retview_cursor *c = g_new0(store_retview_cursor, 1);
    c->db = ((store_vtab *)vt)->db;
    *out = &c->base;
    return SQLITE_OK;
}

static int store_retview_close(sqlite3_vtab_cursor *cur)
{
    store_retview_cursor *c = (store_retview_cursor *)cur;
    for (int i = 0; i < RETVIEW_STMTS; i++)
        sqlite3_finalize(c->stmt[i]);
    store_retblock_clear(&c->b);
    g_free(c);
    return SQLITE_OK;
}

static int store_retview_fail(store_retview_cursor *c, const char *message)
{
    sqlite3_free(c->base.pVtab->zErrMsg);
    c->base.pVtab->zErrMsg = sqlite3_mprintf("%s", message);
    return SQLITE_ERROR;
}

/* Statement i of the cursor, prepared on first use, reset. */
static sqlite3_stmt *store_retview_stmt(store_retview_cursor *c, int i)
{
    if (!c->stmt[i] && sqlite3_prepare_v2(c->db, store_retview_sql[i], -1, &c->stmt[i], NULL) !=
                           SQLITE_OK) {
        sqlite3_finalize(c->stmt[i]);
        c->stmt[i] = NULL;
        return NULL;
    }
    sqlite3_reset(c->stmt[i]);
    sqlite3_clear_bindings(c->stmt[i]);
    return c->stmt[i];
}

/* Decodes the current row of `stmt` into the cursor's block. */
static int store_retview_decode(store_retview_cursor *c, sqlite3_stmt *stmt)
{
    g_autoptr(GError) error = NULL;
    if (!store_retblock_decode_row(&c->b, stmt, &error))
        return store_retview_fail(c, error->message);
    c->b_snapshot = sqlite3_column_int64(stmt, 6);
    return SQLITE_OK;
}

/* Moves to the next row: the next object of the block, else the first of the next block; for
 * one object, its row in the next snapshot that has it. */
static int store_retview_advance(store_retview_cursor *c, gboolean first)
{
    if (c->blocks) {
        if (!first && ++c->k < c->b.n)
            return SQLITE_OK;
        int rc = sqlite3_step(c->blocks);
        if (rc == SQLITE_DONE) {
            c->eof = TRUE;
            return SQLITE_OK;
        }
        if (rc != SQLITE_ROW)
            return store_retview_fail(c, sqlite3_errmsg(c->db));
        c->k = 0;
        return store_retview_decode(c, c->blocks);
    }
    for (;;) { /* one object */
        int rc = sqlite3_step(c->snapshots);
        if (rc == SQLITE_DONE) {
            c->eof = TRUE;
            return SQLITE_OK;
        }
        if (rc != SQLITE_ROW)
            return store_retview_fail(c, sqlite3_errmsg(c->db));
        sqlite3_stmt *of = store_retview_stmt(c, RETVIEW_BLOCK_OF);
        if (!of)
            return store_retview_fail(c, sqlite3_errmsg(c->db));
        sqlite3_bind_value(of, 1, sqlite3_column_value(c->snapshots, 0));
        sqlite3_bind_int64(of, 2, (int64_t)c->object_id);
        rc = sqlite3_step(of);
        if (rc == SQLITE_DONE)
            continue;
        if (rc != SQLITE_ROW)
            return store_retview_fail(c, sqlite3_errmsg(c->db));
        if ((rc = store_retview_decode(c, of)) != SQLITE_OK)
            return rc;
        sqlite3_reset(of);
        uint32_t lo = hl_ids_lower_bound(c->b.ids, 0, c->b.n, c->object_id);
        if (lo < c->b.n && c->b.ids[lo] == c->object_id) {
            c->k = lo;
            return SQLITE_OK;
        }
    }
}

/* An equality's value as an integer: FALSE when no row's integer can equal it (NULL, a real
 * that is not whole, text that is not a number). */
static gboolean store_retview_int(sqlite3_value *v, int64_t *out)
{
    int type = sqlite3_value_numeric_type(v);
    if (type == SQLITE_INTEGER) {
        *out = sqlite3_value_int64(v);
        return TRUE;
    }
    if (type == SQLITE_FLOAT) {
        double d = sqlite3_value_double(v);
        if (d != floor(d) || d < -9.2e18 || d > 9.2e18)
            return FALSE;
        *out = (int64_t)d;
        return TRUE;
    }
    return FALSE;
}

static int store_retview_filter(sqlite3_vtab_cursor *cur, int idx, const char *idx_str, int argc,
                                sqlite3_value **argv)
{
    (void)idx_str, (void)argc;
    store_retview_cursor *c = (store_retview_cursor *)cur;
    int a = 0;
    int64_t snapshot = 0, object = 0;
    gboolean any = TRUE;
    if (idx & RETVIEW_IDX_SNAPSHOT)
        any = store_retview_int(argv[a++], &snapshot);
    if (idx & RETVIEW_IDX_OBJECT)
        any = store_retview_int(argv[a++], &object) && any && object > 0;
    c->eof = FALSE;
    c->rowid = 0;
    c->blocks = c->snapshots = NULL;
    if (!any) {
        c->eof = TRUE;
        return SQLITE_OK;
    }
    if (idx & RETVIEW_IDX_OBJECT) {
        c->object_id = (uint64_t)object;
        c->snapshots = store_retview_stmt(c, idx & RETVIEW_IDX_SNAPSHOT ? RETVIEW_ONE
                                                                         : RETVIEW_SNAPSHOTS);
        if (c->snapshots && (idx & RETVIEW_IDX_SNAPSHOT))
            sqlite3_bind_int64(c->snapshots, 1, snapshot);
    } else {
        c->blocks = store_retview_stmt(c, idx & RETVIEW_IDX_SNAPSHOT ? RETVIEW_SNAPSHOT
                                                                      : RETVIEW_ALL);
        if (c->blocks && (idx & RETVIEW_IDX_SNAPSHOT))
            sqlite3_bind_int64(c->blocks, 1, snapshot);
    }
    if (!c->snapshots && !c->blocks)
        return store_retview_fail(c, sqlite3_errmsg(c->db));
    return store_retview_advance(c, TRUE);
}

static int store_retview_next(sqlite3_vtab_cursor *cur)
{
    store_retview_cursor *c = (store_retview_cursor *)cur;
    c->rowid++;
    return store_retview_advance(c, FALSE);
}

static int store_retview_eof(sqlite3_vtab_cursor *cur)
{
    return ((store_retview_cursor *)cur)->eof;
}

static int store_retview_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int column)
{
    const store_retview_cursor *c = (const store_retview_cursor *)cur;
    const store_retblock *b = &c->b;
    uint32_t k = c->k;
    switch (column) {
    case 0: sqlite3_result_int64(ctx, c->b_snapshot); break;
    case 1: sqlite3_result_int64(ctx, (int64_t)b->ids[k]); break;
    case 2:
        if (b->idoms[k])
            sqlite3_result_int64(ctx, (int64_t)b->idoms[k]);
        break; /* NULL: only the virtual root dominates it */
    case 3: sqlite3_result_int64(ctx, (int64_t)b->bytes[k]); break;
    default: sqlite3_result_int64(ctx, (int64_t)b->counts[k]); break;
    }
    return SQLITE_OK;
}

static int store_retview_rowid(sqlite3_vtab_cursor *cur, sqlite3_int64 *rowid)
{
    *rowid = ((store_retview_cursor *)cur)->rowid;
    return SQLITE_OK;
}

static const sqlite3_module store_retview_module = {
    .iVersion = 0,
    .xCreate = store_retview_connect,
    .xConnect = store_retview_connect,
    .xBestIndex = store_retview_best_index,
    .xDisconnect = store_vtab_disconnect,
    .xDestroy = store_vtab_disconnect,
    .xOpen = store_retview_open,
    .xClose = store_retview_close,
    .xFilter = store_retview_filter,
    .xNext = store_retview_next,
    .xEof = store_retview_eof,
    .xColumn = store_retview_column,
    .xRowid = store_retview_rowid,
};

gboolean store_retention_view_attach(sqlite3 *db, GError **error)
{
    if (store_db_pragma_int(db, "SELECT count(*) FROM main.sqlite_schema"
                                " WHERE type = 'table' AND name = 'retention_blocks'") != 1 ||
        store_db_pragma_int(db, "SELECT count(*) FROM temp.sqlite_schema"
                                " WHERE name = 'retention'") != 0)
        return TRUE; /* retained sizes as rows (or none yet), or attached already */
    char *msg = NULL;
    if (sqlite3_create_module(db, "heaplens_retention", &store_retview_module, NULL) != SQLITE_OK ||
        sqlite3_exec(db, "CREATE VIRTUAL TABLE temp.retention USING heaplens_retention", NULL,
                     NULL, &msg) != SQLITE_OK) {
        g_set_error(error, STORE_ERROR, STORE_ERROR_SQLITE, "reading retained sizes: %s",
                    msg ? msg : sqlite3_errmsg(db));
        sqlite3_free(msg);
        return FALSE;
    }
    return TRUE;
}
