/* test_stacks.c — `heaplens stacks`, run as a user runs it, on recordings whose answers are known
 * by construction.
 *
 *   test_stacks HEAPLENS CASE|all      (HEAPLENS_TEST_KEEP=1 keeps the fixtures)
 *   test_stacks fixture DIR            only writes the fixtures into DIR (for speedscope_test.py)
 *
 * The recordings are built through the real writer (hl_stream_builder → store_writer), then the
 * samples and stacks of tests/unit/common/hl_stack_fixture.h are added. Each CASE is its own
 * ctest entry (stacks.<case>).
 */
#include "tests/unit/common/cli_test.h"
#include "tests/unit/common/hl_stack_fixture.h"
#include <unistd.h>

/* ---- checking runs ------------------------------------------------------------------ */

/* Runs a JSON command, checks it succeeded with nothing on stderr but `err`, and returns the
 * parsed document (NULL, and a failure, when stdout is not one JSON document). */
#define JSON_RUN(run, err) json_run(__FILE__, __LINE__, (run), NULL, (err))

/* "type|frame<-frame<-...|count|bytes|samples" per row, joined by "\n": the rows of a stacks
 * document in a form a test can spell out. */
static char *rows_text(const json_t *doc)
{
    GString *text = g_string_new(NULL);
    size_t i;
    json_t *row;
    json_array_foreach(json_object_get(doc, "rows"), i, row)
    {
        size_t f;
        json_t *frame;
        g_string_append_printf(text, "%s|", json_string_value(json_object_get(row, "type")));
        json_array_foreach(json_object_get(row, "frames"), f, frame)
            g_string_append_printf(text, "%s%s", f ? "<-" : "", json_string_value(frame));
        g_string_append_printf(text, "|%lld|%lld|%lld\n",
                               (long long)json_integer_value(json_object_get(row, "count")),
                               (long long)json_integer_value(json_object_get(row, "bytes")),
                               (long long)json_integer_value(json_object_get(row, "samples")));
    }
    return g_string_free(text, FALSE);
}

static void expect_rows(const char *file, int line, json_t *doc, const char *expected)
{
    g_autofree char *actual = doc ? rows_text(doc) : g_strdup("(no document)\n");
    if (strcmp(actual, expected) != 0) {
        fprintf(stderr, "%s:%d: rows differ\n--- expected:\n%s--- actual:\n%s---\n", file, line,
                expected, actual);
        failures++;
    }
    json_decref(doc);
}

#define EXPECT_ROWS(doc, expected) expect_rows(__FILE__, __LINE__, (doc), (expected))

/* The rows of the fixture (hl_stack_fixture.h), spelled out once. */
#define ROW_S2 "System.String|App.Names.Make<-App.Program.Run<-App.Program.Main|7000|224000|3\n"
#define ROW_S1                                                                                   \
    "App.Node|App.Tree.NewNode<-App.Tree.Build<-App.Program.Run<-App.Program.Main|2000|128000|2\n"
#define ROW_S3 "System.String|App.Names.Make<-App.Cache.Fill<-App.Program.Main|2000|64000|1\n"
#define ROW_S5 "System.String|[native]|500|16000|1\n"
#define ROW_S4 "System.Byte[]|App.Cache.Fill<-App.Program.Main|10|10000|1\n"
#define ROW_NONE "App.Node|[no stack captured]|100|6400|1\n"

/* ---- fixtures -------------------------------------------------------------------------- */

/* The recording under the samples: objects 1..4 with the fates hl_stack_fixture.h lists (5 dies
 * in GC 1), 3 GCs. `drops`: the collector lost allocations (for the note). */
static void fixture_recording(const char *name, gboolean lossy)
{
    hl_sb *sb = hl_sb_new();
    hl_sb_run_start(sb, 4242, "dotnet Stacks.dll");
    hl_sb_type(sb, 1, "App.Node");
    hl_sb_type(sb, 2, "System.String");
    hl_sb_type(sb, 3, "System.Byte[]");
    hl_sb_thread(sb, 100, 1, "Main");
    hl_sb_alloc(sb, 1, 1, 64, 100);
    hl_sb_alloc(sb, 2, 1, 64, 100);
    hl_sb_alloc(sb, 3, 2, 32, 100);
    hl_sb_alloc(sb, 4, 3, 1000, 100);
    hl_sb_alloc(sb, 5, 2, 32, 100);
    hl_sb_gc_start(sb, 1, 0, FALSE, 6);
    for (uint64_t id = 1; id <= 4; id++)
        hl_sb_fate(sb, 1, id, HL_FATE(HL_GEN_0, HL_GEN_1));
    hl_sb_fate(sb, 1, 5, HL_FATE(HL_GEN_0, HL_GEN_NONE));
    hl_sb_gc_end(sb, 1, HL_GC_FLAG_COMPACTING);
    hl_sb_gc_start(sb, 2, 1, FALSE, 6);
    hl_sb_death(sb, 2, 3);
    hl_sb_promotion(sb, 2, 1, HL_GEN_2);
    hl_sb_promotion(sb, 2, 2, HL_GEN_2);
    hl_sb_promotion(sb, 2, 4, HL_GEN_2);
    hl_sb_gc_end(sb, 2, HL_GC_FLAG_COMPACTING);
    hl_sb_gc_start(sb, 3, 2, TRUE, 6);
    hl_sb_death(sb, 3, 2);
    hl_sb_death(sb, 3, 4);
    if (lossy) {
        hl_gc_end e = {.gc = 3,
                       .end_mono_ns = HL_SB_MONO_NS + 31000000,
                       .resume_mono_ns = HL_SB_MONO_NS + 31010000,
                       .counters = {.allocs_seen = 105, .allocs_dropped = 100,
                                    .allocs_dropped_writer = 100}};
        hl_sb_gc_end_full(sb, &e);
        hl_sb_run_end_full(sb, &(hl_run_end){.end_unix_ns = HL_SB_START_UNIX_NS + 1000000000,
                                             .end_mono_ns = HL_SB_MONO_NS + 1000000000,
                                             .gcs = 3,
                                             .counters = e.counters});
    } else {
        hl_sb_gc_end(sb, 3, HL_GC_FLAG_COMPACTING);
        hl_sb_run_end(sb, 3);
    }
    fixture_write(sb, name);
}

static void fixture_samples(const char *name, gboolean link, int64_t dropped)
{
    g_autofree char *path = g_build_filename(workdir, name, NULL);
    g_autoptr(GError) error = NULL;
    if (!hl_stack_fixture_add(path, link, dropped, &error)) {
        fprintf(stderr, "cannot add samples to %s: %s\n", name, error->message);
        exit(2);
    }
}

/* The exact counts of the recording made what the samples estimate, per interval, type and
 * thread: each type's sites scaled to its exact count keep the estimates of
 * hl_stack_fixture.h, whose answers the cases spell out. */
