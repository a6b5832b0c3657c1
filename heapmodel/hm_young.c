/* hm_young.c — the young objects of the model (see hm_state.h and the top of hm_model.c): the
 * hash that lookups sync lazily, and the duplicate checks hm_model_add leaves to a sync or to
 * the next GC.
 *
 * Usually the young list is a sequence of ascending runs (allocation contexts, drained a thread's
 * buffer at a time) over disjoint address intervals. The classification pass (hm_model.c) records
 * the runs as it goes, and each is checked against the classified objects; sorted by first
 * address, the runs then prove that no address was added twice, or show the few that overlap,
 * which are compared object by object. When the runs are too many or too tangled, a stable sort
 * of the young list finds the duplicates instead.
 */
#include "heapmodel/hm_state.h"

#include <stdlib.h>
#include <string.h>

/* ---- young objects ---------------------------------------------------------------------- */

static size_t hm_young_slot(const hm_model *m, uint64_t addr)
{
    return (size_t)(((addr >> 3) * UINT64_C(0x9E3779B97F4A7C15)) >> m->slot_shift);
}

/* Index of the hashed young object at addr, or HM_NONE; *slot gets its slot, or the empty slot
 * where it would go. The hash must exist (cap_slots > 0). */
static size_t hm_young_probe(const hm_model *m, uint64_t addr, size_t *slot)
{
    size_t mask = m->cap_slots - 1;
    uint64_t tag = hm_young_tag(m, addr);
    for (size_t s = hm_young_slot(m, addr);; s = (s + 1) & mask) {
        uint64_t v = m->slots[s];
        if (!hm_slot_used(m, v)) {
            *slot = s;
            return HM_NONE;
        }
        if ((v & HM_SLOT_TAGS) == tag && hm_young_addr(m->yt.young[(uint32_t)v - 1]) == addr) {
            *slot = s;
            return (uint32_t)v - 1;
        }
    }
}

/* The hashed young object at addr (HM_NONE if none); it is the newest at addr once synced. */
size_t hm_young_find_hashed(const hm_model *m, uint64_t addr)
{
    size_t slot;
    return m->n_hashed == 0 ? HM_NONE : hm_young_probe(m, addr, &slot);
}

static void hm_young_flag(hm_model *m, uint64_t *y)
{
    if (!hm_young_flagged(*y)) {
        *y |= HM_Y_EVICTED;
        m->n_yflagged++;
    }
}

uint64_t hm_young_id(const hm_model *m, size_t i)
{
    size_t lo = 0, hi = m->n_idruns; /* the last run that starts at or before i */
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if (m->idruns[mid].start <= i)
            lo = mid;
        else
            hi = mid;
    }
    return m->idruns[lo].id + (i - m->idruns[lo].start);
}

/* Window index for key through the one-entry cache; HM_NONE when there is no such window. */
static size_t hm_windows_find_cached(hm_model *m, uint64_t key)
{
    if (!m->cache_valid || m->cache_key != key) {
        m->cache_wi = hm_windows_find(m, key);
        m->cache_key = key;
        m->cache_valid = true;
    }
    return m->cache_wi;
}

/* A young object was added at addr: a classified object still live there died unseen and becomes
 * a tombstone (reported at the next GC). Cheap for a fresh allocation: its window is usually
 * absent, or holds nothing at or past addr. Idempotent. */
static void hm_young_shadow(hm_model *m, uint64_t addr)
{
    size_t wi = hm_windows_find_cached(m, addr >> HM_WINDOW_SHIFT);
    size_t ei = wi == HM_NONE ? HM_NONE : hm_window_find_live(&m->win[wi], addr);
    if (ei == HM_NONE)
        return;
    hm_window *w = &m->win[wi];
    hm_entry *x = &w->e[ei];
    x->idgen = (uint64_t)hm_entry_gen(x) << HM_TOMB_GEN_SHIFT |
               (x->idgen & ~(uint64_t)HM_GEN_MASK) | HM_GEN_TOMB;
    w->n_tomb++;
    m->n_tomb++;
    m->n_live_win--;
}

