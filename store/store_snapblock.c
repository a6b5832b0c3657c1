/* store_snapblock.c — the compact form of a snapshot's objects (schema 8): blocks of objects with
 * consecutive ids, each a snapshot_blocks row of four short texts (SCHEMA.md "snapshot_blocks";
 * store/README.md "Compact snapshots"):
 *
 *   ids     JSON array, an element per object: its id minus the previous one's (the first: 0;
 *           the row's first_id is the first object's id)
 *   kinds   a character per object: '0' + generation (6: NULL) + 8 * flags (flags 1, 2, 4)
 *   refs    NULL when no object of the block has references; else a JSON array, an element per
 *           object: 0 when it has none, else the array of its targets, delta-coded: the first
 *           from the first target of the previous object of the block that has references
 *           (first_id for the first such object), each next from the one before it
 *   fields  NULL when no object of the block has a known field; else a JSON array, an element
 *           per object: 0 when none of its fields is known, else an array parallel to its
 *           targets: null where unknown, else the field minus the previous known field of the
 *           object (the first known: the field itself)
 *
 * Written by the writer (store_snapshot.c), read by store_snapblock_decode (the query loader, the
 * point lookups, the virtual table store_snapview.c) and by the view snapshot_objects in SQL
 * alone (store_schema.c). A block ends after an object whose id hashes to 0 mod 64, or at 256
 * objects: boundaries that depend on the ids alone, so that a block of an unchanged part of the
 * heap is the same text in the next snapshot and is stored once.
 */
#include "store/store_internal.h"

#include <inttypes.h>

/* splitmix64's finalizer: ids that follow each other hash far apart. */
static inline uint64_t store_snapblock_hash(uint64_t id)
{
    id += 0x9e3779b97f4a7c15ull;
    id = (id ^ (id >> 30)) * 0xbf58476d1ce4e5b9ull;
    id = (id ^ (id >> 27)) * 0x94d049bb133111ebull;
    return id ^ (id >> 31);
}

void store_snapblock_init(store_snapblock_builder *b)
{
    memset(b, 0, sizeof *b);
    b->ids = g_string_sized_new(1024);
    b->kinds = g_string_sized_new(STORE_SNAPBLOCK_MAX + 1);
    b->refs = g_string_sized_new(2048);
    b->fields = g_string_sized_new(1024);
}

void store_snapblock_release(store_snapblock_builder *b)
{
    if (b->ids)
        g_string_free(b->ids, TRUE);
    if (b->kinds)
        g_string_free(b->kinds, TRUE);
    if (b->refs)
        g_string_free(b->refs, TRUE);
    if (b->fields)
        g_string_free(b->fields, TRUE);
    memset(b, 0, sizeof *b);
}

void store_snapblock_reset(store_snapblock_builder *b)
{
    g_string_truncate(b->ids, 0);
    g_string_truncate(b->kinds, 0);
    g_string_truncate(b->refs, 0);
    g_string_truncate(b->fields, 0);
    b->n = 0;
    b->any_refs = b->any_fields = FALSE;
}

static inline void store_append_i64(GString *out, int64_t v)
{
    if (v < 0) {
        g_string_append_c(out, '-');
        store_append_u64(out, (uint64_t)0 - (uint64_t)v);
    } else {
        store_append_u64(out, (uint64_t)v);
    }
}

