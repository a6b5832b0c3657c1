/* follow.c — see follow.h. */
#include "collector/follow.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "collector/collector.h"
#include "collector/gc_capture.h"
#include "collector/mem.h"

int hl_follow_init(hl_follow *f, bool on, bool attach) {
    memset(f, 0, sizeof *f);
    if (!on)
        return 0;
    atomic_store(&f->armed, !attach);
    f->entries = hl_mem_calloc(HL_FOLLOW_MAX, sizeof *f->entries); /* fresh pages, used as
                                                                      * touched */
    if (!f->entries)
        return -1;
    const char *check = getenv("HEAPLENS_FOLLOW_CHECK");
    f->check = check && strcmp(check, "1") == 0;
    const char *stats = getenv("HEAPLENS_STATS");
    f->timed = stats && strcmp(stats, "1") == 0;
    f->on = true;
    return 0;
}

void hl_follow_release(hl_follow *f) {
    hl_mem_free(f->entries);
    memset(f, 0, sizeof *f);
}

/* A callback about to use the table (hl_follow_close waits for it); false once closed. */
static bool follow_enter(hl_follow *f) {
    atomic_fetch_add(&f->users, 1);
    if (!atomic_load(&f->closed))
        return true;
    atomic_fetch_sub(&f->users, 1);
    return false;
}

static void follow_leave(hl_follow *f) { atomic_fetch_sub(&f->users, 1); }

void hl_follow_add(hl_follow *f, ICorProfilerInfo *info, ObjectID object) {
    if (!f->on || !object || atomic_load_explicit(&f->fallback, memory_order_relaxed) ||
        !atomic_load_explicit(&f->armed, memory_order_relaxed) || !follow_enter(f))
        return;
    uint64_t i = atomic_fetch_add_explicit(&f->top, 1, memory_order_relaxed);
    ObjectHandleID h = 0;
    if (i >= HL_FOLLOW_MAX ||
        HR_FAILED(info_create_handle(info, object, COR_PRF_HANDLE_TYPE_WEAK, &h)) || !h) {
        /* The slot (if any) stays 0 and is dropped at the next GC. */
        atomic_fetch_add_explicit(&f->create_failures, 1, memory_order_relaxed);
        atomic_store_explicit(&f->fallback, true, memory_order_release);
        follow_leave(f);
        return;
    }
    f->entries[i].addr = object;
    atomic_store_explicit(&f->entries[i].handle, h, memory_order_release);
    atomic_fetch_add_explicit(&f->created, 1, memory_order_relaxed);
    follow_leave(f);
}

bool hl_follow_gc_needs_ranges(hl_follow *f, uint32_t gc, uint32_t condemned_mask,
                               bool snapshot) {
    bool need = f->check || snapshot || atomic_load_explicit(&f->fallback, memory_order_acquire);
    if (!need) {
        uint64_t named = atomic_load_explicit(&f->named, memory_order_acquire);
        uint32_t applied = (uint32_t)(named >> 32), mask = (uint32_t)named & 0x1f;
        if (applied + 1 == gc)
            need = (mask & condemned_mask) != 0; /* the collector is up to date */
        else /* it has not applied the GC before this one: what it knows may have moved down
              * (demotion) or a snapshot may have named more since */
            need = mask != 0 || f->last_snapshot_gc > applied;
    }
    if (snapshot)
        f->last_snapshot_gc = gc;
    return need;
}


void hl_follow_gc_finished(hl_follow *f, ICorProfilerInfo *info, hl_gc_capture *c) {
    if (!f->on || !c || !follow_enter(f))
        return;
    uint64_t t0 = f->timed ? hl_thread_cpu_ns() : 0;
    uint64_t top = atomic_load_explicit(&f->top, memory_order_acquire);
    if (top > HL_FOLLOW_MAX)
        top = HL_FOLLOW_MAX;
    bool moves = !c->ranges_taken, keep = c->ranges_taken && f->check;
    uint64_t kept = 0;
    for (uint64_t i = 0; i < top; i++) {
        hl_follow_entry *e = &f->entries[i];
        ObjectHandleID h = atomic_load_explicit(&e->handle, memory_order_acquire);
        if (!h)
            continue; /* a failed add: dropped */
        ObjectID now = 0;
        f->lookups++;
        if (HR_FAILED(info_get_object_id_from_handle(info, h, &now)))
            now = 0; /* cannot happen for a handle of ours; treated as dead (and destroyed) */
        if (keep && hl_mem_reserve((void **)&c->follow_seen, &c->cap_follow_seen,
                                   c->n_follow_seen + 1, sizeof *c->follow_seen, 1024))
            c->follow_seen[c->n_follow_seen++] = (hl_follow_seen){e->addr, now};
        if (!now) {
            f->died++;
            if (hl_mem_reserve((void **)&c->dead_handles, &c->cap_dead_handles,
                               c->n_dead_handles + 1, sizeof *c->dead_handles, 1024))
                c->dead_handles[c->n_dead_handles++] = h;
            /* else leaked: a few bytes of the runtime's handle table, never wrong */
            continue;
        }
        if (moves) {
            hm_move m = {e->addr, now, 1};
            hl_gc_add_move(c, &m);
        }
        hl_follow_entry *to = &f->entries[kept++];
        to->addr = now;
        atomic_store_explicit(&to->handle, h, memory_order_relaxed);
    }
    for (uint64_t i = kept; i < top; i++)
        atomic_store_explicit(&f->entries[i].handle, 0, memory_order_relaxed);
    atomic_store_explicit(&f->top, kept, memory_order_release);
    if (f->timed)
        f->lookup_ns += hl_thread_cpu_ns() - t0;
    /* Every thread is suspended: the next allocation is after this GC (hl_collector_follows_new
     * takes it into the model once the collector applied this GC). */
    atomic_store_explicit(&f->armed, true, memory_order_relaxed);
    follow_leave(f);
}

