/* test_thread_statics.c — the slots of thread statics found inside a snapshot's GC
 * (thread_statics.h), with a fake ICorProfilerInfo: every thread of the set and every published
 * field asked (a slot each, with the thread's OS id), a thread removed not asked again (its
 * ThreadID is never used after ThreadDestroyed), a thread that never set a field skipped, fields
 * published later seen by the next capture, and the set's and the list's limits; a field
 * published twice (class load and statics.c) kept once; the threads of an EnumThreads list
 * added except one whose ThreadDestroyed came meanwhile, none twice, none when more ended than
 * are noted; a class load publishing exactly its static reference fields that the runtime says
 * are thread statics (a fake metadata: instance, literal, value and thread-static fields). */
#include <stdbool.h>
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
/* A fake class 0x7100 (module 0x50, typedef 0x02000005) with fields 0x04000001..5: an instance
 * reference, a static int, a literal string, a static string, a [ThreadStatic] object and a
 * [ThreadStatic] int. */
static const uint8_t sig_object[] = {0x06, 0x1c}, sig_int[] = {0x06, 0x08},
                     sig_string[] = {0x06, 0x0e};
static const struct {
    DWORD attr;
    const uint8_t *sig;
    bool thread_static;
} fake_fields[] = {{0, sig_object, false},         {0x10, sig_int, false},
                   {0x10 | 0x40, sig_string, false}, {0x10, sig_string, false},
                   {0x10, sig_object, true},        {0x10, sig_int, true}};
static int enum_calls;
static HRESULT fake_enum_fields(IMetaDataImport *m, void **e, mdTypeDef td, mdToken *out,
                                ULONG capacity, ULONG *count) {
    (void)m;
    *count = 0;
    if (td != 0x02000005 || *e)
        return S_FALSE;
    *e = &enum_calls;
    for (ULONG k = 0; k < 6 && k < capacity; k++)
        out[(*count)++] = 0x04000001 + k;
    return S_OK;
}
static void fake_close_enum(IMetaDataImport *m, void *e) {
    (void)m, (void)e;
    enum_calls++;
}
/* Calls that asked for more than a field's attributes and signature (its name, parent typedef,
 * constant): the importer's work for each, on every field of every class loaded. */
