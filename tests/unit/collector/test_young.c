/* test_young.c — the young interval against a naive version (fixed seed): counts per (type,
 * thread, heap) and survivor rows after a classified GC, unclassified counts for the tail or an
 * incomplete GC, ids without allocations (handle events), an allocation that cannot be placed
 * (counted at once, interval marked lost), arrays given back after a burst, and sampled mode's
 * followed objects (survivor rows, no counts). Random intervals check the same against the
 * naive version with ids added out of order (threads' blocks), objects the model evicted (no
 * heap), allocations counted at once mixed in, a type only ever in the LOH, classified or not. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector/young.h"
#include "tests/unit/common/check.h"

#define TYPES 20
#define TIDS 5
static const uint32_t tids[TIDS] = {101, 202, 303, 404, 70000};
static const uint32_t heaps[4] = {HL_GEN_0, HL_GEN_LOH, HL_GEN_POH, HL_GEN_NONGC};

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static uint32_t next_random(void) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng >> 11);
}

/* The naive truth of one object. */
typedef struct truth {
    uint64_t id, size;
    uint32_t type, tid, heap, gen; /* gen HL_GEN_NONE: died */
} truth;

static const hl_alloc_count *find(const id_vec *counts, uint32_t type, uint32_t tid,
                                  uint32_t heap) {
    const hl_alloc_count *c = counts->p;
    const hl_alloc_count *found = NULL;
    for (size_t i = 0; i < counts->n; i++)
        if (c[i].type_id == type && c[i].os_tid == tid && c[i].heap == heap) {
            CHECK(!found); /* a key appears once */
            found = &c[i];
        }
    return found;
}

/* Adds `n` allocations from id `first` on (every 7th id is a handle event's: no allocation),
 * decides each one's heap and fate, and returns them. */
static truth *fill(hl_young *y, uint64_t first, size_t n, size_t *n_out) {
    truth *t = calloc(n, sizeof *t);
    size_t k = 0;
    for (uint64_t id = first; id < first + n; id++) {
        if (id % 7 == 0)
            continue;
        truth *o = &t[k++];
        o->id = id;
        o->type = 1 + next_random() % TYPES;
        o->tid = tids[next_random() % TIDS];
        o->size = 24 + next_random() % 100000;
        hl_young_add(y, id, o->type, o->tid, o->size);
    }
    hl_young_fate_reset(y);
    for (size_t i = 0; i < k; i++) {
        truth *o = &t[i];
        o->heap = heaps[next_random() % 4];
        hl_young_set_heap(y, o->id, o->heap);
        o->gen = o->heap; /* not condemned: stays where it is */
        unsigned r = next_random() % 10;
        if (o->heap == HL_GEN_0 && r < 7)
            o->gen = HL_GEN_NONE; /* died in its first GC */
        else if (o->heap == HL_GEN_0)
            o->gen = r % 3; /* survived into gen 0, 1 or 2 */
        if (o->gen != o->heap)
            hl_young_set_gen(y, o->id, o->gen);
    }
    *n_out = k;
    return t;
}

static void check_counts(const id_vec *counts, const truth *t, size_t n, bool classified) {
    uint64_t total = 0;
    for (size_t i = 0; i < counts->n; i++)
        total += ((const hl_alloc_count *)counts->p)[i].count;
    CHECK_INT(total, n);
    for (uint32_t type = 1; type <= TYPES; type++)
        for (int ti = 0; ti < TIDS; ti++)
            for (int hi = 0; hi < 5; hi++) {
                uint32_t heap = hi < 4 ? heaps[hi] : HL_GEN_NONE;
                uint64_t count = 0, bytes = 0, survived = 0, survived_bytes = 0;
                for (size_t i = 0; i < n; i++) {
                    uint32_t h = classified ? t[i].heap : HL_GEN_NONE;
                    if (t[i].type != type || t[i].tid != tids[ti] || h != heap)
                        continue;
                    count++;
                    bytes += t[i].size;
                    if (classified && t[i].gen != HL_GEN_NONE) {
                        survived++;
                        survived_bytes += t[i].size;
                    }
                }
                const hl_alloc_count *e = find(counts, type, tids[ti], heap);
                if (!count) {
                    CHECK(!e);
                    continue;
                }
                CHECK(e != NULL);
                if (!e)
                    continue;
                CHECK_INT(e->count, count);
                CHECK_INT(e->bytes, bytes);
                CHECK_INT(e->survived, survived);
                CHECK_INT(e->survived_bytes, survived_bytes);
            }
}

