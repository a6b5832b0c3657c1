/* store_gc.c — applies one GC's records: GC_START, ALLOC_COUNTS*, GC_SURVIVORS*, DEATHS*,
 * PROMOTIONS*, GC_END — and the tail interval's ALLOC_COUNTS after the last GC.
 *
 *   GC_START      COMMIT what came before it; BEGIN; remember the start record (a GC applied
 *                 whole, its GC_END already come, joins the open transaction instead:
 *                 store_writer.c, "grouped commits")
 *   ALLOC_COUNTS  interval n's allocations, counted per (type, thread, heap): an alloc_counts row
 *                 per key (after the last GC_END: the tail interval, in the final transaction)
 *   SURVIVORS     the objects of interval n alive after GC n: packed, [id gap, type, size] in
 *                 the JSON text of an object_chunks row per (thread, heap, first generation),
 *                 [id gap, type] when the size is the type's first in the row (schema 11)
 *                 (no row each); the row's generation is their first generation change
 *                 (schema 10: before, each id was written again in generation_changes, about a
 *                 seventh of MidLife's file)
 *   DEATHS        older objects: their ids join the GC's deaths (nothing updated)
 *   PROMOTIONS    older objects: their ids join the GC's generation changes (nothing updated)
 *   DISCOVERED    objects first seen in a heap walk: packed like survivors, with their first
 *                 generation likewise
 *   SNAPSHOT_*    store_snapshot.c: a snapshot's rows, written inside this GC's transaction
 *   GC_END        the object chunks; the generation changes and the deaths (a generation_changes
 *                 row per generation, an object_deaths row, ids sorted, as JSON arrays of gaps);
 *                 the gcs and gc_generations rows; the counters; COMMIT; BEGIN (a GC applied
 *                 whole: committed with its group, when that is due);
 *                 then announce the snapshots that commit stored
 *
 * Nothing here is per allocation: an object that died in its first GC is one more in a count,
 * so the work of a GC follows its survivors, promotions and deaths, and is text appended to a
 * few rows per GC: a row per object (and an UPDATE per death) cost SQLite's per-row work, most
 * of the writer's time on a service. The rows of `objects` and each object's generation history
 * (object_generations, with until_gc) are built from them once, in one sorted pass, by the
 * first reader of the finished file (store_history.c); until then the views derive them.
 *
 * A snapshot lives and dies with its GC: rolled back with it, and committed only by its GC_END.
 * A record that names another GC than the open one is skipped and counted as a writer anomaly;
 * a GC_START that does not move forward is a corrupt stream.
 */
#include "store/store_internal.h"

#include <inttypes.h>

/* Is `gc` the open GC? Counts an anomaly if not. */
static gboolean store_gc_is_open(store_writer *w, uint32_t gc)
{
    if (w->gc.open && w->gc.start.gc == gc)
        return TRUE;
    w->writer_anomalies++;
    return FALSE;
}

/* Drops the open GC's generation changes, deaths and object chunks not written yet. */
static void store_gc_forget_changes(store_writer *w)
{
    for (int g = 0; g <= STORE_CHANGE_DEATHS; g++)
        w->change_count[g] = 0;
    for (int c = 0; c < w->chunks_open; c++)
        w->chunks[c].count = 0;
    w->chunks_open = 0;
    w->chunk_last = 0;
}

/* Writes generation `gen`'s pending changes as one generation_changes row of the open GC (or,
 * for STORE_CHANGE_DEATHS, its deaths as an object_deaths row): the ids sorted (they come in the
 * model's address order, in a few ascending runs: merged, store_sort_ids), written as the first
 * id and the gap to each next one. A gap is mostly 1 or a few digits where an id has up to 15
 * (discovered ids start at 2^48): about 2 bytes a change instead of 16, which halved the
 * writer's CPU time on a sampled recording. */
static gboolean store_gc_flush_changes_of(store_writer *w, uint32_t gen, GError **error)
{
    uint64_t *ids = w->change_ids[gen];
    uint32_t n = w->change_count[gen];
    GString *json = w->change_json;
    gboolean deaths = gen == STORE_CHANGE_DEATHS;
    store_stmt_id id = deaths ? STORE_STMT_INSERT_OBJECT_DEATHS : STORE_STMT_INSERT_GENERATION_CHANGES;
    sqlite3_stmt *st = w->stmt[id];
    int col = 1;
    gboolean ok;

    if (n == 0)
        return TRUE;
    store_sort_ids(ids, n, w->change_scratch);
    /* Written in place: room for every number and its comma, then cut to what was written. */
    g_string_set_size(json, 2 + (gsize)n * (STORE_U64_DIGITS + 1));
    char *p = json->str;
    *p++ = '[';
    p = store_put_u64(p, ids[0]);
    for (uint32_t i = 1; i < n; i++) {
        *p++ = ',';
        p = store_put_u64(p, ids[i] - ids[i - 1]);
    }
    *p++ = ']';
    g_string_truncate(json, (gsize)(p - json->str));
    sqlite3_bind_int64(st, col++, w->gc.start.gc);
    if (!deaths)
        sqlite3_bind_int64(st, col++, gen);
    sqlite3_bind_int64(st, col++, n);
    sqlite3_bind_text(st, col, json->str, (int)json->len, SQLITE_STATIC);
    ok = store_writer_step(w, id, error);
    sqlite3_clear_bindings(st); /* the text is about to change */
    w->change_count[gen] = 0;
    return ok;
}