static const char counts_as_samples_sql[] =
    "DELETE FROM alloc_counts;"
    "INSERT INTO alloc_counts (gc, type_id, thread, heap, count, bytes, survived, survived_bytes,"
    " flags) SELECT gc, type_id, thread, heap, round(sum(est_count)), round(sum(est_bytes)), 0, 0,"
    " 0 FROM alloc_samples GROUP BY 1, 2, 3, 4";

static const char scaled_sql[] =
    "UPDATE alloc_counts SET count = count * 2, bytes = bytes * 2 WHERE type_id = 1;"
    "UPDATE alloc_counts SET count = 3, bytes = 3000 WHERE type_id = 3;"
    "INSERT INTO types (id, name, class_id, flags) VALUES (4, 'App.Rare', 0, 0);"
    "INSERT INTO alloc_counts (gc, type_id, thread, heap, count, bytes, survived, survived_bytes,"
    " flags) VALUES (1, 4, 100, 0, 3, 96, 0, 0, 0), (2, 2, NULL, 0, 40, 1280, 0, 0, 1)";

/*   stack (innermost first)                                      type    count  bytes
 *   10 App.R.Leaf <- App.R.Rec <- App.R.Rec <- App.R.Rec <- Main  Node      100   6400
 *   11 App.R.Leaf <- App.R.Rec <- App.R.Rec <- Main               Node       50   3200
 *   12 App.R.Leaf <- (App.R.A <- App.R.B) x3 <- Main              String     30    960
 *   13 App.R.Leaf <- App.X.Run <- Main                            String     10    320
 *   14 App.R.Leaf <- App.Y.Run <- Main                            String     10    320 */
static const char recursion_sql[] =
    "INSERT INTO frames (id, name) VALUES (1, 'App.Program.Main'), (2, 'App.R.Rec'),"
    "  (3, 'App.R.Leaf'), (4, 'App.R.A'), (5, 'App.R.B'), (6, 'App.X.Run'), (7, 'App.Y.Run');"
    "INSERT INTO stacks (id, depth) VALUES (10, 5), (11, 4), (12, 8), (13, 3), (14, 3);"
    "INSERT INTO stack_frames (stack_id, position, frame_id) VALUES"
    "  (10, 0, 3), (10, 1, 2), (10, 2, 2), (10, 3, 2), (10, 4, 1),"
    "  (11, 0, 3), (11, 1, 2), (11, 2, 2), (11, 3, 1),"
    "  (12, 0, 3), (12, 1, 4), (12, 2, 5), (12, 3, 4), (12, 4, 5), (12, 5, 4), (12, 6, 5),"
    "  (12, 7, 1),"
    "  (13, 0, 3), (13, 1, 6), (13, 2, 1), (14, 0, 3), (14, 1, 7), (14, 2, 1);"
    "INSERT INTO alloc_samples (gc, type_id, thread, heap, size, stack_id, object_id, est_count,"
    " est_bytes) VALUES (1, 1, 100, 0, 64, 10, NULL, 100, 6400),"
    "  (1, 1, 100, 0, 64, 11, NULL, 50, 3200), (1, 2, 100, 0, 32, 12, NULL, 30, 960),"
    "  (1, 2, 100, 0, 32, 13, NULL, 10, 320), (1, 2, 100, 0, 32, 14, NULL, 10, 320);"
    "INSERT INTO sampling (id, source, mean_distance_bytes, biased, samples, samples_dropped)"
    "  VALUES (1, 'AllocationSampled', 102400, 0, 5, 0)";

static void fixtures_build(void)
{
    fixture_recording("stacks.db", FALSE);
    fixture_samples("stacks.db", TRUE, 0);
    fixture_sql("stacks.db", counts_as_samples_sql);
    /* the same samples, some lost, in a recording that lost allocations */
    fixture_recording("lossy.db", TRUE);
    fixture_samples("lossy.db", TRUE, 5);
    fixture_sql("lossy.db", counts_as_samples_sql);
    /* a recording without samples (--stacks off): the tables, no sampling row */
    fixture_recording("off.db", FALSE);
    fixture_file("notes.txt", "not a database\n");
    /* the same samples from AllocationTick: biased, no fixed distance */
    /* exact counts that differ from the estimates: Node twice them, Byte[] 3 where its one
     * sample says 10 (a rare type overestimated), a type never sampled, and allocations the
     * runtime did not report */
    fixture_recording("scaled.db", FALSE);
    fixture_samples("scaled.db", TRUE, 0);
    fixture_sql("scaled.db", counts_as_samples_sql);
    fixture_sql("scaled.db", scaled_sql);
    /* the lossy recording with unreported allocations too: every term of the total */
    fixture_recording("totals.db", TRUE);
    fixture_samples("totals.db", TRUE, 5);
    fixture_sql("totals.db", counts_as_samples_sql);
    fixture_sql("totals.db", "INSERT INTO alloc_counts (gc, type_id, thread, heap, count, bytes,"
                             " survived, survived_bytes, flags) VALUES (2, 2, NULL, 0, 40, 1280,"
                             " 0, 0, 1)");
    /* recursion: stacks that differ only in their depth, a cycle of two frames, two methods
     * named Run */
    fixture_recording("recursion.db", FALSE);
    fixture_sql("recursion.db", recursion_sql);
    fixture_sql("recursion.db", counts_as_samples_sql);
    fixture_recording("tick.db", FALSE);
    fixture_samples("tick.db", TRUE, 0);
    fixture_sql("tick.db", counts_as_samples_sql);
    fixture_sql("tick.db", "UPDATE sampling SET source = 'AllocationTick', biased = 1,"
                           " mean_distance_bytes = NULL");
}

/* ---- cases ----------------------------------------------------------------------------- */

static void case_json(void)
{
    json_t *doc = JSON_RUN(RUN("stacks", "stacks.db", "--json"), "");
    /* the sampling metadata and the totals */
    json_t *sampling = json_object_get(doc, "sampling");
    CHECK(strcmp(json_string_value(json_object_get(sampling, "source")), "AllocationSampled") == 0);
    CHECK(json_integer_value(json_object_get(sampling, "mean_distance_bytes")) == 102400);
    CHECK(json_is_false(json_object_get(sampling, "biased")));
    CHECK(json_is_true(json_object_get(sampling, "estimated")));
    CHECK(json_integer_value(json_object_get(sampling, "samples")) == 9);
    json_t *total = json_object_get(doc, "total");
    CHECK(json_integer_value(json_object_get(total, "count")) == 11610);
    CHECK(json_integer_value(json_object_get(total, "bytes")) == 448400);
    CHECK(json_integer_value(json_object_get(total, "samples")) == 9);
    CHECK(json_integer_value(json_object_get(total, "sites")) == 6);
    CHECK(strcmp(json_string_value(json_object_get(doc, "by")), "allocated") == 0);
    /* every site, heaviest first: the rows sum to the totals */
    int64_t count = 0, bytes = 0;
    size_t i;
    json_t *row;
    json_array_foreach(json_object_get(doc, "rows"), i, row)
    {
        count += json_integer_value(json_object_get(row, "count"));
        bytes += json_integer_value(json_object_get(row, "bytes"));
        CHECK(json_object_size(row) == 5); /* type, frames, count, bytes, samples */
    }
    CHECK(count == 11610 && bytes == 448400);
    EXPECT_ROWS(doc, ROW_S2 ROW_S1 ROW_S3 ROW_S5 ROW_S4 ROW_NONE);
}

