/* rejit.h — counted allocation sites (`heaplens record --count PATTERN`): every method whose
 * 'Namespace.Type.Method' matches a pattern (fnmatch, `*` matches dots too) is recompiled by
 * ReJIT with a counter before each allocating IL instruction (il_rewrite.h).
 *
 * Who runs what:
 *   runtime threads   ModuleLoadFinished -> the module is queued (a mutex, held for a push)
 *                     GetReJITParameters -> the prepared body is handed over (SetILFunctionBody)
 *                     ReJITError         -> the method is marked refused
 *   the rejit thread  (ours, "heaplens-rejit": RequestReJIT may suspend the runtime, never from
 *                     a callback) opens each queued module's metadata, finds the matching
 *                     methods, defines the MemberRef of Interlocked.Increment in the module,
 *                     rewrites each body (the plan is ready before the request), counters in
 *                     memory of ours, then RequestReJITWithInliners (or RequestReJIT).
 *   collector thread  at the session's end, hl_rejit_send: one COUNT_SITE record per site.
 *
 * Counters are one cache line each and are never freed: code that was rewritten may run as long
 * as the process lives (a thread inside a method keeps its code). The runtime keeps a profiler
 * that set ENABLE_REJIT loaded until the process exits (no detach); `record` never detaches. */
#ifndef HEAPLENS_COLLECTOR_REJIT_H
#define HEAPLENS_COLLECTOR_REJIT_H

#include <stdbool.h>
#include <stdint.h>

#include "collector/clr_abi.h"

struct hl_profiler;
struct collector;
typedef struct hl_rejit hl_rejit;

/* The event flags counting needs, added to the mode's at Initialize. */
#define HL_REJIT_EVENT_FLAGS                                                                      \
    (COR_PRF_ENABLE_REJIT | COR_PRF_MONITOR_MODULE_LOADS | COR_PRF_MONITOR_JIT_COMPILATION)

/* Parses `patterns` (separated by ';') and starts the rejit thread. NULL when out of memory or
 * no pattern. info must answer ICorProfilerInfo4 at least. With `deferred` (attach: the
 * runtime's info calls work only once the attach is complete) the thread waits for
 * hl_rejit_begin before it looks at the modules loaded already. */
hl_rejit *hl_rejit_start(void *info, int info_version, const char *patterns, bool deferred);
/* Attach (ProfilerAttachComplete, the runtime's attach thread): lets a deferred thread begin and
 * waits, at most 30 s, until every module loaded already has had its methods scanned and their
 * recompilation requested: when `heaplens attach` hears that the attach succeeded, counting is
 * on for every later call. */
void hl_rejit_begin(hl_rejit *r);
/* The end of an attach session (the collector thread, after hl_rejit_send, the rejit thread
 * stopped): RequestRevert of every recompiled method, the original code back at its next call.
 * The runtime then refuses to unload the collector: it stays, dormant. */
void hl_rejit_revert(hl_rejit *r);
/* The runtime refused the flags (ENABLE_REJIT): stops the thread; the session goes on without
 * counting, and hl_rejit_send says so per pattern (HL_COUNT_REFUSED_NO_REJIT). */
void hl_rejit_unsupported(hl_rejit *r);
/* Stops the thread (a request under way finishes). Counters and bodies stay (see above). */
void hl_rejit_stop(hl_rejit *r);

/* Callbacks (runtime threads). NULL r: not counting. With `wait` (startup: the module's code
 * has not run) the loading thread waits, at most 10 s, until the module's methods are asked to
 * be recompiled, so that their first calls count. */
void hl_rejit_module_loaded(hl_rejit *r, ModuleID module, bool wait);
HRESULT hl_rejit_parameters(hl_rejit *r, ModuleID module, mdToken method, void *function_control);
void hl_rejit_error(hl_rejit *r, ModuleID module, mdToken method, HRESULT status);

/* Collector thread, at the end: one HL_REC_COUNT_SITE per site and per refused method. */
void hl_rejit_send(struct collector *c, hl_rejit *r);

#endif /* HEAPLENS_COLLECTOR_REJIT_H */