/* Object `id` holds generation `gen` from the open GC on (a promotion: its first is its
 * chunk's); or, with STORE_CHANGE_DEATHS, died in it. */
static gboolean store_gc_note_change(store_writer *w, uint64_t id, uint32_t gen, GError **error)
{
    w->change_ids[gen][w->change_count[gen]] = id;
    if (++w->change_count[gen] < STORE_CHANGE_IDS)
        return TRUE;
    return store_gc_flush_changes_of(w, gen, error);
}

static gboolean store_gc_flush_changes(store_writer *w, GError **error)
{
    for (uint32_t g = 0; g <= STORE_CHANGE_DEATHS; g++)
        if (!store_gc_flush_changes_of(w, g, error))
            return FALSE;
    return TRUE;
}

/* Writes chunk `c` as an object_chunks row of the open GC and empties it. */
static gboolean store_gc_flush_chunk(store_writer *w, store_object_chunk *c, GError **error)
{
    sqlite3_stmt *st = w->stmt[STORE_STMT_INSERT_OBJECT_CHUNK];
    gboolean ok;

    if (c->count == 0)
        return TRUE;
    g_string_append_c(c->json, ']');
    sqlite3_bind_int64(st, 1, w->gc.start.gc);
    store_bind_optional(st, 2, c->os_tid, c->os_tid != 0);
    store_bind_optional(st, 3, c->heap, c->heap != HL_GEN_NONE);
    sqlite3_bind_int64(st, 4, c->generation);
    sqlite3_bind_int64(st, 5, c->count);
    sqlite3_bind_text(st, 6, c->json->str, (int)c->json->len, SQLITE_STATIC);
    ok = store_writer_step(w, STORE_STMT_INSERT_OBJECT_CHUNK, error);
    sqlite3_clear_bindings(st); /* the text is about to change */
    c->count = 0;
    return ok;
}

static gboolean store_gc_flush_chunks(store_writer *w, GError **error)
{
    for (int c = 0; c < w->chunks_open; c++)
        if (!store_gc_flush_chunk(w, &w->chunks[c], error))
            return FALSE;
    w->chunks_open = 0;
    w->chunk_last = 0;
    return TRUE;
}

/* The chunk of (thread, heap, first generation) in the open GC, opened if need be (one more
 * key than chunks open writes them all first, then starts again). NULL on a write error. */
static store_object_chunk *store_gc_chunk_for(store_writer *w, uint32_t os_tid, uint32_t heap,
                                              uint32_t generation, GError **error)
{
    store_object_chunk *c = &w->chunks[w->chunk_last];
    if (w->chunks_open > 0 && c->os_tid == os_tid && c->heap == heap &&
        c->generation == generation)
        return c;
    int i = 0;
    while (i < w->chunks_open &&
           (w->chunks[i].os_tid != os_tid || w->chunks[i].heap != heap ||
            w->chunks[i].generation != generation))
        i++;
    if (i == STORE_CHUNKS_OPEN) { /* more keys than chunks in one GC: start again */
        if (!store_gc_flush_chunks(w, error))
            return NULL;
        i = 0;
    }
    if (i == w->chunks_open) {
        w->chunks_open++;
        w->chunks[i].os_tid = os_tid;
        w->chunks[i].heap = heap;
        w->chunks[i].generation = generation;
        w->chunks[i].count = 0;
    }
    w->chunk_last = i;
    return &w->chunks[i];
}

/* The most text one object adds to a chunk: ",[gap,type,size]". */
#define STORE_CHUNK_OBJECT_TEXT (3 * STORE_U64_DIGITS + 5)

/* Appends one object to chunk `c`: "[gap,type_id,size]", the gap from the chunk's previous id
 * (the first one's is the id), written in place into the chunk's text (no GString call per
 * object); "[gap,type_id]" when its size is that of its type's first object in the chunk
 * (schema 11: every object of a class but an array or a string has its class's base size, and
 * the size was about 3 of the 11 characters of a MidLife survivor). The first size is the
 * chunk's own, not the recording's: it needs no state beyond the row, so it is written and
 * rolled back with its GC. An id not above the chunk's last (discovered objects after
 * survivors without a thread) starts a new chunk: ids ascend within one. */
