/* store_writer.c — the writer's life: create the database, apply records, finish.
 *
 * Transactions. From store_writer_create to store_writer_finish one write transaction is always
 * open. A GC whose records have all come (its GC_END among them) before the writer applies them
 * is applied whole into it and committed with the GCs around it (below, "grouped commits").
 * Any other GC is a transaction of its own: its GC_START COMMITs what came before it and BEGINs
 * the GC's own transaction; its GC_END COMMITs (then BEGINs again). A GC whose GC_END never comes
 * is rolled back — with it go the rows of TYPE/THREAD records that arrived inside it, so those
 * are applied again (w->replay).
 * The tail interval's ALLOC_COUNTS (after the last GC) ride in the final transaction, committed
 * by finish. Nothing is held per allocation: the collector counts them.
 *
 * GC records are applied in store_gc.c, snapshot records in store_snapshot.c, handle records in
 * store_handles.c; this file applies the others and dispatches (store_apply_table).
 */
#include "store/store_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* Root kinds as the text stored in snapshot_roots.kind (HL_ROOT_*; store_snapshot.c maps any
 * other value to HL_ROOT_OTHER). */
#define STORE_ROOT_KIND_SQL(x)                                                                  \
    "CASE " x " WHEN 1 THEN 'stack' WHEN 2 THEN 'finalizer' WHEN 3 THEN 'handle' ELSE 'other' END"

static const char *const store_stmt_sql[STORE_STMT_COUNT] = {
    [STORE_STMT_INSERT_FRAME] = "INSERT OR REPLACE INTO frames (id, name) VALUES (?1, ?2)",
    [STORE_STMT_INSERT_STACK] = "INSERT OR REPLACE INTO stacks (id, depth) VALUES (?1, ?2)",
    [STORE_STMT_INSERT_STACK_FRAME] =
        "INSERT OR REPLACE INTO stack_frames (stack_id, position, frame_id) VALUES (?1, ?2, ?3)",
    [STORE_STMT_INSERT_ALLOC_SAMPLE] =
        "INSERT INTO alloc_samples (gc, type_id, thread, heap, size, stack_id, object_id, "
        "est_count, est_bytes) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
    [STORE_STMT_INSERT_ALLOC_SAMPLES_MANY] = NULL,
    [STORE_STMT_UPSERT_SAMPLING] =
        "INSERT OR REPLACE INTO sampling (id, source, mean_distance_bytes, biased, samples, "
        "samples_dropped) VALUES (1, ?1, ?2, ?3, ?4, ?5)",
    [STORE_STMT_COMMIT] = "COMMIT",
    [STORE_STMT_BEGIN] = "BEGIN",
    [STORE_STMT_INSERT_TYPE] =
        "INSERT OR REPLACE INTO types (id, name, class_id, flags) VALUES (?1, ?2, ?3, ?4)",
    [STORE_STMT_INSERT_FIELD] =
        "INSERT OR REPLACE INTO fields (type_id, field, name) VALUES (?1, ?2, ?3)",
    [STORE_STMT_INSERT_STATIC] =
        "INSERT OR REPLACE INTO statics (id, type_id, name) VALUES (?1, ?2, ?3)",
    [STORE_STMT_SET_STATIC_THREAD] = "UPDATE statics SET thread = ?2 WHERE id = ?1",
    [STORE_STMT_INSERT_ROOT_METHOD] =
        "INSERT OR REPLACE INTO root_methods (function_id, name) VALUES (?1, ?2)",
    [STORE_STMT_INSERT_SNAPSHOT_STATIC] =
        "INSERT OR REPLACE INTO snapshot_statics (snapshot, object_id, field, static_id) "
        "VALUES (?1, ?2, ?3, ?4)",
    [STORE_STMT_INSERT_SNAPSHOT_STRING] =
        "INSERT OR REPLACE INTO snapshot_strings (snapshot, object_id, length, hash, value) "
        "VALUES (?1, ?2, ?3, ?4, ?5)",
    [STORE_STMT_INSERT_SNAPSHOT_COLLECTION] =
        "INSERT OR REPLACE INTO snapshot_collections (snapshot, object_id, count, capacity) "
        "VALUES (?1, ?2, ?3, ?4)",
    [STORE_STMT_UPSERT_THREAD] =
        "INSERT INTO threads (os_tid, thread_id, name) VALUES (?1, ?2, ?3) "
        "ON CONFLICT (os_tid) DO UPDATE SET thread_id = excluded.thread_id, name = excluded.name",
    [STORE_STMT_INSERT_THREAD_TID] = "INSERT OR IGNORE INTO threads (os_tid) VALUES (?1)",
    [STORE_STMT_INSERT_CHECKPOINT] =
        "INSERT INTO checkpoints (name, gc, time_ns, thread) VALUES (?1, ?2, ?3, ?4)",
    [STORE_STMT_INSERT_ALLOC_COUNT] =
        "INSERT INTO alloc_counts (gc, type_id, thread, heap, count, bytes, survived, "
        "survived_bytes, flags) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
    [STORE_STMT_INSERT_ALLOC_COUNTS_MANY] = NULL,
    [STORE_STMT_INSERT_OBJECT_CHUNK] =
        "INSERT INTO object_chunks (gc, thread, heap, generation, count, objects) "
        "VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    [STORE_STMT_INSERT_GENERATION_CHANGES] =
        "INSERT INTO generation_changes (gc, generation, count, ids) VALUES (?1, ?2, ?3, ?4)",
    [STORE_STMT_INSERT_OBJECT_DEATHS] =
        "INSERT INTO object_deaths (gc, count, ids) VALUES (?1, ?2, ?3)",
    [STORE_STMT_INSERT_GC] =
        "INSERT OR REPLACE INTO gcs (gc, generation, reason, induced, compacting, start_ns, "
        "end_ns, pause_ns, survived_bytes, moved_bytes, first_object_id, objects_live, incomplete, "
        "roots, pinned_roots, census_ns, census_objects, snapshot_skipped) "
        "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18)",
    [STORE_STMT_INSERT_GC_GENERATION] =
        "INSERT OR REPLACE INTO gc_generations (gc, generation, size_before, size_after) "
        "VALUES (?1, ?2, ?3, ?4)",
    [STORE_STMT_SET_COUNTER] = "INSERT OR REPLACE INTO counters (name, value) VALUES (?1, ?2)",
    [STORE_STMT_INSERT_SNAPSHOT] =
        "INSERT INTO snapshots (snapshot, gc, trigger, objects, refs, roots, handles, bytes, "
        "model_missing, model_extra, frozen, unresolved, walk_ns, model_unreported, reason) "
        "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)",
    [STORE_STMT_INSERT_SNAPSHOT_BLOCK] =
        "INSERT INTO snapshot_blocks (first_snapshot, last_snapshot, first_id, objects, ids, kinds,"
        " refs, fields) VALUES (?1, ?1, ?2, ?3, ?4, ?5, ?6, ?7)",
    [STORE_STMT_EXTEND_SNAPSHOT_BLOCK] = "UPDATE snapshot_blocks SET last_snapshot = ?2 WHERE id = ?1",
    [STORE_STMT_SNAPSHOT_BLOCKS_OF] =
        "SELECT first_id, id FROM snapshot_blocks WHERE last_snapshot = ?1 ORDER BY first_id",
    [STORE_STMT_SNAPSHOT_BLOCK_GET] =
        "SELECT objects, ids, kinds, refs, fields FROM snapshot_blocks WHERE id = ?1",
    [STORE_STMT_INSERT_SNAPSHOT_OBJECT] =
        "INSERT INTO snapshot_object_rows (snapshot, object_id, generation, flags, refs, fields) "
        "VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
    [STORE_STMT_INSERT_SNAPSHOT_OBJECTS_MANY] = NULL,
    [STORE_STMT_INSERT_SNAPSHOT_ROOT] =
        "INSERT INTO snapshot_roots (snapshot, object_id, kind, flags, root_id, thread) "
        "VALUES (?1, ?2, " STORE_ROOT_KIND_SQL("?3") ", ?4, ?5, ?6)",
    [STORE_STMT_INSERT_SNAPSHOT_ROOTS_MANY] = NULL,
    [STORE_STMT_INSERT_HANDLE] =
        "INSERT INTO handles (handle_id, kind, object_id, created_after_gc, destroyed_after_gc) "
        "VALUES (?1, ?2, ?3, ?4, NULL)",
    [STORE_STMT_SET_HANDLE_KIND] = "UPDATE handles SET kind = ?2 WHERE id = ?1",
    [STORE_STMT_HANDLE_DESTROYED] = "UPDATE handles SET destroyed_after_gc = ?2 WHERE id = ?1",
};

