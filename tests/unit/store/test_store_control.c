/* test_store_control.c — the control socket (snapshots asked by `heaplens
 * snapshot`, a descendant's writer answering its own), a writer killed in a snapshot's GC, a
 * disk that fills up, and control clients of another user.
 *
 * Usage: test_store_control <case>|all   (ctest runs each case as store.<case>).
 * What the store's tests share: store_test.h.
 */
#define _GNU_SOURCE
#include "tests/unit/store/store_test.h"
#include "tests/unit/common/hl_live_writer.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* Connects to the control socket and sends `text` (NULL: nothing). */
static int control_send(const char *sock, const char *text)
{
    int fd = connect_unix(sock);
    g_assert(fd >= 0);
    if (text != NULL)
        write_all(fd, text, strlen(text));
    return fd;
}

/* The answer line (newline included), "(eof)" or "(timeout)"; closes `fd`. The "progress"
 * lines before it are appended to `progress` (NULL: skipped). */
static char *control_answer_progress(int fd, int timeout_ms, GString *progress)
{
    GString *s = g_string_new(NULL);
    gint64 deadline = g_get_monotonic_time() + (gint64)timeout_ms * 1000;
    for (;;) {
        struct pollfd p = {.fd = fd, .events = POLLIN};
        gint64 left = (deadline - g_get_monotonic_time()) / 1000;
        if (left <= 0 || poll(&p, 1, (int)left) == 0) {
            g_string_assign(s, "(timeout)");
            break;
        }
        char c;
        if (read(fd, &c, 1) != 1) {
            if (s->len == 0)
                g_string_assign(s, "(eof)");
            break;
        }
        g_string_append_c(s, c);
        if (c == '\n' && g_str_has_prefix(s->str, "progress ")) {
            if (progress != NULL) /* progress lines come before the answer */
                g_string_append(progress, s->str);
            g_string_truncate(s, 0);
        } else if (c == '\n') {
            break;
        }
    }
    close(fd);
    /* "ok S G OBJECTS MS": the time varies; "ok S G OBJECTS MS" is compared */
    if (g_str_has_prefix(s->str, "ok ")) {
        char *sp = strrchr(s->str, ' ');
        if (sp != NULL)
            g_string_truncate(s, (gsize)(sp - s->str));
        g_string_append(s, " MS\n");
    }
    return g_string_free(s, FALSE);
}

static char *control_answer(int fd, int timeout_ms)
{
    return control_answer_progress(fd, timeout_ms, NULL);
}

/* How long a script waits for an answer or a command before it calls it missing: a bound for a
 * failing test, never reached by a passing one, so long that a loaded machine does not reach it
 * either. */
#define SCRIPT_WAIT_MS 30000

/* The writer's wait for the exit status after the stream's end, where the script always writes
 * it: a script that got the CPU later than this would lose the status ("complete|NULL"). */
#define STATUS_WAIT_MS 60000

/* Waits for at least one HL_CMD_SNAPSHOT on the collector's connection; returns how many came
 * (all of them, as far as they arrived within a short while). */
static int collector_read_commands(int fd, int timeout_ms)
{
    hl_rec_header h;
    int n = 0;
    struct pollfd p = {.fd = fd, .events = POLLIN};
    while (poll(&p, 1, n == 0 ? timeout_ms : 100) > 0) {
        ssize_t got = recv(fd, &h, sizeof h, MSG_WAITALL);
        if (got != (ssize_t)sizeof h || h.type != HL_CMD_SNAPSHOT || h.size != 0)
            return -1;
        n++;
    }
    return n;
}

/* A GC that holds snapshot `snap` of the one object 1 (gen 2), with trigger `trigger`. */
static void control_gc(hl_sb *sb, uint32_t gc, uint32_t snap, uint32_t trigger)
{
    hl_sb_gc_start(sb, gc, 2, TRUE, 2);
    hl_sb_snapshot_start(sb, snap, gc, trigger);
    hl_sb_snapshot_object(sb, snap, 1, HL_GEN_2, 0);
    hl_sb_snapshot_end(sb, snap, gc);
    hl_sb_gc_end(sb, gc, 0);
}

typedef struct control_script {
    const char *collector_sock, *control_sock;
    const char *db_path; /* the writer's file: what it committed shows what it has taken */
    int stop_wr;
    int failures; /* checks that failed in the script's thread */
    char *log;    /* what failed */
} control_script;

/* Finishes the writer that served the script, waits for the script's thread and counts its
 * failures (printing what failed); returns the writer's summary. */