gboolean store_snapblock_add(store_snapblock_builder *b, uint64_t id, int generation,
                             uint32_t flags, const uint64_t *to, const uint32_t *field, size_t nr)
{
    if (b->n == 0) {
        b->first_id = b->last_id = b->prev_target = id;
        g_string_append_c(b->ids, '[');
        g_string_append_c(b->ids, '0');
    } else {
        g_string_append_c(b->ids, ',');
        store_append_u64(b->ids, id - b->last_id);
        b->last_id = id;
    }
    int g = generation >= 0 && generation <= HL_GEN_NONGC ? generation : 6;
    g_string_append_c(b->kinds, (char)('0' + g + 8 * (int)(flags & 7u)));

    /* refs: elements for the objects before the first with references are written when it
     * comes (a block whose objects have none keeps refs NULL) */
    if (nr > 0 && !b->any_refs) {
        b->any_refs = TRUE;
        g_string_append_c(b->refs, '[');
        for (uint32_t k = 0; k < b->n; k++)
            g_string_append(b->refs, k ? ",0" : "0");
    }
    if (b->any_refs) {
        if (b->n > 0)
            g_string_append_c(b->refs, ',');
        if (nr == 0) {
            g_string_append_c(b->refs, '0');
        } else {
            uint64_t prev = b->prev_target;
            g_string_append_c(b->refs, '[');
            for (size_t i = 0; i < nr; i++) {
                if (i > 0)
                    g_string_append_c(b->refs, ',');
                store_append_i64(b->refs, (int64_t)(to[i] - prev));
                prev = to[i];
            }
            g_string_append_c(b->refs, ']');
            b->prev_target = to[0];
        }
    }

    gboolean known = FALSE;
    for (size_t i = 0; i < nr && field && !known; i++)
        known = field[i] != HL_FIELD_UNKNOWN;
    if (known && !b->any_fields) {
        b->any_fields = TRUE;
        g_string_append_c(b->fields, '[');
        for (uint32_t k = 0; k < b->n; k++)
            g_string_append(b->fields, k ? ",0" : "0");
    }
    if (b->any_fields) {
        if (b->n > 0)
            g_string_append_c(b->fields, ',');
        if (!known) {
            g_string_append_c(b->fields, '0');
        } else {
            int64_t prev = 0;
            g_string_append_c(b->fields, '[');
            for (size_t i = 0; i < nr; i++) {
                if (i > 0)
                    g_string_append_c(b->fields, ',');
                if (field[i] == HL_FIELD_UNKNOWN) {
                    g_string_append(b->fields, "null");
                } else {
                    store_append_i64(b->fields, (int64_t)field[i] - prev);
                    prev = field[i];
                }
            }
            g_string_append_c(b->fields, ']');
        }
    }
    b->n++;
    return b->n >= STORE_SNAPBLOCK_MAX || (store_snapblock_hash(id) & 63) == 0;
}

void store_snapblock_close(store_snapblock_builder *b)
{
    g_string_append_c(b->ids, ']');
    if (b->any_refs)
        g_string_append_c(b->refs, ']');
    if (b->any_fields)
        g_string_append_c(b->fields, ']');
}

/* ---- decoding ------------------------------------------------------------------------------ */

#define STORE_GROW(arr, cap, need)                                                                 \
    do {                                                                                           \
        if ((need) > (cap)) {                                                                      \
            size_t c_ = MAX((size_t)(need), 2 * (size_t)(cap));                                    \
            (arr) = g_renew(__typeof__(*(arr)), (arr), c_);                                        \
            (cap) = c_;                                                                            \
        }                                                                                          \
    } while (0)

void store_snapblock_clear(store_snapblock *b)
{
    g_free(b->ids);
    g_free(b->generation);
    g_free(b->flags);
    g_free(b->ref_start);
    g_free(b->field_known);
    g_free(b->to);
    g_free(b->field);
    memset(b, 0, sizeof *b);
}

