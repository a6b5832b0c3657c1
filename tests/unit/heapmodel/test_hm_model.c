/* test_hm_model.c — the model's corner cases, one scenario per function, with exact expectations.
 *
 * Addresses: region i starts at REG(i), one 4 MiB window each (the model's bucket size), so a
 * scenario can say which window an object lives in. Every step is followed by a full comparison
 * of foreach, lookup and count with the expected objects, and by hm_model_check.
 */
#include "heapmodel/hm_model.h"
#include "heapmodel/hm_testing.h"
#include "hm_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WIN (UINT64_C(1) << 22)
#define BASE UINT64_C(0x7f0000000000)
#define REG(i) (BASE + (uint64_t)(i) * WIN)
#define NONGC_AREA (BASE - 64 * WIN)
#define N(a) (sizeof(a) / sizeof((a)[0]))
#define U HM_GEN_UNKNOWN

typedef struct gc_args {
    uint32_t mask;
    const hm_gen_range *bb;
    size_t n_bb;
    const hm_gen_range *ba;
    size_t n_ba;
    const hm_move *mv;
    size_t n_mv;
} gc_args;

#define ARR(a) (a), N(a)

/* Applies one GC, checks everything that must hold for any GC, returns the stats; rec holds the
 * sorted events. */
static hm_gc_stats run_gc(hm_model *m, hm_rec *rec, gc_args a)
{
    hm_gc_stats st;
    /* Every other GC reports through the batch forms: the expectations are the same. */
    static unsigned calls;
    hm_gc_sink sink = calls++ % 2 ? hm_rec_batch_sink(rec) : hm_rec_sink(rec);
    hm_gc_input in = {1, a.mask, a.bb, a.n_bb, a.ba, a.n_ba, a.mv, a.n_mv};

    hm_rec_clear(rec);
    CHECK_EQ(hm_model_apply_gc(m, &in, &sink, &st), HM_OK);
    CHECK_MODEL(m);
    CHECK(!rec->classified_late);
    CHECK_EQ(rec->empty_batches, 0);
    hm_rec_sort(rec);
    CHECK(hm_rec_ids_unique(rec));
    CHECK_EQ(st.classified, hm_rec_count(rec, 'c'));
    CHECK_EQ(st.died, hm_rec_count(rec, 'd'));
    CHECK_EQ(st.survived, hm_rec_count(rec, 's'));
    CHECK_EQ(st.condemned + st.evicted, st.survived + st.died);
    CHECK_EQ(st.live_after, hm_model_count(m));
    return st;
}

/* The model must hold exactly want[0..n) (ascending addresses). */
static void expect_objects(const hm_model *m, const hm_obj *want, size_t n)
{
    hm_objs got = {0};
    hm_objs_of_model(&got, m);
    CHECK_EQ(got.n, n);
    for (size_t i = 0; i < n; i++) {
        uint64_t id = 0;
        uint32_t gen = 99;
        CHECK_EQ(got.v[i].addr, want[i].addr);
        CHECK_EQ(got.v[i].id, want[i].id);
        CHECK_EQ(got.v[i].gen, want[i].gen);
        CHECK(hm_model_lookup(m, want[i].addr, &id, &gen));
        CHECK_EQ(id, want[i].id);
        CHECK_EQ(gen, want[i].gen);
        CHECK(!hm_model_lookup(m, want[i].addr + 1, NULL, NULL));
    }
    CHECK_EQ(hm_model_count(m), n);
    CHECK_MODEL(m);
    hm_objs_release(&got);
}

#define EXPECT(m, ...)                                       \
    do {                                                     \
        const hm_obj want_[] = {__VA_ARGS__};                \
        expect_objects((m), want_, N(want_));                \
    } while (0)

static void expect_event(const hm_rec *rec, char kind, uint64_t id, uint32_t a, uint32_t b)
{
    const hm_event *e = hm_rec_find(rec, kind, id);
    if (!e)
        fprintf(stderr, "missing event %c id %llu\n", kind, (unsigned long long)id);
    CHECK(e);
    CHECK_EQ(e->a, a);
    CHECK_EQ(e->b, b);
}

static void add(hm_model *m, uint64_t addr, uint64_t id)
{
    CHECK_EQ(hm_model_add(m, addr, id), HM_OK);
    CHECK_MODEL(m);
}

/* Young objects in the SOH, LOH, POH and outside every range are classified by heap; a young
 * object in a gen1 range is SOH by heap and keeps generation 1. */
static void test_classification(void)
{
    hm_model *m = hm_model_new();
    hm_rec rec = {0};
    const hm_gen_range bounds[] = {
        {REG(12), 0x1000, HM_GEN_POH, 0},     {REG(0), 0x100000, HM_GEN_0, 0},
        {REG(8), 2 * WIN, HM_GEN_LOH, 0},     {REG(2), 0x100000, HM_GEN_1, 0},
        {REG(4), 0x100000, HM_GEN_2, 0},
    };

    add(m, REG(0) + 0x100, 1);
    add(m, REG(2) + 0x40, 2);
    add(m, REG(8) + WIN + 0x1000, 3); /* second window of the LOH region */
    add(m, REG(12) + 0x10, 4);
    add(m, NONGC_AREA + 0x20, 5);
    EXPECT(m, {NONGC_AREA + 0x20, 5, U}, {REG(0) + 0x100, 1, U}, {REG(2) + 0x40, 2, U},
           {REG(8) + WIN + 0x1000, 3, U}, {REG(12) + 0x10, 4, U});

    hm_gc_stats st = run_gc(m, &rec, (gc_args){0, ARR(bounds), ARR(bounds), NULL, 0});
    CHECK_EQ(st.classified, 5);
    CHECK_EQ(st.condemned, 0);
    CHECK_EQ(st.anomalies, 0);
    expect_event(&rec, 'c', 1, HM_GEN_0, 0);
    expect_event(&rec, 'c', 2, HM_GEN_0, 0);
    expect_event(&rec, 'c', 3, HM_GEN_LOH, 0);
    expect_event(&rec, 'c', 4, HM_GEN_POH, 0);
    expect_event(&rec, 'c', 5, HM_GEN_NONGC, 0);
    EXPECT(m, {NONGC_AREA + 0x20, 5, HM_GEN_NONGC}, {REG(0) + 0x100, 1, HM_GEN_0},
           {REG(2) + 0x40, 2, HM_GEN_1}, {REG(8) + WIN + 0x1000, 3, HM_GEN_LOH},
           {REG(12) + 0x10, 4, HM_GEN_POH});
    hm_rec_release(&rec);
    hm_model_free(m);
}

/* A compacting gen0 GC with its moves in two batches (concatenated out of order): survivors
 * join a gen1 window that already holds objects; gen1, gen2 and LOH objects that no range covers
 * stay untouched. */
