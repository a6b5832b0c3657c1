/* test_hm_diff.c — differential test: the model against the naive model (hm_naive.c) on random
 * streams from a small simulated regions heap.
 *
 * The simulator keeps regions (SOH 1 MiB, LOH/POH 1–6 MiB, several per 4 MiB window and some
 * spanning windows), allocates into gen0 regions through several allocation contexts (so the
 * young list is out of order), into LOH/POH/NonGC, over existing addresses (evictions) and at odd
 * places; then runs GCs of every generation, compacting (survivors packed into other regions,
 * including condemned ones processed later) or sweeping (surviving ranges, regions promoted in
 * place), LOH/POH always by surviving ranges, with the ranges in per-heap batches concatenated
 * in random order, and now and then invalid data: overlapping, empty or wrapping ranges,
 * generation bounds missing after the GC, random condemned masks. Both models get the same calls;
 * every callback (sorted), the stats, the full state and a sample of lookups must agree after
 * every GC, and hm_model_check must hold after every step. Some calls run with allocation
 * failures injected: a failed call must change nothing and make no callback.
 *
 * The model finds duplicate addresses lazily (by a hash sync at a lookup or count, else at the
 * next GC), so the cycles vary what happens between the adds and the GC: in quiet cycles nothing
 * counts the model, so the GC finds the evictions itself, all of them when no lookup of recent
 * objects (compared with the naive model) came between the adds either. Some cycles allocate in
 * bursts per allocation context, as the collector drains a thread's buffer at a time (the GC then
 * proves the adds duplicate-free from their runs), others one object here, one there (it then
 * sorts); addresses are added twice before a GC too. Now and then a burst runs on from the end
 * of a gen0 region into the adjacent region of another generation (sim_straddle).
 *
 * HM_TEST_SEED overrides the seed, HM_TEST_GCS the number of GCs.
 */
#include "heapmodel/hm_model.h"
#include "heapmodel/hm_testing.h"
#include "hm_naive.h"
#include "hm_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SLOT (UINT64_C(1) << 20)
#define N_SLOTS 128
#define HEAP_BASE UINT64_C(0x7f0000000000)
#define NONGC_BASE (HEAP_BASE - 256 * SLOT)
#define MAX_REGIONS N_SLOTS
#define N_CTX 3

typedef struct sim_region {
    uint64_t start, size, used;
    uint32_t gen;
    bool alive;
    /* plan of the GC being built */
    bool condemned;
    bool dest;         /* receives survivors in this GC */
    uint32_t gen_next; /* its generation after the GC when dest */
    uint64_t plan;     /* next free byte when dest */
} sim_region;

typedef struct sim {
    uint64_t rng;
    sim_region reg[MAX_REGIONS];
    size_t n_reg;
    bool slot_used[N_SLOTS];
    size_t ctx[N_CTX]; /* gen0 regions being allocated into */
    size_t loh, poh;
    uint64_t next_id, nongc_used;
    uint64_t held_lo, held_hi; /* a block of ids put aside, as another thread's (sim_next_id) */
    hm_model *m;
    hm_naive *nv;
    hm_rec rm, rn;
    hm_objs om, on;
    /* buffers of the GC being built */
    hm_gen_range *bb, *ba;
    size_t n_bb, n_ba;
    hm_move *mv;
    size_t n_mv, cap;
    size_t gcs, adds, nomem_gc, nomem_add, anomalies, evicted, survived, died;
    /* this cycle: no count or state comparison between the adds and the GC; lookups between
     * adds; allocation in bursts per context */
    bool quiet, probe, bursts;
    uint64_t *recent; /* addresses added since the last GC */
    size_t n_recent, cap_recent;
    size_t lookups, quiet_cycles, burst_cycles, fates_gcs;
    uint64_t cycle_first_id; /* the first id added since the last GC */
    uint8_t *fm, *fn;        /* young fate bytes: the model's, and the naive recording's */
} sim;

static uint64_t rng_next(uint64_t *s)
{
    uint64_t z = (*s += UINT64_C(0x9E3779B97F4A7C15));
    z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
    z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
    return z ^ (z >> 31);
}

static uint64_t rnd(sim *s, uint64_t n)
{
    return n ? rng_next(&s->rng) % n : 0;
}

static bool chance(sim *s, unsigned percent)
{
    return rnd(s, 100) < percent;
}

/* ---- regions ---------------------------------------------------------------------------- */

