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
 * live_report_snapshot: the same, with a heap snapshot at each GC, and GC 2 with its snapshot
 * committed as the report's snapshot part begins (its first statement listing the snapshots).
 * The objects in memory are GC 1's: a snapshot part that reads the file as it is then finds
 * snapshot 2, whose new objects it cannot find (type and size 0, silently), and names a
 * snapshot of a GC the rest of the report does not hold. As of one moment: snapshot 1 alone.
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

/* Waits until the file holds `gcs` GCs. */
static int64_t gcs_committed_wait(const char *path, int64_t gcs)
{
    return hl_db_wait_int(path, "SELECT count(*) FROM gcs", gcs);
}

/* Whether object `id` of two_gcs is alive after GC 1 (the odd ones of 1..8) or 2. */
static gboolean alive(uint64_t id, uint32_t gc)
{
    return id <= 8 ? id % 2 == 1 : gc >= 2 && id <= 20;
}

/* Snapshot `s` of GC `s`: the objects alive then, object 1 (a handle's root) referring to every
 * other. */
static void snapshot_of(hl_sb *sb, uint32_t s)
{
    hl_sb_snapshot_start(sb, s, s, HL_SNAPSHOT_INDUCED);
    for (uint64_t id = 1; id <= 20; id++)
        if (alive(id, s))
            hl_sb_snapshot_object(sb, s, id, HL_GEN_1, 0);
    for (uint64_t id = 2; id <= 20; id++)
        if (alive(id, s))
            hl_sb_snapshot_ref(sb, s, 1, id);
    hl_sb_snapshot_root(sb, s, 1, HL_ROOT_HANDLE, 0, 0x1000);
    hl_sb_snapshot_end(sb, s, s);
}

/* Two GCs of a packed recording; each GC's objects survive into gen 1, so GC 2 adds
 * object_generations rows of objects the file did not hold at GC 1; with `snapshots`, a heap
 * snapshot at each (snapshot_of). *first, *second: the stream's length after each GC's end. No
 * end of run: the recording goes on. */
static hl_sb *two_gcs(size_t *first, size_t *second, gboolean snapshots)
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
    if (snapshots)
        snapshot_of(sb, 1);
    hl_sb_gc_end(sb, 1, 0);
    *first = hl_sb_len(sb);
    for (uint64_t id = 9; id <= 20; id++)
        hl_sb_alloc(sb, id, 1 + (uint32_t)(id % 2), 32 + 8 * id, 100);
    hl_sb_gc_start(sb, 2, 0, FALSE, 21);
    for (uint64_t id = 9; id <= 20; id++)
        hl_sb_fate(sb, 2, id, HL_FATE(HL_GEN_0, HL_GEN_1));
    if (snapshots)
        snapshot_of(sb, 2);
    hl_sb_gc_end(sb, 2, 0);
    *second = hl_sb_len(sb);
    return sb;
}

/* Where the writer commits GC 2 in the middle of the report: the first statement whose SQL
 * contains `at`; then it waits until `committed` (a count) gives `n`. */
typedef struct live_hook {
    const char *path;
    int collector;
    const uint8_t *bytes;
    size_t from, to;
    const char *at, *committed;
    int64_t n;
    gboolean sent;
    int64_t seen;
} live_hook;

static int live_hook_trace(unsigned type, void *ctx, void *p, void *x)
{
    (void)x;
    live_hook *h = ctx;
    const char *sql = type == SQLITE_TRACE_STMT ? sqlite3_sql((sqlite3_stmt *)p) : NULL;
    if (!h->sent && sql && strstr(sql, h->at)) {
        h->sent = TRUE;
        write_all(h->collector, h->bytes + h->from, h->to - h->from);
        h->seen = hl_db_wait_int(h->path, h->committed, h->n);
    }
    return 0;
}

/* Records two_gcs through the real writer, GC 1 committed first, and reads the file
 * with report_data_new while the hook (`at`, `committed`, `n`) sends GC 2; `check` looks at
 * what the report read. Then the recording is finished (complete, 2 GCs). */
static void live_report(gboolean snapshots, const char *at, const char *committed, int64_t n,
                        void (*check)(const report_data *data))
{
    g_autoptr(GError) error = NULL;
    g_autofree char *dir = g_dir_make_tmp("heaplens-report-live-XXXXXX", NULL);
    g_assert(dir);
    g_autofree char *path = g_build_filename(dir, "live.db", NULL);
    size_t first, second;
    hl_sb *sb = two_gcs(&first, &second, snapshots);
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
        live_hook h = {.path = path, .collector = sv[1], .bytes = bytes, .from = first,
                       .to = second, .at = at, .committed = committed, .n = n};
        sqlite3_trace_v2(db, SQLITE_TRACE_STMT, live_hook_trace, &h);
        report_data *data = report_data_new(db, path, NULL, &error);
        sqlite3_trace_v2(db, 0, NULL, NULL);
        CHECK(h.sent);          /* the statement ran... */
        CHECK_INT(h.seen, n);   /* ...after the writer committed GC 2 */
        if (error)
            fprintf(stderr, "report_data_new: %s\n", error->message);
        CHECK(data != NULL && error == NULL);
        if (data)
            check(data);
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

static void moment_check(const report_data *data)
{
    CHECK_INT(data->gcs->len, 1); /* the file as it was when the report began */
}

/* GC 2 committed as the sweep's statement (over object_generations) begins. */
static void test_live_report_moment(void)
{
    live_report(FALSE, "FROM object_generations AS og LEFT JOIN objects", "SELECT count(*) FROM gcs",
                2, moment_check);
}

static void snapshot_check(const report_data *data)
{
    CHECK_INT(data->gcs->len, 1);
    CHECK_INT(data->snapshots, 1); /* snapshot 2 is of a GC this report does not hold */
    json_int_t last = -1, retained = -1;
    CHECK(json_unpack(data->last_snapshot, "{s:I}", "snapshot", &last) == 0);
    CHECK_INT(last, 1);
    /* snapshot 1's root retains its 4 objects' bytes (32 + 48 + 64 + 80) */
    json_t *top = json_array_get(json_object_get(data->retainers, "rows"), 0);
    CHECK(top && json_unpack(top, "{s:I}", "retained_bytes", &retained) == 0);
    CHECK_INT(retained, 224);
}

/* GC 2 and its snapshot committed as the snapshot part begins (its list of the snapshots). */
static void test_live_report_snapshot(void)
{
    live_report(TRUE, "LEFT JOIN gcs g ON g.gc = s.gc ORDER BY s.snapshot",
                "SELECT count(*) FROM snapshots s JOIN gcs g ON g.gc = s.gc", 2, snapshot_check);
}

static const test_case cases[] = {
    {"live_report_moment", test_live_report_moment},
    {"live_report_snapshot", test_live_report_snapshot},
};

int main(int argc, char **argv)
{
    return test_cases_main(argc, argv, cases, G_N_ELEMENTS(cases), &failures);
}
