/* report_fixture.c — builds recordings for the `heaplens report` tests through the real writer
 * (hl_stream_builder + store_writer_*):
 *
 *   report_fixture small OUT.db            3 GCs whose every figure is known by hand (the
 *                                          expectations are in report_test.py)
 *   report_fixture stacks OUT.db           "small" with the allocation samples and stacks of
 *                                          tests/unit/common/hl_stack_fixture.h
 *   report_fixture sampled OUT.db          "stacks" as a sampled recording: run.mode 'sampled',
 *                                          alloc_counts keeps only the LOH and POH allocations
 *                                          (what the runtime still reports without
 *                                          ObjectAllocated), the samples estimate the rest
 *   report_fixture attach OUT.db           the same with run.mode 'attach'
 *   report_fixture census OUT.db           "sampled" with the small objects of intervals 1
 *                                          and 2 counted by the census of gen0 (alloc_counts
 *                                          flags 2, thread NULL; gcs.census_ns and
 *                                          census_objects), not those of GC 3 (as the first GC
 *                                          after an attach) nor the tail
 *   report_fixture empty OUT.db            a complete run without any GC
 *   report_fixture ties OUT.db             2 GCs whose sizes print with a rounding tie
 *                                          (1280 B = 1.25 KiB prints "1.2 KiB", like printf)
 *   report_fixture sim GCS SEED OUT.db     a simulated run of GCS GCs: a program that allocates
 *                  [truncated]             strings, orders, buffers on the LOH, pinned arrays on
 *                                          the POH and a slowly leaking cache; gen1 and gen2 GCs
 *                                          now and then, some induced. Same SEED, same file.
 *                                          "truncated": the stream ends without its end of run.
 */
#include "tests/unit/common/hl_stack_fixture.h"
#include "tests/unit/common/hl_stream_builder.h"

#include <inttypes.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- small: every number known ------------------------------------------------------------- */

static void gc_start(hl_sb *sb, uint32_t gc, uint32_t generation, gboolean induced,
                     uint64_t first_id_after, uint64_t t, const uint64_t before[5])
{
    hl_gc_start s = {
        .gc = gc,
        .generation = generation,
        .reason = induced ? 1 : 0,
        .condemned_mask = ((1u << (generation + 1)) - 1u) | (generation == 2 ? 0x18u : 0u),
        .start_mono_ns = t,
        .suspend_mono_ns = t - 20000,
        .first_id_after = first_id_after,
    };
    memcpy(s.size_before, before, sizeof s.size_before);
    hl_sb_gc_start_full(sb, &s);
}

static void gc_end(hl_sb *sb, uint32_t gc, uint32_t flags, uint64_t t_end, uint64_t resume,
                   const uint64_t after[5], uint64_t survived, uint64_t moved, uint64_t live,
                   uint64_t allocs)
{
    hl_gc_end e = {
        .gc = gc,
        .flags = flags,
        .end_mono_ns = t_end,
        .resume_mono_ns = resume,
        .survived_bytes = survived,
        .moved_bytes = moved,
        .objects_live = live,
        .counters = {.allocs_seen = allocs},
    };
    memcpy(e.size_after, after, sizeof e.size_after);
    hl_sb_gc_end_full(sb, &e);
}

