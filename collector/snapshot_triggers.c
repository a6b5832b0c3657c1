/* snapshot_triggers.c — the snapshot triggers, on the collector thread: what each GC applied
 * left (its generations' sizes and its pause) and the clock are judged by snapshot_policy.c; a
 * trigger that fires asks for a snapshot as `heaplens snapshot PID` does, and its reason goes
 * with the snapshot (SNAPSHOT_REASON, snapshot.c). No runtime thread does any of this. */
#include "collector/collector_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The first time: the session's start for every:Ns, and the memory limit for limit:PCT (the
 * GC's own hard limit when the environment sets one, else the cgroup's or the machine's). */
static void triggers_ready(collector *c) {
    hl_profiler *p = c->p;
    c->triggers_ready = true;
    c->triggers.start_ns = hl_now_ns();
    if (!p->policy.limit_pct)
        return;
    static const char *const names[] = {"DOTNET_GCHeapHardLimit", "COMPlus_GCHeapHardLimit"};
    for (size_t i = 0; i < sizeof names / sizeof names[0] && !c->triggers.limit_bytes; i++) {
        c->triggers.limit_bytes = hl_heap_hard_limit_parse(getenv(names[i]));
        if (c->triggers.limit_bytes)
            snprintf(c->triggers.limit_source, sizeof c->triggers.limit_source, "%s", names[i]);
    }
    if (!c->triggers.limit_bytes)
        c->triggers.limit_bytes = hl_memory_limit_read("", c->triggers.limit_source,
                                                       sizeof c->triggers.limit_source);
}

static bool triggers_on(collector *c) {
    hl_profiler *p = c->p;
    if (!hl_snapshot_policy_triggers(&p->policy) || c->ending ||
        atomic_load_explicit(&p->stopping, memory_order_relaxed) ||
        atomic_load_explicit(&p->detach_requested, memory_order_relaxed))
        return false;
    if (!c->triggers_ready)
        triggers_ready(c);
    return true;
}

static void trigger_ask(collector *c, uint32_t trigger) {
    c->trigger_pending = trigger;
    hl_collector_request_snapshot(c->p, trigger);
}

void hl_collector_triggers_gc(collector *c, const hl_gc_capture *g,
                              const uint64_t size_after[HL_GEN_COUNT_GC], uint32_t snapshot) {
    if (c->trigger_pending && g->snapshot_trigger == c->trigger_pending)
        c->trigger_pending = 0; /* taken (its reason went with it), or lost with its GC */
    if (!triggers_on(c))
        return;
    uint64_t resume = atomic_load(&g->resume_ns);
    hl_trigger_gc t = {.gc = g->gc, .generation = g->generation, .snapshot = snapshot,
                       .gen2_bytes = size_after[HL_GEN_2],
                       .pause_ns = g->suspend_ns && resume >= g->suspend_ns
                                       ? resume - g->suspend_ns
                                       : g->end_ns - g->start_ns};
    for (int i = 0; i < HL_GEN_COUNT_GC; i++)
        t.heap_bytes += size_after[i];
    /* One at a time: while one is pending nothing fires, but the state follows the GCs. */
    uint32_t taken = c->trigger_pending ? UINT32_MAX : atomic_load(&c->p->snapshots_by_policy);
    uint32_t fired = hl_triggers_after_gc(&c->triggers, &c->p->policy, &t, hl_now_ns(), taken,
                                          c->trigger_reason, sizeof c->trigger_reason);
    if (fired)
        trigger_ask(c, fired);
}

void hl_collector_triggers_tick(collector *c) {
    if (c->trigger_pending || !c->p->policy.every_ns || !triggers_on(c))
        return;
    uint32_t fired = hl_triggers_tick(&c->triggers, &c->p->policy, hl_now_ns(),
                                      atomic_load(&c->p->snapshots_by_policy), c->snapshots,
                                      c->trigger_reason, sizeof c->trigger_reason);
    if (fired)
        trigger_ask(c, fired);
}

void hl_collector_triggers_replaced(collector *c) {
    c->trigger_pending = 0;
}
