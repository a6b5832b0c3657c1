/* store_history.c — the objects rows and each object's generation history, built once after
 * the recording.
 *
 * While recording, a GC's generation changes (an object's first generation when it survives its
 * first GC or is discovered, and every promotion) are appended as JSON arrays of ascending ids
 * (the first id, then the gap to each next one; schema 3 wrote the ids themselves), a
 * generation_changes row per (GC, generation) and 8192 ids: no row per change, nothing updated
 * (store_gc.c). The views derive the history from them. The writer finishes without building
 * more (the recording's end waits for nothing that is not data); the first command that reads
 * the finished file builds object_generation_rows from them, once, in the file (query_db_open
 * calls store_history_build_file): one row per generation an object held, with its end
 * (until_gc: the object's next change, else its death). Since schema 5 the survivors and the
 * deaths are packed too (object_chunks, object_deaths) and the same pass expands them into the
 * table `objects`:
 *
 *   read every change in arrival order  (GC order; within a GC the order the records came),
 *   then every death (schema 5; before: the objects rows' died_gc), as a change to "dead"
 *   read the objects                    (schema 5: the chunks' JSON; before: the objects table)
 *   empty the packed tables             (their pages are reused by the rows written below)
 *   sort both by object id, stably      (radix: an object's changes stay in GC order; the
 *                                        objects of one GC by merging its chunks, each an
 *                                        ascending run, unless there are more than 256)
 *   merge them by id                    (a change of an object without a row is dropped, as the
 *                                        view's JOIN does; the first death ends the last one)
 *                                       schema 5: insert each objects row, in id order (appends),
 *                                       with its first generation row as two columns
 *                                       (first_generation, next_gc): most objects never change
 *                                       generation, and so need no row of their own
 *   bucket the rows by from_gc          (counting sort: ids stay ascending within a GC)
 *   insert in key order (from_gc, object_id), 256 rows per statement: appends only, and no
 *   other index to build; swap the views
 *
 * The first read of a finished file does less (store_history_summarize_file): the same reading,
 * sorting and merge, but only the sums of the rows it would write — object_spans, a row per
 * (type, generation, first_gc, from_gc, until_gc) with its objects and bytes, and object_totals
 * — and the packed tables stay (what survivors, report and info ask needs no object by id).
 * In a sampled recording that follows its samples the spans also add up the objects' weights
 * (each followed sample's object weighs its sample's est_count until the first snapshot at or
 * after its interval, `reset`, a key column): the estimates of survivors, the report and the
 * view survivors_by_generation then read a few rows instead of joining every object with the
 * samples (7.7 s of CPU per `survivors` on a sampled MidLife before), and the view is swapped
 * for one over the spans.
 * The whole build runs for the first command that reads objects one by one (a snapshot's), and
 * writes the sums too when the file has none.
 *
 * all in one transaction: a reader killed meanwhile leaves the packed tables and the derived
 * views, and a second reader that waited for the first finds nothing left to build. A count
 * or a JSON text that does not add up fails the build (one line naming the row, nothing
 * written); no size read from the file is allocated before the items it counts are parsed.
 * Memory: 28 bytes per change at most (12 per change, 12 more while sorting them, before the
 * objects are read; 16 per row, for the rows after an object's first: not in the summary), 30
 * per object (and 30 per object of one GC while sorting them, of all of them when the GCs' ids
 * interleave), 128 to 256 per span (64 bytes, the table at most half full), 24 per followed
 * sample, and 64 MiB of SQLite pages.
 */
#include "store/store_internal.h"

#include <inttypes.h>
#include <math.h>

/* One change: object `id` holds generation (gc_gen & 7) from GC (gc_gen >> 3) on. Packed to
 * 12 bytes: the changes of a big recording are tens of millions. */
typedef struct __attribute__((packed)) store_change {
    uint64_t id;
    uint32_t gc_gen;
} store_change;

#define STORE_HISTORY_DEAD 7 /* a change's generation bits: the object died in that GC */

/* One object read from the file: its objects row but died_gc (the deaths are changes). */
typedef store_object_row store_history_object;

#define STORE_HISTORY_ROWS 256
#define STORE_HISTORY_SPAN_COLUMNS 10  /* object_spans */
#define STORE_HISTORY_COLUMNS 10        /* the widest table written */
#define STORE_HISTORY_WAIT_MS 5000
#define STORE_HISTORY_OPEN 0x1fffffffu /* until_gc (died_gc) NULL */
/* At most this many items are reserved from a count read in the file; more grow as parsed. */
#define STORE_HISTORY_RESERVE (1u << 22)

/* One row of object_generation_rows, placed in its GC's bucket. */
typedef struct store_history_row {
    uint64_t id;
    uint32_t gen_until; /* generation << 29 | until_gc, or STORE_HISTORY_OPEN */
    uint32_t from_gen;  /* from_gc << 3 | generation */
} store_history_row;

/* One row of object_spans: the objects of a type, allocated in the interval of first_gc, that
 * held `generation` from from_gc until until_gc (STORE_HISTORY_OPEN: NULL), added up; in a
 * sampled recording that follows its samples, also their weights (est_count, est_bytes: a
 * followed sample's object weighs its sample's est_count, any other 1), which hold until GC
 * `reset` (STORE_HISTORY_OPEN: NULL, never), when a snapshot named every live object. */
typedef struct store_history_span {
    uint32_t type_id, first_gc, from_gc, until_gc, reset;
    uint32_t generation; /* HL_GEN_NONE: an empty slot */
    gboolean weighted;   /* holds a followed sample's object: est_count and est_bytes written */
    uint64_t count, bytes;
    double est_count, est_bytes;
} store_history_span;

/* A followed sample's object (alloc_samples with heap 0 and object_id): its weight, until GC
 * `reset` (STORE_HISTORY_OPEN: never). */
typedef struct store_history_weight {
    uint64_t id;
    double est_count;
    uint32_t reset;
} store_history_weight;

/* The spans, hashed by their key (open addressing, linear probing, at most half full). */
typedef struct store_history_spans {
    store_history_span *slots;
    size_t cap, n;
    gboolean overflow; /* a sum of sizes above INT64_MAX: damage */
} store_history_spans;

/* Rows of one table inserted STORE_HISTORY_ROWS at a time (the rest one by one). A column
 * whose bit is set in `reals` holds doubles (their bits: store_history_real; STORE_NULL is
 * NULL there too). */
typedef struct store_history_batch {
    sqlite3_stmt *many, *one;
    int columns, pending;
    uint32_t reals;
    int64_t rows[STORE_HISTORY_ROWS][STORE_HISTORY_COLUMNS];
} store_history_batch;

/* The first size of a type in the chunk being parsed (schema 11: a later object of the type
 * with that size has none). A slot is the chunk's when its stamp is. */
typedef struct store_history_size {
    uint32_t type_id, stamp;
    uint64_t size;
} store_history_size;

typedef struct store_history {
    sqlite3 *db;
    const char *path;
    store_progress_fn progress;
    void *progress_ctx;
    uint64_t rows_written, rows_total;
    store_change *changes;
    size_t n, cap;
    store_history_object *objects;
    size_t objects_n, objects_cap;
    store_history_batch generations; /* object_id, generation, from_gc, until_gc */
    store_history_batch span_rows;   /* object_spans */
    gboolean gaps;   /* ids after a row's first are gaps (schema 4 on) */
    gboolean packed; /* survivors and deaths packed (schema 5 on) */
    gboolean chunk_generations; /* object_chunks.generation holds objects' first generations
                                 * (schema 10 on) */
    /* the chunk's first sizes by type: open addressing, at most half full, stamped per chunk
     * (no clearing between chunks); allocated and freed by store_history_read */
    store_history_size *sizes;
    uint32_t sizes_mask, sizes_used, sizes_stamp;
    gboolean summary_only; /* object_spans and object_totals alone: the packed rows stay */
    gboolean spans_wanted; /* write object_spans and object_totals (absent yet) */
    /* store_history_read reads only its tables from .. to - 1 (0 generation_changes,
     * 1 object_deaths, 2 object_chunks) when `to` is not 0 (the objects in memory) */
    size_t tables_from, tables_to;
    store_history_spans spans;
    /* Sampled recordings that follow their samples: the objects' weights, by id; `weights_ok`
     * FALSE when they cannot be summed (not such a recording, or a sample that does not weigh
     * one object once): then the spans hold none and the readers weigh the objects. */
    store_history_weight *weights;
    size_t weights_n;
    gboolean followed, weights_ok;
    uint64_t total_objects, total_bytes, total_alive;
    int64_t gc_limit; /* GC numbers above it are damage: the write's buckets are one per GC */
    /* the merge (store_history_next_object): the next object and change, and the generation
     * rows after objects' first, in buckets by from_gc: rows[start[g] .. fill[g]) */
    size_t merge_object, merge_change, merge_weight;
    size_t *start, *fill;
    store_history_row *rows;
} store_history;

