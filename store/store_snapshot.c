/* store_snapshot.c — applies a heap snapshot's records, all of which come inside one GC:
 *
 *   SNAPSHOT_START    opens the snapshot (one still open is discarded); nothing written
 *   SNAPSHOT_OBJECTS  items appended in memory
 *   SNAPSHOT_REFS     items appended in memory
 *   SNAPSHOT_ROOTS    items appended in memory
 *   SNAPSHOT_END      the counts it states must match the items that arrived — the collector
 *                     drops whole records when the writer lags, so a mismatch means a snapshot
 *                     with holes: discarded. Otherwise the rows are written in key order
 *                     (objects by id, each with its references; roots by object), then
 *                     the snapshots row: all inside the GC's transaction, so they commit with its
 *                     GC_END or vanish with it.
 *
 * An object listed twice is one row with the flags of both: the runtime's walk reports NonGC
 * objects too, and the collector lists a NonGC object again, flagged frozen, when something
 * references it. Every object in generation 5 (NonGC) is flagged frozen, and the snapshots
 * row's counts (objects, refs, roots, handles, frozen) are those of the rows written.
 *
 * A snapshot is counted in snapshots_discarded when it is not stored: its SNAPSHOT_END never
 * came before the GC_END (or the next SNAPSHOT_START), its counts did not add up, or its GC was
 * discarded. Records that name another GC or snapshot than the open one are skipped and counted
 * as writer anomalies.
 *
 *   SNAPSHOT_STATICS  items appended in memory; written as snapshot_statics rows
 *   SNAPSHOT_STRINGS  items appended in memory; written as snapshot_strings rows
 *   SNAPSHOT_COLLECTIONS  likewise: snapshot_collections rows
 *   SNAPSHOT_REF_FIELDS  items appended in memory: the field of each reference, in the order
 *                     the references came; stored as snapshot_objects.fields when there is one
 *                     per reference (a collector without them: every field unknown)
 *
 * Memory: a snapshot's items are held until its SNAPSHOT_END: 16 bytes per object, 20 per
 * reference, 24 per root (the collector held the same to send them); while writing, 24 bytes
 * more per reference (each with its field, sorted).
 */
#include "store/store_internal.h"

#include <inttypes.h>

static const char *const store_trigger_names[] = {
    [HL_SNAPSHOT_INDUCED] = "induced",
    [HL_SNAPSHOT_EVERY] = "every",
    [HL_SNAPSHOT_GEN2] = "gen2",
    [HL_SNAPSHOT_REQUESTED] = "requested",
    [HL_SNAPSHOT_IMPORTED] = "import",
    [HL_SNAPSHOT_GEN2_GROWTH] = "gen2-growth",
    [HL_SNAPSHOT_HEAP] = "heap",
    [HL_SNAPSHOT_LIMIT] = "limit",
    [HL_SNAPSHOT_PAUSE] = "pause",
    [HL_SNAPSHOT_TIME] = "time",
};

void store_snapshot_release(store_open_snapshot *s)
{
    if (s->objects != NULL)
        g_array_unref(s->objects);
    if (s->refs != NULL)
        g_array_unref(s->refs);
    if (s->ref_fields != NULL)
        g_array_unref(s->ref_fields);
    if (s->statics != NULL)
        g_array_unref(s->statics);
    if (s->strings != NULL)
        g_array_unref(s->strings);
    if (s->collections != NULL)
        g_array_unref(s->collections);
    if (s->roots != NULL)
        g_array_unref(s->roots);
    if (s->root_threads != NULL)
        g_array_unref(s->root_threads);
    g_free(s->reason);
    memset(s, 0, sizeof *s);
}

void store_snapshot_discard_open(store_writer *w, const char *why)
{
    if (!w->snap.open)
        return;
    w->snapshots_discarded++;
    if (w->on_snapshot_lost != NULL)
        w->on_snapshot_lost(w->on_snapshot_ctx, w->snap.start.snapshot, w->snap.start.gc,
                            w->snap.start.trigger, why);
    store_snapshot_release(&w->snap);
}

void store_snapshot_discard_written(store_writer *w, const char *why)
{
    for (guint i = 0; i < w->gc.snapshots->len; i++) {
        const store_snapshot_done *d = &g_array_index(w->gc.snapshots, store_snapshot_done, i);
        if (w->on_snapshot_lost != NULL)
            w->on_snapshot_lost(w->on_snapshot_ctx, d->snapshot, d->gc, d->trigger, why);
    }
    w->snapshots_discarded += w->gc.snapshots->len;
    g_array_set_size(w->gc.snapshots, 0);
}