static void build_small(hl_sb *sb)
{
    const uint64_t ms = 1000000;
    hl_sb_run_start(sb, 4242, "dotnet Small.dll --report");
    hl_sb_type(sb, 1, "App.Node");
    hl_sb_type(sb, 2, "System.String");
    hl_sb_type(sb, 3, "System.Byte[]");
    hl_sb_thread(sb, 100, 1, "Main");

    hl_sb_alloc(sb, 1, 1, 100, 100);
    hl_sb_alloc(sb, 2, 1, 100, 100);
    hl_sb_alloc(sb, 3, 2, 40, 100);
    hl_sb_alloc(sb, 4, 3, 100000, 100);
    /* GC 1, gen0: 1 and 3 survive into gen1, 2 dies, 4 (LOH) is not condemned. */
    gc_start(sb, 1, 0, FALSE, 5, HL_SB_MONO_NS + 10 * ms,
             (const uint64_t[5]){240, 0, 0, 100000, 0});
    hl_sb_fate(sb, 1, 1, HL_FATE(HL_GEN_0, HL_GEN_1));
    hl_sb_fate(sb, 1, 2, HL_FATE(HL_GEN_0, HL_GEN_NONE));
    hl_sb_fate(sb, 1, 3, HL_FATE(HL_GEN_0, HL_GEN_1));
    hl_sb_fate(sb, 1, 4, HL_FATE(HL_GEN_LOH, HL_GEN_LOH));
    gc_end(sb, 1, HL_GC_FLAG_COMPACTING, HL_SB_MONO_NS + 11 * ms, HL_SB_MONO_NS + 11 * ms + 234567,
           (const uint64_t[5]){0, 140, 0, 100000, 0}, 140, 140, 3, 4);

    hl_sb_alloc(sb, 5, 2, 60, 100);
    hl_sb_alloc(sb, 6, 1, 100, 100);
    /* GC 2, gen1, induced: 5 dies, 6 into gen1; 3 dies, 1 promoted to gen2. */
    gc_start(sb, 2, 1, TRUE, 7, HL_SB_MONO_NS + 20 * ms,
             (const uint64_t[5]){160, 140, 0, 100000, 0});
    hl_sb_fate(sb, 2, 5, HL_FATE(HL_GEN_0, HL_GEN_NONE));
    hl_sb_fate(sb, 2, 6, HL_FATE(HL_GEN_0, HL_GEN_1));
    hl_sb_death(sb, 2, 3);
    hl_sb_promotion(sb, 2, 1, HL_GEN_2);
    gc_end(sb, 2, HL_GC_FLAG_COMPACTING, HL_SB_MONO_NS + 22 * ms, HL_SB_MONO_NS + 22 * ms + 500000,
           (const uint64_t[5]){0, 100, 100, 100000, 0}, 200, 100, 3, 6);

    hl_sb_alloc(sb, 7, 3, 200000, 100);
    /* GC 3, gen2, induced, sweeping: 7 and 4 (LOH) die, 6 promoted to gen2, 1 stays. */
    gc_start(sb, 3, 2, TRUE, 8, HL_SB_MONO_NS + 30 * ms,
             (const uint64_t[5]){0, 100, 100, 300000, 0});
    hl_sb_fate(sb, 3, 7, HL_FATE(HL_GEN_LOH, HL_GEN_NONE));
    hl_sb_death(sb, 3, 4);
    hl_sb_promotion(sb, 3, 6, HL_GEN_2);
    gc_end(sb, 3, 0, HL_SB_MONO_NS + 33 * ms, HL_SB_MONO_NS + 33 * ms + 20000,
           (const uint64_t[5]){0, 0, 200, 0, 0}, 200, 0, 2, 7);
    hl_sb_run_end(sb, 3);
}

/* ---- sim: a plausible program, deterministic ---------------------------------------------- */

typedef struct sim_type {
    const char *name;
    uint32_t min_size, max_size;
    int heap;        /* HL_GEN_0 (small-object heap), HL_GEN_LOH, HL_GEN_POH */
    double survive;  /* chance to survive each GC that condemns its generation */
    int weight;      /* allocations per 100 */
} sim_type;

static const sim_type sim_types[] = {
    {"System.String", 24, 240, HL_GEN_0, 0.04, 38},
    {"System.Char[]", 32, 512, HL_GEN_0, 0.02, 10},
    {"MyApp.Orders.Order", 72, 72, HL_GEN_0, 0.45, 14},
    {"System.Collections.Generic.List<MyApp.Orders.Order>", 32, 32, HL_GEN_0, 0.35, 6},
    {"System.Object[]", 48, 4096, HL_GEN_0, 0.25, 8},
    {"MyApp.Caching.CacheEntry<System.String, MyApp.Orders.Order>", 200, 600, HL_GEN_0, 1.0, 5},
    {"MyApp.Sessions.Session", 160, 160, HL_GEN_0, 0.93, 5},
    {"System.Byte[]", 85000, 250000, HL_GEN_LOH, 0.15, 1},
    {"System.Int32[]", 1024, 8192, HL_GEN_POH, 0.9, 1},
    {"System.Action<System.Object>", 64, 64, HL_GEN_0, 0.1, 12},
};
#define SIM_TYPES ((int)G_N_ELEMENTS(sim_types))
#define SIM_UNTRACKED_GEN2 (48 * 1024) /* the runtime's own objects from before tracking */

