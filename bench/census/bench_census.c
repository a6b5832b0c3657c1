/* bench_census.c — the census of gen0 (collector/census.h) alone, on a synthetic gen0: how
 * many nanoseconds one walk takes per object, the figure that bounds the pause it adds.
 *
 *   bench_census [MIB [WALKS [OLD_PERCENT [RANGES [TYPES [spread]]]]]]
 *
 * gen0 is MIB MiB (default 16: about one AllocBench gen0 on a 32 MiB L3) in RANGES ranges
 * (default 4: regions of 4 MiB; 1 is a segment's gen0) of objects in
 * AllocBench's mix (a 40-byte class, an int[] of 0-7 elements, a boxed long, a string of 4-11
 * chars) with a free object (a fixed allocation context's tail) every 8 KiB; with TYPES > 4,
 * objects of TYPES classes (24 to 80 bytes) in random order instead, as a large program's
 * many types interleave; their method tables side by side (56 bytes apart), or with `spread`
 * at random 8-aligned addresses over 64 MiB, as a real program's loader heaps scatter them
 * (some then share a home slot in the census's table of counts: csc.dll's did). OLD_PERCENT of
 * the objects (default 1) are remembered as the previous GC's gen0 survivors, so the walk
 * skips them. Each walk runs twice: "warm" right after the previous one (gen0 in the caches,
 * as after threads allocated it), and "cold" after 64 MiB of other memory was read. Prints
 * the median over WALKS (default 21) of each, in ms per walk and ns per object: wall time (the
 * pause the walk adds) and CPU time of every thread (the census's helper threads walk too:
 * HEAPLENS_CENSUS_THREADS=N sets how many threads may, 1 = the calling thread alone). With
 * HEAPLENS_CENSUS_FLOOR=1 every walk also reads each cache line of gen0 plainly, timed apart
 * (collector/census.h): the walk against what reading gen0 costs (then the times above hold
 * both). Nothing but this program runs the census here: no runtime, no profiler. */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "collector/census.h"
#include "collector/collector.h"
#include "collector/mem.h"

