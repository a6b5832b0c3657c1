/* hm_naive.c — see hm_naive.h. Clarity over speed everywhere; allocation failure aborts. */
#include "hm_naive.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct hm_naive_obj {
    uint64_t addr;
    uint64_t id;
    uint32_t gen;
} hm_naive_obj;

typedef struct hm_naive_span {
    uint64_t start, end; /* [start, end) */
    uint64_t aux;        /* generation, or new start */
    size_t order;        /* input position, for ties */
    bool kept;
} hm_naive_span;

struct hm_naive {
    hm_naive_obj *obj;
    size_t n, cap;
    hm_naive_obj *evicted; /* addr unused */
    size_t n_evicted, cap_evicted;
};

static void *hm_naive_grow(void *p, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return p;
    *cap = need * 2 + 16;
    p = realloc(p, *cap * size);
    if (!p) {
        fprintf(stderr, "hm_naive: out of memory\n");
        abort();
    }
    return p;
}

hm_naive *hm_naive_new(void)
{
    return calloc(1, sizeof(hm_naive));
}

void hm_naive_free(hm_naive *n)
{
    if (!n)
        return;
    free(n->obj);
    free(n->evicted);
    free(n);
}

static size_t hm_naive_find(const hm_naive *n, uint64_t addr)
{
    for (size_t i = 0; i < n->n; i++)
        if (n->obj[i].addr == addr)
            return i;
    return (size_t)-1;
}

static void hm_naive_remove(hm_naive *n, size_t i)
{
    n->obj[i] = n->obj[--n->n];
}

int hm_naive_add(hm_naive *n, uint64_t addr, uint64_t id)
{
    if (addr == 0 || id > HM_ID_MAX)
        return HM_ERR_INVALID;
    size_t i = hm_naive_find(n, addr);
    if (i != (size_t)-1) {
        n->evicted = hm_naive_grow(n->evicted, &n->cap_evicted, n->n_evicted + 1,
                                   sizeof(*n->evicted));
        n->evicted[n->n_evicted++] = n->obj[i];
        hm_naive_remove(n, i);
    }
    n->obj = hm_naive_grow(n->obj, &n->cap, n->n + 1, sizeof(*n->obj));
    n->obj[n->n++] = (hm_naive_obj){addr, id, HM_GEN_UNKNOWN};
    return HM_OK;
}

/* ---- range rules, by selection ----------------------------------------------------------- */

static bool hm_naive_overlap(uint64_t a0, uint64_t a1, uint64_t b0, uint64_t b1)
{
    return a0 < b1 && b0 < a1;
}

/* Decides s[i].kept for every candidate: candidates are taken smallest (key, order) first, and
 * one is dropped when it overlaps any candidate kept before it. `dest` selects the new-address
 * interval of a move (key new start, ties by old start) instead of [start, end). */
static size_t hm_naive_select(hm_naive_span *s, size_t n, bool dest)
{
    bool *done = calloc(n + 1, sizeof(bool));
    size_t dropped = 0;
    for (size_t round = 0; round < n; round++) {
        size_t best = (size_t)-1;
        for (size_t i = 0; i < n; i++) {
            if (done[i])
                continue;
            uint64_t ki = dest ? s[i].aux : s[i].start, kb = 0;
            uint64_t ti = dest ? s[i].start : s[i].order, tb = 0;
            if (best != (size_t)-1) {
                kb = dest ? s[best].aux : s[best].start;
                tb = dest ? s[best].start : s[best].order;
            }
            if (best == (size_t)-1 || ki < kb || (ki == kb && ti < tb))
                best = i;
        }
        done[best] = true;
        uint64_t b0 = dest ? s[best].aux : s[best].start;
        uint64_t b1 = b0 + (s[best].end - s[best].start);
        bool ok = true;
        for (size_t i = 0; i < n; i++) {
            if (i == best || !done[i] || !s[i].kept)
                continue;
            uint64_t a0 = dest ? s[i].aux : s[i].start;
            uint64_t a1 = a0 + (s[i].end - s[i].start);
            if (hm_naive_overlap(a0, a1, b0, b1))
                ok = false;
        }
        s[best].kept = ok;
        dropped += !ok;
    }
    free(done);
    return dropped;
}

