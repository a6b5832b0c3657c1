/* hm_test.c — see hm_test.h. */
#include "hm_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void hm_test_fail(const char *file, int line, const char *what, uint64_t a, uint64_t b)
{
    if (a != b)
        fprintf(stderr, "%s:%d: CHECK failed: %s (0x%llx vs 0x%llx, %llu vs %llu)\n", file, line,
                what, (unsigned long long)a, (unsigned long long)b, (unsigned long long)a,
                (unsigned long long)b);
    else
        fprintf(stderr, "%s:%d: CHECK failed: %s\n", file, line, what);
    exit(1);
}

static void hm_rec_push(hm_rec *r, char kind, uint64_t id, uint32_t a, uint32_t b)
{
    if (r->n == r->cap) {
        r->cap = r->cap ? 2 * r->cap : 64;
        r->ev = realloc(r->ev, r->cap * sizeof(*r->ev));
        if (!r->ev)
            abort();
    }
    r->ev[r->n++] = (hm_event){kind, id, a, b};
}

static void hm_rec_on_classified(void *ctx, uint64_t id, uint32_t heap)
{
    hm_rec *r = ctx;
    if (r->saw_outcome)
        r->classified_late = true;
    hm_rec_push(r, 'c', id, heap, 0);
}

static void hm_rec_on_died(void *ctx, uint64_t id, uint32_t gen)
{
    hm_rec *r = ctx;
    r->saw_outcome = true;
    hm_rec_push(r, 'd', id, gen, 0);
}

static void hm_rec_on_survived(void *ctx, uint64_t id, uint32_t before, uint32_t after)
{
    hm_rec *r = ctx;
    r->saw_outcome = true;
    hm_rec_push(r, 's', id, before, after);
}

hm_gc_sink hm_rec_sink(hm_rec *r)
{
    return (hm_gc_sink){.ctx = r, .classified = hm_rec_on_classified, .died = hm_rec_on_died,
                        .survived = hm_rec_on_survived};
}

/* The batch forms record exactly what the per-object forms would have: recordings of both
 * sinks compare equal. */
static void hm_rec_batch(void *ctx, const uint64_t *reports, size_t n,
                         void (*each)(void *ctx, uint64_t id, uint32_t value))
{
    hm_rec *r = ctx;
    r->batches++;
    if (n == 0)
        r->empty_batches++;
    for (size_t i = 0; i < n; i++)
        each(ctx, HM_REPORT_ID(reports[i]), HM_REPORT_VALUE(reports[i]));
}

static void hm_rec_on_classified_young(void *ctx, const uint64_t *reports, size_t n)
{
    hm_rec_batch(ctx, reports, n, hm_rec_on_classified);
}

static void hm_rec_on_died_young(void *ctx, const uint64_t *reports, size_t n)
{
    hm_rec_batch(ctx, reports, n, hm_rec_on_died);
}

hm_gc_sink hm_rec_batch_sink(hm_rec *r)
{
    hm_gc_sink s = hm_rec_sink(r);
    s.classified_young = hm_rec_on_classified_young;
    s.died_young = hm_rec_on_died_young;
    return s;
}

/* Quiet young deaths: a condemned young object's word is recorded as 'c' and a 'C' mark;
 * hm_rec_quiet_resolve turns the marks of those not survived into the 'd' they stand for. */
static void hm_rec_on_classified_quiet(void *ctx, const uint64_t *reports, size_t n)
{
    hm_rec *r = ctx;
    r->batches++;
    if (n == 0)
        r->empty_batches++;
    for (size_t i = 0; i < n; i++) {
        uint32_t v = HM_REPORT_VALUE(reports[i]);
        hm_rec_on_classified(ctx, HM_REPORT_ID(reports[i]), v & ~HM_REPORT_CONDEMNED);
        if (v & HM_REPORT_CONDEMNED)
            hm_rec_push(r, 'C', HM_REPORT_ID(reports[i]), 0, 0);
    }
}

hm_gc_sink hm_rec_quiet_sink(hm_rec *r)
{
    hm_gc_sink s = hm_rec_batch_sink(r);
    s.classified_young = hm_rec_on_classified_quiet;
    s.young_deaths_in_classified = true;
    return s;
}

void hm_rec_quiet_resolve(hm_rec *r)
{
    hm_rec_sort(r);
    size_t k = 0;
    for (size_t i = 0; i < r->n; i++) {
        hm_event e = r->ev[i];
        if (e.kind == 'C') {
            if (hm_rec_find(r, 's', e.id))
                continue;
            const hm_event *c = hm_rec_find(r, 'c', e.id);
            e = (hm_event){'d', e.id, c ? c->a : HM_GEN_UNKNOWN, 0};
        }
        r->ev[k++] = e;
    }
    r->n = k;
    hm_rec_sort(r);
}

