/* snapshot_graph.h — one heap snapshot of a recording, in memory, as a graph.
 *
 * Reads the tables snapshots, snapshot_objects, snapshot_refs, snapshot_roots, objects and types
 * (store/SCHEMA.md) of one snapshot into dense arrays: node 0 is a virtual root, nodes 1 .. n-1
 * are the snapshot's objects in id order. The graph (analysis/an_graph.h) has an edge for every
 * reference and one edge from node 0 to every object a root points to — except weak roots (weak
 * handles do not keep objects alive) — in the direction the caller asks for.
 *
 * Cost for N objects and M references: one range scan of each snapshot table (rows come in key
 * order), a lookup of each object in `objects` (on a file whose rows are not built, in the
 * connection's TEMP `objects`, the packed rows read into memory once, directly: store.h
 * store_objects_view_memory); memory 20 bytes per object (id, type, size) plus
 * the graph (4 bytes per object and per reference, 8 more per reference while loading). The
 * references are read on a second thread and connection while the objects are read (16 bytes
 * more per reference while loading), and resolved to nodes on two threads.
 *
 * Also here, for every command that works on snapshots: picking a snapshot (--snapshot S, or the
 * last one) and the type table.
 *
 * Errors: GError ** last (QUERY_ERROR_*), one line. Call from one thread; loading uses two inside.
 */
#ifndef HEAPLENS_QUERY_SNAPSHOT_GRAPH_H
#define HEAPLENS_QUERY_SNAPSHOT_GRAPH_H

#include "analysis/an_graph.h"
#include "query/progress.h"
#include "query/query.h"

#include <glib.h>
#include <sqlite3.h>
#include <stdint.h>

/* ---- picking a snapshot ---------------------------------------------------------------- */

typedef struct snapshot_info {
    int64_t snapshot;
    int64_t gc;
    int64_t gc_generation; /* condemned generation of its GC (2: a full GC) */
    int64_t objects, refs, roots;
} snapshot_info;

/* The snapshot `text` names (a --snapshot value, parsed here: a number, or @CHECKPOINT for the
 * snapshot taken at that checkpoint, checkpoints.h; the option is named in errors as
 * "--<option>" of `command`), or the last snapshot when `text` is NULL. Fails with one line when
 * the recording has no snapshot (and says how to get one) or no such snapshot (and names the
 * ones it has). */
gboolean snapshot_pick(sqlite3 *db, const char *path, const char *command, const char *option,
                       const char *text, snapshot_info *info, GError **error);

/* Every snapshot of the recording, oldest first (GArray of snapshot_info). */
GArray *snapshot_list_new(sqlite3 *db, GError **error);

/* ---- types ------------------------------------------------------------------------------ */

typedef struct snapshot_types snapshot_types;

/* The types table. */
snapshot_types *snapshot_types_new(sqlite3 *db, GError **error);
void snapshot_types_free(snapshot_types *t); /* accepts NULL */
G_DEFINE_AUTOPTR_CLEANUP_FUNC(snapshot_types, snapshot_types_free)
/* The name of type `type_id`: borrowed from `t`; or "<type 17>" in `buf` for an id without a name
 * (as the views name it); "<unknown>" for 0 (an object the recording has no row for). */
const char *snapshot_types_name(const snapshot_types *t, uint32_t type_id,
                                char buf[QUERY_FORMAT_MAX]);
/* TRUE for an array type (types.flags bit 1). */
gboolean snapshot_types_is_array(const snapshot_types *t, uint32_t type_id);
/* The id of the type named exactly `name`; 0 when there is none. */
uint32_t snapshot_types_find(const snapshot_types *t, const char *name);
/* The type a user means by `name`: its full name, or the full name with any namespaces left out
 * ("Dictionary<Int32, Customer>+Entry[]" for
 * "System.Collections.Generic.Dictionary<System.Int32, Shop.Customer>+Entry[]"). An exact full
 * name wins. Returns the type id; 0 with QUERY_ERROR_NOT_FOUND (no such type, `file` names the
 * recording in the message) or QUERY_ERROR_USAGE (several types match: one line listing them). */
uint32_t snapshot_types_resolve(const snapshot_types *t, const char *name, const char *file,
                                GError **error);
/* One past the largest type id. */
uint32_t snapshot_types_count(const snapshot_types *t);

/* ---- the graph ---------------------------------------------------------------------------- */

typedef enum {
    SNAPSHOT_GRAPH_FORWARD = 0,  /* edges from -> to: what each object references */
    SNAPSHOT_GRAPH_REVERSED = 1, /* edges to -> from: who references each object */
} snapshot_graph_direction;

typedef struct snapshot_root {
    uint32_t node;
    uint32_t kind;    /* HL_ROOT_OTHER, _STACK, _FINALIZER, _HANDLE (wire/hl_wire.h) */
    uint32_t flags;   /* HL_ROOT_PINNING, _WEAK, _INTERIOR, _REFCOUNTED */
    uint64_t root_id; /* the handle id, the frame's FunctionID, or 0 */
} snapshot_root;

