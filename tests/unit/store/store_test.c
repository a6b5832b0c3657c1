/* store_test.c — what the store's test programs share: see store_test.h. */
#define _GNU_SOURCE
#include "tests/unit/store/store_test.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

int failures;

/* ---- files and rows -------------------------------------------------------------------------- */

char *tmp_dir_new(void)
{
    const char *base = g_file_test("/dev/shm", G_FILE_TEST_IS_DIR) && access("/dev/shm", W_OK) == 0
                           ? "/dev/shm"
                           : g_get_tmp_dir();
    g_autofree char *tmpl = g_build_filename(base, "heaplens-store-test-XXXXXX", NULL);
    char *dir = g_mkdtemp(g_steal_pointer(&tmpl));
    g_assert(dir != NULL);
    return dir;
}

void tmp_dir_free(char *dir)
{
    GDir *d = g_dir_open(dir, 0, NULL);
    const char *name;
    while (d != NULL && (name = g_dir_read_name(d)) != NULL) {
        g_autofree char *p = g_build_filename(dir, name, NULL);
        unlink(p);
    }
    if (d != NULL)
        g_dir_close(d);
    rmdir(dir);
    g_free(dir);
}

sqlite3 *db_open(const char *path)
{
    sqlite3 *db = NULL;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        fprintf(stderr, "cannot open %s: %s\n", path, sqlite3_errmsg(db));
        abort();
    }
    return db;
}

void file_copy(const char *from, const char *to)
{
    g_autofree char *bytes = NULL;
    gsize len = 0;
    if (!g_file_get_contents(from, &bytes, &len, NULL) ||
        !g_file_set_contents(to, bytes, (gssize)len, NULL)) {
        fprintf(stderr, "cannot copy %s to %s\n", from, to);
        abort();
    }
}

char *db_rows(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st = NULL;
    GString *out = g_string_new(NULL);
    if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
        fprintf(stderr, "SQL error in %s: %s\n", sql, sqlite3_errmsg(db));
        abort();
    }
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        for (int i = 0; i < sqlite3_column_count(st); i++) {
            const unsigned char *t = sqlite3_column_text(st, i);
            g_string_append_printf(out, "%s%s", i > 0 ? "|" : "", t != NULL ? (const char *)t : "NULL");
        }
        g_string_append_c(out, '\n');
    }
    if (rc != SQLITE_DONE) {
        fprintf(stderr, "SQL error in %s: %s\n", sql, sqlite3_errmsg(db));
        abort();
    }
    sqlite3_finalize(st);
    return g_string_free(out, FALSE);
}

int64_t db_int(sqlite3 *db, const char *sql)
{
    g_autofree char *rows = db_rows(db, sql);
    return g_ascii_strtoll(rows, NULL, 10);
}

