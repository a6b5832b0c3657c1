/* store_history.c — each object's generation history, built once after the recording.
 *
 * While recording, a GC's generation changes (an object's first generation when it survives its
 * first GC or is discovered, and every promotion) are appended as JSON arrays of ascending ids
 * (the first id, then the gap to each next one; schema 3 wrote the ids themselves), a
 * generation_changes row per (GC, generation) and 8192 ids: no row per change, nothing updated
 * (store_gc.c). The views derive the history from them. The writer finishes without building
 * more (the recording's end waits for nothing that is not data); the first command that reads
 * the finished file builds object_generation_rows from them, once, in the file (query_db_open
 * calls store_history_build_file): one row per generation an object held, with its end
 * (until_gc: the object's next change, else its death):
 *
 *   read every change in arrival order  (GC order; within a GC the order the records came)
 *   sort them by object id, stably      (radix: an object's changes stay in GC order)
 *   merge with objects by id            (a change of an object without a row is dropped, as the
 *                                        view's JOIN does; died_gc ends the last one)
 *   bucket the rows by from_gc          (counting sort: ids stay ascending within a GC)
 *   insert in key order (from_gc, object_id), 256 rows per statement: appends only, and no
 *   other index to build; empty generation_changes; swap the views
 *
 * all in one transaction: a reader killed meanwhile leaves the changes and the derived views,
 * and a second reader that waited for the first finds nothing left to build.
 * Memory: 28 bytes per change at most (12 per change, 12 more while sorting them, 16 per row).
 */
#include "store/store_internal.h"

#include <inttypes.h>

/* One change: object `id` holds generation (gc_gen & 7) from GC (gc_gen >> 3) on. Packed to
 * 12 bytes: the changes of a big recording are tens of millions. */
typedef struct __attribute__((packed)) store_change {
    uint64_t id;
    uint32_t gc_gen;
} store_change;

#define STORE_HISTORY_ROWS 256
#define STORE_HISTORY_WAIT_MS 5000

typedef struct store_history {
    sqlite3 *db;
    const char *path;
    store_progress_fn progress;
    void *progress_ctx;
    uint64_t rows_written, rows_total;
    store_change *changes;
    size_t n, cap;
    sqlite3_stmt *insert_many, *insert_one;
    int64_t rows[STORE_HISTORY_ROWS][4]; /* object_id, generation, from_gc, until_gc */
    gboolean gaps; /* ids after a row's first are gaps (schema 4 on) */
    int64_t gc_limit; /* GC numbers above it are damage: the write's buckets are one per GC */
    int pending;
} store_history;

static void store_history_damaged(GError **error, const char *path, const char *why)
{
    g_set_error(error, STORE_ERROR, STORE_ERROR_DAMAGED,
                "%s is damaged (%s); its generation history was not built", path, why);
}

#define STORE_HISTORY_BAD_NUMBER "has a GC, generation or count that is not a number in range"

static gboolean store_history_corrupt(store_history *h, int64_t rowid, const char *why,
                                      GError **error)
{
    g_autofree char *text = g_strdup_printf("generation_changes row %" PRId64 " %s", rowid, why);
    store_history_damaged(error, h->path, text);
    return FALSE;
}

/* Appends the ids of one generation_changes row ("[5,1,3]" for 5, 6, 9 as store_gc.c writes
 * it; "[5,6,9]" in schema 3): exactly `count` of them. */
static gboolean store_history_parse(store_history *h, int64_t rowid, uint32_t gc, uint32_t gen,
                                    int64_t count, const unsigned char *p, int len,
                                    GError **error)
{
    const unsigned char *end = p + len;
    size_t first = h->n;
    if (gen > HL_GEN_NONGC || gc >= (1u << 29))
        return store_history_corrupt(h, rowid, STORE_HISTORY_BAD_NUMBER, error);
    if (len < 2 || *p != '[' || end[-1] != ']')
        return store_history_corrupt(h, rowid, "is not a JSON array of ids", error);
    p++;
    end--;
    uint64_t last = 0;
    while (p < end) {
        uint64_t id = 0;
        const unsigned char *start = p;
        while (p < end && *p >= '0' && *p <= '9' && p - start < 19)
            id = id * 10 + (uint64_t)(*p++ - '0');
        if (p == start || (p < end && *p++ != ','))
            return store_history_corrupt(h, rowid, "is not a JSON array of ids", error);
        if (h->gaps) {
            id += last;
            last = id;
        }
        /* The capacity is the sum of the rows' counts, checked against the text they take. */
        if (h->n == h->cap)
            return store_history_corrupt(h, rowid, "holds more ids than its count", error);
        h->changes[h->n].id = id;
        h->changes[h->n].gc_gen = gc << 3 | gen;
        h->n++;
    }
    if (h->n - first != (uint64_t)count)
        return store_history_corrupt(h, rowid, "holds another number of ids than its count",
                                     error);
    return TRUE;
}

