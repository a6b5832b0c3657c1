/* test_store_differential.c — random recordings against a naive model (fixed
 * seed, HEAPLENS_SEED for another), row for row; GC_SURVIVORS_PACKED stores what GC_SURVIVORS
 * stores, byte for byte.
 *
 * Usage: test_store_differential <case>|all   (ctest runs each case as store.<case>).
 * What the store's tests share: store_test.h.
 */
#define _GNU_SOURCE
#include "tests/unit/store/store_test.h"

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

static const test_case cases[] = {
    {"differential", test_differential},
    {"survivors_packed", test_survivors_packed},
};

int main(int argc, char **argv)
{
    return test_cases_main(argc, argv, cases, G_N_ELEMENTS(cases), &failures);
}