static uint64_t cpu_ns(void) { /* every thread's: the helpers walk too */
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Method tables as the runtime lays them out: flags (component size in the low 16 bits when
 * bit 31 is set) at +0, base size at +4. */
typedef struct fake_mt { uint32_t flags, base; uint64_t rest[6]; } fake_mt;
#define COMPONENT(n) (0x80000000u | (n))
static _Alignas(64) fake_mt mt_free = {COMPONENT(1), 24, {0}}, mt_message = {0, 40, {0}},
                            mt_ints = {COMPONENT(4), 24, {0}}, mt_long = {0, 24, {0}},
                            mt_string = {COMPONENT(2), 22, {0}};

static HRESULT fake_class(ICorProfilerInfo *i, ObjectID o, ClassID *cls) {
    (void)i;
    uint64_t mt = *(uint64_t *)(uintptr_t)o & ~(uint64_t)7;
    *cls = mt == (uint64_t)(uintptr_t)&mt_free ? 0 : mt;
    return S_OK;
}
static HRESULT fake_size(ICorProfilerInfo *i, ObjectID o, SIZE_T *size) {
    (void)i;
    *size = hl_census_object_size((void *)(uintptr_t)o);
    return S_OK;
}
static clr_method vtbl[INFO_GetObjectSize2 + INFO_GetClassFromObject + 1];
static clr_object info_obj = {.vtbl = vtbl};
#define INFO ((ICorProfilerInfo *)&info_obj)

static uint8_t *put(uint8_t *at, fake_mt *mt, uint32_t length) {
    uint64_t m = (uint64_t)(uintptr_t)mt;
    memcpy(at, &m, 8);
    memcpy(at + 8, &length, 4);
    return at + ((hl_census_object_size(at) + 7) & ~(uint64_t)7);
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    size_t mib = argc > 1 ? strtoul(argv[1], NULL, 10) : 16;
    int walks = argc > 2 ? atoi(argv[2]) : 21;
    int old_percent = argc > 3 ? atoi(argv[3]) : 1;
    size_t n_ranges = argc > 4 ? strtoul(argv[4], NULL, 10) : 4;
    size_t n_types = argc > 5 ? strtoul(argv[5], NULL, 10) : 4;
    bool spread = argc > 6 && strcmp(argv[6], "spread") == 0;
    if (!mib || walks < 1 || old_percent < 0 || old_percent > 100 || !n_ranges ||
        n_ranges > 64 || (mib << 20) / n_ranges < 4096 || n_types < 4 || n_types > 65536 ||
        (argc > 6 && !spread)) {
        fprintf(stderr,
                "usage: bench_census [MIB [WALKS [OLD_PERCENT [RANGES [TYPES [spread]]]]]]\n");
        return 1;
    }
    vtbl[INFO_GetClassFromObject] = (clr_method)fake_class;
    vtbl[INFO_GetObjectSize2] = (clr_method)fake_size;

    size_t size = mib << 20, evict_size = (size_t)64 << 20;
    uint8_t *heap = aligned_alloc(4096, size + 4096), *evict = aligned_alloc(4096, evict_size);
    if (!heap || !evict) {
        fprintf(stderr, "bench_census: out of memory\n");
        return 1;
    }
    memset(evict, 1, evict_size);
    /* TYPES classes' method tables, laid out as the loader heaps do (a few dozen bytes apart),
     * or `spread` over 64 MiB (a fake_mt in a 128-byte cell at most). */
    uint64_t rng = 88172645463325252ull;
    size_t spread_size = (size_t)64 << 20;
    uint8_t *area = aligned_alloc(64, spread ? spread_size
                                             : (n_types * sizeof(fake_mt) + 63) & ~(size_t)63);
    fake_mt **many = malloc(n_types * sizeof *many);
    if (!area || !many) {
        fprintf(stderr, "bench_census: out of memory\n");
        return 1;
    }
    if (spread)
        memset(area, 0, spread_size);
    for (size_t k = 0; k < n_types; k++) {
        if (!spread) {
            many[k] = (fake_mt *)(void *)(area + k * sizeof(fake_mt));
        } else {
            for (;;) { /* a free 128-byte cell, the fake_mt at an 8-aligned place in it */
                rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
                uint8_t *cell = area + (rng % (spread_size / 128)) * 128;
                if (!cell[127]) {
                    cell[127] = 1;
                    many[k] = (fake_mt *)(void *)(cell + 8 * (rng >> 40) % 72);
                    break;
                }
            }
        }
        *many[k] = (fake_mt){0, (uint32_t)(24 + 8 * (k % 8)), {0}};
    }
    /* RANGES ranges of size / RANGES bytes, a page apart: no object spans two. */
    hm_gen_range gen0[64];
    size_t per = (size / n_ranges) & ~(size_t)4095;
    uint64_t objects = 0;
    uint32_t i = 0;
    for (size_t r = 0; r < n_ranges; r++) {
        uint8_t *first = heap + r * per, *at = first, *end = first + per - 4096;
        uint8_t *next_free = at + 8192;
        for (; at < end; i++) {
            if (at >= next_free) { /* an allocation context's unused tail, made a free object */
                at = put(at, &mt_free, 16 + i % 64);
                next_free = at + 8192;
                continue;
            }
            if (n_types > 4) {
                rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
                at = put(at, many[rng % n_types], 0);
                objects++;
                continue;
            }
            switch (i % 4) {
            case 0: at = put(at, &mt_message, 0); break;
            case 1: at = put(at, &mt_ints, i % 8); break;
            case 2: at = put(at, &mt_long, 0); break;
            default: at = put(at, &mt_string, 4 + i % 8); break;
            }
            objects++;
        }
        gen0[r] = (hm_gen_range){.start = (uint64_t)(uintptr_t)first,
                                 .length = (uint64_t)(at - first), .generation = HM_GEN_0};
    }

    hl_census s;
    hl_census_init(&s, true);
    /* The previous GC's gen0: every (100 / OLD_PERCENT)th object, remembered as the census
     * does at GarbageCollectionFinished (sorted spans, neighbours joined). */
    if (old_percent) {
        s.old = hl_mem_malloc(objects * sizeof *s.old);
        size_t n = 0, k = 0;
        for (size_t r = 0; r < n_ranges; r++) {
            uint8_t *o = (uint8_t *)(uintptr_t)gen0[r].start, *end = o + gen0[r].length;
            size_t first = n;
            for (; o < end; k++) {
                uint64_t mt = *(uint64_t *)o, at = (uint64_t)(uintptr_t)o;
                uint64_t bytes = (hl_census_object_size(o) + 7) & ~(uint64_t)7;
                if (mt != (uint64_t)(uintptr_t)&mt_free && k % (100 / (size_t)old_percent) == 0) {
                    if (n > first && s.old[n - 1].end == at)
                        s.old[n - 1].end = at + bytes;
                    else
                        s.old[n++] = (hl_census_span){at, at + bytes};
                }
                o += bytes;
            }
        }
        s.n_old = n;
        s.cap_old = objects;
    }
    s.old_valid = true;

    /* [pass][0]: wall (the pause), [pass][1]: CPU of every thread */
    double *times[2][2];
    for (int k = 0; k < 4; k++)
        times[k / 2][k % 2] = malloc((size_t)walks * sizeof(double));
    uint64_t counted = 0, sink = 0;
    for (int w = 0; w < walks; w++) {
        for (int pass = 0; pass < 2; pass++) {
            if (pass == 1)
                for (size_t b = 0; b < evict_size; b += 64)
                    sink += evict[b];
            uint64_t t0 = hl_now_ns(), c0 = cpu_ns();
            hl_census_result r = hl_census_walk(&s, INFO, gen0, n_ranges);
            times[pass][1][w] = (double)(cpu_ns() - c0);
            times[pass][0][w] = (double)(hl_now_ns() - t0);
            if (!r.done) {
                fprintf(stderr, "bench_census: a walk was not exact\n");
                return 1;
            }
            counted = r.objects;
            hl_mem_free(r.counts);
            s.old_valid = true; /* as if the GC's end had been remembered */
        }
    }
    for (int k = 0; k < 4; k++)
        qsort(times[k / 2][k % 2], (size_t)walks, sizeof(double), cmp_double);
    printf("census walk of %zu MiB gen0 in %zu ranges, %llu objects of %zu types (%llu "
           "counted, %d%% remembered), %u thread(s), median of %d walks (%llu cut into pieces, "
           "%llu redone whole):\n",
           mib, n_ranges, (unsigned long long)objects, n_types, (unsigned long long)counted,
           old_percent, s.threads, walks, (unsigned long long)s.walks_split,
           (unsigned long long)s.walks_redone);
    for (int pass = 0; pass < 2; pass++) {
        double wall = times[pass][0][walks / 2], cpu = times[pass][1][walks / 2];
        printf("  %s: wall (the pause) %.3f ms, %.2f ns per object; CPU %.3f ms, %.2f ns\n",
               pass ? "cold (64 MiB read before)" : "warm (gen0 in the caches)", wall / 1e6,
               wall / (double)objects, cpu / 1e6, cpu / (double)objects);
    }
    if (s.floor && s.floor_walks) /* HEAPLENS_CENSUS_FLOOR=1: the times above hold its reads */
        printf("  HEAPLENS_CENSUS_FLOOR, mean of every walk: the walk %.3f ms of the GC "
               "thread's CPU and %.3f of its helpers', %.2f ns per object, %.3f ms wall; a "
               "plain read of every cache line of the same gen0 by one thread %.3f ms "
               "(%.1f GB/s)\n",
               s.floor_walk_cpu_ns / 1e6 / (double)s.floor_walks,
               atomic_load(&s.floor_helper_cpu_ns) / 1e6 / (double)s.floor_walks,
               (s.floor_walk_cpu_ns + atomic_load(&s.floor_helper_cpu_ns)) /
                   (double)s.floor_walks / (double)objects,
               s.floor_walk_wall_ns / 1e6 / (double)s.floor_walks,
               s.floor_read_cpu_ns / 1e6 / (double)s.floor_walks,
               (double)s.floor_bytes / (double)s.floor_read_cpu_ns);
    if (sink == 42)
        printf("\n");
    hl_census_release(&s);
    for (int k = 0; k < 4; k++)
        free(times[k / 2][k % 2]);
    free(heap);
    free(evict);
    free(many);
    free(area);
    return 0;
}
