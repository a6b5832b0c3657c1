/* test_gc_capture.c — the GC queue when the collector thread is HL_GC_QUEUE GCs behind: a GC
 * waits in GarbageCollectionStarted until the consumer applies one, instead of losing its input
 * (issue 17); with the consumer gone it is lost at once (counted). A fake ICorProfilerInfo
 * answers GetGenerationBounds with no ranges. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "collector/discovery.h"
#include "collector/collector.h"
#include "collector/mem.h"
#include "collector/fields.h"
#include "collector/gc_capture.h"
#include "collector/snapshot_policy.h"
#include "tests/unit/common/check.h"

/* Discovery is off here (q.discover false): never called. */
void hl_discover_walked(hl_gc_capture *c, ObjectID object, ClassID class_id, uint64_t size) {
    (void)c, (void)object, (void)class_id, (void)size;
}
void hl_discover_ranges(hl_gc_capture *c, ICorProfilerInfo *info) { (void)c, (void)info; }

static HRESULT fake_bounds(ICorProfilerInfo *i, ULONG capacity, ULONG *total,
                           COR_PRF_GC_GENERATION_RANGE *ranges) {
    (void)i, (void)capacity, (void)ranges;
    *total = 0;
    return S_OK;
}

static HRESULT fake_size(ICorProfilerInfo *i, ObjectID o, SIZE_T *size) {
    (void)i;
    *size = ((const uint64_t *)o)[-1]; /* the test's objects carry their size before them */
    return S_OK;
}

/* Every class of the test has a layout: none is System.String. */
static HRESULT fake_layout(ICorProfilerInfo *i, ClassID c, COR_FIELD_OFFSET *f, ULONG cap,
                           ULONG *n, ULONG *size) {
    (void)i, (void)c, (void)f, (void)cap;
    *n = 0;
    *size = 24;
    return S_OK;
}

static clr_method fake_vtbl[INFO_GetObjectSize2 + 1];
static clr_object fake_info = {.vtbl = fake_vtbl};

static uint32_t no_snapshot(void *ctx, uint32_t gc, uint32_t generation, uint32_t reason,
                            uint32_t snapshots_held, uint64_t walks_held_bytes, bool *skipped) {
    (void)ctx, (void)gc, (void)generation, (void)reason, (void)snapshots_held;
    (void)walks_held_bytes;
    *skipped = false;
    return 0;
}

static uint32_t induced(void *ctx, uint32_t gc, uint32_t generation, uint32_t reason,
                        uint32_t snapshots_held, uint64_t walks_held_bytes, bool *skipped) {
    (void)ctx, (void)gc, (void)generation, (void)reason, (void)snapshots_held;
    (void)walks_held_bytes;
    *skipped = false;
    return HL_SNAPSHOT_INDUCED;
}

/* The default policy (induced) as profiler.c decides it, with what the queue told it noted. */
static uint64_t told_walks_held, told_snapshots_held;
static uint32_t policy_induced(void *ctx, uint32_t gc, uint32_t generation, uint32_t reason,
                               uint32_t snapshots_held, uint64_t walks_held_bytes, bool *skipped) {
    hl_snapshot_policy policy;
    char why[128];
    (void)ctx;
    CHECK(hl_snapshot_policy_parse(NULL, &policy, why, sizeof why));
    told_walks_held = walks_held_bytes;
    told_snapshots_held = snapshots_held;
    hl_snapshot_gc_start g = {.gc = gc, .generation = generation,
                              .induced = reason == COR_PRF_GC_REASON_INDUCED,
                              .snapshots_held = snapshots_held,
                              .walks_held_bytes = walks_held_bytes};
    return hl_snapshot_policy_at_gc(&policy, &g, skipped);
}

static hl_gc_queue q;
static atomic_int started; /* GCs the producer has begun */

static void gc(void) {
    static const BOOL collected[3] = {1, 0, 0};
    atomic_fetch_add(&started, 1);
    hl_gc_on_started(&q, (ICorProfilerInfo *)&fake_info, collected, 3, 0, 1, 0, no_snapshot, NULL);
    hl_gc_on_finished(&q, (ICorProfilerInfo *)&fake_info);
}

/* The collector thread: applies (pops) one GC once the producer is inside the next one. */
static void *consumer(void *arg) {
    (void)arg;
    while (atomic_load(&started) <= HL_GC_QUEUE)
        ; /* no timing: the producer waits for this pop however long it takes */
    hl_gc_pop(&q);
    return NULL;
}

