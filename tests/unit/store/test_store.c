/* test_store.c — unit tests of the store (the writer).
 *
 * Usage: test_store <case>   (ctest runs each case as store.<case>); test_store all runs all.
 * Streams are built with tests/unit/common/hl_stream_builder.h and run through the real writer;
 * results are checked with SQL on the database it wrote.
 */
#define _GNU_SOURCE
#include "store/store.h"
#include "store/store_internal.h"
#include "tests/unit/common/hl_stream_builder.h"
#include "tests/unit/common/test_rng.h"
#include "wire/hl_wire.h"

#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <math.h>
#include <poll.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <inttypes.h>
#include <string.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SKIP_CODE 77

static int failures;

#define CHECK(cond)                                                                    \
    do {                                                                               \
        if (!(cond)) {                                                                 \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);   \
            failures++;                                                                \
        }                                                                              \
    } while (0)

#define CHECK_STR(got, want)                                                                 \
    do {                                                                                     \
        const char *got_ = (got), *want_ = (want);                                           \
        if (got_ == NULL || strcmp(got_, want_) != 0) {                                      \
            fprintf(stderr, "%s:%d: CHECK_STR failed: %s\n  got:  %s\n  want: %s\n",         \
                    __FILE__, __LINE__, #got, got_ != NULL ? got_ : "(null)", want_);        \
            failures++;                                                                      \
        }                                                                                    \
    } while (0)

/* The error is set and its message contains `part`. */
#define CHECK_ERROR(err, code_, part)                                                        \
    do {                                                                                     \
        if ((err) == NULL || (err)->domain != STORE_ERROR || (err)->code != (code_) ||       \
            strstr((err)->message, (part)) == NULL) {                                        \
            fprintf(stderr, "%s:%d: CHECK_ERROR failed: want code %d containing \"%s\", got %s\n", \
                    __FILE__, __LINE__, (int)(code_), (part),                                \
                    (err) != NULL ? (err)->message : "no error");                            \
            failures++;                                                                      \
        }                                                                                    \
    } while (0)

#define CHECK_NO_ERROR(err)                                                                  \
    do {                                                                                     \
        if ((err) != NULL) {                                                                 \
            fprintf(stderr, "%s:%d: unexpected error: %s\n", __FILE__, __LINE__,             \
                    (err)->message);                                                         \
            failures++;                                                                      \
            g_clear_error(&(err));                                                           \
        }                                                                                    \
    } while (0)

/* ---- helpers ------------------------------------------------------------------------------ */

/* A private directory for one test, on tmpfs when there is one (thousands of databases). */
static char *tmp_dir_new(void)
{
    const char *base = g_file_test("/dev/shm", G_FILE_TEST_IS_DIR) && access("/dev/shm", W_OK) == 0
                           ? "/dev/shm"
                           : g_get_tmp_dir();
    g_autofree char *tmpl = g_build_filename(base, "heaplens-store-test-XXXXXX", NULL);
    char *dir = g_mkdtemp(g_steal_pointer(&tmpl));
    g_assert(dir != NULL);
    return dir;
}

static void tmp_dir_free(char *dir)
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

static sqlite3 *db_open(const char *path)
{
    sqlite3 *db = NULL;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
        fprintf(stderr, "cannot open %s: %s\n", path, sqlite3_errmsg(db));
        abort();
    }
    return db;
}

/* All rows of a query, "a|b|c\n" per row, NULL as "NULL". Aborts on a SQL error. */
static char *db_rows(sqlite3 *db, const char *sql)
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

#define CHECK_ROWS(db, sql, want)                                                            \
    do {                                                                                     \
        g_autofree char *rows_ = db_rows((db), (sql));                                       \
        if (strcmp(rows_, (want)) != 0) {                                                    \
            fprintf(stderr, "%s:%d: CHECK_ROWS failed: %s\n--- got:\n%s--- want:\n%s---\n",  \
                    __FILE__, __LINE__, (sql), rows_, (want));                               \
            failures++;                                                                      \
        }                                                                                    \
    } while (0)

static int64_t db_int(sqlite3 *db, const char *sql)
{
    g_autofree char *rows = db_rows(db, sql);
    return g_ascii_strtoll(rows, NULL, 10);
}

/* ---- the golden recording ----------------------------------------------------------------- */

enum { T_STRING = 1, T_BYTES = 2, T_NODE = 3 };

#define GOLDEN_HANDLE_STAGES 9

/* Offsets in the golden stream, to know what a prefix holds. */
typedef struct golden_marks {
    size_t gc_end[4];           /* end of GC_END of GC k (1..3) */
    size_t handle_end[GOLDEN_HANDLE_STAGES]; /* end of the handle record of stage i (1..) */
    size_t snapshot_start_end;  /* end of SNAPSHOT_START */
    size_t len;                 /* whole stream */
} golden_marks;

/* The golden handles, in stream order: the handles table after each handle record ("stage"),
 * as SQL_HANDLES lists it. */
