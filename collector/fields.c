/* fields.c — see fields.h. */
#include "collector/fields.h"

#include <stdlib.h>
#include <string.h>

#include "collector/collections.h"
#include "collector/collector_internal.h"
#include "collector/mem.h"

#define MAX_PARENTS 64 /* deeper class hierarchies than this are cut (never seen) */

typedef struct pending_field {
    hl_field f;
    char name[120];
} pending_field;

typedef struct field_at {
    uint32_t offset;
    mdToken token;
    ModuleID module;
} field_at;

void hl_fields_init(hl_fields *f) {
    memset(f, 0, sizeof *f);
    hl_u64map_init(&f->by_class);
    f->layouts.elem = sizeof(hl_layout);
    f->pending.elem = sizeof(pending_field);
}

void hl_fields_release(hl_fields *f) {
    for (size_t i = 0; i < f->layouts.n; i++)
        hl_mem_free(((hl_layout *)f->layouts.p)[i].offsets);
    hl_vec_release(&f->layouts);
    hl_vec_release(&f->pending);
    hl_u64map_release(&f->by_class);
}

static int field_at_cmp(const void *a, const void *b) {
    const field_at *x = a, *y = b;
    return x->offset < y->offset ? -1 : x->offset > y->offset;
}

/* Appends the own instance fields of `cls` to *v; its parent in *parent. */
static bool own_fields(ICorProfilerInfo *info, ClassID cls, id_vec *v, ClassID *parent) {
    ModuleID module = 0;
    mdTypeDef td = 0;
    ClassID args[8];
    uint32_t n_args = 0;
    *parent = 0;
    if (HR_FAILED(info_get_class_id_info2(info, cls, &module, &td, parent, 8, &n_args, args)))
        return false;
    ULONG n = 0, size = 0;
    if (HR_FAILED(info_get_class_layout(info, cls, NULL, 0, &n, &size)) || n == 0)
        return true;
    COR_FIELD_OFFSET *fo = hl_mem_malloc(n * sizeof *fo);
    if (!fo)
        return false;
    bool ok = !HR_FAILED(info_get_class_layout(info, cls, fo, n, &n, &size));
    for (ULONG i = 0; ok && i < n; i++) {
        field_at a = {.offset = fo[i].offset, .token = fo[i].field, .module = module};
        ok = hl_vec_push(v, &a);
    }
    hl_mem_free(fo);
    return ok;
}

static void resolve(collector *c, ClassID cls, hl_layout *l) {
    ICorProfilerInfo *info = c->p->info;
    uint32_t elem_type = 0;
    ClassID elem_class = 0;
    ULONG rank = 0;
    if (info_is_array_class(info, cls, &elem_type, &elem_class, &rank) == S_OK) {
        /* MethodTable, length (4 bytes, padded to 8), then for rank > 1 the bounds and lower
         * bounds (4 bytes each per dimension) before the elements. */
        l->kind = HL_LAYOUT_ARRAY;
        l->data_offset = rank > 1 ? 16 + 8 * rank : 16;
        l->elem_size = sizeof(ObjectID);
        ULONG n = 0, size = 0;
        if (elem_type == ELEMENT_TYPE_VALUETYPE && elem_class &&
            !HR_FAILED(info_get_class_layout(info, elem_class, NULL, 0, &n, &size)) && size)
            l->elem_size = size; /* a value type's size is its unboxed field bytes */
        return;
    }
    id_vec v = {.elem = sizeof(field_at)};
    ClassID cur = cls;
    for (int depth = 0; cur && depth < MAX_PARENTS; depth++) {
        ClassID parent = 0;
        if (!own_fields(info, cur, &v, &parent))
            break;
        cur = parent;
    }
    field_at *f = v.p;
    if (v.n > 1)
        qsort(f, v.n, sizeof *f, field_at_cmp);
    l->offsets = v.n ? hl_mem_malloc(v.n * sizeof *l->offsets) : NULL;
    if (v.n && !l->offsets) {
        c->model_failures++;
        hl_vec_release(&v);
        return;
    }
    l->kind = HL_LAYOUT_FIELDS;
    l->n = (uint32_t)v.n;
    uint32_t type_id = hl_collector_type_id(c, cls);
    for (size_t i = 0; i < v.n; i++) {
        l->offsets[i] = f[i].offset;
        pending_field p = {.f = {.type_id = type_id, .field = (uint32_t)i + 1}};
        if (!hl_field_name(&c->names, f[i].module, f[i].token, p.name, sizeof p.name))
            strcpy(p.name, "?");
        if (!hl_vec_push(&c->fields.pending, &p))
            c->model_failures++;
    }
    hl_vec_release(&v);
}

/* The offset of instance field `name` of `cls` or a parent; false when it has none. */
static bool field_offset(collector *c, ClassID cls, const char *name, uint32_t *offset) {
    id_vec v = {.elem = sizeof(field_at)};
    ClassID cur = cls;
    bool found = false;
    for (int depth = 0; cur && depth < MAX_PARENTS && !found; depth++) {
        ClassID parent = 0;
        size_t first = v.n;
        if (!own_fields(c->p->info, cur, &v, &parent))
            break;
        for (size_t i = first; i < v.n && !found; i++) {
            const field_at *f = (const field_at *)v.p + i;
            char text[64];
            if (hl_field_name(&c->names, f->module, f->token, text, sizeof text) &&
                strcmp(text, name) == 0) {
                *offset = f->offset;
                found = true;
            }
        }
        cur = parent;
    }
    hl_vec_release(&v);
    return found;
}

void hl_fields_note_collection(collector *c, ClassID cls, const char *type_name) {
    const char *count = NULL, *free_count = NULL, *storage = NULL;
    if (!hl_collections_fields(type_name, &count, &free_count, &storage))
        return;
    hl_collection_layout l = {0};
    if (!field_offset(c, cls, count, &l.count_off) || !field_offset(c, cls, storage, &l.storage_off) ||
        (free_count && !field_offset(c, cls, free_count, &l.free_off)))
        return; /* not the layout the inspections know: not read */
    hl_collections_add(&c->p->gcs.collections, cls, l);
}

const hl_layout *hl_fields_layout(collector *c, ClassID cls) {
    static const hl_layout unknown = {.kind = HL_LAYOUT_UNKNOWN};
    hl_fields *f = &c->fields;
    uint64_t *at = hl_u64map_get(&f->by_class, cls);
    if (at)
        return (const hl_layout *)f->layouts.p + (*at - 1);
    hl_layout l = {0};
    resolve(c, cls, &l);
    if (!hl_vec_push(&f->layouts, &l) || !hl_u64map_put(&f->by_class, cls, f->layouts.n)) {
        c->model_failures++;
        hl_mem_free(l.offsets);
        return &unknown;
    }
    return (const hl_layout *)f->layouts.p + (f->layouts.n - 1);
}

void hl_fields_flush(collector *c) {
    for (size_t i = 0; i < c->fields.pending.n; i++) {
        const pending_field *p = (const pending_field *)c->fields.pending.p + i;
        hl_collector_put_str(c, HL_REC_FIELD, &p->f, sizeof p->f, p->name);
    }
    c->fields.pending.n = 0;
}
