/* test_snapshot_policy.c — the --snapshot policies parsed, the triggers decided from GCs and a
 * clock the test drives (collector/snapshot_policy.h), and the memory limit read from a fake
 * /proc and /sys under a temporary directory. */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "collector/snapshot_policy.h"
#include "tests/unit/common/check.h"
#include "wire/hl_wire.h"

#define MS 1000000ull
#define S 1000000000ull
#define MIB (1ull << 20)

static void test_parse(void) {
    hl_snapshot_policy p;
    char why[320];
    CHECK(hl_snapshot_policy_parse(NULL, &p, why, sizeof why));
    CHECK(p.induced && !p.gen2 && !p.every_gcs && !hl_snapshot_policy_triggers(&p));
    CHECK_INT(p.min_interval_ns, 10 * S);
    CHECK(hl_snapshot_policy_parse("none", &p, why, sizeof why));
    CHECK(!p.induced && !p.gen2);
    /* every:N is every Nth GC; every:Ns every N seconds */
    CHECK(hl_snapshot_policy_parse("every:3", &p, why, sizeof why));
    CHECK_INT(p.every_gcs, 3);
    CHECK_INT(p.every_ns, 0);
    CHECK(!p.induced);
    CHECK(hl_snapshot_policy_parse("every:30s", &p, why, sizeof why));
    CHECK_INT(p.every_gcs, 0);
    CHECK_INT(p.every_ns, 30 * S);
    CHECK(hl_snapshot_policy_parse("induced,gen2-growth:50,heap:512M,limit:80,pause:200,every:60s,"
                                   "max-snapshots:5,min-interval:0",
                                   &p, why, sizeof why));
    CHECK(p.induced);
    CHECK_INT(p.gen2_growth_pct, 50);
    CHECK_INT(p.heap_bytes, 512 * MIB);
    CHECK_INT(p.limit_pct, 80);
    CHECK_INT(p.pause_ns, 200 * MS);
    CHECK_INT(p.every_ns, 60 * S);
    CHECK_INT(p.max_snapshots, 5);
    CHECK_INT(p.min_interval_ns, 0);
    CHECK(hl_snapshot_policy_parse("heap:2GiB", &p, why, sizeof why));
    CHECK_INT(p.heap_bytes, 2048 * MIB);
    CHECK(hl_snapshot_policy_parse("heap:1000", &p, why, sizeof why));
    CHECK_INT(p.heap_bytes, 1000);
    /* max-snapshots and min-interval alone keep the default */
    CHECK(hl_snapshot_policy_parse("max-snapshots:2", &p, why, sizeof why));
    CHECK(p.induced);
    CHECK_INT(p.max_snapshots, 2);
    static const char *const bad[] = {"every:0", "every:", "every:5x", "every:s", "heap:12T",
                                      "heap:M", "limit:0", "limit:101", "pause:-1", "gen2-growth",
                                      "bogus", "induced,", ",", "none,gen2", "min-interval:x",
                                      "heap:99999999999999999999"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        why[0] = 0;
        if (hl_snapshot_policy_parse(bad[i], &p, why, sizeof why)) {
            fprintf(stderr, "accepted '%s'\n", bad[i]);
            failures++;
        }
        CHECK(why[0] != 0);
        CHECK(p.induced && !hl_snapshot_policy_triggers(&p)); /* the default on failure */
    }
    CHECK(hl_snapshot_policy_parse("pause:x", &p, why, sizeof why) == false);
    CHECK(strstr(why, "'pause:x' is no snapshot policy: pause:MS takes 1 to 3,600,000") != NULL);
    /* A known key with a value out of its range is told the range, not the list of policies. */
    CHECK(hl_snapshot_policy_parse("gen2,limit:200", &p, why, sizeof why) == false);
    CHECK(strcmp(why, "'limit:200' is no snapshot policy: limit:PCT takes 1 to 100 (percent of "
                      "the memory limit)") == 0);
    CHECK(hl_snapshot_policy_parse("every:0", &p, why, sizeof why) == false);
    CHECK(strstr(why, "every:N takes 1 to 1,000,000 GCs") != NULL);
    CHECK(hl_snapshot_policy_parse("bogus:3", &p, why, sizeof why) == false);
    CHECK(strstr(why, "'bogus:3' is no snapshot policy: induced, gen2, every:N") != NULL);
}