typedef struct sim_obj {
    uint64_t id;
    uint64_t size;
    int type;
    int gen; /* HL_GEN_*; HL_GEN_NONE when dead */
} sim_obj;

static int sim_weight_total(void)
{
    int total = 0;
    for (int t = 0; t < SIM_TYPES; t++)
        total += sim_types[t].weight;
    return total;
}

static void sim_sizes(const GArray *objs, uint64_t sizes[5])
{
    memset(sizes, 0, 5 * sizeof sizes[0]);
    for (guint i = 0; i < objs->len; i++) {
        const sim_obj *o = &g_array_index(objs, sim_obj, i);
        if (o->gen >= 0 && o->gen < 5)
            sizes[o->gen] += o->size;
    }
    sizes[HL_GEN_2] += SIM_UNTRACKED_GEN2;
}

static gboolean condemned(int gen, uint32_t generation)
{
    if (gen <= HL_GEN_2)
        return (uint32_t)gen <= generation;
    return generation == 2; /* LOH and POH go with gen2 */
}

static void build_sim(hl_sb *sb, uint32_t n_gcs, uint32_t seed, gboolean truncated)
{
    g_autoptr(GRand) rand = g_rand_new_with_seed(seed);
    g_autoptr(GArray) objs = g_array_new(FALSE, FALSE, sizeof(sim_obj)); /* alive ones */
    g_autoptr(GArray) deaths = g_array_new(FALSE, FALSE, sizeof(uint64_t));
    g_autoptr(GArray) promotions = g_array_new(FALSE, FALSE, sizeof(sim_obj));
    const int weights = sim_weight_total();
    uint64_t next_id = 1, allocs = 0, t = HL_SB_MONO_NS;
    char command[128];

    g_snprintf(command, sizeof command, "dotnet OrderService.dll --simulate %u --seed %u", n_gcs,
               seed);
    hl_sb_run_start(sb, 31337, command);
    for (int i = 0; i < SIM_TYPES; i++)
        hl_sb_type(sb, (uint32_t)i + 1, sim_types[i].name);
    hl_sb_thread(sb, 200, 1, "Main");
    hl_sb_thread(sb, 201, 2, "Worker-1");

    for (uint32_t gc = 1; gc <= n_gcs; gc++) {
        /* Allocate: bursts now and then. */
        int n_alloc = g_rand_int_range(rand, 30, 90) * (gc % 17 == 0 ? 3 : 1);
        guint young_from = objs->len;
        for (int a = 0; a < n_alloc; a++) {
            int pick = g_rand_int_range(rand, 0, weights), type = 0;
            while (pick >= sim_types[type].weight)
                pick -= sim_types[type++].weight;
            const sim_type *st = &sim_types[type];
            sim_obj o = {
                .id = next_id++,
                .size = (uint64_t)g_rand_int_range(rand, (gint32)st->min_size,
                                                   (gint32)st->max_size + 1) & ~UINT64_C(7),
                .type = type,
                .gen = st->heap,
            };
            hl_sb_alloc(sb, o.id, (uint32_t)type + 1, o.size, a % 3 ? 200 : 201);
            g_array_append_val(objs, o);
            allocs++;
        }

        uint32_t generation = gc % 20 == 0 ? 2 : gc % 5 == 0 ? 1 : 0;
        gboolean induced = gc % 100 == 0 || gc == n_gcs;
        if (induced)
            generation = 2;
        uint64_t before[5], after[5];
        sim_sizes(objs, before);
        t += (uint64_t)g_rand_int_range(rand, 4, 16) * 1000000;
        uint64_t start = t;
        gc_start(sb, gc, generation, induced, next_id, start, before);

        uint64_t survived = 0;
        g_array_set_size(deaths, 0);
        g_array_set_size(promotions, 0);
        for (guint i = 0; i < objs->len; i++) {
            sim_obj *o = &g_array_index(objs, sim_obj, i);
            gboolean young = i >= young_from;
            const sim_type *st = &sim_types[o->type];
            int heap = o->gen;
            if (!condemned(o->gen, generation)) {
                if (young)
                    hl_sb_fate(sb, gc, o->id, HL_FATE(heap, heap));
                continue;
            }
            gboolean lives = g_rand_double(rand) < st->survive;
            if (!lives) {
                o->gen = HL_GEN_NONE;
                if (young)
                    hl_sb_fate(sb, gc, o->id, HL_FATE(heap, HL_GEN_NONE));
                else
                    g_array_append_val(deaths, o->id);
                continue;
            }
            survived += o->size;
            int to = o->gen == HL_GEN_0 ? HL_GEN_1 : o->gen == HL_GEN_1 ? HL_GEN_2 : o->gen;
            if (young) {
                hl_sb_fate(sb, gc, o->id, HL_FATE(heap, to));
            } else if (to != o->gen) {
                sim_obj p = *o;
                p.gen = to;
                g_array_append_val(promotions, p);
            }
            o->gen = to;
        }
        for (guint i = 0; i < deaths->len; i++)
            hl_sb_death(sb, gc, g_array_index(deaths, uint64_t, i));
        for (guint i = 0; i < promotions->len; i++) {
            const sim_obj *p = &g_array_index(promotions, sim_obj, i);
            hl_sb_promotion(sb, gc, p->id, (uint32_t)p->gen);
        }
        /* Keep only the living. */
        guint keep = 0;
        for (guint i = 0; i < objs->len; i++)
            if (g_array_index(objs, sim_obj, i).gen != HL_GEN_NONE)
                g_array_index(objs, sim_obj, keep++) = g_array_index(objs, sim_obj, i);
        g_array_set_size(objs, keep);
        sim_sizes(objs, after);

        gboolean compacting = generation < 2 || g_rand_int_range(rand, 0, 3) == 0;
        uint64_t work = 60000 + survived * 3 + (generation == 2 ? 400000 : 0) +
                        (uint64_t)g_rand_int_range(rand, 0, 80000);
        uint64_t end = start + work;
        gc_end(sb, gc, compacting ? HL_GC_FLAG_COMPACTING : 0, end, end + 15000, after, survived,
               compacting ? survived * 7 / 8 : 0, objs->len, allocs);
        t = end;
    }
    if (truncated)
        return;
    hl_run_end e = {
        .end_unix_ns = HL_SB_START_UNIX_NS + (t + 5000000 - HL_SB_MONO_NS),
        .end_mono_ns = t + 5000000,
        .gcs = n_gcs,
        .counters = {.allocs_seen = allocs},
    };
    hl_sb_run_end_full(sb, &e);
}