static void store_history_damaged(GError **error, const char *path, const char *why)
{
    g_set_error(error, STORE_ERROR, STORE_ERROR_DAMAGED,
                "%s is damaged (%s); its generation history was not built", path, why);
}

/* Why a packed row is not what the writer writes (store_history_parse_row). */
#define STORE_HISTORY_BAD_NUMBER "has a GC, generation or count that is not a number in range"
#define STORE_HISTORY_BAD_CHUNK_NUMBER \
    "has a GC, thread, heap, generation or count that is not a number in range"
#define STORE_HISTORY_BAD_COUNT "holds another number of ids than its count"

static gboolean store_history_corrupt(store_history *h, const char *table, int64_t rowid,
                                      const char *why, GError **error)
{
    g_autofree char *text = g_strdup_printf("%s row %" PRId64 " %s", table, rowid, why);
    store_history_damaged(error, h->path, text);
    return FALSE;
}

/* Room for one more item in a growing array of `cap` items (doubled when full). */
static void *store_history_grow(void *items, size_t n, size_t *cap, size_t size)
{
    if (n < *cap)
        return items;
    *cap = *cap < 4096 ? 4096 : *cap * 2;
    return g_realloc_n(items, *cap, size);
}

static void store_history_add_change(store_history *h, uint64_t id, uint32_t gc, uint32_t gen)
{
    h->changes = store_history_grow(h->changes, h->n, &h->cap, sizeof *h->changes);
    h->changes[h->n].id = id;
    h->changes[h->n].gc_gen = gc << 3 | gen;
    h->n++;
}

/* Reads one unsigned decimal number at *p (before end); FALSE if there is none or it does not
 * fit in 64 bits. */
static gboolean store_history_number(const unsigned char **p, const unsigned char *end,
                                     uint64_t *out)
{
    const unsigned char *s = *p;
    uint64_t v = 0;
    while (s < end && *s >= '0' && *s <= '9') {
        if (v > (UINT64_MAX - 9) / 10)
            return FALSE;
        v = v * 10 + (uint64_t)(*s++ - '0');
    }
    if (s == *p)
        return FALSE;
    *p = s;
    *out = v;
    return TRUE;
}

/* Appends the ids of one generation_changes or object_deaths row ("[5,1,3]" for 5, 6, 9 as
 * store_gc.c writes it; "[5,6,9]" in schema 3) as changes to `gen`; their number must be
 * `count`. NULL, or why the row is damaged. */
static const char *store_history_parse(store_history *h, uint32_t gc, uint32_t gen,
                                       int64_t count, const unsigned char *p, int len,
                                       const char *not_array)
{
    const unsigned char *end = p + len;
    int64_t n = 0;
    if (len < 2 || *p != '[' || end[-1] != ']')
        return not_array;
    p++;
    end--;
    uint64_t last = 0;
    while (p < end) {
        uint64_t id;
        if (!store_history_number(&p, end, &id) || (p < end && *p++ != ','))
            return not_array;
        if (h->gaps) {
            id += last;
            last = id;
        }
        store_history_add_change(h, id, gc, gen);
        n++;
    }
    return n == count ? NULL : STORE_HISTORY_BAD_COUNT;
}

/* The slot of `type_id` among the chunk's first sizes: its own (stamp current), or the free
 * one where it goes. */
static store_history_size *store_history_size_slot(store_history *h, uint32_t type_id)
{
    uint32_t i = (type_id * 2654435761u) & h->sizes_mask;
    while (h->sizes[i].stamp == h->sizes_stamp && h->sizes[i].type_id != type_id)
        i = (i + 1) & h->sizes_mask;
    return &h->sizes[i];
}

/* Forgets the first sizes of the chunk before (a new stamp; the table cleared once the stamps
 * wrap). */
static void store_history_sizes_next_chunk(store_history *h)
{
    if (h->sizes == NULL) {
        h->sizes_mask = 63;
        h->sizes = g_new0(store_history_size, h->sizes_mask + 1);
    }
    if (++h->sizes_stamp == 0) {
        memset(h->sizes, 0, sizeof *h->sizes * (h->sizes_mask + 1));
        h->sizes_stamp = 1;
    }
    h->sizes_used = 0;
}

/* Notes `size` as the chunk's first of `type_id` (not there yet: `slot` is free), doubling the
 * table when it is half full. */
static void store_history_size_add(store_history *h, store_history_size *slot, uint32_t type_id,
                                   uint64_t size)
{
    *slot = (store_history_size){.type_id = type_id, .stamp = h->sizes_stamp, .size = size};
    if (++h->sizes_used * 2 <= h->sizes_mask + 1)
        return;
    store_history_size *old = h->sizes;
    uint32_t old_n = h->sizes_mask + 1;
    h->sizes_mask = old_n * 2 - 1;
    h->sizes = g_new0(store_history_size, old_n * 2);
    for (uint32_t i = 0; i < old_n; i++)
        if (old[i].stamp == h->sizes_stamp)
            *store_history_size_slot(h, old[i].type_id) = old[i];
    g_free(old);
}

/* Appends the objects of one object_chunks row: "[[5,17,24],[1,17,32],[2,17]]" is object 5
 * (type 17, 24 bytes), object 6 (type 17, 32 bytes) and object 8 (type 17, 24 bytes: no size
 * is the size of its type's first object in the row, schema 11; files before have a size
 * everywhere); their number must be `count`. NULL, or why the row is damaged (an object
 * without a size whose type has no object before it in the row, too). */
static const char *store_history_parse_chunk(store_history *h, uint32_t gc, int64_t thread,
                                             int64_t heap, int64_t generation, int64_t count,
                                             const unsigned char *p, int len,
                                             const char *not_array)
{
    const unsigned char *end = p + len;
    int64_t n = 0;
    uint64_t last = 0;
    if (thread < 0 || thread > UINT32_MAX || heap < 0 ||
        (heap > HL_GEN_NONGC && heap != HL_GEN_NONE) || generation < 0 ||
        (generation > HL_GEN_NONGC && generation != HL_GEN_NONE))
        return STORE_HISTORY_BAD_CHUNK_NUMBER;
    if (len < 2 || *p != '[' || end[-1] != ']')
        return not_array;
    p++;
    end--;
    store_history_sizes_next_chunk(h);
    while (p < end) {
        uint64_t v[3];
        if (*p++ != '[')
            return not_array;
        /* [gap,type] or [gap,type,size] */
        int k = 0;
        for (; k < 3; k++) {
            if (!store_history_number(&p, end, &v[k]) || p == end)
                return not_array;
            char sep = (char)*p++;
            if (sep == ']')
                break;
            if (sep != ',' || k == 2)
                return not_array;
        }
        if (k == 0 || (p < end && *p++ != ',') || v[1] > UINT32_MAX ||
            (n > 0 && v[0] == 0) || last + v[0] < last)
            return not_array;
        store_history_size *first = store_history_size_slot(h, (uint32_t)v[1]);
        gboolean known = first->stamp == h->sizes_stamp;
        if (k == 1) { /* no size: its type's first */
            if (!known)
                return not_array;
            v[2] = first->size;
        } else if (v[2] > INT64_MAX) {
            return not_array;
        } else if (!known) {
            store_history_size_add(h, first, (uint32_t)v[1], v[2]);
        }
        last += v[0];
        h->objects = store_history_grow(h->objects, h->objects_n, &h->objects_cap,
                                        sizeof *h->objects);
        h->objects[h->objects_n++] = (store_history_object){
            .id = last,
            .size = v[2],
            .type_id = (uint32_t)v[1],
            .os_tid = (uint32_t)thread,
            .first_gc = gc,
            .heap = (uint8_t)heap,
            .first_generation = (uint8_t)generation,
        };
        n++;
    }
    return n == count ? NULL : STORE_HISTORY_BAD_COUNT;
}

