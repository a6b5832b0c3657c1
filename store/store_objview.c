/* store_objview.c — `objects` for heaplens' own statements on a file whose rows are not built.
 *
 * A finished recording keeps its survivors packed (object_chunks, object_deaths) until a command
 * builds the table `objects` (store_history_build_file: 1.5–3 s of CPU for 5–6M objects, SQLite's
 * inserts); the file's view `objects` derives the rows in SQL alone, every query re-deriving all
 * of them. The snapshot commands need only each object's type and size by id, so they no longer
 * build the rows: heaplens' connections get a TEMP virtual table `objects` instead, which SQLite
 * finds before the file's view for unqualified names (the file's own views keep the file's
 * view; the TEMP copies of the snapshot views, store_snapview.c, read this one). On its first
 * use it reads the packed rows into memory (store_history_objects_read: the same rows as the
 * view, in id order, 30 bytes per object, and each one's died_gc, 4 more, when a statement first
 * reads it; 0.1–0.4 s of CPU for 5–6M objects where building the table took 1.5–2.9 s) and
 * answers lookups by id with a binary search.
 *
 *   xBestIndex  id = ?, id >, >=, <, <= ? (bounds), type_id = ? (the rows of a type, by an index
 *               of the rows by (type_id, id) built on first use: 4 bytes per object); the
 *               constraints are not omitted: SQLite checks every row again, so a value of
 *               another type (text, a real) is only a looser bound here; rows come in id order
 *   xFilter     loads the rows once per connection, then the range of ids asked
 *   xColumn     id, type_id, size, thread, heap, first_gc, died_gc; first_generation and
 *               next_gc NULL, as the file's view gives them before the build
 */
#include "store/store_internal.h"

#include "wire/hl_wire.h"

#include <math.h>

/* The rows in memory, one per connection (the module's client data: the virtual table and
 * store_objects_view_memory share them). */
struct store_objects_memory {
    sqlite3 *db;
    store_object_rows rows;
    gboolean loaded;
    /* the rows by type (rows' indexes ascending by (type_id, id)), built by the first scan of
     * one type: inspect's joins look objects up by type (`JOIN objects o ON o.type_id = t.id`),
     * once per outer row, where the file's table is scanned whole each time */
    uint32_t *by_type;
    size_t hint; /* the row the last lookup found: joins look ids up in ascending order */
    /* every OBJVIEW_SAMPLE-th row's id (ns of them): a search starts there, in a few hundred
     * KiB that stay in the cache, then reads one run of rows (random lookups: the targets of
     * references) */
    uint64_t *sample;
    size_t ns;
};

#define OBJVIEW_SAMPLE 64

/* idxNum bits: which constraints xFilter gets, in this order */
#define OBJVIEW_EQ 1
#define OBJVIEW_LOWER 2 /* id > or >= */
#define OBJVIEW_UPPER 4 /* id < or <= */
#define OBJVIEW_TYPE 8

typedef struct store_objview_cursor {
    sqlite3_vtab_cursor base;
    const uint32_t *perm; /* NULL: k is the row; else perm[k] (the vtab's by_type) */
    size_t k, end;   /* the current row, one past the last */
    gboolean by_type;
    uint32_t type_id;
} store_objview_cursor;

static int store_objview_connect(sqlite3 *db, void *aux, int argc, const char *const *argv,
                                 sqlite3_vtab **vtab, char **err)
{
    (void)argc, (void)argv, (void)err;
    return store_vtab_declare(db, aux, "CREATE TABLE x(id INTEGER, type_id INTEGER, size INTEGER,"
                                       " thread INTEGER, heap INTEGER, first_gc INTEGER,"
                                       " died_gc INTEGER, first_generation INTEGER,"
                                       " next_gc INTEGER)", vtab);
}

static void store_objects_memory_free(void *p)
{
    store_objects_memory *m = p;
    store_object_rows_release(&m->rows);
    g_free(m->by_type);
    g_free(m->sample);
    g_free(m);
}

