/* hm_model.c — the remapped ObjectID model (see hm_model.h for the contract, README.md for the
 * picture).
 *
 * Data structure
 *   windows  Classified objects, bucketed by 4 MiB address window (the regions' granule, so a
 *            region's objects share one or a few windows and a GC can skip whole windows).
 *            `win` is an array of windows sorted by key = addr >> 22; each window holds an array
 *            of hm_entry {addr, id << 4 | gen}, 16 bytes, sorted by address.
 *   young    Objects added since the last GC, in arrival order: each one's address (bit 0 the
 *            scratch flag HM_Y_EVICTED), 8 bytes; their ids apart, as runs of consecutive ids
 *            (`idruns`: the collector's ids come in blocks per thread, so a run per block).
 *            hm_model_add only appends here: it does no lookup at all, so the duplicate check
 *            (an address added twice, or added over a classified object) is deferred. They are
 *            not classified yet, so they cannot be placed among classified objects; the next GC
 *            classifies them all at once and moves the survivors into windows.
 *   hash     An open-addressing hash addr -> young index (with an address tag and an epoch per
 *            slot), filled lazily: it covers young[0..n_hashed), and hm_young_sync brings it up to
 *            n_young when a lookup or count needs it (inserting in batches, with prefetching). Its
 *            capacity is reserved by hm_model_add, so a sync never allocates and cannot fail.
 *            A lookup avoids the sync when it can: it first compares the HM_TAIL_SCAN newest
 *            objects not yet hashed (the collector mostly looks up an object allocated moments
 *            before), then consults `ywin`, the sorted list of windows that hold young objects
 *            (kept up to date by a sequential scan): an address in no such window (an old
 *            object) cannot be young. Only a lookup that passes both syncs.
 *   deferred evictions  Found by a sync (through the hash) or by the next GC (through a pass over
 *            the young list that proves the adds were duplicate-free, or a sort when it cannot):
 *            - an older young object at the address of a newer one is flagged HM_Y_EVICTED in
 *              its scratch byte; it stays in the list, is never classified, and the GC reports it
 *              `died` with HM_GEN_UNKNOWN;
 *            - a classified object at the address of a young one becomes a tombstone in its
 *              window (gen HM_GEN_TOMB, its generation kept in the top bits of idgen) until that
 *              GC reports it `died` and drops it, so no window array is ever shifted for it.
 *            Finding an eviction early or late changes nothing the API shows: lookup and foreach
 *            always resolve an address to its newest young object, and count syncs first.
 *
 * Invariants (checked by hm_model_check)
 *   I1 windows sorted by key, strictly; every entry of a window lies in that window;
 *   I2 entries of a window strictly ascending by address (so no duplicate address);
 *   I3 gen of an entry in 0..HM_GEN_NONGC, or HM_GEN_TOMB; ids at most HM_ID_MAX;
 *   I4 n_live_win / n_tomb equal the sums over windows; n_yflagged counts the flagged young;
 *   I5 the hash holds only young[0..n_hashed): for each of them, a probe finds it or a newer
 *      object at its address (then it is flagged); a flagged young object always has a newer
 *      one at its address;
 *   I6 no address is both young (among young[0..n_hashed), not flagged) and live in a window;
 *      every tombstone's address is young (the object that evicted it);
 *   I7 the window cache, when valid, names the window of its key (or its absence);
 *   I8 unless ywin_full, ywin lists (sorted, distinct) the window of every young[0..n_keyed).
 *   I9 yt.add_room at most cap_young and half of cap_slots (the inline add's room).
 *
 * Applying a GC has two phases so that HM_ERR_NOMEM leaves the model unchanged: `prepare`
 * allocates and computes everything (no callback, no change visible to the API), `commit` cannot
 * fail and performs the callbacks and the changes.
 */
#include "heapmodel/hm_state.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef HM_TESTING
#include "heapmodel/hm_testing.h"
#endif


/* ---- allocation ------------------------------------------------------------------------- */

/* Whether an allocation may go ahead: under HM_TESTING, the tests make the n-th one fail. */
static bool hm_may_allocate(hm_model *m)
{
#ifdef HM_TESTING
    if (m->fail_after == 0)
        return false;
    if (m->fail_after > 0)
        m->fail_after--;
#else
    (void)m;
#endif
    return true;
}

static void *hm_realloc(hm_model *m, void *p, size_t size)
{
    return hm_may_allocate(m) ? m->alloc->realloc(p, size) : NULL;
}

/* Zeroed memory for n elements of `size` bytes, failing like hm_realloc under test. */
void *hm_calloc(hm_model *m, size_t n, size_t size)
{
    if (n > 0 && size > SIZE_MAX / n)
        return NULL;
    if (m->alloc->calloc)
        return hm_may_allocate(m) ? m->alloc->calloc(n > 0 ? n : 1, size > 0 ? size : 1) : NULL;
    size_t bytes = n * size;
    void *p = hm_realloc(m, NULL, bytes > 0 ? bytes : 1);
    if (p)
        memset(p, 0, bytes);
    return p;
}

/* Memory for a scratch buffer (never failed under test: its users report no error). */
static void *hm_malloc(const hm_model *m, size_t size)
{
    return m->alloc->realloc(NULL, size);
}

/* Gives back what hm_realloc, hm_calloc or hm_malloc returned (NULL: nothing). */
void hm_free(const hm_model *m, void *p)
{
    m->alloc->free(p);
}

static void *hm_libc_realloc(void *p, size_t size)
{
    return realloc(p, size); /* the C library's allocator */
}

static const hm_allocator hm_libc_allocator = {.realloc = hm_libc_realloc, .free = free,
                                               .calloc = calloc};

/* Grows the array whose pointer is at pp (any T **) to hold at least `need` elements of `size`
 * bytes; growth is geometric so repeated calls cost amortised O(1). Returns HM_OK or
 * HM_ERR_NOMEM (then the array is unchanged). The pointer goes through memcpy because writing
 * it through a void ** would break strict aliasing. */
int hm_reserve(hm_model *m, void *pp, size_t *cap, size_t need, size_t size)
{
    if (need <= *cap)
        return HM_OK;
    void *p;
    memcpy(&p, pp, sizeof(p));
    size_t n = *cap + *cap / 2;
    if (n < need)
        n = need;
    if (n < 16)
        n = 16;
    if (n > SIZE_MAX / size)
        return HM_ERR_NOMEM;
    void *q = hm_realloc(m, p, n * size);
    if (!q)
        return HM_ERR_NOMEM;
    memcpy(pp, &q, sizeof(q));
    *cap = n;
    return HM_OK;
}

/* Frees a scratch buffer above HM_SCRATCH_KEEP_BYTES whose capacity is more than
 * HM_SCRATCH_SLACK times `demand`, the most elements any scratch buffer held in this GC. */
static void hm_scratch_release(const hm_model *m, void *pp, size_t *cap, size_t size,
                               size_t demand)
{
    if (*cap * size > HM_SCRATCH_KEEP_BYTES && *cap / HM_SCRATCH_SLACK > demand) {
        void *p = NULL;
        memcpy(&p, pp, sizeof(p));
        hm_free(m, p);
        p = NULL;
        memcpy(pp, &p, sizeof(p));
        *cap = 0;
    }
}

#define HM_SCRATCH_RELEASE(ptr, cap, demand)                                                  \
    hm_scratch_release(m, &(ptr), &(cap), sizeof(*(ptr)), (demand))
/* ---- small helpers ---------------------------------------------------------------------- */

