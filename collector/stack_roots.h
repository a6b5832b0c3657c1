/* stack_roots.h — the thread of a stack root, found by the words of the threads' stacks.
 *
 * The runtime tells a profiler a stack root's object and the MethodDesc of its frame, not its
 * thread (gcenv.ee.cpp GcScanRootsForProfilerAndETW sets ScanContext.thread_under_crawl, which
 * profheapwalkhelper.cpp ScanRootsHelper does not pass on; RootReference2 buffers roots without
 * it; ETW's GCBulkRootEdge has none either). But inside the snapshot's GC every managed thread is
 * stopped and what its frames hold is in its own stack's memory: a thread in cooperative mode
 * was stopped by a signal whose handler runs on the thread's stack (the PAL installs the
 * activation handler without SA_ONSTACK) and keeps the interrupted context there, and a thread
 * in preemptive mode holds no reference in a register across its transition (the JIT spills
 * them for a P/Invoke; helper frames save them in the frame). So a stack root's object address
 * is a word of its thread's stack, where the GC updated it at relocation. Other words equal to it
 * may lie in stale parts of stacks (below a thread's stack pointer, which is not known), never
 * instead of the holder's: the object is named with a thread only when exactly one thread's
 * stack holds its address, and only when every managed thread's stack was read (a thread not
 * read could be the holder). Otherwise it stays without a thread.
 *
 * Each managed thread's stack range is noted on the thread itself (pthread_getattr_np), in
 * ThreadCreated / ThreadAssignedToOSThread (Thread::HasStarted calls both on the new thread)
 * and at Initialize (the thread that loads the profiler); a thread that existed before an attach
 * has none, so attach names no stack root's thread. In the GC only the resident part of each
 * range is read (mincore, from the stack's base down to the first page not resident; of the
 * thread running the GC, from its current frame up), through process_vm_readv, which fails
 * instead of faulting where a page is not readable.
 */
#ifndef HEAPLENS_COLLECTOR_STACK_ROOTS_H
#define HEAPLENS_COLLECTOR_STACK_ROOTS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "collector/clr_info.h"
#include "collector/thread_statics.h"

#define HL_STACK_RANGES_MAX 4096
#define HL_STACK_READ_MAX (4u << 20) /* bytes read of one stack at most */

typedef struct hl_stack_range {
    uint32_t os_tid;
    uint64_t lo, hi; /* [lo, hi): the stack grows down from hi */
} hl_stack_range;

typedef struct hl_stack_ranges {
    atomic_flag lock; /* held for a lookup or an insert; never across anything that waits */
    uint32_t n;
    hl_stack_range items[HL_STACK_RANGES_MAX];
} hl_stack_ranges;

/* What a search found, for HEAPLENS_STATS and the pause's cost. */
typedef struct hl_stack_search {
    uint32_t threads;       /* managed threads with an OS thread */
    uint32_t unread;        /* ... whose stack range is not known or could not be read */
    uint64_t bytes;         /* stack bytes read */
    uint64_t named, shared; /* stack roots named with one thread; found on several */
    uint64_t ns;            /* time spent */
} hl_stack_search;

void hl_stack_ranges_init(hl_stack_ranges *r);
/* On a managed thread (any callback running on it): notes its own stack range under its OS id
 * `os_tid`, only when `os_tid` is the calling thread's (a callback about another thread notes
 * nothing). */
void hl_stack_ranges_note_self(hl_stack_ranges *r, uint32_t os_tid);

struct hl_root;

/* Inside a snapshot's GC, at GarbageCollectionFinished (GC thread, runtime suspended): for each
 * root of kind HL_ROOT_STACK in roots[0..n), out[i] = the OS id of the one thread whose stack
 * holds the object's address, else 0 (out[i] = 0 for other kinds). Scratch memory through
 * hl_mem; false when it ran out (out all 0). */
bool hl_stack_roots_find(hl_thread_set *threads, hl_stack_ranges *ranges, ICorProfilerInfo *info,
                         const struct hl_root *roots, size_t n, uint32_t *out,
                         hl_stack_search *stats);

#endif /* HEAPLENS_COLLECTOR_STACK_ROOTS_H */