static uint32_t gc_after(hl_trigger_state *s, const hl_snapshot_policy *p, uint32_t gc,
                         uint32_t generation, uint64_t gen2, uint64_t heap, uint64_t pause_ms,
                         uint32_t snapshot, uint64_t now, uint32_t taken, char *reason) {
    hl_trigger_gc g = {.gc = gc, .generation = generation, .snapshot = snapshot,
                       .gen2_bytes = gen2, .heap_bytes = heap, .pause_ns = pause_ms * MS};
    reason[0] = 0;
    return hl_triggers_after_gc(s, p, &g, now, taken, reason, HL_SNAPSHOT_REASON_MAX);
}

static void test_gen2_growth(void) {
    hl_snapshot_policy p;
    hl_trigger_state s = {0};
    char r[HL_SNAPSHOT_REASON_MAX];
    CHECK(hl_snapshot_policy_parse("gen2-growth:50,min-interval:0", &p, NULL, 0));
    /* gen0 GCs say nothing; the first full GC is the baseline */
    CHECK_INT(gc_after(&s, &p, 1, 0, 5 * MIB, 9 * MIB, 1, 0, 1 * S, 0, r), 0);
    CHECK_INT(gc_after(&s, &p, 2, 2, 10 * MIB, 20 * MIB, 1, 0, 2 * S, 0, r), 0);
    CHECK_INT(gc_after(&s, &p, 3, 2, 14 * MIB, 20 * MIB, 1, 0, 3 * S, 0, r), 0); /* +40% */
    CHECK_INT(gc_after(&s, &p, 4, 1, 30 * MIB, 40 * MIB, 1, 0, 4 * S, 0, r), 0); /* not full */
    CHECK_INT(gc_after(&s, &p, 5, 2, 15 * MIB, 40 * MIB, 1, 0, 5 * S, 0, r), HL_SNAPSHOT_GEN2_GROWTH);
    CHECK_STR(r, "gen2 15.0 MiB after GC 5, +50% since GC 2");
    /* the snapshot (GC 6) is the new baseline */
    CHECK_INT(gc_after(&s, &p, 6, 2, 16 * MIB, 40 * MIB, 300, 1, 6 * S, 1, r), 0);
    CHECK_INT(gc_after(&s, &p, 7, 2, 20 * MIB, 40 * MIB, 1, 0, 7 * S, 1, r), 0); /* +25% */
    CHECK_INT(gc_after(&s, &p, 8, 2, 32 * MIB, 40 * MIB, 1, 0, 8 * S, 1, r), HL_SNAPSHOT_GEN2_GROWTH);
    CHECK_STR(r, "gen2 32.0 MiB after GC 8, +100% since snapshot 1");
    /* a shrink never fires */
    CHECK_INT(gc_after(&s, &p, 9, 2, 1 * MIB, 40 * MIB, 1, 2, 9 * S, 2, r), 0);
    CHECK_INT(gc_after(&s, &p, 10, 2, 1 * MIB / 2, 40 * MIB, 1, 0, 10 * S, 2, r), 0);
}