char *run_disk_full(uint64_t max_bytes, char *(*body)(void *ctx), void *ctx)
{
    int report[2];
    g_assert(pipe2(report, O_CLOEXEC) == 0);
    pid_t child = fork();
    g_assert(child >= 0);
    if (child == 0) {
        close(report[0]);
        signal(SIGXFSZ, SIG_IGN);
        struct rlimit lim = {.rlim_cur = max_bytes, .rlim_max = max_bytes};
        if (setrlimit(RLIMIT_FSIZE, &lim) != 0)
            _exit(3);
        g_autofree char *line = body(ctx);
        if (line != NULL && write(report[1], line, strlen(line)) < 0)
            _exit(5);
        _exit(0);
    }
    close(report[1]);
    GString *got = g_string_new(NULL);
    char buf[1024];
    ssize_t n;
    while ((n = read(report[0], buf, sizeof buf)) != 0) {
        if (n < 0 && errno != EINTR)
            break;
        if (n > 0)
            g_string_append_len(got, buf, n);
    }
    close(report[0]);
    int status = 0;
    waitpid(child, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    return g_string_free(got, FALSE);
}

/* ---- the golden recording -------------------------------------------------------------------- */

const char *const golden_handle_stages[GOLDEN_HANDLE_STAGES] = {
    "",
    /* 1: after GC 1, 0xA000 created on object 1 */
    "1|40960|unknown|1|1|NULL\n",
    /* 2: 0xB000 on object 6 */
    "1|40960|unknown|1|1|NULL\n2|45056|unknown|6|1|NULL\n",
    /* 3: 0xC000 on object 7 */
    "1|40960|unknown|1|1|NULL\n2|45056|unknown|6|1|NULL\n3|49152|unknown|7|1|NULL\n",
    /* 4: ... and destroyed before any GC saw it: kind stays unknown */
    "1|40960|unknown|1|1|NULL\n2|45056|unknown|6|1|NULL\n3|49152|unknown|7|1|1\n",
    /* 5: GC 2 tells the kinds of 0xA000 and 0xB000 */
    "1|40960|strong|1|1|NULL\n2|45056|pinned|6|1|NULL\n3|49152|unknown|7|1|1\n",
    /* 6: after GC 2, 0xB000 destroyed */
    "1|40960|strong|1|1|NULL\n2|45056|pinned|6|1|2\n3|49152|unknown|7|1|1\n",
    /* 7: and its address reused: a new lifetime, on object 9 */
    "1|40960|strong|1|1|NULL\n2|45056|pinned|6|1|2\n3|49152|unknown|7|1|1\n"
    "4|45056|unknown|9|2|NULL\n",
    /* 8: GC 3 tells its kind, and that of 0xD000, never seen created */
    "1|40960|strong|1|1|NULL\n2|45056|pinned|6|1|2\n3|49152|unknown|7|1|1\n"
    "4|45056|weak|9|2|NULL\n5|53248|strong|NULL|NULL|NULL\n",
};

/* Marks the end of handle stage `stage`. */
static void golden_handle_mark(hl_sb *sb, golden_marks *m, int stage)
{
    size_t end = hl_sb_len(sb);
    if (m != NULL)
        m->handle_end[stage] = end;
}

/* Snapshot 1, of GC 3: alive after it are 1 (gen 2), 6 (POH), 9 (gen 2) and 10 (gen 1). Items
 * out of order, objects in two records, two references from 1 to 9 (two fields of 1 point to 9),
 * two identical stack roots (one frame, two slots), a null root. */
static void golden_snapshot(hl_sb *sb, golden_marks *m)
{
    hl_sb_snapshot_start(sb, 1, 3, HL_SNAPSHOT_INDUCED);
    if (m != NULL)
        m->snapshot_start_end = hl_sb_len(sb);
    hl_sb_snapshot_object(sb, 1, 10, HL_GEN_1, 0);
    hl_sb_snapshot_object(sb, 1, 1, HL_GEN_2, 0);
    hl_sb_flush(sb);
    hl_sb_snapshot_object(sb, 1, 9, HL_GEN_2, 0);
    hl_sb_snapshot_object(sb, 1, 6, HL_GEN_POH, 0);
    hl_sb_snapshot_ref(sb, 1, 10, 1);
    hl_sb_snapshot_ref(sb, 1, 1, 9);
    hl_sb_snapshot_ref(sb, 1, 1, 6);
    hl_sb_snapshot_ref(sb, 1, 1, 9);
    hl_sb_snapshot_ref(sb, 1, 9, 10);
    hl_sb_snapshot_root(sb, 1, 1, HL_ROOT_HANDLE, 0, 0xA000);
    hl_sb_snapshot_root(sb, 1, 9, HL_ROOT_HANDLE, HL_ROOT_WEAK, 0xB000);
    hl_sb_snapshot_root(sb, 1, 10, HL_ROOT_STACK, 0, 0x5151);
    hl_sb_snapshot_root(sb, 1, 10, HL_ROOT_STACK, 0, 0x5151);
    hl_sb_snapshot_root(sb, 1, 6, HL_ROOT_FINALIZER, 0, 0);
    hl_sb_snapshot_root(sb, 1, 0, HL_ROOT_OTHER, 0, 0);
    hl_sb_snapshot_root(sb, 1, 6, HL_ROOT_STACK, HL_ROOT_PINNING, 0x5152);
    hl_snapshot_end e = {
        .snapshot = 1,
        .gc = 3,
        .objects = 4,
        .refs = 5,
        .roots = 7,
        .bytes = 32 + 64 + 48 + 24,
        .unresolved = 1,
        .walk_ns = 5000,
    };
    hl_sb_snapshot_end_full(sb, &e);
}

gboolean golden_packed;

hl_sb *golden_build(golden_marks *m, gboolean unknown)
{
    hl_sb *sb = hl_sb_new();
    hl_sb_set_packed_survivors(sb, golden_packed);
    static const uint8_t junk[5] = {1, 2, 3, 4, 5};

    hl_sb_run_start(sb, 4242, "dotnet App.dll --flag");
    if (unknown)
        hl_sb_record(sb, 77, junk, sizeof junk);
    hl_sb_type(sb, T_STRING, "System.String");
    hl_type bytes = {.type_id = T_BYTES, .flags = HL_TYPE_FLAG_ARRAY, .class_id = 0x1234};
    hl_sb_type_full(sb, &bytes, "System.Byte[]");
    hl_sb_type(sb, T_NODE, "App.Node");
    hl_sb_thread(sb, 100, 7, "Main");

    /* Before GC 1: ids 1..6, in two batches (one from each thread, out of id order). */
    hl_sb_alloc(sb, 1, T_STRING, 32, 100);
    hl_sb_alloc(sb, 2, T_BYTES, 100000, 100);
    hl_sb_alloc(sb, 4, T_STRING, 40, 100);
    hl_sb_alloc(sb, 5, T_NODE, 24, 100);
    hl_sb_alloc(sb, 3, T_NODE, 24, 101);
    hl_sb_alloc(sb, 6, T_BYTES, 64, 101);
    if (unknown)
        hl_sb_record(sb, 0, NULL, 0);

    hl_gc_start s1 = {
        .gc = 1,
        .generation = 0,
        .reason = 0,
        .condemned_mask = 1,
        .start_mono_ns = 1010000000u,
        .suspend_mono_ns = 1009990000u,
        .first_id_after = 7,
        .size_before = {1000, 200, 300, 100000, 64},
    };
    hl_sb_gc_start_full(sb, &s1);
    hl_sb_fate(sb, 1, 1, HL_FATE(HL_GEN_0, HL_GEN_1));
    hl_sb_fate(sb, 1, 2, HL_FATE(HL_GEN_LOH, HL_GEN_LOH));
    hl_sb_fate(sb, 1, 3, HL_FATE(HL_GEN_0, HL_GEN_NONE));
    hl_sb_fate(sb, 1, 4, HL_FATE(HL_GEN_0, HL_GEN_1));
    hl_sb_fate(sb, 1, 5, HL_FATE(HL_GEN_0, HL_GEN_NONE));
    hl_sb_fate(sb, 1, 6, HL_FATE(HL_GEN_POH, HL_GEN_POH));
    hl_gc_end e1 = {
        .gc = 1,
        .flags = HL_GC_FLAG_COMPACTING,
        .end_mono_ns = 1011000000u,
        .resume_mono_ns = 1011010000u,
        .size_after = {0, 72, 300, 100000, 64},
        .survived_bytes = 72,
        .moved_bytes = 72,
        .moved_ranges = 1,
        .objects_live = 4,
        .counters = {.allocs_seen = 6, .allocs_dropped = 0, .model_anomalies = 1},
    };
    hl_sb_gc_end_full(sb, &e1);
    if (m != NULL)
        m->gc_end[1] = hl_sb_len(sb);

    hl_sb_alloc(sb, 7, T_STRING, 32, 100);
    hl_sb_alloc(sb, 8, T_NODE, 24, 101);
    hl_sb_alloc(sb, 9, T_STRING, 48, 100);
    if (unknown)
        hl_sb_record(sb, 0xffff, junk, 3);
    hl_sb_handle_created(sb, 0xA000, 1, 1);
    golden_handle_mark(sb, m, 1);
    hl_sb_handle_created(sb, 0xB000, 6, 1);
    golden_handle_mark(sb, m, 2);
    hl_sb_handle_created(sb, 0xC000, 7, 1);
    golden_handle_mark(sb, m, 3);
    hl_sb_handle_destroyed(sb, 0xC000, 1);
    golden_handle_mark(sb, m, 4);

    hl_sb_gc_start(sb, 2, 1, FALSE, 10);
    hl_sb_fate(sb, 2, 7, HL_FATE(HL_GEN_0, HL_GEN_1));
    hl_sb_fate(sb, 2, 8, HL_FATE(HL_GEN_0, HL_GEN_NONE));
    hl_sb_fate(sb, 2, 9, HL_FATE(HL_GEN_0, HL_GEN_1));
    hl_sb_death(sb, 2, 4);
    hl_sb_promotion(sb, 2, 1, HL_GEN_2);
    hl_sb_handle_kind(sb, 2, 0xA000, HL_HANDLE_STRONG);
    hl_sb_handle_kind(sb, 2, 0xB000, HL_HANDLE_PINNED);
    golden_handle_mark(sb, m, 5);
    hl_sb_gc_end(sb, 2, 0);
    if (m != NULL)
        m->gc_end[2] = hl_sb_len(sb);

    hl_sb_handle_destroyed(sb, 0xB000, 2);
    golden_handle_mark(sb, m, 6);
    hl_sb_handle_created(sb, 0xB000, 9, 2); /* the address, reused */
    golden_handle_mark(sb, m, 7);
    hl_sb_alloc(sb, 10, T_NODE, 24, 100);
    hl_sb_alloc(sb, 11, T_STRING, 16, 100);

    hl_sb_gc_start(sb, 3, 2, TRUE, 12);
    hl_sb_fate(sb, 3, 10, HL_FATE(HL_GEN_0, HL_GEN_1));
    hl_sb_fate(sb, 3, 11, HL_FATE(HL_GEN_0, HL_GEN_NONE));
    hl_sb_death(sb, 3, 2);
    hl_sb_death(sb, 3, 7);
    hl_sb_promotion(sb, 3, 9, HL_GEN_2);
    hl_sb_handle_kind(sb, 3, 0xB000, HL_HANDLE_WEAK);
    hl_sb_handle_kind(sb, 3, 0xD000, HL_HANDLE_STRONG); /* never seen created */
    golden_handle_mark(sb, m, 8);
    golden_snapshot(sb, m);
    hl_gc_end e3 = {
        .gc = 3,
        .flags = HL_GC_FLAG_COMPACTING,
        .end_mono_ns = 1031000000u,
        .resume_mono_ns = 1031010000u,
        .roots = 7,
        .pinned_roots = 1,
        .counters = {.allocs_seen = 11},
    };
    hl_sb_gc_end_full(sb, &e3);
    if (m != NULL)
        m->gc_end[3] = hl_sb_len(sb);

    /* After the last GC. */
    hl_sb_alloc(sb, 12, T_STRING, 32, 100);
    hl_sb_alloc(sb, 13, T_NODE, 24, 102);
    hl_sb_run_end(sb, 3);
    if (m != NULL)
        m->len = hl_sb_len(sb);
    return sb;
}

const char golden_objects[] = "1|1|32|100|0|1|NULL\n"
                                     "2|2|100000|100|3|1|3\n"
                                     "4|1|40|100|0|1|2\n"
                                     "6|2|64|101|4|1|NULL\n"
                                     "7|1|32|100|0|2|3\n"
                                     "9|1|48|100|0|2|NULL\n"
                                     "10|3|24|100|0|3|NULL\n";

const char golden_alloc_counts[] = "1|1|100|0|2|72|2|72\n"
                                          "1|2|100|3|1|100000|1|100000\n"
                                          "1|2|101|4|1|64|1|64\n"
                                          "1|3|100|0|1|24|0|0\n"
                                          "1|3|101|0|1|24|0|0\n"
                                          "2|1|100|0|2|80|2|80\n"
                                          "2|3|101|0|1|24|0|0\n"
                                          "3|1|100|0|1|16|0|0\n"
                                          "3|3|100|0|1|24|1|24\n"
                                          "4|1|100|NULL|1|32|0|0\n"
                                          "4|3|102|NULL|1|24|0|0\n";

const char golden_generations[] = "1|1|1|2\n"
                                         "1|2|2|NULL\n"
                                         "2|3|1|3\n"
                                         "4|1|1|2\n"
                                         "6|4|1|NULL\n"
                                         "7|1|2|3\n"
                                         "9|1|2|3\n"
                                         "9|2|3|NULL\n"
                                         "10|1|3|NULL\n";

char *golden_db(const char *dir, gboolean unknown, store_summary *summary)
{
    g_autoptr(GError) error = NULL;
    char *path = g_build_filename(dir, "golden.db", NULL);
    hl_sb *sb = golden_build(NULL, unknown);
    CHECK(hl_sb_write_db(sb, path, "heaplens record -- dotnet App.dll", summary, &error));
    CHECK_NO_ERROR(error);
    hl_sb_free(sb);
    /* As the first reader of a finished recording finds it (test_derived_views: before). */
    CHECK(store_history_build_file(path, NULL, NULL, &error));
    CHECK_NO_ERROR(error);
    return path;
}

/* ---- sockets --------------------------------------------------------------------------------- */

int listen_unix(const char *path)
{
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    g_assert(strlen(path) < sizeof addr.sun_path);
    strcpy(addr.sun_path, path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    g_assert(fd >= 0);
    g_assert(bind(fd, (struct sockaddr *)&addr, sizeof addr) == 0);
    g_assert(listen(fd, 4) == 0);
    return fd;
}

int connect_unix(const char *path)
{
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    strcpy(addr.sun_path, path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0 && connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0) {
        close(fd);
        fd = -1;
    }
    return fd;
}