gboolean store_snapblock_decode(store_snapblock *b, uint64_t first_id, int64_t objects,
                                const char *ids, size_t ids_len, const char *kinds,
                                size_t kinds_len, const char *refs, size_t refs_len,
                                const char *fields, size_t fields_len, GError **error)
{
    if (objects <= 0 || objects > STORE_SNAPBLOCK_MAX_READ || !ids || !kinds ||
        kinds_len != (size_t)objects)
        return store_block_damaged(error, "snapshot", (int64_t)first_id, "a count, ids or kinds");
    size_t n = (size_t)objects;
    STORE_GROW(b->ids, b->cap, n);
    b->generation = g_renew(int8_t, b->generation, b->cap);
    b->flags = g_renew(uint8_t, b->flags, b->cap);
    b->field_known = g_renew(uint8_t, b->field_known, b->cap);
    b->ref_start = g_renew(uint32_t, b->ref_start, b->cap + 1);
    b->n = (uint32_t)n;
    b->n_refs = 0;

    store_json_cursor c = {ids, ids + ids_len};
    uint64_t id = first_id;
    if (!store_json_char(&c, '['))
        return store_block_damaged(error, "snapshot", (int64_t)first_id, "ids");
    for (size_t k = 0; k < n; k++) {
        int64_t gap;
        if ((k > 0 && !store_json_char(&c, ',')) || !store_json_int(&c, &gap) ||
            (k == 0 ? gap != 0 : gap <= 0) || (uint64_t)gap > (uint64_t)INT64_MAX - id)
            return store_block_damaged(error, "snapshot", (int64_t)first_id, "ids");
        id += (uint64_t)gap;
        b->ids[k] = id;
        int code = (unsigned char)kinds[k] - '0';
        if (code < 0 || code > 63 || code % 8 == 7)
            return store_block_damaged(error, "snapshot", (int64_t)first_id, "kinds");
        b->generation[k] = (int8_t)(code % 8 == 6 ? -1 : code % 8);
        b->flags[k] = (uint8_t)(code / 8);
    }
    if (!store_json_char(&c, ']') || (store_json_space(&c), c.p != c.end))
        return store_block_damaged(error, "snapshot", (int64_t)first_id, "ids");

    /* references: targets, each object's from ref_start[k] */
    store_json_cursor r = {refs, refs + (refs ? refs_len : 0)};
    uint64_t prev_first = first_id;
    if (refs && !store_json_char(&r, '['))
        return store_block_damaged(error, "snapshot", (int64_t)first_id, "refs");
    for (size_t k = 0; k < n; k++) {
        b->ref_start[k] = (uint32_t)b->n_refs;
        if (!refs)
            continue;
        if (k > 0 && !store_json_char(&r, ','))
            return store_block_damaged(error, "snapshot", (int64_t)first_id, "refs");
        if (!store_json_char(&r, '[')) {
            int64_t zero;
            if (!store_json_int(&r, &zero) || zero != 0)
                return store_block_damaged(error, "snapshot", (int64_t)first_id, "refs");
            continue;
        }
        uint64_t prev = prev_first;
        for (size_t i = 0;; i++) {
            int64_t d;
            if ((i > 0 && !store_json_char(&r, ',')) || !store_json_int(&r, &d))
                return store_block_damaged(error, "snapshot", (int64_t)first_id, "refs");
            uint64_t t = prev + (uint64_t)d;
            if ((int64_t)t <= 0)
                return store_block_damaged(error, "snapshot", (int64_t)first_id, "refs");
            if (b->n_refs >= UINT32_MAX - 1)
                return store_block_damaged(error, "snapshot", (int64_t)first_id, "refs");
            STORE_GROW(b->to, b->refs_cap, b->n_refs + 1);
            b->to[b->n_refs++] = t;
            if (i == 0)
                prev_first = t;
            prev = t;
            store_json_space(&r);
            if (r.p < r.end && *r.p == ']') {
                r.p++;
                break;
            }
        }
    }
    b->ref_start[n] = (uint32_t)b->n_refs;
    if (refs && (!store_json_char(&r, ']') || (store_json_space(&r), r.p != r.end)))
        return store_block_damaged(error, "snapshot", (int64_t)first_id, "refs");

    /* fields, parallel to the references */
    b->field = g_renew(int64_t, b->field, MAX(b->refs_cap, 1));
    store_json_cursor f = {fields, fields + (fields ? fields_len : 0)};
    if (fields && !store_json_char(&f, '['))
        return store_block_damaged(error, "snapshot", (int64_t)first_id, "fields");
    for (size_t k = 0; k < n; k++) {
        uint32_t lo = b->ref_start[k], hi = b->ref_start[k + 1];
        b->field_known[k] = 0;
        for (uint32_t i = lo; i < hi; i++)
            b->field[i] = -1;
        if (!fields)
            continue;
        if (k > 0 && !store_json_char(&f, ','))
            return store_block_damaged(error, "snapshot", (int64_t)first_id, "fields");
        if (!store_json_char(&f, '[')) {
            int64_t zero;
            if (!store_json_int(&f, &zero) || zero != 0)
                return store_block_damaged(error, "snapshot", (int64_t)first_id, "fields");
            continue;
        }
        if (lo == hi)
            return store_block_damaged(error, "snapshot", (int64_t)first_id, "fields");
        b->field_known[k] = 1;
        int64_t prev = 0;
        for (uint32_t i = lo; i < hi; i++) {
            int64_t d;
            if (i > lo && !store_json_char(&f, ','))
                return store_block_damaged(error, "snapshot", (int64_t)first_id, "fields");
            if (store_json_null(&f))
                continue;
            if (!store_json_int(&f, &d) || prev + d < 0 || prev + d > UINT32_MAX)
                return store_block_damaged(error, "snapshot", (int64_t)first_id, "fields");
            prev += d;
            b->field[i] = prev;
        }
        if (!store_json_char(&f, ']'))
            return store_block_damaged(error, "snapshot", (int64_t)first_id, "fields");
    }
    if (fields && (!store_json_char(&f, ']') || (store_json_space(&f), f.p != f.end)))
        return store_block_damaged(error, "snapshot", (int64_t)first_id, "fields");
    return TRUE;
}