/* First window index in [lo, n_win) whose key is >= key. */
static size_t hm_windows_lower_bound(const hm_model *m, uint64_t key, size_t lo)
{
    size_t hi = m->n_win;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (m->win[mid].key < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

size_t hm_windows_find(const hm_model *m, uint64_t key)
{
    size_t i = hm_windows_lower_bound(m, key, 0);
    return i < m->n_win && m->win[i].key == key ? i : HM_NONE;
}

/* Index of the live (not tombstone) entry at addr in window w, or HM_NONE. */
size_t hm_window_find_live(const hm_window *w, uint64_t addr)
{
    if (w->n == 0 || addr < w->e[0].addr || addr > w->e[w->n - 1].addr)
        return HM_NONE; /* the usual case for a fresh allocation: past the window's last object */
    uint32_t i = hm_entries_lower_bound(w->e, 0, w->n, addr);
    if (i < w->n && w->e[i].addr == addr && hm_entry_gen(&w->e[i]) != HM_GEN_TOMB)
        return i;
    return HM_NONE;
}

/* hm_window_find_live, searching from entry `hint` (any value: a hint out of range or past
 * addr costs one binary search of the window, as without it): an exponential search forward
 * from there, so that ascending lookups cost a few compares each instead of a full search. */
static size_t hm_window_find_live_from(const hm_window *w, uint64_t addr, uint32_t hint)
{
    if (w->n == 0 || addr < w->e[0].addr || addr > w->e[w->n - 1].addr)
        return HM_NONE;
    uint32_t lo = 0, hi = w->n;
    if (hint < w->n && w->e[hint].addr <= addr) {
        /* e[lo].addr <= addr; widen the step until an entry at or past addr bounds it */
        lo = hint;
        for (uint32_t step = 1; lo + step < w->n; step *= 2) {
            if (w->e[lo + step].addr >= addr) {
                hi = lo + step + 1;
                break;
            }
            lo += step;
        }
    }
    uint32_t i = hm_entries_lower_bound(w->e, lo, hi, addr);
    if (i < w->n && w->e[i].addr == addr && hm_entry_gen(&w->e[i]) != HM_GEN_TOMB)
        return i;
    return HM_NONE;
}

/* Window holding key, creating an empty one if needed. Returns its index or HM_NONE (NOMEM).
 * An empty window is harmless to every invariant, so creating one counts as no change. */
size_t hm_windows_get(hm_model *m, uint64_t key, size_t from)
{
    size_t i = hm_windows_lower_bound(m, key, from);
    if (i < m->n_win && m->win[i].key == key)
        return i;
    if (HM_RESERVE(m, m->win, m->cap_win, m->n_win + 1) != HM_OK)
        return HM_NONE;
    memmove(&m->win[i + 1], &m->win[i], (m->n_win - i) * sizeof(*m->win));
    memset(&m->win[i], 0, sizeof(*m->win));
    m->win[i].key = key;
    m->n_win++;
    m->cache_valid = false;
    return i;
}

int hm_window_reserve(hm_model *m, hm_window *w, size_t need)
{
    if (need > UINT32_MAX)
        return HM_ERR_NOMEM; /* a 4 MiB window cannot hold that many objects of >= 8 bytes */
    if (need <= w->cap)
        return HM_OK;
    /* Windows grow once per GC, not per object, so doubling would only waste memory (the target
     * is 16 bytes per object): an empty window gets the exact size (it is usually filled once,
     * by a GC compacting into a fresh region, or by the first classification), a growing one
     * an eighth more. */
    size_t cap = w->n == 0 ? need : need + need / 8;
    if (cap > UINT32_MAX)
        cap = need;
    hm_entry *e = hm_realloc(m, w->e, cap * sizeof(*e));
    if (!e)
        return HM_ERR_NOMEM;
    w->e = e;
    w->cap = (uint32_t)cap;
    return HM_OK;
}
/* ---- lifecycle -------------------------------------------------------------------------- */

hm_model *hm_model_new(void)
{
    return hm_model_new_with(NULL);
}

hm_model *hm_model_new_with(const hm_allocator *alloc)
{
    if (!alloc)
        alloc = &hm_libc_allocator;
    hm_model *m = alloc->realloc(NULL, sizeof(*m));
    if (!m)
        return NULL;
    memset(m, 0, sizeof(*m));
    m->alloc = alloc;
    m->yt.next_id = UINT64_MAX;
    m->slot_shift = 64;
    m->epoch = 1;
#ifdef HM_TESTING
    m->fail_after = -1;
#endif
    return m;
}

void hm_model_free(hm_model *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->n_win; i++)
        hm_free(m, m->win[i].e);
    hm_free(m, m->win);
    hm_free(m, m->yt.young);
    hm_free(m, m->idruns);
    hm_free(m, m->slots);
    hm_free(m, m->bb);
    hm_free(m, m->ba);
    hm_free(m, m->cr);
    hm_free(m, m->mv);
    hm_free(m, m->ins);
    hm_free(m, m->tmp);
    hm_free(m, m->dead);
    hm_free(m, m->cls);
    m->alloc->free(m);
}

#ifdef HM_TESTING
void hm_model_fail_after(hm_model *m, long n)
{
    m->fail_after = n;
}
#endif

/* ---- add -------------------------------------------------------------------------------- */

/* An append: the duplicate check is left to hm_young_sync or the next GC. The common case,
 * room without growth and an id that extends the last run, is hm_model.h's inline
 * hm_model_add; the same append here, after any growth (nothing changes unless all of it
 * succeeded). */
int hm_model_add_slow(hm_model *m, uint64_t addr, uint64_t id)
{
    if (!m || addr == 0 || (addr & 7) != 0 || id > HM_ID_MAX)
        return HM_ERR_INVALID;
    size_t n = m->yt.n_young;
    if (HM_UNLIKELY(n >= m->yt.add_room) && hm_young_grow(m) != HM_OK)
        return HM_ERR_NOMEM;
    if (id != m->yt.next_id) {
        if (HM_RESERVE(m, m->idruns, m->cap_idruns, m->n_idruns + 1) != HM_OK)
            return HM_ERR_NOMEM;
        m->idruns[m->n_idruns++] = (hm_idrun){n, id};
    }
    m->yt.young[n] = addr;
    m->yt.n_young = n + 1;
    m->yt.next_id = id + 1;
    return HM_OK;
}

/* ---- apply_gc: iteration over condemned windows ----------------------------------------- */

typedef struct hm_win_iter {
    size_t wi; /* next window to look at */
    size_t j;  /* first condemned range that may still intersect it */
} hm_win_iter;

/* Next window that intersects a condemned range; the ranges [*r_lo, *r_hi) of cr intersect it.
 * Windows between condemned ranges are skipped by binary search, so the cost is that of the
 * windows visited, not of the heap. */
static bool hm_win_next(const hm_model *m, const hm_span *cr, size_t n_cr, hm_win_iter *it,
                        size_t *wi, size_t *r_lo, size_t *r_hi)
{
    while (it->wi < m->n_win && it->j < n_cr) {
        uint64_t lo = m->win[it->wi].key << HM_WINDOW_SHIFT;
        uint64_t last = lo + HM_WINDOW_LAST;
        while (it->j < n_cr && cr[it->j].end <= lo)
            it->j++;
        if (it->j == n_cr)
            return false;
        if (cr[it->j].start > last) {
            it->wi = hm_windows_lower_bound(m, cr[it->j].start >> HM_WINDOW_SHIFT, it->wi + 1);
            continue;
        }
        size_t k = it->j + 1;
        while (k < n_cr && cr[k].start <= last)
            k++;
        *wi = it->wi;
        *r_lo = it->j;
        *r_hi = k;
        it->wi++;
        return true;
    }
    return false;
}

/* The entries [*lo, *hi) of e[from..n) that lie in span r. Prepare and commit must agree on
 * every slice, so both use this. */
static void hm_window_slice(const hm_entry *e, uint32_t from, uint32_t n, const hm_span *r,
                            uint32_t *lo, uint32_t *hi)
{
    *lo = hm_entries_lower_bound(e, from, n, r->start);
    *hi = hm_entries_lower_bound(e, *lo, n, r->end);
}

/* ---- apply_gc: prepare (may fail, changes nothing the API can see) ---------------------- */

static int hm_gc_build_spans(hm_model *m, const hm_gc_input *in, hm_gc_work *g)
{
    size_t most = in->n_bounds_before;
    if (in->n_bounds_after > most)
        most = in->n_bounds_after;
    if (HM_RESERVE(m, m->tmp, m->cap_tmp, most + hm_sort_tmp_size(most)) != HM_OK ||
        HM_RESERVE(m, m->bb, m->cap_bb, in->n_bounds_before) != HM_OK ||
        HM_RESERVE(m, m->cr, m->cap_cr, in->n_bounds_before) != HM_OK ||
        HM_RESERVE(m, m->ba, m->cap_ba, in->n_bounds_after) != HM_OK ||
        HM_RESERVE(m, m->mv, m->cap_mv, in->n_moves) != HM_OK)
        return HM_ERR_NOMEM;
    g->n_bb = hm_spans_from_bounds(m->bb, m->tmp, in->bounds_before, in->n_bounds_before,
                                   &g->anomalies);
    g->n_ba = hm_spans_from_bounds(m->ba, m->tmp, in->bounds_after, in->n_bounds_after,
                                   &g->anomalies);
    /* Moves usually arrive ordered and are copied; sort scratch only when they are not. */
    if (hm_spans_copy_if_ordered(m->mv, in->moves, in->n_moves)) {
        g->n_mv = in->n_moves;
    } else {
        if (HM_RESERVE(m, m->tmp, m->cap_tmp, in->n_moves + hm_sort_tmp_size(in->n_moves)) !=
            HM_OK)
            return HM_ERR_NOMEM;
        g->n_mv = hm_spans_from_moves(m->mv, m->tmp, in->moves, in->n_moves, &g->anomalies);
    }
    g->n_cr = 0;
    for (size_t i = 0; i < g->n_bb; i++)
        if (g->mask >> m->bb[i].aux & 1)
            m->cr[g->n_cr++] = m->bb[i];
    return HM_OK;
}

/* Step 1 and the young half of step 2, which also finish the duplicate checks the adds left
 * (see the top of this file).
 *
 * Usually the young list is a sequence of ascending runs (allocation contexts, drained a thread's
 * buffer at a time) over disjoint address intervals. The classification pass records the runs
 * as it goes, and checks each against the classified objects; sorted by first address, the runs
 * then prove that no address was added twice, or show the few that overlap, which are compared
 * object by object. When the runs are too many or too tangled, a stable sort of the young list
 * finds the duplicates instead. Classification does not depend on the tombstones, so the pass
 * stands unless a young object was found evicted: then it runs again without it. All of this only
 * flags young objects and makes tombstones, which changes nothing the API shows, so a later
 * failure of prepare needs no undo. */
/* Classifies every unflagged young object by the bounds before the GC, looks the condemned ones
 * up in the moves, queues survivors and kept objects for insertion and the dead for reporting,
 * and records the runs when t is not NULL. Each classified word (or fate byte) is written
 * beside the young list, never into it: a per-object `classified` reads the words back in
 * commit, so the list (8 bytes per young object) is only read.
 * Whether a condemned object survives is as good as random, so that case is written without
 * branches: both lists get the object and only one of the counts moves on (both lists have
 * room for every young object, so the extra write stays in bounds). */
static void hm_young_classify(hm_model *m, hm_gc_work *g, hm_young_runs *t)
{
    static const hm_span no_move = {0, 0, 0};
    hm_ids ids = {0};
    const hm_span *mv = g->n_mv ? m->mv : &no_move;
    size_t n_mv = g->n_mv ? g->n_mv : 1;
    size_t hb = 0, hmv = 0;
    hm_pair *ins = m->ins;
    uint64_t *dead = m->dead;
    /* Quiet young deaths: every death is written into one slot (counted all the same). */
    size_t dead_mask = g->quiet_young_deaths ? 0 : SIZE_MAX;
    /* Every classified word goes here (reserved for every young object): the batch sink gets
     * them, and the per-object `classified` reads them back in commit. */
    uint64_t *cls = m->cls;
    /* Young fates: a byte per id in [f_first, f_first + f_n) instead of a word (f_n 0: none). */
    uint8_t *fates = g->fates;
    uint64_t f_first = g->fates_first;
    size_t f_n = g->fates_n;
    size_t n_ins = 0, n_dead = 0, n_cls = 0;
    /* The open run, in locals (kept in registers: stores through y could alias a struct). */
    bool track = t != NULL, open = false;
    size_t s = 0;
    uint64_t first = 0, prev = UINT64_MAX; /* the first object always starts a run */

    for (size_t i = 0; i < m->yt.n_young; i++) {
        uint64_t y = m->yt.young[i], id = hm_ids_at(m, &ids, i);
        if (hm_young_flagged(y)) {
            /* evicted: reported by commit_evicted (a run before this one may have written it) */
            uint64_t rel = id - f_first;
            if (HM_UNLIKELY(rel < f_n))
                fates[rel] = HM_FATE(HM_GEN_UNKNOWN, HM_GEN_UNKNOWN);
            continue;
        }
        if (track) {
            uint64_t a = y;
            if (HM_UNLIKELY(a <= prev || a - prev > HM_YOUNG_RUN_GAP)) {
                if (open)
                    track = hm_young_runs_close(m, t, s, i, first, prev);
                open = true;
                s = i;
                first = a;
            }
            prev = a;
        }
        size_t b = hm_spans_find(m->bb, g->n_bb, y, &hb);
        uint32_t gen = b == HM_NONE ? HM_GEN_NONGC : (uint32_t)m->bb[b].aux;
        bool condemned = b != HM_NONE && (g->mask >> gen & 1);
        uint64_t rel = id - f_first;
        if (rel < f_n) /* a survivor's generation after is written by commit (hm_pair_entry) */
            fates[rel] = HM_FATE(hm_heap_of(gen), condemned ? HM_GEN_UNKNOWN : hm_heap_of(gen));
        else
            cls[n_cls++] = id << HM_REPORT_SHIFT | hm_heap_of(gen) |
                           (g->quiet_young_deaths && condemned ? HM_REPORT_CONDEMNED : 0);
        if (condemned) {
            size_t v = hm_spans_step(mv, n_mv, y, &hmv);
            size_t live = v != HM_NONE;
            const hm_span *sp = &mv[v & ((size_t)0 - live)];
            ins[n_ins].key = sp->aux + (y - sp->start);
            ins[n_ins].val = id << 8 | gen << 4 | HM_INS_YOUNG;
            dead[n_dead & dead_mask] = id << 4 | gen;
            n_ins += live;
            n_dead += live ^ 1;
        } else {
            ins[n_ins].key = y;
            ins[n_ins].val = id << 8 | HM_INS_KEEP << 4 | gen;
            n_ins++;
        }
    }
    if (track && open)
        hm_young_runs_close(m, t, s, m->yt.n_young, first, prev);
    g->n_ins = n_ins;
    g->n_dead = n_dead;
    g->n_cls = n_cls;
}

/* hm_young_classify for a sink with young fates (the collector's full mode): the same results,
 * the common case in a loop of its own. A young object whose id has a fate byte gets no
 * classified word and no dead-list slot; and the objects of one run (ascending addresses, as an
 * allocation context gives them) that lie in one bounds range share their generation, so once
 * the first of them is classified the rest only need the moves' cursor, their fate byte (the
 * run's own) and their insert. Whatever ends that — an evicted object, an id without a fate
 * byte, the end of the run or of the range — goes back through the general step. The dead are
 * counted as the objects classified minus those inserted: every one is either. */
static void hm_young_classify_fates(hm_model *m, hm_gc_work *g, hm_young_runs *t)
{
    static const hm_span no_move = {0, 0, 0};
    const hm_span *mv = g->n_mv ? m->mv : &no_move, *bb = m->bb;
    const size_t n_mv = g->n_mv ? g->n_mv : 1, n = m->yt.n_young;
    const uint64_t *young = m->yt.young;
    hm_ids ids = {0};
    hm_pair *ins = m->ins;
    uint8_t *fates = g->fates;
    const uint64_t f_first = g->fates_first, f_n = g->fates_n;
    size_t hb = 0, hmv = 0, n_ins = 0, n_cls = 0, flagged = 0;
    bool track = t != NULL, open = false;
    size_t s = 0;
    uint64_t first = 0, prev = UINT64_MAX; /* the first object always starts a run */

    for (size_t i = 0; i < n;) {
        /* The general step, for young[i]. */
        uint64_t key = young[i], id = hm_ids_at(m, &ids, i), rel = id - f_first;
        if (HM_UNLIKELY(key & HM_Y_EVICTED)) {
            /* evicted: reported by commit_evicted (a run before this one may have written it) */
            if (rel < f_n)
                fates[rel] = HM_FATE(HM_GEN_UNKNOWN, HM_GEN_UNKNOWN);
            flagged++;
            i++;
            continue;
        }
        if (track && (key <= prev || key - prev > HM_YOUNG_RUN_GAP)) {
            if (open)
                track = hm_young_runs_close(m, t, s, i, first, prev);
            open = true;
            s = i;
            first = key;
        }
        prev = key;
        size_t b = hm_spans_find(bb, g->n_bb, key, &hb);
        uint32_t gen = b == HM_NONE ? HM_GEN_NONGC : (uint32_t)bb[b].aux;
        bool condemned = b != HM_NONE && (g->mask >> gen & 1);
        uint32_t heap = hm_heap_of(gen);
        uint8_t fate = HM_FATE(heap, condemned ? HM_GEN_UNKNOWN : heap);
        if (rel < f_n)
            fates[rel] = fate;
        else
            m->cls[n_cls++] = id << HM_REPORT_SHIFT | heap | (condemned ? HM_REPORT_CONDEMNED : 0);
        uint64_t ins_gen = condemned ? (uint64_t)gen << 4 | HM_INS_YOUNG
                                     : (uint64_t)HM_INS_KEEP << 4 | gen;
        size_t v = condemned ? hm_spans_step(mv, n_mv, key, &hmv) : HM_NONE;
        size_t live = !condemned || v != HM_NONE;
        const hm_span *sp = condemned ? &mv[v & ((size_t)0 - live)] : &no_move;
        ins[n_ins].key = key + sp->aux - sp->start;
        ins[n_ins].val = id << 8 | ins_gen;
        n_ins += live;
        i++;
        if (b == HM_NONE)
            continue;
        /* The rest of the run inside bounds range b and the id run of young[i - 1]: the same
         * generation, fate and insert word, keys that only ascend (an evicted one has bit 0
         * set: it breaks the run or is caught by the test), and the ids id + 1, id + 2, ... */
        const uint64_t end = bb[b].end, base = ids.base;
        const size_t lim = ids.end;
        if (!condemned) {
            for (; i < lim; i++) {
                key = young[i];
                rel = base + i - f_first;
                if ((key & HM_Y_EVICTED) || key <= prev || key - prev > HM_YOUNG_RUN_GAP ||
                    key >= end || rel >= f_n)
                    break;
                prev = key;
                fates[rel] = fate;
                ins[n_ins].key = key;
                ins[n_ins].val = (base + i) << 8 | ins_gen;
                n_ins++;
            }
            continue;
        }
        /* Whether each survives is as good as random: no branch on it (ins has room for every
         * young object, so the write for a dead one stays in bounds). */
        for (; i < lim; i++) {
            key = young[i];
            rel = base + i - f_first;
            if ((key & HM_Y_EVICTED) || key <= prev || key - prev > HM_YOUNG_RUN_GAP ||
                key >= end || rel >= f_n)
                break;
            prev = key;
            fates[rel] = fate;
            /* hm_spans_step, with the new address taken from the cursor's span whether or
             * not key lies in it: the span's loads then wait only for the cursor, not for
             * the compare with its end as well (a dead object's write is overwritten). */
            size_t c = hmv;
            c += c + 1 < n_mv && mv[c + 1].start <= key;
            if (HM_LIKELY(c < n_mv && mv[c].start <= key &&
                          (c + 1 == n_mv || key < mv[c + 1].start))) {
                hmv = c;
                sp = &mv[c];
                live = key < sp->end;
            } else {
                v = hm_spans_find(mv, n_mv, key, &hmv);
                live = v != HM_NONE;
                sp = &mv[v & ((size_t)0 - live)];
            }
            ins[n_ins].key = key + (sp->aux - sp->start);
            ins[n_ins].val = (base + i) << 8 | ins_gen;
            n_ins += live;
        }
    }
    if (track && open)
        hm_young_runs_close(m, t, s, n, first, prev);
    g->n_ins = n_ins;
    g->n_dead = n - flagged - n_ins;
    g->n_cls = n_cls;
}

static int hm_gc_prepare_young(hm_model *m, hm_gc_work *g)
{
    size_t n = m->yt.n_young, pending = n - m->n_hashed;
    hm_young_runs runs = {0}, *t = NULL;
    if (pending > 0 && pending <= n / HM_SYNC_RATIO) {
        hm_young_sync(m); /* lookups synced most of them: finish that way */
    } else if (pending > 0) {
        runs.max = n / 8 + 1;
        if (HM_RESERVE(m, m->tmp, m->cap_tmp, 2 * runs.max + hm_sort_tmp_size(runs.max)) !=
            HM_OK)
            return HM_ERR_NOMEM;
        runs.runs = m->tmp;
        runs.info = m->tmp + runs.max;
        runs.scratch = runs.info + runs.max;
        t = &runs;
    }
    /* young fates are given only with quiet young deaths, hence batches: m->cls is reserved */
    void (*classify)(hm_model *, hm_gc_work *, hm_young_runs *) =
        g->fates ? hm_young_classify_fates : hm_young_classify;
    size_t flagged = m->n_yflagged;
    classify(m, g, t);
    if (!t)
        return HM_OK;
    int rc = hm_young_runs_finish(m, t);
    if (rc == HM_OK && m->n_yflagged != flagged)
        classify(m, g, NULL); /* again, without the evicted */
    return rc;
}

/* The window half of step 2: condemned objects that move are queued for insertion at their new
 * address. Objects that survive in place or die are handled by commit, which walks the same
 * slices again (cheaper than remembering them). */
static int hm_gc_prepare_windows(hm_model *m, hm_gc_work *g)
{
    hm_win_iter it = {0, 0};
    size_t wi, r_lo, r_hi, hmv = 0;

    while (hm_win_next(m, m->cr, g->n_cr, &it, &wi, &r_lo, &r_hi)) {
        const hm_window *w = &m->win[wi];
        uint32_t pos = 0;
        for (size_t r = r_lo; r < r_hi; r++) {
            uint32_t lo, hi;
            hm_window_slice(w->e, pos, w->n, &m->cr[r], &lo, &hi);
            uint32_t gen = (uint32_t)m->cr[r].aux;
            pos = hi;
            if (HM_RESERVE(m, m->ins, m->cap_ins, g->n_ins + (hi - lo)) != HM_OK)
                return HM_ERR_NOMEM;
            for (uint32_t x = lo; x < hi; x++) {
                const hm_entry *e = &w->e[x];
                uint32_t eg = hm_entry_gen(e);
                if (eg == HM_GEN_NONGC || eg == HM_GEN_TOMB)
                    continue;
                size_t v = hm_spans_find(m->mv, g->n_mv, e->addr, &hmv);
                if (v == HM_NONE || m->mv[v].aux == m->mv[v].start)
                    continue;
                m->ins[g->n_ins].key = m->mv[v].aux + (e->addr - m->mv[v].start);
                m->ins[g->n_ins].val = hm_entry_id(e) << 8 | gen << 4;
                g->n_ins++;
            }
        }
    }
    return HM_OK;
}

/* Sorts the insert list, then in one pass over it gives survivors their generation after the GC
 * (step 4) and reserves room in every destination window, so that commit cannot run out of
 * memory. */
static int hm_gc_prepare_insert(hm_model *m, hm_gc_work *g)
{
    if (HM_RESERVE(m, m->tmp, m->cap_tmp, hm_sort_tmp_size(g->n_ins)) != HM_OK)
        return HM_ERR_NOMEM;
    hm_pair *ins = hm_pairs_sort(m->ins, m->tmp, g->n_ins);
    g->ins = ins;

    size_t hb = 0, wi = 0;
    for (size_t i = 0; i < g->n_ins;) {
        uint64_t key = ins[i].key >> HM_WINDOW_SHIFT;
        size_t j = i;
        for (; j < g->n_ins && ins[j].key >> HM_WINDOW_SHIFT == key; j++) {
            uint32_t before = (uint32_t)(ins[j].val >> 4 & HM_GEN_MASK);
            if (before == HM_INS_KEEP)
                continue;
            size_t b = hm_spans_find(m->ba, g->n_ba, ins[j].key, &hb);
            if (b == HM_NONE)
                g->anomalies++; /* no bounds range: the object keeps its generation */
            ins[j].val |= b == HM_NONE ? before : (uint32_t)m->ba[b].aux;
        }
        wi = hm_windows_get(m, key, wi);
        if (wi == HM_NONE || hm_window_reserve(m, &m->win[wi], m->win[wi].n + (j - i)) != HM_OK)
            return HM_ERR_NOMEM;
        i = j;
    }
    return HM_OK;
}

static int hm_gc_prepare(hm_model *m, const hm_gc_input *in, hm_gc_work *g)
{
    int rc = hm_gc_build_spans(m, in, g);
    if (rc != HM_OK)
        return rc;
    rc = HM_RESERVE(m, m->ins, m->cap_ins, m->yt.n_young);
    if (rc == HM_OK)
        rc = HM_RESERVE(m, m->dead, m->cap_dead, g->quiet_young_deaths ? 1 : m->yt.n_young);
    if (rc == HM_OK) /* the per-object `classified` reads them too (hm_young_classify) */
        rc = HM_RESERVE(m, m->cls, m->cap_cls, m->yt.n_young);
    if (rc == HM_OK)
        rc = hm_gc_prepare_young(m, g);
    if (rc != HM_OK)
        return rc;
    rc = hm_gc_prepare_windows(m, g);
    if (rc != HM_OK)
        return rc;
    return hm_gc_prepare_insert(m, g);
}

/* ---- apply_gc: commit (cannot fail) ----------------------------------------------------- */

static void hm_sink_died(const hm_gc_sink *sink, hm_gc_stats *st, uint64_t id, uint32_t gen)
{
    st->died++;
    if (sink->died)
        sink->died(sink->ctx, id, gen);
}

static void hm_sink_evicted(const hm_gc_sink *sink, hm_gc_stats *st, uint64_t id, uint32_t gen)
{
    st->evicted++;
    st->anomalies++;
    hm_sink_died(sink, st, id, gen);
}

static void hm_sink_survived(const hm_gc_sink *sink, hm_gc_stats *st, uint64_t id,
                             uint32_t before, uint32_t after)
{
    st->survived++;
    if (sink->survived)
        sink->survived(sink->ctx, id, before, after);
}

/* Reports the objects that later adds evicted (flagged young objects, tombstones) and drops the
 * tombstones. */
static void hm_gc_commit_evicted(hm_model *m, const hm_gc_sink *sink, hm_gc_stats *st)
{
    if (m->n_yflagged > 0)
        for (size_t i = 0; i < m->yt.n_young; i++)
            if (hm_young_flagged(m->yt.young[i]))
                hm_sink_evicted(sink, st, hm_young_id(m, i), HM_GEN_UNKNOWN);
    if (m->n_tomb == 0)
        return;
    for (size_t wi = 0; wi < m->n_win; wi++) {
        hm_window *w = &m->win[wi];
        if (w->n_tomb == 0)
            continue;
        uint32_t out = 0;
        for (uint32_t i = 0; i < w->n; i++) {
            const hm_entry *x = &w->e[i];
            if (hm_entry_gen(x) != HM_GEN_TOMB)
                w->e[out++] = *x;
            else
                hm_sink_evicted(sink, st, hm_entry_id(x),
                                (uint32_t)(x->idgen >> HM_TOMB_GEN_SHIFT));
        }
        w->n = out;
        w->n_tomb = 0;
        w->touched = 1;
    }
    m->n_tomb = 0;
}

static void hm_gc_commit_young(hm_model *m, const hm_gc_work *g, const hm_gc_sink *sink,
                               hm_gc_stats *st)
{
    st->classified = m->yt.n_young - m->n_yflagged;
    if (g->batch_classified) {
        if (g->n_cls)
            sink->classified_young(sink->ctx, m->cls, g->n_cls);
    } else if (sink->classified)
        for (size_t i = 0; i < g->n_cls; i++) /* the unflagged young objects, in list order */
            sink->classified(sink->ctx, HM_REPORT_ID(m->cls[i]), HM_REPORT_VALUE(m->cls[i]));
    /* Every `classified` comes before any `died`: evictions are reported after the loop above. */
    hm_gc_commit_evicted(m, sink, st);
    st->condemned += g->n_dead;
    st->died += g->n_dead;
    /* m->dead holds `id << 4 | gen` words, the batch form's format. */
    _Static_assert(HM_REPORT_SHIFT == 4, "m->dead words are handed out as batch reports");
    if (g->quiet_young_deaths) {
        /* the classified words said which were condemned; m->dead holds one of them */
    } else if (sink->died_young) {
        if (g->n_dead)
            sink->died_young(sink->ctx, m->dead, g->n_dead);
    } else if (sink->died)
        for (size_t i = 0; i < g->n_dead; i++)
            sink->died(sink->ctx, m->dead[i] >> 4, (uint32_t)(m->dead[i] & HM_GEN_MASK));
}

/* Step 2 and 3 in the windows: in every slice of a condemned range, objects that survive in
 * place get their new generation, moved ones leave (they are in the insert list), dead ones are
 * reported and leave. Everything outside the slices, and NonGC objects inside, stays. */
static void hm_gc_commit_windows(hm_model *m, const hm_gc_work *g, const hm_gc_sink *sink,
                                 hm_gc_stats *st)
{
    hm_win_iter it = {0, 0};
    size_t wi, r_lo, r_hi, hmv = 0, hb = 0;

    while (hm_win_next(m, m->cr, g->n_cr, &it, &wi, &r_lo, &r_hi)) {
        hm_window *w = &m->win[wi];
        hm_entry *e = w->e;
        uint32_t n = w->n, rd = 0, wr = 0;
        for (size_t r = r_lo; r < r_hi; r++) {
            /* [rd, n) is still unchanged, so the slice can be searched there. */
            uint32_t lo, hi;
            hm_window_slice(e, rd, n, &m->cr[r], &lo, &hi);
            uint32_t gen = (uint32_t)m->cr[r].aux;
            if (wr != rd)
                memmove(e + wr, e + rd, (lo - rd) * sizeof(*e));
            wr += lo - rd;
            for (rd = lo; rd < hi; rd++) {
                hm_entry x = e[rd];
                if (hm_entry_gen(&x) == HM_GEN_NONGC) {
                    e[wr++] = x;
                    continue;
                }
                size_t v = hm_spans_find(m->mv, g->n_mv, x.addr, &hmv);
                if (v != HM_NONE && m->mv[v].aux != m->mv[v].start)
                    continue; /* moved: commit_insert places, counts and reports it */
                st->condemned++;
                if (v == HM_NONE) {
                    hm_sink_died(sink, st, hm_entry_id(&x), gen);
                    continue;
                }
                size_t b = hm_spans_find(m->ba, g->n_ba, x.addr, &hb);
                uint32_t after = gen;
                if (b == HM_NONE)
                    st->anomalies++;
                else
                    after = (uint32_t)m->ba[b].aux;
                x.idgen = hm_entry_id(&x) << 4 | after;
                e[wr++] = x;
                hm_sink_survived(sink, st, hm_entry_id(&x), gen, after);
            }
        }
        if (wr != rd)
            memmove(e + wr, e + rd, (n - rd) * sizeof(*e));
        wr += n - rd;
        m->n_live_win -= n - wr;
        w->n = wr;
        w->touched = 1;
    }
}

/* Two inserts at one address (q before p in the list): the survivor wins, the other (a kept
 * young object) is evicted; *winner gets the survivor. */
static void hm_window_merge_tie(const hm_pair *q, const hm_pair *p, const hm_pair **winner,
                                const hm_gc_sink *sink, hm_gc_stats *st)
{
    bool p_survives = (p->val >> 4 & HM_GEN_MASK) != HM_INS_KEEP;
    const hm_pair *loser = p_survives ? q : p;
    hm_sink_evicted(sink, st, loser->val >> 8, (uint32_t)(loser->val & HM_GEN_MASK));
    *winner = p_survives ? p : q;
}

/* The window entry for insert p, reporting it when it is a survivor: a young one with a fate
 * byte gets its generation after there (its heap is already in it), any other a `survived`. */
static hm_entry hm_pair_entry(const hm_pair *p, const hm_gc_sink *sink, hm_gc_stats *st)
{
    uint32_t before = (uint32_t)(p->val >> 4 & HM_GEN_MASK);
    uint32_t after = (uint32_t)(p->val & HM_INS_AFTER);
    uint64_t id = p->val >> 8;
    if (before != HM_INS_KEEP) {
        st->condemned++;
        uint64_t rel = id - sink->young_fates_first;
        if ((p->val & HM_INS_YOUNG) && rel < sink->young_fates_n) {
            st->survived++;
            uint8_t *f = &sink->young_fates[rel];
            *f = HM_FATE(HM_FATE_HEAP(*f), after);
        } else {
            hm_sink_survived(sink, st, id, before, after);
        }
    }
    return (hm_entry){p->key, id << 4 | after};
}

/* Merges the sorted insert-list group in[0..k) into window w (room was reserved by prepare),
 * from the back so every entry moves once. An object already at a survivor's address must have
 * died unseen: it is evicted. Two inserts at one address can only be a kept young object and a
 * survivor (survivors never collide, see hm_spans_from_moves); the survivor wins. */
static void hm_window_merge(hm_model *m, hm_window *w, const hm_pair *in, size_t k,
                            const hm_gc_sink *sink, hm_gc_stats *st)
{
    hm_entry *e = w->e;
    size_t i = w->n, j = k, out = w->n + k, end = w->n + k;

    if (w->n == 0 || e[w->n - 1].addr < in[0].key) {
        /* The usual case: survivors packed behind everything the window holds. */
        size_t n = w->n;
        for (size_t x = 0; x < k; x++) {
            const hm_pair *p = &in[x];
            if (x + 1 < k && in[x + 1].key == p->key) {
                hm_window_merge_tie(p, &in[x + 1], &p, sink, st);
                x++;
            }
            e[n++] = hm_pair_entry(p, sink, st);
        }
        m->n_live_win += n - w->n;
        w->n = (uint32_t)n;
        return;
    }
    while (j > 0) {
        const hm_pair *p = &in[j - 1];
        if (i > 0 && e[i - 1].addr > p->key) {
            e[--out] = e[--i];
            continue;
        }
        if (i > 0 && e[i - 1].addr == p->key) {
            hm_sink_evicted(sink, st, hm_entry_id(&e[i - 1]), hm_entry_gen(&e[i - 1]));
            m->n_live_win--;
            i--;
            continue;
        }
        if (j > 1 && in[j - 2].key == p->key) {
            hm_window_merge_tie(&in[j - 2], p, &p, sink, st);
            j--;
        }
        e[--out] = hm_pair_entry(p, sink, st);
        m->n_live_win++;
        j--;
    }
    /* e[0..i) stayed in place, e[out..end) is the merged tail; evictions left a gap between. */
    if (out != i)
        memmove(e + i, e + out, (end - out) * sizeof(*e));
    w->n = (uint32_t)(i + (end - out));
}

static void hm_gc_commit_insert(hm_model *m, const hm_gc_work *g, const hm_gc_sink *sink,
                                hm_gc_stats *st)
{
    size_t wi = 0;
    for (size_t i = 0; i < g->n_ins;) {
        uint64_t key = g->ins[i].key >> HM_WINDOW_SHIFT;
        size_t j = i + 1;
        while (j < g->n_ins && g->ins[j].key >> HM_WINDOW_SHIFT == key)
            j++;
        wi = hm_windows_lower_bound(m, key, wi); /* exists: prepare created it */
        hm_window_merge(m, &m->win[wi], g->ins + i, j - i, sink, st);
        i = j;
    }
}

/* Drops empty windows (emptied by this GC, or created by a prepare that then failed) and
 * shrinks arrays that lost most of their objects. O(windows), a few thousand at most. */
static void hm_gc_commit_windows_tidy(hm_model *m)
{
    size_t out = 0;
    for (size_t i = 0; i < m->n_win; i++) {
        hm_window *w = &m->win[i];
        if (w->n == 0) {
            hm_free(m, w->e);
            continue;
        }
        if (w->touched) {
            w->touched = 0;
            if (w->n < w->cap / 4) {
                uint32_t cap = w->n + w->n / 4;
                hm_entry *e = m->alloc->realloc(w->e, (size_t)cap * sizeof(*e)); /* shrinking: may fail */
                if (e) {
                    w->e = e;
                    w->cap = cap;
                }
            }
        }
        m->win[out++] = *w;
    }
    if (out != m->n_win)
        m->cache_valid = false;
    m->n_win = out;
}

int hm_model_apply_gc(hm_model *m, const hm_gc_input *in, const hm_gc_sink *sink,
                      hm_gc_stats *stats)
{
    static const hm_gc_sink no_sink = {0};
    hm_gc_stats st = {0};
    hm_gc_work g = {0};
    int rc = HM_ERR_INVALID;

    if (!m || !in || in->n_bounds_before == 0 || !in->bounds_before ||
        (in->n_bounds_after && !in->bounds_after) || (in->n_moves && !in->moves))
        goto out;
    if (!sink)
        sink = &no_sink;
    g.mask = in->condemned_mask & 0x1f; /* generations 0..4; NonGC is never condemned */
    g.batch_classified = sink->classified_young != NULL;
    g.quiet_young_deaths = g.batch_classified && sink->young_deaths_in_classified;
    hm_gc_sink own = *sink; /* young_fates only as documented: n 0 is no fate at all */
    if (!g.quiet_young_deaths || !own.young_fates) {
        own.young_fates = NULL;
        own.young_fates_n = 0;
    }
    sink = &own;
    g.fates = own.young_fates;
    g.fates_first = own.young_fates_first;
    g.fates_n = own.young_fates_n;

    rc = hm_gc_prepare(m, in, &g);
    if (rc != HM_OK)
        goto out;

    size_t young = m->yt.n_young;
    hm_gc_commit_young(m, &g, sink, &st);
    hm_gc_commit_windows(m, &g, sink, &st);
    hm_gc_commit_insert(m, &g, sink, &st);
    hm_gc_commit_windows_tidy(m);
    hm_young_reset(m, young);
    st.anomalies += g.anomalies;
    st.live_after = hm_model_count(m);

    /* What this GC's scratch held at most: the young list (ins, dead, cls), the moves, the
     * insert list and its sort scratch (tmp: twice the larger one, with the sort's own). */
    size_t demand = young > g.n_ins ? young : g.n_ins;
    if (in->n_moves > demand)
        demand = in->n_moves;
    if (in->n_bounds_before + in->n_bounds_after > demand)
        demand = in->n_bounds_before + in->n_bounds_after;
    demand = 2 * demand + hm_sort_tmp_size(demand);
    HM_SCRATCH_RELEASE(m->bb, m->cap_bb, demand);
    HM_SCRATCH_RELEASE(m->ba, m->cap_ba, demand);
    HM_SCRATCH_RELEASE(m->cr, m->cap_cr, demand);
    HM_SCRATCH_RELEASE(m->mv, m->cap_mv, demand);
    HM_SCRATCH_RELEASE(m->ins, m->cap_ins, demand);
    HM_SCRATCH_RELEASE(m->tmp, m->cap_tmp, demand);
    HM_SCRATCH_RELEASE(m->dead, m->cap_dead, demand);
    HM_SCRATCH_RELEASE(m->cls, m->cap_cls, demand);
out:
    if (stats)
        *stats = st;
    return rc;
}

/* ---- queries ---------------------------------------------------------------------------- */

/* lookup and count take a const model, as callers see it, but may first sync the hash: deferred
 * bookkeeping of earlier adds that changes nothing they can observe. The model was allocated
 * writable by hm_model_new, and only its one thread uses it. */
static hm_model *hm_mutable(const hm_model *m)
{
    return (hm_model *)(uintptr_t)m;
}

bool hm_model_lookup(const hm_model *cm, uint64_t addr, uint64_t *id, uint32_t *generation)
{
    if (!cm)
        return false;
    hm_model *m = hm_mutable(cm);
    size_t yi = m->yt.n_young ? hm_young_lookup(m, addr) : HM_NONE;
    if (yi != HM_NONE) {
        if (id)
            *id = hm_young_id(m, yi);
        if (generation)
            *generation = HM_GEN_UNKNOWN;
        return true;
    }
    uint64_t key = addr >> HM_WINDOW_SHIFT;
    size_t wi = m->finger_wi < m->n_win && m->win[m->finger_wi].key == key
                    ? m->finger_wi
                    : hm_windows_find(m, key);
    size_t ei = wi == HM_NONE ? HM_NONE : hm_window_find_live_from(&m->win[wi], addr,
                                                                   m->finger_ei);
    if (ei == HM_NONE)
        return false;
    m->finger_wi = wi;
    m->finger_ei = (uint32_t)ei;
    if (id)
        *id = hm_entry_id(&m->win[wi].e[ei]);
    if (generation)
        *generation = hm_entry_gen(&m->win[wi].e[ei]);
    return true;
}

/* Does not sync: the sorted copy of the young objects resolves what a sync would (the newest of
 * equal addresses wins, and a young object hides a classified one at its address). */
bool hm_model_foreach(const hm_model *m, hm_object_fn fn, void *ctx)
{
    hm_pair *buf = NULL, *young = NULL;
    size_t ny = 0, yi = 0;
    bool ok = false;

    if (!m)
        return true;
    if (m->yt.n_young > 0) {
        /* Young objects are in arrival order: sort a copy to merge them in. */
        size_t n = m->yt.n_young;
        buf = hm_malloc(m, (n + hm_sort_tmp_size(n)) * sizeof(*buf));
        if (!buf)
            goto out;
        hm_ids ids = {0};
        for (size_t i = 0; i < n; i++) {
            uint64_t id = hm_ids_at(m, &ids, i);
            if (!hm_young_flagged(m->yt.young[i]))
                buf[ny++] = (hm_pair){m->yt.young[i], id};
        }
        young = hm_pairs_sort(buf, buf + n, ny); /* stable: the newest of an address is last */
    }
    for (size_t wi = 0; wi < m->n_win; wi++) {
        const hm_window *w = &m->win[wi];
        for (uint32_t i = 0; i < w->n; i++) {
            const hm_entry *x = &w->e[i];
            for (; yi < ny && young[yi].key < x->addr; yi++)
                if ((yi + 1 == ny || young[yi + 1].key != young[yi].key) &&
                    !fn(ctx, young[yi].key, young[yi].val, HM_GEN_UNKNOWN))
                    goto out;
            if (hm_entry_gen(x) == HM_GEN_TOMB || (yi < ny && young[yi].key == x->addr))
                continue; /* evicted by a young object */
            if (!fn(ctx, x->addr, hm_entry_id(x), hm_entry_gen(x)))
                goto out;
        }
    }
    for (; yi < ny; yi++)
        if ((yi + 1 == ny || young[yi + 1].key != young[yi].key) &&
            !fn(ctx, young[yi].key, young[yi].val, HM_GEN_UNKNOWN))
            goto out;
    ok = true;
out:
    if (buf)
        hm_free(m, buf);
    return ok;
}

size_t hm_model_count(const hm_model *cm)
{
    if (!cm)
        return 0;
    hm_model *m = hm_mutable(cm);
    hm_young_sync(m); /* the evictions it finds are what makes the count exact */
    return m->n_live_win + m->yt.n_young - m->n_yflagged;
}

size_t hm_model_memory(const hm_model *m)
{
    if (!m)
        return 0;
    size_t bytes = sizeof(*m) + m->cap_win * sizeof(*m->win);
    for (size_t i = 0; i < m->n_win; i++)
        bytes += (size_t)m->win[i].cap * sizeof(hm_entry);
    bytes += m->cap_young * sizeof(*m->yt.young) + m->cap_slots * sizeof(*m->slots) +
             m->cap_idruns * sizeof(*m->idruns);
    bytes += (m->cap_bb + m->cap_ba + m->cap_cr + m->cap_mv) * sizeof(hm_span);
    bytes += (m->cap_ins + m->cap_tmp) * sizeof(hm_pair) + m->cap_dead * sizeof(*m->dead) +
             m->cap_cls * sizeof(*m->cls);
    return bytes;
}

/* ---- invariants ------------------------------------------------------------------------- */

#define HM_CHECK(cond, ...)                              \
    do {                                                 \
        if (!(cond)) {                                   \
            if (why && why_size)                         \
                snprintf(why, why_size, __VA_ARGS__);    \
            ok = false;                                  \
            goto out;                                    \
        }                                                \
    } while (0)

static int hm_pair_cmp(const void *pa, const void *pb)
{
    const hm_pair *a = pa, *b = pb;
    if (a->key != b->key)
        return a->key < b->key ? -1 : 1;
    return a->val < b->val ? -1 : a->val > b->val;
}

/* Index in the sorted (address, index) pairs p[0..n) of the last one with address addr, or
 * HM_NONE. */
static size_t hm_pairs_find_last(const hm_pair *p, size_t n, uint64_t addr)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (p[mid].key <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo > 0 && p[lo - 1].key == addr ? lo - 1 : HM_NONE;
}

/* Does not sync (it checks the state as it is), so it holds between any two calls. */
bool hm_model_check(const hm_model *m, char *why, size_t why_size)
{
    size_t live = 0, tomb = 0;
    hm_pair *by_addr = NULL; /* (address, index) of every young object, sorted */
    bool ok = true;

    HM_CHECK(m, "model is NULL");
    HM_CHECK(m->yt.n_young <= m->cap_young, "young n %zu > cap %zu", m->yt.n_young, m->cap_young);
    HM_CHECK(m->yt.add_room <= m->cap_young && 2 * m->yt.add_room <= m->cap_slots,
             "I9: add room %zu beyond the list's %zu or half the hash's %zu", m->yt.add_room,
             m->cap_young, m->cap_slots);
    by_addr = hm_malloc(m, (m->yt.n_young + 1) * sizeof(*by_addr));
    HM_CHECK(by_addr, "check: out of memory");
    for (size_t i = 0; i < m->yt.n_young; i++)
        by_addr[i] = (hm_pair){hm_young_addr(m->yt.young[i]), i};
    qsort(by_addr, m->yt.n_young, sizeof(*by_addr), hm_pair_cmp);

    HM_CHECK(m->n_win <= m->cap_win, "n_win %zu > cap %zu", m->n_win, m->cap_win);
    for (size_t wi = 0; wi < m->n_win; wi++) {
        const hm_window *w = &m->win[wi];
        size_t wt = 0;
        HM_CHECK(wi == 0 || m->win[wi - 1].key < w->key, "I1: window %zu out of order", wi);
        HM_CHECK(w->n <= w->cap, "window %zu: n %u > cap %u", wi, w->n, w->cap);
        HM_CHECK(!w->touched, "window %zu still marked touched", wi);
        for (uint32_t i = 0; i < w->n; i++) {
            const hm_entry *x = &w->e[i];
            uint32_t gen = hm_entry_gen(x);
            HM_CHECK(x->addr >> HM_WINDOW_SHIFT == w->key,
                     "I1: 0x%llx in window 0x%llx", (unsigned long long)x->addr,
                     (unsigned long long)w->key);
            HM_CHECK(i == 0 || w->e[i - 1].addr < x->addr, "I2: window %zu not ascending at %u",
                     wi, i);
            HM_CHECK(gen <= HM_GEN_NONGC || gen == HM_GEN_TOMB, "I3: gen %u at 0x%llx", gen,
                     (unsigned long long)x->addr);
            HM_CHECK(x->addr != 0, "I3: address 0 in window %zu", wi);
            if (gen == HM_GEN_TOMB) {
                wt++;
                HM_CHECK(x->idgen >> HM_TOMB_GEN_SHIFT <= HM_GEN_NONGC,
                         "I3: tombstone 0x%llx keeps gen %u", (unsigned long long)x->addr,
                         (unsigned)(x->idgen >> HM_TOMB_GEN_SHIFT));
                HM_CHECK(hm_pairs_find_last(by_addr, m->yt.n_young, x->addr) != HM_NONE,
                         "I6: tombstone 0x%llx without young evictor",
                         (unsigned long long)x->addr);
            } else {
                live++;
                HM_CHECK(x->idgen >> HM_TOMB_GEN_SHIFT == 0, "I3: id too large at 0x%llx",
                         (unsigned long long)x->addr);
            }
        }
        HM_CHECK(wt == w->n_tomb, "I4: window %zu has %zu tombstones, counted %u", wi, wt,
                 w->n_tomb);
        tomb += wt;
    }
    HM_CHECK(live == m->n_live_win, "I4: %zu live entries, counted %zu", live, m->n_live_win);
    HM_CHECK(tomb == m->n_tomb, "I4: %zu tombstones, counted %zu", tomb, m->n_tomb);

    HM_CHECK(m->n_hashed <= m->yt.n_young, "I5: %zu hashed of %zu", m->n_hashed, m->yt.n_young);
    HM_CHECK(m->yt.n_young == 0 || 2 * m->yt.n_young <= m->cap_slots, "I5: hash too small");
    HM_CHECK(m->epoch >= 1 && m->epoch <= HM_EPOCH_MAX, "I5: epoch %llu",
             (unsigned long long)m->epoch);
    size_t used = 0, self = 0, flagged = 0;
    for (size_t s = 0; s < m->cap_slots; s++)
        if (hm_slot_used(m, m->slots[s])) {
            used++;
            uint32_t v = (uint32_t)m->slots[s];
            HM_CHECK(v >= 1 && v <= m->n_hashed, "I5: slot %zu names %u of %zu hashed", s, v,
                     m->n_hashed);
            uint64_t tag = hm_young_tag(m, hm_young_addr(m->yt.young[v - 1]));
            HM_CHECK((m->slots[s] & HM_SLOT_TAGS) == tag, "I5: slot %zu has a wrong tag", s);
        }
    HM_CHECK(m->n_idruns <= m->yt.n_young && m->n_idruns <= m->cap_idruns &&
                 (m->yt.n_young == 0) == (m->n_idruns == 0),
             "I10: %zu id runs for %zu young", m->n_idruns, m->yt.n_young);
    for (size_t r = 0; r < m->n_idruns; r++) {
        uint64_t start = m->idruns[r].start, id = m->idruns[r].id;
        uint64_t end = r + 1 < m->n_idruns ? m->idruns[r + 1].start : m->yt.n_young;
        HM_CHECK(r == 0 ? start == 0 : start > m->idruns[r - 1].start,
                 "I10: id run %zu starts at %llu", r, (unsigned long long)start);
        HM_CHECK(end > start && id <= HM_ID_MAX && end - start - 1 <= HM_ID_MAX - id,
                 "I10: id run %zu (%llu from %llu) ends at %llu", r, (unsigned long long)id,
                 (unsigned long long)start, (unsigned long long)end);
        if (r + 1 == m->n_idruns)
            HM_CHECK(m->yt.next_id == id + (end - start), "I10: next id %llu after run %zu",
                     (unsigned long long)m->yt.next_id, r);
    }
    HM_CHECK(m->yt.n_young > 0 || m->yt.next_id == UINT64_MAX, "I10: next id %llu with no run",
             (unsigned long long)m->yt.next_id);
    for (size_t i = 0; i < m->yt.n_young; i++) {
        uint64_t y = m->yt.young[i];
        uint64_t addr = hm_young_addr(y);
        bool fl = hm_young_flagged(y);
        flagged += fl;
        HM_CHECK(addr != 0 && (addr & 7) == 0, "I3: young address 0x%llx",
                 (unsigned long long)addr);
        size_t last = hm_pairs_find_last(by_addr, m->yt.n_young, addr);
        HM_CHECK(last != HM_NONE && !(fl && by_addr[last].val == i),
                 "I5: young %zu (0x%llx) flagged but the newest at its address", i,
                 (unsigned long long)addr);
        if (i >= m->n_hashed)
            continue;
        size_t j = hm_young_find_hashed(m, addr);
        HM_CHECK(j != HM_NONE && j >= i && (j == i || fl), "I5: young 0x%llx at %zu: hash %zu",
                 (unsigned long long)addr, i, j);
        self += j == i;
        if (fl)
            continue;
        size_t wi = hm_windows_find(m, addr >> HM_WINDOW_SHIFT);
        HM_CHECK(wi == HM_NONE || hm_window_find_live(&m->win[wi], addr) == HM_NONE,
                 "I6: 0x%llx both young and classified", (unsigned long long)addr);
    }
    HM_CHECK(used == self, "I5: %zu slots used for %zu hashed addresses", used, self);
    HM_CHECK(m->n_keyed <= m->yt.n_young && m->n_ywin <= HM_YOUNG_WINDOWS, "I8: %zu keyed of %zu",
             m->n_keyed, m->yt.n_young);
    for (size_t k = 1; k < m->n_ywin; k++)
        HM_CHECK(m->ywin[k - 1] < m->ywin[k], "I8: young windows not ascending at %zu", k);
    for (size_t i = 0; i < m->n_keyed && !m->ywin_full; i++) {
        uint64_t key = m->yt.young[i] >> HM_WINDOW_SHIFT;
        bool found = false;
        for (size_t k = 0; k < m->n_ywin && !found; k++)
            found = m->ywin[k] == key;
        HM_CHECK(found, "I8: window of young %zu (0x%llx) not listed", i,
                 (unsigned long long)hm_young_addr(m->yt.young[i]));
    }
    HM_CHECK(flagged == m->n_yflagged, "I4: %zu young flagged, counted %zu", flagged,
             m->n_yflagged);
    if (m->cache_valid)
        HM_CHECK(m->cache_wi == hm_windows_find(m, m->cache_key), "I7: stale window cache");
out:
    if (by_addr)
        hm_free(m, by_addr);
    return ok;
}
