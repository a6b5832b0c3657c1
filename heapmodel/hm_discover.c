/* hm_discover.c — objects found alive by looking at the heap (see hm_model_discover in
 * hm_model.h): known ones are named, unknown ones inserted with new ids.
 *
 * It runs right after a GC was applied, when the model holds no young object and no tombstone,
 * so every object lives in a window and a window merge is all it takes. Two passes keep
 * HM_ERR_NOMEM harmless: the first only creates windows (empty ones are invisible) and reserves
 * room, the second, which cannot fail, assigns ids and merges. */
#include "heapmodel/hm_state.h"

#include <stdlib.h>

static int hm_found_cmp(const void *pa, const void *pb)
{
    const hm_found *a = pa, *b = pb;
    return a->addr < b->addr ? -1 : a->addr > b->addr;
}

/* Marks invalid and duplicate entries, and known ones in window w (one merge-like scan);
 * returns how many are new. found[i..j) all lie in w's window, sorted. */
static size_t hm_discover_scan(const hm_window *w, hm_found *found, size_t i, size_t j)
{
    size_t fresh = 0;
    uint32_t at = 0;
    for (size_t x = i; x < j; x++) {
        hm_found *f = &found[x];
        if (f->status == HM_FOUND_INVALID)
            continue;
        if (x > i && found[x - 1].addr == f->addr && found[x - 1].status != HM_FOUND_INVALID) {
            f->status = HM_FOUND_DUPLICATE;
            continue;
        }
        while (w && at < w->n && w->e[at].addr < f->addr)
            at++;
        if (w && at < w->n && w->e[at].addr == f->addr) {
            f->status = HM_FOUND_KNOWN;
            f->id = hm_entry_id(&w->e[at]);
            f->generation = hm_entry_gen(&w->e[at]);
        } else {
            f->status = HM_FOUND_NEW;
            fresh++;
        }
    }
    return fresh;
}

/* Merges the new entries of found[i..j) into w (room reserved), from the back. */
static void hm_discover_merge(hm_model *m, hm_window *w, const hm_found *found, size_t i, size_t j,
                              size_t fresh)
{
    size_t a = w->n, out = w->n + fresh;
    for (size_t x = j; x-- > i;) {
        const hm_found *f = &found[x];
        if (f->status != HM_FOUND_NEW)
            continue;
        while (a > 0 && w->e[a - 1].addr > f->addr)
            w->e[--out] = w->e[--a];
        w->e[--out] = (hm_entry){f->addr, f->id << 4 | f->generation};
    }
    w->n += (uint32_t)fresh;
    m->n_live_win += fresh;
}

int hm_model_discover(hm_model *m, hm_found *found, size_t n, uint64_t *next_id, size_t *n_new)
{
    if (n_new)
        *n_new = 0;
    if (!m || (n && !found) || !next_id || m->yt.n_young || m->n_tomb)
        return HM_ERR_INVALID;
    if (*next_id > HM_ID_MAX || n > HM_ID_MAX - *next_id + 1)
        return HM_ERR_INVALID;
    bool sorted = true;
    for (size_t i = 0; i < n; i++) {
        found[i].id = 0;
        bool bad = found[i].addr == 0 || found[i].generation > HM_GEN_NONGC;
        found[i].status = bad ? HM_FOUND_INVALID : 0;
        if (i && found[i - 1].addr > found[i].addr)
            sorted = false;
    }
    if (!sorted)
        qsort(found, n, sizeof *found, hm_found_cmp);

    /* Pass 1: windows and room; nothing observable changes. */
    size_t wi = 0;
    for (size_t i = 0; i < n;) {
        uint64_t key = found[i].addr >> HM_WINDOW_SHIFT;
        size_t j = i + 1;
        while (j < n && found[j].addr >> HM_WINDOW_SHIFT == key)
            j++;
        size_t w_at = hm_windows_find(m, key);
        size_t fresh = hm_discover_scan(w_at == HM_NONE ? NULL : &m->win[w_at], found, i, j);
        if (fresh) {
            wi = hm_windows_get(m, key, 0);
            if (wi == HM_NONE || hm_window_reserve(m, &m->win[wi], m->win[wi].n + fresh) != HM_OK)
                return HM_ERR_NOMEM;
        }
        i = j;
    }

    /* Pass 2: ids in address order, then one merge per window. */
    size_t total = 0;
    for (size_t i = 0; i < n; i++) {
        if (found[i].status == HM_FOUND_NEW) {
            found[i].id = (*next_id)++;
            total++;
        } else if (found[i].status == HM_FOUND_DUPLICATE) {
            found[i].id = found[i - 1].id;
            found[i].generation = found[i - 1].generation;
        }
    }
    for (size_t i = 0; i < n;) {
        uint64_t key = found[i].addr >> HM_WINDOW_SHIFT;
        size_t j = i + 1, fresh = found[i].status == HM_FOUND_NEW;
        while (j < n && found[j].addr >> HM_WINDOW_SHIFT == key)
            fresh += found[j++].status == HM_FOUND_NEW;
        if (fresh)
            hm_discover_merge(m, &m->win[hm_windows_find(m, key)], found, i, j, fresh);
        i = j;
    }
    m->cache_valid = false;
    if (n_new)
        *n_new = total;
    return HM_OK;
}
