/* gcdump_read.c — a .gcdump file into a gcdump_graph (layout: README.md).
 *
 * The file is mapped and read front to back through one cursor that checks every length against
 * what is left, so a truncated or corrupted file stops at the first byte that cannot be what the
 * writer wrote, with one line saying where. Nothing the file says is trusted for an allocation
 * before the bytes it needs are known to be there (a count of N nodes needs 4N bytes of labels).
 */
#include "gcdump/gcdump.h"

#include <glib/gstdio.h>
#include <string.h>
#include <sys/stat.h>

G_DEFINE_QUARK(heaplens-gcdump-error-quark, gcdump_error)

/* FastSerialization's tags (PerfView src/FastSerialization: Tags). */
enum {
    FS_NULL = 1,
    FS_OBJECT_REF = 2,
    FS_FORWARD_REF = 3,
    FS_BEGIN = 4,
    FS_BEGIN_PRIVATE = 5,
    FS_END = 6,
    FS_FORWARD_DEF = 7,
    FS_BYTE = 8,
    FS_INT16 = 9,
    FS_INT32 = 10,
    FS_INT64 = 11,
    FS_SKIP_REGION = 12,
    FS_STRING = 13,
    FS_BLOB = 14,
};

#define FS_HEADER "!FastSerialization.1"
#define FS_MAX_DEPTH 16

/* A type object seen in the stream: later objects of the same type refer to it by its label. */
typedef struct fs_type {
    uint32_t label;
    int32_t version, min_version;
    char *name;
} fs_type;

typedef struct fs_reader {
    const uint8_t *base;
    size_t size, pos;
    const char *path;
    GError **error;
    gboolean failed;
    GArray *types;        /* fs_type */
    uint32_t *forward;    /* the forward-reference table: labels */
    uint32_t n_forward;
} fs_reader;

static gboolean fs_fail(fs_reader *r, const char *what)
{
    if (!r->failed)
        g_set_error(r->error, GCDUMP_ERROR, GCDUMP_ERROR_FORMAT,
                    "%s is not a .gcdump heaplens can read: %s (at byte %zu of %zu)", r->path,
                    what, r->pos, r->size);
    r->failed = TRUE;
    return FALSE;
}

static gboolean fs_need(fs_reader *r, size_t n)
{
    if (r->failed)
        return FALSE;
    if (n > r->size - r->pos)
        return fs_fail(r, "the file ends too early (truncated?)");
    return TRUE;
}

static uint8_t fs_u8(fs_reader *r)
{
    if (!fs_need(r, 1))
        return 0;
    return r->base[r->pos++];
}

static int32_t fs_i32(fs_reader *r)
{
    uint32_t v = 0;
    if (!fs_need(r, 4))
        return 0;
    memcpy(&v, r->base + r->pos, 4); /* little-endian, as the file */
    r->pos += 4;
    return (int32_t)v;
}

static int64_t fs_i64(fs_reader *r)
{
    uint64_t v = 0;
    if (!fs_need(r, 8))
        return 0;
    memcpy(&v, r->base + r->pos, 8);
    r->pos += 8;
    return (int64_t)v;
}

static float fs_float(fs_reader *r)
{
    int32_t i = fs_i32(r);
    float f;
    memcpy(&f, &i, sizeof f);
    return f;
}

/* A count of items of at least `item_bytes` each: refused when the rest of the file cannot hold
 * them (so it never sizes an allocation by a corrupt number). */
static uint32_t fs_count(fs_reader *r, size_t item_bytes, const char *what)
{
    int32_t n = fs_i32(r);
    if (r->failed)
        return 0;
    if (n < 0 || (size_t)n > (r->size - r->pos) / item_bytes) {
        char msg[96];
        g_snprintf(msg, sizeof msg, "%s count %d does not fit in the file", what, n);
        fs_fail(r, msg);
        return 0;
    }
    return (uint32_t)n;
}