static hm_naive_span *hm_naive_bounds(const hm_gen_range *r, size_t n, size_t *n_out,
                                      size_t *anomalies)
{
    hm_naive_span *s = calloc(n + 1, sizeof(*s));
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (r[i].length == 0)
            continue;
        if (r[i].start + r[i].length < r[i].start || r[i].generation > HM_GEN_POH) {
            (*anomalies)++;
            continue;
        }
        s[k++] = (hm_naive_span){r[i].start, r[i].start + r[i].length, r[i].generation, i, false};
    }
    *anomalies += hm_naive_select(s, k, false);
    *n_out = k;
    return s;
}

static hm_naive_span *hm_naive_moves(const hm_move *m, size_t n, size_t *n_out,
                                     size_t *anomalies)
{
    hm_naive_span *s = calloc(n + 1, sizeof(*s));
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (m[i].length == 0 || m[i].old_start + m[i].length < m[i].old_start ||
            m[i].new_start + m[i].length < m[i].new_start) {
            (*anomalies)++;
            continue;
        }
        s[k++] = (hm_naive_span){m[i].old_start, m[i].old_start + m[i].length, m[i].new_start, i,
                                 false};
    }
    *anomalies += hm_naive_select(s, k, false);
    /* Destination rule among the moves kept so far. */
    size_t k2 = 0;
    for (size_t i = 0; i < k; i++)
        if (s[i].kept)
            s[k2++] = s[i];
    *anomalies += hm_naive_select(s, k2, true);
    *n_out = k2;
    return s;
}

static const hm_naive_span *hm_naive_span_find(const hm_naive_span *s, size_t n, uint64_t a)
{
    for (size_t i = 0; i < n; i++)
        if (s[i].kept && s[i].start <= a && a < s[i].end)
            return &s[i];
    return NULL;
}

/* ---- apply_gc ----------------------------------------------------------------------------- */

typedef struct hm_naive_event {
    uint64_t id;
    uint32_t a, b;
} hm_naive_event;

