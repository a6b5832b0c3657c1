/* test_store_truncate.c — the golden stream cut at every byte (survivors plain and
 * packed): each cut written by a writer of its own, what it stored checked against the whole
 * run as of its last complete GC.
 *
 * Usage: test_store_truncate <case>|all   (ctest runs each case as store.<case>).
 * What the store's tests share: store_test.h.
 */
#define _GNU_SOURCE
#include "tests/unit/store/store_test.h"

#include <errno.h>
#include <unistd.h>

/* Rows of one SELECT missing from the other, both ways: 0 when they hold the same rows. */
static int64_t db_diff_selects(sqlite3 *db, const char *a, const char *b)
{
    g_autofree char *sql = g_strdup_printf("SELECT count(*) FROM (SELECT * FROM (%1$s EXCEPT %2$s)"
                                           " UNION ALL SELECT * FROM (%2$s EXCEPT %1$s))",
                                           a, b);
    return db_int(db, sql);
}

/* Rows of `table` (its `columns`) in the database and not in the attached full one `f`, or the
 * other way round. */
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

/* Under the sanitizers every cut costs several times what it costs without (each one a writer of
 * its own: 3,202 cuts took about 450 s under ASan at load 10-25, near ctest's 600 s limit). There
 * the cuts are every byte of the stream's header, of each record's header and of the first and
 * last TRUNCATE_EDGE bytes of its payload, where a reader that went past what it was given would
 * show, and every TRUNCATE_STRIDE-th byte between (the cuts a payload's middle offers are alike:
 * each stores what the cut at the record's start stored): 802 cuts of 3,202 (789 of 3,014
 * packed): both cases 46 s of CPU under ASan (168 s at load 18), where every byte would take
 * about 170 s of CPU. Without the sanitizers, every byte. */
#if defined(__SANITIZE_ADDRESS__)
#define TRUNCATE_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TRUNCATE_SANITIZED 1
#endif
#endif
#ifndef TRUNCATE_SANITIZED
#define TRUNCATE_SANITIZED 0
#endif
enum { TRUNCATE_EDGE = 4, TRUNCATE_STRIDE = 16 };

/* The cuts to make of the `len` bytes `stream` (0 to len, both included): TRUE for each, as
 * above. A record header that says more than the stream holds ends the walk: the rest is cut at
 * every byte. */
static gboolean *truncate_cuts(const uint8_t *stream, size_t len, gboolean sanitized)
{
    gboolean *cut = g_new0(gboolean, len + 1);
    size_t at = sizeof(hl_stream_header);
    for (size_t i = 0; i <= len; i++)
        cut[i] = !sanitized || i <= at;
    while (sanitized && at + sizeof(hl_rec_header) <= len) {
        hl_rec_header h;
        memcpy(&h, stream + at, sizeof h);
        size_t payload = at + sizeof h, end = payload + h.size;
        if (end > len)
            break;
        for (size_t i = at; i <= end; i++)
            cut[i] = i <= payload + TRUNCATE_EDGE || i + TRUNCATE_EDGE >= end ||
                     (i - payload) % TRUNCATE_STRIDE == 0;
        at = end;
    }
    for (size_t i = at; i <= len; i++)
        cut[i] = TRUE;
    return cut;
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
    size_t sql_checked = 0, made = 0;
    size_t stream_len = 0;
    const uint8_t *stream = hl_sb_bytes(sb, &stream_len);
    CHECK(stream_len == m.len);
    g_autofree gboolean *wanted = truncate_cuts(stream, m.len, TRUNCATE_SANITIZED);
    /* The sanitizers' choice, checked in every build: each cut where the outcome changes is in
     * it, with the bytes either side, and the stream's whole header. */
    g_autofree gboolean *edges = truncate_cuts(stream, m.len, TRUE);
    size_t marks[4 + GOLDEN_HANDLE_STAGES] = {m.snapshot_start_end, m.len};
    size_t n_marks = 2;
    for (int k = 1; k < 4; k++)
        marks[n_marks++] = m.gc_end[k];
    for (int stage = 1; stage < GOLDEN_HANDLE_STAGES; stage++)
        marks[n_marks++] = m.handle_end[stage];
    for (size_t i = 0; i < n_marks; i++)
        CHECK(edges[marks[i] - 1] && edges[marks[i]] && (marks[i] == m.len || edges[marks[i] + 1]));
    for (size_t i = 0; i <= sizeof(hl_stream_header); i++)
        CHECK(edges[i]);

    for (size_t cut = 0; cut <= m.len; cut++) {
        if (!wanted[cut])
            continue;
        made++;
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
    CHECK(sql_checked > 0 && sql_checked < made / 2);
    if (TRUNCATE_SANITIZED)
        printf("%zu cuts of %zu bytes (sanitized: the records' edges), %zu checked by SQL\n",
               made, m.len, sql_checked);
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

static const test_case cases[] = {
    {"truncate_every_byte", test_truncate_every_byte},
    {"truncate_every_byte_packed", test_truncate_every_byte_packed},
};

int main(int argc, char **argv)
{
    return test_cases_main(argc, argv, cases, G_N_ELEMENTS(cases), &failures);
}