static void test_heap_limit(void) {
    hl_snapshot_policy p;
    hl_trigger_state s = {0};
    char r[HL_SNAPSHOT_REASON_MAX];
    CHECK(hl_snapshot_policy_parse("heap:100M,min-interval:0", &p, NULL, 0));
    CHECK_INT(gc_after(&s, &p, 1, 0, 0, 99 * MIB, 1, 0, 1 * S, 0, r), 0);
    CHECK_INT(gc_after(&s, &p, 2, 0, 0, 100 * MIB, 1, 0, 2 * S, 0, r), HL_SNAPSHOT_HEAP);
    CHECK_STR(r, "heap 100.0 MiB after GC 2, at least 100.0 MiB");
    CHECK_INT(gc_after(&s, &p, 3, 0, 0, 150 * MIB, 1, 1, 3 * S, 1, r), 0); /* still above */
    CHECK_INT(gc_after(&s, &p, 4, 0, 0, 101 * MIB, 1, 0, 4 * S, 1, r), 0);
    CHECK_INT(gc_after(&s, &p, 5, 0, 0, 50 * MIB, 1, 0, 5 * S, 1, r), 0);  /* below: re-armed */
    CHECK_INT(gc_after(&s, &p, 6, 0, 0, 120 * MIB, 1, 0, 6 * S, 1, r), HL_SNAPSHOT_HEAP);
    /* --max-snapshots: no room, nothing fires; the re-arming still follows */
    CHECK(hl_snapshot_policy_parse("heap:100M,min-interval:0,max-snapshots:2", &p, NULL, 0));
    CHECK_INT(gc_after(&s, &p, 7, 0, 0, 50 * MIB, 1, 0, 7 * S, 2, r), 0);
    CHECK_INT(gc_after(&s, &p, 8, 0, 0, 120 * MIB, 1, 0, 8 * S, 2, r), 0);
    CHECK_INT(gc_after(&s, &p, 9, 0, 0, 120 * MIB, 1, 0, 9 * S, 1, r), HL_SNAPSHOT_HEAP);

    hl_trigger_state l = {.limit_bytes = 1024 * MIB};
    snprintf(l.limit_source, sizeof l.limit_source, "cgroup memory.max");
    CHECK(hl_snapshot_policy_parse("limit:80,min-interval:0", &p, NULL, 0));
    CHECK_INT(gc_after(&l, &p, 1, 0, 0, 819 * MIB, 1, 0, 1 * S, 0, r), 0);
    CHECK_INT(gc_after(&l, &p, 2, 0, 0, 820 * MIB, 1, 0, 2 * S, 0, r), HL_SNAPSHOT_LIMIT);
    CHECK_STR(r, "heap 820.0 MiB after GC 2, 80% of 1.0 GiB (cgroup memory.max)");
    CHECK_INT(gc_after(&l, &p, 3, 0, 0, 900 * MIB, 1, 0, 3 * S, 1, r), 0);
    /* no limit known: never */
    hl_trigger_state none = {0};
    CHECK_INT(gc_after(&none, &p, 1, 0, 0, 900 * MIB, 1, 0, 1 * S, 0, r), 0);
}

