/* bench_store.c — ingest speed of the store: a synthetic recording through the real writer.
 *
 * Usage: bench_store [allocations [gcs [dir]]]     (default 5000000 500, a new dir under /tmp)
 *        bench_store snapshot [objects [dir]]      (default 1000000: size of a heap snapshot)
 *        bench_store replay STREAM [runs [ingest]] (default 3: a collector's stream, as captured;
 *                                                  ingest: without the first read)
 *                                                  (BENCH_STORE_KEEP=PATH: the last run's
 *                                                  database is kept there)
 *        bench_store repack STREAM OUT [old]       (the stream with its survivors packed
 *                                                  (GC_SURVIVORS_PACKED, version 5); `old`:
 *                                                  unpacked into GC_SURVIVORS, version 4)
 *
 * The stream is built in memory first (not timed), put in a memfd, then timed through
 * store_writer_ingest_fd and store_writer_finish. Workload, per GC (allocations / gcs young
 * objects each): 90% die young, 10% survive into gen 1; every 10th GC is a gen1 GC where half of
 * gen 1 dies and half is promoted to gen 2; every 100th is a gen2 GC where 30% of gen 2 dies.
 * The builder plays the collector (hl_stream_builder.h): the stream holds ALLOC_COUNTS and the
 * GC_SURVIVORS of the 10%. Rows = object rows (survivors) + object_generations rows (schema 3:
 * appended as ids in generation_changes while ingesting, written as object_generation_rows by
 * finish); deaths (an UPDATE each) and promotions are reported apart.
 *
 * The same run measures the usual way as a baseline: as many rows of the objects table's shape
 * inserted with one prepared single-row INSERT in one transaction (WAL, synchronous=NORMAL), and
 * prints heaplens / baseline. Not a test: prints numbers.
 *
 * `snapshot` measures what a heap snapshot costs in the database: one recording of 5 * objects
 * allocations (their ALLOC_COUNTS) and one GC whose survivors (GC_SURVIVORS, `objects` of them)
 * are snapshotted, ingested with and without the snapshot; prints the survivors' ingest rate,
 * the time the snapshot adds and its rate (objects per second, references included), and its
 * bytes per snapshot object, table by table (dbstat).
 *
 * `replay` times the writer on a real program's stream: the bytes a collector sent, captured by
 * bench/record/capture.py (the program runs against a socket that only saves them). Each run
 * ingests the file into a new database and prints wall and CPU time of ingest and finish: the
 * writer's own cost, without the 2-core contention with the program that a recording has.
 * The stream is copied into memory (a memfd) once, before the first run: each run then reads the
 * same bytes from memory, whether or not the file was still in the page cache (a run that found
 * it evicted paid the disk read in its own time). Two builds compared: bench/store/replay_ab.py
 * alternates their order (bench/README.md, "Measuring the writer").
 *
 * `repack` rewrites a captured stream's survivor records in the other form, every other byte
 * as it was, so that one program run gives both streams: replayed, the two must store the same
 * rows (the old writer takes the `old` one), and their replay times compare the forms.
 */
#define _GNU_SOURCE /* memfd_create */
#include "store/store.h"
#include "tests/unit/common/hl_stream_builder.h"

