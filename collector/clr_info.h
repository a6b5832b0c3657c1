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
static inline HRESULT info_get_generation_bounds(ICorProfilerInfo *i, ULONG capacity, ULONG *total,
                                                 COR_PRF_GC_GENERATION_RANGE *ranges) {
    return CLR_CALL(i, INFO_GetGenerationBounds,
                    HRESULT (*)(ICorProfilerInfo *, ULONG, ULONG *, COR_PRF_GC_GENERATION_RANGE *),
                    capacity, total, ranges);
}
static inline HRESULT info_get_thread_info(ICorProfilerInfo *i, ThreadID t, DWORD *os_tid) {
    return CLR_CALL(i, INFO_GetThreadInfo, HRESULT (*)(ICorProfilerInfo *, ThreadID, DWORD *), t, os_tid);
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