/* Multi-row forms: head, `rows` copies of row (comma-separated), tail; parameter n of row r is
 * r * columns + n. */
static const struct {
    store_stmt_id id;
    int rows;
    const char *head, *row, *tail;
} store_stmt_many[] = {
    {STORE_STMT_INSERT_ALLOC_COUNTS_MANY, STORE_RECORD_ROWS,
     "INSERT INTO alloc_counts (gc, type_id, thread, heap, count, bytes, survived, "
     "survived_bytes, flags) VALUES ",
     "(?,?,?,?,?,?,?,?,?)", ""},
    {STORE_STMT_INSERT_ALLOC_SAMPLES_MANY, STORE_RECORD_ROWS,
     "INSERT INTO alloc_samples (gc, type_id, thread, heap, size, stack_id, object_id, "
     "est_count, est_bytes) VALUES ",
     "(?,?,?,?,?,?,?,?,?)", ""},
    {STORE_STMT_INSERT_SNAPSHOT_OBJECTS_MANY, STORE_BATCH_ROWS,
     "INSERT INTO snapshot_object_rows (snapshot, object_id, generation, flags, refs, fields) "
     "VALUES ",
     "(?,?,?,?,?,?)", ""},
    {STORE_STMT_INSERT_SNAPSHOT_ROOTS_MANY, STORE_BATCH_ROWS,
     "INSERT INTO snapshot_roots (snapshot, object_id, kind, flags, root_id, thread) "
     "SELECT v.column1, v.column2, " STORE_ROOT_KIND_SQL("v.column3") ", v.column4, v.column5, "
     "v.column6 FROM (VALUES ",
     "(?,?,?,?,?,?)", ") AS v"},
};

static const char *const store_mode_names[] = {
    [HL_MODE_FULL] = "full",
    [HL_MODE_SAMPLED] = "sampled",
    [HL_MODE_ATTACH] = "attach",
    [HL_MODE_IMPORT] = "import",
};

static const struct {
    uint32_t bit;
    const char *name;
} store_run_flag_names[] = {
    {HL_RUN_FLAG_EMPTY_PROFILER, "empty-profiler"},
    {HL_RUN_FLAG_HANDLES, "handles"},
    {HL_RUN_FLAG_SAMPLES_FOLLOWED, "samples-followed"},
    {HL_RUN_FLAG_CENSUS_OFF, "census-off"},
};

gboolean store_writer_step(store_writer *w, store_stmt_id id, GError **error)
{
    sqlite3_stmt *st = w->stmt[id];
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE && rc != SQLITE_ROW) {
        store_sql_set_error(w->db, w->path, rc, sqlite3_errmsg(w->db), error);
        return FALSE;
    }
    return TRUE;
}

static void store_batch_init(store_row_batch *b, store_stmt_id one, store_stmt_id many,
                             int columns, int text_column)
{
    b->one = one;
    b->many = many;
    b->columns = columns;
    b->rows = 0;
    b->text_column = text_column;
    b->text_columns = 1;
    b->text = text_column >= 0 ? g_string_sized_new(4096) : NULL;
}

static void store_batch_release(store_row_batch *b)
{
    if (b->text != NULL)
        g_string_free(b->text, TRUE);
    b->text = NULL;
}

/* Binds `rows` buffered rows from row `first` to `st`, from parameter 1. The text stays in
 * b->text until the statement has run (SQLITE_STATIC). */
static void store_batch_bind(const store_row_batch *b, sqlite3_stmt *st, int first, int rows)
{
    const int64_t *v = &b->v[first * b->columns];
    for (int i = 0; i < rows * b->columns; i++) {
        if (v[i] == STORE_NULL) {
            sqlite3_bind_null(st, i + 1);
        } else if (i % b->columns >= b->text_column &&
                   i % b->columns < b->text_column + b->text_columns) {
            /* ends where the row's next text starts, or at the row's end */
            size_t end = b->text_end[first + i / b->columns];
            for (int c = i % b->columns + 1; c < b->text_column + b->text_columns; c++) {
                if (v[i - i % b->columns + c] != STORE_NULL) {
                    end = (size_t)v[i - i % b->columns + c];
                    break;
                }
            }
            sqlite3_bind_text(st, i + 1, b->text->str + v[i], (int)(end - (size_t)v[i]),
                              SQLITE_STATIC);
        } else {
            sqlite3_bind_int64(st, i + 1, v[i]);
        }
    }
}

/* SQLite calls this after each commit: how large the WAL is (store_writer_checkpoint). */
static int store_writer_wal_hook(void *ctx, sqlite3 *db G_GNUC_UNUSED,
                                 const char *name G_GNUC_UNUSED, int frames)
{
    ((store_writer *)ctx)->wal_frames = frames;
    return SQLITE_OK;
}

void store_writer_checkpoint(store_writer *w)
{
    if (w->wal_frames < STORE_WAL_CHECKPOINT_FRAMES)
        return;
    /* Passive: never waits for a reader; what a reader still uses is copied next time. A
     * failure costs only a longer WAL (the finishing checkpoint copies the rest). */
    sqlite3_wal_checkpoint_v2(w->db, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
    w->wal_frames = 0;
}

gboolean store_batch_flush(store_writer *w, store_row_batch *b, GError **error)
{
    gboolean ok = FALSE;
    if (b->rows == STORE_BATCH_ROWS) {
        store_batch_bind(b, w->stmt[b->many], 0, b->rows);
        if (!store_writer_step(w, b->many, error))
            goto out;
    } else {
        for (int r = 0; r < b->rows; r++) {
            store_batch_bind(b, w->stmt[b->one], r, 1);
            if (!store_writer_step(w, b->one, error))
                goto out;
        }
    }
    ok = TRUE;
out:
    b->rows = 0;
    if (b->text != NULL)
        g_string_truncate(b->text, 0);
    return ok;
}

gboolean store_batch_add(store_writer *w, store_row_batch *b, const int64_t *row, GError **error)
{
    memcpy(&b->v[b->rows * b->columns], row, sizeof *row * (size_t)b->columns);
    if (b->text != NULL)
        b->text_end[b->rows] = b->text->len;
    if (++b->rows < STORE_BATCH_ROWS)
        return TRUE;
    return store_batch_flush(w, b, error);
}

/* Binds a string from the stream: invalid UTF-8 is repaired, `empty_null` maps "" to NULL. */
static void store_bind_str(sqlite3_stmt *st, int idx, store_str s, gboolean empty_null)
{
    if (s.len == 0 && empty_null) {
        sqlite3_bind_null(st, idx);
    } else if (g_utf8_validate_len(s.ptr, s.len, NULL)) {
        sqlite3_bind_text(st, idx, s.ptr, (int)s.len, SQLITE_TRANSIENT);
    } else {
        char *fixed = g_utf8_make_valid(s.ptr, s.len);
        sqlite3_bind_text(st, idx, fixed, -1, g_free);
    }
}

/* "2026-11-22T10:00:00.123Z", or NULL for 0 (unknown). */
static char *store_iso_time(uint64_t unix_ns)
{
    char buf[64];
    struct tm tm;
    time_t secs = (time_t)(unix_ns / 1000000000u);

    if (unix_ns == 0 || gmtime_r(&secs, &tm) == NULL ||
        strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm) == 0)
        return NULL;
    return g_strdup_printf("%s.%03uZ", buf, (unsigned)(unix_ns / 1000000u % 1000u));
}

/* Runs one statement that is not on a hot path: prepared, bound by `bind`, stepped, finalized. */
typedef void (*store_bind_fn)(sqlite3_stmt *st, const void *data);