static void check_survivors(const id_vec *survivors, const truth *t, size_t n) {
    const hl_survivor *s = survivors->p;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (t[i].gen == HL_GEN_NONE)
            continue;
        CHECK(k < survivors->n);
        if (k >= survivors->n)
            return;
        CHECK_INT(s[k].id, t[i].id); /* ascending ids, exactly the survivors */
        CHECK_INT(s[k].size, t[i].size);
        CHECK_INT(s[k].type_id, t[i].type);
        CHECK_INT(s[k].os_tid, t[i].tid);
        CHECK_INT(s[k].heap, t[i].heap);
        CHECK_INT(s[k].generation, t[i].gen);
        k++;
    }
    CHECK_INT(survivors->n, k);
}

/* hl_young_close into packed payloads with small limits (so that payloads are cut by objects
 * and by bytes), decoded back into rows; the payloads must be byte for byte what
 * hl_survivors_pack makes of those rows with the same limits. */
static hl_young_packed packed;

static uint64_t varint(const uint8_t **p, const uint8_t *end) {
    uint64_t v = 0;
    CHECK(hl_varint_get(p, end, &v));
    return v;
}

static void young_close(hl_young *y, bool classified, uint64_t end, id_vec *counts,
                        id_vec *rows) {
    if (!packed.max_objects)
        hl_young_packed_init(&packed, 777, 2048);
    hl_young_close(y, classified, end, counts, &packed);
    rows->n = 0;
    const hl_young_packed_record *rec = packed.records.p;
    size_t first_row = 0;
    uint8_t again[2048];
    for (size_t r = 0; r < packed.records.n; r++) {
        const uint8_t *p = (const uint8_t *)packed.bytes.p + rec[r].at, *stop = p + rec[r].n_bytes;
        uint64_t prev = 0;
        uint32_t tid = 0, heap = 0;
        CHECK(rec[r].count > 0 && rec[r].n_bytes <= packed.max_bytes);
        for (uint32_t k = 0; k < rec[r].count; k++) {
            uint64_t v = varint(&p, stop);
            CHECK(k > 0 || (v & 1)); /* a payload's first object carries its key */
            if (v & 1) {
                tid = (uint32_t)varint(&p, stop);
                heap = (uint32_t)varint(&p, stop);
            }
            hl_survivor row = {.id = prev + (v >> 4), .generation = (uint8_t)(v >> 1 & 7),
                               .os_tid = tid, .heap = (uint8_t)heap};
            row.type_id = (uint32_t)varint(&p, stop);
            row.size = varint(&p, stop);
            prev = row.id;
            CHECK(hl_vec_push(rows, &row));
        }
        CHECK(p == stop);
        size_t taken = 0;
        size_t n = hl_survivors_pack((const hl_survivor *)rows->p + first_row, rows->n - first_row,
                                     packed.max_objects, again, packed.max_bytes, &taken);
        CHECK_INT(taken, rec[r].count);
        CHECK(n == rec[r].n_bytes &&
              !memcmp(again, (const uint8_t *)packed.bytes.p + rec[r].at, n));
        first_row = rows->n;
    }
    CHECK_INT(packed.n, rows->n);
}

static int by_id(const void *a, const void *b) {
    uint64_t x = ((const truth *)a)->id, y = ((const truth *)b)->id;
    return (x > y) - (x < y);
}

/* Random intervals: ids added in shuffled blocks of 256 (as the drain reads one thread's chunk
 * after another), holes, a few ids below the interval (counted at once, unclassified), objects
 * the GC never classified (evicted: heap and generation none), heaps and fates at random, one
 * type only in the LOH (its small-object entry empties and must not be sent), and every fourth
 * interval unclassified. */
