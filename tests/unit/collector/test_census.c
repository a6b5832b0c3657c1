/* test_census.c — the census of gen0 (census.h) on a fake heap: objects counted per method table
 * with their sizes (arrays by length x component size), free objects skipped by their method
 * table even where a counted class has the same shape (byte[]), the previous GC's gen0 objects
 * skipped at the next walk while new objects in the gaps between them are counted, a size the
 * runtime reports differently turns the census off, a walk without the previous GC's end
 * known is not exact, the previous GC's objects remembered as spans (runs without a free
 * object) and a new object in the free gap between two spans counted, and many gen0 ranges (regions: more than the walk's lanes, walked side
 * by side) count the same as the objects one by one, remembered ones skipped in every range,
 * while a range that ends inside an object makes the walk not exact, and 1,500 types in one
 * walk (the table of counts grows) are each counted. Differential: random gen0s of types that
 * share home slots in the table of counts (found by the walk's second probe or further, in the
 * guards' slots and the last ones), on one thread, with helpers over cut pieces and with a
 * table that grows inside a walk, counted as stepping the objects one by one counts them; a
 * word of 0 where an object should be makes the walk not exact (no crash). With
 * HEAPLENS_CENSUS_FLOOR=1 a plain read of gen0 is timed beside each walk, counts unchanged.
 * Helper threads run on the process's CPUs but the walking thread's, after walks from two
 * CPUs, and the first walk of a run is no sample of the helpers' pause.
 * A fake ICorProfilerInfo answers GetClassFromObject (0 for a free object, as the runtime
 * does) and GetObjectSize2. */
#define _GNU_SOURCE /* sched_setaffinity, pthread_getaffinity_np */
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "collector/census.h"
#include "collector/collector.h"
#include "collector/mem.h"
#include "tests/unit/common/check.h"


typedef struct fake_mt { uint32_t flags, base; } fake_mt;
#define COMPONENT(n) (0x80000000u | (n))
static fake_mt mt_free = {COMPONENT(1), 24}, mt_bytes = {COMPONENT(1), 24},
               mt_node = {0, 32}, mt_chars = {COMPONENT(2), 22}, mt_odd = {0, 40};
static uint64_t odd_runtime_size = 40;

static HRESULT fake_class(ICorProfilerInfo *i, ObjectID o, ClassID *cls) {
    (void)i;
    uint64_t mt = *(uint64_t *)(uintptr_t)o & ~(uint64_t)7;
    *cls = mt == (uint64_t)(uintptr_t)&mt_free ? 0 : mt;
    return S_OK;
}
static HRESULT fake_size(ICorProfilerInfo *i, ObjectID o, SIZE_T *size) {
    (void)i;
    uint64_t mt = *(uint64_t *)(uintptr_t)o & ~(uint64_t)7;
    *size = mt == (uint64_t)(uintptr_t)&mt_odd ? odd_runtime_size
                                             : hl_census_object_size((void *)(uintptr_t)o);
    return S_OK;
}
static clr_method vtbl[INFO_GetObjectSize2 + INFO_GetClassFromObject + 1];
static clr_object info_obj = {.vtbl = vtbl};
#define INFO ((ICorProfilerInfo *)&info_obj)

static _Alignas(8) uint8_t heap[131072];
static fake_mt many[1500]; /* more types than the walk's first table holds */
static size_t used;

/* Places an object at the end of the fake gen0; returns its address. */
static uint64_t put(fake_mt *mt, uint32_t length) {
    uint8_t *o = heap + used;
    memset(o, 0, 24);
    uint64_t m = (uint64_t)(uintptr_t)mt | (mt == &mt_node ? 1 : 0); /* a GC bit: masked */
    memcpy(o, &m, 8);
    memcpy(o + 8, &length, 4);
    uint64_t size = hl_census_object_size(o);
    used += (size + 7) & ~(uint64_t)7;
    return (uint64_t)(uintptr_t)o;
}
static hm_gen_range gen0(size_t from) {
    return (hm_gen_range){.start = (uint64_t)(uintptr_t)heap + from, .length = used - from,
                          .generation = HM_GEN_0};
}
static const hl_census_count *find(const hl_census_result *r, fake_mt *mt) {
    for (size_t i = 0; i < r->n; i++)
        if (r->counts[i].class_id == (ClassID)(uintptr_t)mt)
            return &r->counts[i];
    return NULL;
}

/* A walk with the helpers whatever the last walks took (the census otherwise walks alone when
 * that paused less: its choice is timing, not what is tested here). */