static const char *const golden_handle_stages[GOLDEN_HANDLE_STAGES] = {
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

#define SQL_HANDLES                                                                          \
    "SELECT id, handle_id, kind, object_id, created_after_gc, destroyed_after_gc FROM handles " \
    "ORDER BY id"

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

/* The golden recording's survivors go out as GC_SURVIVORS_PACKED (the *_packed cases). */
static gboolean golden_packed;

/* The golden recording, described in SCHEMA terms in test_golden_rows. `unknown`: add records of
 * unknown types between the known ones. */
static hl_sb *golden_build(golden_marks *m, gboolean unknown)
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

/* Objects that survived their first GC; 3, 5, 8 and 11 died in theirs, 12 and 13 came after
 * the last GC: counted in alloc_counts only. */
static const char golden_objects[] = "1|1|32|100|0|1|NULL\n"
                                     "2|2|100000|100|3|1|3\n"
                                     "4|1|40|100|0|1|2\n"
                                     "6|2|64|101|4|1|NULL\n"
                                     "7|1|32|100|0|2|3\n"
                                     "9|1|48|100|0|2|NULL\n"
                                     "10|3|24|100|0|3|NULL\n";

/* Every allocation, per (interval, type, thread, heap). */
static const char golden_alloc_counts[] = "1|1|100|0|2|72|2|72\n"
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

#define SQL_ALLOC_COUNTS                                                                     \
    "SELECT gc, type_id, thread, heap, count, bytes, survived, survived_bytes FROM alloc_counts " \
    "ORDER BY gc, type_id, thread, heap"

static const char golden_generations[] = "1|1|1|2\n"
                                         "1|2|2|NULL\n"
                                         "2|3|1|3\n"
                                         "4|1|1|2\n"
                                         "6|4|1|NULL\n"
                                         "7|1|2|3\n"
                                         "9|1|2|3\n"
                                         "9|2|3|NULL\n"
                                         "10|1|3|NULL\n";

#define SQL_OBJECTS "SELECT id, type_id, size, thread, heap, first_gc, died_gc FROM objects ORDER BY id"
#define SQL_GENERATIONS                                                                      \
    "SELECT object_id, generation, from_gc, until_gc FROM object_generations "               \
    "ORDER BY object_id, from_gc"

/* Writes the golden stream to <dir>/golden.db; returns the path. */
static char *golden_db(const char *dir, gboolean unknown, store_summary *summary)
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

/* ---- cases -------------------------------------------------------------------------------- */

static void test_schema(void)
{
    char *dir = tmp_dir_new();
    g_autoptr(GError) error = NULL;
    g_autofree char *path = g_build_filename(dir, "empty.db", NULL);
    store_writer *w = store_writer_create(path, "cmd", &error);
    CHECK_NO_ERROR(error);
    CHECK(w != NULL);
    CHECK(db_int(w->db, "PRAGMA cache_size") == -4096); /* the writer appends (store_schema.c) */
    CHECK(db_int(w->db, "PRAGMA synchronous") == 0);   /* OFF: store.no_sync */
    store_summary sum;
    CHECK(store_writer_finish(w, &sum, &error));
    CHECK_NO_ERROR(error);
    CHECK(!sum.connected && !sum.complete && sum.gcs == 0);

    struct stat st;
    CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600);
    g_autofree char *wal = g_strconcat(path, "-wal", NULL);
    CHECK(access(wal, F_OK) != 0); /* finish leaves one self-contained file */

    sqlite3 *db = store_db_open_readonly(path, &error);
    CHECK_NO_ERROR(error);
    CHECK(db != NULL);
    /* one thread's connection: no mutex taken at every sqlite3_column_* (SQLITE_OPEN_NOMUTEX) */
    CHECK(sqlite3_threadsafe() == 0 || sqlite3_db_mutex(db) == NULL);
    CHECK(db_int(db, "PRAGMA application_id") == STORE_APPLICATION_ID);
    CHECK(db_int(db, "PRAGMA user_version") == STORE_SCHEMA_VERSION);
    CHECK(db_int(db, "PRAGMA page_size") == 8192); /* half the WAL's writes (store_schema.c) */
    CHECK_ROWS(db, "SELECT type, name FROM sqlite_schema WHERE name NOT LIKE 'sqlite_%' ORDER BY type, name",
               "index|handles_by_handle_id\n"
               "index|snapshot_blocks_by_id\n"
               "index|snapshot_blocks_by_snapshot\n"
               "index|snapshot_roots_by_object\n"
               "table|alloc_counts\n"
               "table|alloc_samples\n"
               "table|checkpoints\n"
               "table|counters\n"
               "table|fields\n"
               "table|frames\n"
               "table|gc_generations\n"
               "table|gcs\n"
               "table|generation_changes\n"
               "table|handles\n"
               "table|object_chunks\n"
               "table|object_deaths\n"
               "table|object_generation_rows\n"
               "table|root_methods\n"
               "table|run\n"
               "table|sampling\n"
               "table|snapshot_blocks\n"
               "table|snapshot_collections\n"
               "table|snapshot_roots\n"
               "table|snapshot_statics\n"
               "table|snapshot_strings\n"
               "table|snapshots\n"
               "table|stack_frames\n"
               "table|stacks\n"
               "table|statics\n"
               "table|threads\n"
               "table|types\n"
               "table|unrecorded_processes\n"
               "view|allocation_estimates_by_type\n"
               "view|allocations_by_type\n"
               "view|allocations_by_type_thread\n"
               "view|allocations_estimated_by_type_thread\n"
               "view|gc_summary\n"
               "view|generation_change_rows\n" /* no changes: nothing to build */
               "view|live_objects\n"
               "view|object_death_rows\n" /* the packed objects: nothing expanded yet */
               "view|object_generations\n"
               "view|object_lifetimes\n"
               "view|objects\n"
               "view|pinned_handles_per_gc\n"
               "view|snapshot_contents\n"
               "view|snapshot_handles\n"
               "view|snapshot_objects\n"
               "view|snapshot_ref_fields\n"
               "view|snapshot_refs\n"
               "view|stack_folded\n"
               "view|stack_text\n"
               "view|strong_handles_never_freed\n"
               "view|survivors_by_generation\n");
    CHECK_ROWS(db, "SELECT id, command, status, exit_status, flags FROM run", "1|cmd|no-data|NULL|NULL\n");
    /* Every view compiles and is empty. */
    CHECK(db_int(db, "SELECT (SELECT count(*) FROM gc_summary) + (SELECT count(*) FROM allocations_by_type)"
                     " + (SELECT count(*) FROM allocations_by_type_thread) + (SELECT count(*) FROM alloc_counts)"
                     " + (SELECT count(*) FROM live_objects) + (SELECT count(*) FROM survivors_by_generation)"
                     " + (SELECT count(*) FROM object_lifetimes) + (SELECT count(*) FROM snapshot_contents)"
                     " + (SELECT count(*) FROM snapshot_handles) + (SELECT count(*) FROM strong_handles_never_freed)"
                     " + (SELECT count(*) FROM pinned_handles_per_gc)"
                     " + (SELECT count(*) FROM allocations_estimated_by_type_thread)") == 0);
    /* The first read expands the packed objects, none here: `objects` becomes the table. */
    CHECK(store_history_pending(db));
    CHECK(store_history_build_file(path, NULL, NULL, &error));
    CHECK_NO_ERROR(error);
    CHECK(!store_history_pending(db));
    CHECK_ROWS(db, "SELECT type, name FROM sqlite_schema WHERE name IN ('objects', 'object_death_rows')",
               "table|objects\n");
    CHECK(db_int(db, "SELECT count(*) FROM objects") + db_int(db, "SELECT count(*) FROM object_lifetimes") == 0);
    sqlite3_close(db);

    /* `heaplens record` adds the .NET processes that declined, after the writer; a file
     * recorded before the table existed gets it. */
    store_unrecorded declined[] = {{12, "dotnet run"}, {13, NULL}};
    CHECK(store_db_unrecorded_add(path, declined, 2, &error));
    CHECK_NO_ERROR(error);
    CHECK(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL) == SQLITE_OK);
    CHECK_ROWS(db, "SELECT pid, command FROM unrecorded_processes", "12|dotnet run\n13|\n");
    CHECK(sqlite3_exec(db, "DROP TABLE unrecorded_processes", NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(db);
    CHECK(store_db_unrecorded_add(path, declined, 1, &error));
    CHECK_NO_ERROR(error);
    db = store_db_open_readonly(path, &error);
    CHECK(db != NULL);
    CHECK_ROWS(db, "SELECT pid, command FROM unrecorded_processes", "12|dotnet run\n");
    sqlite3_close(db);
    tmp_dir_free(dir);
}

static void test_golden_rows(void)
{
    char *dir = tmp_dir_new();
    store_summary sum;
    g_autofree char *path = golden_db(dir, FALSE, &sum);
    CHECK(sum.gcs == 3 && sum.objects == 7 && sum.types == 3 && sum.complete && sum.connected);
    CHECK(sum.allocations == 13 && sum.allocations_survived == 7);
    CHECK(sum.drops == 0);

    sqlite3 *db = db_open(path);
    CHECK_ROWS(db, SQL_OBJECTS, golden_objects);
    CHECK_ROWS(db, SQL_GENERATIONS, golden_generations);
    CHECK_ROWS(db, SQL_ALLOC_COUNTS, golden_alloc_counts);
    CHECK_ROWS(db, "SELECT id, name, class_id, flags FROM types ORDER BY id",
               "1|System.String|139637976727616|0\n"
               "2|System.Byte[]|4660|1\n"
               "3|App.Node|139637976727744|0\n");
    CHECK_ROWS(db, "SELECT os_tid, thread_id, name FROM threads ORDER BY os_tid",
               "100|7|Main\n101|NULL|NULL\n102|NULL|NULL\n");
    CHECK_ROWS(db,
               "SELECT command, pid, runtime_version, producer, mode, start_time, end_time,"
               " start_mono_ns, end_mono_ns, status, exit_status, flags, loss FROM run",
               "heaplens record -- dotnet App.dll|4242|10.0.0|heaplens test|full|"
               "2027-01-15T08:00:00.123Z|2027-01-15T08:00:01.123Z|1000000000|2000000000|"
               "complete|NULL|NULL|NULL\n");
    CHECK_ROWS(db,
               "SELECT gc, generation, reason, induced, compacting, start_ns, end_ns, pause_ns,"
               " survived_bytes, moved_bytes, first_object_id, objects_live, incomplete"
               " FROM gcs ORDER BY gc",
               "1|0|unknown|0|1|1010000000|1011000000|1020000|72|72|7|4|0\n"
               "2|1|AllocSmall|0|0|1020000000|1021000000|1020000|0|0|10|0|0\n"
               "3|2|Induced|1|1|1030000000|1031000000|1020000|0|0|12|0|0\n");
    CHECK_ROWS(db, "SELECT gc, generation, size_before, size_after FROM gc_generations WHERE gc = 1",
               "1|0|1000|0\n1|1|200|72\n1|2|300|300\n1|3|100000|100000\n1|4|64|64\n");
    CHECK(db_int(db, "SELECT count(*) FROM gc_generations") == 15);
    CHECK_ROWS(db, "SELECT gc, roots, pinned_roots FROM gcs ORDER BY gc", "1|0|0\n2|0|0\n3|7|1\n");
    CHECK(sum.snapshots == 1);
    g_autofree char *len = NULL;
    {
        hl_sb *sb = golden_build(NULL, FALSE);
        len = g_strdup_printf("%zu", hl_sb_len(sb));
        hl_sb_free(sb);
    }
    g_autofree char *counters = g_strdup_printf("allocs_dropped|0\n"
                                                "allocs_dropped_buffer|0\n"
                                                "allocs_dropped_writer|0\n"
                                                "allocs_seen|13\n"
                                                "bytes_dropped|0\n"
                                                "collector_exit_wait_ns|5000000\n"
                                                "connections_refused|0\n"
                                                "gc_events_dropped|0\n"
                                                "gcs_discarded_incomplete|0\n"
                                                "gcs_dropped|0\n"
                                                "handles_closed_by_reuse|0\n"
                                                "model_anomalies|0\n"
                                                "program_gcs|3\n"
                                                "records_dropped|0\n"
                                                "records_read|37\n"
                                                "records_skipped_unknown|0\n"
                                                "snapshots_discarded|0\n"
                                                "snapshots_dropped|0\n"
                                                "stream_bytes|%s\n"
                                                "thread_wait_ns|0\n"
                                                "thread_waits|0\n"
                                                "threads_overflowed|0\n"
                                                "writer_anomalies|0\n"
                                                "writer_lost|0\n",
                                                len);
    /* The writer's own figures vary from run to run: present, and plausible. */
    CHECK_ROWS(db,
               "SELECT name, value FROM counters WHERE name NOT IN ('writer_peak_rss_bytes',"
               " 'writer_finish_ns', 'writer_run_cpu_ns', 'writer_finish_cpu_ns') ORDER BY name",
               counters);
    CHECK(db_int(db, "SELECT value > 1000000 FROM counters WHERE name = 'writer_peak_rss_bytes'") == 1);
    CHECK(db_int(db, "SELECT value BETWEEN 0 AND 60000000000 FROM counters"
                     " WHERE name = 'writer_finish_ns'") == 1);
    CHECK(db_int(db, "SELECT count(*) FROM counters WHERE name IN ('writer_run_cpu_ns',"
                     " 'writer_finish_cpu_ns') AND value >= 0") == 2);
    sqlite3_close(db);
    tmp_dir_free(dir);
}

/* The same rows from the golden recording with its survivors packed. */
static void test_golden_rows_packed(void)
{
    golden_packed = TRUE;
    test_golden_rows();
    golden_packed = FALSE;
}

static void test_golden_views(void)
{
    char *dir = tmp_dir_new();
    g_autofree char *path = golden_db(dir, FALSE, NULL);
    sqlite3 *db = db_open(path);

    CHECK_ROWS(db, "SELECT gc, object_id, type, size, generation, thread FROM live_objects ORDER BY gc, object_id",
               "1|1|System.String|32|1|100\n"
               "1|2|System.Byte[]|100000|3|100\n"
               "1|4|System.String|40|1|100\n"
               "1|6|System.Byte[]|64|4|101\n"
               "2|1|System.String|32|2|100\n"
               "2|2|System.Byte[]|100000|3|100\n"
               "2|6|System.Byte[]|64|4|101\n"
               "2|7|System.String|32|1|100\n"
               "2|9|System.String|48|1|100\n"
               "3|1|System.String|32|2|100\n"
               "3|6|System.Byte[]|64|4|101\n"
               "3|9|System.String|48|2|100\n"
               "3|10|App.Node|24|1|100\n");
    CHECK_ROWS(db, "SELECT * FROM survivors_by_generation WHERE gc = 3 ORDER BY bytes DESC",
               "3|2|System.String|2|80\n"
               "3|4|System.Byte[]|1|64\n"
               "3|1|App.Node|1|24\n");
    CHECK_ROWS(db, "SELECT * FROM survivors_by_generation WHERE gc = 2 ORDER BY generation, type",
               "2|1|System.String|2|80\n"
               "2|2|System.String|1|32\n"
               "2|3|System.Byte[]|1|100000\n"
               "2|4|System.Byte[]|1|64\n");
    CHECK_ROWS(db, "SELECT * FROM allocations_by_type ORDER BY bytes DESC",
               "System.Byte[]|2|100064\n"
               "System.String|6|200\n"
               "App.Node|5|120\n");
    CHECK_ROWS(db, "SELECT * FROM gc_summary WHERE gc = 1",
               "1|0|unknown|0|1|1010000000|1011000000|1020000|72|72|7|4|0|0|0|NULL|NULL|"
               "1000|0|200|72|300|300|100000|100000|64|64\n");
    CHECK_ROWS(db, "SELECT gc, gen0_before, poh_after FROM gc_summary WHERE gc > 1 ORDER BY gc",
               "2|0|0\n3|0|0\n");
    CHECK_ROWS(db,
               "SELECT id, type, thread_name, heap, first_gc, died_gc, gcs_survived, final_generation"
               " FROM object_lifetimes ORDER BY id",
               "1|System.String|Main|0|1|NULL|3|2\n"
               "2|System.Byte[]|Main|3|1|3|2|3\n"
               "4|System.String|Main|0|1|2|1|1\n"
               "6|System.Byte[]|NULL|4|1|NULL|3|4\n"
               "7|System.String|Main|0|2|3|1|1\n"
               "9|System.String|Main|0|2|NULL|2|2\n"
               "10|App.Node|Main|0|3|NULL|1|1\n");
    /* Allocations per type and thread: every allocation, survivors of their first GC apart. */
    CHECK_ROWS(db, "SELECT * FROM allocations_by_type_thread ORDER BY type, thread",
               "App.Node|100|Main|2|48|1|24\n"
               "App.Node|101|NULL|2|48|0|0\n"
               "App.Node|102|NULL|1|24|0|0\n"
               "System.Byte[]|100|Main|1|100000|1|100000\n"
               "System.Byte[]|101|NULL|1|64|1|64\n"
               "System.String|100|Main|6|200|4|152\n");
    /* The per-GC views are cheap with a gc filter: it reaches the key (from_gc, object_id). */
    g_autofree char *plan = db_rows(db, "EXPLAIN QUERY PLAN SELECT * FROM live_objects WHERE gc = 3");
    CHECK(strstr(plan, "USING PRIMARY KEY (from_gc<?)") != NULL);
    sqlite3_close(db);
    tmp_dir_free(dir);
}

/* A writer that never finished (killed, or still recording) leaves the generation changes as
 * the GCs wrote them: the views derive the same history from them as from the rows built at the
 * end. Read here through a second connection while the writer holds the file, like a reader
 * during a recording. */
static void test_derived_views(void)
{
    char *dir = tmp_dir_new();
    g_autoptr(GError) error = NULL;
    g_autofree char *finished = golden_db(dir, FALSE, NULL);
    g_autofree char *path = g_build_filename(dir, "recording.db", NULL);
    hl_sb *sb = golden_build(NULL, FALSE);
    size_t len;
    hl_sb_bytes(sb, &len);
    int fd = hl_sb_memfd(sb, len);
    store_writer *w = store_writer_create(path, "recording", &error);
    CHECK_NO_ERROR(error);
    CHECK(store_writer_ingest_fd(w, fd, &error));
    CHECK_NO_ERROR(error);

    static const char *const queries[] = {
        SQL_GENERATIONS,
        "SELECT id, type, thread_name, heap, first_gc, died_gc, gcs_survived, final_generation"
        " FROM object_lifetimes ORDER BY id",
        "SELECT gc, object_id, type, size, generation, thread FROM live_objects"
        " ORDER BY gc, object_id",
        "SELECT * FROM survivors_by_generation ORDER BY gc, generation, type",
    };
    sqlite3 *db = db_open(path);
    sqlite3 *done = db_open(finished);
    CHECK(db_int(db, "SELECT count(*) FROM object_generation_rows") == 0);
    /* Every row's change is there (and more: a promotion of an object without a row). */
    CHECK(db_int(db, "SELECT sum(count) FROM generation_changes") >= 9);
    CHECK_ROWS(db, SQL_GENERATIONS, golden_generations);
    for (size_t i = 0; i < G_N_ELEMENTS(queries); i++) {
        g_autofree char *want = db_rows(done, queries[i]);
        CHECK_ROWS(db, queries[i], want);
    }
    CHECK(db_int(done, "SELECT count(*) FROM generation_changes") == 0);
    /* A join on the derived objects.id reaches an index built for the query, not a scan of
     * every object per row (the view's columns have INTEGER affinity, like the table's). */
    static const char *const joins[] = {
        "SELECT * FROM snapshot_contents WHERE snapshot = 1",
        "SELECT * FROM strong_handles_never_freed",
        "SELECT so.object_id, o.size FROM snapshot_objects so LEFT JOIN objects o"
        " ON o.id = so.object_id WHERE so.snapshot = 1",
    };
    for (size_t i = 0; i < G_N_ELEMENTS(joins); i++) {
        g_autofree char *sql = g_strconcat("EXPLAIN QUERY PLAN ", joins[i], NULL);
        g_autofree char *plan = db_rows(db, sql);
        if (strstr(plan, "AUTOMATIC COVERING INDEX (id=?)") == NULL) {
            fprintf(stderr, "%s\n%s", joins[i], plan);
            failures++;
        }
    }
    CHECK(store_db_objects_count(db) == db_int(db, "SELECT count(*) FROM objects"));
    CHECK(store_db_objects_count(db) == db_int(done, "SELECT count(*) FROM objects"));
    CHECK(store_db_objects_count(done) == db_int(done, "SELECT count(*) FROM objects"));
    CHECK(!store_history_pending(db)); /* still recording: nothing to build */
    sqlite3_close(db);

    /* Finished, it keeps the changes (the end of a recording builds nothing) and answers the
     * same; the history is pending until a reader builds it. */
    CHECK(store_writer_finish(w, NULL, &error));
    CHECK_NO_ERROR(error);
    db = db_open(path);
    CHECK(store_history_pending(db));
    CHECK(db_int(db, "SELECT count(*) FROM object_generation_rows") == 0);
    for (size_t i = 0; i < G_N_ELEMENTS(queries); i++) {
        g_autofree char *want = db_rows(done, queries[i]);
        CHECK_ROWS(db, queries[i], want);
    }
    /* Built (through another connection while this one stays open), it holds the rows; a
     * second build finds nothing to do. */
    CHECK(store_history_build_file(path, NULL, NULL, &error));
    CHECK_NO_ERROR(error);
    CHECK(!store_history_pending(db));
    CHECK_ROWS(db, SQL_GENERATIONS, golden_generations);
    /* Each object's first generation is in its objects row; only the later ones are rows. */
    CHECK_ROWS(db, "SELECT object_id, generation, from_gc, until_gc FROM object_generation_rows"
                   " ORDER BY object_id, from_gc",
               "1|2|2|NULL\n9|2|3|NULL\n");
    CHECK_ROWS(db, "SELECT id, first_generation, next_gc FROM objects ORDER BY id",
               "1|1|2\n2|3|NULL\n4|1|NULL\n6|4|NULL\n7|1|NULL\n9|1|3\n10|1|NULL\n");
    CHECK(db_int(db, "SELECT count(*) FROM generation_changes") == 0);
    for (size_t i = 0; i < G_N_ELEMENTS(queries); i++) {
        g_autofree char *want = db_rows(done, queries[i]);
        CHECK_ROWS(db, queries[i], want);
    }
    CHECK(store_history_build_file(path, NULL, NULL, &error));
    CHECK_NO_ERROR(error);
    CHECK_ROWS(db, "SELECT count(*) FROM object_generation_rows", "2\n");
    sqlite3_close(db);
    sqlite3_close(done);

    /* Schema 3 wrote the ids themselves, not gaps: such a file still builds the same history. */
    hl_sb *old = golden_build(NULL, FALSE);
    g_autofree char *schema3 = g_build_filename(dir, "schema3.db", NULL);
    CHECK(hl_sb_write_db(old, schema3, "schema3", NULL, &error));
    CHECK_NO_ERROR(error);
    hl_sb_free(old);
    CHECK(sqlite3_open(schema3, &db) == SQLITE_OK);
    CHECK(sqlite3_exec(db,
                       "UPDATE generation_changes SET ids = (SELECT json_group_array(id) FROM "
                       "(SELECT sum(j.value) OVER (ORDER BY j.key) AS id "
                       "FROM json_each(generation_changes.ids) j));"
                       "PRAGMA user_version = 3",
                       NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(db);
    CHECK(store_history_build_file(schema3, NULL, NULL, &error));
    CHECK_NO_ERROR(error);
    db = db_open(schema3);
    CHECK_ROWS(db, "SELECT object_id, generation, from_gc, until_gc FROM object_generation_rows"
                   " ORDER BY object_id, from_gc",
               golden_generations);
    sqlite3_close(db);

    /* A reader in the middle of a statement: the build cannot commit, gives up after its wait
     * and leaves the file as it was (the changes, and the views that derive the history). */
    hl_sb *again = golden_build(NULL, FALSE);
    g_autofree char *held = g_build_filename(dir, "held.db", NULL);
    CHECK(hl_sb_write_db(again, held, "held", NULL, &error));
    CHECK_NO_ERROR(error);
    hl_sb_free(again);
    db = db_open(held);
    sqlite3_stmt *reading = NULL;
    CHECK(sqlite3_prepare_v2(db, "SELECT id FROM objects", -1, &reading, NULL) == SQLITE_OK);
    CHECK(sqlite3_step(reading) == SQLITE_ROW);
    CHECK(!store_history_build_file(held, NULL, NULL, &error));
    CHECK(error != NULL && strstr(error->message, "locked") != NULL);
    g_clear_error(&error);
    sqlite3_finalize(reading);
    CHECK(store_history_pending(db));
    CHECK_ROWS(db, SQL_GENERATIONS, golden_generations);
    sqlite3_close(db);

    /* A damaged file is never written: each page's header overwritten in turn, the build
     * refuses every copy that quick_check finds damaged and leaves it byte-identical. */
    g_autofree char *clean = NULL;
    gsize file_len = 0;
    CHECK(g_file_get_contents(held, &clean, &file_len, NULL));
    guint page = (guint)(guint8)clean[16] << 8 | (guint8)clean[17];
    int refused = 0;
    for (gsize p = 1; page > 0 && p < file_len / page; p++) {
        g_autofree char *copy = g_memdup2(clean, file_len);
        memset(copy + p * page, 0xA5, 8);
        CHECK(g_file_set_contents(held, copy, (gssize)file_len, NULL));
        if (!store_history_build_file(held, NULL, NULL, &error)) {
            g_autofree char *after = NULL;
            gsize after_len = 0;
            CHECK(g_error_matches(error, STORE_ERROR, STORE_ERROR_DAMAGED));
            CHECK(g_file_get_contents(held, &after, &after_len, NULL));
            CHECK(after_len == file_len && memcmp(after, copy, file_len) == 0);
            refused++;
        }
        g_clear_error(&error);
    }
    CHECK(refused > 3);
    close(fd);
    hl_sb_free(sb);
    tmp_dir_free(dir);
}

/* The TEMP virtual table `objects` of heaplens' connections to a finished file whose rows are
 * not built (store_objview.c): the same rows as the file's view for every way a statement finds
 * them (by id, bounds of every kind and value type, a type, a scan, joins), the first of two
 * deaths of an object holding; dropped once the rows are built; damaged packed rows an error. */
static void test_objects_view(void)
{
    char *dir = tmp_dir_new();
    g_autoptr(GError) error = NULL;
    g_autofree char *path = g_build_filename(dir, "unbuilt.db", NULL);
    hl_sb *sb = golden_build(NULL, FALSE);
    CHECK(hl_sb_write_db(sb, path, "objects view", NULL, &error));
    CHECK_NO_ERROR(error);
    hl_sb_free(sb);
    /* a second, later death of object 4 (the first holds) and one of an id without a row */
    sqlite3 *rw = NULL;
    CHECK(sqlite3_open(path, &rw) == SQLITE_OK);
    CHECK(sqlite3_exec(rw, "INSERT INTO object_deaths (gc, count, ids) VALUES (4, 2, '[4,1]')",
                       NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(rw);

    static const char *const queries[] = {
        "SELECT * FROM objects",
        SQL_OBJECTS,
        "SELECT * FROM objects ORDER BY id DESC",
        "SELECT id, died_gc FROM objects WHERE id = 4",
        "SELECT id FROM objects WHERE id = '4'",
        "SELECT id FROM objects WHERE id = 4.0",
        "SELECT id FROM objects WHERE id = 4.5",
        "SELECT id FROM objects WHERE id = NULL",
        "SELECT id FROM objects WHERE id = -1",
        "SELECT id FROM objects WHERE id > 4",
        "SELECT id FROM objects WHERE id >= 4",
        "SELECT id FROM objects WHERE id < 7",
        "SELECT id FROM objects WHERE id <= 7",
        "SELECT id FROM objects WHERE id > 3.5 AND id < 9.5",
        "SELECT id FROM objects WHERE id BETWEEN 2 AND 9 ORDER BY id",
        "SELECT id FROM objects WHERE id < 'x'",
        "SELECT id FROM objects WHERE id > -5 AND id <= 1e300",
        "SELECT id FROM objects WHERE id < -5",
        "SELECT id, size FROM objects WHERE type_id = 2",
        "SELECT id FROM objects WHERE type_id = '2'",
        "SELECT id FROM objects WHERE type_id = 2 AND id > 1",
        "SELECT count(*), sum(size), total(died_gc) FROM objects",
        "SELECT a.id, b.id FROM objects a JOIN objects b ON b.id = a.id + 2 ORDER BY 1",
        "SELECT so.object_id, o.type_id, o.size FROM snapshot_objects so"
        " LEFT JOIN objects o ON o.id = so.object_id ORDER BY 1",
        "SELECT * FROM snapshot_contents ORDER BY 1, 2, 3",
    };
    sqlite3 *plain = db_open(path);         /* the file's view */
    sqlite3 *db = store_db_open_readonly(path, &error); /* heaplens': the virtual table */
    CHECK_NO_ERROR(error);
    CHECK(db != NULL);
    CHECK(db_int(db, "SELECT count(*) FROM temp.sqlite_master WHERE name = 'objects'") == 1);
    CHECK(db_int(plain, "SELECT count(*) FROM objects WHERE id = 4 AND died_gc = 2") == 1);
    for (size_t i = 0; i < G_N_ELEMENTS(queries); i++) {
        /* the view gives the rows in chunk order, the table and the virtual table in id order */
        g_autofree char *sql = strstr(queries[i], "ORDER BY")
                                   ? g_strdup(queries[i])
                                   : g_strconcat(queries[i], " ORDER BY 1", NULL);
        g_autofree char *want = db_rows(plain, sql);
        CHECK_ROWS(db, sql, want);
    }
    /* The same rows to C code (store_objects_view_memory: the snapshot loader's and inspect's
     * lookups by id, without a statement each): every id, in ascending order and back, the
     * first of two rows of one id as the table gives it; none on a plain connection. */
    store_objects_memory *memory = NULL, *none = (store_objects_memory *)&error;
    CHECK(store_objects_view_memory(plain, &none, &error) && none == NULL);
    CHECK(store_objects_view_memory(db, &memory, &error) && memory != NULL);
    CHECK_NO_ERROR(error);
    int64_t max_id = db_int(plain, "SELECT max(id) FROM objects");
    for (int pass = 0; memory && pass < 2; pass++) {
        for (int64_t i = 0; i <= max_id + 1; i++) {
            int64_t id = pass == 0 ? i : max_id + 1 - i, size = -1;
            uint32_t type_id = 0;
            g_autofree char *sql = g_strdup_printf("SELECT type_id, size FROM objects WHERE id = %"
                                                   PRId64 " ORDER BY rowid LIMIT 1", id);
            g_autofree char *want = db_rows(db, sql);
            g_autofree char *got =
                store_objects_memory_find(memory, (uint64_t)id, &type_id, &size)
                    ? g_strdup_printf("%" PRIu32 "|%" PRId64 "\n", type_id, size)
                    : g_strdup("");
            CHECK_STR(got, want);
        }
    }
    /* Built through another connection: dropped, and the file's table answers. */
    CHECK(store_history_build_file(path, NULL, NULL, &error));
    CHECK_NO_ERROR(error);
    CHECK(store_objects_view_detach(db));
    CHECK(db_int(db, "SELECT count(*) FROM temp.sqlite_master WHERE name = 'objects'") == 0);
    CHECK(store_objects_view_memory(db, &memory, &error) && memory == NULL); /* the table's */
    CHECK(db_int(db, "SELECT count(*) FROM objects WHERE first_generation IS NOT NULL") > 0);
    sqlite3_close(db);
    db = store_db_open_readonly(path, &error); /* built: nothing attached */
    CHECK_NO_ERROR(error);
    CHECK(db_int(db, "SELECT count(*) FROM temp.sqlite_master WHERE name = 'objects'") == 0);
    CHECK_ROWS(db, "SELECT id, died_gc FROM objects WHERE id = 4", "4|2\n");
    sqlite3_close(db);
    sqlite3_close(plain);

    /* Damaged packed rows: the statement fails, naming the row. */
    g_autofree char *bad = g_build_filename(dir, "damaged.db", NULL);
    sb = golden_build(NULL, FALSE);
    CHECK(hl_sb_write_db(sb, bad, "objects view", NULL, &error));
    CHECK_NO_ERROR(error);
    hl_sb_free(sb);
    CHECK(sqlite3_open(bad, &rw) == SQLITE_OK);
    CHECK(sqlite3_exec(rw, "UPDATE object_chunks SET objects = '[[1,2]]' WHERE rowid = 1", NULL,
                       NULL, NULL) == SQLITE_OK);
    sqlite3_close(rw);
    db = store_db_open_readonly(bad, &error);
    CHECK_NO_ERROR(error);
    sqlite3_stmt *st = NULL;
    CHECK(sqlite3_prepare_v2(db, "SELECT size FROM objects WHERE id = 1", -1, &st, NULL) ==
          SQLITE_OK);
    CHECK(sqlite3_step(st) == SQLITE_ERROR);
    CHECK(strstr(sqlite3_errmsg(db), "object_chunks row 1") != NULL);
    sqlite3_finalize(st);
    CHECK(!store_objects_view_memory(db, &memory, &error) && memory == NULL);
    CHECK(error && strstr(error->message, "object_chunks row 1") != NULL);
    g_clear_error(&error);
    sqlite3_close(db);
    /* damaged deaths: only a statement reading died_gc reads them, and fails */
    g_autofree char *bad_deaths = g_build_filename(dir, "damaged-deaths.db", NULL);
    sb = golden_build(NULL, FALSE);
    CHECK(hl_sb_write_db(sb, bad_deaths, "objects view", NULL, &error));
    CHECK_NO_ERROR(error);
    hl_sb_free(sb);
    CHECK(sqlite3_open(bad_deaths, &rw) == SQLITE_OK);
    CHECK(sqlite3_exec(rw, "UPDATE object_deaths SET ids = '[1,x]' WHERE rowid = 1", NULL, NULL,
                       NULL) == SQLITE_OK);
    sqlite3_close(rw);
    db = store_db_open_readonly(bad_deaths, &error);
    CHECK_NO_ERROR(error);
    CHECK(db_int(db, "SELECT size FROM objects WHERE id = 1") == 32);
    CHECK(sqlite3_prepare_v2(db, "SELECT died_gc FROM objects WHERE id = 1", -1, &st, NULL) ==
          SQLITE_OK);
    CHECK(sqlite3_step(st) == SQLITE_ERROR);
    CHECK(strstr(sqlite3_errmsg(db), "object_deaths row 1") != NULL);
    sqlite3_finalize(st);
    sqlite3_close(db);
    tmp_dir_free(dir);
}

/* A damaged packed row (a count that does not add up, text that is not what the writer writes,
 * a count far beyond the file) makes the first read fail with one line naming the row: nothing
 * reserved from the count, nothing written, the file still packed. */
static void test_packed_damage(void)
{
    static const char *const damage[] = {
        "UPDATE object_chunks SET count = count + 1 WHERE rowid = 1",
        "UPDATE object_chunks SET count = 4611686018427387904 WHERE rowid = 1",
        "UPDATE object_chunks SET objects = '[[1,2]]' WHERE rowid = 1",
        "UPDATE object_chunks SET objects = '[[1,2,3],[0,2,3]]', count = 2 WHERE rowid = 1",
        "UPDATE object_chunks SET objects = '[[99999999999999999999,1,1]]', count = 1 WHERE rowid = 1",
        "UPDATE object_chunks SET objects = '[[1,4294967296,1]]', count = 1 WHERE rowid = 1",
        "UPDATE object_chunks SET objects = '[[1,2,3] ]' WHERE rowid = 1",
        "UPDATE object_chunks SET objects = x'5b5b312c322c335d5d00' WHERE rowid = 1",
        "UPDATE object_chunks SET heap = 9 WHERE rowid = 1",
        "UPDATE object_chunks SET thread = -1 WHERE rowid = 1",
        "UPDATE object_chunks SET gc = -3 WHERE rowid = 1",
        "UPDATE object_deaths SET ids = '[1,x]' WHERE rowid = 1",
        "UPDATE object_deaths SET count = 4611686018427387904 WHERE rowid = 1",
        "UPDATE generation_changes SET count = -1 WHERE rowid = 1",
    };
    char *dir = tmp_dir_new();
    g_autoptr(GError) error = NULL;
    g_autofree char *clean = g_build_filename(dir, "clean.db", NULL);
    hl_sb *sb = golden_build(NULL, FALSE);
    CHECK(hl_sb_write_db(sb, clean, "damage", NULL, &error));
    CHECK_NO_ERROR(error);
    hl_sb_free(sb);
    for (size_t i = 0; i < G_N_ELEMENTS(damage); i++) {
        g_autofree char *path = g_strdup_printf("%s/damaged-%zu.db", dir, i);
        g_autofree char *bytes = NULL;
        gsize len = 0;
        CHECK(g_file_get_contents(clean, &bytes, &len, NULL));
        CHECK(g_file_set_contents(path, bytes, (gssize)len, NULL));
        sqlite3 *db = NULL;
        CHECK(sqlite3_open(path, &db) == SQLITE_OK);
        CHECK(sqlite3_exec(db, damage[i], NULL, NULL, NULL) == SQLITE_OK);
        CHECK(sqlite3_changes(db) == 1);
        int64_t chunks = db_int(db, "SELECT count(*) FROM object_chunks");
        CHECK(!store_history_build_file(path, NULL, NULL, &error));
        if (!g_error_matches(error, STORE_ERROR, STORE_ERROR_DAMAGED) ||
            strchr(error->message, '\n') != NULL || strstr(error->message, " is damaged (") == NULL ||
            (strstr(error->message, " row 1 ") == NULL &&
             strstr(error->message, " counts more ids than it holds") == NULL)) {
            fprintf(stderr, "%s: %s\n", damage[i], error ? error->message : "no error");
            failures++;
        }
        g_clear_error(&error);
        CHECK(store_history_pending(db));
        CHECK(db_int(db, "SELECT count(*) FROM object_chunks") == chunks);
        CHECK(db_int(db, "SELECT count(*) FROM object_generation_rows") == 0);
        sqlite3_close(db);
    }
    /* The clean file builds. */
    CHECK(store_history_build_file(clean, NULL, NULL, &error));
    CHECK_NO_ERROR(error);
    sqlite3 *db = db_open(clean);
    CHECK_ROWS(db, SQL_OBJECTS, golden_objects);
    sqlite3_close(db);
    tmp_dir_free(dir);
}

static void test_old_deaths(void)
{
    char *dir = tmp_dir_new();
    g_autofree char *path = golden_db(dir, FALSE, NULL);
    sqlite3 *db = db_open(path);
    /* 4 (gen1) died in GC 2; 2 (LOH) and 7 (gen1) in GC 3: died_gc set, open row closed. */
    CHECK_ROWS(db, "SELECT id, died_gc FROM objects WHERE died_gc > first_gc ORDER BY id",
               "2|3\n4|2\n7|3\n");
    CHECK_ROWS(db,
               "SELECT og.object_id, og.until_gc FROM object_generations og JOIN objects o"
               " ON o.id = og.object_id WHERE o.died_gc IS NOT NULL ORDER BY og.object_id, og.from_gc",
               "2|3\n4|2\n7|3\n");
    /* No dead object has an open generation row. */
    CHECK(db_int(db, "SELECT count(*) FROM object_generations og JOIN objects o ON o.id = og.object_id"
                     " WHERE o.died_gc IS NOT NULL AND og.until_gc IS NULL") == 0);
    sqlite3_close(db);
    tmp_dir_free(dir);
}

static void test_promotions(void)
{
    char *dir = tmp_dir_new();
    g_autofree char *path = golden_db(dir, FALSE, NULL);
    sqlite3 *db = db_open(path);
    CHECK_ROWS(db, "SELECT generation, from_gc, until_gc FROM object_generations WHERE object_id = 1 ORDER BY from_gc",
               "1|1|2\n2|2|NULL\n");
    CHECK_ROWS(db, "SELECT generation, from_gc, until_gc FROM object_generations WHERE object_id = 9 ORDER BY from_gc",
               "1|2|3\n2|3|NULL\n");
    /* At most one open row per object, and rows of one object never overlap. */
    CHECK(db_int(db, "SELECT count(*) FROM (SELECT object_id FROM object_generations WHERE until_gc IS NULL"
                     " GROUP BY object_id HAVING count(*) > 1)") == 0);
    CHECK(db_int(db, "SELECT count(*) FROM object_generations a JOIN object_generations b"
                     " ON a.object_id = b.object_id AND a.from_gc < b.from_gc"
                     " WHERE a.until_gc IS NULL OR a.until_gc > b.from_gc") == 0);
    sqlite3_close(db);
    tmp_dir_free(dir);
}

static void test_young_die_first_gc(void)
{
    char *dir = tmp_dir_new();
    g_autofree char *path = golden_db(dir, FALSE, NULL);
    sqlite3 *db = db_open(path);
    /* 3, 5, 8 and 11 died in their first GC: no row, counted (count - survived) in their
     * interval. */
    CHECK(db_int(db, "SELECT count(*) FROM objects WHERE id IN (3, 5, 8, 11)") == 0);
    CHECK(db_int(db, "SELECT count(*) FROM objects WHERE died_gc = first_gc") == 0);
    CHECK_ROWS(db, "SELECT gc, sum(count - survived), sum(bytes - survived_bytes) FROM alloc_counts"
                   " WHERE gc <= 3 GROUP BY gc ORDER BY gc",
               "1|2|48\n2|1|24\n3|1|16\n");
    /* Every survivor of interval n has an objects row with first_gc n: the counts say so. */
    CHECK_ROWS(db, "SELECT a.gc, a.s, (SELECT count(*) FROM objects o WHERE o.first_gc = a.gc)"
                   " FROM (SELECT gc, sum(survived) AS s FROM alloc_counts GROUP BY gc) a ORDER BY a.gc",
               "1|4|4\n2|2|2\n3|1|1\n4|0|0\n");
    sqlite3_close(db);
    tmp_dir_free(dir);
}

static void test_after_last_gc(void)
{
    char *dir = tmp_dir_new();
    g_autofree char *path = golden_db(dir, FALSE, NULL);
    sqlite3 *db = db_open(path);
    /* The tail interval (after GC 3) is interval 4: counted, unclassified, no rows. */
    CHECK_ROWS(db,
               "SELECT gc, type_id, thread, heap, count, bytes, survived, survived_bytes, flags"
               " FROM alloc_counts WHERE gc > (SELECT max(gc) FROM gcs) ORDER BY type_id",
               "4|1|100|NULL|1|32|0|0|0\n4|3|102|NULL|1|24|0|0|0\n");
    CHECK(db_int(db, "SELECT count(*) FROM objects WHERE first_gc > 3") == 0);
    sqlite3_close(db);

    /* With no GC at all, the tail is interval 1. */
    g_autoptr(GError) error = NULL;
    g_autofree char *p2 = g_build_filename(dir, "nogc.db", NULL);
    hl_sb *sb = hl_sb_new();
    hl_sb_run_start(sb, 1, "x");
    hl_sb_type(sb, 1, "T");
    hl_sb_alloc(sb, 1, 1, 24, 5);
    hl_sb_run_end(sb, 0);
    CHECK(hl_sb_write_db(sb, p2, NULL, NULL, &error));
    CHECK_NO_ERROR(error);
    hl_sb_free(sb);
    db = db_open(p2);
    CHECK_ROWS(db,
               "SELECT gc, type_id, thread, heap, count, bytes, survived, survived_bytes, flags"
               " FROM alloc_counts",
               "1|1|5|NULL|1|24|0|0|0\n");
    CHECK(db_int(db, "SELECT count(*) FROM objects") == 0);
    CHECK_ROWS(db, "SELECT * FROM allocations_by_type", "T|1|24\n");
    CHECK_ROWS(db, "SELECT command, status FROM run", "x|complete\n"); /* command from the stream */
    sqlite3_close(db);
    tmp_dir_free(dir);
}

/* The sample budget (collector/README.md): a sample kept with probability 1/weight weighs
 * weight times its sampling weight; weight 0 or 1 (streams of before) as drawn; the cumulative
 * count of samples left out becomes counters.samples_budgeted. */
static void test_sample_weight(void)
{
    char *dir = tmp_dir_new();
    g_autoptr(GError) error = NULL;
    g_autofree char *path = g_build_filename(dir, "budget.db", NULL);
    hl_sb *sb = hl_sb_new();
    hl_sb_run_start(sb, 1, "x");
    hl_sb_type(sb, 1, "T");
    hl_sb_gc_start(sb, 1, 0, FALSE, 1);
    struct {
        hl_alloc_samples h;
        hl_alloc_sample s[3];
    } rec = {
        .h = {.gc = 1, .count = 3, .source = HL_SAMPLE_SOURCE_ALLOCATION_SAMPLED,
              .samples_budgeted = 6, .mean_distance_bytes = 102400, .samples_seen = 9},
        .s = {{.size = 24, .type_id = 1, .heap = HL_GEN_0, .weight = 4},
              {.size = 24, .type_id = 1, .heap = HL_GEN_0, .weight = 0},
              {.size = 24, .type_id = 1, .heap = HL_GEN_0, .weight = 1}},
    };
    hl_sb_record(sb, HL_REC_ALLOC_SAMPLES, &rec, sizeof rec);
    hl_sb_gc_end(sb, 1, 0);
    hl_sb_run_end(sb, 1);
    CHECK(hl_sb_write_db(sb, path, NULL, NULL, &error));
    CHECK_NO_ERROR(error);
    hl_sb_free(sb);
    sqlite3 *db = db_open(path);
    double w = 1.0 / -expm1(24.0 * log1p(-1.0 / 102400.0));
    CHECK_ROWS(db, "SELECT count(*) FROM alloc_samples", "3\n");
    g_autofree char *q4 = g_strdup_printf(
        "SELECT count(*) FROM alloc_samples WHERE abs(est_count - %.9f) < 1e-3"
        " AND abs(est_bytes - %.9f) < 1e-2", 4 * w, 4 * w * 24);
    g_autofree char *q1 = g_strdup_printf(
        "SELECT count(*) FROM alloc_samples WHERE abs(est_count - %.9f) < 1e-3"
        " AND abs(est_bytes - %.9f) < 1e-2", w, w * 24);
    CHECK(db_int(db, q4) == 1);
    CHECK(db_int(db, q1) == 2);
    CHECK_ROWS(db, "SELECT value FROM counters WHERE name = 'samples_budgeted'", "6\n");
    sqlite3_close(db);
    tmp_dir_free(dir);
}

/* A record's alloc_counts and alloc_samples rows go out STORE_RECORD_ROWS at a time through a
 * multi-row INSERT, the rest one by one: 37 counts (one a duplicate key, left out) and 35
 * samples (one of type 0, left out) in one record each are stored in order, each row's values
 * where they belong, NULLs included (2 full statements and a rest of 4 and 2). */
static void test_record_rows(void)
{
    char *dir = tmp_dir_new();
    g_autoptr(GError) error = NULL;
    g_autofree char *path = g_build_filename(dir, "rows.db", NULL);
    hl_sb *sb = hl_sb_new();
    hl_sb_run_start(sb, 1, "x");
    for (uint32_t t = 1; t <= 40; t++) {
        g_autofree char *name = g_strdup_printf("T%u", t);
        hl_sb_type(sb, t, name);
    }
    hl_sb_gc_start(sb, 1, 0, FALSE, 1);
    g_autoptr(GString) counts = g_string_new(NULL);
    for (uint32_t i = 0; i < 37; i++) {
        hl_alloc_count c = {.type_id = i + 1, .os_tid = i % 3 == 0 ? 0 : 100 + i,
                            .heap = i % 4 == 0 ? HL_GEN_NONE : HL_GEN_0, .count = 10 + i,
                            .bytes = 240 + i, .survived = i % 2, .survived_bytes = i % 2 * 24};
        if (i == 5) /* entry 3's key again: an anomaly */
            c.type_id = 4, c.os_tid = 0, c.heap = HL_GEN_0;
        hl_sb_alloc_count(sb, 1, &c);
        if (i == 5)
            continue;
        char tid[16] = "NULL";
        if (c.os_tid != 0)
            g_snprintf(tid, sizeof tid, "%u", c.os_tid);
        g_string_append_printf(counts, "1|%u|%s|%s|%u|%u|%u|%u|0\n", c.type_id, tid,
                               c.heap == HL_GEN_NONE ? "NULL" : "0", 10 + i, 240 + i, i % 2,
                               i % 2 * 24);
    }
    struct {
        hl_alloc_samples h;
        hl_alloc_sample s[35];
    } rec = {.h = {.gc = 1, .count = 35, .source = HL_SAMPLE_SOURCE_ALLOCATION_SAMPLED,
                   .mean_distance_bytes = 102400, .samples_seen = 35}};
    g_autoptr(GString) samples = g_string_new(NULL);
    for (uint32_t i = 0; i < 35; i++) {
        rec.s[i] = (hl_alloc_sample){.size = 24 + i, .type_id = i == 20 ? 0 : i + 1,
                                     .os_tid = i % 5 == 0 ? 0 : 200 + i, .heap = HL_GEN_0,
                                     .stack_id = i % 7, .object_id = i % 6 * 1000,
                                     .weight = i % 2 ? 2 : 1};
        if (i == 20)
            continue;
        char tid[16] = "NULL", stack[16] = "NULL", object[16] = "NULL";
        if (rec.s[i].os_tid != 0)
            g_snprintf(tid, sizeof tid, "%u", rec.s[i].os_tid);
        if (rec.s[i].stack_id != 0)
            g_snprintf(stack, sizeof stack, "%u", rec.s[i].stack_id);
        if (rec.s[i].object_id != 0)
            g_snprintf(object, sizeof object, "%" PRIu64, rec.s[i].object_id);
        double w = (i % 2 ? 2 : 1) / -expm1((24.0 + i) * log1p(-1.0 / 102400.0));
        g_string_append_printf(samples, "1|%u|%s|0|%u|%s|%s|%.3f|%.3f\n", i + 1, tid, 24 + i,
                               stack, object, w, w * (24 + i));
    }
    hl_sb_record(sb, HL_REC_ALLOC_SAMPLES, &rec, sizeof rec);
    hl_sb_gc_end(sb, 1, 0);
    hl_sb_run_end(sb, 1);
    CHECK(hl_sb_write_db(sb, path, NULL, NULL, &error));
    CHECK_NO_ERROR(error);
    hl_sb_free(sb);
    sqlite3 *db = db_open(path);
    CHECK_ROWS(db,
               "SELECT gc, type_id, thread, heap, count, bytes, survived, survived_bytes, flags"
               " FROM alloc_counts ORDER BY rowid",
               counts->str);
    CHECK_ROWS(db,
               "SELECT gc, type_id, thread, heap, size, stack_id, object_id,"
               " printf('%.3f|%.3f', est_count, est_bytes) FROM alloc_samples ORDER BY id",
               samples->str);
    CHECK(db_int(db, "SELECT max(id) - min(id) + 1 FROM alloc_samples") == 34);
    CHECK_ROWS(db, "SELECT value FROM counters WHERE name = 'writer_anomalies'", "2\n");
    sqlite3_close(db);
    tmp_dir_free(dir);
}

/* Rows of `table` (its `columns`) in the database and not in the attached full one `f`, or the
 * other way round. */
/* Rows of one SELECT missing from the other, both ways: 0 when they hold the same rows. */
static int64_t db_diff_selects(sqlite3 *db, const char *a, const char *b)
{
    g_autofree char *sql = g_strdup_printf("SELECT count(*) FROM (SELECT * FROM (%1$s EXCEPT %2$s)"
                                           " UNION ALL SELECT * FROM (%2$s EXCEPT %1$s))",
                                           a, b);
    return db_int(db, sql);
}

static int64_t db_diff_full(sqlite3 *db, const char *table, const char *columns)
{
    g_autofree char *a = g_strdup_printf("SELECT %s FROM main.%s", columns, table);
    g_autofree char *b = g_strdup_printf("SELECT %s FROM f.%s", columns, table);
    return db_diff_selects(db, a, b);
}

/* The cut file's bytes with its counter stream_bytes (the only thing two cuts inside one record
 * store differently) zeroed, when it holds `cut` exactly once: the value's bytes right after the
 * name, as SQLite's record format stores an integer (none for 0 and 1, then 1, 2 or 3 bytes big
 * endian). NULL when it cannot say (the file is then checked whole). */
static GBytes *cut_file_normalized(const char *path, size_t cut)
{
    gchar *data = NULL;
    gsize len = 0;
    g_autofree char *wal = g_strconcat(path, "-wal", NULL);
    if (g_file_test(wal, G_FILE_TEST_EXISTS) || !g_file_get_contents(path, &data, &len, NULL))
        return NULL;
    static const char name[] = "stream_bytes";
    const size_t width = cut < 2 ? 0 : cut < 0x80 ? 1 : cut < 0x8000 ? 2 : cut < 0x800000 ? 3 : 9;
    unsigned char value[3];
    for (size_t i = 0; i < width && width <= 3; i++)
        value[i] = (unsigned char)(cut >> (8 * (width - 1 - i)));
    gchar *found = NULL;
    int matches = 0;
    for (gchar *p = data; width <= 3 && (p = memmem(p, len - (gsize)(p - data), name,
                                                     sizeof name - 1)) != NULL;
         p += sizeof name - 1) {
        gchar *v = p + sizeof name - 1;
        if ((gsize)(v - data) + width <= len && memcmp(v, value, width) == 0) {
            found = v;
            matches++;
        }
    }
    if (matches != 1) {
        g_free(data);
        return NULL;
    }
    memset(found, 0, width);
    return g_bytes_new_take(data, len);
}

/* The checks by SQL of the file `cut_path` that the golden stream cut at `cut` (of `len`) left,
 * against the full run's file `full`: as of GC `k` (`survivors` objects rows then), snapshot
 * `discarded` or not, handles of stage `stage`. */
static void truncate_cut_check(const char *cut_path, const char *full, size_t cut, size_t len,
                               int k, int64_t survivors, int64_t discarded, int stage)
{
    sqlite3 *db = db_open(cut_path);
    g_autofree char *attach = g_strdup_printf("ATTACH '%s' AS f", full);
    CHECK(sqlite3_exec(db, attach, NULL, NULL, NULL) == SQLITE_OK);
    g_autofree char *k_s = g_strdup_printf("%d", k);
    g_autofree char *status = db_rows(db, "SELECT status FROM run");
    CHECK_STR(status, cut == len ? "complete\n" : cut < 16 ? "no-data\n" : "truncated\n");
    g_autofree char *loss = db_rows(db, "SELECT loss FROM run");
    CHECK_STR(loss, cut == len || cut < 16 ? "NULL\n" : "program-killed\n");
    g_autofree char *q_bytes = g_strdup_printf(
        "SELECT count(*) FROM counters WHERE name = 'stream_bytes' AND value = %zu", cut);
    CHECK(db_int(db, q_bytes) == 1);
    CHECK(db_int(db, "SELECT count(*) FROM gcs") == k);
    CHECK(db_int(db, "SELECT coalesce(max(gc), 0) FROM gcs") == k);
    CHECK(db_int(db, "SELECT count(*) FROM gc_generations") == 5 * k);
    CHECK(db_int(db, "SELECT count(*) FROM objects") == survivors);
    /* Allocation counts: exactly the full run's of the stored GCs' intervals, and of the
     * tail interval those whose ALLOC_COUNTS arrived whole (none of a later interval). */
    g_autofree char *q_counts = g_strdup_printf(
        "SELECT count(*) FROM ("
        " SELECT * FROM (SELECT * FROM f.alloc_counts WHERE gc <= %1$s"
        "  EXCEPT SELECT * FROM main.alloc_counts)"
        " UNION ALL"
        " SELECT * FROM (SELECT * FROM main.alloc_counts EXCEPT SELECT * FROM f.alloc_counts"
        "  WHERE gc <= %1$s OR (gc = 4 AND %1$s = 3)))",
        k_s);
    CHECK(db_int(db, q_counts) == 0);

    /* Objects classified by a stored GC: exactly the full run's rows as of GC k. */
    g_autofree char *obj_main = g_strdup_printf(
        "SELECT id, type_id, size, thread, heap, first_gc, died_gc FROM main.objects"
        " WHERE first_gc <= %s", k_s);
    g_autofree char *obj_full = g_strdup_printf(
        "SELECT id, type_id, size, thread, heap, first_gc, CASE WHEN died_gc <= %1$s THEN died_gc"
        " END FROM f.objects WHERE first_gc <= %1$s", k_s);
    CHECK(db_diff_selects(db, obj_main, obj_full) == 0);
    g_autofree char *gen_full = g_strdup_printf(
        "SELECT object_id, generation, from_gc, CASE WHEN until_gc <= %1$s THEN until_gc END"
        " FROM f.object_generations WHERE from_gc <= %1$s", k_s);
    CHECK(db_diff_selects(db,
                          "SELECT object_id, generation, from_gc, until_gc"
                          " FROM main.object_generations",
                          gen_full) == 0);
    /* No row for an object of an interval whose GC was not stored. */
    g_autofree char *q_young =
        g_strdup_printf("SELECT count(*) FROM main.objects WHERE first_gc > %s", k_s);
    CHECK(db_int(db, q_young) == 0);
    g_autofree char *q_gcs = g_strdup_printf(
        "SELECT count(*) FROM (SELECT * FROM main.gcs EXCEPT SELECT * FROM f.gcs WHERE gc <= %s)",
        k_s);
    CHECK(db_int(db, q_gcs) == 0);

    /* The snapshot lives in GC 3: all of it, or none of it. */
    if (k == 3) {
        CHECK(db_diff_full(db, "snapshots", "*") == 0);
        CHECK(db_diff_full(db, "snapshot_objects", "*") == 0);
        CHECK(db_diff_full(db, "snapshot_refs", "*") == 0);
        CHECK(db_diff_full(db, "snapshot_roots", "*") == 0);
        CHECK(db_int(db, "SELECT count(*) FROM snapshot_roots") == 7);
    } else {
        CHECK(db_int(db, "SELECT (SELECT count(*) FROM snapshots) + (SELECT count(*) FROM snapshot_objects)"
                         " + (SELECT count(*) FROM snapshot_refs) + (SELECT count(*) FROM snapshot_roots)") == 0);
    }
    CHECK(db_int(db, "SELECT value FROM counters WHERE name = 'snapshots_discarded'") == discarded);
    CHECK_ROWS(db, SQL_HANDLES, golden_handle_stages[stage]);
    sqlite3_close(db);
}

/* Cut the golden stream at every byte: never a failure, never half a GC, never a lost whole
 * allocation record; every complete GC stored as the full run has it, as of that GC; the
 * snapshot there whole (with GC 3) or not at all; handles as of the last whole handle record.
 *
 * Every cut is written by a writer of its own and its file checked. The checks by SQL run once
 * per distinct outcome: a cut whose file is byte for byte one already checked under the same
 * expectations (GCs stored, handle stage, snapshot discarded, status), but for its stream_bytes
 * counter (which must hold the cut), passes them as that one did. Most cuts fall inside a record
 * and store what the cut at its start stored; the checks by SQL, each cut's open and ATTACH with
 * its schema parsed twice, were half the test's time (3,202 cuts: 75-79 s idle, about 450 s under
 * ASan at load 10-25). */
static void test_truncate_every_byte(void)
{
    char *dir = tmp_dir_new();
    golden_marks m = {0};
    hl_sb *sb = golden_build(&m, FALSE);
    g_autofree char *full = g_build_filename(dir, "full.db", NULL);
    g_autoptr(GError) error = NULL;
    CHECK(hl_sb_write_db(sb, full, NULL, NULL, &error));
    CHECK_NO_ERROR(error);
    g_autofree char *cut_path = g_build_filename(dir, "cut.db", NULL);
    /* the outcomes the SQL checks passed: expectations and the normalized file's digest */
    g_autoptr(GHashTable) checked = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    int64_t survivors_after[4];
    {
        sqlite3 *f = db_open(full);
        for (int k = 0; k < 4; k++) {
            g_autofree char *q = g_strdup_printf(
                "SELECT count(*) FROM objects WHERE first_gc <= %d", k);
            survivors_after[k] = db_int(f, q);
        }
        sqlite3_close(f);
    }
    size_t sql_checked = 0;

    for (size_t cut = 0; cut <= m.len; cut++) {
        int before = failures;
        store_summary sum;
        unlink(cut_path);
        CHECK(hl_sb_write_db_prefix(sb, cut, cut_path, NULL, &sum, &error));
        CHECK_NO_ERROR(error);

        int k = 0;
        while (k < 3 && m.gc_end[k + 1] <= cut)
            k++;
        CHECK(sum.gcs == (uint64_t)k && sum.objects == (uint64_t)survivors_after[k]);
        CHECK(sum.snapshots == (k == 3 ? 1u : 0u));
        int64_t discarded = cut >= m.snapshot_start_end && cut < m.gc_end[3];
        /* Handle records are not part of a GC: each one whole before the cut is there. */
        int stage = 0;
        while (stage + 1 < GOLDEN_HANDLE_STAGES && m.handle_end[stage + 1] <= cut)
            stage++;
        g_autoptr(GBytes) normalized = cut_file_normalized(cut_path, cut);
        g_autofree char *digest =
            normalized ? g_compute_checksum_for_bytes(G_CHECKSUM_SHA256, normalized) : NULL;
        g_autofree char *outcome =
            g_strdup_printf("%d %d %d %d %d %s", k, cut == m.len, cut < 16, (int)discarded, stage,
                            digest ? digest : "");
        if (!digest || !g_hash_table_contains(checked, outcome)) {
            sql_checked++;
            truncate_cut_check(cut_path, full, cut, m.len, k, survivors_after[k], discarded,
                               stage);
            if (digest && failures == before)
                g_hash_table_add(checked, g_steal_pointer(&outcome));
        }
        if (failures > before) {
            fprintf(stderr, "  ... at cut %zu of %zu\n", cut, m.len);
            break;
        }
    }
    /* the outcomes: about one per record and field of the stream, far fewer than the cuts */
    CHECK(sql_checked > 0 && sql_checked < m.len / 2);
    hl_sb_free(sb);
    tmp_dir_free(dir);
}

/* The same with the survivors packed (GC_SURVIVORS_PACKED): every cut inside one of its
 * records is a cut stream, never a corrupt one. */
static void test_truncate_every_byte_packed(void)
{
    golden_packed = TRUE;
    test_truncate_every_byte();
    golden_packed = FALSE;
}

/* The golden stream up to GC 2, then `tail`, whatever it is. */
static hl_sb *golden_two_gcs(size_t *two_gcs_len)
{
    golden_marks m = {0};
    hl_sb *full = golden_build(&m, FALSE);
    size_t len;
    const uint8_t *bytes = hl_sb_bytes(full, &len);
    hl_sb *sb = hl_sb_new_empty();
    hl_sb_raw(sb, bytes, m.gc_end[2]);
    *two_gcs_len = m.gc_end[2];
    hl_sb_free(full);
    return sb;
}

static void check_kept_two_gcs(const char *path)
{
    sqlite3 *db = db_open(path);
    CHECK(db_int(db, "SELECT count(*) FROM gcs") == 2);
    CHECK_ROWS(db, "SELECT status, flags FROM run", "truncated|stream-corrupt\n");
    CHECK(db_int(db, "SELECT count(*) FROM objects") == 6); /* survivors of GCs 1 and 2 */
    CHECK(db_int(db, "SELECT count(*) FROM alloc_counts WHERE gc > 2") == 0);
    CHECK_ROWS(db, "SELECT loss FROM run", "stream-corrupt\n");
    sqlite3_close(db);
}

static void test_corrupt_size(void)
{
    char *dir = tmp_dir_new();
    size_t n;
    g_autoptr(GError) error = NULL;

    /* An absurd size between GCs. */
    hl_sb *sb = golden_two_gcs(&n);
    hl_sb_alloc(sb, 10, T_NODE, 24, 100);
    hl_sb_alloc(sb, 11, T_STRING, 16, 100);
    hl_sb_record_sized(sb, HL_REC_ALLOC_COUNTS, HL_REC_MAX_PAYLOAD + 1, NULL, 0);
    hl_sb_raw(sb, "garbage that follows", 20);
    g_autofree char *p1 = g_build_filename(dir, "c1.db", NULL);
    CHECK(!hl_sb_write_db(sb, p1, NULL, NULL, &error));
    CHECK_ERROR(error, STORE_ERROR_STREAM, "exceeds the 16777216-byte limit");
    g_clear_error(&error);
    check_kept_two_gcs(p1);
    hl_sb_free(sb);

    /* The same inside GC 3: the GC is discarded, the allocations before it kept. */
    sb = golden_two_gcs(&n);
    hl_sb_alloc(sb, 10, T_NODE, 24, 100);
    hl_sb_alloc(sb, 11, T_STRING, 16, 100);
    hl_sb_gc_start(sb, 3, 2, TRUE, 12);
    hl_sb_fate(sb, 3, 10, HL_FATE(HL_GEN_0, HL_GEN_1));
    hl_sb_death(sb, 3, 2);
    hl_sb_record_sized(sb, HL_REC_GC_PROMOTIONS, 0xffffffffu, NULL, 0);
    g_autofree char *p2 = g_build_filename(dir, "c2.db", NULL);
    CHECK(!hl_sb_write_db(sb, p2, NULL, NULL, &error));
    CHECK_ERROR(error, STORE_ERROR_STREAM, "corrupt record stream at byte");
    g_clear_error(&error);
    check_kept_two_gcs(p2);
    sqlite3 *db = db_open(p2);
    CHECK(db_int(db, "SELECT died_gc IS NULL FROM objects WHERE id = 2") == 1); /* death rolled back */
    CHECK(db_int(db, "SELECT value FROM counters WHERE name = 'gcs_discarded_incomplete'") == 1);
    sqlite3_close(db);
    hl_sb_free(sb);
    tmp_dir_free(dir);
}

static void test_corrupt_count(void)
{
    char *dir = tmp_dir_new();
    size_t n;
    g_autoptr(GError) error = NULL;
    struct {
        uint16_t type;
        const char *message;
        uint8_t payload[40];
        uint32_t size;
    } cases[] = {
        /* count 5, room for 1 */
        {HL_REC_ALLOC_COUNTS, "ALLOC_COUNTS record: payload of 32 bytes does not hold the 5 items",
         {3, 0, 0, 0, 5}, 32},
        {HL_REC_GC_DEATHS, "GC_DEATHS record", {3, 0, 0, 0, 9}, 16},
        {HL_REC_GC_PROMOTIONS, "GC_PROMOTIONS record", {3, 0, 0, 0, 1}, 8 + 15},
        {HL_REC_GC_SURVIVORS, "GC_SURVIVORS record", {3, 0, 0, 0, 2}, 8 + 33},
        /* GC_SURVIVORS_PACKED, count 2: id 10 (gap 10 << 4 | generation 1 << 1 | key), thread
         * 100, heap 0, type 3, size 24; then the second object cut, malformed, or missing. */
        {HL_REC_GC_SURVIVORS_PACKED, "GC_SURVIVORS_PACKED record: payload of 14 bytes does not "
         "hold the 2 objects it declares (object 1 is cut", {3, 0, 0, 0, 2, 0, 0, 0, 0xa3, 1, 100,
         0, 3, 24}, 14},
        {HL_REC_GC_SURVIVORS_PACKED, "(object 1 is cut or malformed)", {3, 0, 0, 0, 2, 0, 0, 0,
         0xa3, 1, 100, 0, 3, 24, 0x12, 3, 0x80, 0x80}, 18},
        {HL_REC_GC_SURVIVORS_PACKED, "(object 0 is cut", /* a varint of 11 bytes */
         {3, 0, 0, 0, 1, 0, 0, 0, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
          0x01, 3, 24}, 21},
        {HL_REC_GC_SURVIVORS_PACKED, "GC_SURVIVORS_PACKED record: the first object has no "
         "thread and heap", {3, 0, 0, 0, 1, 0, 0, 0, 0xa2, 1, 3, 24}, 12},
        {HL_REC_GC_SURVIVORS_PACKED, "object 0 has thread 4294967296 and heap 0: out of range",
         {3, 0, 0, 0, 1, 0, 0, 0, 0xa3, 1, 0x80, 0x80, 0x80, 0x80, 0x10, 0, 3, 24}, 18},
        {HL_REC_GC_SURVIVORS_PACKED, "object 0 has type 4294967296: out of range",
         {3, 0, 0, 0, 1, 0, 0, 0, 0xa3, 1, 100, 0, 0x80, 0x80, 0x80, 0x80, 0x10, 24}, 18},
        {HL_REC_GC_SURVIVORS_PACKED, "2 bytes left over after the 1 objects it declares",
         {3, 0, 0, 0, 1, 0, 0, 0, 0xa3, 1, 100, 0, 3, 24, 7, 7}, 16},
        {HL_REC_GC_SURVIVORS_PACKED, "shorter than its 8-byte header", {3, 0, 0, 0}, 4},
        {HL_REC_GC_END, "GC_END record: payload is 40 bytes, expected", {3}, 40},
        {HL_REC_DISCOVERED, "DISCOVERED record: payload of 32 bytes does not hold the 2 items",
         {3, 0, 0, 0, 2}, 32},
        {HL_REC_GC_START, "GC_START record", {3}, 4},
        {HL_REC_RUN_END, "RUN_END record", {0}, 0},
        {HL_REC_TYPE, "string of 1000 bytes runs past", {9, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xe8, 3}, 24},
        {HL_REC_THREAD, "shorter than its header", {1}, 4},
        {HL_REC_RUN_START, "string length runs past", {1}, 33},
    };
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        hl_sb *sb = golden_two_gcs(&n);
        hl_sb_alloc(sb, 10, T_NODE, 24, 100);
        hl_sb_alloc(sb, 11, T_STRING, 16, 100);
        hl_sb_record(sb, cases[i].type, cases[i].payload, cases[i].size);
        g_autofree char *p = g_strdup_printf("%s/c%zu.db", dir, i);
        CHECK(!hl_sb_write_db(sb, p, NULL, NULL, &error));
        CHECK_ERROR(error, STORE_ERROR_STREAM, cases[i].message);
        g_clear_error(&error);
        check_kept_two_gcs(p);
        hl_sb_free(sb);
    }
    tmp_dir_free(dir);
}

static void test_unknown_types(void)
{
    char *dir = tmp_dir_new();
    g_autoptr(GError) error = NULL;
    g_autofree char *path = g_build_filename(dir, "u.db", NULL);
    hl_sb *sb = golden_build(NULL, TRUE);
    CHECK(hl_sb_write_db(sb, path, NULL, NULL, &error));
    CHECK_NO_ERROR(error);
    hl_sb_free(sb);
    sqlite3 *db = db_open(path);
    CHECK_ROWS(db, SQL_OBJECTS, golden_objects);
    CHECK_ROWS(db, SQL_GENERATIONS, golden_generations);
    CHECK(db_int(db, "SELECT value FROM counters WHERE name = 'records_skipped_unknown'") == 3);
    CHECK(db_int(db, "SELECT value FROM counters WHERE name = 'records_read'") == 40);
    CHECK_ROWS(db, "SELECT status FROM run", "complete\n");
    sqlite3_close(db);
    tmp_dir_free(dir);
}

static void test_bad_header(void)
{
    char *dir = tmp_dir_new();
    g_autoptr(GError) error = NULL;
    struct {
        const char *magic;
        uint32_t version;
        const char *message;
    } cases[] = {
        {"HEAPLENZ", HL_STREAM_VERSION, "not a heaplens record stream (bad magic)"},
        {"GET / HT", HL_STREAM_VERSION, "not a heaplens record stream (bad magic)"},
        /* Version 1 (a row per allocation) is refused like any foreign stream. */
        {HL_STREAM_MAGIC, 1, "record stream version 1 (an older collector); this heaplens reads versions 2 to 5"},
        {HL_STREAM_MAGIC, 6, "record stream version 6 (a newer collector); this heaplens reads versions 2 to 5"},
        {HL_STREAM_MAGIC, 0, "record stream version 0 (an older collector); this heaplens reads versions 2 to 5"},
    };
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        hl_sb *sb = hl_sb_new_empty();
        hl_sb_header(sb, cases[i].magic, cases[i].version);
        hl_sb_run_start(sb, 1, "x");
        hl_sb_run_end(sb, 0);
        g_autofree char *p = g_strdup_printf("%s/h%zu.db", dir, i);
        store_summary sum;
        CHECK(!hl_sb_write_db(sb, p, NULL, &sum, &error));
        CHECK_ERROR(error, STORE_ERROR_STREAM, cases[i].message);
        CHECK(strchr(error->message, '\n') == NULL);
        g_clear_error(&error);
        CHECK(!sum.connected && !sum.complete);
        sqlite3 *db = db_open(p);
        CHECK_ROWS(db, "SELECT status, pid FROM run", "no-data|NULL\n");
        sqlite3_close(db);
        hl_sb_free(sb);
    }
    /* A short stream whose few bytes are not the magic. */
    hl_sb *sb = hl_sb_new_empty();
    hl_sb_raw(sb, "HX", 2);
    g_autofree char *p = g_build_filename(dir, "short.db", NULL);
    CHECK(!hl_sb_write_db(sb, p, NULL, NULL, &error));
    CHECK_ERROR(error, STORE_ERROR_STREAM, "bad magic");
    g_clear_error(&error);
    hl_sb_free(sb);
    tmp_dir_free(dir);
}

static void test_empty_stream(void)
{
    char *dir = tmp_dir_new();
    g_autoptr(GError) error = NULL;
    g_autofree char *p = g_build_filename(dir, "e.db", NULL);
    hl_sb *sb = hl_sb_new_empty();
    store_summary sum;
    CHECK(hl_sb_write_db(sb, p, NULL, &sum, &error));
    CHECK_NO_ERROR(error);
    CHECK(!sum.connected && sum.gcs == 0 && sum.objects == 0);
    hl_sb_free(sb);
    sqlite3 *db = db_open(p);
    CHECK_ROWS(db, "SELECT status FROM run", "no-data\n");
    sqlite3_close(db);

    /* Header only: connected, nothing else. */
    sb = hl_sb_new();
    g_autofree char *p2 = g_build_filename(dir, "h.db", NULL);
    CHECK(hl_sb_write_db(sb, p2, NULL, &sum, &error));
    CHECK_NO_ERROR(error);
    CHECK(sum.connected && !sum.complete);
    hl_sb_free(sb);
    db = db_open(p2);
    CHECK_ROWS(db, "SELECT status FROM run", "truncated\n");
    sqlite3_close(db);
    tmp_dir_free(dir);
}

/* A GC whose GC_END never came, followed by more GCs: discarded, counted, and the TYPE record
 * that arrived inside it survives the rollback. */
static void test_discarded_gc(void)
{
    char *dir = tmp_dir_new();
    g_autoptr(GError) error = NULL;
    g_autofree char *p = g_build_filename(dir, "d.db", NULL);
    hl_sb *sb = hl_sb_new();
    hl_sb_run_start(sb, 1, "x");
    hl_sb_type(sb, 1, "A");
    hl_sb_alloc(sb, 1, 1, 24, 100);
    hl_sb_alloc(sb, 2, 1, 24, 100);
    hl_sb_gc_start(sb, 1, 0, FALSE, 3);
    hl_sb_fate(sb, 1, 1, HL_FATE(HL_GEN_0, HL_GEN_1));
    hl_sb_fate(sb, 1, 2, HL_FATE(HL_GEN_0, HL_GEN_1));
    hl_sb_gc_end(sb, 1, 0);
    hl_sb_alloc(sb, 3, 1, 24, 100);
    hl_sb_gc_start(sb, 2, 1, FALSE, 4);
    hl_sb_type(sb, 2, "B");
    hl_sb_thread(sb, 100, 1, "Main");
    hl_sb_fate(sb, 2, 3, HL_FATE(HL_GEN_0, HL_GEN_NONE));
    hl_sb_death(sb, 2, 1);
    hl_sb_promotion(sb, 2, 2, HL_GEN_2);
    /* no GC_END 2 */
    hl_sb_alloc(sb, 4, 2, 48, 100);
    hl_sb_gc_start(sb, 3, 0, FALSE, 5);
    hl_sb_fate(sb, 3, 3, HL_FATE(HL_GEN_0, HL_GEN_1));
    hl_sb_fate(sb, 3, 4, HL_FATE(HL_GEN_0, HL_GEN_1));
    hl_sb_gc_end(sb, 3, 0);
    hl_sb_run_end(sb, 3);
    CHECK(hl_sb_write_db(sb, p, NULL, NULL, &error));
    CHECK_NO_ERROR(error);
    hl_sb_free(sb);
    sqlite3 *db = db_open(p);
    CHECK_ROWS(db, "SELECT gc FROM gcs", "1\n3\n");
    CHECK_ROWS(db, "SELECT id, name FROM types ORDER BY id", "1|A\n2|B\n");
    CHECK_ROWS(db, "SELECT os_tid, name FROM threads", "100|Main\n");
    /* Interval 2 (id 3) went with its GC: neither counted nor stored. */
    CHECK_ROWS(db, SQL_OBJECTS, "1|1|24|100|0|1|NULL\n2|1|24|100|0|1|NULL\n"
                                "4|2|48|100|0|3|NULL\n");
    CHECK_ROWS(db, SQL_GENERATIONS, "1|1|1|NULL\n2|1|1|NULL\n4|1|3|NULL\n");
    CHECK_ROWS(db, SQL_ALLOC_COUNTS, "1|1|100|0|2|48|2|48\n3|2|100|0|1|48|1|48\n");
    CHECK_ROWS(db, "SELECT name, value FROM counters WHERE name IN"
                   " ('gcs_discarded_incomplete', 'writer_anomalies') ORDER BY name",
               "gcs_discarded_incomplete|1\nwriter_anomalies|1\n"); /* the gap 1 → 3 */
    CHECK_ROWS(db, "SELECT status FROM run", "complete\n");
    sqlite3_close(db);
    tmp_dir_free(dir);
}

static void test_out_of_order_gc(void)
{
    char *dir = tmp_dir_new();
    g_autoptr(GError) error = NULL;
    size_t n;
    hl_sb *sb = golden_two_gcs(&n);
    hl_sb_alloc(sb, 10, T_NODE, 24, 100);
    hl_sb_alloc(sb, 11, T_STRING, 16, 100);
    hl_sb_gc_start(sb, 2, 0, FALSE, 12);
    hl_sb_gc_end(sb, 2, 0);
    g_autofree char *p = g_build_filename(dir, "o.db", NULL);
    CHECK(!hl_sb_write_db(sb, p, NULL, NULL, &error));
    CHECK_ERROR(error, STORE_ERROR_STREAM, "GC 2 follows GC 2: GCs out of order");
    g_clear_error(&error);
    check_kept_two_gcs(p);
    hl_sb_free(sb);
    tmp_dir_free(dir);
}

/* Data that breaks the collector's promises is skipped and counted, never fatal. */
static void test_anomalies(void)
{
    char *dir = tmp_dir_new();
    g_autoptr(GError) error = NULL;
    g_autofree char *p = g_build_filename(dir, "a.db", NULL);
    hl_sb *sb = hl_sb_new();
    hl_sb_run_start(sb, 1, "x");
    hl_sb_type(sb, 1, "A");
    hl_sb_gc_start(sb, 1, 0, FALSE, 10);
    const hl_alloc_count a2 = {.type_id = 1, .os_tid = 100, .heap = HL_GEN_0, .count = 2,
                               .bytes = 56, .survived = 2, .survived_bytes = 56};
    const hl_alloc_count t9 = {.type_id = 9, .heap = HL_GEN_0, .count = 1, .bytes = 16,
                               .survived = 1, .survived_bytes = 16}; /* no TYPE, no thread */
    const hl_alloc_count bad_heap = {.type_id = 1, .os_tid = 100, .heap = 1, .count = 1, .bytes = 8};
    const hl_alloc_count too_many = {.type_id = 1, .os_tid = 101, .heap = HL_GEN_0, .count = 1,
                                     .bytes = 8, .survived = 2, .survived_bytes = 8};
    hl_sb_alloc_count(sb, 7, &a2); /* not the open GC: 1 anomaly */
    hl_sb_flush(sb);
    hl_sb_alloc_count(sb, 1, &a2);
    hl_sb_alloc_count(sb, 1, &t9);
    hl_sb_alloc_count(sb, 1, &a2);       /* key again in the interval: 1 anomaly */
    hl_sb_alloc_count(sb, 1, &bad_heap); /* heap 1: 1 anomaly */
    hl_sb_alloc_count(sb, 1, &too_many); /* more survived than allocated: 1 anomaly */
    const hl_survivor v1 = {.id = 1, .size = 24, .type_id = 1, .os_tid = 100, .generation = 1};
    hl_sb_survivor(sb, 7, &v1); /* not the open GC: 1 anomaly */
    hl_sb_flush(sb);
    hl_sb_survivor(sb, 1, &v1);
    hl_sb_survivor(sb, 1, &(hl_survivor){.id = 2, .size = 32, .type_id = 1, .os_tid = 100, .generation = 1});
    hl_sb_survivor(sb, 1, &(hl_survivor){.id = 2, .size = 32, .type_id = 1, .generation = 1}); /* not above: 1 */
    hl_sb_survivor(sb, 1, &(hl_survivor){.id = 3, .size = 16, .type_id = 9, .generation = 1});
    hl_sb_survivor(sb, 1, &(hl_survivor){.id = 4, .size = 8, .type_id = 1, .generation = 9}); /* generation: 1 */
    hl_sb_survivor(sb, 1, &(hl_survivor){.id = 5, .size = 8, .type_id = 1, .heap = 2, .generation = 1}); /* heap: 1 */
    hl_sb_survivor(sb, 1, &(hl_survivor){.id = 12, .size = 8, .type_id = 1, .generation = 1}); /* after the GC began: 1 */
    hl_sb_death(sb, 1, 999);               /* unknown object: harmless */
    hl_sb_promotion(sb, 1, 998, HL_GEN_2); /* unknown object: no row */
    hl_sb_promotion(sb, 1, 1, 9);          /* no such generation: 1 anomaly */
    hl_sb_gc_end(sb, 1, 0);
    hl_sb_gc_end(sb, 1, 0);                /* no GC open: 1 anomaly */
    hl_sb_gc_start(sb, 2, 0, FALSE, 20);
    hl_sb_survivor(sb, 2, &(hl_survivor){.id = 9, .size = 8, .type_id = 1, .generation = 1}); /* interval 1's: 1 */
    hl_sb_survivor(sb, 2, &(hl_survivor){.id = 15, .size = 40, .type_id = 1, .os_tid = 100, .generation = 1});
    hl_sb_alloc_count(sb, 2, &(hl_alloc_count){.type_id = 1, .os_tid = 100, .count = 1, .bytes = 40,
                                               .survived = 1, .survived_bytes = 40});
    hl_sb_gc_end(sb, 2, 0);
    hl_sb_survivor(sb, 2, &(hl_survivor){.id = 16, .size = 8, .type_id = 1, .generation = 1}); /* no GC open: 1 */
    hl_sb_alloc_count(sb, 5, &(hl_alloc_count){.type_id = 1, .os_tid = 100, .heap = HL_GEN_NONE, .count = 1}); /* not the tail: 1 */
    hl_sb_flush(sb);
    hl_sb_alloc_count(sb, 3, &(hl_alloc_count){.type_id = 1, .os_tid = 100, .heap = HL_GEN_NONE,
                                               .count = 1, .bytes = 24});
    hl_sb_alloc_count(sb, 3, &(hl_alloc_count){.type_id = 1, .os_tid = 101, .heap = HL_GEN_NONE,
                                               .count = 1, .bytes = 8, .survived = 1,
                                               .survived_bytes = 8}); /* the tail has none: 1 */
    hl_sb_run_end(sb, 2);
    CHECK(hl_sb_write_db(sb, p, NULL, NULL, &error));
    CHECK_NO_ERROR(error);
    hl_sb_free(sb);
    sqlite3 *db = db_open(p);
    CHECK(db_int(db, "SELECT value FROM counters WHERE name = 'writer_anomalies'") == 15);
    CHECK_ROWS(db, SQL_OBJECTS, "1|1|24|100|0|1|NULL\n2|1|32|100|0|1|NULL\n3|9|16|NULL|0|1|NULL\n"
                                "15|1|40|100|0|2|NULL\n");
    CHECK_ROWS(db, SQL_GENERATIONS, "1|1|1|NULL\n2|1|1|NULL\n3|1|1|NULL\n15|1|2|NULL\n");
    CHECK_ROWS(db, SQL_ALLOC_COUNTS, "1|1|100|0|2|56|2|56\n1|9|NULL|0|1|16|1|16\n"
                                     "2|1|100|0|1|40|1|40\n3|1|100|NULL|1|24|0|0\n");
    CHECK_ROWS(db, "SELECT * FROM allocations_by_type ORDER BY type", "<type 9>|1|16\nA|4|120\n");
    sqlite3_close(db);
    tmp_dir_free(dir);
}

/* The writer's checks of the collector's promises on GC_SURVIVORS_PACKED, as on GC_SURVIVORS:
 * each object that breaks one is skipped and counted; a thread all of whose objects were
 * skipped is not noted. */
static void test_anomalies_packed(void)
{
    char *dir = tmp_dir_new();
    g_autoptr(GError) error = NULL;
    g_autofree char *p = g_build_filename(dir, "a.db", NULL);
    hl_sb *sb = hl_sb_new();
    hl_sb_set_packed_survivors(sb, TRUE);
    hl_sb_run_start(sb, 1, "x");
    hl_sb_type(sb, 1, "A");
    hl_sb_gc_start(sb, 1, 0, FALSE, 10);
    const hl_survivor v1 = {.id = 1, .size = 24, .type_id = 1, .os_tid = 100, .generation = 1};
    hl_sb_survivor(sb, 7, &v1); /* not the open GC: 1 */
    hl_sb_flush(sb);
    hl_sb_survivor(sb, 1, &v1);
    hl_sb_survivor(sb, 1, &(hl_survivor){.id = 2, .size = 32, .type_id = 1, .os_tid = 100, .generation = 1});
    hl_sb_survivor(sb, 1, &(hl_survivor){.id = 2, .size = 32, .type_id = 1, .os_tid = 100, .generation = 1}); /* gap 0: 1 */
    hl_sb_survivor(sb, 1, &(hl_survivor){.id = 3, .size = 16, .type_id = 1, .generation = 1});
    hl_sb_survivor(sb, 1, &(hl_survivor){.id = 4, .size = 8, .type_id = 1, .generation = 6}); /* generation: 1 */
    hl_sb_survivor(sb, 1, &(hl_survivor){.id = 5, .size = 8, .type_id = 1, .os_tid = 102, .heap = 2, .generation = 1}); /* heap: 1 */
    hl_sb_survivor(sb, 1, &(hl_survivor){.id = 6, .size = 8, .type_id = 1, .os_tid = 102, .heap = 2, .generation = 1}); /* heap: 1 */
    hl_sb_survivor(sb, 1, &(hl_survivor){.id = 7, .size = 48, .type_id = 1, .os_tid = 101, .heap = HL_GEN_LOH, .generation = HL_GEN_LOH});
    hl_sb_survivor(sb, 1, &(hl_survivor){.id = 12, .size = 8, .type_id = 1, .os_tid = 101, .generation = 1}); /* after the GC began: 1 */
    hl_sb_flush(sb);
    hl_sb_survivor(sb, 1, &(hl_survivor){.id = 7, .size = 8, .type_id = 1, .os_tid = 101, .generation = 1}); /* not above the last: 1 */
    hl_sb_survivor(sb, 1, &(hl_survivor){.id = 8, .size = 56, .type_id = 1, .os_tid = 101, .generation = 0});
    hl_sb_gc_end(sb, 1, 0);
    hl_sb_gc_start(sb, 2, 0, FALSE, 20);
    hl_sb_survivor(sb, 2, &(hl_survivor){.id = 9, .size = 8, .type_id = 1, .generation = 1}); /* interval 1's: 1 */
    hl_sb_survivor(sb, 2, &(hl_survivor){.id = 15, .size = 40, .type_id = 1, .os_tid = 100, .generation = 1});
    hl_sb_gc_end(sb, 2, 0);
    hl_sb_run_end(sb, 2);
    CHECK(hl_sb_write_db(sb, p, NULL, NULL, &error));
    CHECK_NO_ERROR(error);
    hl_sb_free(sb);
    sqlite3 *db = db_open(p);
    CHECK(db_int(db, "SELECT value FROM counters WHERE name = 'writer_anomalies'") == 8);
    CHECK_ROWS(db, SQL_OBJECTS, "1|1|24|100|0|1|NULL\n2|1|32|100|0|1|NULL\n3|1|16|NULL|0|1|NULL\n"
                                "7|1|48|101|3|1|NULL\n8|1|56|101|0|1|NULL\n15|1|40|100|0|2|NULL\n");
    CHECK_ROWS(db, SQL_GENERATIONS, "1|1|1|NULL\n2|1|1|NULL\n3|1|1|NULL\n7|3|1|NULL\n"
                                    "8|0|1|NULL\n15|1|2|NULL\n");
    CHECK_ROWS(db, "SELECT os_tid FROM threads ORDER BY os_tid", "100\n101\n");
    sqlite3_close(db);
    tmp_dir_free(dir);
}

/* The largest values each field of GC_SURVIVORS_PACKED can carry go through whole: ids up to
 * the discovered range, 32-bit threads and types, sizes past 32 bits, every heap and
 * generation. */
static void test_survivors_packed_extremes(void)
{
    char *dir = tmp_dir_new();
    g_autoptr(GError) error = NULL;
    g_autofree char *p = g_build_filename(dir, "x.db", NULL);
    const uint64_t top = HL_DISCOVERED_ID_BASE - 1;
    hl_sb *sb = hl_sb_new();
    hl_sb_set_packed_survivors(sb, TRUE);
    hl_sb_run_start(sb, 1, "x");
    hl_sb_gc_start(sb, 1, 2, FALSE, HL_DISCOVERED_ID_BASE);
    hl_sb_survivor(sb, 1, &(hl_survivor){.id = 1, .size = UINT64_C(1) << 40, .type_id = UINT32_MAX,
                                         .os_tid = UINT32_MAX, .heap = HL_GEN_POH,
                                         .generation = HL_GEN_POH});
    hl_sb_survivor(sb, 1, &(hl_survivor){.id = 2, .size = 0, .type_id = 1, .os_tid = UINT32_MAX,
                                         .heap = HL_GEN_NONGC, .generation = HL_GEN_NONGC});
    hl_sb_survivor(sb, 1, &(hl_survivor){.id = top - 1, .size = 1u << 31, .type_id = 128,
                                         .os_tid = 7, .heap = HL_GEN_NONE, .generation = HL_GEN_2});
    hl_sb_survivor(sb, 1, &(hl_survivor){.id = top, .size = 16384, .type_id = 16383,
                                         .os_tid = 7, .heap = HL_GEN_LOH, .generation = HL_GEN_0});
    hl_sb_gc_end(sb, 1, 0);
    hl_sb_run_end(sb, 1);
    CHECK(hl_sb_write_db(sb, p, NULL, NULL, &error));
    CHECK_NO_ERROR(error);
    hl_sb_free(sb);
    sqlite3 *db = db_open(p);
    CHECK(db_int(db, "SELECT value FROM counters WHERE name = 'writer_anomalies'") == 0);
    CHECK_ROWS(db, "SELECT id, type_id, size, thread, heap FROM objects ORDER BY id",
               "1|4294967295|1099511627776|4294967295|4\n2|1|0|4294967295|5\n"
               "281474976710654|128|2147483648|7|NULL\n281474976710655|16383|16384|7|3\n");
    CHECK_ROWS(db, SQL_GENERATIONS, "1|4|1|NULL\n2|5|1|NULL\n281474976710654|2|1|NULL\n"
                                    "281474976710655|0|1|NULL\n");
    sqlite3_close(db);
    tmp_dir_free(dir);
}

/* run.loss tells why data is missing, from the collector's counters and how the stream ended;
 * a run whose RUN_END arrived is complete whatever it lost. */
static void test_loss_reasons(void)
{
    char *dir = tmp_dir_new();
    struct {
        hl_counters counters;
        gboolean run_end;
        const char *status_loss;
    } cases[] = {
        {{0}, TRUE, "complete|NULL"},
        {{.allocs_dropped = 5, .allocs_dropped_buffer = 5}, TRUE, "complete|buffer-full"},
        {{.allocs_dropped = 7, .allocs_dropped_writer = 7, .records_dropped = 2}, TRUE,
         "complete|writer-behind"},
        {{.gcs_dropped = 1}, TRUE, "complete|writer-behind"},
        {{.snapshots_dropped = 1}, TRUE, "complete|writer-behind"},
        {{.allocs_dropped = 9, .allocs_dropped_buffer = 2, .allocs_dropped_writer = 7,
          .gcs_dropped = 3, .writer_lost = 1},
         TRUE, "complete|buffer-full,writer-lost"},
        {{.gc_events_dropped = 4}, TRUE, "complete|gc-input-lost"},
        {{.allocs_dropped_buffer = 1}, FALSE, "truncated|buffer-full,program-killed"},
        {{0}, FALSE, "truncated|program-killed"},
    };
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autoptr(GError) error = NULL;
        g_autofree char *p = g_strdup_printf("%s/l%zu.db", dir, i);
        hl_sb *sb = hl_sb_new();
        hl_sb_run_start(sb, 1, "x");
        hl_sb_type(sb, 1, "A");
        hl_sb_alloc(sb, 1, 1, 24, 100);
        hl_sb_gc_start(sb, 1, 0, FALSE, 2);
        hl_gc_end e = {.gc = 1, .end_mono_ns = 5, .counters = cases[i].counters};
        hl_sb_gc_end_full(sb, &e);
        if (cases[i].run_end) {
            hl_run_end r = {.end_mono_ns = 100, .shutdown_mono_ns = 40, .gcs = 1,
                            .counters = cases[i].counters,
                            .program_peak_rss_bytes = 123456789};
            hl_sb_run_end_full(sb, &r);
        }
        store_summary sum;
        CHECK(hl_sb_write_db(sb, p, NULL, &sum, &error));
        CHECK_NO_ERROR(error);
        hl_sb_free(sb);
        sqlite3 *db = db_open(p);
        g_autofree char *want = g_strdup_printf("%s\n", cases[i].status_loss);
        CHECK_ROWS(db, "SELECT status, loss FROM run", want);
        /* The counters behind the reasons are stored as sent. */
        g_autofree char *want_counters = g_strdup_printf(
            "%" G_GUINT64_FORMAT "|%" G_GUINT64_FORMAT "|%" G_GUINT64_FORMAT "|%" G_GUINT64_FORMAT
            "|%" G_GUINT64_FORMAT "\n",
            cases[i].counters.allocs_dropped_buffer, cases[i].counters.allocs_dropped_writer,
            cases[i].counters.gcs_dropped, cases[i].counters.snapshots_dropped,
            cases[i].counters.writer_lost);
        CHECK_ROWS(db,
                   "SELECT (SELECT value FROM counters WHERE name = 'allocs_dropped_buffer'),"
                   " (SELECT value FROM counters WHERE name = 'allocs_dropped_writer'),"
                   " (SELECT value FROM counters WHERE name = 'gcs_dropped'),"
                   " (SELECT value FROM counters WHERE name = 'snapshots_dropped'),"
                   " (SELECT value FROM counters WHERE name = 'writer_lost')",
                   want_counters);
        /* The program's exit waited end - shutdown for the collector; known from RUN_END only. */
        CHECK(db_int(db, "SELECT coalesce((SELECT value FROM counters"
                         " WHERE name = 'collector_exit_wait_ns'), -1)") ==
              (cases[i].run_end ? 60 : -1));
        CHECK(db_int(db, "SELECT count(*) FROM counters WHERE name = 'writer_finish_ns'") ==
              (cases[i].run_end ? 1 : 0));
        CHECK(db_int(db, "SELECT count(*) FROM counters WHERE name = 'writer_peak_rss_bytes'") == 1);
        /* The program's peak RSS, as the collector read it at Shutdown (RUN_END only). */
        CHECK(db_int(db, "SELECT coalesce((SELECT value FROM counters"
                         " WHERE name = 'program_peak_rss_bytes'), -1)") ==
              (cases[i].run_end ? 123456789 : -1));
        sqlite3_close(db);
        if (failures > 0)
            fprintf(stderr, "  ... in case %zu\n", i);
    }
    tmp_dir_free(dir);
}

/* A stream cut after GC 1 (pid 4242), in a memfd at 0: what the collector's end file tells when
 * it says the run went on after its writer was lost. */
static int ending_stream_fd(void)
{
    hl_sb *sb = hl_sb_new();
    hl_sb_run_start(sb, 4242, "x");
    hl_sb_type(sb, 1, "A");
    hl_sb_alloc(sb, 1, 1, 24, 100);
    hl_sb_gc_start(sb, 1, 0, FALSE, 2);
    hl_sb_gc_end(sb, 1, 0);
    int fd = hl_sb_memfd(sb, SIZE_MAX);
    g_assert(fd >= 0);
    hl_sb_free(sb);
    return fd;
}

/* Removes a session folder the ending tests made (its end file, if any, and the folder). */
static void ending_session_remove(const char *session)
{
    g_autofree char *end = g_build_filename(session, "end.4242", NULL);
    unlink(end);
    rmdir(session);
}

/* The collector's end file in `dir` (wire/hl_wire.h: a stream header and one RUN_END). */
static void ending_file_write(const char *dir, uint32_t flags)
{
    hl_sb *sb = hl_sb_new();
    hl_run_end r = {.end_mono_ns = 100, .gcs = 4, .flags = flags,
                    .counters = {.allocs_seen = 50, .allocs_dropped = 30,
                                 .allocs_dropped_writer = 30, .records_dropped = 9,
                                 .gcs_dropped = 3, .writer_lost = 1}};
    hl_sb_run_end_full(sb, &r);
    size_t len;
    const uint8_t *bytes = hl_sb_bytes(sb, &len);
    g_autofree char *path = g_build_filename(dir, "end.4242", NULL);
    g_assert(g_file_set_contents(path, (const char *)bytes, (gssize)len, NULL));
    hl_sb_free(sb);
}

/* The writer reads the end file when the stream ended without RUN_END: the collector gave it up
 * (a stall here), the program was not killed, and its final counts are stored. Without the end
 * file the same stream reads as a killed program. */
static void test_ending_writer(void)
{
    char *dir = tmp_dir_new();
    static const struct {
        gboolean end_file;
        uint32_t flags;
        const char *status_loss;
    } cases[] = {
        {FALSE, 0, "truncated|program-killed|0|NULL\n"},
        {TRUE, HL_RUN_END_FLAG_WRITER_STALLED, "truncated|writer-stalled|30|4\n"},
        {TRUE, 0, "truncated|writer-lost|30|4\n"},
    };
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autoptr(GError) error = NULL;
        g_autofree char *session = g_strdup_printf("%s/s%zu", dir, i);
        g_autofree char *path = g_strdup_printf("%s/e%zu.db", dir, i);
        g_assert(mkdir(session, 0700) == 0);
        if (cases[i].end_file)
            ending_file_write(session, cases[i].flags);
        int fd = ending_stream_fd();
        store_writer *w = store_writer_create(path, NULL, &error);
        CHECK(w != NULL);
        store_writer_set_session(w, session, 0);
        CHECK(store_writer_ingest_fd(w, fd, &error));
        CHECK(store_writer_finish(w, NULL, &error));
        CHECK_NO_ERROR(error);
        close(fd);
        sqlite3 *db = db_open(path);
        CHECK_ROWS(db,
                   "SELECT status, loss, (SELECT value FROM counters WHERE name = "
                   "'allocs_dropped_writer'), (SELECT value FROM counters WHERE name = "
                   "'program_gcs') FROM run",
                   cases[i].status_loss);
        sqlite3_close(db);
        ending_session_remove(session);
        if (failures > 0)
            fprintf(stderr, "  ... in case %zu\n", i);
    }
    tmp_dir_free(dir);
}

/* A writer that died before finishing (here: it exits without finish, as a killed one leaves
 * the file: status 'recording', committed GCs in the WAL). `heaplens record`, which outlived
 * it, stores how the recording ended: once, and never into a finished file. */
static void test_ending_writer_died(void)
{
    char *dir = tmp_dir_new();
    static const struct {
        int signal;
        gboolean end_file;
        const char *run;
    } cases[] = {
        {9, TRUE, "truncated|writer-lost,writer-killed|0|9|4|30\n"},
        {0, FALSE, "truncated|write-failed|0|NULL|NULL|0\n"},
    };
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autoptr(GError) error = NULL;
        g_autofree char *session = g_strdup_printf("%s/s%zu", dir, i);
        g_autofree char *path = g_strdup_printf("%s/d%zu.db", dir, i);
        g_assert(mkdir(session, 0700) == 0);
        int fd = ending_stream_fd();
        pid_t child = fork();
        g_assert(child >= 0);
        if (child == 0) {
            store_writer *w = store_writer_create(path, "died", NULL);
            _exit(w != NULL && store_writer_ingest_fd(w, fd, NULL) ? 0 : 2);
        }
        int status = 0;
        waitpid(child, &status, 0);
        CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        close(fd);
        if (cases[i].end_file)
            ending_file_write(session, 0);
        store_ending ending = {.session_dir = session, .exit_known = TRUE, .exit_status = 0,
                               .writer_signal = cases[i].signal};
        CHECK(store_recording_end(path, &ending, &error));
        CHECK_NO_ERROR(error);
        static const char *run_sql =
            "SELECT status, loss, exit_status, (SELECT value FROM counters WHERE name = "
            "'writer_signal'), (SELECT value FROM counters WHERE name = 'program_gcs'), "
            "(SELECT value FROM counters WHERE name = 'allocs_dropped') FROM run";
        sqlite3 *db = db_open(path);
        CHECK_ROWS(db, run_sql, cases[i].run);
        CHECK_ROWS(db, "SELECT gc FROM gcs", "1\n");
        sqlite3_close(db);
        /* A second time (or a finished file): nothing changes. */
        ending.exit_status = 3;
        CHECK(store_recording_end(path, &ending, &error));
        CHECK_NO_ERROR(error);
        db = db_open(path);
        CHECK_ROWS(db, run_sql, cases[i].run);
        sqlite3_close(db);
        ending_session_remove(session);
        if (failures > 0)
            fprintf(stderr, "  ... in case %zu\n", i);
    }
    tmp_dir_free(dir);
}

