/* clr_info.h — typed calls into ICorProfilerInfoN and IMetaDataImport by slot number.
 * Each wrapper casts one vtable slot to the method's real signature (see clr_abi.h). */
#ifndef HEAPLENS_CLR_INFO_H
#define HEAPLENS_CLR_INFO_H

#include "collector/clr_abi.h"

typedef clr_object ICorProfilerInfo;
typedef clr_object IMetaDataImport;

#define CLR_CALL(obj, slot, type, ...) (((type)clr_slot((obj), (slot)))((obj), __VA_ARGS__))
#define CLR_CALL0(obj, slot, type) (((type)clr_slot((obj), (slot)))((obj)))

static inline HRESULT clr_query_interface(IUnknown *u, const GUID *iid, void **out) {
    return CLR_CALL(u, 0, HRESULT (*)(IUnknown *, const GUID *, void **), iid, out);
}
static inline ULONG clr_release(IUnknown *u) {
    return CLR_CALL0(u, 2, ULONG (*)(IUnknown *));
}

static inline HRESULT info_set_event_mask2(ICorProfilerInfo *i, DWORD low, DWORD high) {
    return CLR_CALL(i, INFO_SetEventMask2, HRESULT (*)(ICorProfilerInfo *, DWORD, DWORD), low, high);
}
static inline HRESULT info_get_object_size2(ICorProfilerInfo *i, ObjectID o, SIZE_T *size) {
    return CLR_CALL(i, INFO_GetObjectSize2, HRESULT (*)(ICorProfilerInfo *, ObjectID, SIZE_T *), o, size);
}
static inline HRESULT info_get_class_from_object(ICorProfilerInfo *i, ObjectID o, ClassID *cls) {
    return CLR_CALL(i, INFO_GetClassFromObject, HRESULT (*)(ICorProfilerInfo *, ObjectID, ClassID *), o, cls);
}
static inline HRESULT info_get_generation_bounds(ICorProfilerInfo *i, ULONG capacity, ULONG *total,
                                                 COR_PRF_GC_GENERATION_RANGE *ranges) {
    return CLR_CALL(i, INFO_GetGenerationBounds,
                    HRESULT (*)(ICorProfilerInfo *, ULONG, ULONG *, COR_PRF_GC_GENERATION_RANGE *),
                    capacity, total, ranges);
}
static inline HRESULT info_get_thread_info(ICorProfilerInfo *i, ThreadID t, DWORD *os_tid) {
    return CLR_CALL(i, INFO_GetThreadInfo, HRESULT (*)(ICorProfilerInfo *, ThreadID, DWORD *), t, os_tid);
}
/* ICorProfilerInfo4::EnumThreads: an ICorProfilerThreadEnum (IUnknown, then Skip, Reset, Clone,
 * GetCount, Next). */
