/* snapshot_graph.c — reading a heap snapshot into a graph (snapshot_graph.h). */
#include "query/snapshot_graph.h"

#include "query/checkpoints.h"
#include "query/query.h"
#include "store/store.h"
#include "wire/hl_wire.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* ---- picking a snapshot ---------------------------------------------------------------- */

static gboolean table_exists(sqlite3 *db, const char *name, gboolean *exists, GError **error)
{
    gboolean row = FALSE;
    sqlite3_stmt *stmt = query_db_prepare(
        db, "SELECT 1 FROM sqlite_schema WHERE type IN ('table', 'view') AND name = ?1", error);
    if (!stmt)
        return FALSE;
    sqlite3_bind_text(stmt, 1, name, -1, SQLITE_STATIC);
    gboolean ok = query_db_step(stmt, &row, error);
    *exists = row;
    sqlite3_finalize(stmt);
    return ok;
}

#define SNAPSHOT_INFO_SQL                                                                          \
    "SELECT s.snapshot, s.gc, g.generation, s.objects, s.refs, s.roots FROM snapshots s"           \
    " LEFT JOIN gcs g ON g.gc = s.gc"

static void info_read(sqlite3_stmt *stmt, snapshot_info *info)
{
    info->snapshot = sqlite3_column_int64(stmt, 0);
    info->gc = sqlite3_column_int64(stmt, 1);
    info->gc_generation =
        sqlite3_column_type(stmt, 2) == SQLITE_NULL ? -1 : sqlite3_column_int64(stmt, 2);
    info->objects = sqlite3_column_int64(stmt, 3);
    info->refs = sqlite3_column_int64(stmt, 4);
    info->roots = sqlite3_column_int64(stmt, 5);
}

gboolean snapshot_pick(sqlite3 *db, const char *path, const char *command, const char *option,
                       const char *text, snapshot_info *info, GError **error)
{
    gboolean ok = FALSE, row = FALSE, exists = FALSE;
    uint64_t wanted = 0;
    int64_t first = 0, last = 0, count = 0;
    sqlite3_stmt *stmt = NULL;

    if (text && text[0] == '@') { /* @CHECKPOINT: the snapshot taken there */
        int64_t at = 0;
        if (!checkpoint_snapshot(db, path, command, text + 1, &at, error))
            goto out;
        wanted = (uint64_t)at;
    } else if (text && !query_args_parse_uint(command, option, text, 1, INT64_MAX,
                                              "a snapshot number (1, 2, ...) or @CHECKPOINT",
                                              &wanted, error)) {
        goto out;
    }
    if (!table_exists(db, "snapshots", &exists, error))
        goto out;
    if (exists) {
        stmt = query_db_prepare(db, "SELECT MIN(snapshot), MAX(snapshot), COUNT(*) FROM snapshots",
                                error);
        if (!stmt || !query_db_step(stmt, &row, error))
            goto out;
        first = sqlite3_column_int64(stmt, 0);
        last = sqlite3_column_int64(stmt, 1);
        count = sqlite3_column_int64(stmt, 2);
        sqlite3_finalize(stmt);
        stmt = NULL;
    }
    if (count == 0) {
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_NOT_FOUND,
                    "%s has no heap snapshot; 'heaplens record' takes one at every GC.Collect() "
                    "(--snapshot induced, the default) and 'heaplens snapshot PID' on demand",
                    path);
        goto out;
    }
    stmt = query_db_prepare(db,
                            text ? SNAPSHOT_INFO_SQL " WHERE s.snapshot = ?1"
                                 : SNAPSHOT_INFO_SQL " ORDER BY s.snapshot DESC LIMIT 1",
                            error);
    if (!stmt)
        goto out;
    if (text)
        sqlite3_bind_int64(stmt, 1, (int64_t)wanted);
    if (!query_db_step(stmt, &row, error))
        goto out;
    if (!row) {
        if (count == 1)
            g_set_error(error, QUERY_ERROR, QUERY_ERROR_NOT_FOUND,
                        "no snapshot %" PRIu64 " in %s: it has one snapshot, snapshot %" PRId64,
                        wanted, path, first);
        else
            g_set_error(error, QUERY_ERROR, QUERY_ERROR_NOT_FOUND,
                        "no snapshot %" PRIu64 " in %s: its snapshots are %" PRId64 " to %" PRId64,
                        wanted, path, first, last);
        goto out;
    }
    info_read(stmt, info);
    ok = TRUE;
out:
    sqlite3_finalize(stmt);
    return ok;
}

GArray *snapshot_list_new(sqlite3 *db, GError **error)
{
    gboolean row = FALSE, exists = FALSE;
    GArray *list = g_array_new(FALSE, TRUE, sizeof(snapshot_info));
    if (!table_exists(db, "snapshots", &exists, error))
        goto fail;
    if (!exists)
        return list;
    sqlite3_stmt *stmt = query_db_prepare(db, SNAPSHOT_INFO_SQL " ORDER BY s.snapshot", error);
    if (!stmt)
        goto fail;
    while (query_db_step(stmt, &row, error) && row) {
        snapshot_info info;
        info_read(stmt, &info);
        g_array_append_val(list, info);
    }
    sqlite3_finalize(stmt);
    if (error && *error)
        goto fail;
    return list;
fail:
    g_array_unref(list);
    return NULL;
}

/* ---- types ------------------------------------------------------------------------------ */

struct snapshot_types {
    uint32_t count;      /* one past the largest id */
    char **names;        /* count; NULL where no row */
    uint8_t *flags;      /* count */
    GHashTable *by_name; /* borrowed name -> id */
};

snapshot_types *snapshot_types_new(sqlite3 *db, GError **error)
{
    gboolean row = FALSE;
    int64_t max_id = 0;
    if (!query_db_int(db, "SELECT MAX(id) FROM types", &max_id, error))
        return NULL;
    if (max_id < 0 || max_id > UINT32_MAX - 1) {
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_SQLITE,
                    "the database is damaged: a type id of %" PRId64, max_id);
        return NULL;
    }
    snapshot_types *t = g_new0(snapshot_types, 1);
    t->count = (uint32_t)max_id + 1;
    t->names = g_new0(char *, t->count);
    t->flags = g_new0(uint8_t, t->count);
    t->by_name = g_hash_table_new(g_str_hash, g_str_equal);
    sqlite3_stmt *stmt = query_db_prepare(db, "SELECT id, name, flags FROM types", error);
    if (!stmt)
        goto fail;
    while (query_db_step(stmt, &row, error) && row) {
        int64_t id = sqlite3_column_int64(stmt, 0);
        const char *name = (const char *)sqlite3_column_text(stmt, 1);
        if (id < 0 || id >= t->count || !name)
            continue;
        t->names[id] = g_strdup(name);
        t->flags[id] = (uint8_t)sqlite3_column_int(stmt, 2);
        g_hash_table_insert(t->by_name, t->names[id], GUINT_TO_POINTER((guint)id));
    }
    sqlite3_finalize(stmt);
    if (error && *error)
        goto fail;
    return t;
