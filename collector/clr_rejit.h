/* clr_rejit.h — typed calls for counted allocation sites (rejit.c): ReJIT, IL bodies, module
 * enumeration, and the metadata reads and writes a probe needs. Slot numbers from corprof.idl
 * and cor.h (shared/reference/clr-profiler-facts.md §3, §13), as in clr_info.h. */
#ifndef HEAPLENS_CLR_REJIT_H
#define HEAPLENS_CLR_REJIT_H

#include "collector/clr_info.h"

typedef clr_object IMetaDataEmit;
typedef clr_object IMetaDataAssemblyEmit;
typedef void *HCORENUM; /* mdi_close_enum (clr_info.h) ends one */

enum {
    INFO_GetModuleInfo2 = 70,
    INFO_GetILFunctionBody = 22,
    INFO_EnumModules = 66,
    INFO_RequestReJIT = 73,
    INFO_RequestRevert = 74,
    INFO_ApplyMetaData = 84,
    INFO_RequestReJITWithInliners = 96,
};
enum {
    MDI_EnumTypeDefs = 6,
    MDI_FindTypeDefByName = 9,
    MDI_GetTypeRefProps = 14,
    MDI_EnumMethods = 18,
    MDI_FindMethod = 27,
    MDI_GetMemberRefProps = 31,
    MDI_GetTypeSpecFromToken = 44,
};
enum { MDE_DefineTypeRefByName = 12, MDE_DefineMemberRef = 14 };
enum { MDAE_DefineAssemblyRef = 4 };
enum { FUNCTION_CONTROL_SetILFunctionBody = 4 };
enum { MODULE_ENUM_Next = 7 };
enum { ofWrite = 1 };
enum { COR_PRF_REJIT_BLOCK_INLINING = 1 };
enum { COR_PRF_MODULE_DYNAMIC = 4, COR_PRF_MODULE_COLLECTIBLE = 8, COR_PRF_MODULE_RESOURCE = 0x10 };

/* ASSEMBLYMETADATA (cor.h) under LP64. */
typedef struct ASSEMBLYMETADATA {
    uint16_t major, minor, build, revision;
    WCHAR *locale;
    ULONG locale_len;
    DWORD *processors;
    ULONG n_processors;
    void *os;
    ULONG n_os;
} ASSEMBLYMETADATA;
_Static_assert(sizeof(ASSEMBLYMETADATA) == 56, "ASSEMBLYMETADATA layout");

static inline HRESULT info_get_module_info2(ICorProfilerInfo *i, ModuleID m, WCHAR *name,
                                            ULONG capacity, ULONG *length, DWORD *flags) {
    const uint8_t *base = NULL;
    AssemblyID assembly = 0;
    return CLR_CALL(i, INFO_GetModuleInfo2,
                    HRESULT (*)(ICorProfilerInfo *, ModuleID, const uint8_t **, ULONG, ULONG *,
                                WCHAR *, AssemblyID *, DWORD *),
                    m, &base, capacity, length, name, &assembly, flags);
}
static inline HRESULT info_get_il_function_body(ICorProfilerInfo *i, ModuleID m, mdToken method,
                                                const uint8_t **body, ULONG *size) {
    return CLR_CALL(i, INFO_GetILFunctionBody,
                    HRESULT (*)(ICorProfilerInfo *, ModuleID, mdToken, const uint8_t **, ULONG *),
                    m, method, body, size);
}
static inline HRESULT info_enum_modules(ICorProfilerInfo *i, IUnknown **modules) {
    return CLR_CALL(i, INFO_EnumModules, HRESULT (*)(ICorProfilerInfo *, IUnknown **), modules);
}
static inline HRESULT module_enum_next(IUnknown *e, ULONG wanted, ModuleID *ids, ULONG *got) {
    return CLR_CALL(e, MODULE_ENUM_Next, HRESULT (*)(IUnknown *, ULONG, ModuleID *, ULONG *),
                    wanted, ids, got);
}
static inline HRESULT info_request_rejit(ICorProfilerInfo *i, ULONG n, ModuleID *modules,
                                         mdToken *methods) {
    return CLR_CALL(i, INFO_RequestReJIT,
                    HRESULT (*)(ICorProfilerInfo *, ULONG, ModuleID *, mdToken *), n, modules,
                    methods);
}
static inline HRESULT info_request_rejit_with_inliners(ICorProfilerInfo *i, DWORD flags, ULONG n,
                                                       ModuleID *modules, mdToken *methods) {
    return CLR_CALL(i, INFO_RequestReJITWithInliners,
                    HRESULT (*)(ICorProfilerInfo *, DWORD, ULONG, ModuleID *, mdToken *), flags,
                    n, modules, methods);
}
static inline HRESULT info_request_revert(ICorProfilerInfo *i, ULONG n, ModuleID *modules,
                                          mdToken *methods, HRESULT *status) {
    return CLR_CALL(i, INFO_RequestRevert,
                    HRESULT (*)(ICorProfilerInfo *, ULONG, ModuleID *, mdToken *, HRESULT *), n,
                    modules, methods, status);
}
static inline HRESULT info_apply_metadata(ICorProfilerInfo *i, ModuleID m) {
    return CLR_CALL(i, INFO_ApplyMetaData, HRESULT (*)(ICorProfilerInfo *, ModuleID), m);
}