/* A region of `slots` slots at slot `at`, or (size_t)-1 when they are not all free. */
static size_t sim_region_at(sim *s, uint32_t gen, size_t slots, size_t at)
{
    if (at + slots > N_SLOTS)
        return (size_t)-1;
    for (size_t k = 0; k < slots; k++)
        if (s->slot_used[at + k])
            return (size_t)-1;
    size_t i;
    for (i = 0; i < s->n_reg && s->reg[i].alive; i++)
        ;
    if (i == s->n_reg) {
        if (s->n_reg == MAX_REGIONS)
            return (size_t)-1;
        s->n_reg++;
    }
    for (size_t k = 0; k < slots; k++)
        s->slot_used[at + k] = true;
    s->reg[i] = (sim_region){HEAP_BASE + at * SLOT, slots * SLOT, 0, gen, true, false, false, 0, 0};
    return i;
}

static size_t sim_region_new(sim *s, uint32_t gen, size_t slots)
{
    for (size_t tries = 0; tries < 64; tries++) {
        size_t i = sim_region_at(s, gen, slots, (size_t)rnd(s, N_SLOTS - slots + 1));
        if (i != (size_t)-1)
            return i;
    }
    return (size_t)-1;
}

static void sim_region_free(sim *s, size_t i)
{
    sim_region *r = &s->reg[i];
    for (uint64_t a = r->start; a < r->start + r->size; a += SLOT)
        s->slot_used[(a - HEAP_BASE) / SLOT] = false;
    r->alive = false;
}

static void sim_fresh_contexts(sim *s)
{
    for (size_t c = 0; c < N_CTX; c++) {
        size_t i = s->ctx[c];
        if (i == (size_t)-1 || !s->reg[i].alive || s->reg[i].gen != HM_GEN_0 ||
            s->reg[i].used * 2 > s->reg[i].size) {
            i = s->ctx[c] = sim_region_new(s, HM_GEN_0, 1);
            /* Sometimes start near the end, so that the region fills up to its last byte. */
            if (i != (size_t)-1 && chance(s, 30))
                s->reg[i].used = s->reg[i].size - 8 * rnd(s, 2048);
        }
    }
    if (s->loh == (size_t)-1 || !s->reg[s->loh].alive || s->reg[s->loh].gen != HM_GEN_LOH)
        s->loh = sim_region_new(s, HM_GEN_LOH, 1 + (size_t)rnd(s, 6));
    if (s->poh == (size_t)-1 || !s->reg[s->poh].alive || s->reg[s->poh].gen != HM_GEN_POH)
        s->poh = sim_region_new(s, HM_GEN_POH, 1 + (size_t)rnd(s, 2));
}

/* ---- comparing -------------------------------------------------------------------------- */

/* Looks addr up in both models: they must agree (found or not, the id, the generation). */
static void sim_lookup_agrees(sim *s, uint64_t addr)
{
    uint64_t id1 = 0, id2 = 0;
    uint32_t g1 = 0, g2 = 0;
    bool f1 = hm_model_lookup(s->m, addr, &id1, &g1);
    bool f2 = hm_naive_lookup(s->nv, addr, &id2, &g2);
    CHECK_EQ(f1, f2);
    CHECK_EQ(id1, id2);
    CHECK_EQ(g1, g2);
}

static void sim_compare_state(sim *s)
{
    CHECK_MODEL(s->m);
    CHECK_EQ(hm_model_count(s->m), hm_naive_count(s->nv));
    hm_objs_of_model(&s->om, s->m);
    s->on.n = 0;
    CHECK(hm_naive_foreach(s->nv, hm_objs_push, &s->on));
    if (!hm_objs_equal(&s->om, &s->on)) {
        for (size_t i = 0; i < s->om.n || i < s->on.n; i++) {
            const hm_obj *a = i < s->om.n ? &s->om.v[i] : NULL;
            const hm_obj *b = i < s->on.n ? &s->on.v[i] : NULL;
            if (a && b && a->addr == b->addr && a->id == b->id && a->gen == b->gen)
                continue;
            fprintf(stderr, "first difference at %zu: model %llx/%llu/%u naive %llx/%llu/%u\n", i,
                    a ? (unsigned long long)a->addr : 0ull, a ? (unsigned long long)a->id : 0ull,
                    a ? a->gen : 99u, b ? (unsigned long long)b->addr : 0ull,
                    b ? (unsigned long long)b->id : 0ull, b ? b->gen : 99u);
            break;
        }
        CHECK(!"model and naive hold different objects");
    }
    /* Lookups go through other code (hash, window search) than foreach: sample them. */
    for (int q = 0; q < 24 && s->on.n; q++) {
        const hm_obj *o = &s->on.v[rnd(s, s->on.n)];
        sim_lookup_agrees(s, o->addr + (q % 3 == 0 ? 8 : 0));
    }
    /* And in ascending order (a snapshot's walk): lookups search on from the last one found. */
    size_t stride = s->on.n / 256 + 1;
    for (size_t i = rnd(s, stride); i < s->on.n; i += 1 + rnd(s, stride)) {
        for (int miss = 0; miss < 2; miss++)
            sim_lookup_agrees(s, s->on.v[i].addr + (uint64_t)miss * 8);
    }
}

