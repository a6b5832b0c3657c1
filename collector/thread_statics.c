/* thread_statics.c — see thread_statics.h. */
#include "collector/thread_statics.h"

#include <string.h>

#include "collector/mem.h"

void hl_thread_set_init(hl_thread_set *s) {
    atomic_flag_clear(&s->lock);
    s->n = 0;
    s->overflowed = 0;
}

static void lock(hl_thread_set *s) {
    while (atomic_flag_test_and_set_explicit(&s->lock, memory_order_acquire))
        ; /* held for a few stores; never across anything that waits */
}

static void unlock(hl_thread_set *s) {
    atomic_flag_clear_explicit(&s->lock, memory_order_release);
}

void hl_thread_set_add(hl_thread_set *s, ThreadID thread) {
    lock(s);
    if (s->n < HL_THREAD_SET_MAX)
        s->ids[s->n++] = thread;
    else
        s->overflowed++;
    unlock(s);
}

void hl_thread_set_remove(hl_thread_set *s, ThreadID thread) {
    lock(s);
    for (uint32_t i = 0; i < s->n; i++)
        if (s->ids[i] == thread) {
            s->ids[i] = s->ids[--s->n];
            break;
        }
    unlock(s);
}

void hl_tls_fields_init(hl_tls_fields *f) {
    atomic_init(&f->n, 0);
}

bool hl_tls_fields_add(hl_tls_fields *f, const hl_tls_field *field) {
    uint32_t n = atomic_load_explicit(&f->n, memory_order_relaxed);
    if (n >= HL_TLS_FIELDS_MAX)
        return false;
    f->items[n] = *field;
    atomic_store_explicit(&f->n, n + 1, memory_order_release); /* the entry first */
    return true;
}

bool hl_tls_capture(hl_thread_set *threads, const hl_tls_fields *fields, ICorProfilerInfo *info,
                    hl_tls_slot **out, size_t *n, size_t *cap) {
    uint32_t n_fields = atomic_load_explicit(&fields->n, memory_order_acquire);
    bool ok = true;
    if (!n_fields)
        return true;
    /* The set stays locked while its ThreadIDs are used: a thread being destroyed waits in
     * ThreadDestroyed until then (its Thread object is not freed before that callback). */
    lock(threads);
    for (uint32_t t = 0; t < threads->n && ok; t++) {
        DWORD os_tid = 0;
        if (HR_FAILED(info_get_thread_info(info, threads->ids[t], &os_tid)) || !os_tid)
            continue;
        for (uint32_t i = 0; i < n_fields; i++) {
            const hl_tls_field *f = &fields->items[i];
            void *addr = NULL;
            if (HR_FAILED(info_get_thread_static_address2(info, f->cls, f->token, f->domain,
                                                          threads->ids[t], &addr)) ||
                !addr)
                continue; /* this thread never set it */
            if (!hl_mem_reserve((void **)out, cap, *n + 1, sizeof **out, 64)) {
                ok = false;
                break;
            }
            (*out)[(*n)++] = (hl_tls_slot){.addr = (uint64_t)(uintptr_t)addr, .field = f->field,
                                           .os_tid = (uint32_t)os_tid};
        }
    }
    unlock(threads);
    return ok;
}