#include <errno.h>
#include <fcntl.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
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
        uint32_t generation = gc % 100 == 0 ? 2 : gc % 10 == 0 ? 1 : 0;
        hl_sb_gc_start(sb, gc, generation, FALSE, next_id);
        g_array_set_size(keep, 0);
        for (uint64_t id = first; id < next_id; id++) {
            gboolean survives = bench_rand(10) == 0;
            hl_sb_fate(sb, gc, id, HL_FATE(HL_GEN_0, survives ? HL_GEN_1 : HL_GEN_NONE));
            if (survives) {
                g_array_append_val(keep, id);
                c->objects++; /* an objects row for each survivor of its first GC */
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

/* Removes a database and its WAL and shared-memory files. */
static void bench_remove_db(const char *path)
{
    g_autofree char *wal = g_strconcat(path, "-wal", NULL);
    g_autofree char *shm = g_strconcat(path, "-shm", NULL);
    unlink(path);
    unlink(wal);
    unlink(shm);
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
    bench_remove_db(path);
    return ok;
}

/* ---- snapshot size: bench_store snapshot [objects [dir]] ---------------------------------- */

/* References per object: 30% none, 35% one, 20% two, 10% three, 5% eight (mean 1.45, about
 * what .NET heaps show: strings and arrays of values have none, collections many). */
static uint32_t bench_refs_of(void)
{
    uint32_t r = bench_rand(100);
    return r < 30 ? 0 : r < 65 ? 1 : r < 85 ? 2 : r < 95 ? 3 : 8;
}

typedef struct bench_snapshot_counts {
    uint64_t objects, refs, roots, survivors;
} bench_snapshot_counts;

/* A recording of two GCs. GC 1: 5 * `objects` allocations, one in five survives (ids spread
 * like a real survivor set). GC 2, induced, gen 2, that all of them survive, and — when
 * `with_snapshot` — its snapshot: the survivors in walk order (address order: runs of ascending ids, shuffled; 70% in gen 2, 20% gen 1, 10%
 * gen 0), their references (targets at random), 1% of them rooted. The same seed gives the same recording with and without it. */
static hl_sb *bench_snapshot_build(uint64_t objects, gboolean with_snapshot,
                                   bench_snapshot_counts *c)
{
    hl_sb *sb = hl_sb_new();
    uint64_t allocs = objects * 5;
    g_autoptr(GArray) live = g_array_new(FALSE, FALSE, sizeof(uint64_t));

    bench_rng = 0x2545f4914f6cdd1du;
    memset(c, 0, sizeof *c);
    hl_sb_run_start(sb, 1, "bench snapshot");
    for (uint32_t t = 1; t <= BENCH_TYPES; t++) {
        char name[64];
        snprintf(name, sizeof name, "Bench.Type%u", t);
        hl_sb_type(sb, t, name);
    }
    /* The collector's records for that GC, written directly: its ALLOC_COUNTS (per type and
     * thread) and the GC_SURVIVORS of one allocation in five. */
    g_autofree hl_alloc_count *counts = g_new0(hl_alloc_count, BENCH_TYPES * BENCH_THREADS);
    hl_sb_gc_start(sb, 1, 2, TRUE, allocs + 1);
    for (uint64_t id = 1; id <= allocs; id++) {
        uint32_t type = 1 + bench_rand(BENCH_TYPES), size = 24 + 8 * bench_rand(16);
        uint32_t tid = 1000 + bench_rand(BENCH_THREADS);
        gboolean survives = (id % 5) == 0;
        hl_alloc_count *k = &counts[(type - 1) * BENCH_THREADS + (tid - 1000)];
        k->type_id = type;
        k->os_tid = tid;
        k->count++;
        k->bytes += size;
        if (survives) {
            hl_survivor v = {.id = id, .size = size, .type_id = type, .os_tid = tid,
                             .generation = HL_GEN_1};
            hl_sb_survivor(sb, 1, &v);
            k->survived++;
            k->survived_bytes += size;
            g_array_append_val(live, id);
        }
    }
    for (uint32_t i = 0; i < BENCH_TYPES * BENCH_THREADS; i++)
        if (counts[i].count > 0)
            hl_sb_alloc_count(sb, 1, &counts[i]);
    c->survivors = live->len;
    /* The heap survived an earlier GC (its rows are committed); the next GC, a full one that
     * every object survives, is snapshotted: the snapshot's commit is what is measured. */
    hl_sb_gc_end(sb, 1, HL_GC_FLAG_COMPACTING);
    hl_sb_gc_start(sb, 2, 2, TRUE, allocs + 1);
    if (with_snapshot) {
        /* Walk order: runs of 64 ascending ids, the runs shuffled. */
        guint runs = (live->len + 63) / 64;
        g_autofree guint *order = g_new(guint, runs);
        for (guint i = 0; i < runs; i++)
            order[i] = i;
        for (guint i = runs; i > 1; i--) {
            guint j = bench_rand(i), t = order[i - 1];
            order[i - 1] = order[j];
            order[j] = t;
        }
        /* Snapshot 2, as any but the first: the number 1 would be stored in no bytes at all. */
        hl_sb_snapshot_start(sb, 2, 2, HL_SNAPSHOT_INDUCED);
        for (guint r = 0; r < runs; r++) {
            for (guint i = order[r] * 64; i < MIN(live->len, (order[r] + 1) * 64); i++) {
                uint32_t g = bench_rand(10);
                hl_sb_snapshot_object(sb, 2, g_array_index(live, uint64_t, i),
                                      g < 7 ? HL_GEN_2 : g < 9 ? HL_GEN_1 : HL_GEN_0, 0);
            }
        }
        for (guint r = 0; r < runs; r++) {
            for (guint i = order[r] * 64; i < MIN(live->len, (order[r] + 1) * 64); i++) {
                uint64_t from = g_array_index(live, uint64_t, i);
                for (uint32_t k = bench_refs_of(); k > 0; k--) {
                    hl_sb_snapshot_ref(sb, 2, from,
                                       g_array_index(live, uint64_t, bench_rand(live->len)));
                    c->refs++;
                }
            }
        }
        for (guint i = 0; i < live->len; i += 100) {
            hl_sb_snapshot_root(sb, 2, g_array_index(live, uint64_t, i),
                                i % 200 == 0 ? HL_ROOT_STACK : HL_ROOT_HANDLE, 0,
                                0x7f0000001000u + i * 16);
            c->roots++;
        }
        c->objects = live->len;
        hl_sb_snapshot_end(sb, 2, 2);
    }
    hl_sb_gc_end(sb, 2, HL_GC_FLAG_COMPACTING);
    hl_sb_run_end(sb, 2);
    return sb;
}

/* Ingests the recording into <dir>/<name>; returns FALSE on error. */
static gboolean bench_snapshot_ingest(hl_sb *sb, const char *path, double *ingest, double *finish,
                                      double *cpu, GError **error)
{
    size_t len = hl_sb_len(sb);
    int fd = hl_sb_memfd(sb, len);
    gboolean ok = FALSE;
    if (fd < 0) {
        g_set_error(error, STORE_ERROR, STORE_ERROR_IO, "memfd: %s", g_strerror(errno));
        return FALSE;
    }
    store_writer *w = store_writer_create(path, "bench_store snapshot", error);
    if (w == NULL)
        goto out;
    double t0 = bench_now(), c0 = bench_cpu();
    if (!store_writer_ingest_fd(w, fd, error)) {
        store_writer_finish(w, NULL, NULL);
        goto out;
    }
    double t1 = bench_now();
    if (!store_writer_finish(w, NULL, error))
        goto out;
    *ingest = t1 - t0;
    *finish = bench_now() - t1;
    *cpu = bench_cpu() - c0;
    ok = TRUE;
out:
    close(fd);
    return ok;
}

/* Bytes of each table and index of the snapshot (dbstat). */
static void bench_snapshot_sizes(const char *path, const bench_snapshot_counts *c)
{
    static const char *const names[] = {"snapshot_blocks", "snapshot_blocks_by_snapshot",
                                        "snapshot_blocks_by_id", "snapshot_roots",
                                        "snapshot_roots_by_object", "snapshots"};
    int64_t bytes[G_N_ELEMENTS(names)] = {0}, all = 0;
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db, "SELECT sum(pgsize) FROM dbstat WHERE name = ?1", -1, &st, NULL) !=
            SQLITE_OK) {
        fprintf(stderr, "dbstat: %s\n", sqlite3_errmsg(db));
        goto out;
    }
    for (size_t i = 0; i < G_N_ELEMENTS(names); i++) {
        sqlite3_bind_text(st, 1, names[i], -1, SQLITE_STATIC);
        if (sqlite3_step(st) == SQLITE_ROW)
            bytes[i] = sqlite3_column_int64(st, 0);
        sqlite3_reset(st);
        all += bytes[i];
        printf("  %-26s %10.1f MB  %6.2f bytes per snapshot object\n", names[i],
               (double)bytes[i] / 1e6, (double)bytes[i] / (double)c->objects);
    }
    printf("bytes per snapshot object, objects with their references (snapshot_blocks and its "
           "indexes): %.2f\n",
           (double)(bytes[0] + bytes[1] + bytes[2]) / (double)c->objects);
    printf("  ... + roots (%" G_GUINT64_FORMAT ") and the snapshots row:                   %.2f\n",
           c->roots, (double)all / (double)c->objects);
out:
    sqlite3_finalize(st);
    sqlite3_close(db);
}