/* Sends on the collector's end `col` what the builder holds beyond the *sent bytes already sent:
 * the scripts add records as they go and send each step's. */
static void stream_send_new(int col, hl_sb *sb, size_t *sent)
{
    size_t len;
    const uint8_t *bytes = hl_sb_bytes(sb, &len);
    write_all(col, bytes + *sent, len - *sent);
    *sent = len;
}

static store_summary control_script_end(store_writer *w, GThread *t, control_script *sc)
{
    g_autoptr(GError) error = NULL;
    store_summary sum = {0};
    CHECK(store_writer_finish(w, &sum, &error));
    CHECK_NO_ERROR(error);
    g_thread_join(t);
    if (sc->failures > 0)
        fprintf(stderr, "%s", sc->log);
    failures += sc->failures;
    g_free(sc->log);
    return sum;
}

#define SCRIPT_CHECK_STR(sc, got, want)                                                      \
    do {                                                                                     \
        g_autofree char *got_ = (got);                                                       \
        if (strcmp(got_, (want)) != 0) {                                                     \
            char *old_ = (sc)->log;                                                          \
            (sc)->log = g_strdup_printf("%s%s:%d: got %s, want %s\n", old_ ? old_ : "",      \
                                        __FILE__, __LINE__, got_, (want));                   \
            g_free(old_);                                                                    \
            (sc)->failures++;                                                                \
        }                                                                                    \
    } while (0)