static inline gboolean store_gc_chunk_append(store_writer *w, store_object_chunk *c, uint64_t id,
                                             uint32_t type_id, uint64_t size, GError **error)
{
    if (c->count > 0 && id <= c->last_id && !store_gc_flush_chunk(w, c, error))
        return FALSE;
    GString *json = c->json;
    if (c->count == 0) {
        json->len = 0;
        memset(c->size_types, 0xff, sizeof c->size_types); /* STORE_CHUNK_NO_TYPE */
    }
    /* Implied when the slot holds this type's first size and this is it; the first object of
     * a type (its slot free) writes its size and takes the slot; a type whose slot another
     * holds writes its size always. */
    uint32_t slot = type_id % STORE_CHUNK_SIZE_SLOTS;
    gboolean implied = FALSE;
    if (c->size_types[slot] == STORE_CHUNK_NO_TYPE) {
        c->size_types[slot] = type_id;
        c->first_sizes[slot] = size;
    } else if (c->size_types[slot] == type_id) {
        implied = c->first_sizes[slot] == size;
    }
    if (G_UNLIKELY(json->allocated_len <= json->len + STORE_CHUNK_OBJECT_TEXT)) {
        gsize len = json->len;
        g_string_set_size(json, len + STORE_CHUNK_OBJECT_TEXT); /* grows it */
        json->len = len;
    }
    char *p = json->str + json->len;
    *p++ = c->count == 0 ? '[' : ',';
    *p++ = '[';
    p = store_put_u64(p, c->count == 0 ? id : id - c->last_id);
    *p++ = ',';
    p = store_put_u64(p, type_id);
    if (!implied) {
        *p++ = ',';
        p = store_put_u64(p, size);
    }
    *p++ = ']';
    *p = '\0';
    json->len = (gsize)(p - json->str);
    c->last_id = id;
    if (++c->count < STORE_CHUNK_OBJECTS)
        return TRUE;
    return store_gc_flush_chunk(w, c, error);
}

/* Packs one object of the open GC (a survivor or a discovered object) into the chunk of its
 * (thread, heap, first generation). */
static gboolean store_gc_pack_object(store_writer *w, uint64_t id, uint32_t type_id,
                                     uint64_t size, uint32_t os_tid, uint32_t heap,
                                     uint32_t generation, GError **error)
{
    store_object_chunk *c = store_gc_chunk_for(w, os_tid, heap, generation, error);
    return c != NULL && store_gc_chunk_append(w, c, id, type_id, size, error);
}

gboolean store_gc_discard_open(store_writer *w, const char *why, GError **error)
{
    gboolean ok = FALSE;

    if (!w->gc.open) {
        ok = TRUE;
        goto out;
    }
    w->gc.open = FALSE;
    w->gcs_discarded_incomplete++;
    store_gc_forget_changes(w);
    w->snapshot_object_rows.rows = 0;
    g_string_truncate(w->snapshot_object_rows.text, 0);
    store_snapblock_reset(&w->snapblock);
    w->snapshot_root_rows.rows = 0;
    w->last_survivor = w->last_survivor_committed;
    store_alloc_keys_clear(&w->alloc_keys);
    /* Snapshots go with their GC: the open one, and those already written inside it. */
    store_snapshot_discard_open(w, why);
    store_snapshot_discard_written(w, why);
    w->last_snapshot = w->last_snapshot_committed;
    /* Rows inserted inside the GC vanish: forget which threads we believe exist. */
    g_hash_table_remove_all(w->threads_seen);
    w->last_tid_valid = FALSE;
    /* The GC is the whole transaction (store_gc_start): nothing to restore page by page, WAL
     * mode drops its pages and any frames it spilled. */
    if (!store_sql_exec(w->db, w->path, "ROLLBACK; BEGIN", error))
        goto out;
    store_writer_forget_written(w);
    if (w->gc.handles_changed && !store_handles_reload(w, error))
        goto out;
    /* Apply again the records that arrived inside the GC and were rolled back with it. */
    for (guint i = 0; i < w->replay->len; i++) {
        gsize len;
        const uint8_t *raw = g_bytes_get_data(g_ptr_array_index(w->replay, i), &len);
        hl_rec_header h;
        store_record rec;
        memcpy(&h, raw, sizeof h);
        if (!store_stream_decode(h.type, raw + sizeof h, h.size, &rec, error) ||
            !store_writer_apply(w, &rec, error))
            goto out;
    }
    ok = TRUE;
out:
    g_ptr_array_set_size(w->replay, 0);
    return ok;
}

