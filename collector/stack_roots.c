/* stack_roots.c — see stack_roots.h. */
#define _GNU_SOURCE /* pthread_getattr_np, process_vm_readv */
#include "collector/stack_roots.h"
#include "collector/clock.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "collector/gc_capture.h"
#include "collector/mem.h"

#define CHUNK (64u << 10) /* bytes read at once */

void hl_stack_ranges_init(hl_stack_ranges *r) {
    atomic_flag_clear(&r->lock);
    r->n = 0;
}

static void ranges_lock(hl_stack_ranges *r) {
    while (atomic_flag_test_and_set_explicit(&r->lock, memory_order_acquire))
        ; /* held for a short scan and a store */
}

static void ranges_unlock(hl_stack_ranges *r) {
    atomic_flag_clear_explicit(&r->lock, memory_order_release);
}

static uint32_t self_tid(void) {
    return (uint32_t)syscall(SYS_gettid);
}

void hl_stack_ranges_note_self(hl_stack_ranges *r, uint32_t os_tid) {
    if (!os_tid || os_tid != self_tid())
        return; /* a callback about another thread */
    pthread_attr_t a;
    void *addr = NULL;
    size_t size = 0;
    if (pthread_getattr_np(pthread_self(), &a) != 0)
        return;
    int rc = pthread_attr_getstack(&a, &addr, &size);
    pthread_attr_destroy(&a);
    if (rc != 0 || !addr || !size)
        return;
    hl_stack_range range = {.os_tid = os_tid, .lo = (uint64_t)(uintptr_t)addr,
                            .hi = (uint64_t)(uintptr_t)addr + size};
    ranges_lock(r);
    uint32_t i = 0;
    while (i < r->n && r->items[i].os_tid != os_tid)
        i++;
    if (i < r->n)
        r->items[i] = range; /* a thread id used again: the new thread's */
    else if (r->n < HL_STACK_RANGES_MAX)
        r->items[r->n++] = range;
    ranges_unlock(r);
}

static bool range_of(hl_stack_ranges *r, uint32_t os_tid, hl_stack_range *out) {
    bool found = false;
    ranges_lock(r);
    for (uint32_t i = 0; i < r->n && !found; i++)
        if (r->items[i].os_tid == os_tid) {
            *out = r->items[i];
            found = true;
        }
    ranges_unlock(r);
    return found;
}

typedef struct wanted {
    uint64_t addr;
    uint32_t os_tid; /* the first thread found holding it */
    uint32_t holders; /* 0, 1, or 2 for several */
} wanted;

