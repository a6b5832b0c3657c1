/* test_hm_discover.c — hm_model_discover in the setting it was made for (sampled mode, attach):
 * the model never sees allocations; each GC is applied to what it knows, then the survivors are
 * "found" on the simulated heap and must come out known (same id as before) or new (a fresh id),
 * and the model must then hold exactly the simulated heap. Differential against the simulation's
 * own truth; seeds from HM_TEST_SEED, cycles from HM_TEST_GCS. Also: allocation failure at
 * every allocation leaves the model and the id counter unchanged. */
#include "heapmodel/hm_testing.h"
#include "hm_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define OBJ 32u
#define WIN (UINT64_C(1) << 22)

typedef struct obj {
    uint64_t addr, id;
    uint32_t gen;
} obj;

typedef struct heap {
    obj *o;
    size_t n, cap;
    uint64_t next_window; /* fresh 4 MiB windows, as regions */
} heap;

static uint64_t rng_state;
static uint64_t rnd(void)
{
    rng_state ^= rng_state << 13;
    rng_state ^= rng_state >> 7;
    rng_state ^= rng_state << 17;
    return rng_state;
}

static void push(heap *h, obj o)
{
    if (h->n == h->cap) {
        h->cap = h->cap ? h->cap * 2 : 1024;
        h->o = realloc(h->o, h->cap * sizeof *h->o);
        CHECK(h->o);
    }
    h->o[h->n++] = o;
}

/* The generation ranges of the simulated heap: one range per window in use. */
static size_t bounds_of(const heap *h, hm_gen_range *out, size_t cap)
{
    size_t n = 0;
    for (size_t i = 0; i < h->n; i++) {
        uint64_t w = h->o[i].addr & ~(WIN - 1);
        size_t k = 0;
        while (k < n && out[k].start != w)
            k++;
        if (k == n) {
            CHECK(n < cap);
            out[n++] = (hm_gen_range){.start = w, .length = WIN - 1, .generation = h->o[i].gen};
        }
    }
    return n;
}

typedef struct state_cmp {
    const obj *o;
    size_t n, at;
    bool ok;
} state_cmp;