/* ---- allocation ------------------------------------------------------------------------- */

/* Looks addr up between adds (counted): the models must agree. */
static void sim_lookup(sim *s, uint64_t addr)
{
    sim_lookup_agrees(s, addr);
    s->lookups++;
}

/* Ids as the collector gives them: each thread takes a block and the model gets the allocations
 * a thread at a time, so the ids jump ahead (past other threads' blocks, handle events) and back
 * (to a block taken earlier). Each jump starts a new id run in the model's young list. */
static uint64_t sim_next_id(sim *s)
{
    if (s->held_lo < s->held_hi && chance(s, 30))
        return s->held_lo++;
    if (chance(s, 4)) {
        s->held_lo = s->next_id + 1;
        s->held_hi = s->held_lo + 1 + rnd(s, 40);
        s->next_id = s->held_hi - 1 + rnd(s, 3);
    }
    return ++s->next_id;
}

static void sim_add(sim *s, uint64_t addr)
{
    uint64_t id = sim_next_id(s);
    int want = hm_naive_add(s->nv, addr, id);
    if (s->n_recent == s->cap_recent) {
        s->cap_recent = s->cap_recent ? 2 * s->cap_recent : 256;
        s->recent = realloc(s->recent, s->cap_recent * sizeof(*s->recent));
        if (!s->recent)
            abort();
    }
    s->recent[s->n_recent++] = addr;
    if (chance(s, 2)) {
        /* An allocation failure must leave the model as it was (counting would sync the hash,
         * which quiet cycles must not do: there only the address is checked). */
        size_t n = s->quiet ? 0 : hm_model_count(s->m);
        hm_model_fail_after(s->m, (long)rnd(s, 2));
        int rc = hm_model_add(s->m, addr, id);
        hm_model_fail_after(s->m, -1);
        if (rc == HM_ERR_NOMEM) {
            s->nomem_add++;
            if (!s->quiet)
                CHECK_EQ(hm_model_count(s->m), n);
            CHECK_MODEL(s->m);
        } else {
            CHECK_EQ(rc, want);
            s->adds++;
            return;
        }
    }
    CHECK_EQ(hm_model_add(s->m, addr, id), want);
    s->adds++;
    if (s->probe && chance(s, 3)) {
        /* Lookups between adds: the object just added (the collector's usual case: the
         * target of a new handle), an older young one, an old one, or an address next to it. */
        unsigned k = (unsigned)rnd(s, 4);
        uint64_t a = k == 0   ? addr
                     : k == 1 ? s->recent[rnd(s, s->n_recent)]
                     : k == 2 && s->on.n ? s->on.v[rnd(s, s->on.n)].addr
                                         : addr + 8;
        sim_lookup(s, a);
    }
}

/* One run of young objects across the end of a gen0 region into the region that starts right
 * there, of another generation (made for it): addresses ascending a few hundred bytes apart,
 * as if one allocation context went on over the boundary. The two halves are classified by
 * different bounds ranges (a GC may condemn one and not the other), which a pass that takes a
 * run's generation from its first object must notice. */
static void sim_straddle(sim *s)
{
    size_t ri = s->ctx[rnd(s, N_CTX)];
    if (ri == (size_t)-1 || s->reg[ri].size != SLOT)
        return;
    static const uint32_t gens[] = {HM_GEN_1, HM_GEN_2, HM_GEN_LOH, HM_GEN_0};
    size_t rj = sim_region_at(s, gens[rnd(s, 4)], 1, (s->reg[ri].start - HEAP_BASE) / SLOT + 1);
    if (rj == (size_t)-1)
        return;
    sim_region *a = &s->reg[ri], *b = &s->reg[rj];
    if (a->size - a->used > 4096)
        a->used = a->size - 8 * (1 + rnd(s, 256)); /* bump on to near the end */
    while (a->used < a->size) {
        uint64_t size = 16 + 8 * rnd(s, 30);
        if (a->used + size > a->size || a->size - a->used - size < 16)
            size = a->size - a->used;
        sim_add(s, a->start + a->used);
        a->used += size;
    }
    for (size_t k = 1 + (size_t)rnd(s, 24); k > 0; k--) {
        sim_add(s, b->start + b->used);
        b->used += 16 + 8 * rnd(s, 30);
    }
}

