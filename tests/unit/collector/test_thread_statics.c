/* test_thread_statics.c — the slots of thread statics found inside a snapshot's GC
 * (thread_statics.h), with a fake ICorProfilerInfo: every thread of the set and every published
 * field asked (a slot each, with the thread's OS id), a thread removed not asked again (its
 * ThreadID is never used after ThreadDestroyed), a thread that never set a field skipped, fields
 * published later seen by the next capture, and the set's and the list's limits. */
#include <string.h>

#include "collector/mem.h"
#include "collector/thread_statics.h"
#include "tests/unit/common/check.h"

/* Fake threads 0x100 + k with OS ids 1000 + k; thread 0x102 never set field 2. */
static int asked_dead;
static HRESULT fake_thread_info(ICorProfilerInfo *i, ThreadID t, DWORD *os_tid) {
    (void)i;
    if (t == 0xdead)
        asked_dead++;
    *os_tid = (DWORD)(1000 + (t - 0x100));
    return S_OK;
}
static HRESULT fake_tls_address(ICorProfilerInfo *i, ClassID c, mdToken field, AppDomainID d,
                                ThreadID t, void **address) {
    (void)i, (void)c, (void)d;
    if (t == 0xdead)
        asked_dead++;
    if (t == 0x102 && field == 2) {
        *address = NULL;
        return (HRESULT)0x80070057; /* E_INVALIDARG: not set on this thread */
    }
    *address = (void *)(uintptr_t)(0x10000 * (t - 0xff) + 8 * field);
    return S_OK;
}
static clr_method vtbl[INFO_GetThreadStaticAddress2 + 1];
static clr_object info_obj = {.vtbl = vtbl};
#define INFO ((ICorProfilerInfo *)&info_obj)

static hl_thread_set threads;
static hl_tls_fields fields;

static const hl_tls_slot *find(const hl_tls_slot *v, size_t n, uint32_t field, uint32_t os_tid) {
    for (size_t i = 0; i < n; i++)
        if (v[i].field == field && v[i].os_tid == os_tid)
            return &v[i];
    return NULL;
}

int main(void) {
    vtbl[INFO_GetThreadInfo] = (clr_method)fake_thread_info;
    vtbl[INFO_GetThreadStaticAddress2] = (clr_method)fake_tls_address;
    hl_thread_set_init(&threads);
    hl_tls_fields_init(&fields);
    hl_tls_slot *slots = NULL;
    size_t n = 0, cap = 0;

    /* nothing published: nothing asked */
    hl_thread_set_add(&threads, 0x100);
    CHECK(hl_tls_capture(&threads, &fields, INFO, &slots, &n, &cap));
    CHECK_INT(n, 0);

    hl_thread_set_add(&threads, 0xdead);
    hl_thread_set_add(&threads, 0x101);
    hl_thread_set_add(&threads, 0x102);
    hl_thread_set_remove(&threads, 0xdead); /* ThreadDestroyed */
    CHECK_INT(threads.n, 3);
    CHECK(hl_tls_fields_add(&fields, &(hl_tls_field){.cls = 0x7000, .token = 1, .domain = 1,
                                                      .field = 7}));
    CHECK(hl_tls_capture(&threads, &fields, INFO, &slots, &n, &cap));
    CHECK_INT(n, 3);
    for (uint32_t k = 0; k < 3; k++) {
        const hl_tls_slot *s = find(slots, n, 7, 1000 + k);
        CHECK(s != NULL && s->addr == 0x10000 * (k + 1) + 8);
    }
    CHECK_INT(asked_dead, 0);

    /* a field published later: the next capture asks it too, except where it was never set */
    CHECK(hl_tls_fields_add(&fields, &(hl_tls_field){.cls = 0x7000, .token = 2, .domain = 1,
                                                      .field = 9}));
    n = 0;
    CHECK(hl_tls_capture(&threads, &fields, INFO, &slots, &n, &cap));
    CHECK_INT(n, 5);
    CHECK(find(slots, n, 9, 1000) != NULL && find(slots, n, 9, 1001) != NULL);
    CHECK(find(slots, n, 9, 1002) == NULL);
    CHECK_INT(asked_dead, 0);

    /* limits: a full set counts what it could not keep; a full list refuses */
    hl_thread_set_init(&threads);
    for (int i = 0; i < HL_THREAD_SET_MAX + 3; i++)
        hl_thread_set_add(&threads, 0x100 + (ThreadID)i);
    CHECK_INT(threads.n, HL_THREAD_SET_MAX);
    CHECK_INT(threads.overflowed, 3);
    hl_tls_fields_init(&fields);
    int refused = 0;
    for (int i = 0; i < HL_TLS_FIELDS_MAX + 2; i++)
        refused += !hl_tls_fields_add(&fields, &(hl_tls_field){.field = (uint32_t)i});
    CHECK_INT(refused, 2);
    hl_mem_free(slots);
    return failures ? 1 : 0;
}