static void test_pause_interval(void) {
    hl_snapshot_policy p;
    hl_trigger_state s = {0};
    char r[HL_SNAPSHOT_REASON_MAX];
    CHECK(hl_snapshot_policy_parse("pause:100", &p, NULL, 0)); /* min-interval 10 s */
    CHECK_INT(gc_after(&s, &p, 1, 0, 0, 0, 100, 0, 1 * S, 0, r), 0); /* not longer */
    CHECK_INT(gc_after(&s, &p, 2, 2, 0, 0, 250, 0, 2 * S, 0, r), HL_SNAPSHOT_PAUSE);
    CHECK_STR(r, "GC 2 paused 250.0 ms, longer than 100 ms");
    /* the snapshot's own GC is not judged by its pause */
    CHECK_INT(gc_after(&s, &p, 3, 2, 0, 0, 900, 1, 3 * S, 1, r), 0);
    /* within the interval: nothing; a pause is its GC's own, so it is not kept for later */
    CHECK_INT(gc_after(&s, &p, 4, 0, 0, 0, 300, 0, 5 * S, 1, r), 0);
    CHECK_INT(gc_after(&s, &p, 5, 0, 0, 0, 1, 0, 13 * S, 1, r), 0);
    CHECK_INT(gc_after(&s, &p, 6, 0, 0, 0, 101, 0, 13 * S, 1, r), HL_SNAPSHOT_PAUSE);
    /* one pending (taken UINT32_MAX): nothing fires */
    CHECK(hl_snapshot_policy_parse("pause:100,min-interval:0", &p, NULL, 0));
    CHECK_INT(gc_after(&s, &p, 7, 0, 0, 0, 500, 0, 14 * S, UINT32_MAX, r), 0);
    CHECK_INT(gc_after(&s, &p, 8, 0, 0, 0, 500, 0, 14 * S, 2, r), HL_SNAPSHOT_PAUSE);

    /* a condition within the interval waits for a later GC that still meets it */
    CHECK(hl_snapshot_policy_parse("gen2-growth:10,pause:100", &p, NULL, 0));
    hl_trigger_state g = {0};
    CHECK_INT(gc_after(&g, &p, 1, 2, 10 * MIB, 0, 1, 0, 1 * S, 0, r), 0);
    CHECK_INT(gc_after(&g, &p, 2, 0, 10 * MIB, 0, 200, 0, 2 * S, 0, r), HL_SNAPSHOT_PAUSE);
    CHECK_INT(gc_after(&g, &p, 3, 2, 20 * MIB, 0, 1, 0, 3 * S, 1, r), 0);
    CHECK_INT(gc_after(&g, &p, 4, 2, 20 * MIB, 0, 1, 0, 12 * S, 1, r), HL_SNAPSHOT_GEN2_GROWTH);
    CHECK_STR(r, "gen2 20.0 MiB after GC 4, +100% since GC 1");
}

static void test_time(void) {
    hl_snapshot_policy p;
    hl_trigger_state s = {.start_ns = 100 * S};
    char r[HL_SNAPSHOT_REASON_MAX];
    CHECK(hl_snapshot_policy_parse("every:30s,max-snapshots:2", &p, NULL, 0));
    CHECK_INT(hl_triggers_tick(&s, &p, 129 * S, 0, 0, r, sizeof r), 0);
    CHECK_INT(hl_triggers_tick(&s, &p, 130 * S, 0, 0, r, sizeof r), HL_SNAPSHOT_TIME);
    CHECK_STR(r, "every 30 s: 30.0 s since the start");
    CHECK_INT(hl_triggers_tick(&s, &p, 131 * S, 1, 1, r, sizeof r), 0);
    CHECK_INT(hl_triggers_tick(&s, &p, 161 * S, 1, 1, r, sizeof r), HL_SNAPSHOT_TIME);
    CHECK_STR(r, "every 30 s: 31.0 s since the last, snapshot 1");
    CHECK_INT(hl_triggers_tick(&s, &p, 500 * S, 2, 2, r, sizeof r), 0); /* max-snapshots */
    /* the min interval is the conditions' only */
    CHECK(hl_snapshot_policy_parse("every:1s,min-interval:3600", &p, NULL, 0));
    CHECK_INT(hl_triggers_tick(&s, &p, 501 * S, 2, 2, r, sizeof r), HL_SNAPSHOT_TIME);
    CHECK_INT(hl_triggers_tick(&s, &p, 502 * S, 3, 3, r, sizeof r), HL_SNAPSHOT_TIME);
}

/* The policies at a GC's start: induced, gen2, every:N, within --max-snapshots, and none while
 * the snapshots held reach their bound, 4 of them and 64 MiB of walks (then said: `skipped`),
 * whatever the policy. */