static hl_census_result walk_helped(hl_census *m, const hm_gen_range *ranges, size_t n) {
    for (size_t i = 0; i < CENSUS_PAUSES; i++)
        m->pause_per_mib[0][i] = UINT64_MAX / 4;
    m->since_retry = 0;
    return hl_census_walk(m, INFO, ranges, n);
}

/* The differential test's method tables. 32 KiB apart (1,024 slots of 32 bytes) share a home
 * slot in the census's first table (census.c type_home), so six types per home fill the home,
 * the slot after it (the walk's second probe) and further slots (found by type_find): homes 0
 * and 1 (the guards' slots), 2 and 3 (a type displaced from one takes the next one's home),
 * 100, 500, 1022 and 1023 (the second probe of the last slot is the table's spare one). */
#define HOME_PERIOD ((size_t)1024 * 32)
#define N_COLLIDING 48
static _Alignas(32768) uint8_t mt_area[N_COLLIDING / 8 * HOME_PERIOD];
static fake_mt *colliding[N_COLLIDING];

static void colliding_init(void) {
    static const size_t homes[8] = {0, 1, 2, 3, 100, 500, 1022, 1023};
    for (size_t k = 0; k < N_COLLIDING; k++) {
        fake_mt *mt = (fake_mt *)(void *)(mt_area + (k / 8) * HOME_PERIOD + homes[k % 8] * 32);
        static const uint32_t components[4] = {0, 1, 2, 12};
        uint32_t component = components[k % 4];
        *mt = (fake_mt){component ? COMPONENT(component) : 0,
                        component ? 24 : 24 + 8 * (uint32_t)(k % 5)};
        colliding[k] = mt;
    }
}

static uint64_t rng_next(uint64_t *r) {
    *r ^= *r << 13, *r ^= *r >> 7, *r ^= *r << 17;
    return *r;
}

/* A random gen0 of `n` ranges in `heap`: objects of the `n_types` types of `types` (arrays of 0
 * to 40 elements), a free object every few dozen, and about one object in `old_every`
 * remembered as the previous GC's (sorted spans, neighbours joined) in `s`. */
static void random_gen0(hl_census *s, uint64_t *r, fake_mt **types, size_t n_types,
                        hm_gen_range *ranges, size_t n, size_t old_every) {
    used = 0;
    s->n_old = 0;
    size_t per = sizeof heap / n - 64;
    for (size_t g = 0; g < n; g++) {
        size_t from = used;
        while (used + 24 + 40 * 12 + 64 <= from + per) {
            uint64_t x = rng_next(r);
            fake_mt *mt = x % 29 == 0 ? &mt_free : types[(x >> 8) % n_types];
            uint64_t o = put(mt, (uint32_t)((x >> 32) % 41));
            if (mt != &mt_free && old_every && (x >> 48) % old_every == 0) {
                uint64_t end = (uint64_t)(uintptr_t)heap + used;
                if (s->n_old && s->old[s->n_old - 1].end == o) {
                    s->old[s->n_old - 1].end = end;
                } else {
                    CHECK(hl_mem_reserve((void **)&s->old, &s->cap_old, s->n_old + 1,
                                         sizeof *s->old, 64));
                    s->old[s->n_old++] = (hl_census_span){o, end};
                }
            }
        }
        ranges[g] = gen0(from);
        used += 64; /* a gap between ranges, never walked */
    }
    s->old_valid = true;
}

/* What a walk must find for `mt`: its objects in `ranges` stepped one by one, those in the
 * remembered spans of `s` left out. */
static void naive_count(const hl_census *s, const hm_gen_range *ranges, size_t n, uint64_t mt,
                        uint64_t *count, uint64_t *bytes) {
    *count = *bytes = 0;
    for (size_t g = 0; g < n; g++)
        for (uint64_t o = ranges[g].start; o < ranges[g].start + ranges[g].length;) {
            uint64_t raw = hl_census_object_size((void *)(uintptr_t)o);
            bool old = false;
            for (size_t i = 0; i < s->n_old && !old; i++)
                old = s->old[i].start <= o && o < s->old[i].end;
            if (!old && (*(uint64_t *)(uintptr_t)o & ~(uint64_t)7) == mt) {
                (*count)++;
                *bytes += raw;
            }
            o += (raw + 7) & ~(uint64_t)7;
        }
}

/* One walk of `ranges` against the naive count of every type of `types`; returns the walk's
 * objects. */