/* Reads the packed rows into memory, once per connection. */
static gboolean store_objects_memory_load(store_objects_memory *m, GError **error)
{
    if (m->loaded)
        return TRUE;
    const char *path = store_db_name(m->db);
    if (!store_history_objects_read(m->db, path ? path : "the recording", &m->rows, error))
        return FALSE;
    m->ns = (m->rows.n + OBJVIEW_SAMPLE - 1) / OBJVIEW_SAMPLE;
    m->sample = g_new(uint64_t, MAX(m->ns, 1));
    for (size_t i = 0; i < m->ns; i++)
        m->sample[i] = m->rows.objects[i * OBJVIEW_SAMPLE].id;
    m->loaded = TRUE;
    return TRUE;
}

static int store_objview_best_index(sqlite3_vtab *vtab, sqlite3_index_info *info)
{
    (void)vtab;
    int eq = -1, lower = -1, upper = -1, type = -1;
    for (int i = 0; i < info->nConstraint; i++) {
        const struct sqlite3_index_constraint *c = &info->aConstraint[i];
        if (!c->usable)
            continue;
        if (c->iColumn == 0 && c->op == SQLITE_INDEX_CONSTRAINT_EQ)
            eq = i;
        else if (c->iColumn == 0 &&
                 (c->op == SQLITE_INDEX_CONSTRAINT_GT || c->op == SQLITE_INDEX_CONSTRAINT_GE))
            lower = i;
        else if (c->iColumn == 0 &&
                 (c->op == SQLITE_INDEX_CONSTRAINT_LT || c->op == SQLITE_INDEX_CONSTRAINT_LE))
            upper = i;
        else if (c->iColumn == 1 && c->op == SQLITE_INDEX_CONSTRAINT_EQ)
            type = i;
    }
    int arg = 0;
    info->idxNum = 0;
    if (eq >= 0) {
        info->idxNum |= OBJVIEW_EQ;
        info->aConstraintUsage[eq].argvIndex = ++arg;
    } else {
        if (lower >= 0) {
            info->idxNum |= OBJVIEW_LOWER;
            info->aConstraintUsage[lower].argvIndex = ++arg;
        }
        if (upper >= 0) {
            info->idxNum |= OBJVIEW_UPPER;
            info->aConstraintUsage[upper].argvIndex = ++arg;
        }
    }
    if (type >= 0) {
        info->idxNum |= OBJVIEW_TYPE;
        info->aConstraintUsage[type].argvIndex = ++arg;
    }
    /* the rows in memory, ascending by id */
    if (info->nOrderBy == 1 && info->aOrderBy[0].iColumn == 0 && !info->aOrderBy[0].desc)
        info->orderByConsumed = 1;
    if (eq >= 0) {
        info->estimatedCost = 2;
        info->estimatedRows = 1;
    } else if (lower >= 0 || upper >= 0) {
        info->estimatedCost = 1000;
        info->estimatedRows = 1000;
    } else if (type >= 0) { /* the rows of one type (store_objview_by_type) */
        info->estimatedCost = 10000;
        info->estimatedRows = 10000;
    } else {
        info->estimatedCost = 1e7;
        info->estimatedRows = 10000000;
    }
    return SQLITE_OK;
}

static int store_objview_open(sqlite3_vtab *vtab, sqlite3_vtab_cursor **cursor)
{
    (void)vtab;
    store_objview_cursor *c = sqlite3_malloc(sizeof *c);
    if (!c)
        return SQLITE_NOMEM;
    memset(c, 0, sizeof *c);
    *cursor = &c->base;
    return SQLITE_OK;
}

static int store_objview_close(sqlite3_vtab_cursor *cursor)
{
    sqlite3_free(cursor);
    return SQLITE_OK;
}