/* Tells on_snapshot_progress how far the open snapshot got (`writing`: always; else at most
 * every STORE_SNAPSHOT_PROGRESS_US), so that a client waiting for it knows it advances. */
static void store_snapshot_progress(store_writer *w, gboolean writing)
{
    store_open_snapshot *s = &w->snap;
    if (w->on_snapshot_progress == NULL)
        return;
    gint64 now = g_get_monotonic_time();
    if (!writing && now - s->progress_us < STORE_SNAPSHOT_PROGRESS_US)
        return;
    s->progress_us = now;
    w->on_snapshot_progress(w->on_snapshot_ctx, s->start.snapshot, s->start.trigger,
                            (uint64_t)s->objects->len + s->refs->len + s->roots->len, writing);
}

gboolean store_snapshot_start(store_writer *w, const store_record *rec,
                              GError **error G_GNUC_UNUSED)
{
    const hl_snapshot_start *s = &rec->u.snapshot_start;

    store_snapshot_discard_open(w, "its end never came (the collector dropped records of it: "
                                   "the writer fell behind)");
    if (!w->gc.open || w->gc.start.gc != s->gc || s->snapshot <= w->last_snapshot) {
        w->writer_anomalies++; /* outside its GC, or a snapshot number that is not new */
        return TRUE;
    }
    w->snap.open = TRUE;
    w->snap.start = *s;
    w->snap.objects = g_array_new(FALSE, FALSE, sizeof(hl_snapshot_object));
    w->snap.refs = g_array_new(FALSE, FALSE, sizeof(hl_snapshot_ref));
    w->snap.ref_fields = g_array_new(FALSE, FALSE, sizeof(uint32_t));
    w->snap.statics = g_array_new(FALSE, FALSE, sizeof(hl_snapshot_static));
    w->snap.strings = g_array_new(FALSE, FALSE, sizeof(hl_snapshot_string));
    w->snap.collections = g_array_new(FALSE, FALSE, sizeof(hl_snapshot_collection));
    w->snap.roots = g_array_new(FALSE, FALSE, sizeof(hl_snapshot_root));
    w->snap.root_threads = g_array_new(FALSE, FALSE, sizeof(hl_snapshot_root_thread));
    w->snap.progress_us = g_get_monotonic_time();
    return TRUE;
}

gboolean store_snapshot_items(store_writer *w, const store_record *rec,
                              GError **error G_GNUC_UNUSED)
{
    const hl_snapshot_batch *h = &rec->u.snapshot_batch.h;
    GArray *to;

    if (!w->snap.open || h->snapshot != w->snap.start.snapshot) {
        w->writer_anomalies++;
        return TRUE;
    }
    switch (rec->type) {
    case HL_REC_SNAPSHOT_OBJECTS:
        to = w->snap.objects;
        break;
    case HL_REC_SNAPSHOT_REFS:
        to = w->snap.refs;
        break;
    case HL_REC_SNAPSHOT_REF_FIELDS:
        to = w->snap.ref_fields;
        break;
    case HL_REC_SNAPSHOT_STATICS:
        to = w->snap.statics;
        break;
    case HL_REC_SNAPSHOT_STRINGS:
        to = w->snap.strings;
        break;
    case HL_REC_SNAPSHOT_COLLECTIONS:
        to = w->snap.collections;
        break;
    case HL_REC_SNAPSHOT_ROOT_THREADS:
        to = w->snap.root_threads;
        break;
    default:
        to = w->snap.roots;
        break;
    }
    guint at = to->len;
    g_array_set_size(to, at + h->count);
    store_record_snapshot_items(rec, g_array_get_element_size(to), 0, h->count,
                                to->data + (size_t)at * g_array_get_element_size(to));
    store_snapshot_progress(w, FALSE);
    return TRUE;
}

/* Sorts `n` items of `size` bytes by the uint64 at `key` within each, stably: LSD radix sort of
 * each key's distance from the smallest, a digit per pass, as many digits as that distance has
 * bits (ids rarely differ in more than three bytes). A snapshot holds millions of items: this is
 * several times faster than a comparison sort. The digits are up to 11 bits for a few items (a
 * GC's 8192 deaths, ids 20 bits apart: two passes instead of three bytes; a pass over the keys
 * per byte of the eight, to find the ones all keys share, was half of the sort), 8 bits for
 * many (a snapshot: 256 places to write to stay in the caches). */