#define SCRIPT_CHECK(sc, cond)                                                               \
    do {                                                                                     \
        if (!(cond)) {                                                                       \
            char *old_ = (sc)->log;                                                          \
            (sc)->log = g_strdup_printf("%s%s:%d: %s\n", old_ ? old_ : "", __FILE__,         \
                                        __LINE__, #cond);                                    \
            g_free(old_);                                                                    \
            (sc)->failures++;                                                                \
        }                                                                                    \
    } while (0)

/* The fake collector and the clients, in one thread, in an order that makes every answer
 * certain; the writer serves in the test's main thread. */
static gpointer control_script_run(gpointer data)
{
    control_script *sc = data;
    const char *ctl = sc->control_sock;

    /* No collector yet (whether the writer serves already or not: the request waits). */
    SCRIPT_CHECK_STR(sc, control_answer(control_send(ctl, "snapshot\n"), SCRIPT_WAIT_MS),
                     "error the program's collector is not connected (yet)\n");
    int idle = control_send(ctl, NULL); /* connects, says nothing: must not hold anything up */

    hl_sb *sb = hl_sb_new();
    hl_sb_run_start(sb, 1, "control");
    hl_sb_type(sb, 1, "A");
    hl_sb_alloc(sb, 1, 1, 24, 7);
    hl_sb_gc_start(sb, 1, 0, FALSE, 2);
    hl_sb_fate(sb, 1, 1, HL_FATE(HL_GEN_0, HL_GEN_1));
    hl_sb_gc_end(sb, 1, 0);
    size_t sent = 0;
    int col = connect_unix(sc->collector_sock);
    g_assert(col >= 0);
    stream_send_new(col, sb, &sent);
    /* Asked before the writer has accepted the collector's connection (it may still be between
     * its poll and its accept), a request is told "not connected (yet)": GC 1 in the file says
     * that the writer has the collector. */
    SCRIPT_CHECK(sc, hl_db_wait_int(sc->db_path, "SELECT count(*) FROM gcs", 1) == 1);

    /* Three clients ask; one of them gives up at once; one sends nonsense. */
    int b = control_send(ctl, "snapshot\n");
    int c = control_send(ctl, "snapshot\r\n");
    close(control_send(ctl, "snapshot\n"));
    SCRIPT_CHECK_STR(sc, control_answer(control_send(ctl, "hello\n"), SCRIPT_WAIT_MS),
                     "error unknown request\n");
    SCRIPT_CHECK(sc, collector_read_commands(col, SCRIPT_WAIT_MS) >= 1);
    control_gc(sb, 2, 1, HL_SNAPSHOT_REQUESTED);
    stream_send_new(col, sb, &sent);
    SCRIPT_CHECK_STR(sc, control_answer(b, SCRIPT_WAIT_MS), "ok 1 2 1 MS\n");
    SCRIPT_CHECK_STR(sc, control_answer(c, SCRIPT_WAIT_MS), "ok 1 2 1 MS\n");

    /* A requested snapshot taken but thrown away (records of it were dropped): "lost", why. */
    int d = control_send(ctl, "snapshot\n");
    SCRIPT_CHECK(sc, collector_read_commands(col, SCRIPT_WAIT_MS) >= 1);
    hl_sb_gc_start(sb, 3, 2, TRUE, 2);
    hl_sb_snapshot_start(sb, 2, 3, HL_SNAPSHOT_REQUESTED);
    hl_sb_snapshot_object(sb, 2, 1, HL_GEN_2, 0);
    hl_sb_snapshot_end_full(sb, &(hl_snapshot_end){.snapshot = 2, .gc = 3, .objects = 5});
    hl_sb_gc_end(sb, 3, 0);
    stream_send_new(col, sb, &sent);
    SCRIPT_CHECK_STR(sc, control_answer(d, SCRIPT_WAIT_MS),
                     "lost 2 3 its records were dropped by the collector (the writer fell "
                     "behind)\n");

    /* A request, then a snapshot of another trigger, then the end of the program. */
    int f = control_send(ctl, "snapshot\n");
    SCRIPT_CHECK(sc, collector_read_commands(col, SCRIPT_WAIT_MS) >= 1);
    control_gc(sb, 4, 3, HL_SNAPSHOT_INDUCED);
    hl_sb_run_end(sb, 4);
    stream_send_new(col, sb, &sent);
    close(col);
    SCRIPT_CHECK_STR(sc, control_answer(f, SCRIPT_WAIT_MS),
                     "error the program ended before the snapshot was taken\n");
    /* The writer now waits for the exit status: the recording has ended. */
    SCRIPT_CHECK_STR(sc, control_answer(control_send(ctl, "snapshot\n"), SCRIPT_WAIT_MS),
                     "error the recording has ended\n");
    write_all(sc->stop_wr, "exit 0\n", 7);
    close(sc->stop_wr);
    SCRIPT_CHECK_STR(sc, control_answer(idle, SCRIPT_WAIT_MS), "error the recording has ended\n");
    hl_sb_free(sb);
    return NULL;
}

static void test_control_snapshot(void)
{
    char *dir = tmp_dir_new();
    g_autoptr(GError) error = NULL;
    g_autofree char *csock = g_build_filename(dir, "collector", NULL);
    g_autofree char *ksock = g_build_filename(dir, "control", NULL);
    g_autofree char *path = g_build_filename(dir, "c.db", NULL);
    int lfd = listen_unix(csock), kfd = listen_unix(ksock);
    int stop[2];
    g_assert(pipe2(stop, O_CLOEXEC) == 0);
    signal(SIGPIPE, SIG_IGN); /* as in the writer process */

    control_script sc = {.collector_sock = csock, .control_sock = ksock, .db_path = path,
                         .stop_wr = stop[1]};
    GThread *t = g_thread_new("script", control_script_run, &sc);
    store_writer *w = store_writer_create(path, "control", &error);
    CHECK(store_writer_serve(w, lfd, kfd, stop[0], STATUS_WAIT_MS, &error));
    CHECK_NO_ERROR(error);
    store_summary sum = control_script_end(w, t, &sc);
    CHECK(sum.complete && sum.gcs == 4 && sum.snapshots == 2);
    sqlite3 *db = db_open(path);
    CHECK_ROWS(db, "SELECT snapshot, gc, trigger, objects FROM snapshots",
               "1|2|requested|1\n3|4|induced|1\n");
    CHECK_ROWS(db, "SELECT value FROM counters WHERE name = 'snapshots_discarded'", "1\n");
    CHECK_ROWS(db, "SELECT status, exit_status FROM run", "complete|0\n");
    sqlite3_close(db);
    close(stop[0]);
    close(lfd);
    close(kfd);
    tmp_dir_free(dir);
}

/* A descendant's writer (store_writer_serve_connection, `record --children`) answers its
 * control clients like the program's: "progress" while a requested snapshot is written, then
 * "ok"; "lost" for one taken and thrown away. The fake collector is the test's end of a socket
 * pair; the script runs in a thread, the writer in the main one. */
typedef struct descendant_script {
    control_script sc;
    int col; /* the collector's end */
} descendant_script;

/* The stream both scripts begin with, sent on the collector's end: run `name`, type A, object
 * 1 promoted by GC 1. Returns the bytes sent. */
static size_t script_first_gc(descendant_script *ds, hl_sb *sb, const char *name)
{
    size_t sent = 0;
    hl_sb_run_start(sb, 1, name);
    hl_sb_type(sb, 1, "A");
    hl_sb_alloc(sb, 1, 1, 24, 7);
    hl_sb_gc_start(sb, 1, 0, FALSE, 2);
    hl_sb_fate(sb, 1, 1, HL_FATE(HL_GEN_0, HL_GEN_1));
    hl_sb_gc_end(sb, 1, 0);
    stream_send_new(ds->col, sb, &sent);
    return sent;
}

static gpointer descendant_script_run(gpointer data)
{
    descendant_script *ds = data;
    control_script *sc = &ds->sc;
    const char *ctl = sc->control_sock;
    hl_sb *sb = hl_sb_new();
    size_t sent = script_first_gc(ds, sb, "descendant");

    /* The request reaches the collector only once the writer serves the connection. */
    int a = control_send(ctl, "snapshot\n");
    SCRIPT_CHECK(sc, collector_read_commands(ds->col, SCRIPT_WAIT_MS) >= 1);
    control_gc(sb, 2, 1, HL_SNAPSHOT_REQUESTED);
    stream_send_new(ds->col, sb, &sent);
    GString *progress = g_string_new(NULL);
    SCRIPT_CHECK_STR(sc, control_answer_progress(a, SCRIPT_WAIT_MS, progress), "ok 1 2 1 MS\n");
    /* One object: "progress 1 1" may come as its records arrive; "writing" always comes. */
    SCRIPT_CHECK(sc, g_str_has_suffix(progress->str, "progress 1 writing 1\n"));
    g_string_free(progress, TRUE);

    int b = control_send(ctl, "snapshot\n");
    SCRIPT_CHECK(sc, collector_read_commands(ds->col, SCRIPT_WAIT_MS) >= 1);
    hl_sb_gc_start(sb, 3, 2, TRUE, 2);
    hl_sb_snapshot_start(sb, 2, 3, HL_SNAPSHOT_REQUESTED);
    hl_sb_snapshot_object(sb, 2, 1, HL_GEN_2, 0);
    hl_sb_snapshot_end_full(sb, &(hl_snapshot_end){.snapshot = 2, .gc = 3, .objects = 5});
    hl_sb_gc_end(sb, 3, 0);
    hl_sb_run_end(sb, 3);
    stream_send_new(ds->col, sb, &sent);
    SCRIPT_CHECK_STR(sc, control_answer(b, SCRIPT_WAIT_MS),
                     "lost 2 3 its records were dropped by the collector (the writer fell "
                     "behind)\n");
    close(ds->col);
    write_all(sc->stop_wr, "exit 0\n", 7);
    close(sc->stop_wr);
    hl_sb_free(sb);
    return NULL;
}

/* A request answered only by a snapshot it asked for: `a` asks (command 1), the collector takes
 * it; `b` asks after (command 2). The first requested snapshot to commit serves command 1 only
 * (its GC took the request before command 2 came: commands 1 + 1): `a` gets it, `b` waits for
 * the next, which serves both (1 + 2). Before, `b` got the first too, a snapshot that started
 * before it asked (seen during an attach: the second request got the first one's). A snapshot
 * that does not say (0, a collector before the count) answers every waiting client. */
static gpointer matched_script_run(gpointer data)
{
    descendant_script *ds = data;
    control_script *sc = &ds->sc;
    const char *ctl = sc->control_sock;
    hl_sb *sb = hl_sb_new();
    size_t sent = script_first_gc(ds, sb, "matched");

    int a = control_send(ctl, "snapshot\n");
    SCRIPT_CHECK(sc, collector_read_commands(ds->col, SCRIPT_WAIT_MS) == 1);
    int b = control_send(ctl, "snapshot\n");
    SCRIPT_CHECK(sc, collector_read_commands(ds->col, SCRIPT_WAIT_MS) == 1);
    for (uint32_t gc = 2; gc <= 3; gc++) {
        hl_sb_gc_start(sb, gc, 2, TRUE, 2);
        hl_sb_snapshot_start_commands(sb, gc - 1, gc, HL_SNAPSHOT_REQUESTED, gc);
        hl_sb_snapshot_object(sb, gc - 1, 1, HL_GEN_2, 0);
        hl_sb_snapshot_end(sb, gc - 1, gc);
        hl_sb_gc_end(sb, gc, 0);
        stream_send_new(ds->col, sb, &sent);
        if (gc == 2) /* GC 2 is committed before GC 3 is sent */
            SCRIPT_CHECK_STR(sc, control_answer(a, SCRIPT_WAIT_MS), "ok 1 2 1 MS\n");
    }
    SCRIPT_CHECK_STR(sc, control_answer(b, SCRIPT_WAIT_MS), "ok 2 3 1 MS\n");

    /* a snapshot that does not say which commands it serves answers whoever waits */
    int d = control_send(ctl, "snapshot\n");
    SCRIPT_CHECK(sc, collector_read_commands(ds->col, SCRIPT_WAIT_MS) == 1);
    control_gc(sb, 4, 3, HL_SNAPSHOT_REQUESTED);
    hl_sb_run_end(sb, 4);
    stream_send_new(ds->col, sb, &sent);
    SCRIPT_CHECK_STR(sc, control_answer(d, SCRIPT_WAIT_MS), "ok 3 4 1 MS\n");
    close(ds->col);
    write_all(sc->stop_wr, "exit 0\n", 7);
    close(sc->stop_wr);
    hl_sb_free(sb);
    return NULL;
}

/* Serves one collector connection, scripted by the thread `run` (on its descendant_script's
 * `col` end), and the control socket beside it, into a database `name` in a new temporary
 * directory (`dir`, `path`): the writer's summary. */
static store_summary serve_scripted(const char *name, GThreadFunc run, char **dir, char **path)
{
    *dir = tmp_dir_new();
    g_autoptr(GError) error = NULL;
    g_autofree char *ksock = g_build_filename(*dir, "control", NULL);
    *path = g_build_filename(*dir, name, NULL);
    int kfd = listen_unix(ksock);
    int sv[2], stop[2];
    g_assert(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
    g_assert(pipe2(stop, O_CLOEXEC) == 0);
    signal(SIGPIPE, SIG_IGN); /* as in the writer process */

    descendant_script ds = {.sc = {.control_sock = ksock, .stop_wr = stop[1]}, .col = sv[1]};
    GThread *t = g_thread_new("script", run, &ds);
    store_writer *w = store_writer_create(*path, NULL, &error);
    CHECK(store_writer_serve_connection(w, sv[0], kfd, stop[0], 2000, &error));
    CHECK_NO_ERROR(error);
    store_summary sum = control_script_end(w, t, &ds.sc);
    close(sv[0]);
    close(stop[0]);
    close(kfd);
    return sum;
}

static void test_control_descendant(void)
{
    char *dir;
    g_autofree char *path = NULL;
    store_summary sum = serve_scripted("app.4321.db", descendant_script_run, &dir, &path);
    CHECK(sum.complete && sum.gcs == 3 && sum.snapshots == 1);
    sqlite3 *db = db_open(path);
    CHECK_ROWS(db, "SELECT snapshot, gc, trigger, objects FROM snapshots", "1|2|requested|1\n");
    sqlite3_close(db);
    tmp_dir_free(dir);
}

/* The next command on the collector's connection: its type, or -1 (none within `timeout_ms`). */
static int collector_read_command(int fd, int timeout_ms)
{
    hl_rec_header h;
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (poll(&p, 1, timeout_ms) <= 0 || recv(fd, &h, sizeof h, MSG_WAITALL) != (ssize_t)sizeof h ||
        h.size != 0)
        return -1;
    return (int)h.type;
}

/* The answer line as it came ("(eof)", "(timeout)"); closes `fd`. */
static char *control_line(int fd, int timeout_ms)
{
    GString *s = g_string_new(NULL);
    struct pollfd p = {.fd = fd, .events = POLLIN};
    char c;
    while (poll(&p, 1, timeout_ms) > 0 && read(fd, &c, 1) == 1) {
        g_string_append_c(s, c);
        if (c == '\n')
            break;
    }
    close(fd);
    if (s->len == 0)
        g_string_assign(s, "(eof)");
    return g_string_free(s, FALSE);
}

/* `heaplens attach`'s second signal during a detach: "detach now" on a connection of its own
 * while "detach" waits. The collector is told HL_CMD_DETACH once, then HL_CMD_DETACH_NOW once
 * (a second "detach now" sends nothing more); every client is answered at the stream's end. */
static gpointer detach_now_script_run(gpointer data)
{
    descendant_script *ds = data;
    control_script *sc = &ds->sc;
    const char *ctl = sc->control_sock;
    hl_sb *sb = hl_sb_new();
    size_t sent = 0;
    hl_sb_run_start(sb, 1, "attached");
    hl_sb_type(sb, 1, "A");
    hl_sb_alloc(sb, 1, 1, 24, 7);
    hl_sb_gc_start(sb, 1, 0, FALSE, 2);
    hl_sb_gc_end(sb, 1, 0);
    stream_send_new(ds->col, sb, &sent);

    int a = control_send(ctl, "detach\n");
    SCRIPT_CHECK(sc, collector_read_command(ds->col, SCRIPT_WAIT_MS) == HL_CMD_DETACH);
    int b = control_send(ctl, "detach now\n");
    SCRIPT_CHECK(sc, collector_read_command(ds->col, SCRIPT_WAIT_MS) == HL_CMD_DETACH_NOW);
    int c = control_send(ctl, "detach now\n");
    SCRIPT_CHECK(sc, collector_read_command(ds->col, 300) == -1); /* nothing more */
    hl_sb_run_end(sb, 1);
    stream_send_new(ds->col, sb, &sent);
    close(ds->col);
    SCRIPT_CHECK_STR(sc, control_line(a, SCRIPT_WAIT_MS), "ok detached\n");
    SCRIPT_CHECK_STR(sc, control_line(b, SCRIPT_WAIT_MS), "ok detached\n");
    SCRIPT_CHECK_STR(sc, control_line(c, SCRIPT_WAIT_MS), "ok detached\n");
    write_all(sc->stop_wr, "detached\n", 9);
    close(sc->stop_wr);
    hl_sb_free(sb);
    return NULL;
}

static void test_control_detach_now(void)
{
    char *dir;
    g_autofree char *path = NULL;
    store_summary sum = serve_scripted("attach.db", detach_now_script_run, &dir, &path);
    CHECK(sum.complete && sum.gcs == 1);
    tmp_dir_free(dir);
}

/* TRUE once process `pid` has taken every byte written to the pipe whose read end is `read_fd`
 * (the same number in the child, which inherited it) and waits in read(2) on it again: it has
 * applied every whole record it was sent, and can do nothing more until more comes. FALSE after
 * `timeout_ms`. (/proc/PID/syscall names the call a blocked process is in; "running" else.) */
static gboolean reader_waits_for_more(pid_t pid, int read_fd, int timeout_ms)
{
    g_autofree char *path = g_strdup_printf("/proc/%ld/syscall", (long)pid);
    gint64 deadline = g_get_monotonic_time() + (gint64)timeout_ms * 1000;
    do {
        int unread = -1;
        g_autofree char *text = NULL;
        long nr = -1;
        unsigned long fd = 0;
        if (ioctl(read_fd, FIONREAD, &unread) == 0 && unread == 0 &&
            g_file_get_contents(path, &text, NULL, NULL) &&
            sscanf(text, "%ld 0x%lx", &nr, &fd) == 2 && nr == SYS_read &&
            fd == (unsigned long)read_fd)
            return TRUE;
        g_usleep(1000);
    } while (g_get_monotonic_time() < deadline);
    return FALSE;
}

/* A writer killed in the middle of a snapshot's GC (the snapshot's rows written, its GC_END not
 * come): the file opens, the earlier snapshot is whole, nothing of the cut one shows. */
static void test_killed_mid_snapshot(void)
{
    char *dir = tmp_dir_new();
    g_autoptr(GError) error = NULL;
    g_autofree char *path = g_build_filename(dir, "k.db", NULL);
    hl_sb *sb = hl_sb_new();
    hl_sb_type(sb, 1, "A");
    for (uint64_t id = 1; id <= 100; id++)
        hl_sb_alloc(sb, id, 1, 24, 7);
    control_gc(sb, 1, 1, HL_SNAPSHOT_INDUCED);
    size_t first = hl_sb_len(sb);
    hl_sb_gc_start(sb, 2, 2, TRUE, 101);
    hl_sb_snapshot_start(sb, 2, 2, HL_SNAPSHOT_INDUCED);
    for (uint64_t id = 1; id <= 100; id++)
        hl_sb_snapshot_object(sb, 2, id, HL_GEN_2, 0);
    /* Its SNAPSHOT_END: the writer writes its rows, inside GC 2's transaction, never committed. */
    hl_sb_snapshot_end(sb, 2, 2);
    size_t len;
    const uint8_t *bytes = hl_sb_bytes(sb, &len);
    int pipefd[2];
    g_assert(pipe2(pipefd, O_CLOEXEC) == 0);

    pid_t child = fork();
    g_assert(child >= 0);
    if (child == 0) {
        close(pipefd[1]);
        store_writer *w = store_writer_create(path, "killed", NULL);
        if (w == NULL)
            _exit(2);
        store_writer_ingest_fd(w, pipefd[0], NULL);
        pause(); /* never finishes: killed */
        _exit(0);
    }
    /* The read end stays open here too: how much the writer has not read yet (FIONREAD). */
    write_all(pipefd[1], bytes, first);
    /* Wait until GC 1 and its snapshot are committed. */
    CHECK(hl_db_wait_int(path, "SELECT count(*) FROM snapshots", 1) == 1);
    write_all(pipefd[1], bytes + first, len - first); /* snapshot 2, cut short */
    /* Killed once it has written snapshot 2's rows (at its SNAPSHOT_END, the last record sent)
     * and waits for GC 2's end: killed before, the test would pass without a half-written
     * snapshot to leave out. It cannot go further than that: nothing more is sent. */
    CHECK(reader_waits_for_more(child, pipefd[0], 30000));
    kill(child, SIGKILL);
    int status;
    waitpid(child, &status, 0);
    close(pipefd[1]);
    close(pipefd[0]);

    sqlite3 *db = store_db_open_readonly(path, &error);
    CHECK_NO_ERROR(error);
    CHECK(db != NULL);
    if (db != NULL) {
        CHECK_ROWS(db, "SELECT snapshot, gc, objects FROM snapshots", "1|1|1\n");
        CHECK_ROWS(db, "SELECT snapshot, count(*) FROM snapshot_objects GROUP BY snapshot", "1|1\n");
        CHECK_ROWS(db, "SELECT gc FROM gcs", "1\n");
        CHECK_ROWS(db, "SELECT status FROM run", "recording\n");
        sqlite3_close(db);
    }
    hl_sb_free(sb);
    tmp_dir_free(dir);
}

typedef struct disk_full_ctx {
    const char *path;
    int fd; /* the stream */
} disk_full_ctx;

/* In test_disk_full's child: the stream ingested and finished, what each said in a line. */
static char *disk_full_ingest(void *data)
{
    disk_full_ctx *c = data;
    GError *err = NULL, *ferr = NULL;
    g_log_set_always_fatal(G_LOG_LEVEL_CRITICAL | G_LOG_LEVEL_WARNING);
    store_writer *w = store_writer_create(c->path, "full", &err);
    if (w == NULL)
        _exit(4);
    gboolean ingested = store_writer_ingest_fd(w, c->fd, &err);
    gboolean finished = store_writer_finish(w, NULL, &ferr);
    return g_strdup_printf("%d|%d|%s|%d|%s", ingested, err ? err->code : -1,
                           err ? err->message : "", finished, ferr ? ferr->message : "");
}

/* A disk that fills up: the writer's files cannot grow past RLIMIT_FSIZE (in a child, SIGXFSZ
 * ignored, so writes fail with EFBIG where a full disk gives ENOSPC). The ingest stops with one
 * error naming the file and the cause, without GLib criticals (made fatal here); finish gives
 * up cleanly; every GC committed before stays readable. */
static void test_disk_full(void)
{
    char *dir = tmp_dir_new();
    g_autofree char *path = g_build_filename(dir, "full.db", NULL);
    hl_sb *sb = hl_sb_new();
    uint64_t id = 1;
    const uint32_t gcs = 60;
    hl_sb_type(sb, 1, "A");
    for (uint32_t gc = 1; gc <= gcs; gc++) {
        uint64_t first = id;
        for (int i = 0; i < 4000; i++, id++)
            hl_sb_alloc(sb, id, 1, 24 + 8 * (id % 7), 7);
        hl_sb_gc_start(sb, gc, 0, FALSE, id);
        for (uint64_t o = first; o < id; o++)
            hl_sb_fate(sb, gc, o, HL_FATE(HL_GEN_0, HL_GEN_1));
        hl_sb_gc_end(sb, gc, 0);
    }
    hl_sb_run_end(sb, gcs);
    size_t len;
    const uint8_t *bytes = hl_sb_bytes(sb, &len);
    disk_full_ctx ctx = {.path = path, .fd = hl_sb_memfd(sb, len)};
    g_assert(ctx.fd >= 0);
    g_autofree char *got = run_disk_full(1u << 20, disk_full_ingest, &ctx);
    CHECK(got[0] != '\0');
    fprintf(stderr, "disk_full: %s\n", got);
    g_auto(GStrv) f = g_strsplit(got, "|", 5);
    CHECK(g_strv_length(f) == 5);
    if (g_strv_length(f) == 5) {
        CHECK(strcmp(f[0], "0") == 0);                   /* the ingest stopped */
        CHECK(atoi(f[1]) == STORE_ERROR_IO);
        CHECK(g_str_has_prefix(f[2], path));             /* names the file ... */
        /* ... and the cause: EFBIG is SQLite's "disk I/O error" (ENOSPC would be "database or
         * disk is full"), not what failed after it */
        CHECK(strstr(f[2], "disk I/O error") != NULL || strstr(f[2], "disk is full") != NULL);
        CHECK(strstr(f[2], "no transaction") == NULL && strstr(f[2], "savepoint") == NULL);
        CHECK(strcmp(f[3], "0") == 0); /* finish could not write the end either, and says so */
        CHECK(strstr(f[4], "no transaction") == NULL && strstr(f[4], "savepoint") == NULL);
    }
    g_autoptr(GError) error = NULL;
    sqlite3 *db = store_db_open_readonly(path, &error);
    CHECK_NO_ERROR(error);
    CHECK(db != NULL);
    if (db != NULL) {
        int64_t stored = db_int(db, "SELECT count(*) FROM gcs");
        CHECK(stored > 0 && stored < gcs);
        /* the committed GCs are whole: 4000 survivors each, none of a later GC */
        CHECK(db_int(db, "SELECT count(*) FROM objects") == stored * 4000);
        CHECK(db_int(db, "SELECT max(first_gc) FROM objects") == stored);
        CHECK_ROWS(db, "PRAGMA integrity_check", "ok\n");
        sqlite3_close(db);
    }
    close(ctx.fd);
    (void)bytes;
    hl_sb_free(sb);
    tmp_dir_free(dir);
}

/* A control client of another user is closed unanswered (and holds nothing up). */
static void test_control_matched(void)
{
    char *dir = NULL, *path = NULL;
    store_summary sum = serve_scripted("m.db", matched_script_run, &dir, &path);
    CHECK(sum.complete && sum.gcs == 4 && sum.snapshots == 3);
    g_free(path);
    tmp_dir_free(dir);
}

static void test_control_refuses_peer(void)
{
    if (getuid() != 0) {
        fprintf(stderr, "SKIP: needs root to connect as another user\n");
        exit(SKIP_CODE);
    }
    char *dir = tmp_dir_new();
    g_autoptr(GError) error = NULL;
    g_autofree char *csock = g_build_filename(dir, "collector", NULL);
    g_autofree char *ksock = g_build_filename(dir, "control", NULL);
    g_autofree char *path = g_build_filename(dir, "p.db", NULL);
    int lfd = listen_unix(csock), kfd = listen_unix(ksock);
    CHECK(chmod(dir, 0755) == 0 && chmod(ksock, 0777) == 0);
    int stop[2], answer[2];
    g_assert(pipe2(stop, O_CLOEXEC) == 0 && pipe2(answer, O_CLOEXEC) == 0);

    pid_t child = fork();
    g_assert(child >= 0);
    if (child == 0) {
        if (setgid(65534) != 0 || setuid(65534) != 0)
            _exit(2);
        int fd = connect_unix(ksock);
        if (fd < 0)
            _exit(3);
        (void)!write(fd, "snapshot\n", 9);
        (void)!write(answer[1], "+", 1); /* connected */
        g_autofree char *got = control_answer(fd, SCRIPT_WAIT_MS);
        (void)!write(answer[1], got, strlen(got));
        _exit(0);
    }
    close(answer[1]);
    char mark = 0;
    CHECK(read(answer[0], &mark, 1) == 1 && mark == '+');
    write_all(stop[1], "exit 0\n", 7);
    /* The program "has exited" (no collector ever): the other user's client, already in the
     * backlog, is accepted in the same poll and closed without an answer. */
    store_writer *w = store_writer_create(path, NULL, &error);
    CHECK(store_writer_serve(w, lfd, kfd, stop[0], 500, &error));
    CHECK_NO_ERROR(error);
    CHECK(store_writer_finish(w, NULL, &error));
    int status = 0;
    waitpid(child, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    char buf[128] = "";
    ssize_t n = read(answer[0], buf, sizeof buf - 1);
    buf[n > 0 ? n : 0] = '\0';
    CHECK_STR(buf, "(eof)");
    close(answer[0]);
    close(stop[0]);
    close(stop[1]);
    close(lfd);
    close(kfd);
    tmp_dir_free(dir);
}

static const test_case cases[] = {
    {"disk_full", test_disk_full},
    {"control_snapshot", test_control_snapshot},
    {"control_descendant", test_control_descendant},
    {"control_matched", test_control_matched},
    {"control_detach_now", test_control_detach_now},
    {"killed_mid_snapshot", test_killed_mid_snapshot},
    {"control_refuses_peer", test_control_refuses_peer},
};

int main(int argc, char **argv)
{
    return test_cases_main(argc, argv, cases, G_N_ELEMENTS(cases), &failures);
}