static inline HRESULT mdi_enum_type_defs(IMetaDataImport *m, HCORENUM *e, mdTypeDef *out,
                                         ULONG max, ULONG *got) {
    return CLR_CALL(m, MDI_EnumTypeDefs,
                    HRESULT (*)(IMetaDataImport *, HCORENUM *, mdTypeDef *, ULONG, ULONG *), e,
                    out, max, got);
}
static inline HRESULT mdi_enum_methods(IMetaDataImport *m, HCORENUM *e, mdTypeDef td,
                                       mdToken *out, ULONG max, ULONG *got) {
    return CLR_CALL(m, MDI_EnumMethods,
                    HRESULT (*)(IMetaDataImport *, HCORENUM *, mdTypeDef, mdToken *, ULONG,
                                ULONG *),
                    e, td, out, max, got);
}
static inline HRESULT mdi_find_type_def_by_name(IMetaDataImport *m, const WCHAR *name,
                                                mdToken enclosing, mdTypeDef *td) {
    return CLR_CALL(m, MDI_FindTypeDefByName,
                    HRESULT (*)(IMetaDataImport *, const WCHAR *, mdToken, mdTypeDef *), name,
                    enclosing, td);
}
static inline HRESULT mdi_get_type_ref_props(IMetaDataImport *m, mdToken tr, mdToken *scope,
                                             WCHAR *name, ULONG capacity, ULONG *length) {
    return CLR_CALL(m, MDI_GetTypeRefProps,
                    HRESULT (*)(IMetaDataImport *, mdToken, mdToken *, WCHAR *, ULONG, ULONG *),
                    tr, scope, name, capacity, length);
}
static inline HRESULT mdi_find_method(IMetaDataImport *m, mdTypeDef td, const WCHAR *name,
                                      const uint8_t *sig, ULONG sig_size, mdToken *method) {
    return CLR_CALL(m, MDI_FindMethod,
                    HRESULT (*)(IMetaDataImport *, mdTypeDef, const WCHAR *, const uint8_t *,
                                ULONG, mdToken *),
                    td, name, sig, sig_size, method);
}
static inline HRESULT mdi_get_member_ref_props(IMetaDataImport *m, mdToken mr, mdToken *parent) {
    WCHAR name[1];
    ULONG len = 0, sig_size = 0;
    const uint8_t *sig = NULL;
    return CLR_CALL(m, MDI_GetMemberRefProps,
                    HRESULT (*)(IMetaDataImport *, mdToken, mdToken *, WCHAR *, ULONG, ULONG *,
                                const uint8_t **, ULONG *),
                    mr, parent, name, 0, &len, &sig, &sig_size);
}
static inline HRESULT mdi_get_type_spec(IMetaDataImport *m, mdToken ts, const uint8_t **sig,
                                        ULONG *size) {
    return CLR_CALL(m, MDI_GetTypeSpecFromToken,
                    HRESULT (*)(IMetaDataImport *, mdToken, const uint8_t **, ULONG *), ts, sig,
                    size);
}
/* GetMethodProps with the flags and RVA (clr_info.h's has the name only). */
static inline HRESULT mdi_get_method_props_full(IMetaDataImport *m, mdToken method,
                                                mdTypeDef *cls, WCHAR *name, ULONG capacity,
                                                ULONG *length, DWORD *attr, ULONG *rva,
                                                DWORD *impl) {
    const uint8_t *sig = NULL;
    ULONG sig_size = 0;
    return CLR_CALL(m, MDI_GetMethodProps,
                    HRESULT (*)(IMetaDataImport *, mdToken, mdTypeDef *, WCHAR *, ULONG, ULONG *,
                                DWORD *, const uint8_t **, ULONG *, ULONG *, DWORD *),
                    method, cls, name, capacity, length, attr, &sig, &sig_size, rva, impl);
}
static inline HRESULT mde_define_type_ref_by_name(IMetaDataEmit *e, mdToken scope,
                                                  const WCHAR *name, mdToken *tr) {
    return CLR_CALL(e, MDE_DefineTypeRefByName,
                    HRESULT (*)(IMetaDataEmit *, mdToken, const WCHAR *, mdToken *), scope, name,
                    tr);
}
static inline HRESULT mde_define_member_ref(IMetaDataEmit *e, mdToken parent, const WCHAR *name,
                                            const uint8_t *sig, ULONG sig_size, mdToken *mr) {
    return CLR_CALL(e, MDE_DefineMemberRef,
                    HRESULT (*)(IMetaDataEmit *, mdToken, const WCHAR *, const uint8_t *, ULONG,
                                mdToken *),
                    parent, name, sig, sig_size, mr);
}
static inline HRESULT mdae_define_assembly_ref(IMetaDataAssemblyEmit *e, const uint8_t *key,
                                               ULONG key_size, const WCHAR *name,
                                               const ASSEMBLYMETADATA *md, mdToken *ar) {
    return CLR_CALL(e, MDAE_DefineAssemblyRef,
                    HRESULT (*)(IMetaDataAssemblyEmit *, const uint8_t *, ULONG, const WCHAR *,
                                const ASSEMBLYMETADATA *, const void *, ULONG, DWORD, mdToken *),
                    key, key_size, name, md, (const void *)NULL, 0u, 0u, ar);
}
static inline HRESULT function_control_set_il(void *fc, ULONG size, const uint8_t *body) {
    return CLR_CALL((clr_object *)fc, FUNCTION_CONTROL_SetILFunctionBody,
                    HRESULT (*)(clr_object *, ULONG, const uint8_t *), size, body);
}

#endif /* HEAPLENS_CLR_REJIT_H */