enum { THREAD_ENUM_Release = 2, THREAD_ENUM_Next = 7 };
static inline HRESULT info_enum_threads(ICorProfilerInfo *i, IUnknown **threads) {
    return CLR_CALL(i, INFO_EnumThreads, HRESULT (*)(ICorProfilerInfo *, IUnknown **), threads);
}
static inline HRESULT thread_enum_next(IUnknown *e, ULONG wanted, ThreadID *ids, ULONG *got) {
    return CLR_CALL(e, THREAD_ENUM_Next, HRESULT (*)(IUnknown *, ULONG, ThreadID *, ULONG *),
                    wanted, ids, got);
}
static inline ULONG thread_enum_release(IUnknown *e) {
    return CLR_CALL0(e, THREAD_ENUM_Release, ULONG (*)(IUnknown *));
}
static inline HRESULT info_is_array_class(ICorProfilerInfo *i, ClassID c, uint32_t *elem_type,
                                          ClassID *elem_class, ULONG *rank) {
    return CLR_CALL(i, INFO_IsArrayClass,
                    HRESULT (*)(ICorProfilerInfo *, ClassID, uint32_t *, ClassID *, ULONG *),
                    c, elem_type, elem_class, rank);
}
static inline HRESULT info_get_class_id_info2(ICorProfilerInfo *i, ClassID c, ModuleID *module,
                                              mdTypeDef *token, ClassID *parent, uint32_t n_args,
                                              uint32_t *total_args, ClassID *args) {
    return CLR_CALL(i, INFO_GetClassIDInfo2,
                    HRESULT (*)(ICorProfilerInfo *, ClassID, ModuleID *, mdTypeDef *, ClassID *,
                                uint32_t, uint32_t *, ClassID *),
                    c, module, token, parent, n_args, total_args, args);
}
static inline HRESULT info_get_module_metadata(ICorProfilerInfo *i, ModuleID m, DWORD flags,
                                               const GUID *iid, IUnknown **out) {
    return CLR_CALL(i, INFO_GetModuleMetaData,
                    HRESULT (*)(ICorProfilerInfo *, ModuleID, DWORD, const GUID *, IUnknown **),
                    m, flags, iid, out);
}
static inline HRESULT info_get_runtime_information(ICorProfilerInfo *i, uint16_t *major,
                                                   uint16_t *minor, uint16_t *build, uint16_t *qfe) {
    uint16_t instance = 0;
    uint32_t runtime_type = 0;
    return CLR_CALL(i, INFO_GetRuntimeInformation,
                    HRESULT (*)(ICorProfilerInfo *, uint16_t *, uint32_t *, uint16_t *, uint16_t *,
                                uint16_t *, uint16_t *, ULONG, ULONG *, WCHAR *),
                    &instance, &runtime_type, major, minor, build, qfe, 0, NULL, NULL);
}
static inline HRESULT info_force_gc(ICorProfilerInfo *i) {
    return CLR_CALL0(i, INFO_ForceGC, HRESULT (*)(ICorProfilerInfo *));
}

/* StackSnapshotCallback: S_OK goes on, S_FALSE stops the walk. */
typedef HRESULT (*clr_stack_snapshot_fn)(FunctionID function, UINT_PTR ip, UINT_PTR frame_info,
                                         uint32_t context_size, uint8_t *context, void *data);
