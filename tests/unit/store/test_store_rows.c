/* test_store_rows.c — the rows the writer stores from a whole stream: the golden
 * recording row by row (survivors plain and packed), deaths, promotions, objects dead in their
 * first GC or allocated after the last one, sample weights, a record's rows in batches, ids
 * discovered by heap walks, sparse ids and the order the first read sorts them in.
 *
 * Usage: test_store_rows <case>|all   (ctest runs each case as store.<case>).
 * What the store's tests share: store_test.h.
 */
#define _GNU_SOURCE
#include "tests/unit/store/store_test.h"

#include <math.h>

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
               /* the recorded process's command line: the writer's ("heaplens record --
                * dotnet App.dll") does not start with it, so it is another process's */
               "dotnet App.dll --flag|4242|10.0.0|heaplens test|full|"
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

/* A GC's generation changes are stored sorted, as the first id and the gaps after it (ids that
 * came out of order included): the view and the built rows read them back. */
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
    /* Promotions out of order: sorted into one generation_changes row of gaps. */
    hl_sb_gc_start(sb, 3, 2, FALSE, 2);
    static const uint64_t promoted[] = {9, 3, 5};
    for (size_t i = 0; i < G_N_ELEMENTS(promoted); i++)
        hl_sb_promotion(sb, 3, base + promoted[i], HL_GEN_LOH);
    hl_sb_gc_end(sb, 3, 0);
    CHECK(hl_sb_write_db(sb, p, NULL, NULL, &error));
    CHECK_NO_ERROR(error);
    hl_sb_free(sb);
    static const char want[] = "3|2|1|3\n3|3|3|NULL\n5|2|1|3\n5|3|3|NULL\n6|2|1|2\n"
                               "9|2|1|3\n9|3|3|NULL\n";
    static const char sql[] = "SELECT object_id - 281474976710656, generation, from_gc, until_gc"
                              " FROM object_generations ORDER BY object_id, from_gc";
    sqlite3 *db = db_open(p);
    /* Their first generation is their chunk's (schema 10), not a change of its own (ids ascend
     * in a chunk: 3 after 6 starts another). */
    CHECK_ROWS(db, "SELECT gc, generation, count, objects FROM object_chunks ORDER BY rowid",
               "1|2|2|[[281474976710661,1,24],[1,1]]\n1|2|2|[[281474976710659,1,24],[6,1]]\n");
    CHECK_ROWS(db, "SELECT gc, generation, count, ids FROM generation_changes ORDER BY rowid",
               "3|3|3|[281474976710659,2,4]\n");
    CHECK_ROWS(db, sql, want);
    CHECK(store_history_build_file(p, NULL, NULL, &error));
    CHECK_NO_ERROR(error);
    /* the first generations in objects, the promotions as rows */
    CHECK(db_int(db, "SELECT count(*) FROM object_generation_rows") == 3);
    CHECK_ROWS(db, sql, want);
    sqlite3_close(db);
    tmp_dir_free(dir);
}

/* A GC's deaths in more ids than an object_deaths row holds (8192), in DEATHS records that end
 * anywhere in a row and in three ascending runs out of order (as the collector's model sends
 * them): three rows of 8192, 8192 and 3616 ids, each sorted (its gaps positive), every object
 * dead in that GC once. */
static void test_many_deaths(void)
{
    enum { N = 20000 };
    char *dir = tmp_dir_new();
    g_autoptr(GError) error = NULL;
    g_autofree char *p = g_build_filename(dir, "deaths.db", NULL);
    const uint64_t base = HL_DISCOVERED_ID_BASE;
    hl_sb *sb = hl_sb_new();
    hl_sb_set_batch_limit(sb, 7000);
    hl_sb_type(sb, 1, "A");
    hl_sb_gc_start(sb, 1, 2, TRUE, 2);
    for (uint64_t i = 1; i <= N; i++)
        hl_sb_discovered(sb, 1, base + i, 1, 24, HL_GEN_2);
    hl_sb_gc_end(sb, 1, 0);
    hl_sb_gc_start(sb, 2, 2, TRUE, 2);
    static const uint64_t runs[][2] = {{13334, N}, {6667, 13333}, {1, 6666}};
    for (size_t r = 0; r < G_N_ELEMENTS(runs); r++)
        for (uint64_t i = runs[r][0]; i <= runs[r][1]; i++)
            hl_sb_death(sb, 2, base + i);
    hl_sb_gc_end(sb, 2, 0);
    CHECK(hl_sb_write_db(sb, p, NULL, NULL, &error));
    CHECK_NO_ERROR(error);
    hl_sb_free(sb);
    sqlite3 *db = db_open(p);
    CHECK_ROWS(db, "SELECT gc, count FROM object_deaths ORDER BY rowid", "2|8192\n2|8192\n2|3616\n");
    /* Sorted: no gap after a row's first id is 0 or past the ids (a negative one would be). */
    CHECK(db_int(db, "SELECT count(*) FROM object_deaths d, json_each(d.ids) j"
                     " WHERE j.key > 0 AND (j.value < 1 OR j.value > 20000)") == 0);
    CHECK_ROWS(db, "SELECT count(*), count(DISTINCT object_id), min(object_id) - 281474976710656,"
                   " max(object_id) - 281474976710656, min(gc), max(gc) FROM object_death_rows",
               "20000|20000|1|20000|2|2\n");
    CHECK(db_int(db, "SELECT count(*) FROM objects WHERE died_gc = 2") == N);
    sqlite3_close(db);
    tmp_dir_free(dir);
}