static int wanted_cmp(const void *a, const void *b) {
    const wanted *x = a, *y = b;
    return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static wanted *wanted_find(wanted *w, size_t n, uint64_t addr) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (w[mid].addr < addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && w[lo].addr == addr ? &w[lo] : NULL;
}

/* Reads [lo, hi) of this process's memory into buf: false if any of it is not readable. */
static bool read_self(uint64_t lo, uint64_t hi, uint8_t *buf) {
    struct iovec local = {.iov_base = buf, .iov_len = hi - lo};
    struct iovec remote = {.iov_base = (void *)(uintptr_t)lo, .iov_len = hi - lo};
    return process_vm_readv(getpid(), &local, 1, &remote, 1, 0) == (ssize_t)(hi - lo);
}

/* Marks each wanted address among the words of buf[0..bytes) as held by `os_tid`. */
static void scan_words(const uint8_t *buf, uint64_t bytes, uint32_t os_tid, wanted *w, size_t n) {
    const uint64_t *words = (const uint64_t *)(const void *)buf;
    size_t n_words = (size_t)(bytes / sizeof(uint64_t));
    uint64_t min = w[0].addr, max = w[n - 1].addr;
    for (size_t k = 0; k < n_words; k++) {
        uint64_t v = words[k];
        if (v < min || v > max)
            continue;
        wanted *hit = wanted_find(w, n, v);
        if (!hit)
            continue;
        if (hit->holders == 0) {
            hit->holders = 1;
            hit->os_tid = os_tid;
        } else if (hit->os_tid != os_tid) {
            hit->holders = 2;
        }
    }
}

/* The resident part of the stack [lo, hi), from hi down, 64 KiB at a time: every run of
 * resident pages is read (a page in the middle of a used stack may never have been touched: a
 * large frame's buffer), down to a chunk with no resident page or a page not mapped. Each
 * wanted address found is marked as held by `os_tid`. False when nothing could be read. */
static bool scan_stack(uint64_t lo, uint64_t hi, uint32_t os_tid, wanted *w, size_t n,
                       uint8_t *buf, uint64_t *bytes) {
    uint64_t page = (uint64_t)sysconf(_SC_PAGESIZE);
    unsigned char resident[CHUNK / 4096];
    if (page < 4096 || CHUNK % page)
        return false;
    lo = (lo + page - 1) & ~(page - 1);
    hi &= ~(page - 1);
    uint64_t floor = hi - lo > HL_STACK_READ_MAX ? hi - HL_STACK_READ_MAX : lo;
    bool any = false, end = false;
    for (uint64_t top = hi; top > floor && !end;) {
        uint64_t bottom = top - floor > CHUNK ? top - CHUNK : floor;
        size_t pages = (size_t)((top - bottom) / page), lowest = 0;
        if (mincore((void *)(uintptr_t)bottom, (size_t)(top - bottom), resident) != 0) {
            /* a part not mapped: the pages above it, one by one from the top */
            lowest = pages;
            while (lowest > 0 && mincore((void *)(uintptr_t)(bottom + (lowest - 1) * page),
                                         (size_t)page, &resident[lowest - 1]) == 0)
                lowest--;
            end = true;
        }
        bool found = false;
        for (size_t k = pages; k > lowest;) {
            if (!(resident[k - 1] & 1)) {
                k--;
                continue;
            }
            size_t run_top = k;
            while (k > lowest && (resident[k - 1] & 1))
                k--;
            uint64_t from = bottom + k * page, to = bottom + run_top * page;
            found = true;
            if (!read_self(from, to, buf)) {
                end = true; /* not readable: not the stack any more */
                break;
            }
            any = true;
            *bytes += to - from;
            scan_words(buf, to - from, os_tid, w, n);
        }
        if (!found)
            break; /* a chunk never touched: below the deepest the thread went */
        top = bottom;
    }
    return any;
}

bool hl_stack_roots_find(hl_thread_set *threads, hl_stack_ranges *ranges, ICorProfilerInfo *info,
                         const struct hl_root *roots, size_t n, uint32_t *out,
                         hl_stack_search *stats) {
    uint64_t t0 = hl_now_ns();
    bool ok = true;
    memset(out, 0, n * sizeof *out);
    memset(stats, 0, sizeof *stats);
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        m += roots[i].kind == HL_ROOT_STACK && roots[i].object;
    if (!m)
        return true;
    wanted *w = hl_mem_malloc(m * sizeof *w);
    uint8_t *buf = hl_mem_malloc(CHUNK);
    uint32_t *tids = hl_mem_malloc(HL_THREAD_SET_MAX * sizeof *tids);
    if (!w || !buf || !tids) {
        ok = false;
        goto out;
    }
    m = 0;
    for (size_t i = 0; i < n; i++)
        if (roots[i].kind == HL_ROOT_STACK && roots[i].object)
            w[m++] = (wanted){.addr = (uint64_t)roots[i].object};
    qsort(w, m, sizeof *w, wanted_cmp);
    size_t u = 0;
    for (size_t i = 0; i < m; i++)
        if (u == 0 || w[u - 1].addr != w[i].addr)
            w[u++] = w[i];
    m = u;
    /* The thread running this GC: from this frame up (below it, stale words of the GC's own
     * work on the very objects looked for). */
    uint32_t self = self_tid();
    uint64_t here = (uint64_t)(uintptr_t)__builtin_frame_address(0);
    size_t n_tids = hl_thread_set_os_tids(threads, info, tids, HL_THREAD_SET_MAX);
    stats->threads = (uint32_t)n_tids;
    for (size_t t = 0; t < n_tids; t++) {
        hl_stack_range r;
        if (!range_of(ranges, tids[t], &r)) {
            stats->unread++;
            continue;
        }
        if (tids[t] == self && here > r.lo && here < r.hi)
            r.lo = here;
        if (!scan_stack(r.lo, r.hi, tids[t], w, m, buf, &stats->bytes))
            stats->unread++;
    }
    /* A thread not read could hold any of them: then none is named. */
    if (stats->unread == 0 && threads->overflowed == 0) {
        for (size_t i = 0; i < n; i++) {
            if (roots[i].kind != HL_ROOT_STACK || !roots[i].object)
                continue;
            const wanted *hit = wanted_find(w, m, (uint64_t)roots[i].object);
            if (hit && hit->holders == 1) {
                out[i] = hit->os_tid;
                stats->named++;
            } else if (hit && hit->holders == 2) {
                stats->shared++;
            }
        }
    }
out:
    hl_mem_free(w);
    hl_mem_free(buf);
    hl_mem_free(tids);
    stats->ns = hl_now_ns() - t0;
    return ok;
}
