/* test_store_serve.c — the writer serving a collector: over a socket, a descendant's
 * connection (record --children), no connection at all, a peer of another user refused, and
 * what a reader sees of a recording still going on (grouped commits read in steps).
 *
 * Usage: test_store_serve <case>|all   (ctest runs each case as store.<case>).
 * What the store's tests share: store_test.h.
 */
#define _GNU_SOURCE
#include "tests/unit/store/store_test.h"
#include "tests/unit/common/hl_live_writer.h"

#include <fcntl.h>
#include <poll.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* The writer's wait for the exit status after the stream's end, where the test always writes it:
 * with a shorter one, a collector thread that got the CPU that much later would lose the status
 * (exit_status NULL). */
#define STATUS_WAIT_MS 60000

typedef struct collector_args {
    const char *sock;
    const uint8_t *bytes;
    size_t len;
    int stop_wr;         /* write the status here after closing, then close it */
    const char *status;  /* "exit 3\n" */
    gboolean keep_open;  /* do not close the connection before writing the status */
    int delay_ms;        /* before connecting */
} collector_args;

static gpointer collector_thread(gpointer data)
{
    collector_args *a = data;
    g_usleep((gulong)a->delay_ms * 1000);
    int fd = connect_unix(a->sock);
    g_assert(fd >= 0);
    write_all(fd, a->bytes, a->len);
    if (!a->keep_open)
        close(fd);
    write_all(a->stop_wr, a->status, strlen(a->status));
    close(a->stop_wr);
    return GINT_TO_POINTER(fd);
}

/* What the serve tests start from: a temporary folder, the writer's listening socket `s` in it,
 * and the golden stream (its marks in `m`). */
typedef struct serve_fixture {
    char *dir, *sock;
    int lfd;
    hl_sb *sb;
    golden_marks m;
    const uint8_t *bytes;
    size_t len;
} serve_fixture;

static void serve_fixture_init(serve_fixture *f)
{
    memset(f, 0, sizeof *f);
    f->dir = tmp_dir_new();
    f->sock = g_build_filename(f->dir, "s", NULL);
    f->lfd = listen_unix(f->sock);
    f->sb = golden_build(&f->m, FALSE);
    f->bytes = hl_sb_bytes(f->sb, &f->len);
}

static void serve_fixture_release(serve_fixture *f)
{
    close(f->lfd);
    hl_sb_free(f->sb);
    g_free(f->sock);
    tmp_dir_free(f->dir);
}

/* A file `name` in the fixture's folder (g_free it). */
static char *serve_fixture_path(const serve_fixture *f, const char *name)
{
    return g_build_filename(f->dir, name, NULL);
}

/* A writer of `path` (created with `command`) serves the fixture's socket, to which a collector
 * thread sends the golden stream's first `len` bytes, then `status` on the stop pipe (the
 * connection left open with `keep_open`, as by a child that inherited it). Returns the writer's
 * summary once it finished, its serve and finish checked to succeed. */
static store_summary serve_collector(serve_fixture *f, const char *path, const char *command,
                                     size_t len, const char *status, gboolean keep_open,
                                     int delay_ms, int stop_wait_ms)
{
    g_autoptr(GError) error = NULL;
    store_summary sum = {0};
    int stop[2];
    g_assert(pipe2(stop, O_CLOEXEC) == 0);
    collector_args a = {.sock = f->sock, .bytes = f->bytes, .len = len, .stop_wr = stop[1],
                        .status = status, .keep_open = keep_open, .delay_ms = delay_ms};
    GThread *t = g_thread_new("collector", collector_thread, &a);
    store_writer *w = store_writer_create(path, command, &error);
    CHECK(w != NULL);
    CHECK(store_writer_serve(w, f->lfd, -1, stop[0], stop_wait_ms, &error));
    CHECK_NO_ERROR(error);
    CHECK(store_writer_finish(w, &sum, &error));
    CHECK_NO_ERROR(error);
    int conn = GPOINTER_TO_INT(g_thread_join(t));
    if (keep_open)
        close(conn);
    close(stop[0]);
    return sum;
}