static uint64_t walk_differential(hl_census *s, fake_mt **types, size_t n_types,
                                  const hm_gen_range *ranges, size_t n, bool helped) {
    hl_census_result r = helped ? walk_helped(s, ranges, n) : hl_census_walk(s, INFO, ranges, n);
    CHECK(r.done);
    uint64_t want_objects = 0, found = 0, differences = 0;
    for (size_t k = 0; k < n_types; k++) {
        uint64_t count, bytes;
        naive_count(s, ranges, n, (uint64_t)(uintptr_t)types[k], &count, &bytes);
        want_objects += count;
        const hl_census_count *got = find(&r, types[k]);
        found += got != NULL;
        if (count ? !got || got->count != count || got->bytes != bytes : got != NULL)
            differences++;
    }
    CHECK_INT(differences, 0);
    CHECK_INT(r.objects, want_objects);
    CHECK_INT(r.n, found); /* nothing counted that is not one of `types` */
    hl_mem_free(r.counts);
    return r.objects;
}

/* How many types of the census's table sit in the slot after their home, and further. */
static void displaced(const hl_census_table *t, size_t *second, size_t *further) {
    *second = *further = 0;
    for (size_t k = 0; k < t->n; k++) {
        size_t slot = t->used[k], home = (size_t)(t->types[slot].mt / 32) & (t->cap - 1);
        size_t d = (slot - home) & (t->cap - 1);
        *second += d == 1;
        *further += d > 1;
    }
}