/* A string: its length in UTF-16 units (-1: null), then each unit as 1 to 3 bytes (UTF-8 of the
 * unit; a surrogate pair is two units of 3 bytes each). Returned as UTF-8 (a pair joined). */
static char *fs_string(fs_reader *r)
{
    int32_t len = fs_i32(r);
    if (r->failed || len < 0)
        return NULL;
    if ((size_t)len > r->size - r->pos)
        return (fs_fail(r, "a string longer than the file"), NULL);
    GString *s = g_string_sized_new((gsize)len);
    gunichar2 high = 0;
    for (int32_t i = 0; i < len && !r->failed; i++) {
        uint32_t b = fs_u8(r), c;
        if (b < 0x80)
            c = b;
        else if (b < 0xE0)
            c = (b & 0x1F) << 6 | (fs_u8(r) & 0x3F);
        else {
            c = (b & 0x0F) << 12;
            c |= (uint32_t)(fs_u8(r) & 0x3F) << 6;
            c |= fs_u8(r) & 0x3F;
        }
        if (c >= 0xD800 && c < 0xDC00) {
            high = (gunichar2)c;
            continue;
        }
        if (c >= 0xDC00 && c < 0xE000 && high)
            c = 0x10000 + (((uint32_t)high - 0xD800) << 10) + (c - 0xDC00);
        else if (c >= 0xD800 && c < 0xE000)
            c = 0xFFFD;
        high = 0;
        g_string_append_unichar(s, c);
    }
    if (r->failed) {
        g_string_free(s, TRUE);
        return NULL;
    }
    return g_string_free(s, FALSE);
}

static gboolean fs_expect(fs_reader *r, uint8_t tag, const char *what)
{
    if (fs_u8(r) != tag && !r->failed) {
        r->pos--;
        return fs_fail(r, what);
    }
    return !r->failed;
}

/* Jumps to the label forward reference `index` was defined at. */
static gboolean fs_goto_forward(fs_reader *r, int32_t index)
{
    if (r->failed)
        return FALSE;
    /* Only forward: a region that jumped back could loop for ever on a damaged file. */
    if (index < 0 || (uint32_t)index >= r->n_forward || r->forward[index] > r->size ||
        r->forward[index] <= r->pos)
        return fs_fail(r, "a forward reference outside the file");
    r->pos = r->forward[index];
    return TRUE;
}

static const fs_type *fs_type_at(fs_reader *r, uint32_t label)
{
    for (guint i = 0; i < r->types->len; i++)
        if (g_array_index(r->types, fs_type, i).label == label)
            return &g_array_index(r->types, fs_type, i);
    fs_fail(r, "a reference to a type that is not in the file");
    return NULL;
}

/* The type of an object whose BeginObject tag was just read: a SerializationType written in
 * place (BeginObject, its own type: null or a reference, version, minimum version, full name,
 * EndObject) or a reference to one written before. */
static const fs_type *fs_read_type(fs_reader *r, int depth)
{
    if (depth > FS_MAX_DEPTH)
        return (fs_fail(r, "types nested too deep"), NULL);
    size_t at = r->pos;
    uint8_t tag = fs_u8(r);
    if (tag == FS_OBJECT_REF)
        return fs_type_at(r, (uint32_t)fs_i32(r));
    if (tag == FS_FORWARD_DEF) {
        fs_i32(r);
        at = r->pos;
        tag = fs_u8(r);
    }
    if (tag != FS_BEGIN && tag != FS_BEGIN_PRIVATE)
        return (r->pos--, fs_fail(r, "an object without its type"), NULL);
    uint8_t meta = fs_u8(r);
    if (meta == FS_OBJECT_REF)
        fs_i32(r);
    else if (meta == FS_BEGIN || meta == FS_FORWARD_DEF) {
        r->pos--;
        if (!fs_read_type(r, depth + 1))
            return NULL;
    } else if (meta != FS_NULL)
        return (r->pos--, fs_fail(r, "a type without its own type"), NULL);
    fs_type t = {.label = (uint32_t)at};
    t.version = fs_i32(r);
    t.min_version = fs_i32(r);
    t.name = fs_string(r);
    if (!fs_expect(r, FS_END, "a type not closed by its end tag") || !t.name) {
        g_free(t.name);
        return r->failed ? NULL : (fs_fail(r, "a type without a name"), NULL);
    }
    g_array_append_val(r->types, t);
    return &g_array_index(r->types, fs_type, r->types->len - 1);
}