/* The estimates per type agree with the shared schema's view allocation_estimates_by_type. */
static void case_estimates(void)
{
    g_autofree char *path = g_build_filename(workdir, "stacks.db", NULL);
    sqlite3 *db = NULL;
    sqlite3_stmt *stmt = NULL;
    /* The first command builds the recording's generation history; it could not commit while
     * the statement below is open (store.h). */
    json_decref(JSON_RUN(RUN("stacks", "stacks.db", "--json"), ""));
    CHECK(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK);
    CHECK(sqlite3_prepare_v2(db, "SELECT type, est_count, est_bytes, samples FROM "
                                 "allocation_estimates_by_type ORDER BY type",
                             -1, &stmt, NULL) == SQLITE_OK);
    while (stmt && sqlite3_step(stmt) == SQLITE_ROW) {
        const char *type = (const char *)sqlite3_column_text(stmt, 0);
        json_t *doc = JSON_RUN(RUN("stacks", "stacks.db", "--json", "--type", type), "");
        json_t *total = json_object_get(doc, "total");
        CHECK(json_integer_value(json_object_get(total, "count")) ==
              (json_int_t)sqlite3_column_double(stmt, 1));
        CHECK(json_integer_value(json_object_get(total, "bytes")) ==
              (json_int_t)sqlite3_column_double(stmt, 2));
        CHECK(json_integer_value(json_object_get(total, "samples")) ==
              sqlite3_column_int64(stmt, 3));
        json_decref(doc);
    }
    sqlite3_finalize(stmt);
    sqlite3_close(db);
}

static void case_text(void)
{
    EXPECT(RUN("stacks", "stacks.db", "--top", "3"), 0,
           "allocations of stacks.db, by call stack: 11,610, 437.9 KiB\n"
           "(scaled to the exact count per type; estimated from 9 samples, mean distance 102,400 "
           "bytes (100.0 KiB); source\n AllocationSampled)\n"
           "the 3 heaviest of 6 sites by bytes, innermost frame first:\n"
           "\n"
           "#1  218.8 KiB  7,000 allocations  50.0%  (3 samples)\n"
           "    new System.String\n"
           "        App.Names.Make\n"
           "        App.Program.Run\n"
           "        App.Program.Main\n"
           "\n"
           "#2  125.0 KiB  2,000 allocations  28.5%  (2 samples)\n"
           "    new App.Node\n"
           "        App.Tree.NewNode\n"
           "        App.Tree.Build\n"
           "        App.Program.Run\n"
           "        App.Program.Main\n"
           "\n"
           "#3  62.5 KiB  2,000 allocations  14.3%  (1 sample)\n"
           "    new System.String\n"
           "        App.Names.Make\n"
           "        App.Cache.Fill\n"
           "        App.Program.Main\n",
           "");
    /* --depth: the first frames, and how many more */
    EXPECT(RUN("stacks", "stacks.db", "--top", "1", "--depth", "2"), 0,
           "allocations of stacks.db, by call stack: 11,610, 437.9 KiB\n"
           "(scaled to the exact count per type; estimated from 9 samples, mean distance 102,400 "
           "bytes (100.0 KiB); source\n AllocationSampled)\n"
           "the 1 heaviest of 6 sites by bytes, innermost frame first:\n"
           "\n"
           "#1  218.8 KiB  7,000 allocations  50.0%  (3 samples)\n"
           "    new System.String\n"
           "        App.Names.Make\n"
           "        App.Program.Run\n"
           "        … 1 more frame\n",
           "");
    json_t *doc = JSON_RUN(RUN("stacks", "stacks.db", "--json", "--top", "1", "--depth", "1"), "");
    json_t *row = json_array_get(json_object_get(doc, "rows"), 0);
    CHECK(json_array_size(json_object_get(row, "frames")) == 1);
    CHECK(json_integer_value(json_object_get(row, "more_frames")) == 2);
    json_decref(doc);
    EXPECT(RUN("stacks", "stacks.db", "--depth", "0"), 1, "",
           "heaplens: stacks: --depth expects a number of frames from 1 to 4,294,967,295, not "
           "'0'\n");
    /* the maximum is said: "a positive number of frames" refused 99999999999 without one */
    EXPECT(RUN("stacks", "stacks.db", "--depth", "4294967296"), 1, "",
           "heaplens: stacks: --depth expects a number of frames from 1 to 4,294,967,295, not "
           "'4294967296'\n");
    /* a site's samples past 999 with separators, as every count (WebApi's said "(3395
     * samples)") */
    fixture_recording("many.db", FALSE);
    fixture_samples("many.db", TRUE, 0);
    fixture_sql("many.db", counts_as_samples_sql);
    fixture_sql("many.db",
                "INSERT INTO alloc_samples (gc, type_id, thread, heap, size, stack_id, object_id,"
                " est_count, est_bytes) SELECT gc, type_id, thread, heap, size, stack_id,"
                " object_id, est_count, est_bytes FROM alloc_samples, (WITH RECURSIVE n(i) AS"
                " (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 1200) SELECT i FROM n)"
                " WHERE id = (SELECT min(id) FROM alloc_samples)");
    run_result many = RUN("stacks", "many.db", "--top", "6");
    CHECK(strstr(many.out, " (1,202 samples)\n") != NULL);
    if (failures)
        fprintf(stderr, "stacks said: %s", many.out);
    run_result_release(&many);
}

static void case_top(void)
{
    EXPECT_ROWS(JSON_RUN(RUN("stacks", "stacks.db", "--json", "--top=2"), ""), ROW_S2 ROW_S1);
    /* --top keeps the totals of every site */
    json_t *doc = JSON_RUN(RUN("stacks", "stacks.db", "--json", "--top", "1"), "");
    CHECK(json_integer_value(json_object_get(json_object_get(doc, "total"), "bytes")) == 448400);
    CHECK(json_integer_value(json_object_get(json_object_get(doc, "total"), "sites")) == 6);
    EXPECT_ROWS(doc, ROW_S2);
    /* the default: 10 */
    EXPECT_ROWS(JSON_RUN(RUN("stacks", "stacks.db", "--json"), ""),
                ROW_S2 ROW_S1 ROW_S3 ROW_S5 ROW_S4 ROW_NONE);
    EXPECT(RUN("stacks", "stacks.db", "--top", "0"), 1, "",
           "heaplens: stacks: --top expects a number from 1 to 4,294,967,295, not '0'\n");
    EXPECT(RUN("stacks", "stacks.db", "--top", "4294967296"), 1, "",
           "heaplens: stacks: --top expects a number from 1 to 4,294,967,295, not "
           "'4294967296'\n");
}