/* A snapshot's walk keeps the offset of each reference's slot (the field holding it): the runtime
 * reports an object's non-null references in slot order; a value twice is two slots, a reference
 * with no slot (a collectible type's LoaderAllocator) gets 0 and the scan goes on. */
static void test_slot_offsets(void) {
    static const BOOL collected[3] = {1, 1, 1};
    hl_gc_queue sq;
    hl_gc_queue_init(&sq);
    hl_gc_on_started(&sq, (ICorProfilerInfo *)&fake_info, collected, 3, 0, 1, 0, induced, NULL);
    /* [size] MT, A, 0, 7 (not a reference), B, A, C: 7 words = 56 bytes */
    uint64_t mem[8] = {56, 0x1000, 0xA0, 0, 7, 0xB0, 0xA0, 0xC0};
    ObjectID obj = (ObjectID)&mem[1];
    const ObjectID refs[] = {0xD0 /* no slot */, 0xA0, 0xB0, 0xA0, 0xC0};
    CHECK(hl_gc_on_object(&sq, (ICorProfilerInfo *)&fake_info, obj, 0x77, 5, refs));
    hl_gc_capture *c = sq.current;
    CHECK_INT(c->walk_objects, 1);
    CHECK_INT(c->walk_len, hl_walk_object_bytes(5));
    uint32_t offsets[5];
    memcpy(offsets, c->walk + sizeof(hl_walk_object) + sizeof refs, sizeof offsets);
    CHECK_INT(offsets[0], 0);
    CHECK_INT(offsets[1], 8);
    CHECK_INT(offsets[2], 32);
    CHECK_INT(offsets[3], 40);
    CHECK_INT(offsets[4], 48);
    hl_gc_on_finished(&sq, (ICorProfilerInfo *)&fake_info);
    hl_gc_queue_release(&sq);
}

/* The snapshots taken and not yet applied and their walks are counted from each GC's end until
 * it is popped, told to the next GC's policy, and bound it: an induced GC takes no snapshot
 * while 4 of them hold HL_SNAPSHOT_WALKS_HELD_MAX_BYTES (the collector behind a GC.Collect loop
 * held one walk per GC, 7.4 GiB on examples/GcLoop), counted, and takes one again once they are
 * applied. */
static void test_walks_held_bound(void) {
    static const BOOL collected[3] = {1, 0, 0};
    hl_gc_queue sq;
    hl_gc_queue_init(&sq);
    static uint64_t mem[5] = {32, 0x1000, 0, 0, 0};
    ObjectID obj = (ObjectID)&mem[1];
    size_t gcs = 0;
    /* Induced GCs, none applied: each takes a snapshot of one object whose walk is padded to
     * 16 MiB, until the walks held reach the bound. */
    for (;;) {
        hl_gc_on_started(&sq, (ICorProfilerInfo *)&fake_info, collected, 3,
                         COR_PRF_GC_REASON_INDUCED, 1, 0, policy_induced, NULL);
        hl_gc_capture *c = sq.current;
        CHECK_INT(told_walks_held, gcs * (16u << 20));
        CHECK_INT(told_snapshots_held, gcs);
        gcs++;
        if (!c->snapshot_trigger)
            break;
        CHECK(hl_gc_on_object(&sq, (ICorProfilerInfo *)&fake_info, obj, 0x77, 0, NULL));
        CHECK(hl_mem_reserve((void **)&c->walk, &c->walk_cap, 16u << 20, 1, 16u << 20));
        CHECK_INT(c->walk_cap, 16u << 20);
        hl_gc_on_finished(&sq, (ICorProfilerInfo *)&fake_info);
        CHECK(gcs <= 8);
    }
    hl_gc_capture *skipped = sq.current;
    CHECK_INT(gcs, HL_SNAPSHOT_WALKS_HELD_MAX_BYTES / (16u << 20) + 1);
    CHECK_INT(gcs, HL_SNAPSHOTS_HELD_MAX + 1);
    CHECK_INT(atomic_load(&sq.snapshots_held), HL_SNAPSHOTS_HELD_MAX);
    CHECK_INT(atomic_load(&sq.snapshots_held_peak), HL_SNAPSHOTS_HELD_MAX);
    CHECK(skipped->snapshot_skipped);
    CHECK_INT(atomic_load(&sq.snapshots_skipped), 1);
    CHECK_INT(atomic_load(&sq.walks_held_bytes), HL_SNAPSHOT_WALKS_HELD_MAX_BYTES);
    CHECK_INT(atomic_load(&sq.walks_held_peak_bytes), HL_SNAPSHOT_WALKS_HELD_MAX_BYTES);
    CHECK(atomic_load(&sq.held_peak_bytes) > HL_SNAPSHOT_WALKS_HELD_MAX_BYTES);
    hl_gc_on_finished(&sq, (ICorProfilerInfo *)&fake_info);
    /* The collector applies the oldest: the walks held drop under the bound, and the next
     * induced GC takes its snapshot again. */
    hl_gc_pop(&sq);
    CHECK_INT(atomic_load(&sq.walks_held_bytes), HL_SNAPSHOT_WALKS_HELD_MAX_BYTES - (16u << 20));
    CHECK_INT(atomic_load(&sq.snapshots_held), HL_SNAPSHOTS_HELD_MAX - 1);
    hl_gc_on_started(&sq, (ICorProfilerInfo *)&fake_info, collected, 3, COR_PRF_GC_REASON_INDUCED,
                     1, 0, policy_induced, NULL);
    CHECK_INT(sq.current->snapshot_trigger, HL_SNAPSHOT_INDUCED);
    CHECK(!sq.current->snapshot_skipped);
    hl_gc_on_finished(&sq, (ICorProfilerInfo *)&fake_info);
    while (hl_gc_peek(&sq))
        hl_gc_pop(&sq);
    CHECK_INT(atomic_load(&sq.walks_held_bytes), 0);
    CHECK_INT(atomic_load(&sq.snapshots_held), 0);
    CHECK_INT(atomic_load(&sq.held_bytes), 0);
    CHECK_INT(atomic_load(&sq.snapshots_skipped), 1);
    hl_gc_queue_release(&sq);
}