void store_snapblock_refs_json(const store_snapblock *b, uint32_t k, GString *out)
{
    g_string_truncate(out, 0);
    g_string_append_c(out, '[');
    for (uint32_t i = b->ref_start[k]; i < b->ref_start[k + 1]; i++) {
        if (i > b->ref_start[k])
            g_string_append_c(out, ',');
        store_append_u64(out, b->to[i]);
    }
    g_string_append_c(out, ']');
}

void store_snapblock_fields_json(const store_snapblock *b, uint32_t k, GString *out)
{
    g_string_truncate(out, 0);
    g_string_append_c(out, '[');
    for (uint32_t i = b->ref_start[k]; i < b->ref_start[k + 1]; i++) {
        if (i > b->ref_start[k])
            g_string_append_c(out, ',');
        if (b->field[i] < 0)
            g_string_append(out, "null");
        else
            store_append_u64(out, (uint64_t)b->field[i]);
    }
    g_string_append_c(out, ']');
}

gboolean store_snapblock_decode_row(store_snapblock *b, sqlite3_stmt *stmt, GError **error)
{
    int64_t first = sqlite3_column_int64(stmt, 0);
    if (sqlite3_column_type(stmt, 0) != SQLITE_INTEGER || first <= 0 ||
        sqlite3_column_type(stmt, 1) != SQLITE_INTEGER ||
        sqlite3_column_type(stmt, 2) != SQLITE_TEXT || sqlite3_column_type(stmt, 3) != SQLITE_TEXT ||
        (sqlite3_column_type(stmt, 4) != SQLITE_TEXT && sqlite3_column_type(stmt, 4) != SQLITE_NULL) ||
        (sqlite3_column_type(stmt, 5) != SQLITE_TEXT && sqlite3_column_type(stmt, 5) != SQLITE_NULL))
        return store_block_damaged(error, "snapshot", first, "columns");
    /* text first, then its length (SQLite's documented order) */
    const char *ids = (const char *)sqlite3_column_text(stmt, 2);
    size_t ids_len = (size_t)sqlite3_column_bytes(stmt, 2);
    const char *kinds = (const char *)sqlite3_column_text(stmt, 3);
    size_t kinds_len = (size_t)sqlite3_column_bytes(stmt, 3);
    const char *refs = (const char *)sqlite3_column_text(stmt, 4);
    size_t refs_len = (size_t)sqlite3_column_bytes(stmt, 4);
    const char *fields = (const char *)sqlite3_column_text(stmt, 5);
    size_t fields_len = (size_t)sqlite3_column_bytes(stmt, 5);
    return store_snapblock_decode(b, (uint64_t)first, sqlite3_column_int64(stmt, 1), ids, ids_len,
                                  kinds, kinds_len, refs, refs_len, fields, fields_len, error);
}

gboolean store_snapshot_blocks_present(sqlite3 *db)
{
    sqlite3_stmt *st = NULL;
    gboolean present = FALSE;
    if (sqlite3_prepare_v2(db,
                           "SELECT 1 FROM main.sqlite_master WHERE type = 'table'"
                           " AND name = 'snapshot_blocks'",
                           -1, &st, NULL) == SQLITE_OK)
        present = sqlite3_step(st) == SQLITE_ROW;
    sqlite3_finalize(st);
    return present;
}

