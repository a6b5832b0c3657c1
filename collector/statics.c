/* statics.c — see statics.h. */
#include "collector/statics.h"

#include <stdlib.h>
#include <string.h>

#include "collector/collector_internal.h"
#include "collector/mem.h"

enum { STATIC_KIND_UNKNOWN = 0, STATIC_KIND_DOMAIN = 1, STATIC_KIND_THREAD = 2 };

typedef struct static_field {
    ClassID cls;
    mdToken token;
    ModuleID module;
    uint32_t id;   /* its static id (a thread static's slots have one per thread) */
    uint32_t kind; /* STATIC_KIND_*: asked once GetAppDomainStaticAddress first fails */
} static_field;

typedef struct static_slot {
    uint64_t addr;
    uint32_t id;
} static_slot;

typedef struct pending_static {
    hl_static s;
    char name[120];
} pending_static;

typedef struct pending_method {
    hl_root_method m;
    char name[240];
} pending_method;

void hl_statics_init(hl_statics *s) {
    memset(s, 0, sizeof *s);
    hl_u64map_init(&s->classes);
    s->fields.elem = sizeof(static_field);
    s->pending.elem = sizeof(pending_static);
    s->slots.elem = sizeof(static_slot);
    hl_u64map_init(&s->methods);
    s->pending_methods.elem = sizeof(pending_method);
    hl_u64map_init(&s->per_thread);
    s->pending_threads.elem = sizeof(hl_static_thread);
}

void hl_statics_release(hl_statics *s) {
    hl_u64map_release(&s->classes);
    hl_vec_release(&s->fields);
    hl_vec_release(&s->pending);
    hl_vec_release(&s->slots);
    hl_u64map_release(&s->methods);
    hl_vec_release(&s->pending_methods);
    hl_u64map_release(&s->per_thread);
    hl_vec_release(&s->pending_threads);
}

/* hl_static_reference_fields' callback: notes a static field and its pending STATIC record. */
typedef struct note_ctx {
    collector *c;
    ClassID cls;
    ModuleID module;
    uint32_t type_id;
} note_ctx;

static void note_field(void *ctx, mdToken token) {
    note_ctx *x = ctx;
    collector *c = x->c;
    hl_statics *s = &c->statics;
    static_field f = {.cls = x->cls, .token = token, .module = x->module, .id = ++s->next_id};
    if (!x->type_id)
        x->type_id = hl_collector_type_id(c, x->cls);
    pending_static p = {.s = {.static_id = f.id, .type_id = x->type_id}};
    if (!hl_field_name(&c->names, x->module, token, p.name, sizeof p.name))
        strcpy(p.name, "?");
    if (!hl_vec_push(&s->fields, &f) || !hl_vec_push(&s->pending, &p))
        c->model_failures++;
}

void hl_statics_note_class(collector *c, ClassID cls) {
    hl_statics *s = &c->statics;
    if (!cls || cls == s->last)
        return;
    s->last = cls;
    if (hl_u64map_get(&s->classes, cls))
        return;
    if (!hl_u64map_put(&s->classes, cls, 1)) {
        c->model_failures++;
        return;
    }
    ICorProfilerInfo *info = c->p->info;
    ModuleID module = 0;
    mdTypeDef td = 0;
    ClassID parent = 0, args[8];
    uint32_t n_args = 0;
    uint32_t elem_type = 0;
    ClassID elem = 0;
    ULONG rank = 0;
    if (info_is_array_class(info, cls, &elem_type, &elem, &rank) == S_OK ||
        HR_FAILED(info_get_class_id_info2(info, cls, &module, &td, &parent, 8, &n_args, args)) ||
        !module || !td)
        return;
    IMetaDataImport *mdi = hl_type_names_metadata(&c->names, module);
    if (!mdi)
        return;
    note_ctx x = {.c = c, .cls = cls, .module = module};
    hl_static_reference_fields(mdi, td, note_field, &x);
}