int main(void) {
    vtbl[INFO_GetClassFromObject] = (clr_method)fake_class;
    vtbl[INFO_GetObjectSize2] = (clr_method)fake_size;
    hl_census s;
    hl_census_init(&s, true);

    /* Interval 1: a free gap (as gen0 starts with segments), objects, a fixed allocation
     * context's tail (a free object), an LOH range that is not walked. */
    put(&mt_free, 0);
    uint64_t a = put(&mt_node, 0);
    put(&mt_bytes, 10); /* 34 bytes, 40 aligned */
    put(&mt_free, 40);
    uint64_t b = put(&mt_node, 0);
    put(&mt_chars, 5); /* 32 */
    hm_gen_range before1[2] = {gen0(0), {.start = 8, .length = 1u << 20, .generation = HM_GEN_LOH}};
    hl_census_result r = hl_census_walk(&s, INFO, before1, 2);
    CHECK(r.done);
    CHECK_INT(r.objects, 4);
    CHECK_INT(r.n, 3);
    CHECK(find(&r, &mt_node) && find(&r, &mt_node)->count == 2 && find(&r, &mt_node)->bytes == 64);
    CHECK(find(&r, &mt_bytes) && find(&r, &mt_bytes)->bytes == 34);
    CHECK(find(&r, &mt_chars) && find(&r, &mt_chars)->bytes == 32);
    CHECK(!find(&r, &mt_free));
    CHECK_INT(s.free_mt, (uint64_t)(uintptr_t)&mt_free);
    hl_mem_free(r.counts);

    /* GC 1 leaves a and b in gen0 (not promoted): remembered, each with the object after it.
     * Interval 2 allocates after them. */
    hm_gen_range after1 = gen0(0);
    hl_census_remember(&s, INFO, &after1, 1);
    CHECK_INT(s.n_old, 2); /* a and the byte[] after it; b and the chars after it */
    CHECK(s.n_old == 2 && s.old[0].start == a && s.old[0].end == a + 72 && s.old[1].start == b &&
          s.old[1].end == b + 64);
    size_t end1 = used;
    (void)a, (void)b;
    used = end1;
    uint64_t c = put(&mt_node, 0);
    put(&mt_bytes, 3);
    hm_gen_range before2 = gen0(0);
    r = hl_census_walk(&s, INFO, &before2, 1);
    CHECK(r.done);
    CHECK_INT(r.objects, 2);
    CHECK(find(&r, &mt_node) && find(&r, &mt_node)->count == 1);
    CHECK(find(&r, &mt_bytes) && find(&r, &mt_bytes)->count == 1);
    CHECK(!find(&r, &mt_chars));
    hl_mem_free(r.counts);
    (void)c;

    /* A new object in the free gap between two spans (an allocation context given the free
     * object's 64 bytes: a node and the context's tail, a free object of 32): counted, the
     * spans on either side not. */
    hm_gen_range after2 = gen0(0);
    hl_census_remember(&s, INFO, &after2, 1);
    CHECK_INT(s.n_old, 2); /* a and the byte[]; b to the end */
    size_t end2 = used;
    used = (size_t)(b - (uint64_t)(uintptr_t)heap) - 64;
    uint64_t gap = put(&mt_node, 0);
    put(&mt_free, 8);
    CHECK_INT(used, (size_t)(b - (uint64_t)(uintptr_t)heap));
    used = end2;
    r = hl_census_walk(&s, INFO, &after2, 1);
    CHECK(r.done);
    CHECK_INT(r.objects, 1);
    CHECK(find(&r, &mt_node) && find(&r, &mt_node)->count == 1);
    hl_mem_free(r.counts);
    (void)gap;

    /* GC 2's end could not be remembered: the next walk counts but is not exact. */
    hl_census_remember(&s, INFO, NULL, 0);
    r = hl_census_walk(&s, INFO, &before2, 1);
    CHECK(!r.done);
    CHECK(r.counts == NULL);
    hm_gen_range empty = {.start = (uint64_t)(uintptr_t)heap, .length = 0, .generation = HM_GEN_0};
    hl_census_remember(&s, INFO, &empty, 1);

    /* Seven gen0 ranges of different lengths (regions; more than the walk's lanes), with an
     * LOH range among them, some objects remembered from the previous GC in several ranges. */
    used = 0;
    hm_gen_range regions[8];
    size_t n_regions = 0, want_nodes = 0, want_chars = 0, want_bytes_total = 0;
    uint64_t remembered[4];
    size_t n_remembered = 0;
    for (size_t g = 0; g < 7; g++) {
        size_t from = used;
        for (size_t k = 0; k < 3 + 5 * g; k++) {
            uint64_t o = k % 3 == 2 ? put(&mt_chars, (uint32_t)k) : put(&mt_node, 0);
            if (k == 1 && g % 2 == 0 && n_remembered < 4) {
                remembered[n_remembered++] = o; /* a node, skipped */
                continue;
            }
            if (k % 3 == 2) {
                want_chars++;
                want_bytes_total += 22 + 2 * k;
            } else {
                want_nodes++;
                want_bytes_total += 32;
            }
        }
        put(&mt_free, (uint32_t)g); /* an allocation context's tail */
        regions[n_regions++] = gen0(from);
        used += 64; /* a gap between regions, never walked */
        if (g == 3)
            regions[n_regions++] = (hm_gen_range){.start = 8, .length = 1u << 20,
                                                  .generation = HM_GEN_LOH};
    }
    CHECK(used <= sizeof heap);
    s.old = hl_mem_realloc(s.old, n_remembered * sizeof *s.old);
    for (size_t i = 0; i < n_remembered; i++) /* ascending: put() goes up */
        s.old[i] = (hl_census_span){remembered[i], remembered[i] + 32};
    s.n_old = s.cap_old = n_remembered;
    s.old_valid = true;
    r = hl_census_walk(&s, INFO, regions, n_regions);
    CHECK(r.done && s.packed);
    CHECK_INT(n_remembered, 4);
    CHECK_INT(r.objects, want_nodes + want_chars);
    CHECK(find(&r, &mt_node) && find(&r, &mt_node)->count == want_nodes);
    CHECK(find(&r, &mt_chars) && find(&r, &mt_chars)->count == want_chars);
    CHECK_INT(find(&r, &mt_node)->bytes + find(&r, &mt_chars)->bytes, want_bytes_total);
    hl_mem_free(r.counts);
    /* The same walk counting objects and bytes in two words each, as a gen0 of 384 MiB or more
     * is counted. */
    s.pack_limit = 0;
    s.old_valid = true;
    r = hl_census_walk(&s, INFO, regions, n_regions);
    CHECK(r.done && !s.packed);
    CHECK_INT(r.objects, want_nodes + want_chars);
    CHECK(find(&r, &mt_node) && find(&r, &mt_node)->count == want_nodes);
    CHECK(find(&r, &mt_chars) && find(&r, &mt_chars)->count == want_chars);
    CHECK_INT(find(&r, &mt_node)->bytes + find(&r, &mt_chars)->bytes, want_bytes_total);
    hl_mem_free(r.counts);
    s.pack_limit = UINT64_MAX;

    /* The GC's end remembered over the same ranges: every object but the free ones, a span per
     * range (each ends with a free object). */
    hl_census_remember(&s, INFO, regions, n_regions);
    CHECK(s.old_valid);
    CHECK_INT(s.n_old, 7);
    for (size_t i = 1; i < s.n_old; i++)
        CHECK(s.old[i - 1].end < s.old[i].start);
    /* The runtime lists regions in no address order: remembered sorted all the same. */
    hm_gen_range reversed[8];
    for (size_t i = 0; i < n_regions; i++)
        reversed[i] = regions[n_regions - 1 - i];
    hl_census_remember(&s, INFO, reversed, n_regions);
    CHECK(s.old_valid);
    CHECK_INT(s.n_old, 7);
    for (size_t i = 1; i < s.n_old; i++)
        CHECK(s.old[i - 1].end < s.old[i].start);
    /* A range that ends inside an object (the fifth gen0 one): not exact. */
    regions[5].length -= 8;
    s.old_valid = true;
    r = hl_census_walk(&s, INFO, regions, n_regions);
    CHECK(!r.done);
    CHECK(r.counts == NULL);
    hl_census_remember(&s, INFO, &empty, 1);

    /* 1,500 types, each twice, the second time in reverse order: each counted twice. */
    used = 0;
    for (size_t k = 0; k < 1500; k++)
        many[k] = (fake_mt){0, 24 + 8 * (uint32_t)(k % 3)};
    for (size_t k = 0; k < 3000; k++)
        put(&many[k < 1500 ? k : 2999 - k], 0);
    CHECK(used <= sizeof heap);
    hm_gen_range wide = gen0(0);
    s.old_valid = true;
    r = hl_census_walk(&s, INFO, &wide, 1);
    CHECK(r.done);
    CHECK_INT(r.n, 1500);
    CHECK_INT(r.objects, 3000);
    size_t twice = 0;
    for (size_t k = 0; k < 1500; k++) {
        const hl_census_count *got = find(&r, &many[k]);
        twice += got && got->count == 2 && got->bytes == 2 * many[k].base;
    }
    CHECK_INT(twice, 1500);
    hl_mem_free(r.counts);
    hl_census_remember(&s, INFO, &empty, 1);

    /* Helper threads and cut ranges (census.c, "Splitting"): two helpers, pieces of 512 bytes
     * or more, on two gen0 ranges of mixed objects with free objects among them. */
    hl_census m;
    hl_census_init(&m, true);
    m.threads = 3;
    m.piece_min = 512;
    used = 0;
    uint64_t want_node = 0, want_chars_n = 0, want_bytes = 0;
    hm_gen_range two[2];
    for (size_t g = 0; g < 2; g++) {
        size_t from = used;
        for (size_t k = 0; k < 900; k++) {
            if (k % 40 == 39) {
                put(&mt_free, (uint32_t)(k % 7));
                continue;
            }
            if (k % 3 == 0) {
                put(&mt_chars, (uint32_t)(k % 13));
                want_chars_n++;
                want_bytes += 22 + 2 * (k % 13);
            } else {
                put(&mt_node, 0);
                want_node++;
                want_bytes += 32;
            }
        }
        two[g] = gen0(from);
        used += 64;
    }
    CHECK(used <= sizeof heap);
    /* The first walk knows no method table: helpers walk whole ranges, the method tables they
     * saw first are checked after them (the free one learned). The second cuts. */
    for (int walk = 0; walk < 2; walk++) {
        r = walk_helped(&m, two, 2);
        CHECK(r.done);
        CHECK_INT(r.objects, want_node + want_chars_n);
        CHECK(find(&r, &mt_node) && find(&r, &mt_node)->count == want_node);
        CHECK(find(&r, &mt_chars) && find(&r, &mt_chars)->count == want_chars_n);
        CHECK_INT(find(&r, &mt_node)->bytes + find(&r, &mt_chars)->bytes, want_bytes);
        CHECK(!find(&r, &mt_free));
        hl_mem_free(r.counts);
        m.old_valid = true;
        /* The first walk (no method table known, nothing cut) is no sample of the helpers'
         * pause; the second is. */
        CHECK(walk == 0 ? m.pause_per_mib[1][0] == 0 : m.pause_per_mib[1][0] != 0);
    }
    CHECK_INT(m.n_helpers, 2);
    CHECK_INT(m.free_mt, (uint64_t)(uintptr_t)&mt_free);
    /* Remembered in pieces (cut at free objects, four lanes), the spans end at every free
     * object and never join across pieces or ranges. Then every other object remembered from
     * the previous GC, a span each: skipped in every piece. */
    hl_census_remember(&m, INFO, two, 2);
    CHECK(m.old_valid);
    CHECK(m.n_pieces > 2);
    CHECK_INT(m.n_old, 2 * 23); /* 22 free objects in each range end its spans */
    for (size_t i = 1; i < m.n_old; i++)
        CHECK(m.old[i - 1].end < m.old[i].start);
    CHECK(m.n_old == 46 && m.old[0].start == two[0].start &&
          m.old[45].end == two[1].start + two[1].length);
    size_t kept = 0, nth = 0;
    m.n_old = 0;
    for (size_t g = 0; g < 2; g++)
        for (uint64_t o = two[g].start; o < two[g].start + two[g].length;) {
            uint64_t size = (hl_census_object_size((void *)(uintptr_t)o) + 7) & ~(uint64_t)7;
            uint64_t mt = *(uint64_t *)(uintptr_t)o & ~(uint64_t)7;
            bool is_free = mt == (uint64_t)(uintptr_t)&mt_free;
            if (!is_free && nth++ % 2 == 0) {
                CHECK(hl_mem_reserve((void **)&m.old, &m.cap_old, m.n_old + 1, sizeof *m.old, 64));
                m.old[m.n_old++] = (hl_census_span){o, o + size};
                kept++;
            }
            o += size;
        }
    r = walk_helped(&m, two, 2);
    CHECK(r.done);
    CHECK_INT(r.objects, want_node + want_chars_n - kept);
    hl_mem_free(r.counts);
    m.n_old = 0;
    m.old_valid = true;
    CHECK_INT(m.walks_split, 2);
    CHECK_INT(m.walks_helped, 3);
    /* The helpers run on every CPU of the process but the one the walking thread is on, after
     * each walk from another CPU (census.c helpers_place): never woken onto its CPU, and not
     * stuck on the single CPU of the thread that started them (server GC's are pinned). */
    cpu_set_t all;
    CHECK(sched_getaffinity(0, sizeof all, &all) == 0);
    for (int cpu = 0, tried = 0; cpu < CPU_SETSIZE && tried < 2; cpu++) {
        if (!CPU_ISSET(cpu, &all))
            continue;
        tried++;
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(cpu, &one);
        CHECK(sched_setaffinity(0, sizeof one, &one) == 0);
        r = walk_helped(&m, two, 2);
        CHECK(r.done && r.objects == want_node + want_chars_n);
        hl_mem_free(r.counts);
        m.old_valid = true;
        cpu_set_t want = all;
        if (CPU_COUNT(&all) > 1)
            CPU_CLR(cpu, &want);
        for (unsigned i = 0; i < m.n_helpers; i++) {
            cpu_set_t got;
            CHECK(pthread_getaffinity_np(hl_census_helper_thread(&m, i), sizeof got, &got) == 0);
            CHECK(CPU_EQUAL(&got, &want));
        }
    }
    CHECK(sched_setaffinity(0, sizeof all, &all) == 0);
    /* Helpers that paused more per MiB lately than walking alone: the walks go alone, every
     * 8th tries the helpers again. */
    for (size_t i = 0; i < CENSUS_PAUSES; i++) {
        m.pause_per_mib[0][i] = 1;
        m.pause_per_mib[1][i] = UINT64_MAX / 4;
    }
    m.since_retry = 0;
    uint64_t helped_before = m.walks_helped;
    for (int k = 0; k < 7; k++) {
        r = hl_census_walk(&m, INFO, two, 2);
        CHECK(r.done);
        hl_mem_free(r.counts);
        m.old_valid = true;
    }
    CHECK_INT(m.walks_helped, helped_before);
    r = hl_census_walk(&m, INFO, two, 2);
    CHECK(r.done && r.objects == want_node + want_chars_n);
    hl_mem_free(r.counts);
    m.old_valid = true;
    CHECK_INT(m.walks_helped, helped_before + 1);
    CHECK_INT(m.walks_redone, 0);
    CHECK(m.n_pieces > 4);

    /* A byte[] whose contents look like 40 objects in a row, every fourth a free one: a cut
     * inside it is a guess the lane before does not land on; the walk is done again whole,
     * exact. */
    size_t fake_at = used;
    uint64_t fake = put(&mt_bytes, 40 * 32);
    for (size_t k = 0; k < 40; k++) {
        uint64_t m_fake = (uint64_t)(uintptr_t)(k % 4 == 0 ? &mt_free : &mt_node);
        uint32_t len = 8; /* a free object of 24 + 8 bytes */
        memcpy((uint8_t *)(uintptr_t)fake + 16 + 32 * k, &m_fake, 8);
        if (k % 4 == 0)
            memcpy((uint8_t *)(uintptr_t)fake + 16 + 32 * k + 8, &len, 4);
    }
    for (size_t k = 0; k < 20; k++)
        put(&mt_node, 0);
    hm_gen_range tricky = gen0(fake_at);
    m.piece_min = 256;
    r = walk_helped(&m, &tricky, 1);
    CHECK(r.done);
    CHECK_INT(r.objects, 21);
    CHECK(find(&r, &mt_bytes) && find(&r, &mt_bytes)->count == 1);
    CHECK(find(&r, &mt_node) && find(&r, &mt_node)->count == 20);
    CHECK_INT(m.walks_redone, 1);
    hl_mem_free(r.counts);
    /* Remembered, cut the same way (the gen0 after a GC is cut into pieces for four lanes):
     * the wrong cut walked again uncut, one span. */
    hl_census_remember(&m, INFO, &tricky, 1);
    CHECK(m.old_valid);
    CHECK_INT(m.n_old, 1);
    CHECK(m.n_old == 1 && m.old[0].start == tricky.start &&
          m.old[0].end == tricky.start + tricky.length);
    m.n_old = 0;
    m.old_valid = true;

    /* A method table never seen before, past a cut: that piece may not read it (its start is
     * a guess); done again whole, counted, and checked against the runtime. */
    size_t fresh_at = used;
    for (size_t k = 0; k < 60; k++)
        if (k % 10 == 9)
            put(&mt_free, 8); /* cuts are made at free objects */
        else
            put(k == 48 ? &mt_odd : &mt_node, 0);
    hm_gen_range fresh = gen0(fresh_at);
    odd_runtime_size = 40;
    r = walk_helped(&m, &fresh, 1);
    CHECK(r.done);
    CHECK(find(&r, &mt_odd) && find(&r, &mt_odd)->count == 1);
    CHECK(find(&r, &mt_node) && find(&r, &mt_node)->count == 53);
    CHECK_INT(m.walks_redone, 2);
    hl_mem_free(r.counts);
    hl_census_release(&m);

    /* Several threads meet a class whose size the runtime reports differently: checked after
     * the walk (no thread asks the runtime while several walk), the census stops for the run. */
    hl_census_init(&m, true);
    m.threads = 2;
    m.piece_min = 256;
    used = 0;
    for (size_t k = 0; k < 200; k++)
        put(k == 150 ? &mt_odd : &mt_node, 0);
    hm_gen_range late = gen0(0);
    odd_runtime_size = 48;
    r = walk_helped(&m, &late, 1);
    CHECK(!r.done);
    CHECK(m.broken);
    CHECK_INT(m.n_helpers, 1);
    hl_census_release(&m);
    odd_runtime_size = 40;

    /* A class whose size the runtime reports differently: the census stops for the run. */
    used = 0;
    put(&mt_node, 0);
    put(&mt_odd, 0);
    odd_runtime_size = 48;
    hm_gen_range before3 = gen0(0);
    r = hl_census_walk(&s, INFO, &before3, 1);
    CHECK(!r.done);
    CHECK(s.broken);
    hl_census_remember(&s, INFO, &empty, 1);
    r = hl_census_walk(&s, INFO, &before3, 1);
    CHECK(!r.done);

    /* Differential: random gen0s (five ranges, free objects, a tenth remembered) of types that
     * share home slots, each walk's counts against the objects stepped one by one: on one
     * thread, with the table reused from walk to walk; with two helpers over cut pieces; then
     * with 600 more types, so that the table grows in the middle of a walk. */
    colliding_init();
    fake_mt *types[N_COLLIDING + 600 + 2];
    size_t n_types = 0;
    for (size_t k = 0; k < N_COLLIDING; k++)
        types[n_types++] = colliding[k];
    types[n_types++] = &mt_chars;
    types[n_types++] = &mt_bytes;
    uint64_t rng = 0x9e3779b97f4a7c15ull, walked = 0;
    hm_gen_range random_ranges[5];
    hl_census d;
    hl_census_init(&d, true);
    size_t second = 0, further = 0, second_helped = 0;
    for (int seed = 0; seed < 20; seed++) {
        random_gen0(&d, &rng, types, n_types, random_ranges, 5, 10);
        walked += walk_differential(&d, types, n_types, random_ranges, 5, false);
        size_t in_second, in_further;
        displaced(&d.tab, &in_second, &in_further);
        second += in_second;
        further += in_further;
    }
    CHECK(second > 0 && further > 0); /* both the inline second probe and type_find were used */
    CHECK(walked > 20 * 1000);
    hl_census_release(&d);
    hl_census_init(&d, true);
    d.threads = 3;
    d.piece_min = 512;
    for (int seed = 0; seed < 20; seed++) {
        random_gen0(&d, &rng, types, n_types, random_ranges, 5, 10);
        walk_differential(&d, types, n_types, random_ranges, 5, true);
        size_t in_second, in_further;
        displaced(&d.tab, &in_second, &in_further);
        second_helped += in_second;
    }
    CHECK(second_helped > 0);
    CHECK(d.walks_split > 0 && d.walks_helped > 0);
    hl_census_release(&d);
    for (size_t k = 0; k < 600; k++) {
        many[k] = (fake_mt){k % 7 ? 0 : COMPONENT(4), 24 + 8 * (uint32_t)(k % 3)};
        types[n_types++] = &many[k];
    }
    hl_census_init(&d, true);
    for (int seed = 0; seed < 4; seed++) {
        random_gen0(&d, &rng, types, n_types, random_ranges, 5, 10);
        walk_differential(&d, types, n_types, random_ranges, 5, false);
    }
    CHECK(d.tab.cap > 1024); /* grew during the first walk */
    /* A word of 0 where an object should start (a heap this code cannot parse): its home is
     * slot 0 and its second probe slot 1, both guards, never an empty slot taken for a method
     * table at address 0; the walk is not exact. */
    used = 0;
    put(&mt_chars, 3);
    memset(heap + used, 0, 64);
    used += 64;
    hm_gen_range zero = gen0(0);
    d.n_old = 0;
    d.old_valid = true;
    r = hl_census_walk(&d, INFO, &zero, 1);
    CHECK(!r.done);
    hl_census_release(&d);

    /* HEAPLENS_CENSUS_FLOOR=1 (benchmark): a plain read of the same gen0 ranges (not the LOH
     * one) is made and timed beside each walk, before it at the first walk and after it at the
     * second; the counts are the same as without it. Off unless set to 1. */
    CHECK(!s.floor);
    setenv("HEAPLENS_CENSUS_FLOOR", "1", 1);
    hl_census f;
    hl_census_init(&f, true);
    unsetenv("HEAPLENS_CENSUS_FLOOR");
    CHECK(f.floor);
    used = 0;
    uint64_t floor_nodes = 0, floor_chars = 0, floor_bytes = 0;
    hm_gen_range floor_ranges[3];
    for (size_t g = 0; g < 2; g++) {
        size_t from = used;
        for (uint32_t k = 0; k < 300; k++) {
            if (k % 3 == 0) {
                put(&mt_chars, k % 11);
                floor_chars++;
                floor_bytes += 22 + 2 * (k % 11);
            } else {
                put(&mt_node, 0);
                floor_nodes++;
                floor_bytes += 32;
            }
        }
        put(&mt_free, g);
        floor_ranges[g] = gen0(from);
        used += 64;
    }
    floor_ranges[2] = (hm_gen_range){.start = 8, .length = 1u << 20, .generation = HM_GEN_LOH};
    for (int walk = 0; walk < 2; walk++) {
        r = hl_census_walk(&f, INFO, floor_ranges, 3);
        CHECK(r.done);
        CHECK_INT(r.objects, floor_nodes + floor_chars);
        CHECK(find(&r, &mt_node) && find(&r, &mt_node)->count == floor_nodes);
        CHECK(find(&r, &mt_chars) && find(&r, &mt_chars)->count == floor_chars);
        CHECK_INT(find(&r, &mt_node)->bytes + find(&r, &mt_chars)->bytes, floor_bytes);
        hl_mem_free(r.counts);
        f.old_valid = true;
    }
    CHECK_INT(f.floor_walks, 2);
    CHECK_INT(f.floor_bytes, 2 * (floor_ranges[0].length + floor_ranges[1].length));
    /* ... with the objects the walks counted and their wall time, for the figures per GC; no
     * helper walked here (gen0 is far below a piece), so the helpers' CPU stays 0. */
    CHECK_INT(f.floor_objects, 2 * (floor_nodes + floor_chars));
    CHECK(f.floor_walk_wall_ns > 0);
    CHECK_INT(atomic_load(&f.floor_helper_cpu_ns), 0);
    hl_census_release(&f);

    hl_census_release(&s);
    printf("%s: %d failures\n", failures ? "FAIL" : "ok", failures);
    return failures != 0;
}
