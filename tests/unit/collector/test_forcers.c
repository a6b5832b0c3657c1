/* test_forcers.c — the ForceGC threads counted by session (collector/forcers.h): a thread that
 * returns after its session's detach gave its wait up, and after the next session began, must
 * not count itself off the new session (before: a decrement on the reset profiler left the next
 * session at -1, its final snapshot never taken and its detach waiting for good). */
#include "collector/clock.h"
#include "collector/forcers.h"
#include "tests/unit/common/check.h"

#include <pthread.h>
#include <stdio.h>
#include <time.h>

/* A thread of session `generation` that leaves once told to (a ForceGC returning late). */
typedef struct late_thread {
    uint32_t generation;
    pthread_mutex_t lock;
    pthread_cond_t go;
    int told;
} late_thread;

static void *late_main(void *arg) {
    late_thread *t = arg;
    pthread_mutex_lock(&t->lock);
    while (!t->told)
        pthread_cond_wait(&t->go, &t->lock);
    pthread_mutex_unlock(&t->lock);
    hl_forcers_leave(t->generation);
    return NULL;
}

int main(void) {
    hl_forcers_session_new();
    CHECK(hl_forcers_in_runtime() == 0);
    CHECK(hl_forcers_wait(0) == 0);

    /* Session A: two threads in the runtime; one returns, one stays. */
    uint32_t a1 = hl_forcers_enter(), a2 = hl_forcers_enter();
    CHECK(a1 == a2);
    CHECK(hl_forcers_in_runtime() == 2);
    hl_forcers_leave(a1);
    CHECK(hl_forcers_in_runtime() == 1);
    /* The detach's wait is bounded: it gives up and says one is left. */
    uint64_t t0 = hl_now_ns();
    CHECK(hl_forcers_wait(50u * 1000000u) == 1);
    uint64_t waited = hl_now_ns() - t0;
    CHECK(waited >= 50u * 1000000u && waited < 5000u * 1000000u);

    /* ... as the recording says it (HL_REC_FORCERS_LEFT): one thread left, after the bound. */
    hl_forcers_left told = {0};
    CHECK(hl_forcers_wait_told(50u * 1000000u, &told));
    CHECK(told.threads == 1);
    CHECK(told.waited_ms >= 50 && told.waited_ms < 5000);

    late_thread late = {.generation = a2, .lock = PTHREAD_MUTEX_INITIALIZER,
                        .go = PTHREAD_COND_INITIALIZER};
    pthread_t thread;
    CHECK(pthread_create(&thread, NULL, late_main, &late) == 0);

    /* The profiler is reset; session B starts with one thread of its own in the runtime. */
    hl_forcers_session_new();
    CHECK(hl_forcers_in_runtime() == 0);
    uint32_t b1 = hl_forcers_enter();
    CHECK(b1 != a2);
    CHECK(hl_forcers_in_runtime() == 1);

    /* A's late thread returns now: B's count is untouched. */
    pthread_mutex_lock(&late.lock);
    late.told = 1;
    pthread_cond_signal(&late.go);
    pthread_mutex_unlock(&late.lock);
    pthread_join(thread, NULL);
    CHECK(hl_forcers_in_runtime() == 1);
    hl_forcers_leave(a2); /* said twice: still nothing */
    CHECK(hl_forcers_in_runtime() == 1);

    /* B's own thread leaves: its detach's wait ends at once, and the count never goes below 0. */
    hl_forcers_leave(b1);
    CHECK(hl_forcers_in_runtime() == 0);
    CHECK(hl_forcers_wait(5000u * 1000000u) == 0);
    /* None left: nothing to record. */
    CHECK(!hl_forcers_wait_told(5000u * 1000000u, &told));
    CHECK(told.threads == 0 && told.waited_ms < 5000);
    hl_forcers_leave(b1);
    CHECK(hl_forcers_in_runtime() == 0);

    /* Spares: `heaplens snapshot PID` on a busy program. A GC of the program's (not induced)
     * takes the request before the forced GC starts: the forced GC, induced, is heaplens' own
     * and no GC.Collect of the program's (before: the default policy `induced` took a second
     * snapshot at it, seen on examples/WebApi). */
    uint32_t c1 = hl_forcers_enter();
    hl_forcers_request_taken(false);
    CHECK(hl_forcers_spare_gc());  /* the forced GC */
    CHECK(!hl_forcers_spare_gc()); /* a GC.Collect after it is the program's */
    hl_forcers_leave(c1);

    /* The forced GC took its own request (induced): nothing spare. */
    c1 = hl_forcers_enter();
    hl_forcers_request_taken(true);
    CHECK(!hl_forcers_spare_gc());
    hl_forcers_leave(c1);

    /* ForceGC returned without a GC (it failed): its spare goes with it, and the program's
     * next GC.Collect is its own. */
    c1 = hl_forcers_enter();
    hl_forcers_request_taken(false);
    hl_forcers_leave(c1);
    CHECK(!hl_forcers_spare_gc());

    /* No forcer in the runtime (the request's thread could not start): no spare. */
    hl_forcers_request_taken(false);
    CHECK(!hl_forcers_spare_gc());

    /* Two forcers, two requests both taken by the program's GCs: two spares, at most as many
     * as forcers; one forcer leaves, one spare is left. */
    c1 = hl_forcers_enter();
    uint32_t c2 = hl_forcers_enter();
    hl_forcers_request_taken(false);
    hl_forcers_request_taken(false);
    hl_forcers_request_taken(false);
    hl_forcers_leave(c1);
    CHECK(hl_forcers_spare_gc());
    CHECK(!hl_forcers_spare_gc());

    /* A spare of a session is none of the next one's. */
    hl_forcers_request_taken(false);
    hl_forcers_session_new();
    hl_forcers_leave(c2);
    uint32_t d1 = hl_forcers_enter();
    CHECK(!hl_forcers_spare_gc());
    hl_forcers_leave(d1);

    if (failures)
        fprintf(stderr, "%d check(s) failed\n", failures);
    return failures ? 1 : 0;
}