/* sum(count) of `table`, capped: the room reserved before parsing. */
static size_t store_history_reserve(store_history *h, const char *table)
{
    g_autofree char *sql = g_strdup_printf("SELECT coalesce(sum(count), 0) FROM %s", table);
    int64_t n = store_db_pragma_int(h->db, sql);
    return n < 0 ? 1 : (size_t)MIN((uint64_t)n, STORE_HISTORY_RESERVE) + 1;
}

/* Parses one row of store_history_read's query `t` (0 generation_changes, 1 object_deaths,
 * 2 object_chunks). NULL, or why the row is damaged. */
static const char *store_history_parse_row(store_history *h, size_t t, sqlite3_stmt *st,
                                           const char *not_array)
{
    int text_col = t == 2 ? 5 : 4;
    const unsigned char *text = sqlite3_column_text(st, text_col);
    int len = sqlite3_column_bytes(st, text_col);
    int64_t gc = sqlite3_column_int64(st, 1), count = sqlite3_column_int64(st, text_col - 1);
    const char *bad_number = t == 2 ? STORE_HISTORY_BAD_CHUNK_NUMBER : STORE_HISTORY_BAD_NUMBER;

    if (sqlite3_column_type(st, 1) != SQLITE_INTEGER ||
        sqlite3_column_type(st, text_col - 1) != SQLITE_INTEGER || gc < 0 || gc > h->gc_limit)
        return bad_number;
    if (text == NULL)
        return not_array;
    if (t == 2) {
        int thread_type = sqlite3_column_type(st, 2), heap_type = sqlite3_column_type(st, 3),
            gen_type = sqlite3_column_type(st, 6);
        /* generation: NULL in files before schema 10 (the query selects it so), and only there */
        if ((thread_type != SQLITE_NULL && thread_type != SQLITE_INTEGER) ||
            (heap_type != SQLITE_NULL && heap_type != SQLITE_INTEGER) ||
            gen_type != (h->chunk_generations ? SQLITE_INTEGER : SQLITE_NULL))
            return bad_number;
        return store_history_parse_chunk(
            h, (uint32_t)gc, thread_type == SQLITE_NULL ? 0 : sqlite3_column_int64(st, 2),
            heap_type == SQLITE_NULL ? HL_GEN_NONE : sqlite3_column_int64(st, 3),
            gen_type == SQLITE_NULL ? HL_GEN_NONE : sqlite3_column_int64(st, 6), count, text,
            len, not_array);
    }
    int64_t gen = sqlite3_column_int64(st, 2);
    if (sqlite3_column_type(st, 2) != SQLITE_INTEGER || gen < 0 ||
        (gen > HL_GEN_NONGC && gen != STORE_HISTORY_DEAD))
        return bad_number;
    return store_history_parse(h, (uint32_t)gc, (uint32_t)gen, count, text, len, not_array);
}

/* Every id takes at least two characters of its row's text ("1," or "1]"), so counts summing to
 * more than half the text (or a negative one) are a damaged file: found before anything is
 * reserved for them. */
static gboolean store_history_counts_check(store_history *h, const char *table,
                                           const char *text_column, GError **error)
{
    g_autofree char *sql = g_strdup_printf(
        "SELECT coalesce(sum(count), 0), coalesce(min(count), 0), "
        "coalesce(sum(length(%s)), 0) FROM %s", text_column, table);
    sqlite3_stmt *st = NULL;
    gboolean ok = FALSE;
    if (sqlite3_prepare_v2(h->db, sql, -1, &st, NULL) != SQLITE_OK ||
        sqlite3_step(st) != SQLITE_ROW) {
        store_sql_fail(h->db, h->path, table, error);
        goto out;
    }
    int64_t total = sqlite3_column_int64(st, 0), least = sqlite3_column_int64(st, 1),
            text = sqlite3_column_int64(st, 2);
    if (least < 0 || total < 0 || total > text / 2) {
        g_autofree char *why = g_strdup_printf("%s counts more ids than it holds", table);
        store_history_damaged(error, h->path, why);
        goto out;
    }
    ok = TRUE;
out:
    sqlite3_finalize(st);
    return ok;
}

/* Reads every row of generation_changes, and of object_deaths and object_chunks (schema 5) or
 * the ids and deaths of the objects table (before), into h. */
static gboolean store_history_read(store_history *h, GError **error)
{
    static const struct {
        const char *table, *text_column, *select, *not_array;
    } reads[] = {
        {"generation_changes", "ids",
         "SELECT rowid, gc, generation, count, ids FROM generation_changes ORDER BY rowid",
         "is not a JSON array of ids"},
        {"object_deaths", "ids",
         "SELECT rowid, gc, " G_STRINGIFY(STORE_HISTORY_DEAD) ", count, ids FROM object_deaths "
         "ORDER BY rowid",
         "is not a JSON array of ids"},
        {"object_chunks", "objects",
         "SELECT rowid, gc, thread, heap, count, objects, generation FROM object_chunks "
         "ORDER BY rowid",
         "is not a JSON array of [id gap, type_id, size] or [id gap, type_id]"},
    };
    static const char chunks_before_10[] =
        "SELECT rowid, gc, thread, heap, count, objects, NULL FROM object_chunks ORDER BY rowid";
    size_t tables = h->tables_to ? h->tables_to : h->packed ? G_N_ELEMENTS(reads) : 1;
    sqlite3_stmt *st = NULL;
    gboolean ok = FALSE;
    int rc = SQLITE_DONE;

    size_t first = h->tables_from;
    for (size_t t = first; t < tables; t++)
        if (!store_history_counts_check(h, reads[t].table, reads[t].text_column, error))
            return FALSE;
    /* A GC takes far more than 16 bytes of the file (its gcs row alone), so no GC number a
     * recording can hold makes the buckets (16 bytes per GC) larger than the file. */
    h->gc_limit = MIN(store_db_pragma_int(h->db, "PRAGMA page_count") *
                          store_db_pragma_int(h->db, "PRAGMA page_size") / 16,
                      (int64_t)(1u << 29) - 1);
    h->gaps = store_db_pragma_int(h->db, "PRAGMA user_version") >= 4;
    /* By the column, not the version: a file of schema 10 that a test or a user marked older
     * still holds the first generations there only. */
    h->chunk_generations =
        h->packed && store_db_pragma_int(h->db, "SELECT count(*) FROM pragma_table_info("
                                                "'object_chunks') WHERE name = 'generation'") > 0;
    h->cap = first > 0 ? 1 : store_history_reserve(h, "generation_changes");
    h->objects_cap = 4096;
    if (h->packed) {
        if (first <= 1 && tables > 1)
            h->cap += store_history_reserve(h, "object_deaths");
        if (tables > 2)
            h->objects_cap = store_history_reserve(h, "object_chunks");
    }
    h->changes = g_new(store_change, h->cap);
    h->objects = g_new(store_history_object, h->objects_cap);
    for (size_t t = first; t < tables; t++) {
        /* Schema 5: every change is read before the objects; sorted now, its sort's buffer
         * is freed before the objects fill theirs (peak memory). */
        if (t == 2)
            store_radix_sort(h->changes, h->n, sizeof *h->changes,
                             G_STRUCT_OFFSET(store_change, id));
        const char *select = t == 2 && !h->chunk_generations ? chunks_before_10 : reads[t].select;
        if (sqlite3_prepare_v2(h->db, select, -1, &st, NULL) != SQLITE_OK) {
            store_sql_fail(h->db, h->path, reads[t].table, error);
            goto out;
        }
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
            const char *why = store_history_parse_row(h, t, st, reads[t].not_array);
            if (why) {
                store_history_corrupt(h, reads[t].table, sqlite3_column_int64(st, 0), why, error);
                goto out;
            }
        }
        if (rc != SQLITE_DONE) {
            store_sql_fail(h->db, h->path, reads[t].table, error);
            goto out;
        }
        sqlite3_finalize(st);
        st = NULL;
    }
    g_clear_pointer(&h->sizes, g_free);
    if (tables == 2) /* the deaths alone: sorted as before the objects */
        store_radix_sort(h->changes, h->n, sizeof *h->changes, G_STRUCT_OFFSET(store_change, id));
    if (!h->packed) {
        /* Schema 4 and before: the objects exist as rows, their deaths in died_gc. */
        if (sqlite3_prepare_v2(h->db, "SELECT id, died_gc FROM objects ORDER BY id", -1, &st,
                               NULL) != SQLITE_OK) {
            store_sql_fail(h->db, h->path, "reading objects", error);
            goto out;
        }
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
            uint64_t id = (uint64_t)sqlite3_column_int64(st, 0);
            int64_t died = sqlite3_column_int64(st, 1);
            h->objects = store_history_grow(h->objects, h->objects_n, &h->objects_cap,
                                            sizeof *h->objects);
            h->objects[h->objects_n++] = (store_history_object){
                .id = id, .first_generation = HL_GEN_NONE};
            if (sqlite3_column_type(st, 1) != SQLITE_NULL && died >= 0 && died < (1 << 29))
                store_history_add_change(h, id, (uint32_t)died, STORE_HISTORY_DEAD);
        }
        if (rc != SQLITE_DONE) {
            store_sql_fail(h->db, h->path, "reading objects", error);
            goto out;
        }
    }
    ok = TRUE;