gboolean store_gc_start(store_writer *w, const store_record *rec, GError **error)
{
    const hl_gc_start *s = &rec->u.gc_start;

    if (!store_gc_discard_open(w, "its GC was incomplete (its end never came)", error))
        return FALSE;
    if (w->any_gc && s->gc <= w->last_gc) {
        g_set_error(error, STORE_ERROR, STORE_ERROR_STREAM,
                    "GC %" PRIu32 " follows GC %" PRIu32 ": GCs out of order", s->gc, w->last_gc);
        return FALSE;
    }
    if (w->any_gc && s->gc != w->last_gc + 1)
        w->writer_anomalies++; /* a gap: the collector promised none */
    /* What arrived since the last GC (types, threads, handles, samples) is committed here, so
     * that the GC is a transaction of its own, rolled back whole if its end never comes. A
     * SAVEPOINT inside one open transaction did the same, but kept the page each GC changed
     * first (a tree's last leaf, each table's) in a sub-journal, a temporary file of its own:
     * 92 KB and a file created and removed per GC on Workload's stream. A GC applied whole
     * (its end had come: store_writer.c, "grouped commits") needs no rollback, and joins the
     * open transaction instead. */
    if (!w->applying_held && !store_writer_commit(w, error))
        return FALSE;
    w->gc.open = TRUE;
    w->gc.grouped = w->applying_held;
    w->gc.start = *s;
    w->gc.discovered = 0;
    w->gc.survivors = 0;
    w->gc.allocations = 0;
    w->gc.allocations_survived = 0;
    w->gc.handles_changed = FALSE;
    g_array_set_size(w->gc.snapshots, 0);
    return TRUE;
}

/* Heaps an allocation can be counted in (hl_alloc_count.heap, hl_survivor.heap). */
static gboolean store_gc_heap_valid(uint32_t heap)
{
    return heap == HL_GEN_0 || heap == HL_GEN_LOH || heap == HL_GEN_POH || heap == HL_GEN_NONGC ||
           heap == HL_GEN_NONE;
}

static uint32_t store_alloc_key_hash(store_alloc_key k)
{
    uint64_t h = ((uint64_t)k.type_id << 32 | k.os_tid) * 0x9E3779B97F4A7C15u;
    h ^= ((uint64_t)k.gc << 32 | k.heap) * 0xC2B2AE3D27D4EB4Fu;
    return (uint32_t)(h >> 32) ^ (uint32_t)h;
}

static gboolean store_alloc_key_equal(store_alloc_key a, store_alloc_key b)
{
    return a.gc == b.gc && a.type_id == b.type_id && a.os_tid == b.os_tid && a.heap == b.heap;
}

/* The slot of `key` in `slots`: where it is, or the first free one where it would go. */
static store_alloc_slot *store_alloc_keys_find(store_alloc_slot *slots, uint32_t capacity,
                                               uint32_t stamp, store_alloc_key key)
{
    for (uint32_t i = store_alloc_key_hash(key) & (capacity - 1);; i = (i + 1) & (capacity - 1))
        if (slots[i].stamp != stamp || store_alloc_key_equal(slots[i].key, key))
            return &slots[i];
}

gboolean store_alloc_keys_add(store_alloc_keys *set, store_alloc_key key)
{
    if ((set->count + 1) * 2 > set->capacity) { /* at most half full: short probes */
        uint32_t capacity = set->capacity ? set->capacity * 2 : 256;
        store_alloc_slot *slots = g_new0(store_alloc_slot, capacity);
        for (uint32_t i = 0; i < set->capacity; i++)
            if (set->slots[i].stamp == set->stamp)
                *store_alloc_keys_find(slots, capacity, 1, set->slots[i].key) =
                    (store_alloc_slot){set->slots[i].key, 1};
        g_free(set->slots);
        set->slots = slots;
        set->capacity = capacity;
        set->stamp = 1;
    }
    store_alloc_slot *slot = store_alloc_keys_find(set->slots, set->capacity, set->stamp, key);
    if (slot->stamp == set->stamp)
        return FALSE;
    *slot = (store_alloc_slot){key, set->stamp};
    set->count++;
    return TRUE;
}

void store_alloc_keys_clear(store_alloc_keys *set)
{
    set->count = 0;
    if (set->capacity == 0)
        return;
    if (++set->stamp == 0) { /* wrapped: old stamps could come back as current */
        memset(set->slots, 0, (size_t)set->capacity * sizeof *set->slots);
        set->stamp = 1;
    }
}

void store_alloc_keys_release(store_alloc_keys *set)
{
    g_free(set->slots);
    memset(set, 0, sizeof *set);
}