static void random_intervals(hl_young *y, id_vec *survivors) {
    for (int round = 0; round < 60; round++) {
        size_t n = round % 11 == 0 ? 0 : next_random() % 40000;
        uint64_t first = y->first;
        size_t blocks = (n + 255) / 256, k = 0;
        size_t *order = calloc(blocks + 1, sizeof *order);
        for (size_t b = 0; b < blocks; b++)
            order[b] = b;
        for (size_t b = blocks; b > 1; b--) {
            size_t j = next_random() % b, tmp = order[b - 1];
            order[b - 1] = order[j];
            order[j] = tmp;
        }
        truth *t = calloc(n + 8, sizeof *t);
        for (size_t b = 0; b < blocks; b++) {
            uint32_t tid = tids[next_random() % TIDS];
            for (uint64_t id = first + order[b] * 256; id < first + order[b] * 256 + 256 &&
                                                       id < first + n; id++) {
                if (next_random() % 9 == 0)
                    continue; /* a hole: a handle event's id */
                truth *o = &t[k++];
                o->id = id;
                o->type = 1 + next_random() % TYPES;
                o->tid = next_random() % 5 ? tid : tids[next_random() % TIDS];
                o->size = 24 + next_random() % 4000;
                if (o->type == TYPES)
                    o->size = 85000 + next_random() % 100000; /* only ever large */
                hl_young_add(y, id, o->type, o->tid, o->size);
            }
        }
        size_t lost = first > 1 ? next_random() % 3 : 0;
        for (size_t l = 0; l < lost; l++) {
            truth *o = &t[k++];
            o->id = 1 + next_random() % (first - 1);
            o->type = 1 + next_random() % TYPES;
            o->tid = tids[next_random() % TIDS];
            o->size = 100;
            o->heap = o->gen = HL_GEN_NONE;
            hl_young_add(y, o->id, o->type, o->tid, o->size);
        }
        CHECK(y->lost == (lost > 0));
        hl_young_fate_reset(y);
        for (size_t i = 0; i < k - lost; i++) {
            truth *o = &t[i];
            unsigned r = next_random() % 20;
            if (r == 0) { /* evicted: the model never classified it, reported it dead */
                o->heap = o->gen = HL_GEN_NONE;
                hl_young_set_gen(y, o->id, HL_GEN_NONE);
                continue;
            }
            o->heap = o->type == TYPES ? HL_GEN_LOH : heaps[next_random() % 4];
            hl_young_set_heap(y, o->id, o->heap);
            o->gen = o->heap;
            if (o->heap == HL_GEN_0 && r < 14)
                o->gen = HL_GEN_NONE;
            else if (o->heap == HL_GEN_0)
                o->gen = r % 3;
            else if (r < 6)
                o->gen = HL_GEN_NONE; /* a condemned LOH/POH object */
            if (o->gen != o->heap)
                hl_young_set_gen(y, o->id, o->gen);
        }
        bool classified = round % 4 != 3;
        id_vec counts;
        young_close(y, classified, first + n, &counts, survivors);
        check_counts(&counts, t, k, classified);
        for (size_t i = 0; i < counts.n; i++)
            CHECK(((const hl_alloc_count *)counts.p)[i].count > 0);
        if (classified) {
            qsort(t, k, sizeof *t, by_id);
            check_survivors(survivors, t, k);
        } else {
            CHECK_INT(survivors->n, 0);
        }
        CHECK_INT(y->first, first + n);
        CHECK(!y->lost);
        hl_vec_release(&counts);
        free(t);
        free(order);
    }
}

