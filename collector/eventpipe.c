/* eventpipe.c — see eventpipe.h. The session, and the callback that copies samples. */
#include "collector/eventpipe.h"

#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "collector/collector.h"

enum {
    EVENT_GC_ALLOCATION_TICK = 10,
    EVENT_ALLOCATION_SAMPLED = 303,
    EVENT_FAIL_FAST = 191, /* Microsoft-Windows-DotNETRuntimePrivate, level Critical, no keyword */
};
#define KEYWORD_GC 0x1ull
#define KEYWORD_ALLOCATION_SAMPLING 0x80000000000ull
#define LEVEL_CRITICAL 1u
#define LEVEL_INFORMATIONAL 4u
#define LEVEL_VERBOSE 5u

/* The runtime hands a profiler's session no stack (numStackFrames is 0 on .NET 10: measured),
 * so the collector walks the allocating thread itself: DoStackSnapshot of the current thread,
 * synchronous, into a buffer on this thread's stack. Innermost frame first. The walk stops at
 * the first frame beyond the kept ones (a callback's S_FALSE ends the runtime's walk:
 * proftoeeinterfaceimpl.cpp ProfilerStackWalkCallback, SWA_ABORT): `total` then says only that
 * there were more. */
typedef struct stack_walk {
    uintptr_t ips[HL_SAMPLE_MAX_FRAMES];
    uint32_t n, total;
} stack_walk;

static HRESULT on_stack_frame(FunctionID function, UINT_PTR ip, UINT_PTR frame_info,
                              uint32_t context_size, uint8_t *context, void *data) {
    (void)function, (void)frame_info, (void)context_size, (void)context;
    stack_walk *w = data;
    w->total++;
    if (w->n == HL_SAMPLE_MAX_FRAMES)
        return S_FALSE; /* a frame more than kept: the stack is cut, walk no further */
    w->ips[w->n++] = ip;
    return S_OK;
}

/* The sample seen by this thread's EventPipe callback, waiting for its ObjectAllocated. */
static _Thread_local struct {
    bool waiting;
    hl_sample_payload s;
} tls_sample;

/* The sample budget's state of this thread (eventpipe.h, hl_sample_budget_factor). */
static _Thread_local struct {
    uint64_t rng;          /* xorshift64*, 0 until the thread's first sample */
    uint64_t window_ns;    /* the window's start, monotonic clock */
    uint64_t window_cpu_ns; /* ... and the thread's CPU time then */
    uint32_t seen;         /* small-object samples seen in it */
    uint32_t first;        /* ... of them kept as their type's firsts (weight 1) */
    uint32_t factor;       /* K of the window: keep one sample in K beyond the firsts */
    hl_budget_types types; /* the window's samples per type */
} tls_budget;

/* Pushes one sample (its stack walked now when `walk`) into this thread's chunk; `weight` is
 * the budget's factor it was kept with (1: every sample kept). */
static void sample_push(hl_profiler *p, const hl_sample_payload *s, bool walk, uint32_t weight) {
    hl_tbuf *b = hl_tbufs_current(&p->rings);
    if (!b) {
        atomic_fetch_add_explicit(&p->sampling.dropped, 1, memory_order_relaxed);
        return;
    }
    stack_walk w;
    w.n = w.total = 0;
    if (walk && !p->sampling.no_walk) {
        uint64_t t0 = hl_now_ns();
        HRESULT hr = info_do_stack_snapshot(p->info, 0, on_stack_frame, 0, &w);
        uint64_t ns = hl_now_ns() - t0;
        atomic_fetch_add_explicit(&p->sampling.walk_ns, ns, memory_order_relaxed);
        atomic_fetch_add_explicit(&p->sampling.walk_hist[hl_walk_hist_bin(ns)], 1,
                                  memory_order_relaxed);
        atomic_fetch_add_explicit(&p->sampling.walk_frames, w.total, memory_order_relaxed);
        /* Stopped by on_stack_frame (CORPROF_E_STACKSNAPSHOT_ABORTED): the kept frames stand. */
        if (HR_FAILED(hr) && w.total <= HL_SAMPLE_MAX_FRAMES) {
            atomic_fetch_add_explicit(&p->sampling.walk_failures, 1, memory_order_relaxed);
            atomic_store_explicit(&p->sampling.walk_failure_hr, (uint32_t)hr, memory_order_relaxed);
            w.n = w.total = 0;
        }
    }
    hl_alloc_event ev[HL_SAMPLE_MAX_EVENTS];
    uint64_t id = atomic_fetch_add_explicit(&p->next_id, 1, memory_order_relaxed);
    uint32_t n = hl_sample_encode(ev, id, s->address, s->class_id, s->kind, s->size, s->amount,
                                  weight, w.total, w.ips);
    if (!hl_tbuf_push_n(b, ev, n))
        atomic_fetch_add_explicit(&p->sampling.dropped, 1, memory_order_relaxed);
}