static void case_sort(void)
{
    /* By count: S1 and S3 tie at 2,000 allocations, S1 has more bytes. */
    json_t *doc = JSON_RUN(RUN("stacks", "stacks.db", "--json", "--sort", "count"), "");
    CHECK(strcmp(json_string_value(json_object_get(doc, "sort")), "count") == 0);
    EXPECT_ROWS(doc, ROW_S2 ROW_S1 ROW_S3 ROW_S5 ROW_NONE ROW_S4);
    EXPECT(RUN("stacks", "stacks.db", "--sort", "size"), 1, "",
           "heaplens: stacks: --sort expects 'bytes' or 'count', not 'size'\n");
}

static void case_type(void)
{
    EXPECT_ROWS(JSON_RUN(RUN("stacks", "stacks.db", "--json", "--type", "System.String"), ""),
                ROW_S2 ROW_S3 ROW_S5);
    /* the name without namespaces */
    json_t *doc = JSON_RUN(RUN("stacks", "stacks.db", "--json", "--type", "Node"), "");
    CHECK(strcmp(json_string_value(json_object_get(doc, "type")), "App.Node") == 0);
    EXPECT_ROWS(doc, ROW_S1 ROW_NONE);
    EXPECT(RUN("stacks", "stacks.db", "--type", "Nope"), 1, "",
           "heaplens: no type named 'Nope' in stacks.db (a full name, "
           "'System.Collections.Generic.List<App.Item>', or one without namespaces, "
           "'List<Item>'; see 'heaplens allocations')\n");
}

static void case_by_survived(void)
{
    /* objects 1 and 2 (S1) and 4 (S4) reached gen2; 3 died in gen1; the rest are untracked */
    json_t *doc = JSON_RUN(RUN("stacks", "stacks.db", "--json", "--by", "survived"), "");
    CHECK(strcmp(json_string_value(json_object_get(doc, "by")), "survived") == 0);
    CHECK(json_integer_value(json_object_get(json_object_get(doc, "total"), "bytes")) == 138000);
    EXPECT_ROWS(doc, "App.Node|App.Tree.NewNode<-App.Tree.Build<-App.Program.Run<-App.Program."
                     "Main|2000|128000|2\n" ROW_S4);
    EXPECT(RUN("stacks", "stacks.db", "--by", "age"), 1, "",
           "heaplens: stacks: --by expects 'allocated', 'survived', 'mid-life' or 'method', not "
           "'age'\n");
}

static void case_by_midlife(void)
{
    /* of those, 2 (S1) and 4 (S4) died in GC 3, in gen2 */
    EXPECT_ROWS(JSON_RUN(RUN("stacks", "stacks.db", "--json", "--by", "mid-life"), ""),
                "App.Node|App.Tree.NewNode<-App.Tree.Build<-App.Program.Run<-App.Program.Main|"
                "1000|64000|1\n" ROW_S4);
    EXPECT_ROWS(
        JSON_RUN(RUN("stacks", "stacks.db", "--json", "--by", "mid-life", "--type", "Byte[]"), ""),
        ROW_S4);
    EXPECT(RUN("stacks", "stacks.db", "--by", "mid-life", "--type", "System.String"), 0,
           "allocations of stacks.db, type System.String, promoted to gen2 and then collected "
           "there (mid-life crisis), by call stack: 0, 0 B\n"
           "(scaled to the exact count per type; estimated from 9 samples, mean distance 102,400 "
           "bytes (100.0 KiB); source\n AllocationSampled)\n"
           "no sampled allocation matches\n",
           "");
}

static void case_gc(void)
{
    json_t *doc = JSON_RUN(RUN("stacks", "stacks.db", "--json", "--gc", "2"), "");
    json_t *gcs = json_object_get(doc, "gcs");
    CHECK(json_integer_value(json_array_get(gcs, 0)) == 2 &&
          json_integer_value(json_array_get(gcs, 1)) == 2);
    EXPECT_ROWS(doc, "System.String|App.Names.Make<-App.Program.Run<-App.Program.Main|1000|32000|"
                     "1\n" ROW_S5);
    /* the tail: allocations after the last GC (3) */
    EXPECT_ROWS(JSON_RUN(RUN("stacks", "stacks.db", "--json", "--gc", "4"), ""), ROW_NONE);
    EXPECT_ROWS(JSON_RUN(RUN("stacks", "stacks.db", "--json", "--interval", "2..4"), ""),
                "System.String|App.Names.Make<-App.Program.Run<-App.Program.Main|1000|32000|"
                "1\n" ROW_S5 ROW_NONE);
    EXPECT_ROWS(JSON_RUN(RUN("stacks", "stacks.db", "--json", "--interval", "1..1", "--type",
                             "System.String"),
                         ""),
                "System.String|App.Names.Make<-App.Program.Run<-App.Program.Main|6000|192000|"
                "2\n" ROW_S3);
    EXPECT(RUN("stacks", "stacks.db", "--gc", "5"), 1, "",
           "heaplens: no GC 5 in stacks.db: its GCs are 1 to 3 (--gc 4: the allocations after "
           "the last)\n");
    EXPECT(RUN("stacks", "stacks.db", "--interval", "3..2"), 1, "",
           "heaplens: stacks: --interval expects A..B, two GC numbers with A <= B, not '3..2'\n");
    EXPECT(RUN("stacks", "stacks.db", "--interval", "2"), 1, "",
           "heaplens: stacks: --interval expects A..B, two GC numbers with A <= B, not '2'\n");
    EXPECT(RUN("stacks", "stacks.db", "--gc", "1", "--interval", "1..2"), 1, "",
           "heaplens: stacks: give --gc N or --interval A..B, not both\n");
}

static void case_no_stacks(void)
{
    const char *off = "heaplens: off.db has no allocation stacks: recorded with --stacks off\n";
    EXPECT(RUN("stacks", "off.db"), 1, "", off);
    EXPECT(RUN("stacks", "off.db", "--json"), 1, "", off);
    EXPECT(RUN("stacks", "missing.db"), 1, "", "heaplens: missing.db does not exist\n");
    EXPECT(RUN("stacks", "notes.txt"), 1, "",
           "heaplens: notes.txt is not a heaplens database (not an SQLite file)\n");
    EXPECT(RUN("stacks"), 1, "",
           "heaplens: stacks: missing FILE, the recording to read; see 'heaplens stacks --help'\n");
    EXPECT(RUN("stacks", "stacks.db", "--frob"), 1, "",
           "heaplens: stacks: unknown option '--frob'; see 'heaplens stacks --help'\n");
}