/* Binds an alloc_counts row from parameter `first` (1, or a later row's in the multi-row form). */
static void store_gc_bind_alloc_count(sqlite3_stmt *st, int first, uint32_t gc,
                                      const hl_alloc_count *a)
{
    sqlite3_bind_int64(st, first, gc);
    sqlite3_bind_int64(st, first + 1, a->type_id);
    store_bind_optional(st, first + 2, a->os_tid, a->os_tid != 0);
    store_bind_optional(st, first + 3, a->heap, a->heap != HL_GEN_NONE);
    sqlite3_bind_int64(st, first + 4, (int64_t)a->count);
    sqlite3_bind_int64(st, first + 5, (int64_t)a->bytes);
    sqlite3_bind_int64(st, first + 6, (int64_t)a->survived);
    sqlite3_bind_int64(st, first + 7, (int64_t)a->survived_bytes);
    sqlite3_bind_int64(st, first + 8, a->flags);
}

/* Allocations of one interval, counted per key: a row each. Inside GC n they are GC n's (rolled
 * back with it); with no GC open they are the tail interval's (last GC + 1), committed when the
 * writer finishes. The rows go out STORE_RECORD_ROWS at a time, the rest one by one. */
gboolean store_gc_alloc_counts(store_writer *w, const store_record *rec, GError **error)
{
    const hl_alloc_counts *h = &rec->u.alloc_counts.h;
    gboolean tail = !w->gc.open;
    hl_alloc_count rows[STORE_RECORD_ROWS];
    int n = 0;

    if (tail ? h->gc != w->last_gc + 1 : h->gc != w->gc.start.gc) {
        w->writer_anomalies++; /* not the open GC's interval, nor the tail */
        return TRUE;
    }
    for (uint32_t i = 0; i < h->count; i++) {
        hl_alloc_count a = store_record_alloc_count_at(rec, i);
        if (!store_gc_heap_valid(a.heap) || a.survived > a.count ||
            a.survived_bytes > a.bytes || (tail && a.survived != 0) ||
            !store_alloc_keys_add(&w->alloc_keys,
                                  (store_alloc_key){h->gc, a.type_id, a.os_tid, a.heap})) {
            w->writer_anomalies++;
            continue;
        }
        if (a.os_tid != 0 && !store_writer_note_thread(w, a.os_tid, error))
            return FALSE;
        rows[n++] = a;
        if (n == STORE_RECORD_ROWS) {
            sqlite3_stmt *st = w->stmt[STORE_STMT_INSERT_ALLOC_COUNTS_MANY];
            for (int r = 0; r < n; r++)
                store_gc_bind_alloc_count(st, 1 + r * 9, h->gc, &rows[r]);
            if (!store_writer_step(w, STORE_STMT_INSERT_ALLOC_COUNTS_MANY, error))
                return FALSE;
            n = 0;
        }
        if (tail) {
            w->allocations += a.count;
        } else {
            w->gc.allocations += a.count;
            w->gc.allocations_survived += a.survived;
        }
    }
    for (int r = 0; r < n; r++) {
        store_gc_bind_alloc_count(w->stmt[STORE_STMT_INSERT_ALLOC_COUNT], 1, h->gc, &rows[r]);
        if (!store_writer_step(w, STORE_STMT_INSERT_ALLOC_COUNT, error))
            return FALSE;
    }
    return TRUE;
}

/* The objects of interval n alive after GC n, in ascending id order: packed (an objects row
 * each once expanded), and the generation it holds from n. Ids must lie in the interval (at or above the first id after
 * the last stored GC, below this GC's first_id_after) and above every survivor stored. */
gboolean store_gc_survivors(store_writer *w, const store_record *rec, GError **error)
{
    const hl_gc_survivors *h = &rec->u.survivors.h;

    if (!store_gc_is_open(w, h->gc))
        return TRUE;
    for (uint32_t i = 0; i < h->count; i++) {
        hl_survivor v = store_record_survivor_at(rec, i);
        if ((w->last_survivor != 0 && v.id <= w->last_survivor) || v.id == 0 ||
            v.id < w->interval_first_id || v.id >= w->gc.start.first_id_after ||
            v.id >= HL_DISCOVERED_ID_BASE || v.generation > HL_GEN_NONGC ||
            !store_gc_heap_valid(v.heap)) {
            w->writer_anomalies++;
            continue;
        }
        if (v.os_tid != 0 && !store_writer_note_thread(w, v.os_tid, error))
            return FALSE;
        if (!store_gc_pack_object(w, v.id, v.type_id, v.size, v.os_tid, v.heap, v.generation,
                                  error))
            return FALSE;
        w->last_survivor = v.id;
        w->gc.survivors++;
    }
    return TRUE;
}

/* Reads one varint of a GC_SURVIVORS_PACKED payload at *p, before `end`: FALSE if it is cut or
 * longer than 10 bytes. The one-byte case inline: most gaps, heaps and small types. */
static inline gboolean store_gc_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
    const uint8_t *q = *p;
    if (G_LIKELY(q < end && *q < 0x80)) {
        *p = q + 1;
        *v = *q;
        return TRUE;
    }
    return hl_varint_get(p, end, v) != 0;
}