/* The collector's own sampler (full mode): every allocated byte is a sampling point with
 * p = 1/102400, as in the runtime's AllocationSampled, so the same estimator applies. The runtime
 * would draw a new random distance (a log) after every allocation that takes its slow path — and
 * ObjectAllocated sends every allocation down it: that draw alone cost more than the walks
 * (perf: libm's log at 6-7% of the recording's CPU). Here the thread counts its bytes down and
 * draws once per sample. */
/* One per thread, in the thread's slot (hl_sampler_state, thread_buffers.h); a thread without a
 * slot (all taken) keeps its own, looked up by pointer. */
typedef hl_sampler_state sampler_state;
static _Thread_local sampler_state tls_sampler;

static uint64_t next_random(sampler_state *t) {
    uint64_t x = t->rng;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    t->rng = x;
    return x * 0x2545F4914F6CDD1Dull;
}

static void sampler_seed(sampler_state *t) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now); /* vDSO: no system call */
    uint64_t z = (uint64_t)now.tv_nsec ^ ((uint64_t)now.tv_sec << 30) ^ (uint64_t)(uintptr_t)t;
    z += 0x9E3779B97F4A7C15ull; /* splitmix64 */
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    t->rng = z ? z : 1;
    t->left = hl_sample_distance(next_random(t), HL_ALLOC_SAMPLED_MEAN_BYTES);
}

static uint32_t heap_kind_of(hl_profiler *p, ObjectID object, uint64_t size) {
    COR_PRF_GC_GENERATION_RANGE range;
    if (!HR_FAILED(info_get_object_generation(p->info, object, &range))) {
        if (range.generation == 3)
            return 1; /* AllocationKind: large */
        if (range.generation == 4)
            return 2; /* pinned */
        return 0;
    }
    return size >= 85000 ? 1 : 0; /* the default LOH threshold */
}

static void own_sample(hl_profiler *p, hl_tbuf *ring, ObjectID object, ClassID class_id,
                       uint64_t size) {
    sampler_state *t = ring ? &ring->sampler : &tls_sampler;
    if (__builtin_expect(t->left > size, 1)) {
        t->left -= size;
        return;
    }
    if (!t->rng) { /* the thread's first allocation: start its count */
        sampler_seed(t);
        if (t->left > size) {
            t->left -= size;
            return;
        }
    }
    /* This object holds the sampling point. The distance after it is geometric again (no
     * memory), measured from the object's end. */
    t->left = hl_sample_distance(next_random(t), HL_ALLOC_SAMPLED_MEAN_BYTES);
    atomic_fetch_add_explicit(&p->sampling.seen, 1, memory_order_relaxed);
    hl_sample_payload s = {.kind = heap_kind_of(p, object, size), .class_id = class_id,
                           .address = object, .size = size};
    sample_push(p, &s, true, 1);
}

