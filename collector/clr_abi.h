/* clr_abi.h — our own plain-C declarations of the CoreCLR profiling ABI on Linux x64.
 *
 * Written from the facts in shared/reference/clr-profiler-facts.md, checked against
 * dotnet/runtime src/coreclr/inc/corprof.idl and cor.h. Under the PAL, LONG/ULONG/DWORD/BOOL are
 * 32-bit even on LP64, WCHAR is UTF-16 (never wchar_t), every ID is pointer-sized, and COM
 * methods use the plain System V calling convention with `this` first.
 *
 * Interfaces we implement (the callback object, the class factory) are structs whose first member
 * points to a vtable. Interfaces we call (ICorProfilerInfoN, IMetaDataImport) are reached through
 * slot numbers: `clr_slot(obj, SLOT)` fetches a method pointer which typed wrappers in
 * clr_info.h cast to the right signature, so each call site reads like a normal function call.
 */
#ifndef HEAPLENS_CLR_ABI_H
#define HEAPLENS_CLR_ABI_H

#include <stdint.h>
#include <stddef.h>

typedef int32_t HRESULT;
typedef int32_t BOOL;
typedef uint32_t ULONG;
typedef uint32_t DWORD;
typedef uint32_t UINT;
typedef uint16_t WCHAR;
typedef uintptr_t UINT_PTR;
typedef size_t SIZE_T;

typedef uintptr_t ObjectID, ClassID, ModuleID, FunctionID, ThreadID, AssemblyID, AppDomainID,
    GCHandleID, ReJITID;
typedef uint32_t mdToken, mdTypeDef;

typedef struct GUID {
    uint32_t Data1;
    uint16_t Data2;
    uint16_t Data3;
    uint8_t Data4[8];
} GUID;
_Static_assert(sizeof(GUID) == 16, "GUID layout");

#define S_OK ((HRESULT)0)
#define S_FALSE ((HRESULT)1)
#define E_FAIL ((HRESULT)0x80004005u)
#define E_NOTIMPL ((HRESULT)0x80004001u)
#define E_NOINTERFACE ((HRESULT)0x80004002u)
#define E_INVALIDARG ((HRESULT)0x80070057u)
#define E_OUTOFMEMORY ((HRESULT)0x8007000Eu)
#define CLASS_E_NOAGGREGATION ((HRESULT)0x80040110u)
#define CLASS_E_CLASSNOTAVAILABLE ((HRESULT)0x80040111u)
#define CORPROF_E_CLASSID_IS_ARRAY ((HRESULT)0x80131365u)
#define CORPROF_E_CLASSID_IS_COMPOSITE ((HRESULT)0x80131366u)
#define CORPROF_E_PROFILER_CANCEL_ACTIVATION ((HRESULT)0x80131375u)
#define CORPROF_E_PROFILER_DETACHING ((HRESULT)0x80131367u)
#define HR_FAILED(hr) ((hr) < 0)

/* COR_PRF_MONITOR (low event mask) — the flags heaplens uses. */
enum {
    COR_PRF_MONITOR_THREADS = 0x00000200,
    COR_PRF_MONITOR_CLASS_LOADS = 0x00000002, /* thread statics (thread_statics.h) */
    COR_PRF_MONITOR_GC = 0x00000080,
    COR_PRF_MONITOR_OBJECT_ALLOCATED = 0x00000100,
    COR_PRF_MONITOR_SUSPENDS = 0x00010000,
    COR_PRF_ENABLE_OBJECT_ALLOCATED = 0x00800000,
    COR_PRF_ENABLE_STACK_SNAPSHOT = 0x10000000,
    /* counted sites (rejit.c) */
    COR_PRF_MONITOR_MODULE_LOADS = 0x00000004,
    COR_PRF_MONITOR_JIT_COMPILATION = 0x00000020,
    COR_PRF_ENABLE_REJIT = 0x00040000,
};
/* COR_PRF_HIGH_MONITOR (high event mask, SetEventMask2's second argument). */
enum {
    COR_PRF_HIGH_BASIC_GC = 0x00000010, /* GarbageCollectionStarted/Finished, generation bounds */
    COR_PRF_HIGH_MONITOR_GC_MOVED_OBJECTS = 0x00000020, /* MovedReferences(2): see profiler.c, modes */
    COR_PRF_HIGH_MONITOR_LARGEOBJECT_ALLOCATED = 0x00000040, /* ObjectAllocated for LOH only */
    COR_PRF_HIGH_MONITOR_PINNEDOBJECT_ALLOCATED = 0x00000100, /* ... for POH only (.NET 7+) */
};

