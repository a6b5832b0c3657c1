/* The collector's clocks, inline: the GC callbacks, the census and the collector thread time
 * their work with them, and the unit tests that compile single files need no stub. */
#ifndef HEAPLENS_COLLECTOR_CLOCK_H
#define HEAPLENS_COLLECTOR_CLOCK_H

#include <stdint.h>
#include <time.h>

/* Monotonic nanoseconds: durations and deadlines. */
static inline uint64_t hl_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Wall-clock nanoseconds since the epoch: times stored for the user. */
static inline uint64_t hl_now_unix_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The calling thread's CPU time in nanoseconds (a system call, not the vDSO: 0.1-0.3 us):
 * what a thread's own work costs, without the preemptions a loaded machine adds. */
static inline uint64_t hl_thread_cpu_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#endif /* HEAPLENS_COLLECTOR_CLOCK_H */
