/* thread_statics.c — see thread_statics.h. */
#include "collector/thread_statics.h"
#include "collector/clock.h"

#include <string.h>
#include <time.h>

#include "collector/mem.h"

void hl_thread_set_init(hl_thread_set *s) {
    atomic_flag_clear(&s->lock);
    s->n = 0;
    s->overflowed = 0;
    s->enumerating = false;
    s->n_gone = 0;
}

static void lock(hl_thread_set *s) {
    while (atomic_flag_test_and_set_explicit(&s->lock, memory_order_acquire))
        ; /* held for a few stores; never across anything that waits */
}

static void unlock(hl_thread_set *s) {
    atomic_flag_clear_explicit(&s->lock, memory_order_release);
}

static bool holds(const ThreadID *ids, uint32_t n, ThreadID thread) {
    for (uint32_t i = 0; i < n; i++)
        if (ids[i] == thread)
            return true;
    return false;
}

/* Under the lock. A thread already held (created while its EnumThreads list was taken) is not
 * added twice: its slots would be captured twice. */
static void add_locked(hl_thread_set *s, ThreadID thread) {
    if (holds(s->ids, s->n, thread))
        return;
    if (s->n < HL_THREAD_SET_MAX)
        s->ids[s->n++] = thread;
    else
        s->overflowed++;
}

void hl_thread_set_add(hl_thread_set *s, ThreadID thread) {
    lock(s);
    add_locked(s, thread);
    unlock(s);
}

void hl_thread_set_remove(hl_thread_set *s, ThreadID thread) {
    lock(s);
    if (s->enumerating && s->n_gone <= HL_THREAD_SET_GONE) {
        if (s->n_gone < HL_THREAD_SET_GONE)
            s->gone[s->n_gone] = thread;
        s->n_gone++; /* past the array: the list is dropped at _end */
    }
    for (uint32_t i = 0; i < s->n; i++)
        if (s->ids[i] == thread) {
            s->ids[i] = s->ids[--s->n];
            break;
        }
    unlock(s);
}

void hl_thread_set_enum_begin(hl_thread_set *s) {
    lock(s);
    s->enumerating = true;
    s->n_gone = 0;
    unlock(s);
}

void hl_thread_set_enum_end(hl_thread_set *s, const ThreadID *ids, size_t n) {
    lock(s);
    if (s->n_gone > HL_THREAD_SET_GONE) {
        s->overflowed += n; /* which ones ended is not known: none is used */
    } else {
        for (size_t i = 0; i < n; i++)
            if (!holds(s->gone, s->n_gone, ids[i]))
                add_locked(s, ids[i]);
    }
    s->enumerating = false;
    s->n_gone = 0;
    unlock(s);
}

size_t hl_thread_set_os_tids(hl_thread_set *s, ICorProfilerInfo *info, uint32_t *out, size_t cap) {
    size_t n = 0;
    lock(s);
    for (uint32_t t = 0; t < s->n && n < cap; t++) {
        DWORD os_tid = 0;
        if (!HR_FAILED(info_get_thread_info(info, s->ids[t], &os_tid)) && os_tid)
            out[n++] = (uint32_t)os_tid;
    }
    unlock(s);
    return n;
}

void hl_tls_fields_init(hl_tls_fields *f) {
    atomic_flag_clear(&f->lock);
    atomic_init(&f->n, 0);
    atomic_init(&f->classes_seen, 0);
    atomic_init(&f->class_ns, 0);
}

bool hl_tls_fields_add(hl_tls_fields *f, const hl_tls_field *field) {
    bool ok = true;
    while (atomic_flag_test_and_set_explicit(&f->lock, memory_order_acquire))
        ; /* held for a short scan and one store */
    uint32_t n = atomic_load_explicit(&f->n, memory_order_relaxed);
    for (uint32_t i = 0; i < n; i++)
        if (f->items[i].cls == field->cls && f->items[i].token == field->token)
            goto out; /* published by the other path (class load, statics.c) */
    if (n >= HL_TLS_FIELDS_MAX) {
        ok = false;
        goto out;
    }
    f->items[n] = *field;
    atomic_store_explicit(&f->n, n + 1, memory_order_release); /* the entry first */
out:
    atomic_flag_clear_explicit(&f->lock, memory_order_release);
    return ok;
}