/* Reads every reference of the snapshot (number 2) as a reader in C does (the refs text of
 * each object, parsed: query/snapshot_graph.c), and through the snapshot_refs view. */
static void bench_snapshot_read(const char *path, const bench_snapshot_counts *c)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK)
        goto out;
    double t0 = bench_now();
    uint64_t refs = 0, sum = 0;
    if (sqlite3_prepare_v2(db,
                           "SELECT object_id, refs FROM snapshot_objects WHERE snapshot = 2"
                           " AND refs IS NOT NULL ORDER BY object_id",
                           -1, &st, NULL) != SQLITE_OK)
        goto out;
    /* The alternative to JSON text, measured on the same references: a BLOB of varints (7 bits
     * a byte) of the target ids, or of their zigzag distance to the referencing object. */
    uint64_t text_bytes = 0, varint_bytes = 0, delta_bytes = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        int64_t from = sqlite3_column_int64(st, 0);
        const unsigned char *t = sqlite3_column_text(st, 1);
        text_bytes += (uint64_t)sqlite3_column_bytes(st, 1);
        uint64_t v = 0;
        for (; t != NULL && *t; t++) { /* the digits between the brackets and commas */
            if (*t >= '0' && *t <= '9') {
                v = v * 10 + (uint64_t)(*t - '0');
            } else if (*t == ',' || *t == ']') {
                int64_t d = (int64_t)v - from;
                uint64_t z = d < 0 ? ((uint64_t)(-d) << 1) - 1 : (uint64_t)d << 1;
                for (uint64_t x = v; (varint_bytes++, x >>= 7) != 0;)
                    ;
                for (; (delta_bytes++, z >>= 7) != 0;)
                    ;
                sum += v;
                refs++;
                v = 0;
            }
        }
    }
    sqlite3_finalize(st);
    double t1 = bench_now();
    uint64_t view_refs = 0;
    if (sqlite3_prepare_v2(db, "SELECT from_id, to_id FROM snapshot_refs WHERE snapshot = 2", -1,
                           &st, NULL) != SQLITE_OK)
        goto out;
    while (sqlite3_step(st) == SQLITE_ROW)
        view_refs++;
    double t2 = bench_now();
    printf("reading the references: %.2f s parsing refs text (%.1f M refs/s), %.2f s through the"
           " snapshot_refs view; %" G_GUINT64_FORMAT " and %" G_GUINT64_FORMAT
           " of %" G_GUINT64_FORMAT
           " (checksum %" G_GUINT64_FORMAT ")\n",
           t1 - t0, (double)refs / (t1 - t0) / 1e6, t2 - t1, refs, view_refs, c->refs, sum);
    printf("refs payload per snapshot object: JSON text %.2f bytes; as a varint BLOB %.2f, of "
           "distances to the object %.2f (not counting SQLite's own few bytes per value)\n",
           (double)text_bytes / (double)c->objects, (double)varint_bytes / (double)c->objects,
           (double)delta_bytes / (double)c->objects);