/* GC_SURVIVORS_PACKED: the same objects as GC_SURVIVORS, checked the same way, and packed the
 * same way, so the rows are the same byte for byte (test store.survivors_packed). The chunk
 * of a run's (thread, heap) is looked up once per key, not once per object. The record's own
 * form (varints within the payload, thread, heap and type in range, the first object with its
 * key, no byte left over) is checked here as each object is read, not in a pass of its own
 * before: a corrupt record (STORE_ERROR_STREAM, the message store_stream_survivors_packed_check
 * gives) ends the stream inside this GC, which is then rolled back whole with what was applied
 * of it; a held GC, applied into its group's transaction, had its records checked whole when
 * they were held (store_writer_feed). */
gboolean store_gc_survivors_packed(store_writer *w, const store_record *rec, GError **error)
{
    const hl_gc_survivors *h = &rec->u.survivors_packed.h;
    const uint8_t *p = rec->u.survivors_packed.items, *end = rec->u.survivors_packed.end;
    uint64_t id = 0, first = w->interval_first_id, after = w->gc.start.first_id_after;
    uint32_t os_tid = 0, heap = HL_GEN_NONE;
    gboolean key_ok = FALSE, tid_noted = FALSE;
    store_object_chunk *c = NULL;

    if (!store_gc_is_open(w, h->gc)) /* skipped, but a corrupt record is still the end */
        return store_stream_survivors_packed_check(rec, error);
    if (after > HL_DISCOVERED_ID_BASE)
        after = HL_DISCOVERED_ID_BASE;
    for (uint32_t i = 0; i < h->count; i++) {
        uint64_t v, type_id, size;
        if (!store_gc_varint(&p, end, &v))
            goto corrupt;
        if (v & 1) {
            uint64_t tid, hp;
            if (!store_gc_varint(&p, end, &tid) || !store_gc_varint(&p, end, &hp) ||
                tid > UINT32_MAX || hp > UINT8_MAX)
                goto corrupt;
            os_tid = (uint32_t)tid;
            heap = (uint32_t)hp;
            key_ok = store_gc_heap_valid(heap);
            tid_noted = FALSE;
            c = NULL;
        } else if (i == 0) {
            goto corrupt;
        }
        if (!store_gc_varint(&p, end, &type_id) || !store_gc_varint(&p, end, &size) ||
            type_id > UINT32_MAX)
            goto corrupt;
        uint64_t gap = v >> 4;
        uint32_t gen = (uint32_t)(v >> 1) & 7;
        id += gap;
        if (gap == 0 || id < gap /* past 64 bits */ || id <= w->last_survivor || id < first ||
            id >= after || gen > HL_GEN_NONGC || !key_ok) {
            w->writer_anomalies++;
            continue;
        }
        if (!tid_noted) {
            if (os_tid != 0 && !store_writer_note_thread(w, os_tid, error))
                return FALSE;
            tid_noted = TRUE;
        }
        /* Once per key and generation: nothing else opens or writes chunks until the next
         * (a flush of every chunk for a new key keeps the one it returns) */
        if (c == NULL || c->generation != gen)
            c = store_gc_chunk_for(w, os_tid, heap, gen, error);
        if (c == NULL || !store_gc_chunk_append(w, c, id, (uint32_t)type_id, size, error))
            return FALSE;
        w->last_survivor = id;
        w->gc.survivors++;
    }
    if (p == end)
        return TRUE;
corrupt:
    /* the walk says what is wrong, in the words it always used */
    if (store_stream_survivors_packed_check(rec, error))
        g_set_error(error, STORE_ERROR, STORE_ERROR_STREAM,
                    "GC_SURVIVORS_PACKED record: malformed"); /* not reached: both walk alike */
    return FALSE;
}

/* Older objects that died in `gc`: their ids join the GC's deaths (objects.died_gc once
 * expanded; their last generation_changes entry ends there). */
gboolean store_gc_deaths(store_writer *w, const store_record *rec, GError **error)
{
    const hl_gc_deaths *h = &rec->u.deaths.h;

    if (!store_gc_is_open(w, h->gc))
        return TRUE;
    /* What store_gc_note_change does for each id, a copy at a time: the record holds them as
     * the list does (uint64_t each, store_record_death_at); an id each was 2% of the writer's
     * CPU on MidLife (5.3M deaths). */
    const uint32_t d = STORE_CHANGE_DEATHS;
    for (uint32_t i = 0; i < h->count;) {
        uint32_t take = MIN(STORE_CHANGE_IDS - w->change_count[d], h->count - i);
        memcpy(w->change_ids[d] + w->change_count[d], rec->u.deaths.ids + (size_t)i * sizeof(uint64_t),
               (size_t)take * sizeof(uint64_t));
        w->change_count[d] += take;
        i += take;
        if (w->change_count[d] == STORE_CHANGE_IDS && !store_gc_flush_changes_of(w, d, error))
            return FALSE;
    }
    return TRUE;
}