int main(void) {
    hl_young y;
    hl_young_init(&y, 1);
    id_vec counts, survivors = {.elem = sizeof(hl_survivor)};

    /* A classified GC: counts and survivors as the naive version says. */
    size_t n;
    truth *t = fill(&y, 1, 200000, &n);
    CHECK(!y.lost);
    young_close(&y, true, 200001, &counts, &survivors);
    check_counts(&counts, t, n, true);
    check_survivors(&survivors, t, n);
    CHECK_INT(y.first, 200001);
    CHECK_INT(y.n, 0);
    hl_vec_release(&counts);
    free(t);

    /* An incomplete GC (or the tail): the same allocations counted unclassified, no rows. An id
     * below the interval (it cannot be placed) is counted at once and marks the interval lost. */
    t = fill(&y, 200001, 50000, &n);
    hl_young_add(&y, 5, 1, tids[0], 48);
    CHECK(y.lost);
    t = realloc(t, (n + 1) * sizeof *t);
    t[n++] = (truth){.id = 5, .size = 48, .type = 1, .tid = tids[0], .gen = HL_GEN_NONE};
    young_close(&y, false, 250001, &counts, &survivors);
    check_counts(&counts, t, n, false);
    CHECK_INT(survivors.n, 0);
    CHECK(!y.lost);
    hl_vec_release(&counts);
    free(t);

    /* A burst grows the arrays beyond what is kept; a small interval after it gives them back. */
    t = fill(&y, 250001, 3u << 20, &n);
    CHECK(y.cap > HL_YOUNG_KEEP);
    young_close(&y, true, 250001 + (3u << 20), &counts, &survivors);
    check_survivors(&survivors, t, n);
    hl_vec_release(&counts);
    free(t);
    t = fill(&y, 250001 + (3u << 20), 1000, &n);
    young_close(&y, true, 251001 + (3u << 20), &counts, &survivors);
    check_counts(&counts, t, n, true);
    CHECK_INT(y.cap, 0);
    hl_vec_release(&counts);
    free(t);

    /* Sampled mode's followed objects (hl_young_add_followed: a sample's object) between
     * counted allocations: a survivor row when they survive, never a count. */
    {
        uint64_t first = y.first;
        hl_young_add(&y, first, 3, tids[1], 40);           /* counted, dies */
        hl_young_add_followed(&y, first + 1, 4, tids[2], 56); /* followed, survives into gen1 */
        hl_young_add_followed(&y, first + 2, 4, tids[0], 56); /* followed, dies */
        hl_young_add(&y, first + 3, 5, tids[2], 90000);    /* counted LOH, survives */
        hl_young_fate_reset(&y);
        for (uint64_t k = 0; k < 3; k++)
            hl_young_set_heap(&y, first + k, HL_GEN_0);
        hl_young_set_heap(&y, first + 3, HL_GEN_LOH);
        hl_young_set_gen(&y, first, HL_GEN_NONE);
        hl_young_set_gen(&y, first + 1, HL_GEN_1);
        hl_young_set_gen(&y, first + 2, HL_GEN_NONE);
        young_close(&y, true, first + 4, &counts, &survivors);
        truth counted[2] = {
            {.id = first, .size = 40, .type = 3, .tid = tids[1], .heap = HL_GEN_0,
             .gen = HL_GEN_NONE},
            {.id = first + 3, .size = 90000, .type = 5, .tid = tids[2], .heap = HL_GEN_LOH,
             .gen = HL_GEN_LOH}};
        check_counts(&counts, counted, 2, true); /* the followed ones are not counted */
        const hl_survivor *s = survivors.p;
        CHECK_INT(survivors.n, 2);
        if (survivors.n == 2) {
            CHECK_INT(s[0].id, first + 1);
            CHECK_INT(s[0].size, 56);
            CHECK_INT(s[0].type_id, 4);
            CHECK_INT(s[0].os_tid, tids[2]);
            CHECK_INT(s[0].heap, HL_GEN_0);
            CHECK_INT(s[0].generation, HL_GEN_1);
            CHECK_INT(s[1].id, first + 3);
        }
        hl_vec_release(&counts);
        /* Unclassified (an incomplete GC): no rows and no counts for the followed ones. */
        hl_young_add_followed(&y, y.first, 4, tids[2], 56);
        young_close(&y, false, y.first + 1, &counts, &survivors);
        CHECK_INT(counts.n, 0);
        CHECK_INT(survivors.n, 0);
        hl_vec_release(&counts);
    }

    /* Sizes around the 16-bit limit (a larger size is kept aside by id), and the thread of each
     * id from its run: runs of two threads interleaved in id order, added out of it (a thread
     * resuming where its run left off after another thread's ids, a thread whose ids follow
     * another's directly). */
    {
        uint64_t f = y.first;
        static const struct { uint64_t at; int tid; uint64_t size; } adds[] = {
            {0, 0, 65534}, {1, 0, 65535}, {2, 0, 65536}, {7, 1, 70000}, {8, 1, 24},
            {3, 0, 1u << 20}, {4, 0, 32}, {5, 1, 40}, {6, 0, 48}, {9, 2, 65535}};
        enum { N_ADDS = sizeof adds / sizeof adds[0] };
        truth tt[N_ADDS];
        for (size_t i = 0; i < N_ADDS; i++) {
            hl_young_add(&y, f + adds[i].at, 7, tids[adds[i].tid], adds[i].size);
            tt[i] = (truth){.id = f + adds[i].at, .size = adds[i].size, .type = 7,
                            .tid = tids[adds[i].tid], .heap = HL_GEN_0, .gen = HL_GEN_1};
        }
        hl_young_fate_reset(&y);
        for (size_t i = 0; i < N_ADDS; i++) {
            hl_young_set_heap(&y, tt[i].id, HL_GEN_0);
            hl_young_set_gen(&y, tt[i].id, HL_GEN_1);
        }
        young_close(&y, true, f + 10, &counts, &survivors);
        check_counts(&counts, tt, N_ADDS, true);
        qsort(tt, N_ADDS, sizeof *tt, by_id);
        check_survivors(&survivors, tt, N_ADDS);
        hl_vec_release(&counts);
    }

    random_intervals(&y, &survivors);

    /* An empty interval (no allocation between two GCs) closes to nothing. */
    young_close(&y, true, y.first, &counts, &survivors);
    CHECK_INT(counts.n, 0);
    CHECK_INT(survivors.n, 0);
    hl_vec_release(&counts);

    /* hl_vec_append: elements filled in place, across growths, mixed with hl_vec_push. */
    {
        id_vec v = {.elem = sizeof(hl_promotion)};
        for (uint32_t i = 0; i < 10000; i++) {
            hl_promotion pr = {.id = 7 * (uint64_t)i, .generation = i % 3};
            hl_promotion *slot = i % 5 ? hl_vec_append(&v) : NULL;
            if (slot)
                *slot = pr;
            else
                CHECK(hl_vec_push(&v, &pr));
        }
        CHECK_INT(v.n, 10000);
        CHECK(v.cap >= 10000);
        const hl_promotion *pr = v.p;
        for (uint32_t i = 0; i < v.n; i++)
            CHECK(pr[i].id == 7 * (uint64_t)i && pr[i].generation == i % 3);
        hl_vec_release(&v);
    }

    /* A vector's first block stays below the collector's mapping threshold (64 KiB, mem.c): a
     * GC's counts and samples, made afresh at every GC, cost no mmap and munmap each. */
    {
        id_vec counts_v = {.elem = sizeof(hl_alloc_count)};
        id_vec samples_v = {.elem = sizeof(hl_alloc_sample)};
        hl_alloc_count ac = {.type_id = 1};
        hl_alloc_sample as = {.type_id = 1};
        CHECK(hl_vec_push(&counts_v, &ac) && hl_vec_push(&samples_v, &as));
        CHECK(counts_v.cap * counts_v.elem <= 4096 && counts_v.cap > 0);
        CHECK(samples_v.cap * samples_v.elem <= 4096 && samples_v.cap > 0);
        id_vec big = {.elem = 8192}; /* larger than the first block: one element */
        CHECK(hl_vec_append(&big) && big.cap == 1);
        hl_vec_release(&counts_v);
        hl_vec_release(&samples_v);
        hl_vec_release(&big);
    }

    CHECK_INT(y.failures, 0);
    hl_vec_release(&survivors);
    hl_young_packed_release(&packed);
    hl_young_release(&y);
    if (failures)
        fprintf(stderr, "%d checks failed\n", failures);
    else
        printf("young: all checks passed\n");
    return failures != 0;
}