fail:
    snapshot_types_free(t);
    return NULL;
}

void snapshot_types_free(snapshot_types *t)
{
    if (!t)
        return;
    for (uint32_t i = 0; i < t->count; i++)
        g_free(t->names[i]);
    g_free(t->names);
    g_free(t->flags);
    if (t->by_name)
        g_hash_table_unref(t->by_name);
    g_free(t);
}

const char *snapshot_types_name(const snapshot_types *t, uint32_t type_id,
                                char buf[QUERY_FORMAT_MAX])
{
    if (type_id == 0)
        return "<unknown>";
    if (type_id < t->count && t->names[type_id])
        return t->names[type_id];
    g_snprintf(buf, QUERY_FORMAT_MAX, "<type %" PRIu32 ">", type_id); /* as the views name it */
    return buf;
}

gboolean snapshot_types_is_array(const snapshot_types *t, uint32_t type_id)
{
    return type_id < t->count && (t->flags[type_id] & HL_TYPE_FLAG_ARRAY) != 0;
}

uint32_t snapshot_types_find(const snapshot_types *t, const char *name)
{
    return GPOINTER_TO_UINT(g_hash_table_lookup(t->by_name, name));
}

/* The characters between the identifiers of a type name: "A.B<C, D>+E[,]". */
#define TYPE_NAME_PUNCTUATION "<>,+[]* "

/* Whether `query` names `name` with any namespaces left out: the same name token by token, each
 * identifier of the query being the name's identifier or its tail after a '.'. */
static gboolean type_name_matches(const char *name, const char *query)
{
    while (*name || *query) {
        size_t nl = strcspn(name, TYPE_NAME_PUNCTUATION), ql = strcspn(query, TYPE_NAME_PUNCTUATION);
        if (ql > nl || memcmp(name + nl - ql, query, ql) != 0)
            return FALSE;
        if (ql < nl && (ql == 0 || name[nl - ql - 1] != '.'))
            return FALSE;
        name += nl, query += ql;
        size_t nb = strspn(name, TYPE_NAME_PUNCTUATION), qb = strspn(query, TYPE_NAME_PUNCTUATION);
        if (nb != qb || memcmp(name, query, nb) != 0)
            return FALSE;
        name += nb, query += qb;
    }
    return TRUE;
}

uint32_t snapshot_types_resolve(const snapshot_types *t, const char *name, const char *file,
                                GError **error)
{
    uint32_t exact = snapshot_types_find(t, name);
    if (exact)
        return exact;
    uint32_t found = 0, n_names = 0;
    g_autoptr(GString) candidates = g_string_new(NULL);
    g_autoptr(GHashTable) seen = g_hash_table_new(g_str_hash, g_str_equal);
    for (uint32_t id = 1; id < t->count; id++) {
        const char *full = t->names[id];
        if (!full || !type_name_matches(full, name) || !g_hash_table_add(seen, (gpointer)full))
            continue; /* the same full name under two ids counts once */
        if (n_names++ == 0)
            found = id;
        if (n_names <= 5)
            g_string_append_printf(candidates, "%s%s", n_names > 1 ? ", " : "", full);
    }
    if (n_names == 1)
        return found;
    if (n_names == 0)
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_NOT_FOUND,
                    "no type named '%s' in %s (a full name, 'System.Collections.Generic.List<App.Item>',"
                    " or one without namespaces, 'List<Item>'; see 'heaplens allocations')",
                    name, file);
    else
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_USAGE,
                    "'%s' names %" PRIu32 " types in %s: %s%s; give the full name", name, n_names,
                    file, candidates->str, n_names > 5 ? ", ..." : "");
    return 0;
}

uint32_t snapshot_types_count(const snapshot_types *t)
{
    return t->count;
}

/* The largest object the runtime can make is far below 2^40 bytes; a heap, below 2^56. */
#define SNAPSHOT_OBJECT_SIZE_MAX (INT64_C(1) << 40)
#define SNAPSHOT_TOTAL_SIZE_MAX (UINT64_C(1) << 56)

/* ---- id -> node ------------------------------------------------------------------------ */

/* The objects' ids are sorted; allocation ids are dense-ish (1, 2, 3, ... with gaps for the dead)
 * and discovered ids start at HL_DISCOVERED_ID_BASE. Each of the two ranges gets a directory of
 * buckets of 2^shift consecutive ids (about one object per bucket): a lookup is one directory
 * read and a binary search over the few ids of one bucket, instead of ~23 steps over all. */
typedef struct id_segment {
    uint64_t lo, hi; /* smallest and largest id of the segment */
    uint32_t begin;  /* first node */
    uint32_t end;    /* one past the last node */
    unsigned shift;
    uint32_t *dir; /* buckets + 1 entries: first node of each bucket */
} id_segment;

typedef struct id_index {
    const uint64_t *ids;
    id_segment seg[2];
} id_index;

static gboolean id_segment_build(id_segment *s, const uint64_t *ids, uint32_t begin, uint32_t end)
{
    s->begin = begin;
    s->end = end;
    s->dir = NULL;
    if (begin >= end)
        return TRUE;
    s->lo = ids[begin];
    s->hi = ids[end - 1];
    uint64_t span = s->hi - s->lo + 1, count = end - begin;
    s->shift = 0;
    while ((span >> s->shift) > 2 * count)
        s->shift++;
    uint64_t buckets = ((s->hi - s->lo) >> s->shift) + 1;
    s->dir = g_try_new(uint32_t, buckets + 1);
    if (!s->dir)
        return FALSE;
    uint32_t k = begin;
    for (uint64_t b = 0; b <= buckets; b++) {
        uint64_t bucket_lo = s->lo + (b << s->shift);
        while (k < end && (b == buckets || ids[k] < bucket_lo))
            k++;
        s->dir[b] = k;
    }
    /* dir[b] = first node with id >= the bucket's first id */
    return TRUE;
}

static gboolean id_index_build(id_index *x, const uint64_t *ids, uint32_t n)
{
    /* node 0 is the virtual root; objects are 1 .. n-1; split: the first with a discovered id */
    uint32_t split = hl_ids_lower_bound(ids, 1, n, HL_DISCOVERED_ID_BASE);
    x->ids = ids;
    memset(x->seg, 0, sizeof x->seg);
    return id_segment_build(&x->seg[0], ids, 1, split) &&
           id_segment_build(&x->seg[1], ids, split, n);
}