/* A slot's field: the last field starting at or before it (a slot inside a struct field is that
 * field's); an array's slot is its element index; offset 0 (no slot) is unknown. */
static void test_layout_field(void) {
    uint32_t offsets[] = {8, 16, 32};
    hl_layout fields = {.kind = HL_LAYOUT_FIELDS, .n = 3, .offsets = offsets};
    CHECK_INT(hl_layout_field(&fields, 8), 1);
    CHECK_INT(hl_layout_field(&fields, 24), 2);
    CHECK_INT(hl_layout_field(&fields, 32), 3);
    CHECK_INT(hl_layout_field(&fields, 0), HL_FIELD_UNKNOWN);
    uint32_t late[] = {16};
    hl_layout one = {.kind = HL_LAYOUT_FIELDS, .n = 1, .offsets = late};
    CHECK_INT(hl_layout_field(&one, 8), HL_FIELD_UNKNOWN);
    hl_layout array = {.kind = HL_LAYOUT_ARRAY, .data_offset = 16, .elem_size = 8};
    CHECK_INT(hl_layout_field(&array, 16), 0);
    CHECK_INT(hl_layout_field(&array, 40), 3);
    hl_layout structs = {.kind = HL_LAYOUT_ARRAY, .data_offset = 16, .elem_size = 24};
    CHECK_INT(hl_layout_field(&structs, 16 + 24 * 5 + 8), 5);
    hl_layout unknown = {.kind = HL_LAYOUT_UNKNOWN};
    CHECK_INT(hl_layout_field(&unknown, 8), HL_FIELD_UNKNOWN);
}

/* A GC's ranges buffer, once the GC is applied, serves the next GC (no fresh pages in the
 * pause): the larger one is kept, the ranges are each GC's own, the release frees it. */
static void test_ranges_reuse(void) {
    static const BOOL collected[3] = {1, 0, 0};
    hl_gc_queue rq;
    hl_gc_queue_init(&rq);
    ObjectID old[5000], to[5000];
    SIZE_T len[5000];
    for (int i = 0; i < 5000; i++) {
        old[i] = 0x10000 + 64 * (ObjectID)i;
        to[i] = old[i] - 0x1000;
        len[i] = 24;
    }
    hm_move *first = NULL;
    for (int g = 0; g < 3; g++) {
        hl_gc_on_started(&rq, (ICorProfilerInfo *)&fake_info, collected, 3, 0, 1, 0, no_snapshot,
                         NULL);
        hl_gc_capture *c = rq.current;
        CHECK_INT(c->n_moves, 0);
        if (g > 0)
            CHECK(c->moves == first && c->cap_moves >= 5000); /* the buffer GC 1 grew */
        hl_gc_on_ranges(&rq, g == 1 ? 10 : 5000, old, to, len); /* GC 2 needs less */
        CHECK_INT(c->n_moves, g == 1 ? 10 : 5000);
        CHECK(c->moves[0].old_start == old[0] && c->moves[0].new_start == to[0]);
        if (g == 0)
            first = c->moves;
        hl_gc_on_finished(&rq, (ICorProfilerInfo *)&fake_info);
        hl_gc_pop(&rq);
        CHECK(rq.spare_moves == first);
    }
    hl_gc_queue_release(&rq);
    CHECK(rq.spare_moves == NULL && rq.spare_cap_moves == 0);
}