static void case_note(void)
{
    const char *note = "note: 100 allocations were lost (the writer fell behind); counts are "
                       "lower bounds\n";
    run_result r = RUN("stacks", "lossy.db", "--top", "1");
    CHECK(r.status == 0);
    CHECK(strstr(r.out, "; 5 samples were lost)\n") != NULL);
    CHECK(g_str_has_suffix(r.out, note));
    run_result_release(&r);
    g_autofree char *err = g_strconcat("heaplens: ", note, NULL);
    json_decref(JSON_RUN(RUN("stacks", "lossy.db", "--json"), err));
}

static void case_biased(void)
{
    EXPECT(RUN("stacks", "tick.db", "--top", "1"), 0,
           "allocations of tick.db, by call stack: 11,610, 437.9 KiB\n"
           "(scaled to the exact count per type; estimated from 9 samples; source AllocationTick, "
           "biased: a sample every ~100 KiB\n allocated, attributed to the allocation that "
           "crossed it, so large objects and their sites weigh more than their share)\n"
           "the 1 heaviest of 6 sites by bytes, innermost frame first:\n"
           "\n"
           "#1  218.8 KiB  7,000 allocations  50.0%  (3 samples)\n"
           "    new System.String\n"
           "        App.Names.Make\n"
           "        App.Program.Run\n"
           "        App.Program.Main\n",
           "");
    json_t *doc = JSON_RUN(RUN("stacks", "tick.db", "--json", "--top", "1"), "");
    json_t *sampling = json_object_get(doc, "sampling");
    CHECK(json_is_true(json_object_get(sampling, "biased")));
    CHECK(json_is_null(json_object_get(sampling, "mean_distance_bytes")));
    CHECK_STR(json_string_value(json_object_get(sampling, "source")), "AllocationTick");
    EXPECT_ROWS(doc, ROW_S2);
}

static void case_help(void)
{
    run_result r = RUN("stacks", "--help");
    CHECK(r.status == 0);
    CHECK(g_str_has_prefix(r.out, "usage: heaplens stacks FILE [--type NAME] [--top K]"));
    run_result_release(&r);
    run_result top = RUN("--help");
    CHECK(strstr(top.out, "\n  stacks       who allocates: the heaviest allocation call stacks") !=
          NULL);
    run_result_release(&top);
}

/* The speedscope file: its shape and its weights (speedscope_test.py checks it against the
 * published schema). */
static void case_speedscope(void)
{
    EXPECT(RUN("stacks", "stacks.db", "--speedscope", "out.speedscope.json"), 0, "",
           "heaplens: 6 allocation sites (437.9 KiB, 11,610 allocations) -> out.speedscope.json\n");
    g_autofree char *path = g_build_filename(workdir, "out.speedscope.json", NULL);
    json_error_t jerr;
    json_t *doc = json_load_file(path, 0, &jerr);
    CHECK(doc != NULL);
    json_t *frames = json_object_get(json_object_get(doc, "shared"), "frames");
    json_t *profiles = json_object_get(doc, "profiles");
    CHECK(json_array_size(profiles) == 2);
    const char *const units[] = {"bytes", "none"};
    const json_int_t totals[] = {448400, 11610};
    for (size_t p = 0; p < json_array_size(profiles); p++) {
        json_t *profile = json_array_get(profiles, p);
        json_t *samples = json_object_get(profile, "samples");
        json_t *weights = json_object_get(profile, "weights");
        CHECK(strcmp(json_string_value(json_object_get(profile, "type")), "sampled") == 0);
        CHECK(strcmp(json_string_value(json_object_get(profile, "unit")), units[p]) == 0);
        CHECK(json_array_size(samples) == 6 && json_array_size(weights) == 6);
        json_int_t sum = 0;
        for (size_t i = 0; i < json_array_size(weights); i++)
            sum += json_integer_value(json_array_get(weights, i));
        CHECK(sum == totals[p]);
        CHECK(json_integer_value(json_object_get(profile, "endValue")) == totals[p]);
    }
    /* the heaviest stack, root first, the type as the leaf */
    json_t *first = json_array_get(json_object_get(json_array_get(profiles, 0), "samples"), 0);
    GString *names = g_string_new(NULL);
    size_t i;
    json_t *index;
    json_array_foreach(first, i, index)
        g_string_append_printf(
            names, "%s%s", i ? ";" : "",
            json_string_value(json_object_get(
                json_array_get(frames, (size_t)json_integer_value(index)), "name")));
    CHECK(strcmp(names->str, "App.Program.Main;App.Program.Run;App.Names.Make;new System.String") ==
          0);
    g_string_free(names, TRUE);
    json_decref(doc);
    EXPECT(RUN("stacks", "stacks.db", "--speedscope", "."), 1, "",
           "heaplens: cannot write .: it is a directory\n");
    /* --top K: the line says what the file holds, the K heaviest sites, and then the whole (it
     * said "2 allocation sites (437.9 KiB, 11,610 allocations)" of a file holding less) */
    run_result top = RUN("stacks", "stacks.db", "--top", "2", "--speedscope", "top.json");
    g_autofree char *top_path = g_build_filename(workdir, "top.json", NULL);
    json_t *top_doc = json_load_file(top_path, 0, &jerr);
    json_t *top_weights =
        json_object_get(json_array_get(json_object_get(top_doc, "profiles"), 1), "weights");
    json_int_t top_count = 0;
    for (size_t w = 0; w < json_array_size(top_weights); w++)
        top_count += json_integer_value(json_array_get(top_weights, w));
    CHECK(top.status == 0 && json_array_size(top_weights) == 2);
    CHECK_INT(top_count, 9000);
    CHECK_STR(top.err, "heaplens: the 2 heaviest of 6 allocation sites (343.8 KiB, 9,000 "
                       "allocations; of 437.9 KiB, 11,610 allocations in all) -> top.json\n");
    json_decref(top_doc);
    run_result_release(&top);
}

/* --speedscope never writes over what the command reads: the recording, by name or through a
 * link, nor its -wal, -shm or -journal file (existing or not yet); "-" is stdout, as `report -o
 * -`. */