static int obj_cmp(const void *a, const void *b)
{
    const obj *x = a, *y = b;
    return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static bool visit(void *ctx, uint64_t addr, uint64_t id, uint32_t gen)
{
    state_cmp *s = ctx;
    if (s->at >= s->n || s->o[s->at].addr != addr || s->o[s->at].id != id || s->o[s->at].gen != gen)
        s->ok = false;
    s->at++;
    return true;
}

/* The model holds exactly the objects of the heap that have ids. */
static void check_same(const hm_model *m, heap *h)
{
    qsort(h->o, h->n, sizeof *h->o, obj_cmp);
    size_t known = 0;
    obj *k = malloc((h->n + 1) * sizeof *k);
    for (size_t i = 0; i < h->n; i++)
        if (h->o[i].id)
            k[known++] = h->o[i];
    state_cmp s = {k, known, 0, true};
    CHECK(hm_model_foreach(m, visit, &s));
    CHECK(s.ok);
    CHECK_EQ(s.at, known);
    CHECK_EQ(hm_model_count(m), known);
    CHECK_MODEL(m);
    free(k);
}

/* One GC of the simulated heap: condemned generations < `upto`; survivors move, each condemned
 * generation's into a fresh window of the next generation (gen2 stays gen2). */
static void gc(hm_model *m, heap *h, uint32_t upto, uint64_t *next_id, bool shuffle)
{
    hm_gen_range before[256];
    size_t nb = bounds_of(h, before, 256);
    hm_move *mv = malloc((h->n + 1) * sizeof *mv);
    size_t nm = 0;
    uint64_t dest[3];
    for (int g = 0; g < 3; g++)
        dest[g] = (h->next_window++) * WIN;
    heap after = {0};
    after.next_window = h->next_window;
    for (size_t i = 0; i < h->n; i++) {
        obj o = h->o[i];
        if (o.gen >= upto) {
            push(&after, o);
            continue;
        }
        if (rnd() % 3 == 0)
            continue; /* dies */
        uint32_t to = o.gen < 2 ? o.gen + 1 : 2;
        obj moved = {dest[to], o.id, to};
        dest[to] += OBJ;
        if (nm && mv[nm - 1].old_start + mv[nm - 1].length == o.addr &&
            mv[nm - 1].new_start + mv[nm - 1].length == moved.addr)
            mv[nm - 1].length += OBJ; /* a plug of neighbours */
        else
            mv[nm++] = (hm_move){o.addr, moved.addr, OBJ};
        push(&after, moved);
    }
    hm_gen_range aft[256];
    size_t na = bounds_of(&after, aft, 256);
    hm_gc_input in = {.gc = 1, .condemned_mask = (1u << upto) - 1, .bounds_before = before,
                      .n_bounds_before = nb, .bounds_after = aft, .n_bounds_after = na,
                      .moves = mv, .n_moves = nm};
    CHECK_EQ(hm_model_apply_gc(m, &in, NULL, NULL), HM_OK);

    /* Found: every object in the moved ranges (known or not), a few old ones, a duplicate. */
    hm_found *f = malloc((after.n * 2 + 4) * sizeof *f);
    size_t nf = 0;
    for (size_t i = 0; i < after.n; i++) {
        bool moved_now = after.o[i].addr >= dest[0] - (dest[0] % WIN) || rnd() % 8 == 0;
        if (moved_now || after.o[i].id == 0)
            f[nf++] = (hm_found){.addr = after.o[i].addr, .tag = i, .generation = after.o[i].gen};
    }
    if (nf) {
        f[nf] = f[rnd() % nf]; /* a duplicate */
        nf++;
    }
    f[nf++] = (hm_found){.addr = 0, .tag = UINT64_MAX}; /* invalid */
    if (shuffle)
        for (size_t i = nf; i > 1; i--) {
            size_t j = rnd() % i;
            hm_found t = f[i - 1];
            f[i - 1] = f[j];
            f[j] = t;
        }

    /* Failing allocations leave everything as it was. */
    if (rnd() % 4 == 0) {
        uint64_t id_before = *next_id;
        hm_model_fail_after(m, (long)(rnd() % 3));
        size_t fresh = 0;
        int rc = hm_model_discover(m, f, nf, next_id, &fresh);
        hm_model_fail_after(m, -1);
        if (rc == HM_ERR_NOMEM) {
            CHECK_EQ(*next_id, id_before);
            heap copy = after;
            copy.o = malloc(after.cap * sizeof *copy.o);
            memcpy(copy.o, after.o, after.n * sizeof *copy.o);
            check_same(m, &copy); /* the model still holds only what it knew */
            free(copy.o);
        } else {
            CHECK_EQ(rc, HM_OK);
            goto resolved;
        }
    }
    size_t fresh = 0;
    CHECK_EQ(hm_model_discover(m, f, nf, next_id, &fresh), HM_OK);
resolved:
    for (size_t i = 0; i < nf; i++) {
        if (f[i].tag == UINT64_MAX) {
            CHECK_EQ(f[i].status, HM_FOUND_INVALID);
            continue;
        }
        obj *o = &after.o[f[i].tag];
        if (f[i].status == HM_FOUND_NEW) {
            CHECK_EQ(o->id, 0);
            CHECK(f[i].id >= HM_ID_MAX / 2);
            o->id = f[i].id;
        } else if (f[i].status == HM_FOUND_KNOWN) {
            CHECK(o->id != 0);
            CHECK_EQ(f[i].id, o->id);
            CHECK_EQ(f[i].generation, o->gen);
        } else {
            CHECK_EQ(f[i].status, HM_FOUND_DUPLICATE);
        }
    }
    for (size_t i = 0; i < nf; i++) /* duplicates name the id of their first */
        if (f[i].status == HM_FOUND_DUPLICATE)
            CHECK_EQ(f[i].id, after.o[f[i].tag].id);
    free(f);
    free(mv);
    free(h->o);
    *h = after;
    check_same(m, h);
}

int main(void)
{
    const char *seed_text = getenv("HM_TEST_SEED");
    const char *gcs_text = getenv("HM_TEST_GCS");
    uint64_t seed = seed_text ? strtoull(seed_text, NULL, 10) : 12345;
    int gcs = gcs_text ? atoi(gcs_text) : 300;
    rng_state = seed ? seed : 1;

    /* Preconditions: young objects in the model refuse a discovery. */
    hm_model *m = hm_model_new();
    uint64_t next = HM_ID_MAX / 2;
    CHECK_EQ(hm_model_add(m, 0x1000, 1), HM_OK);
    hm_found one = {.addr = 0x2000, .generation = 0};
    CHECK_EQ(hm_model_discover(m, &one, 1, &next, NULL), HM_ERR_INVALID);
    hm_model_free(m);

    m = hm_model_new();
    heap h = {.next_window = 16};
    for (int cycle = 0; cycle < gcs; cycle++) {
        /* The program allocates; the model hears nothing. */
        uint64_t w = (h.next_window++) * WIN;
        size_t n = 1 + rnd() % 2000;
        for (size_t i = 0; i < n; i++)
            push(&h, (obj){w + i * OBJ, 0, 0});
        uint32_t upto = cycle % 10 == 9 ? 3 : cycle % 3 == 2 ? 2 : 1;
        gc(m, &h, upto, &next, cycle % 5 == 4);
    }
    hm_model_free(m);
    free(h.o);
    printf("test_hm_discover: %d GCs, seed %llu: ok\n", gcs, (unsigned long long)seed);
    return 0;
}
