/* bench_heapmodel.c — cost of the remapped ObjectID model on a regions-shaped heap (not a test).
 *
 * Builds a model holding OLD gen2 objects (48 bytes apart on average, in 4 MiB gen2 regions),
 * then runs GCS gen0 GCs: before each, YOUNG objects are allocated in fresh gen0 regions by
 * THREADS threads, each bump-allocating 8 KiB allocation contexts, and their ObjectAllocated
 * events reach the model in per-thread buffers of 512 (as the collector drains them); half of them
 * survive at random, and the survivors' plugs are compacted into gen1 regions. Every 20th GC is a
 * gen1 GC that keeps 10% of gen1, compacted into gen2 (timed separately). Only hm_model_apply_gc
 * is timed; the sink counts callbacks, like the cheapest real consumer.
 *
 * Prints p50/p99/max of the gen0 apply time (thread CPU time, robust to a busy machine, and wall
 * time), the gen1 apply time, add cost, bytes per object, a yardstick (one plain pass over the
 * young objects on this machine), variants (no callbacks, one thread, adds in random order), the
 * add cost when lookups come between the adds (as the collector looks up the target of every new
 * GC handle: usually an object just allocated, now and then an old one) and the ratio against
 * the naive model of the tests on a smaller heap (the naive one is quadratic).
 *
 * Usage: bench_heapmodel [old young gcs threads [main]]   (defaults 2000000 100000 200 4);
 * `main` runs only the main scenario (for profiling).
 */
#include "heapmodel/hm_model.h"
#include "hm_naive.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define REGION (UINT64_C(4) << 20)
#define GEN2_BASE UINT64_C(0x7f0000000000)
#define GEN1_BASE UINT64_C(0x7f4000000000)
#define GEN0_BASE UINT64_C(0x7f8000000000)
#define CONTEXT 8192
#define FLUSH 512

/* The two implementations behind one interface. */
typedef struct impl {
    const char *name;
    void *(*make)(void);
    void (*drop)(void *);
    int (*add)(void *, uint64_t, uint64_t);
    int (*apply)(void *, const hm_gc_input *, const hm_gc_sink *, hm_gc_stats *);
    size_t (*count)(const void *);
} impl;

static void *model_make(void) { return hm_model_new(); }
static void model_drop(void *m) { hm_model_free(m); }
static int model_add(void *m, uint64_t a, uint64_t id) { return hm_model_add(m, a, id); }
static int model_apply(void *m, const hm_gc_input *in, const hm_gc_sink *s, hm_gc_stats *st)
{
    return hm_model_apply_gc(m, in, s, st);
}
static size_t model_count(const void *m) { return hm_model_count(m); }
static void *naive_make(void) { return hm_naive_new(); }
static void naive_drop(void *m) { hm_naive_free(m); }
static int naive_add(void *m, uint64_t a, uint64_t id) { return hm_naive_add(m, a, id); }
static int naive_apply(void *m, const hm_gc_input *in, const hm_gc_sink *s, hm_gc_stats *st)
{
    return hm_naive_apply_gc(m, in, s, st);
}
static size_t naive_count(const void *m) { return hm_naive_count(m); }

static const impl MODEL = {"model", model_make, model_drop, model_add, model_apply, model_count};
static const impl NAIVE = {"naive", naive_make, naive_drop, naive_add, naive_apply, naive_count};

typedef struct vec {
    void *v;
    size_t n, cap, size;
} vec;

static void *vec_push(vec *x)
{
    if (x->n == x->cap) {
        x->cap = x->cap ? 2 * x->cap : 1024;
        x->v = realloc(x->v, x->cap * x->size);
        if (!x->v) {
            fprintf(stderr, "out of memory\n");
            exit(1);
        }
    }
    return (char *)x->v + x->size * x->n++;
}

