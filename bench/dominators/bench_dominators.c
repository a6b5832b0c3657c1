/* bench_dominators.c — the dominator tree and retained sizes of a synthetic heap, in memory.
 *
 * usage: bench_dominators [N_OBJECTS] [SEED]      (default 10,000,000 and 1)
 *
 * Builds the heap of synth_heap.h (N objects plus the virtual root, about 1.6 references per
 * object) and times the steps of `heaplens retention` that do not touch SQLite: sealing the graph
 * (edges arrive in creation order, not grouped by source, so sealing sorts), the dominator tree
 * with retained sizes (per phase), and retained sizes per type. Prints seconds per step and the
 * peak resident memory of the process (getrusage; the generator's arrays included). The whole
 * command on a database — reading the snapshot from SQLite, computing, storing — is measured
 * with bench_retention_db (see README.md).
 */
#include "analysis/an_dominators.h"
#include "analysis/an_graph.h"
#include "synth_heap.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double peak_mib(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_maxrss / 1024.0; /* KiB on Linux */
}

static void edge_add(void *ctx, uint32_t from, uint32_t to)
{
    if (an_graph_add_edge(ctx, from, to) != AN_OK) {
        fprintf(stderr, "bench_dominators: out of memory adding edges\n");
        exit(1);
    }
}

/* Prints how long each phase of the dominator computation took. */
typedef struct phase_clock {
    const char *phase;
    double start;
} phase_clock;

static void phase_progress(void *ctx, const char *phase, uint64_t done, uint64_t total)
{
    phase_clock *c = ctx;
    if (c->phase != phase) {
        c->phase = phase;
        c->start = now_s();
    }
    if (done == total)
        printf("  %-15s %.3f s\n", phase, now_s() - c->start);
}

int main(int argc, char **argv)
{
    uint32_t n_objects = argc > 1 ? (uint32_t)strtoul(argv[1], NULL, 0) : 10000000u;
    uint64_t seed = argc > 2 ? strtoull(argv[2], NULL, 0) : 1;
    if (n_objects < 1000 || n_objects > AN_MAX_NODES - 1) {
        fprintf(stderr, "usage: bench_dominators [N_OBJECTS >= 1000] [SEED]\n");
        return 2;
    }
    const uint32_t n = n_objects + 1;
    an_graph *g = an_graph_new(n);
    if (!g || an_graph_reserve(g, (uint64_t)n_objects * 17 / 10) != AN_OK) {
        fprintf(stderr, "bench_dominators: out of memory\n");
        return 1;
    }
    synth_heap h;
    double t0 = now_s();
    synth_heap_generate(&h, n_objects, seed, edge_add, g);
    double t_generate = now_s() - t0;

    t0 = now_s();
    if (an_graph_seal(g) != AN_OK) {
        fprintf(stderr, "bench_dominators: out of memory sealing\n");
        return 1;
    }
    double t_seal = now_s() - t0;

    printf("dominators+sizes, per phase:\n");
    t0 = now_s();
    an_domtree *t = NULL;
    phase_clock clock = {NULL, t0};
    if (an_domtree_compute(g, h.sizes, phase_progress, &clock, &t) != AN_OK) {
        fprintf(stderr, "bench_dominators: out of memory computing dominators\n");
        return 1;
    }
    double t_dom = now_s() - t0;

    t0 = now_s();
    uint64_t *type_bytes = malloc((SYNTH_TYPES + 1) * sizeof *type_bytes);
    uint64_t *type_counts = malloc((SYNTH_TYPES + 1) * sizeof *type_counts);
    h.types[0] = AN_NONE;
    if (!type_bytes || !type_counts ||
        an_domtree_group_retained(t, h.types, SYNTH_TYPES + 1, type_bytes, type_counts) != AN_OK) {
        fprintf(stderr, "bench_dominators: out of memory computing per-type sizes\n");
        return 1;
    }
    double t_types = now_s() - t0;

    const uint64_t *rb = an_domtree_retained_bytes(t);
    uint32_t top = 1;
    for (uint32_t u = 1; u < n; u++)
        if (rb[u] > rb[top])
            top = u;
    printf("objects           %" PRIu32 "\n", n_objects);
    printf("references        %" PRIu64 " (%.2f per object, %" PRIu32 " GC roots)\n",
           an_graph_edges(g) - h.roots, (double)(an_graph_edges(g) - h.roots) / n_objects, h.roots);
    printf("reachable         %" PRIu32 "\n", an_domtree_reachable(t) - 1);
    printf("heap bytes        %" PRIu64 "\n", rb[0]);
    printf("largest retainer  object %" PRIu32 ": %" PRIu64 " bytes, %" PRIu32 " objects\n", top,
           rb[top], an_domtree_retained_counts(t)[top]);
    printf("generate          %.3f s (not part of heaplens)\n", t_generate);
    printf("seal graph        %.3f s\n", t_seal);
    printf("dominators+sizes  %.3f s\n", t_dom);
    printf("per-type sizes    %.3f s\n", t_types);
    printf("total             %.3f s (seal + dominators + per-type)\n", t_seal + t_dom + t_types);
    printf("peak memory       %.1f MiB (whole process, generator arrays included)\n", peak_mib());
    an_domtree_free(t);
    an_graph_free(g);
    synth_heap_release(&h);
    free(type_bytes);
    free(type_counts);
    return 0;
}
