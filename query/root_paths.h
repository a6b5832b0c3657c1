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

#include "query/snapshot_graph.h"

#include <glib.h>
#include <jansson.h>

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

#endif /* HEAPLENS_QUERY_ROOT_PATHS_H */