static void sim_allocate(sim *s, size_t count)
{
    size_t burst = 0, c = 0;
    /* Bursts: long runs in one context and only a few odd adds, the shape the model's GC proves
     * duplicate-free without sorting; some of those cycles add one young address twice. */
    bool young_dups = !s->bursts || chance(s, 40);
    sim_fresh_contexts(s);
    for (size_t k = 0; k < count; k++) {
        unsigned r = (unsigned)rnd(s, 1000);
        size_t ri = (size_t)-1;
        uint64_t size = 0;
        if (s->bursts)
            r = r < 970 ? 0 : r < 985 ? 901 : r < 990 && young_dups ? 913 : 0;
        if (r < 780) {
            if (!s->bursts || burst == 0) {
                c = (size_t)rnd(s, N_CTX);
                burst = 1 + (size_t)rnd(s, 64);
            }
            burst--;
            ri = s->ctx[c];
            size = 16 + 8 * rnd(s, 60);
            /* The last object fills the region exactly, so that regions touch each other's
             * objects: an off-by-one at a range's end would show. */
            if (ri != (size_t)-1 && s->reg[ri].used + size > s->reg[ri].size &&
                s->reg[ri].size - s->reg[ri].used >= 16)
                size = s->reg[ri].size - s->reg[ri].used;
            else if (ri != (size_t)-1 && s->reg[ri].used + size > s->reg[ri].size)
                ri = s->ctx[c] = sim_region_new(s, HM_GEN_0, 1);
        } else if (r < 860) {
            ri = s->loh;
            size = 85000 + 8 * rnd(s, 20000);
            if (ri != (size_t)-1 && s->reg[ri].used + size > s->reg[ri].size)
                ri = s->loh = sim_region_new(s, HM_GEN_LOH, 1 + (size_t)rnd(s, 6));
        } else if (r < 900) {
            ri = s->poh;
            size = 16 + 8 * rnd(s, 500);
            if (ri != (size_t)-1 && s->reg[ri].used + size > s->reg[ri].size)
                ri = s->poh = sim_region_new(s, HM_GEN_POH, 1 + (size_t)rnd(s, 2));
        } else if (r < 901 && chance(s, 50)) {
            sim_add(s, NONGC_BASE + (s->nongc_used += 8 * (1 + rnd(s, 8))));
            continue;
        } else if (r < 913 || s->n_reg == 0) {
            /* Over an object alive after the last GC, usually still held: an eviction. */
            if (s->on.n > 0)
                sim_add(s, s->on.v[rnd(s, s->on.n)].addr);
            continue;
        } else if (r < 925) {
            /* Over an object added since the last GC (maybe evicted already): an eviction
             * among young objects, found at a lookup, a count or the GC. */
            if (s->n_recent > 0)
                sim_add(s, s->recent[s->n_recent - 1 - rnd(s, s->n_recent < 200 ? s->n_recent
                                                                                   : 200)]);
            continue;
        } else {
            /* Somewhere odd: anywhere in the used part of any region (gen1, gen2...), and now
             * and then past it (NonGC then, until the region grows over it). */
            size_t i = (size_t)rnd(s, s->n_reg);
            uint64_t span = chance(s, 10) ? s->reg[i].size : s->reg[i].used;
            if (s->reg[i].alive && span >= 8)
                sim_add(s, s->reg[i].start + 8 * rnd(s, span / 8));
            continue;
        }
        if (ri == (size_t)-1)
            continue; /* address space full: skip */
        sim_add(s, s->reg[ri].start + s->reg[ri].used);
        s->reg[ri].used += size;
        if (s->bursts && r < 780 && chance(s, 1))
            sim_straddle(s);
    }
    CHECK_MODEL(s->m);
    if (!s->quiet)
        CHECK_EQ(hm_model_count(s->m), hm_naive_count(s->nv));
}

/* ---- GC --------------------------------------------------------------------------------- */

static void sim_push_move(sim *s, uint64_t old_start, uint64_t new_start, uint64_t len)
{
    if (s->n_mv == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 256;
        s->mv = realloc(s->mv, s->cap * sizeof(*s->mv));
        if (!s->mv)
            abort();
    }
    s->mv[s->n_mv++] = (hm_move){old_start, new_start, len};
}

/* A destination for `len` bytes of survivors of target generation gen: the current destination
 * region of that generation when it has room, else a condemned SOH region not yet used as a
 * destination (it is emptied by this GC), else a new region. Returns the new address or 0. */
static uint64_t sim_dest(sim *s, uint32_t gen, uint64_t len, size_t *cur)
{
    if (*cur != (size_t)-1 && s->reg[*cur].plan + len <= s->reg[*cur].size) {
        uint64_t a = s->reg[*cur].start + s->reg[*cur].plan;
        s->reg[*cur].plan += len;
        return a;
    }
    size_t pick = (size_t)-1;
    for (size_t tries = 0; tries < 8 && pick == (size_t)-1; tries++) {
        size_t i = (size_t)rnd(s, s->n_reg);
        sim_region *r = &s->reg[i];
        if (r->alive && r->condemned && !r->dest && r->gen <= HM_GEN_2 && len <= r->size)
            pick = i;
        else if (r->alive && !r->condemned && !r->dest && r->gen == gen &&
                 r->used + len <= r->size && chance(s, 50))
            pick = i; /* append behind the objects of an uncondemned region */
    }
    if (pick == (size_t)-1) {
        pick = sim_region_new(s, gen, 1);
        if (pick == (size_t)-1 || len > s->reg[pick].size)
            return 0;
        s->reg[pick].condemned = false;
    }
    sim_region *r = &s->reg[pick];
    r->dest = true;
    r->gen_next = gen;
    r->plan = r->condemned ? 0 : r->used;
    *cur = pick;
    uint64_t a = r->start + r->plan;
    r->plan += len;
    return a;
}