static gboolean store_writer_run_once(store_writer *w, const char *sql, store_bind_fn bind,
                                      const void *data, GError **error)
{
    sqlite3_stmt *st = NULL;
    gboolean ok = FALSE;

    if (sqlite3_prepare_v2(w->db, sql, -1, &st, NULL) != SQLITE_OK) {
        store_sql_fail(w->db, w->path, "prepare", error);
        goto out;
    }
    if (bind != NULL)
        bind(st, data);
    int rc = sqlite3_step(st);
    if (rc != SQLITE_DONE && rc != SQLITE_ROW) {
        store_sql_fail(w->db, w->path, "write", error);
        goto out;
    }
    ok = TRUE;
out:
    sqlite3_finalize(st);
    return ok;
}

/* ---- records other than GCs --------------------------------------------------------------- */

void store_writer_keep_for_replay(store_writer *w, const store_record *rec)
{
    if (!w->gc.open || w->gc.grouped) /* a GC applied whole is never rolled back */
        return;
    hl_rec_header h = {.type = rec->type, .size = rec->size};
    uint8_t *raw = g_malloc(sizeof h + rec->size);
    memcpy(raw, &h, sizeof h);
    memcpy(raw + sizeof h, rec->payload, rec->size);
    g_ptr_array_add(w->replay, g_bytes_new_take(raw, sizeof h + rec->size));
}

static void store_bind_run_start(sqlite3_stmt *st, const void *data)
{
    const store_record *rec = data;
    const hl_run_start *h = &rec->u.run_start.h;
    g_autofree char *start = store_iso_time(h->start_unix_ns);
    const char *mode = h->mode < G_N_ELEMENTS(store_mode_names) ? store_mode_names[h->mode] : NULL;

    store_bind_str(st, 1, rec->u.run_start.command, TRUE);
    sqlite3_bind_int64(st, 2, h->pid);
    store_bind_str(st, 3, rec->u.run_start.runtime_version, TRUE);
    store_bind_str(st, 4, rec->u.run_start.producer, TRUE);
    if (mode != NULL)
        sqlite3_bind_text(st, 5, mode, -1, SQLITE_STATIC);
    if (start != NULL)
        sqlite3_bind_text(st, 6, start, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 7, (int64_t)h->start_mono_ns);
}

static gboolean store_writer_update_flags(store_writer *w, GError **error);

static gboolean store_writer_run_start(store_writer *w, const store_record *rec, GError **error)
{
    store_writer_keep_for_replay(w, rec);
    w->run_flags = rec->u.run_start.h.flags;
    w->run_pid = rec->u.run_start.h.pid;
    /* The recorder's command line (its 4 KiB, the collector's 2) unless the process recorded is
     * another: a .NET descendant of a program that is not (`bash -c 'dotnet app.dll'`, make),
     * whose own command line is not the start of the program's; run.command is that pid's. */
    return store_writer_run_once(w,
                                 "UPDATE run SET command = CASE WHEN command IS NULL OR"
                                 " substr(command, 1, length(?1)) != ?1 THEN ?1 ELSE command END,"
                                 " pid = ?2, "
                                 "runtime_version = ?3, producer = ?4, mode = ?5, "
                                 "start_time = ?6, start_mono_ns = ?7 WHERE id = 1",
                                 store_bind_run_start, rec, error) &&
           store_writer_update_flags(w, error);
}

static gboolean store_writer_type(store_writer *w, const store_record *rec, GError **error)
{
    sqlite3_stmt *st = w->stmt[STORE_STMT_INSERT_TYPE];
    const hl_type *h = &rec->u.type.h;

    store_writer_keep_for_replay(w, rec);
    sqlite3_bind_int64(st, 1, h->type_id);
    store_bind_str(st, 2, rec->u.type.name, FALSE);
    sqlite3_bind_int64(st, 3, (int64_t)h->class_id);
    sqlite3_bind_int64(st, 4, h->flags);
    return store_writer_step(w, STORE_STMT_INSERT_TYPE, error);
}

static gboolean store_writer_field(store_writer *w, const store_record *rec, GError **error)
{
    sqlite3_stmt *st = w->stmt[STORE_STMT_INSERT_FIELD];
    const hl_field *h = &rec->u.field.h;

    store_writer_keep_for_replay(w, rec);
    sqlite3_bind_int64(st, 1, h->type_id);
    sqlite3_bind_int64(st, 2, h->field);
    store_bind_str(st, 3, rec->u.field.name, FALSE);
    return store_writer_step(w, STORE_STMT_INSERT_FIELD, error);
}

static gboolean store_writer_static(store_writer *w, const store_record *rec, GError **error)
{
    sqlite3_stmt *st = w->stmt[STORE_STMT_INSERT_STATIC];
    const hl_static *h = &rec->u.static_field.h;

    store_writer_keep_for_replay(w, rec);
    sqlite3_bind_int64(st, 1, h->static_id);
    sqlite3_bind_int64(st, 2, h->type_id);
    store_bind_str(st, 3, rec->u.static_field.name, FALSE);
    return store_writer_step(w, STORE_STMT_INSERT_STATIC, error);
}

static gboolean store_writer_static_thread(store_writer *w, const store_record *rec,
                                           GError **error)
{
    sqlite3_stmt *st = w->stmt[STORE_STMT_SET_STATIC_THREAD];

    store_writer_keep_for_replay(w, rec);
    sqlite3_bind_int64(st, 1, rec->u.static_thread.static_id);
    sqlite3_bind_int64(st, 2, rec->u.static_thread.os_tid);
    return store_writer_step(w, STORE_STMT_SET_STATIC_THREAD, error);
}

static gboolean store_writer_root_method(store_writer *w, const store_record *rec,
                                         GError **error)
{
    sqlite3_stmt *st = w->stmt[STORE_STMT_INSERT_ROOT_METHOD];

    store_writer_keep_for_replay(w, rec);
    sqlite3_bind_int64(st, 1, (int64_t)rec->u.root_method.h.function_id);
    store_bind_str(st, 2, rec->u.root_method.name, FALSE);
    return store_writer_step(w, STORE_STMT_INSERT_ROOT_METHOD, error);
}

static gboolean store_writer_thread(store_writer *w, const store_record *rec, GError **error)
{
    sqlite3_stmt *st = w->stmt[STORE_STMT_UPSERT_THREAD];
    const hl_thread *h = &rec->u.thread.h;

    store_writer_keep_for_replay(w, rec);
    sqlite3_bind_int64(st, 1, h->os_tid);
    sqlite3_bind_int64(st, 2, (int64_t)h->thread_id);
    store_bind_str(st, 3, rec->u.thread.name, TRUE);
    if (!store_writer_step(w, STORE_STMT_UPSERT_THREAD, error))
        return FALSE;
    g_hash_table_add(w->threads_seen, GUINT_TO_POINTER(h->os_tid));
    return TRUE;
}

static gboolean store_writer_program_checkpoint(store_writer *w, const store_record *rec,
                                                GError **error)
{
    sqlite3_stmt *st = w->stmt[STORE_STMT_INSERT_CHECKPOINT];
    const hl_checkpoint *h = &rec->u.checkpoint.h;

    store_writer_keep_for_replay(w, rec);
    store_bind_str(st, 1, rec->u.checkpoint.name, FALSE);
    sqlite3_bind_int64(st, 2, h->after_gc);
    sqlite3_bind_int64(st, 3, (int64_t)h->time_ns);
    sqlite3_bind_int64(st, 4, h->os_tid);
    return store_writer_step(w, STORE_STMT_INSERT_CHECKPOINT, error);
}

gboolean store_writer_note_thread(store_writer *w, uint32_t os_tid, GError **error)
{
    if (w->last_tid_valid && w->last_tid == os_tid)
        return TRUE;
    if (!g_hash_table_contains(w->threads_seen, GUINT_TO_POINTER(os_tid))) {
        sqlite3_bind_int64(w->stmt[STORE_STMT_INSERT_THREAD_TID], 1, os_tid);
        if (!store_writer_step(w, STORE_STMT_INSERT_THREAD_TID, error))
            return FALSE;
        g_hash_table_add(w->threads_seen, GUINT_TO_POINTER(os_tid));
    }
    w->last_tid = os_tid;
    w->last_tid_valid = TRUE;
    return TRUE;
}