static void id_index_release(id_index *x)
{
    g_free(x->seg[0].dir);
    g_free(x->seg[1].dir);
}

static inline uint32_t id_index_find(const id_index *x, uint64_t id)
{
    const id_segment *s = &x->seg[id >= HL_DISCOVERED_ID_BASE];
    if (s->begin >= s->end || id < s->lo || id > s->hi)
        return AN_NONE;
    uint64_t b = (id - s->lo) >> s->shift;
    uint32_t lo = hl_ids_lower_bound(x->ids, s->dir[b], s->dir[b + 1], id);
    return lo < s->end && x->ids[lo] == id ? lo : AN_NONE;
}

/* ---- the graph ---------------------------------------------------------------------------- */

const char *snapshot_root_kind_name(uint32_t kind)
{
    switch (kind) {
    case HL_ROOT_STACK:
        return "stack";
    case HL_ROOT_FINALIZER:
        return "finalizer";
    case HL_ROOT_HANDLE:
        return "handle";
    default:
        return "other";
    }
}

char *snapshot_root_flags_text(uint32_t flags, char buf[64])
{
    static const struct {
        uint32_t bit;
        const char *name;
    } names[] = {
        {HL_ROOT_PINNING, "pinning"},
        {HL_ROOT_WEAK, "weak"},
        {HL_ROOT_INTERIOR, "interior"},
        {HL_ROOT_REFCOUNTED, "refcounted"},
    };
    buf[0] = '\0';
    for (size_t i = 0; i < G_N_ELEMENTS(names); i++) {
        if (!(flags & names[i].bit))
            continue;
        if (buf[0])
            g_strlcat(buf, ",", 64);
        g_strlcat(buf, names[i].name, 64);
    }
    return buf;
}

/* A root's kind as stored: a word (SCHEMA.md), or a number in older files. */
static uint32_t root_kind_read(sqlite3_stmt *stmt, int column)
{
    if (sqlite3_column_type(stmt, column) == SQLITE_INTEGER)
        return (uint32_t)sqlite3_column_int(stmt, column);
    const char *text = (const char *)sqlite3_column_text(stmt, column);
    if (!text)
        return HL_ROOT_OTHER;
    if (strcmp(text, "stack") == 0)
        return HL_ROOT_STACK;
    if (strcmp(text, "finalizer") == 0)
        return HL_ROOT_FINALIZER;
    if (strcmp(text, "handle") == 0)
        return HL_ROOT_HANDLE;
    return HL_ROOT_OTHER;
}

static gboolean graph_fail(int rc, GError **error)
{
    g_set_error(error, QUERY_ERROR, QUERY_ERROR_SQLITE, "%s",
                rc == AN_ERR_TOO_BIG ? "the snapshot is too large (more than 4 billion references)"
                                     : "out of memory while building the snapshot's graph");
    return FALSE;
}

static gboolean edge_add(snapshot_graph *g, snapshot_graph_direction direction, uint32_t from,
                         uint32_t to, GError **error)
{
    int rc = direction == SNAPSHOT_GRAPH_FORWARD ? an_graph_add_edge(g->graph, from, to)
                                                 : an_graph_add_edge(g->graph, to, from);
    return rc == AN_OK || graph_fail(rc, error);
}

/* ---- references, read on a second connection ------------------------------------------
 * Reading a large snapshot is two long range scans (objects joined with `objects`, then the
 * references), each bound by SQLite's CPU time. The references do not depend on the objects
 * until they are resolved to nodes, so a second thread reads them, as raw id pairs, on its own
 * connection while this one reads the objects; both halves of the pairs are then resolved on two
 * threads. 16 bytes per reference while loading, freed before the graph is sealed.
 *
 * The references are snapshot_objects.refs, a JSON array of target ids per object ("[12,7,12]",
 * store/SCHEMA.md), parsed here directly: a JSON library (or the snapshot_refs view's json_each)
 * per row would cost more than SQLite's reading of the row. */

#define REFS_SQL                                                                                   \
    "SELECT object_id, refs FROM snapshot_objects WHERE snapshot = ?1 AND refs IS NOT NULL"       \
    " ORDER BY object_id"

static int u64_cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Parses `len` bytes of `text`, a JSON array of non-negative integers (whitespace allowed), into
 * out[], which has room for len / 2 + 1 ids, sorted ascending: edges come in (from, to) order,
 * as they did when each reference was a row, so the graph does not depend on field order.
 * Returns how many, or -1 when the text is not such an array. */
static int64_t refs_text_parse(const unsigned char *text, size_t len, uint64_t *out)
{
    size_t i = 0;
    int64_t n = 0;
#define REFS_SKIP_SPACE()                                                                          \
    while (i < len && (text[i] == ' ' || text[i] == '\n' || text[i] == '\t' || text[i] == '\r'))   \
        i++
    REFS_SKIP_SPACE();
    if (i == len || text[i++] != '[')
        return -1;
    REFS_SKIP_SPACE();
    if (i < len && text[i] == ']') {
        i++;
    } else {
        for (;;) {
            uint64_t v = 0;
            size_t digits = 0;
            for (; i < len && text[i] >= '0' && text[i] <= '9'; i++, digits++) {
                if (v > (UINT64_MAX - 9) / 10)
                    return -1;
                v = v * 10 + (uint64_t)(text[i] - '0');
            }
            if (digits == 0)
                return -1;
            out[n++] = v;
            REFS_SKIP_SPACE();
            if (i < len && text[i] == ',') {
                i++;
                REFS_SKIP_SPACE();
                continue;
            }
            if (i < len && text[i] == ']') {
                i++;
                break;
            }
            return -1;
        }
    }
    REFS_SKIP_SPACE();
#undef REFS_SKIP_SPACE
    if (i != len)
        return -1;
    if (n <= 16) { /* most objects have a few references */
        for (int64_t a = 1; a < n; a++) {
            uint64_t v = out[a];
            int64_t b = a;
            for (; b > 0 && out[b - 1] > v; b--)
                out[b] = out[b - 1];
            out[b] = v;
        }
    } else {
        qsort(out, (size_t)n, sizeof *out, u64_cmp);
    }
    return n;
}

static void refs_damaged(GError **error, int64_t snapshot, int64_t object_id)
{
    g_set_error(error, QUERY_ERROR, QUERY_ERROR_SQLITE,
                "the database is damaged: snapshot %" PRId64 ", object %" PRId64
                ": refs is not a JSON array of object ids",
                snapshot, object_id);
}

typedef struct refs_reader {
    sqlite3 *db; /* the second connection, owned by the thread once started */
    int64_t snapshot;
    uint64_t *from, *to; /* n pairs, ascending by (from, to) */
    uint64_t n, cap;
    gboolean opened;     /* FALSE: no second connection; read on the caller's */
    GError *error;
    GThread *thread;
} refs_reader;