void store_radix_sort(void *items, size_t n, size_t size, size_t key)
{
    uint8_t *src = items;
    /* Items often come sorted already (a snapshot's objects when ids follow addresses, each
     * object's references after it): then a look at each key is all, no copy, no buffer. */
    size_t sorted = 1;
    while (sorted < n) {
        uint64_t a, b;
        memcpy(&a, src + (sorted - 1) * size + key, sizeof a);
        memcpy(&b, src + sorted * size + key, sizeof b);
        if (b < a)
            break;
        sorted++;
    }
    if (sorted >= n)
        return;
    uint64_t min = UINT64_MAX, max = 0;
    for (size_t i = 0; i < n; i++) {
        uint64_t k;
        memcpy(&k, src + i * size + key, sizeof k);
        min = k < min ? k : min;
        max = k > max ? k : max;
    }
    int bits = 64 - __builtin_clzll(max - min); /* max > min: the items are not sorted */
    int width = n <= 65536 ? 11 : 8;
    int passes = (bits + width - 1) / width;
    width = (bits + passes - 1) / passes; /* the same passes, digits as even as they can be */
    uint64_t mask = (UINT64_C(1) << width) - 1;
    g_autofree uint8_t *tmp = g_malloc(n * size);
    g_autofree size_t *count = g_new(size_t, (size_t)1 << width);
    uint8_t *dst = tmp;

    for (int shift = 0; shift < bits; shift += width) {
        memset(count, 0, sizeof *count << width);
        for (size_t i = 0; i < n; i++) {
            uint64_t k;
            memcpy(&k, src + i * size + key, sizeof k);
            count[((k - min) >> shift) & mask]++;
        }
        size_t at = 0;
        for (size_t b = 0; b <= mask; b++) {
            size_t c = count[b];
            count[b] = at;
            at += c;
        }
        /* The copy of a constant size is inlined: a libc call per item took most of the time
         * of sorting 12-byte generation changes. */
#define STORE_RADIX_SCATTER(sz)                                                                  \
    for (size_t i = 0; i < n; i++) {                                                             \
        uint64_t k;                                                                              \
        memcpy(&k, src + i * (sz) + key, sizeof k);                                              \
        memcpy(dst + count[((k - min) >> shift) & mask]++ * (sz), src + i * (sz), (sz));         \
    }
        switch (size) {
        case 8: STORE_RADIX_SCATTER(8); break;
        case 12: STORE_RADIX_SCATTER(12); break;
        case 16: STORE_RADIX_SCATTER(16); break;
        case 24: STORE_RADIX_SCATTER(24); break;
        case 29: STORE_RADIX_SCATTER(29); break;
        default: STORE_RADIX_SCATTER(size); break;
        }
#undef STORE_RADIX_SCATTER
        uint8_t *t = src;
        src = dst;
        dst = t;
    }
    if (src != items)
        memcpy(items, src, n * size);
}

/* Merges the ascending runs of ids[0, n) that start at runs_at[0 .. runs - 1]
 * (runs_at[runs] = n), a pair of neighbours at a time, until one is left. Each pass reads
 * and writes the ids once, in order, without a branch on which side the next id comes from:
 * on MidLife's deaths (about 6 runs in 8192 ids) the radix sort's passes over 2048 places
 * took about twice as long. */
static void store_merge_runs(uint64_t *ids, size_t n, size_t *runs_at, int runs,
                             uint64_t *scratch)
{
    uint64_t *src = ids, *dst = scratch;
    while (runs > 1) {
        int merged = 0;
        for (int r = 0; r < runs; r += 2) {
            size_t lo = runs_at[r], mid = runs_at[r + 1];
            size_t hi = r + 2 <= runs ? runs_at[r + 2] : mid; /* an odd last run: copied */
            size_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi) {
                uint64_t a = src[i], b = src[j];
                gboolean right = b < a;
                dst[k++] = right ? b : a;
                i += !right;
                j += right;
            }
            memcpy(dst + k, src + i, (mid - i) * sizeof *dst);
            k += mid - i;
            memcpy(dst + k, src + j, (hi - j) * sizeof *dst);
            runs_at[merged++] = lo;
        }
        runs_at[merged] = n;
        runs = merged;
        uint64_t *t = src;
        src = dst;
        dst = t;
    }
    if (src != ids)
        memcpy(ids, src, n * sizeof *ids);
}