/* The signature is FIELD (6), custom modifiers, then the type. */
static bool field_sig_may_hold_reference(const uint8_t *sig, ULONG n) {
    ULONG i = 1;
    if (n < 2 || sig[0] != 0x06)
        return false;
    while (i < n && (sig[i] == 0x1f || sig[i] == 0x20)) { /* CMOD_REQD / CMOD_OPT token */
        i++;
        if (i < n)
            i += (sig[i] & 0x80) == 0 ? 1 : (sig[i] & 0xC0) == 0x80 ? 2 : 4;
    }
    if (i >= n)
        return false;
    uint8_t t = sig[i];
    return !((t >= 0x01 && t <= 0x0d) || t == 0x0f || t == 0x18 || t == 0x19 || t == 0x1b);
}

void hl_static_reference_fields(IMetaDataImport *mdi, mdTypeDef td, hl_static_field_fn fn,
                                void *ctx) {
    void *e = NULL;
    mdToken tokens[64];
    ULONG got = 0;
    while (!HR_FAILED(mdi_enum_fields(mdi, &e, td, tokens, 64, &got)) && got > 0) {
        for (ULONG k = 0; k < got; k++) {
            ULONG sig_size = 0;
            DWORD attr = 0;
            const uint8_t *sig = NULL;
            if (!HR_FAILED(mdi_get_field_attr_sig(mdi, tokens[k], &attr, &sig, &sig_size)) &&
                (attr & fdStatic) && !(attr & (fdLiteral | fdHasFieldRVA)) &&
                field_sig_may_hold_reference(sig, sig_size))
                fn(ctx, tokens[k]);
        }
    }
    if (e)
        mdi_close_enum(mdi, e);
}

AppDomainID hl_module_domain(ICorProfilerInfo *info, ModuleID module) {
    AssemblyID assembly = 0;
    AppDomainID domain = 0;
    if (HR_FAILED(info_get_module_info(info, module, &assembly)) || !assembly ||
        HR_FAILED(info_get_assembly_domain(info, assembly, &domain)))
        return 0;
    return domain;
}

static void class_fields(hl_tls_fields *f, ICorProfilerInfo *info, ClassID cls);

void hl_tls_class_loaded(hl_tls_fields *f, ICorProfilerInfo *info, ClassID cls) {
    uint64_t t0 = hl_now_ns();
    class_fields(f, info, cls);
    atomic_fetch_add_explicit(&f->classes_seen, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&f->class_ns, hl_now_ns() - t0, memory_order_relaxed);
}

/* hl_static_reference_fields' callback: publishes the field if it is a thread static. */
typedef struct class_fields_ctx {
    hl_tls_fields *f;
    ICorProfilerInfo *info;
    ClassID cls;
    ModuleID module;
    AppDomainID domain;
} class_fields_ctx;

static void class_field(void *ctx, mdToken token) {
    class_fields_ctx *x = ctx;
    uint32_t kind = 0;
    if (HR_FAILED(info_get_static_field_info(x->info, x->cls, token, &kind)) ||
        !(kind & COR_PRF_FIELD_THREAD_STATIC))
        return;
    if (!x->domain)
        x->domain = hl_module_domain(x->info, x->module);
    hl_tls_field t = {.cls = x->cls, .token = token, .domain = x->domain, .module = x->module};
    if (x->domain)
        hl_tls_fields_add(x->f, &t);
}

static void class_fields(hl_tls_fields *f, ICorProfilerInfo *info, ClassID cls) {
    mdTypeDef td = 0;
    ClassID parent = 0;
    uint32_t n_args = 0;
    IUnknown *mdu = NULL;
    class_fields_ctx x = {.f = f, .info = info, .cls = cls};
    if (HR_FAILED(info_get_class_id_info2(info, cls, &x.module, &td, &parent, 0, &n_args, NULL)) ||
        !x.module || !td ||
        HR_FAILED(info_get_module_metadata(info, x.module, ofRead, &IID_IMetaDataImport, &mdu)) ||
        !mdu)
        return;
    hl_static_reference_fields((IMetaDataImport *)mdu, td, class_field, &x);
    clr_release(mdu);
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
            (*out)[(*n)++] = (hl_tls_slot){.addr = (uint64_t)(uintptr_t)addr, .field = i,
                                           .os_tid = (uint32_t)os_tid};
        }
    }
    unlock(threads);
    return ok;
}