static void test_gen0_compacting(void)
{
    hm_model *m = hm_model_new();
    hm_rec rec = {0};
    const hm_gen_range bb[] = {
        {REG(1), 0x300, HM_GEN_1, 0}, {REG(0), 0x1000, HM_GEN_0, 0},
        {REG(3), 0x20000, HM_GEN_LOH, 0}, {REG(2), 0x200, HM_GEN_2, 0},
    };
    const hm_gen_range ba[] = {
        {REG(0), 0, HM_GEN_0, 0}, {REG(1), 0x600, HM_GEN_1, 0},
        {REG(2), 0x200, HM_GEN_2, 0}, {REG(3), 0x20000, HM_GEN_LOH, 0},
    };
    const hm_move moves[] = {
        {REG(0) + 0x500, REG(1) + 0x500, 0x100}, /* batch of heap 1: y5 */
        {REG(0) + 0x100, REG(1) + 0x300, 0x200}, /* batch of heap 0: y1, y2 */
    };

    add(m, REG(1) + 0x100, 10);
    add(m, REG(1) + 0x200, 11);
    add(m, REG(2) + 0x100, 20);
    add(m, REG(3), 30);
    run_gc(m, &rec, (gc_args){0, ARR(bb), ARR(bb), NULL, 0});
    for (uint64_t k = 1; k <= 6; k++)
        add(m, REG(0) + 0x100 * k, k);
    CHECK_EQ(hm_model_count(m), 10);

    hm_gc_stats st = run_gc(m, &rec, (gc_args){1u << HM_GEN_0, ARR(bb), ARR(ba), ARR(moves)});
    CHECK_EQ(st.classified, 6);
    CHECK_EQ(st.condemned, 6);
    CHECK_EQ(st.survived, 3);
    CHECK_EQ(st.died, 3);
    CHECK_EQ(st.anomalies, 0);
    for (uint64_t k = 1; k <= 6; k++)
        expect_event(&rec, 'c', k, HM_GEN_0, 0);
    expect_event(&rec, 's', 1, HM_GEN_0, HM_GEN_1);
    expect_event(&rec, 's', 2, HM_GEN_0, HM_GEN_1);
    expect_event(&rec, 's', 5, HM_GEN_0, HM_GEN_1);
    expect_event(&rec, 'd', 3, HM_GEN_0, 0);
    expect_event(&rec, 'd', 4, HM_GEN_0, 0);
    expect_event(&rec, 'd', 6, HM_GEN_0, 0);
    EXPECT(m, {REG(1) + 0x100, 10, 1}, {REG(1) + 0x200, 11, 1}, {REG(1) + 0x300, 1, 1},
           {REG(1) + 0x400, 2, 1}, {REG(1) + 0x500, 5, 1}, {REG(2) + 0x100, 20, 2},
           {REG(3), 30, HM_GEN_LOH});

    /* A gen0 GC with nothing in gen0 changes nothing. */
    st = run_gc(m, &rec, (gc_args){1u << HM_GEN_0, ARR(ba), ARR(ba), NULL, 0});
    CHECK_EQ(st.condemned + st.died + st.survived + st.classified + st.anomalies, 0);
    CHECK_EQ(st.live_after, 7);
    hm_rec_release(&rec);
    hm_model_free(m);
}

/* A sweeping GC reports surviving ranges with new == old: survivors stay, in the young list and
 * in the windows (the in-place path); a young object condemned in a gen1 GC survives too. */
static void test_sweeping(void)
{
    hm_model *m = hm_model_new();
    hm_rec rec = {0};
    const hm_gen_range bb1[] = {{REG(0), 0x1000, HM_GEN_0, 0}};
    const hm_gen_range ba1[] = {{REG(0), 0x1000, HM_GEN_1, 0}}; /* region promoted in place */
    const hm_move surv1[] = {{REG(0) + 0x300, REG(0) + 0x300, 0x100},
                             {REG(0) + 0x100, REG(0) + 0x100, 0x100}};

    for (uint64_t k = 1; k <= 4; k++)
        add(m, REG(0) + 0x100 * k, k);
    hm_gc_stats st = run_gc(m, &rec, (gc_args){1, ARR(bb1), ARR(ba1), ARR(surv1)});
    CHECK_EQ(st.survived, 2);
    CHECK_EQ(st.died, 2);
    expect_event(&rec, 's', 1, 0, 1);
    expect_event(&rec, 's', 3, 0, 1);
    expect_event(&rec, 'd', 2, 0, 0);
    expect_event(&rec, 'd', 4, 0, 0);
    EXPECT(m, {REG(0) + 0x100, 1, 1}, {REG(0) + 0x300, 3, 1});

    /* gen1 GC, sweeping: 1 survives in place into gen2, 3 dies, young 5 survives into gen1. */
    const hm_gen_range bb2[] = {{REG(0), 0x1000, HM_GEN_1, 0}, {REG(5), 0x1000, HM_GEN_0, 0}};
    const hm_gen_range ba2[] = {{REG(0), 0x1000, HM_GEN_2, 0}, {REG(5), 0x1000, HM_GEN_1, 0}};
    const hm_move surv2[] = {{REG(5) + 0x10, REG(5) + 0x10, 0x10},
                             {REG(0) + 0x100, REG(0) + 0x100, 0x80}};
    add(m, REG(5) + 0x10, 5);
    st = run_gc(m, &rec, (gc_args){3, ARR(bb2), ARR(ba2), ARR(surv2)});
    CHECK_EQ(st.classified, 1);
    CHECK_EQ(st.condemned, 3);
    CHECK_EQ(st.survived, 2);
    CHECK_EQ(st.died, 1);
    expect_event(&rec, 's', 1, 1, 2);
    expect_event(&rec, 'd', 3, 1, 0);
    expect_event(&rec, 's', 5, 0, 1);
    EXPECT(m, {REG(0) + 0x100, 1, 2}, {REG(5) + 0x10, 5, 1});
    hm_rec_release(&rec);
    hm_model_free(m);
}

/* A compacting gen2 GC: SOH survivors move (one slides onto the old address of a dead object:
 * not an eviction), LOH/POH survivors come as surviving ranges, unreachable LOH/POH objects die,
 * the NonGC object is never condemned. */
static void test_gen2_compacting_uoh(void)
{
    hm_model *m = hm_model_new();
    hm_rec rec = {0};
    const hm_gen_range bb[] = {
        {REG(0), 0x1000, HM_GEN_0, 0}, {REG(2), 0x400, HM_GEN_2, 0},
        {REG(4), 2 * WIN, HM_GEN_LOH, 0}, {REG(8), 0x1000, HM_GEN_POH, 0},
    };
    const hm_gen_range ba[] = {
        {REG(0), 0, HM_GEN_0, 0}, {REG(2), 0x300, HM_GEN_2, 0},
        {REG(4), 2 * WIN, HM_GEN_LOH, 0}, {REG(8), 0x1000, HM_GEN_POH, 0},
    };
    const hm_move moves[] = {
        {REG(8) + 0x40, REG(8) + 0x40, 0x40},             /* UOH surviving ranges... */
        {REG(4) + WIN + 0x100, REG(4) + WIN + 0x100, 0x100},
        {REG(2) + 0x200, REG(2) + 0x100, 0x100},          /* ...and SOH moves */
        {REG(0) + 0x80, REG(2) + 0x200, 0x80},
    };

    add(m, REG(2) + 0x100, 1);
    add(m, REG(2) + 0x200, 2);
    add(m, REG(2) + 0x300, 3);
    add(m, REG(4), 4);
    add(m, REG(4) + WIN + 0x100, 5);
    add(m, REG(8) + 0x40, 6);
    add(m, REG(8) + 0x80, 7);
    add(m, NONGC_AREA, 8);
    run_gc(m, &rec, (gc_args){0, ARR(bb), ARR(bb), NULL, 0});
    add(m, REG(0) + 0x80, 9);

    hm_gc_stats st = run_gc(m, &rec, (gc_args){0x1f, ARR(bb), ARR(ba), ARR(moves)});
    CHECK_EQ(st.classified, 1);
    CHECK_EQ(st.condemned, 8);
    CHECK_EQ(st.survived, 4);
    CHECK_EQ(st.died, 4);
    CHECK_EQ(st.evicted, 0);
    CHECK_EQ(st.anomalies, 0);
    expect_event(&rec, 'd', 1, HM_GEN_2, 0);
    expect_event(&rec, 'd', 3, HM_GEN_2, 0);
    expect_event(&rec, 'd', 4, HM_GEN_LOH, 0);
    expect_event(&rec, 'd', 7, HM_GEN_POH, 0);
    expect_event(&rec, 's', 2, HM_GEN_2, HM_GEN_2);
    expect_event(&rec, 's', 9, HM_GEN_0, HM_GEN_2);
    expect_event(&rec, 's', 5, HM_GEN_LOH, HM_GEN_LOH);
    expect_event(&rec, 's', 6, HM_GEN_POH, HM_GEN_POH);
    CHECK(!hm_rec_find(&rec, 'd', 8) && !hm_rec_find(&rec, 's', 8));
    EXPECT(m, {NONGC_AREA, 8, HM_GEN_NONGC}, {REG(2) + 0x100, 2, 2}, {REG(2) + 0x200, 9, 2},
           {REG(4) + WIN + 0x100, 5, HM_GEN_LOH}, {REG(8) + 0x40, 6, HM_GEN_POH});
    hm_rec_release(&rec);
    hm_model_free(m);
}

