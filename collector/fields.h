/* fields.h — which field of an object holds each of its references, for heap snapshots.
 *
 * The walk records the offset of each reference's slot in its object (gc_capture.c); here a
 * class's layout turns an offset into a field number, once per class: its instance fields and
 * those of its parents (GetClassLayout of each, parent by GetClassIDInfo2), in offset order,
 * numbered 1, 2, 3 ..., each named from the metadata of its class's module (IMetaDataImport
 * GetFieldProps) and sent as a FIELD record. An array's slot is an element: its index. A slot
 * inside a struct field (a value type with references) is that field's. Collector thread only.
 */
#ifndef HEAPLENS_COLLECTOR_FIELDS_H
#define HEAPLENS_COLLECTOR_FIELDS_H

#include <stdbool.h>
#include <stdint.h>

#include "collector/clr_info.h"
#include "collector/u64map.h"
#include "collector/young.h"
#include "wire/hl_wire.h"

enum { HL_LAYOUT_UNKNOWN = 0, HL_LAYOUT_FIELDS = 1, HL_LAYOUT_ARRAY = 2 };

typedef struct hl_layout {
    uint32_t kind;        /* HL_LAYOUT_* */
    uint32_t data_offset; /* arrays: the first element's offset from the ObjectID */
    uint32_t elem_size;   /* arrays: bytes per element */
    uint32_t n;           /* fields: field k + 1 starts at offsets[k], ascending */
    uint32_t *offsets;
} hl_layout;

typedef struct hl_fields {
    hl_u64map by_class; /* ClassID -> index + 1 in layouts */
    id_vec layouts;     /* hl_layout */
    id_vec pending;     /* FIELD records not sent yet (hl_fields_flush) */
} hl_fields;

struct collector;

void hl_fields_init(hl_fields *f);
void hl_fields_release(hl_fields *f);

/* The layout of objects of class `cls`, resolved the first time (FIELD records queued). Valid
 * until the next call. Never NULL: a class the runtime would not describe is HL_LAYOUT_UNKNOWN. */
const hl_layout *hl_fields_layout(struct collector *c, ClassID cls);

/* The REF_FIELDS value (wire/hl_wire.h) of a reference whose slot is at `offset` (0: unknown) in
 * an object of layout `l`: the field number, or for arrays the element index; HL_FIELD_UNKNOWN. */
static inline uint32_t hl_layout_field(const hl_layout *l, uint32_t offset) {
    if (!offset || l->kind == HL_LAYOUT_UNKNOWN)
        return HL_FIELD_UNKNOWN;
    if (l->kind == HL_LAYOUT_ARRAY)
        return offset < l->data_offset ? HL_FIELD_UNKNOWN
                                       : (offset - l->data_offset) / l->elem_size;
    uint32_t lo = 0, hi = l->n; /* the last field starting at or before offset */
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (l->offsets[mid] <= offset)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo ? lo : HL_FIELD_UNKNOWN;
}

/* Registers `cls`, named `type_name`, with the snapshots' heap walks when it is a known
 * collection class (collections.h): its count and storage fields' offsets, its parents'
 * included. Once per class, when the collector first sees it. */
void hl_fields_note_collection(struct collector *c, ClassID cls, const char *type_name);

/* Sends the queued FIELD records (before the snapshot that uses them). */
void hl_fields_flush(struct collector *c);

#endif /* HEAPLENS_COLLECTOR_FIELDS_H */
