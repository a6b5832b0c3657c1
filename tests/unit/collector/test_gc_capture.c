/* test_gc_capture.c — the GC queue when the collector thread is HL_GC_QUEUE GCs behind: a GC
 * waits in GarbageCollectionStarted until the consumer applies one, instead of losing its input
 * (issue 17); with the consumer gone it is lost at once (counted). A fake ICorProfilerInfo
 * answers GetGenerationBounds with no ranges. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "collector/discovery.h"
#include "collector/collector.h"
#include "collector/mem.h"
#include "collector/gc_capture.h"
#include "tests/unit/common/check.h"

/* Discovery is off here (q.discover false): never called. */
void hl_discover_walked(hl_gc_capture *c, ObjectID object, ClassID class_id, uint64_t size) {
    (void)c, (void)object, (void)class_id, (void)size;
}
void hl_discover_ranges(hl_gc_capture *c, ICorProfilerInfo *info) { (void)c, (void)info; }
uint64_t hl_now_ns(void) { return 0; } /* the census is off here too */

static HRESULT fake_bounds(ICorProfilerInfo *i, ULONG capacity, ULONG *total,
                           COR_PRF_GC_GENERATION_RANGE *ranges) {
    (void)i, (void)capacity, (void)ranges;
    *total = 0;
    return S_OK;
}

static clr_method fake_vtbl[INFO_GetGenerationBounds + 1];
static clr_object fake_info = {.vtbl = fake_vtbl};

static uint32_t no_snapshot(void *ctx, uint32_t gc, uint32_t generation, uint32_t reason) {
    (void)ctx, (void)gc, (void)generation, (void)reason;
    return 0;
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

int main(void) {
    fake_vtbl[INFO_GetGenerationBounds] = (clr_method)fake_bounds;
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