out:
    sqlite3_finalize(st);
    g_clear_pointer(&h->sizes, g_free);
    return ok;
}

static gboolean store_history_step(store_history *h, sqlite3_stmt *st, GError **error)
{
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE) {
        store_sql_set_error(h->db, h->path, rc, sqlite3_errmsg(h->db), error);
        return FALSE;
    }
    return TRUE;
}

/* Writes the pending rows of `b`: one full statement, or row by row for the last few. */
static gboolean store_history_flush(store_history *h, store_history_batch *b, GError **error)
{
    gboolean many = b->pending == STORE_HISTORY_ROWS;
    sqlite3_stmt *st = many ? b->many : b->one;

    for (int r = 0; r < b->pending; r++) {
        int base = many ? r * b->columns : 0;
        for (int c = 0; c < b->columns; c++) {
            int64_t v = b->rows[r][c];
            if (v == STORE_NULL) {
                sqlite3_bind_null(st, base + c + 1);
            } else if (b->reals & 1u << c) {
                double d;
                memcpy(&d, &v, sizeof d);
                sqlite3_bind_double(st, base + c + 1, d);
            } else {
                sqlite3_bind_int64(st, base + c + 1, v);
            }
        }
        if (!many && !store_history_step(h, st, error))
            return FALSE;
    }
    if (many && !store_history_step(h, st, error))
        return FALSE;
    h->rows_written += (uint64_t)b->pending;
    b->pending = 0;
    if (h->progress != NULL)
        h->progress(h->progress_ctx, h->rows_written, h->rows_total);
    return TRUE;
}

/* Buffers one row of `b` (its columns' values, STORE_NULL for NULL). */
static gboolean store_history_add(store_history *h, store_history_batch *b, const int64_t *row,
                                  GError **error)
{
    memcpy(b->rows[b->pending], row, sizeof *row * (size_t)b->columns);
    if (++b->pending < STORE_HISTORY_ROWS)
        return TRUE;
    return store_history_flush(h, b, error);
}

/* The objects row of `o` (schema 5), with its death and its first generation (`gen`, held
 * until `next`, the GC of its next change; HL_GEN_NONE: none held from first_gc, all its
 * generations are rows): STORE_HISTORY_COLUMNS values, STORE_NULL for NULL. */
static void store_history_object_row(const store_history_object *o, uint32_t died, uint32_t gen,
                                     uint32_t next, int64_t *row)
{
    const int64_t values[STORE_HISTORY_COLUMNS] = {
        (int64_t)o->id,
        o->type_id,
        (int64_t)o->size,
        o->os_tid != 0 ? (int64_t)o->os_tid : STORE_NULL,
        o->heap != HL_GEN_NONE ? o->heap : STORE_NULL,
        o->first_gc,
        died == STORE_HISTORY_OPEN ? STORE_NULL : (int64_t)died,
        gen != HL_GEN_NONE ? (int64_t)gen : STORE_NULL,
        gen != HL_GEN_NONE && next != STORE_HISTORY_OPEN ? (int64_t)next : STORE_NULL,
    };
    memcpy(row, values, sizeof values);
}

static gboolean store_history_prepare(store_history *h, store_history_batch *b, const char *table,
                                      const char *columns, int n, GError **error);

/* A double as a batch's column holds it (store_history_batch.reals). */
static int64_t store_history_real(double d)
{
    int64_t v;
    memcpy(&v, &d, sizeof v);
    return v;
}

static size_t store_history_span_slot(const store_history_spans *sp, const store_history_span *k)
{
    uint64_t x = ((uint64_t)k->type_id << 32 | k->first_gc) * 0x9e3779b97f4a7c15ull;
    x ^= ((uint64_t)k->from_gc << 32 | k->until_gc) * 0xc2b2ae3d27d4eb4full;
    x ^= ((uint64_t)k->generation << 32 | k->reset) * 0x165667b19e3779f9ull;
    x ^= x >> 31;
    size_t i = (size_t)x & (sp->cap - 1);
    while (sp->slots[i].generation != HL_GEN_NONE &&
           (sp->slots[i].type_id != k->type_id || sp->slots[i].first_gc != k->first_gc ||
            sp->slots[i].from_gc != k->from_gc || sp->slots[i].until_gc != k->until_gc ||
            sp->slots[i].generation != k->generation || sp->slots[i].reset != k->reset))
        i = (i + 1) & (sp->cap - 1);
    return i;
}

/* Adds one object of `size` bytes to its span (one row of object_generations); `w` is its
 * weight (NULL: it weighs 1, for ever). */
static void store_history_span_add(store_history_spans *sp, uint32_t type_id, uint32_t first_gc,
                                   uint32_t generation, uint32_t from, uint32_t until,
                                   uint64_t size, const store_history_weight *w)
{
    if (sp->n * 2 >= sp->cap) {
        store_history_spans bigger = {.cap = sp->cap ? sp->cap * 2 : 1024, .n = sp->n,
                                      .overflow = sp->overflow};
        bigger.slots = g_new(store_history_span, bigger.cap);
        for (size_t i = 0; i < bigger.cap; i++)
            bigger.slots[i].generation = HL_GEN_NONE;
        for (size_t i = 0; i < sp->cap; i++)
            if (sp->slots[i].generation != HL_GEN_NONE)
                bigger.slots[store_history_span_slot(&bigger, &sp->slots[i])] = sp->slots[i];
        g_free(sp->slots);
        *sp = bigger;
    }
    store_history_span key = {.type_id = type_id, .first_gc = first_gc, .from_gc = from,
                              .until_gc = until, .generation = generation,
                              .reset = w ? w->reset : STORE_HISTORY_OPEN};
    store_history_span *slot = &sp->slots[store_history_span_slot(sp, &key)];
    if (slot->generation == HL_GEN_NONE) {
        *slot = key;
        sp->n++;
    }
    slot->count++;
    slot->bytes += size;
    /* The estimates' sum, as the readers' total() over the objects: w * size per object. */
    double weight = w ? w->est_count : 1.0;
    slot->weighted |= w != NULL;
    slot->est_count += weight;
    slot->est_bytes += weight * (double)size;
    if (slot->bytes > INT64_MAX || slot->bytes < size)
        sp->overflow = TRUE;
}