static void test_at_gc(void) {
    hl_snapshot_policy p;
    char why[320];
    bool skipped = true;
    const uint64_t bound = HL_SNAPSHOT_WALKS_HELD_MAX_BYTES;
    const uint32_t held = HL_SNAPSHOTS_HELD_MAX;
    CHECK_INT(bound, 64 * MIB);
    CHECK_INT(held, 4);
    CHECK(hl_snapshot_policy_parse(NULL, &p, why, sizeof why));
    /* A large heap's checkpoints: one walk of 88 MB held (a million objects) is no bound. */
    hl_snapshot_gc_start g = {.gc = 7, .induced = true, .snapshots_held = 1,
                              .walks_held_bytes = 88000000};
    CHECK_INT(hl_snapshot_policy_at_gc(&p, &g, &skipped), HL_SNAPSHOT_INDUCED);
    CHECK(!skipped);
    g.snapshots_held = held - 1;
    CHECK_INT(hl_snapshot_policy_at_gc(&p, &g, &skipped), HL_SNAPSHOT_INDUCED);
    CHECK(!skipped);
    /* Nor are 4 small ones (a test's GC.Collect() in a row). */
    g = (hl_snapshot_gc_start){.gc = 7, .induced = true, .snapshots_held = held};
    CHECK_INT(hl_snapshot_policy_at_gc(&p, &g, &skipped), HL_SNAPSHOT_INDUCED);
    CHECK(!skipped);
    CHECK_INT(hl_snapshot_policy_at_gc(&p, &g, &skipped), HL_SNAPSHOT_INDUCED);
    CHECK(!skipped);
    g.walks_held_bytes = bound - 1; /* under the bound: the GC may take one more */
    CHECK_INT(hl_snapshot_policy_at_gc(&p, &g, &skipped), HL_SNAPSHOT_INDUCED);
    CHECK(!skipped);
    g.walks_held_bytes = bound;
    CHECK_INT(hl_snapshot_policy_at_gc(&p, &g, &skipped), 0);
    CHECK(skipped);
    g.walks_held_bytes = 5 * bound;
    CHECK_INT(hl_snapshot_policy_at_gc(&p, &g, &skipped), 0);
    CHECK(skipped);
    p.walks_unbounded = true; /* HEAPLENS_SNAPSHOT_WALKS_BOUND=off: taken, nothing skipped */
    CHECK_INT(hl_snapshot_policy_at_gc(&p, &g, &skipped), HL_SNAPSHOT_INDUCED);
    CHECK(!skipped);
    p.walks_unbounded = false;
    /* A GC the policy does not want is no skip. */
    g.induced = false;
    CHECK_INT(hl_snapshot_policy_at_gc(&p, &g, &skipped), 0);
    CHECK(!skipped);
    /* --max-snapshots reached: the user's cap, not the bound's */
    CHECK(hl_snapshot_policy_parse("induced,max-snapshots:2", &p, why, sizeof why));
    g = (hl_snapshot_gc_start){.gc = 8, .induced = true, .taken = 2, .snapshots_held = held,
                               .walks_held_bytes = bound};
    CHECK_INT(hl_snapshot_policy_at_gc(&p, &g, &skipped), 0);
    CHECK(!skipped);
    g.taken = 1;
    CHECK_INT(hl_snapshot_policy_at_gc(&p, &g, &skipped), 0);
    CHECK(skipped);
    g.walks_held_bytes = 0;
    CHECK_INT(hl_snapshot_policy_at_gc(&p, &g, &skipped), HL_SNAPSHOT_INDUCED);
    /* gen2 and every:N are bounded alike */
    CHECK(hl_snapshot_policy_parse("gen2,every:4", &p, why, sizeof why));
    g = (hl_snapshot_gc_start){.gc = 9, .generation = 2, .snapshots_held = held};
    CHECK_INT(hl_snapshot_policy_at_gc(&p, &g, &skipped), HL_SNAPSHOT_GEN2);
    g.generation = 1;
    CHECK_INT(hl_snapshot_policy_at_gc(&p, &g, &skipped), 0);
    CHECK(!skipped);
    g.gc = 12;
    CHECK_INT(hl_snapshot_policy_at_gc(&p, &g, &skipped), HL_SNAPSHOT_EVERY);
    g.walks_held_bytes = bound;
    CHECK_INT(hl_snapshot_policy_at_gc(&p, &g, &skipped), 0);
    CHECK(skipped);
    g = (hl_snapshot_gc_start){.gc = 13, .generation = 2, .snapshots_held = held,
                               .walks_held_bytes = bound};
    CHECK_INT(hl_snapshot_policy_at_gc(&p, &g, &skipped), 0);
    CHECK(skipped);
    /* none: nothing is due, nothing skipped */
    CHECK(hl_snapshot_policy_parse("none", &p, why, sizeof why));
    g = (hl_snapshot_gc_start){.gc = 4, .generation = 2, .induced = true, .walks_held_bytes = bound};
    CHECK_INT(hl_snapshot_policy_at_gc(&p, &g, &skipped), 0);
    CHECK(!skipped);
}