/* The calling thread's own stack when thread is 0 (a synchronous snapshot). */
/* range->generation: 0..2, 3 LOH, 4 POH. */
static inline HRESULT info_get_object_generation(ICorProfilerInfo *i, ObjectID o,
                                                 COR_PRF_GC_GENERATION_RANGE *range) {
    return CLR_CALL(i, INFO_GetObjectGeneration,
                    HRESULT (*)(ICorProfilerInfo *, ObjectID, COR_PRF_GC_GENERATION_RANGE *), o,
                    range);
}
static inline HRESULT info_do_stack_snapshot(ICorProfilerInfo *i, ThreadID thread,
                                             clr_stack_snapshot_fn fn, uint32_t flags, void *data) {
    return CLR_CALL(i, INFO_DoStackSnapshot,
                    HRESULT (*)(ICorProfilerInfo *, ThreadID, clr_stack_snapshot_fn, uint32_t,
                                void *, uint8_t *, uint32_t),
                    thread, fn, flags, data, (uint8_t *)NULL, 0u);
}
static inline HRESULT info_get_event_mask2(ICorProfilerInfo *i, DWORD *low, DWORD *high) {
    return CLR_CALL(i, INFO_GetEventMask2, HRESULT (*)(ICorProfilerInfo *, DWORD *, DWORD *), low, high);
}
static inline HRESULT info_get_function_from_ip(ICorProfilerInfo *i, UINT_PTR ip, FunctionID *f) {
    return CLR_CALL(i, INFO_GetFunctionFromIP, HRESULT (*)(ICorProfilerInfo *, UINT_PTR, FunctionID *),
                    ip, f);
}
/* frame_info 0: no frame, so shared generic code reports its canonical class (or none). */
static inline HRESULT info_get_function_info2(ICorProfilerInfo *i, FunctionID f, ClassID *cls,
                                              ModuleID *module, mdToken *token, uint32_t n_args,
                                              uint32_t *total_args, ClassID *args) {
    return CLR_CALL(i, INFO_GetFunctionInfo2,
                    HRESULT (*)(ICorProfilerInfo *, FunctionID, UINT_PTR, ClassID *, ModuleID *,
                                mdToken *, uint32_t, uint32_t *, ClassID *),
                    f, (UINT_PTR)0, cls, module, token, n_args, total_args, args);
}
static inline HRESULT info_event_pipe_start_session(ICorProfilerInfo *i, uint32_t n,
                                                    COR_PRF_EVENTPIPE_PROVIDER_CONFIG *configs,
                                                    BOOL rundown, EVENTPIPE_SESSION *session) {
    return CLR_CALL(i, INFO_EventPipeStartSession,
                    HRESULT (*)(ICorProfilerInfo *, uint32_t, COR_PRF_EVENTPIPE_PROVIDER_CONFIG *,
                                BOOL, EVENTPIPE_SESSION *),
                    n, configs, rundown, session);
}
static inline HRESULT info_event_pipe_get_provider_info(ICorProfilerInfo *i, UINT_PTR provider,
                                                        ULONG cch, ULONG *len, WCHAR *name) {
    return CLR_CALL(i, INFO_EventPipeGetProviderInfo,
                    HRESULT (*)(ICorProfilerInfo *, UINT_PTR, ULONG, ULONG *, WCHAR *), provider,
                    cch, len, name);
}
static inline HRESULT info_event_pipe_stop_session(ICorProfilerInfo *i, EVENTPIPE_SESSION s) {
    return CLR_CALL(i, INFO_EventPipeStopSession, HRESULT (*)(ICorProfilerInfo *, EVENTPIPE_SESSION), s);
}

/* ICorProfilerInfo13. CreateHandle is SYNC (inside a callback, or a thread of ours);
 * DestroyHandle and GetObjectIDFromHandle are ASYNC: any thread, any time
 * (proftoeeinterfaceimpl.cpp). */
static inline HRESULT info_create_handle(ICorProfilerInfo *i, ObjectID o, uint32_t type,
                                         ObjectHandleID *out) {
    return CLR_CALL(i, INFO_CreateHandle,
                    HRESULT (*)(ICorProfilerInfo *, ObjectID, uint32_t, ObjectHandleID *), o, type,
                    out);
}
static inline HRESULT info_destroy_handle(ICorProfilerInfo *i, ObjectHandleID h) {
    return CLR_CALL(i, INFO_DestroyHandle, HRESULT (*)(ICorProfilerInfo *, ObjectHandleID), h);
}
static inline HRESULT info_get_object_id_from_handle(ICorProfilerInfo *i, ObjectHandleID h,
                                                     ObjectID *out) {
    return CLR_CALL(i, INFO_GetObjectIDFromHandle,
                    HRESULT (*)(ICorProfilerInfo *, ObjectHandleID, ObjectID *), h, out);
}

static inline HRESULT mdi_get_method_props(IMetaDataImport *m, mdToken method, mdTypeDef *cls,
                                           WCHAR *name, ULONG capacity, ULONG *length) {
    DWORD attr = 0, impl = 0;
    const uint8_t *sig = NULL;
    ULONG sig_size = 0, rva = 0;
    return CLR_CALL(m, MDI_GetMethodProps,
                    HRESULT (*)(IMetaDataImport *, mdToken, mdTypeDef *, WCHAR *, ULONG, ULONG *,
                                DWORD *, const uint8_t **, ULONG *, ULONG *, DWORD *),
                    method, cls, name, capacity, length, &attr, &sig, &sig_size, &rva, &impl);
}