void store_sort_ids(uint64_t *ids, size_t n, uint64_t *scratch)
{
    size_t runs_at[STORE_SORT_MERGE_RUNS + 1] = {0};
    int runs = 1;
    for (size_t i = 1; i < n; i++)
        if (ids[i] < ids[i - 1]) {
            if (runs == STORE_SORT_MERGE_RUNS) {
                store_radix_sort(ids, n, sizeof *ids, 0);
                return;
            }
            runs_at[runs++] = i;
        }
    if (runs == 1)
        return;
    runs_at[runs] = n;
    store_merge_runs(ids, n, runs_at, runs, scratch);
}

static gint store_snapshot_root_cmp(gconstpointer a, gconstpointer b)
{
    const hl_snapshot_root *x = a, *y = b;
    if (x->object_id != y->object_id)
        return x->object_id < y->object_id ? -1 : 1;
    if (x->kind != y->kind)
        return x->kind < y->kind ? -1 : 1;
    if (x->flags != y->flags)
        return x->flags < y->flags ? -1 : 1;
    return x->root_id < y->root_id ? -1 : x->root_id > y->root_id;
}

/* What the snapshot's rows add up to, for its snapshots row. */
typedef struct store_snapshot_counts {
    uint64_t objects, refs, roots, handles, frozen;
} store_snapshot_counts;

/* A reference with the field that holds it (HL_FIELD_UNKNOWN: not known), sorted by `from`. */
typedef struct store_ref {
    uint64_t from;
    uint64_t to;
    uint32_t field;
    uint32_t reserved;
} store_ref;

/* Writes object `o`'s row of schema 7 (HEAPLENS_SNAPSHOT_ROWS=1 only: snapshot_object_rows, for
 * the differential test) with its references `r[0..nr)` as the JSON array of their targets, and
 * the fields holding them as a parallel array (NULL when no field is known). */
static gboolean store_snapshot_write_row_form(store_writer *w, const hl_snapshot_object *o,
                                              uint32_t flags, const store_ref *r, size_t nr,
                                              GError **error)
{
    store_row_batch *b = &w->snapshot_object_rows;
    int64_t row[6] = {
        w->snap.start.snapshot,
        (int64_t)o->id,
        o->generation <= HL_GEN_NONGC ? (int64_t)o->generation : STORE_NULL,
        flags & 7u,
        STORE_NULL,
        STORE_NULL,
    };
    if (nr > 0) {
        gboolean known = FALSE;
        row[4] = (int64_t)b->text->len;
        g_string_append_c(b->text, '[');
        for (size_t i = 0; i < nr; i++) {
            if (i > 0)
                g_string_append_c(b->text, ',');
            store_append_u64(b->text, r[i].to);
            known = known || r[i].field != HL_FIELD_UNKNOWN;
        }
        g_string_append_c(b->text, ']');
        if (known) {
            row[5] = (int64_t)b->text->len;
            g_string_append_c(b->text, '[');
            for (size_t i = 0; i < nr; i++) {
                if (i > 0)
                    g_string_append_c(b->text, ',');
                if (r[i].field == HL_FIELD_UNKNOWN)
                    g_string_append(b->text, "null");
                else
                    store_append_u64(b->text, r[i].field);
            }
            g_string_append_c(b->text, ']');
        }
    }
    return store_batch_add(w, b, row, error);
}

/* The blocks of the previous stored snapshot (first_id, row id), in first_id order: a new block
 * with the same first_id and the same text is that row, extended to this snapshot. */
typedef struct store_prev_block {
    int64_t first_id, row;
} store_prev_block;

typedef struct store_block_writer {
    store_prev_block *prev;
    size_t n_prev, at;
    uint64_t written, extended; /* blocks */
} store_block_writer;

static gboolean store_snapshot_prev_blocks(store_writer *w, store_block_writer *bw,
                                           GError **error)
{
    sqlite3_stmt *st = w->stmt[STORE_STMT_SNAPSHOT_BLOCKS_OF];
    size_t cap = 0;
    int rc;
    if (w->last_snapshot == 0)
        return TRUE;
    sqlite3_bind_int64(st, 1, w->last_snapshot);
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (bw->n_prev == cap) {
            cap = MAX(1024, 2 * cap);
            bw->prev = g_renew(store_prev_block, bw->prev, cap);
        }
        bw->prev[bw->n_prev++] =
            (store_prev_block){sqlite3_column_int64(st, 0), sqlite3_column_int64(st, 1)};
    }
    sqlite3_reset(st);
    if (rc != SQLITE_DONE)
        return store_sql_fail(w->db, w->path, "read", error);
    return TRUE;
}