static void sim_bounds(sim *s, hm_gen_range **out, size_t *n, bool after)
{
    hm_gen_range *b = calloc(s->n_reg + 8, sizeof(*b));
    size_t k = 0;
    for (size_t i = 0; i < s->n_reg; i++)
        if (s->reg[i].alive)
            b[k++] = (hm_gen_range){s->reg[i].start, s->reg[i].used, s->reg[i].gen, 0};
    for (size_t i = k; i > 1; i--) { /* the runtime lists regions in no address order */
        size_t j = (size_t)rnd(s, i);
        hm_gen_range t = b[i - 1];
        b[i - 1] = b[j];
        b[j] = t;
    }
    if (after && k > 0 && chance(s, 4))
        b[rnd(s, k)].length = 0; /* a region missing after the GC: survivors there are lost */
    if (k > 0 && chance(s, 3)) { /* an overlapping range */
        hm_gen_range x = b[rnd(s, k)];
        x.start += 8 * rnd(s, 64);
        x.generation = (uint32_t)rnd(s, 5);
        b[k++] = x;
    }
    if (chance(s, 2))
        b[k++] = (hm_gen_range){UINT64_MAX - 64, 4096, 0, 0}; /* wraps */
    if (chance(s, 2))
        b[k++] = (hm_gen_range){NONGC_BASE, 64, 7, 0}; /* no such generation */
    *out = b;
    *n = k;
}

static void sim_junk_moves(sim *s)
{
    if (chance(s, 5)) /* covers addresses nobody allocated */
        sim_push_move(s, HEAP_BASE + N_SLOTS * SLOT + 8 * rnd(s, 1000),
                      HEAP_BASE + N_SLOTS * SLOT + 8 * rnd(s, 1000), 8 + 8 * rnd(s, 100));
    if (s->n_mv && chance(s, 3)) { /* overlaps a real range: one of them is dropped */
        hm_move x = s->mv[rnd(s, s->n_mv)];
        x.old_start += 8 * rnd(s, 4);
        x.new_start = HEAP_BASE + N_SLOTS * SLOT + 8 * rnd(s, 100000);
        sim_push_move(s, x.old_start, x.new_start, x.length);
    }
    if (s->n_mv && chance(s, 3)) { /* destination overlaps a real one */
        hm_move x = s->mv[rnd(s, s->n_mv)];
        sim_push_move(s, NONGC_BASE - SLOT + 8 * rnd(s, 1000), x.new_start + 8 * rnd(s, 4), 64);
    }
    for (int k = 0; k < 3 && s->on.n > 1; k++) {
        /* One object moved onto another's address: when the first is condemned and the second
         * is not (old, NonGC, or young in a kept heap), the second is evicted. */
        if (!chance(s, 10))
            continue;
        uint64_t from = s->on.v[rnd(s, s->on.n)].addr, to = s->on.v[rnd(s, s->on.n)].addr;
        if (from != to)
            sim_push_move(s, from, to, 8);
    }
    if (chance(s, 2))
        sim_push_move(s, HEAP_BASE, HEAP_BASE + 64, 0); /* empty */
    if (chance(s, 2))
        sim_push_move(s, HEAP_BASE + 64, UINT64_MAX - 8, 64); /* wraps */
}

static int sim_move_cmp(const void *pa, const void *pb)
{
    const hm_move *a = pa, *b = pb;
    return a->old_start < b->old_start ? -1 : a->old_start > b->old_start;
}

/* Orders the moves like the runtime: per-heap batches, each in address order, the batches
 * concatenated in any order; sometimes fully shuffled, sometimes in planning order. */
static void sim_batch_moves(sim *s)
{
    if (chance(s, 30))
        return;
    if (chance(s, 20)) {
        for (size_t i = s->n_mv; i > 1; i--) {
            size_t j = (size_t)rnd(s, i);
            hm_move t = s->mv[i - 1];
            s->mv[i - 1] = s->mv[j];
            s->mv[j] = t;
        }
        return;
    }
    /* Sorted, then rotated by a random amount once or twice: batches in another order. */
    qsort(s->mv, s->n_mv, sizeof(*s->mv), sim_move_cmp);
    for (int round = 0; round < 2 && s->n_mv > 1; round++) {
        size_t cut = (size_t)rnd(s, s->n_mv);
        hm_move *t = malloc(s->n_mv * sizeof(*t));
        memcpy(t, s->mv + cut, (s->n_mv - cut) * sizeof(*t));
        memcpy(t + (s->n_mv - cut), s->mv, cut * sizeof(*t));
        memcpy(s->mv, t, s->n_mv * sizeof(*t));
        free(t);
    }
}