/* The start of an object field: NULL when the field is a null reference (*present FALSE), else
 * its type (the object's data follows). */
static const fs_type *fs_begin_object(fs_reader *r, gboolean *present)
{
    *present = FALSE;
    uint8_t tag = fs_u8(r);
    if (r->failed)
        return NULL;
    if (tag == FS_NULL)
        return NULL;
    if (tag == FS_FORWARD_DEF) {
        fs_i32(r);
        tag = fs_u8(r);
    }
    if (tag != FS_BEGIN && tag != FS_BEGIN_PRIVATE)
        return (r->pos--, fs_fail(r, "an object where a reference cannot be followed"), NULL);
    *present = TRUE;
    return fs_read_type(r, 0);
}

/* The fields written after an object's first version are tagged: skips them up to and including
 * the object's end tag. A tagged string is handed to `on_string` (the first one) when not
 * NULL. */
static gboolean fs_skip_tagged(fs_reader *r, char **first_string)
{
    for (;;) {
        uint8_t tag = fs_u8(r);
        if (r->failed)
            return FALSE;
        switch (tag) {
        case FS_END:
            return TRUE;
        case FS_BYTE:
            fs_u8(r);
            break;
        case FS_INT16:
            if (fs_need(r, 2))
                r->pos += 2;
            break;
        case FS_INT32:
            fs_i32(r);
            break;
        case FS_INT64:
            fs_i64(r);
            break;
        case FS_STRING: {
            char *s = fs_string(r);
            if (first_string && !*first_string)
                *first_string = s;
            else
                g_free(s);
            break;
        }
        case FS_SKIP_REGION:
            if (!fs_goto_forward(r, fs_i32(r)))
                return FALSE;
            break;
        default:
            r->pos--;
            return fs_fail(r, "a field with an unknown tag");
        }
    }
}

/* An object of a type whose fields are all tagged (JSHeapInfo), or one skipped whole. */
static gboolean fs_skip_object(fs_reader *r)
{
    gboolean present;
    fs_begin_object(r, &present);
    return !r->failed && (!present || fs_skip_tagged(r, NULL));
}

/* ---- the graph ------------------------------------------------------------------------- */

/* Graph.Node's compressed integer: 7 bits a byte, high bit = more, the first byte's 7 bits
 * sign-extended, at most 5 bytes. */
static gboolean gcdump_blob_int(const uint8_t *blob, uint32_t len, uint32_t *pos, int32_t *out)
{
    if (*pos >= len)
        return FALSE;
    uint8_t b = blob[(*pos)++];
    int32_t v = (int32_t)((uint32_t)b << 25) >> 25;
    for (int i = 1; (b & 0x80) && i < 5; i++) {
        if (*pos >= len)
            return FALSE;
        b = blob[(*pos)++];
        /* In unsigned arithmetic: the format wraps, and a damaged file must not overflow. */
        v = (int32_t)(((uint32_t)v << 7) + (uint32_t)(i == 4 ? b : (b & 0x7F)));
    }
    *out = v;
    return TRUE;
}