static void case_speedscope_inputs(void)
{
    run_result first = RUN("info", "stacks.db"); /* builds the generation history, once */
    run_result_release(&first);
    g_autoptr(GBytes) before = fixture_bytes("stacks.db");
    g_autofree char *link = fixture_path("link.db");
    CHECK(symlink("stacks.db", link) == 0);
    EXPECT(RUN("stacks", "stacks.db", "--speedscope", "stacks.db"), 1, "",
           "heaplens: cannot write stacks.db: it is stacks.db, which this command reads; name "
           "another file\n");
    EXPECT(RUN("stacks", "stacks.db", "--speedscope", "link.db"), 1, "",
           "heaplens: cannot write link.db: it is stacks.db, which this command reads; name "
           "another file\n");
    EXPECT(RUN("stacks", "link.db", "--speedscope", "./stacks.db"), 1, "",
           "heaplens: cannot write ./stacks.db: it is link.db, which this command reads; name "
           "another file\n");
    EXPECT(RUN("stacks", "stacks.db", "--speedscope", "stacks.db-wal"), 1, "",
           "heaplens: cannot write stacks.db-wal: it is stacks.db-wal, which this command reads; "
           "name another file\n");
    EXPECT(RUN("stacks", "link.db", "--speedscope", "stacks.db-shm"), 1, "",
           "heaplens: cannot write stacks.db-shm: it is link.db-shm, which this command reads; "
           "name another file\n");
    /* a -journal SQLite would take for a hot one: every read-only command then failed */
    EXPECT(RUN("stacks", "stacks.db", "--speedscope", "stacks.db-journal"), 1, "",
           "heaplens: cannot write stacks.db-journal: it is stacks.db-journal, which this command "
           "reads; name another file\n");
    g_autoptr(GBytes) after = fixture_bytes("stacks.db");
    CHECK(before && after && g_bytes_equal(before, after));
    g_autofree char *wal = fixture_path("stacks.db-wal");
    CHECK(!g_file_test(wal, G_FILE_TEST_EXISTS));

    run_result r = RUN("stacks", "stacks.db", "--speedscope", "-");
    json_error_t jerr;
    json_t *doc = json_loads(r.out, 0, &jerr);
    CHECK(r.status == 0 && doc && json_array_size(json_object_get(doc, "profiles")) == 2);
    CHECK(strcmp(r.err, "heaplens: 6 allocation sites (437.9 KiB, 11,610 allocations) -> -\n") ==
          0);
    json_decref(doc);
    run_result_release(&r);
    g_autofree char *dash = fixture_path("-");
    CHECK(!g_file_test(dash, G_FILE_TEST_EXISTS));
}

/* ---- scaling, totals, recursion, methods ------------------------------------------------ */

/* count and bytes per type of a stacks or allocations document's rows */
static GHashTable *per_type_new(json_t *doc)
{
    GHashTable *sums = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
    size_t i;
    json_t *row;
    json_array_foreach(json_object_get(doc, "rows"), i, row)
    {
        const char *type = json_string_value(json_object_get(row, "type"));
        int64_t *sum = g_hash_table_lookup(sums, type);
        if (!sum) {
            sum = g_new0(int64_t, 2);
            g_hash_table_insert(sums, g_strdup(type), sum);
        }
        sum[0] += json_integer_value(json_object_get(row, "count"));
        sum[1] += json_integer_value(json_object_get(row, "bytes"));
    }
    return sums;
}

static json_int_t total_of(json_t *doc, const char *key)
{
    return json_integer_value(json_object_get(json_object_get(doc, "total"), key));
}

/* Full mode: each type's sites add up to its exact count, also where its samples say more (a
 * rare type), a type never sampled and allocations the runtime did not report are sites of
 * their own, and the total is info's and allocations'. */
static void case_scaled(void)
{
    json_t *stacks = JSON_RUN(RUN("stacks", "scaled.db", "--json", "--top", "100"), "");
    json_t *allocations = JSON_RUN(RUN("allocations", "scaled.db", "--json"), "");
    json_t *info = JSON_RUN(RUN("info", "scaled.db", "--json"), "");
    CHECK(json_is_true(json_object_get(json_object_get(stacks, "sampling"), "scaled")));
    g_autoptr(GHashTable) sites = per_type_new(stacks);
    g_autoptr(GHashTable) exact = per_type_new(allocations);
    CHECK(g_hash_table_size(sites) == 4 && g_hash_table_size(exact) == 4);
    GHashTableIter it;
    gpointer key, value;
    g_hash_table_iter_init(&it, exact);
    while (g_hash_table_iter_next(&it, &key, &value)) {
        const int64_t *want = value, *got = g_hash_table_lookup(sites, key);
        if (!got || got[0] != want[0] || got[1] != want[1]) {
            fprintf(stderr, "%s: sites of %s add up to %lld, %lld; allocations %lld, %lld\n",
                    __func__, (const char *)key, got ? (long long)got[0] : -1LL,
                    got ? (long long)got[1] : -1LL, (long long)want[0], (long long)want[1]);
            failures++;
        }
    }
    /* Node 4,200 (twice the estimates), String 9,500 + 40 unreported, Byte[] 3 where its sample
     * said 10, Rare 3 never sampled */
    CHECK(total_of(stacks, "count") == 13746 && total_of(stacks, "bytes") == 577176);
    CHECK(total_of(allocations, "count") == 13746 && total_of(allocations, "bytes") == 577176);
    CHECK(json_integer_value(json_object_get(json_object_get(info, "totals"), "allocations")) ==
          13746);
    EXPECT_ROWS(stacks,
                "App.Node|App.Tree.NewNode<-App.Tree.Build<-App.Program.Run<-App.Program.Main|"
                "4000|256000|2\n" ROW_S2 ROW_S3 ROW_S5
                "App.Node|[no stack captured]|200|12800|1\n"
                "System.Byte[]|App.Cache.Fill<-App.Program.Main|3|3000|1\n"
                "System.String|[not reported by the runtime]|40|1280|0\n"
                "App.Rare|[not sampled]|3|96|0\n");
    json_decref(info);
    json_decref(allocations);
    /* the intervals' own exact counts: GC 1's Node, String and Rare */
    EXPECT_ROWS(JSON_RUN(RUN("stacks", "scaled.db", "--json", "--gc", "1", "--type", "Node"), ""),
                "App.Node|App.Tree.NewNode<-App.Tree.Build<-App.Program.Run<-App.Program.Main|"
                "4000|256000|2\n");
    EXPECT(RUN("stacks", "scaled.db", "--top", "1"), 0,
           "allocations of scaled.db, by call stack: 13,746, 563.6 KiB\n"
           "  13,706 (562.4 KiB) reported by the runtime one by one\n"
           "  + 40 (1.2 KiB) not reported by the runtime (delegates, boxes), counted in gen0 at "
           "each GC\n"
           "(scaled to the exact count per type; estimated from 9 samples, mean distance 102,400 "
           "bytes (100.0 KiB); source\n AllocationSampled)\n"
           "the 1 heaviest of 8 sites by bytes, innermost frame first:\n"
           "\n"
           "#1  250.0 KiB  4,000 allocations  44.4%  (2 samples)\n"
           "    new App.Node\n"
           "        App.Tree.NewNode\n"
           "        App.Tree.Build\n"
           "        App.Program.Run\n"
           "        App.Program.Main\n",
           "");
}

/* info, allocations and stacks give one total and the same words for its terms, on a
 * recording that lost allocations and has allocations the runtime did not report. */