void hl_eventpipe_on_object_allocated(hl_profiler *p, hl_tbuf *ring, ObjectID object,
                                      ClassID class_id, uint64_t size) {
    if (p->sampling.own_sampler) {
        own_sample(p, ring, object, class_id, size);
        return;
    }
    if (!tls_sample.waiting)
        return;
    tls_sample.waiting = false;
    /* Another address: the sampled object was allocated on a path without ObjectAllocated
     * (.NET 10 boxes and delegates): kept without a stack. */
    sample_push(p, &tls_sample.s, tls_sample.s.address == object, 1);
}

/* A GC thread, inside the GC: the ranges go to the GC capture in batches from this stack. A
 * payload not understood makes the GC incomplete (its survivors are unknown). */
static void ranges_deliver(hl_profiler *p, const uint8_t *data, uint32_t size, uint32_t event_id) {
    hl_ranges_payload r;
    if (!hl_parse_ranges(data, size, event_id, &r)) {
        hl_gc_mark_incomplete(&p->gcs);
        return;
    }
    enum { BATCH = 128 };
    ObjectID old_starts[BATCH], new_starts[BATCH];
    SIZE_T lengths[BATCH];
    for (uint32_t i = 0; i < r.count;) {
        uint32_t n = 0;
        for (; n < BATCH && i < r.count; n++, i++) {
            uint64_t o, nw, len;
            hl_ranges_at(&r, i, &o, &nw, &len);
            old_starts[n] = o, new_starts[n] = nw, lengths[n] = len;
        }
        hl_gc_on_ranges(&p->gcs, n, old_starts, r.moved ? new_starts : NULL, lengths);
    }
}

static bool wide_is(const WCHAR *w, ULONG n, const char *s) {
    ULONG i = 0;
    for (; i < n && w[i] && s[i]; i++)
        if (w[i] != (WCHAR)(unsigned char)s[i])
            return false;
    return (i == n || !w[i]) && !s[i];
}

enum { PROVIDER_OTHER, PROVIDER_RUNTIME, PROVIDER_HEAPLENS, PROVIDER_PRIVATE };

/* Which provider wrote the event: by handle once its name was learned (its first event). */
static int provider_of(hl_profiler *p, UINT_PTR provider) {
    if (provider == atomic_load_explicit(&p->sampling.runtime_provider, memory_order_relaxed))
        return PROVIDER_RUNTIME;
    if (provider == atomic_load_explicit(&p->sampling.heaplens_provider, memory_order_relaxed))
        return PROVIDER_HEAPLENS;
    WCHAR name[64];
    ULONG len = 0;
    if (HR_FAILED(info_event_pipe_get_provider_info(p->info, provider, 64, &len, name)))
        return PROVIDER_OTHER;
    if (wide_is(name, len, "Microsoft-Windows-DotNETRuntime")) {
        atomic_store_explicit(&p->sampling.runtime_provider, provider, memory_order_relaxed);
        return PROVIDER_RUNTIME;
    }
    if (wide_is(name, len, "HeapLens")) {
        atomic_store_explicit(&p->sampling.heaplens_provider, provider, memory_order_relaxed);
        return PROVIDER_HEAPLENS;
    }
    if (wide_is(name, len, "Microsoft-Windows-DotNETRuntimePrivate"))
        return PROVIDER_PRIVATE; /* its one event enabled comes once: no need to keep it */
    return PROVIDER_OTHER;
}

/* The program's thread, inside its EventSource.WriteEvent: into the ring for the collector
 * thread (collector_thread.c sends it). */
