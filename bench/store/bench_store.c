/* bench_store.c — ingest speed of the store: a synthetic recording through the real writer.
 *
 * Usage: bench_store [allocations [gcs [dir]]]     (default 5000000 500, a new dir under /tmp)
 *
 * The stream is built in memory first (not timed), put in a memfd, then timed through
 * store_writer_ingest_fd and store_writer_finish. Workload, per GC (allocations / gcs young
 * objects each): 90% die young, 10% survive into gen 1; every 10th GC is a gen1 GC where half of
 * gen 1 dies and half is promoted to gen 2; every 100th is a gen2 GC where 30% of gen 2 dies.
 * Rows = object rows + object_generations rows inserted; updates (deaths, promotions closing a
 * row) are reported apart.
 *
 * The same run measures the usual way as a baseline: as many rows of the objects table's shape
 * inserted with one prepared single-row INSERT in one transaction (WAL, synchronous=NORMAL), and
 * prints heaplens / baseline. Not a test: prints numbers.
 */
#include "store/store.h"
#include "tests/unit/common/hl_stream_builder.h"

#include <errno.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define BENCH_TYPES 200
#define BENCH_THREADS 8

static uint64_t bench_rng = 0x9e3779b97f4a7c15u;

static uint32_t bench_rand(uint32_t n)
{
    bench_rng ^= bench_rng << 13;
    bench_rng ^= bench_rng >> 7;
    bench_rng ^= bench_rng << 17;
    return (uint32_t)(bench_rng % n);
}