static void sim_plan_region(sim *s, size_t ri, bool compacting, size_t *dest_cur)
{
    sim_region *r = &s->reg[ri];
    uint64_t end = r->start + r->used;
    unsigned keep = r->gen == HM_GEN_0 ? 30 : 50;
    /* The objects of the region, in address order, from the naive model's state. */
    size_t lo = 0;
    while (lo < s->on.n && s->on.v[lo].addr < r->start)
        lo++;
    size_t hi = lo;
    while (hi < s->on.n && s->on.v[hi].addr < end)
        hi++;
    bool uoh = r->gen == HM_GEN_LOH || r->gen == HM_GEN_POH;
    uint32_t target = uoh ? r->gen : (r->gen < HM_GEN_2 ? r->gen + 1 : HM_GEN_2);
    if (!uoh && chance(s, 5))
        target = r->gen; /* not promoted */
    bool any = false;
    for (size_t i = lo; i < hi;) {
        if (!chance(s, keep)) {
            i++;
            continue;
        }
        /* A plug: a run of survivors, cut at random. */
        size_t j = i + 1;
        while (j < hi && chance(s, 70) && chance(s, keep))
            j++;
        uint64_t next = j < hi ? s->on.v[j].addr : end;
        uint64_t first = s->on.v[i].addr, last = s->on.v[j - 1].addr;
        uint64_t len = last - first + 8 + 8 * rnd(s, (next - last) / 8);
        if (first + len > next)
            len = next - first;
        if (compacting && !uoh) {
            size_t *cur = &dest_cur[target];
            uint64_t to = sim_dest(s, target, (len + 7) & ~UINT64_C(7), cur);
            if (to == 0)
                to = first; /* no room: stays (a pinned plug) */
            sim_push_move(s, first, to, len);
        } else {
            sim_push_move(s, first, first, len);
            any = true;
        }
        i = j;
    }
    if ((!compacting || uoh) && !r->dest) {
        /* Swept in place: the region lives on, promoted when SOH; an empty one is freed, unless
         * it is where LOH/POH allocations go. */
        if (any || ri == s->loh || ri == s->poh) {
            r->dest = true;
            r->plan = r->used;
            r->gen_next = target;
        }
    }
}

