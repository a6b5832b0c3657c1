/* type_names.h — full type names for ClassIDs, resolved on the collector thread (never on the
 * allocation path: ObjectAllocated only passes the ClassID along).
 *
 * Format (documented for users in collector/README.md):
 *   Namespace.Type                     System.String
 *   Namespace.Outer+Nested             HeapLens.Examples.Program+Node
 *   Namespace.Generic<Arg1, Arg2>      System.Collections.Generic.Dictionary<System.String, System.Int32>
 *   Element[] / Element[,]             System.Int32[], HeapLens.Examples.LargeItem[], System.Byte[][]
 *   Namespace.Generic<Arg>+Nested[]    System.Collections.Generic.Dictionary<System.Int32, Customer>+Entry[]
 * The arity suffix (`1) is removed; the type arguments of a nested type of a generic type follow
 * the type that declares them, as C# reflection, ClrMD and SOS write them
 * (System.Collections.Generic.List<System.Int32>+Enumerator).
 */
#ifndef HEAPLENS_TYPE_NAMES_H
#define HEAPLENS_TYPE_NAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "collector/clr_info.h"

typedef struct hl_type_names {
    ICorProfilerInfo *info;
    struct { ModuleID module; IMetaDataImport *mdi; } *modules; /* metadata per module, cached */
    size_t n_modules, cap_modules;
} hl_type_names;

void hl_type_names_init(hl_type_names *t, ICorProfilerInfo *info);
void hl_type_names_release(hl_type_names *t);

/* What ends a type or method name that did not fit its buffer, followed by 16 hex digits of the
 * whole name's 64-bit FNV-1a hash and ')': "System.Func<...(cut #0123456789abcdef)". */
#define HL_NAME_CUT_MARK "...(cut #"

/* Writes the NUL-terminated UTF-8 name of `class_id` into out. A name longer than `size` is cut
 * and marked (HL_NAME_CUT_MARK and its whole name's hash, within `size`): two types never share
 * a name because their first `size` bytes agree; type arguments nested deeper than 8 levels
 * are written "..." and the name marked the same way (the hash covers them). Returns the
 * HL_TYPE_FLAG_* bits (wire/hl_wire.h): ARRAY, and UNRESOLVED when the runtime would not say
 * (then the name is "<unknown 0x...>"). */
uint32_t hl_type_name(hl_type_names *t, ClassID class_id, char *out, size_t size);

/* Writes 'Namespace.Type.Method' for a FunctionID (GetFunctionInfo2 without a frame: shared
 * generic code shows its canonical instantiation, e.g. 'List<System.__Canon>.Add'), method type
 * arguments as '<...>' after the name; cut and marked as hl_type_name's when longer than `size`.
 * Returns false when the runtime would not say. */
bool hl_method_name(hl_type_names *t, FunctionID function, char *out, size_t size);

/* 'Namespace.Outer+Inner' of a typedef from its metadata alone (no type arguments; arity
 * suffixes dropped): for names of methods before any of their code runs (rejit.c). */
bool hl_typedef_name(IMetaDataImport *mdi, mdTypeDef td, char *out, size_t size);
/* A metadata name (UTF-16, n units or up to a NUL) as UTF-8 into out, arity suffix dropped. */
void hl_utf16_name(char *out, size_t size, const WCHAR *w, size_t n);
/* Writes the name of field `field` (a FieldDef token of `module`) as the source declares it; an
 * auto-property's backing field ("<Name>k__BackingField") as the property ("Name"). Returns
 * false when the metadata would not say. */
bool hl_field_name(hl_type_names *t, ModuleID module, mdToken field, char *out, size_t size);

/* The metadata of `module` (cached, owned by `t`); NULL when the runtime would not give it. */
IMetaDataImport *hl_type_names_metadata(hl_type_names *t, ModuleID module);

#endif /* HEAPLENS_TYPE_NAMES_H */