static gpointer refs_reader_main(gpointer data)
{
    refs_reader *r = data;
    sqlite3 *db = r->db;
    sqlite3_stmt *stmt = NULL;
    int rc;
    r->db = NULL;
    if (sqlite3_prepare_v2(db, REFS_SQL, -1, &stmt, NULL) != SQLITE_OK)
        goto out; /* not an error: the caller reads them itself */
    sqlite3_busy_timeout(db, 10000);
    r->opened = TRUE;
    sqlite3_bind_int64(stmt, 1, r->snapshot);
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
        int64_t from = sqlite3_column_int64(stmt, 0);
        const unsigned char *text = sqlite3_column_text(stmt, 1);
        size_t len = (size_t)sqlite3_column_bytes(stmt, 1);
        uint64_t room = len / 2 + 1;
        if (r->n + room > r->cap) {
            uint64_t cap = MAX(r->cap + r->cap / 2, r->n + room + 1024);
            uint64_t *f = g_try_renew(uint64_t, r->from, cap);
            if (f)
                r->from = f;
            uint64_t *to = f ? g_try_renew(uint64_t, r->to, cap) : NULL;
            if (!to) {
                g_set_error(&r->error, QUERY_ERROR, QUERY_ERROR_SQLITE,
                            "out of memory while reading the snapshot's references");
                goto out;
            }
            r->to = to;
            r->cap = cap;
        }
        int64_t n = text ? refs_text_parse(text, len, r->to + r->n) : -1;
        if (n < 0) {
            refs_damaged(&r->error, r->snapshot, from);
            goto out;
        }
        for (int64_t i = 0; i < n; i++)
            r->from[r->n + (uint64_t)i] = (uint64_t)from;
        r->n += (uint64_t)n;
    }
    if (rc != SQLITE_DONE && !query_db_temp_failed(db, &r->error))
        g_set_error(&r->error, QUERY_ERROR, QUERY_ERROR_SQLITE, "reading references: %s",
                    sqlite3_errmsg(db));
out:
    sqlite3_finalize(stmt);
    sqlite3_close(db);
    return NULL;
}

/* Starts reading the references of `info` on a second connection to `db`'s file. FALSE when
 * that cannot be (an in-memory database, no thread) or HEAPLENS_THREADS=1 asks for one thread:
 * the caller reads them. */
static gboolean refs_reader_start(refs_reader *r, sqlite3 *db, const snapshot_info *info)
{
    const char *threads = g_getenv("HEAPLENS_THREADS"); /* 1: the way it was, for comparisons */
    memset(r, 0, sizeof *r);
    /* opened as `db` was: immutable when it is (a read-only file in WAL mode nobody has open) */
    if ((threads && strcmp(threads, "1") == 0) || (r->db = store_db_open_again(db)) == NULL)
        return FALSE;
    r->snapshot = info->snapshot;
    r->cap = (uint64_t)MAX(info->refs, 0) + 1;
    r->from = g_try_new(uint64_t, r->cap);
    r->to = g_try_new(uint64_t, r->cap);
    if (r->from && r->to)
        r->thread = g_thread_try_new("heaplens-refs", refs_reader_main, r, NULL);
    return r->thread != NULL;
}

/* Waits for the reader; FALSE with *error when it failed. */
static gboolean refs_reader_join(refs_reader *r, GError **error)
{
    if (r->thread) {
        g_thread_join(r->thread);
        r->thread = NULL;
    }
    if (r->error) {
        g_propagate_error(error, r->error);
        r->error = NULL;
        return FALSE;
    }
    return TRUE;
}

static void refs_reader_free(refs_reader *r)
{
    if (r->thread)
        g_thread_join(r->thread);
    g_clear_error(&r->error);
    sqlite3_close(r->db); /* a thread never started */
    g_free(r->from);
    g_free(r->to);
    memset(r, 0, sizeof *r);
}

/* The node of `from`, moving *cursor forward through the sorted ids (references come sorted by
 * `from`), or by the index when `from` is behind it. */
static inline uint32_t from_node_find(const id_index *x, const uint64_t *ids, uint32_t n,
                                      uint32_t *cursor, uint64_t from)
{
    uint32_t c = *cursor;
    if (c < n && from >= ids[c]) {
        while (c < n && ids[c] < from)
            c++;
        *cursor = c;
        return c < n && ids[c] == from ? c : AN_NONE;
    }
    return id_index_find(x, from);
}

/* One half of the resolving: pairs [lo, hi) become node pairs, written as uint32_t at the start
 * of the same range of the from/to buffers (a write never passes the read position); pairs
 * naming an object the snapshot lacks are left out. Byte copies keep it free of aliasing. */
typedef struct refs_part {
    const id_index *index;
    const uint64_t *ids;
    uint32_t n;
    unsigned char *from, *to; /* the reader's buffers */
    uint64_t lo, hi;
    uint64_t kept, unresolved;
} refs_part;

static gpointer refs_part_resolve(gpointer data)
{
    refs_part *p = data;
    unsigned char *out_from = p->from + p->lo * sizeof(uint64_t);
    unsigned char *out_to = p->to + p->lo * sizeof(uint64_t);
    uint32_t cursor = 1;
    uint64_t kept = 0;
    if (p->lo < p->hi) { /* start the cursor at the first node >= the first `from` */
        uint64_t first;
        memcpy(&first, p->from + p->lo * sizeof first, sizeof first);
        cursor = hl_ids_lower_bound(p->ids, cursor, p->n, first);
    }
    for (uint64_t i = p->lo; i < p->hi; i++) {
        uint64_t from, to;
        memcpy(&from, p->from + i * sizeof from, sizeof from);
        memcpy(&to, p->to + i * sizeof to, sizeof to);
        uint32_t f = from_node_find(p->index, p->ids, p->n, &cursor, from);
        uint32_t t = id_index_find(p->index, to);
        if (f == AN_NONE || t == AN_NONE) {
            p->unresolved++;
            continue;
        }
        memcpy(out_from + kept * sizeof f, &f, sizeof f);
        memcpy(out_to + kept * sizeof t, &t, sizeof t);
        kept++;
    }
    p->kept = kept;
    return NULL;
}

