/* report_live_test.c — `heaplens report` on a recording still being written (run status
 * 'recording') while its writer commits another GC in the middle of the report's reading.
 *
 * The real writer serves one end of a socket pair in a thread (store_writer_serve_connection);
 * the test plays the collector on the other end. GC 1 is sent and waited for (a bounded poll
 * for its row). Then report_data_new reads the file; a trace hook on its connection, at the
 * first step of the sweep's statement (over object_generations), sends GC 2 — new objects, and
 * their object_generations rows — and waits until the writer committed it. The objects were
 * read into memory before (store_objects_view_attach, at their first use): a sweep that sees
 * GC 2 finds generations of objects not among them and calls the file damaged. The report must
 * read the file as of one moment instead: no error, GC 1 alone.
 *
 * Usage: report_live_test <case>|all   (ctest: report.<case>).
 */
#define _GNU_SOURCE
#include "query/query.h"
#include "report/report.h"
#include "store/store.h"
#include "tests/unit/common/check.h"
#include "tests/unit/common/hl_live_writer.h"
#include "tests/unit/common/hl_stream_builder.h"
#include "tests/unit/common/test_cases.h"

#include <fcntl.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

/* Waits (a bounded poll on a connection of its own) until the file holds `gcs` GCs. */
static int64_t gcs_committed_wait(const char *path, int64_t gcs)
{
    int64_t seen = -1;
    for (gint64 deadline = g_get_monotonic_time() + 30 * G_USEC_PER_SEC;
         seen < gcs && g_get_monotonic_time() < deadline;) {
        sqlite3 *db = NULL;
        sqlite3_stmt *st = NULL;
        if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
            sqlite3_prepare_v2(db, "SELECT count(*) FROM gcs", -1, &st, NULL) == SQLITE_OK &&
            sqlite3_step(st) == SQLITE_ROW)
            seen = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
        sqlite3_close(db);
        if (seen < gcs)
            g_usleep(2000); /* polling for the row, not timing it */
    }
    return seen;
}

/* Two GCs of a packed recording; each GC's objects survive into gen 1, so GC 2 adds
 * object_generations rows of objects the file did not hold at GC 1. *first, *second: the
 * stream's length after each GC's end. No end of run: the recording goes on. */
static hl_sb *two_gcs(size_t *first, size_t *second)
{
    hl_sb *sb = hl_sb_new();
    hl_sb_run_start(sb, 4242, "dotnet Live.dll");
    hl_sb_type(sb, 1, "App.Node");
    hl_sb_type(sb, 2, "System.String");
    for (uint64_t id = 1; id <= 8; id++)
        hl_sb_alloc(sb, id, 1 + (uint32_t)(id % 2), 24 + 8 * id, 100);
    hl_sb_gc_start(sb, 1, 0, FALSE, 9);
    for (uint64_t id = 1; id <= 8; id++)
        hl_sb_fate(sb, 1, id, HL_FATE(HL_GEN_0, id % 2 ? HL_GEN_1 : HL_GEN_NONE));
    hl_sb_gc_end(sb, 1, 0);
    *first = hl_sb_len(sb);
    for (uint64_t id = 9; id <= 20; id++)
        hl_sb_alloc(sb, id, 1 + (uint32_t)(id % 2), 32 + 8 * id, 100);
    hl_sb_gc_start(sb, 2, 0, FALSE, 21);
    for (uint64_t id = 9; id <= 20; id++)
        hl_sb_fate(sb, 2, id, HL_FATE(HL_GEN_0, HL_GEN_1));
    hl_sb_gc_end(sb, 2, 0);
    *second = hl_sb_len(sb);
    return sb;
}

typedef struct sweep_hook {
    const char *path;
    int collector;
    const uint8_t *bytes;
    size_t from, to;
    gboolean sent;
    int64_t gcs_seen;
} sweep_hook;

/* At the first step of the sweep's statement: GC 2 sent and committed before it reads. */
static int sweep_hook_trace(unsigned type, void *ctx, void *p, void *x)
{
    (void)x;
    sweep_hook *h = ctx;
    const char *sql = type == SQLITE_TRACE_STMT ? sqlite3_sql((sqlite3_stmt *)p) : NULL;
    if (!h->sent && sql && strstr(sql, "FROM object_generations AS og LEFT JOIN objects")) {
        h->sent = TRUE;
        write_all(h->collector, h->bytes + h->from, h->to - h->from);
        h->gcs_seen = gcs_committed_wait(h->path, 2);
    }
    return 0;
}

static void test_live_report_moment(void)
{
    g_autoptr(GError) error = NULL;
    g_autofree char *dir = g_dir_make_tmp("heaplens-report-live-XXXXXX", NULL);
    g_assert(dir);
    g_autofree char *path = g_build_filename(dir, "live.db", NULL);
    size_t first, second;
    hl_sb *sb = two_gcs(&first, &second);
    size_t len;
    const uint8_t *bytes = hl_sb_bytes(sb, &len);

    int sv[2], stop[2];
    g_assert(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
    g_assert(pipe2(stop, O_CLOEXEC) == 0);
    hl_live_writer a = {.w = store_writer_create(path, NULL, &error), .conn = sv[0],
                     .stop = stop[0]};
    g_assert(a.w && !error);
    GThread *t = g_thread_new("writer", hl_live_writer_thread, &a);
    write_all(sv[1], bytes, first);
    CHECK_INT(gcs_committed_wait(path, 1), 1);

    gboolean gc2_sent = FALSE;
    sqlite3 *db = query_db_open(path, &error);
    CHECK(db != NULL && error == NULL);
    if (db) {
        sweep_hook h = {.path = path, .collector = sv[1], .bytes = bytes, .from = first,
                        .to = second};
        sqlite3_trace_v2(db, SQLITE_TRACE_STMT, sweep_hook_trace, &h);
        report_data *data = report_data_new(db, path, NULL, &error);
        sqlite3_trace_v2(db, 0, NULL, NULL);
        CHECK(h.sent);           /* the sweep ran... */
        CHECK_INT(h.gcs_seen, 2); /* ...after the writer committed GC 2 */
        if (error)
            fprintf(stderr, "report_data_new: %s\n", error->message);
        CHECK(data != NULL && error == NULL);
        if (data)
            CHECK_INT(data->gcs->len, 1); /* the file as it was when the report began */
        report_data_free(data);
        sqlite3_close(db);
        gc2_sent = h.sent;
    }
    g_clear_error(&error);

    /* The rest: GC 2 (unless the hook sent it) and the stream's end. */
    if (!gc2_sent)
        write_all(sv[1], bytes + first, second - first);
    hl_sb_run_end(sb, 2);
    bytes = hl_sb_bytes(sb, &len);
    write_all(sv[1], bytes + second, len - second);
    close(sv[1]);
    close(stop[1]);
    g_thread_join(t);
    CHECK(a.ok);
    store_summary sum;
    CHECK(store_writer_finish(a.w, &sum, &error));
    CHECK(sum.complete && sum.gcs == 2);
    close(sv[0]);
    close(stop[0]);
    hl_sb_free(sb);
    g_unlink(path);
    g_autofree char *wal = g_strconcat(path, "-wal", NULL);
    g_autofree char *shm = g_strconcat(path, "-shm", NULL);
    g_unlink(wal);
    g_unlink(shm);
    g_rmdir(dir);
}

static const test_case cases[] = {
    {"live_report_moment", test_live_report_moment},
};

int main(int argc, char **argv)
{
    return test_cases_main(argc, argv, cases, G_N_ELEMENTS(cases), &failures);
}