static void sim_gc(sim *s)
{
    unsigned r = (unsigned)rnd(s, 100);
    uint32_t mask = r < 55 ? 0x1 : r < 80 ? 0x3 : 0x1f;
    if (chance(s, 4))
        mask = (uint32_t)rnd(s, 64);
    bool compacting = chance(s, mask == 0x1f ? 35 : 65);
    size_t dest_cur[HM_GEN_POH + 1] = {(size_t)-1, (size_t)-1, (size_t)-1, (size_t)-1, (size_t)-1};

    sim_bounds(s, &s->bb, &s->n_bb, false);
    s->on.n = 0;
    CHECK(hm_naive_foreach(s->nv, hm_objs_push, &s->on));
    s->n_mv = 0;
    for (size_t i = 0; i < s->n_reg; i++) {
        s->reg[i].condemned = s->reg[i].alive && (mask >> s->reg[i].gen & 1);
        s->reg[i].dest = false;
    }
    /* Plan the regions in random order, so survivors also land in regions planned later. */
    size_t order[MAX_REGIONS], n_order = 0;
    for (size_t i = 0; i < s->n_reg; i++)
        if (s->reg[i].condemned)
            order[n_order++] = i;
    for (size_t i = n_order; i > 1; i--) {
        size_t j = (size_t)rnd(s, i), t = order[i - 1];
        order[i - 1] = order[j];
        order[j] = t;
    }
    for (size_t k = 0; k < n_order; k++)
        sim_plan_region(s, order[k], compacting, dest_cur);
    sim_junk_moves(s);
    sim_batch_moves(s);

    /* The heap after the GC: destinations get their generation and fill, condemned regions that
     * received nothing are freed. */
    for (size_t i = 0; i < s->n_reg; i++) {
        sim_region *g = &s->reg[i];
        if (!g->alive)
            continue;
        if (g->dest) {
            g->gen = g->gen_next;
            g->used = g->plan > g->used || g->condemned ? g->plan : g->used;
        } else if (g->condemned) {
            sim_region_free(s, i);
        }
    }
    sim_bounds(s, &s->ba, &s->n_ba, true);

    hm_gc_input in = {(uint32_t)s->gcs + 1, mask, s->bb, s->n_bb, s->ba, s->n_ba, s->mv, s->n_mv};
    /* The model reports through the batch forms at one GC in three, and with young deaths in
     * the classified words at another, the naive model never: the recordings must be equal
     * either way (the quiet one once its marks are resolved, young deaths by heap). Half of
     * the quiet GCs also write the young objects' fates into bytes, over a range of ids that
     * covers most of this cycle's (some ids before and after it, ids of old objects too): those
     * bytes must equal what the naive model's reports make of them, the other ids' reports
     * must be equal as before. */
    bool quiet = s->gcs % 3 == 2;
    bool fates = quiet && s->gcs / 3 % 2;
    uint64_t f_first = 0;
    size_t f_n = 0;
    if (fates) {
        uint64_t cycle = s->next_id + 1 - s->cycle_first_id;
        f_first = s->cycle_first_id + rnd(s, cycle / 3 + 3);
        f_first = f_first > 2 ? f_first - 2 : 1;
        uint64_t end = s->next_id + 3 - rnd(s, cycle / 3 + 3);
        f_n = end > f_first ? (size_t)(end - f_first) : 0;
        s->fm = realloc(s->fm, f_n + 1);
        s->fn = realloc(s->fn, f_n + 1);
        if (!s->fm || !s->fn)
            abort();
        memset(s->fm, 0xff, f_n);
        memset(s->fn, 0xff, f_n);
        s->fates_gcs++;
    }
    hm_gc_sink sm = fates          ? hm_rec_fates_sink(&s->rm, s->fm, f_first, f_n)
                    : quiet        ? hm_rec_quiet_sink(&s->rm)
                    : s->gcs % 3   ? hm_rec_batch_sink(&s->rm)
                                   : hm_rec_sink(&s->rm);
    hm_gc_sink sn = hm_rec_sink(&s->rn);
    hm_gc_stats stm, stn;
    hm_rec_clear(&s->rm);
    hm_rec_clear(&s->rn);
    CHECK_EQ(hm_naive_apply_gc(s->nv, &in, &sn, &stn), HM_OK);
    if (chance(s, 5)) {
        /* In quiet cycles nothing may count the model before the GC (that would sync it). */
        hm_objs before = {0};
        if (s->quiet)
            hm_objs_of_model_nosync(&before, s->m);
        else
            hm_objs_of_model(&before, s->m);
        hm_model_fail_after(s->m, (long)rnd(s, 12));
        int rc = hm_model_apply_gc(s->m, &in, &sm, &stm);
        hm_model_fail_after(s->m, -1);
        if (rc == HM_ERR_NOMEM) {
            s->nomem_gc++;
            CHECK_EQ(s->rm.n, 0);
            hm_objs_of_model_nosync(&s->om, s->m);
            CHECK(hm_objs_equal(&before, &s->om));
            CHECK_MODEL(s->m);
            if (chance(s, 50)) /* what the failed GC found, and a sync, agree */
                CHECK_EQ(hm_model_count(s->m), before.n);
            CHECK_EQ(hm_model_apply_gc(s->m, &in, &sm, &stm), HM_OK);
        } else {
            CHECK_EQ(rc, HM_OK);
        }
        hm_objs_release(&before);
    } else {
        CHECK_EQ(hm_model_apply_gc(s->m, &in, &sm, &stm), HM_OK);
    }
    CHECK(!s->rm.classified_late);
    CHECK_EQ(s->rm.empty_batches, 0);
    CHECK(s->rm.batches <= 2);
    if (fates) {
        /* The young objects with a byte are not reported classified (old objects in the range
         * are reported as usual: ids before this cycle's). */
        for (size_t i = 0; i < s->rm.n; i++)
            CHECK(s->rm.ev[i].id - f_first >= f_n ||
                  (s->rm.ev[i].kind != 'c' && s->rm.ev[i].kind != 'C'));
        hm_rec_to_fates(&s->rm, f_first, f_n, s->fm);
        hm_rec_to_fates(&s->rn, f_first, f_n, s->fn);
        for (size_t i = 0; i < f_n; i++)
            if (s->fm[i] != s->fn[i]) {
                fprintf(stderr, "young fate of id %llu: model 0x%02x, naive 0x%02x\n",
                        (unsigned long long)(f_first + i), s->fm[i], s->fn[i]);
                CHECK(!"young fates differ");
            }
    }
    if (quiet) {
        CHECK(s->rm.batches <= 1); /* never died_young */
        hm_rec_quiet_resolve(&s->rm);
        hm_rec_sort(&s->rn);
        hm_rec_young_deaths_as_heaps(&s->rm);
        hm_rec_young_deaths_as_heaps(&s->rn);
    }
    hm_rec_sort(&s->rm);
    hm_rec_sort(&s->rn);
    CHECK(hm_rec_ids_unique(&s->rm));
    if (!hm_rec_equal(&s->rm, &s->rn)) {
        for (size_t i = 0; i < s->rm.n || i < s->rn.n; i++) {
            const hm_event *a = i < s->rm.n ? &s->rm.ev[i] : NULL;
            const hm_event *b = i < s->rn.n ? &s->rn.ev[i] : NULL;
            if (a && b && a->kind == b->kind && a->id == b->id && a->a == b->a && a->b == b->b)
                continue;
            fprintf(stderr,
                    "first event difference at %zu: model %c %llu %u %u, naive %c %llu %u %u\n",
                    i, a ? a->kind : '-', a ? (unsigned long long)a->id : 0ull, a ? a->a : 0u,
                    a ? a->b : 0u, b ? b->kind : '-', b ? (unsigned long long)b->id : 0ull,
                    b ? b->a : 0u, b ? b->b : 0u);
            break;
        }
        CHECK(!"callbacks differ");
    }
    CHECK_EQ(stm.classified, stn.classified);
    CHECK_EQ(stm.condemned, stn.condemned);
    CHECK_EQ(stm.survived, stn.survived);
    CHECK_EQ(stm.died, stn.died);
    CHECK_EQ(stm.live_after, stn.live_after);
    CHECK_EQ(stm.anomalies, stn.anomalies);
    CHECK_EQ(stm.evicted, stn.evicted);
    s->anomalies += stm.anomalies;
    s->evicted += stm.evicted;
    s->survived += stm.survived;
    s->died += stm.died;
    sim_compare_state(s);
    free(s->bb);
    free(s->ba);
    s->n_recent = 0;
    s->gcs++;
    s->cycle_first_id = s->next_id + 1;
}