/* A gen1 GC promotes gen1 survivors to gen2 and gen0 survivors to gen1; gen2 stays. */
static void test_gen1_promotes(void)
{
    hm_model *m = hm_model_new();
    hm_rec rec = {0};
    const hm_gen_range bb[] = {
        {REG(0), 0x1000, HM_GEN_0, 0}, {REG(1), 0x1000, HM_GEN_1, 0},
        {REG(2), 0x1000, HM_GEN_2, 0},
    };
    const hm_gen_range ba[] = {
        {REG(6), 0x100, HM_GEN_1, 0}, {REG(2), 0x2000, HM_GEN_2, 0},
    };
    const hm_move moves[] = {
        {REG(1) + 0x100, REG(2) + 0x1000, 0x100},
        {REG(0) + 0x40, REG(6), 0x40},
    };

    add(m, REG(1) + 0x100, 1);
    add(m, REG(1) + 0x200, 2);
    add(m, REG(2) + 0x100, 3);
    run_gc(m, &rec, (gc_args){0, ARR(bb), ARR(bb), NULL, 0});
    add(m, REG(0) + 0x40, 4);

    hm_gc_stats st = run_gc(m, &rec, (gc_args){3, ARR(bb), ARR(ba), ARR(moves)});
    CHECK_EQ(st.condemned, 3);
    expect_event(&rec, 's', 1, 1, 2);
    expect_event(&rec, 'd', 2, 1, 0);
    expect_event(&rec, 's', 4, 0, 1);
    CHECK(!hm_rec_find(&rec, 'd', 3) && !hm_rec_find(&rec, 's', 3));
    EXPECT(m, {REG(2) + 0x100, 3, 2}, {REG(2) + 0x1000, 1, 2}, {REG(6), 4, 1});
    hm_rec_release(&rec);
    hm_model_free(m);
}

/* Objects move into a window that the same GC processes later (and whose own objects move on),
 * and slide up within a window over objects that move too: each is remapped exactly once. */
static void test_no_double_remap(void)
{
    hm_model *m = hm_model_new();
    hm_rec rec = {0};
    const hm_gen_range bb[] = {
        {REG(0), 0x1000, HM_GEN_2, 0}, {REG(1), 0x1000, HM_GEN_2, 0},
        {REG(3), 0x1000, HM_GEN_2, 0}, {REG(5), 0x1000, HM_GEN_2, 0},
    };
    const hm_move moves[] = {
        {REG(0) + 0x100, REG(1) + 0x100, 0x200}, /* a1, a2 onto b1, b2's old addresses */
        {REG(1) + 0x100, REG(3) + 0x100, 0x200}, /* b1, b2 on to the next window */
        {REG(5) + 0x100, REG(5) + 0x200, 0x200}, /* d1 slides onto d2, d2 past it */
    };

    add(m, REG(0) + 0x100, 1);
    add(m, REG(0) + 0x200, 2);
    add(m, REG(1) + 0x100, 3);
    add(m, REG(1) + 0x200, 4);
    add(m, REG(5) + 0x100, 5);
    add(m, REG(5) + 0x200, 6);
    run_gc(m, &rec, (gc_args){0, ARR(bb), ARR(bb), NULL, 0});

    hm_gc_stats st = run_gc(m, &rec, (gc_args){0x1f, ARR(bb), ARR(bb), ARR(moves)});
    CHECK_EQ(st.survived, 6);
    CHECK_EQ(st.died + st.evicted + st.anomalies, 0);
    EXPECT(m, {REG(1) + 0x100, 1, 2}, {REG(1) + 0x200, 2, 2}, {REG(3) + 0x100, 3, 2},
           {REG(3) + 0x200, 4, 2}, {REG(5) + 0x200, 5, 2}, {REG(5) + 0x300, 6, 2});

    /* The same with the objects still young (never classified). */
    hm_model_free(m);
    m = hm_model_new();
    add(m, REG(1) + 0x200, 4);
    add(m, REG(0) + 0x100, 1);
    add(m, REG(5) + 0x200, 6);
    add(m, REG(1) + 0x100, 3);
    add(m, REG(0) + 0x200, 2);
    add(m, REG(5) + 0x100, 5);
    st = run_gc(m, &rec, (gc_args){0x1f, ARR(bb), ARR(bb), ARR(moves)});
    CHECK_EQ(st.survived, 6);
    EXPECT(m, {REG(1) + 0x100, 1, 2}, {REG(1) + 0x200, 2, 2}, {REG(3) + 0x100, 3, 2},
           {REG(3) + 0x200, 4, 2}, {REG(5) + 0x200, 5, 2}, {REG(5) + 0x300, 6, 2});
    hm_rec_release(&rec);
    hm_model_free(m);
}

/* A survivor whose new address lies in no bounds_after range keeps its generation: anomaly. */
static void test_survivor_outside_bounds(void)
{
    hm_model *m = hm_model_new();
    hm_rec rec = {0};
    const hm_gen_range bb[] = {{REG(0), 0x1000, HM_GEN_0, 0}};
    const hm_gen_range ba[] = {{REG(1), 0x1000, HM_GEN_1, 0}};
    const hm_move moves[] = {{REG(0) + 0x10, REG(7), 0x10}, {REG(0) + 0x20, REG(1), 0x10}};

    add(m, REG(0) + 0x10, 1);
    add(m, REG(0) + 0x20, 2);
    hm_gc_stats st = run_gc(m, &rec, (gc_args){1, ARR(bb), ARR(ba), ARR(moves)});
    CHECK_EQ(st.anomalies, 1);
    expect_event(&rec, 's', 1, 0, 0);
    expect_event(&rec, 's', 2, 0, 1);
    EXPECT(m, {REG(1), 2, 1}, {REG(7), 1, 0});
    hm_rec_release(&rec);
    hm_model_free(m);
}

/* Evictions: an address added twice before a GC, an address added over a classified object
 * (tombstone), a survivor landing on an uncondemned object, and a survivor landing on a young
 * object that this GC classified but did not condemn. */
static void test_evictions(void)
{
    hm_model *m = hm_model_new();
    hm_rec rec = {0};
    const hm_gen_range bb[] = {
        {REG(0), 0x1000, HM_GEN_0, 0}, {REG(1), 0x1000, HM_GEN_1, 0},
        {REG(3), 0x100000, HM_GEN_LOH, 0},
    };
    const hm_gen_range ba[] = {
        {REG(1), 0x1000, HM_GEN_1, 0}, {REG(3), 0x100000, HM_GEN_LOH, 0},
    };
    uint64_t a = REG(0) + 0x100;

    add(m, a, 1);
    add(m, a, 2);
    EXPECT(m, {a, 2, U});
    hm_gc_stats st = run_gc(m, &rec, (gc_args){0, ARR(bb), ARR(bb), NULL, 0});
    CHECK_EQ(st.classified, 1);
    CHECK_EQ(st.evicted, 1);
    CHECK_EQ(st.anomalies, 1);
    expect_event(&rec, 'd', 1, U, 0);
    expect_event(&rec, 'c', 2, HM_GEN_0, 0);
    EXPECT(m, {a, 2, 0});

    add(m, a, 3); /* over a classified object: it becomes a tombstone */
    EXPECT(m, {a, 3, U});
    add(m, a, 4); /* and over a young one */
    EXPECT(m, {a, 4, U});
    const hm_move m1[] = {{a, REG(1), 0x10}};
    st = run_gc(m, &rec, (gc_args){1, ARR(bb), ARR(ba), ARR(m1)});
    CHECK_EQ(st.evicted, 2);
    CHECK_EQ(st.anomalies, 2);
    CHECK_EQ(st.condemned, 1);
    expect_event(&rec, 'd', 2, HM_GEN_0, 0);
    expect_event(&rec, 'd', 3, U, 0);
    expect_event(&rec, 's', 4, HM_GEN_0, HM_GEN_1);
    EXPECT(m, {REG(1), 4, 1});

    /* Survivors landing on held addresses: 10 (young) lands on 4 (gen1, not condemned); 11
     * (young) lands on 12, a young LOH object classified and kept in this very GC. */
    add(m, REG(0) + 0x200, 10);
    add(m, REG(0) + 0x300, 11);
    add(m, REG(3) + 0x1000, 12);
    const hm_move m2[] = {{REG(0) + 0x200, REG(1), 0x10}, {REG(0) + 0x300, REG(3) + 0x1000, 0x10}};
    st = run_gc(m, &rec, (gc_args){1, ARR(bb), ARR(ba), ARR(m2)});
    CHECK_EQ(st.evicted, 2);
    CHECK_EQ(st.survived, 2);
    CHECK_EQ(st.condemned, 2);
    expect_event(&rec, 'd', 4, HM_GEN_1, 0);
    expect_event(&rec, 'd', 12, HM_GEN_LOH, 0);
    expect_event(&rec, 'c', 12, HM_GEN_LOH, 0);
    expect_event(&rec, 's', 10, HM_GEN_0, HM_GEN_1);
    expect_event(&rec, 's', 11, HM_GEN_0, HM_GEN_LOH);
    EXPECT(m, {REG(1), 10, 1}, {REG(3) + 0x1000, 11, HM_GEN_LOH});
    hm_rec_release(&rec);
    hm_model_free(m);
}