static void checkpoint_push(hl_profiler *p, const uint8_t *data, uint32_t size) {
    hl_checkpoint_event e;
    if (!hl_parse_checkpoint(data, size, e.name, sizeof e.name))
        return;
    e.rec = (hl_checkpoint){
        .after_gc = atomic_load_explicit(&p->gcs.last_finished, memory_order_relaxed),
        .os_tid = (uint32_t)syscall(SYS_gettid),
        .time_ns = hl_now_ns(),
    };
    while (atomic_flag_test_and_set_explicit(&p->checkpoints_lock, memory_order_acquire))
        ; /* held for one copy */
    uint64_t w = atomic_load_explicit(&p->checkpoints_written, memory_order_relaxed);
    uint64_t held = w - atomic_load_explicit(&p->checkpoints_read, memory_order_acquire);
    if (held < HL_CHECKPOINT_EVENTS) {
        p->checkpoints[w % HL_CHECKPOINT_EVENTS] = e;
        atomic_store_explicit(&p->checkpoints_written, w + 1, memory_order_release);
    } else {
        atomic_fetch_add(&p->checkpoints_dropped, 1);
    }
    atomic_flag_clear_explicit(&p->checkpoints_lock, memory_order_release);
    if (held + 1 >= HL_CHECKPOINT_EVENTS / 2)
        hl_collector_wake(p); /* faster than the collector's idle period: drain it now */
}

/* The sample budget (eventpipe.h): whether this thread keeps the small-object sample of
 * `class_id` it was just delivered, and with which factor. A window's factor comes from the
 * window before, and whether a sample is one of its type's firsts from the samples seen before
 * it in the window, so every sample's probability is fixed before its draw. The windows end by
 * the monotonic clock
 * (the vDSO: a few ns a sample); the rate is per second of the thread's CPU time, read once a
 * window (a system call), so that a loaded machine, which stretches the wall time, does not
 * change what the samples cost the program. */
static bool budget_keep(hl_profiler *p, uint64_t class_id, uint32_t *factor) {
    uint64_t now = hl_now_ns();
    if (!tls_budget.rng) { /* the thread's first sample */
        uint64_t z = now ^ (uint64_t)(uintptr_t)&tls_budget;
        z += 0x9E3779B97F4A7C15ull; /* splitmix64 */
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        z ^= z >> 31;
        tls_budget.rng = z ? z : 1;
        tls_budget.window_ns = now;
        tls_budget.window_cpu_ns = hl_thread_cpu_ns();
        tls_budget.factor = 1;
    } else if (now - tls_budget.window_ns >= HL_SAMPLE_BUDGET_WINDOW_NS) {
        uint64_t cpu = hl_thread_cpu_ns();
        tls_budget.factor = hl_sample_budget_factor(tls_budget.seen, tls_budget.first,
                                                    cpu - tls_budget.window_cpu_ns,
                                                    p->sampling.budget);
        tls_budget.window_ns = now;
        tls_budget.window_cpu_ns = cpu;
        tls_budget.seen = 0;
        tls_budget.first = 0;
        memset(&tls_budget.types, 0, sizeof tls_budget.types); /* 192 bytes, once a window */
    }
    tls_budget.seen++;
    if (hl_budget_first(&tls_budget.types, class_id)) {
        tls_budget.first++;
        *factor = 1;
        return true;
    }
    *factor = tls_budget.factor;
    if (tls_budget.factor == 1)
        return true;
    uint64_t x = tls_budget.rng;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    tls_budget.rng = x;
    return ((x * 0x2545F4914F6CDD1Dull) >> 32 & (tls_budget.factor - 1)) == 0;
}

/* Runs on the allocating thread inside the allocation: copy and return. In full mode the sample
 * waits for the object's ObjectAllocated (same thread, next callback) to get its stack. */
