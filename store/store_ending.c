/* store_ending.c — how a recording ended when its stream could not say it.
 *
 *   collector lost its writer ──▶ end.<pid> in the session directory (wire/hl_wire.h):
 *                                 a stream header and the RUN_END that was not sent
 *   writer alive ──▶ store_writer_finish reads it (store_ending_file_read): the true counters,
 *                    the program's GC count, the stall
 *   writer dead  ──▶ `heaplens record` calls store_recording_end: the same, plus how the
 *                    writer died and the program's exit status, into the unfinished file
 *
 * The run.loss reasons from the collector's counters are chosen in one place (store_loss_add)
 * for both.
 */
#define _GNU_SOURCE
#include "store/store_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sys/stat.h>
#include <unistd.h>

void store_loss_add(GPtrArray *names, const hl_counters *c, gboolean stalled)
{
    if (c->allocs_dropped_buffer > 0 || c->threads_overflowed > 0)
        g_ptr_array_add(names, "buffer-full");
    if (c->writer_lost != 0)
        g_ptr_array_add(names, stalled ? "writer-stalled" : "writer-lost");
    else if (c->allocs_dropped_writer > 0 || c->gcs_dropped > 0 || c->snapshots_dropped > 0 ||
             c->records_dropped > 0)
        g_ptr_array_add(names, "writer-behind");
    if (c->gc_events_dropped > 0)
        g_ptr_array_add(names, "gc-input-lost");
}

typedef struct store_ending_read {
    int fd;
    hl_run_end *end;
    gboolean found;
} store_ending_read;

static ssize_t store_ending_source(void *ctx, void *buf, size_t len, GError **error)
{
    store_ending_read *r = ctx;
    ssize_t n;
    do
        n = read(r->fd, buf, len);
    while (n < 0 && errno == EINTR);
    if (n < 0)
        g_set_error(error, STORE_ERROR, STORE_ERROR_IO, "reading the end file: %s",
                    g_strerror(errno));
    return n;
}

static gboolean store_ending_apply(void *ctx, const store_record *rec, GError **error)
{
    (void)error;
    store_ending_read *r = ctx;
    if (rec->type == HL_REC_RUN_END) {
        *r->end = rec->u.run_end;
        r->found = TRUE;
    }
    return TRUE;
}

gboolean store_ending_file_read(const char *dir, int64_t pid, hl_run_end *end)
{
    if (dir == NULL || pid <= 0)
        return FALSE;
    g_autofree char *path = g_strdup_printf("%s/end.%" PRId64, dir, pid);
    store_ending_read r = {.fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK),
                           .end = end};
    struct stat st;
    store_stream_end how;
    store_stream_stats stats = {0};
    /* Only a small regular file of ours: the directory is private, but a file that is not what
     * the collector writes is ignored, never trusted. */
    gboolean ok = r.fd >= 0 && fstat(r.fd, &st) == 0 && S_ISREG(st.st_mode) &&
                  st.st_uid == getuid() && st.st_size <= 4096 &&
                  store_stream_run(store_ending_source, &r, store_ending_apply, &r, &how, &stats,
                                   NULL) &&
                  r.found;
    if (r.fd >= 0)
        close(r.fd);
    return ok;
}

/* ---- a file whose writer died --------------------------------------------------------------- */

static gboolean store_ending_counter(sqlite3 *db, const char *path, const char *name,
                                     uint64_t value, GError **error)
{
    sqlite3_stmt *st = NULL;
    gboolean ok = sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO counters (name, value) "
                                         "VALUES (?1, ?2)", -1, &st, NULL) == SQLITE_OK;
    if (ok) {
        sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 2, (int64_t)value);
        ok = sqlite3_step(st) == SQLITE_DONE;
    }
    sqlite3_finalize(st);
    if (!ok)
        store_sql_fail(db, path, "storing how the recording ended", error);
    return ok;
}

/* The collector's loss counters as stored (the last GC_END's), for the reasons. */
static void store_ending_counters_get(sqlite3 *db, hl_counters *c)
{
    static const struct {
        const char *name;
        size_t offset;
    } fields[] = {
        {"allocs_dropped_buffer", offsetof(hl_counters, allocs_dropped_buffer)},
        {"allocs_dropped_writer", offsetof(hl_counters, allocs_dropped_writer)},
        {"threads_overflowed", offsetof(hl_counters, threads_overflowed)},
        {"writer_lost", offsetof(hl_counters, writer_lost)},
        {"gcs_dropped", offsetof(hl_counters, gcs_dropped)},
        {"snapshots_dropped", offsetof(hl_counters, snapshots_dropped)},
        {"records_dropped", offsetof(hl_counters, records_dropped)},
        {"gc_events_dropped", offsetof(hl_counters, gc_events_dropped)},
    };
    sqlite3_stmt *st = NULL;
    memset(c, 0, sizeof *c);
    if (sqlite3_prepare_v2(db, "SELECT max(0, value) FROM counters WHERE name = ?1", -1, &st,
                           NULL) != SQLITE_OK)
        return;
    for (size_t i = 0; i < G_N_ELEMENTS(fields); i++) {
        sqlite3_reset(st);
        sqlite3_bind_text(st, 1, fields[i].name, -1, SQLITE_STATIC);
        if (sqlite3_step(st) == SQLITE_ROW) {
            uint64_t v = (uint64_t)sqlite3_column_int64(st, 0);
            memcpy((char *)c + fields[i].offset, &v, sizeof v);
        }
    }
    sqlite3_finalize(st);
}