out:
    sqlite3_finalize(st);
    sqlite3_close(db);
}

static int bench_snapshot_main(int argc, char **argv)
{
    uint64_t objects = argc > 1 ? g_ascii_strtoull(argv[1], NULL, 10) : 1000000;
    g_autofree char *dir = argc > 2 ? g_strdup(argv[2])
                                    : g_dir_make_tmp("bench-store-XXXXXX", NULL);
    g_autofree char *with = g_build_filename(dir, "snapshot.db", NULL);
    g_autofree char *without = g_build_filename(dir, "no-snapshot.db", NULL);
    g_autoptr(GError) error = NULL;
    bench_snapshot_counts c, c0;
    double in1 = 0, fin1 = 0, in0 = 0, fin0 = 0, cpu1 = 0, cpu0 = 0;
    int rc = 1;

    if (objects < 100) {
        fprintf(stderr, "usage: bench_store snapshot [objects [dir]]\n");
        return 2;
    }
    hl_sb *sb = bench_snapshot_build(objects, TRUE, &c);
    gboolean ok = bench_snapshot_ingest(sb, with, &in1, &fin1, &cpu1, &error);
    hl_sb_free(sb);
    if (!ok)
        goto out;
    sb = bench_snapshot_build(objects, FALSE, &c0);
    ok = bench_snapshot_ingest(sb, without, &in0, &fin0, &cpu0, &error);
    hl_sb_free(sb);
    if (!ok)
        goto out;
    struct stat st1, st0;
    stat(with, &st1);
    stat(without, &st0);
    printf("snapshot: %" G_GUINT64_FORMAT " objects, %" G_GUINT64_FORMAT
           " references (%.2f per object, duplicates included), %" G_GUINT64_FORMAT
           " roots; ids up to %" G_GUINT64_FORMAT "\n",
           c.objects, c.refs, (double)c.refs / (double)c.objects, c.roots, objects * 5);
    printf("writing it: ingest %.2f s (+%.2f s over the same recording without it), finish "
           "%.2f s (%+.2f s)\n",
           in1, in1 - in0, fin1, fin1 - fin0);
    printf("survivors (without the snapshot): %" G_GUINT64_FORMAT " objects rows + first generation"
           " rows in %.2f s ingest + %.2f s finish: %.2f M survivors/s\n",
           c0.survivors, in0, fin0, (double)c0.survivors / (in0 + fin0) / 1e6);
    printf("snapshot alone (ingest + finish it adds): %.2f s for %" G_GUINT64_FORMAT
           " objects: %.2f M snapshot objects/s, references included\n",
           (in1 - in0) + (fin1 - fin0), c.objects,
           (double)c.objects / ((in1 - in0) + (fin1 - fin0)) / 1e6);
    /* CPU time (user + system) is steadier than wall time on a shared machine. */
    printf("  cpu: %.2f s (%.2f M snapshot objects per cpu second)\n", cpu1 - cpu0,
           (double)c.objects / (cpu1 - cpu0) / 1e6);
    printf("database: %.1f MB with the snapshot, %.1f MB without: %.2f bytes per snapshot object\n",
           (double)st1.st_size / 1e6, (double)st0.st_size / 1e6,
           (double)(st1.st_size - st0.st_size) / (double)c.objects);
    bench_snapshot_sizes(with, &c);
    bench_snapshot_read(with, &c);
    rc = 0;
out:
    if (error != NULL)
        fprintf(stderr, "bench_store: %s\n", error->message);
    if (argc <= 2) {
        unlink(with);
        unlink(without);
        rmdir(dir);
    }
    return rc;
}