/* The references on the caller's connection, resolved as they come. */
static gboolean refs_read(snapshot_graph *g, sqlite3 *db, const id_index *index,
                          snapshot_graph_direction direction, query_progress *progress,
                          GError **error)
{
    gboolean row = FALSE, ok = FALSE;
    uint64_t *to = NULL;
    size_t to_cap = 0;
    /* in object_id order (the table's key): `from` advances through the sorted ids */
    sqlite3_stmt *stmt = query_db_prepare(db, REFS_SQL, error);
    if (!stmt)
        return FALSE;
    sqlite3_bind_int64(stmt, 1, g->info.snapshot);
    uint32_t cursor = 1;
    uint64_t n_refs = 0;
    while (query_db_step(stmt, &row, error) && row) {
        uint64_t from = (uint64_t)sqlite3_column_int64(stmt, 0);
        const unsigned char *text = sqlite3_column_text(stmt, 1);
        size_t len = (size_t)sqlite3_column_bytes(stmt, 1);
        if (len / 2 + 1 > to_cap) {
            to_cap = MAX(len / 2 + 1, 2 * to_cap);
            g_free(to);
            to = g_try_new(uint64_t, to_cap);
            if (!to) {
                graph_fail(AN_ERR_NOMEM, error);
                goto out;
            }
        }
        int64_t n = text ? refs_text_parse(text, len, to) : -1;
        if (n < 0) {
            refs_damaged(error, g->info.snapshot, (int64_t)from);
            goto out;
        }
        uint32_t f = from_node_find(index, g->ids, g->n, &cursor, from);
        for (int64_t i = 0; i < n; i++) {
            uint32_t t = id_index_find(index, to[i]);
            if (f == AN_NONE || t == AN_NONE)
                g->refs_unresolved++;
            else if (!edge_add(g, direction, f, t, error))
                goto out;
            if ((++n_refs & 0xffff) == 0)
                query_progress_update(progress, "reading references", n_refs,
                                      (uint64_t)g->info.refs);
        }
    }
    ok = !(error && *error);
out:
    g_free(to);
    sqlite3_finalize(stmt);
    return ok;
}

/* The pairs the reader read become edges: two halves resolved on two threads, then added in
 * order (the first half's edges first, as if read one by one). */
static gboolean refs_resolve(snapshot_graph *g, const id_index *index, refs_reader *r,
                             snapshot_graph_direction direction, query_progress *progress,
                             GError **error)
{
    query_progress_update(progress, "resolving references", 0, r->n);
    refs_part part[2];
    for (int i = 0; i < 2; i++)
        part[i] = (refs_part){.index = index, .ids = g->ids, .n = g->n,
                              .from = (unsigned char *)r->from, .to = (unsigned char *)r->to,
                              .lo = i == 0 ? 0 : r->n / 2, .hi = i == 0 ? r->n / 2 : r->n};
    GThread *second = g_thread_try_new("heaplens-resolve", refs_part_resolve, &part[1], NULL);
    refs_part_resolve(&part[0]);
    if (second)
        g_thread_join(second);
    else
        refs_part_resolve(&part[1]);
    for (int i = 0; i < 2; i++) {
        const uint32_t *from = (const uint32_t *)(void *)(r->from + part[i].lo);
        const uint32_t *to = (const uint32_t *)(void *)(r->to + part[i].lo);
        int rc = direction == SNAPSHOT_GRAPH_FORWARD
                     ? an_graph_add_edges(g->graph, from, to, part[i].kept)
                     : an_graph_add_edges(g->graph, to, from, part[i].kept);
        if (rc != AN_OK)
            return graph_fail(rc, error);
        g->refs_unresolved += part[i].unresolved;
    }
    query_progress_update(progress, "resolving references", r->n, r->n);
    return TRUE;
}

/* ---- the compact form (schema 8) ----------------------------------------------------------
 * The blocks of the snapshot (store/store.h STORE_SNAPBLOCK_REFS_SQL: not their fields), in id
 * order, decoded here
 * (store_snapblock_decode): the ids, and the references as (from, to) pairs into `r`, resolved
 * later as the second connection's are (refs_resolve). Each block's objects' types and sizes
 * come from one range of `objects` (id BETWEEN its first and last): a seek per block, the rows in
 * between stepped over (ids of objects dead by then). */
gboolean snapshot_block_objects_init(snapshot_block_objects *o, sqlite3 *db, GError **error)
{
    memset(o, 0, sizeof *o);
    GError *local = NULL;
    if (!store_objects_view_memory(db, &o->memory, &local)) {
        /* as when the first statement reading `objects` fails on it (query_db_step) */
        const char *file = store_db_name(db);
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_SQLITE, "reading %s failed: %s",
                    file && *file ? file : "the database", local->message);
        g_error_free(local);
        return FALSE;
    }
    if (o->memory)
        return TRUE;
    o->stmt = query_db_prepare(db, SNAPSHOT_BLOCK_OBJECTS_SQL, error);
    return o->stmt != NULL;
}

void snapshot_block_objects_release(snapshot_block_objects *o)
{
    sqlite3_finalize(o->stmt);
    memset(o, 0, sizeof *o);
}

void snapshot_block_objects_bind(snapshot_block_objects *o, const store_snapblock *b)
{
    if (!o->stmt)
        return;
    sqlite3_reset(o->stmt);
    sqlite3_bind_int64(o->stmt, 1, (int64_t)b->ids[0]);
    sqlite3_bind_int64(o->stmt, 2, (int64_t)b->ids[b->n - 1]);
}

gboolean snapshot_block_objects_next(snapshot_block_objects *o, const store_snapblock *b,
                                     uint32_t *k, GError **error)
{
    gboolean row = FALSE;
    if (!o->stmt) { /* in memory: each id looked up, ascending (the first of duplicates) */
        for (; *k < b->n; (*k)++) {
            uint32_t type_id = 0;
            if (store_objects_memory_find(o->memory, b->ids[*k], &type_id, &o->size)) {
                o->type_id = type_id;
                o->type_type = o->size_type = SQLITE_INTEGER;
                return TRUE;
            }
        }
        return FALSE;
    }
    while (*k < b->n && query_db_step(o->stmt, &row, error) && row) {
        uint64_t id = (uint64_t)sqlite3_column_int64(o->stmt, 0);
        while (*k < b->n && b->ids[*k] < id)
            (*k)++;
        if (*k < b->n && b->ids[*k] == id) {
            o->type_type = sqlite3_column_type(o->stmt, 1);
            o->size_type = sqlite3_column_type(o->stmt, 2);
            o->type_id = sqlite3_column_int64(o->stmt, 1);
            o->size = sqlite3_column_int64(o->stmt, 2);
            return TRUE;
        }
    }
    return FALSE;
}

