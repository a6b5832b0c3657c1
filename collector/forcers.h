/* forcers.h — the ForceGC threads of an attach session still inside the runtime.
 *
 * hl_collector_request_snapshot starts a thread of its own for each ForceGC (collector_thread.c),
 * and a detach must not call RequestProfilerDetach while one of them is in the runtime
 * (clr-profiler-facts.md §7.5). The detach waits for them, at most a bound: a ForceGC that never
 * returned kept `heaplens attach` waiting for good. Past the bound the detach goes on, and a
 * thread that returns later must not count itself off a later session: hl_session_reset zeroes
 * the profiler, and a decrement there would leave the next session's count at -1 (its final
 * snapshot never taken, its own detach waiting for good).
 *
 * So the count lives here, outside the profiler, with the session's generation in one word: a
 * thread leaves with the generation it entered in, and a leave of an older generation changes
 * nothing. Any thread may call these; they take no lock and make no system call.
 */
#ifndef HEAPLENS_COLLECTOR_FORCERS_H
#define HEAPLENS_COLLECTOR_FORCERS_H

#include "wire/hl_wire.h"

#include <stdbool.h>
#include <stdint.h>

/* A new session: its count starts at 0, whatever threads of earlier ones are still out
 * (hl_session_reset, and the first session). */
void hl_forcers_session_new(void);

/* A thread is about to call ForceGC: counted in this session. Returns the generation to give
 * hl_forcers_leave. */
uint32_t hl_forcers_enter(void);

/* The thread of `generation` has left the runtime (or never started): counted off if that is
 * still the session, else nothing. */
void hl_forcers_leave(uint32_t generation);

/* The threads of this session still in the runtime. */
uint32_t hl_forcers_in_runtime(void);

/* A GC took a snapshot request at its start (profiler.c, snapshot_policy). A ForceGC's GC is
 * induced, so one that is not is the program's: a GC a thread of this session is still forcing
 * for that request is yet to come, and serves nothing any more (a spare). Without this the
 * default policy `induced` took it for the program's GC.Collect and a second snapshot, a heap
 * walk and a longer pause, followed every `heaplens snapshot PID` or trigger that a GC of the
 * program's own had served. */
void hl_forcers_request_taken(bool induced);

/* At the start of an induced GC that took no request: true when it is taken for a spare of this
 * session's (one fewer then), not for the program's GC.Collect. A spare lasts only while a
 * thread of the session is in the runtime: each one that leaves (its ForceGC returned, its GC
 * over or never started) leaves at most as many spares as threads still in. A GC.Collect of the
 * program's that starts while a spare waits is taken for it, and the forced GC then counts as
 * the program's: the snapshot comes one GC later, not twice. */
bool hl_forcers_spare_gc(void);

/* Waits until none of this session's threads is in the runtime, at most `bound_ns` (checked
 * every millisecond). Returns how many still are (0: none). */
uint32_t hl_forcers_wait(uint64_t bound_ns);

/* The detach's wait as the recording says it: hl_forcers_wait(bound_ns), and *left the threads
 * still in the runtime and how long it waited. True when some still are (the bound was hit):
 * then *left is the HL_REC_FORCERS_LEFT record the writer stores. */
bool hl_forcers_wait_told(uint64_t bound_ns, hl_forcers_left *left);

#endif /* HEAPLENS_COLLECTOR_FORCERS_H */