/* A memfd (CLOEXEC) holding the whole file at `path`, its size in *size; -1 with a message on
 * stderr when it cannot be read. */
static int bench_file_memfd(const char *path, off_t *size)
{
    int in = open(path, O_RDONLY | O_CLOEXEC);
    int out = memfd_create("bench_store_replay", MFD_CLOEXEC);
    char buf[1 << 16];
    *size = 0;
    if (in < 0 || out < 0)
        goto fail;
    for (;;) {
        ssize_t n = read(in, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            goto fail;
        if (n == 0)
            break;
        for (ssize_t done = 0; done < n;) {
            ssize_t w = write(out, buf + done, (size_t)(n - done));
            if (w < 0 && errno != EINTR)
                goto fail;
            if (w > 0)
                done += w;
        }
        *size += n;
    }
    close(in);
    return out;
fail:
    fprintf(stderr, "bench_store: %s: %s\n", path, g_strerror(errno));
    if (in >= 0)
        close(in);
    if (out >= 0)
        close(out);
    return -1;
}

/* bench_store replay STREAM [runs [ingest]]: with `ingest`, the writer alone (no first read). */
static int bench_replay_main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: bench_store replay STREAM [runs [ingest]]\n");
        return 2;
    }
    int runs = argc > 2 ? atoi(argv[2]) : 3;
    gboolean read_too = !(argc > 3 && strcmp(argv[3], "ingest") == 0);
    if (runs < 1) {
        fprintf(stderr, "bench_store replay: RUNS must be a positive number, not '%s'\n", argv[2]);
        return 2;
    }
    g_autofree char *dir = g_dir_make_tmp("bench-store-replay-XXXXXX", NULL);
    g_autofree char *path = g_build_filename(dir, "replay.db", NULL);
    off_t stream_size;
    int rc = 1;
    int stream = bench_file_memfd(argv[1], &stream_size);
    if (stream < 0)
        goto out;
    for (int i = 0; i < runs; i++) {
        g_autoptr(GError) error = NULL;
        store_summary sum;
        /* Each run reads the same bytes from memory, from the start (its own descriptor). */
        g_autofree char *proc = g_strdup_printf("/proc/self/fd/%d", stream);
        int fd = open(proc, O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            fprintf(stderr, "bench_store: %s: %s\n", proc, g_strerror(errno));
            goto out;
        }
        bench_remove_db(path);
        store_writer *w = store_writer_create(path, "bench_store replay", &error);
        double t0 = bench_now(), c0 = bench_cpu();
        gboolean ok = w != NULL && store_writer_ingest_fd(w, fd, &error);
        double t1 = bench_now(), c1 = bench_cpu();
        if (w != NULL)
            ok = store_writer_finish(w, &sum, ok ? &error : NULL) && ok;
        double t2 = bench_now(), c2 = bench_cpu();
        close(fd);
        if (!ok) {
            fprintf(stderr, "bench_store: %s\n", error ? error->message : "replay failed");
            goto out;
        }
        struct stat db, built;
        stat(path, &db);
        /* The first read of the finished file: what the first `heaplens` command adds. */
        if (read_too && !store_history_build_file(path, NULL, NULL, &error)) {
            fprintf(stderr, "bench_store: %s\n", error->message);
            goto out;
        }
        double t3 = bench_now(), c3 = bench_cpu();
        stat(path, &built);
        double per = sum.objects ? 1.0 / (double)sum.objects : 0.0;
        printf("replay %d: stream %.1f MB; ingest %.3f s (cpu %.3f s), finish %.3f s (cpu %.3f "
               "s); %" G_GUINT64_FORMAT " gcs, %" G_GUINT64_FORMAT " objects, %.2f us cpu per "
               "object; database %.1f MB (%.1f bytes per object); first read %.3f s (cpu %.3f s), "
               "database then %.1f MB (x%.2f)\n",
               i + 1, (double)stream_size / 1e6, t1 - t0, c1 - c0, t2 - t1, c2 - c1, sum.gcs,
               sum.objects, (c2 - c0) * 1e6 * per, (double)db.st_size / 1e6,
               (double)db.st_size * per, t3 - t2, c3 - c2, (double)built.st_size / 1e6,
               (double)built.st_size / (double)db.st_size);
    }
    /* BENCH_STORE_KEEP=PATH keeps the last run's database there (to compare what two streams
     * stored). */
    const char *keep = getenv("BENCH_STORE_KEEP");
    if (keep != NULL && rename(path, keep) != 0) {
        fprintf(stderr, "bench_store: %s: %s\n", keep, g_strerror(errno));
        goto out;
    }
    rc = 0;