/* COR_PRF_GC_GENERATION_RANGE: 32 bytes. */
typedef struct COR_PRF_GC_GENERATION_RANGE {
    uint32_t generation; /* 0..4: gen0, gen1, gen2, LOH, POH */
    uint32_t pad;
    ObjectID range_start;
    UINT_PTR range_length;          /* bytes in use */
    UINT_PTR range_length_reserved; /* bytes reserved */
} COR_PRF_GC_GENERATION_RANGE;
_Static_assert(sizeof(COR_PRF_GC_GENERATION_RANGE) == 32, "generation range layout");

enum { COR_PRF_GC_REASON_OTHER = 0, COR_PRF_GC_REASON_INDUCED = 1 };
enum { COR_PRF_SUSPEND_FOR_GC = 1, COR_PRF_SUSPEND_FOR_GC_PREP = 7 };

/* CorElementType values used when naming arrays of primitives (cor.h). */
enum {
    ELEMENT_TYPE_BOOLEAN = 0x02, ELEMENT_TYPE_CHAR = 0x03, ELEMENT_TYPE_I1 = 0x04,
    ELEMENT_TYPE_U1 = 0x05, ELEMENT_TYPE_I2 = 0x06, ELEMENT_TYPE_U2 = 0x07, ELEMENT_TYPE_I4 = 0x08,
    ELEMENT_TYPE_U4 = 0x09, ELEMENT_TYPE_I8 = 0x0a, ELEMENT_TYPE_U8 = 0x0b, ELEMENT_TYPE_R4 = 0x0c,
    ELEMENT_TYPE_R8 = 0x0d, ELEMENT_TYPE_STRING = 0x0e, ELEMENT_TYPE_PTR = 0x0f,
    ELEMENT_TYPE_VALUETYPE = 0x11, ELEMENT_TYPE_CLASS = 0x12, ELEMENT_TYPE_ARRAY = 0x14,
    ELEMENT_TYPE_I = 0x18, ELEMENT_TYPE_U = 0x19, ELEMENT_TYPE_OBJECT = 0x1c,
    ELEMENT_TYPE_SZARRAY = 0x1d,
};
enum { tdNestedMask = 0x00000006, tdClassSemanticsMask = 0x00000020 };

/* Interfaces we call: an object whose first member is its method table. */
typedef void (*clr_method)(void);
typedef struct clr_object {
    const clr_method *vtbl;
} clr_object;
typedef clr_object IUnknown;

static inline clr_method clr_slot(const void *object, unsigned slot) {
    return ((const clr_object *)object)->vtbl[slot];
}

