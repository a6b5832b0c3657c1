/* store_handles.c — GC handle lifetimes: HANDLE_CREATED, HANDLE_DESTROYED, GC_HANDLE_KINDS.
 *
 *   HANDLE_CREATED    a new `handles` row: kind 'unknown', the initial target, created_after_gc
 *   HANDLE_DESTROYED  its live row gets destroyed_after_gc
 *   GC_HANDLES_FREED  inside GC g: each live row gets destroyed_after_gc = g - 1 (the runtime
 *                     freed the handle during GC g without HandleDestroyed: a WeakReference's)
 *   GC_HANDLE_KINDS   its live row gets its kind (learned from the roots of the first GC that
 *                     reported the handle); a handle never seen created gets a row of its own
 *                     (created_after_gc NULL: created before the collector could see it)
 *
 * Handle ids are addresses and are reused once a handle is destroyed, so a row is one lifetime
 * and the writer keeps handle_id → id of the live row (w->handles). A HANDLE_CREATED for a
 * handle that is still live means the runtime freed it without telling (a path the collector
 * does not know): the old row is closed at the new creation (it was destroyed before that) and
 * counted in handles_closed_by_reuse.
 *
 * These records are not part of a GC (handle events come between GCs; kinds are facts about a
 * handle, whatever GC taught them): when one arrives inside an open GC it is applied and kept
 * for replay, so that rolling the GC back does not lose it; the map is reloaded from the
 * database after such a rollback.
 */
#include "store/store_internal.h"

G_STATIC_ASSERT(sizeof(gpointer) >= sizeof(uint64_t)); /* ids and row ids live in the pointers */

static const char *const store_handle_kind_names[] = {
    [HL_HANDLE_UNKNOWN] = "unknown",
    [HL_HANDLE_STRONG] = "strong",
    [HL_HANDLE_WEAK] = "weak",
    [HL_HANDLE_PINNED] = "pinned",
    [HL_HANDLE_REFCOUNTED] = "refcounted",
};

/* The id of the handle's live row, 0 if none. */
static int64_t store_handle_row(const store_writer *w, uint64_t handle_id)
{
    return (int64_t)GPOINTER_TO_SIZE(g_hash_table_lookup(w->handles, GSIZE_TO_POINTER(handle_id)));
}

/* Notes a change of handle rows (and of the map) inside the open GC. */
static void store_handle_touch(store_writer *w, const store_record *rec)
{
    store_writer_keep_for_replay(w, rec);
    if (w->gc.open)
        w->gc.handles_changed = TRUE;
}

/* Inserts a live row for `handle_id` and maps it. `object_id` 0 and `created` < 0 are NULL. */
static gboolean store_handle_insert(store_writer *w, uint64_t handle_id, uint32_t kind,
                                    uint64_t object_id, int64_t created, GError **error)
{
    sqlite3_stmt *st = w->stmt[STORE_STMT_INSERT_HANDLE];
    sqlite3_bind_int64(st, 1, (int64_t)handle_id);
    sqlite3_bind_text(st, 2, store_handle_kind_names[kind], -1, SQLITE_STATIC);
    store_bind_optional(st, 3, (int64_t)object_id, object_id != 0);
    store_bind_optional(st, 4, created, created >= 0);
    if (!store_writer_step(w, STORE_STMT_INSERT_HANDLE, error))
        return FALSE;
    g_hash_table_insert(w->handles, GSIZE_TO_POINTER(handle_id),
                        GSIZE_TO_POINTER((gsize)sqlite3_last_insert_rowid(w->db)));
    return TRUE;
}

/* Closes a live row: destroyed after GC `after_gc`; unmaps it. */
static gboolean store_handle_close(store_writer *w, uint64_t handle_id, int64_t row,
                                   uint32_t after_gc, GError **error)
{
    sqlite3_stmt *st = w->stmt[STORE_STMT_HANDLE_DESTROYED];
    sqlite3_bind_int64(st, 1, row);
    sqlite3_bind_int64(st, 2, after_gc);
    if (!store_writer_step(w, STORE_STMT_HANDLE_DESTROYED, error))
        return FALSE;
    g_hash_table_remove(w->handles, GSIZE_TO_POINTER(handle_id));
    return TRUE;
}