out:
    if (stream >= 0)
        close(stream);
    bench_remove_db(path);
    rmdir(dir);
    return rc;
}

/* Appends one record {type, size, payload} to `out`. */
static void bench_put_record(GByteArray *out, uint16_t type, const void *payload, uint32_t size)
{
    hl_rec_header h = {.type = type, .size = size};
    g_byte_array_append(out, (const guint8 *)&h, sizeof h);
    g_byte_array_append(out, payload, size);
}

/* GC_SURVIVORS_PACKED payload -> hl_survivor items (appended to `items`); FALSE if malformed. */
static gboolean bench_unpack(const uint8_t *p, uint32_t size, hl_gc_survivors *head, GArray *items)
{
    if (size < sizeof *head)
        return FALSE;
    memcpy(head, p, sizeof *head);
    const uint8_t *q = p + sizeof *head, *end = p + size;
    uint64_t id = 0, tid = 0, heap = 0;
    for (uint32_t i = 0; i < head->count; i++) {
        uint64_t v, type_id, obj_size;
        if (!hl_varint_get(&q, end, &v) ||
            ((v & 1) && (!hl_varint_get(&q, end, &tid) || !hl_varint_get(&q, end, &heap))) ||
            !hl_varint_get(&q, end, &type_id) || !hl_varint_get(&q, end, &obj_size))
            return FALSE;
        id += v >> 4;
        hl_survivor s = {.id = id, .size = obj_size, .type_id = (uint32_t)type_id,
                         .os_tid = (uint32_t)tid, .heap = (uint8_t)heap,
                         .generation = (uint8_t)((v >> 1) & 7)};
        g_array_append_val(items, s);
    }
    return q == end;
}