/* NonGC objects never die, not even when a later GC's bounds cover their address; ranges over
 * addresses the model never saw are harmless. */
static void test_nongc_and_unknown(void)
{
    hm_model *m = hm_model_new();
    hm_rec rec = {0};
    const hm_gen_range bb[] = {{REG(0), 0x1000, HM_GEN_0, 0}, {REG(2), 0x1000, HM_GEN_2, 0}};
    const hm_gen_range bb_over[] = {{NONGC_AREA, 0x1000, HM_GEN_0, 0}};
    const hm_move unknown[] = {{REG(0) + 0x800, REG(2) + 0x800, 0x100},
                               {REG(9), REG(9), 0x1000}};

    add(m, NONGC_AREA + 0x10, 1);
    add(m, REG(2) + 0x10, 2);
    run_gc(m, &rec, (gc_args){0, ARR(bb), ARR(bb), NULL, 0});
    EXPECT(m, {NONGC_AREA + 0x10, 1, HM_GEN_NONGC}, {REG(2) + 0x10, 2, 2});

    hm_gc_stats st = run_gc(m, &rec, (gc_args){1, ARR(bb), ARR(bb), ARR(unknown)});
    CHECK_EQ(rec.n, 0);
    CHECK_EQ(st.anomalies, 0);
    st = run_gc(m, &rec, (gc_args){0x1f, ARR(bb_over), ARR(bb_over), NULL, 0});
    CHECK_EQ(rec.n, 0);
    EXPECT(m, {NONGC_AREA + 0x10, 1, HM_GEN_NONGC}, {REG(2) + 0x10, 2, 2});
    hm_rec_release(&rec);
    hm_model_free(m);
}

/* Invalid calls change nothing; invalid ranges are dropped by the documented rules. */
static void test_invalid_input(void)
{
    hm_model *m = hm_model_new();
    hm_rec rec = {0};
    hm_gc_stats st;
    hm_gc_sink sink = hm_rec_sink(&rec);

    CHECK_EQ(hm_model_add(m, 0, 1), HM_ERR_INVALID);
    CHECK_EQ(hm_model_add(m, REG(0), HM_ID_MAX + 1), HM_ERR_INVALID);
    CHECK_EQ(hm_model_add(NULL, REG(0), 1), HM_ERR_INVALID);
    add(m, REG(0) + 0x10, HM_ID_MAX);
    hm_gc_input none = {1, 1, NULL, 0, NULL, 0, NULL, 0};
    CHECK_EQ(hm_model_apply_gc(m, &none, &sink, &st), HM_ERR_INVALID);
    CHECK_EQ(st.classified, 0);
    CHECK_EQ(hm_model_apply_gc(m, NULL, &sink, NULL), HM_ERR_INVALID);
    CHECK_EQ(rec.n, 0);
    EXPECT(m, {REG(0) + 0x10, HM_ID_MAX, U});

    /* bounds: one zero-length (silent), one wrapping, one with generation 9, one overlapping
     * the region of REG(0) from a later start: 3 anomalies, REG(0) keeps generation 0. */
    const hm_gen_range bb[] = {
        {REG(0) + 0x800, 0x1000, HM_GEN_2, 0}, {REG(5), 0, HM_GEN_0, 0},
        {UINT64_MAX - 0x10, 0x100, HM_GEN_0, 0}, {REG(6), 0x100, 9, 0},
        {REG(0), 0x1000, HM_GEN_0, 0},
    };
    /* moves: zero length, wrapping destination, an old range overlapping one that starts
     * earlier, and a destination overlapping an earlier destination: 4 anomalies. */
    add(m, REG(0) + 0x20, 2);
    add(m, REG(0) + 0x30, 3);
    const hm_move mv[] = {
        {REG(0) + 0x10, REG(1), 0x10},          /* kept: HM_ID_MAX -> REG(1) */
        {REG(0) + 0x18, REG(2), 0x10},          /* overlaps the one above: dropped */
        {REG(0) + 0x20, REG(1) + 0x8, 0x10},    /* destination overlaps: dropped, 2 dies */
        {REG(0) + 0x30, UINT64_MAX - 4, 0x10},  /* wraps: dropped, 3 dies */
        {REG(0) + 0x40, REG(3), 0},             /* zero length */
    };
    const hm_gen_range ba[] = {{REG(1), 0x100, HM_GEN_1, 0}};
    st = run_gc(m, &rec, (gc_args){1, ARR(bb), ARR(ba), ARR(mv)});
    CHECK_EQ(st.anomalies, 3 + 4);
    expect_event(&rec, 's', HM_ID_MAX, 0, 1);
    expect_event(&rec, 'd', 2, 0, 0);
    expect_event(&rec, 'd', 3, 0, 0);
    EXPECT(m, {REG(1), HM_ID_MAX, 1});
    hm_rec_release(&rec);
    hm_model_free(m);
}

/* hm_model_add only appends: an address added twice, or over a classified object, is found by
 * the hash sync of a lookup or count, or else by the next GC (from the runs of the young list,
 * or by sorting it). However it is found, every query and the GC's report must be the same. */
enum { FIND_BY_GC, FIND_BY_LOOKUPS, FIND_BY_COUNT, FIND_PARTLY };