/* Makes the recording at `path` look recorded without ObjectAllocated (sampled or attach mode):
 * small-object allocations were never counted, only those on the LOH and POH. "census": sampled
 * mode whose census of gen0 counted the small objects of intervals 1 and 2 per type. */
static gboolean without_counts(const char *path, const char *mode, GError **error)
{
    sqlite3 *db = NULL;
    gboolean census = strcmp(mode, "census") == 0;
    g_autofree char *sql = g_strdup_printf(
        "BEGIN; UPDATE run SET mode = '%s';%s"
        " DELETE FROM alloc_counts WHERE (heap IS NULL OR heap NOT IN (3, 4)) AND flags = 0;%s"
        " COMMIT;",
        census ? "sampled" : mode,
        census ? " INSERT INTO alloc_counts (gc, type_id, thread, heap, count, bytes, survived,"
                 " survived_bytes, flags) SELECT gc, type_id, NULL, 0, sum(count), sum(bytes), 0,"
                 " 0, 2 FROM alloc_counts WHERE (heap IS NULL OR heap NOT IN (3, 4))"
                 " AND gc IN (1, 2) GROUP BY gc, type_id;"
               : "",
        census ? " UPDATE gcs SET census_ns = 1000000 * gc + 234567, census_objects = (SELECT"
                 " sum(count) FROM alloc_counts a WHERE a.gc = gcs.gc AND a.flags = 2)"
                 " WHERE gc IN (1, 2);"
               : "");
    gboolean ok = sqlite3_open(path, &db) == SQLITE_OK &&
                  sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK;
    if (!ok)
        g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_FAILED, "%s: %s", path,
                    db ? sqlite3_errmsg(db) : "out of memory");
    sqlite3_close(db);
    return ok;
}