static gboolean gcdump_read_graph(fs_reader *r, const fs_type *type, gcdump_graph *g)
{
    g->total_size = fs_i64(r);
    int32_t root = fs_i32(r);
    g->n_types = fs_count(r, 12, "type");
    if (r->failed)
        return FALSE;
    g->types = g_new0(gcdump_type, g->n_types);
    for (uint32_t i = 0; i < g->n_types && !r->failed; i++) {
        g->types[i].name = fs_string(r);
        g->types[i].size = fs_i32(r);
        g->types[i].module = fs_string(r);
        if (!g->types[i].name && !r->failed)
            g->types[i].name = g_strdup("");
    }
    g->n_nodes = fs_count(r, 4, "node");
    if (r->failed)
        return FALSE;
    if (root < 0 || (uint32_t)root >= g->n_nodes)
        return fs_fail(r, "the root is not one of the nodes");
    g->root = (uint32_t)root;
    const uint8_t *labels = r->base + r->pos;
    r->pos += (size_t)g->n_nodes * 4;
    uint32_t blob_len = fs_count(r, 1, "node data byte");
    if (r->failed)
        return FALSE;
    const uint8_t *blob = r->base + r->pos;
    r->pos += blob_len;
    if (type->min_version >= 1) {
        /* A deferred region (types named by module and token, .NET Native): skipped whole. */
        if (!fs_goto_forward(r, fs_i32(r)))
            return FALSE;
    }

    /* MemoryGraph: an address per node, then tagged fields (Is64Bit). */
    uint32_t n_addresses = fs_count(r, 8, "address");
    if (r->failed)
        return FALSE;
    if (n_addresses > g->n_nodes)
        return fs_fail(r, "more addresses than nodes");
    g->node_address = g_new0(uint64_t, g->n_nodes);
    memcpy(g->node_address, r->base + r->pos, (size_t)n_addresses * 8);
    r->pos += (size_t)n_addresses * 8;
    for (;;) {
        uint8_t tag = fs_u8(r);
        if (r->failed)
            return FALSE;
        if (tag == FS_END)
            break;
        if (tag == FS_BYTE)
            g->meta.is64bit = fs_u8(r) != 0;
        else {
            r->pos--;
            if (!fs_skip_tagged(r, NULL))
                return FALSE;
            break;
        }
    }

    /* Decode each node's type, size and children (node index + a signed delta each). */
    g->node_type = g_new(uint32_t, g->n_nodes);
    g->node_size = g_new(uint32_t, g->n_nodes);
    g->first_child = g_new(uint64_t, (gsize)g->n_nodes + 1);
    GArray *children = g_array_sized_new(FALSE, FALSE, sizeof(uint32_t), g->n_nodes);
    gboolean ok = TRUE;
    char msg[128] = "";
    for (uint32_t i = 0; i < g->n_nodes && ok; i++) {
        uint32_t label;
        memcpy(&label, labels + (size_t)i * 4, 4);
        uint32_t pos = label;
        int32_t type_and_size, size, count;
        g->first_child[i] = children->len;
        if (!gcdump_blob_int(blob, blob_len, &pos, &type_and_size) || type_and_size < 0 ||
            (uint32_t)(type_and_size >> 1) >= g->n_types) {
            g_snprintf(msg, sizeof msg, "node %u has no valid type", i);
            ok = FALSE;
            break;
        }
        g->node_type[i] = (uint32_t)(type_and_size >> 1);
        if (type_and_size & 1) {
            if (!gcdump_blob_int(blob, blob_len, &pos, &size) || size < 0) {
                g_snprintf(msg, sizeof msg, "node %u has no valid size", i);
                ok = FALSE;
                break;
            }
        } else
            size = MAX(g->types[g->node_type[i]].size, 0);
        g->node_size[i] = (uint32_t)size;
        /* Each child takes a byte at least: no valid file has more children than blob bytes
         * (nodes share no data but the undefined one, which has none). */
        if (!gcdump_blob_int(blob, blob_len, &pos, &count) || count < 0 ||
            (uint32_t)count > blob_len - pos || children->len + (uint64_t)count > blob_len) {
            g_snprintf(msg, sizeof msg, "node %u has no valid children", i);
            ok = FALSE;
            break;
        }
        for (int32_t c = 0; c < count; c++) {
            int32_t delta;
            int64_t child;
            if (!gcdump_blob_int(blob, blob_len, &pos, &delta) ||
                (child = (int64_t)i + delta) < 0 || child >= g->n_nodes) {
                g_snprintf(msg, sizeof msg, "node %u has a child outside the graph", i);
                ok = FALSE;
                break;
            }
            uint32_t c32 = (uint32_t)child;
            g_array_append_val(children, c32);
        }
    }
    g->first_child[g->n_nodes] = children->len;
    g->children = (uint32_t *)(void *)g_array_free(children, FALSE);
    if (!ok)
        return fs_fail(r, msg);
    return TRUE;
}