/* Writes object_spans (in the hash's order: the readers group and sort) and the one row of
 * object_totals. */
static gboolean store_history_spans_write(store_history *h, GError **error)
{
    store_history_spans *sp = &h->spans;
    if (sp->overflow || h->total_bytes > INT64_MAX) {
        store_history_damaged(error, h->path, "object_chunks holds sizes that add up to more than "
                                              "a recording can hold");
        return FALSE;
    }
    size_t n = 0;
    for (size_t i = 0; i < sp->cap; i++)
        if (sp->slots[i].generation != HL_GEN_NONE)
            sp->slots[n++] = sp->slots[i];
    sp->n = n;
    if (!store_sql_exec(h->db, h->path, store_schema_object_spans, error) ||
        !store_history_prepare(h, &h->span_rows, "object_spans",
                               "type_id, generation, first_gc, from_gc, until_gc, count, bytes, "
                               "reset, est_count, est_bytes",
                               STORE_HISTORY_SPAN_COLUMNS, error))
        return FALSE;
    h->span_rows.reals = 1u << 8 | 1u << 9;
    for (size_t i = 0; i < n; i++) {
        const store_history_span *x = &sp->slots[i];
        const int64_t row[STORE_HISTORY_SPAN_COLUMNS] = {
            x->type_id, x->generation, x->first_gc, x->from_gc,
            x->until_gc == STORE_HISTORY_OPEN ? STORE_NULL : (int64_t)x->until_gc,
            (int64_t)x->count, (int64_t)x->bytes,
            x->reset == STORE_HISTORY_OPEN ? STORE_NULL : (int64_t)x->reset,
            x->weighted ? store_history_real(x->est_count) : STORE_NULL,
            x->weighted ? store_history_real(x->est_bytes) : STORE_NULL};
        if (!store_history_add(h, &h->span_rows, row, error))
            return FALSE;
    }
    if (!store_history_flush(h, &h->span_rows, error))
        return FALSE;
    g_autofree char *totals = g_strdup_printf(
        "INSERT INTO object_totals (objects, bytes, alive, weights) VALUES (%" PRIu64 ", %" PRIu64
        ", %" PRIu64 ", %d)", h->total_objects, h->total_bytes, h->total_alive, h->weights_ok);
    /* The view reads the spans now, unless the estimates it gives need weights they lack. */
    return store_sql_exec(h->db, h->path, totals, error) &&
           (h->followed && !h->weights_ok
                ? TRUE
                : store_sql_exec(h->db, h->path, store_schema_spans_views, error));
}

/* The merge of the changes sorted by id with the objects (sorted by id), one object at a time:
 * from h->merge_object (and the changes from h->merge_change) on, the next object; its
 * generation rows after its first go into their GC's bucket (rows[fill[from_gc]++]), its spans
 * and totals are added, and with `row` (schema 5, the whole build) its objects row is made
 * there. FALSE when no object is left. */
static gboolean store_history_next_object(store_history *h, int64_t *row)
{
    store_history_object *objects = h->objects;
    const store_change *changes = h->changes;
    size_t o = h->merge_object, i = h->merge_change;
    for (; o < h->objects_n && o > 0 && objects[o].id == objects[o - 1].id; o++)
        ; /* the same id twice (never sent): the first one holds */
    if (o >= h->objects_n) {
        h->merge_object = o;
        return FALSE;
    }
    uint64_t id = objects[o].id;
    while (h->merge_weight < h->weights_n && h->weights[h->merge_weight].id < id)
        h->merge_weight++; /* a sample whose object has no row */
    const store_history_weight *w =
        h->merge_weight < h->weights_n && h->weights[h->merge_weight].id == id
            ? &h->weights[h->merge_weight]
            : NULL;
    while (i < h->n && changes[i].id < id)
        i++; /* no objects row: the collector dropped its record */
    size_t first = i, live_end = i; /* its changes before its first death */
    uint32_t died = STORE_HISTORY_OPEN;
    for (; i < h->n && changes[i].id == id; i++) {
        if (died != STORE_HISTORY_OPEN)
            continue;
        if ((changes[i].gc_gen & 7) == STORE_HISTORY_DEAD)
            died = changes[i].gc_gen >> 3;
        else
            live_end = i + 1;
    }
    /* Schema 5: the first row goes into the objects row when it starts at first_gc (it always
     * does: a survivor's and a discovered object's first generation come with it), so most
     * objects, which never change generation, need no row of their own. */
    gboolean inline_first = h->packed;
    uint32_t first_gen = HL_GEN_NONE, first_next = STORE_HISTORY_OPEN;
    /* Schema 10: the first change is the chunk's generation, before the recorded ones (which
     * are later GCs': promotions). k walks that sequence: `chunk_first` more than the changes. */
    size_t chunk_first = objects[o].first_generation != HL_GEN_NONE;
    uint32_t first_gc_gen = objects[o].first_gc << 3 | objects[o].first_generation;
    size_t changes_n = chunk_first + (live_end - first);
#define STORE_HISTORY_GC_GEN(k) \
    ((k) < chunk_first ? first_gc_gen : changes[first + (k) - chunk_first].gc_gen)
    for (size_t k = 0; k < changes_n; k++) {
        uint32_t gc_gen = STORE_HISTORY_GC_GEN(k);
        uint32_t from = gc_gen >> 3;
        gboolean last = k + 1 == changes_n;
        if (!last && STORE_HISTORY_GC_GEN(k + 1) >> 3 == from)
            continue; /* two changes in one GC (never sent): the later one holds */
        uint32_t until = last ? died : STORE_HISTORY_GC_GEN(k + 1) >> 3;
        if (h->spans_wanted)
            store_history_span_add(&h->spans, objects[o].type_id, objects[o].first_gc,
                                   gc_gen & 7, from, until, objects[o].size, w);
        if (h->summary_only)
            continue;
        if (inline_first) {
            inline_first = FALSE;
            if (from == objects[o].first_gc) {
                first_gen = gc_gen & 7;
                first_next = last ? STORE_HISTORY_OPEN : until;
                continue;
            }
        }
        h->rows[h->fill[from]++] = (store_history_row){
            .id = id,
            .gen_until = (gc_gen & 7) << 29 | until,
            .from_gen = gc_gen,
        };
    }
#undef STORE_HISTORY_GC_GEN
    h->total_objects++;
    h->total_bytes += objects[o].size;
    if (h->total_bytes > INT64_MAX)
        h->spans.overflow = TRUE;
    h->total_alive += died == STORE_HISTORY_OPEN;
    if (row)
        store_history_object_row(&objects[o], died, first_gen, first_next, row);
    h->merge_object = o + 1;
    h->merge_change = i;
    return TRUE;
}

/* ---- the objects rows, as an eponymous virtual table --------------------------------------
 * heaplens_history_objects: the rows store_history_next_object makes, in id order, for one
 * INSERT INTO objects ... SELECT: a single statement keeps the table's cursor at its end and
 * appends each row, where a statement per 256 rows bound each value and sought the end again
 * (the build's writing took about a third less CPU on a 5M-object recording). Registered on
 * the build's connection only while store_history_objects_insert runs. */

typedef struct store_history_vcursor {
    sqlite3_vtab_cursor base;
    store_history *h;
    gboolean eof;
    int64_t row[STORE_HISTORY_COLUMNS];
} store_history_vcursor;