static int usage(void)
{
    fprintf(stderr, "usage: report_fixture small OUT.db\n"
                    "       report_fixture stacks OUT.db\n"
                    "       report_fixture sampled OUT.db\n"
                    "       report_fixture attach OUT.db\n"
                    "       report_fixture census OUT.db\n"
                    "       report_fixture empty OUT.db\n"
                    "       report_fixture ties OUT.db\n"
                    "       report_fixture sim GCS SEED OUT.db [truncated]\n");
    return 2;
}

int main(int argc, char **argv)
{
    g_autoptr(GError) error = NULL;
    hl_sb *sb = hl_sb_new();
    const char *out = NULL;
    gboolean stacks = FALSE;
    const char *mode = NULL; /* sampled, attach: made from "stacks" */
    int status = 1;

    if (argc == 3 && (strcmp(argv[1], "small") == 0 || strcmp(argv[1], "stacks") == 0 ||
                      strcmp(argv[1], "sampled") == 0 || strcmp(argv[1], "attach") == 0 ||
                      strcmp(argv[1], "census") == 0)) {
        build_small(sb);
        out = argv[2];
        stacks = strcmp(argv[1], "small") != 0;
        mode = strcmp(argv[1], "sampled") == 0 || strcmp(argv[1], "attach") == 0 ||
                       strcmp(argv[1], "census") == 0
                   ? argv[1]
                   : NULL;
    } else if (argc == 3 && strcmp(argv[1], "ties") == 0) {
        const uint64_t ms = 1000000;
        hl_sb_run_start(sb, 8, "dotnet Ties.dll");
        gc_start(sb, 1, 0, FALSE, 1, HL_SB_MONO_NS + 10 * ms,
                 (const uint64_t[5]){1280, 3840, 2304, 1310720, UINT64_C(1342177280)});
        gc_end(sb, 1, HL_GC_FLAG_COMPACTING, HL_SB_MONO_NS + 11 * ms, HL_SB_MONO_NS + 11 * ms + 1499,
               (const uint64_t[5]){1023, 1024, 1048524, 1048525, 3932160}, 1280, 0, 0, 0);
        gc_start(sb, 2, 2, TRUE, 1, HL_SB_MONO_NS + 20 * ms,
                 (const uint64_t[5]){2560, 1126, 1127, 1075, 1076});
        gc_end(sb, 2, 0, HL_SB_MONO_NS + 21 * ms, HL_SB_MONO_NS + 21 * ms + 20500,
               (const uint64_t[5]){11776, 13824, 0, 0, 0}, 5, 0, 0, 0);
        hl_sb_run_end(sb, 2);
        out = argv[2];
    } else if (argc == 3 && strcmp(argv[1], "empty") == 0) {
        hl_sb_run_start(sb, 7, "dotnet Idle.dll");
        hl_sb_type(sb, 1, "System.String");
        hl_sb_alloc(sb, 1, 1, 32, 100);
        hl_sb_run_end(sb, 0);
        out = argv[2];
    } else if ((argc == 5 || (argc == 6 && strcmp(argv[5], "truncated") == 0)) &&
               strcmp(argv[1], "sim") == 0) {
        guint64 gcs = 0, seed = 0;
        if (!g_ascii_string_to_unsigned(argv[2], 10, 1, 1000000, &gcs, NULL) ||
            !g_ascii_string_to_unsigned(argv[3], 10, 0, G_MAXUINT32, &seed, NULL)) {
            hl_sb_free(sb);
            return usage();
        }
        build_sim(sb, (uint32_t)gcs, (uint32_t)seed, argc == 6);
        out = argv[4];
    } else {
        hl_sb_free(sb);
        return usage();
    }
    if (hl_sb_write_db(sb, out, NULL, NULL, &error) &&
        (!stacks || hl_stack_fixture_add(out, FALSE, mode ? 3 : 0, &error)) &&
        (!mode || without_counts(out, mode, &error)))
        status = 0;
    else
        fprintf(stderr, "report_fixture: %s\n", error->message);
    hl_sb_free(sb);
    return status;
}
