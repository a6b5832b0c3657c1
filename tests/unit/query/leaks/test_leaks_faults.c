/* test_leaks_faults.c — the recording as a file that fails the commands: read only
 * (results in TEMP tables), a full disk, damaged pages (found once, the file left as it was),
 * hand-edited values, and bad arguments, each one line on stderr and exit 1.
 * Fixtures and usage: leaks_test.h.
 */
#include "tests/unit/query/leaks/leaks_test.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>

/* A file heaplens may not write: the results go to TEMP tables, a note says so. */
static void case_retention_readonly(void)
{
    file_copy("graph.db", "ro.db");
    g_autofree char *path = fixture_path("ro.db");
    file_unwritable("ro.db");
    json_t *doc = NULL;
    run_result r = RUN("retention", "ro.db", "--snapshot", "1", "--json", "--top", "1");
    CHECK_INT(r.status, 0);
    CHECK(strstr(r.err, "heaplens: note: retained sizes were not stored: ") != NULL);
    doc = json_loads(r.out, 0, NULL);
    CHECK(doc != NULL);
    CHECK_INT(jint(jrow(doc, 0), "retained_bytes"), 3252);
    json_decref(doc);
    run_result_release(&r);
    CHECK_INT(sql_int("ro.db", "SELECT count(*) FROM sqlite_schema WHERE name = 'retention'"), 0);
    /* roots --type needs retained sizes too: they are computed again */
    r = RUN("roots", "ro.db", "--snapshot", "1", "--type", "App.Leak");
    CHECK_INT(r.status, 0);
    CHECK(g_str_has_prefix(r.out, "shortest path from a GC root to object 3 (App.Leak)"));
    CHECK(strstr(r.out, "note: retained sizes were not stored: ") == NULL);
    CHECK(g_str_has_prefix(r.err, "heaplens: note: retained sizes were not stored: "));
    run_result_release(&r);
    g_chmod(path, 0600);

    /* the file has the tables (snapshot 4) but cannot take more: TEMP tables that keep the
     * file's rows visible */
    file_copy("graph.db", "ro2.db");
    r = RUN("retention", "ro2.db");
    CHECK_INT(r.status, 0);
    run_result_release(&r);
    file_unwritable("ro2.db");
    r = RUN("leaks", "ro2.db", "--json");
    CHECK_INT(r.status, 0);
    doc = json_loads(r.out, 0, NULL);
    CHECK(doc && json_array_size(json_object_get(doc, "rows")) == 2);
    CHECK_STR(jstr(jrow(doc, 0), "type"), "App.Leak");
    CHECK_INT(jint(jrow(doc, 0), "growth_retained_bytes"), 9 * 1040);
    json_decref(doc);
    run_result_release(&r);
    CHECK_INT(sql_int("ro2.db", "SELECT count(*) FROM retention_snapshots"), 1);
    g_autofree char *path2 = fixture_path("ro2.db");
    g_chmod(path2, 0600);
}

/* What `leaks` found of its holders is stored (leak_holders) and read back: the next `leaks` and
 * `report` compute no dominator tree, and say the same; a row of another version or of a
 * snapshot whose row changed is computed again; a row heaplens does not write is damage; a file
 * heaplens may not write gets the same answer and a note. */
/* heaplens ARGS... on a disk that cannot take more than `room` bytes beyond `name`'s size: its
 * files cannot grow past RLIMIT_FSIZE (SIGXFSZ ignored, as the child inherits both). */
static run_result run_disk_full(const char *name, off_t room, const char *const *args)
{
    g_autofree char *path = fixture_path(name);
    struct stat st;
    struct rlimit old, lim;
    g_assert(stat(path, &st) == 0 && getrlimit(RLIMIT_FSIZE, &old) == 0);
    lim = old;
    lim.rlim_cur = (rlim_t)(st.st_size + room);
    void (*was)(int) = signal(SIGXFSZ, SIG_IGN);
    g_assert(setrlimit(RLIMIT_FSIZE, &lim) == 0);
    run_result r = run_in(heaplens, workdir, args);
    g_assert(setrlimit(RLIMIT_FSIZE, &old) == 0);
    signal(SIGXFSZ, was);
    return r;
}