HRESULT hl_eventpipe_on_event(hl_profiler *p, UINT_PTR provider, DWORD event_id,
                              DWORD event_version, ULONG metadata_size, const uint8_t *metadata,
                              ULONG data_size, const uint8_t *data, const GUID *activity,
                              const GUID *related_activity, ThreadID thread, ULONG frame_count,
                              UINT_PTR frames[]) {
    (void)provider, (void)metadata_size, (void)metadata, (void)activity, (void)related_activity;
    (void)thread, (void)frame_count, (void)frames;
    /* Two providers are enabled: the runtime's and the program's HeapLens (checkpoints). */
    int from = provider_of(p, provider);
    if (from == PROVIDER_HEAPLENS) {
        if (p->active && event_id == HL_EVENT_CHECKPOINT)
            checkpoint_push(p, data, data_size);
        return S_OK;
    }
    /* The runtime fires it in EEPolicy::LogFatalError, on the failing thread, then aborts the
     * process (no Shutdown): the last chance to send what the collector holds. */
    if (from == PROVIDER_PRIVATE) {
        if (event_id == EVENT_FAIL_FAST)
            hl_profiler_failing(p);
        return S_OK;
    }
    if (from != PROVIDER_RUNTIME)
        return S_OK; /* EventPipe's own (ProcessInfo at the session's end) */
    if (event_id == HL_EVENT_GC_BULK_MOVED_RANGES || event_id == HL_EVENT_GC_BULK_SURVIVING_RANGES) {
        if (p->active && p->sampling.ranges)
            ranges_deliver(p, data, data_size, event_id);
        return S_OK;
    }
    if (event_id == HL_EVENT_GC_HEAP_STATS || event_id == HL_EVENT_GC_GLOBAL_HEAP_HISTORY) {
        /* The survived bytes and compaction of a GC without the runtime's ranges (follow.h) */
        uint64_t promoted[5];
        uint32_t mech;
        if (!p->active || !p->followed.on)
            return S_OK;
        if (event_id == HL_EVENT_GC_HEAP_STATS &&
            hl_parse_gc_heap_stats(data, data_size, event_version, promoted))
            hl_gc_on_heap_stats(&p->gcs, promoted);
        else if (event_id == HL_EVENT_GC_GLOBAL_HEAP_HISTORY &&
                 hl_parse_gc_global_history(data, data_size, event_version, &mech))
            hl_gc_on_mechanisms(&p->gcs, mech);
        return S_OK;
    }
    if (event_id == HL_EVENT_GC_START) { /* on the GC thread, before GarbageCollectionStarted */
        uint32_t count, reason;
        if (p->active && hl_parse_gc_start(data, data_size, event_version, &count, &reason))
            hl_gc_on_start_event(&p->gcs, count, reason);
        return S_OK;
    }
    uint32_t source = p->sampling.source;
    /* The collector's own sampler takes no sample from the session. */
    if (!p->active || !source || source == HL_SAMPLE_SOURCE_OBJECT_ALLOCATED)
        return S_OK;
    hl_sample_payload s;
    bool parsed;
    if (source == HL_SAMPLE_SOURCE_ALLOCATION_SAMPLED) {
        if (event_id != EVENT_ALLOCATION_SAMPLED)
            return S_OK;
        atomic_fetch_add_explicit(&p->sampling.seen, 1, memory_order_relaxed);
        parsed = hl_parse_allocation_sampled(data, data_size, event_version, &s);
    } else {
        if (event_id != EVENT_GC_ALLOCATION_TICK)
            return S_OK; /* GCKeyword's other events: GCStart, heap stats, ... */
        atomic_fetch_add_explicit(&p->sampling.seen, 1, memory_order_relaxed);
        parsed = hl_parse_allocation_tick(data, data_size, event_version, &s);
    }
    if (!parsed) {
        atomic_fetch_add_explicit(&p->sampling.unparsed, 1, memory_order_relaxed);
        atomic_fetch_add_explicit(&p->sampling.dropped, 1, memory_order_relaxed);
        return S_OK;
    }
    if (tls_sample.waiting) /* its ObjectAllocated never came */
        sample_push(p, &tls_sample.s, false, 1);
    tls_sample.waiting = false;
    if (p->sampling.walk_at_object_allocated && s.address) {
        tls_sample.s = s;
        tls_sample.waiting = true;
        return S_OK;
    }
    /* Sampled and attach modes: a small object's sample beyond the thread's budget is left out
     * before anything is spent on it (LOH and POH objects are counted and followed anyway);
     * its type's first samples in the window are kept (budget_keep). */
    uint32_t weight = 1;
    if (s.kind == 0 && p->sampling.budget && !budget_keep(p, s.class_id, &weight)) {
        atomic_fetch_add_explicit(&p->sampling.budgeted, 1, memory_order_relaxed);
        return S_OK;
    }
    /* Sampled mode follows a small object's sample by a weak handle, made here: the event
     * comes inside the allocation, with the object whole (AllocationSampled), and CreateHandle
     * may be called from a callback. LOH and POH samples are followed from ObjectAllocated. */
    if (p->followed.on && s.kind == 0)
        hl_follow_add(&p->followed, p->info, s.address);
    sample_push(p, &s, true, weight);
    return S_OK;
}

