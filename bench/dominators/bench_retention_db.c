/* bench_retention_db.c — writes a heaplens database holding one heap snapshot of the synthetic
 * heap of synth_heap.h, through the real writer, for timing `heaplens retention` on it.
 *
 * usage: bench_retention_db FILE [N_OBJECTS] [SEED] [SNAPSHOTS]
 *        (default 10,000,000, 1 and 1)
 *
 * The recording: N allocations (ids 1 .. N, types 1 .. 2000 named "Synth.TypeK"), one induced
 * gen2 GC in which all of them survive, and snapshot 1 of that GC holding every object, every
 * reference and the roots (strong handles and stack roots); with SNAPSHOTS > 1, as many more
 * induced gen2 GCs in which nothing dies, each with a snapshot of the same heap (what `leaks`
 * reads: bench/read). Then run, for instance:
 *
 *   /usr/bin/time -v heaplens retention FILE --progress     # first run: computes and stores
 *   /usr/bin/time -v heaplens retention FILE                # later runs: reads the tables
 *
 * (bench/dominators/run.sh does all of it.) Prints how long building the stream and writing the
 * database took; neither is part of the benchmark.
 */
#include "store/store.h"
#include "synth_heap.h"
#include "tests/unit/common/hl_stream_builder.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

typedef struct edge_sink {
    hl_sb *sb;
    uint64_t refs, roots;
    uint32_t snapshot;
} edge_sink;

static void edge_add(void *ctx, uint32_t from, uint32_t to)
{
    edge_sink *s = ctx;
    if (from == 0) {
        /* every tenth root a stack slot, the others strong handles */
        if (s->roots % 10 == 0)
            hl_sb_snapshot_root(s->sb, s->snapshot, to, HL_ROOT_STACK, 0, 0x5000);
        else
            hl_sb_snapshot_root(s->sb, s->snapshot, to, HL_ROOT_HANDLE, 0, 0x7f0000000000ull + 8 * s->roots);
        s->roots++;
    } else {
        hl_sb_snapshot_ref(s->sb, s->snapshot, from, to);
        s->refs++;
    }
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: bench_retention_db FILE [N_OBJECTS] [SEED] [SNAPSHOTS]\n");
        return 2;
    }
    const char *path = argv[1];
    uint32_t n_objects = argc > 2 ? (uint32_t)strtoul(argv[2], NULL, 0) : 10000000u;
    uint64_t seed = argc > 3 ? strtoull(argv[3], NULL, 0) : 1;
    uint32_t snapshots = argc > 4 ? (uint32_t)strtoul(argv[4], NULL, 0) : 1;
    if (snapshots < 1 || snapshots > 100) {
        fprintf(stderr, "bench_retention_db: 1 to 100 snapshots\n");
        return 2;
    }
    if (n_objects < 1000) {
        fprintf(stderr, "bench_retention_db: at least 1000 objects\n");
        return 2;
    }
    double t0 = now_s();
    hl_sb *sb = hl_sb_new();
    hl_sb_set_batch_limit(sb, 65536);
    hl_sb_run_start(sb, 4242, "synthetic heap");
    for (uint32_t t = 1; t <= SYNTH_TYPES; t++) {
        char name[32];
        snprintf(name, sizeof name, "Synth.Type%u", t);
        hl_sb_type(sb, t, name);
    }
    /* the generator gives sizes and types before the edges: keep the edges' records apart by
     * generating twice (same seed, same heap) */
    synth_heap h;
    edge_sink counter = {NULL, 0, 0, 1};
    hl_sb *scratch = hl_sb_new();
    counter.sb = scratch;
    synth_heap_generate(&h, n_objects, seed, edge_add, &counter);
    hl_sb_free(scratch);
    /* One GC that every object survives: its ALLOC_COUNTS (per type), then its GC_SURVIVORS,
     * as the collector sends them. */
    hl_sb_gc_start(sb, 1, 2, TRUE, (uint64_t)n_objects + 1);
    g_autofree hl_alloc_count *counts = g_new0(hl_alloc_count, SYNTH_TYPES + 1);
    for (uint32_t v = 1; v <= n_objects; v++) {
        hl_alloc_count *c = &counts[h.types[v]];
        c->type_id = h.types[v];
        c->os_tid = 100;
        c->count++;
        c->bytes += h.sizes[v];
        c->survived++;
        c->survived_bytes += h.sizes[v];
    }
    for (uint32_t t = 1; t <= SYNTH_TYPES; t++)
        if (counts[t].count > 0)
            hl_sb_alloc_count(sb, 1, &counts[t]);
    for (uint32_t v = 1; v <= n_objects; v++) {
        hl_survivor o = {.id = v, .size = h.sizes[v], .type_id = h.types[v], .os_tid = 100,
                         .generation = HL_GEN_1};
        hl_sb_survivor(sb, 1, &o);
    }
    hl_sb_snapshot_start(sb, 1, 1, HL_SNAPSHOT_INDUCED);
    for (uint32_t v = 1; v <= n_objects; v++)
        hl_sb_snapshot_object(sb, 1, v, HL_GEN_1, 0);
    synth_heap_release(&h);
    edge_sink sink = {sb, 0, 0, 1};
    synth_heap_generate(&h, n_objects, seed, edge_add, &sink);
    hl_sb_snapshot_end(sb, 1, 1);
    hl_sb_gc_end(sb, 1, HL_GC_FLAG_COMPACTING);
    /* The same heap again after each later GC (the generator is deterministic for a seed). */
    for (uint32_t s = 2; s <= snapshots; s++) {
        hl_sb_gc_start(sb, s, 2, TRUE, (uint64_t)n_objects + 1);
        hl_sb_snapshot_start(sb, s, s, HL_SNAPSHOT_INDUCED);
        for (uint32_t v = 1; v <= n_objects; v++)
            hl_sb_snapshot_object(sb, s, v, HL_GEN_1, 0);
        synth_heap_release(&h);
        sink.sb = sb;
        sink.snapshot = s;
        synth_heap_generate(&h, n_objects, seed, edge_add, &sink);
        hl_sb_snapshot_end(sb, s, s);
        hl_sb_gc_end(sb, s, HL_GC_FLAG_COMPACTING);
    }
    hl_sb_run_end(sb, snapshots);
    size_t len = 0;
    hl_sb_bytes(sb, &len);
    printf("stream            %.1f MiB built in %.1f s\n", (double)len / (1 << 20), now_s() - t0);

    t0 = now_s();
    GError *error = NULL;
    store_summary summary;
    if (!hl_sb_write_db(sb, path, NULL, &summary, &error)) {
        fprintf(stderr, "bench_retention_db: %s\n", error->message);
        return 1;
    }
    printf("database          %s written in %.1f s: %" PRIu32 " objects, %" PRIu64
           " references, %" PRIu64 " roots\n",
           path, now_s() - t0, n_objects, sink.refs, sink.roots);
    hl_sb_free(sb);
    synth_heap_release(&h);
    return 0;
}