/* A full disk while storing what a command computed (retained sizes, leak holders,
 * inspections): the answer all the same and a note, as for a read-only file; nothing stored
 * and the file intact. It was "storing retained sizes failed: database or disk is full", exit
 * 1, from leaks, retention, roots, inspect and report. */
static void case_store_disk_full(void)
{
    file_copy("graph.db", "full.db");
    run_result r = RUN("info", "full.db"); /* the first read's build, on a disk with room */
    CHECK_INT(r.status, 0);
    run_result_release(&r);
    r = run_disk_full("full.db", 4096,
                      (const char *const[]){"report", "full.db", "-o", "-", "--json", NULL});
    CHECK_INT(r.status, 0);
    CHECK(strstr(r.err, "heaplens: note: retained sizes were not stored: full.db cannot be "
                        "written (disk full or an I/O error)\n") != NULL);
    run_result_release(&r);
    /* In JSON and in text the note is on stderr, as report says it: the answer on stdout is the
     * same as on a disk with room (in text it was after the answer, on stdout) */
    static const char *const texts[][6] = {
        {"leaks", "--json", NULL, "retained sizes"},
        {"inspect", "--json", NULL, "inspections"},
        {"leaks", NULL, "retained sizes"},
        {"retention", NULL, "retained sizes"},
        {"inspect", NULL, "inspections"},
        {"roots", "--type", "App.Leak", NULL, "retained sizes"},
        {"check", "--max-retained", "App.Leak=1G", NULL, "retained sizes"},
    };
    for (size_t i = 0; i < G_N_ELEMENTS(texts); i++) {
        /* {command, options..., NULL, what was not stored} */
        const char *args[8] = {texts[i][0], "full1.db"};
        size_t j = 1;
        for (; texts[i][j]; j++)
            args[j + 1] = texts[i][j];
        const char *what = texts[i][j + 1];
        file_copy("graph.db", "full1.db");
        run_result room = run_in(heaplens, workdir, args);
        args[1] = "full.db";
        r = run_disk_full("full.db", 4096, args);
        g_autofree char *note = g_strdup_printf("heaplens: note: %s were not stored: full.db "
                                                "cannot be written (disk full or an I/O error)\n",
                                                what);
        CHECK_INT(r.status, 0);
        CHECK_INT(room.status, 0);
        CHECK_STR(r.out, room.out);
        CHECK_STR(r.err, note);
        run_result_release(&r);
        run_result_release(&room);
    }
    CHECK_INT(sql_int("full.db", "SELECT count(*) FROM sqlite_schema WHERE name IN"
                                 " ('leak_holders', 'retention_blocks', 'inspections')"),
              0);
    CHECK_INT(sql_int("full.db",
                      "SELECT count(*) FROM pragma_quick_check WHERE quick_check = 'ok'"),
              1);
}

/* A command on a file that fails (`damaged`) exits 1 with one line and leaves every byte as it
 * was; one on a sound file may succeed (and store retained sizes). Never a sanitizer report. */
static void expect_untouched_on_failure(const char *file, gboolean damaged, const char *what,
                                        run_result r)
{
    g_autoptr(GBytes) after = fixture_bytes(file);
    g_autoptr(GBytes) before = fixture_bytes("before.db");
    gboolean one_line = r.err[0] && strchr(r.err, '\n') && !strchr(r.err, '\n')[1] &&
                        g_str_has_prefix(r.err, "heaplens: ");
    CHECK(strstr(r.err, "runtime error") == NULL && strstr(r.err, "Sanitizer") == NULL);
    if (damaged || r.status != 0) {
        if (!(r.status == 1 && one_line && before && after && g_bytes_equal(before, after))) {
            fprintf(stderr, "  %s: status %d, file %s, stderr: %s", what, r.status,
                    before && after && g_bytes_equal(before, after) ? "unchanged" : "CHANGED",
                    r.err);
            failures++;
        }
    }
    CHECK(!strstr(r.out, "were dropped; counts are lower bounds") || !strstr(r.out, " -"));
}

/* Every page of a real recording overwritten in turn (its b-tree page header): retention, roots
 * and leaks check the file before storing and never change a damaged one. */