static gboolean store_snapshot_sql_fail(sqlite3 *db, GError **error)
{
    g_set_error(error, STORE_ERROR, STORE_ERROR_SQLITE, "reading a snapshot: %s",
                sqlite3_errmsg(db));
    return FALSE;
}

/* The old form: the row of the table snapshot_objects, its JSON read by SQLite. */
static gboolean store_snapshot_object_get_row(sqlite3 *db, int64_t snapshot, uint64_t id,
                                              gboolean *found, GArray *to, GArray *field,
                                              gboolean *fields_known, GError **error)
{
    sqlite3_stmt *st = NULL;
    gboolean ok = FALSE;
    if (sqlite3_prepare_v2(db,
                           "SELECT 1, r.value, json_extract(so.fields, '$[' || r.key || ']'),"
                           " so.fields IS NOT NULL"
                           " FROM main.snapshot_objects so LEFT JOIN json_each(so.refs) r"
                           " WHERE so.snapshot = ?1 AND so.object_id = ?2 ORDER BY r.key",
                           -1, &st, NULL) != SQLITE_OK) {
        store_snapshot_sql_fail(db, error);
        goto out;
    }
    sqlite3_bind_int64(st, 1, snapshot);
    sqlite3_bind_int64(st, 2, (int64_t)id);
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        *found = TRUE;
        *fields_known = sqlite3_column_int(st, 3) != 0;
        if (sqlite3_column_type(st, 1) == SQLITE_NULL)
            continue;
        uint64_t t = (uint64_t)sqlite3_column_int64(st, 1);
        int64_t f = sqlite3_column_type(st, 2) == SQLITE_INTEGER ? sqlite3_column_int64(st, 2) : -1;
        g_array_append_val(to, t);
        g_array_append_val(field, f);
    }
    if (rc != SQLITE_DONE) {
        store_snapshot_sql_fail(db, error);
        goto out;
    }
    ok = TRUE;
out:
    sqlite3_finalize(st);
    return ok;
}

gboolean store_snapshot_object_get(sqlite3 *db, int64_t snapshot, uint64_t id, gboolean *found,
                                   GArray *to, GArray *field, gboolean *fields_known,
                                   GError **error)
{
    *found = FALSE;
    *fields_known = FALSE;
    g_array_set_size(to, 0);
    g_array_set_size(field, 0);
    if (!store_snapshot_blocks_present(db))
        return store_snapshot_object_get_row(db, snapshot, id, found, to, field, fields_known,
                                             error);
    sqlite3_stmt *st = NULL;
    store_snapblock b = {0};
    gboolean ok = FALSE;
    /* the block of the snapshot with the largest first_id not above `id`: the one that holds
     * it, if any does (a snapshot's blocks cover its ids without overlapping) */
    if (sqlite3_prepare_v2(db,
                           "SELECT first_id, objects, ids, kinds, refs, fields FROM snapshot_blocks"
                           " INDEXED BY snapshot_blocks_by_id WHERE first_id <= ?2"
                           " AND last_snapshot >= ?1 AND first_snapshot <= ?1"
                           " AND EXISTS (SELECT 1 FROM snapshots WHERE snapshot = ?1)"
                           " ORDER BY first_id DESC LIMIT 1",
                           -1, &st, NULL) != SQLITE_OK) {
        store_snapshot_sql_fail(db, error);
        goto out;
    }
    sqlite3_bind_int64(st, 1, snapshot);
    sqlite3_bind_int64(st, 2, (int64_t)MIN(id, (uint64_t)INT64_MAX));
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        if (!store_snapblock_decode_row(&b, st, error))
            goto out;
        uint32_t lo = hl_ids_lower_bound(b.ids, 0, b.n, id);
        if (lo < b.n && b.ids[lo] == id) {
            *found = TRUE;
            *fields_known = b.field_known[lo] != 0;
            for (uint32_t i = b.ref_start[lo]; i < b.ref_start[lo + 1]; i++) {
                g_array_append_val(to, b.to[i]);
                g_array_append_val(field, b.field[i]);
            }
        }
    } else if (rc != SQLITE_DONE) {
        store_snapshot_sql_fail(db, error);
        goto out;
    }
    ok = TRUE;
out:
    sqlite3_finalize(st);
    store_snapblock_clear(&b);
    return ok;
}