/* Stream version 3 carries the threads' waits in the counters; a version 2 stream (GC_END of
 * 208 bytes, RUN_END of 136 with program_peak_rss_bytes after the shorter counters) is still
 * read, its waits 0 and every other counter where it was. Version 4's GC_END carries the census
 * (gcs.census_ns, census_objects); version 3's (224 bytes) is read with them NULL. */
static void test_stream_versions(void)
{
    char *dir = tmp_dir_new();
    for (uint32_t version = 2; version <= HL_STREAM_VERSION; version++) {
        g_autoptr(GError) error = NULL;
        g_autofree char *p = g_strdup_printf("%s/v%u.db", dir, version);
        hl_counters k = {.allocs_seen = 1, .thread_waits = 5, .thread_wait_ns = 7000};
        hl_sb *sb = hl_sb_new_empty();
        hl_sb_header(sb, HL_STREAM_MAGIC, version);
        hl_sb_run_start(sb, 1, "x");
        hl_sb_type(sb, 1, "A");
        hl_sb_alloc(sb, 1, 1, 24, 100);
        hl_sb_gc_start(sb, 1, 0, FALSE, 2);
        hl_gc_end e = {.gc = 1, .flags = version >= 4 ? HL_GC_FLAG_CENSUS : 0, .end_mono_ns = 5,
                       .counters = k,
                       .census_ns = 900,
                       .census_objects = 12};
        hl_run_end r = {.end_mono_ns = 100, .shutdown_mono_ns = 40, .gcs = 1, .counters = k,
                        .program_peak_rss_bytes = 123456789};
        if (version == 2) {
            hl_sb_record(sb, HL_REC_GC_END, &e, HL_GC_END_V2_SIZE);
            uint8_t old[HL_RUN_END_V2_SIZE];
            size_t at = offsetof(hl_run_end, counters) + HL_COUNTERS_V2_SIZE;
            memcpy(old, &r, at);
            memcpy(old + at, &r.program_peak_rss_bytes, sizeof r.program_peak_rss_bytes);
            hl_sb_record(sb, HL_REC_RUN_END, old, sizeof old);
        } else {
            if (version == 3)
                hl_sb_record(sb, HL_REC_GC_END, &e, HL_GC_END_V3_SIZE);
            else
                hl_sb_gc_end_full(sb, &e);
            hl_sb_run_end_full(sb, &r);
        }
        store_summary sum;
        CHECK(hl_sb_write_db(sb, p, NULL, &sum, &error));
        CHECK_NO_ERROR(error);
        hl_sb_free(sb);
        sqlite3 *db = db_open(p);
        CHECK_ROWS(db, "SELECT status, loss FROM run", "complete|NULL\n");
        CHECK_ROWS(db,
                   "SELECT (SELECT value FROM counters WHERE name = 'allocs_seen'),"
                   " (SELECT value FROM counters WHERE name = 'thread_waits'),"
                   " (SELECT value FROM counters WHERE name = 'thread_wait_ns'),"
                   " (SELECT value FROM counters WHERE name = 'program_peak_rss_bytes')",
                   version == 2 ? "1|0|0|123456789\n" : "1|5|7000|123456789\n");
        CHECK_ROWS(db, "SELECT census_ns, census_objects FROM gcs",
                   version >= 4 ? "900|12\n" : "NULL|NULL\n");
        sqlite3_close(db);
    }
    tmp_dir_free(dir);
}

