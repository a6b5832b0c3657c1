/* gcdump_write.c — a gcdump_graph as a .gcdump file, laid out as dotnet-gcdump lays it out
 * (README.md): the same objects, versions and tags, so that every reader of its files — its own
 * `report`, PerfView, Visual Studio — reads ours. */
#include "gcdump/gcdump.h"

#include <errno.h>
#include <string.h>

typedef struct fs_writer {
    FILE *out;
    uint64_t pos; /* bytes written: the label of what comes next */
} fs_writer;

static void fs_put(fs_writer *w, const void *p, size_t n)
{
    fwrite(p, 1, n, w->out);
    w->pos += n;
}

static void fs_put_u8(fs_writer *w, uint8_t v)
{
    fs_put(w, &v, 1);
}

static void fs_put_i32(fs_writer *w, int32_t v)
{
    fs_put(w, &v, 4); /* little-endian, as the format */
}

static void fs_put_i64(fs_writer *w, int64_t v)
{
    fs_put(w, &v, 8);
}

static void fs_put_float(fs_writer *w, float f)
{
    fs_put(w, &f, 4);
}

/* FastSerialization's string: the length in UTF-16 units, then each unit in 1 to 3 bytes
 * (a character outside the BMP is a surrogate pair, 3 bytes each). NULL: length -1. */
static void fs_put_string(fs_writer *w, const char *s)
{
    if (!s) {
        fs_put_i32(w, -1);
        return;
    }
    GString *bytes = g_string_new(NULL);
    int32_t units = 0;
    for (const char *p = s; *p;) {
        gunichar c = g_utf8_get_char_validated(p, -1);
        if (c == (gunichar)-1 || c == (gunichar)-2) {
            c = 0xFFFD; /* not UTF-8: a replacement for the byte */
            p++;
        } else
            p = g_utf8_next_char(p);
        gunichar u[2] = {c, 0};
        int n = 1;
        if (c >= 0x10000) {
            u[0] = 0xD800 + ((c - 0x10000) >> 10);
            u[1] = 0xDC00 + ((c - 0x10000) & 0x3FF);
            n = 2;
        }
        for (int i = 0; i < n; i++, units++) {
            if (u[i] < 0x80)
                g_string_append_c(bytes, (char)u[i]);
            else if (u[i] < 0x800) {
                g_string_append_c(bytes, (char)(0xC0 | (u[i] >> 6)));
                g_string_append_c(bytes, (char)(0x80 | (u[i] & 0x3F)));
            } else {
                g_string_append_c(bytes, (char)(0xE0 | ((u[i] >> 12) & 0xF)));
                g_string_append_c(bytes, (char)(0x80 | ((u[i] >> 6) & 0x3F)));
                g_string_append_c(bytes, (char)(0x80 | (u[i] & 0x3F)));
            }
        }
    }
    fs_put_i32(w, units);
    fs_put(w, bytes->str, bytes->len);
    g_string_free(bytes, TRUE);
}

/* A SerializationType written in place: BeginObject, its own type (null), version, the oldest
 * version that reads it, its full name, EndObject. */
static void fs_put_type(fs_writer *w, int32_t version, int32_t min_version, const char *name)
{
    fs_put_u8(w, 4 /* BeginObject */);
    fs_put_u8(w, 1 /* NullReference */);
    fs_put_i32(w, version);
    fs_put_i32(w, min_version);
    fs_put_string(w, name);
    fs_put_u8(w, 6 /* EndObject */);
}

/* Graph.Node's compressed integer (the reader's gcdump_blob_int). */
static void gcdump_blob_put(GByteArray *blob, int32_t value)
{
    uint32_t v = (uint32_t)value;
    uint8_t b[5];
    int n;
    if ((int32_t)(v << 25) >> 25 == value)
        n = 1;
    else if ((int32_t)(v << 18) >> 18 == value)
        n = 2;
    else if ((int32_t)(v << 11) >> 11 == value)
        n = 3;
    else if ((int32_t)(v << 4) >> 4 == value)
        n = 4;
    else
        n = 5;
    for (int i = 0; i < n; i++)
        b[i] = (uint8_t)(((v >> (7 * (n - 1 - i))) & 0x7F) | (i < n - 1 ? 0x80 : 0));
    g_byte_array_append(blob, b, (guint)n);
}

