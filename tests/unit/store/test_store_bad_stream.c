/* test_store_bad_stream.c — streams that break the format or the collector's
 * promises: a record's size or count wrong, unknown record types, a bad header, an empty
 * stream, a GC that never ended or came out of order, anomalies skipped and counted (plain and
 * packed survivors), and the largest values packed survivors can carry.
 *
 * Usage: test_store_bad_stream <case>|all   (ctest runs each case as store.<case>).
 * What the store's tests share: store_test.h.
 */
#define _GNU_SOURCE
#include "tests/unit/store/store_test.h"

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
        {HL_STREAM_MAGIC, 1, "record stream version 1 (an older collector); this heaplens reads versions 2 to 6"},
        {HL_STREAM_MAGIC, 7, "record stream version 7 (a newer collector); this heaplens reads versions 2 to 6"},
        {HL_STREAM_MAGIC, 0, "record stream version 0 (an older collector); this heaplens reads versions 2 to 6"},
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

/* A corrupt GC_SURVIVORS_PACKED record after `n` good survivors of GC 2 (its check fused with
 * the apply): GC 1 is kept whole, GC 2 leaves no row, the chunk rows it wrote before the
 * corrupt record (8192 objects each) included. n = 9000 (27 KB of records): GC 2 is held and
 * would be applied whole into the group of GC 1, so its records are checked when held; n =
 * 30000 (90 KB): GC 2 is applied as it comes, a transaction of its own, rolled back. */
static void test_packed_corrupt_gc(void)
{
    char *dir = tmp_dir_new();
    static const uint32_t sizes[] = {9000, 30000};
    for (size_t k = 0; k < G_N_ELEMENTS(sizes); k++) {
        g_autoptr(GError) error = NULL;
        uint32_t n = sizes[k];
        hl_sb *sb = hl_sb_new();
        hl_sb_set_packed_survivors(sb, TRUE);
        hl_sb_run_start(sb, 1, "corrupt");
        hl_sb_type(sb, 1, "A");
        hl_sb_thread(sb, 100, 1, "Main");
        hl_sb_gc_start(sb, 1, 0, FALSE, 3);
        for (uint64_t id = 1; id < 3; id++) {
            hl_survivor s = {.id = id, .size = 24, .type_id = 1, .os_tid = 100,
                             .heap = HL_GEN_0, .generation = HL_GEN_1};
            hl_sb_survivor(sb, 1, &s);
        }
        hl_sb_gc_end(sb, 1, 0);
        hl_sb_gc_start(sb, 2, 0, FALSE, 1000000);
        for (uint64_t id = 3; id < 3 + n; id++) {
            hl_survivor s = {.id = id, .size = 24, .type_id = 1, .os_tid = 100,
                             .heap = HL_GEN_0, .generation = HL_GEN_1};
            hl_sb_survivor(sb, 2, &s);
        }
        /* one good object (gap 1, generation 1, key: thread 100, heap 0, type 1, 24 bytes) and
         * two bytes left over */
        static const uint8_t bad[] = {2, 0, 0, 0, 1, 0, 0, 0, 0x13, 100, 0, 1, 24, 7, 7};
        hl_sb_record(sb, HL_REC_GC_SURVIVORS_PACKED, bad, sizeof bad);
        hl_sb_gc_end(sb, 2, 0);
        hl_sb_run_end(sb, 2);
        g_autofree char *p = g_strdup_printf("%s/c%zu.db", dir, k);
        CHECK(!hl_sb_write_db(sb, p, NULL, NULL, &error));
        CHECK_ERROR(error, STORE_ERROR_STREAM, "corrupt record stream at byte");
        CHECK_ERROR(error, STORE_ERROR_STREAM,
                    "GC_SURVIVORS_PACKED record: 2 bytes left over after the 1 objects");
        hl_sb_free(sb);
        sqlite3 *db = db_open(p);
        CHECK_ROWS(db, "SELECT gc FROM gcs", "1\n");
        CHECK_ROWS(db, "SELECT gc, count FROM object_chunks", "1|2\n");
        CHECK_ROWS(db, "SELECT status, loss FROM run", "truncated|stream-corrupt\n");
        CHECK(db_int(db, "SELECT value FROM counters WHERE name = 'gcs_discarded_incomplete'") == 1);
        sqlite3_close(db);
    }
    tmp_dir_free(dir);
}

static const test_case cases[] = {
    {"corrupt_size", test_corrupt_size},
    {"corrupt_count", test_corrupt_count},
    {"unknown_types", test_unknown_types},
    {"bad_header", test_bad_header},
    {"empty_stream", test_empty_stream},
    {"discarded_gc", test_discarded_gc},
    {"out_of_order_gc", test_out_of_order_gc},
    {"anomalies", test_anomalies},
    {"anomalies_packed", test_anomalies_packed},
    {"survivors_packed_extremes", test_survivors_packed_extremes},
    {"packed_corrupt_gc", test_packed_corrupt_gc},
};

int main(int argc, char **argv)
{
    return test_cases_main(argc, argv, cases, G_N_ELEMENTS(cases), &failures);
}