static void test_refuse_existing(void)
{
    char *dir = tmp_dir_new();
    g_autoptr(GError) error = NULL;
    g_autofree char *path = golden_db(dir, FALSE, NULL);
    store_writer *w = store_writer_create(path, "again", &error);
    CHECK(w == NULL);
    g_autofree char *want = g_strdup_printf("%s already exists; heaplens does not overwrite it", path);
    CHECK_ERROR(error, STORE_ERROR_EXISTS, want);
    g_clear_error(&error);
    sqlite3 *db = db_open(path); /* untouched */
    CHECK_ROWS(db, "SELECT status, count(*) FROM run JOIN objects", "complete|7\n");
    sqlite3_close(db);

    /* Any existing file, and the WAL left by an earlier database. */
    g_autofree char *text = g_build_filename(dir, "notes.txt", NULL);
    CHECK(g_file_set_contents(text, "hello\n", -1, NULL));
    CHECK(store_writer_create(text, NULL, &error) == NULL);
    CHECK_ERROR(error, STORE_ERROR_EXISTS, "already exists");
    g_clear_error(&error);
    g_autofree char *other = g_build_filename(dir, "other.db", NULL);
    g_autofree char *other_wal = g_strconcat(other, "-wal", NULL);
    CHECK(g_file_set_contents(other_wal, "", 0, NULL));
    CHECK(store_writer_create(other, NULL, &error) == NULL);
    CHECK_ERROR(error, STORE_ERROR_EXISTS, "other.db-wal already exists");
    g_clear_error(&error);
    CHECK(access(other, F_OK) != 0);

    /* A directory that does not exist: an I/O error, nothing left behind. */
    g_autofree char *nodir = g_build_filename(dir, "no", "such", "x.db", NULL);
    CHECK(store_writer_create(nodir, NULL, &error) == NULL);
    CHECK_ERROR(error, STORE_ERROR_IO, "cannot create");
    g_clear_error(&error);

    CHECK(store_writer_finish(NULL, NULL, NULL)); /* NULL is accepted */
    tmp_dir_free(dir);
}