/* Objects first seen in a heap walk become ordinary objects. (With a handle kind sent raw, and a
 * snapshot that never ends.) */
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

/* Schema 11: an object of its type's first size in its chunk has no size ([gap,type]): per
 * chunk (each thread's its own, and a chunk started again at 8192 objects writes the first
 * size again), a type whose slot another type holds (1 and 65 share one of the writer's 64)
 * writes every size, and one of another size writes it. The view and the built rows give every
 * object's size. */
static void test_implied_sizes(void)
{
    char *dir = tmp_dir_new();
    g_autoptr(GError) error = NULL;
    g_autofree char *p = g_build_filename(dir, "sizes.db", NULL);
    enum { LONG = STORE_CHUNK_OBJECTS + 2 };
    hl_sb *sb = hl_sb_new();
    hl_sb_set_packed_survivors(sb, TRUE);
    hl_sb_type(sb, 1, "A");
    hl_sb_type(sb, 2, "B[]");
    hl_sb_type(sb, 3, "C");
    hl_sb_type(sb, 65, "D");
    hl_sb_gc_start(sb, 1, 0, FALSE, 100000);
    static const struct {
        uint32_t tid, type;
        uint64_t size;
    } v[] = {
        {100, 1, 24}, {100, 1, 24}, {100, 1, 32}, {100, 2, 16}, {100, 65, 40},
        {100, 65, 40}, {100, 1, 24}, {100, 2, 16}, {101, 1, 32}, {101, 1, 32},
    };
    GString *want = g_string_new(NULL);
    uint64_t id = 1;
    for (size_t i = 0; i < G_N_ELEMENTS(v); i++, id++) {
        hl_survivor s = {.id = id, .size = v[i].size, .type_id = v[i].type, .os_tid = v[i].tid,
                         .heap = HL_GEN_0, .generation = HL_GEN_1};
        hl_sb_survivor(sb, 1, &s);
        g_string_append_printf(want, "%" PRIu64 "|%" PRIu32 "|%" PRIu64 "|%" PRIu32 "\n", id,
                               v[i].type, v[i].size, v[i].tid);
    }
    for (int i = 0; i < LONG; i++, id++) {
        hl_survivor s = {.id = id, .size = 48, .type_id = 3, .os_tid = 102, .heap = HL_GEN_0,
                         .generation = HL_GEN_1};
        hl_sb_survivor(sb, 1, &s);
    }
    hl_sb_gc_end(sb, 1, 0);
    hl_sb_run_end(sb, 1);
    CHECK(hl_sb_write_db(sb, p, NULL, NULL, &error));
    CHECK_NO_ERROR(error);
    hl_sb_free(sb);
    sqlite3 *db = db_open(p);
    CHECK_ROWS(db, "SELECT thread, count, objects FROM object_chunks WHERE thread < 102"
                   " ORDER BY rowid",
               "100|8|[[1,1,24],[1,1],[1,1,32],[1,2,16],[1,65,40],[1,65,40],[1,1],[1,2]]\n"
               "101|2|[[9,1,32],[1,1]]\n");
    /* thread 102: 8192 objects, then 2, each row starting with its first size */
    g_autofree char *long_rows = g_strdup_printf(
        "%d|[[11,3,48],[1,3],|%zu\n2|[[%d,3,48],[1,3]]|19\n", STORE_CHUNK_OBJECTS,
        strlen("[[11,3,48]]") + (size_t)(STORE_CHUNK_OBJECTS - 1) * strlen(",[1,3]"),
        STORE_CHUNK_OBJECTS + 11);
    CHECK_ROWS(db, "SELECT count, CASE count WHEN 2 THEN objects ELSE substr(objects, 1, 17) END,"
                   " length(objects) FROM object_chunks WHERE thread = 102 ORDER BY rowid",
               long_rows);
    static const char some[] = "SELECT id, type_id, size, thread FROM objects WHERE thread < 102"
                               " ORDER BY id";
    static const char many[] = "SELECT count(*), sum(size = 48 AND type_id = 3) FROM objects"
                               " WHERE thread = 102";
    g_autofree char *many_want = g_strdup_printf("%d|%d\n", LONG, LONG);
    /* the view */
    CHECK_ROWS(db, some, want->str);
    CHECK_ROWS(db, many, many_want);
    /* the rows in memory (the snapshot commands' objects) */
    store_object_rows rows;
    CHECK(store_history_objects_read(db, p, &rows, &error));
    CHECK_NO_ERROR(error);
    CHECK(rows.n == G_N_ELEMENTS(v) + LONG);
    for (size_t i = 0; i < rows.n; i++) {
        uint64_t size = i < G_N_ELEMENTS(v) ? v[i].size : 48;
        if (rows.objects[i].id != i + 1 || rows.objects[i].size != size) {
            fprintf(stderr, "object %zu: id %" PRIu64 " size %" PRIu64 "\n", i,
                    (uint64_t)rows.objects[i].id, (uint64_t)rows.objects[i].size);
            failures++;
            break;
        }
    }
    store_object_rows_release(&rows);
    /* Shaped as schema 10 wrote it, every size written: the same rows through the view and
     * once built. */
    g_autofree char *ten = g_build_filename(dir, "ten.db", NULL);
    file_copy(p, ten);
    sqlite3 *db10 = NULL;
    CHECK(sqlite3_open(ten, &db10) == SQLITE_OK);
    CHECK(sqlite3_exec(db10,
                       "UPDATE object_chunks SET objects = (SELECT json_group_array(json_array(g, t, s))"
                       " FROM (SELECT j.value ->> 0 AS g, j.value ->> 1 AS t,"
                       " coalesce(j.value ->> 2, first_value(j.value ->> 2) OVER"
                       " (PARTITION BY j.value ->> 1 ORDER BY j.key)) AS s"
                       " FROM json_each(object_chunks.objects) j ORDER BY j.key));"
                       "PRAGMA user_version = 10",
                       NULL, NULL, NULL) == SQLITE_OK);
    CHECK(db_int(db10, "SELECT count(*) FROM object_chunks WHERE objects LIKE '%[1,3]%'"
                       " OR objects LIKE '%[1,1]%'") == 0);
    CHECK_ROWS(db10, some, want->str);
    CHECK_ROWS(db10, many, many_want);
    CHECK(store_history_build_file(ten, NULL, NULL, &error));
    CHECK_NO_ERROR(error);
    CHECK_ROWS(db10, some, want->str);
    CHECK_ROWS(db10, many, many_want);
    sqlite3_close(db10);
    /* the built rows */
    CHECK(store_history_build_file(p, NULL, NULL, &error));
    CHECK_NO_ERROR(error);
    CHECK(db_int(db, "SELECT count(*) FROM object_chunks") == 0);
    CHECK_ROWS(db, some, want->str);
    CHECK_ROWS(db, many, many_want);
    sqlite3_close(db);
    g_string_free(want, TRUE);
    tmp_dir_free(dir);
}

static const test_case cases[] = {
    {"golden_rows", test_golden_rows},
    {"golden_rows_packed", test_golden_rows_packed},
    {"old_deaths", test_old_deaths},
    {"promotions", test_promotions},
    {"young_die_first_gc", test_young_die_first_gc},
    {"after_last_gc", test_after_last_gc},
    {"sample_weight", test_sample_weight},
    {"record_rows", test_record_rows},
    {"chunk_boundaries", test_chunk_boundaries},
    {"discovered", test_discovered},
    {"change_gaps", test_change_gaps},
    {"many_deaths", test_many_deaths},
    {"first_read_order", test_first_read_order},
    {"implied_sizes", test_implied_sizes},
};

int main(int argc, char **argv)
{
    return test_cases_main(argc, argv, cases, G_N_ELEMENTS(cases), &failures);
}