static void store_bind_run_end(sqlite3_stmt *st, const void *data)
{
    const hl_run_end *e = data;
    g_autofree char *end = store_iso_time(e->end_unix_ns);
    if (end != NULL)
        sqlite3_bind_text(st, 1, end, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 2, (int64_t)e->end_mono_ns);
}

/* CPU time of this process so far (user + system), in ns: the writer's cost under contention,
 * when wall time says little. */
static uint64_t store_writer_cpu_ns(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0)
        return 0;
    return ((uint64_t)ru.ru_utime.tv_sec + (uint64_t)ru.ru_stime.tv_sec) * 1000000000u +
           ((uint64_t)ru.ru_utime.tv_usec + (uint64_t)ru.ru_stime.tv_usec) * 1000u;
}

static gboolean store_writer_run_end(store_writer *w, const store_record *rec, GError **error)
{
    if (!store_gc_discard_open(w, "the program ended before its GC completed", error))
        return FALSE;
    const hl_run_end *e = &rec->u.run_end;
    w->counters = e->counters;
    w->have_counters = TRUE;
    w->complete = TRUE;
    w->run_end_received_ns = (uint64_t)g_get_monotonic_time() * 1000u;
    w->run_end_cpu_ns = store_writer_cpu_ns();
    w->program_peak_rss_bytes = e->program_peak_rss_bytes;
    w->program_gcs = e->gcs;
    w->have_program_gcs = TRUE;
    if (e->shutdown_mono_ns != 0 && e->end_mono_ns >= e->shutdown_mono_ns) {
        w->exit_wait_ns = e->end_mono_ns - e->shutdown_mono_ns;
        w->have_exit_wait = TRUE;
    }
    return store_writer_run_once(w, "UPDATE run SET end_time = ?1, end_mono_ns = ?2 WHERE id = 1",
                                 store_bind_run_end, &rec->u.run_end, error);
}

/* An attach session ended without its last snapshot: stored with the counters (loss
 * `final-snapshot-missed`). */
static gboolean store_writer_final_snapshot_missed(store_writer *w, const store_record *rec,
                                                   GError **error)
{
    (void)error;
    w->final_missed = rec->u.final_snapshot_missed;
    return TRUE;
}

/* An attach session's detach went on with ForceGC threads in the runtime: stored as counters
 * (nothing of the recording is missing for it). */
static gboolean store_writer_forcers_left(store_writer *w, const store_record *rec,
                                          GError **error)
{
    (void)error;
    w->forcers_left = rec->u.forcers_left;
    return TRUE;
}

typedef gboolean (*store_apply_fn)(store_writer *w, const store_record *rec, GError **error);

static const store_apply_fn store_apply_table[] = {
    [HL_REC_RUN_START] = store_writer_run_start,
    [HL_REC_TYPE] = store_writer_type,
    [HL_REC_THREAD] = store_writer_thread,
    [HL_REC_GC_START] = store_gc_start,
    [HL_REC_GC_DEATHS] = store_gc_deaths,
    [HL_REC_GC_PROMOTIONS] = store_gc_promotions,
    [HL_REC_GC_END] = store_gc_end,
    [HL_REC_RUN_END] = store_writer_run_end,
    [HL_REC_FINAL_SNAPSHOT_MISSED] = store_writer_final_snapshot_missed,
    [HL_REC_FORCERS_LEFT] = store_writer_forcers_left,
    [HL_REC_HANDLE_CREATED] = store_handle_created,
    [HL_REC_HANDLE_DESTROYED] = store_handle_destroyed,
    [HL_REC_GC_HANDLE_KINDS] = store_handle_kinds,
    [HL_REC_DISCOVERED] = store_gc_discovered,
    [HL_REC_SNAPSHOT_START] = store_snapshot_start,
    [HL_REC_SNAPSHOT_OBJECTS] = store_snapshot_items,
    [HL_REC_SNAPSHOT_REFS] = store_snapshot_items,
    [HL_REC_SNAPSHOT_REF_FIELDS] = store_snapshot_items,
    [HL_REC_FIELD] = store_writer_field,
    [HL_REC_STATIC] = store_writer_static,
    [HL_REC_ROOT_METHOD] = store_writer_root_method,
    [HL_REC_STATIC_THREAD] = store_writer_static_thread,
    [HL_REC_SNAPSHOT_STATICS] = store_snapshot_items,
    [HL_REC_SNAPSHOT_STRINGS] = store_snapshot_items,
    [HL_REC_SNAPSHOT_COLLECTIONS] = store_snapshot_items,
    [HL_REC_SNAPSHOT_ROOTS] = store_snapshot_items,
    [HL_REC_SNAPSHOT_ROOT_THREADS] = store_snapshot_items,
    [HL_REC_SNAPSHOT_END] = store_snapshot_end,
    [HL_REC_ALLOC_COUNTS] = store_gc_alloc_counts,
    [HL_REC_GC_SURVIVORS] = store_gc_survivors,
    [HL_REC_GC_SURVIVORS_PACKED] = store_gc_survivors_packed,
    [HL_REC_GC_HANDLES_FREED] = store_handles_freed,
    [HL_REC_METHOD] = store_samples_method,
    [HL_REC_STACK] = store_samples_stack,
    [HL_REC_ALLOC_SAMPLES] = store_samples_alloc,
    [HL_REC_COUNT_SITE] = store_counts_site,
    [HL_REC_CHECKPOINT] = store_writer_program_checkpoint,
    [HL_REC_SNAPSHOT_REASON] = store_snapshot_reason,
};

gboolean store_writer_apply(void *ctx, const store_record *rec, GError **error)
{
    store_apply_fn fn = rec->type < G_N_ELEMENTS(store_apply_table) ? store_apply_table[rec->type]
                                                                    : NULL;
    return fn == NULL || fn(ctx, rec, error);
}

/* ---- grouped commits ----------------------------------------------------------------------
 *
 * A commit per GC cost more than the GC's rows on a program with many small GCs: the pages a GC
 * touches (the last leaf of gcs, gc_generations, alloc_counts, counters...) written again into
 * the WAL at each commit, a frame header and a page each, and the locks taken and released
 * (`bench_store replay` of sampled AllocBench's stream, --stacks off: 262 GCs, 12 ms of CPU,
 * 5 ms with a commit per 64 GCs). So a GC whose records have all come is applied whole into the
 * open transaction, with the GCs before it, and they are committed together: once
 * STORE_GROUP_COMMIT_MS have passed since the first of them was applied — while the stream
 * keeps the writer busy, at the next GC's end or read, and while it is idle, by the wait for
 * more data ending then (store_serve.c) —, once their records add up to STORE_GROUP_MAX_BYTES,
 * before any GC applied as it comes, and at the end of the stream. A GC applied whole never needs a rollback (its end came), so it needs no
 * transaction of its own; one that is not (records still coming, one of more than
 * STORE_HOLD_MAX_BYTES, a snapshot in it, a stream that ends inside it) is applied as its
 * records come, in its own transaction as before, after the group's commit. The rows are the
 * same either way: only when they become visible to a reader changes (at most
 * STORE_GROUP_COMMIT_MS of the writer's time later while the stream keeps it busy), and what a
 * killed writer keeps (every GC committed before, as before: the group's GCs not yet committed
 * are lost with it, like the GC it was writing). */

static void store_writer_hold(store_writer *w, const store_record *rec)
{
    hl_rec_header h = {.type = rec->type, .size = rec->size};
    g_byte_array_append(w->held, (const guint8 *)&h, sizeof h);
    g_byte_array_append(w->held, rec->payload, rec->size);
}

/* Applies the held records in the order they came: `whole` when the last one is the GC's
 * GC_END (the GC joins the group), else as they would have been applied had they not been held. */
static gboolean store_writer_release(store_writer *w, gboolean whole, GError **error)
{
    gboolean ok = TRUE;
    const uint8_t *p = w->held->data, *end = p + w->held->len;

    w->holding = FALSE;
    w->applying_held = whole;
    if (whole)
        w->group_bytes += w->held->len;
    while (ok && p < end) {
        hl_rec_header h;
        store_record rec;
        memcpy(&h, p, sizeof h);
        ok = store_stream_decode(h.type, p + sizeof h, h.size, &rec, error) &&
             store_writer_apply(w, &rec, error);
        p += sizeof h + h.size;
    }
    w->applying_held = FALSE;
    g_byte_array_set_size(w->held, 0);
    return ok;
}