static gboolean store_history_read(store_history *h, GError **error)
{
    sqlite3_stmt *st = NULL;
    gboolean ok = FALSE;
    int rc;

    /* Every id takes at least two characters ("1," or "1]"), so counts summing to more than
     * half the ids' text (or a negative one) are a damaged file: nothing is allocated for them. */
    if (sqlite3_prepare_v2(h->db,
                           "SELECT coalesce(sum(count), 0), coalesce(min(count), 0), "
                           "coalesce(sum(length(ids)), 0) FROM generation_changes",
                           -1, &st, NULL) != SQLITE_OK ||
        sqlite3_step(st) != SQLITE_ROW) {
        store_sql_fail(h->db, h->path, "reading generation_changes", error);
        goto out;
    }
    int64_t total = sqlite3_column_int64(st, 0), least = sqlite3_column_int64(st, 1),
            text = sqlite3_column_int64(st, 2);
    if (least < 0 || total < 0 || total > text / 2) {
        store_history_damaged(error, h->path, "generation_changes counts more ids than it holds");
        goto out;
    }
    /* A GC takes far more than 16 bytes of the file (its gcs row alone), so no GC number a
     * recording can hold makes the buckets (16 bytes per GC) larger than the file. */
    h->gc_limit = MIN(store_db_pragma_int(h->db, "PRAGMA page_count") *
                          store_db_pragma_int(h->db, "PRAGMA page_size") / 16,
                      (int64_t)(1u << 29) - 1);
    h->cap = (size_t)total;
    h->gaps = store_db_pragma_int(h->db, "PRAGMA user_version") >= 4;
    h->changes = g_new(store_change, h->cap + 1);
    sqlite3_finalize(st);
    if (sqlite3_prepare_v2(h->db, "SELECT rowid, gc, generation, ids, count "
                                  "FROM generation_changes ORDER BY rowid",
                           -1, &st, NULL) != SQLITE_OK) {
        store_sql_fail(h->db, h->path, "reading generation_changes", error);
        goto out;
    }
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t rowid = sqlite3_column_int64(st, 0);
        int64_t gc = sqlite3_column_int64(st, 1), gen = sqlite3_column_int64(st, 2);
        if (sqlite3_column_type(st, 1) != SQLITE_INTEGER ||
            sqlite3_column_type(st, 2) != SQLITE_INTEGER ||
            sqlite3_column_type(st, 4) != SQLITE_INTEGER || gc < 0 || gc > h->gc_limit ||
            gen < 0 || gen > UINT32_MAX) {
            store_history_corrupt(h, rowid, STORE_HISTORY_BAD_NUMBER, error);
            goto out;
        }
        const unsigned char *ids = sqlite3_column_text(st, 3);
        if (ids == NULL) {
            store_history_corrupt(h, rowid, "is not a JSON array of ids", error);
            goto out;
        }
        if (!store_history_parse(h, rowid, (uint32_t)gc, (uint32_t)gen,
                                 sqlite3_column_int64(st, 4), ids, sqlite3_column_bytes(st, 3),
                                 error))
            goto out;
    }
    if (rc != SQLITE_DONE) {
        store_sql_fail(h->db, h->path, "reading generation_changes", error);
        goto out;
    }
    ok = TRUE;
out:
    sqlite3_finalize(st);
    return ok;
}

static gboolean store_history_step(store_history *h, sqlite3_stmt *st, GError **error)
{
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE) {
        store_sql_set_error(h->db, h->path, rc, sqlite3_errmsg(h->db), error);
        return FALSE;
    }
    return TRUE;
}

/* Writes the pending rows: one full statement, or row by row for the last few. */
static gboolean store_history_flush(store_history *h, GError **error)
{
    gboolean many = h->pending == STORE_HISTORY_ROWS;
    sqlite3_stmt *st = many ? h->insert_many : h->insert_one;

    for (int r = 0; r < h->pending; r++) {
        int base = many ? r * 4 : 0;
        for (int c = 0; c < 4; c++) {
            if (h->rows[r][c] == STORE_NULL)
                sqlite3_bind_null(st, base + c + 1);
            else
                sqlite3_bind_int64(st, base + c + 1, h->rows[r][c]);
        }
        if (!many && !store_history_step(h, st, error))
            return FALSE;
    }
    if (many && !store_history_step(h, st, error))
        return FALSE;
    h->rows_written += (uint64_t)h->pending;
    h->pending = 0;
    if (h->progress != NULL)
        h->progress(h->progress_ctx, h->rows_written, h->rows_total);
    return TRUE;
}