gboolean store_handle_created(store_writer *w, const store_record *rec, GError **error)
{
    const hl_handle_created *h = &rec->u.handle_created;
    int64_t row = store_handle_row(w, h->handle_id);

    store_handle_touch(w, rec);
    if (row != 0) {
        w->handles_closed_by_reuse++; /* freed without HandleDestroyed, not seen otherwise */
        if (!store_handle_close(w, h->handle_id, row, h->after_gc, error))
            return FALSE;
    }
    return store_handle_insert(w, h->handle_id, HL_HANDLE_UNKNOWN, h->object_id, h->after_gc,
                               error);
}

gboolean store_handle_destroyed(store_writer *w, const store_record *rec, GError **error)
{
    const hl_handle_destroyed *h = &rec->u.handle_destroyed;
    int64_t row = store_handle_row(w, h->handle_id);

    /* A handle never seen (created before the collector loaded, and never a root): nothing
     * to close, nothing worth a row. */
    if (row == 0)
        return TRUE;
    store_handle_touch(w, rec);
    return store_handle_close(w, h->handle_id, row, h->after_gc, error);
}

gboolean store_handles_freed(store_writer *w, const store_record *rec, GError **error)
{
    const hl_gc_handles_freed *h = &rec->u.handles_freed.h;

    if (!w->gc.open || w->gc.start.gc != h->gc || h->gc == 0) {
        w->writer_anomalies++; /* a GC record outside its GC */
        return TRUE;
    }
    /* Part of the GC: rolled back with it (the map is reloaded then). */
    w->gc.handles_changed = TRUE;
    for (uint32_t i = 0; i < h->count; i++) {
        uint64_t handle_id = store_record_handle_freed_at(rec, i);
        int64_t row = store_handle_row(w, handle_id);
        if (row != 0 && !store_handle_close(w, handle_id, row, h->gc - 1, error))
            return FALSE;
    }
    return TRUE;
}

gboolean store_handle_kinds(store_writer *w, const store_record *rec, GError **error)
{
    const hl_gc_handle_kinds *h = &rec->u.handle_kinds.h;

    store_handle_touch(w, rec);
    for (uint32_t i = 0; i < h->count; i++) {
        hl_handle_kind k = store_record_handle_kind_at(rec, i);
        int64_t row = store_handle_row(w, k.handle_id);
        if (k.kind >= G_N_ELEMENTS(store_handle_kind_names)) {
            w->writer_anomalies++;
            continue;
        }
        if (row == 0) {
            if (!store_handle_insert(w, k.handle_id, k.kind, 0, -1, error))
                return FALSE;
            continue;
        }
        sqlite3_stmt *st = w->stmt[STORE_STMT_SET_HANDLE_KIND];
        sqlite3_bind_int64(st, 1, row);
        sqlite3_bind_text(st, 2, store_handle_kind_names[k.kind], -1, SQLITE_STATIC);
        if (!store_writer_step(w, STORE_STMT_SET_HANDLE_KIND, error))
            return FALSE;
    }
    return TRUE;
}

gboolean store_handles_reload(store_writer *w, GError **error)
{
    static const char sql[] = "SELECT handle_id, max(id) FROM handles "
                              "WHERE destroyed_after_gc IS NULL GROUP BY handle_id";
    sqlite3_stmt *st = NULL;
    gboolean ok = FALSE;
    int rc;

    g_hash_table_remove_all(w->handles);
    if (sqlite3_prepare_v2(w->db, sql, -1, &st, NULL) != SQLITE_OK) {
        store_sql_fail(w->db, w->path, "prepare", error);
        goto out;
    }
    while ((rc = sqlite3_step(st)) == SQLITE_ROW)
        g_hash_table_insert(w->handles, GSIZE_TO_POINTER((gsize)sqlite3_column_int64(st, 0)),
                            GSIZE_TO_POINTER((gsize)sqlite3_column_int64(st, 1)));
    if (rc != SQLITE_DONE) {
        store_sql_fail(w->db, w->path, "read handles", error);
        goto out;
    }
    ok = TRUE;
out:
    sqlite3_finalize(st);
    return ok;
}