/* Two GCs in flight (the next starts before the collector applied the one before, as in
 * sampled mode at a GC every few ms): each takes a spare buffer, and once both are applied both
 * buffers are kept, so that the next two GCs map nothing in their pauses and nothing is unmapped
 * (with a single spare the second buffer was made afresh and unmapped at every such GC). */
static void test_ranges_reuse_in_flight(void) {
    static const BOOL collected[3] = {1, 0, 0};
    hl_gc_queue rq;
    hl_gc_queue_init(&rq);
    ObjectID old[400];
    SIZE_T len[400];
    for (int i = 0; i < 400; i++) {
        old[i] = 0x10000 + 64 * (ObjectID)i;
        len[i] = 24;
    }
    hm_move *seen[2] = {NULL, NULL};
    for (int round = 0; round < 3; round++) {
        hl_gc_capture *c[2];
        for (int k = 0; k < 2; k++) {
            hl_gc_on_started(&rq, (ICorProfilerInfo *)&fake_info, collected, 3, 0, 1, 0,
                             no_snapshot, NULL);
            c[k] = rq.current;
            if (round > 0)
                CHECK(c[k]->moves != NULL); /* a spare, not a fresh buffer */
            hl_gc_on_ranges(&rq, 400, old, NULL, len);
            CHECK_INT(c[k]->n_moves, 400);
            hl_gc_on_finished(&rq, (ICorProfilerInfo *)&fake_info);
        }
        hm_move *now[2] = {c[0]->moves, c[1]->moves};
        CHECK(now[0] != now[1]);
        if (round > 0)
            CHECK((now[0] == seen[0] && now[1] == seen[1]) ||
                  (now[0] == seen[1] && now[1] == seen[0]));
        seen[0] = now[0];
        seen[1] = now[1];
        hl_gc_pop(&rq);
        hl_gc_pop(&rq);
        CHECK(rq.spare_moves != NULL && rq.spare2_moves != NULL);
    }
    hl_gc_queue_release(&rq);
    CHECK(rq.spare_moves == NULL && rq.spare2_moves == NULL);
}

/* Sampled mode's followed objects at a GC every few ms: more GCs in flight than spares (the
 * collector applies them every 10 ms), so a GC's pause makes a moves buffer afresh for its few
 * moves. It comes from the heap, not a mapping of its own (96 KiB before: an mmap in the pause,
 * an munmap and a TLB shootdown on the collector thread once applied), and grows as needed. */
static void test_follow_moves_small(void) {
    static const BOOL collected[3] = {1, 0, 0};
    hl_gc_queue rq;
    hl_gc_queue_init(&rq);
    hl_gc_capture *c[4];
    for (int k = 0; k < 4; k++) {
        hl_gc_on_started(&rq, (ICorProfilerInfo *)&fake_info, collected, 3, 0, 1, 0, no_snapshot,
                         NULL);
        c[k] = rq.current;
        size_t n = k == 3 ? 1000 : 25; /* the last one has many */
        for (size_t i = 0; i < n; i++) {
            hm_move m = {0x10000 + 64 * i, 0x20000 + 64 * i, 1};
            hl_gc_add_move(c[k], &m);
        }
        CHECK_INT(c[k]->n_moves, n);
        CHECK(c[k]->moves[n - 1].new_start == 0x20000 + 64 * (n - 1));
        CHECK(!c[k]->incomplete);
        if (k < 3)
            CHECK(c[k]->cap_moves * sizeof(hm_move) < HL_MEM_LARGE);
        hl_gc_on_finished(&rq, (ICorProfilerInfo *)&fake_info);
    }
    for (int k = 0; k < 4; k++)
        hl_gc_pop(&rq);
    hl_gc_queue_release(&rq);
}

/* An idle session's collector thread dozes (sleeps past its idle period) only with no GC
 * queued, and the resume of a GC that ends meanwhile asks for a wake, so that it is applied at
 * once; not the resume of a suspension without a GC, nor any resume once awake. */