static void case_damaged_pages(void)
{
    g_autoptr(GBytes) good = fixture_bytes("graph.db");
    gsize len = 0;
    const guint8 *data = g_bytes_get_data(good, &len);
    guint page = (guint)data[16] << 8 | data[17];
    if (page == 1)
        page = 65536;
    int damaged_files = 0, failed_runs = 0;
    const char *const commands[][6] = {{"retention", "bad.db", NULL},
                                        {"roots", "bad.db", "--type", "App.Leak", NULL},
                                        {"leaks", "bad.db", NULL}};
    for (gsize p = 1; p < len / page; p++) { /* page 1 holds the file header: left alone */
        g_autofree guint8 *copy = g_memdup2(data, len);
        memset(copy + p * page, 0xA5, 8);
        g_autofree char *path = fixture_path("before.db");
        if (!g_file_set_contents(path, (const char *)copy, (gssize)len, NULL))
            exit(2);
        g_autofree char *integrity = NULL;
        {
            sqlite3 *db = NULL;
            sqlite3_stmt *stmt = NULL;
            sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL);
            if (sqlite3_prepare_v2(db, "PRAGMA integrity_check(1)", -1, &stmt, NULL) == SQLITE_OK &&
                sqlite3_step(stmt) == SQLITE_ROW)
                integrity = g_strdup((const char *)sqlite3_column_text(stmt, 0));
            sqlite3_finalize(stmt);
            sqlite3_close(db);
        }
        gboolean damaged = !integrity || strcmp(integrity, "ok") != 0;
        damaged_files += damaged;
        for (size_t c = 0; c < G_N_ELEMENTS(commands); c++) {
            file_copy("before.db", "bad.db");
            run_result r = run_in(heaplens, workdir, commands[c]);
            g_autofree char *what = g_strdup_printf("page %zu, %s", (size_t)p, commands[c][0]);
            failed_runs += r.status != 0;
            expect_untouched_on_failure("bad.db", damaged, what, r);
            run_result_release(&r);
        }
    }
    CHECK(damaged_files > 3);
    CHECK(failed_runs > 3);
}

/* Overwrites the b-tree header of the first page of `table` in `name`, in place (the file's
 * change counter stays); with `keep_time` its modification time is put back as it was. */
static void page_damage(const char *name, const char *table, gboolean keep_time)
{
    g_autofree char *sql = g_strdup_printf("SELECT rootpage FROM sqlite_schema WHERE name = '%s'",
                                           table);
    long long page = sql_int(name, sql), size = sql_int(name, "PRAGMA page_size");
    static const unsigned char junk[8] = {0xA5, 0xA5, 0xA5, 0xA5, 0xA5, 0xA5, 0xA5, 0xA5};
    g_autofree char *path = fixture_path(name);
    struct stat before;
    int fd = open(path, O_WRONLY);
    if (page < 2 || size < 512 || fd < 0 || fstat(fd, &before) != 0 ||
        pwrite(fd, junk, sizeof junk, (off_t)((page - 1) * size)) != (ssize_t)sizeof junk)
        exit(2);
    const struct timespec times[2] = {before.st_atim, before.st_mtim};
    if (keep_time && futimens(fd, times) != 0)
        exit(2);
    close(fd);
}

/* The first command that stores rows checks the whole file and notes it sound (file_check);
 * the next one trusts the note while nothing changed the file, and checks again when anything
 * did: a page damaged in place after the note is still refused, the file left as it was. The
 * proof that the note is used: the same damage with the file's time put back (which no real
 * damage does) goes unseen. */
static void case_checked_once(void)
{
    for (int keep_time = 0; keep_time < 2; keep_time++) {
        file_copy("graph.db", "c.db");
        EXPECT(RUN("retention", "c.db", "--top", "1"), 0, NULL, "");
        CHECK_INT(sql_int("c.db", "SELECT count(*) FROM file_check"), 1);
        page_damage("c.db", "alloc_counts", keep_time);
        file_copy("c.db", "before.db");
        run_result r = RUN("leaks", "c.db");
        if (keep_time) {
            CHECK_INT(r.status, 0);
        } else {
            CHECK_INT(r.status, 1);
            CHECK(strstr(r.err, "is damaged") != NULL);
            expect_untouched_on_failure("c.db", TRUE, "leaks after damage", r);
        }
        run_result_release(&r);
    }
}

/* A copy damaged after its answers were stored (retained sizes, holders, inspections): the
 * commands that would answer from the stored rows alone refuse it as `report`, which reads
 * further, does — one line, exit 1, the file left as it was. With the file's time put back
 * (nothing changed it, as file_check says) they answer from the rows, checking nothing. */
