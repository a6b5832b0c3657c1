/* forcers.c — the ForceGC threads still inside the runtime, by session (forcers.h). */
#include "collector/forcers.h"

#include "collector/clock.h"

#include <stdatomic.h>
#include <time.h>

/* The session's generation in the high 32 bits, its threads in the runtime in the low 32. The
 * one state that outlives hl_session_reset on purpose (as tbufs_epoch does): a thread of an
 * earlier session may still return after it. */
static _Atomic uint64_t forcers_word;

#define FORCERS_COUNT(w) ((uint32_t)(w))
#define FORCERS_GENERATION(w) ((uint32_t)((w) >> 32))

/* The spares (forcers.h, hl_forcers_request_taken): the generation they were counted in, high,
 * and their count, low; a word of an older generation holds none. */
static _Atomic uint64_t spares_word;

/* The spares of `forcers` (a value of forcers_word) in `spares`. */
static uint32_t spares_of(uint64_t spares, uint64_t forcers) {
    return FORCERS_GENERATION(spares) == FORCERS_GENERATION(forcers) ? FORCERS_COUNT(spares) : 0;
}

/* At most `limit` spares in the session of `forcers`. */
static void spares_clamp(uint64_t forcers, uint32_t limit) {
    uint64_t s = atomic_load(&spares_word);
    while (spares_of(s, forcers) > limit &&
           !atomic_compare_exchange_weak(&spares_word, &s,
                                         (uint64_t)FORCERS_GENERATION(forcers) << 32 | limit))
        ;
}

void hl_forcers_session_new(void) {
    uint64_t w = atomic_load(&forcers_word);
    /* Only the detach's end or a session's start call this, with no thread of the new session
     * yet: a leave of an old one racing it fails its compare and changes nothing. */
    while (!atomic_compare_exchange_weak(&forcers_word, &w,
                                         (uint64_t)(FORCERS_GENERATION(w) + 1u) << 32))
        ;
}

uint32_t hl_forcers_enter(void) {
    return FORCERS_GENERATION(atomic_fetch_add(&forcers_word, 1));
}

void hl_forcers_leave(uint32_t generation) {
    uint64_t w = atomic_load(&forcers_word);
    while (FORCERS_GENERATION(w) == generation && FORCERS_COUNT(w) > 0 &&
           !atomic_compare_exchange_weak(&forcers_word, &w, w - 1))
        ;
    w = atomic_load(&forcers_word);
    spares_clamp(w, FORCERS_COUNT(w));
}

void hl_forcers_request_taken(bool induced) {
    if (induced)
        return; /* perhaps the forced GC itself: nothing is known to come */
    uint64_t w = atomic_load(&forcers_word), s = atomic_load(&spares_word);
    uint32_t n;
    while ((n = spares_of(s, w)) < FORCERS_COUNT(w) &&
           !atomic_compare_exchange_weak(&spares_word, &s,
                                         (uint64_t)FORCERS_GENERATION(w) << 32 | (n + 1u)))
        ;
}

bool hl_forcers_spare_gc(void) {
    uint64_t w = atomic_load(&forcers_word), s = atomic_load(&spares_word);
    for (;;) {
        uint32_t n = spares_of(s, w);
        if (n == 0)
            return false;
        if (atomic_compare_exchange_weak(&spares_word, &s,
                                         (uint64_t)FORCERS_GENERATION(w) << 32 | (n - 1u)))
            return true;
    }
}

uint32_t hl_forcers_in_runtime(void) {
    return FORCERS_COUNT(atomic_load(&forcers_word));
}

uint32_t hl_forcers_wait(uint64_t bound_ns) {
    uint64_t start = hl_now_ns();
    uint32_t left;
    while ((left = hl_forcers_in_runtime()) > 0 && hl_now_ns() - start < bound_ns) {
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
    return left;
}

bool hl_forcers_wait_told(uint64_t bound_ns, hl_forcers_left *left) {
    uint64_t start = hl_now_ns();
    left->threads = hl_forcers_wait(bound_ns);
    left->waited_ms = (uint32_t)((hl_now_ns() - start) / 1000000u);
    return left->threads > 0;
}