static gboolean blocks_read(snapshot_graph *g, sqlite3 *db, uint32_t cap, refs_reader *r,
                            query_progress *progress, GError **error)
{
    gboolean row = FALSE, ok = FALSE;
    store_snapblock b = {0};
    uint64_t total_size = 0;
    snapshot_block_objects objects = {0};
    sqlite3_stmt *blocks = query_db_prepare(db, STORE_SNAPBLOCK_REFS_SQL, error);
    if (!blocks || !snapshot_block_objects_init(&objects, db, error))
        goto out;
    sqlite3_bind_int64(blocks, 1, g->info.snapshot);
    while (query_db_step(blocks, &row, error) && row) {
        if (!store_snapblock_decode_row(&b, blocks, error))
            goto out;
        if (g->n + b.n > cap || b.ids[0] <= g->ids[g->n - 1]) {
            g_set_error(error, QUERY_ERROR, QUERY_ERROR_SQLITE,
                        "the database is damaged: snapshot %" PRId64
                        " does not hold the objects its snapshots row counts",
                        g->info.snapshot);
            goto out;
        }
        /* the references, as pairs of ids */
        if (r->n + b.n_refs > r->cap) {
            uint64_t c = MAX(r->cap + r->cap / 2, r->n + b.n_refs + 1024);
            uint64_t *f = g_try_renew(uint64_t, r->from, c);
            if (f)
                r->from = f;
            uint64_t *t = f ? g_try_renew(uint64_t, r->to, c) : NULL;
            if (!t) {
                graph_fail(AN_ERR_NOMEM, error);
                goto out;
            }
            r->to = t;
            r->cap = c;
        }
        for (uint32_t k = 0; k < b.n; k++) {
            /* ascending by (from, to), as when each reference was a row: most objects have a
             * few references (insertion), an array many (qsort) */
            uint64_t at = r->n, nr = b.ref_start[k + 1] - b.ref_start[k];
            for (uint32_t i = b.ref_start[k]; i < b.ref_start[k + 1]; i++) {
                uint64_t v = b.to[i], j = r->n;
                for (; nr <= 16 && j > at && r->to[j - 1] > v; j--)
                    r->to[j] = r->to[j - 1];
                r->to[j] = v;
                r->from[r->n++] = b.ids[k];
            }
            if (nr > 16)
                qsort(r->to + at, nr, sizeof *r->to, u64_cmp);
        }
        /* types and sizes: the range of `objects` the block spans (no objects row: type and
         * size unknown, 0) */
        memcpy(g->ids + g->n, b.ids, b.n * sizeof *b.ids);
        memset(g->type_ids + g->n, 0, b.n * sizeof *g->type_ids);
        memset(g->sizes + g->n, 0, b.n * sizeof *g->sizes);
        snapshot_block_objects_bind(&objects, &b);
        uint32_t k = 0;
        while (snapshot_block_objects_next(&objects, &b, &k, error)) {
            uint64_t id = b.ids[k];
            if ((objects.type_type != SQLITE_INTEGER && objects.type_type != SQLITE_NULL) ||
                (objects.size_type != SQLITE_INTEGER && objects.size_type != SQLITE_NULL)) {
                query_db_damaged(error,
                                 "object %" PRIu64 " has a size or type id that is not a number",
                                 id);
                goto out;
            }
            int64_t size = objects.size, type_id = objects.type_id;
            if (size < 0 || size > SNAPSHOT_OBJECT_SIZE_MAX ||
                (total_size += (uint64_t)size) > SNAPSHOT_TOTAL_SIZE_MAX) {
                g_set_error(error, QUERY_ERROR, QUERY_ERROR_SQLITE,
                            "the database is damaged: object %" PRIu64 " of snapshot %" PRId64
                            " has size %" PRId64 "%s",
                            id, g->info.snapshot, size,
                            size < 0 || size > SNAPSHOT_OBJECT_SIZE_MAX ? ""
                                                                         : " (too large in total)");
                goto out;
            }
            if (type_id < 0 || type_id > UINT32_MAX) {
                g_set_error(error, QUERY_ERROR, QUERY_ERROR_SQLITE,
                            "the database is damaged: object %" PRIu64 " has type id %" PRId64,
                            id, type_id);
                goto out;
            }
            g->type_ids[g->n + k] = (uint32_t)type_id;
            g->sizes[g->n + k] = (uint64_t)size;
            k++;
        }
        if (error && *error)
            goto out;
        g->n += b.n;
        query_progress_update(progress, "reading objects and references", g->n, cap);
    }
    if (error && *error)
        goto out;
    ok = TRUE;
out:
    store_snapblock_clear(&b);
    sqlite3_finalize(blocks);
    snapshot_block_objects_release(&objects);
    return ok;
}

/* ---- objects per type ------------------------------------------------------------------- */

/* Whether an object's type id and size (values t and size of SQLite types t_type and
 * size_type: NULL without an `objects` row) are what a recording holds; its type (0 for NULL or
 * beyond n_types) and size into *type_id and *size. */
static gboolean per_type_object(int64_t t, int t_type, int64_t size, int size_type,
                                uint32_t n_types, uint32_t *type_id, int64_t *size_out)
{
    *size_out = size;
    *type_id = t < 0 || t >= n_types ? 0 : (uint32_t)t;
    return (t_type == SQLITE_INTEGER || t_type == SQLITE_NULL) &&
           (size_type == SQLITE_INTEGER || size_type == SQLITE_NULL) && size >= 0;
}

/* snapshot_objects_per_type of a schema 8 file: each block holding any of the snapshots read
 * once (its ids, and the range of `objects` it spans, as blocks_read), its objects added to
 * every one of them it is part of; read[i]: the objects counted for snapshot i. */