/* Older objects now in another generation: a number each in the GC's generation changes. One
 * for an object without an objects row (the collector dropped its record) is kept there and
 * ignored by object_generations, which joins objects. */
gboolean store_gc_promotions(store_writer *w, const store_record *rec, GError **error)
{
    const hl_gc_promotions *h = &rec->u.promotions.h;

    if (!store_gc_is_open(w, h->gc))
        return TRUE;
    for (uint32_t i = 0; i < h->count; i++) {
        hl_promotion p = store_record_promotion_at(rec, i);
        if (p.generation > HL_GEN_NONGC)
            w->writer_anomalies++;
        else if (!store_gc_note_change(w, p.id, p.generation, error))
            return FALSE;
    }
    return TRUE;
}

/* Objects the runtime's heap walk found that the collector never saw allocated: stored as
 * objects alive after this GC in their generation (thread unknown, heap from the generation). */
gboolean store_gc_discovered(store_writer *w, const store_record *rec, GError **error)
{
    const hl_discovered_head *h = &rec->u.discovered.h;

    if (!store_gc_is_open(w, h->gc))
        return TRUE;
    for (uint32_t i = 0; i < h->count; i++) {
        hl_discovered d = store_record_discovered_at(rec, i);
        if (d.id < HL_DISCOVERED_ID_BASE || d.generation > HL_GEN_NONGC) {
            w->writer_anomalies++;
            continue;
        }
        uint32_t heap = d.generation <= HL_GEN_2 ? HL_GEN_0 : d.generation;
        if (!store_gc_pack_object(w, d.id, d.type_id, d.size, 0, heap, d.generation, error))
            return FALSE;
        w->gc.discovered++;
    }
    return TRUE;
}

/* The runtime's gc_reason values by the names of its GCStart event's GCReason map (14..17 have
 * none there: named after gc.h). */
static const char *const store_gc_reason_names[] = {
    "AllocSmall", "Induced", "LowMemory", "Empty", "AllocLarge", "OutOfSpaceSOH",
    "OutOfSpaceLOH", "InducedNotForced", "Internal", "InducedLowMemory", "InducedCompacting",
    "LowMemoryHost", "PMFullGC", "LowMemoryHostBlocking", "BGCTuningSOH", "BGCTuningLOH",
    "BGCStepping", "InducedAggressive",
};

/* gcs.reason: the runtime's own reason when its GCStart event came, else what the profiler
 * was told (`Induced`, or `unknown` for COR_PRF_GC_OTHER). NULL: a number without a name (the
 * caller stores it as `reason N`). */
static const char *store_gc_reason_name(const hl_gc_start *s)
{
    if (!(s->flags & HL_GC_START_REASON_KNOWN))
        return s->reason == 1 ? "Induced" : "unknown";
    if (s->gc_reason < G_N_ELEMENTS(store_gc_reason_names))
        return store_gc_reason_names[s->gc_reason];
    return NULL;
}