typedef struct bench {
    const impl *im;
    void *m;
    uint64_t rng, next_id;
    size_t threads;
    bool random_order; /* adds in random order (worst case for the sorts) */
    bool no_callbacks; /* a sink without callbacks: the model's own cost */
    size_t lookup_every; /* a lookup after every lookup_every-th add (0: none), timed with them */
    bool lookup_old;     /* of an old (gen1) object instead of the one just added */
    vec gen2, gen1, young; /* hm_gen_range of regions; uint64_t addresses */
    vec gen1_objs;         /* gen1 object addresses, ascending */
    vec moves;
    uint64_t gen1_region, gen1_used, gen2_region, gen2_used, gen0_next;
    size_t callbacks;
    double t_add; /* time spent in add calls of young objects */
    size_t n_add;
    double *t_gen0, *t_gen1; /* wall time of apply_gc */
    double *c_gen0;          /* thread CPU time of apply_gc (robust to a busy machine) */
    size_t n_gen0, n_gen1;
    double last_cpu;
} bench;

static uint64_t rnd(bench *b)
{
    uint64_t z = (b->rng += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

static double clock_s(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double now(void)
{
    return clock_s(CLOCK_MONOTONIC);
}

static void on_classified(void *ctx, uint64_t id, uint32_t heap)
{
    (void)id;
    (void)heap;
    ((bench *)ctx)->callbacks++;
}

static void on_died(void *ctx, uint64_t id, uint32_t gen)
{
    (void)id;
    (void)gen;
    ((bench *)ctx)->callbacks++;
}

static void on_survived(void *ctx, uint64_t id, uint32_t before, uint32_t after)
{
    (void)id;
    (void)before;
    (void)after;
    ((bench *)ctx)->callbacks++;
}

static uint64_t obj_size(bench *b)
{
    return 24 + 8 * (rnd(b) % 6); /* 24..64 bytes, 44 on average */
}

static void add(bench *b, uint64_t addr)
{
    if (b->im->add(b->m, addr, ++b->next_id) != HM_OK) {
        fprintf(stderr, "add failed\n");
        exit(1);
    }
}

static double apply(bench *b, uint32_t mask, vec *bb, vec *ba)
{
    hm_gc_sink sink = {.ctx = b, .classified = on_classified, .died = on_died,
                       .survived = on_survived};
    if (b->no_callbacks)
        sink = (hm_gc_sink){.ctx = b};
    hm_gc_stats st;
    hm_gc_input in = {0, mask, bb->v, bb->n, ba->v, ba->n, b->moves.v, b->moves.n};
    double c0 = clock_s(CLOCK_THREAD_CPUTIME_ID);
    double t0 = now();
    int rc = b->im->apply(b->m, &in, &sink, &st);
    double t = now() - t0;
    b->last_cpu = clock_s(CLOCK_THREAD_CPUTIME_ID) - c0;
    if (rc != HM_OK || st.anomalies != 0) {
        fprintf(stderr, "apply_gc: rc %d, %zu anomalies\n", rc, st.anomalies);
        exit(1);
    }
    return t;
}

/* A lookup between adds, which must find its object: `just_added`, or an old gen1 object. */
static void lookup(bench *b, uint64_t just_added)
{
    uint64_t addr = just_added, id = 0;
    uint32_t gen = 0, want = HM_GEN_UNKNOWN;
    if (b->lookup_old && b->gen1_objs.n > 0) {
        addr = ((uint64_t *)b->gen1_objs.v)[rnd(b) % b->gen1_objs.n];
        want = HM_GEN_1;
    }
    if (!hm_model_lookup(b->m, addr, &id, &gen) || gen != want) {
        fprintf(stderr, "lookup of 0x%llx failed\n", (unsigned long long)addr);
        exit(1);
    }
}

/* All generation ranges, in the runtime's (unordered) style: gen2, then gen1, then gen0. */
static void bounds(bench *b, vec *out, uint64_t gen0_start, uint64_t gen0_len)
{
    out->n = 0;
    for (int g = 2; g >= 1; g--) {
        vec *r = g == 2 ? &b->gen2 : &b->gen1;
        for (size_t i = 0; i < r->n; i++)
            *(hm_gen_range *)vec_push(out) = ((hm_gen_range *)r->v)[i];
    }
    for (uint64_t a = gen0_start; a < gen0_start + gen0_len; a += REGION) {
        uint64_t len = gen0_start + gen0_len - a < REGION ? gen0_start + gen0_len - a : REGION;
        *(hm_gen_range *)vec_push(out) = (hm_gen_range){a, len, HM_GEN_0, 0};
    }
}

/* Survivor destination: bump allocation in the last region of gen, a new one when full. */
static uint64_t dest(vec *regions, uint64_t *region, uint64_t *used, uint64_t base, uint64_t len,
                     uint32_t gen)
{
    if (regions->n == 0 || *used + len > REGION) {
        *region = base + regions->n * REGION;
        *used = 0;
        *(hm_gen_range *)vec_push(regions) = (hm_gen_range){*region, 0, gen, 0};
    }
    uint64_t a = *region + *used;
    *used += len;
    ((hm_gen_range *)regions->v)[regions->n - 1].length = *used;
    return a;
}

static void build_old(bench *b, size_t old)
{
    vec bb = {.size = sizeof(hm_gen_range)};
    uint64_t at = GEN2_BASE;
    for (size_t i = 0; i < old; i++) {
        uint64_t sz = obj_size(b);
        if ((at - GEN2_BASE) / REGION != (at + sz - 1 - GEN2_BASE) / REGION)
            at = GEN2_BASE + ((at - GEN2_BASE) / REGION + 1) * REGION;
        add(b, at);
        at += sz;
    }
    for (uint64_t r = GEN2_BASE; r < at; r += REGION) {
        uint64_t len = at - r < REGION ? at - r : REGION;
        *(hm_gen_range *)vec_push(&b->gen2) = (hm_gen_range){r, len, HM_GEN_2, 0};
    }
    b->gen2_region = ((hm_gen_range *)b->gen2.v)[b->gen2.n - 1].start;
    b->gen2_used = ((hm_gen_range *)b->gen2.v)[b->gen2.n - 1].length;
    bounds(b, &bb, 0, 0);
    b->moves.n = 0;
    apply(b, 0, &bb, &bb); /* classifies them all: gen2 */
    free(bb.v);
}

/* Allocates `young` objects in fresh gen0 regions by several threads; returns them in address
 * order in b->young and the gen0 extent through *start / *len. */
static void allocate(bench *b, size_t young, uint64_t *start, uint64_t *len)
{
    typedef struct ctx {
        uint64_t cur, end;
        uint64_t buf[FLUSH];
        size_t n;
    } ctx;
    ctx *c = calloc(b->threads, sizeof(*c));
    uint64_t base = GEN0_BASE + (b->gen0_next % 64) * REGION * 4, bump = base;
    b->gen0_next++;
    b->young.n = 0;
    vec order = {.size = sizeof(uint64_t)};
    for (size_t i = 0; i < young; i++) {
        ctx *t = &c[rnd(b) % b->threads];
        uint64_t sz = obj_size(b);
        if (t->cur + sz > t->end) {
            t->cur = bump;
            t->end = bump + CONTEXT;
            bump += CONTEXT;
        }
        t->buf[t->n++] = t->cur;
        t->cur += sz;
        if (t->n == FLUSH) { /* the collector drains one thread's buffer at a time */
            for (size_t k = 0; k < t->n; k++)
                *(uint64_t *)vec_push(&order) = t->buf[k];
            t->n = 0;
        }
    }
    for (size_t k = 0; k < b->threads; k++)
        for (size_t j = 0; j < c[k].n; j++)
            *(uint64_t *)vec_push(&order) = c[k].buf[j];
    uint64_t *o = order.v;
    if (b->random_order)
        for (size_t i = order.n; i > 1; i--) {
            size_t j = rnd(b) % i;
            uint64_t x = o[i - 1];
            o[i - 1] = o[j];
            o[j] = x;
        }
    double t0 = now();
    for (size_t i = 0; i < order.n; i++) {
        add(b, o[i]);
        if (b->lookup_every && i % b->lookup_every == b->lookup_every - 1)
            lookup(b, o[i]);
    }
    b->t_add += now() - t0;
    b->n_add += order.n;
    for (size_t i = 0; i < order.n; i++)
        *(uint64_t *)vec_push(&b->young) = o[i];
    /* Address order for planning the GC (the runtime's view). */
    uint64_t *y = b->young.v;
    for (size_t i = 1; i < b->young.n; i++) { /* nearly sorted: insertion sort of chunks is fine */
        uint64_t x = y[i];
        size_t j = i;
        while (j > 0 && y[j - 1] > x) {
            y[j] = y[j - 1];
            j--;
        }
        y[j] = x;
    }
    free(order.v);
    free(c);
    *start = base;
    *len = bump - base;
}

static void gen0_gc(bench *b, size_t young)
{
    uint64_t g0, g0_len;
    vec bb = {.size = sizeof(hm_gen_range)}, ba = {.size = sizeof(hm_gen_range)};
    allocate(b, young, &g0, &g0_len);
    bounds(b, &bb, g0, g0_len);
    b->moves.n = 0;
    const uint64_t *y = b->young.v;
    /* Each object survives with probability 1/2; a plug is a maximal run of survivors. */
    bool next_lives = rnd(b) & 1;
    for (size_t i = 0; i < b->young.n;) {
        bool lives = next_lives;
        next_lives = rnd(b) & 1;
        if (!lives) {
            i++;
            continue;
        }
        size_t j = i + 1;
        while (j < b->young.n && next_lives) {
            j++;
            next_lives = rnd(b) & 1;
        }
        uint64_t end = j < b->young.n ? y[j] : y[j - 1] + 24;
        uint64_t len = end - y[i];
        uint64_t to = dest(&b->gen1, &b->gen1_region, &b->gen1_used, GEN1_BASE, len, HM_GEN_1);
        *(hm_move *)vec_push(&b->moves) = (hm_move){y[i], to, len};
        for (size_t k = i; k < j; k++)
            *(uint64_t *)vec_push(&b->gen1_objs) = to + (y[k] - y[i]);
        i = j;
    }
    bounds(b, &ba, 0, 0);
    b->t_gen0[b->n_gen0] = apply(b, 1, &bb, &ba);
    b->c_gen0[b->n_gen0++] = b->last_cpu;
    free(bb.v);
    free(ba.v);
}

static void gen1_gc(bench *b)
{
    vec bb = {.size = sizeof(hm_gen_range)}, ba = {.size = sizeof(hm_gen_range)};
    bounds(b, &bb, 0, 0);
    b->moves.n = 0;
    const uint64_t *o = b->gen1_objs.v;
    for (size_t i = 0; i < b->gen1_objs.n; i++) {
        if (rnd(b) % 10 != 0)
            continue;
        uint64_t len = 24;
        uint64_t to = dest(&b->gen2, &b->gen2_region, &b->gen2_used, GEN2_BASE, len, HM_GEN_2);
        *(hm_move *)vec_push(&b->moves) = (hm_move){o[i], to, len};
    }
    b->gen1.n = 0; /* every gen1 region is emptied: survivors went to gen2 */
    b->gen1_objs.n = 0;
    bounds(b, &ba, 0, 0);
    b->t_gen1[b->n_gen1++] = apply(b, 3, &bb, &ba);
    free(bb.v);
    free(ba.v);
}

static int cmp_double(const void *pa, const void *pb)
{
    double a = *(const double *)pa, b = *(const double *)pb;
    return a < b ? -1 : a > b;
}

static double pct(double *v, size_t n, double p)
{
    if (n == 0)
        return 0;
    qsort(v, n, sizeof(*v), cmp_double);
    size_t i = (size_t)(p * (double)(n - 1) + 0.5);
    return v[i];
}

typedef struct result {
    double first; /* the first gen0 GC: cold scratch buffers, page faults */
    double p50, p99, max, mean0, cpu_p50, cpu_p99, gen1_p50, gen1_max, add_ns, bytes_per_obj;
    size_t count;
} result;

typedef struct config {
    size_t old, young, gcs, threads;
    bool random_order, no_callbacks;
    size_t lookup_every;
    bool lookup_old;
} config;

static result run(const impl *im, config c, uint64_t seed)
{
    size_t old = c.old, young = c.young, gcs = c.gcs;
    bench b;
    memset(&b, 0, sizeof(b));
    b.im = im;
    b.m = im->make();
    b.rng = seed;
    b.threads = c.threads ? c.threads : 1;
    b.random_order = c.random_order;
    b.no_callbacks = c.no_callbacks;
    b.lookup_every = c.lookup_every;
    b.lookup_old = c.lookup_old;
    b.gen2.size = b.gen1.size = sizeof(hm_gen_range);
    b.young.size = b.gen1_objs.size = sizeof(uint64_t);
    b.moves.size = sizeof(hm_move);
    b.t_gen0 = calloc(gcs + 1, sizeof(double));
    b.c_gen0 = calloc(gcs + 1, sizeof(double));
    b.t_gen1 = calloc(gcs / 20 + 2, sizeof(double));

    build_old(&b, old);
    b.t_add = 0;
    b.n_add = 0;
    for (size_t g = 0; g < gcs; g++) {
        gen0_gc(&b, young);
        if ((g + 1) % 20 == 0)
            gen1_gc(&b);
    }
    result r = {0};
    r.add_ns = b.t_add * 1e9 / (double)(b.n_add ? b.n_add : 1);
    r.count = im->count(b.m);
    if (im == &MODEL)
        r.bytes_per_obj = (double)hm_model_memory(b.m) / (double)r.count;
    /* Percentiles over the warm GCs: the first one pays for first-touching the scratch. */
    double sum = 0;
    size_t skip = b.n_gen0 > 1 ? 1 : 0, n = b.n_gen0 - skip;
    for (size_t i = skip; i < b.n_gen0; i++)
        sum += b.t_gen0[i];
    r.first = b.t_gen0[0];
    r.mean0 = sum / (double)n;
    r.p50 = pct(b.t_gen0 + skip, n, 0.50);
    r.p99 = pct(b.t_gen0 + skip, n, 0.99);
    r.max = pct(b.t_gen0 + skip, n, 1.0);
    r.cpu_p50 = pct(b.c_gen0 + skip, n, 0.50);
    r.cpu_p99 = pct(b.c_gen0 + skip, n, 0.99);
    r.gen1_p50 = pct(b.t_gen1, b.n_gen1, 0.50);
    r.gen1_max = pct(b.t_gen1, b.n_gen1, 1.0);

    im->drop(b.m);
    free(b.t_gen0);
    free(b.c_gen0);
    free(b.t_gen1);
    free(b.gen2.v);
    free(b.gen1.v);
    free(b.young.v);
    free(b.gen1_objs.v);
    free(b.moves.v);
    return r;
}

/* What one plain pass over the young objects costs on this machine (read 16 bytes, write 16
 * bytes, per object): a yardstick for the apply_gc numbers, which are a handful of such passes. */
static double reference_pass(size_t young)
{
    uint64_t *a = calloc(2 * young + 2, sizeof(uint64_t)), *o = calloc(2 * young + 2, 8);
    double best = 1e9;
    for (int rep = 0; rep < 50; rep++) {
        for (size_t i = 0; i < 2 * young; i += 97)
            a[i] += (uint64_t)rep; /* keep the compiler from hoisting the loop */
        double t0 = clock_s(CLOCK_THREAD_CPUTIME_ID);
        for (size_t i = 0; i < young; i++) {
            o[2 * i] = a[2 * i] + 8;
            o[2 * i + 1] = a[2 * i + 1] << 4;
        }
        double t = clock_s(CLOCK_THREAD_CPUTIME_ID) - t0;
        best = t < best ? t : best;
    }
    volatile uint64_t sink = o[young];
    (void)sink;
    free(a);
    free(o);
    return best;
}

static void print_gen0(const char *what, result r)
{
    printf("%-44s CPU p50 %6.3f ms  p99 %6.3f ms | wall p50 %6.3f ms  p99 %6.3f ms  max %6.3f ms\n",
           what, r.cpu_p50 * 1e3, r.cpu_p99 * 1e3, r.p50 * 1e3, r.p99 * 1e3, r.max * 1e3);
}

int main(int argc, char **argv)
{
    config c = {2000000, 100000, 200, 4, false, false, 0, false};
    if (argc > 1)
        c.old = strtoull(argv[1], NULL, 0);
    if (argc > 2)
        c.young = strtoull(argv[2], NULL, 0);
    if (argc > 3)
        c.gcs = strtoull(argv[3], NULL, 0);
    if (argc > 4)
        c.threads = strtoull(argv[4], NULL, 0);
    if (c.threads == 0)
        c.threads = 1;
    if (c.gcs == 0)
        c.gcs = 1;

    printf("heapmodel benchmark: %zu old gen2 objects, %zu gen0 GCs of %zu young objects "
           "(half survive, compacted), %zu allocating threads, a gen1 GC every 20\n",
           c.old, c.gcs, c.young, c.threads);
    result r = run(&MODEL, c, 1);
    print_gen0("gen0 apply_gc (counting sink):", r);
    printf("(percentiles over GCs 2..%zu; the first, with cold buffers, took %.3f ms wall)\n",
           c.gcs, r.first * 1e3);
    printf("gen1 apply_gc: p50 %.3f ms  max %.3f ms (wall)\n", r.gen1_p50 * 1e3,
           r.gen1_max * 1e3);
    printf("hm_model_add: %.1f ns/object\n", r.add_ns);
    printf("memory: %.2f bytes/object (%zu objects, hm_model_memory / hm_model_count)\n",
           r.bytes_per_obj, r.count);
    printf("yardstick: one plain pass over %zu young objects (16 B in, 16 B out) takes %.3f ms "
           "CPU here\n",
           c.young, reference_pass(c.young) * 1e3);
    if (argc > 5 && strcmp(argv[5], "main") == 0)
        return 0;

    config v = c;
    v.gcs = c.gcs / 4 ? c.gcs / 4 : 1;
    v.no_callbacks = true;
    print_gen0("  same, sink without callbacks:", run(&MODEL, v, 2));
    v.no_callbacks = false;
    v.threads = 1;
    print_gen0("  same, 1 thread (adds in address order):", run(&MODEL, v, 3));
    v.threads = c.threads;
    v.random_order = true;
    print_gen0("  worst case, adds in random order:", run(&MODEL, v, 4));

    v.random_order = false;
    static const struct {
        size_t every;
        bool old;
        const char *what;
    } lk[] = {{64, false, "the object just added, every 64 adds"},
              {1024, false, "the object just added, every 1024 adds"},
              {1024, true, "an old object, every 1024 adds"},
              {64, true, "an old object, every 64 adds"}};
    for (size_t k = 0; k < sizeof(lk) / sizeof(lk[0]); k++) {
        v.lookup_every = lk[k].every;
        v.lookup_old = lk[k].old;
        result lr = run(&MODEL, v, 6 + k);
        printf("  adds with a lookup of %-39s %5.1f ns/object (adds and lookups)\n", lk[k].what,
               lr.add_ns);
    }

    config small = {20000, 2000, 20, c.threads, false, false, 0, false};
    result fast = run(&MODEL, small, 5);
    result slow = run(&NAIVE, small, 5);
    printf("vs naive (%zu old, %zu young, %zu GCs): model mean %.4f ms, naive mean %.2f ms, "
           "ratio %.0fx\n",
           small.old, small.young, small.gcs, fast.mean0 * 1e3, slow.mean0 * 1e3,
           slow.mean0 / fast.mean0);
    if (fast.count != slow.count) {
        fprintf(stderr, "model and naive disagree: %zu vs %zu objects\n", fast.count, slow.count);
        return 1;
    }
    return 0;
}
