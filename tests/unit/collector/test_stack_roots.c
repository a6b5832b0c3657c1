/* test_stack_roots.c — a stack root's thread by the threads' stacks (stack_roots.h), on real
 * threads of this test: each keeps the address of an "object" of its own in a local array of
 * its stack and waits; the search names each object with its thread, leaves an address two
 * threads hold without a thread, and names none when a thread's stack range is not known (that
 * thread could be the holder) or for roots that are not stack roots. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "collector/gc_capture.h"
#include "collector/stack_roots.h"
#include "tests/unit/common/check.h"

#define THREADS 3

static hl_stack_ranges ranges;
static pthread_barrier_t noted, done;
static uint32_t tids[THREADS];
static uint64_t objects[THREADS + 1]; /* the last one: held by threads 0 and 1 */
static bool note_range[THREADS] = {true, true, true};

/* Not instrumented: AddressSanitizer may move an instrumented function's locals to a heap "fake
 * stack", and they must be on the thread's own. */
__attribute__((no_sanitize_address)) static void *worker(void *arg) {
    int k = (int)(intptr_t)arg;
    volatile uint64_t held[4] = {objects[k], 0, k < 2 ? objects[THREADS] : 0, 0};
    tids[k] = (uint32_t)syscall(SYS_gettid);
    if (note_range[k])
        hl_stack_ranges_note_self(&ranges, tids[k]);
    hl_stack_ranges_note_self(&ranges, tids[k] + 100000); /* about another thread: nothing */
    pthread_barrier_wait(&noted);
    pthread_barrier_wait(&done);
    return (void *)(uintptr_t)held[0];
}

/* The fake runtime: ThreadID k + 1 is thread k. */
static HRESULT fake_thread_info(ICorProfilerInfo *i, ThreadID t, DWORD *os_tid) {
    (void)i;
    *os_tid = tids[t - 1];
    return S_OK;
}
static clr_method vtbl[INFO_GetThreadInfo + 1];
static clr_object info_obj = {.vtbl = vtbl};

static void run(bool all_noted, uint32_t *out, hl_stack_search *stats, hl_root *roots, size_t n) {
    hl_thread_set threads;
    pthread_t t[THREADS];
    hl_stack_ranges_init(&ranges);
    hl_thread_set_init(&threads);
    note_range[2] = all_noted;
    pthread_barrier_init(&noted, NULL, THREADS + 1);
    pthread_barrier_init(&done, NULL, THREADS + 1);
    for (int k = 0; k < THREADS; k++) {
        pthread_create(&t[k], NULL, worker, (void *)(intptr_t)k);
        hl_thread_set_add(&threads, (ThreadID)(k + 1));
    }
    pthread_barrier_wait(&noted); /* every thread waits, its locals on its stack */
    CHECK(hl_stack_roots_find(&threads, &ranges, (ICorProfilerInfo *)&info_obj, roots, n, out,
                              stats));
    pthread_barrier_wait(&done);
    for (int k = 0; k < THREADS; k++)
        pthread_join(t[k], NULL);
    pthread_barrier_destroy(&noted);
    pthread_barrier_destroy(&done);
}

int main(void) {
    vtbl[INFO_GetThreadInfo] = (clr_method)fake_thread_info;
    /* Addresses nothing else in the process holds by chance. */
    for (int k = 0; k <= THREADS; k++)
        objects[k] = 0x5eed000000000000ull + (uint64_t)k * 0x1000 + 0x28;
    hl_root roots[] = {
        {.object = objects[0], .root_id = 7, .kind = HL_ROOT_STACK},
        {.object = objects[1], .root_id = 7, .kind = HL_ROOT_STACK},
        {.object = objects[2], .root_id = 8, .kind = HL_ROOT_STACK},
        {.object = objects[THREADS], .kind = HL_ROOT_STACK},
        {.object = objects[0], .kind = HL_ROOT_HANDLE},
        {.object = 0x5eed0000deadbee8ull, .kind = HL_ROOT_STACK}, /* on no stack */
    };
    size_t n = sizeof roots / sizeof roots[0];
    uint32_t out[sizeof roots / sizeof roots[0]];
    hl_stack_search stats;

    run(true, out, &stats, roots, n);
    CHECK_INT(stats.threads, THREADS);
    CHECK_INT(stats.unread, 0);
    CHECK(stats.bytes > 0);
    CHECK_INT(out[0], tids[0]);
    CHECK_INT(out[1], tids[1]);
    CHECK_INT(out[2], tids[2]);
    CHECK_INT(out[3], 0); /* two threads hold it */
    CHECK_INT(out[4], 0); /* not a stack root */
    CHECK_INT(out[5], 0);
    CHECK_INT(stats.named, 3);
    CHECK_INT(stats.shared, 1);

    /* thread 2's stack not known: it could hold any of them */
    run(false, out, &stats, roots, n);
    CHECK_INT(stats.unread, 1);
    for (size_t i = 0; i < n; i++)
        CHECK_INT(out[i], 0);
    return failures ? 1 : 0;
}
