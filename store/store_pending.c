/* store_pending.c — allocations waiting for the GC that decides their fate.
 *
 * An allocation is stored once, when its first GC ends, with that GC's verdict (heap, first
 * generation or death) already known — never inserted and then updated. Until then it waits
 * here. Ids are dense allocation sequence numbers, so the table is an array indexed by
 * id - base, cut in chunks of 2^16 slots that are allocated when first touched: an id that the
 * collector dropped costs nothing, a corrupt id far away costs one chunk.
 *
 * Invariants: every id < base has been drained (stored); chunks->pdata[i] covers the ids
 * [(base_chunk + i) * CHUNK, (base_chunk + i + 1) * CHUNK) with base_chunk = base / CHUNK;
 * `count` is the number of slots in state PENDING or FATED at or above base; every FATED slot
 * lies in [fate_lo, fate_hi].
 */
#include "store/store_internal.h"

#define STORE_CHUNK_BITS 16
#define STORE_CHUNK_SLOTS ((uint64_t)1 << STORE_CHUNK_BITS)
#define STORE_CHUNK_MASK (STORE_CHUNK_SLOTS - 1)
#define STORE_MAX_CHUNKS ((uint64_t)1 << 16) /* ids up to base + 2^32 */

enum { STORE_SLOT_EMPTY = 0, STORE_SLOT_PENDING = 1, STORE_SLOT_FATED = 2 };

typedef struct store_chunk {
    uint8_t state[STORE_CHUNK_SLOTS];
    uint8_t fate[STORE_CHUNK_SLOTS];
    store_young objs[STORE_CHUNK_SLOTS];
} store_chunk;

struct store_pending {
    uint64_t base;
    GPtrArray *chunks; /* of store_chunk *, NULL where nothing was added */
    uint64_t count;
    uint64_t fate_lo, fate_hi; /* fate_lo > fate_hi: no fate set since the last drain */
};

store_pending *store_pending_new(void)
{
    store_pending *p = g_new0(store_pending, 1);
    p->chunks = g_ptr_array_new_with_free_func(g_free);
    p->fate_lo = UINT64_MAX;
    return p;
}

void store_pending_free(store_pending *p)
{
    if (p == NULL)
        return;
    g_ptr_array_unref(p->chunks);
    g_free(p);
}

uint64_t store_pending_count(const store_pending *p)
{
    return p->count;
}

/* The chunk holding `id` (id >= base), or NULL. */
static store_chunk *store_pending_chunk(const store_pending *p, uint64_t id)
{
    uint64_t i = (id >> STORE_CHUNK_BITS) - (p->base >> STORE_CHUNK_BITS);
    return i < p->chunks->len ? g_ptr_array_index(p->chunks, i) : NULL;
}

store_pending_add_result store_pending_add(store_pending *p, uint64_t id, const store_young *o)
{
    if (id < p->base)
        return STORE_PENDING_LATE;
    uint64_t i = (id >> STORE_CHUNK_BITS) - (p->base >> STORE_CHUNK_BITS);
    if (i >= STORE_MAX_CHUNKS)
        return STORE_PENDING_FAR;
    if (i >= p->chunks->len)
        g_ptr_array_set_size(p->chunks, (guint)i + 1);
    store_chunk *c = g_ptr_array_index(p->chunks, i);
    if (c == NULL) {
        c = g_new0(store_chunk, 1);
        g_ptr_array_index(p->chunks, i) = c;
    }
    uint64_t slot = id & STORE_CHUNK_MASK;
    store_pending_add_result r = STORE_PENDING_ADDED;
    if (c->state[slot] != STORE_SLOT_EMPTY)
        r = STORE_PENDING_REPLACED;
    else
        p->count++;
    c->state[slot] = STORE_SLOT_PENDING;
    c->objs[slot] = *o;
    return r;
}

gboolean store_pending_set_fate(store_pending *p, uint64_t id, uint8_t fate)
{
    if (id < p->base)
        return FALSE;
    store_chunk *c = store_pending_chunk(p, id);
    uint64_t slot = id & STORE_CHUNK_MASK;
    if (c == NULL || c->state[slot] == STORE_SLOT_EMPTY)
        return FALSE;
    c->state[slot] = STORE_SLOT_FATED;
    c->fate[slot] = fate;
    p->fate_lo = MIN(p->fate_lo, id);
    p->fate_hi = MAX(p->fate_hi, id);
    return TRUE;
}

void store_pending_clear_fates(store_pending *p)
{
    for (uint64_t id = MAX(p->fate_lo, p->base); p->fate_lo <= p->fate_hi && id <= p->fate_hi;
         id++) {
        store_chunk *c = store_pending_chunk(p, id);
        if (c == NULL) {
            id |= STORE_CHUNK_MASK; /* skip the rest of this absent chunk */
            continue;
        }
        if (c->state[id & STORE_CHUNK_MASK] == STORE_SLOT_FATED)
            c->state[id & STORE_CHUNK_MASK] = STORE_SLOT_PENDING;
    }
    p->fate_lo = UINT64_MAX;
    p->fate_hi = 0;
}

gboolean store_pending_drain(store_pending *p, uint64_t end, store_pending_fn fn, void *ctx,
                             GError **error)
{
    uint64_t base_chunk = p->base >> STORE_CHUNK_BITS;
    uint64_t drained = 0;
    gboolean ok = FALSE;

    if (end <= p->base) {
        ok = TRUE;
        goto out;
    }
    for (guint i = 0; i < p->chunks->len; i++) {
        uint64_t first = (base_chunk + i) << STORE_CHUNK_BITS;
        if (first >= end)
            break;
        const store_chunk *c = g_ptr_array_index(p->chunks, i);
        if (c == NULL)
            continue;
        uint64_t lo = MAX(p->base, first);
        uint64_t hi = MIN(end, first + STORE_CHUNK_SLOTS);
        for (uint64_t id = lo; id < hi; id++) {
            uint64_t slot = id & STORE_CHUNK_MASK;
            uint8_t state = c->state[slot];
            if (state == STORE_SLOT_EMPTY)
                continue;
            int fate = state == STORE_SLOT_FATED ? c->fate[slot] : -1;
            if (!fn(ctx, id, &c->objs[slot], fate, error))
                goto out;
            drained++;
        }
    }
    /* All stored: forget them. Chunks wholly below `end` go; the slots below `end` in the chunk
     * holding `end` are never looked at again (everything below base is). */
    uint64_t whole = (end >> STORE_CHUNK_BITS) - base_chunk;
    g_ptr_array_remove_range(p->chunks, 0, (guint)MIN(whole, (uint64_t)p->chunks->len));
    p->count -= drained;
    p->base = end;
    p->fate_lo = UINT64_MAX;
    p->fate_hi = 0;
    ok = TRUE;
out:
    return ok;
}