void hl_follow_destroy(hl_follow *f, ICorProfilerInfo *info, hl_gc_capture *c) {
    for (size_t i = 0; i < c->n_dead_handles; i++)
        if (!HR_FAILED(info_destroy_handle(info, c->dead_handles[i])))
            f->destroyed++;
    c->n_dead_handles = 0;
}

static int move_cmp(const void *a, const void *b) {
    const hm_move *x = a, *y = b;
    return x->old_start < y->old_start ? -1 : x->old_start > y->old_start;
}

/* The generation `addr` lay in at the GC's start (bounds before), or -1. */
static int gen_before(const hl_gc_capture *c, uint64_t addr) {
    for (size_t i = 0; i < c->n_before; i++)
        if (addr >= c->before[i].start && addr - c->before[i].start < c->before[i].length)
            return (int)c->before[i].generation;
    return -1;
}

void hl_follow_check(hl_follow *f, const hl_gc_capture *c) {
    if (!c->n_follow_seen || !c->ranges_taken)
        return;
    hm_move *sorted = hl_mem_malloc((c->n_moves ? c->n_moves : 1) * sizeof *sorted);
    if (!sorted)
        return;
    memcpy(sorted, c->moves, c->n_moves * sizeof *sorted);
    qsort(sorted, c->n_moves, sizeof *sorted, move_cmp);
    for (size_t i = 0; i < c->n_follow_seen; i++) {
        uint64_t old = c->follow_seen[i].old_addr, now = c->follow_seen[i].new_addr;
        size_t lo = 0, hi = c->n_moves; /* the last range starting at or before `old` */
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (sorted[mid].old_start <= old)
                lo = mid + 1;
            else
                hi = mid;
        }
        bool covered = lo > 0 && old - sorted[lo - 1].old_start < sorted[lo - 1].length;
        int g = gen_before(c, old);
        bool condemned = g >= 0 && g <= 4 && (c->condemned_mask >> g & 1);
        bool agree;
        if (covered)
            agree = now == sorted[lo - 1].new_start + (old - sorted[lo - 1].old_start);
        else if (condemned)
            agree = now == 0;
        else
            agree = now == old;
        if (agree)
            f->check_agree++;
        else
            f->check_disagree++;
    }
    hl_mem_free(sorted);
}

void hl_follow_named_add(hl_follow *f, uint32_t gen, int64_t n) {
    if (gen <= 4)
        f->named_count[gen] += n;
}

void hl_follow_named_publish(hl_follow *f, uint32_t gc) {
    uint32_t mask = 0;
    for (uint32_t g = 0; g <= 4; g++)
        if (f->named_count[g] > 0)
            mask |= 1u << g;
    atomic_store_explicit(&f->named, (uint64_t)gc << 32 | mask, memory_order_release);
}

void hl_follow_close(hl_follow *f, ICorProfilerInfo *info) {
    if (!f->on)
        return;
    atomic_store(&f->closed, true);
    while (atomic_load(&f->users) > 0) { /* a CreateHandle or a GC's lookups: microseconds */
        struct timespec wait = {0, 100000};
        nanosleep(&wait, NULL);
    }
    uint64_t top = atomic_load_explicit(&f->top, memory_order_acquire);
    if (top > HL_FOLLOW_MAX)
        top = HL_FOLLOW_MAX;
    for (uint64_t i = 0; i < top; i++) {
        ObjectHandleID h = atomic_exchange_explicit(&f->entries[i].handle, 0, memory_order_acquire);
        if (h && !HR_FAILED(info_destroy_handle(info, h)))
            f->released++;
    }
    atomic_store_explicit(&f->top, 0, memory_order_release);
}