/* Read only once loaded. */
typedef struct snapshot_graph {
    snapshot_info info;
    uint32_t n;           /* nodes: the virtual root and the objects */
    uint64_t *ids;        /* n: object id of each node (ids[0] = 0), ascending */
    uint32_t *type_ids;   /* n: 0 for node 0 and for objects without an `objects` row */
    uint64_t *sizes;      /* n: shallow size (0 for node 0 and objects without a row) */
    an_graph *graph;      /* sealed, in the direction asked for, root edges included */
    snapshot_root *roots; /* every root whose object is in the snapshot, weak ones too */
    size_t n_roots;
    uint64_t root_edges;       /* roots that are edges of node 0 (not weak) */
    uint64_t refs_unresolved;  /* references with an end that is not in snapshot_objects */
    uint64_t roots_unresolved; /* roots to nothing, or to an object not in snapshot_objects */
} snapshot_graph;

/* Loads snapshot `info->snapshot`. `progress` may be NULL. */
snapshot_graph *snapshot_graph_load(sqlite3 *db, const snapshot_info *info,
                                    snapshot_graph_direction direction, query_progress *progress,
                                    GError **error);
void snapshot_graph_free(snapshot_graph *g); /* accepts NULL */
G_DEFINE_AUTOPTR_CLEANUP_FUNC(snapshot_graph, snapshot_graph_free)

/* Objects and bytes per type of the k snapshots `infos` (leaks' series), every object of each
 * (reachable or not), added into count[i * n_types + type] and bytes[i * n_types + type] for
 * snapshot i (an object without an `objects` row, or of a type id beyond n_types, counts as type
 * 0; bytes saturate). A schema 8 file's blocks are read directly, their ids and not their
 * references, their objects' types and sizes as snapshot_block_objects_* give them, and each
 * block once however many of the
 * snapshots hold it (snapshots of a heap that changed little share most of theirs); an older
 * file's snapshot_objects joined with `objects`, a pass per snapshot. A size or type id that
 * is not a number, a negative size, or another number of objects than a snapshot's row counts
 * is damage. `skip` (0: none; a schema 8 file): the blocks that also hold snapshot `skip` are
 * left out, counted by the caller from that snapshot's graph (`leaks` from the one `report`
 * loaded): infos[i].objects are then the objects of the other blocks. */
gboolean snapshot_objects_per_type(sqlite3 *db, const snapshot_info *infos, size_t k,
                                   uint32_t n_types, int64_t skip, int64_t *count, int64_t *bytes,
                                   GError **error);

/* The types and sizes of a compact snapshot block's objects (schema 8). On a connection whose
 * `objects` is the packed rows read into memory (store.h store_objects_view_memory), each
 * object is looked up there, in ascending id order; else they come from one range of the
 * file's `objects`, SNAPSHOT_BLOCK_OBJECTS_SQL: id BETWEEN the block's first and last id, in id
 * order (a seek per block, the rows of objects dead by then stepped over). The same rows either
 * way. snapshot_block_objects_init prepares for `db` (release with _release, also after a
 * failure); _bind starts block `b`; _next steps to its next object that has a row: TRUE with *k
 * that object's index in b->ids (start with *k = 0 and add one after each row) and the row's
 * type id and size (and their SQLite types: SQLITE_INTEGER, or what the file's row holds) in
 * the reader, FALSE at the end or on an error (in *error). */
#define SNAPSHOT_BLOCK_OBJECTS_SQL                                                                  \
    "SELECT id, type_id, size FROM objects WHERE id BETWEEN ?1 AND ?2 ORDER BY id"
struct store_snapblock;
struct store_objects_memory;
typedef struct snapshot_block_objects {
    sqlite3_stmt *stmt;                   /* the file's `objects`, or NULL: */
    struct store_objects_memory *memory;  /* the rows in memory */
    int64_t type_id, size;                /* the current object's */
    int type_type, size_type;             /* their SQLite types */
} snapshot_block_objects;
gboolean snapshot_block_objects_init(snapshot_block_objects *o, sqlite3 *db, GError **error);
void snapshot_block_objects_release(snapshot_block_objects *o);
void snapshot_block_objects_bind(snapshot_block_objects *o, const struct store_snapblock *b);
gboolean snapshot_block_objects_next(snapshot_block_objects *o, const struct store_snapblock *b,
                                     uint32_t *k, GError **error);

/* The node of object `id`, or AN_NONE when it is not in the snapshot. O(log n). */
uint32_t snapshot_graph_node(const snapshot_graph *g, uint64_t id);

/* "stack", "finalizer", "handle", "other" */
const char *snapshot_root_kind_name(uint32_t kind);
/* The root's flags as words, "pinning,interior"; "" for none. Returns buf. */
char *snapshot_root_flags_text(uint32_t flags, char buf[64]);

#endif /* HEAPLENS_QUERY_SNAPSHOT_GRAPH_H */
