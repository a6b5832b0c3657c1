/* test_store_ending.c — how a run ended: run.loss from the collector's counters and
 * the stream's end, the collector's end file read by a writer whose stream stopped short, a
 * writer that died before finishing, and the counters of older stream versions.
 *
 * Usage: test_store_ending <case>|all   (ctest runs each case as store.<case>).
 * What the store's tests share: store_test.h.
 */
#define _GNU_SOURCE
#include "tests/unit/store/store_test.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

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
        long exit_pid; /* the program's, as `heaplens record` says it (the run's pid is 4242) */
        const char *run;
    } cases[] = {
        {9, TRUE, 4242, "truncated|writer-lost,writer-killed|0|9|4|30\n"},
        {0, FALSE, 0, "truncated|write-failed|0|NULL|NULL|0\n"},
        /* a .NET descendant of a program that is not .NET: the status is not its own */
        {9, TRUE, 5151, "truncated|writer-lost,writer-killed|NULL|9|4|30\n"},
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
                               .exit_pid = cases[i].exit_pid, .writer_signal = cases[i].signal};
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
 * (gcs.census_ns, census_objects); version 3's (224 bytes) is read with them NULL. Version 6's
 * counters carry the census's totals (census_allocs, census_bytes; GC_END 256 bytes, RUN_END
 * 168); versions 4 and 5 (240 and 152: the census and the peak after the shorter counters) are
 * read with every field where it was and no census total. */
static void test_stream_versions(void)
{
    char *dir = tmp_dir_new();
    for (uint32_t version = 2; version <= HL_STREAM_VERSION; version++) {
        g_autoptr(GError) error = NULL;
        g_autofree char *p = g_strdup_printf("%s/v%u.db", dir, version);
        hl_counters k = {.allocs_seen = 1, .thread_waits = 5, .thread_wait_ns = 7000,
                         .census_allocs = 40, .census_bytes = 960};
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
        /* An older record: the fields before the counters, the counters of its version, then
         * the fields after hl_counters (as many as the record had). */
        size_t gc_at = offsetof(hl_gc_end, counters), run_at = offsetof(hl_run_end, counters);
        size_t old_counters = version == 2 ? HL_COUNTERS_V2_SIZE : HL_COUNTERS_V3_SIZE;
        size_t gc_size = version == 2   ? HL_GC_END_V2_SIZE
                         : version == 3 ? HL_GC_END_V3_SIZE
                         : version <= 5 ? HL_GC_END_V4_SIZE
                                        : sizeof e;
        size_t run_size = version == 2 ? HL_RUN_END_V2_SIZE
                          : version <= 5 ? HL_RUN_END_V3_SIZE
                                         : sizeof r;
        uint8_t old[sizeof e];
        if (version <= 5) {
            memcpy(old, &e, gc_at + old_counters);
            memcpy(old + gc_at + old_counters, (const uint8_t *)&e + gc_at + sizeof(hl_counters),
                   gc_size - gc_at - old_counters);
            hl_sb_record(sb, HL_REC_GC_END, old, (uint32_t)gc_size);
            memcpy(old, &r, run_at + old_counters);
            memcpy(old + run_at + old_counters, (const uint8_t *)&r + run_at + sizeof(hl_counters),
                   run_size - run_at - old_counters);
            hl_sb_record(sb, HL_REC_RUN_END, old, (uint32_t)run_size);
        } else {
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
                   " (SELECT value FROM counters WHERE name = 'program_peak_rss_bytes'),"
                   " (SELECT value FROM counters WHERE name = 'census_allocs'),"
                   " (SELECT value FROM counters WHERE name = 'census_bytes')",
                   version == 2   ? "1|0|0|123456789|NULL|NULL\n"
                   : version <= 5 ? "1|5|7000|123456789|NULL|NULL\n"
                                  : "1|5|7000|123456789|40|960\n");
        CHECK_ROWS(db, "SELECT census_ns, census_objects FROM gcs",
                   version >= 4 ? "900|12\n" : "NULL|NULL\n");
        sqlite3_close(db);
    }
    tmp_dir_free(dir);
}

/* An attach session's detach that gave its last snapshot up (FINAL_SNAPSHOT_MISSED before
 * RUN_END): complete, loss final-snapshot-missed, the record's figures as counters; without the
 * record, neither. */
static void test_final_snapshot_missed(void)
{
    char *dir = tmp_dir_new();
    for (int with = 0; with <= 1; with++) {
        g_autoptr(GError) error = NULL;
        g_autofree char *p = g_strdup_printf("%s/f%d.db", dir, with);
        hl_sb *sb = hl_sb_new();
        hl_sb_run_start(sb, 1, "x");
        hl_sb_gc_start(sb, 1, 0, TRUE, 2);
        hl_sb_gc_end(sb, 1, 0);
        hl_final_snapshot_missed m = {.reason = HL_FINAL_SNAPSHOT_BEHIND, .gcs_behind = 49,
                                      .waited_ms = 10200, .snapshots_skipped = 48};
        if (with)
            hl_sb_record(sb, HL_REC_FINAL_SNAPSHOT_MISSED, &m, sizeof m);
        hl_sb_run_end(sb, 1);
        store_summary sum;
        CHECK(hl_sb_write_db(sb, p, NULL, &sum, &error));
        CHECK_NO_ERROR(error);
        hl_sb_free(sb);
        sqlite3 *db = db_open(p);
        CHECK_ROWS(db, "SELECT status, loss FROM run",
                   with ? "complete|final-snapshot-missed\n" : "complete|NULL\n");
        CHECK_ROWS(db,
                   "SELECT (SELECT value FROM counters WHERE name = 'final_snapshot_missed'),"
                   " (SELECT value FROM counters WHERE name = 'final_snapshot_gcs_behind'),"
                   " (SELECT value FROM counters WHERE name = 'final_snapshot_wait_ms'),"
                   " (SELECT value FROM counters WHERE name = 'snapshots_skipped')",
                   with ? "1|49|10200|48\n" : "NULL|NULL|NULL|NULL\n");
        sqlite3_close(db);
    }
    tmp_dir_free(dir);
}

static const test_case cases[] = {
    {"final_snapshot_missed", test_final_snapshot_missed},
    {"stream_versions", test_stream_versions},
    {"loss_reasons", test_loss_reasons},
    {"ending_writer", test_ending_writer},
    {"ending_writer_died", test_ending_writer_died},
};

int main(int argc, char **argv)
{
    return test_cases_main(argc, argv, cases, G_N_ELEMENTS(cases), &failures);
}