static void test_doze(void) {
    static const BOOL collected[3] = {1, 0, 0};
    hl_gc_queue dq;
    hl_gc_queue_init(&dq);
    CHECK(!hl_gc_on_resumed(&dq, 1)); /* no GC: nothing to apply */
    CHECK(hl_gc_doze_begin(&dq));
    CHECK(!hl_gc_on_resumed(&dq, 2)); /* dozing, but a suspension for something else */
    hl_gc_on_started(&dq, (ICorProfilerInfo *)&fake_info, collected, 3, 0, 1, 0, no_snapshot, NULL);
    hl_gc_on_finished(&dq, (ICorProfilerInfo *)&fake_info);
    CHECK(hl_gc_on_resumed(&dq, 3)); /* wake it */
    hl_gc_doze_end(&dq);
    CHECK(!hl_gc_doze_begin(&dq)); /* that GC is not applied yet: no doze */
    hl_gc_pop(&dq);
    hl_gc_on_started(&dq, (ICorProfilerInfo *)&fake_info, collected, 3, 0, 1, 0, no_snapshot, NULL);
    hl_gc_on_finished(&dq, (ICorProfilerInfo *)&fake_info);
    CHECK(!hl_gc_on_resumed(&dq, 4)); /* awake: the idle period finds it */
    hl_gc_pop(&dq);
    hl_gc_queue_release(&dq);
}

/* GC reasons (GCStart events) matched to GCs by the runtime's count: the count runs ahead of the
 * ordinal by the GCs before an attach and by GCs the profiler is never told of
 * (GC.TryStartNoGCRegion's minimal GC), so the difference may grow: with it fixed by the first
 * event, every GC after a no-GC region was left without its reason. An older GC's count is not
 * taken. */
static void test_reason_counts(void) {
    static const BOOL collected[3] = {1, 0, 0};
    hl_gc_queue rq;
    hl_gc_queue_init(&rq);
    /* runtime counts: 3 (2 GCs before an attach), 4, then 6 (a minimal no-GC GC unseen), 9 */
    static const uint32_t counts[] = {3, 4, 6, 9, 10};
    for (uint32_t g = 0; g < 5; g++) {
        hl_gc_on_started(&rq, (ICorProfilerInfo *)&fake_info, collected, 3, 0, 1, 0, no_snapshot,
                         NULL);
        hl_gc_capture *c = rq.current;
        if (g == 4)
            hl_gc_on_start_event(&rq, counts[g] - 2, 5); /* an older GC's count: not this one's */
        CHECK(!c->gc_reason_known);
        hl_gc_on_start_event(&rq, counts[g], 100 + g);
        CHECK(c->gc_reason_known);
        CHECK_INT(c->gc_reason, 100 + g);
        hl_gc_on_start_event(&rq, counts[g] + 1, 7); /* a second event: the first one stays */
        CHECK_INT(c->gc_reason, 100 + g);
        hl_gc_on_finished(&rq, (ICorProfilerInfo *)&fake_info);
        hl_gc_pop(&rq);
    }
    hl_gc_queue_release(&rq);
}

int main(void) {
    test_layout_field();
    fake_vtbl[INFO_GetGenerationBounds] = (clr_method)fake_bounds;
    fake_vtbl[INFO_GetObjectSize2] = (clr_method)fake_size;
    fake_vtbl[INFO_GetClassLayout] = (clr_method)fake_layout;
    test_slot_offsets();
    test_walks_held_bound();
    test_ranges_reuse();
    test_ranges_reuse_in_flight();
    test_follow_moves_small();
    test_doze();
    test_reason_counts();
    hl_gc_queue_init(&q);
    for (int i = 0; i < HL_GC_QUEUE; i++)
        gc();
    CHECK_INT(atomic_load(&q.written), HL_GC_QUEUE);
    pthread_t t;
    pthread_create(&t, NULL, consumer, NULL);
    gc(); /* the queue is full: waits for the pop, then is kept */
    pthread_join(t, NULL);
    CHECK_INT(atomic_load(&q.lost), 0);
    CHECK_INT(atomic_load(&q.written), HL_GC_QUEUE + 1);
    CHECK_INT(hl_gc_peek_at(&q, HL_GC_QUEUE - 1)->gc, HL_GC_QUEUE + 1);

    /* The consumer is gone: a GC that finds the queue full is lost at once, and counted. */
    atomic_store(&q.closed, true);
    gc();
    CHECK_INT(atomic_load(&q.lost), 1);
    CHECK_INT(atomic_load(&q.written), HL_GC_QUEUE + 1);

    hl_gc_queue_release(&q);
    printf("%s: %d failures\n", failures ? "FAIL" : "ok", failures);
    return failures != 0;
}