static void deferred_scenario(int how, hm_rec *rec, hm_objs *after, hm_gc_stats *st)
{
    hm_model *m = hm_model_new();
    const hm_gen_range bb[] = {
        {REG(0), 0x100000, HM_GEN_0, 0}, {REG(1), 0x100000, HM_GEN_1, 0},
        {REG(2), 0x100000, HM_GEN_0, 0},
    };
    const hm_gen_range ba[] = {{REG(1), 0x200000, HM_GEN_1, 0}};
    /* Everything in REG(0) moves to REG(1) + 0x100000; REG(2) dies. */
    const hm_move mv[] = {{REG(0), REG(1) + 0x100000, 0x100000}};

    add(m, REG(1) + 0x40, 1); /* classified gen1, evicted below */
    add(m, REG(1) + 0x80, 2); /* classified gen1, stays */
    run_gc(m, rec, (gc_args){0, ARR(bb), ARR(bb), NULL, 0});

    /* Two contexts in bursts, ascending within each: the young list has few disjoint runs. */
    uint64_t id = 100; /* ids 101..900 */
    for (int burst = 0; burst < 20; burst++)
        for (uint64_t k = 0; k < 40; k++) {
            uint64_t a = REG(burst & 1 ? 2 : 0) + 0x1000 * (uint64_t)(burst / 2) + 0x20 * k;
            CHECK_EQ(hm_model_add(m, a, ++id), HM_OK);
            if (how == FIND_BY_LOOKUPS && k % 7 == 0) {
                uint64_t got = 0;
                CHECK(hm_model_lookup(m, a, &got, NULL));
                CHECK_EQ(got, id);
            }
            if (how == FIND_PARTLY && burst == 9 && k == 39)
                CHECK_EQ(hm_model_count(m), 2 + 400);
        }
    CHECK_EQ(hm_model_add(m, REG(1) + 0x40, 2000), HM_OK); /* over classified 1 */
    CHECK_EQ(hm_model_add(m, REG(0) + 0x20, 2001), HM_OK); /* over young 102 */
    CHECK_EQ(hm_model_add(m, REG(0) + 0x20, 2002), HM_OK); /* over 2001 */
    CHECK_EQ(hm_model_add(m, REG(2) + 0x40, 2003), HM_OK); /* over young 143, which dies */
    CHECK_MODEL(m);
    if (how == FIND_BY_LOOKUPS) {
        uint64_t got = 0;
        uint32_t gen = 0;
        CHECK(hm_model_lookup(m, REG(0) + 0x20, &got, &gen)); /* in the tail: no sync */
        CHECK_EQ(got, 2002);
        CHECK_EQ(gen, U);
        CHECK(hm_model_lookup(m, REG(1) + 0x80, &got, &gen)); /* classified */
        CHECK_EQ(got, 2);
        CHECK_EQ(gen, HM_GEN_1);
        CHECK_MODEL(m);
    }
    if (how == FIND_BY_COUNT || how == FIND_PARTLY)
        CHECK_EQ(hm_model_count(m), 1 + 800 + 1);
    if (how == FIND_PARTLY)
        CHECK_EQ(hm_model_add(m, REG(0) + 0x20, 2004), HM_OK); /* over 2002, after the sync */
    CHECK_MODEL(m);
    hm_gc_stats s = run_gc(m, rec, (gc_args){1, ARR(bb), ARR(ba), ARR(mv)});
    hm_objs_of_model(after, m);
    *st = s;
    hm_model_free(m);
}

static void test_deferred_evictions(void)
{
    hm_rec rec[4] = {{0}};
    hm_objs after[4] = {{0}};
    hm_gc_stats st[4];
    for (int how = 0; how < 4; how++)
        deferred_scenario(how, &rec[how], &after[how], &st[how]);
    /* What the GC reports, whoever found the evictions. */
    CHECK_EQ(st[0].classified, 800 + 1 + 1 + 1 - 2);
    CHECK_EQ(st[0].evicted, 4); /* 1, 102, 2001, 143 */
    CHECK_EQ(st[0].anomalies, 4);
    expect_event(&rec[0], 'd', 1, HM_GEN_1, 0);
    expect_event(&rec[0], 'd', 102, U, 0);
    expect_event(&rec[0], 'd', 2001, U, 0);
    expect_event(&rec[0], 'd', 143, U, 0);
    expect_event(&rec[0], 'd', 2003, HM_GEN_0, 0);
    expect_event(&rec[0], 's', 2002, HM_GEN_0, HM_GEN_1);
    expect_event(&rec[0], 'c', 2000, HM_GEN_0, 0);
    CHECK(!hm_rec_find(&rec[0], 'c', 102) && !hm_rec_find(&rec[0], 'c', 2001));
    for (int how = 1; how < 3; how++) {
        CHECK(hm_rec_equal(&rec[how], &rec[0]));
        CHECK(hm_objs_equal(&after[how], &after[0]));
        CHECK_EQ(st[how].evicted, st[0].evicted);
        CHECK_EQ(st[how].classified, st[0].classified);
    }
    /* FIND_PARTLY added 2004 over 2002 after a count: 2002 is evicted too. */
    CHECK_EQ(st[3].evicted, 5);
    expect_event(&rec[3], 'd', 2002, U, 0);
    expect_event(&rec[3], 's', 2004, HM_GEN_0, HM_GEN_1);
    for (int how = 0; how < 4; how++) {
        hm_rec_release(&rec[how]);
        hm_objs_release(&after[how]);
    }
}

/* The GC's own duplicate search on young lists of runs: `adds` is applied to a model holding
 * classified objects, then a GC runs; once with nothing in between (the GC finds the evictions),
 * once after a count (the hash sync finds them): reports and results must agree. */
typedef void (*adds_fn)(hm_model *m);

static hm_gc_stats compare_finders(adds_fn adds, hm_rec *rec)
{
    const hm_gen_range bb[] = {{REG(0), 0x100000, HM_GEN_0, 0}, {REG(3), 0x100000, HM_GEN_1, 0}};
    const hm_gen_range ba[] = {{REG(4), 0x100000, HM_GEN_1, 0}, {REG(3), 0x100000, HM_GEN_1, 0}};
    const hm_move mv[] = {{REG(0), REG(4), 0x100000}};
    hm_rec other = {0};
    hm_objs a = {0}, b = {0};
    hm_gc_stats st = {0}, st2 = {0};
    for (int synced = 0; synced < 2; synced++) {
        hm_model *m = hm_model_new();
        add(m, REG(3) + 0x100, 1); /* classified gen1 */
        add(m, REG(3) + 0x200, 2);
        run_gc(m, &other, (gc_args){0, ARR(bb), ARR(bb), NULL, 0});
        adds(m);
        CHECK_MODEL(m);
        if (synced) { /* the count (a sync) must agree with foreach, which does not sync */
            hm_objs_of_model_nosync(&b, m);
            CHECK_EQ(hm_model_count(m), b.n);
        }
        hm_gc_stats x = run_gc(m, synced ? &other : rec, (gc_args){1, ARR(bb), ARR(ba), ARR(mv)});
        hm_objs_of_model(synced ? &b : &a, m);
        *(synced ? &st2 : &st) = x;
        hm_model_free(m);
    }
    CHECK(hm_rec_equal(rec, &other));
    CHECK(hm_objs_equal(&a, &b));
    CHECK_EQ(st.evicted, st2.evicted);
    hm_rec_release(&other);
    hm_objs_release(&a);
    hm_objs_release(&b);
    return st;
}

/* One ascending run crosses classified objects: no duplicate among the young objects, so the
 * GC needs no sort, but the objects are evicted. */
static void adds_run_over_classified(hm_model *m)
{
    for (uint64_t k = 0; k < 40; k++)
        CHECK_EQ(hm_model_add(m, REG(3) + 0x80 + 0x40 * k, 100 + k), HM_OK); /* over 1 and 2 */
    for (uint64_t k = 0; k < 40; k++)
        CHECK_EQ(hm_model_add(m, REG(0) + 0x40 * k, 200 + k), HM_OK);
}

/* 64 runs of 16 objects, every one interleaved with every other, plus a run repeating two
 * addresses: too tangled to compare run by run, so the GC sorts after all. */
static void adds_tangled_runs(hm_model *m)
{
    uint64_t id = 1000;
    for (uint64_t j = 0; j < 64; j++)
        for (uint64_t t = 0; t < 16; t++)
            CHECK_EQ(hm_model_add(m, REG(0) + 8 * (j + 64 * t), ++id), HM_OK);
    CHECK_EQ(hm_model_add(m, REG(0) + 8 * (5 + 64 * 3), 5000), HM_OK);
    CHECK_EQ(hm_model_add(m, REG(0) + 8 * (7 + 64 * 9), 5001), HM_OK);
}

/* Two runs that overlap, one address in both: compared run by run. */
static void adds_two_overlapping_runs(hm_model *m)
{
    for (uint64_t k = 0; k < 30; k++)
        CHECK_EQ(hm_model_add(m, REG(0) + 0x40 * k, 100 + k), HM_OK);
    for (uint64_t k = 0; k < 30; k++)
        CHECK_EQ(hm_model_add(m, REG(0) + 0x1000 + 0x40 * k, 200 + k), HM_OK);
    /* Between the first run's objects, one of them on 0x400. */
    const uint64_t at[] = {0x3e8, 0x3f8, 0x400, 0x408, 0x418, 0x428, 0x438, 0x448, 0x458};
    for (uint64_t k = 0; k < N(at); k++)
        CHECK_EQ(hm_model_add(m, REG(0) + at[k], 300 + k), HM_OK);
}