static void case_totals(void)
{
    const char *note = "heaplens: note: 100 allocations were lost (the writer fell behind); "
                       "counts are lower bounds\n";
    json_t *stacks = JSON_RUN(RUN("stacks", "totals.db", "--json", "--top", "100"), note);
    json_t *allocations = JSON_RUN(RUN("allocations", "totals.db", "--json"), note);
    json_t *info = JSON_RUN(RUN("info", "totals.db", "--json"), note);
    json_t *a = json_object_get(allocations, "total");
    json_t *i = json_object_get(json_object_get(info, "allocations"), "total");
    json_t *s = json_object_get(json_object_get(stacks, "total"), "allocations");
    CHECK(a && json_equal(a, i) && json_equal(a, s));
    /* the terms add up to the total; the lost are not in it */
    json_int_t reported =
        json_integer_value(json_object_get(json_object_get(a, "reported"), "count"));
    json_int_t unreported =
        json_integer_value(json_object_get(json_object_get(a, "unreported"), "count"));
    CHECK(reported == 11610 && unreported == 40);
    CHECK(json_integer_value(json_object_get(a, "count")) == reported + unreported);
    CHECK(json_integer_value(json_object_get(a, "lost")) == 100);
    CHECK(json_integer_value(json_object_get(a, "seen")) == 105);
    CHECK(total_of(stacks, "count") == reported + unreported);
    CHECK(json_integer_value(json_object_get(json_object_get(info, "totals"), "allocations")) ==
          reported + unreported);
    int64_t rows = 0;
    size_t k;
    json_t *row;
    json_array_foreach(json_object_get(stacks, "rows"), k, row)
        rows += json_integer_value(json_object_get(row, "count"));
    CHECK(rows == reported + unreported);
    json_decref(stacks);
    json_decref(allocations);
    json_decref(info);
    /* the same words in the three texts */
    const char *terms = "  11,610 (437.9 KiB) reported by the runtime one by one\n"
                        "  + 40 (1.2 KiB) not reported by the runtime (delegates, boxes), counted "
                        "in gen0 at each GC\n"
                        "  not in the total: 100 reported, then lost uncounted (allocs_dropped): "
                        "at least 11,750 in all\n";
    g_auto(GStrv) lines = g_strsplit(terms, "\n", -1);
    const char *commands[][2] = {{"stacks", "--top=1"}, {"allocations", "--top=1"}, {"info", NULL}};
    for (size_t c = 0; c < G_N_ELEMENTS(commands); c++) {
        run_result r = commands[c][1] ? RUN(commands[c][0], "totals.db", commands[c][1])
                                      : RUN(commands[c][0], "totals.db");
        CHECK(r.status == 0);
        for (guint l = 0; lines[l] && *lines[l]; l++) {
            /* info indents the terms under its key column */
            const char *term = lines[l] + 2;
            if (!strstr(r.out, term)) {
                fprintf(stderr, "%s: %s does not say '%s'\n%s", __func__, commands[c][0], term,
                        r.out);
                failures++;
            }
        }
        run_result_release(&r);
    }
    EXPECT(RUN("allocations", "totals.db", "--top", "1"), 0,
           "11,650 allocations (439.1 KiB) of 3 types\n"
           "  11,610 (437.9 KiB) reported by the runtime one by one\n"
           "  + 40 (1.2 KiB) not reported by the runtime (delegates, boxes), counted in gen0 at "
           "each GC\n"
           "  not in the total: 100 reported, then lost uncounted (allocs_dropped): at least "
           "11,750 in all\n"
           "\n"
           "count      bytes  type\n"
           "9,540  298.1 KiB  System.String\n"
           "note: 100 allocations were lost (the writer fell behind); counts are lower bounds\n",
           "");
}

static void case_recursion(void)
{
    EXPECT(RUN("stacks", "recursion.db", "--top", "2"), 0,
           "allocations of recursion.db, by call stack: 200, 10.9 KiB\n"
           "(scaled to the exact count per type; estimated from 5 samples, mean distance 102,400 "
           "bytes (100.0 KiB); source\n AllocationSampled)\n"
           "the 2 heaviest of 4 sites by bytes (recursion folded: 1 stacks merged into others), "
           "innermost frame first:\n"
           "\n"
           "#1  9.4 KiB  150 allocations  85.7%  (2 samples from 2 stacks)\n"
           "    new App.Node\n"
           "        App.R.Leaf\n"
           "        App.R.Rec  ×2–3\n"
           "        App.Program.Main\n"
           "\n"
           "#2  960 B  30 allocations  8.6%  (1 sample)\n"
           "    new System.String\n"
           "        App.R.Leaf\n"
           "      ┌ App.R.A\n"
           "      └ App.R.B  ×3\n"
           "        App.Program.Main\n",
           "");
    json_t *doc = JSON_RUN(RUN("stacks", "recursion.db", "--json", "--top", "1"), "");
    json_t *row = json_array_get(json_object_get(doc, "rows"), 0);
    json_t *fold = json_array_get(json_object_get(row, "folds"), 0);
    CHECK(json_integer_value(json_object_get(fold, "first")) == 1 &&
          json_integer_value(json_object_get(fold, "frames")) == 1 &&
          json_integer_value(json_array_get(json_object_get(fold, "repeats"), 0)) == 2 &&
          json_integer_value(json_array_get(json_object_get(fold, "repeats"), 1)) == 3);
    CHECK(json_integer_value(json_object_get(row, "stacks")) == 2);
    json_decref(doc);
    /* a fold is shown whole, even past --depth */
    EXPECT(RUN("stacks", "recursion.db", "--top", "2", "--depth", "2", "--type", "String"), 0,
           "allocations of recursion.db, type System.String, by call stack: 50, 1.6 KiB\n"
           "(scaled to the exact count per type; estimated from 5 samples, mean distance 102,400 "
           "bytes (100.0 KiB); source\n AllocationSampled)\n"
           "the 2 heaviest of 3 sites by bytes, innermost frame first:\n"
           "\n"
           "#1  960 B  30 allocations  60.0%  (1 sample)\n"
           "    new System.String\n"
           "        App.R.Leaf\n"
           "      ┌ App.R.A\n"
           "      └ App.R.B  ×3\n"
           "        … 1 more frame\n"
           "\n"
           "#2  320 B  10 allocations  20.0%  (1 sample)\n"
           "    new System.String\n"
           "        App.R.Leaf\n"
           "        App.X.Run\n"
           "        … 1 more frame\n",
           "");
}

/* The by-method view against the stacks: a method's inclusive figures are the sum over the
 * stacks that hold it (each stack once, however deep its recursion), computed here from the
 * samples in SQL; the exclusive figures add up to the total. */