/* Records a held GC may hold: anything but the start of another GC, the end of the run, and a
 * snapshot (its clients are answered at its commit, and it is large). */
static gboolean store_writer_holdable(const store_record *rec)
{
    switch (rec->type) {
    case HL_REC_GC_START:
    case HL_REC_RUN_END:
    case HL_REC_SNAPSHOT_START:
    case HL_REC_SNAPSHOT_OBJECTS:
    case HL_REC_SNAPSHOT_REFS:
    case HL_REC_SNAPSHOT_REF_FIELDS:
    case HL_REC_SNAPSHOT_STATICS:
    case HL_REC_SNAPSHOT_STRINGS:
    case HL_REC_SNAPSHOT_COLLECTIONS:
    case HL_REC_SNAPSHOT_ROOTS:
    case HL_REC_SNAPSHOT_ROOT_THREADS:
    case HL_REC_SNAPSHOT_END:
    case HL_REC_SNAPSHOT_REASON:
        return FALSE;
    default:
        return TRUE;
    }
}

/* The stream's records arrive here (store_writer_ingest): a GC's are held until its GC_END
 * comes, then applied whole; anything else is applied at once. */
static gboolean store_writer_feed(void *ctx, const store_record *rec, GError **error)
{
    store_writer *w = ctx;

    if (w->holding) {
        if (rec->type == HL_REC_GC_END && rec->u.gc_end.gc == w->held_gc) {
            store_writer_hold(w, rec);
            return store_writer_release(w, TRUE, error);
        }
        if (store_writer_holdable(rec) &&
            w->held->len + sizeof(hl_rec_header) + rec->size <= STORE_HOLD_MAX_BYTES) {
            /* Checked whole now: a held GC is applied into its group's transaction, where a
             * corrupt record found half applied could not be taken out alone. */
            if (rec->type == HL_REC_GC_SURVIVORS_PACKED &&
                !store_stream_survivors_packed_check(rec, error))
                return FALSE;
            store_writer_hold(w, rec);
            return TRUE;
        }
        if (!store_writer_release(w, FALSE, error))
            return FALSE;
        return store_writer_apply(w, rec, error);
    }
    /* Only a GC that starts with none open and follows the last one (else its GC_START fails
     * or discards the open GC where it stands, as before). */
    if (rec->type == HL_REC_GC_START && !w->gc.open &&
        (!w->any_gc || rec->u.gc_start.gc > w->last_gc)) {
        w->holding = TRUE;
        w->held_gc = rec->u.gc_start.gc;
        store_writer_hold(w, rec);
        return TRUE;
    }
    return store_writer_apply(w, rec, error);
}

gboolean store_writer_commit(store_writer *w, GError **error)
{
    if (!store_writer_step(w, STORE_STMT_COMMIT, error) ||
        !store_writer_step(w, STORE_STMT_BEGIN, error))
        return FALSE;
    w->group_gcs = 0;
    w->group_bytes = 0;
    return TRUE;
}

gboolean store_writer_group_pending(const store_writer *w)
{
    return w->group_gcs > 0;
}

gint64 store_writer_group_due_us(const store_writer *w)
{
    if (w->group_gcs == 0)
        return -1;
    gint64 left = w->group_since_us + (gint64)w->group_commit_ms * 1000 - g_get_monotonic_time();
    return left > 0 ? left : 0;
}

gboolean store_writer_group_commit(store_writer *w, GError **error)
{
    if (w->group_gcs == 0)
        return TRUE;
    if (!store_writer_commit(w, error))
        return FALSE;
    store_writer_checkpoint(w);
    return TRUE;
}

gboolean store_writer_group_add(store_writer *w, GError **error)
{
    gint64 now = g_get_monotonic_time();
    if (w->group_gcs++ == 0)
        w->group_since_us = now;
    if (now - w->group_since_us < (gint64)w->group_commit_ms * 1000 &&
        w->group_bytes < STORE_GROUP_MAX_BYTES)
        return TRUE;
    return store_writer_group_commit(w, error);
}

/* The stream source as store_writer_ingest reads it: a group due by now is committed before
 * each read (a stream that keeps the writer busy without a GC ending). */
typedef struct store_ingest_source {
    store_writer *w;
    store_read_fn read;
    void *ctx;
} store_ingest_source;

static ssize_t store_ingest_read(void *ctx, void *buf, size_t len, GError **error)
{
    store_ingest_source *src = ctx;
    if (store_writer_group_due_us(src->w) == 0 && !store_writer_group_commit(src->w, error))
        return -1;
    return src->read(src->ctx, buf, len, error);
}

/* ---- run row, counters -------------------------------------------------------------------- */

static void store_bind_text1(sqlite3_stmt *st, const void *data)
{
    if (data != NULL)
        sqlite3_bind_text(st, 1, data, -1, SQLITE_STATIC);
}

static void store_bind_int1(sqlite3_stmt *st, const void *data)
{
    sqlite3_bind_int64(st, 1, *(const int *)data);
}

/* run.flags = the collector's run flags plus the writer's notes, comma-separated. */
static gboolean store_writer_update_flags(store_writer *w, GError **error)
{
    g_autoptr(GPtrArray) names = g_ptr_array_new();
    for (size_t i = 0; i < G_N_ELEMENTS(store_run_flag_names); i++)
        if (w->run_flags & store_run_flag_names[i].bit)
            g_ptr_array_add(names, (gpointer)store_run_flag_names[i].name);
    if (w->corrupt)
        g_ptr_array_add(names, "stream-corrupt");
    if (w->connections_refused > 0)
        g_ptr_array_add(names, "peer-refused");
    g_ptr_array_add(names, NULL);
    g_autofree char *flags = names->len > 1 ? g_strjoinv(",", (char **)names->pdata) : NULL;
    return store_writer_run_once(w, "UPDATE run SET flags = ?1 WHERE id = 1", store_bind_text1,
                                 flags, error);
}

/* run.loss: why data is missing, comma-separated, NULL when nothing is (SCHEMA.md, "Losses").
 * From the collector's counters as of the last GC_END or RUN_END, and from how the stream
 * ended (known at finish). */
static gboolean store_writer_update_loss(store_writer *w, GError **error)
{
    const hl_counters *c = &w->counters;
    g_autoptr(GPtrArray) names = g_ptr_array_new();

    if (w->have_counters)
        store_loss_add(names, c, w->writer_stalled);
    /* How the stream ended; with the collector's end file the program was not killed: the
     * collector gave the writer up (the reason above says why). */
    if (w->finished && !w->complete && w->connected && !w->no_data_forced &&
        (w->corrupt || w->stopped || !w->collector_ended))
        g_ptr_array_add(names, w->corrupt   ? "stream-corrupt"
                               : w->stopped ? "recording-stopped"
                               : w->peer_is_program && w->program_exited ? "no-shutdown"
                                                                         : "program-killed");
    if (w->final_missed.reason)
        g_ptr_array_add(names, "final-snapshot-missed");
    if (w->recorder_killed)
        g_ptr_array_add(names, "recorder-killed");
    g_ptr_array_add(names, NULL);
    char *loss = names->len > 1 ? g_strjoinv(",", (char **)names->pdata) : NULL;
    if (w->loss_valid && g_strcmp0(loss, w->loss_written) == 0) {
        g_free(loss); /* the row says it already: most GCs change nothing there */
        return TRUE;
    }
    if (!store_writer_run_once(w, "UPDATE run SET loss = ?1 WHERE id = 1", store_bind_text1,
                               loss, error)) {
        g_free(loss);
        return FALSE;
    }
    g_free(w->loss_written);
    w->loss_written = loss;
    w->loss_valid = TRUE;
    return TRUE;
}

static gboolean store_writer_set_counter(store_writer *w, const char *name, uint64_t value,
                                         GError **error)
{
    sqlite3_stmt *st = w->stmt[STORE_STMT_SET_COUNTER];
    sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, (int64_t)value);
    return store_writer_step(w, STORE_STMT_SET_COUNTER, error);
}

