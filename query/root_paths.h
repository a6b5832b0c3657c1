/* root_paths.h — shortest paths from GC roots to an object of a heap snapshot.
 *
 * One breadth-first search from the object over the reversed graph (who references whom) gives
 * every object's distance to it and the next hop towards it; each rooted object that reaches it
 * then yields one shortest path, rooted object first. Paths start only at objects held by a
 * strong root (weak roots keep nothing alive). Distinct paths = distinct rooted objects, nearest
 * first; among equally near ones, lower ids first. Cost: O(objects + references) per search.
 */
#ifndef HEAPLENS_QUERY_ROOT_PATHS_H
#define HEAPLENS_QUERY_ROOT_PATHS_H

#include "query/progress.h"
#include "query/snapshot_graph.h"

#include <glib.h>
#include <jansson.h>
#include <sqlite3.h>

typedef struct root_path {
    uint32_t *nodes; /* len nodes: the rooted object first, the target last */
    uint32_t len;
    /* Set by root_path_name (schema 7 recordings): what holds each hop's successor. */
    char **fields;   /* len: the field of hop k holding hop k + 1 ("_items"); NULL: unknown,
                      * an array's element, or the last hop */
    int64_t *index;  /* len: the element of array hop k holding hop k + 1; -1: not an array */
    char *static_name; /* the static field holding hop `start` ("Ns.Type.Field"), or NULL */
    uint32_t start;    /* the first hop shown: 0, or the hop a static holds */
    /* Schema 8: a thread static's thread (OS id, 0: not a thread static) and its name (NULL:
     * unnamed); the methods of the stack roots holding the first hop (root_id -> name). */
    int64_t static_thread;
    char *static_thread_name;
    GHashTable *methods;
    /* Schema 8 with snapshot_roots.thread: the thread whose stack holds the first hop (its
     * stack roots'; OS id, 0: not known) and its name (NULL: unnamed). */
    int64_t stack_thread;
    char *stack_thread_name;
} root_path;

void root_path_free(root_path *path); /* accepts NULL */

/* Up to `limit` shortest paths to `target` in `g`, whose graph must be REVERSED (or `reversed`
 * given: a reversed an_graph of the same nodes, e.g. an_graph_new_reversed of a forward one).
 * Returns a GPtrArray of root_path * (empty when nothing roots the target), NULL and an error
 * when out of memory. */
GPtrArray *root_paths_find(const snapshot_graph *g, const an_graph *reversed, uint32_t target,
                           size_t limit, GError **error);

/* Names the hops of `path` in the snapshot `g` was loaded from: the field (or element) of each
 * hop that holds the next (snapshot_objects.fields, `fields`), and the static that holds a hop
 * (snapshot_statics: the path then starts there, the runtime's statics array and its handle
 * left out). A recording older than schema 7 leaves the path unnamed. One lookup per hop. */
gboolean root_path_name(sqlite3 *db, const snapshot_graph *g, const snapshot_types *types,
                        root_path *path, GError **error);

/* The root of `path` as JSON: [{"kind":"static","static":"Ns.Type.Field"}] when a static holds
 * it (a thread static adds "thread":{"os_tid":N,"name":S|null}), else root_paths_roots_json of
 * its first hop, a stack root with its frame's method ("method":"Ns.Type.Method") where the
 * recording names it and its thread ("thread":{"os_tid":N,"name":S|null}) where the recording
 * found it. New reference. */
json_t *root_path_roots_json(const snapshot_graph *g, const root_path *path);
/* ... as text: "static Type.Field" (a thread static: "static Type.Field (thread NAME, TID)"),
 * else root_paths_roots_text, a stack root with its method and thread: "stack (Program.Main,
 * thread NAME, TID)". g_free. */
char *root_path_root_text(const snapshot_graph *g, const root_path *path);

/* The strong roots holding `node`, as JSON: [{"kind":"handle","flags":["pinning"],
 * "root_id":N,"handle":"pinned"}...] ("handle" only for handle roots: pinned, weak,
 * refcounted or strong, from the flags). New reference. */
json_t *root_paths_roots_json(const snapshot_graph *g, uint32_t node);
/* The same as text: "handle (strong, 0x7f...)", "stack", joined by "; ", each text once (two
 * stack slots of one frame are two roots that say the same). Free with g_free. */
char *root_paths_roots_text(const snapshot_graph *g, uint32_t node);

/* The hops of `path` from its start as JSON: [{"object":id,"type":"...","size":N,
 * "field":"_items"}, {..., "index":1199}, ...]: "field" (or "index" for an array's element) is
 * what holds the next hop, when known. New reference. */
json_t *root_path_hops_json(const snapshot_graph *g, const snapshot_types *types,
                            const root_path *path);
/* The path in one line, from its start: "App.Registry #204 -> App.Session[] #300 -> ...", or
 * once named (root_path_name), as code reads it, types without namespaces:
 * "Registry._sessions -> List<Session>._items -> Session[][7] -> Session #20661"; a run of the same
 * hop (a linked list) once, with its count: "Node.Next (9 times)" (g_free). */
char *root_path_text(const snapshot_graph *g, const snapshot_types *types, const root_path *path);

/* What `heaplens roots` shows: why an object is alive. */
typedef struct root_paths_answer {
    snapshot_info info;
    snapshot_types *types; /* owned */
    snapshot_graph *graph; /* owned; REVERSED */
    int64_t object;        /* the object asked for, or the largest instance of the type */
    uint32_t target;       /* its node in `graph` */
    GPtrArray *paths;      /* root_path *, as root_paths_find; empty: no root reaches it */
} root_paths_answer;

/* The paths from GC roots to an object of a snapshot of the recording at `path` (open as
 * `db`): snapshot_pick (`snapshot_text`, the --snapshot value; NULL: the last); the object
 * `object_id`, or when `type_name` is given (snapshot_types_resolve) the instance of that type
 * that retains the most (retention_ensure first; QUERY_ERROR_NOT_FOUND when none is reachable);
 * up to `limit` paths (root_paths_find), reporting to `progress`. Fills *a (release with
 * root_paths_answer_clear, also after a failure); QUERY_ERROR_NOT_FOUND when the object is not
 * in the snapshot. The caller prints, then calls retention_commit. */
gboolean root_paths_answer_read(sqlite3 *db, const char *path, const char *snapshot_text,
                                uint64_t object_id, const char *type_name, size_t limit,
                                query_progress *progress, root_paths_answer *a, GError **error);
void root_paths_answer_clear(root_paths_answer *a);

#endif /* HEAPLENS_QUERY_ROOT_PATHS_H */