/* DotNetHeapInfo: the size of all segments and the segments (start, end, generation ends). */
static gboolean gcdump_read_heap_info(fs_reader *r, gcdump_graph *g)
{
    gboolean present;
    fs_begin_object(r, &present);
    if (r->failed || !present)
        return !r->failed;
    fs_i64(r);
    uint32_t n = fs_count(r, 1, "segment");
    for (uint32_t i = 0; i < n && !r->failed; i++) {
        const fs_type *t = fs_begin_object(r, &present);
        if (!present || r->failed)
            continue;
        for (int f = 0; f < (t->version >= 1 ? 7 : 6); f++)
            fs_i64(r);
        fs_skip_tagged(r, NULL);
        g->meta.segments++;
    }
    return !r->failed && fs_skip_tagged(r, NULL);
}

/* The trailer: the file's last 4 bytes are the label of the trailer, which holds the label of
 * the forward-reference table (a count, then a label each). */
static gboolean gcdump_read_trailer(fs_reader *r)
{
    if (r->size < 8)
        return fs_fail(r, "the file ends too early (truncated?)");
    size_t keep = r->pos;
    uint32_t trailer, table;
    memcpy(&trailer, r->base + r->size - 4, 4);
    /* The trailer is one label, right before the last one; the table ends where it begins. */
    if ((size_t)trailer != r->size - 8)
        return fs_fail(r, "no trailer at its end (truncated?)");
    memcpy(&table, r->base + trailer, 4);
    if (table >= trailer || table < r->pos)
        return fs_fail(r, "no forward-reference table (truncated?)");
    r->pos = table;
    r->n_forward = fs_count(r, 4, "forward reference");
    if (r->failed)
        return FALSE;
    if ((size_t)table + 4 + (size_t)r->n_forward * 4 != trailer)
        return fs_fail(r, "no forward-reference table (truncated?)");
    r->forward = g_new(uint32_t, MAX(r->n_forward, 1));
    memcpy(r->forward, r->base + r->pos, (size_t)r->n_forward * 4);
    r->pos = keep;
    return TRUE;
}

gboolean gcdump_graph_is_object(const gcdump_graph *g, uint32_t i)
{
    return g->node_address[i] != 0 && !(g->node_size[i] == 0 &&
                                        strcmp(g->types[g->node_type[i]].name, "UNDEFINED") == 0);
}

char *gcdump_type_name_base(const char *name)
{
    static const char *const buckets[] = {" (Bytes > 1K)",  " (Bytes > 10K)", " (Bytes > 100K)",
                                          " (Bytes > 1M)", " (Bytes > 10M)", " (Bytes > 100M)"};
    for (size_t i = 0; i < G_N_ELEMENTS(buckets); i++)
        if (g_str_has_suffix(name, buckets[i]))
            return g_strndup(name, strlen(name) - strlen(buckets[i]));
    return g_strdup(name);
}