static void check_methods(const char *name)
{
    json_t *doc = JSON_RUN(RUN("stacks", name, "--json", "--by", "method", "--top", "1000"), "");
    CHECK(strcmp(json_string_value(json_object_get(doc, "by")), "method") == 0);
    g_autofree char *path = fixture_path(name);
    sqlite3 *db = NULL;
    sqlite3_stmt *stmt = NULL;
    CHECK(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK);
    CHECK(sqlite3_prepare_v2(
              db,
              "SELECT f.name, round(total(s.est_count)), round(total(s.est_bytes))"
              "  FROM alloc_samples s JOIN frames f"
              "    ON f.id IN (SELECT frame_id FROM stack_frames WHERE stack_id = s.stack_id)"
              " WHERE f.name = ?1",
              -1, &stmt, NULL) == SQLITE_OK);
    int64_t exclusive = 0, exclusive_bytes = 0;
    size_t i;
    json_t *row;
    json_array_foreach(json_object_get(doc, "rows"), i, row)
    {
        const char *method = json_string_value(json_object_get(row, "method"));
        json_t *inclusive = json_object_get(row, "inclusive");
        json_t *excl = json_object_get(row, "exclusive");
        exclusive += json_integer_value(json_object_get(excl, "count"));
        exclusive_bytes += json_integer_value(json_object_get(excl, "bytes"));
        if (method[0] == '[' && strcmp(method, "[native]") != 0)
            continue; /* a pseudo frame: no stack_frames row */
        sqlite3_reset(stmt);
        sqlite3_bind_text(stmt, 1, method, -1, SQLITE_TRANSIENT);
        CHECK(sqlite3_step(stmt) == SQLITE_ROW);
        long long count = (long long)json_integer_value(json_object_get(inclusive, "count"));
        long long bytes = (long long)json_integer_value(json_object_get(inclusive, "bytes"));
        long long want_count = (long long)sqlite3_column_int64(stmt, 1);
        long long want_bytes = (long long)sqlite3_column_int64(stmt, 2);
        if (count != want_count || bytes != want_bytes) {
            fprintf(stderr, "%s: %s inclusive %lld, %lld; the stacks that hold it %lld, %lld\n",
                    name, method, count, bytes, want_count, want_bytes);
            failures++;
        }
    }
    CHECK(exclusive == total_of(doc, "count") && exclusive_bytes == total_of(doc, "bytes"));
    CHECK(total_of(doc, "methods") == (json_int_t)json_array_size(json_object_get(doc, "rows")));
    sqlite3_finalize(stmt);
    sqlite3_close(db);
    json_decref(doc);
}

static void case_methods(void)
{
    check_methods("stacks.db");
    check_methods("recursion.db");
    EXPECT(RUN("stacks", "recursion.db", "--by", "method", "--top", "3"), 0,
           "allocations of recursion.db, by method: 200, 10.9 KiB\n"
           "(scaled to the exact count per type; estimated from 5 samples, mean distance 102,400 "
           "bytes (100.0 KiB); source\n AllocationSampled)\n"
           "the heaviest 3 of 7 methods by inclusive bytes:\n"
           "(inclusive: allocated in the method and in what it calls, recursion once; exclusive: "
           "in the method itself)\n"
           "\n"
           "inclusive       %  count  exclusive  count  method\n"
           " 10.9 KiB  100.0%    200   10.9 KiB    200  App.R.Leaf\n"
           " 10.9 KiB  100.0%    200        0 B      0  App.Program.Main\n"
           "  9.4 KiB   85.7%    150        0 B      0  App.R.Rec\n",
           "");
    EXPECT(RUN("stacks", "recursion.db", "--by", "method", "--method", "Rec"), 1, "",
           "heaplens: stacks: give --by method (every method) or --method NAME (one), not both\n");
}

static void case_method(void)
{
    EXPECT(RUN("stacks", "stacks.db", "--method", "Names.Make"), 0,
           "allocations of stacks.db, by call stack: 11,610, 437.9 KiB\n"
           "(scaled to the exact count per type; estimated from 9 samples, mean distance 102,400 "
           "bytes (100.0 KiB); source\n AllocationSampled)\n"
           "\n"
           "App.Names.Make\n"
           "  inclusive 281.2 KiB, 9,000 allocations (64.2% of all): in it and in what it calls\n"
           "  exclusive 281.2 KiB, 9,000 allocations: in it\n"
           "\n"
           "2 callers (the frame outside its outermost call; shares of its inclusive bytes):\n"
           "    bytes  share  count  caller\n"
           "218.8 KiB  77.8%  7,000  App.Program.Run\n"
           " 62.5 KiB  22.2%  2,000  App.Cache.Fill\n"
           "\n"
           "1 callee (the frame inside its innermost call; new TYPE: allocated in it):\n"
           "    bytes   share  count  callee\n"
           "281.2 KiB  100.0%  9,000  new System.String\n",
           "");
    json_t *doc = JSON_RUN(RUN("stacks", "recursion.db", "--json", "--method", "App.R.B"), "");
    json_t *callers = json_object_get(doc, "callers"), *callees = json_object_get(doc, "callees");
    CHECK(json_integer_value(json_object_get(json_object_get(json_object_get(doc, "method"),
                                                             "inclusive"), "count")) == 30);
    CHECK(json_array_size(callers) == 1 && json_array_size(callees) == 1);
    CHECK_STR(json_string_value(json_object_get(json_array_get(callers, 0), "name")),
              "App.Program.Main");
    CHECK_STR(json_string_value(json_object_get(json_array_get(callees, 0), "name")), "App.R.A");
    json_decref(doc);
    EXPECT(RUN("stacks", "recursion.db", "--method", "Run"), 1, "",
           "heaplens: stacks: --method 'Run' names 2 methods: App.X.Run, App.Y.Run; give one "
           "whole name\n");
    EXPECT(RUN("stacks", "recursion.db", "--method", "Nope"), 1, "",
           "heaplens: no method 'Nope' in the allocation stacks of recursion.db (a frame's full "
           "name, 'Ns.Type.Method', or its end, 'Type.Method'; see 'heaplens stacks --by "
           "method')\n");
}

static const cli_test_case cases[] = {
    {"json", case_json},       {"estimates", case_estimates}, {"text", case_text},
    {"top", case_top},         {"sort", case_sort},           {"type", case_type},
    {"by_survived", case_by_survived}, {"by_midlife", case_by_midlife}, {"gc", case_gc},
    {"no_stacks", case_no_stacks}, {"note", case_note},       {"help", case_help},
    {"speedscope", case_speedscope}, {"biased", case_biased},
    {"speedscope_inputs", case_speedscope_inputs},
    {"scaled", case_scaled},   {"totals", case_totals},       {"recursion", case_recursion},
    {"methods", case_methods}, {"method", case_method},
};

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: test_stacks HEAPLENS CASE|all\n       test_stacks fixture DIR\n");
        return 2;
    }
    if (strcmp(argv[1], "fixture") == 0) {
        workdir = g_strdup(argv[2]);
        g_mkdir_with_parents(workdir, 0755);
        g_autofree char *old = fixture_path("stacks.db");
        g_remove(old);
        fixture_recording("stacks.db", FALSE);
        fixture_samples("stacks.db", TRUE, 0);
        g_free(workdir);
        return 0;
    }
    heaplens = argv[1];
    return cli_test_main("stacks", argv[2], cases, G_N_ELEMENTS(cases), fixtures_build);
}