/* Writes counter `i` of store_writer_write_counters unless its row holds that value already. */
static gboolean store_writer_put_counter(store_writer *w, int i, const char *name, uint64_t value,
                                         GError **error)
{
    if (w->counter_valid[i] && w->counter_value[i] == value)
        return TRUE;
    if (!store_writer_set_counter(w, name, value, error))
        return FALSE;
    w->counter_value[i] = value;
    w->counter_valid[i] = TRUE;
    return TRUE;
}

void store_writer_forget_written(store_writer *w)
{
    memset(w->counter_valid, 0, sizeof w->counter_valid);
    w->loss_valid = FALSE;
}

/* At every GC_END and at finish. Only the rows whose value changed are written (most do not
 * from one GC to the next: 3 statements a GC instead of 26, and one page less when run.loss
 * stays as it was): what each row holds is remembered, and forgotten at a rollback. */
gboolean store_writer_write_counters(store_writer *w, GError **error)
{
    const hl_counters *c = &w->counters;
    const struct {
        const char *name;
        uint64_t value;
        gboolean present;
    } counters[STORE_COUNTERS_WRITTEN] = {
        {"allocs_seen", c->allocs_seen, w->have_counters},
        {"allocs_dropped", c->allocs_dropped, w->have_counters},
        {"allocs_dropped_buffer", c->allocs_dropped_buffer, w->have_counters},
        {"allocs_dropped_writer", c->allocs_dropped_writer, w->have_counters},
        {"gc_events_dropped", c->gc_events_dropped, w->have_counters},
        {"records_dropped", c->records_dropped, w->have_counters},
        {"bytes_dropped", c->bytes_dropped, w->have_counters},
        {"model_anomalies", c->model_anomalies, w->have_counters},
        {"threads_overflowed", c->threads_overflowed, w->have_counters},
        {"gcs_dropped", c->gcs_dropped, w->have_counters},
        {"snapshots_dropped", c->snapshots_dropped, w->have_counters},
        {"writer_lost", c->writer_lost, w->have_counters},
        {"thread_waits", c->thread_waits, w->have_counters},
        {"thread_wait_ns", c->thread_wait_ns, w->have_counters},
        /* Only where the census counted (sampled and attach modes, stream version 6 on): their
         * absence says no total is known, not that none was lost. */
        {"census_allocs", c->census_allocs, w->have_counters && c->census_allocs != 0},
        {"census_bytes", c->census_bytes, w->have_counters && c->census_allocs != 0},
        {"stream_bytes", w->stream.stream_bytes, TRUE},
        {"records_read", w->stream.records_read, TRUE},
        {"records_skipped_unknown", w->stream.records_skipped_unknown, TRUE},
        {"gcs_discarded_incomplete", w->gcs_discarded_incomplete, TRUE},
        {"writer_anomalies", w->writer_anomalies, TRUE},
        {"handles_closed_by_reuse", w->handles_closed_by_reuse, TRUE},
        {"connections_refused", w->connections_refused, TRUE},
        {"snapshots_discarded", w->snapshots_discarded, TRUE},
        /* Written only when the sample budget left samples out: the estimates' note
         * (SCHEMA.md) */
        {"samples_budgeted", w->samples_budgeted, w->samples_budgeted != 0},
        {"program_peak_rss_bytes", w->program_peak_rss_bytes, w->program_peak_rss_bytes != 0},
        {"program_gcs", w->program_gcs, w->have_program_gcs},
        /* Only when an attach session's detach gave its last snapshot up */
        {"final_snapshot_missed", w->final_missed.reason, w->final_missed.reason != 0},
        {"final_snapshot_gcs_behind", w->final_missed.gcs_behind, w->final_missed.reason != 0},
        {"final_snapshot_wait_ms", w->final_missed.waited_ms, w->final_missed.reason != 0},
        {"snapshots_skipped", w->final_missed.snapshots_skipped, w->final_missed.reason != 0},
        /* Only when a policy's snapshot was not taken for the walks' bound */
        {"snapshots_skipped_queued", w->snapshots_skipped_queued,
         w->snapshots_skipped_queued != 0},
        /* Only when a detach's wait for its ForceGC threads hit its bound */
        {"forcegc_threads_left", w->forcers_left.threads, w->forcers_left.threads != 0},
        {"forcegc_wait_ms", w->forcers_left.waited_ms, w->forcers_left.threads != 0},
    };
    for (int i = 0; i < STORE_COUNTERS_WRITTEN; i++)
        if (counters[i].present &&
            !store_writer_put_counter(w, i, counters[i].name, counters[i].value, error))
            return FALSE;
    return store_writer_update_loss(w, error);
}

/* The writer's own figures, written last (after the final commit and the indexes, so that
 * writer_finish_ns covers them): its peak memory, the time from RUN_END to here, and how long
 * the program's exit waited for the collector (from RUN_END). */
static gboolean store_writer_write_own_figures(store_writer *w, GError **error)
{
    struct rusage ru;
    gboolean ok = FALSE;

    if (!store_sql_exec(w->db, w->path, "BEGIN", error))
        goto out;
    if (getrusage(RUSAGE_SELF, &ru) == 0 &&
        !store_writer_set_counter(w, "writer_peak_rss_bytes", (uint64_t)ru.ru_maxrss * 1024u,
                                  error))
        goto out;
    if (w->have_exit_wait &&
        !store_writer_set_counter(w, "collector_exit_wait_ns", w->exit_wait_ns, error))
        goto out;
    if (w->complete) {
        uint64_t now = (uint64_t)g_get_monotonic_time() * 1000u;
        if (!store_writer_set_counter(w, "writer_finish_ns", now - w->run_end_received_ns, error) ||
            !store_writer_set_counter(w, "writer_run_cpu_ns", w->run_end_cpu_ns, error) ||
            !store_writer_set_counter(w, "writer_finish_cpu_ns",
                                      store_writer_cpu_ns() - w->run_end_cpu_ns, error))
            goto out;
    }
    if (!store_sql_exec(w->db, w->path, "COMMIT", error))
        goto out;
    ok = TRUE;
out:
    if (!ok && !sqlite3_get_autocommit(w->db))
        sqlite3_exec(w->db, "ROLLBACK", NULL, NULL, NULL);
    return ok;
}

/* ---- lifecycle ---------------------------------------------------------------------------- */

/* Refuses an existing database, or the WAL of an earlier one (SQLite would replay it). */
static gboolean store_writer_check_new(const char *path, GError **error)
{
    static const char *const suffixes[] = {"", "-wal", "-journal"};
    struct stat st;
    for (size_t i = 0; i < G_N_ELEMENTS(suffixes); i++) {
        g_autofree char *p = g_strconcat(path, suffixes[i], NULL);
        if (lstat(p, &st) == 0) {
            g_set_error(error, STORE_ERROR, STORE_ERROR_EXISTS,
                        "%s already exists; heaplens does not overwrite it", p);
            return FALSE;
        }
    }
    return TRUE;
}

static void store_writer_close(store_writer *w)
{
    for (int i = 0; i < STORE_STMT_COUNT; i++)
        sqlite3_finalize(w->stmt[i]);
    sqlite3_close(w->db);
    store_alloc_keys_release(&w->alloc_keys);
    store_snapshot_release(&w->snap);
    if (w->gc.snapshots != NULL)
        g_array_unref(w->gc.snapshots);
    if (w->handles != NULL)
        g_hash_table_unref(w->handles);
    if (w->threads_seen != NULL)
        g_hash_table_unref(w->threads_seen);
    if (w->replay != NULL)
        g_ptr_array_unref(w->replay);
    store_batch_release(&w->snapshot_object_rows);
    store_snapblock_release(&w->snapblock);
    for (int g = 0; g <= STORE_CHANGE_DEATHS; g++)
        g_free(w->change_ids[g]);
    g_free(w->change_scratch);
    for (int c = 0; c < STORE_CHUNKS_OPEN; c++)
        if (w->chunks[c].json != NULL)
            g_string_free(w->chunks[c].json, TRUE);
    if (w->change_json != NULL)
        g_string_free(w->change_json, TRUE);
    g_free(w->db_failure);
    g_free(w->loss_written);
    if (w->held != NULL)
        g_byte_array_unref(w->held);
    g_free(w->session_dir);
    g_free(w->path);
    g_free(w);
}