static int store_history_vconnect(sqlite3 *db, void *aux, int argc, const char *const *argv,
                                  sqlite3_vtab **vtab, char **err)
{
    (void)argc, (void)argv, (void)err;
    return store_vtab_declare(db, aux,
                              "CREATE TABLE x(id, type_id, size, thread, heap, first_gc, died_gc,"
                              " first_generation, next_gc)",
                              vtab);
}

static int store_history_vbest_index(sqlite3_vtab *vtab, sqlite3_index_info *info)
{
    (void)vtab;
    info->estimatedCost = 1e6;
    return SQLITE_OK;
}

static int store_history_vopen(sqlite3_vtab *vtab, sqlite3_vtab_cursor **cursor)
{
    store_history_vcursor *c = sqlite3_malloc(sizeof *c);
    if (!c)
        return SQLITE_NOMEM;
    memset(c, 0, sizeof *c);
    c->h = ((store_vtab *)vtab)->aux;
    *cursor = &c->base;
    return SQLITE_OK;
}

static int store_history_vclose(sqlite3_vtab_cursor *cursor)
{
    sqlite3_free(cursor);
    return SQLITE_OK;
}

static int store_history_vnext(sqlite3_vtab_cursor *cursor)
{
    store_history_vcursor *c = (store_history_vcursor *)cursor;
    store_history *h = c->h;
    c->eof = !store_history_next_object(h, c->row);
    if (!c->eof && (++h->rows_written & 0xffff) == 0 && h->progress != NULL)
        h->progress(h->progress_ctx, h->rows_written, h->rows_total);
    return SQLITE_OK;
}

static int store_history_vfilter(sqlite3_vtab_cursor *cursor, int idx, const char *idx_str,
                                 int argc, sqlite3_value **argv)
{
    (void)idx, (void)idx_str, (void)argc, (void)argv;
    return store_history_vnext(cursor); /* once: the merge is not restarted */
}

static int store_history_veof(sqlite3_vtab_cursor *cursor)
{
    return ((store_history_vcursor *)cursor)->eof;
}

static int store_history_vcolumn(sqlite3_vtab_cursor *cursor, sqlite3_context *ctx, int column)
{
    int64_t v = ((store_history_vcursor *)cursor)->row[column];
    if (v == STORE_NULL)
        sqlite3_result_null(ctx);
    else
        sqlite3_result_int64(ctx, v);
    return SQLITE_OK;
}

static int store_history_vrowid(sqlite3_vtab_cursor *cursor, sqlite3_int64 *rowid)
{
    *rowid = ((store_history_vcursor *)cursor)->row[0];
    return SQLITE_OK;
}

static const sqlite3_module store_history_objects_module = {
    .iVersion = 0,
    .xCreate = NULL, /* eponymous only */
    .xConnect = store_history_vconnect,
    .xBestIndex = store_history_vbest_index,
    .xDisconnect = store_vtab_disconnect,
    .xDestroy = store_vtab_disconnect,
    .xOpen = store_history_vopen,
    .xClose = store_history_vclose,
    .xFilter = store_history_vfilter,
    .xNext = store_history_vnext,
    .xEof = store_history_veof,
    .xColumn = store_history_vcolumn,
    .xRowid = store_history_vrowid,
};

/* Every object through store_history_next_object, its objects row inserted. */
static gboolean store_history_objects_insert(store_history *h, GError **error)
{
    sqlite3_stmt *ins = NULL;
    gboolean ok = FALSE;
    if (sqlite3_create_module_v2(h->db, "heaplens_history_objects", &store_history_objects_module,
                                 h, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(h->db,
                           "INSERT INTO objects (id, type_id, size, thread, heap, first_gc,"
                           " died_gc, first_generation, next_gc) SELECT * FROM"
                           " heaplens_history_objects",
                           -1, &ins, NULL) != SQLITE_OK) {
        store_sql_fail(h->db, h->path, "prepare", error);
        goto out;
    }
    ok = store_history_step(h, ins, error);
out:
    sqlite3_finalize(ins);
    sqlite3_create_module_v2(h->db, "heaplens_history_objects", NULL, NULL, NULL);
    return ok;
}

/* Walks the changes sorted by id along the objects (sorted by id) and computes each row's end
 * (store_history_next_object); schema 5: inserts each objects row with its death, in id order
 * (appends). Puts the generation rows of the objects that exist into buckets by from_gc (a
 * counting sort, stable: ids stay ascending in each), then writes them in key order (from_gc,
 * object_id): every insert appends. */
static gboolean store_history_write(store_history *h, GError **error)
{
    uint32_t max_gc = 0;

    for (size_t k = 0; k < h->n; k++)
        max_gc = MAX(max_gc, h->changes[k].gc_gen >> 3);
    h->start = g_new0(size_t, (size_t)max_gc + 2);
    h->fill = g_new0(size_t, (size_t)max_gc + 2);
    if (!h->summary_only) {
        for (size_t k = 0; k < h->n; k++)
            h->start[(h->changes[k].gc_gen >> 3) + 1]++;
        for (uint32_t g = 1; g <= max_gc + 1; g++)
            h->start[g] += h->start[g - 1];
        memcpy(h->fill, h->start, sizeof *h->fill * ((size_t)max_gc + 2));
        h->rows = g_new(store_history_row, h->n + 1);
    }
    h->merge_object = h->merge_change = h->merge_weight = 0;
    if (h->packed && !h->summary_only) {
        h->rows_total = h->objects_n;
        if (!store_history_objects_insert(h, error))
            return FALSE;
    } else {
        while (store_history_next_object(h, NULL))
            ;
    }
    if (h->spans_wanted && !store_history_spans_write(h, error))
        return FALSE;
    if (h->summary_only)
        return TRUE;
    for (uint32_t g = 0; g <= max_gc; g++)
        h->rows_total += h->fill[g] - h->start[g];
    for (uint32_t g = 0; g <= max_gc; g++) {
        for (size_t k = h->start[g]; k < h->fill[g]; k++) {
            const store_history_row *x = &h->rows[k];
            uint32_t until = x->gen_until & STORE_HISTORY_OPEN;
            const int64_t row[4] = {
                (int64_t)x->id,
                x->gen_until >> 29,
                g,
                until == STORE_HISTORY_OPEN ? STORE_NULL : (int64_t)until,
            };
            if (!store_history_add(h, &h->generations, row, error))
                return FALSE;
        }
    }
    return store_history_flush(h, &h->generations, error);
}

/* Prepares `b`'s statements, INSERT INTO `table` (`columns`, n of them) VALUES ..., for
 * STORE_HISTORY_ROWS rows and for one. */
static gboolean store_history_prepare(store_history *h, store_history_batch *b, const char *table,
                                      const char *columns, int n, GError **error)
{
    g_autoptr(GString) row = g_string_new("(?");
    for (int c = 1; c < n; c++)
        g_string_append(row, ",?");
    g_string_append_c(row, ')');
    g_autoptr(GString) sql = g_string_new(NULL);
    g_string_printf(sql, "INSERT INTO %s (%s) VALUES ", table, columns);
    gsize head = sql->len;
    for (int r = 0; r < STORE_HISTORY_ROWS; r++) {
        if (r > 0)
            g_string_append_c(sql, ',');
        g_string_append(sql, row->str);
    }
    b->columns = n;
    if (sqlite3_prepare_v2(h->db, sql->str, -1, &b->many, NULL) != SQLITE_OK)
        return store_sql_fail(h->db, h->path, "prepare", error);
    g_string_truncate(sql, head);
    g_string_append(sql, row->str);
    if (sqlite3_prepare_v2(h->db, sql->str, -1, &b->one, NULL) != SQLITE_OK)
        return store_sql_fail(h->db, h->path, "prepare", error);
    return TRUE;
}

/* Reads the weights of a sampled recording that follows its samples (store.h
 * STORE_SURVIVOR_SAMPLE_ON): each sample of a small object that survived a GC gives its object
 * the sample's est_count until the first snapshot at or after the sample's interval. Sets
 * h->followed, and h->weights_ok when every such sample weighs one object of its own with a
 * positive number: else (never written so) the spans get no weights and the readers weigh the
 * objects themselves, as before. */
static gboolean store_history_weights_read(store_history *h, GError **error)
{
    sqlite3_stmt *st = NULL;
    int rc = SQLITE_DONE;
    size_t cap = 0;

    h->followed = store_db_pragma_int(h->db, "SELECT instr(coalesce((SELECT flags FROM run "
                                             "WHERE id = 1), ''), 'samples-followed') > 0") == 1;
    if (!h->followed)
        return TRUE;
    if (sqlite3_prepare_v2(h->db,
                           "SELECT s.object_id, s.est_count,"
                           "       (SELECT min(sn.gc) FROM snapshots AS sn WHERE sn.gc >= s.gc)"
                           "  FROM alloc_samples AS s"
                           " WHERE s.heap = 0 AND s.object_id IS NOT NULL ORDER BY s.object_id",
                           -1, &st, NULL) != SQLITE_OK)
        return store_sql_fail(h->db, h->path, "alloc_samples", error);
    h->weights_ok = TRUE;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(st, 0), reset = sqlite3_column_int64(st, 2);
        double est = sqlite3_column_double(st, 1);
        int est_type = sqlite3_column_type(st, 1);
        gboolean reset_null = sqlite3_column_type(st, 2) == SQLITE_NULL;
        if (sqlite3_column_type(st, 0) != SQLITE_INTEGER ||
            (est_type != SQLITE_INTEGER && est_type != SQLITE_FLOAT) || !(est > 0.0) ||
            !isfinite(est) || (!reset_null && (reset < 0 || reset >= STORE_HISTORY_OPEN)) ||
            (h->weights_n > 0 && h->weights[h->weights_n - 1].id == (uint64_t)id)) {
            h->weights_ok = FALSE;
            break;
        }
        h->weights = store_history_grow(h->weights, h->weights_n, &cap, sizeof *h->weights);
        h->weights[h->weights_n++] = (store_history_weight){
            .id = (uint64_t)id,
            .est_count = est,
            .reset = reset_null ? STORE_HISTORY_OPEN : (uint32_t)reset,
        };
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE)
        return store_sql_fail(h->db, h->path, "alloc_samples", error);
    if (!h->weights_ok)
        h->weights_n = 0;
    return TRUE;
}