gcdump_graph *gcdump_graph_read(const char *path, GError **error)
{
    g_autoptr(GError) io = NULL;
    GStatBuf st;
    /* A FIFO or a device is refused unopened: opening one could wait for ever. */
    if (g_stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        g_set_error(error, GCDUMP_ERROR, GCDUMP_ERROR_IO, "cannot read %s: not a regular file",
                    path);
        return NULL;
    }
    GMappedFile *file = g_mapped_file_new(path, FALSE, &io);
    if (!file) {
        g_set_error(error, GCDUMP_ERROR, GCDUMP_ERROR_IO, "cannot read %s: %s", path,
                    io->message);
        return NULL;
    }
    gcdump_graph *g = g_new0(gcdump_graph, 1);
    fs_reader r = {.base = (const uint8_t *)g_mapped_file_get_contents(file),
                   .size = g_mapped_file_get_length(file), .path = path, .error = error,
                   .types = g_array_new(FALSE, TRUE, sizeof(fs_type))};
    gboolean present;
    const fs_type *t;

    if (r.size < 24 || memcmp(r.base, "\x14\0\0\0" FS_HEADER, 24) != 0) {
        fs_fail(&r, "no FastSerialization header");
        goto out;
    }
    r.pos = 24;
    if (!gcdump_read_trailer(&r))
        goto out;
    t = fs_begin_object(&r, &present);
    if (!t)
        goto out;
    if (strcmp(t->name, "GCHeapDump") != 0) {
        fs_fail(&r, "it holds no GCHeapDump");
        goto out;
    }
    g->meta.version = t->version;
    if (t->version < 9) {
        char msg[96];
        g_snprintf(msg, sizeof msg, "GCHeapDump version %d is older than those heaplens reads "
                   "(9 and later)", t->version);
        fs_fail(&r, msg);
        goto out;
    }
    t = fs_begin_object(&r, &present);
    if (!t)
        goto out;
    if (strcmp(t->name, "Graphs.MemoryGraph") != 0) {
        fs_fail(&r, "its GCHeapDump holds no MemoryGraph");
        goto out;
    }
    if (!gcdump_read_graph(&r, t, g))
        goto out;
    fs_u8(&r); /* Is64Bit again */
    g->meta.average_count_multiplier = fs_float(&r);
    g->meta.average_size_multiplier = fs_float(&r);
    if (!fs_skip_object(&r) || !gcdump_read_heap_info(&r, g))
        goto out;
    g_free(fs_string(&r)); /* the collection log */
    g->meta.time_collected = fs_i64(&r);
    g->meta.machine_name = fs_string(&r);
    g->meta.process_name = fs_string(&r);
    g->meta.process_id = fs_i32(&r);
    g->meta.total_process_commit = fs_i64(&r);
    g->meta.total_process_working_set = fs_i64(&r);
    g->meta.n_count_multipliers = fs_count(&r, 4, "multiplier");
    for (uint32_t i = 0; i < g->meta.n_count_multipliers && !r.failed; i++)
        fs_float(&r);
    /* Tagged from version 9 on: the interop data (skipped) and the creation tool. */
    fs_skip_tagged(&r, &g->meta.creation_tool);
out:
    for (guint i = 0; i < r.types->len; i++)
        g_free(g_array_index(r.types, fs_type, i).name);
    g_array_free(r.types, TRUE);
    g_free(r.forward);
    g_mapped_file_unref(file);
    if (r.failed) {
        gcdump_graph_free(g);
        return NULL;
    }
    return g;
}

void gcdump_graph_free(gcdump_graph *g)
{
    if (!g)
        return;
    for (uint32_t i = 0; i < g->n_types && g->types; i++) {
        g_free(g->types[i].name);
        g_free(g->types[i].module);
    }
    g_free(g->types);
    g_free(g->node_type);
    g_free(g->node_size);
    g_free(g->node_address);
    g_free(g->first_child);
    g_free(g->children);
    g_free(g->meta.creation_tool);
    g_free(g->meta.machine_name);
    g_free(g->meta.process_name);
    g_free(g);
}