static gboolean per_type_blocks(sqlite3 *db, const snapshot_info *infos, size_t k,
                                uint32_t n_types, int64_t skip, int64_t *count, int64_t *bytes,
                                int64_t *read, GError **error)
{
    gboolean row = FALSE, ok = FALSE;
    store_snapblock b = {0};
    g_autofree uint32_t *types = NULL;
    g_autofree int64_t *sizes = NULL;
    size_t cap = 0;
    int64_t lo = infos[0].snapshot, hi = infos[0].snapshot;
    for (size_t i = 1; i < k; i++) {
        lo = MIN(lo, infos[i].snapshot);
        hi = MAX(hi, infos[i].snapshot);
    }
    /* no order needed: each block is counted on its own */
    sqlite3_stmt *blocks = query_db_prepare(
        db, "SELECT first_id, objects, ids, kinds, NULL, NULL, first_snapshot, last_snapshot"
            " FROM snapshot_blocks WHERE last_snapshot >= ?1 AND first_snapshot <= ?2", error);
    snapshot_block_objects objects = {0};
    if (!blocks || !snapshot_block_objects_init(&objects, db, error))
        goto out;
    sqlite3_bind_int64(blocks, 1, lo);
    sqlite3_bind_int64(blocks, 2, hi);
    while (query_db_step(blocks, &row, error) && row) {
        int64_t first = sqlite3_column_int64(blocks, 6), last = sqlite3_column_int64(blocks, 7);
        if (skip > 0 && first <= skip && last >= skip)
            continue; /* one of snapshot `skip`'s: the caller counts it */
        if (!store_snapblock_decode_row(&b, blocks, error))
            goto out;
        if (b.n > cap) {
            cap = b.n;
            types = g_renew(uint32_t, types, cap);
            sizes = g_renew(int64_t, sizes, cap);
        }
        memset(types, 0, b.n * sizeof *types); /* no objects row: type 0, no bytes */
        memset(sizes, 0, b.n * sizeof *sizes);
        snapshot_block_objects_bind(&objects, &b);
        uint32_t j = 0;
        while (snapshot_block_objects_next(&objects, &b, &j, error)) {
            if (!per_type_object(objects.type_id, objects.type_type, objects.size,
                                 objects.size_type, n_types, &types[j], &sizes[j])) {
                query_db_damaged(error, "an object of snapshot %" PRId64 " has a size or type id "
                                        "that no recording holds", MAX(first, lo));
                goto out;
            }
            j++;
        }
        if (error && *error)
            goto out;
        for (size_t i = 0; i < k; i++) {
            if (infos[i].snapshot < first || infos[i].snapshot > last)
                continue;
            int64_t *c = count + i * n_types, *by = bytes + i * n_types;
            for (uint32_t x = 0; x < b.n; x++) {
                c[types[x]]++;
                by[types[x]] = query_add_saturating(by[types[x]], sizes[x]);
            }
            read[i] += b.n; /* compared with the snapshots row by the caller */
        }
    }
    ok = !(error && *error);
out:
    store_snapblock_clear(&b);
    sqlite3_finalize(blocks);
    snapshot_block_objects_release(&objects);
    return ok;
}

gboolean snapshot_objects_per_type(sqlite3 *db, const snapshot_info *infos, size_t k,
                                   uint32_t n_types, int64_t skip, int64_t *count, int64_t *bytes,
                                   GError **error)
{
    gboolean row = FALSE;
    g_autofree int64_t *read = g_new0(int64_t, MAX(k, 1));
    if (k == 0)
        return TRUE;
    if (store_snapshot_blocks_present(db)) {
        if (!per_type_blocks(db, infos, k, n_types, skip, count, bytes, read, error))
            return FALSE;
    } else {
        sqlite3_stmt *stmt = query_db_prepare(db,
                                              "SELECT o.type_id, o.size FROM snapshot_objects so"
                                              " LEFT JOIN objects o ON o.id = so.object_id"
                                              " WHERE so.snapshot = ?1",
                                              error);
        if (!stmt)
            return FALSE;
        for (size_t i = 0; i < k && !(error && *error); i++) {
            sqlite3_reset(stmt);
            sqlite3_bind_int64(stmt, 1, infos[i].snapshot);
            while (query_db_step(stmt, &row, error) && row) {
                uint32_t type;
                int64_t size;
                if (!per_type_object(sqlite3_column_int64(stmt, 0), sqlite3_column_type(stmt, 0),
                                     sqlite3_column_int64(stmt, 1), sqlite3_column_type(stmt, 1),
                                     n_types, &type, &size)) {
                    query_db_damaged(error, "an object of snapshot %" PRId64 " has a size or type "
                                            "id that no recording holds", infos[i].snapshot);
                    break;
                }
                count[i * n_types + type]++;
                bytes[i * n_types + type] = query_add_saturating(bytes[i * n_types + type], size);
                read[i]++;
            }
        }
        sqlite3_finalize(stmt);
        if (error && *error)
            return FALSE;
    }
    for (size_t i = 0; i < k; i++)
        if (read[i] != infos[i].objects)
            return query_db_damaged(error, "snapshot %" PRId64 " holds %" PRId64 " objects, its "
                                           "snapshots row counts %" PRId64,
                                    infos[i].snapshot, read[i], infos[i].objects);
    return TRUE;
}

snapshot_graph *snapshot_graph_load(sqlite3 *db, const snapshot_info *info,
                                    snapshot_graph_direction direction, query_progress *progress,
                                    GError **error)
{
    gboolean row = FALSE;
    sqlite3_stmt *stmt = NULL;
    id_index index = {0};
    refs_reader reader = {0};
    snapshot_graph *g = g_new0(snapshot_graph, 1);
    g->info = *info;

    if (info->objects < 0 || info->objects > (int64_t)AN_MAX_NODES - 1) {
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_SQLITE,
                    "snapshot %" PRId64 " has %" PRId64 " objects, more than heaplens can load",
                    info->snapshot, info->objects);
        goto fail;
    }
    /* objects, in id order (the key order of snapshot_objects) */
    uint32_t cap = (uint32_t)info->objects + 1;
    g->ids = g_try_new(uint64_t, cap);
    g->type_ids = g_try_new(uint32_t, cap);
    g->sizes = g_try_new(uint64_t, cap);
    if (!g->ids || !g->type_ids || !g->sizes) {
        graph_fail(AN_ERR_NOMEM, error);
        goto fail;
    }
    g->ids[0] = 0;
    g->type_ids[0] = 0;
    g->sizes[0] = 0;
    g->n = 1;
    gboolean blocks = store_snapshot_blocks_present(db), parallel = FALSE;
    const char *objects_step = "reading objects";
    uint64_t total_size = 0;
    if (blocks) {
        /* the compact form: objects and references from the blocks in one pass */
        reader.cap = (uint64_t)MAX(info->refs, 0) + 1;
        reader.from = g_try_new(uint64_t, reader.cap);
        reader.to = g_try_new(uint64_t, reader.cap);
        if (!reader.from || !reader.to) {
            graph_fail(AN_ERR_NOMEM, error);
            goto fail;
        }
        if (!blocks_read(g, db, cap, &reader, progress, error))
            goto fail;
        goto objects_read;
    }
    parallel = refs_reader_start(&reader, db, info);
    if (parallel)
        objects_step = "reading objects (and references alongside)";
    /* one lookup in `objects` per object: the ids ascend, so the pages it reads are cached
     * (cheaper than a merge with a scan of `objects`) */
    stmt = query_db_prepare(db,
                            "SELECT so.object_id, o.type_id, o.size FROM snapshot_objects so"
                            " LEFT JOIN objects o ON o.id = so.object_id"
                            " WHERE so.snapshot = ?1 ORDER BY so.object_id",
                            error);
    if (!stmt)
        goto fail;
    sqlite3_bind_int64(stmt, 1, info->snapshot);
    while (query_db_step(stmt, &row, error) && row) {
        uint64_t id = (uint64_t)sqlite3_column_int64(stmt, 0);
        if (g->n == cap || id <= g->ids[g->n - 1]) {
            g_set_error(error, QUERY_ERROR, QUERY_ERROR_SQLITE,
                        "the database is damaged: snapshot %" PRId64
                        " does not hold the objects its snapshots row counts",
                        info->snapshot);
            goto fail;
        }
        /* Sizes are summed into retained sizes: each one and their total stay far below
         * 2^63, so no sum of them can overflow (a hand-edited or damaged file says so). */
        int64_t size = sqlite3_column_int64(stmt, 2);
        /* NULL: an object without its objects row (unknown size and type); text is damage. */
        if ((sqlite3_column_type(stmt, 1) != SQLITE_INTEGER &&
             sqlite3_column_type(stmt, 1) != SQLITE_NULL) ||
            (sqlite3_column_type(stmt, 2) != SQLITE_INTEGER &&
             sqlite3_column_type(stmt, 2) != SQLITE_NULL)) {
            query_db_damaged(error, "object %" PRIu64 " has a size or type id that is not a number",
                             id);
            goto fail;
        }
        if (size < 0 || size > SNAPSHOT_OBJECT_SIZE_MAX ||
            (total_size += (uint64_t)size) > SNAPSHOT_TOTAL_SIZE_MAX) {
            g_set_error(error, QUERY_ERROR, QUERY_ERROR_SQLITE,
                        "the database is damaged: object %" PRIu64 " of snapshot %" PRId64
                        " has size %" PRId64 "%s",
                        id, info->snapshot, size,
                        size < 0 || size > SNAPSHOT_OBJECT_SIZE_MAX ? "" : " (too large in total)");
            goto fail;
        }
        int64_t type_id = sqlite3_column_int64(stmt, 1); /* NULL: 0 */
        if (type_id < 0 || type_id > UINT32_MAX) {
            g_set_error(error, QUERY_ERROR, QUERY_ERROR_SQLITE,
                        "the database is damaged: object %" PRIu64 " has type id %" PRId64, id,
                        type_id);
            goto fail;
        }
        g->ids[g->n] = id;
        g->type_ids[g->n] = (uint32_t)type_id;
        g->sizes[g->n] = (uint64_t)size;
        g->n++;
        if ((g->n & 0xffff) == 0)
            query_progress_update(progress, objects_step, g->n, cap);
    }
    if (error && *error)
        goto fail;
    sqlite3_finalize(stmt);
    stmt = NULL;