static gboolean store_gc_insert_row(store_writer *w, const hl_gc_end *e, GError **error)
{
    const hl_gc_start *s = &w->gc.start;
    sqlite3_stmt *st = w->stmt[STORE_STMT_INSERT_GC];
    gboolean induced = s->reason == 1; /* as the profiler was told: what snapshots follow */
    const char *reason = store_gc_reason_name(s);
    char unnamed[32];
    if (!reason) {
        g_snprintf(unnamed, sizeof unnamed, "reason %u", s->gc_reason);
        reason = unnamed;
    }
    int64_t pause = s->suspend_mono_ns != 0 && e->resume_mono_ns >= s->suspend_mono_ns
                        ? (int64_t)(e->resume_mono_ns - s->suspend_mono_ns)
                        : (int64_t)(e->end_mono_ns - s->start_mono_ns);

    sqlite3_bind_int64(st, 1, s->gc);
    sqlite3_bind_int64(st, 2, s->generation);
    sqlite3_bind_text(st, 3, reason, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int64(st, 4, induced);
    sqlite3_bind_int64(st, 5, (e->flags & HL_GC_FLAG_COMPACTING) != 0);
    sqlite3_bind_int64(st, 6, (int64_t)s->start_mono_ns);
    sqlite3_bind_int64(st, 7, (int64_t)e->end_mono_ns);
    sqlite3_bind_int64(st, 8, pause);
    /* A sampled GC followed by handles alone has no ranges: moved bytes unknown, survived
     * bytes the runtime's promoted bytes when it sent them (HL_GC_FLAG_NO_RANGES). */
    gboolean no_ranges = (e->flags & HL_GC_FLAG_NO_RANGES) != 0;
    store_bind_optional(st, 9, e->survived_bytes,
                        !no_ranges || (e->flags & HL_GC_FLAG_SURVIVED_PROMOTED));
    store_bind_optional(st, 10, e->moved_bytes, !no_ranges);
    sqlite3_bind_int64(st, 11, (int64_t)s->first_id_after);
    sqlite3_bind_int64(st, 12, (int64_t)e->objects_live);
    sqlite3_bind_int64(st, 13, (e->flags & HL_GC_FLAG_INCOMPLETE) != 0);
    sqlite3_bind_int64(st, 14, (int64_t)e->roots);
    sqlite3_bind_int64(st, 15, (int64_t)e->pinned_roots);
    /* NULL without a census (full mode): 0 would read as a free walk. census_objects only when
     * the census counted the interval exactly: what says that its counts are whole. */
    store_bind_optional(st, 16, e->census_ns, e->census_ns != 0);
    store_bind_optional(st, 17, e->census_objects, (e->flags & HL_GC_FLAG_CENSUS) != 0);
    /* Which snapshot a GC went without, and why (NULL: none was due or it was taken): what the
     * counters snapshots_skipped_queued and snapshots_skipped count, GC by GC. */
    const char *skipped = (e->flags & HL_GC_FLAG_SNAPSHOT_SKIPPED)    ? STORE_SNAPSHOT_SKIPPED_HELD
                          : (e->flags & HL_GC_FLAG_SNAPSHOT_GIVEN_UP) ? STORE_SNAPSHOT_SKIPPED_DETACH
                                                                      : NULL;
    if (skipped)
        sqlite3_bind_text(st, 18, skipped, -1, SQLITE_STATIC);
    else
        sqlite3_bind_null(st, 18);
    if (!store_writer_step(w, STORE_STMT_INSERT_GC, error))
        return FALSE;
    st = w->stmt[STORE_STMT_INSERT_GC_GENERATION];
    for (int g = 0; g < HL_GEN_COUNT_GC; g++) {
        sqlite3_bind_int64(st, 1, s->gc);
        sqlite3_bind_int64(st, 2, g);
        sqlite3_bind_int64(st, 3, (int64_t)s->size_before[g]);
        sqlite3_bind_int64(st, 4, (int64_t)e->size_after[g]);
        if (!store_writer_step(w, STORE_STMT_INSERT_GC_GENERATION, error))
            return FALSE;
    }
    return TRUE;
}

gboolean store_gc_end(store_writer *w, const store_record *rec, GError **error)
{
    const hl_gc_end *e = &rec->u.gc_end;

    if (!store_gc_is_open(w, e->gc))
        return TRUE;
    store_snapshot_discard_open(w, "its end never came (the collector dropped records of it: "
                                   "the writer fell behind)");
    /* A snapshot the collector dropped whole (the writer never saw it) shows in its counter. */
    if (w->on_snapshot_lost != NULL && w->have_counters &&
        e->counters.snapshots_dropped > w->counters.snapshots_dropped)
        w->on_snapshot_lost(w->on_snapshot_ctx, 0, e->gc, HL_SNAPSHOT_REQUESTED,
                            "the collector dropped all its records (the writer fell behind)");
    w->counters = e->counters;
    w->have_counters = TRUE;
    if (e->flags & HL_GC_FLAG_SNAPSHOT_SKIPPED)
        w->snapshots_skipped_queued++;
    if (!store_gc_flush_chunks(w, error) || !store_gc_flush_changes(w, error) ||
        !store_gc_insert_row(w, e, error) ||
        !store_writer_write_counters(w, error))
        return FALSE;
    if (!w->gc.grouped && !store_writer_commit(w, error))
        return FALSE;
    w->objects_written += w->gc.discovered + w->gc.survivors;
    w->allocations += w->gc.allocations;
    w->allocations_survived += w->gc.allocations_survived;
    w->last_survivor_committed = w->last_survivor;
    w->interval_first_id = w->gc.start.first_id_after;
    store_alloc_keys_clear(&w->alloc_keys);
    w->gc.open = FALSE;
    w->last_gc = e->gc;
    w->any_gc = TRUE;
    w->gcs_written++;
    g_ptr_array_set_size(w->replay, 0);
    w->last_snapshot_committed = w->last_snapshot;
    w->snapshots_written += w->gc.snapshots->len;
    for (guint i = 0; i < w->gc.snapshots->len && w->on_snapshot != NULL; i++)
        w->on_snapshot(w->on_snapshot_ctx, &g_array_index(w->gc.snapshots, store_snapshot_done, i));
    g_array_set_size(w->gc.snapshots, 0);
    if (w->gc.grouped) /* no snapshot in it: nobody waits for its commit */
        return store_writer_group_add(w, error);
    store_writer_checkpoint(w); /* after the answers: the data is stored once committed */
    return TRUE;
}