int hm_naive_apply_gc(hm_naive *n, const hm_gc_input *in, const hm_gc_sink *sink,
                      hm_gc_stats *stats)
{
    hm_gc_stats st = {0};
    if (stats)
        *stats = st;
    if (!in || in->n_bounds_before == 0 || !in->bounds_before ||
        (in->n_bounds_after && !in->bounds_after) || (in->n_moves && !in->moves))
        return HM_ERR_INVALID;
    uint32_t mask = in->condemned_mask & 0x1f;
    size_t nbb, nba, nmv;
    hm_naive_span *bb = hm_naive_bounds(in->bounds_before, in->n_bounds_before, &nbb,
                                        &st.anomalies);
    hm_naive_span *ba = hm_naive_bounds(in->bounds_after, in->n_bounds_after, &nba,
                                        &st.anomalies);
    hm_naive_span *mv = hm_naive_moves(in->moves, in->n_moves, &nmv, &st.anomalies);

    hm_naive_event *classified = calloc(n->n + 1, sizeof(*classified));
    hm_naive_event *died = calloc(n->n + n->n_evicted + 1, sizeof(*died));
    hm_naive_obj *kept = calloc(n->n + 1, sizeof(*kept));
    hm_naive_obj *surv = calloc(n->n + 1, sizeof(*surv));
    size_t n_cl = 0, n_died = 0, n_kept = 0, n_surv = 0;

    for (size_t i = 0; i < n->n_evicted; i++)
        died[n_died++] = (hm_naive_event){n->evicted[i].id, n->evicted[i].gen, 0};
    st.evicted += n->n_evicted;
    st.anomalies += n->n_evicted;
    n->n_evicted = 0;

    for (size_t i = 0; i < n->n; i++) {
        hm_naive_obj o = n->obj[i];
        const hm_naive_span *b = hm_naive_span_find(bb, nbb, o.addr);
        uint32_t g0 = b ? (uint32_t)b->aux : HM_GEN_NONGC;
        bool condemned;
        if (o.gen == HM_GEN_UNKNOWN) {
            uint32_t heap = g0 <= HM_GEN_2 ? HM_GEN_0 : g0;
            classified[n_cl++] = (hm_naive_event){o.id, heap, 0};
            condemned = b && (mask >> g0 & 1);
            o.gen = g0;
        } else {
            condemned = o.gen != HM_GEN_NONGC && b && (mask >> g0 & 1);
        }
        if (!condemned) {
            kept[n_kept++] = o;
            continue;
        }
        st.condemned++;
        const hm_naive_span *m = hm_naive_span_find(mv, nmv, o.addr);
        if (!m) {
            died[n_died++] = (hm_naive_event){o.id, g0, 0};
            continue;
        }
        surv[n_surv++] = (hm_naive_obj){m->aux + (o.addr - m->start), o.id, g0};
    }
    st.classified = n_cl;

    /* Every condemned object has left; place the survivors. */
    memcpy(n->obj, kept, n_kept * sizeof(*kept));
    n->n = n_kept;
    hm_naive_event *survived = calloc(n_surv + 1, sizeof(*survived));
    for (size_t i = 0; i < n_surv; i++) {
        hm_naive_obj s = surv[i];
        size_t h = hm_naive_find(n, s.addr);
        if (h != (size_t)-1) {
            died = realloc(died, (n_died + n_surv + 1) * sizeof(*died));
            died[n_died++] = (hm_naive_event){n->obj[h].id, n->obj[h].gen, 0};
            st.evicted++;
            st.anomalies++;
            hm_naive_remove(n, h);
        }
        const hm_naive_span *a = hm_naive_span_find(ba, nba, s.addr);
        uint32_t after = s.gen;
        if (a)
            after = (uint32_t)a->aux;
        else
            st.anomalies++;
        survived[i] = (hm_naive_event){s.id, s.gen, after};
        n->obj = hm_naive_grow(n->obj, &n->cap, n->n + 1, sizeof(*n->obj));
        n->obj[n->n++] = (hm_naive_obj){s.addr, s.id, after};
    }
    st.survived = n_surv;
    st.died = n_died;
    st.live_after = n->n;

    for (size_t i = 0; sink && sink->classified && i < n_cl; i++)
        sink->classified(sink->ctx, classified[i].id, classified[i].a);
    for (size_t i = 0; sink && sink->died && i < n_died; i++)
        sink->died(sink->ctx, died[i].id, died[i].a);
    for (size_t i = 0; sink && sink->survived && i < n_surv; i++)
        sink->survived(sink->ctx, survived[i].id, survived[i].a, survived[i].b);

    free(bb);
    free(ba);
    free(mv);
    free(classified);
    free(died);
    free(kept);
    free(surv);
    free(survived);
    if (stats)
        *stats = st;
    return HM_OK;
}

bool hm_naive_lookup(const hm_naive *n, uint64_t addr, uint64_t *id, uint32_t *generation)
{
    size_t i = hm_naive_find(n, addr);
    if (i == (size_t)-1)
        return false;
    if (id)
        *id = n->obj[i].id;
    if (generation)
        *generation = n->obj[i].gen;
    return true;
}

static int hm_naive_cmp(const void *a, const void *b)
{
    const hm_naive_obj *x = a, *y = b;
    return x->addr < y->addr ? -1 : x->addr > y->addr;
}

bool hm_naive_foreach(const hm_naive *n, hm_object_fn fn, void *ctx)
{
    hm_naive_obj *copy = malloc((n->n + 1) * sizeof(*copy));
    bool ok = true;
    memcpy(copy, n->obj, n->n * sizeof(*copy));
    qsort(copy, n->n, sizeof(*copy), hm_naive_cmp);
    for (size_t i = 0; i < n->n && ok; i++)
        ok = fn(ctx, copy[i].addr, copy[i].id, copy[i].gen);
    free(copy);
    return ok;
}

size_t hm_naive_count(const hm_naive *n)
{
    return n->n;
}