static void test_young_runs(void)
{
    hm_rec rec = {0};
    hm_gc_stats st = compare_finders(adds_run_over_classified, &rec);
    CHECK_EQ(st.evicted, 2);
    expect_event(&rec, 'd', 1, HM_GEN_1, 0);
    expect_event(&rec, 'd', 2, HM_GEN_1, 0);
    expect_event(&rec, 'c', 102, HM_GEN_0, 0);
    st = compare_finders(adds_tangled_runs, &rec);
    CHECK_EQ(st.evicted, 2);
    expect_event(&rec, 'd', 1000 + 1 + 5 * 16 + 3, U, 0);
    expect_event(&rec, 'd', 1000 + 1 + 7 * 16 + 9, U, 0);
    expect_event(&rec, 's', 5000, HM_GEN_0, HM_GEN_1);
    st = compare_finders(adds_two_overlapping_runs, &rec);
    CHECK_EQ(st.evicted, 1);
    expect_event(&rec, 'd', 116, U, 0); /* 0x400 = 16 * 0x40 */
    expect_event(&rec, 's', 302, HM_GEN_0, HM_GEN_1);
    hm_rec_release(&rec);
}

/* Lookups between adds: the newest objects are compared directly, more pending ones sync the
 * hash; the hash grows (and refills) while lookups and duplicates continue across the growth. */
static void test_lookup_between_adds(void)
{
    hm_model *m = hm_model_new();
    uint64_t got = 0;
    uint32_t gen = 0;
    add(m, REG(0) + 0x10, 1);
    add(m, REG(0) + 0x10, 2);
    CHECK(hm_model_lookup(m, REG(0) + 0x10, &got, &gen));
    CHECK_EQ(got, 2);
    CHECK_EQ(gen, U);
    for (uint64_t k = 0; k < 3000; k++) {
        CHECK_EQ(hm_model_add(m, REG(1) + 0x20 * k, 10 + k), HM_OK);
        if (k % 500 == 0) /* an old address again: an eviction found by the next sync */
            CHECK_EQ(hm_model_add(m, REG(0) + 0x10, 100000 + k), HM_OK);
        if (k % 97 == 0) {
            CHECK(hm_model_lookup(m, REG(1) + 0x20 * k, &got, NULL)); /* just added */
            CHECK_EQ(got, 10 + k);
            CHECK(hm_model_lookup(m, REG(1) + 0x20 * (k / 2), &got, NULL)); /* older */
            CHECK_EQ(got, 10 + k / 2);
            CHECK(hm_model_lookup(m, REG(0) + 0x10, &got, NULL));
            CHECK_EQ(got, 100000 + k / 500 * 500);
            CHECK(!hm_model_lookup(m, REG(1) + 0x20 * k + 8, NULL, NULL));
            CHECK_MODEL(m);
        }
    }
    CHECK_EQ(hm_model_count(m), 3001);
    CHECK_MODEL(m);
    hm_model_free(m);

    /* Lookups of old objects: their windows hold no young object, so no sync is needed, unless
     * the young objects spread over too many windows to list (then every such lookup syncs). */
    m = hm_model_new();
    hm_rec rec = {0};
    const hm_gen_range bb[] = {{REG(0), 400 * WIN, HM_GEN_2, 0}};
    for (uint64_t k = 0; k < 8; k++)
        add(m, REG(k) + 0x10, 1 + k);
    run_gc(m, &rec, (gc_args){0, ARR(bb), ARR(bb), NULL, 0});
    for (uint64_t w = 0; w < 2; w++) { /* 300 windows the second time round */
        for (uint64_t k = 0; k < (w ? 300 : 200); k++) {
            uint64_t at = w ? REG(8 + k) + 0x200000 : REG(8 + k % 2);
            CHECK_EQ(hm_model_add(m, at + 0x20 * k, 1000 * (w + 1) + k), HM_OK);
            CHECK(hm_model_lookup(m, REG(k % 8) + 0x10, &got, &gen)); /* old */
            CHECK_EQ(got, 1 + k % 8);
            CHECK_EQ(gen, HM_GEN_2);
            if (k % 50 == 49)
                CHECK_MODEL(m);
        }
        uint64_t y4 = w ? REG(12) + 0x200000 + 0x80 : REG(8) + 0x80;
        CHECK(hm_model_lookup(m, y4, &got, &gen)); /* young, past the tail */
        CHECK_EQ(got, 1000 * (w + 1) + 4);
        CHECK_EQ(gen, U);
        CHECK_EQ(hm_model_add(m, REG(3) + 0x10, 999 - w), HM_OK); /* over old 4 */
        CHECK(hm_model_lookup(m, REG(3) + 0x10, &got, NULL));
        CHECK_EQ(got, 999 - w);
        for (int q = 0; q < 100; q++)
            CHECK_EQ(hm_model_add(m, REG(9) + 0x100000 * (1 + 2 * w) + 0x20 * (uint64_t)q,
                                  5000 + 1000 * w + (uint64_t)q),
                     HM_OK);
        CHECK(hm_model_lookup(m, REG(3) + 0x10, &got, NULL)); /* past the tail now */
        CHECK_EQ(got, 999 - w);
        CHECK(hm_model_lookup(m, REG(2) + 0x10, &got, NULL));
        CHECK_EQ(got, 3);
        CHECK_MODEL(m);
        hm_gc_stats st = run_gc(m, &rec, (gc_args){0, ARR(bb), ARR(bb), NULL, 0});
        CHECK_EQ(st.evicted, 1);
        expect_event(&rec, 'd', 4, HM_GEN_2, 0);
        add(m, REG(3) + 0x10, 4); /* put it back */
        run_gc(m, &rec, (gc_args){0, ARR(bb), ARR(bb), NULL, 0});
    }
    hm_rec_release(&rec);
    hm_model_free(m);
}

/* HM_ERR_NOMEM inside the GC's duplicate search (its scratch) and in add's hash reservation: a
 * young list in no order, with duplicates, nothing synced. */
static void build_unsorted_heap(hm_model *m)
{
    uint64_t x = 12345;
    for (uint64_t k = 0; k < 4000; k++) {
        x = x * 6364136223846793005u + 1442695040888963407u;
        uint64_t a = REG(x >> 62) + 0x10 * ((x >> 20) % 0x8000);
        CHECK_EQ(hm_model_add(m, a, k + 1), HM_OK); /* some addresses come twice */
    }
}

static void test_nomem_deferred(void)
{
    const hm_gen_range bb[] = {{REG(0), 4 * WIN, HM_GEN_0, 0}};
    const hm_gen_range ba[] = {{REG(8), 4 * WIN, HM_GEN_1, 0}};
    const hm_move mv[] = {{REG(0), REG(8), 2 * WIN}};
    hm_rec ref = {0}, rec = {0};
    hm_objs want = {0}, before = {0}, after = {0};
    hm_model *r = hm_model_new();
    build_unsorted_heap(r);
    hm_gc_stats st = run_gc(r, &ref, (gc_args){1, ARR(bb), ARR(ba), ARR(mv)});
    CHECK(st.evicted > 0);
    hm_objs_of_model(&want, r);
    bool failed_once = false;
    for (long k = 0;; k++) {
        hm_model *m = hm_model_new();
        hm_gc_sink sink = hm_rec_sink(&rec);
        build_unsorted_heap(m);
        hm_objs_of_model_nosync(&before, m); /* counting would find the duplicates before the GC */
        hm_rec_clear(&rec);
        hm_model_fail_after(m, k);
        hm_gc_input in = {1, 1, ARR(bb), ARR(ba), ARR(mv)};
        int rc = hm_model_apply_gc(m, &in, &sink, &st);
        hm_model_fail_after(m, -1);
        CHECK_MODEL(m);
        if (rc == HM_OK) {
            hm_model_free(m);
            break;
        }
        CHECK_EQ(rc, HM_ERR_NOMEM);
        failed_once = true;
        CHECK_EQ(rec.n, 0);
        hm_objs_of_model_nosync(&after, m);
        CHECK(hm_objs_equal(&before, &after));
        CHECK_EQ(hm_model_count(m), before.n); /* syncs what the failed GC left */
        CHECK_MODEL(m);
        run_gc(m, &rec, (gc_args){1, ARR(bb), ARR(ba), ARR(mv)});
        CHECK(hm_rec_equal(&rec, &ref));
        hm_objs_of_model(&after, m);
        CHECK(hm_objs_equal(&after, &want));
        hm_model_free(m);
    }
    CHECK(failed_once);

    /* add: the young list has room, the hash reservation fails: nothing changes. */
    hm_model *m = hm_model_new();
    hm_model_fail_after(m, 1);
    CHECK_EQ(hm_model_add(m, REG(0) + 8, 1), HM_ERR_NOMEM);
    hm_model_fail_after(m, -1);
    CHECK_EQ(hm_model_count(m), 0);
    CHECK(!hm_model_lookup(m, REG(0) + 8, NULL, NULL));
    CHECK_MODEL(m);
    add(m, REG(0) + 8, 1);
    EXPECT(m, {REG(0) + 8, 1, U});
    hm_model_free(m);
    hm_model_free(r);
    hm_objs_release(&want);
    hm_objs_release(&before);
    hm_objs_release(&after);
    hm_rec_release(&rec);
    hm_rec_release(&ref);
}