/* Sorts the objects by id, stably. The chunks are read in GC order, and in a full recording
 * every object a GC found has a larger id than those the GCs before it found (ids grow with
 * allocations): sorting each GC's objects alone then sorts them all, with a buffer the size of
 * one GC's objects instead of all of them (30 bytes per object less at the peak). Otherwise
 * (sampled and attach recordings mix allocation ids with discovered ones) the whole is sorted
 * too. */
#define STORE_HISTORY_MERGE_RUNS 256

/* Whether run x's head goes before run y's: the smaller id, then the earlier run (stable). */
static inline gboolean store_history_head_before(const store_history_object *o,
                                                 const size_t *at, uint32_t x, uint32_t y)
{
    return o[at[x]].id < o[at[y]].id || (o[at[x]].id == o[at[y]].id && x < y);
}

/* Sorts o[0, n) by id, stably, when it is at most STORE_HISTORY_MERGE_RUNS ascending runs (a GC's
 * chunks, each ascending: MidLife's GCs have up to 53): one merge of the runs through a heap of
 * their heads into `tmp`, and a copy back, where the radix sort moves every object once per
 * byte of its id that varies (three times for a GC of a few million objects). FALSE (nothing
 * moved) when there are more runs. */
static gboolean store_history_merge_runs(store_history_object *o, size_t n,
                                         store_history_object **tmp, size_t *tmp_cap)
{
    size_t start[STORE_HISTORY_MERGE_RUNS + 1], at[STORE_HISTORY_MERGE_RUNS];
    uint32_t heap[STORE_HISTORY_MERGE_RUNS], k = 0;
    start[k++] = 0;
    for (size_t i = 1; i < n; i++) {
        if (o[i].id >= o[i - 1].id)
            continue;
        if (k == STORE_HISTORY_MERGE_RUNS)
            return FALSE;
        start[k++] = i;
    }
    if (k == 1)
        return TRUE;
    start[k] = n;
    if (*tmp_cap < n) {
        g_free(*tmp);
        *tmp = g_new(store_history_object, n);
        *tmp_cap = n;
    }
    uint32_t m = 0; /* the heap of runs not exhausted, by their heads */
    for (uint32_t r = 0; r < k; r++) {
        at[r] = start[r];
        uint32_t i = m++;
        for (; i > 0 && store_history_head_before(o, at, r, heap[(i - 1) / 2]); i = (i - 1) / 2)
            heap[i] = heap[(i - 1) / 2];
        heap[i] = r;
    }
    for (size_t out = 0; out < n; out++) {
        uint32_t r = heap[0];
        (*tmp)[out] = o[at[r]++];
        if (at[r] == start[r + 1]) /* exhausted: the last run takes its place */
            r = heap[--m];
        /* sift r down from the root */
        uint32_t i = 0;
        for (;;) {
            uint32_t c = 2 * i + 1;
            if (c >= m)
                break;
            if (c + 1 < m && store_history_head_before(o, at, heap[c + 1], heap[c]))
                c++;
            if (!store_history_head_before(o, at, heap[c], r))
                break;
            heap[i] = heap[c];
            i = c;
        }
        if (m > 0)
            heap[i] = r;
    }
    memcpy(o, *tmp, n * sizeof *o);
    return TRUE;
}

static void store_history_sort_objects(store_history *h)
{
    store_history_object *o = h->objects;
    g_autofree store_history_object *tmp = NULL;
    size_t tmp_cap = 0;
    gboolean sorted = TRUE;
    for (size_t a = 0, b; a < h->objects_n; a = b) {
        for (b = a + 1; b < h->objects_n && o[b].first_gc == o[a].first_gc; b++)
            ;
        if (!store_history_merge_runs(o + a, b - a, &tmp, &tmp_cap))
            store_radix_sort(o + a, b - a, sizeof *o, G_STRUCT_OFFSET(store_history_object, id));
        sorted = sorted && (a == 0 || o[a - 1].id <= o[a].id);
    }
    if (!sorted)
        store_radix_sort(o, h->objects_n, sizeof *o, G_STRUCT_OFFSET(store_history_object, id));
}

/* Builds the objects rows (schema 5) and the history inside the caller's write transaction;
 * with h->summary_only, object_spans and object_totals alone. */
static gboolean store_history_build(store_history *h, GError **error)
{
    if (!store_history_read(h, error))
        return FALSE;
    if (h->summary_only) { /* the changes were sorted while reading (schema 5) */
        store_history_sort_objects(h);
        return store_history_write(h, error);
    }
    /* Emptied before writing: the rows below reuse the pages of the packed text. */
    if (h->packed ? !store_schema_use_object_rows(h->db, h->path, error)
                  : !store_sql_exec(h->db, h->path, "DELETE FROM generation_changes", error))
        return FALSE;
    /* Schema 4 and before: the writer's objects table has no first generation; NULL (every
     * generation is a row) for the views, which read it. */
    if (!h->packed && store_db_pragma_int(h->db, "SELECT count(*) FROM pragma_table_info("
                                                 "'objects') WHERE name = 'first_generation'") == 0 &&
        !store_sql_exec(h->db, h->path,
                        "ALTER TABLE objects ADD COLUMN first_generation INTEGER;\n"
                        "ALTER TABLE objects ADD COLUMN next_gc INTEGER;\n",
                        error))
        return FALSE;
    if (!store_history_prepare(h, &h->generations, "object_generation_rows",
                               "object_id, generation, from_gc, until_gc", 4, error))
        return FALSE;
    if (!h->packed) /* schema 5: sorted while reading */
        store_radix_sort(h->changes, h->n, sizeof *h->changes, G_STRUCT_OFFSET(store_change, id));
    store_history_sort_objects(h);
    return store_history_write(h, error) && store_schema_use_history_rows(h->db, h->path, error);
}