int main(void)
{
    uint64_t seed = 20240601;
    size_t n_gcs = 3000;
    const char *env = getenv("HM_TEST_SEED");
    if (env)
        seed = strtoull(env, NULL, 0);
    env = getenv("HM_TEST_GCS");
    if (env)
        n_gcs = (size_t)strtoull(env, NULL, 0);
    printf("test_hm_diff: seed %llu, %zu GCs (HM_TEST_SEED / HM_TEST_GCS override)\n",
           (unsigned long long)seed, n_gcs);
    fflush(stdout);

    sim s;
    memset(&s, 0, sizeof(s));
    s.rng = seed;
    s.cycle_first_id = 1;
    s.m = hm_model_new();
    s.nv = hm_naive_new();
    for (size_t c = 0; c < N_CTX; c++)
        s.ctx[c] = (size_t)-1;
    s.loh = s.poh = (size_t)-1;
    for (size_t g = 0; g < n_gcs; g++) {
        /* Bursts of very different sizes: empty cycles, and ones that fill several regions. */
        size_t count = chance(&s, 10) ? 0 : chance(&s, 4) ? 1500 : (size_t)rnd(&s, 150);
        s.quiet = chance(&s, 40);
        s.probe = chance(&s, 60);
        s.bursts = chance(&s, 40);
        s.quiet_cycles += s.quiet;
        s.burst_cycles += s.bursts;
        sim_allocate(&s, count);
        if (!s.quiet && chance(&s, 10))
            sim_compare_state(&s); /* also between GCs, young objects included */
        sim_gc(&s);
    }
    size_t by_gen[16] = {0};
    s.on.n = 0;
    CHECK(hm_naive_foreach(s.nv, hm_objs_push, &s.on));
    for (size_t i = 0; i < s.on.n; i++)
        by_gen[s.on.v[i].gen & 15]++;
    printf("test_hm_diff: objects by generation at the end: %zu %zu %zu %zu %zu %zu\n", by_gen[0],
           by_gen[1], by_gen[2], by_gen[3], by_gen[4], by_gen[5]);
    printf("test_hm_diff: ok: %zu GCs (%zu quiet, %zu in bursts, %zu with young fates), %zu "
           "adds, %zu lookups between adds, %zu survived, %zu died, %zu evicted, %zu anomalies, "
           "%zu+%zu injected allocation failures, %zu objects at the end\n",
           s.gcs, s.quiet_cycles, s.burst_cycles, s.fates_gcs, s.adds, s.lookups, s.survived,
           s.died,
           s.evicted, s.anomalies, s.nomem_gc, s.nomem_add, hm_model_count(s.m));
    hm_model_free(s.m);
    hm_naive_free(s.nv);
    hm_rec_release(&s.rm);
    hm_rec_release(&s.rn);
    hm_objs_release(&s.om);
    hm_objs_release(&s.on);
    free(s.mv);
    free(s.recent);
    free(s.fm);
    free(s.fn);
    return 0;
}