static gboolean store_text_column_is(sqlite3_stmt *st, int col, const GString *text,
                                     gboolean present)
{
    if (!present)
        return sqlite3_column_type(st, col) == SQLITE_NULL;
    const void *v = sqlite3_column_text(st, col);
    return sqlite3_column_type(st, col) == SQLITE_TEXT &&
           (size_t)sqlite3_column_bytes(st, col) == text->len && memcmp(v, text->str, text->len) == 0;
}

/* The block built is the previous snapshot's row with its first id, byte for byte? */
static gboolean store_snapshot_block_same(store_writer *w, int64_t row, gboolean *same,
                                          GError **error)
{
    const store_snapblock_builder *b = &w->snapblock;
    sqlite3_stmt *st = w->stmt[STORE_STMT_SNAPSHOT_BLOCK_GET];
    sqlite3_bind_int64(st, 1, row);
    int rc = sqlite3_step(st);
    *same = rc == SQLITE_ROW && sqlite3_column_int64(st, 0) == b->n &&
            store_text_column_is(st, 1, b->ids, TRUE) &&
            store_text_column_is(st, 2, b->kinds, TRUE) &&
            store_text_column_is(st, 3, b->refs, b->any_refs) &&
            store_text_column_is(st, 4, b->fields, b->any_fields);
    sqlite3_reset(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return store_sql_fail(w->db, w->path, "read", error);
    return TRUE;
}

/* Writes the block built: the previous snapshot's row extended when it is the same, else a new
 * row. */
static gboolean store_snapshot_block_flush(store_writer *w, store_block_writer *bw,
                                           GError **error)
{
    store_snapblock_builder *b = &w->snapblock;
    int64_t snapshot = w->snap.start.snapshot;
    if (b->n == 0)
        return TRUE;
    store_snapblock_close(b);
    while (bw->at < bw->n_prev && bw->prev[bw->at].first_id < (int64_t)b->first_id)
        bw->at++;
    gboolean same = FALSE;
    if (bw->at < bw->n_prev && bw->prev[bw->at].first_id == (int64_t)b->first_id &&
        !store_snapshot_block_same(w, bw->prev[bw->at].row, &same, error))
        return FALSE;
    if (same) {
        sqlite3_stmt *st = w->stmt[STORE_STMT_EXTEND_SNAPSHOT_BLOCK];
        sqlite3_bind_int64(st, 1, bw->prev[bw->at].row);
        sqlite3_bind_int64(st, 2, snapshot);
        if (!store_writer_step(w, STORE_STMT_EXTEND_SNAPSHOT_BLOCK, error))
            return FALSE;
        bw->extended++;
    } else {
        sqlite3_stmt *st = w->stmt[STORE_STMT_INSERT_SNAPSHOT_BLOCK];
        sqlite3_bind_int64(st, 1, snapshot);
        sqlite3_bind_int64(st, 2, (int64_t)b->first_id);
        sqlite3_bind_int64(st, 3, b->n);
        sqlite3_bind_text(st, 4, b->ids->str, (int)b->ids->len, SQLITE_STATIC);
        sqlite3_bind_text(st, 5, b->kinds->str, (int)b->kinds->len, SQLITE_STATIC);
        if (b->any_refs)
            sqlite3_bind_text(st, 6, b->refs->str, (int)b->refs->len, SQLITE_STATIC);
        else
            sqlite3_bind_null(st, 6);
        if (b->any_fields)
            sqlite3_bind_text(st, 7, b->fields->str, (int)b->fields->len, SQLITE_STATIC);
        else
            sqlite3_bind_null(st, 7);
        if (!store_writer_step(w, STORE_STMT_INSERT_SNAPSHOT_BLOCK, error))
            return FALSE;
        bw->written++;
    }
    store_snapblock_reset(b);
    return TRUE;
}

/* Adds object `o` (flags and generation merged over its duplicates) with its references
 * `r[0..nr)` (from == o->id, in field order) to the block being built, written when it ends. */
static gboolean store_snapshot_write_object(store_writer *w, store_block_writer *bw,
                                            const hl_snapshot_object *o, const store_ref *r,
                                            size_t nr, GArray *to, GArray *fields,
                                            store_snapshot_counts *n, GError **error)
{
    uint32_t flags = o->flags | (o->generation == HL_GEN_NONGC ? HL_SNAP_OBJ_FROZEN : 0);
    if (flags & ~7u)
        w->writer_anomalies++; /* a flag the schema does not know: not stored */
    if (w->snapshot_rows && !store_snapshot_write_row_form(w, o, flags, r, nr, error))
        return FALSE;
    g_array_set_size(to, nr);
    g_array_set_size(fields, nr);
    for (size_t i = 0; i < nr; i++) {
        g_array_index(to, uint64_t, i) = r[i].to;
        g_array_index(fields, uint32_t, i) = r[i].field;
    }
    n->objects++;
    n->refs += nr;
    n->frozen += (flags & HL_SNAP_OBJ_FROZEN) != 0;
    if (store_snapblock_add(&w->snapblock, o->id,
                            o->generation <= HL_GEN_NONGC ? (int)o->generation : -1, flags,
                            (const uint64_t *)(void *)to->data,
                            (const uint32_t *)(void *)fields->data, nr))
        return store_snapshot_block_flush(w, bw, error);
    return TRUE;
}

/* The objects by id, each with its references, in blocks (store_snapblock.c). References are
 * sorted by `from` only (stably: each object's stay in the order they came, the runtime's field
 * order); those whose `from` is not an object of the snapshot break the collector's promise:
 * skipped, counted. */
static gboolean store_snapshot_write_objects(store_writer *w, store_snapshot_counts *n,
                                             GError **error)
{
    const store_open_snapshot *s = &w->snap;
    const hl_snapshot_object *o = (const hl_snapshot_object *)(void *)s->objects->data;
    const hl_snapshot_ref *in = (const hl_snapshot_ref *)(void *)s->refs->data;
    size_t ri = 0, nrefs = s->refs->len;
    hl_snapshot_object cur = {0};
    store_block_writer bw = {0};
    gboolean ok = FALSE;
    g_autoptr(GArray) to = g_array_new(FALSE, FALSE, sizeof(uint64_t));
    g_autoptr(GArray) fields_of = g_array_new(FALSE, FALSE, sizeof(uint32_t));
    /* The fields travel with their references through the sort. A collector without them (or
     * whose REF_FIELDS do not add up: a break of its promise) leaves every field unknown. */
    const uint32_t *fields = (const uint32_t *)(void *)s->ref_fields->data;
    if (s->ref_fields->len != nrefs) {
        w->writer_anomalies += s->ref_fields->len != 0;
        fields = NULL;
    }
    g_autofree store_ref *r = g_new(store_ref, nrefs ? nrefs : 1);
    for (size_t i = 0; i < nrefs; i++)
        r[i] = (store_ref){in[i].from, in[i].to, fields ? fields[i] : HL_FIELD_UNKNOWN, 0};

    store_radix_sort(s->objects->data, s->objects->len, sizeof *o,
                              G_STRUCT_OFFSET(hl_snapshot_object, id));
    store_radix_sort(r, nrefs, sizeof *r, G_STRUCT_OFFSET(store_ref, from));
    store_snapblock_reset(&w->snapblock);
    if (!store_snapshot_prev_blocks(w, &bw, error))
        goto out;
    for (guint i = 0; i <= s->objects->len; i++) {
        if (i > 0 && i < s->objects->len && o[i].id == cur.id) { /* the same object again */
            cur.flags |= o[i].flags;
            if (cur.generation > HL_GEN_NONGC)
                cur.generation = o[i].generation;
            continue;
        }
        if (i > 0) {
            size_t first;
            for (; ri < nrefs && r[ri].from < cur.id; ri++)
                w->writer_anomalies++; /* from an object the snapshot does not hold */
            for (first = ri; ri < nrefs && r[ri].from == cur.id; ri++)
                ;
            if (!store_snapshot_write_object(w, &bw, &cur, r + first, ri - first, to, fields_of,
                                             n, error))
                goto out;
        }
        if (i < s->objects->len)
            cur = o[i];
    }
    w->writer_anomalies += nrefs - ri;
    if (!store_snapshot_block_flush(w, &bw, error))
        goto out;
    if (w->snapshot_rows && !store_batch_flush(w, &w->snapshot_object_rows, error))
        goto out;
    ok = TRUE;
out:
    store_snapblock_reset(&w->snapblock);
    g_free(bw.prev);
    return ok;
}

static gboolean store_snapshot_write_roots(store_writer *w, store_snapshot_counts *n,
                                           GError **error)
{
    const store_open_snapshot *s = &w->snap;
    const hl_snapshot_root *r = (const hl_snapshot_root *)(void *)s->roots->data;
    /* The thread of each object whose stack roots' thread is known (ROOT_THREADS). */
    g_autoptr(GHashTable) threads = g_hash_table_new(g_int64_hash, g_int64_equal);
    for (guint i = 0; i < s->root_threads->len; i++) {
        hl_snapshot_root_thread *t = &g_array_index(s->root_threads, hl_snapshot_root_thread, i);
        g_hash_table_insert(threads, &t->object_id, t);
    }

    g_array_sort(s->roots, store_snapshot_root_cmp);
    for (guint i = 0; i < s->roots->len; i++) {
        if (r[i].kind > HL_ROOT_HANDLE)
            w->writer_anomalies++; /* stored as 'other' */
        const hl_snapshot_root_thread *t =
            r[i].kind == HL_ROOT_STACK ? g_hash_table_lookup(threads, &r[i].object_id) : NULL;
        const int64_t row[6] = {
            s->start.snapshot,
            r[i].object_id != 0 ? (int64_t)r[i].object_id : STORE_NULL,
            r[i].kind,
            r[i].flags,
            r[i].root_id != 0 ? (int64_t)r[i].root_id : STORE_NULL,
            t != NULL && t->os_tid != 0 ? (int64_t)t->os_tid : STORE_NULL,
        };
        if (!store_batch_add(w, &w->snapshot_root_rows, row, error))
            return FALSE;
        n->roots++;
        n->handles += r[i].kind == HL_ROOT_HANDLE;
    }
    return store_batch_flush(w, &w->snapshot_root_rows, error);
}

/* The references that are static fields: a row each (a few hundred per snapshot). */
static gboolean store_snapshot_write_statics(store_writer *w, GError **error)
{
    const store_open_snapshot *s = &w->snap;
    sqlite3_stmt *st = w->stmt[STORE_STMT_INSERT_SNAPSHOT_STATIC];

    for (guint i = 0; i < s->statics->len; i++) {
        const hl_snapshot_static *v = &g_array_index(s->statics, hl_snapshot_static, i);
        sqlite3_bind_int64(st, 1, s->start.snapshot);
        sqlite3_bind_int64(st, 2, (int64_t)v->object_id);
        sqlite3_bind_int64(st, 3, v->field);
        sqlite3_bind_int64(st, 4, v->static_id);
        if (!store_writer_step(w, STORE_STMT_INSERT_SNAPSHOT_STATIC, error))
            return FALSE;
    }
    return TRUE;
}

/* The strings' values: a row each, the characters kept as UTF-8 text (an unpaired surrogate, as
 * the first 64 code units can cut a pair, becomes U+FFFD); NULL when none were kept. */
static gboolean store_snapshot_write_strings(store_writer *w, GError **error)
{
    const store_open_snapshot *s = &w->snap;
    sqlite3_stmt *st = w->stmt[STORE_STMT_INSERT_SNAPSHOT_STRING];
    g_autoptr(GString) text = g_string_sized_new(HL_STRING_CHARS * 3);

    for (guint i = 0; i < s->strings->len; i++) {
        const hl_snapshot_string *v = &g_array_index(s->strings, hl_snapshot_string, i);
        uint32_t n = MIN(v->n_chars, (uint32_t)HL_STRING_CHARS);
        g_string_truncate(text, 0);
        for (uint32_t k = 0; k < n; k++) {
            gunichar c = v->chars[k];
            if (c >= 0xD800 && c < 0xDC00 && k + 1 < n && v->chars[k + 1] >= 0xDC00 &&
                v->chars[k + 1] < 0xE000)
                c = 0x10000 + ((c - 0xD800) << 10) + (v->chars[++k] - 0xDC00u);
            else if (c >= 0xD800 && c < 0xE000)
                c = 0xFFFD;
            g_string_append_unichar(text, c);
        }
        sqlite3_bind_int64(st, 1, s->start.snapshot);
        sqlite3_bind_int64(st, 2, (int64_t)v->object_id);
        sqlite3_bind_int64(st, 3, v->length);
        sqlite3_bind_int64(st, 4, (int64_t)v->hash);
        if (v->n_chars > 0 || v->length == 0)
            sqlite3_bind_text(st, 5, text->str, (int)text->len, SQLITE_TRANSIENT);
        else
            sqlite3_bind_null(st, 5);
        if (!store_writer_step(w, STORE_STMT_INSERT_SNAPSHOT_STRING, error))
            return FALSE;
    }
    return TRUE;
}

/* The collections' counts and capacities: a row each. */
static gboolean store_snapshot_write_collections(store_writer *w, GError **error)
{
    const store_open_snapshot *s = &w->snap;
    sqlite3_stmt *st = w->stmt[STORE_STMT_INSERT_SNAPSHOT_COLLECTION];

    for (guint i = 0; i < s->collections->len; i++) {
        const hl_snapshot_collection *v = &g_array_index(s->collections, hl_snapshot_collection, i);
        sqlite3_bind_int64(st, 1, s->start.snapshot);
        sqlite3_bind_int64(st, 2, (int64_t)v->object_id);
        sqlite3_bind_int64(st, 3, v->count);
        sqlite3_bind_int64(st, 4, v->capacity);
        if (!store_writer_step(w, STORE_STMT_INSERT_SNAPSHOT_COLLECTION, error))
            return FALSE;
    }
    return TRUE;
}

static gboolean store_snapshot_write_row(store_writer *w, const hl_snapshot_end *e,
                                         const store_snapshot_counts *n, GError **error)
{
    const hl_snapshot_start *s = &w->snap.start;
    sqlite3_stmt *st = w->stmt[STORE_STMT_INSERT_SNAPSHOT];

    sqlite3_bind_int64(st, 1, s->snapshot);
    sqlite3_bind_int64(st, 2, s->gc);
    if (s->trigger < G_N_ELEMENTS(store_trigger_names) && store_trigger_names[s->trigger] != NULL)
        sqlite3_bind_text(st, 3, store_trigger_names[s->trigger], -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(st, 3);
    sqlite3_bind_int64(st, 4, (int64_t)n->objects);
    sqlite3_bind_int64(st, 5, (int64_t)n->refs);
    sqlite3_bind_int64(st, 6, (int64_t)n->roots);
    sqlite3_bind_int64(st, 7, (int64_t)n->handles);
    sqlite3_bind_int64(st, 8, (int64_t)e->bytes);
    sqlite3_bind_int64(st, 9, (int64_t)e->model_missing);
    sqlite3_bind_int64(st, 10, (int64_t)e->model_extra);
    sqlite3_bind_int64(st, 11, (int64_t)n->frozen);
    sqlite3_bind_int64(st, 12, (int64_t)e->unresolved);
    sqlite3_bind_int64(st, 13, (int64_t)e->walk_ns);
    sqlite3_bind_int64(st, 14, (int64_t)e->model_unreported);
    if (w->snap.reason != NULL)
        sqlite3_bind_text(st, 15, w->snap.reason, -1, SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(st, 15);
    return store_writer_step(w, STORE_STMT_INSERT_SNAPSHOT, error);
}

gboolean store_snapshot_reason(store_writer *w, const store_record *rec,
                               GError **error G_GNUC_UNUSED)
{
    if (!w->snap.open || rec->u.snapshot_reason.h.snapshot != w->snap.start.snapshot) {
        w->writer_anomalies++;
        return TRUE;
    }
    g_free(w->snap.reason);
    w->snap.reason = g_strndup(rec->u.snapshot_reason.text.ptr, rec->u.snapshot_reason.text.len);
    return TRUE;
}

gboolean store_snapshot_end(store_writer *w, const store_record *rec, GError **error)
{
    const hl_snapshot_end *e = &rec->u.snapshot_end;
    store_open_snapshot *s = &w->snap;
    store_snapshot_counts n = {0};
    gboolean ok = FALSE;

    if (!s->open || e->snapshot != s->start.snapshot || e->gc != s->start.gc) {
        w->writer_anomalies++;
        return TRUE;
    }
    if (e->objects != s->objects->len || e->refs != s->refs->len || e->roots != s->roots->len) {
        /* records of it were lost on the way */
        store_snapshot_discard_open(w, "its records were dropped by the collector (the writer "
                                       "fell behind)");
        return TRUE;
    }
    store_snapshot_progress(w, TRUE);
    if (!store_snapshot_write_objects(w, &n, error) || !store_snapshot_write_roots(w, &n, error) ||
        !store_snapshot_write_statics(w, error) || !store_snapshot_write_strings(w, error) ||
        !store_snapshot_write_collections(w, error) ||
        !store_snapshot_write_row(w, e, &n, error))
        goto out;
    store_snapshot_done done = {.snapshot = s->start.snapshot, .gc = s->start.gc,
                                .trigger = s->start.trigger, .commands = s->start.commands,
                                .objects = n.objects};
    g_array_append_val(w->gc.snapshots, done);
    w->last_snapshot = s->start.snapshot;
    ok = TRUE;
out:
    /* On failure the ingest stops and the GC is rolled back: the snapshot counts as discarded. */
    if (!ok)
        w->snapshots_discarded++;
    store_snapshot_release(s);
    return ok;
}