/* Builds the same small heap twice over: old objects in several windows, young ones, a
 * tombstone and an evicted young object. */
static void build_nomem_heap(hm_model *m, hm_rec *rec)
{
    const hm_gen_range bb[] = {
        {REG(0), 0x10000, HM_GEN_0, 0}, {REG(1), 0x10000, HM_GEN_1, 0},
        {REG(2), 0x10000, HM_GEN_2, 0}, {REG(4), 0x10000, HM_GEN_LOH, 0},
    };
    for (uint64_t k = 0; k < 200; k++)
        CHECK_EQ(hm_model_add(m, REG(k % 5) + 0x40 * (k + 1), k + 1), HM_OK);
    run_gc(m, rec, (gc_args){0, ARR(bb), ARR(bb), NULL, 0});
    for (uint64_t k = 0; k < 300; k++)
        CHECK_EQ(hm_model_add(m, REG(0) + 0x20 * (k + 1), 1000 + k), HM_OK);
    CHECK_EQ(hm_model_add(m, REG(1) + 0x40 * 2, 5000), HM_OK); /* tombstone */
    CHECK_EQ(hm_model_add(m, REG(0) + 0x20, 5001), HM_OK);     /* evicts young 1000 */
}

/* HM_ERR_NOMEM at every allocation of apply_gc and add: the model is unchanged, no callback was
 * made, and the retried call gives the same result as a run that never failed. */
static void test_nomem(void)
{
    const hm_gen_range bb[] = {
        {REG(0), 0x10000, HM_GEN_0, 0}, {REG(1), 0x10000, HM_GEN_1, 0},
        {REG(2), 0x10000, HM_GEN_2, 0}, {REG(4), 0x10000, HM_GEN_LOH, 0},
    };
    const hm_gen_range ba[] = {
        {REG(1), 0x10000, HM_GEN_2, 0}, {REG(6), 0x10000, HM_GEN_1, 0},
        {REG(2), 0x10000, HM_GEN_2, 0}, {REG(4), 0x10000, HM_GEN_LOH, 0},
    };
    const hm_move mv[] = {
        {REG(0) + 0x100, REG(6) + 0x100, 0x2000}, {REG(1) + 0x1000, REG(6) + 0x4000, 0x3000},
        {REG(4), REG(4), 0x10000},
    };
    hm_rec ref = {0}, rec = {0};
    hm_objs before = {0}, after = {0}, want = {0};
    hm_model *r = hm_model_new();
    build_nomem_heap(r, &ref);
    run_gc(r, &ref, (gc_args){3, ARR(bb), ARR(ba), ARR(mv)});
    hm_objs_of_model(&want, r);

    bool failed_once = false;
    for (long k = 0;; k++) {
        hm_model *m = hm_model_new();
        hm_gc_sink sink = hm_rec_sink(&rec);
        hm_gc_stats st;
        build_nomem_heap(m, &rec);
        hm_objs_of_model(&before, m);
        hm_rec_clear(&rec);
        hm_model_fail_after(m, k);
        hm_gc_input in = {1, 3, ARR(bb), ARR(ba), ARR(mv)};
        int rc = hm_model_apply_gc(m, &in, &sink, &st);
        hm_model_fail_after(m, -1);
        CHECK_MODEL(m);
        if (rc == HM_ERR_NOMEM) {
            failed_once = true;
            CHECK_EQ(rec.n, 0);
            CHECK_EQ(st.classified + st.died + st.survived, 0);
            hm_objs_of_model(&after, m);
            CHECK(hm_objs_equal(&before, &after));
            /* The same GC, retried, does what it would have done. */
            run_gc(m, &rec, (gc_args){3, ARR(bb), ARR(ba), ARR(mv)});
            CHECK(hm_rec_equal(&rec, &ref));
            hm_objs_of_model(&after, m);
            CHECK(hm_objs_equal(&after, &want));
            hm_model_free(m);
            continue;
        }
        CHECK_EQ(rc, HM_OK);
        hm_model_free(m);
        break;
    }
    CHECK(failed_once);

    /* add: keep adding with every allocation failing; each failure changes nothing. */
    hm_model *m = hm_model_new();
    size_t nomem = 0;
    hm_model_fail_after(m, 0);
    for (uint64_t k = 1; k <= 3; k++)
        if (hm_model_add(m, REG(0) + 8 * k, k) == HM_ERR_NOMEM)
            nomem++;
    CHECK_EQ(nomem, 3);
    CHECK_EQ(hm_model_count(m), 0);
    hm_model_fail_after(m, -1);
    for (uint64_t k = 1; k <= 16; k++)
        add(m, REG(0) + 8 * k, k);
    hm_model_fail_after(m, 0);
    for (uint64_t k = 17; k <= 5000 && nomem < 4; k++) {
        size_t n = hm_model_count(m);
        if (hm_model_add(m, REG(0) + 8 * k, k) == HM_ERR_NOMEM) {
            nomem++;
            CHECK_EQ(hm_model_count(m), n);
            CHECK(!hm_model_lookup(m, REG(0) + 8 * k, NULL, NULL));
        }
        CHECK_MODEL(m);
    }
    CHECK_EQ(nomem, 4);
    hm_model_free(m);
    hm_model_free(r);
    hm_objs_release(&before);
    hm_objs_release(&after);
    hm_objs_release(&want);
    hm_rec_release(&rec);
    hm_rec_release(&ref);
}

/* Scratch buffers: a GC as large as the last one reuses them (mapped again and faulted in at
 * every GC, they were a third of the collector thread's CPU on MidLife); a GC that needs far
 * less gives the large ones back. Blocks of 8 MiB and more that the GC itself allocates are
 * counted. */
static size_t big_allocations;
static bool counting_big;

static void *counting_realloc(void *p, size_t size)
{
    if (counting_big && size >= ((size_t)8 << 20))
        big_allocations++;
    return realloc(p, size);
}

/* The young list's hash comes from the host's calloc (fresh zero pages: not zeroed again). */
static size_t callocs;

static void *counting_calloc(size_t n, size_t size)
{
    callocs++;
    return calloc(n, size);
}

static void young_gc(hm_model *m, uint64_t *id, size_t n)
{
    const hm_gen_range bb[] = {{REG(0), 4 * WIN, HM_GEN_0, 0}};
    const hm_gen_range ba[] = {{REG(0), 4 * WIN, HM_GEN_0, 0}};
    hm_gc_input in = {1, 1, ARR(bb), ARR(ba), NULL, 0}; /* all die */
    for (size_t i = 0; i < n; i++)
        CHECK_EQ(hm_model_add(m, REG(0) + 8 * i, ++*id), HM_OK);
    counting_big = true;
    CHECK_EQ(hm_model_apply_gc(m, &in, NULL, NULL), HM_OK);
    counting_big = false;
    CHECK_EQ(hm_model_count(m), 0);
}