static gboolean store_history_add(store_history *h, uint64_t id, uint32_t gen, uint32_t from,
                                  int64_t until, GError **error)
{
    int64_t *row = h->rows[h->pending];
    row[0] = (int64_t)id;
    row[1] = gen;
    row[2] = from;
    row[3] = until;
    if (++h->pending < STORE_HISTORY_ROWS)
        return TRUE;
    return store_history_flush(h, error);
}

/* One row of object_generation_rows, placed in its GC's bucket. */
typedef struct store_history_row {
    uint64_t id;
    uint32_t gen_until; /* generation << 29 | until_gc, or STORE_HISTORY_OPEN */
    uint32_t from_gen;  /* from_gc << 3 | generation */
} store_history_row;
#define STORE_HISTORY_OPEN 0x1fffffffu /* until_gc NULL */

/* Walks the changes sorted by id along objects (by id) and computes each row's end; puts the
 * rows of the objects that exist into buckets by from_gc (a counting sort, stable: ids stay
 * ascending in each), then writes them in key order (from_gc, object_id): every insert appends. */
static gboolean store_history_write(store_history *h, GError **error)
{
    sqlite3_stmt *objects = NULL;
    gboolean ok = FALSE;
    uint32_t max_gc = 0;
    size_t i = 0;
    int rc = SQLITE_DONE;
    g_autofree size_t *start = NULL, *fill = NULL;
    g_autofree store_history_row *rows = NULL;

    for (size_t k = 0; k < h->n; k++)
        max_gc = MAX(max_gc, h->changes[k].gc_gen >> 3);
    start = g_new0(size_t, (size_t)max_gc + 2);
    fill = g_new0(size_t, (size_t)max_gc + 2);
    for (size_t k = 0; k < h->n; k++)
        start[(h->changes[k].gc_gen >> 3) + 1]++;
    for (uint32_t g = 1; g <= max_gc + 1; g++)
        start[g] += start[g - 1];
    memcpy(fill, start, sizeof *fill * ((size_t)max_gc + 2));
    rows = g_new(store_history_row, h->n + 1);

    if (sqlite3_prepare_v2(h->db, "SELECT id, died_gc FROM objects ORDER BY id", -1, &objects,
                           NULL) != SQLITE_OK) {
        store_sql_fail(h->db, h->path, "reading objects", error);
        goto out;
    }
    while (i < h->n && (rc = sqlite3_step(objects)) == SQLITE_ROW) {
        uint64_t id = (uint64_t)sqlite3_column_int64(objects, 0);
        int64_t died = sqlite3_column_int64(objects, 1);
        uint32_t end = sqlite3_column_type(objects, 1) == SQLITE_NULL || died < 0 ||
                               died >= STORE_HISTORY_OPEN
                           ? STORE_HISTORY_OPEN
                           : (uint32_t)died;
        while (i < h->n && h->changes[i].id < id)
            i++; /* no objects row: the collector dropped its record */
        for (; i < h->n && h->changes[i].id == id; i++) {
            uint32_t from = h->changes[i].gc_gen >> 3;
            gboolean last = i + 1 == h->n || h->changes[i + 1].id != id;
            if (!last && h->changes[i + 1].gc_gen >> 3 == from)
                continue; /* two changes in one GC (never sent): the later one holds */
            uint32_t until = last ? end : h->changes[i + 1].gc_gen >> 3;
            rows[fill[from]++] = (store_history_row){
                .id = id,
                .gen_until = (h->changes[i].gc_gen & 7) << 29 | until,
                .from_gen = h->changes[i].gc_gen,
            };
        }
    }
    if (rc != SQLITE_DONE && rc != SQLITE_ROW) {
        store_sql_fail(h->db, h->path, "reading objects", error);
        goto out;
    }
    for (uint32_t g = 0; g <= max_gc; g++)
        h->rows_total += fill[g] - start[g];
    for (uint32_t g = 0; g <= max_gc; g++) {
        for (size_t k = start[g]; k < fill[g]; k++) {
            uint32_t until = rows[k].gen_until & STORE_HISTORY_OPEN;
            if (!store_history_add(h, rows[k].id, rows[k].gen_until >> 29, g,
                                   until == STORE_HISTORY_OPEN ? STORE_NULL : (int64_t)until,
                                   error))
                goto out;
        }
    }
    ok = store_history_flush(h, error);
out:
    sqlite3_finalize(objects);
    return ok;
}