store_writer *store_writer_create(const char *path, const char *command, GError **error)
{
    store_writer *w = g_new0(store_writer, 1);
    gboolean created = FALSE, ok = FALSE;

    w->path = g_strdup(path);
    w->threads_seen = g_hash_table_new(g_direct_hash, g_direct_equal);
    w->replay = g_ptr_array_new_with_free_func((GDestroyNotify)g_bytes_unref);
    w->held = g_byte_array_new();
    w->group_commit_ms = STORE_GROUP_COMMIT_MS;
    w->handles = g_hash_table_new(g_direct_hash, g_direct_equal);
    w->gc.snapshots = g_array_new(FALSE, FALSE, sizeof(store_snapshot_done));
    for (int g = 0; g <= STORE_CHANGE_DEATHS; g++)
        w->change_ids[g] = g_new(uint64_t, STORE_CHANGE_IDS);
    w->change_scratch = g_new(uint64_t, STORE_CHANGE_IDS);
    for (int c = 0; c < STORE_CHUNKS_OPEN; c++)
        w->chunks[c].json = g_string_sized_new(1024);
    w->change_json = g_string_sized_new(STORE_CHANGE_IDS * 4);
    store_batch_init(&w->snapshot_object_rows, STORE_STMT_INSERT_SNAPSHOT_OBJECT,
                     STORE_STMT_INSERT_SNAPSHOT_OBJECTS_MANY, 6, 4);
    w->snapshot_object_rows.text_columns = 2;
    store_snapblock_init(&w->snapblock);
    w->snapshot_rows = g_strcmp0(g_getenv("HEAPLENS_SNAPSHOT_ROWS"), "1") == 0;
    store_batch_init(&w->snapshot_root_rows, STORE_STMT_INSERT_SNAPSHOT_ROOT,
                     STORE_STMT_INSERT_SNAPSHOT_ROOTS_MANY, 6, -1);

    if (!store_writer_check_new(path, error))
        goto out;
    /* Create the file ourselves: atomically (O_EXCL) and private (0600). */
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0) {
        g_set_error(error, STORE_ERROR, errno == EEXIST ? STORE_ERROR_EXISTS : STORE_ERROR_IO,
                    errno == EEXIST ? "%s already exists; heaplens does not overwrite it"
                                    : "cannot create %s: %s",
                    path, g_strerror(errno));
        goto out;
    }
    created = TRUE;
    /* The schema is written as the file it makes (store_schema_image), not created. */
    gboolean imaged = store_schema_image.size > 0;
    gboolean written = !imaged || store_schema_image_write(fd, path, error);
    close(fd);
    if (!written)
        goto out;
    /* NOMUTEX: the writer is single-threaded; no lock around every bind and step. */
    if (sqlite3_open_v2(path, &w->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX,
                        store_vfs_writer()) !=
        SQLITE_OK) {
        store_sql_fail(w->db, path, "cannot open", error);
        goto out;
    }
    sqlite3_extended_result_codes(w->db, 1);
    sqlite3_busy_timeout(w->db, STORE_WRITER_BUSY_MS);
    if (!(imaged ? store_schema_connect(w->db, path, error)
                 : store_schema_create(w->db, path, error)))
        goto out;
    sqlite3_wal_hook(w->db, store_writer_wal_hook, w); /* instead of the autocheckpoint */
    if (w->snapshot_rows &&
        !store_sql_exec(w->db, path,
                        "CREATE TABLE snapshot_object_rows (snapshot INTEGER NOT NULL,"
                        " object_id INTEGER NOT NULL, generation INTEGER, flags INTEGER NOT NULL,"
                        " refs TEXT, fields TEXT, PRIMARY KEY (snapshot, object_id)) WITHOUT ROWID",
                        error))
        goto out;
    if (!store_writer_run_once(w, "INSERT INTO run (id, command, status) VALUES (1, ?1, 'recording')",
                               store_bind_text1, command, error))
        goto out;
    for (size_t i = 0; i < G_N_ELEMENTS(store_stmt_many); i++) {
        if (store_stmt_many[i].id == STORE_STMT_INSERT_SNAPSHOT_OBJECTS_MANY && !w->snapshot_rows)
            continue;
        GString *sql = g_string_new(store_stmt_many[i].head);
        for (int r = 0; r < store_stmt_many[i].rows; r++)
            g_string_append_printf(sql, "%s%s", r > 0 ? "," : "", store_stmt_many[i].row);
        g_string_append(sql, store_stmt_many[i].tail);
        int rc = sqlite3_prepare_v3(w->db, sql->str, -1, SQLITE_PREPARE_PERSISTENT,
                                    &w->stmt[store_stmt_many[i].id], NULL);
        g_string_free(sql, TRUE);
        if (rc != SQLITE_OK) {
            store_sql_fail(w->db, path, "prepare", error);
            goto out;
        }
    }
    for (int i = 0; i < STORE_STMT_COUNT; i++) {
        if (store_stmt_sql[i] == NULL ||
            (i == STORE_STMT_INSERT_SNAPSHOT_OBJECT && !w->snapshot_rows))
            continue;
        if (sqlite3_prepare_v3(w->db, store_stmt_sql[i], -1, SQLITE_PREPARE_PERSISTENT,
                               &w->stmt[i], NULL) != SQLITE_OK) {
            store_sql_fail(w->db, path, "prepare", error);
            goto out;
        }
    }
    if (!store_sql_exec(w->db, path, "BEGIN", error))
        goto out;
    ok = TRUE;
out:
    if (!ok) {
        store_writer_close(w);
        w = NULL;
        if (created) {
            static const char *const suffixes[] = {"", "-wal", "-shm", "-journal"};
            for (size_t i = 0; i < G_N_ELEMENTS(suffixes); i++) {
                g_autofree char *p = g_strconcat(path, suffixes[i], NULL);
                unlink(p);
            }
        }
    }
    return w;
}

/* Did the last failure come from the database rather than the stream? Its last call failed
 * with a full disk or an I/O error, or its transaction is gone (SQLite rolls back on some
 * failures; the writer always holds one open between create and finish). */
static gboolean store_writer_db_failed(store_writer *w)
{
    int rc = sqlite3_errcode(w->db) & 0xff;
    return rc == SQLITE_FULL || rc == SQLITE_IOERR || rc == SQLITE_NOMEM || rc == SQLITE_CORRUPT ||
           rc == SQLITE_CANTOPEN || sqlite3_get_autocommit(w->db);
}