static void test_scratch_kept(void)
{
    static const hm_allocator counting = {.realloc = counting_realloc, .free = free,
                                          .calloc = counting_calloc};
    hm_model *m = hm_model_new_with(&counting);
    uint64_t id = 0;
    const size_t n = (size_t)1 << 20; /* the insert list alone: 16 MiB */
    young_gc(m, &id, n);
    CHECK(big_allocations > 0);
    CHECK(callocs > 0);
    size_t held = hm_model_memory(m);
    big_allocations = 0;
    young_gc(m, &id, n);
    CHECK_EQ(big_allocations, 0);
    young_gc(m, &id, n / 2);
    CHECK_EQ(big_allocations, 0);
    young_gc(m, &id, 16); /* far less: the large buffers go */
    CHECK(hm_model_memory(m) + ((size_t)16 << 20) <= held);
    hm_model_free(m);
}

/* The inline add (hm_model.h) appends only within the room the list and the hash both have; any
 * other add grows them first. A growth that fails halfway (the list grown, the hash not: the
 * first add needs both) leaves no room beyond the hash's, and a GC that gives the young list
 * back leaves none at all (an add would write through the freed list). */
static void test_add_room(void)
{
    hm_model *m = hm_model_new();
    hm_model_fail_after(m, 1);
    CHECK_EQ(hm_model_add(m, REG(0) + 8, 1), HM_ERR_NOMEM);
    CHECK_MODEL(m);
    hm_model_fail_after(m, 0); /* no room yet: this add must try to grow, and fail */
    CHECK_EQ(hm_model_add(m, REG(0) + 8, 1), HM_ERR_NOMEM);
    CHECK_EQ(hm_model_count(m), 0);
    hm_model_fail_after(m, -1);
    uint64_t id = 0;
    const size_t n = 20000; /* across several growths of the list and of the hash */
    for (size_t i = 0; i < n; i++) {
        CHECK_EQ(hm_model_add(m, REG(0) + 8 * i, ++id), HM_OK);
        if (i % 997 == 0)
            CHECK_MODEL(m);
    }
    CHECK_EQ(hm_model_count(m), n);
    young_gc(m, &id, 0); /* all die; the GC before the next uses far less: the list goes */
    young_gc(m, &id, 10);
    CHECK_MODEL(m);
    for (size_t i = 0; i < 100; i++)
        CHECK_EQ(hm_model_add(m, REG(1) + 8 * i, ++id), HM_OK);
    CHECK_EQ(hm_model_count(m), 100);
    CHECK_MODEL(m);
    hm_model_free(m);
}

/* The young list holds 8 bytes per object, its address; the ids are runs of consecutive ids
 * beside it. n adds with consecutive ids take the list (at most 1.5n entries after its growth
 * steps) and the hash (the least power of two slots that is at least 2n, 8 bytes each): 16 bytes
 * per object for the list, as it was, would not fit. */
static void test_young_bytes(void)
{
    hm_model *m = hm_model_new();
    size_t before = hm_model_memory(m);
    const size_t n = 50000;
    for (size_t i = 0; i < n; i++)
        CHECK_EQ(hm_model_add(m, REG(0) + 16 * i, 1000 + i), HM_OK);
    size_t slots = 1024;
    while (slots < 2 * n)
        slots *= 2;
    size_t young = hm_model_memory(m) - before - slots * 8;
    CHECK(young <= 8 * (n + n / 2) + 1024);
    CHECK_MODEL(m);
    uint64_t id = 0;
    CHECK(hm_model_lookup(m, REG(0) + 16 * 777, &id, NULL) && id == 1777);
    hm_model_free(m);
}

/* Ids that jump ahead or back start id runs; each object keeps its own id through lookups,
 * foreach and the GC, and an add whose new run cannot get memory changes nothing. An address
 * that is not a multiple of 8 is no object's. */
static void test_id_runs(void)
{
    hm_model *m = hm_model_new();
    CHECK_EQ(hm_model_add(m, REG(0) + 4, 1), HM_ERR_INVALID);
    CHECK_EQ(hm_model_add(m, REG(0) + 9, 1), HM_ERR_INVALID);
    CHECK_EQ(hm_model_count(m), 0);
    /* blocks of 5 ids, taken out of order: 500-504, 100-104, 900-904, 505-509, ... */
    static const uint64_t block[] = {500, 100, 900, 505, 105, 300, 905, 110, 700, 510};
    size_t k = 0;
    for (size_t b = 0; b < sizeof block / sizeof block[0]; b++)
        for (uint64_t j = 0; j < 5; j++, k++)
            add(m, REG(0) + 32 * k, block[b] + j);
    /* 36 runs fill the run array (it grew 16, 24, 36); the list has room for one more object
     * (81), so the next run's growth is the add's only allocation: it fails, then succeeds. */
    for (uint64_t j = 0; j < 26; j++, k++)
        add(m, REG(0) + 32 * k, 2000 + 2 * j);
    hm_model_fail_after(m, 0);
    CHECK_EQ(hm_model_add(m, REG(0) + 32 * k, 5000), HM_ERR_NOMEM);
    hm_model_fail_after(m, -1);
    CHECK_EQ(hm_model_count(m), k);
    CHECK_MODEL(m);
    add(m, REG(0) + 32 * k++, 5000);
    add(m, REG(0) + 32 * k++, 5001); /* extends the new run */
    uint64_t id = 0;
    CHECK(hm_model_lookup(m, REG(0) + 32 * 7, &id, NULL) && id == 102);
    CHECK(hm_model_lookup(m, REG(0) + 32 * 19, &id, NULL) && id == 509);
    CHECK(hm_model_lookup(m, REG(0) + 32 * 51, &id, NULL) && id == 2002);
    /* A gen0 GC in which all survive in place: the windows keep each object's id. */
    const hm_gen_range bb[] = {{REG(0), WIN, HM_GEN_0, 0}};
    const hm_gen_range ba[] = {{REG(0), WIN, HM_GEN_1, 0}};
    const hm_move stay[] = {{REG(0), REG(0), 32 * k}};
    hm_gc_input in = {1, 1, ARR(bb), ARR(ba), ARR(stay)};
    CHECK_EQ(hm_model_apply_gc(m, &in, NULL, NULL), HM_OK);
    CHECK_MODEL(m);
    CHECK_EQ(hm_model_count(m), k);
    uint32_t gen = 0;
    CHECK(hm_model_lookup(m, REG(0) + 32 * 7, &id, &gen) && id == 102 && gen == HM_GEN_1);
    CHECK(hm_model_lookup(m, REG(0) + 32 * 52, &id, &gen) && id == 2004 && gen == HM_GEN_1);
    hm_model_free(m);
}

/* NULL is accepted where the header says so. */
static void test_null(void)
{
    hm_model_free(NULL);
    CHECK_EQ(hm_model_count(NULL), 0);
    CHECK_EQ(hm_model_memory(NULL), 0);
    CHECK(!hm_model_lookup(NULL, 1, NULL, NULL));
    CHECK(!hm_model_check(NULL, NULL, 0));
    hm_model *m = hm_model_new();
    const hm_gen_range bb[] = {{REG(0), 0x1000, HM_GEN_0, 0}};
    hm_gc_input in = {1, 1, ARR(bb), NULL, 0, NULL, 0};
    add(m, REG(0) + 8, 1);
    CHECK_EQ(hm_model_apply_gc(m, &in, NULL, NULL), HM_OK);
    CHECK_EQ(hm_model_count(m), 0);
    CHECK(hm_model_memory(m) >= sizeof(void *));
    hm_model_free(m);
}

int main(void)
{
    test_classification();
    test_gen0_compacting();
    test_sweeping();
    test_gen2_compacting_uoh();
    test_gen1_promotes();
    test_no_double_remap();
    test_survivor_outside_bounds();
    test_evictions();
    test_deferred_evictions();
    test_young_runs();
    test_lookup_between_adds();
    test_nongc_and_unknown();
    test_invalid_input();
    test_nomem();
    test_nomem_deferred();
    test_null();
    test_scratch_kept();
    test_add_room();
    test_young_bytes();
    test_id_runs();
    printf("test_hm_model: ok\n");
    return 0;
}