gboolean gcdump_graph_write(const gcdump_graph *g, FILE *out, const char *path, GError **error)
{
    fs_writer w = {.out = out};
    GByteArray *blob = g_byte_array_sized_new(g->n_nodes * 4u + 16);
    uint32_t *labels = g_new(uint32_t, MAX(g->n_nodes, 1));
    gboolean ok = FALSE;

    /* The blob: the undefined node first (type 0, size 0, no children) as Graph writes it,
     * then every node: type << 1 (| 1 and the size when it is not its type's), the number of
     * children and each child as the difference from the node's index. */
    gcdump_blob_put(blob, 0);
    gcdump_blob_put(blob, 0);
    for (uint32_t i = 0; i < g->n_nodes; i++) {
        if (blob->len > INT32_MAX - 64) {
            g_set_error(error, GCDUMP_ERROR, GCDUMP_ERROR_IO,
                        "cannot write %s: the graph needs more than 2 GiB of node data, more "
                        "than a .gcdump holds", path);
            goto out;
        }
        labels[i] = blob->len;
        uint32_t t = g->node_type[i];
        if ((int64_t)g->node_size[i] == g->types[t].size)
            gcdump_blob_put(blob, (int32_t)(t << 1));
        else {
            gcdump_blob_put(blob, (int32_t)(t << 1 | 1));
            gcdump_blob_put(blob, (int32_t)MIN(g->node_size[i], (uint32_t)INT32_MAX));
        }
        uint64_t from = g->first_child[i], to = g->first_child[i + 1];
        gcdump_blob_put(blob, (int32_t)(to - from));
        for (uint64_t c = from; c < to; c++)
            gcdump_blob_put(blob, (int32_t)((int64_t)g->children[c] - (int64_t)i));
    }

    fs_put_i32(&w, 20);
    fs_put(&w, "!FastSerialization.1", 20);
    fs_put_u8(&w, 4); /* the GCHeapDump */
    fs_put_type(&w, 10, 8, "GCHeapDump");
    fs_put_u8(&w, 4); /* its MemoryGraph */
    fs_put_type(&w, 1, 0, "Graphs.MemoryGraph");
    fs_put_i64(&w, g->total_size);
    fs_put_i32(&w, (int32_t)g->root);
    fs_put_i32(&w, (int32_t)g->n_types);
    for (uint32_t i = 0; i < g->n_types; i++) {
        fs_put_string(&w, g->types[i].name);
        fs_put_i32(&w, g->types[i].size);
        fs_put_string(&w, g->types[i].module);
    }
    fs_put_i32(&w, (int32_t)g->n_nodes);
    fs_put(&w, labels, (size_t)g->n_nodes * 4);
    fs_put_i32(&w, (int32_t)blob->len);
    fs_put(&w, blob->data, blob->len);
    fs_put_i32(&w, (int32_t)g->n_nodes);
    fs_put(&w, g->node_address, (size_t)g->n_nodes * 8);
    fs_put_u8(&w, 8); /* tagged byte: Is64Bit */
    fs_put_u8(&w, g->meta.is64bit ? 1 : 0);
    fs_put_u8(&w, 6); /* the MemoryGraph ends */
    fs_put_u8(&w, g->meta.is64bit ? 1 : 0);
    fs_put_float(&w, 1.0f); /* not sampled */
    fs_put_float(&w, 1.0f);
    fs_put_u8(&w, 1); /* no JSHeapInfo */
    fs_put_u8(&w, 1); /* no DotNetHeapInfo */
    fs_put_string(&w, NULL); /* collection log */
    fs_put_i64(&w, g->meta.time_collected);
    fs_put_string(&w, g->meta.machine_name);
    fs_put_string(&w, g->meta.process_name);
    fs_put_i32(&w, g->meta.process_id);
    fs_put_i64(&w, g->meta.total_process_commit);
    fs_put_i64(&w, g->meta.total_process_working_set);
    fs_put_i32(&w, 0); /* no per-type multipliers */
    /* Tagged: no interop data (a region the reader may skip: forward reference 0 marks its
     * end), then the creation tool. */
    fs_put_u8(&w, 12);
    fs_put_i32(&w, 0);
    fs_put_u8(&w, 1);
    uint64_t region_end = w.pos;
    fs_put_u8(&w, 13);
    fs_put_string(&w, g->meta.creation_tool ? g->meta.creation_tool : "heaplens");
    fs_put_u8(&w, 6); /* the GCHeapDump ends */
    fs_put_u8(&w, 6); /* no more objects */
    uint64_t table = w.pos;
    fs_put_i32(&w, 1);
    fs_put_i32(&w, (int32_t)region_end);
    uint64_t trailer = w.pos;
    fs_put_i32(&w, (int32_t)table);
    fs_put_i32(&w, (int32_t)trailer);
    if (w.pos > UINT32_MAX) {
        g_set_error(error, GCDUMP_ERROR, GCDUMP_ERROR_IO,
                    "cannot write %s: more than 4 GiB, more than a .gcdump holds", path);
        goto out;
    }
    if (ferror(out)) {
        g_set_error(error, GCDUMP_ERROR, GCDUMP_ERROR_IO, "cannot write %s: %s", path,
                    g_strerror(errno));
        goto out;
    }
    ok = TRUE;
out:
    g_byte_array_free(blob, TRUE);
    g_free(labels);
    return ok;
}