static gboolean store_ending_write(sqlite3 *db, const char *path, const store_ending *ending,
                                   GError **error)
{
    sqlite3_stmt *st = NULL;
    gboolean ok = FALSE;
    int64_t pid = 0;
    gboolean ended = FALSE;
    hl_run_end end = {0};
    const hl_counters *c = &end.counters;
    g_autoptr(GPtrArray) names = g_ptr_array_new();
    g_autofree char *loss = NULL;

    if (!store_sql_exec(db, path, "BEGIN IMMEDIATE", error))
        return FALSE;
    if (sqlite3_prepare_v2(db, "SELECT status = 'recording', coalesce(pid, 0) FROM run "
                               "WHERE id = 1", -1, &st, NULL) != SQLITE_OK ||
        sqlite3_step(st) != SQLITE_ROW) {
        store_sql_fail(db, path, "reading the run", error);
        goto out;
    }
    if (!sqlite3_column_int(st, 0)) {
        ok = TRUE; /* the writer finished it: it says how it ended */
        goto out;
    }
    pid = sqlite3_column_int64(st, 1);
    sqlite3_finalize(st);
    st = NULL;
    ended = store_ending_file_read(ending->session_dir, pid, &end);
    if (ended) {
        /* The collector's final counters: they replace the last GC_END's. */
        const struct {
            const char *name;
            uint64_t value;
            gboolean present;
        } counters[] = {
            {"allocs_seen", c->allocs_seen, TRUE},
            {"allocs_dropped", c->allocs_dropped, TRUE},
            {"allocs_dropped_buffer", c->allocs_dropped_buffer, TRUE},
            {"allocs_dropped_writer", c->allocs_dropped_writer, TRUE},
            {"gc_events_dropped", c->gc_events_dropped, TRUE},
            {"records_dropped", c->records_dropped, TRUE},
            {"bytes_dropped", c->bytes_dropped, TRUE},
            {"model_anomalies", c->model_anomalies, TRUE},
            {"threads_overflowed", c->threads_overflowed, TRUE},
            {"gcs_dropped", c->gcs_dropped, TRUE},
            {"snapshots_dropped", c->snapshots_dropped, TRUE},
            {"writer_lost", c->writer_lost, TRUE},
            {"program_gcs", end.gcs, TRUE},
            /* what the census counted, lost GCs' included (absent where it counted none) */
            {"census_allocs", c->census_allocs, c->census_allocs != 0},
            {"census_bytes", c->census_bytes, c->census_allocs != 0},
        };
        for (size_t i = 0; i < G_N_ELEMENTS(counters); i++)
            if (counters[i].present &&
                !store_ending_counter(db, path, counters[i].name, counters[i].value, error))
                goto out;
        if (end.program_peak_rss_bytes != 0 &&
            !store_ending_counter(db, path, "program_peak_rss_bytes", end.program_peak_rss_bytes,
                                  error))
            goto out;
    } else {
        store_ending_counters_get(db, &end.counters);
    }
    if (ending->writer_signal > 0 &&
        !store_ending_counter(db, path, "writer_signal", (uint64_t)ending->writer_signal, error))
        goto out;
    store_loss_add(names, c, ended && (end.flags & HL_RUN_END_FLAG_WRITER_STALLED));
    g_ptr_array_add(names, ending->writer_signal > 0 ? "writer-killed" : "write-failed");
    g_ptr_array_add(names, NULL);
    loss = g_strjoinv(",", (char **)names->pdata);
    if (sqlite3_prepare_v2(db, "UPDATE run SET status = 'truncated', loss = ?1, "
                               "exit_status = CASE WHEN ?2 THEN ?3 ELSE exit_status END "
                               "WHERE id = 1", -1, &st, NULL) != SQLITE_OK) {
        store_sql_fail(db, path, "storing how the recording ended", error);
        goto out;
    }
    sqlite3_bind_text(st, 1, loss, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 2, ending->exit_known && store_exit_is_programs(ending->exit_pid, pid));
    sqlite3_bind_int(st, 3, ending->exit_status);
    if (sqlite3_step(st) != SQLITE_DONE) {
        store_sql_fail(db, path, "storing how the recording ended", error);
        goto out;
    }
    ok = store_sql_exec(db, path, "COMMIT", error);
out:
    sqlite3_finalize(st);
    if (!sqlite3_get_autocommit(db))
        sqlite3_exec(db, ok ? "COMMIT" : "ROLLBACK", NULL, NULL, NULL);
    return ok;
}

gboolean store_recording_end(const char *path, const store_ending *ending, GError **error)
{
    sqlite3 *db = NULL;
    gboolean ok = FALSE;
    g_autofree char *damage = NULL;

    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) !=
        SQLITE_OK) {
        store_sql_fail(db, path, "cannot open", error);
        goto out;
    }
    sqlite3_extended_result_codes(db, 1);
    sqlite3_busy_timeout(db, 5000);
    /* Never write into a damaged file: it would only get worse. */
    damage = store_db_damage_new(db, NULL);
    if (damage != NULL) {
        g_set_error(error, STORE_ERROR, STORE_ERROR_DAMAGED, "%s is damaged (%s)", path, damage);
        goto out;
    }
    if (!store_ending_write(db, path, ending, error))
        goto out;
    /* One self-contained file, as a finished recording is; a file that cannot take the
     * checkpoint (a full disk) stays in WAL mode, whole. */
    sqlite3_exec(db, "PRAGMA journal_mode = DELETE", NULL, NULL, NULL);
    ok = TRUE;
out:
    sqlite3_close(db);
    return ok;
}