hm_gc_sink hm_rec_fates_sink(hm_rec *r, uint8_t *fates, uint64_t first, size_t n)
{
    hm_gc_sink s = hm_rec_quiet_sink(r);
    s.young_fates = fates;
    s.young_fates_first = first;
    s.young_fates_n = n;
    return s;
}

void hm_rec_to_fates(hm_rec *r, uint64_t first, size_t n, uint8_t *out)
{
    hm_rec_sort(r); /* 'C' < 'c' < 'd' < 's': classified before the outcome */
    size_t k = 0;
    for (size_t i = 0; i < r->n; i++) {
        hm_event e = r->ev[i];
        uint64_t rel = e.id - first;
        if (rel >= n || e.kind == 'C') {
            r->ev[k++] = e;
            continue;
        }
        uint8_t *f = &out[rel];
        if (e.kind == 'c')
            *f = HM_FATE(e.a, e.a);
        else if (e.kind == 'd')
            *f = HM_FATE(HM_FATE_HEAP(*f), HM_GEN_UNKNOWN);
        else if (e.kind == 's')
            *f = HM_FATE(HM_FATE_HEAP(*f), e.b);
    }
    r->n = k;
}

void hm_rec_young_deaths_as_heaps(hm_rec *r)
{
    for (size_t i = 0; i < r->n; i++)
        if (r->ev[i].kind == 'd' && hm_rec_find(r, 'c', r->ev[i].id) && r->ev[i].a <= HM_GEN_2)
            r->ev[i].a = HM_GEN_0;
}

void hm_rec_clear(hm_rec *r)
{
    r->n = 0;
    r->batches = r->empty_batches = 0;
    r->classified_late = false;
    r->saw_outcome = false;
}

void hm_rec_release(hm_rec *r)
{
    free(r->ev);
    memset(r, 0, sizeof(*r));
}

static int hm_event_cmp(const void *pa, const void *pb)
{
    const hm_event *a = pa, *b = pb;
    if (a->kind != b->kind)
        return a->kind < b->kind ? -1 : 1;
    if (a->id != b->id)
        return a->id < b->id ? -1 : 1;
    if (a->a != b->a)
        return a->a < b->a ? -1 : 1;
    if (a->b != b->b)
        return a->b < b->b ? -1 : 1;
    return 0;
}

void hm_rec_sort(hm_rec *r)
{
    if (r->n)
        qsort(r->ev, r->n, sizeof(*r->ev), hm_event_cmp);
}

bool hm_rec_equal(const hm_rec *x, const hm_rec *y)
{
    if (x->n != y->n)
        return false;
    for (size_t i = 0; i < x->n; i++)
        if (hm_event_cmp(&x->ev[i], &y->ev[i]) != 0)
            return false;
    return true;
}

bool hm_rec_ids_unique(const hm_rec *r)
{
    for (size_t i = 1; i < r->n; i++)
        if (r->ev[i].kind == r->ev[i - 1].kind && r->ev[i].id == r->ev[i - 1].id)
            return false;
    return true;
}

const hm_event *hm_rec_find(const hm_rec *r, char kind, uint64_t id)
{
    for (size_t i = 0; i < r->n; i++)
        if (r->ev[i].kind == kind && r->ev[i].id == id)
            return &r->ev[i];
    return NULL;
}

size_t hm_rec_count(const hm_rec *r, char kind)
{
    size_t n = 0;
    for (size_t i = 0; i < r->n; i++)
        n += r->ev[i].kind == kind;
    return n;
}

bool hm_objs_push(void *ctx, uint64_t addr, uint64_t id, uint32_t generation)
{
    hm_objs *o = ctx;
    if (o->n == o->cap) {
        o->cap = o->cap ? 2 * o->cap : 64;
        o->v = realloc(o->v, o->cap * sizeof(*o->v));
        if (!o->v)
            abort();
    }
    o->v[o->n++] = (hm_obj){addr, id, generation};
    return true;
}

void hm_objs_release(hm_objs *o)
{
    free(o->v);
    memset(o, 0, sizeof(*o));
}

void hm_objs_of_model_nosync(hm_objs *o, const hm_model *m)
{
    o->n = 0;
    CHECK(hm_model_foreach(m, hm_objs_push, o));
    for (size_t i = 1; i < o->n; i++)
        CHECK(o->v[i - 1].addr < o->v[i].addr);
}

void hm_objs_of_model(hm_objs *o, const hm_model *m)
{
    hm_objs_of_model_nosync(o, m);
    CHECK_EQ(o->n, hm_model_count(m));
}

bool hm_objs_equal(const hm_objs *x, const hm_objs *y)
{
    if (x->n != y->n)
        return false;
    for (size_t i = 0; i < x->n; i++)
        if (x->v[i].addr != y->v[i].addr || x->v[i].id != y->v[i].id ||
            x->v[i].gen != y->v[i].gen)
            return false;
    return true;
}