/* The first row of [lo, hi) whose id is at least `id` (hi when none). */
static size_t store_objview_lower_in(const store_object_rows *r, size_t lo, size_t hi, uint64_t id)
{
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (r->objects[mid].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* The first row at or after `from` whose id is at least `id` (the end of a range that starts
 * at `from`: one probe for a lookup by id), by steps that double. */
static size_t store_objview_lower_from(const store_object_rows *r, size_t from, uint64_t id)
{
    size_t lo = from, step = 1;
    while (lo + step <= r->n && r->objects[lo + step - 1].id < id) {
        lo += step;
        step *= 2;
    }
    return store_objview_lower_in(r, lo, MIN(lo + step - 1, r->n), id);
}

/* store_objview_lower without the hint: through the sample, then one run of rows. */
static size_t store_objview_lower_sampled(store_objects_memory *t, uint64_t id)
{
    size_t a = 0, b = t->ns;
    while (a < b) { /* the first sample at least id */
        size_t mid = a + (b - a) / 2;
        if (t->sample[mid] < id)
            a = mid + 1;
        else
            b = mid;
    }
    const store_object_rows *r = &t->rows;
    size_t lo = a == 0 ? 0 : (a - 1) * OBJVIEW_SAMPLE + 1, hi = a == t->ns ? r->n : a * OBJVIEW_SAMPLE;
    return t->hint = store_objview_lower_in(r, lo, hi, id);
}

/* The first row whose id is at least `id`: when it is a little ahead of the row the last
 * lookup found (a join looks ids up in ascending order), by steps that double from there, a
 * few probes near each other; else through the sample. */
static size_t store_objview_lower(store_objects_memory *t, uint64_t id)
{
    const store_object_rows *r = &t->rows;
    size_t h = t->hint;
    if (h >= r->n || r->objects[h].id >= id || (h + 4096 < r->n && r->objects[h + 4096].id < id))
        return store_objview_lower_sampled(t, id);
    return t->hint = store_objview_lower_from(r, h + 1, id);
}

/* The bound an id constraint's value gives, as the first id that may match (`upper` FALSE:
 * id >= it) or one past the last (`upper`). FALSE when no id can match (NULL); a value that is
 * not a number bounds nothing (*bound untouched): SQLite's own check of each row decides. */
static gboolean store_objview_bound(sqlite3_value *v, int op, uint64_t *bound)
{
    int type = sqlite3_value_numeric_type(v);
    if (type == SQLITE_NULL)
        return FALSE;
    double d;
    if (type == SQLITE_INTEGER)
        d = (double)sqlite3_value_int64(v);
    else if (type == SQLITE_FLOAT)
        d = sqlite3_value_double(v);
    else
        return TRUE;
    if (type == SQLITE_INTEGER) {
        int64_t x = sqlite3_value_int64(v);
        switch (op) {
        case SQLITE_INDEX_CONSTRAINT_GT: *bound = x < 0 ? 0 : (uint64_t)x + 1; break;
        case SQLITE_INDEX_CONSTRAINT_GE: *bound = x < 0 ? 0 : (uint64_t)x; break;
        case SQLITE_INDEX_CONSTRAINT_LT: *bound = x < 0 ? 0 : (uint64_t)x; break;
        default: /* LE */ *bound = x < 0 ? 0 : (uint64_t)x + 1; break;
        }
        return TRUE;
    }
    /* a real: the integers around it (ids are below 2^63) */
    if (!isfinite(d))
        return d < 0 ? op == SQLITE_INDEX_CONSTRAINT_GT || op == SQLITE_INDEX_CONSTRAINT_GE
                     : op == SQLITE_INDEX_CONSTRAINT_LT || op == SQLITE_INDEX_CONSTRAINT_LE;
    double lo = op == SQLITE_INDEX_CONSTRAINT_GT || op == SQLITE_INDEX_CONSTRAINT_LE ? floor(d) + 1
                                                                                     : ceil(d);
    *bound = lo <= 0 ? 0 : lo >= 9.2e18 ? UINT64_MAX : (uint64_t)lo;
    return TRUE;
}

/* The rows' indexes by (type_id, id): a radix sort of type_id << 32 | index (the rows are in
 * id order, so the index orders equal types by id). NULL when out of memory. */
static uint32_t *store_objview_by_type(const store_object_rows *r)
{
    g_autofree uint64_t *keys = g_try_new(uint64_t, MAX(r->n, 1));
    uint32_t *by_type = keys ? g_try_new(uint32_t, MAX(r->n, 1)) : NULL;
    if (!by_type)
        return NULL;
    for (size_t i = 0; i < r->n; i++)
        keys[i] = (uint64_t)r->objects[i].type_id << 32 | i;
    store_radix_sort(keys, r->n, sizeof *keys, 0);
    for (size_t i = 0; i < r->n; i++)
        by_type[i] = (uint32_t)keys[i];
    return by_type;
}

/* In perm[lo, hi) (rows of one type, ascending by id), the first whose id is at least `id`. */
static size_t store_objview_perm_lower(const store_object_rows *r, const uint32_t *perm,
                                       size_t lo, size_t hi, uint64_t id)
{
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (r->objects[perm[mid]].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* In by_type, the first row whose type is at least `type`. */
static size_t store_objview_type_lower(const store_object_rows *r, const uint32_t *by_type,
                                       uint64_t type)
{
    size_t lo = 0, hi = r->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (r->objects[by_type[mid]].type_id < type)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static void store_objview_skip(store_objview_cursor *c, const store_object_rows *r)
{
    while (c->by_type && c->k < c->end && r->objects[c->k].type_id != c->type_id)
        c->k++;
}

static int store_objview_filter(sqlite3_vtab_cursor *cursor, int idx, const char *idx_str,
                                int argc, sqlite3_value **argv)
{
    (void)idx_str, (void)argc;
    store_objview_cursor *c = (store_objview_cursor *)cursor;
    store_objects_memory *t = ((store_vtab *)cursor->pVtab)->aux;
    g_autoptr(GError) error = NULL;
    if (!store_objects_memory_load(t, &error)) {
        sqlite3_free(cursor->pVtab->zErrMsg);
        cursor->pVtab->zErrMsg = sqlite3_mprintf("%s", error->message);
        return SQLITE_ERROR;
    }
    const store_object_rows *r = &t->rows;
    uint64_t lo = 0, hi = UINT64_MAX; /* ids lo .. hi - 1 (hi UINT64_MAX: no upper bound) */
    gboolean any = TRUE;
    int a = 0;
    c->by_type = FALSE;
    if (idx & OBJVIEW_EQ) {
        sqlite3_value *v = argv[a++];
        int type = sqlite3_value_numeric_type(v);
        if (type == SQLITE_NULL)
            any = FALSE;
        else if (type == SQLITE_INTEGER) {
            int64_t x = sqlite3_value_int64(v);
            if (x < 0)
                any = FALSE;
            else
                lo = (uint64_t)x, hi = (uint64_t)x + 1;
        } else if (type == SQLITE_FLOAT) {
            double d = sqlite3_value_double(v);
            if (d != floor(d) || d < 0 || d >= 9.2e18)
                any = FALSE;
            else
                lo = (uint64_t)d, hi = lo + 1;
        }
    }
    /* the operators come back from the constraints' order: lower bound first, then upper */
    if (idx & OBJVIEW_LOWER) {
        sqlite3_value *v = argv[a++];
        /* GE or GT: which one is not passed; GE is the looser (SQLite checks each row) */
        any = any && store_objview_bound(v, SQLITE_INDEX_CONSTRAINT_GE, &lo);
    }
    if (idx & OBJVIEW_UPPER) {
        sqlite3_value *v = argv[a++];
        any = any && store_objview_bound(v, SQLITE_INDEX_CONSTRAINT_LE, &hi);
    }
    if (idx & OBJVIEW_TYPE) {
        sqlite3_value *v = argv[a++];
        if (sqlite3_value_numeric_type(v) == SQLITE_INTEGER) {
            int64_t x = sqlite3_value_int64(v);
            c->by_type = TRUE;
            c->type_id = x < 0 || x > UINT32_MAX ? UINT32_MAX : (uint32_t)x;
            if (x < 0 || x > UINT32_MAX)
                any = FALSE;
        } else if (sqlite3_value_type(v) == SQLITE_NULL) {
            any = FALSE;
        }
    }
    c->perm = NULL;
    if (!any || lo >= hi) {
        c->k = c->end = 0;
        return SQLITE_OK;
    }
    /* one type, not one id: its rows by the type index */
    if (c->by_type && !(idx & OBJVIEW_EQ) && r->n <= UINT32_MAX) {
        if (!t->by_type)
            t->by_type = store_objview_by_type(r);
        if (t->by_type) {
            size_t a0 = store_objview_type_lower(r, t->by_type, c->type_id);
            size_t b0 = store_objview_type_lower(r, t->by_type, (uint64_t)c->type_id + 1);
            c->perm = t->by_type;
            c->by_type = FALSE;
            c->k = store_objview_perm_lower(r, c->perm, a0, b0, lo);
            c->end = hi == UINT64_MAX ? b0 : store_objview_perm_lower(r, c->perm, a0, b0, hi);
            return SQLITE_OK;
        }
    }
    c->k = store_objview_lower(t, lo);
    c->end = hi == UINT64_MAX ? r->n : store_objview_lower_from(r, c->k, hi);
    store_objview_skip(c, r);
    return SQLITE_OK;
}

static int store_objview_next(sqlite3_vtab_cursor *cursor)
{
    store_objview_cursor *c = (store_objview_cursor *)cursor;
    c->k++; /* with perm: the next of the type's rows, all of them the type's */
    store_objview_skip(c, &((store_objects_memory *)((store_vtab *)cursor->pVtab)->aux)->rows);
    return SQLITE_OK;
}

static int store_objview_eof(sqlite3_vtab_cursor *cursor)
{
    store_objview_cursor *c = (store_objview_cursor *)cursor;
    return c->k >= c->end;
}

static int store_objview_column(sqlite3_vtab_cursor *cursor, sqlite3_context *ctx, int column)
{
    store_objview_cursor *c = (store_objview_cursor *)cursor;
    store_objects_memory *t = ((store_vtab *)cursor->pVtab)->aux;
    size_t row = c->perm ? c->perm[c->k] : c->k;
    const store_object_row *o = &t->rows.objects[row];
    switch (column) {
    case 0: sqlite3_result_int64(ctx, (int64_t)o->id); break;
    case 1: sqlite3_result_int64(ctx, o->type_id); break;
    case 2: sqlite3_result_int64(ctx, (int64_t)o->size); break;
    case 3:
        if (o->os_tid)
            sqlite3_result_int64(ctx, o->os_tid);
        break; /* NULL */
    case 4:
        if (o->heap != HL_GEN_NONE)
            sqlite3_result_int64(ctx, o->heap);
        break;
    case 5: sqlite3_result_int64(ctx, o->first_gc); break;
    case 6:
        if (!t->rows.died_gc) { /* read on first use: few statements ask for it */
            g_autoptr(GError) error = NULL;
            const char *path = store_db_name(t->db);
            if (!store_history_deaths_read(t->db, path ? path : "the recording", &t->rows,
                                           &error)) {
                sqlite3_result_error(ctx, error->message, -1);
                return SQLITE_ERROR;
            }
        }
        if (t->rows.died_gc[row] != STORE_OBJECT_ALIVE)
            sqlite3_result_int64(ctx, t->rows.died_gc[row]);
        break;
    default: break; /* first_generation, next_gc: NULL, as the file's view */
    }
    return SQLITE_OK;
}

static int store_objview_rowid(sqlite3_vtab_cursor *cursor, sqlite3_int64 *rowid)
{
    const store_objview_cursor *c = (const store_objview_cursor *)cursor;
    *rowid = (sqlite3_int64)(c->perm ? c->perm[c->k] : c->k);
    return SQLITE_OK;
}

static const sqlite3_module store_objview_module = {
    .iVersion = 0,
    .xCreate = store_objview_connect,
    .xConnect = store_objview_connect,
    .xBestIndex = store_objview_best_index,
    /* the rows stay with the connection (its module's client data), not with the table */
    .xDisconnect = store_vtab_disconnect,
    .xDestroy = store_vtab_disconnect,
    .xOpen = store_objview_open,
    .xClose = store_objview_close,
    .xFilter = store_objview_filter,
    .xNext = store_objview_next,
    .xEof = store_objview_eof,
    .xColumn = store_objview_column,
    .xRowid = store_objview_rowid,
};

/* heaplens_objects_memory(P): stores the connection's rows (its client data) where P, a
 * pointer bound by store_objects_view_memory, points. */
static void store_objects_memory_function(sqlite3_context *ctx, int argc, sqlite3_value **argv)
{
    (void)argc;
    store_objects_memory **out = sqlite3_value_pointer(argv[0], "heaplens_objects_memory");
    if (out)
        *out = sqlite3_user_data(ctx);
    sqlite3_result_null(ctx);
}

/* Whether `db` has the TEMP table `objects`. */
static gboolean store_objview_there(sqlite3 *db)
{
    sqlite3_stmt *st = NULL;
    gboolean there = FALSE;
    if (sqlite3_prepare_v2(db, "SELECT 1 FROM temp.sqlite_master WHERE name = 'objects'", -1, &st,
                           NULL) == SQLITE_OK)
        there = sqlite3_step(st) == SQLITE_ROW;
    sqlite3_finalize(st);
    return there;
}

gboolean store_objects_view_attach(sqlite3 *db, GError **error)
{
    /* Also for a file whose run is still 'recording' (being written, or left so by a writer
     * that died with a full disk, or by a killed `heaplens record` and its writer): through the
     * file's view a snapshot tool reads its objects a block at a time, each time decoding every
     * packed row (leaks on a 5 MiB such recording of 1,895 blocks: more than 12 minutes against
     * 0.4 s once finished). A file being written is read as it was at the first use. */
    if (store_db_pragma_int(db, "PRAGMA user_version") < 5 ||
        store_db_pragma_int(db, "SELECT count(*) FROM main.sqlite_schema"
                                " WHERE type = 'view' AND name = 'objects'") != 1)
        return TRUE; /* rows built (or schema 4: no packed objects) */
    if (store_objview_there(db))
        return TRUE;
    char *msg = NULL;
    store_objects_memory *m = g_new0(store_objects_memory, 1);
    m->db = db;
    /* the module owns m (freed when the connection closes, or a later attach replaces it) */
    if (sqlite3_create_module_v2(db, "heaplens_objects", &store_objview_module, m,
                                 store_objects_memory_free) != SQLITE_OK ||
        sqlite3_create_function_v2(db, "heaplens_objects_memory", 1, SQLITE_UTF8, m,
                                   store_objects_memory_function, NULL, NULL, NULL) != SQLITE_OK ||
        sqlite3_exec(db, "CREATE VIRTUAL TABLE temp.objects USING heaplens_objects", NULL, NULL,
                     &msg) != SQLITE_OK) {
        g_set_error(error, STORE_ERROR, STORE_ERROR_SQLITE, "reading objects: %s",
                    msg ? msg : sqlite3_errmsg(db));
        sqlite3_free(msg);
        return FALSE;
    }
    return TRUE;
}

gboolean store_objects_view_detach(sqlite3 *db)
{
    return sqlite3_exec(db, "DROP TABLE IF EXISTS temp.objects", NULL, NULL, NULL) == SQLITE_OK;
}

gboolean store_objects_view_memory(sqlite3 *db, store_objects_memory **memory, GError **error)
{
    sqlite3_stmt *st = NULL;
    store_objects_memory *m = NULL;
    *memory = NULL;
    if (!store_objview_there(db))
        return TRUE; /* the file's table or view: read by SQL */
    if (sqlite3_prepare_v2(db, "SELECT heaplens_objects_memory(?1)", -1, &st, NULL) == SQLITE_OK &&
        sqlite3_bind_pointer(st, 1, &m, "heaplens_objects_memory", NULL) == SQLITE_OK)
        sqlite3_step(st);
    sqlite3_finalize(st);
    if (!m) /* a TEMP `objects` some other code made: read it by SQL */
        return TRUE;
    if (!store_objects_memory_load(m, error))
        return FALSE;
    *memory = m;
    return TRUE;
}

gboolean store_objects_memory_find(store_objects_memory *m, uint64_t id, uint32_t *type_id,
                                   int64_t *size)
{
    size_t k = store_objview_lower(m, id);
    if (k >= m->rows.n || m->rows.objects[k].id != id)
        return FALSE;
    *type_id = m->rows.objects[k].type_id;
    *size = (int64_t)m->rows.objects[k].size; /* as the virtual table's column gives it */
    return TRUE;
}