gboolean store_history_pending(sqlite3 *db)
{
    sqlite3_stmt *st = NULL;
    gboolean pending = FALSE;
    if (sqlite3_prepare_v2(db,
                           "SELECT (SELECT status FROM run WHERE id = 1) <> 'recording' AND "
                           "(EXISTS (SELECT 1 FROM generation_changes) OR "
                           " EXISTS (SELECT 1 FROM sqlite_schema WHERE type = 'view' AND "
                           "         name = 'objects'))",
                           -1, &st, NULL) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
        pending = sqlite3_column_int(st, 0) != 0;
    sqlite3_finalize(st);
    return pending;
}

/* Never write into a damaged file: it would only get worse. */
static gboolean store_history_check(store_history *h, store_db_check *check, GError **error)
{
    g_autofree char *damage = store_db_damage_new(h->db, check);
    if (damage)
        store_history_damaged(error, h->path, damage);
    return damage == NULL;
}

gboolean store_history_check_changes(sqlite3 *db, const char *path, GError **error)
{
    store_history h = {.db = db, .path = path,
                       .packed = store_db_pragma_int(db, "PRAGMA user_version") >= 5};
    gboolean ok = store_history_read(&h, error);
    g_free(h.changes);
    g_free(h.objects);
    return ok;
}

gboolean store_history_objects_read(sqlite3 *db, const char *path, store_object_rows *out,
                                    GError **error)
{
    store_history h = {.db = db, .path = path, .packed = TRUE, .tables_from = 2, .tables_to = 3};
    gboolean ok = FALSE;
    memset(out, 0, sizeof *out);
    if (store_db_pragma_int(db, "PRAGMA user_version") < 5) {
        g_set_error(error, STORE_ERROR, STORE_ERROR_SQLITE,
                    "%s keeps no packed objects (schema 4 or before)", path);
        goto out;
    }
    if (!store_history_read(&h, error))
        goto out;
    store_history_sort_objects(&h);
    out->objects = (store_object_row *)(void *)h.objects;
    out->n = h.objects_n;
    h.objects = NULL;
    ok = TRUE;
out:
    g_free(h.changes);
    g_free(h.objects);
    return ok;
}

gboolean store_history_deaths_read(sqlite3 *db, const char *path, store_object_rows *rows,
                                   GError **error)
{
    store_history h = {.db = db, .path = path, .packed = TRUE, .tables_from = 1, .tables_to = 2};
    gboolean ok = FALSE;
    if (!store_history_read(&h, error)) /* the deaths, sorted by id (stably) */
        goto out;
    uint32_t *died = g_try_new(uint32_t, MAX(rows->n, 1));
    if (!died) {
        g_set_error(error, STORE_ERROR, STORE_ERROR_SQLITE, "%s: out of memory", path);
        goto out;
    }
    /* died_gc: the first (smallest) GC of the object's deaths, as the view's min(gc) */
    for (size_t k = 0, d = 0; k < rows->n; k++) {
        uint64_t id = rows->objects[k].id;
        uint32_t gc = STORE_OBJECT_ALIVE;
        while (d < h.n && h.changes[d].id < id)
            d++;
        for (size_t e = d; e < h.n && h.changes[e].id == id; e++)
            gc = MIN(gc, h.changes[e].gc_gen >> 3);
        died[k] = gc;
    }
    g_free(rows->died_gc);
    rows->died_gc = died;
    ok = TRUE;
out:
    g_free(h.changes);
    g_free(h.objects);
    return ok;
}

void store_object_rows_release(store_object_rows *rows)
{
    g_free(rows->objects);
    g_free(rows->died_gc);
    memset(rows, 0, sizeof *rows);
}

gboolean store_history_spans_pending(sqlite3 *db)
{
    return store_history_pending(db) && store_db_pragma_int(db, "PRAGMA user_version") >= 5 &&
           store_db_pragma_int(db, "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND "
                                   "name = 'object_spans'") == 0;
}

/* The build of store_history_build_file (summary FALSE) or store_history_summarize_file. */
static gboolean store_history_build_path(const char *path, gboolean summary,
                                         store_progress_fn progress, void *ctx, GError **error)
{
    store_history h = {.path = path, .progress = progress, .progress_ctx = ctx};
    store_history_batch *batches[] = {&h.generations, &h.span_rows};
    gboolean ok = FALSE;

    if (sqlite3_open_v2(path, &h.db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) !=
        SQLITE_OK) {
        store_sql_fail(h.db, path, "cannot open for writing", error);
        goto out;
    }
    sqlite3_extended_result_codes(h.db, 1);
    /* Another reader may be building it: wait for its transaction, then find nothing to do.
     * The commit waits for readers in the middle of a statement; one that holds the file longer
     * makes the build give up (rolled back: the changes stay, the next reader tries again). */
    sqlite3_busy_timeout(h.db, STORE_HISTORY_WAIT_MS);
    /* 64 MiB of pages: the rows are appended in key order, so a larger cache only holds pages
     * that are done (256 MiB held the whole output of a 200 MB file: 140 MB more peak memory
     * on MidLife, no less CPU). */
    if (!store_sql_exec(h.db, path, "PRAGMA cache_size = -65536", error) ||
        !store_sql_exec(h.db, path, "BEGIN IMMEDIATE", error))
        goto out;
    h.packed = store_db_pragma_int(h.db, "PRAGMA user_version") >= 5;
    /* Schema 4 and before: the objects rows lack their type and size here; built whole. */
    h.spans_wanted = store_history_spans_pending(h.db);
    h.summary_only = summary && h.packed;
    gboolean wanted = h.summary_only ? h.spans_wanted : store_history_pending(h.db);
    store_db_check check = {0};
    if (wanted && (!store_history_check(&h, &check, error) ||
                   (h.spans_wanted && !store_history_weights_read(&h, error)) ||
                   !store_history_build(&h, error)))
        goto out;
    /* checked and written by us: the next writer checks no more, unless the file changes */
    if (!store_db_commit_sound(h.db, wanted ? &check : NULL)) {
        store_sql_set_error(h.db, path, sqlite3_extended_errcode(h.db), sqlite3_errmsg(h.db),
                            error);
        goto out;
    }
    ok = TRUE;
out:
    if (!ok && h.db != NULL) {
        int code = sqlite3_errcode(h.db) & 0xff;
        if (error != NULL && (code == SQLITE_CORRUPT || code == SQLITE_NOTADB) &&
            !g_error_matches(*error, STORE_ERROR, STORE_ERROR_DAMAGED)) {
            g_clear_error(error);
            store_history_damaged(error, path, sqlite3_errmsg(h.db));
        }
        if (!sqlite3_get_autocommit(h.db))
            sqlite3_exec(h.db, "ROLLBACK", NULL, NULL, NULL);
    }
    for (size_t b = 0; b < G_N_ELEMENTS(batches); b++) {
        sqlite3_finalize(batches[b]->many);
        sqlite3_finalize(batches[b]->one);
    }
    g_free(h.changes);
    g_free(h.objects);
    g_free(h.weights);
    g_free(h.spans.slots);
    g_free(h.start);
    g_free(h.fill);
    g_free(h.rows);
    sqlite3_close(h.db);
    return ok;
}

gboolean store_history_build_file(const char *path, store_progress_fn progress, void *ctx,
                                  GError **error)
{
    return store_history_build_path(path, FALSE, progress, ctx, error);
}

gboolean store_history_summarize_file(const char *path, store_progress_fn progress, void *ctx,
                                      GError **error)
{
    return store_history_build_path(path, TRUE, progress, ctx, error);
}