static double bench_clock(clockid_t clock)
{
    struct timespec ts;
    clock_gettime(clock, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double bench_now(void)
{
    return bench_clock(CLOCK_MONOTONIC);
}

/* CPU time of this process: on a shared machine, rates by CPU time are the steadier figure. */
static double bench_cpu(void)
{
    return bench_clock(CLOCK_PROCESS_CPUTIME_ID);
}

typedef struct bench_counts {
    uint64_t objects, generation_rows, deaths, promotions;
} bench_counts;

static hl_sb *bench_build(uint64_t allocs, uint32_t gcs, bench_counts *c)
{
    hl_sb *sb = hl_sb_new();
    g_autoptr(GArray) gen1 = g_array_new(FALSE, FALSE, sizeof(uint64_t));
    g_autoptr(GArray) gen2 = g_array_new(FALSE, FALSE, sizeof(uint64_t));
    g_autoptr(GArray) keep = g_array_new(FALSE, FALSE, sizeof(uint64_t));
    uint64_t per_gc = allocs / gcs, next_id = 1;

    hl_sb_run_start(sb, 1, "bench");
    for (uint32_t t = 1; t <= BENCH_TYPES; t++) {
        char name[64];
        snprintf(name, sizeof name, "Bench.Type%u", t);
        hl_sb_type(sb, t, name);
    }
    for (uint32_t gc = 1; gc <= gcs; gc++) {
        uint64_t first = next_id;
        for (uint64_t i = 0; i < per_gc; i++, next_id++)
            hl_sb_alloc(sb, next_id, 1 + bench_rand(BENCH_TYPES), 24 + 8 * bench_rand(16),
                        1000 + bench_rand(BENCH_THREADS));
        c->objects += per_gc;
        uint32_t generation = gc % 100 == 0 ? 2 : gc % 10 == 0 ? 1 : 0;
        hl_sb_gc_start(sb, gc, generation, FALSE, next_id);
        g_array_set_size(keep, 0);
        for (uint64_t id = first; id < next_id; id++) {
            gboolean survives = bench_rand(10) == 0;
            hl_sb_fate(sb, gc, id, HL_FATE(HL_GEN_0, survives ? HL_GEN_1 : HL_GEN_NONE));
            if (survives) {
                g_array_append_val(keep, id);
                c->generation_rows++;
            }
        }
        if (generation >= 1) { /* gen 1: half dies, half goes to gen 2 */
            for (guint i = 0; i < gen1->len; i++) {
                uint64_t id = g_array_index(gen1, uint64_t, i);
                if (bench_rand(2) == 0) {
                    hl_sb_death(sb, gc, id);
                    c->deaths++;
                } else {
                    hl_sb_promotion(sb, gc, id, HL_GEN_2);
                    g_array_append_val(gen2, id);
                    c->promotions++;
                    c->generation_rows++;
                }
            }
            g_array_set_size(gen1, 0);
        }
        if (generation == 2) { /* gen 2: 30% dies */
            guint kept = 0;
            for (guint i = 0; i < gen2->len; i++) {
                uint64_t id = g_array_index(gen2, uint64_t, i);
                if (bench_rand(10) < 3) {
                    hl_sb_death(sb, gc, id);
                    c->deaths++;
                } else {
                    g_array_index(gen2, uint64_t, kept++) = id;
                }
            }
            g_array_set_size(gen2, kept);
        }
        g_array_append_vals(gen1, keep->data, keep->len);
        hl_sb_gc_end(sb, gc, HL_GC_FLAG_COMPACTING);
    }
    hl_sb_run_end(sb, gcs);
    return sb;
}

/* The usual way: one prepared single-row INSERT, one transaction. Returns rows/s (wall, cpu). */
static gboolean bench_baseline(const char *dir, uint64_t n, double *wall, double *cpu)
{
    g_autofree char *path = g_build_filename(dir, "baseline.db", NULL);
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    gboolean ok = FALSE;

    if (sqlite3_open(path, &db) != SQLITE_OK ||
        sqlite3_exec(db,
                     "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;"
                     "CREATE TABLE objects (id INTEGER PRIMARY KEY, type_id INTEGER NOT NULL,"
                     " size INTEGER NOT NULL, thread INTEGER, heap INTEGER,"
                     " first_gc INTEGER NOT NULL, died_gc INTEGER)",
                     NULL, NULL, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db, "INSERT INTO objects VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)", -1, &st,
                           NULL) != SQLITE_OK)
        goto out;
    double t0 = bench_now(), c0 = bench_cpu();
    sqlite3_exec(db, "BEGIN", NULL, NULL, NULL);
    for (uint64_t id = 1; id <= n; id++) {
        sqlite3_bind_int64(st, 1, (int64_t)id);
        sqlite3_bind_int64(st, 2, 1 + bench_rand(BENCH_TYPES));
        sqlite3_bind_int64(st, 3, 24 + 8 * bench_rand(16));
        sqlite3_bind_int64(st, 4, 1000 + bench_rand(BENCH_THREADS));
        sqlite3_bind_int64(st, 5, 0);
        sqlite3_bind_int64(st, 6, (int64_t)(id / 10000 + 1));
        if (bench_rand(10) == 0)
            sqlite3_bind_null(st, 7);
        else
            sqlite3_bind_int64(st, 7, (int64_t)(id / 10000 + 1));
        if (sqlite3_step(st) != SQLITE_DONE)
            goto out;
        sqlite3_reset(st);
    }
    if (sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
        goto out;
    *wall = (double)n / (bench_now() - t0);
    *cpu = (double)n / (bench_cpu() - c0);
    ok = TRUE;
out:
    if (!ok)
        fprintf(stderr, "baseline: %s\n", sqlite3_errmsg(db));
    sqlite3_finalize(st);
    sqlite3_close(db);
    unlink(path);
    g_autofree char *wal = g_strconcat(path, "-wal", NULL);
    g_autofree char *shm = g_strconcat(path, "-shm", NULL);
    unlink(wal);
    unlink(shm);
    return ok;
}

int main(int argc, char **argv)
{
    uint64_t allocs = argc > 1 ? g_ascii_strtoull(argv[1], NULL, 10) : 5000000;
    uint32_t gcs = argc > 2 ? (uint32_t)g_ascii_strtoull(argv[2], NULL, 10) : 500;
    g_autofree char *dir = argc > 3 ? g_strdup(argv[3]) : g_dir_make_tmp("bench-store-XXXXXX", NULL);
    g_autofree char *path = g_build_filename(dir, "bench.db", NULL);
    g_autoptr(GError) error = NULL;
    bench_counts c = {0};
    store_summary sum;
    int rc = 1;

    if (gcs == 0 || allocs < gcs) {
        fprintf(stderr, "usage: %s [allocations [gcs [dir]]]\n", argv[0]);
        return 2;
    }
    double t0 = bench_now();
    hl_sb *sb = bench_build(allocs, gcs, &c);
    size_t len = hl_sb_len(sb);
    int fd = hl_sb_memfd(sb, len);
    hl_sb_free(sb);
    if (fd < 0) {
        perror("memfd");
        goto out;
    }
    double t1 = bench_now();
    store_writer *w = store_writer_create(path, "bench_store", &error);
    if (w == NULL)
        goto out;
    double t2 = bench_now(), c2 = bench_cpu();
    if (!store_writer_ingest_fd(w, fd, &error)) {
        store_writer_finish(w, NULL, NULL);
        goto out;
    }
    double t3 = bench_now(), c3 = bench_cpu();
    if (!store_writer_finish(w, &sum, &error))
        goto out;
    double t4 = bench_now(), c4 = bench_cpu();
    close(fd);

    struct stat st;
    stat(path, &st);
    uint64_t rows = c.objects + c.generation_rows;
    printf("stream: %zu bytes, %" G_GUINT64_FORMAT " allocations, %u GCs (built in %.2f s)\n", len,
           allocs, gcs, t1 - t0);
    printf("rows: %" G_GUINT64_FORMAT " objects + %" G_GUINT64_FORMAT
           " object_generations = %" G_GUINT64_FORMAT "; updates: %" G_GUINT64_FORMAT
           " deaths, %" G_GUINT64_FORMAT " promotions\n",
           c.objects, c.generation_rows, rows, c.deaths, c.promotions);
    printf("ingest: %.3f s (cpu %.3f s)   finish (index, checkpoint): %.3f s (cpu %.3f s)\n",
           t3 - t2, c3 - c2, t4 - t3, c4 - c3);
    printf("ingest rate: %.2f M rows/s wall, %.2f M rows/s cpu (%.1f MB/s of stream)\n",
           (double)rows / (t3 - t2) / 1e6, (double)rows / (c3 - c2) / 1e6,
           (double)len / (t3 - t2) / 1e6);
    printf("end to end (ingest + finish): %.2f M rows/s wall, %.2f M rows/s cpu\n",
           (double)rows / (t4 - t2) / 1e6, (double)rows / (c4 - c2) / 1e6);
    double base_wall = 0, base_cpu = 0;
    if (bench_baseline(dir, rows, &base_wall, &base_cpu))
        printf("baseline (single-row prepared INSERT, one transaction, WAL): %.2f M rows/s wall, "
               "%.2f M rows/s cpu\n"
               "heaplens ingest / baseline: %.2fx wall, %.2fx cpu\n",
               base_wall / 1e6, base_cpu / 1e6, (double)rows / (t3 - t2) / base_wall,
               (double)rows / (c3 - c2) / base_cpu);
    printf("database: %s, %.1f MB, %.1f bytes/object; summary: %" G_GUINT64_FORMAT
           " gcs, %" G_GUINT64_FORMAT " objects\n",
           path, (double)st.st_size / 1e6, (double)st.st_size / (double)c.objects, sum.gcs,
           sum.objects);
    rc = 0;
out:
    if (error != NULL)
        fprintf(stderr, "bench_store: %s\n", error->message);
    if (argc <= 3) {
        unlink(path);
        rmdir(dir);
    }
    return rc;
}