int hl_eventpipe_start(hl_profiler *p, uint32_t mode, bool samples, uint64_t extra_keywords) {
    /* Stacks: walked at ObjectAllocated, so only where it is on (full mode). */
    p->sampling.walk_at_object_allocated = mode == HL_MODE_FULL;
    const char *walk = getenv("HEAPLENS_STACK_WALK"); /* benchmark: the walk's share */
    p->sampling.no_walk = walk && strcmp(walk, "off") == 0;
    /* The runtime's samples only (sampled and attach): full mode's own sampler has the object's
     * allocation in hand, and its samples are the exact counts' companions. */
    const char *budget = getenv("HEAPLENS_SAMPLE_BUDGET");
    char *end = NULL;
    unsigned long b = budget && *budget ? strtoul(budget, &end, 10) : HL_SAMPLE_BUDGET_DEFAULT;
    if (budget && *budget && (*end || b > UINT32_MAX))
        b = HL_SAMPLE_BUDGET_DEFAULT; /* not a number: the default, as for any bad setting */
    p->sampling.budget = mode == HL_MODE_FULL ? 0 : (uint32_t)b;
    /* Full mode sees every allocation in ObjectAllocated: the collector samples there itself,
     * on every runtime, not from the session (HEAPLENS_FULL_SAMPLER=eventpipe: the runtime's).
     * The session still runs for extra_keywords (GC reasons, survivor ranges). */
    const char *sampler = getenv("HEAPLENS_FULL_SAMPLER");
    bool own = samples && mode == HL_MODE_FULL && !(sampler && strcmp(sampler, "eventpipe") == 0);
    int rc = 0;
    if (own) {
        DWORD low = 0, high = 0;
        HRESULT hr = info_get_event_mask2(p->info, &low, &high);
        if (!HR_FAILED(hr))
            hr = info_set_event_mask2(p->info,
                                      (low | COR_PRF_ENABLE_STACK_SNAPSHOT) & ~p->bench_mask_off_low,
                                      high);
        if (HR_FAILED(hr)) {
            rc = -1;
        } else {
            p->sampling.own_sampler = true;
            p->sampling.source = HL_SAMPLE_SOURCE_OBJECT_ALLOCATED; /* AllocationSampled's statistics */
        }
        samples = false; /* none from the session */
    }
    if (!samples && !extra_keywords)
        return rc; /* nothing asked of a session */
    if (p->info_version < 12)
        return -1;
    int major = atoi(p->runtime_version);
    uint32_t source = major >= 10 ? HL_SAMPLE_SOURCE_ALLOCATION_SAMPLED
                                  : HL_SAMPLE_SOURCE_ALLOCATION_TICK;
    const char *forced = getenv("HEAPLENS_SAMPLE_SOURCE"); /* tests: force the fallback */
    if (forced && strcmp(forced, "tick") == 0)
        source = HL_SAMPLE_SOURCE_ALLOCATION_TICK;
    if (!samples)
        source = HL_SAMPLE_SOURCE_NONE;
    DWORD low = 0, high = 0;
    HRESULT hr = info_get_event_mask2(p->info, &low, &high);
    if (!HR_FAILED(hr))
        hr = info_set_event_mask2(
            p->info, (low | (samples ? COR_PRF_ENABLE_STACK_SNAPSHOT : 0)) & ~p->bench_mask_off_low,
            (high | COR_PRF_HIGH_MONITOR_EVENT_PIPE) & ~p->bench_mask_off_high);
    if (HR_FAILED(hr)) {
        return -1;
    }
    static const WCHAR provider[] = {'M', 'i', 'c', 'r', 'o', 's', 'o', 'f', 't', '-', 'W', 'i',
                                     'n', 'd', 'o', 'w', 's', '-', 'D', 'o', 't', 'N', 'E', 'T',
                                     'R', 'u', 'n', 't', 'i', 'm', 'e', 0};
    uint64_t keywords = source == HL_SAMPLE_SOURCE_ALLOCATION_SAMPLED ? KEYWORD_ALLOCATION_SAMPLING
                        : source == HL_SAMPLE_SOURCE_ALLOCATION_TICK  ? KEYWORD_GC
                                                                       : 0;
    /* The program's checkpoints: EventSource "HeapLens", every keyword and level. */
    static const WCHAR heaplens[] = {'H', 'e', 'a', 'p', 'L', 'e', 'n', 's', 0};
    /* The runtime's FailFast event (collector/README.md, "Environment.FailFast"): the private
     * provider at level Critical with no keyword enables it alone (events with keywords need
     * one of the session's). */
    static const WCHAR private_provider[] = {
        'M', 'i', 'c', 'r', 'o', 's', 'o', 'f', 't', '-', 'W', 'i', 'n', 'd', 'o', 'w', 's', '-',
        'D', 'o', 't', 'N', 'E', 'T', 'R', 'u', 'n', 't', 'i', 'm', 'e', 'P', 'r', 'i', 'v', 'a',
        't', 'e', 0};
    COR_PRF_EVENTPIPE_PROVIDER_CONFIG all[3] = {
        {
            .provider_name = provider,
            .keywords = keywords | extra_keywords,
            .logging_level = source == HL_SAMPLE_SOURCE_ALLOCATION_TICK ? LEVEL_VERBOSE
                                                                         : LEVEL_INFORMATIONAL,
        },
        {.provider_name = heaplens, .keywords = ~0ull, .logging_level = LEVEL_VERBOSE},
        {.provider_name = private_provider, .keywords = 0, .logging_level = LEVEL_CRITICAL},
    };
    /* HEAPLENS_EMPTY_SESSION=LIST (benchmark, empty profiler only): which parts of the session
     * it enables, of `gc` (the runtime provider's GC keyword), `heaplens` and `failfast` (the
     * private provider), to measure each; the samples' keyword is HEAPLENS_EMPTY_SAMPLES'.
     * The runtime provider is left out when it has no keyword left. */
    COR_PRF_EVENTPIPE_PROVIDER_CONFIG config[3];
    uint32_t providers = 0;
    const char *parts = p->empty ? getenv("HEAPLENS_EMPTY_SESSION") : NULL;
    if (parts && !strstr(parts, "gc"))
        all[0].keywords &= ~(uint64_t)KEYWORD_GC;
    if (all[0].keywords || !parts)
        config[providers++] = all[0];
    if (!parts || strstr(parts, "heaplens"))
        config[providers++] = all[1];
    if (!parts || strstr(parts, "failfast"))
        config[providers++] = all[2];
    /* Events can arrive before EventPipeStartSession returns: the source must be set first. */
    if (samples)
        p->sampling.source = source;
    EVENTPIPE_SESSION session = 0;
    hr = providers ? info_event_pipe_start_session(p->info, providers, config, 0, &session)
                   : E_FAIL;
    if (HR_FAILED(hr)) {
        if (samples)
            p->sampling.source = HL_SAMPLE_SOURCE_NONE;
        return -1;
    }
    p->sampling.session = session;
    p->sampling.session_on = true;
    return rc;
}

/* The source stays: the samples still in the buffers (the tail interval's) are sent with it.
 * Callers turn the callbacks off first (p->active), so a late event is ignored. */
void hl_eventpipe_stop(hl_profiler *p) {
    if (!p->sampling.session_on)
        return;
    info_event_pipe_stop_session(p->info, p->sampling.session);
    p->sampling.session_on = false;
}