static void case_stored_damaged(void)
{
    const char *const commands[][8] = {
        {"retention", "sd.db", NULL},
        {"retention", "sd.db", "--by", "type", "--json", NULL},
        {"leaks", "sd.db", NULL},
        {"inspect", "sd.db", "--json", NULL},
        {"roots", "sd.db", "--type", "App.Leak", NULL},
        {"report", "sd.db", "--json", "-o", "-", NULL},
    };
    for (int keep_time = 0; keep_time < 2; keep_time++) {
        file_copy("graph.db", "sd.db");
        run_result stored = RUN("report", "sd.db", "--json", "-o", "sd.json");
        CHECK_INT(stored.status, 0);
        run_result_release(&stored);
        CHECK_INT(sql_int("sd.db", "SELECT count(*) FROM leak_holders") > 0, 1);
        CHECK_INT(sql_int("sd.db", "SELECT count(*) FROM inspections") > 0, 1);
        page_damage("sd.db", "alloc_counts", keep_time);
        file_copy("sd.db", "before.db");
        for (size_t c = 0; c < G_N_ELEMENTS(commands); c++) {
            run_result r = run_in(heaplens, workdir, commands[c]);
            g_autofree char *what = g_strdup_printf("%s%s", commands[c][0],
                                                    keep_time ? " (time kept)" : "");
            if (keep_time && strcmp(commands[c][0], "report") != 0) {
                if (r.status != 0) {
                    fprintf(stderr, "  %s: status %d: %s", what, r.status, r.err);
                    failures++;
                }
            } else {
                expect_untouched_on_failure("sd.db", TRUE, what, r);
                if (strcmp(commands[c][0], "report") != 0)
                    CHECK(g_str_has_prefix(r.err, "heaplens: sd.db is damaged (")); /* as given */
            }
            run_result_release(&r);
        }
    }
}

/* A hand-edited recording: sizes near 2^63, negative sizes and counters. Every command prints
 * its result or one line and exits 1, never overflows; retention, roots and leaks leave the file
 * byte-identical when they fail. */
static void case_edited_values(void)
{
    const char *const edits[] = {
        "UPDATE objects SET size = 9223372036854775000 WHERE id % 3 = 0",
        "UPDATE objects SET size = -1000 WHERE id % 4 = 1",
        "INSERT OR REPLACE INTO counters (name, value) VALUES ('allocs_dropped', -7)",
        "UPDATE gcs SET pause_ns = 9223372036854775000",
    };
    const char *const commands[][6] = {
        {"allocations", "bad.db", NULL}, {"allocations", "bad.db", "--json", NULL},
        {"survivors", "bad.db", NULL},   {"survivors", "bad.db", "--by", "age", NULL},
        {"gcs", "bad.db", NULL},         {"info", "bad.db", NULL},
        {"diff", "bad.db", NULL},        {"diff", "bad.db", "--json", NULL},
        {"retention", "bad.db", NULL},   {"roots", "bad.db", "--type", "App.Leak", NULL},
        {"leaks", "bad.db", NULL},       {"report", "bad.db", "--json", NULL},
    };
    for (size_t e = 0; e < G_N_ELEMENTS(edits); e++) {
        file_copy("graph.db", "before.db");
        fixture_sql("before.db", edits[e]);
        for (size_t c = 0; c < G_N_ELEMENTS(commands); c++) {
            file_copy("before.db", "bad.db");
            run_result r = run_in(heaplens, workdir, commands[c]);
            g_autofree char *what = g_strdup_printf("'%s', %s", edits[e], commands[c][0]);
            gboolean writes = strcmp(commands[c][0], "retention") == 0 ||
                              strcmp(commands[c][0], "roots") == 0 ||
                              strcmp(commands[c][0], "leaks") == 0;
            if (r.status != 0 || !writes)
                expect_untouched_on_failure("bad.db", r.status != 0, what, r);
            if (!(r.status == 0 || r.status == 1)) {
                fprintf(stderr, "  %s: status %d: %s", what, r.status, r.err);
                failures++;
            }
            CHECK(!strstr(r.out, "-7 allocations") && !strstr(r.err, "-7 allocations"));
            run_result_release(&r);
        }
    }
}