static gboolean store_history_prepare(store_history *h, GError **error)
{
    GString *sql = g_string_new("INSERT INTO object_generation_rows "
                                "(object_id, generation, from_gc, until_gc) VALUES ");
    gboolean ok;
    for (int r = 0; r < STORE_HISTORY_ROWS; r++)
        g_string_append(sql, r > 0 ? ",(?,?,?,?)" : "(?,?,?,?)");
    ok = sqlite3_prepare_v2(h->db, sql->str, -1, &h->insert_many, NULL) == SQLITE_OK &&
         sqlite3_prepare_v2(h->db,
                            "INSERT INTO object_generation_rows "
                            "(object_id, generation, from_gc, until_gc) VALUES (?,?,?,?)",
                            -1, &h->insert_one, NULL) == SQLITE_OK;
    g_string_free(sql, TRUE);
    if (!ok)
        store_sql_fail(h->db, h->path, "prepare", error);
    return ok;
}

/* Builds the history inside the caller's write transaction. */
static gboolean store_history_build(store_history *h, GError **error)
{
    if (!store_history_prepare(h, error) || !store_history_read(h, error))
        return FALSE;
    store_radix_sort(h->changes, h->n, sizeof *h->changes, G_STRUCT_OFFSET(store_change, id));
    return store_history_write(h, error) && store_schema_use_history_rows(h->db, h->path, error);
}

gboolean store_history_pending(sqlite3 *db)
{
    sqlite3_stmt *st = NULL;
    gboolean pending = FALSE;
    if (sqlite3_prepare_v2(db,
                           "SELECT (SELECT status FROM run WHERE id = 1) <> 'recording' AND "
                           "EXISTS (SELECT 1 FROM generation_changes)",
                           -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        pending = sqlite3_column_int(st, 0) != 0;
    sqlite3_finalize(st);
    return pending;
}

/* Never write into a damaged file: it would only get worse. */
static gboolean store_history_check(store_history *h, GError **error)
{
    g_autofree char *damage = store_db_damage_new(h->db);
    if (damage)
        store_history_damaged(error, h->path, damage);
    return damage == NULL;
}

gboolean store_history_check_changes(sqlite3 *db, const char *path, GError **error)
{
    store_history h = {.db = db, .path = path};
    gboolean ok = store_history_read(&h, error);
    g_free(h.changes);
    return ok;
}

gboolean store_history_build_file(const char *path, store_progress_fn progress, void *ctx,
                                  GError **error)
{
    store_history h = {.path = path, .progress = progress, .progress_ctx = ctx};
    gboolean ok = FALSE;

    if (sqlite3_open_v2(path, &h.db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK) {
        store_sql_fail(h.db, path, "cannot open for writing", error);
        goto out;
    }
    sqlite3_extended_result_codes(h.db, 1);
    /* Another reader may be building it: wait for its transaction, then find nothing to do.
     * The commit waits for readers in the middle of a statement; one that holds the file longer
     * makes the build give up (rolled back: the changes stay, the next reader tries again). */
    sqlite3_busy_timeout(h.db, STORE_HISTORY_WAIT_MS);
    if (!store_sql_exec(h.db, path, "PRAGMA cache_size = -262144", error) ||
        !store_sql_exec(h.db, path, "BEGIN IMMEDIATE", error))
        goto out;
    if (store_history_pending(h.db) &&
        (!store_history_check(&h, error) || !store_history_build(&h, error)))
        goto out;
    if (!store_sql_exec(h.db, path, "COMMIT", error))
        goto out;
    ok = TRUE;
out:
    if (!ok && h.db != NULL) {
        int code = sqlite3_errcode(h.db) & 0xff;
        if (error != NULL && (code == SQLITE_CORRUPT || code == SQLITE_NOTADB) &&
            !g_error_matches(*error, STORE_ERROR, STORE_ERROR_DAMAGED)) {
            g_clear_error(error);
            store_history_damaged(error, path, sqlite3_errmsg(h.db));
        }
        if (!sqlite3_get_autocommit(h.db))
            sqlite3_exec(h.db, "ROLLBACK", NULL, NULL, NULL);
    }
    sqlite3_finalize(h.insert_many);
    sqlite3_finalize(h.insert_one);
    g_free(h.changes);
    sqlite3_close(h.db);
    return ok;
}