/* A class's own instance fields (parents not included): token and offset from the ObjectID. */
typedef struct COR_FIELD_OFFSET {
    mdToken field;
    ULONG offset;
} COR_FIELD_OFFSET;
static inline HRESULT info_get_class_layout(ICorProfilerInfo *i, ClassID c, COR_FIELD_OFFSET *fields,
                                            ULONG capacity, ULONG *count, ULONG *class_size) {
    return CLR_CALL(i, INFO_GetClassLayout,
                    HRESULT (*)(ICorProfilerInfo *, ClassID, COR_FIELD_OFFSET *, ULONG, ULONG *,
                                ULONG *),
                    c, fields, capacity, count, class_size);
}
static inline HRESULT mdi_get_field_props(IMetaDataImport *m, mdToken field, WCHAR *name,
                                          ULONG capacity, ULONG *length) {
    mdTypeDef cls = 0;
    DWORD attr = 0, cplus_type = 0;
    const uint8_t *sig = NULL;
    const void *value = NULL;
    ULONG sig_size = 0, value_size = 0;
    return CLR_CALL(m, MDI_GetFieldProps,
                    HRESULT (*)(IMetaDataImport *, mdToken, mdTypeDef *, WCHAR *, ULONG, ULONG *,
                                DWORD *, const uint8_t **, ULONG *, DWORD *, const void **,
                                ULONG *),
                    field, &cls, name, capacity, length, &attr, &sig, &sig_size, &cplus_type,
                    &value, &value_size);
}

/* A field's attributes (fd*) and signature, and nothing else: every output not asked for is
 * NULL, so the importer skips its work (RegMeta::GetFieldProps: the name copied out as UTF-16,
 * the parent typedef and the constant each looked up). Called for every field of every class
 * loaded (thread_statics.c): the name, parent and constant were most of sampled mode's
 * class-load cost. */
static inline HRESULT mdi_get_field_attr_sig(IMetaDataImport *m, mdToken field, DWORD *attr,
                                             const uint8_t **sig, ULONG *sig_size) {
    return CLR_CALL(m, MDI_GetFieldProps,
                    HRESULT (*)(IMetaDataImport *, mdToken, mdTypeDef *, WCHAR *, ULONG, ULONG *,
                                DWORD *, const uint8_t **, ULONG *, DWORD *, const void **,
                                ULONG *),
                    field, NULL, NULL, 0, NULL, attr, sig, sig_size, NULL, NULL, NULL);
}
/* The fields of a typedef, `capacity` at a time: *e starts NULL, mdi_close_enum ends it. */
static inline HRESULT mdi_enum_fields(IMetaDataImport *m, void **e, mdTypeDef td, mdToken *fields,
                                      ULONG capacity, ULONG *count) {
    return CLR_CALL(m, MDI_EnumFields,
                    HRESULT (*)(IMetaDataImport *, void **, mdTypeDef, mdToken *, ULONG, ULONG *),
                    e, td, fields, capacity, count);
}
static inline void mdi_close_enum(IMetaDataImport *m, void *e) {
    CLR_CALL(m, MDI_CloseEnum, void (*)(IMetaDataImport *, void *), e);
}
enum { fdStatic = 0x10, fdLiteral = 0x40, fdHasFieldRVA = 0x100 };
static inline HRESULT info_get_module_info(ICorProfilerInfo *i, ModuleID m, AssemblyID *assembly) {
    const uint8_t *base = NULL;
    ULONG n = 0;
    return CLR_CALL(i, INFO_GetModuleInfo,
                    HRESULT (*)(ICorProfilerInfo *, ModuleID, const uint8_t **, ULONG, ULONG *,
                                WCHAR *, AssemblyID *),
                    m, &base, 0u, &n, (WCHAR *)NULL, assembly);
}
static inline HRESULT info_get_assembly_domain(ICorProfilerInfo *i, AssemblyID a,
                                               AppDomainID *domain) {
    ULONG n = 0;
    ModuleID module = 0;
    return CLR_CALL(i, INFO_GetAssemblyInfo,
                    HRESULT (*)(ICorProfilerInfo *, AssemblyID, ULONG, ULONG *, WCHAR *,
                                AppDomainID *, ModuleID *),
                    a, 0u, &n, (WCHAR *)NULL, domain, &module);
}
static inline HRESULT info_get_app_domain_static_address(ICorProfilerInfo *i, ClassID c,
                                                         mdToken field, AppDomainID domain,
                                                         void **address) {
    return CLR_CALL(i, INFO_GetAppDomainStaticAddress,
                    HRESULT (*)(ICorProfilerInfo *, ClassID, mdToken, AppDomainID, void **),
                    c, field, domain, address);
}
/* COR_PRF_STATIC_TYPE of a static field: THREAD_STATIC 0x2 ([ThreadStatic]). */
enum { COR_PRF_FIELD_THREAD_STATIC = 0x2 };
static inline HRESULT info_get_static_field_info(ICorProfilerInfo *i, ClassID c, mdToken field,
                                                 uint32_t *kind) {
    return CLR_CALL(i, INFO_GetStaticFieldInfo,
                    HRESULT (*)(ICorProfilerInfo *, ClassID, mdToken, uint32_t *), c, field, kind);
}
static inline HRESULT info_get_thread_static_address2(ICorProfilerInfo *i, ClassID c,
                                                      mdToken field, AppDomainID domain,
                                                      ThreadID thread, void **address) {
    return CLR_CALL(i, INFO_GetThreadStaticAddress2,
                    HRESULT (*)(ICorProfilerInfo *, ClassID, mdToken, AppDomainID, ThreadID,
                                void **),
                    c, field, domain, thread, address);
}
/* ICorProfilerInfo3::EnumJITedFunctions: an ICorProfilerFunctionEnum (IUnknown, then Skip,
 * Reset, Clone, GetCount, Next of COR_PRF_FUNCTION). */