static void case_errors(void)
{
    EXPECT_ERROR("heaplens: nosnap.db has no heap snapshot; 'heaplens record' takes one at every "
                 "GC.Collect() (--snapshot induced, the default) and 'heaplens snapshot PID' on "
                 "demand\n",
                 "retention", "nosnap.db");
    EXPECT_ERROR("heaplens: no snapshot 9 in graph.db: its snapshots are 1 to 4\n", "retention",
                 "graph.db", "--snapshot", "9");
    EXPECT_ERROR("heaplens: no snapshot 2 in one.db: it has one snapshot, snapshot 1\n", "roots",
                 "one.db", "--snapshot", "2", "--object", "1");
    EXPECT_ERROR("heaplens: retention: --snapshot expects a snapshot number (1, 2, ...) or @CHECKPOINT, not 'x'\n",
                 "retention", "graph.db", "--snapshot", "x");
    EXPECT_ERROR("heaplens: retention: --by expects 'object' or 'type', not 'size'\n", "retention",
                 "graph.db", "--by", "size");
    EXPECT_ERROR("heaplens: roots: give either --object ID or --type NAME; see 'heaplens roots "
                 "--help'\n",
                 "roots", "graph.db");
    EXPECT_ERROR("heaplens: roots: give either --object ID or --type NAME; see 'heaplens roots "
                 "--help'\n",
                 "roots", "graph.db", "--object", "1", "--type", "App.Leak");
    EXPECT_ERROR("heaplens: no type named 'Lea' in graph.db (a full name, "
                 "'System.Collections.Generic.List<App.Item>', or one without namespaces, "
                 "'List<Item>'; see 'heaplens allocations')\n",
                 "roots", "graph.db", "--type", "Lea");
    EXPECT_ERROR("heaplens: object 99 is not in snapshot 4 (not allocated yet, dead, or never "
                 "tracked)\n",
                 "roots", "graph.db", "--object", "99");
    EXPECT_ERROR("heaplens: no instance of App.Churn in snapshot 2\n", "roots", "graph.db",
                 "--snapshot", "2", "--type", "App.Churn");
    EXPECT_ERROR("heaplens: leaks needs at least two heap snapshots to see growth; one.db has 1 "
                 "(take one per GC.Collect() with 'heaplens record', or with 'heaplens snapshot "
                 "PID')\n",
                 "leaks", "one.db");
    EXPECT_ERROR("heaplens: diff: no snapshot before snapshot 1 in one.db; give --from\n", "diff",
                 "one.db");
    /* backwards: the dead would be called new */
    EXPECT_ERROR("heaplens: diff: --from is snapshot 2 (GC 2), after --to's, snapshot 1 (GC 1): "
                 "--from names the earlier one (--from 1 --to 2)\n",
                 "diff", "graph.db", "--from", "2", "--to", "1");
    /* the same snapshot twice: "0 new, 0 dead" of any program */
    EXPECT_ERROR("heaplens: diff: --from and --to both name snapshot 2 (GC 2): compared with "
                 "itself it changes nothing; name two snapshots ('heaplens snapshots graph.db' "
                 "lists them)\n",
                 "diff", "graph.db", "--from", "2", "--to", "2");
    EXPECT_ERROR("heaplens: survivors: --by expects 'generation' or 'age', not 'type'\n",
                 "survivors", "graph.db", "--by", "type");
    EXPECT_ERROR("heaplens: leaks: unknown option '--snapshot'; see 'heaplens leaks --help'\n",
                 "leaks", "graph.db", "--snapshot", "1");
    run_result r = RUN("roots", "--help");
    CHECK_INT(r.status, 0);
    CHECK(g_str_has_prefix(r.out, "usage: heaplens roots FILE (--object ID | --type NAME)"));
    run_result_release(&r);
}

static const cli_test_case cases[] = {
    {"stored_damaged", case_stored_damaged},
    {"retention_readonly", case_retention_readonly},
    {"store_disk_full", case_store_disk_full},
    {"errors", case_errors},
    {"damaged_pages", case_damaged_pages},
    {"checked_once", case_checked_once},
    {"edited_values", case_edited_values},
};

int main(int argc, char **argv)
{
    return leaks_test_main(argc, argv, cases, G_N_ELEMENTS(cases));
}