static void test_serve_socket(void)
{
    serve_fixture f;
    serve_fixture_init(&f);
    g_autofree char *path = serve_fixture_path(&f, "served.db");
    store_summary sum =
        serve_collector(&f, path, "dotnet App.dll", f.len, "exit 3\n", FALSE, 50, STATUS_WAIT_MS);
    CHECK(sum.connected && sum.complete && sum.gcs == 3 && sum.objects == 7);
    sqlite3 *db = db_open(path);
    CHECK_ROWS(db, "SELECT status, exit_status FROM run", "complete|3\n");
    CHECK_ROWS(db, SQL_OBJECTS, golden_objects);
    sqlite3_close(db);

    /* The collector's process dies mid-stream and a child it forked keeps the socket open:
     * after the exit status arrives, a silent connection counts as ended. */
    g_autofree char *path2 = serve_fixture_path(&f, "killed.db");
    gint64 t0 = g_get_monotonic_time();
    sum = serve_collector(&f, path2, "dotnet App.dll", f.m.gc_end[2] + 30, "signal 9\n", TRUE, 0,
                          300);
    CHECK(g_get_monotonic_time() - t0 < 5 * G_USEC_PER_SEC);
    CHECK(sum.connected && !sum.complete && sum.gcs == 2);
    db = db_open(path2);
    CHECK_ROWS(db, "SELECT status, exit_status FROM run", "truncated|137\n");
    sqlite3_close(db);
    serve_fixture_release(&f);
}

/* A descendant's connection (record --children): served as accepted, no exit status. */
typedef struct trickle_args {
    int fd;
    const uint8_t *bytes;
    size_t len, at; /* written at once up to `at`, then one byte every 20 ms */
} trickle_args;

static gpointer trickle_thread(gpointer data)
{
    trickle_args *a = data;
    write_all(a->fd, a->bytes, a->at);
    for (size_t i = a->at; i < a->len; i++) {
        if (send(a->fd, a->bytes + i, 1, MSG_NOSIGNAL) != 1)
            break; /* the writer ended the recording */
        g_usleep(20 * 1000); /* traffic, not synchronisation: the connection is never silent */
    }
    return NULL;
}