static void test_open_readonly(void)
{
    char *dir = tmp_dir_new();
    g_autoptr(GError) error = NULL;

    g_autofree char *missing = g_build_filename(dir, "missing.db", NULL);
    CHECK(store_db_open_readonly(missing, &error) == NULL);
    g_autofree char *want = g_strdup_printf("%s does not exist", missing);
    CHECK_ERROR(error, STORE_ERROR_IO, want);
    g_clear_error(&error);

    g_autofree char *text = g_build_filename(dir, "app.db", NULL);
    CHECK(g_file_set_contents(text, "this is not a database, just some text\n", -1, NULL));
    CHECK(store_db_open_readonly(text, &error) == NULL);
    g_free(want);
    want = g_strdup_printf("%s is not a heaplens database (not an SQLite file)", text);
    CHECK_ERROR(error, STORE_ERROR_IO, want);
    g_clear_error(&error);

    g_autofree char *empty = g_build_filename(dir, "empty.db", NULL);
    CHECK(g_file_set_contents(empty, "", 0, NULL));
    CHECK(store_db_open_readonly(empty, &error) == NULL);
    CHECK_ERROR(error, STORE_ERROR_IO, "is not a heaplens database (not an SQLite file)");
    g_clear_error(&error);

    CHECK(store_db_open_readonly(dir, &error) == NULL);
    CHECK_ERROR(error, STORE_ERROR_IO, "is a directory");
    g_clear_error(&error);

    g_autofree char *foreign = g_build_filename(dir, "foreign.db", NULL);
    sqlite3 *db = NULL;
    CHECK(sqlite3_open(foreign, &db) == SQLITE_OK);
    CHECK(sqlite3_exec(db, "CREATE TABLE t (x); INSERT INTO t VALUES (1)", NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(db);
    CHECK(store_db_open_readonly(foreign, &error) == NULL);
    g_free(want);
    want = g_strdup_printf("%s is not a heaplens database", foreign);
    CHECK_ERROR(error, STORE_ERROR_SQLITE, want);
    CHECK(g_str_has_suffix(error->message, "is not a heaplens database"));
    g_clear_error(&error);

    /* A recording's main file copied while its writer had all of it in the -wal (no
     * checkpoint yet): the message says the -wal is missing. */
    g_autofree char *walled = g_build_filename(dir, "walled.db", NULL);
    g_autofree char *alone = g_build_filename(dir, "alone.db", NULL);
    CHECK(sqlite3_open(walled, &db) == SQLITE_OK);
    CHECK(sqlite3_exec(db, "PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0;"
                           "PRAGMA application_id = 1212960339; CREATE TABLE t (x)",
                       NULL, NULL, NULL) == SQLITE_OK);
    g_autofree char *main_bytes = NULL;
    gsize main_len = 0;
    CHECK(g_file_get_contents(walled, &main_bytes, &main_len, NULL));
    CHECK(g_file_set_contents(alone, main_bytes, (gssize)main_len, NULL));
    sqlite3_close(db);
    CHECK(store_db_open_readonly(alone, &error) == NULL);
    g_free(want);
    want = g_strdup_printf("%s is not a heaplens database, or is one copied without its -wal: it "
                           "is in WAL mode and %s-wal is missing or empty (copy both, or copy "
                           "after the recording ends)",
                           alone, alone);
    CHECK_ERROR(error, STORE_ERROR_SQLITE, want);
    g_clear_error(&error);

    g_autofree char *good = golden_db(dir, FALSE, NULL);
    db = store_db_open_readonly(good, &error);
    CHECK_NO_ERROR(error);
    CHECK(db != NULL);
    CHECK(db_int(db, "SELECT count(*) FROM objects") == 7);
    CHECK(sqlite3_exec(db, "DELETE FROM objects", NULL, NULL, NULL) == SQLITE_READONLY);
    sqlite3_close(db);

    CHECK(sqlite3_open(good, &db) == SQLITE_OK);
    CHECK(sqlite3_exec(db, "PRAGMA user_version = 9", NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(db);
    CHECK(store_db_open_readonly(good, &error) == NULL);
    g_free(want);
    want = g_strdup_printf("%s was recorded by a newer heaplens (schema 9); this heaplens reads "
                           "schemas %d to %d", good, STORE_SCHEMA_OLDEST_READ, STORE_SCHEMA_VERSION);
    CHECK_ERROR(error, STORE_ERROR_SQLITE, want);
    CHECK(strcmp(error->message, want) == 0);
    g_clear_error(&error);
    /* Schema 1 had a row per allocation: refused, with what to do. */
    CHECK(sqlite3_open(good, &db) == SQLITE_OK);
    CHECK(sqlite3_exec(db, "PRAGMA user_version = 1", NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(db);
    CHECK(store_db_open_readonly(good, &error) == NULL);
    g_free(want);
    want = g_strdup_printf("%s was recorded by an older heaplens (schema 1); record it again", good);
    CHECK_ERROR(error, STORE_ERROR_SQLITE, want);
    CHECK(strcmp(error->message, want) == 0);
    g_clear_error(&error);
    tmp_dir_free(dir);
}

/* Reads `path` with store_db_open_readonly (and a second connection as the refs reader opens
 * one) as a user who may not write it: nobody (uid 65534) when we are root, else ourselves with
 * the file made read-only. TRUE when both read `sql` as `want`. */
static gboolean read_as_reader(const char *path, const char *sql, long long want)
{
    if (getuid() != 0)
        CHECK(chmod(path, 0444) == 0);
    pid_t child = fork();
    g_assert(child >= 0);
    if (child == 0) {
        if (getuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0))
            _exit(2);
        g_autoptr(GError) error = NULL;
        sqlite3 *db = store_db_open_readonly(path, &error);
        if (!db) {
            fprintf(stderr, "%s\n", error->message);
            _exit(3);
        }
        sqlite3 *again = store_db_open_again(db);
        gboolean ok = again && db_int(db, sql) == want && db_int(again, sql) == want;
        sqlite3_close(again);
        sqlite3_close(db);
        _exit(ok ? 0 : 4);
    }
    int status = 0;
    waitpid(child, &status, 0);
    if (getuid() != 0)
        CHECK(chmod(path, 0644) == 0);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/* A finished recording in WAL mode (a reader kept it open at its end) that this user may not
 * write: a read leaves no empty -wal and -shm beside it (read as immutable: nobody has it open).
 * While another connection has it open, the read sees what that connection's -wal holds. */
static void test_readonly_wal_quiet(void)
{
    char *dir = tmp_dir_new();
    g_autofree char *path = golden_db(dir, FALSE, NULL);
    g_autofree char *wal = g_strconcat(path, "-wal", NULL);
    g_autofree char *shm = g_strconcat(path, "-shm", NULL);
    sqlite3 *db = NULL;
    CHECK(sqlite3_open(path, &db) == SQLITE_OK);
    CHECK(sqlite3_exec(db, "PRAGMA journal_mode = WAL", NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(db);
    CHECK(chmod(dir, 01777) == 0 && chmod(path, 0644) == 0);
    CHECK(!g_file_test(wal, G_FILE_TEST_EXISTS) && !g_file_test(shm, G_FILE_TEST_EXISTS));

    CHECK(read_as_reader(path, "SELECT count(*) FROM objects", 7));
    CHECK(!g_file_test(wal, G_FILE_TEST_EXISTS));
    CHECK(!g_file_test(shm, G_FILE_TEST_EXISTS));
    CHECK(sqlite3_open(path, &db) == SQLITE_OK);
    CHECK_ROWS(db, "PRAGMA journal_mode", "wal\n");

    /* another connection open, its last transaction in the -wal only: read, not ignored */
    CHECK(sqlite3_exec(db, "PRAGMA wal_autocheckpoint = 0; CREATE TABLE extra (x);"
                           "INSERT INTO extra VALUES (1), (2)",
                       NULL, NULL, NULL) == SQLITE_OK);
    CHECK(read_as_reader(path, "SELECT count(*) FROM extra", 2));
    sqlite3_close(db);
    tmp_dir_free(dir);
}

/* ---- differential: random recordings against a naive model ------------------------------- */

typedef struct model_gen_row {
    uint32_t gen, from, until; /* until 0: open */
} model_gen_row;

typedef struct model_obj {
    uint32_t type, tid, first_gc, died; /* died 0: alive */
    uint64_t size;
    int heap; /* -1: NULL */
    int cur;  /* current generation, -1 dead or unclassified */
    gboolean dropped; /* the allocation record was not sent */
    GArray *rows;     /* model_gen_row */
} model_obj;

static uint64_t diff_rng;

static uint32_t diff_rand(uint32_t n)
{
    diff_rng ^= diff_rng << 13;
    diff_rng ^= diff_rng >> 7;
    diff_rng ^= diff_rng << 17;
    return (uint32_t)(diff_rng % n);
}

/* Is generation `g` condemned by a GC of generation `gc_gen`? LOH/POH go with gen 2. */
static gboolean diff_condemned(int g, uint32_t gc_gen)
{
    if (g < 0 || g == HL_GEN_NONGC)
        return FALSE;
    if (g == HL_GEN_LOH || g == HL_GEN_POH)
        return gc_gen == 2;
    return (uint32_t)g <= gc_gen;
}

static void diff_close(model_obj *o, uint32_t gc)
{
    for (guint i = 0; i < o->rows->len; i++) {
        model_gen_row *r = &g_array_index(o->rows, model_gen_row, i);
        if (r->until == 0)
            r->until = gc;
    }
}

static void diff_open(model_obj *o, uint32_t gen, uint32_t gc)
{
    model_gen_row r = {.gen = gen, .from = gc};
    g_array_append_val(o->rows, r);
    o->cur = (int)gen;
}

/* The views that read objects and generations: the packed form's derived rows (recording) must
 * answer exactly what the expanded rows (after the first read) answer. */
static const char *const diff_views[] = {
    SQL_OBJECTS,
    SQL_GENERATIONS,
    "SELECT gc, count(*), sum(size), sum(object_id), sum(generation * thread) FROM live_objects"
    " GROUP BY gc ORDER BY gc",
    "SELECT * FROM survivors_by_generation ORDER BY gc, generation, type",
    "SELECT id, type, thread_name, heap, first_gc, died_gc, gcs_survived, final_generation"
    " FROM object_lifetimes ORDER BY id",
};

/* One random recording of `gcs` GCs on `threads` threads, checked row for row against the
 * model, before and after the first read expands it; GC `big` (0: none) has 150,000 allocations
 * (more than one object chunk per thread). */
/* What the writer stored of a recording, before any read: every packed row in rowid order,
 * the rows of the other tables the survivors touch, the view `objects`, and the counters but
 * the writer's own figures and the stream's size. */
static const char *const stored_rows_sql[] = {
    "SELECT rowid, gc, thread, heap, count, objects FROM object_chunks ORDER BY rowid",
    "SELECT rowid, gc, generation, count, ids FROM generation_changes ORDER BY rowid",
    "SELECT rowid, gc, count, ids FROM object_deaths ORDER BY rowid",
    "SELECT * FROM threads ORDER BY os_tid",
    "SELECT * FROM alloc_counts ORDER BY rowid",
    "SELECT * FROM gcs ORDER BY gc",
    "SELECT * FROM objects ORDER BY id",
    "SELECT * FROM object_generations ORDER BY object_id, from_gc",
    "SELECT name, value FROM counters WHERE name NOT LIKE 'writer_%' AND name NOT IN"
    " ('stream_bytes', 'writer_anomalies') ORDER BY name",
    "SELECT value FROM counters WHERE name = 'writer_anomalies'",
};

static char *stored_rows(const char *path)
{
    sqlite3 *db = db_open(path);
    GString *out = g_string_new(NULL);
    for (size_t i = 0; i < G_N_ELEMENTS(stored_rows_sql); i++) {
        g_autofree char *rows = db_rows(db, stored_rows_sql[i]);
        g_string_append_printf(out, "-- %s\n%s", stored_rows_sql[i], rows);
    }
    sqlite3_close(db);
    return g_string_free(out, FALSE);
}

/* packed: the survivors as GC_SURVIVORS_PACKED. stored (optional): what the writer stored,
 * before the first read (stored_rows). */
static void diff_run(const char *dir, uint64_t seed, uint32_t gcs, uint32_t threads, uint32_t big,
                     gboolean packed_survivors, char **stored_text)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(GArray) objs = g_array_new(FALSE, TRUE, sizeof(model_obj));
    g_autoptr(GArray) order = g_array_new(FALSE, FALSE, sizeof(uint64_t));
    hl_sb *sb = hl_sb_new();
    uint64_t next = 1;

    hl_sb_set_packed_survivors(sb, packed_survivors);

    diff_rng = seed;
    g_array_set_size(objs, 1); /* ids from 1 */
    hl_sb_run_start(sb, 1, "diff");
    for (uint32_t t = 1; t <= 20; t++) {
        char name[32];
        snprintf(name, sizeof name, "T%u", t);
        hl_sb_type(sb, t, name);
    }
    for (uint32_t gc = 1; gc <= gcs + 1; gc++) {
        uint64_t young_first = next, n = gc == big ? 150000 : diff_rand(3000);
        hl_sb_set_batch_limit(sb, 40 + diff_rand(100));
        g_array_set_size(order, 0);
        for (uint64_t i = 0; i < n; i++, next++) {
            model_obj o = {
                .type = 1 + diff_rand(20),
                .tid = diff_rand(5) == 0 ? 0 : 500 + diff_rand(threads),
                .size = 24 + 8 * diff_rand(100),
                .heap = -1,
                .cur = -1,
                .dropped = diff_rand(100) == 0,
                .rows = g_array_new(FALSE, FALSE, sizeof(model_gen_row)),
            };
            g_array_append_val(objs, o);
            if (!o.dropped)
                g_array_append_val(order, next);
        }
        /* Thread buffers flush out of id order. */
        for (guint i = order->len; i > 1; i--) {
            guint j = diff_rand(i);
            uint64_t t = g_array_index(order, uint64_t, i - 1);
            g_array_index(order, uint64_t, i - 1) = g_array_index(order, uint64_t, j);
            g_array_index(order, uint64_t, j) = t;
        }
        for (guint i = 0; i < order->len; i++) {
            uint64_t id = g_array_index(order, uint64_t, i);
            const model_obj *o = &g_array_index(objs, model_obj, id);
            hl_sb_alloc(sb, id, o->type, o->size, o->tid);
        }
        if (gc > gcs)
            break; /* allocations after the last GC */

        uint32_t gen = gc % 7 == 0 ? 2 : gc % 3 == 0 ? 1 : 0;
        hl_sb_gc_start(sb, gc, gen, gen == 2, next);
        for (uint64_t id = young_first; id < next; id++) {
            model_obj *o = &g_array_index(objs, model_obj, id);
            uint32_t r = diff_rand(100);
            uint8_t fate = r < 60 ? HL_FATE(HL_GEN_0, HL_GEN_NONE)
                           : r < 85 ? HL_FATE(HL_GEN_0, HL_GEN_1)
                           : r < 90 ? HL_FATE(HL_GEN_0, HL_GEN_0)
                           : r < 95 ? HL_FATE(HL_GEN_LOH, HL_GEN_LOH)
                           : r < 98 ? HL_FATE(HL_GEN_POH, HL_GEN_POH)
                                    : HL_FATE(HL_GEN_NONGC, HL_GEN_NONGC);
            hl_sb_fate(sb, gc, id, fate);
            if (o->dropped)
                continue;
            o->heap = HL_FATE_HEAP(fate);
            o->first_gc = gc;
            if (HL_FATE_GEN(fate) == HL_GEN_NONE)
                o->died = gc;
            else
                diff_open(o, HL_FATE_GEN(fate), gc);
        }
        /* Older objects of the condemned generations: die or get promoted. */
        for (uint64_t id = 1; id < young_first; id++) {
            model_obj *o = &g_array_index(objs, model_obj, id);
            if (o->dropped || o->died != 0 || !diff_condemned(o->cur, gen))
                continue;
            if (diff_rand(100) < 40) {
                hl_sb_death(sb, gc, id);
                o->died = gc;
                o->cur = -1;
                diff_close(o, gc);
            }
        }
        for (uint32_t i = 0; i < (gc % 5 == 0 ? 70u : 1u); i++)
            hl_sb_death(sb, gc, UINT64_C(1000000000) + gc * 100 + i); /* unknown objects */
        for (uint64_t id = 1; id < young_first; id++) {
            model_obj *o = &g_array_index(objs, model_obj, id);
            if (o->dropped || o->died != 0 || !diff_condemned(o->cur, gen) || o->cur >= 2)
                continue;
            if (diff_rand(100) < 60) {
                uint32_t to = (uint32_t)o->cur + 1;
                hl_sb_promotion(sb, gc, id, to);
                diff_close(o, gc);
                diff_open(o, to, gc);
            }
        }
        for (uint32_t i = 0; i < (gc % 4 == 0 ? 70u : 1u); i++)
            hl_sb_promotion(sb, gc, UINT64_C(2000000000) + gc * 100 + i, HL_GEN_2);
        hl_sb_gc_end(sb, gc, HL_GC_FLAG_COMPACTING);
    }
    hl_sb_run_end(sb, gcs);

    g_autofree char *path = g_strdup_printf("%s/diff-%" G_GUINT64_FORMAT "%s.db", dir, seed,
                                            packed_survivors ? "-packed" : "");
    store_summary sum;
    CHECK(hl_sb_write_db(sb, path, NULL, &sum, &error));
    CHECK_NO_ERROR(error);
    hl_sb_free(sb);
    if (stored_text != NULL)
        *stored_text = stored_rows(path);

    GString *want_obj = g_string_new(NULL), *want_gen = g_string_new(NULL);
    uint64_t stored = 0;
    uint64_t counted = 0, counted_bytes = 0, survived = 0;
    for (uint64_t id = 1; id < objs->len; id++) {
        model_obj *o = &g_array_index(objs, model_obj, id);
        counted += !o->dropped;
        counted_bytes += o->dropped ? 0 : o->size;
        /* A row only for an object that survived its first GC. */
        if (!o->dropped && o->first_gc != 0 && o->died != o->first_gc) {
            char tid[16], heap[16], died[16];
            snprintf(tid, sizeof tid, "%u", o->tid);
            snprintf(heap, sizeof heap, "%d", o->heap);
            snprintf(died, sizeof died, "%u", o->died);
            g_string_append_printf(want_obj, "%" G_GUINT64_FORMAT "|%u|%" G_GUINT64_FORMAT "|%s|%s|%u|%s\n",
                                   id, o->type, o->size, o->tid ? tid : "NULL",
                                   o->heap >= 0 ? heap : "NULL", o->first_gc ? o->first_gc : gcs + 1,
                                   o->died ? died : "NULL");
            stored++;
        }
        for (guint i = 0; i < o->rows->len; i++) {
            const model_gen_row *r = &g_array_index(o->rows, model_gen_row, i);
            char until[16];
            snprintf(until, sizeof until, "%u", r->until);
            g_string_append_printf(want_gen, "%" G_GUINT64_FORMAT "|%u|%u|%s\n", id, r->gen, r->from,
                                   r->until ? until : "NULL");
        }
        g_array_unref(o->rows);
    }
    survived = stored;
    CHECK(sum.gcs == gcs && sum.objects == stored && sum.complete);
    CHECK(sum.allocations == counted && sum.allocations_survived == survived);
    sqlite3 *db = db_open(path);
    g_autofree char *want_counts = g_strdup_printf(
        "%" G_GUINT64_FORMAT "|%" G_GUINT64_FORMAT "|%" G_GUINT64_FORMAT "\n", counted,
        counted_bytes, survived);
    CHECK_ROWS(db, "SELECT sum(count), sum(bytes), sum(survived) FROM alloc_counts", want_counts);
    /* Per interval, survived = the rows born there. */
    CHECK(db_int(db, "SELECT count(*) FROM (SELECT gc, sum(survived) AS s FROM alloc_counts GROUP BY gc) a"
                     " WHERE a.s != (SELECT count(*) FROM objects o WHERE o.first_gc = a.gc)") == 0);
    CHECK_ROWS(db, SQL_OBJECTS, want_obj->str);
    CHECK_ROWS(db, SQL_GENERATIONS, want_gen->str);
    CHECK(db_int(db, "SELECT value FROM counters WHERE name = 'writer_anomalies'") == 0);
    /* Packed (nothing expanded yet), then expanded by the first read: the same answers. */
    CHECK(db_int(db, "SELECT count(*) FROM sqlite_schema WHERE name = 'objects' AND type = 'view'") == 1);
    char *packed[G_N_ELEMENTS(diff_views)];
    for (size_t i = 0; i < G_N_ELEMENTS(diff_views); i++)
        packed[i] = db_rows(db, diff_views[i]);
    CHECK(store_history_build_file(path, NULL, NULL, &error));
    CHECK_NO_ERROR(error);
    CHECK(db_int(db, "SELECT count(*) FROM object_chunks") + db_int(db, "SELECT count(*) FROM object_deaths") == 0);
    for (size_t i = 0; i < G_N_ELEMENTS(diff_views); i++) {
        CHECK_ROWS(db, diff_views[i], packed[i]);
        g_free(packed[i]);
    }
    CHECK_ROWS(db, SQL_OBJECTS, want_obj->str);
    CHECK_ROWS(db, SQL_GENERATIONS, want_gen->str);
    sqlite3_close(db);
    g_string_free(want_obj, TRUE);
    g_string_free(want_gen, TRUE);
}

static void test_differential(void)
{
    char *dir = tmp_dir_new();
    /* 2 threads, and a GC of 150,000 allocations: a (thread, heap) fills several chunks. 90
     * threads: more (thread, heap) pairs in a GC than the writer keeps chunks open. */
    diff_run(dir, 0x9e3779b97f4a7c15u, 30, 2, 5, FALSE, NULL);
    diff_run(dir, 2 * 0x9e3779b97f4a7c15u, 30, 90, 0, FALSE, NULL);
    diff_run(dir, 3 * 0x9e3779b97f4a7c15u, 30, 4, 0, FALSE, NULL);
    tmp_dir_free(dir);
}

/* GC_SURVIVORS_PACKED stores what GC_SURVIVORS stores, row for row and byte for byte: the
 * differential recordings (a (thread, heap) filling several chunks; more (thread, heap) pairs
 * in a GC than chunks open; objects without a thread; LOH, POH and NonGC objects; records of
 * 40 to 140 objects, so that runs of a thread cross records) with each record, both checked
 * against the model, and their stored rows compared. */
static void test_survivors_packed(void)
{
    char *dir = tmp_dir_new();
    const struct {
        uint64_t seed;
        uint32_t threads, big;
    } runs[] = {{5 * 0x9e3779b97f4a7c15u, 2, 5}, {6 * 0x9e3779b97f4a7c15u, 90, 0}};
    for (size_t i = 0; i < G_N_ELEMENTS(runs); i++) {
        g_autofree char *old = NULL, *packed = NULL;
        diff_run(dir, runs[i].seed, 20, runs[i].threads, runs[i].big, FALSE, &old);
        diff_run(dir, runs[i].seed, 20, runs[i].threads, runs[i].big, TRUE, &packed);
        CHECK(strlen(old) > 1000);
        if (strcmp(packed, old) != 0) { /* the first line that differs, not megabytes */
            size_t at = 0;
            while (packed[at] == old[at])
                at++;
            while (at > 0 && old[at - 1] != '\n')
                at--;
            fprintf(stderr, "%s:%d: packed survivors stored differently:\n  got:  %.200s\n"
                    "  want: %.200s\n", __FILE__, __LINE__, packed + at, old + at);
            failures++;
        }
    }
    tmp_dir_free(dir);
}

/* Objects first seen in a heap walk become ordinary objects. (With a handle kind sent raw, and a
 * snapshot that never ends.) */
/* A GC's generation changes are stored sorted, as the first id and the gaps after it (ids that
 * came out of order included): the view and the built rows read them back. */
/* The first read sorts each GC's objects alone when the GCs' ids follow one another (a full
 * recording) and all of them when they do not: here GC 1 discovers a walked object (an id at
 * 2^48) and GC 2 finds an allocated one (id 3, a LOH object in a sampled recording). Sorted
 * per GC only, the merge with the changes would pass over id 3's. */
static void test_first_read_order(void)
{
    char *dir = tmp_dir_new();
    g_autoptr(GError) error = NULL;
    g_autofree char *p = g_build_filename(dir, "order.db", NULL);
    const uint64_t base = HL_DISCOVERED_ID_BASE;
    hl_sb *sb = hl_sb_new();
    hl_sb_type(sb, 1, "A");
    hl_sb_gc_start(sb, 1, 2, TRUE, 2);
    hl_sb_discovered(sb, 1, base + 5, 1, 24, HL_GEN_0);
    hl_sb_discovered(sb, 1, base + 4, 1, 24, HL_GEN_0);
    hl_sb_gc_end(sb, 1, 0);
    hl_sb_gc_start(sb, 2, 1, FALSE, 10);
    hl_sb_survivor(sb, 2, &(hl_survivor){.id = 3, .size = 90000, .type_id = 1, .os_tid = 100,
                                         .heap = HL_GEN_LOH, .generation = HL_GEN_LOH});
    hl_sb_promotion(sb, 2, base + 5, HL_GEN_1);
    hl_sb_gc_end(sb, 2, 0);
    hl_sb_gc_start(sb, 3, 1, FALSE, 10);
    hl_sb_death(sb, 3, 3);
    hl_sb_gc_end(sb, 3, 0);
    CHECK(hl_sb_write_db(sb, p, NULL, NULL, &error));
    CHECK_NO_ERROR(error);
    hl_sb_free(sb);
    static const char want[] = "3|3|2|3\n4|0|1|NULL\n5|0|1|2\n5|1|2|NULL\n";
    static const char sql[] = "SELECT object_id % 281474976710656, generation, from_gc, until_gc"
                              " FROM object_generations ORDER BY object_id, from_gc";
    sqlite3 *db = db_open(p);
    CHECK_ROWS(db, sql, want);
    CHECK(store_history_build_file(p, NULL, NULL, &error));
    CHECK_NO_ERROR(error);
    CHECK_ROWS(db, sql, want);
    CHECK_ROWS(db, "SELECT id % 281474976710656, first_gc, died_gc FROM objects ORDER BY id",
               "3|2|3\n4|1|NULL\n5|1|NULL\n");
    sqlite3_close(db);
    tmp_dir_free(dir);
}

/* A VFS over the default one that counts the xSync calls of the files it opens, and the
 * sub-journals it opens (test_no_sync). */
typedef struct sync_count_file {
    sqlite3_file base;   /* pMethods: sync_count_methods */
    sqlite3_file *real;  /* the default VFS's file, in the bytes after this struct */
    int wal;             /* a WAL file: its writes counted */
} sync_count_file;

static sqlite3_vfs *sync_count_real;
static int sync_count_syncs, sync_count_subjournals;
static int64_t sync_count_wal_writes, sync_count_wal_bytes; /* xWrite calls on WAL files */
static sqlite3_io_methods sync_count_methods;

#define SYNC_COUNT_REAL(f) (((sync_count_file *)(f))->real)
static int sync_count_close(sqlite3_file *f)
{
    return SYNC_COUNT_REAL(f)->pMethods->xClose(SYNC_COUNT_REAL(f));
}
static int sync_count_read(sqlite3_file *f, void *buf, int n, sqlite3_int64 at)
{
    return SYNC_COUNT_REAL(f)->pMethods->xRead(SYNC_COUNT_REAL(f), buf, n, at);
}
static int sync_count_write(sqlite3_file *f, const void *buf, int n, sqlite3_int64 at)
{
    if (((sync_count_file *)f)->wal) {
        sync_count_wal_writes++;
        sync_count_wal_bytes += n;
    }
    return SYNC_COUNT_REAL(f)->pMethods->xWrite(SYNC_COUNT_REAL(f), buf, n, at);
}
static int sync_count_truncate(sqlite3_file *f, sqlite3_int64 size)
{
    return SYNC_COUNT_REAL(f)->pMethods->xTruncate(SYNC_COUNT_REAL(f), size);
}
static int sync_count_sync(sqlite3_file *f, int flags)
{
    sync_count_syncs++;
    return SYNC_COUNT_REAL(f)->pMethods->xSync(SYNC_COUNT_REAL(f), flags);
}
static int sync_count_size(sqlite3_file *f, sqlite3_int64 *size)
{
    return SYNC_COUNT_REAL(f)->pMethods->xFileSize(SYNC_COUNT_REAL(f), size);
}
static int sync_count_lock(sqlite3_file *f, int level)
{
    return SYNC_COUNT_REAL(f)->pMethods->xLock(SYNC_COUNT_REAL(f), level);
}
static int sync_count_unlock(sqlite3_file *f, int level)
{
    return SYNC_COUNT_REAL(f)->pMethods->xUnlock(SYNC_COUNT_REAL(f), level);
}
static int sync_count_reserved(sqlite3_file *f, int *out)
{
    return SYNC_COUNT_REAL(f)->pMethods->xCheckReservedLock(SYNC_COUNT_REAL(f), out);
}
static int sync_count_control(sqlite3_file *f, int op, void *arg)
{
    return SYNC_COUNT_REAL(f)->pMethods->xFileControl(SYNC_COUNT_REAL(f), op, arg);
}
static int sync_count_sector(sqlite3_file *f)
{
    return SYNC_COUNT_REAL(f)->pMethods->xSectorSize(SYNC_COUNT_REAL(f));
}
static int sync_count_device(sqlite3_file *f)
{
    return SYNC_COUNT_REAL(f)->pMethods->xDeviceCharacteristics(SYNC_COUNT_REAL(f));
}
static int sync_count_shm_map(sqlite3_file *f, int region, int size, int extend, void volatile **p)
{
    return SYNC_COUNT_REAL(f)->pMethods->xShmMap(SYNC_COUNT_REAL(f), region, size, extend, p);
}
static int sync_count_write_locks; /* the WAL's write lock taken: a write transaction each */
static int sync_count_shm_lock(sqlite3_file *f, int offset, int n, int flags)
{
    if (offset == 0 && n == 1 && flags == (SQLITE_SHM_LOCK | SQLITE_SHM_EXCLUSIVE))
        sync_count_write_locks++;
    return SYNC_COUNT_REAL(f)->pMethods->xShmLock(SYNC_COUNT_REAL(f), offset, n, flags);
}
static void sync_count_shm_barrier(sqlite3_file *f)
{
    SYNC_COUNT_REAL(f)->pMethods->xShmBarrier(SYNC_COUNT_REAL(f));
}
static int sync_count_shm_unmap(sqlite3_file *f, int delete_flag)
{
    return SYNC_COUNT_REAL(f)->pMethods->xShmUnmap(SYNC_COUNT_REAL(f), delete_flag);
}
#undef SYNC_COUNT_REAL

static int sync_count_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *f, int flags,
                           int *out_flags)
{
    (void)vfs;
    sync_count_file *c = (sync_count_file *)f;
    if (flags & SQLITE_OPEN_SUBJOURNAL)
        sync_count_subjournals++;
    c->real = (sqlite3_file *)(c + 1);
    c->wal = (flags & SQLITE_OPEN_WAL) != 0;
    int rc = sync_count_real->xOpen(sync_count_real, name, c->real, flags, out_flags);
    /* SQLite calls xClose only when pMethods is set: left NULL when the real open failed. */
    c->base.pMethods = c->real->pMethods != NULL ? &sync_count_methods : NULL;
    return rc;
}

/* Every call but xOpen goes to the default VFS, which takes this VFS as its own. */
#define SYNC_COUNT_VFS_CALL(name, ...) sync_count_real->name(sync_count_real, __VA_ARGS__)
static int sync_count_delete(sqlite3_vfs *v, const char *name, int dir)
{
    (void)v;
    return SYNC_COUNT_VFS_CALL(xDelete, name, dir);
}
static int sync_count_access(sqlite3_vfs *v, const char *name, int flags, int *out)
{
    (void)v;
    return SYNC_COUNT_VFS_CALL(xAccess, name, flags, out);
}
static int sync_count_full_path(sqlite3_vfs *v, const char *name, int n, char *out)
{
    (void)v;
    return SYNC_COUNT_VFS_CALL(xFullPathname, name, n, out);
}
static int sync_count_random(sqlite3_vfs *v, int n, char *out)
{
    (void)v;
    return SYNC_COUNT_VFS_CALL(xRandomness, n, out);
}
static void (*sync_count_on_sleep)(void); /* called at each xSleep: a busy handler waits */
static int sync_count_sleep(sqlite3_vfs *v, int us)
{
    (void)v;
    if (sync_count_on_sleep)
        sync_count_on_sleep();
    return SYNC_COUNT_VFS_CALL(xSleep, us);
}
static int sync_count_time(sqlite3_vfs *v, sqlite3_int64 *out)
{
    (void)v;
    return SYNC_COUNT_VFS_CALL(xCurrentTimeInt64, out);
}
static int sync_count_last_error(sqlite3_vfs *v, int n, char *out)
{
    (void)v;
    return SYNC_COUNT_VFS_CALL(xGetLastError, n, out);
}
#undef SYNC_COUNT_VFS_CALL

/* The default VFS wrapped so that it counts syncs, sub-journals and write locks (sync_count_*),
 * registered as the default until sqlite3_vfs_unregister. */
static sqlite3_vfs *sync_count_vfs_register(void)
{
    static sqlite3_vfs counting;
    sync_count_real = sqlite3_vfs_find(NULL);
    CHECK(sync_count_real != NULL && sync_count_real->iVersion >= 2);
    sync_count_methods = (sqlite3_io_methods){
        .iVersion = 2, .xClose = sync_count_close, .xRead = sync_count_read,
        .xWrite = sync_count_write, .xTruncate = sync_count_truncate, .xSync = sync_count_sync,
        .xFileSize = sync_count_size, .xLock = sync_count_lock, .xUnlock = sync_count_unlock,
        .xCheckReservedLock = sync_count_reserved, .xFileControl = sync_count_control,
        .xSectorSize = sync_count_sector, .xDeviceCharacteristics = sync_count_device,
        .xShmMap = sync_count_shm_map, .xShmLock = sync_count_shm_lock,
        .xShmBarrier = sync_count_shm_barrier, .xShmUnmap = sync_count_shm_unmap,
    };
    counting = (sqlite3_vfs){
        .iVersion = 2, .szOsFile = (int)sizeof(sync_count_file) + sync_count_real->szOsFile,
        .mxPathname = sync_count_real->mxPathname, .zName = "heaplens-test-sync-count",
        .xOpen = sync_count_open, .xDelete = sync_count_delete, .xAccess = sync_count_access,
        .xFullPathname = sync_count_full_path, .xRandomness = sync_count_random,
        .xSleep = sync_count_sleep, .xCurrentTimeInt64 = sync_count_time,
        .xGetLastError = sync_count_last_error,
    };
    CHECK(sqlite3_vfs_register(&counting, 1) == SQLITE_OK);
    return &counting;
}

/* The sqlite3 shell on PATH, a process of its own (a fork of this one would share SQLite's lock
 * bookkeeping), as a user reads or writes a recording: given SQL whose first output line comes
 * from inside a transaction, which it holds until its input (*in_fd, the write end) closes. */
static pid_t sqlite3_shell_start(const char *path, const char *sql, char *line, size_t size,
                                 int *in_fd)
{
    int in[2], out[2];
    CHECK(pipe(in) == 0 && pipe(out) == 0);
    pid_t shell = fork();
    if (shell == 0) {
        dup2(in[0], 0);
        dup2(out[1], 1);
        close(in[0]);
        close(in[1]);
        close(out[0]);
        close(out[1]);
        execlp("sqlite3", "sqlite3", path, NULL);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    CHECK(write(in[1], sql, strlen(sql)) == (ssize_t)strlen(sql));
    memset(line, 0, size);
    ssize_t got = 0, n;
    while (got < (ssize_t)size - 1 && memchr(line, '\n', (size_t)got) == NULL &&
           (n = read(out[0], line + got, size - 1 - (size_t)got)) > 0)
        got += n;
    close(out[0]);
    *in_fd = in[1];
    return shell;
}

/* The write end of the sqlite3 shell's input while it holds the write lock; the first wait of a
 * busy handler ends its transaction. */
static int busy_holder_in = -1;

static void busy_holder_release(void)
{
    static const char commit[] = "COMMIT;\n";
    if (busy_holder_in >= 0 && write(busy_holder_in, commit, strlen(commit)) > 0) {
        close(busy_holder_in);
        busy_holder_in = -1;
    }
}

/* Another connection's write lock at a commit (a user's sqlite3 writing to the recording or
 * checkpointing it with TRUNCATE): the writer waits for it (STORE_WRITER_BUSY_MS) instead of
 * failing with "database is locked", which ended the recording. The sqlite3 shell, a process of
 * its own, holds BEGIN IMMEDIATE until the writer's busy handler first sleeps (the default VFS
 * wrapped: sync_count_on_sleep): no timing involved. */
static void test_writer_waits_for_lock(void)
{
    char *dir = tmp_dir_new();
    g_autoptr(GError) error = NULL;
    store_summary alone, waited;
    g_autofree char *finished = golden_db(dir, FALSE, &alone);
    sqlite3_vfs *counting = sync_count_vfs_register();
    g_autofree char *path = g_build_filename(dir, "locked.db", NULL);
    hl_sb *sb = golden_build(NULL, FALSE);
    size_t len;
    hl_sb_bytes(sb, &len);
    int fd = hl_sb_memfd(sb, len);
    store_writer *w = store_writer_create(path, "recording", &error);
    CHECK_NO_ERROR(error);

    char line[16];
    int holder_in;
    pid_t holder = sqlite3_shell_start(path, "BEGIN IMMEDIATE; SELECT 'held';\n", line,
                                       sizeof line, &holder_in);
    CHECK(strncmp(line, "held\n", 5) == 0);

    busy_holder_in = holder_in;
    sync_count_on_sleep = busy_holder_release;
    CHECK(store_writer_ingest_fd(w, fd, &error));
    CHECK_NO_ERROR(error);
    CHECK(busy_holder_in < 0); /* it did wait */
    sync_count_on_sleep = NULL;
    close(fd);
    CHECK(store_writer_finish(w, &waited, &error));
    CHECK_NO_ERROR(error);
    CHECK(waited.complete && waited.gcs == alone.gcs && waited.objects == alone.objects &&
          waited.allocations == alone.allocations);
    if (busy_holder_in >= 0)
        close(busy_holder_in);
    busy_holder_in = -1;
    int status = -1;
    CHECK(waitpid(holder, &status, 0) == holder && WIFEXITED(status) &&
          WEXITSTATUS(status) == 0);
    sqlite3_vfs_unregister(counting);
    hl_sb_free(sb);
    tmp_dir_free(dir);
}

/* The writer never asks for a sync (PRAGMA synchronous = OFF from its first statement on): not
 * for the switch to WAL, the schema, the GCs' commits and checkpoints, nor the end (the last
 * checkpoint and leaving WAL mode); and what it wrote is the whole recording. Nor does it keep
 * pages in a sub-journal: a GC is a transaction of its own, not a SAVEPOINT (which saved each
 * page a GC changed first into a temporary file). A VFS made the default counts the syncs and
 * the sub-journals of every file SQLite opens meanwhile. */
static void test_no_sync(void)
{
    char *dir = tmp_dir_new();
    g_autoptr(GError) error = NULL;
    sqlite3_vfs *counting = sync_count_vfs_register();

    /* First, that the count works: a connection of SQLite's defaults (synchronous FULL). */
    g_autofree char *probe_path = g_build_filename(dir, "probe.db", NULL);
    sqlite3 *probe = NULL;
    CHECK(sqlite3_open(probe_path, &probe) == SQLITE_OK);
    CHECK(sqlite3_exec(probe, "CREATE TABLE t (x)", NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(probe);
    CHECK(sync_count_syncs > 0);

    sync_count_syncs = 0;
    sync_count_subjournals = 0;
    g_autofree char *path = g_build_filename(dir, "nosync.db", NULL);
    hl_sb *sb = golden_build(NULL, FALSE);
    store_summary sum;
    CHECK(hl_sb_write_db(sb, path, "heaplens record -- dotnet App.dll", &sum, &error));
    CHECK_NO_ERROR(error);
    CHECK(sum.complete && !sum.wal_kept);
    CHECK(sync_count_syncs == 0);
    CHECK(sync_count_subjournals == 0);
    sqlite3_vfs_unregister(counting);
    hl_sb_free(sb);

    sqlite3 *db = db_open(path);
    CHECK_ROWS(db, "PRAGMA journal_mode", "delete\n");
    CHECK_ROWS(db, "SELECT status FROM run", "complete\n");
    CHECK_ROWS(db, "SELECT count(*) > 0 FROM gcs", "1\n");
    sqlite3_close(db);
    tmp_dir_free(dir);
}

/* A stream of `gcs` small GCs (a few allocations each, one survivor), a sampled service's
 * shape; with `cut`, the last GC's end never comes. */
static hl_sb *small_gcs_build(uint32_t gcs, gboolean cut)
{
    hl_sb *sb = hl_sb_new();
    uint64_t id = 1;
    hl_sb_run_start(sb, 4242, "dotnet Small.dll");
    hl_sb_type(sb, 1, "A");
    hl_sb_type(sb, 2, "B");
    for (uint32_t gc = 1; gc <= gcs; gc++) {
        uint64_t first = id;
        for (int i = 0; i < 5; i++, id++)
            hl_sb_alloc(sb, id, 1 + (uint32_t)(id % 2), 24, 100 + (uint32_t)(id % 3));
        hl_sb_gc_start(sb, gc, 0, FALSE, id);
        for (uint64_t o = first; o < id; o++)
            hl_sb_fate(sb, gc, o, HL_FATE(HL_GEN_0, o == first ? HL_GEN_1 : HL_GEN_NONE));
        if (gc < gcs || !cut)
            hl_sb_gc_end(sb, gc, 0);
    }
    if (!cut)
        hl_sb_run_end(sb, gcs);
    return sb;
}

/* Grouped commits (store_writer.c): GCs whose records have all come are committed together, not
 * one write transaction each (which wrote a GC's few pages again into the WAL every time), and
 * store the same rows; a GC whose end never comes is still left out alone. The write
 * transactions are counted by the WAL's write lock, through the counting VFS of test_no_sync. */
static void test_grouped_commits(void)
{
    char *dir = tmp_dir_new();
    const uint32_t gcs = 200;
    sqlite3_vfs *counting = sync_count_vfs_register();
    for (int cut = 0; cut <= 1; cut++) {
        g_autoptr(GError) error = NULL;
        g_autofree char *path = g_strdup_printf("%s/small%d.db", dir, cut);
        hl_sb *sb = small_gcs_build(gcs, cut);
        store_summary sum;
        sync_count_write_locks = 0;
        CHECK(hl_sb_write_db(sb, path, NULL, &sum, &error));
        CHECK_NO_ERROR(error);
        /* a commit per GC took at least 200; a few: the schema, the end, a group per 50 ms */
        if (sync_count_write_locks >= (int)gcs / 4)
            fprintf(stderr, "grouped_commits: %d write transactions for %u GCs\n",
                    sync_count_write_locks, gcs);
        CHECK(sync_count_write_locks < (int)gcs / 4);
        CHECK(sum.gcs == gcs - (uint32_t)cut && sum.complete == !cut);
        hl_sb_free(sb);
        sqlite3 *db = db_open(path);
        g_autofree char *want = g_strdup_printf("%u|%u|%u|%u|%d\n", gcs - cut, gcs - cut,
                                                (gcs - cut) * 5, gcs - cut, cut);
        CHECK_ROWS(db,
                   "SELECT (SELECT count(*) FROM gcs), (SELECT max(gc) FROM gcs),"
                   " (SELECT sum(count) FROM alloc_counts WHERE gc <= (SELECT max(gc) FROM gcs)),"
                   " (SELECT count(*) FROM objects),"
                   " (SELECT value FROM counters WHERE name = 'gcs_discarded_incomplete')",
                   want);
        sqlite3_close(db);
    }
    sqlite3_vfs_unregister(counting);
    tmp_dir_free(dir);
}

/* The writer's VFS (store_vfs.c) hands the WAL's frames to the default VFS in one write per
 * commit (or per 127 KiB), not as a header and a page each: 200 small GCs' group commits and the
 * golden stream's GCs (each applied as it comes, a commit each) counted by a VFS under it; the
 * recordings the same as ever. */
static void test_wal_writes_gathered(void)
{
    char *dir = tmp_dir_new();
    g_autoptr(GError) error = NULL;
    store_summary alone, gathered;
    g_autofree char *finished = golden_db(dir, FALSE, &alone);
    sqlite3_vfs *counting = sync_count_vfs_register();
    for (int stream = 0; stream < 2; stream++) {
        g_autofree char *path = g_strdup_printf("%s/gathered%d.db", dir, stream);
        hl_sb *sb = stream == 0 ? small_gcs_build(200, FALSE) : golden_build(NULL, FALSE);
        sync_count_write_locks = 0;
        sync_count_wal_writes = sync_count_wal_bytes = 0;
        CHECK(hl_sb_write_db(sb, path, NULL, &gathered, &error));
        CHECK_NO_ERROR(error);
        hl_sb_free(sb);
        /* two writes a frame before: more writes than frames (of 8 KiB pages) */
        int64_t frames = sync_count_wal_bytes / (8192 + 24);
        int64_t most = sync_count_write_locks + sync_count_wal_bytes / (127 * 1024) + 2;
        if (sync_count_wal_writes > most)
            fprintf(stderr, "wal_writes_gathered: %" PRId64 " WAL writes for %" PRId64
                    " frames and %d write transactions\n", sync_count_wal_writes, frames,
                    sync_count_write_locks);
        CHECK(frames > sync_count_write_locks && sync_count_wal_writes <= most);
        if (stream == 1)
            CHECK(gathered.complete && gathered.gcs == alone.gcs &&
                  gathered.objects == alone.objects && gathered.allocations == alone.allocations);
    }
    sqlite3_vfs_unregister(counting);
    tmp_dir_free(dir);
}

/* store_radix_sort against a stable comparison sort: random keys with repeats (the items keep
 * their order among equal keys), and inputs sorted already or but for their last item (the
 * sorted ones are left as they are, without a pass). */
typedef struct radix_item {
    uint64_t key, seq;
} radix_item;

static int radix_item_cmp(const void *a, const void *b)
{
    const radix_item *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static void test_radix_sort(void)
{
    enum { N = 5000 };
    static radix_item items[N], want[N];
    uint64_t rng = 0x9e3779b97f4a7c15u;
    for (int shape = 0; shape < 4; shape++) {
        for (size_t i = 0; i < N; i++) {
            rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
            uint64_t key = shape == 0 ? rng % 97 : shape == 1 ? rng : 1000 + 3 * i;
            if (shape == 3 && i == N - 1)
                key = 5; /* sorted but for the last */
            items[i] = (radix_item){.key = key, .seq = i};
        }
        memcpy(want, items, sizeof items);
        qsort(want, N, sizeof *want, radix_item_cmp);
        store_radix_sort(items, N, sizeof *items, G_STRUCT_OFFSET(radix_item, key));
        CHECK(memcmp(items, want, sizeof items) == 0);
    }
}

/* store_put_u64 writes what printf("%" PRIu64) writes: every number below 100,000, each power
 * of ten and its neighbours, and the largest. */
static gboolean put_u64_agrees(uint64_t x)
{
    char got[STORE_U64_DIGITS + 1], want[32];
    got[store_put_u64(got, x) - got] = 0;
    snprintf(want, sizeof want, "%" PRIu64, x);
    if (strcmp(got, want) == 0)
        return TRUE;
    CHECK_STR(got, want);
    return FALSE;
}

static void test_put_u64(void)
{
    for (uint64_t x = 0; x < 100000; x++)
        if (!put_u64_agrees(x))
            return;
    for (uint64_t p = 10; p <= UINT64_MAX / 10; p *= 10)
        if (!put_u64_agrees(p - 1) || !put_u64_agrees(p) || !put_u64_agrees(p + 1))
            return;
    put_u64_agrees(UINT64_MAX);
}

/* The WAL is checkpointed after a GC's commit and after the answers to the snapshots it
 * stored, not inside the commit: a snapshot of 10M objects is stored (and its client answered)
 * before its 170 MB are copied into the database file. A GC large enough to pass the checkpoint
 * threshold with a snapshot: when the snapshot is announced the WAL still holds its frames;
 * once the GC is done, they were copied (the count the writer keeps is 0 again). */
typedef struct checkpoint_seen {
    store_writer *w;
    int frames_at_answer, answers;
} checkpoint_seen;

static void checkpoint_on_snapshot(void *ctx, const store_snapshot_done *d G_GNUC_UNUSED)
{
    checkpoint_seen *seen = ctx;
    seen->frames_at_answer = seen->w->wal_frames;
    seen->answers++;
}

static void test_checkpoint_after_answer(void)
{
    char *dir = tmp_dir_new();
    g_autoptr(GError) error = NULL;
    g_autofree char *path = g_build_filename(dir, "checkpoint.db", NULL);
    enum { OBJECTS = 1000000 }; /* ~8 MiB of snapshot blocks: past 1024 frames of 4 KiB */
    hl_sb *sb = hl_sb_new();
    hl_sb_run_start(sb, 4242, "dotnet App.dll");
    hl_sb_type(sb, T_NODE, "App.Node");
    hl_sb_gc_start(sb, 1, 2, TRUE, OBJECTS + 1);
    hl_sb_snapshot_start(sb, 1, 1, HL_SNAPSHOT_REQUESTED);
    for (uint64_t id = 1; id <= OBJECTS; id++) {
        hl_sb_snapshot_object(sb, 1, id, HL_GEN_2, 0);
        /* targets far apart: long deltas */
        hl_sb_snapshot_ref(sb, 1, id, id * 7919 % OBJECTS + 1);
    }
    hl_sb_snapshot_end(sb, 1, 1);
    hl_sb_gc_end(sb, 1, 0);
    hl_sb_run_end(sb, 1);

    store_writer *w = store_writer_create(path, "cmd", &error);
    CHECK_NO_ERROR(error);
    checkpoint_seen seen = {.w = w};
    w->on_snapshot = checkpoint_on_snapshot;
    w->on_snapshot_ctx = &seen;
    int fd = hl_sb_memfd(sb, SIZE_MAX);
    CHECK(store_writer_ingest_fd(w, fd, &error));
    CHECK_NO_ERROR(error);
    close(fd);
    CHECK(seen.answers == 1);
    CHECK(seen.frames_at_answer >= STORE_WAL_CHECKPOINT_FRAMES);
    CHECK(w->wal_frames == 0);
    store_summary sum;
    CHECK(store_writer_finish(w, &sum, &error));
    CHECK_NO_ERROR(error);
    sqlite3 *db = db_open(path);
    CHECK_ROWS(db, "SELECT objects, refs FROM snapshots", "1000000|1000000\n");
    sqlite3_close(db);
    hl_sb_free(sb);
    tmp_dir_free(dir);
}

/* A reader holding the recording open when it ends (a user's sqlite3 polling it: a read
 * transaction in another process) cannot make the writer fail: leaving WAL mode is refused, the
 * file stays in WAL mode, whole and complete, and the summary says so; once the reader is gone
 * the file reads as the same recording written without it. */
static void test_reader_holds_file(void)
{
    char *dir = tmp_dir_new();
    g_autoptr(GError) error = NULL;
    store_summary alone, held;
    g_autofree char *finished = golden_db(dir, FALSE, &alone);
    CHECK(!alone.wal_kept);
    g_autofree char *path = g_build_filename(dir, "held.db", NULL);
    hl_sb *sb = golden_build(NULL, FALSE);
    size_t len;
    hl_sb_bytes(sb, &len);
    int fd = hl_sb_memfd(sb, len);
    store_writer *w = store_writer_create(path, "recording", &error);
    CHECK_NO_ERROR(error);
    CHECK(store_writer_ingest_fd(w, fd, &error)); /* every GC committed, the tail still open */
    CHECK_NO_ERROR(error);
    close(fd);

    /* The reader: the sqlite3 shell as a user polls the recording; the count it prints comes
     * from inside its transaction. */
    char line[32];
    int reader_in;
    pid_t reader = sqlite3_shell_start(path, "BEGIN; SELECT count(*) FROM gcs;\n", line,
                                       sizeof line, &reader_in);
    int64_t seen = g_ascii_strtoll(line, NULL, 10);
    CHECK(seen == (int64_t)alone.gcs && seen > 0);

    CHECK(store_writer_finish(w, &held, &error));
    CHECK_NO_ERROR(error);
    CHECK(held.wal_kept && held.complete && held.gcs == alone.gcs &&
          held.objects == alone.objects && held.allocations == alone.allocations);
    g_autofree char *wal = g_strconcat(path, "-wal", NULL);
    CHECK(access(wal, F_OK) == 0); /* the reader's connection keeps it */

    /* Read while the reader still holds it, and after. */
    for (int round = 0; round < 2; round++) {
        if (round == 1) {
            close(reader_in); /* end of input: the shell ends its transaction and exits */
            int status = -1;
            CHECK(waitpid(reader, &status, 0) == reader && WIFEXITED(status) &&
                  WEXITSTATUS(status) == 0);
        }
        sqlite3 *db = store_db_open_readonly(path, &error);
        CHECK_NO_ERROR(error);
        sqlite3 *done = db_open(finished);
        static const char *const same[] = {
            "SELECT status, exit_status, loss FROM run",
            "SELECT * FROM gcs ORDER BY gc",
            SQL_ALLOC_COUNTS,
            "SELECT name, value FROM counters WHERE name NOT LIKE 'writer%' ORDER BY name",
        };
        for (size_t i = 0; i < G_N_ELEMENTS(same); i++) {
            g_autofree char *want = db_rows(done, same[i]);
            CHECK_ROWS(db, same[i], want);
        }
        CHECK_ROWS(db, "SELECT status FROM run", "complete\n");
        /* The first open once the reader is gone makes it one file again (WAL copied). */
        CHECK((access(wal, F_OK) == 0) == (round == 0));
        CHECK_ROWS(db, "PRAGMA journal_mode", round == 0 ? "wal\n" : "delete\n");
        CHECK(db_int(db, "SELECT count(*) FROM counters WHERE name = 'writer_finish_ns'") == 1);
        sqlite3_close(db);
        sqlite3_close(done);
    }
    /* The first read builds on it as on any finished file. */
    CHECK(store_history_build_file(path, NULL, NULL, &error));
    CHECK_NO_ERROR(error);
    sqlite3 *db = db_open(path);
    sqlite3 *done = db_open(finished);
    g_autofree char *want = db_rows(done, SQL_OBJECTS);
    CHECK_ROWS(db, SQL_OBJECTS, want);
    sqlite3_close(db);
    sqlite3_close(done);
    hl_sb_free(sb);
    tmp_dir_free(dir);
}

static void test_change_gaps(void)
{
    char *dir = tmp_dir_new();
    g_autoptr(GError) error = NULL;
    g_autofree char *p = g_build_filename(dir, "gaps.db", NULL);
    const uint64_t base = HL_DISCOVERED_ID_BASE;
    hl_sb *sb = hl_sb_new();
    hl_sb_type(sb, 1, "A");
    hl_sb_gc_start(sb, 1, 2, TRUE, 2);
    static const uint64_t order[] = {5, 6, 3, 9};
    for (size_t i = 0; i < G_N_ELEMENTS(order); i++)
        hl_sb_discovered(sb, 1, base + order[i], 1, 24, HL_GEN_2);
    hl_sb_gc_end(sb, 1, 0);
    hl_sb_gc_start(sb, 2, 1, FALSE, 2);
    hl_sb_death(sb, 2, base + 6);
    hl_sb_gc_end(sb, 2, 0);
    CHECK(hl_sb_write_db(sb, p, NULL, NULL, &error));
    CHECK_NO_ERROR(error);
    hl_sb_free(sb);
    static const char want[] = "3|2|1|NULL\n5|2|1|NULL\n6|2|1|2\n9|2|1|NULL\n";
    static const char sql[] = "SELECT object_id - 281474976710656, generation, from_gc, until_gc"
                              " FROM object_generations ORDER BY object_id";
    sqlite3 *db = db_open(p);
    CHECK_ROWS(db, "SELECT gc, generation, count, ids FROM generation_changes ORDER BY rowid",
               "1|2|4|[281474976710659,2,1,3]\n");
    CHECK_ROWS(db, sql, want);
    CHECK(store_history_build_file(p, NULL, NULL, &error));
    CHECK_NO_ERROR(error);
    CHECK(db_int(db, "SELECT count(*) FROM object_generation_rows") == 0); /* in objects */
    CHECK_ROWS(db, sql, want);
    sqlite3_close(db);
    tmp_dir_free(dir);
}

static void test_discovered(void)
{
    char *dir = tmp_dir_new();
    g_autoptr(GError) error = NULL;
    g_autofree char *p = g_build_filename(dir, "d.db", NULL);
    const uint64_t base = HL_DISCOVERED_ID_BASE;
    hl_sb *sb = hl_sb_new();
    hl_sb_type(sb, 1, "A");
    hl_sb_alloc(sb, 1, 1, 24, 7);
    hl_sb_gc_start(sb, 1, 2, TRUE, 2);
    hl_sb_fate(sb, 1, 1, HL_FATE(HL_GEN_0, HL_GEN_1));
    hl_handle_kind hk = {.handle_id = 0x1000, .kind = HL_HANDLE_STRONG};
    hl_gc_handle_kinds hkh = {.gc = 1, .count = 1};
    uint8_t raw[sizeof hkh + sizeof hk];
    memcpy(raw, &hkh, sizeof hkh);
    memcpy(raw + sizeof hkh, &hk, sizeof hk);
    hl_sb_record(sb, HL_REC_GC_HANDLE_KINDS, raw, sizeof raw);
    hl_sb_discovered(sb, 1, base + 1, 1, 100, HL_GEN_2);
    hl_sb_discovered(sb, 1, base + 2, 1, 90000, HL_GEN_LOH);
    hl_sb_discovered(sb, 1, base + 3, 1, 40, HL_GEN_NONGC);
    hl_sb_discovered(sb, 1, 5, 1, 40, HL_GEN_2); /* not in the discovered range: anomaly */
    hl_snapshot_start ss = {.snapshot = 1, .gc = 1, .trigger = HL_SNAPSHOT_INDUCED};
    hl_sb_record(sb, HL_REC_SNAPSHOT_START, &ss, sizeof ss);
    hl_gc_end e = {.gc = 1, .end_mono_ns = 5};
    hl_sb_gc_end_full(sb, &e);
    hl_sb_gc_start(sb, 2, 2, TRUE, 2);
    hl_sb_death(sb, 2, base + 2);
    hl_sb_promotion(sb, 2, 1, HL_GEN_2);
    hl_sb_gc_end(sb, 2, 0);
    /* A GC that never ends: its discovered objects go with it. */
    hl_sb_gc_start(sb, 3, 0, FALSE, 2);
    hl_sb_discovered(sb, 3, base + 9, 1, 8, HL_GEN_0);
    CHECK(hl_sb_write_db(sb, p, NULL, NULL, &error));
    CHECK_NO_ERROR(error);
    hl_sb_free(sb);
    sqlite3 *db = db_open(p);
    CHECK_ROWS(db, "SELECT id - 281474976710656, type_id, size, thread, heap, first_gc, died_gc FROM objects ORDER BY id",
               "-281474976710655|1|24|7|0|1|NULL\n"
               "1|1|100|NULL|0|1|NULL\n"
               "2|1|90000|NULL|3|1|2\n"
               "3|1|40|NULL|5|1|NULL\n");
    CHECK_ROWS(db, "SELECT object_id % 1000, generation, from_gc, until_gc FROM object_generations ORDER BY object_id, from_gc",
               "1|1|1|2\n1|2|2|NULL\n"
               "657|2|1|NULL\n658|3|1|2\n659|5|1|NULL\n");
    CHECK_ROWS(db, "SELECT name, value FROM counters WHERE name IN ('records_skipped_unknown',"
                   " 'writer_anomalies', 'gcs_discarded_incomplete', 'snapshots_discarded') ORDER BY name",
               "gcs_discarded_incomplete|1\nrecords_skipped_unknown|0\nsnapshots_discarded|1\n"
               "writer_anomalies|1\n");
    CHECK_ROWS(db, SQL_HANDLES, "1|4096|strong|NULL|NULL|NULL\n");
    CHECK(db_int(db, "SELECT count(*) FROM snapshots") == 0);
    sqlite3_close(db);
    tmp_dir_free(dir);
}

/* Sparse ids, far apart and across 2^16 boundaries, with gaps (dropped allocations). */
static void test_chunk_boundaries(void)
{
    char *dir = tmp_dir_new();
    g_autoptr(GError) error = NULL;
    g_autofree char *p = g_build_filename(dir, "c.db", NULL);
    const uint64_t ids[] = {65530, 65535, 65536, 65537, 131071, 131072, 3 * 65536 + 5};
    hl_sb *sb = hl_sb_new();
    hl_sb_type(sb, 1, "A");
    for (size_t i = 0; i < G_N_ELEMENTS(ids); i++)
        hl_sb_alloc(sb, ids[i], 1, ids[i] % 1000, 1);
    hl_sb_gc_start(sb, 1, 0, FALSE, 65537);
    for (uint64_t id = 65530; id < 65537; id++)
        hl_sb_fate(sb, 1, id, HL_FATE(HL_GEN_0, id == 65535 ? HL_GEN_1 : HL_GEN_NONE));
    hl_sb_gc_end(sb, 1, 0);
    hl_sb_gc_start(sb, 2, 1, FALSE, 131072);
    for (uint64_t id = 65537; id < 131072; id++)
        hl_sb_fate(sb, 2, id, HL_FATE(HL_GEN_0, HL_GEN_1));
    hl_sb_promotion(sb, 2, 65535, HL_GEN_2);
    hl_sb_gc_end(sb, 2, 0);
    hl_sb_run_end(sb, 2);
    CHECK(hl_sb_write_db(sb, p, NULL, NULL, &error));
    CHECK_NO_ERROR(error);
    hl_sb_free(sb);
    sqlite3 *db = db_open(p);
    CHECK_ROWS(db, "SELECT id, heap, first_gc, died_gc FROM objects ORDER BY id",
               "65535|0|1|NULL\n65537|0|2|NULL\n131071|0|2|NULL\n");
    CHECK_ROWS(db, "SELECT gc, sum(count), sum(survived) FROM alloc_counts GROUP BY gc ORDER BY gc",
               "1|3|1\n2|2|2\n3|2|0\n");
    CHECK_ROWS(db, SQL_GENERATIONS, "65535|1|1|2\n65535|2|2|NULL\n65537|1|2|NULL\n131071|1|2|NULL\n");
    sqlite3_close(db);
    tmp_dir_free(dir);
}

/* ---- snapshots and handles ---------------------------------------------------------------- */

/* The golden snapshot: rows in key order, a reference sent twice stored twice (nth 0 and 1),
 * identical roots kept, the views, and the query plans of the two directions of the graph. */
static void test_golden_snapshot(void)
{
    char *dir = tmp_dir_new();
    g_autofree char *path = golden_db(dir, FALSE, NULL);
    sqlite3 *db = db_open(path);

    CHECK_ROWS(db,
               "SELECT snapshot, gc, trigger, objects, refs, roots, handles, bytes, model_missing,"
               " model_extra, frozen, unresolved, walk_ns FROM snapshots",
               "1|3|induced|4|5|7|2|168|0|0|0|1|5000\n");
    /* references with their object, in field order (1 has fields to 9, 6, 9) */
    CHECK_ROWS(db, "SELECT * FROM snapshot_objects",
               "1|1|2|0|[9,6,9]|NULL\n1|6|4|0|NULL|NULL\n1|9|2|0|[10]|NULL\n1|10|1|0|[1]|NULL\n");
    CHECK_ROWS(db, "SELECT * FROM snapshot_refs ORDER BY snapshot, from_id, to_id, nth",
               "1|1|6|0\n1|1|9|0\n1|1|9|1\n1|9|10|0\n1|10|1|0\n");
    CHECK_ROWS(db, "SELECT snapshot, object_id, kind, flags, root_id FROM snapshot_roots"
                   " ORDER BY object_id, kind, flags",
               "1|NULL|other|0|NULL\n"
               "1|1|handle|0|40960\n"
               "1|6|finalizer|0|NULL\n"
               "1|6|stack|1|20818\n"
               "1|9|handle|2|45056\n"
               "1|10|stack|0|20817\n"
               "1|10|stack|0|20817\n");
    CHECK_ROWS(db, "SELECT * FROM snapshot_contents ORDER BY object_id",
               "1|3|1|System.String|32|2|0|0|100|Main\n"
               "1|3|6|System.Byte[]|64|4|0|0|101|NULL\n"
               "1|3|9|System.String|48|2|0|0|100|Main\n"
               "1|3|10|App.Node|24|1|0|0|100|Main\n");
    /* Handle roots with their lifetime rows: 0xB000's second lifetime (row 4) is the one alive. */
    CHECK_ROWS(db, "SELECT * FROM snapshot_handles ORDER BY handle_id",
               "1|3|40960|strong|1|0|1|1\n"
               "1|3|45056|weak|9|2|4|2\n");
    /* The issue's question: objects allocated by thread 100 alive in snapshot 1, and who
     * references them. */
    CHECK_ROWS(db,
               "SELECT DISTINCT c.object_id, c.type, r.from_id FROM snapshot_contents c"
               " LEFT JOIN snapshot_refs r ON r.snapshot = c.snapshot AND r.to_id = c.object_id"
               " WHERE c.snapshot = 1 AND c.thread = 100 ORDER BY c.object_id, r.from_id",
               "1|System.String|10\n9|System.String|1\n10|App.Node|9\n");
    /* Through the file's views (plain sqlite3) a filter on the snapshot reaches `snapshots`'
     * key, and only that snapshot's blocks are unpacked; there is no index by target: "who
     * references X" reads every object of the snapshot. */
    g_autofree char *out_plan =
        db_rows(db, "EXPLAIN QUERY PLAN SELECT to_id FROM snapshot_refs WHERE snapshot = 1 AND from_id = 9");
    CHECK(strstr(out_plan, "SEARCH s USING INTEGER PRIMARY KEY (rowid=?)") != NULL);
    g_autofree char *in_plan =
        db_rows(db, "EXPLAIN QUERY PLAN SELECT from_id FROM snapshot_refs WHERE snapshot = 1 AND to_id = 9");
    CHECK(strstr(in_plan, "SEARCH s USING INTEGER PRIMARY KEY (rowid=?)") != NULL);
    /* The documented form of "who references 9" (SCHEMA.md) */
    CHECK_ROWS(db, "SELECT so.object_id FROM snapshot_objects so WHERE so.snapshot = 1"
                   " AND EXISTS (SELECT 1 FROM json_each(so.refs) WHERE value = 9)",
               "1\n");
    g_autofree char *all_plan =
        db_rows(db, "EXPLAIN QUERY PLAN SELECT from_id, to_id FROM snapshot_refs WHERE snapshot = 1");
    CHECK(strstr(all_plan, "SEARCH s USING INTEGER PRIMARY KEY (rowid=?)") != NULL);
    /* heaplens' own connections: the same rows from the virtual table, one object by one block */
    {
        g_autoptr(GError) error = NULL;
        sqlite3 *hl = store_db_open_readonly(path, &error);
        CHECK_NO_ERROR(error);
        CHECK_ROWS(hl, "SELECT * FROM snapshot_objects",
                   "1|1|2|0|[9,6,9]|NULL\n1|6|4|0|NULL|NULL\n1|9|2|0|[10]|NULL\n1|10|1|0|[1]|NULL\n");
        CHECK_ROWS(hl, "SELECT object_id, refs FROM snapshot_objects WHERE snapshot = 1 AND object_id = 9",
                   "9|[10]\n");
        CHECK_ROWS(hl, "SELECT count(*) FROM snapshot_objects WHERE snapshot = 1 AND object_id = 8", "0\n");
        CHECK_ROWS(hl, "SELECT object_id FROM snapshot_objects WHERE snapshot = 1 AND object_id = 9.0",
                   "9\n");
        CHECK_ROWS(hl, "SELECT object_id FROM snapshot_objects WHERE snapshot = '1' AND object_id = '10'",
                   "10\n");
        CHECK_ROWS(hl, "SELECT count(*) FROM snapshot_objects WHERE snapshot = 1 AND object_id = 9.5", "0\n");
        /* idxNum: 1 the snapshot, 2 the object, 4 refs or fields read (else neither is decoded) */
        g_autofree char *hl_plan = db_rows(
            hl, "EXPLAIN QUERY PLAN SELECT refs FROM snapshot_objects WHERE snapshot = 1 AND object_id = 9");
        CHECK(strstr(hl_plan, "VIRTUAL TABLE INDEX 7") != NULL);
        g_autofree char *short_plan = db_rows(
            hl, "EXPLAIN QUERY PLAN SELECT object_id, generation FROM snapshot_objects WHERE snapshot = 1");
        CHECK(strstr(short_plan, "VIRTUAL TABLE INDEX 1") != NULL);
        CHECK_ROWS(hl, "SELECT object_id, generation, flags FROM snapshot_objects WHERE snapshot = 1",
                   "1|2|0\n6|4|0\n9|2|0\n10|1|0\n");
        CHECK_ROWS(hl, "SELECT object_id, generation FROM snapshot_objects WHERE snapshot = 1"
                       " AND object_id = 10", "10|1\n");
        /* a join scans the snapshot and looks the objects up (as schema 7's key made SQLite do),
         * never every object with a lookup of each in the snapshot */
        g_autofree char *join_plan = db_rows(
            hl, "EXPLAIN QUERY PLAN SELECT o.size FROM snapshot_objects so"
                " JOIN objects o ON o.id = so.object_id WHERE so.snapshot = 1");
        CHECK(strstr(join_plan, "SCAN so VIRTUAL TABLE INDEX 1") != NULL &&
              strstr(join_plan, "SEARCH o USING INTEGER PRIMARY KEY") != NULL);
        sqlite3_close(hl);
    }
    g_autofree char *roots_plan =
        db_rows(db, "EXPLAIN QUERY PLAN SELECT * FROM snapshot_roots WHERE snapshot = 1 AND object_id = 6");
    CHECK(strstr(roots_plan, "snapshot_roots_by_object") != NULL);
    sqlite3_close(db);
    tmp_dir_free(dir);
}

/* Handle lifetimes and the two handle views, with their GC boundaries. */
static void test_golden_handles(void)
{
    char *dir = tmp_dir_new();
    g_autofree char *path = golden_db(dir, FALSE, NULL);
    sqlite3 *db = db_open(path);
    CHECK_ROWS(db, SQL_HANDLES, golden_handle_stages[GOLDEN_HANDLE_STAGES - 1]);
    CHECK_ROWS(db, "SELECT * FROM strong_handles_never_freed ORDER BY handle",
               "1|40960|1|System.String|32|1\n"
               "5|53248|NULL|NULL|NULL|NULL\n");
    /* 0xB000's pinned lifetime: created after GC 1, destroyed after GC 2: alive after GC 2
     * only (alive after GC g: created_after_gc < g <= destroyed_after_gc). */
    CHECK_ROWS(db, "SELECT * FROM pinned_handles_per_gc ORDER BY gc, handle", "2|2|45056|6|1|2\n");
    sqlite3_close(db);

    /* The boundaries once more, on a pinned handle created before the first GC and never
     * destroyed, one created after GC 1 and destroyed after GC 1, one never seen created. */
    g_autoptr(GError) error = NULL;
    g_autofree char *p2 = g_build_filename(dir, "h.db", NULL);
    hl_sb *sb = hl_sb_new();
    hl_sb_type(sb, 1, "A");
    hl_sb_alloc(sb, 1, 1, 24, 7);
    hl_sb_handle_created(sb, 0x10, 1, 0);
    hl_sb_gc_start(sb, 1, 0, FALSE, 2);
    hl_sb_fate(sb, 1, 1, HL_FATE(HL_GEN_0, HL_GEN_1));
    hl_sb_handle_kind(sb, 1, 0x10, HL_HANDLE_PINNED);
    hl_sb_gc_end(sb, 1, 0);
    hl_sb_handle_created(sb, 0x20, 1, 1);
    hl_sb_handle_destroyed(sb, 0x20, 1);
    hl_sb_handle_destroyed(sb, 0x30, 1); /* never seen: nothing to close */
    for (uint32_t gc = 2; gc <= 3; gc++) {
        hl_sb_gc_start(sb, gc, 0, FALSE, 2);
        if (gc == 2)
            hl_sb_handle_kind(sb, 2, 0x40, HL_HANDLE_PINNED);
        hl_sb_gc_end(sb, gc, 0);
    }
    hl_sb_run_end(sb, 3);
    CHECK(hl_sb_write_db(sb, p2, NULL, NULL, &error));
    CHECK_NO_ERROR(error);
    hl_sb_free(sb);
    db = db_open(p2);
    CHECK_ROWS(db, SQL_HANDLES,
               "1|16|pinned|1|0|NULL\n2|32|unknown|1|1|1\n3|64|pinned|NULL|NULL|NULL\n");
    CHECK_ROWS(db, "SELECT gc, count(*) FROM pinned_handles_per_gc GROUP BY gc",
               "1|2\n2|2\n3|2\n");
    CHECK(db_int(db, "SELECT value FROM counters WHERE name = 'writer_anomalies'") == 0);
    sqlite3_close(db);
    tmp_dir_free(dir);
}

/* ---- compact snapshots (schema 8) ---------------------------------------------------------- */

/* One random heap object of the differential test. */
typedef struct blk_obj {
    uint64_t id;
    uint32_t gen, flags;
    uint32_t nr;
    uint64_t to[300];
    uint32_t field[300];
} blk_obj;

static void blk_obj_random(blk_obj *o, const uint64_t *ids, size_t n)
{
    uint64_t kind = rng() % 100;
    o->gen = (uint32_t)(rng() % 7); /* 6: none the schema knows (NULL) */
    o->flags = kind < 5 ? HL_SNAP_OBJ_DISCOVERED : kind < 8 ? 6 : 0;
    o->nr = kind < 1 ? 257 + (uint32_t)(rng() % 40) : (uint32_t)(rng() % 5);
    uint32_t fields = (uint32_t)(rng() % 4); /* 0: none known, 1: some, else all */
    for (uint32_t i = 0; i < o->nr; i++) {
        o->to[i] = rng() % 10 == 0 ? o->id : ids[rng() % n];
        o->field[i] = fields == 0 || (fields == 1 && rng() % 2) ? HL_FIELD_UNKNOWN
                                                                : (uint32_t)(rng() % 1000);
    }
}

static void blk_snapshot(hl_sb *sb, uint32_t snapshot, const blk_obj *objs, size_t n)
{
    hl_sb_gc_start(sb, snapshot, 2, TRUE, 1);
    hl_sb_snapshot_start(sb, snapshot, snapshot, HL_SNAPSHOT_INDUCED);
    for (size_t i = 0; i < n; i++) {
        hl_sb_snapshot_object(sb, snapshot, objs[i].id, objs[i].gen, objs[i].flags);
        if (i % 97 == 0) /* listed twice: one object with the flags of both */
            hl_sb_snapshot_object(sb, snapshot, objs[i].id, objs[i].gen, HL_SNAP_OBJ_FROZEN);
    }
    for (size_t i = n; i-- > 0;) /* references of objects out of id order */
        for (uint32_t r = 0; r < objs[i].nr; r++) {
            hl_sb_snapshot_ref(sb, snapshot, objs[i].id, objs[i].to[r]);
            hl_sb_snapshot_ref_field(sb, snapshot, objs[i].field[r]);
        }
    hl_sb_snapshot_root(sb, snapshot, objs[0].id, HL_ROOT_HANDLE, 0, 0x7f00);
    hl_sb_snapshot_end(sb, snapshot, snapshot);
    hl_sb_gc_end(sb, snapshot, 0);
}

/* Every row of `sql` on both connections is the same. */
static void blk_same(sqlite3 *a, sqlite3 *b, const char *sql)
{
    g_autofree char *x = db_rows(a, sql);
    g_autofree char *y = db_rows(b, sql);
    if (strcmp(x, y) != 0)
        fprintf(stderr, "differ: %s\n", sql);
    CHECK(strcmp(x, y) == 0);
    CHECK(strlen(x) > 0 || strstr(sql, "count") == NULL);
}

/* The differential test of the compact form: random heaps in four snapshots (the second the
 * same as the first, the third changed a little, the fourth the same as the third), written with
 * HEAPLENS_SNAPSHOT_ROWS=1 so that schema 7's rows are there too. The file's view (plain
 * SQLite), heaplens' virtual table and the views over each answer exactly as schema 7's rows do,
 * and an unchanged snapshot adds no block. */
static void test_snapshot_blocks(void)
{
    char *dir = tmp_dir_new();
    g_autoptr(GError) error = NULL;
    g_autofree char *path = g_build_filename(dir, "blocks.db", NULL);
    enum { N = 1200 };
    test_rng_seed(20261127);
    uint64_t *ids = g_new(uint64_t, N);
    blk_obj *objs = g_new0(blk_obj, N);
    uint64_t id = 1;
    for (size_t i = 0; i < N; i++) {
        id += i == N - 100 ? HL_DISCOVERED_ID_BASE : 1 + (rng() % 8 == 0 ? rng() % 5000 : 0);
        ids[i] = objs[i].id = id;
    }
    for (size_t i = 0; i < N; i++)
        blk_obj_random(&objs[i], ids, N);

    hl_sb *sb = hl_sb_new();
    hl_sb_run_start(sb, 4242, "dotnet App.dll");
    hl_sb_type(sb, T_NODE, "App.Node");
    hl_sb_field(sb, T_NODE, 3, "_next");
    blk_snapshot(sb, 1, objs, N);
    blk_snapshot(sb, 2, objs, N);
    for (size_t i = 0; i < N; i += 50) /* a few change */
        blk_obj_random(&objs[i], ids, N);
    objs[N / 2].gen = (objs[N / 2].gen + 1) % 6;
    blk_snapshot(sb, 3, objs, N - 7); /* the last few die */
    blk_snapshot(sb, 4, objs, N - 7);
    hl_sb_run_end(sb, 4);
    g_setenv("HEAPLENS_SNAPSHOT_ROWS", "1", TRUE);
    CHECK(hl_sb_write_db(sb, path, "cmd", NULL, &error));
    g_unsetenv("HEAPLENS_SNAPSHOT_ROWS");
    CHECK_NO_ERROR(error);
    hl_sb_free(sb);

    sqlite3 *plain = db_open(path);
    sqlite3 *hl = store_db_open_readonly(path, &error);
    CHECK_NO_ERROR(error);
    sqlite3 *rows = db_open(path);
    /* schema 7: snapshot_objects the rows, and the views over them, on a connection of their own */
    g_auto(GStrv) parts = g_strsplit(store_schema_snapshot_views, "CREATE VIEW ", -1);
    g_autofree char *views = g_strjoinv("CREATE TEMP VIEW ", parts);
    CHECK(sqlite3_exec(rows, "CREATE TEMP VIEW snapshot_objects AS SELECT * FROM snapshot_object_rows",
                       NULL, NULL, NULL) == SQLITE_OK);
    CHECK(sqlite3_exec(rows, views, NULL, NULL, NULL) == SQLITE_OK);
    CHECK(db_int(rows, "SELECT count(*) FROM snapshot_objects") == 2 * N + 2 * (N - 7));

    const char *const same[] = {
        "SELECT * FROM snapshot_objects ORDER BY snapshot, object_id",
        "SELECT * FROM snapshot_objects WHERE snapshot = 3 ORDER BY object_id",
        "SELECT count(*), sum(length(refs)), sum(length(fields)) FROM snapshot_objects",
        "SELECT * FROM snapshot_refs ORDER BY snapshot, from_id, to_id, nth",
        "SELECT * FROM snapshot_refs WHERE snapshot = 2 AND from_id = 5",
        "SELECT * FROM snapshot_ref_fields ORDER BY snapshot, from_id, to_id, nth",
        "SELECT * FROM snapshot_contents ORDER BY snapshot, object_id",
        "SELECT * FROM snapshot_handles ORDER BY snapshot, handle_id",
    };
    for (size_t i = 0; i < G_N_ELEMENTS(same); i++) {
        blk_same(plain, rows, same[i]);
        blk_same(hl, rows, same[i]);
    }
    /* the virtual table's own order, and its point lookups (present, absent, another snapshot) */
    blk_same(hl, rows, "SELECT * FROM snapshot_objects");
    GArray *to = g_array_new(FALSE, FALSE, sizeof(uint64_t));
    GArray *field = g_array_new(FALSE, FALSE, sizeof(int64_t));
    for (size_t i = 0; i < N; i += 37) {
        for (int snap = 1; snap <= 4; snap++) {
            g_autofree char *q = g_strdup_printf(
                "SELECT * FROM snapshot_objects WHERE snapshot = %d AND object_id = %" PRIu64, snap,
                ids[i] + (i % 2));
            blk_same(hl, rows, q);
            gboolean found = FALSE, known = FALSE;
            CHECK(store_snapshot_object_get(hl, snap, ids[i], &found, to, field, &known, &error));
            CHECK_NO_ERROR(error);
            CHECK(found == (snap < 3 || i < N - 7));
        }
    }
    g_array_unref(to);
    g_array_unref(field);
    /* each block once: the unchanged snapshots 2 and 4 added none, 3 a few */
    CHECK(db_int(plain, "SELECT count(*) FROM snapshot_blocks WHERE first_snapshot IN (2, 4)") == 0);
    int64_t all = db_int(plain, "SELECT count(*) FROM snapshot_blocks WHERE first_snapshot = 1");
    int64_t third = db_int(plain, "SELECT count(*) FROM snapshot_blocks WHERE first_snapshot = 3");
    CHECK(all > 20 && third > 0 && third < all);
    CHECK(db_int(plain, "SELECT max(objects) FROM snapshot_blocks") <= STORE_SNAPBLOCK_MAX);
    sqlite3_close(plain);
    sqlite3_close(hl);
    sqlite3_close(rows);
    g_free(ids);
    g_free(objs);
    tmp_dir_free(dir);
}

/* References with the fields that hold them (schema 7): a field number per reference of an object
 * (named in `fields`), an element index per reference of an array, null where unknown; carried
 * through the sort by `from`. A snapshot whose REF_FIELDS do not add up keeps its references
 * without fields (an anomaly); one without REF_FIELDS (an older collector) has none. A slot that
 * is a static field is named in snapshot_statics, with its thread when it is a thread's slot of
 * a thread static (statics.thread, schema 8); stack roots' methods are named (root_methods), and
 * the collections' counts stored (snapshot_collections); a stack root's thread sets the thread of
 * its object's stack rows (snapshot_roots.thread), not of its other roots. */
static void test_snapshot_fields(void)
{
    char *dir = tmp_dir_new();
    g_autoptr(GError) error = NULL;
    g_autofree char *p = g_build_filename(dir, "f.db", NULL);
    hl_sb *sb = hl_sb_new();
    hl_sb_type(sb, 1, "App.Registry");
    hl_type arr = {.type_id = 2, .flags = HL_TYPE_FLAG_ARRAY};
    hl_sb_type_full(sb, &arr, "App.Session[]");
    hl_sb_type(sb, 3, "App.Session");
    hl_sb_field(sb, 1, 1, "_name");
    hl_sb_field(sb, 1, 2, "_sessions");
    hl_sb_type(sb, 4, "App.Program");
    hl_sb_static(sb, 1, 4, "s_registry");
    hl_sb_static(sb, 2, 4, "t_current");
    hl_sb_static_thread(sb, 2, 4242);
    hl_sb_root_method(sb, 0x7f00aa, "App.Program.Main");
    hl_sb_alloc(sb, 1, 3, 24, 7);
    hl_sb_alloc(sb, 2, 3, 24, 7);
    hl_sb_alloc(sb, 3, 2, 48, 7);
    hl_sb_alloc(sb, 4, 1, 32, 7);
    hl_sb_gc_start(sb, 1, 2, TRUE, 5);
    for (uint64_t id = 1; id <= 4; id++)
        hl_sb_fate(sb, 1, id, HL_FATE(HL_GEN_0, HL_GEN_1));
    hl_sb_snapshot_start(sb, 1, 1, HL_SNAPSHOT_INDUCED);
    for (uint64_t id = 4; id >= 1; id--) /* out of id order: the sort carries the fields */
        hl_sb_snapshot_object(sb, 1, id, HL_GEN_1, 0);
    hl_sb_snapshot_ref(sb, 1, 4, 3); /* Registry._sessions -> the array */
    hl_sb_snapshot_ref(sb, 1, 3, 2); /* array[1] -> session 2 */
    hl_sb_snapshot_ref(sb, 1, 3, 1); /* array[7] -> session 1 */
    hl_sb_snapshot_ref(sb, 1, 2, 1); /* a field the collector could not name */
    hl_sb_snapshot_ref_field(sb, 1, 2);
    hl_sb_snapshot_ref_field(sb, 1, 1);
    hl_sb_snapshot_ref_field(sb, 1, 7);
    hl_sb_snapshot_ref_field(sb, 1, HL_FIELD_UNKNOWN);
    hl_sb_snapshot_static(sb, 1, 3, 7, 1); /* as if the array held the statics */
    hl_sb_snapshot_string(sb, 1, 1, "session-one", 11);
    hl_sb_snapshot_string(sb, 1, 2, "secret", 0); /* --no-strings: no characters kept */
    hl_sb_snapshot_collection(sb, 1, 4, 10, 1000);
    hl_sb_snapshot_root(sb, 1, 1, HL_ROOT_STACK, 0, 0x7f00aa);
    hl_sb_snapshot_root(sb, 1, 1, HL_ROOT_STACK, 0, 0x7f00aa);
    hl_sb_snapshot_root(sb, 1, 1, HL_ROOT_HANDLE, 0, 0x7f00);
    hl_sb_snapshot_root(sb, 1, 2, HL_ROOT_STACK, 0, 0x7f00aa);
    hl_sb_snapshot_root_thread(sb, 1, 1, 4242);
    hl_sb_snapshot_end(sb, 1, 1);
    hl_sb_gc_end(sb, 1, 0);
    /* GC 2: one field for two references: the references stay, without fields */
    hl_sb_gc_start(sb, 2, 2, TRUE, 5);
    hl_sb_snapshot_start(sb, 2, 2, HL_SNAPSHOT_INDUCED);
    hl_sb_snapshot_object(sb, 2, 3, HL_GEN_2, 0);
    hl_sb_snapshot_object(sb, 2, 4, HL_GEN_2, 0);
    hl_sb_snapshot_ref(sb, 2, 4, 3);
    hl_sb_snapshot_ref(sb, 2, 3, 4);
    hl_sb_snapshot_ref_field(sb, 2, 2);
    hl_sb_snapshot_end(sb, 2, 2);
    hl_sb_gc_end(sb, 2, 0);
    /* GC 3: no REF_FIELDS at all */
    hl_sb_gc_start(sb, 3, 2, TRUE, 5);
    hl_sb_snapshot_start(sb, 3, 3, HL_SNAPSHOT_INDUCED);
    hl_sb_snapshot_object(sb, 3, 4, HL_GEN_2, 0);
    hl_sb_snapshot_object(sb, 3, 3, HL_GEN_2, 0);
    hl_sb_snapshot_ref(sb, 3, 4, 3);
    hl_sb_snapshot_end(sb, 3, 3);
    hl_sb_gc_end(sb, 3, 0);
    hl_sb_run_end(sb, 3);
    CHECK(hl_sb_write_db(sb, p, NULL, NULL, &error));
    CHECK_NO_ERROR(error);
    hl_sb_free(sb);

    sqlite3 *db = db_open(p);
    CHECK_ROWS(db, "SELECT * FROM fields ORDER BY type_id, field", "1|1|_name\n1|2|_sessions\n");
    CHECK_ROWS(db, "SELECT snapshot, object_id, refs, fields FROM snapshot_objects",
               "1|1|NULL|NULL\n1|2|[1]|NULL\n1|3|[2,1]|[1,7]\n1|4|[3]|[2]\n"
               "2|3|[4]|NULL\n2|4|[3]|NULL\n"
               "3|3|NULL|NULL\n3|4|[3]|NULL\n");
    CHECK_ROWS(db, "SELECT * FROM snapshot_refs WHERE snapshot = 1 ORDER BY from_id, to_id",
               "1|2|1|0\n1|3|1|0\n1|3|2|0\n1|4|3|0\n");
    CHECK_ROWS(db, "SELECT * FROM snapshot_ref_fields WHERE snapshot = 1 ORDER BY from_id, to_id",
               "1|2|1|0|NULL|NULL\n1|3|1|0|7|[7]\n1|3|2|0|1|[1]\n1|4|3|0|2|_sessions\n");
    CHECK_ROWS(db, "SELECT * FROM statics", "1|4|s_registry|NULL\n2|4|t_current|4242\n");
    CHECK_ROWS(db, "SELECT function_id, name FROM root_methods", "8323242|App.Program.Main\n");
    CHECK_ROWS(db, "SELECT * FROM snapshot_collections", "1|4|10|1000\n");
    CHECK_ROWS(db, "SELECT object_id, kind, thread FROM snapshot_roots ORDER BY 1, 2",
               "1|handle|NULL\n1|stack|4242\n1|stack|4242\n2|stack|NULL\n");
    CHECK_ROWS(db, "SELECT * FROM snapshot_statics", "1|3|7|1\n");
    CHECK_ROWS(db, "SELECT object_id, length, quote(value) FROM snapshot_strings",
               "1|11|'session-one'\n2|6|NULL\n");
    CHECK_ROWS(db, "SELECT value FROM counters WHERE name = 'writer_anomalies'", "1\n");
    sqlite3_close(db);
    tmp_dir_free(dir);
}

/* Snapshots that must not be stored, and records that break the collector's promises. */
static void test_snapshot_incomplete(void)
{
    char *dir = tmp_dir_new();
    g_autoptr(GError) error = NULL;
    g_autofree char *p = g_build_filename(dir, "s.db", NULL);
    hl_sb *sb = hl_sb_new();
    hl_sb_type(sb, 1, "A");
    hl_sb_alloc(sb, 1, 1, 24, 7);
    hl_sb_alloc(sb, 2, 1, 24, 7);

    /* GC 1: snapshot 1 never ends (discarded); the GC is stored. */
    hl_sb_gc_start(sb, 1, 2, TRUE, 3);
    hl_sb_fate(sb, 1, 1, HL_FATE(HL_GEN_0, HL_GEN_1));
    hl_sb_fate(sb, 1, 2, HL_FATE(HL_GEN_0, HL_GEN_1));
    hl_sb_snapshot_start(sb, 1, 1, HL_SNAPSHOT_INDUCED);
    hl_sb_snapshot_object(sb, 1, 1, HL_GEN_1, 0);
    hl_sb_gc_end(sb, 1, 0);
    hl_sb_snapshot_object(sb, 1, 2, HL_GEN_1, 0); /* no snapshot open: anomaly */

    /* GC 2: snapshot 2 is cut short by snapshot 3 (discarded), which is stored. */
    hl_sb_gc_start(sb, 2, 2, TRUE, 3);
    hl_sb_snapshot_start(sb, 2, 2, HL_SNAPSHOT_INDUCED);
    hl_sb_snapshot_object(sb, 2, 1, HL_GEN_2, 0);
    hl_sb_snapshot_start(sb, 3, 2, HL_SNAPSHOT_GEN2);
    hl_sb_snapshot_object(sb, 3, 1, HL_GEN_2, 0);
    hl_sb_snapshot_object(sb, 3, 2, HL_GEN_2, 0);
    hl_sb_snapshot_ref(sb, 2, 1, 2); /* for snapshot 2, no longer open: anomaly */
    hl_sb_snapshot_ref(sb, 3, 2, 1);
    hl_sb_snapshot_end(sb, 3, 2);
    hl_sb_gc_end(sb, 2, 0);

    /* GC 3: snapshot 4 announces more objects than arrived (a record was dropped): discarded.
     * A snapshot number already stored and a snapshot of another GC: anomalies. */
    hl_sb_gc_start(sb, 3, 2, TRUE, 3);
    hl_sb_snapshot_start(sb, 3, 3, HL_SNAPSHOT_INDUCED);
    hl_sb_snapshot_start(sb, 9, 7, HL_SNAPSHOT_INDUCED);
    hl_sb_snapshot_start(sb, 4, 3, HL_SNAPSHOT_INDUCED);
    hl_sb_snapshot_object(sb, 4, 1, HL_GEN_2, 0);
    hl_snapshot_end e4 = {.snapshot = 4, .gc = 3, .objects = 2};
    hl_sb_snapshot_end_full(sb, &e4);
    hl_snapshot_end e5 = {.snapshot = 5, .gc = 3};
    hl_sb_snapshot_end_full(sb, &e5); /* no such snapshot open: anomaly */
    hl_sb_gc_end(sb, 3, 0);

    /* GC 4: snapshot 5 is complete but its GC never ends: both discarded. */
    hl_sb_gc_start(sb, 4, 2, TRUE, 3);
    hl_sb_snapshot_start(sb, 5, 4, HL_SNAPSHOT_INDUCED);
    hl_sb_snapshot_object(sb, 5, 1, HL_GEN_2, 0);
    hl_sb_snapshot_end(sb, 5, 4);
    /* GC 5: snapshot 6, stored. */
    hl_sb_gc_start(sb, 5, 2, TRUE, 3);
    hl_sb_snapshot_start(sb, 6, 5, HL_SNAPSHOT_REQUESTED);
    hl_sb_snapshot_end(sb, 6, 5); /* an empty heap is a snapshot too */
    hl_sb_gc_end(sb, 5, 0);
    hl_sb_run_end(sb, 5);
    store_summary sum;
    CHECK(hl_sb_write_db(sb, p, NULL, &sum, &error));
    CHECK_NO_ERROR(error);
    hl_sb_free(sb);
    CHECK(sum.snapshots == 2 && sum.gcs == 4);

    sqlite3 *db = db_open(p);
    CHECK_ROWS(db, "SELECT snapshot, gc, trigger, objects, refs, roots, handles FROM snapshots",
               "3|2|gen2|2|1|0|0\n6|5|requested|0|0|0|0\n");
    CHECK_ROWS(db, "SELECT * FROM snapshot_objects", "3|1|2|0|NULL|NULL\n3|2|2|0|[1]|NULL\n");
    CHECK_ROWS(db, "SELECT * FROM snapshot_refs ORDER BY from_id", "3|2|1|0\n");
    CHECK_ROWS(db, "SELECT name, value FROM counters WHERE name IN ('snapshots_discarded',"
                   " 'writer_anomalies', 'gcs_discarded_incomplete') ORDER BY name",
               "gcs_discarded_incomplete|1\nsnapshots_discarded|4\n"
               "writer_anomalies|6\n"); /* 5 marked above, and the gap GC 3 -> GC 5 */
    sqlite3_close(db);
    tmp_dir_free(dir);
}

/* Frozen and discovered objects in a snapshot, an object listed twice; a generation the
 * collector could not tell. */
static void test_snapshot_flags(void)
{
    char *dir = tmp_dir_new();
    g_autoptr(GError) error = NULL;
    g_autofree char *p = g_build_filename(dir, "f.db", NULL);
    const uint64_t d = HL_DISCOVERED_ID_BASE + 1;
    hl_sb *sb = hl_sb_new();
    hl_sb_type(sb, 1, "System.String");
    hl_sb_type(sb, 2, "System.RuntimeType");
    hl_sb_alloc(sb, 1, 1, 30, 7);
    hl_sb_alloc(sb, 2, 2, 40, 7);
    hl_sb_alloc(sb, 3, 1, 20, 7);
    hl_sb_gc_start(sb, 1, 2, TRUE, 4);
    hl_sb_fate(sb, 1, 1, HL_FATE(HL_GEN_0, HL_GEN_1));
    hl_sb_fate(sb, 1, 2, HL_FATE(HL_GEN_NONGC, HL_GEN_NONGC));
    hl_sb_fate(sb, 1, 3, HL_FATE(HL_GEN_NONGC, HL_GEN_NONGC));
    hl_sb_discovered(sb, 1, d, 1, 50, HL_GEN_2);
    hl_sb_snapshot_start(sb, 1, 1, HL_SNAPSHOT_EVERY);
    hl_sb_snapshot_object(sb, 1, 1, HL_GEN_NONE, 0);
    hl_sb_snapshot_object(sb, 1, d, HL_GEN_2, HL_SNAP_OBJ_DISCOVERED);
    /* The walk reports NonGC objects too; the collector lists a referenced one once more,
     * flagged frozen: one row, flagged. One the walk alone reports is flagged all the same. */
    hl_sb_snapshot_object(sb, 1, 2, HL_GEN_NONGC, 0);
    hl_sb_snapshot_object(sb, 1, 3, HL_GEN_NONGC, 0);
    hl_sb_snapshot_object(sb, 1, 2, HL_GEN_NONGC, HL_SNAP_OBJ_FROZEN);
    hl_sb_snapshot_ref(sb, 1, d, 2);
    hl_sb_snapshot_ref(sb, 1, 1, d);
    hl_sb_snapshot_root(sb, 1, 1, 9, 0, 0); /* no such root kind: stored as other, anomaly */
    hl_snapshot_end e = {.snapshot = 1, .gc = 1, .objects = 5, .refs = 2, .roots = 1,
                         .bytes = 80, .model_missing = 2, .model_extra = 1, .frozen = 1};
    hl_sb_snapshot_end_full(sb, &e);
    hl_sb_gc_end(sb, 1, 0);
    hl_sb_run_end(sb, 1);
    CHECK(hl_sb_write_db(sb, p, NULL, NULL, &error));
    CHECK_NO_ERROR(error);
    hl_sb_free(sb);
    sqlite3 *db = db_open(p);
    CHECK_ROWS(db, "SELECT objects, refs, roots, bytes, model_missing, model_extra, frozen FROM snapshots",
               "4|2|1|80|2|1|2\n");
    CHECK_ROWS(db, "SELECT object_id, type, size, generation, frozen, discovered, thread FROM snapshot_contents",
               "1|System.String|30|NULL|0|0|7\n"
               "2|System.RuntimeType|40|5|1|0|7\n"
               "3|System.String|20|5|1|0|7\n"
               "281474976710657|System.String|50|2|0|1|NULL\n");
    CHECK_ROWS(db, "SELECT kind FROM snapshot_roots", "other\n");
    CHECK(db_int(db, "SELECT value FROM counters WHERE name = 'writer_anomalies'") == 1);
    sqlite3_close(db);
    tmp_dir_free(dir);
}

/* Handle records inside a GC that is rolled back survive it, and the handle map follows the
 * database; a lost HANDLE_DESTROYED closes the old lifetime at the address's reuse. */
static void test_handles_rollback(void)
{
    char *dir = tmp_dir_new();
    g_autoptr(GError) error = NULL;
    g_autofree char *p = g_build_filename(dir, "r.db", NULL);
    hl_sb *sb = hl_sb_new();
    hl_sb_type(sb, 1, "A");
    hl_sb_alloc(sb, 1, 1, 24, 7);
    hl_sb_handle_created(sb, 0x10, 1, 0);
    hl_sb_gc_start(sb, 1, 0, FALSE, 2);
    hl_sb_fate(sb, 1, 1, HL_FATE(HL_GEN_0, HL_GEN_1));
    hl_sb_gc_end(sb, 1, 0);
    /* GC 2 never ends; inside it: a kind, a destroy and a create (against the promise). */
    hl_sb_gc_start(sb, 2, 0, FALSE, 2);
    hl_sb_handle_kind(sb, 2, 0x10, HL_HANDLE_STRONG);
    hl_sb_handle_destroyed(sb, 0x10, 1);
    hl_sb_handle_created(sb, 0x20, 1, 1);
    hl_sb_gc_start(sb, 3, 0, FALSE, 2);
    hl_sb_gc_end(sb, 3, 0);
    hl_sb_handle_destroyed(sb, 0x20, 3);
    hl_sb_handle_created(sb, 0x30, 1, 3);
    hl_sb_handle_created(sb, 0x30, 1, 3); /* the destroy of the first was lost */
    hl_sb_run_end(sb, 3);
    CHECK(hl_sb_write_db(sb, p, NULL, NULL, &error));
    CHECK_NO_ERROR(error);
    hl_sb_free(sb);
    sqlite3 *db = db_open(p);
    CHECK_ROWS(db, SQL_HANDLES,
               "1|16|strong|1|0|1\n2|32|unknown|1|1|3\n3|48|unknown|1|3|3\n4|48|unknown|1|3|NULL\n");
    CHECK_ROWS(db, "SELECT name, value FROM counters WHERE name IN ('gcs_discarded_incomplete',"
                   " 'writer_anomalies', 'handles_closed_by_reuse') ORDER BY name",
               /* the gap 1 -> 3; the lost destroy is a closing by reuse */
               "gcs_discarded_incomplete|1\nhandles_closed_by_reuse|1\nwriter_anomalies|1\n");
    sqlite3_close(db);
    tmp_dir_free(dir);
}

/* CHECKPOINT records become rows of checkpoints in the order sent, with their GC count, time
 * and thread; one sent inside a GC that never ends is kept (replayed after the rollback). */
static void test_checkpoints(void)
{
    char *dir = tmp_dir_new();
    g_autoptr(GError) error = NULL;
    g_autofree char *p = g_build_filename(dir, "c.db", NULL);
    hl_sb *sb = hl_sb_new();
    hl_sb_type(sb, 1, "A");
    hl_sb_checkpoint(sb, "start", 0, 7, 100);
    hl_sb_alloc(sb, 1, 1, 24, 7);
    hl_sb_gc_start(sb, 1, 0, FALSE, 2);
    hl_sb_checkpoint(sb, "in GC 1", 0, 8, 150);
    hl_sb_fate(sb, 1, 1, HL_FATE(HL_GEN_0, HL_GEN_1));
    hl_sb_gc_end(sb, 1, 0);
    hl_sb_checkpoint(sb, "caf\xC3\xA9", 1, 7, 200);
    hl_sb_gc_start(sb, 2, 0, FALSE, 2); /* never ends */
    hl_sb_checkpoint(sb, "lost GC", 1, 7, 300);
    hl_sb_gc_start(sb, 3, 0, FALSE, 2);
    hl_sb_gc_end(sb, 3, 0);
    hl_sb_checkpoint(sb, "end", 3, 9, 400);
    hl_sb_run_end(sb, 3);
    CHECK(hl_sb_write_db(sb, p, NULL, NULL, &error));
    CHECK_NO_ERROR(error);
    hl_sb_free(sb);
    sqlite3 *db = db_open(p);
    CHECK_ROWS(db, "SELECT id, name, gc, time_ns, thread FROM checkpoints ORDER BY id",
               "1|start|0|100|7\n2|in GC 1|0|150|8\n3|caf\xC3\xA9|1|200|7\n4|lost GC|1|300|7\n"
               "5|end|3|400|9\n");
    sqlite3_close(db);
    tmp_dir_free(dir);
}

/* One SNAPSHOT_REASON record: head (snapshot, count 0), then the reason as an hl_str. */
static void reason_record(hl_sb *sb, uint32_t snapshot, const char *text)
{
    GByteArray *b = g_byte_array_new();
    hl_snapshot_batch head = {.snapshot = snapshot};
    uint32_t len = (uint32_t)strlen(text);
    g_byte_array_append(b, (const guint8 *)&head, sizeof head);
    g_byte_array_append(b, (const guint8 *)&len, sizeof len);
    g_byte_array_append(b, (const guint8 *)text, len);
    hl_sb_record(sb, HL_REC_SNAPSHOT_REASON, b->data, b->len);
    g_byte_array_unref(b);
}

/* Snapshot triggers: the trigger's name and the SNAPSHOT_REASON inside its snapshot in the row
 * (schema 8); a snapshot of another policy has none; a reason outside its snapshot is an
 * anomaly, stored nowhere. */
static void test_snapshot_reasons(void)
{
    char *dir = tmp_dir_new();
    g_autoptr(GError) error = NULL;
    g_autofree char *p = g_build_filename(dir, "r.db", NULL);
    hl_sb *sb = hl_sb_new();
    hl_sb_type(sb, 1, "A");
    hl_sb_alloc(sb, 1, 1, 24, 7);
    hl_sb_gc_start(sb, 1, 2, FALSE, 2);
    hl_sb_fate(sb, 1, 1, HL_FATE(HL_GEN_0, HL_GEN_1));
    hl_sb_snapshot_start(sb, 1, 1, HL_SNAPSHOT_GEN2_GROWTH);
    reason_record(sb, 1, "gen2 41.2 MiB after GC 1, +63% since snapshot 2");
    hl_sb_snapshot_object(sb, 1, 1, HL_GEN_1, 0);
    hl_sb_snapshot_end(sb, 1, 1);
    hl_sb_gc_end(sb, 1, 0);
    reason_record(sb, 1, "outside its snapshot");
    hl_sb_gc_start(sb, 2, 2, TRUE, 2);
    hl_sb_snapshot_start(sb, 2, 2, HL_SNAPSHOT_INDUCED);
    hl_sb_snapshot_object(sb, 2, 1, HL_GEN_2, 0);
    hl_sb_snapshot_end(sb, 2, 2);
    hl_sb_gc_end(sb, 2, 0);
    hl_sb_gc_start(sb, 3, 0, FALSE, 2);
    hl_sb_snapshot_start(sb, 3, 3, HL_SNAPSHOT_TIME);
    reason_record(sb, 3, "every 30 s: 30.0 s since the last, snapshot 2");
    hl_sb_snapshot_object(sb, 3, 1, HL_GEN_2, 0);
    hl_sb_snapshot_end(sb, 3, 3);
    hl_sb_gc_end(sb, 3, 0);
    hl_sb_run_end(sb, 3);
    CHECK(hl_sb_write_db(sb, p, NULL, NULL, &error));
    CHECK_NO_ERROR(error);
    hl_sb_free(sb);
    sqlite3 *db = db_open(p);
    CHECK_ROWS(db, "SELECT snapshot, trigger, coalesce(reason, '-') FROM snapshots ORDER BY 1",
               "1|gen2-growth|gen2 41.2 MiB after GC 1, +63% since snapshot 2\n"
               "2|induced|-\n"
               "3|time|every 30 s: 30.0 s since the last, snapshot 2\n");
    CHECK_ROWS(db, "SELECT value FROM counters WHERE name = 'writer_anomalies'", "1\n");
    sqlite3_close(db);
    tmp_dir_free(dir);
}

/* GC_HANDLES_FREED inside GC g closes the handle's lifetime at g - 1 (GC g-1 was its last); a
 * later HANDLE_CREATED at the address opens a new lifetime without counting anything. Outside
 * its GC the record is an anomaly; in a GC that never ends it is rolled back with it. */
static void test_handles_freed_in_gc(void)
{
    char *dir = tmp_dir_new();
    g_autoptr(GError) error = NULL;
    g_autofree char *p = g_build_filename(dir, "f.db", NULL);
    hl_sb *sb = hl_sb_new();
    hl_sb_type(sb, 1, "A");
    hl_sb_alloc(sb, 1, 1, 24, 7);
    hl_sb_handle_created(sb, 0x10, 1, 0);
    hl_sb_handle_created(sb, 0x20, 1, 0);
    hl_sb_gc_start(sb, 1, 0, FALSE, 2);
    hl_sb_fate(sb, 1, 1, HL_FATE(HL_GEN_0, HL_GEN_1));
    hl_sb_handle_kind(sb, 1, 0x10, HL_HANDLE_WEAK);
    hl_sb_gc_end(sb, 1, 0);
    hl_sb_gc_start(sb, 2, 0, FALSE, 2);
    hl_sb_handle_freed(sb, 2, 0x10);
    hl_sb_gc_end(sb, 2, 0);
    hl_sb_handle_created(sb, 0x10, 1, 2); /* the address reused: no anomaly, no reuse count */
    hl_sb_gc_start(sb, 3, 0, FALSE, 2);
    hl_sb_handle_freed(sb, 2, 0x20); /* not the open GC: an anomaly, nothing closed */
    hl_sb_gc_end(sb, 3, 0);
    hl_sb_gc_start(sb, 4, 0, FALSE, 2);
    hl_sb_handle_freed(sb, 4, 0x20); /* GC 4 never ends: rolled back */
    hl_sb_run_end(sb, 4);
    CHECK(hl_sb_write_db(sb, p, NULL, NULL, &error));
    CHECK_NO_ERROR(error);
    hl_sb_free(sb);
    sqlite3 *db = db_open(p);
    CHECK_ROWS(db, SQL_HANDLES,
               "1|16|weak|1|0|1\n2|32|unknown|1|0|NULL\n3|16|unknown|1|2|NULL\n");
    CHECK_ROWS(db, "SELECT name, value FROM counters WHERE name IN ('writer_anomalies',"
                   " 'handles_closed_by_reuse') ORDER BY name",
               "handles_closed_by_reuse|0\nwriter_anomalies|1\n");
    sqlite3_close(db);
    tmp_dir_free(dir);
}

/* ---- serving ------------------------------------------------------------------------------ */

static int listen_unix(const char *path)
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

static int connect_unix(const char *path)
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

static void write_all(int fd, const void *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        g_assert(w > 0);
        p = (const uint8_t *)p + w;
        n -= (size_t)w;
    }
}

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

static void test_serve_socket(void)
{
    char *dir = tmp_dir_new();
    g_autoptr(GError) error = NULL;
    g_autofree char *sock = g_build_filename(dir, "s", NULL);
    g_autofree char *path = g_build_filename(dir, "served.db", NULL);
    hl_sb *sb = golden_build(NULL, FALSE);
    size_t len;
    const uint8_t *bytes = hl_sb_bytes(sb, &len);
    int lfd = listen_unix(sock);
    int stop[2];
    g_assert(pipe2(stop, O_CLOEXEC) == 0);

    collector_args a = {.sock = sock, .bytes = bytes, .len = len, .stop_wr = stop[1],
                        .status = "exit 3\n", .delay_ms = 50};
    GThread *t = g_thread_new("collector", collector_thread, &a);
    store_writer *w = store_writer_create(path, "dotnet App.dll", &error);
    CHECK(w != NULL);
    CHECK(store_writer_serve(w, lfd, -1, stop[0], 2000, &error));
    CHECK_NO_ERROR(error);
    store_summary sum;
    CHECK(store_writer_finish(w, &sum, &error));
    CHECK_NO_ERROR(error);
    g_thread_join(t);
    CHECK(sum.connected && sum.complete && sum.gcs == 3 && sum.objects == 7);
    sqlite3 *db = db_open(path);
    CHECK_ROWS(db, "SELECT status, exit_status FROM run", "complete|3\n");
    CHECK_ROWS(db, SQL_OBJECTS, golden_objects);
    sqlite3_close(db);
    close(stop[0]);

    /* The collector's process dies mid-stream and a child it forked keeps the socket open:
     * after the exit status arrives, a silent connection counts as ended. */
    g_assert(pipe2(stop, O_CLOEXEC) == 0);
    golden_marks m = {0};
    hl_sb *sb2 = golden_build(&m, FALSE);
    const uint8_t *b2 = hl_sb_bytes(sb2, &len);
    collector_args a2 = {.sock = sock, .bytes = b2, .len = m.gc_end[2] + 30, .stop_wr = stop[1],
                         .status = "signal 9\n", .keep_open = TRUE};
    t = g_thread_new("collector", collector_thread, &a2);
    g_autofree char *path2 = g_build_filename(dir, "killed.db", NULL);
    w = store_writer_create(path2, "dotnet App.dll", &error);
    gint64 t0 = g_get_monotonic_time();
    CHECK(store_writer_serve(w, lfd, -1, stop[0], 300, &error));
    CHECK_NO_ERROR(error);
    CHECK(g_get_monotonic_time() - t0 < 5 * G_USEC_PER_SEC);
    CHECK(store_writer_finish(w, &sum, &error));
    CHECK_NO_ERROR(error);
    int conn = GPOINTER_TO_INT(g_thread_join(t));
    close(conn);
    CHECK(sum.connected && !sum.complete && sum.gcs == 2);
    db = db_open(path2);
    CHECK_ROWS(db, "SELECT status, exit_status FROM run", "truncated|137\n");
    sqlite3_close(db);
    close(stop[0]);
    close(lfd);
    hl_sb_free(sb2);
    hl_sb_free(sb);
    tmp_dir_free(dir);
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
    char *dir = tmp_dir_new();
    g_autoptr(GError) error = NULL;
    golden_marks m = {0};
    hl_sb *sb = golden_build(&m, FALSE);
    size_t len;
    const uint8_t *bytes = hl_sb_bytes(sb, &len);
    int sv[2], stop[2];
    store_summary sum;

    /* The whole stream, then end of file: complete, the command from RUN_START, no status. */
    g_assert(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
    g_assert(pipe2(stop, O_CLOEXEC) == 0);
    write_all(sv[1], bytes, len);
    close(sv[1]);
    g_autofree char *path = g_build_filename(dir, "app.1234.db", NULL);
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
    trickle_args a = {.fd = sv[1], .bytes = bytes, .len = len, .at = m.gc_end[2]};
    GThread *t = g_thread_new("trickle", trickle_thread, &a);
    g_autofree char *path2 = g_build_filename(dir, "app.5678.db", NULL);
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
    hl_sb_free(sb);
    tmp_dir_free(dir);
}

typedef struct serve_args {
    store_writer *w;
    int conn, stop;
    gboolean ok;
} serve_args;

static gpointer serve_connection_thread(gpointer data)
{
    serve_args *a = data;
    a->ok = store_writer_serve_connection(a->w, a->conn, -1, a->stop, 2000, NULL);
    return NULL;
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
static serve_args serve_live(const char *path, int sv[2], int stop[2])
{
    g_autoptr(GError) error = NULL;
    g_assert(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
    g_assert(pipe2(stop, O_CLOEXEC) == 0);
    serve_args a = {.w = store_writer_create(path, NULL, &error), .conn = sv[0], .stop = stop[0]};
    CHECK_NO_ERROR(error);
    return a;
}

/* After the collector's end closed: the serving thread ended well and both GCs are stored. */
static void serve_live_end(serve_args *a, GThread *t, int sv[2], int stop[2])
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
    serve_args a = serve_live(path, sv, stop);
    GThread *t = g_thread_new("serve", serve_connection_thread, &a);
    write_all(sv[1], bytes, first);
    int64_t seen = 0;
    for (gint64 deadline = g_get_monotonic_time() + 30 * G_USEC_PER_SEC;
         seen == 0 && g_get_monotonic_time() < deadline;) {
        sqlite3 *db = NULL;
        if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK)
            seen = db_int(db, "SELECT count(*) FROM gcs");
        sqlite3_close(db);
        if (seen == 0)
            g_usleep(2000); /* polling for the row, not timing it */
    }
    CHECK(seen == 1);
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
    serve_args a = serve_live(path, sv, stop);
    a.w->group_commit_ms = 60000;
    GThread *t = g_thread_new("serve", serve_connection_thread, &a);
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
    char *dir = tmp_dir_new();
    g_autoptr(GError) error = NULL;
    g_autofree char *sock = g_build_filename(dir, "s", NULL);
    g_autofree char *path = g_build_filename(dir, "none.db", NULL);
    int lfd = listen_unix(sock);
    int stop[2];
    g_assert(pipe2(stop, O_CLOEXEC) == 0);
    write_all(stop[1], "signal 9\n", 9);

    store_writer *w = store_writer_create(path, "dotnet App.dll", &error);
    CHECK(store_writer_serve(w, lfd, -1, stop[0], 1000, &error));
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
    g_autofree char *p2 = g_build_filename(dir, "none2.db", NULL);
    w = store_writer_create(p2, NULL, &error);
    CHECK(store_writer_serve(w, lfd, -1, stop[0], 100, &error));
    CHECK(store_writer_finish(w, NULL, &error));
    CHECK_NO_ERROR(error);
    db = db_open(p2);
    CHECK_ROWS(db, "SELECT status, exit_status FROM run", "no-data|NULL\n");
    sqlite3_close(db);
    close(stop[0]);
    close(lfd);
    tmp_dir_free(dir);
}

static void test_serve_refuses_peer(void)
{
    if (getuid() != 0) {
        fprintf(stderr, "SKIP: needs root to connect as another user\n");
        exit(SKIP_CODE);
    }
    char *dir = tmp_dir_new();
    g_autoptr(GError) error = NULL;
    g_autofree char *sock = g_build_filename(dir, "s", NULL);
    g_autofree char *path = g_build_filename(dir, "peer.db", NULL);
    int lfd = listen_unix(sock);
    CHECK(chmod(dir, 0755) == 0 && chmod(sock, 0777) == 0);
    int stop[2];
    g_assert(pipe2(stop, O_CLOEXEC) == 0);
    hl_sb *sb = golden_build(NULL, FALSE);
    size_t len;
    const uint8_t *bytes = hl_sb_bytes(sb, &len);

    /* Another user connects and sends a stream: refused. Then our own collector connects. */
    pid_t child = fork();
    g_assert(child >= 0);
    if (child == 0) {
        if (setgid(65534) != 0 || setuid(65534) != 0)
            _exit(2);
        int fd = connect_unix(sock);
        if (fd < 0)
            _exit(3);
        (void)!write(fd, bytes, len);
        _exit(0);
    }
    int status = 0;
    waitpid(child, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    collector_args a = {.sock = sock, .bytes = bytes, .len = len, .stop_wr = stop[1],
                        .status = "exit 0\n", .delay_ms = 100};
    GThread *t = g_thread_new("collector", collector_thread, &a);
    store_writer *w = store_writer_create(path, NULL, &error);
    CHECK(store_writer_serve(w, lfd, -1, stop[0], 1000, &error));
    CHECK_NO_ERROR(error);
    store_summary sum;
    CHECK(store_writer_finish(w, &sum, &error));
    g_thread_join(t);
    CHECK(sum.complete);
    sqlite3 *db = db_open(path);
    CHECK_ROWS(db, "SELECT status, exit_status, flags FROM run", "complete|0|peer-refused\n");
    CHECK(db_int(db, "SELECT value FROM counters WHERE name = 'connections_refused'") == 1);
    sqlite3_close(db);
    close(stop[0]);

    /* Only the other user ever connects: STORE_ERROR_PEER, status no-data. */
    g_assert(pipe2(stop, O_CLOEXEC) == 0);
    child = fork();
    g_assert(child >= 0);
    if (child == 0) {
        if (setgid(65534) != 0 || setuid(65534) != 0)
            _exit(2);
        int fd = connect_unix(sock);
        _exit(fd < 0 ? 3 : 0);
    }
    waitpid(child, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    g_usleep(50000);
    write_all(stop[1], "exit 1\n", 7);
    g_autofree char *p2 = g_build_filename(dir, "peer2.db", NULL);
    w = store_writer_create(p2, NULL, &error);
    CHECK(!store_writer_serve(w, lfd, -1, stop[0], 1000, &error));
    CHECK_ERROR(error, STORE_ERROR_PEER, "refused 1 connection(s) from another user (uid 65534)");
    g_clear_error(&error);
    CHECK(store_writer_finish(w, &sum, &error));
    CHECK_NO_ERROR(error);
    db = db_open(p2);
    CHECK_ROWS(db, "SELECT status, exit_status, flags FROM run", "no-data|1|peer-refused\n");
    sqlite3_close(db);
    close(stop[0]);
    close(stop[1]);
    close(lfd);
    hl_sb_free(sb);
    tmp_dir_free(dir);
}

/* ---- the control socket ------------------------------------------------------------------- */

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
    int stop_wr;
    int failures; /* checks that failed in the script's thread */
    char *log;    /* what failed */
} control_script;

/* Finishes the writer that served the script, waits for the script's thread and counts its
 * failures (printing what failed); returns the writer's summary. */
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
    g_usleep(50000);

    /* No collector yet. */
    SCRIPT_CHECK_STR(sc, control_answer(control_send(ctl, "snapshot\n"), 5000),
                     "error the program's collector is not connected (yet)\n");
    int idle = control_send(ctl, NULL); /* connects, says nothing: must not hold anything up */

    hl_sb *sb = hl_sb_new();
    hl_sb_run_start(sb, 1, "control");
    hl_sb_type(sb, 1, "A");
    hl_sb_alloc(sb, 1, 1, 24, 7);
    hl_sb_gc_start(sb, 1, 0, FALSE, 2);
    hl_sb_fate(sb, 1, 1, HL_FATE(HL_GEN_0, HL_GEN_1));
    hl_sb_gc_end(sb, 1, 0);
    size_t len, sent = 0;
    const uint8_t *bytes = hl_sb_bytes(sb, &len);
    int col = connect_unix(sc->collector_sock);
    g_assert(col >= 0);
    write_all(col, bytes, len);
    sent = len;

    /* Three clients ask; one of them gives up at once; one sends nonsense. */
    int b = control_send(ctl, "snapshot\n");
    int c = control_send(ctl, "snapshot\r\n");
    close(control_send(ctl, "snapshot\n"));
    SCRIPT_CHECK_STR(sc, control_answer(control_send(ctl, "hello\n"), 5000),
                     "error unknown request\n");
    SCRIPT_CHECK(sc, collector_read_commands(col, 5000) >= 1);
    control_gc(sb, 2, 1, HL_SNAPSHOT_REQUESTED);
    bytes = hl_sb_bytes(sb, &len);
    write_all(col, bytes + sent, len - sent);
    sent = len;
    SCRIPT_CHECK_STR(sc, control_answer(b, 5000), "ok 1 2 1 MS\n");
    SCRIPT_CHECK_STR(sc, control_answer(c, 5000), "ok 1 2 1 MS\n");

    /* A requested snapshot taken but thrown away (records of it were dropped): "lost", why. */
    int d = control_send(ctl, "snapshot\n");
    SCRIPT_CHECK(sc, collector_read_commands(col, 5000) >= 1);
    hl_sb_gc_start(sb, 3, 2, TRUE, 2);
    hl_sb_snapshot_start(sb, 2, 3, HL_SNAPSHOT_REQUESTED);
    hl_sb_snapshot_object(sb, 2, 1, HL_GEN_2, 0);
    hl_sb_snapshot_end_full(sb, &(hl_snapshot_end){.snapshot = 2, .gc = 3, .objects = 5});
    hl_sb_gc_end(sb, 3, 0);
    bytes = hl_sb_bytes(sb, &len);
    write_all(col, bytes + sent, len - sent);
    sent = len;
    SCRIPT_CHECK_STR(sc, control_answer(d, 5000),
                     "lost 2 3 its records were dropped by the collector (the writer fell "
                     "behind)\n");

    /* A request, then a snapshot of another trigger, then the end of the program. */
    int f = control_send(ctl, "snapshot\n");
    SCRIPT_CHECK(sc, collector_read_commands(col, 5000) >= 1);
    control_gc(sb, 4, 3, HL_SNAPSHOT_INDUCED);
    hl_sb_run_end(sb, 4);
    bytes = hl_sb_bytes(sb, &len);
    write_all(col, bytes + sent, len - sent);
    close(col);
    SCRIPT_CHECK_STR(sc, control_answer(f, 5000),
                     "error the program ended before the snapshot was taken\n");
    /* The writer now waits for the exit status: the recording has ended. */
    SCRIPT_CHECK_STR(sc, control_answer(control_send(ctl, "snapshot\n"), 5000),
                     "error the recording has ended\n");
    write_all(sc->stop_wr, "exit 0\n", 7);
    close(sc->stop_wr);
    SCRIPT_CHECK_STR(sc, control_answer(idle, 5000), "error the recording has ended\n");
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

    control_script sc = {.collector_sock = csock, .control_sock = ksock, .stop_wr = stop[1]};
    GThread *t = g_thread_new("script", control_script_run, &sc);
    store_writer *w = store_writer_create(path, "control", &error);
    CHECK(store_writer_serve(w, lfd, kfd, stop[0], 2000, &error));
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

static gpointer descendant_script_run(gpointer data)
{
    descendant_script *ds = data;
    control_script *sc = &ds->sc;
    const char *ctl = sc->control_sock;
    hl_sb *sb = hl_sb_new();
    size_t len, sent = 0;
    const uint8_t *bytes;

    hl_sb_run_start(sb, 1, "descendant");
    hl_sb_type(sb, 1, "A");
    hl_sb_alloc(sb, 1, 1, 24, 7);
    hl_sb_gc_start(sb, 1, 0, FALSE, 2);
    hl_sb_fate(sb, 1, 1, HL_FATE(HL_GEN_0, HL_GEN_1));
    hl_sb_gc_end(sb, 1, 0);
    bytes = hl_sb_bytes(sb, &len);
    write_all(ds->col, bytes, len);
    sent = len;

    /* The request reaches the collector only once the writer serves the connection. */
    int a = control_send(ctl, "snapshot\n");
    SCRIPT_CHECK(sc, collector_read_commands(ds->col, 5000) >= 1);
    control_gc(sb, 2, 1, HL_SNAPSHOT_REQUESTED);
    bytes = hl_sb_bytes(sb, &len);
    write_all(ds->col, bytes + sent, len - sent);
    sent = len;
    GString *progress = g_string_new(NULL);
    SCRIPT_CHECK_STR(sc, control_answer_progress(a, 5000, progress), "ok 1 2 1 MS\n");
    /* One object: "progress 1 1" may come as its records arrive; "writing" always comes. */
    SCRIPT_CHECK(sc, g_str_has_suffix(progress->str, "progress 1 writing 1\n"));
    g_string_free(progress, TRUE);

    int b = control_send(ctl, "snapshot\n");
    SCRIPT_CHECK(sc, collector_read_commands(ds->col, 5000) >= 1);
    hl_sb_gc_start(sb, 3, 2, TRUE, 2);
    hl_sb_snapshot_start(sb, 2, 3, HL_SNAPSHOT_REQUESTED);
    hl_sb_snapshot_object(sb, 2, 1, HL_GEN_2, 0);
    hl_sb_snapshot_end_full(sb, &(hl_snapshot_end){.snapshot = 2, .gc = 3, .objects = 5});
    hl_sb_gc_end(sb, 3, 0);
    hl_sb_run_end(sb, 3);
    bytes = hl_sb_bytes(sb, &len);
    write_all(ds->col, bytes + sent, len - sent);
    SCRIPT_CHECK_STR(sc, control_answer(b, 5000),
                     "lost 2 3 its records were dropped by the collector (the writer fell "
                     "behind)\n");
    close(ds->col);
    write_all(sc->stop_wr, "exit 0\n", 7);
    close(sc->stop_wr);
    hl_sb_free(sb);
    return NULL;
}

static void test_control_descendant(void)
{
    char *dir = tmp_dir_new();
    g_autoptr(GError) error = NULL;
    g_autofree char *ksock = g_build_filename(dir, "control", NULL);
    g_autofree char *path = g_build_filename(dir, "app.4321.db", NULL);
    int kfd = listen_unix(ksock);
    int sv[2], stop[2];
    g_assert(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0);
    g_assert(pipe2(stop, O_CLOEXEC) == 0);
    signal(SIGPIPE, SIG_IGN); /* as in the writer process */

    descendant_script ds = {.sc = {.control_sock = ksock, .stop_wr = stop[1]}, .col = sv[1]};
    GThread *t = g_thread_new("script", descendant_script_run, &ds);
    store_writer *w = store_writer_create(path, NULL, &error);
    CHECK(store_writer_serve_connection(w, sv[0], kfd, stop[0], 2000, &error));
    CHECK_NO_ERROR(error);
    store_summary sum = control_script_end(w, t, &ds.sc);
    CHECK(sum.complete && sum.gcs == 3 && sum.snapshots == 1);
    sqlite3 *db = db_open(path);
    CHECK_ROWS(db, "SELECT snapshot, gc, trigger, objects FROM snapshots", "1|2|requested|1\n");
    sqlite3_close(db);
    close(sv[0]);
    close(stop[0]);
    close(kfd);
    tmp_dir_free(dir);
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
    close(pipefd[0]);
    write_all(pipefd[1], bytes, first);
    /* Wait until GC 1 and its snapshot are committed. */
    int64_t snaps = 0;
    for (int i = 0; i < 500 && snaps == 0; i++) {
        g_usleep(10000);
        sqlite3 *db = NULL;
        if (access(path, F_OK) == 0 &&
            sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK) {
            sqlite3_stmt *st = NULL;
            if (sqlite3_prepare_v2(db, "SELECT count(*) FROM snapshots", -1, &st, NULL) == SQLITE_OK &&
                sqlite3_step(st) == SQLITE_ROW)
                snaps = sqlite3_column_int64(st, 0);
            sqlite3_finalize(st);
        }
        sqlite3_close(db);
    }
    CHECK(snaps == 1);
    write_all(pipefd[1], bytes + first, len - first); /* snapshot 2, cut short */
    g_usleep(200000);
    kill(child, SIGKILL);
    int status;
    waitpid(child, &status, 0);
    close(pipefd[1]);

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
    int fd = hl_sb_memfd(sb, len);
    int report[2];
    g_assert(fd >= 0 && pipe2(report, O_CLOEXEC) == 0);

    pid_t child = fork();
    g_assert(child >= 0);
    if (child == 0) {
        g_log_set_always_fatal(G_LOG_LEVEL_CRITICAL | G_LOG_LEVEL_WARNING);
        signal(SIGXFSZ, SIG_IGN);
        struct rlimit lim = {.rlim_cur = 1u << 20, .rlim_max = 1u << 20};
        GError *err = NULL, *ferr = NULL;
        if (setrlimit(RLIMIT_FSIZE, &lim) != 0)
            _exit(3);
        store_writer *w = store_writer_create(path, "full", &err);
        if (w == NULL)
            _exit(4);
        gboolean ingested = store_writer_ingest_fd(w, fd, &err);
        gboolean finished = store_writer_finish(w, NULL, &ferr);
        g_autofree char *line = g_strdup_printf(
            "%d|%d|%s|%d|%s", ingested, err ? err->code : -1, err ? err->message : "",
            finished, ferr ? ferr->message : "");
        if (write(report[1], line, strlen(line)) < 0)
            _exit(5);
        _exit(0);
    }
    close(report[1]);
    char got[1024] = {0};
    ssize_t n = read(report[0], got, sizeof got - 1);
    close(report[0]);
    int status = 0;
    waitpid(child, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CHECK(n > 0);
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
    close(fd);
    (void)bytes;
    hl_sb_free(sb);
    tmp_dir_free(dir);
}

/* A control client of another user is closed unanswered (and holds nothing up). */
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
        g_autofree char *got = control_answer(fd, 5000);
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

/* ---- checking a file once ------------------------------------------------------------------ */

/* `sql` in one transaction of a read-write connection to `path`; with `check`, the file is
 * checked first (store_db_damage_new: returned) and the commit notes it sound
 * (store_db_commit_sound). */
static char *sound_write(const char *path, const char *sql, gboolean check)
{
    sqlite3 *db = NULL;
    char *damage = NULL;
    store_db_check seen = {0};
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) != SQLITE_OK ||
        sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
        abort();
    if (check)
        damage = store_db_damage_new(db, &seen);
    if (damage) {
        sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
    } else {
        CHECK(sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK);
        CHECK(check ? store_db_commit_sound(db, &seen)
                    : sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) == SQLITE_OK);
    }
    sqlite3_close(db);
    return damage;
}

/* Overwrites the b-tree header of page 2 (4096-byte pages) in place, as a bad disk would: the
 * file's change counter stays as it was. With `keep_time` its modification time is put back
 * too, which no real damage does: then nothing says the file changed, and finding the damage
 * or not tells whether the file was read. */
static void sound_damage(const char *path, gboolean keep_time)
{
    static const unsigned char junk[8] = {0xA5, 0xA5, 0xA5, 0xA5, 0xA5, 0xA5, 0xA5, 0xA5};
    struct stat before;
    CHECK(stat(path, &before) == 0);
    int fd = open(path, O_WRONLY);
    CHECK(fd >= 0 && pwrite(fd, junk, sizeof junk, 4096) == (ssize_t)sizeof junk);
    if (keep_time) {
        const struct timespec times[2] = {before.st_atim, before.st_mtim};
        CHECK(futimens(fd, times) == 0);
    }
    close(fd);
}

/* What store_db_damage_new of a fresh connection to `path` says (another command's). */
static char *sound_check(const char *path)
{
    sqlite3 *db = NULL;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK ||
        sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
        abort();
    char *damage = store_db_damage_new(db, NULL);
    sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
    sqlite3_close(db);
    return damage;
}

/* The file change counter of `path`'s header. */
static int64_t sound_counter(const char *path)
{
    unsigned char head[28] = {0};
    int fd = open(path, O_RDONLY);
    CHECK(fd >= 0 && pread(fd, head, sizeof head, 0) == (ssize_t)sizeof head);
    close(fd);
    return (int64_t)head[24] << 24 | head[25] << 16 | head[26] << 8 | head[27];
}

/* Whether the damage made by sound_damage(path, keep_time) is found by the next check. */
static gboolean sound_damage_found(const char *path, gboolean keep_time)
{
    sound_damage(path, keep_time);
    char *damage = sound_check(path);
    g_free(damage);
    return damage != NULL;
}

/* A file a command checked and then wrote is not read again by the next command that writes
 * (the whole-file check took 0.7-1.8 s each time); one that anybody changed since is. The proof
 * that the check was skipped: damage with the file's time put back is not found. */
static void test_damage_checked_once(void)
{
    char *dir = tmp_dir_new();
    static const char fill[] = "PRAGMA page_size = 4096; CREATE TABLE t (x);"
                               "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n"
                               " WHERE i < 2000) INSERT INTO t SELECT randomblob(100) FROM n";
    const char *const names[] = {"noted", "damaged", "written", "wal", "unnoted", "twice"};
    char *path[G_N_ELEMENTS(names)];
    for (size_t i = 0; i < G_N_ELEMENTS(names); i++) {
        path[i] = g_strdup_printf("%s/%s.db", dir, names[i]);
        g_free(sound_write(path[i], fill, FALSE));
        if (i == 3) { /* outside a transaction */
            sqlite3 *wal = NULL;
            CHECK(sqlite3_open_v2(path[i], &wal, SQLITE_OPEN_READWRITE, NULL) == SQLITE_OK &&
                  sqlite3_exec(wal, "PRAGMA journal_mode = WAL", NULL, NULL, NULL) == SQLITE_OK);
            sqlite3_close(wal);
        }
        if (i != 4)
            CHECK(sound_write(path[i], "INSERT INTO t VALUES (1)", TRUE) == NULL);
    }
    /* the note: the counter the commit left and the time it gave the file, ten seconds back */
    sqlite3 *db = NULL;
    struct stat st;
    struct timespec now;
    CHECK(sqlite3_open_v2(path[0], &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK);
    CHECK(stat(path[0], &st) == 0 && clock_gettime(CLOCK_REALTIME, &now) == 0);
    int64_t mtime = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
    CHECK(db_int(db, "SELECT count(*) FROM file_check") == 1);
    CHECK(db_int(db, "SELECT mtime_ns FROM file_check") == mtime);
    CHECK(db_int(db, "SELECT counter FROM file_check") == sound_counter(path[0]));
    CHECK(now.tv_sec - st.st_mtim.tv_sec >= 9 && now.tv_sec - st.st_mtim.tv_sec < 60);
    sqlite3_close(db);
    /* noted and unchanged: not read again (its damage, time put back, is not seen) */
    CHECK(!sound_damage_found(path[0], TRUE));
    /* noted, then damaged in place: its time says so */
    CHECK(sound_damage_found(path[1], FALSE));
    /* noted, then written by a writer that did not check: the counter says so */
    g_free(sound_write(path[2], "INSERT INTO t VALUES (2)", FALSE));
    CHECK(sound_damage_found(path[2], TRUE));
    /* WAL mode: commits go to the WAL and leave the counter; never trusted */
    CHECK(sound_damage_found(path[3], TRUE));
    /* never noted */
    CHECK(sound_damage_found(path[4], TRUE));
    /* a checked write skipped the check and noted again: still trusted after two */
    CHECK(sound_write(path[5], "INSERT INTO t VALUES (3)", TRUE) == NULL);
    CHECK(!sound_damage_found(path[5], TRUE));
    for (size_t i = 0; i < G_N_ELEMENTS(names); i++)
        g_free(path[i]);
    tmp_dir_free(dir);
}

/* Whether another process would find SQLite's write lock on `path` taken (RESERVED: the byte after
 * the pending byte, 2^30 + 1). The child asks the kernel only: a forked child must not use SQLite
 * (it inherits the parent's view of its own locks), and a descriptor the parent opened and
 * closed would itself drop the parent's locks. */
static gboolean sound_write_locked(const char *path)
{
    pid_t child = fork();
    CHECK(child >= 0);
    if (child == 0) {
        struct flock lock = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0x40000001,
                             .l_len = 1};
        int fd = open(path, O_RDWR);
        _exit(fd < 0 || fcntl(fd, F_GETLK, &lock) != 0 ? 2 : lock.l_type == F_UNLCK ? 0 : 1);
    }
    int status = 0;
    CHECK(waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) < 2);
    return WIFEXITED(status) && WEXITSTATUS(status) == 1;
}

/* The check reads the file's header without a descriptor of its own: closing one dropped every
 * POSIX lock this process held on the file, SQLite's write lock included, and two commands
 * storing into one file at the same time then wrote it together ("disk I/O error"). */
static void test_damage_check_keeps_locks(void)
{
    char *dir = tmp_dir_new();
    char *path = g_strdup_printf("%s/locked.db", dir);
    g_free(sound_write(path, "CREATE TABLE t (x); INSERT INTO t VALUES (1)", FALSE));
    for (int noted = 0; noted < 2; noted++) { /* checked whole, then skipped by the note */
        sqlite3 *db = NULL;
        store_db_check seen = {0};
        CHECK(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL) == SQLITE_OK &&
              sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) == SQLITE_OK);
        CHECK(sound_write_locked(path));
        char *damage = store_db_damage_new(db, &seen);
        CHECK(damage == NULL && seen.counted);
        g_free(damage);
        CHECK(sound_write_locked(path));
        CHECK(sqlite3_exec(db, "INSERT INTO t VALUES (2)", NULL, NULL, NULL) == SQLITE_OK);
        CHECK(store_db_commit_sound(db, &seen));
        sqlite3_close(db);
        CHECK(!sound_write_locked(path));
    }
    g_free(path);
    tmp_dir_free(dir);
}

/* ---- main --------------------------------------------------------------------------------- */

static const struct {
    const char *name;
    void (*fn)(void);
} cases[] = {
    {"schema", test_schema},
    {"disk_full", test_disk_full},
    {"golden_rows", test_golden_rows},
    {"golden_rows_packed", test_golden_rows_packed},
    {"golden_views", test_golden_views},
    {"old_deaths", test_old_deaths},
    {"packed_damage", test_packed_damage},
    {"objects_view", test_objects_view},
    {"promotions", test_promotions},
    {"young_die_first_gc", test_young_die_first_gc},
    {"after_last_gc", test_after_last_gc},
    {"sample_weight", test_sample_weight},
    {"record_rows", test_record_rows},
    {"wal_writes_gathered", test_wal_writes_gathered},
    {"truncate_every_byte", test_truncate_every_byte},
    {"truncate_every_byte_packed", test_truncate_every_byte_packed},
    {"corrupt_size", test_corrupt_size},
    {"corrupt_count", test_corrupt_count},
    {"unknown_types", test_unknown_types},
    {"bad_header", test_bad_header},
    {"stream_versions", test_stream_versions},
    {"empty_stream", test_empty_stream},
    {"discarded_gc", test_discarded_gc},
    {"out_of_order_gc", test_out_of_order_gc},
    {"anomalies", test_anomalies},
    {"anomalies_packed", test_anomalies_packed},
    {"survivors_packed_extremes", test_survivors_packed_extremes},
    {"loss_reasons", test_loss_reasons},
    {"ending_writer", test_ending_writer},
    {"ending_writer_died", test_ending_writer_died},
    {"differential", test_differential},
    {"survivors_packed", test_survivors_packed},
    {"chunk_boundaries", test_chunk_boundaries},
    {"discovered", test_discovered},
    {"golden_snapshot", test_golden_snapshot},
    {"snapshot_fields", test_snapshot_fields},
    {"snapshot_blocks", test_snapshot_blocks},
    {"golden_handles", test_golden_handles},
    {"snapshot_incomplete", test_snapshot_incomplete},
    {"snapshot_flags", test_snapshot_flags},
    {"handles_rollback", test_handles_rollback},
    {"checkpoints", test_checkpoints},
    {"snapshot_reasons", test_snapshot_reasons},
    {"handles_freed_in_gc", test_handles_freed_in_gc},
    {"refuse_existing", test_refuse_existing},
    {"open_readonly", test_open_readonly},
    {"readonly_wal_quiet", test_readonly_wal_quiet},
    {"serve_socket", test_serve_socket},
    {"serve_no_connection", test_serve_no_connection},
    {"serve_connection", test_serve_connection},
    {"serve_refuses_peer", test_serve_refuses_peer},
    {"control_snapshot", test_control_snapshot},
    {"control_descendant", test_control_descendant},
    {"killed_mid_snapshot", test_killed_mid_snapshot},
    {"derived_views", test_derived_views},
    {"reader_holds_file", test_reader_holds_file},
    {"writer_waits_for_lock", test_writer_waits_for_lock},
    {"change_gaps", test_change_gaps},
    {"no_sync", test_no_sync},
    {"grouped_commits", test_grouped_commits},
    {"grouped_reader_sees", test_grouped_reader_sees},
    {"grouped_read_steps", test_grouped_read_steps},
    {"radix_sort", test_radix_sort},
    {"put_u64", test_put_u64},
    {"checkpoint_after_answer", test_checkpoint_after_answer},
    {"first_read_order", test_first_read_order},
    {"control_refuses_peer", test_control_refuses_peer},
    {"damage_checked_once", test_damage_checked_once},
    {"damage_check_keeps_locks", test_damage_check_keeps_locks},
};

int main(int argc, char **argv)
{
    gboolean ran = FALSE;
    if (argc != 2) {
        fprintf(stderr, "usage: %s <case>|all\n", argv[0]);
        return 2;
    }
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        if (strcmp(argv[1], "all") == 0 || strcmp(argv[1], cases[i].name) == 0) {
            int before = failures;
            cases[i].fn();
            fprintf(stderr, "%s: %s\n", cases[i].name, failures == before ? "ok" : "FAILED");
            ran = TRUE;
        }
    }
    if (!ran) {
        fprintf(stderr, "no such case: %s\n", argv[1]);
        return 2;
    }
    return failures == 0 ? 0 : 1;
}