objects_read:
    if (g->n != cap) { /* fewer objects than the snapshots row counts: rows were lost */
        query_db_damaged(error,
                         "snapshot %" PRId64 " holds %u objects, its snapshots row counts %" PRId64,
                         info->snapshot, g->n - 1, info->objects);
        goto fail;
    }
    query_progress_update(progress, objects_step, g->n, cap);

    g->graph = an_graph_new(g->n);
    if (!g->graph || !id_index_build(&index, g->ids, g->n)) {
        graph_fail(AN_ERR_NOMEM, error);
        goto fail;
    }
    int rc =
        an_graph_reserve(g->graph, (uint64_t)MAX(info->refs, 0) + (uint64_t)MAX(info->roots, 0));
    if (rc != AN_OK && rc != AN_ERR_NOMEM) { /* out of memory now is not fatal yet */
        graph_fail(rc, error);
        goto fail;
    }

    /* roots first, so that node 0's edges come first in a forward graph */
    stmt = query_db_prepare(db,
                            "SELECT object_id, kind, flags, root_id FROM snapshot_roots"
                            " WHERE snapshot = ?1 ORDER BY object_id, kind, flags, root_id",
                            error);
    if (!stmt)
        goto fail;
    sqlite3_bind_int64(stmt, 1, info->snapshot);
    GArray *roots = g_array_new(FALSE, FALSE, sizeof(snapshot_root));
    int64_t root_rows = 0;
    while (query_db_step(stmt, &row, error) && row) {
        root_rows++;
        if (sqlite3_column_type(stmt, 0) != SQLITE_INTEGER &&
            sqlite3_column_type(stmt, 0) != SQLITE_NULL) {
            query_db_damaged(error, "a root of snapshot %" PRId64 " is not an object id",
                             info->snapshot);
            break;
        }
        uint32_t node = sqlite3_column_type(stmt, 0) == SQLITE_NULL
                            ? AN_NONE
                            : id_index_find(&index, (uint64_t)sqlite3_column_int64(stmt, 0));
        if (node == AN_NONE) {
            g->roots_unresolved++;
            continue;
        }
        snapshot_root r = {
            .node = node,
            .kind = root_kind_read(stmt, 1),
            .flags = (uint32_t)sqlite3_column_int(stmt, 2),
            .root_id = (uint64_t)sqlite3_column_int64(stmt, 3),
        };
        g_array_append_val(roots, r);
        if (r.flags & HL_ROOT_WEAK)
            continue;
        g->root_edges++;
        if (!edge_add(g, direction, 0, node, error))
            break;
    }
    g->n_roots = roots->len;
    g->roots = (snapshot_root *)(void *)g_array_free(roots, FALSE);
    if (error && *error)
        goto fail;
    if (root_rows != info->roots) {
        query_db_damaged(error,
                         "snapshot %" PRId64 " holds %" PRId64 " roots, its snapshots row counts %"
                         PRId64, info->snapshot, root_rows, info->roots);
        goto fail;
    }
    sqlite3_finalize(stmt);
    stmt = NULL;

    if (blocks) {
        if (!refs_resolve(g, &index, &reader, direction, progress, error))
            goto fail;
        parallel = FALSE;
    } else if (parallel) {
        query_progress_update(progress, "reading references", 0, 0);
        if (!refs_reader_join(&reader, error))
            goto fail;
        parallel = reader.opened;
    }
    if (parallel) {
        if (!refs_resolve(g, &index, &reader, direction, progress, error))
            goto fail;
    } else if (!blocks && !refs_read(g, db, &index, direction, progress, error)) {
        goto fail;
    }
    refs_reader_free(&reader);
    query_progress_update(progress, "building the graph", 0, 0);
    rc = an_graph_seal(g->graph);
    if (rc != AN_OK) {
        graph_fail(rc, error);
        goto fail;
    }
    id_index_release(&index);
    return g;
fail:
    refs_reader_free(&reader);
    sqlite3_finalize(stmt);
    id_index_release(&index);
    snapshot_graph_free(g);
    return NULL;
}

void snapshot_graph_free(snapshot_graph *g)
{
    if (!g)
        return;
    g_free(g->ids);
    g_free(g->type_ids);
    g_free(g->sizes);
    g_free(g->roots);
    an_graph_free(g->graph);
    g_free(g);
}

uint32_t snapshot_graph_node(const snapshot_graph *g, uint64_t id)
{
    uint32_t lo = hl_ids_lower_bound(g->ids, 1, g->n, id);
    return lo < g->n && g->ids[lo] == id ? lo : AN_NONE;
}