/* Brings the hash up to n_young: each young object not hashed yet replaces (and flags) an older
 * one at its address, or evicts a classified one there. Never allocates: add reserved the
 * capacity. The slots are random accesses into a table that outgrows the caches, so they are
 * prefetched a few objects ahead. Idempotent for objects already flagged or shadowed, which is
 * what lets a GC or a hash growth redo part of it. */
void hm_young_sync(hm_model *m)
{
    size_t n = m->yt.n_young;
    for (size_t i = m->n_hashed; i < n; i++) {
        if (i + HM_SYNC_PREFETCH < n)
            HM_PREFETCH_W(&m->slots[hm_young_slot(m, m->yt.young[i + HM_SYNC_PREFETCH])]);
        uint64_t y = m->yt.young[i];
        if (hm_young_flagged(y))
            continue; /* flagged by a GC that then failed: the newer one comes later */
        size_t slot, j = hm_young_probe(m, y, &slot);
        m->slots[slot] = hm_young_tag(m, y) | (uint32_t)(i + 1);
        if (j != HM_NONE)
            hm_young_flag(m, &m->yt.young[j]); /* the same address twice: the older died unseen */
        hm_young_shadow(m, y);
    }
    m->n_hashed = n;
}

/* First index of ywin whose key is >= key (n_ywin when none). */
static size_t hm_ywin_lower_bound(const hm_model *m, uint64_t key)
{
    size_t lo = 0, hi = m->n_ywin;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (m->ywin[mid] < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Whether some young object may lie in the window of addr: brings the list of their windows up
 * to date (a sequential scan of the objects added since), then searches it. */
static bool hm_young_window_may_hold(hm_model *m, uint64_t addr)
{
    uint64_t last = 0;
    bool have_last = false;
    for (size_t i = m->n_keyed; i < m->yt.n_young && !m->ywin_full; i++) {
        uint64_t key = m->yt.young[i] >> HM_WINDOW_SHIFT;
        if (have_last && key == last)
            continue;
        last = key;
        have_last = true;
        size_t lo = hm_ywin_lower_bound(m, key);
        if (lo < m->n_ywin && m->ywin[lo] == key)
            continue;
        if (m->n_ywin == HM_YOUNG_WINDOWS) {
            m->ywin_full = true;
            break;
        }
        memmove(&m->ywin[lo + 1], &m->ywin[lo], (m->n_ywin - lo) * sizeof(m->ywin[0]));
        m->ywin[lo] = key;
        m->n_ywin++;
    }
    m->n_keyed = m->yt.n_young;
    if (m->ywin_full)
        return true;
    uint64_t key = addr >> HM_WINDOW_SHIFT;
    size_t lo = hm_ywin_lower_bound(m, key);
    return lo < m->n_ywin && m->ywin[lo] == key;
}

/* Index of the newest young object at addr, or HM_NONE. The newest objects that are not hashed
 * yet are compared directly (the collector mostly looks up an object allocated moments before);
 * an address in a window without young objects (an old object) needs nothing more; only then
 * is the hash synced. */
size_t hm_young_lookup(hm_model *m, uint64_t addr)
{
    size_t n = m->yt.n_young, hashed = m->n_hashed;
    size_t stop = n - hashed > HM_TAIL_SCAN ? n - HM_TAIL_SCAN : hashed;
    for (size_t i = n; i > stop; i--)
        if (hm_young_addr(m->yt.young[i - 1]) == addr)
            return i - 1; /* the newest at addr is never flagged */
    if (stop != hashed) {
        if (!hm_young_window_may_hold(m, addr))
            return HM_NONE;
        hm_young_sync(m);
    }
    return hm_young_find_hashed(m, addr);
}

/* The young objects an add may append without growth (yt.add_room): while n_young is below it
 * there is room in the list, the hash stays at most half full after the add, and the index
 * stays below UINT32_MAX (a hash slot holds index + 1 in 32 bits). */
static void hm_young_room(hm_model *m)
{
    size_t room = m->cap_slots / 2 < m->cap_young ? m->cap_slots / 2 : m->cap_young;
    m->yt.add_room = room < (size_t)UINT32_MAX - 1 ? room : (size_t)UINT32_MAX - 1;
}

/* Room for one more young object: the list, and hash capacity for a sync (load at most 1/2).
 * A grown hash starts empty and is refilled by the next sync. */
int hm_young_grow(hm_model *m)
{
    size_t n = m->yt.n_young;
    if (n + 1 >= UINT32_MAX)
        return HM_ERR_NOMEM;
    int rc = HM_RESERVE(m, m->yt.young, m->cap_young, n + 1);
    hm_young_room(m);
    if (rc != HM_OK)
        return HM_ERR_NOMEM;
    if (2 * (n + 1) <= m->cap_slots)
        return HM_OK;
    size_t cap = m->cap_slots ? 2 * m->cap_slots : 1024;
    unsigned shift = 64;
    for (size_t c = cap; c > 1; c >>= 1)
        shift--;
    uint64_t *slots = hm_calloc(m, cap, sizeof(*slots)); /* epoch 0 is never current: empty */
    if (!slots)
        return HM_ERR_NOMEM;
    hm_free(m, m->slots);
    m->slots = slots;
    m->cap_slots = cap;
    m->slot_shift = shift;
    m->n_hashed = 0;
    hm_young_room(m);
    return HM_OK;
}

/* After a GC: forget the young objects, and give back memory when a burst of allocations left
 * far more capacity than the last cycle used. */
void hm_young_reset(hm_model *m, size_t used)
{
    m->yt.n_young = 0;
    m->yt.next_id = UINT64_MAX;
    m->n_idruns = 0;
    m->n_hashed = 0;
    m->n_yflagged = 0;
    m->n_ywin = 0;
    m->n_keyed = 0;
    m->ywin_full = false;
    if (m->cap_young > 4 * used && m->cap_young > 4096) {
        hm_free(m, m->yt.young);
        hm_free(m, m->slots);
        hm_free(m, m->idruns);
        m->yt.young = NULL;
        m->slots = NULL;
        m->idruns = NULL;
        m->cap_young = m->cap_slots = m->cap_idruns = 0;
        m->yt.add_room = 0;
        m->slot_shift = 64;
        return;
    }
    if (++m->epoch > HM_EPOCH_MAX) {
        if (m->slots)
            memset(m->slots, 0, m->cap_slots * sizeof(*m->slots));
        m->epoch = 1;
    }
}

/* ---- duplicates found at GC time -------------------------------------------------------- */

/* The young run young[s..e), whose unflagged objects ascend strictly from first to last, ended:
 * classified objects at their addresses are evicted. Usually no window the run touches holds
 * anything in [first, last], which a binary search per window shows. */
static void hm_young_run_shadow(hm_model *m, size_t s, size_t e, uint64_t first, uint64_t last)
{
    for (uint64_t key = first >> HM_WINDOW_SHIFT;; key++) {
        size_t wi = hm_windows_find_cached(m, key);
        if (wi != HM_NONE) {
            const hm_window *w = &m->win[wi];
            if (w->n > 0 && first <= w->e[w->n - 1].addr && w->e[0].addr <= last) {
                uint32_t lo = hm_entries_lower_bound(w->e, 0, w->n, first);
                if (lo < w->n && w->e[lo].addr <= last) {
                    for (size_t i = s; i < e; i++)
                        if (!hm_young_flagged(m->yt.young[i]))
                            hm_young_shadow(m, m->yt.young[i]);
                    return;
                }
            }
        }
        if (key == last >> HM_WINDOW_SHIFT)
            return;
    }
}

/* The general case: sort (address, index) pairs, in m->tmp; of equal addresses all but the last
 * added are flagged, and the last one evicts a classified object at its address. */
static int hm_young_dedup_sort(hm_model *m)
{
    size_t n = m->yt.n_young, k = 0;
    if (HM_RESERVE(m, m->tmp, m->cap_tmp, n + hm_sort_tmp_size(n)) != HM_OK)
        return HM_ERR_NOMEM;
    hm_pair *p = m->tmp;
    for (size_t i = 0; i < n; i++)
        if (!hm_young_flagged(m->yt.young[i]))
            p[k++] = (hm_pair){m->yt.young[i], i};
    p = hm_pairs_sort(p, m->tmp + n, k); /* stable: equal addresses stay in arrival order */
    for (size_t j = 0; j < k; j++) {
        if (j + 1 < k && p[j + 1].key == p[j].key)
            hm_young_flag(m, &m->yt.young[p[j].val]);
        else
            hm_young_shadow(m, p[j].key);
    }
    return HM_OK;
}

/* The runs young[sa..ea) and young[sb..eb) overlap: walks them side by side (each ascends
 * strictly, flagged objects aside) and flags the older of every two objects at one address.
 * Returns false when that took more than *budget steps (what is left is charged). */
static bool hm_young_runs_dedup(hm_model *m, size_t sa, size_t ea, size_t sb, size_t eb,
                                size_t *budget)
{
    uint64_t *y = m->yt.young;
    size_t i = sa, j = sb;
    for (;;) {
        while (i < ea && hm_young_flagged(y[i]))
            i++;
        while (j < eb && hm_young_flagged(y[j]))
            j++;
        if (i == ea || j == eb)
            return true;
        if (*budget == 0)
            return false;
        --*budget;
        if (y[i] < y[j]) {
            i++;
        } else if (y[j] < y[i]) {
            j++;
        } else {
            hm_young_flag(m, &y[i < j ? i : j]);
            i++;
            j++;
        }
    }
}

/* The run young[s..e) from first to last ended: records it and checks it against the
 * classified objects. Returns false when there are too many runs (then t->overflow is set). */
bool hm_young_runs_close(hm_model *m, hm_young_runs *t, size_t s, size_t e,
                                uint64_t first, uint64_t last)
{
    if (t->r == t->max) {
        t->overflow = true;
        return false;
    }
    t->runs[t->r] = (hm_pair){first, t->r};
    t->info[t->r] = (hm_pair){last, (uint64_t)s << 32 | e};
    t->r++;
    hm_young_run_shadow(m, s, e, first, last);
    return true;
}

/* Sorted by first address, the runs are usually disjoint: each starts after every earlier one
 * ended. Two that overlap (two threads' buffers that happened to meet, then one of them
 * continuing its allocation context) are compared object by object. */
int hm_young_runs_finish(hm_model *m, hm_young_runs *t)
{
    if (t->overflow)
        return hm_young_dedup_sort(m);
    const hm_pair *runs = hm_pairs_sort(t->runs, t->scratch, t->r), *info = t->info;
    size_t budget = 2 * m->yt.n_young + 64;
    uint64_t end = 0; /* the largest last address of runs[0..k) */
    for (size_t k = 0; k < t->r; k++) {
        const hm_pair *b = &info[runs[k].val];
        if (k > 0 && runs[k].key <= end) {
            for (size_t h = k; h-- > 0;) {
                const hm_pair *a = &info[runs[h].val];
                if (budget == 0)
                    return hm_young_dedup_sort(m); /* a tangle of runs: sort after all */
                budget--;
                if (a->key < runs[k].key)
                    continue; /* ends before run k starts */
                if (!hm_young_runs_dedup(m, (size_t)(a->val >> 32), (size_t)(uint32_t)a->val,
                                         (size_t)(b->val >> 32), (size_t)(uint32_t)b->val,
                                         &budget))
                    return hm_young_dedup_sort(m);
            }
        }
        if (k == 0 || b->key > end)
            end = b->key;
    }
    return HM_OK;
}
