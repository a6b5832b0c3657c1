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
} root_path;

/* Up to `limit` shortest paths to `target` in `g`, whose graph must be REVERSED (or `reversed`
 * given: a reversed an_graph of the same nodes, e.g. an_graph_new_reversed of a forward one).
 * Returns a GPtrArray of root_path * (empty when nothing roots the target), NULL and an error
 * when out of memory. */
GPtrArray *root_paths_find(const snapshot_graph *g, const an_graph *reversed, uint32_t target,
                           size_t limit, GError **error);

/* The strong roots holding `node`, as JSON: [{"kind":"handle","flags":["pinning"],
 * "root_id":N,"handle":"pinned"}...] ("handle" only for handle roots: pinned, weak,
 * refcounted or strong, from the flags). New reference. */
json_t *root_paths_roots_json(const snapshot_graph *g, uint32_t node);
/* The same as text: "handle (strong, 0x7f...)", "stack", joined by "; ". Free with g_free. */
char *root_paths_roots_text(const snapshot_graph *g, uint32_t node);

/* The hops of `path` as JSON: [{"object":id,"type":"...","size":N}, ...]. New reference. */
json_t *root_path_hops_json(const snapshot_graph *g, const snapshot_types *types,
                            const root_path *path);
/* The path in one line: "System.Object[] #5 -> App.Registry #204 -> ..." (g_free). */
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