/* bench_store repack STREAM OUT [old]. */
static int bench_repack_main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: bench_store repack STREAM OUT [old]\n");
        return 2;
    }
    gboolean to_old = argc > 3 && strcmp(argv[3], "old") == 0;
    g_autoptr(GError) error = NULL;
    g_autofree char *data = NULL;
    gsize len;
    if (!g_file_get_contents(argv[1], &data, &len, &error)) {
        fprintf(stderr, "bench_store: %s\n", error->message);
        return 1;
    }
    hl_stream_header sh;
    if (len < sizeof sh) {
        fprintf(stderr, "bench_store: %s: not a stream\n", argv[1]);
        return 1;
    }
    memcpy(&sh, data, sizeof sh);
    sh.version = to_old ? 4u : HL_STREAM_VERSION;
    g_autoptr(GByteArray) out = g_byte_array_sized_new(len);
    g_byte_array_append(out, (const guint8 *)&sh, sizeof sh);
    g_autoptr(GArray) items = g_array_new(FALSE, FALSE, sizeof(hl_survivor));
    uint8_t *packed = g_malloc(HL_REC_MAX_PAYLOAD);
    size_t off = sizeof sh;
    uint64_t repacked = 0;
    while (off + sizeof(hl_rec_header) <= len) {
        hl_rec_header h;
        memcpy(&h, data + off, sizeof h);
        const uint8_t *payload = (const uint8_t *)data + off + sizeof h;
        if (h.size > len - off - sizeof h)
            break; /* a cut record: the rest as it is */
        off += sizeof h + h.size;
        hl_gc_survivors head;
        g_array_set_size(items, 0);
        if (!to_old && h.type == HL_REC_GC_SURVIVORS && h.size >= sizeof head) {
            memcpy(&head, payload, sizeof head);
            const hl_survivor *v = (const hl_survivor *)(payload + sizeof head);
            size_t taken, bytes = hl_survivors_pack(v, head.count, head.count,
                                                    packed + sizeof head,
                                                    HL_REC_MAX_PAYLOAD - sizeof head, &taken);
            memcpy(packed, &head, sizeof head);
            bench_put_record(out, HL_REC_GC_SURVIVORS_PACKED, packed,
                             (uint32_t)(sizeof head + bytes));
            repacked++;
        } else if (to_old && h.type == HL_REC_GC_SURVIVORS_PACKED &&
                   bench_unpack(payload, h.size, &head, items)) {
            GByteArray *rec = g_byte_array_new();
            g_byte_array_append(rec, (const guint8 *)&head, sizeof head);
            g_byte_array_append(rec, (const guint8 *)items->data,
                                items->len * (guint)sizeof(hl_survivor));
            bench_put_record(out, HL_REC_GC_SURVIVORS, rec->data, rec->len);
            g_byte_array_unref(rec);
            repacked++;
        } else {
            g_byte_array_append(out, (const guint8 *)data + off - sizeof h - h.size,
                                (guint)(sizeof h + h.size));
        }
    }
    g_byte_array_append(out, (const guint8 *)data + off, (guint)(len - off));
    g_free(packed);
    if (!g_file_set_contents(argv[2], (const char *)out->data, out->len, &error)) {
        fprintf(stderr, "bench_store: %s\n", error->message);
        return 1;
    }
    printf("repack: %" G_GUINT64_FORMAT " survivor records rewritten, %zu -> %u bytes\n",
           repacked, (size_t)len, out->len);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "repack") == 0)
        return bench_repack_main(argc - 1, argv + 1);
    if (argc > 1 && strcmp(argv[1], "snapshot") == 0)
        return bench_snapshot_main(argc - 1, argv + 1);
    if (argc > 1 && strcmp(argv[1], "replay") == 0)
        return bench_replay_main(argc - 1, argv + 1);
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
    printf("ingest: %.3f s (cpu %.3f s, %.2f us per object)   finish (checkpoint, generation "
           "history): %.3f s (cpu %.3f s)\n",
           t3 - t2, c3 - c2, c.objects ? (c3 - c2) * 1e6 / (double)c.objects : 0.0, t4 - t3,
           c4 - c3);
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