static void test_serve_connection(void)
{
    serve_fixture f; /* its stream, sent over a socket pair, not its socket */
    serve_fixture_init(&f);
    g_autoptr(GError) error = NULL;
    const uint8_t *bytes = f.bytes;
    size_t len = f.len;
    int sv[2], stop[2];
    store_summary sum;

    /* The whole stream, then end of file: complete, the command from RUN_START, no status. */
    g_assert(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
    g_assert(pipe2(stop, O_CLOEXEC) == 0);
    write_all(sv[1], bytes, len);
    close(sv[1]);
    g_autofree char *path = serve_fixture_path(&f, "app.1234.db");
    store_writer *w = store_writer_create(path, NULL, &error);
    CHECK(w != NULL);
    CHECK(store_writer_serve_connection(w, sv[0], -1, stop[0], 2000, &error));
    CHECK_NO_ERROR(error);
    CHECK(store_writer_finish(w, &sum, &error));
    CHECK(sum.connected && sum.complete && sum.gcs == 3);
    sqlite3 *db = db_open(path);
    CHECK_ROWS(db, "SELECT status, exit_status IS NULL, loss IS NULL FROM run", "complete|1|1\n");
    sqlite3_close(db);
    close(sv[0]);
    close(stop[1]);
    close(stop[0]);

    /* The process outlives `heaplens record` and keeps sending: stop_fd's end of file gives it
     * stop_wait_ms more, then the recording ends there, 'recording-stopped'. */
    g_assert(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
    g_assert(pipe2(stop, O_CLOEXEC) == 0);
    trickle_args a = {.fd = sv[1], .bytes = bytes, .len = len, .at = f.m.gc_end[2]};
    GThread *t = g_thread_new("trickle", trickle_thread, &a);
    g_autofree char *path2 = serve_fixture_path(&f, "app.5678.db");
    w = store_writer_create(path2, NULL, &error);
    CHECK(w != NULL);
    close(stop[1]);
    gint64 t0 = g_get_monotonic_time();
    CHECK(store_writer_serve_connection(w, sv[0], -1, stop[0], 300, &error));
    CHECK_NO_ERROR(error);
    gint64 took_ms = (g_get_monotonic_time() - t0) / 1000;
    CHECK(took_ms >= 250 && took_ms < 3000);
    close(sv[0]); /* the trickle's next send fails */
    g_thread_join(t);
    CHECK(store_writer_finish(w, &sum, &error));
    CHECK(sum.connected && !sum.complete && sum.gcs == 2);
    db = db_open(path2);
    CHECK_ROWS(db, "SELECT status, loss, exit_status IS NULL FROM run",
               "truncated|recording-stopped|1\n");
    sqlite3_close(db);
    close(stop[0]);
    serve_fixture_release(&f);
}

/* A run of two small GCs; *first and *second: the stream's length after each GC's end. */
static hl_sb *two_small_gcs(size_t *first, size_t *second)
{
    hl_sb *sb = hl_sb_new();
    hl_sb_run_start(sb, 4242, "dotnet Small.dll");
    hl_sb_type(sb, 1, "A");
    hl_sb_alloc(sb, 1, 1, 24, 100);
    hl_sb_gc_start(sb, 1, 0, FALSE, 2);
    hl_sb_fate(sb, 1, 1, HL_FATE(HL_GEN_0, HL_GEN_1));
    hl_sb_gc_end(sb, 1, 0);
    *first = hl_sb_len(sb);
    hl_sb_alloc(sb, 2, 1, 24, 100);
    hl_sb_gc_start(sb, 2, 0, FALSE, 3);
    hl_sb_fate(sb, 2, 2, HL_FATE(HL_GEN_0, HL_GEN_1));
    hl_sb_gc_end(sb, 2, 0);
    *second = hl_sb_len(sb);
    hl_sb_run_end(sb, 2);
    return sb;
}

/* A writer of path serving one end of a socket pair (sv[1]: the collector's end) until stop[1]
 * closes, as a live recording's. */
static hl_live_writer serve_live(const char *path, int sv[2], int stop[2])
{
    g_autoptr(GError) error = NULL;
    g_assert(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
    g_assert(pipe2(stop, O_CLOEXEC) == 0);
    hl_live_writer a = {.w = store_writer_create(path, NULL, &error), .conn = sv[0],
                        .stop = stop[0]};
    CHECK_NO_ERROR(error);
    return a;
}

/* After the collector's end closed: the serving thread ended well and both GCs are stored. */
static void serve_live_end(hl_live_writer *a, GThread *t, int sv[2], int stop[2])
{
    g_autoptr(GError) error = NULL;
    close(stop[1]);
    g_thread_join(t);
    CHECK(a->ok);
    store_summary sum;
    CHECK(store_writer_finish(a->w, &sum, &error));
    CHECK_NO_ERROR(error);
    CHECK(sum.complete && sum.gcs == 2);
    close(sv[0]);
    close(stop[0]);
}

/* A reader sees a GC while the recording goes on, though no more comes to end its group: the
 * writer's wait for more data ends when the group is due (STORE_GROUP_COMMIT_MS), and commits
 * it. Without that, GC 1 would stay uncommitted until GC 2 came. The test waits for the row
 * (a bounded loop), then sends the rest. */
static void test_grouped_reader_sees(void)
{
    char *dir = tmp_dir_new();
    size_t first, second, len;
    hl_sb *sb = two_small_gcs(&first, &second);
    const uint8_t *bytes = hl_sb_bytes(sb, &len);
    g_autofree char *path = g_build_filename(dir, "live.db", NULL);
    int sv[2], stop[2];
    hl_live_writer a = serve_live(path, sv, stop);
    GThread *t = g_thread_new("serve", hl_live_writer_thread, &a);
    write_all(sv[1], bytes, first);
    CHECK(hl_db_wait_int(path, "SELECT count(*) FROM gcs", 1) == 1);
    write_all(sv[1], bytes + first, len - first);
    close(sv[1]);
    serve_live_end(&a, t, sv, stop);
    hl_sb_free(sb);
    tmp_dir_free(dir);
}

/* Reading in steps (store_serve.c): while a group waits for its commit and the last read was
 * small, the writer does not read the connection again until the commit is due; the
 * connection's hang-up ends the step at once. The group's commit is made a minute away (no
 * commit comes due during the test): GC 1 is sent and read (the socket's unread bytes drop to
 * 0), then GC 2 stays unread for the next 200 ms — a writer that read at each send takes it at
 * once —; closing the connection then gets GC 2 and the end read and stored. */
static void test_grouped_read_steps(void)
{
    char *dir = tmp_dir_new();
    size_t first, second, len;
    hl_sb *sb = two_small_gcs(&first, &second);
    const uint8_t *bytes = hl_sb_bytes(sb, &len);
    g_autofree char *path = g_build_filename(dir, "steps.db", NULL);
    int sv[2], stop[2];
    hl_live_writer a = serve_live(path, sv, stop);
    a.w->group_commit_ms = 60000;
    GThread *t = g_thread_new("serve", hl_live_writer_thread, &a);
    write_all(sv[1], bytes, first);
    int unread = 1;
    for (gint64 deadline = g_get_monotonic_time() + 30 * G_USEC_PER_SEC;
         unread > 0 && g_get_monotonic_time() < deadline;) {
        g_assert(ioctl(sv[1], SIOCOUTQ, &unread) == 0);
        if (unread > 0)
            g_usleep(200); /* polling for the read, not timing it */
    }
    CHECK(unread == 0);
    write_all(sv[1], bytes + first, second - first);
    for (gint64 until = g_get_monotonic_time() + 200000; g_get_monotonic_time() < until;) {
        g_assert(ioctl(sv[1], SIOCOUTQ, &unread) == 0);
        if (unread == 0)
            break;
        g_usleep(1000);
    }
    if (unread == 0)
        fprintf(stderr, "GC 2 was read while its group waited\n");
    CHECK(unread > 0); /* not read while the group waits (bytes and their buffers) */
    write_all(sv[1], bytes + second, len - second);
    close(sv[1]); /* the hang-up ends the step */
    serve_live_end(&a, t, sv, stop);
    hl_sb_free(sb);
    tmp_dir_free(dir);
}

static void test_serve_no_connection(void)
{
    serve_fixture f; /* its socket, to which nobody connects */
    serve_fixture_init(&f);
    g_autoptr(GError) error = NULL;
    g_autofree char *path = serve_fixture_path(&f, "none.db");
    int stop[2];
    g_assert(pipe2(stop, O_CLOEXEC) == 0);
    write_all(stop[1], "signal 9\n", 9);

    store_writer *w = store_writer_create(path, "dotnet App.dll", &error);
    CHECK(store_writer_serve(w, f.lfd, -1, stop[0], 1000, &error));
    CHECK_NO_ERROR(error);
    store_summary sum;
    CHECK(store_writer_finish(w, &sum, &error));
    CHECK(!sum.connected && !sum.complete);
    sqlite3 *db = db_open(path);
    CHECK_ROWS(db, "SELECT status, exit_status, command FROM run", "no-data|137|dotnet App.dll\n");
    sqlite3_close(db);
    close(stop[1]);
    close(stop[0]);

    /* The parent closes stop_fd with no status line at all: still ends, status unknown. And an
     * "exit" status split across two writes arrives whole. */
    g_assert(pipe2(stop, O_CLOEXEC) == 0);
    close(stop[1]);
    g_autofree char *p2 = serve_fixture_path(&f, "none2.db");
    w = store_writer_create(p2, NULL, &error);
    CHECK(store_writer_serve(w, f.lfd, -1, stop[0], 100, &error));
    CHECK(store_writer_finish(w, NULL, &error));
    CHECK_NO_ERROR(error);
    db = db_open(p2);
    CHECK_ROWS(db, "SELECT status, exit_status FROM run", "no-data|NULL\n");
    sqlite3_close(db);
    close(stop[0]);
    serve_fixture_release(&f);
}

static void test_serve_refuses_peer(void)
{
    if (getuid() != 0) {
        fprintf(stderr, "SKIP: needs root to connect as another user\n");
        exit(SKIP_CODE);
    }
    serve_fixture f;
    serve_fixture_init(&f);
    g_autoptr(GError) error = NULL;
    g_autofree char *path = serve_fixture_path(&f, "peer.db");
    CHECK(chmod(f.dir, 0755) == 0 && chmod(f.sock, 0777) == 0);
    int stop[2];

    /* Another user connects and sends a stream: refused. Then our own collector connects. */
    pid_t child = fork();
    g_assert(child >= 0);
    if (child == 0) {
        if (setgid(65534) != 0 || setuid(65534) != 0)
            _exit(2);
        int fd = connect_unix(f.sock);
        if (fd < 0)
            _exit(3);
        (void)!write(fd, f.bytes, f.len);
        _exit(0);
    }
    int status = 0;
    waitpid(child, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    store_summary sum =
        serve_collector(&f, path, NULL, f.len, "exit 0\n", FALSE, 100, STATUS_WAIT_MS);
    CHECK(sum.complete);
    sqlite3 *db = db_open(path);
    CHECK_ROWS(db, "SELECT status, exit_status, flags FROM run", "complete|0|peer-refused\n");
    CHECK(db_int(db, "SELECT value FROM counters WHERE name = 'connections_refused'") == 1);
    sqlite3_close(db);

    /* The same, with everything already there when the writer first looks (a writer slow to
     * start): the other user's connection, then our collector's whole stream, then the exit
     * status. The collector's connection stood behind the refused one in the backlog, and the
     * stop read in the same pass ended the wait: "no-data" for a complete stream. */
    child = fork();
    g_assert(child >= 0);
    if (child == 0) {
        if (setgid(65534) != 0 || setuid(65534) != 0)
            _exit(2);
        _exit(connect_unix(f.sock) < 0 ? 3 : 0);
    }
    waitpid(child, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    int ours = connect_unix(f.sock);
    g_assert(ours >= 0);
    write_all(ours, f.bytes, f.len);
    close(ours);
    g_assert(pipe2(stop, O_CLOEXEC) == 0);
    write_all(stop[1], "exit 0\n", 7);
    close(stop[1]);
    g_autofree char *queued = serve_fixture_path(&f, "queued.db");
    store_writer *w = store_writer_create(queued, NULL, &error);
    CHECK(store_writer_serve(w, f.lfd, -1, stop[0], 1000, &error));
    CHECK_NO_ERROR(error);
    CHECK(store_writer_finish(w, &sum, &error));
    CHECK_NO_ERROR(error);
    close(stop[0]);
    CHECK(sum.complete);
    db = db_open(queued);
    CHECK_ROWS(db, "SELECT status, exit_status, flags FROM run", "complete|0|peer-refused\n");
    sqlite3_close(db);

    /* Only the other user ever connects: STORE_ERROR_PEER, status no-data. */
    g_assert(pipe2(stop, O_CLOEXEC) == 0);
    child = fork();
    g_assert(child >= 0);
    if (child == 0) {
        if (setgid(65534) != 0 || setuid(65534) != 0)
            _exit(2);
        int fd = connect_unix(f.sock);
        _exit(fd < 0 ? 3 : 0);
    }
    waitpid(child, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    g_usleep(50000);
    write_all(stop[1], "exit 1\n", 7);
    g_autofree char *p2 = serve_fixture_path(&f, "peer2.db");
    w = store_writer_create(p2, NULL, &error);
    CHECK(!store_writer_serve(w, f.lfd, -1, stop[0], 1000, &error));
    CHECK_ERROR(error, STORE_ERROR_PEER, "refused 1 connection(s) from another user (uid 65534)");
    g_clear_error(&error);
    CHECK(store_writer_finish(w, &sum, &error));
    CHECK_NO_ERROR(error);
    db = db_open(p2);
    CHECK_ROWS(db, "SELECT status, exit_status, flags FROM run", "no-data|1|peer-refused\n");
    sqlite3_close(db);
    close(stop[0]);
    close(stop[1]);
    serve_fixture_release(&f);
}


typedef struct run_on_args {
    int go, stop;
    pid_t child;
    const char *status;
    int delay_ms;
} run_on_args;

/* The recorder's side of test_serve_program_ran_on: lets the program run `delay_ms`, ends it,
 * reaps it and writes its exit status. */
static gpointer run_on_thread(gpointer data)
{
    run_on_args *a = data;
    g_usleep((gulong)a->delay_ms * 1000);
    write_all(a->go, "x", 1);
    close(a->go);
    int status;
    waitpid(a->child, &status, 0);
    write_all(a->stop, a->status, strlen(a->status));
    close(a->stop);
    return NULL;
}

/* The program (the recorder's own child) ends its stream without RUN_END and runs on: it
 * replaced itself by exec, or its runtime ended without a shutdown. Its exit is waited for
 * however long it takes (before, stop_wait_ms, then exit_status NULL), and the loss says it was
 * not killed ('no-shutdown', not 'program-killed'); a program killed by a signal keeps
 * 'program-killed'. */
static void test_serve_program_ran_on(void)
{
    serve_fixture f;
    serve_fixture_init(&f);
    g_autoptr(GError) error = NULL;
    static const struct {
        const char *how, *status, *expect;
    } runs[] = {
        {"exec", "exit 0\n", "truncated|0|no-shutdown\n"},
        {"killed", "signal 9\n", "truncated|137|program-killed\n"},
    };
    for (size_t i = 0; i < G_N_ELEMENTS(runs); i++) {
        int stop[2], go[2];
        g_assert(pipe2(stop, O_CLOEXEC) == 0 && pipe2(go, O_CLOEXEC) == 0);
        pid_t child = fork();
        g_assert(child >= 0);
        if (child == 0) {
            /* the program: two GCs sent, its collector gone (exec), then it runs on until told */
            int fd = connect_unix(f.sock);
            if (fd < 0)
                _exit(3);
            write_all(fd, f.bytes, f.m.gc_end[2] + 30);
            close(fd);
            char c;
            _exit(read(go[0], &c, 1) == 1 ? 0 : 4);
        }
        close(go[0]);
        g_autofree char *path = g_strdup_printf("%s/%s.db", f.dir, runs[i].how);
        store_writer *w = store_writer_create(path, "dotnet App.dll", &error);
        CHECK(w != NULL);
        store_writer_set_session(w, f.dir, getpid()); /* the test is the recorder */
        /* The writer serves with a wait of 1 ms for the exit status; the program exits 300 ms
         * after it started (a thread tells it to, then writes the status as the recorder does). */
        run_on_args a = {.go = go[1], .stop = stop[1], .child = child, .status = runs[i].status,
                         .delay_ms = 300};
        GThread *t = g_thread_new("recorder", run_on_thread, &a);
        CHECK(store_writer_serve(w, f.lfd, -1, stop[0], 1, &error));
        CHECK_NO_ERROR(error);
        store_summary sum;
        CHECK(store_writer_finish(w, &sum, &error));
        CHECK_NO_ERROR(error);
        g_thread_join(t);
        CHECK(sum.connected && !sum.complete && sum.gcs == 2);
        sqlite3 *db = db_open(path);
        CHECK_ROWS(db, "SELECT status, exit_status, loss FROM run", runs[i].expect);
        sqlite3_close(db);
        close(stop[0]);
    }
    serve_fixture_release(&f);
}

typedef struct orphan_args {
    const char *sock;
    const uint8_t *bytes;
    size_t cut, len;
    int stop_wr;
    gboolean told; /* the writer sent HL_CMD_DETACH */
} orphan_args;

/* The attached process's collector in test_serve_attach_recorder_killed: sends the stream up to
 * GC 2, its recorder then dies (the stop pipe closed without a line); it waits for the writer's
 * HL_CMD_DETACH and then ends its stream as a detach does (the rest of it, RUN_END). Without
 * the command within 20 s it hangs up with RUN_END unsent: the test fails, it does not hang. */
static gpointer orphan_collector_thread(gpointer data)
{
    orphan_args *a = data;
    int fd = connect_unix(a->sock);
    g_assert(fd >= 0);
    write_all(fd, a->bytes, a->cut);
    close(a->stop_wr); /* `heaplens attach` killed: no line */
    hl_rec_header h;
    size_t got = 0;
    while (got < sizeof h) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        if (poll(&p, 1, 20000) <= 0)
            break;
        ssize_t n = read(fd, (uint8_t *)&h + got, sizeof h - got);
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    a->told = got == sizeof h && h.type == HL_CMD_DETACH;
    if (a->told)
        write_all(fd, a->bytes + a->cut, a->len - a->cut);
    close(fd);
    return NULL;
}

/* `heaplens attach` killed (kill -9) mid-session: nobody would ever end the session (no
 * --duration, no Ctrl-C), and the writer read on until the process exited — for a service,
 * for good, its file growing, the collector loaded and every later attach refused. The writer of
 * an attach session now tells the collector to detach when its recorder is gone: the recording
 * ends complete, loss recorder-killed. */
static void test_serve_attach_recorder_killed(void)
{
    char *dir = tmp_dir_new();
    g_autoptr(GError) error = NULL;
    g_autofree char *sock = g_build_filename(dir, "s", NULL);
    g_autofree char *control = g_build_filename(dir, "c", NULL);
    g_autofree char *path = g_build_filename(dir, "attach.db", NULL);
    golden_marks m = {0};
    hl_sb *sb = golden_build(&m, FALSE);
    size_t len;
    const uint8_t *bytes = hl_sb_bytes(sb, &len);
    int lfd = listen_unix(sock), cfd = listen_unix(control);
    int stop[2];
    g_assert(pipe2(stop, O_CLOEXEC) == 0);
    orphan_args a = {.sock = sock, .bytes = bytes, .cut = m.gc_end[2], .len = len,
                     .stop_wr = stop[1]};
    GThread *t = g_thread_new("collector", orphan_collector_thread, &a);
    store_writer *w = store_writer_create(path, NULL, &error);
    CHECK(w != NULL);
    store_writer_set_session(w, dir, getpid()); /* the test is the recorder */
    store_writer_set_attach(w);
    CHECK(store_writer_serve(w, lfd, cfd, stop[0], 1000, &error));
    CHECK_NO_ERROR(error);
    g_thread_join(t);
    CHECK(a.told);
    store_summary sum;
    CHECK(store_writer_finish(w, &sum, &error));
    CHECK_NO_ERROR(error);
    CHECK(sum.complete && sum.recorder_killed);
    sqlite3 *db = db_open(path);
    CHECK_ROWS(db, "SELECT status, exit_status, loss FROM run", "complete|NULL|recorder-killed\n");
    CHECK(db_int(db, "SELECT count(*) FROM gcs") == 3);
    sqlite3_close(db);
    close(stop[0]);
    close(lfd);
    close(cfd);
    hl_sb_free(sb);
    tmp_dir_free(dir);
}

/* The golden stream (RUN_START: pid 4242, "dotnet App.dll --flag") served to a writer created
 * with `command` (the recorder's program), then `status` on the stop pipe: run's command, pid
 * and exit status as stored. */
static char *serve_golden_run(const char *command, const char *status)
{
    serve_fixture f;
    serve_fixture_init(&f);
    g_autofree char *path = serve_fixture_path(&f, "served.db");
    serve_collector(&f, path, command, f.len, status, FALSE, 10, STATUS_WAIT_MS);
    sqlite3 *db = db_open(path);
    char *rows = db_rows(db, "SELECT command, pid, exit_status FROM run");
    sqlite3_close(db);
    serve_fixture_release(&f);
    return rows;
}

/* `record --children -- bash -c 'dotnet App.dll --flag'`: the process recorded in the main file
 * is a .NET descendant of the program, not the program. Its run row says whose it is: its own
 * command line (the collector's, not bash's), and no exit status (bash's is not its own). The
 * program itself keeps its exit status, and the recorder's command line where the collector's
 * is its start (the collector reads 2 KiB of it, the recorder 4). */
static void test_serve_not_the_program(void)
{
    g_autofree char *child = serve_golden_run("bash -c dotnet App.dll --flag", "exit 3 999\n");
    CHECK_STR(child, "dotnet App.dll --flag|4242|NULL\n");
    g_autofree char *program = serve_golden_run("dotnet App.dll --flag and more", "exit 3 4242\n");
    CHECK_STR(program, "dotnet App.dll --flag and more|4242|3\n");
    /* a recorder that does not say the program's pid: the status as before */
    g_autofree char *unsaid = serve_golden_run("dotnet App.dll --flag", "signal 9\n");
    CHECK_STR(unsaid, "dotnet App.dll --flag|4242|137\n");
}

static const test_case cases[] = {
    {"serve_socket", test_serve_socket},
    {"serve_not_the_program", test_serve_not_the_program},
    {"serve_no_connection", test_serve_no_connection},
    {"serve_connection", test_serve_connection},
    {"serve_refuses_peer", test_serve_refuses_peer},
    {"serve_program_ran_on", test_serve_program_ran_on},
    {"serve_attach_recorder_killed", test_serve_attach_recorder_killed},
    {"grouped_reader_sees", test_grouped_reader_sees},
    {"grouped_read_steps", test_grouped_read_steps},
};

int main(int argc, char **argv)
{
    return test_cases_main(argc, argv, cases, G_N_ELEMENTS(cases), &failures);
}