/* ICorProfilerInfo slots (0-based, IUnknown included). */
enum {
    INFO_Release = 2,
    INFO_GetClassFromObject = 3,
    INFO_IsArrayClass = 11,
    INFO_GetThreadInfo = 12,
    INFO_GetModuleInfo = 20,
    INFO_GetModuleMetaData = 21,
    INFO_GetAssemblyInfo = 26,
    INFO_ForceGC = 28,
    INFO_GetClassLayout = 40,
    INFO_GetClassIDInfo2 = 41,
    INFO_GetAppDomainStaticAddress = 50,
    INFO_GetStaticFieldInfo = 53,
    INFO_GetThreadStaticAddress2 = 68, /* ICorProfilerInfo3 */
    INFO_GetGenerationBounds = 54,
    INFO_GetObjectGeneration = 55,
    INFO_EnumJITedFunctions = 57, /* ICorProfilerInfo3 */
    INFO_RequestProfilerDetach = 58,
    INFO_GetRuntimeInformation = 67,
    INFO_EnumThreads = 71, /* ICorProfilerInfo4 */
    INFO_GetFunctionFromIP = 7,
    INFO_DoStackSnapshot = 36,
    INFO_GetFunctionInfo2 = 38,
    INFO_GetObjectSize2 = 80,
    INFO_GetEventMask2 = 81,
    INFO_SetEventMask2 = 82,
    /* ICorProfilerInfo12 (corprof.idl: 101..107) */
    INFO_EventPipeStartSession = 101,
    INFO_EventPipeStopSession = 103,
    INFO_EventPipeGetProviderInfo = 105,
    /* ICorProfilerInfo13 (corprof.idl: 108..110): handles a profiler owns */
    INFO_CreateHandle = 108,
    INFO_DestroyHandle = 109,
    INFO_GetObjectIDFromHandle = 110,
};

/* COR_PRF_HANDLE_TYPE: WEAK is a long weak handle (it keeps its target through finalization,
 * until the object's memory is reclaimed). ObjectHandleID is pointer-sized. */
enum { COR_PRF_HANDLE_TYPE_WEAK = 1 };
typedef UINT_PTR ObjectHandleID;

/* COR_PRF_HIGH_MONITOR (high event mask). */
enum { COR_PRF_HIGH_MONITOR_EVENT_PIPE = 0x00000080 };

/* EventPipe (ICorProfilerInfo12): a session is a UINT64 whatever the pointer size; a provider
 * is pointer-sized. The config is 32 bytes and passed by pointer in arrays. */
typedef uint64_t EVENTPIPE_SESSION;
typedef uintptr_t EVENTPIPE_PROVIDER;
typedef struct COR_PRF_EVENTPIPE_PROVIDER_CONFIG {
    const WCHAR *provider_name;
    uint64_t keywords;
    uint32_t logging_level;
    const WCHAR *filter_data;
} COR_PRF_EVENTPIPE_PROVIDER_CONFIG;
_Static_assert(sizeof(COR_PRF_EVENTPIPE_PROVIDER_CONFIG) == 32, "provider config layout");

/* IMetaDataImport slots. */
enum {
    MDI_Release = 2,
    MDI_CloseEnum = 3,
    MDI_EnumFields = 20,
    MDI_GetTypeDefProps = 12,
    MDI_GetMethodProps = 30,
    MDI_GetFieldProps = 57,
    MDI_GetNestedClassProps = 62,
};
enum { ofRead = 0 };

/* GUIDs (clr_guids.c). */
extern const GUID IID_IUnknown;
extern const GUID IID_IClassFactory;
extern const GUID IID_ICorProfilerCallback[12];  /* index 1..11; [0] unused */
extern const GUID IID_ICorProfilerInfo_by_version[16]; /* index 1..15 */
extern const GUID IID_IMetaDataImport;
extern const GUID IID_IMetaDataEmit, IID_IMetaDataAssemblyEmit; /* counted sites (rejit.c) */
extern const GUID CLSID_heaplens;
int guid_equal(const GUID *a, const GUID *b);

/* The callback interface we implement: vtable generated from clr_callback_methods.h. */
struct hl_profiler;
typedef struct ICorProfilerCallback11Vtbl {
    HRESULT (*QueryInterface)(struct hl_profiler *self, const GUID *iid, void **out);
    ULONG (*AddRef)(struct hl_profiler *self);
    ULONG (*Release)(struct hl_profiler *self);
#define M(name, ...) HRESULT (*name)(struct hl_profiler *self, __VA_ARGS__);
#define M0(name) HRESULT (*name)(struct hl_profiler *self);
#include "collector/clr_callback_methods.h"
#undef M
#undef M0
} ICorProfilerCallback11Vtbl;
_Static_assert(sizeof(ICorProfilerCallback11Vtbl) == 98 * sizeof(void *),
               "ICorProfilerCallback11 has 98 slots");

#endif /* HEAPLENS_CLR_ABI_H */