static int field_props_extra;
static HRESULT fake_field_props(IMetaDataImport *m, mdToken f, mdTypeDef *cls, WCHAR *name,
                                ULONG capacity, ULONG *length, DWORD *attr, const uint8_t **sig,
                                ULONG *sig_size, DWORD *cplus, const void **value,
                                ULONG *value_size) {
    (void)m, (void)capacity;
    uint32_t k = f - 0x04000001;
    /* As RegMeta::GetFieldProps: an output that is NULL is not looked up. */
    if (cls || name || length || cplus || value || value_size)
        field_props_extra++;
    *attr = fake_fields[k].attr;
    *sig = fake_fields[k].sig;
    *sig_size = 2;
    return S_OK;
}
static int released;
static ULONG fake_release(IUnknown *u) {
    (void)u;
    return (ULONG)++released;
}
static clr_method md_vtbl[MDI_GetFieldProps + 1];
static clr_object md_obj = {.vtbl = md_vtbl};
static HRESULT fake_class_info(ICorProfilerInfo *i, ClassID c, ModuleID *module, mdTypeDef *td,
                               ClassID *parent, uint32_t n, uint32_t *total, ClassID *args) {
    (void)i, (void)parent, (void)n, (void)args;
    *total = 0;
    *module = c == 0x7100 ? 0x50 : 0x51;
    *td = c == 0x7100 ? 0x02000005 : 0x02000006;
    return S_OK;
}
static HRESULT fake_metadata(ICorProfilerInfo *i, ModuleID m, DWORD flags, const GUID *iid,
                             IUnknown **out) {
    (void)i, (void)m, (void)flags, (void)iid;
    *out = (IUnknown *)&md_obj;
    return S_OK;
}
static int static_info_calls;
static HRESULT fake_static_info(ICorProfilerInfo *i, ClassID c, mdToken f, uint32_t *kind) {
    (void)i, (void)c;
    static_info_calls++;
    *kind = fake_fields[f - 0x04000001].thread_static ? 0x2 : 0x1;
    return S_OK;
}
static HRESULT fake_module_info(ICorProfilerInfo *i, ModuleID m, const uint8_t **base, ULONG n,
                                ULONG *got, WCHAR *name, AssemblyID *assembly) {
    (void)i, (void)m, (void)base, (void)n, (void)got, (void)name;
    *assembly = 0xa5;
    return S_OK;
}
static HRESULT fake_assembly_info(ICorProfilerInfo *i, AssemblyID a, ULONG n, ULONG *got,
                                  WCHAR *name, AppDomainID *domain, ModuleID *module) {
    (void)i, (void)a, (void)n, (void)got, (void)name, (void)module;
    *domain = 0xd0;
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

static void enum_threads(void) {
    /* an EnumThreads list: 0x201 and 0x202 listed, 0x202 ends before the list is taken in */
    hl_thread_set_init(&threads);
    hl_thread_set_add(&threads, 0x200);
    hl_thread_set_enum_begin(&threads);
    hl_thread_set_add(&threads, 0x201); /* ThreadCreated of a thread also listed */
    hl_thread_set_remove(&threads, 0x202); /* ThreadDestroyed while the list is taken */
    ThreadID listed[] = {0x200, 0x201, 0x202, 0x203};
    hl_thread_set_enum_end(&threads, listed, 4);
    CHECK_INT(threads.n, 3);
    bool seen[4] = {false};
    for (uint32_t i = 0; i < threads.n; i++)
        if (threads.ids[i] >= 0x200 && threads.ids[i] <= 0x203)
            seen[threads.ids[i] - 0x200] = true;
    CHECK(seen[0] && seen[1] && !seen[2] && seen[3]);
    /* after the list, ThreadDestroyed notes nothing and removes as before */
    hl_thread_set_remove(&threads, 0x203);
    CHECK_INT(threads.n, 2);
    CHECK_INT(threads.n_gone, 0);
    /* more ended meanwhile than can be noted: the list is not used */
    hl_thread_set_enum_begin(&threads);
    for (int i = 0; i < HL_THREAD_SET_GONE + 1; i++)
        hl_thread_set_remove(&threads, 0x1000 + (ThreadID)i);
    ThreadID late[] = {0x300};
    hl_thread_set_enum_end(&threads, late, 1);
    CHECK_INT(threads.n, 2);
    CHECK_INT(threads.overflowed, 1);
}

static void class_loaded(void) {
    md_vtbl[MDI_Release] = (clr_method)fake_release;
    md_vtbl[MDI_CloseEnum] = (clr_method)fake_close_enum;
    md_vtbl[MDI_EnumFields] = (clr_method)fake_enum_fields;
    md_vtbl[MDI_GetFieldProps] = (clr_method)fake_field_props;
    hl_tls_fields_init(&fields);
    hl_tls_class_loaded(&fields, INFO, 0x7100);
    CHECK_INT(fields.n, 1);
    CHECK(fields.items[0].cls == 0x7100 && fields.items[0].token == 0x04000005 &&
          fields.items[0].domain == 0xd0 && fields.items[0].module == 0x50);
    CHECK_INT(static_info_calls, 2); /* the static reference fields only */
    CHECK_INT(field_props_extra, 0);  /* attributes and signatures only (clr_info.h) */
    CHECK_INT(enum_calls, 1);
    CHECK_INT(released, 1);
    /* the same field published again (statics.c after an attach): kept once */
    CHECK(hl_tls_fields_add(&fields, &fields.items[0]));
    CHECK_INT(fields.n, 1);
    /* a class with no fields in the metadata: nothing */
    hl_tls_class_loaded(&fields, INFO, 0x7200);
    CHECK_INT(fields.n, 1);
    CHECK_INT(released, 2);
}

int main(void) {
    vtbl[INFO_GetThreadInfo] = (clr_method)fake_thread_info;
    vtbl[INFO_GetThreadStaticAddress2] = (clr_method)fake_tls_address;
    vtbl[INFO_GetClassIDInfo2] = (clr_method)fake_class_info;
    vtbl[INFO_GetModuleMetaData] = (clr_method)fake_metadata;
    vtbl[INFO_GetStaticFieldInfo] = (clr_method)fake_static_info;
    vtbl[INFO_GetModuleInfo] = (clr_method)fake_module_info;
    vtbl[INFO_GetAssemblyInfo] = (clr_method)fake_assembly_info;
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
    CHECK(hl_tls_fields_add(&fields, &(hl_tls_field){.cls = 0x7000, .token = 1, .domain = 1}));
    CHECK(hl_tls_capture(&threads, &fields, INFO, &slots, &n, &cap));
    CHECK_INT(n, 3);
    for (uint32_t k = 0; k < 3; k++) {
        const hl_tls_slot *s = find(slots, n, 0, 1000 + k);
        CHECK(s != NULL && s->addr == 0x10000 * (k + 1) + 8);
    }
    CHECK_INT(asked_dead, 0);

    /* a field published later: the next capture asks it too, except where it was never set */
    CHECK(hl_tls_fields_add(&fields, &(hl_tls_field){.cls = 0x7000, .token = 2, .domain = 1}));
    n = 0;
    CHECK(hl_tls_capture(&threads, &fields, INFO, &slots, &n, &cap));
    CHECK_INT(n, 5);
    CHECK(find(slots, n, 1, 1000) != NULL && find(slots, n, 1, 1001) != NULL);
    CHECK(find(slots, n, 1, 1002) == NULL);
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
        refused += !hl_tls_fields_add(&fields, &(hl_tls_field){.token = (mdToken)i});
    CHECK_INT(refused, 2);
    enum_threads();
    class_loaded();
    hl_mem_free(slots);
    return failures ? 1 : 0;
}
