/* gcdump.h — .gcdump files (dotnet-gcdump, dotnet-monitor, PerfView) in and out.
 *
 * A .gcdump is PerfView's FastSerialization of a GCHeapDump holding a MemoryGraph: a table of
 * types (name, module, a size), nodes (type, size, children as node indices, an address) and a
 * root node. Real objects have an address; the root and the nodes under it that name kinds of
 * roots ("[local vars]", "[strong Handles]", "[static var X]") have none (address 0) and size 0.
 * The format is described in README.md, as read from PerfView's own (MIT) code; this is our own.
 *
 *   gcdump_graph_read    a file -> gcdump_graph (every byte bounds-checked: a truncated,
 *                        corrupted or foreign file is one error line, never a crash)
 *   gcdump_graph_write   gcdump_graph -> a file `dotnet-gcdump report`, PerfView and Visual
 *                        Studio open
 *   gcdump_import        gcdump_graph -> a new heaplens database with one snapshot (through the
 *                        store's own writer, store.h: the database is what a recording is)
 *   gcdump_export_graph  one snapshot of a heaplens database -> gcdump_graph
 *
 * Errors: GError ** last, GCDUMP_ERROR, one line meant to follow "heaplens: ". Single-threaded
 * (gcdump_import runs the stream's producer on a thread of its own inside).
 */
#ifndef HEAPLENS_GCDUMP_H
#define HEAPLENS_GCDUMP_H

#include "query/snapshot_graph.h"

#include <glib.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>

#define GCDUMP_ERROR (gcdump_error_quark())
GQuark gcdump_error_quark(void);
typedef enum {
    GCDUMP_ERROR_IO,      /* the file cannot be read or written */
    GCDUMP_ERROR_FORMAT,  /* not a .gcdump, a version we do not read, truncated or damaged */
    GCDUMP_ERROR_STORE,   /* the database could not be written (the store's message) */
} GcdumpError;

typedef struct gcdump_type {
    char *name;   /* as in the file: "System.String", "System.Byte[] (Bytes > 10K)" */
    char *module; /* the module's path; NULL when the file has none */
    int32_t size; /* the file's: the size of the first node of this type (not a total) */
} gcdump_type;

/* What the GCHeapDump says about where it came from (zero / NULL when the file does not say:
 * dotnet-gcdump writes only the creation tool and the multipliers). */
typedef struct gcdump_meta {
    int32_t version;          /* GCHeapDump's format version (10 for dotnet-gcdump 10) */
    char *creation_tool;      /* "dotnet-gcdump", "heaplens" */
    int64_t time_collected;   /* .NET ticks (100 ns since 0001-01-01), 0 unknown */
    char *machine_name, *process_name;
    int32_t process_id;
    int64_t total_process_commit, total_process_working_set;
    float average_count_multiplier, average_size_multiplier; /* 1 when not sampled */
    uint32_t n_count_multipliers; /* per-type multipliers: > 0 when dotnet-gcdump sampled */
    gboolean is64bit;
    uint32_t segments;        /* DotNetHeapInfo's segments (0: none in the file) */
} gcdump_meta;

/* A MemoryGraph in memory, children in one array (CSR). Nodes without an address are the
 * root's pseudo-nodes. */
typedef struct gcdump_graph {
    uint32_t n_types;
    gcdump_type *types;
    uint32_t n_nodes;
    uint32_t root;            /* RootIndex */
    uint32_t *node_type;      /* n_nodes */
    uint32_t *node_size;      /* n_nodes */
    uint64_t *node_address;   /* n_nodes; 0: a pseudo-node */
    uint64_t *first_child;    /* n_nodes + 1: children of i are children[first_child[i] ..
                               * first_child[i + 1]) */
    uint32_t *children;
    int64_t total_size;       /* the file's TotalSize: the sum of every node's size */
    gcdump_meta meta;
} gcdump_graph;

/* Reads the .gcdump at `path`. Fails with GCDUMP_ERROR_IO or _FORMAT (one line naming the file
 * and what is wrong). */
gcdump_graph *gcdump_graph_read(const char *path, GError **error);
void gcdump_graph_free(gcdump_graph *g); /* accepts NULL */
G_DEFINE_AUTOPTR_CLEANUP_FUNC(gcdump_graph, gcdump_graph_free)

/* TRUE for node `i` being an object (it has an address and a defined type), FALSE for the root's
 * pseudo-nodes and for nodes that were referenced but never defined (type "UNDEFINED"). */
gboolean gcdump_graph_is_object(const gcdump_graph *g, uint32_t i);

/* The type name heaplens stores for `name`: without the size bucket dotnet-gcdump appends to
 * objects above 1000 bytes (" (Bytes > 10K)"), so that one type stays one type. Newly allocated. */
char *gcdump_type_name_base(const char *name);

/* Writes `g` as a .gcdump (GCHeapDump version 10, the layout dotnet-gcdump writes) to `out`.
 * Fails with GCDUMP_ERROR_IO on a write error. */
gboolean gcdump_graph_write(const gcdump_graph *g, FILE *out, const char *path, GError **error);

/* What gcdump_import made. */
typedef struct gcdump_import_summary {
    uint64_t objects, refs, roots, bytes, types;
    uint64_t unresolved;      /* references to nodes that are not objects (never defined) */
    gboolean sampled;         /* dotnet-gcdump kept a sample of the heap (multipliers != 1) */
} gcdump_import_summary;

/* Creates the heaplens database `db_path` (refused if it exists, as by the store) from `g`, read
 * from `source` (its path and metadata are stored in the table `imports`): run.mode 'import',
 * one GC and one snapshot (trigger 'import') holding every object with its type, size and
 * references, and the roots; objects' ids are their node index + 1. The database is finished
 * and its first read done. On failure nothing is left at `db_path`. */
gboolean gcdump_import(const gcdump_graph *g, const char *source, const char *db_path,
                       gcdump_import_summary *summary, GError **error);

/* The snapshot `info` (snapshot_pick) of the open recording `db` as a graph: a "[.NET Roots]" node with one
 * node per kind of root under it, then every object (address = its heaplens id, the types by
 * heaplens' names, sizes capped at 2^31 - 1), references in field order. */
gcdump_graph *gcdump_export_graph(sqlite3 *db, const snapshot_info *info, GError **error);

#endif /* HEAPLENS_GCDUMP_H */