typedef struct COR_PRF_FUNCTION {
    FunctionID function;
    uintptr_t rejit;
} COR_PRF_FUNCTION;
static inline HRESULT info_enum_jited_functions(ICorProfilerInfo *i, IUnknown **functions) {
    return CLR_CALL(i, INFO_EnumJITedFunctions, HRESULT (*)(ICorProfilerInfo *, IUnknown **),
                    functions);
}
static inline HRESULT function_enum_next(IUnknown *e, ULONG wanted, COR_PRF_FUNCTION *out,
                                         ULONG *got) {
    return CLR_CALL(e, 7, HRESULT (*)(IUnknown *, ULONG, COR_PRF_FUNCTION *, ULONG *), wanted,
                    out, got);
}

/* Asks the runtime to unload the profiler once no thread is inside a callback. */
static inline HRESULT info_request_profiler_detach(ICorProfilerInfo *i, DWORD expected_ms) {
    return CLR_CALL(i, INFO_RequestProfilerDetach, HRESULT (*)(ICorProfilerInfo *, DWORD), expected_ms);
}

static inline HRESULT mdi_get_type_def_props(IMetaDataImport *m, mdTypeDef td, WCHAR *name,
                                             ULONG capacity, ULONG *length, DWORD *flags,
                                             mdToken *extends) {
    return CLR_CALL(m, MDI_GetTypeDefProps,
                    HRESULT (*)(IMetaDataImport *, mdTypeDef, WCHAR *, ULONG, ULONG *, DWORD *, mdToken *),
                    td, name, capacity, length, flags, extends);
}
static inline HRESULT mdi_get_nested_class_props(IMetaDataImport *m, mdTypeDef nested,
                                                 mdTypeDef *enclosing) {
    return CLR_CALL(m, MDI_GetNestedClassProps,
                    HRESULT (*)(IMetaDataImport *, mdTypeDef, mdTypeDef *), nested, enclosing);
}

#endif /* HEAPLENS_CLR_INFO_H */