static void put(const char *root, const char *path, const char *text) {
    char full[512], dir[512];
    snprintf(full, sizeof full, "%s%s", root, path);
    snprintf(dir, sizeof dir, "%s", full);
    for (char *slash = strchr(dir + strlen(root) + 1, '/'); slash; slash = strchr(slash + 1, '/')) {
        *slash = 0;
        mkdir(dir, 0700);
        *slash = '/';
    }
    FILE *f = fopen(full, "w");
    CHECK(f != NULL);
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

static void test_memory_limit(void) {
    char root[] = "/tmp/heaplens-test-limit-XXXXXX";
    CHECK(mkdtemp(root) != NULL);
    char source[64], sub[600];
    /* cgroup v2: the smallest of the group and its parents */
    put(root, "/proc/self/cgroup", "0::/app/web\n");
    put(root, "/sys/fs/cgroup/app/web/memory.max", "max\n");
    put(root, "/sys/fs/cgroup/app/memory.max", "536870912\n");
    put(root, "/sys/fs/cgroup/memory.max", "1073741824\n");
    CHECK_INT(hl_memory_limit_read(root, source, sizeof source), 512 * MIB);
    CHECK_STR(source, "cgroup memory.max");
    /* v1, the memory controller among others; "no limit" is a page-rounded INT64_MAX */
    snprintf(sub, sizeof sub, "%s/v1", root);
    mkdir(sub, 0700);
    put(sub, "/proc/self/cgroup", "5:cpu,memory:/job\n0::/\n");
    put(sub, "/sys/fs/cgroup/memory/job/memory.limit_in_bytes", "268435456\n");
    put(sub, "/sys/fs/cgroup/memory/memory.limit_in_bytes", "9223372036854771712\n");
    CHECK_INT(hl_memory_limit_read(sub, source, sizeof source), 256 * MIB);
    CHECK_STR(source, "cgroup memory.limit_in_bytes");
    /* no limit anywhere: the machine's memory */
    snprintf(sub, sizeof sub, "%s/none", root);
    mkdir(sub, 0700);
    put(sub, "/proc/self/cgroup", "0::/\n");
    put(sub, "/sys/fs/cgroup/memory.max", "max\n");
    uint64_t phys = (uint64_t)sysconf(_SC_PHYS_PAGES) * (uint64_t)sysconf(_SC_PAGESIZE);
    CHECK_INT(hl_memory_limit_read(sub, source, sizeof source), phys);
    CHECK_STR(source, "physical memory");
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
    CHECK(system(cmd) == 0);

    CHECK_INT(hl_heap_hard_limit_parse("0x8000000"), 128 * MIB);
    CHECK_INT(hl_heap_hard_limit_parse("8000000"), 128 * MIB); /* hexadecimal, as the runtime */
    CHECK_INT(hl_heap_hard_limit_parse("12G"), 0);
    CHECK_INT(hl_heap_hard_limit_parse(""), 0);
    CHECK_INT(hl_heap_hard_limit_parse(NULL), 0);
}

int main(void) {
    test_parse();
    test_gen2_growth();
    test_heap_limit();
    test_pause_interval();
    test_time();
    test_at_gc();
    test_memory_limit();
    return failures != 0;
}