gboolean store_writer_ingest(store_writer *w, store_read_fn read, void *read_ctx, GError **error)
{
    store_stream_end end = STORE_STREAM_CUT;
    GError *err = NULL;
    gboolean ok;

    w->ingested = TRUE;
    store_ingest_source src = {.w = w, .read = read, .ctx = read_ctx};
    ok = store_stream_run(store_ingest_read, &src, store_writer_feed, w, &end, &w->stream, &err);
    if (w->holding) {
        /* The stream ended (or failed) inside a held GC: its records are applied as they came,
         * and the GC is then left out below, as if they had never been held. */
        GError *err2 = NULL;
        if (!store_writer_release(w, FALSE, &err2)) {
            if (ok)
                err = err2;
            else
                g_clear_error(&err2);
            ok = FALSE;
        }
    }
    /* The stream has ended (or stopped at a corrupt record): the GCs applied whole are
     * committed now, as if it had gone idle. (A GC open here was applied as it came: none of
     * the group is in its transaction.) */
    if (store_writer_group_pending(w) && (ok || !store_writer_db_failed(w))) {
        GError *err2 = NULL;
        if (!store_writer_group_commit(w, &err2)) {
            if (ok)
                err = err2;
            else
                g_clear_error(&err2);
            ok = FALSE;
        }
    }
    if (w->stream.header_ok)
        w->connected = TRUE;
    if (!ok && err->domain == STORE_ERROR && err->code == STORE_ERROR_STREAM &&
        w->stream.header_ok) {
        /* A corrupt record: keep everything complete before it, as for a truncated stream. */
        w->corrupt = TRUE;
    }
    if (!ok && store_writer_db_failed(w)) {
        /* The database cannot take more (disk full, I/O error; SQLite may have rolled the
         * transaction back already): drop what is uncommitted, write nothing more. */
        w->db_failure = g_strdup(err->message);
        if (!sqlite3_get_autocommit(w->db))
            sqlite3_exec(w->db, "ROLLBACK", NULL, NULL, NULL);
        w->gcs_written -= w->group_gcs; /* not committed: gone with the rollback */
        w->group_gcs = 0;
        w->group_bytes = 0;
        if (w->gc.open) {
            g_autofree char *why = g_strdup_printf("the writer failed: %s", err->message);
            w->gc.open = FALSE;
            w->gcs_discarded_incomplete++;
            store_snapshot_discard_open(w, why);
            store_snapshot_discard_written(w, why);
        }
    }
    /* A stream that stopped inside a GC (or failed there) leaves that GC out. */
    if (w->gc.open) {
        GError *err2 = NULL;
        const char *why = w->corrupt ? "the stream was corrupt inside its GC"
                          : ok       ? "the program ended (or its connection broke) before its "
                                       "GC completed"
                                     : "the writer failed inside its GC";
        if (!store_gc_discard_open(w, why, &err2)) {
            if (ok)
                err = err2; /* else the first error stays: it says why the stream stopped */
            else
                g_clear_error(&err2);
            ok = FALSE;
        }
    }
    if (!ok)
        g_propagate_error(error, err);
    return ok;
}

typedef struct store_fd_source {
    int fd;
} store_fd_source;

static ssize_t store_fd_read(void *ctx, void *buf, size_t len, GError **error)
{
    const store_fd_source *src = ctx;
    ssize_t n;
    do
        n = read(src->fd, buf, len);
    while (n < 0 && errno == EINTR);
    if (n < 0)
        g_set_error(error, STORE_ERROR, STORE_ERROR_IO, "reading the record stream: %s",
                    g_strerror(errno));
    return n;
}

gboolean store_writer_ingest_fd(store_writer *w, int fd, GError **error)
{
    store_fd_source src = {.fd = fd};
    return store_writer_ingest(w, store_fd_read, &src, error);
}

void store_writer_set_session(store_writer *w, const char *dir, pid_t recorder)
{
    g_free(w->session_dir);
    w->session_dir = g_strdup(dir);
    w->recorder = recorder;
}

void store_writer_set_attach(store_writer *w)
{
    w->ends_session = TRUE;
}

/* The stream ended without RUN_END: the collector's end file, if it left one, says how the run
 * ended instead (wire/hl_wire.h). */
static void store_writer_read_ending(store_writer *w)
{
    hl_run_end e;
    if (w->complete || !w->connected || !store_ending_file_read(w->session_dir, w->run_pid, &e))
        return;
    w->counters = e.counters;
    w->have_counters = TRUE;
    w->collector_ended = TRUE;
    w->writer_stalled = (e.flags & HL_RUN_END_FLAG_WRITER_STALLED) != 0;
    w->program_gcs = e.gcs;
    w->have_program_gcs = TRUE;
    if (e.program_peak_rss_bytes != 0)
        w->program_peak_rss_bytes = e.program_peak_rss_bytes;
}

gboolean store_writer_set_exit_status(store_writer *w, int status, GError **error)
{
    if (w->db_failure != NULL)
        return TRUE; /* nothing more can be written; the failure is reported already */
    return store_writer_run_once(w, "UPDATE run SET exit_status = ?1 WHERE id = 1",
                                 store_bind_int1, &status, error);
}

static int64_t store_writer_count(store_writer *w, const char *sql)
{
    sqlite3_stmt *st = NULL;
    int64_t n = 0;
    if (sqlite3_prepare_v2(w->db, sql, -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        n = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return n;
}

/* Leaves WAL mode for one self-contained file. That needs every other connection to the file
 * gone, and SQLite refuses at once (no busy handler) while one is open — a user's sqlite3
 * polling the recording: retried for STORE_LEAVE_WAL_WAIT_MS, then the file stays in WAL mode,
 * whole (*kept TRUE: the -wal holds the last GCs until the last connection closes). Any other
 * error fails. */
static gboolean store_writer_leave_wal(store_writer *w, gboolean *kept, GError **error)
{
    *kept = FALSE;
    sqlite3_busy_timeout(w->db, 0); /* refused at once, retried here */
    for (int waited = 0;; waited += STORE_LEAVE_WAL_RETRY_MS) {
        int rc = sqlite3_exec(w->db, "PRAGMA journal_mode = DELETE", NULL, NULL, NULL);
        if (rc == SQLITE_OK)
            return TRUE;
        if ((rc & 0xff) != SQLITE_BUSY && (rc & 0xff) != SQLITE_LOCKED) {
            store_sql_set_error(w->db, w->path, rc, NULL, error);
            return FALSE;
        }
        if (waited >= STORE_LEAVE_WAL_WAIT_MS) {
            *kept = TRUE;
            return TRUE;
        }
        sqlite3_sleep(STORE_LEAVE_WAL_RETRY_MS);
    }
}

gboolean store_writer_finish(store_writer *w, store_summary *summary, GError **error)
{
    const char *status;
    gboolean ok = FALSE;
    gboolean wal_kept = FALSE;

    if (summary != NULL)
        memset(summary, 0, sizeof *summary);
    if (w == NULL) {
        ok = TRUE;
        goto out;
    }
    store_writer_read_ending(w);
    if (w->complete)
        status = "complete";
    else if (w->connected && !w->no_data_forced)
        status = "truncated";
    else
        status = "no-data";

    w->finished = TRUE;
    if (w->db_failure != NULL) {
        /* Nothing more can be written: the run row keeps status 'recording' (as a killed
         * writer's), and every GC committed before the failure is whole. */
        g_set_error(error, STORE_ERROR, STORE_ERROR_IO,
                    "%s; recording stopped: %s keeps the GCs committed before (%" G_GUINT64_FORMAT
                    ")",
                    w->db_failure, w->path, w->gcs_written);
        goto out;
    }
    if (!store_gc_discard_open(w, "the recording ended before its GC completed", error) ||
        !store_writer_run_once(w, "UPDATE run SET status = ?1 WHERE id = 1", store_bind_text1,
                               status, error) ||
        !store_writer_update_flags(w, error) || !store_writer_write_counters(w, error) ||
        !store_sql_exec(w->db, w->path, "COMMIT", error))
        goto out;
    /* One self-contained file for readers: checkpoint the WAL and leave WAL mode. Each
     * object's generation history stays as the GCs' changes: the first reader builds it
     * (store_history_build_file), not the end of the recording. The copy is done before the
     * writer's own figures (they count it) and they are written in WAL mode, where an outside
     * reader never blocks a commit: leaving WAL mode is the last step, the only one a reader
     * can refuse (store_writer_leave_wal). */
    sqlite3_wal_checkpoint_v2(w->db, NULL, SQLITE_CHECKPOINT_PASSIVE, NULL, NULL);
    if (!store_writer_write_own_figures(w, error) ||
        !store_writer_leave_wal(w, &wal_kept, error))
        goto out;
    if (summary != NULL) {
        summary->gcs = w->gcs_written;
        summary->objects = w->objects_written;
        summary->allocations = w->allocations;
        summary->allocations_survived = w->allocations_survived;
        summary->types = (uint64_t)store_writer_count(w, "SELECT count(*) FROM types");
        summary->drops = w->counters.allocs_dropped + w->counters.gc_events_dropped +
                         w->counters.gcs_dropped + w->counters.snapshots_dropped;
        summary->complete = w->complete;
        summary->connected = w->connected;
        summary->snapshots = w->snapshots_written;
        summary->recorder_killed = w->recorder_killed;
        summary->wal_kept = wal_kept;
    }
    ok = TRUE;
out:
    if (w != NULL) {
        if (!ok && w->db != NULL && !sqlite3_get_autocommit(w->db))
            sqlite3_exec(w->db, "ROLLBACK", NULL, NULL, NULL);
        store_writer_close(w);
    }
    return ok;
}