static int slot_cmp(const void *a, const void *b) {
    const static_slot *x = a, *y = b;
    return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* Names a stack root's method once (a ROOT_METHOD record). */
static void name_method(collector *c, FunctionID function) {
    hl_statics *s = &c->statics;
    if (hl_u64map_get(&s->methods, function))
        return;
    pending_method m = {.m = {.function_id = function}};
    if (!hl_method_name(&c->names, function, m.name, sizeof m.name))
        return;
    if (!hl_u64map_put(&s->methods, function, 1) || !hl_vec_push(&s->pending_methods, &m))
        c->model_failures++;
}

/* The static id of published thread static `i` (thread_statics.h) on thread `os_tid`: given the
 * first time, with a STATIC record naming the field and a STATIC_THREAD naming the thread. 0 on
 * failure. */
static uint32_t thread_slot_id(collector *c, uint32_t i, uint32_t os_tid) {
    hl_statics *s = &c->statics;
    const hl_tls_fields *published = &c->p->gcs.tls_fields;
    if (i >= atomic_load_explicit(&published->n, memory_order_acquire))
        return 0;
    const hl_tls_field *f = &published->items[i];
    uint64_t key = (uint64_t)(i + 1) << 32 | os_tid;
    uint64_t *known = hl_u64map_get(&s->per_thread, key);
    if (known)
        return (uint32_t)*known;
    pending_static p = {.s = {.static_id = ++s->next_id, .type_id = hl_collector_type_id(c, f->cls)}};
    if (!hl_field_name(&c->names, f->module, f->token, p.name, sizeof p.name))
        strcpy(p.name, "?");
    hl_static_thread t = {.static_id = p.s.static_id, .os_tid = os_tid};
    if (!hl_u64map_put(&s->per_thread, key, p.s.static_id) || !hl_vec_push(&s->pending, &p) ||
        !hl_vec_push(&s->pending_threads, &t)) {
        c->model_failures++;
        return 0;
    }
    return p.s.static_id;
}

static bool slot_add(collector *c, uint64_t addr, uint32_t id) {
    hl_statics *s = &c->statics;
    static_slot slot = {.addr = addr, .id = id};
    if (!id)
        return true;
    if (!hl_vec_push(&s->slots, &slot)) {
        c->model_failures++;
        return false;
    }
    s->lo = slot.addr < s->lo ? slot.addr : s->lo;
    s->hi = slot.addr > s->hi ? slot.addr : s->hi;
    return true;
}

/* Notes the class of a method (none for shared generic code without its instantiation). */
static void note_function(collector *c, FunctionID function) {
    ClassID cls = 0;
    ModuleID module = 0;
    mdToken token = 0;
    uint32_t n_args = 0;
    if (!HR_FAILED(info_get_function_info2(c->p->info, function, &cls, &module, &token, 0, &n_args,
                                           NULL)))
        hl_statics_note_class(c, cls);
}

/* Notes the classes of every JIT-compiled method. */
static void note_jited(collector *c) {
    IUnknown *e = NULL;
    if (!HR_FAILED(info_enum_jited_functions(c->p->info, &e)) && e) {
        COR_PRF_FUNCTION f[256];
        ULONG got = 0;
        while (!HR_FAILED(function_enum_next(e, 256, f, &got)) && got > 0)
            for (ULONG k = 0; k < got; k++)
                note_function(c, f[k].function);
        clr_release(e);
    }
}

/* Whether field `f` is a thread static, asked once; a thread static is published for the GC
 * thread (thread_statics.h; ClassLoadFinished published it already unless its class was loaded
 * before an attach). */
static void classify(collector *c, static_field *f, AppDomainID domain) {
    uint32_t kind = 0;
    if (!domain || f->kind != STATIC_KIND_UNKNOWN ||
        HR_FAILED(info_get_static_field_info(c->p->info, f->cls, f->token, &kind)))
        return;
    f->kind = kind & COR_PRF_FIELD_THREAD_STATIC ? STATIC_KIND_THREAD : STATIC_KIND_DOMAIN;
    hl_tls_field t = {.cls = f->cls, .token = f->token, .domain = domain, .module = f->module};
    if (f->kind == STATIC_KIND_THREAD && c->p->gcs.tls_on &&
        !hl_tls_fields_add(&c->p->gcs.tls_fields, &t))
        c->model_failures++;
}

void hl_statics_before_gc(collector *c) {
    hl_statics *s = &c->statics;
    note_jited(c);
    ModuleID module = 0;
    AppDomainID domain = 0;
    for (size_t i = 0; i < s->fields.n; i++) {
        static_field *f = (static_field *)s->fields.p + i;
        if (f->kind != STATIC_KIND_UNKNOWN)
            continue;
        if (f->module != module) {
            module = f->module;
            domain = hl_module_domain(c->p->info, module);
        }
        classify(c, f, domain);
    }
}

void hl_statics_prepare(collector *c, const hl_gc_capture *g) {
    hl_statics *s = &c->statics;
    ICorProfilerInfo *info = c->p->info;
    note_jited(c);
    /* Methods on the stack: the enumeration leaves out some that run (a program's Main) */
    for (size_t i = 0; i < g->n_roots; i++)
        if (g->roots[i].kind == HL_ROOT_STACK && g->roots[i].root_id) {
            note_function(c, (FunctionID)g->roots[i].root_id);
            name_method(c, (FunctionID)g->roots[i].root_id);
        }
    s->slots.n = 0;
    s->lo = UINT64_MAX;
    s->hi = 0;
    ModuleID module = 0;
    AppDomainID domain = 0;
    for (size_t i = 0; i < s->fields.n; i++) {
        static_field *f = (static_field *)s->fields.p + i;
        if (f->kind == STATIC_KIND_THREAD)
            continue;
        if (f->module != module) {
            module = f->module;
            domain = hl_module_domain(info, module);
        }
        void *addr = NULL;
        if (!domain ||
            HR_FAILED(info_get_app_domain_static_address(info, f->cls, f->token, domain, &addr)) ||
            !addr) {
            /* Not initialised yet, or a thread static: asked once which. A thread static's
             * slots are found inside the next snapshots' GCs (thread_statics.h). */
            classify(c, f, domain);
            continue;
        }
        f->kind = STATIC_KIND_DOMAIN;
        if (!slot_add(c, (uint64_t)(uintptr_t)addr, f->id))
            break;
    }
    /* This snapshot's thread-static slots, found inside its GC. */
    for (size_t k = 0; k < g->n_tls; k++) {
        const hl_tls_slot *t = &g->tls[k];
        if (!slot_add(c, t->addr, thread_slot_id(c, t->field, t->os_tid)))
            break;
    }
    if (s->slots.n > 1)
        qsort(s->slots.p, s->slots.n, sizeof(static_slot), slot_cmp);
}

uint32_t hl_statics_at(const hl_statics *s, uint64_t addr) {
    if (addr < s->lo || addr > s->hi)
        return 0;
    const static_slot *v = s->slots.p;
    size_t lo = 0, hi = s->slots.n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (v[mid].addr < addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < s->slots.n && v[lo].addr == addr ? v[lo].id : 0;
}

void hl_statics_flush(collector *c) {
    for (size_t i = 0; i < c->statics.pending.n; i++) {
        const pending_static *p = (const pending_static *)c->statics.pending.p + i;
        hl_collector_put_str(c, HL_REC_STATIC, &p->s, sizeof p->s, p->name);
    }
    c->statics.pending.n = 0;
    for (size_t i = 0; i < c->statics.pending_threads.n; i++)
        hl_outbox_put(&c->out, HL_REC_STATIC_THREAD,
                      (const hl_static_thread *)c->statics.pending_threads.p + i,
                      sizeof(hl_static_thread), NULL, 0, NULL, 0);
    c->statics.pending_threads.n = 0;
    for (size_t i = 0; i < c->statics.pending_methods.n; i++) {
        const pending_method *m = (const pending_method *)c->statics.pending_methods.p + i;
        hl_collector_put_str(c, HL_REC_ROOT_METHOD, &m->m, sizeof m->m, m->name);
    }
    c->statics.pending_methods.n = 0;
}
