/* an_graph.h — a directed graph in compressed sparse rows (CSR), built once, then read only.
 *
 * The graph of a heap snapshot: nodes are dense indexes 0 .. n-1 (the caller maps object ids to
 * them), an edge u -> v says "u has a field that points to v". By convention node 0 is a virtual
 * root with one edge to every object a GC root points to; the dominator tree (an_dominators.h)
 * and breadth-first paths start there.
 *
 * Life cycle: an_graph_new(n) -> an_graph_add_edge()* -> an_graph_seal() -> read -> an_graph_free.
 * Edges may be added in any order; adding them grouped by source (as a table ordered by `from`
 * yields them) makes sealing a single pass with no extra memory. Self-loops and duplicate edges
 * are kept; every algorithm here tolerates them.
 *
 * Limits: at most 2^32 - 2 nodes and 2^32 - 1 edges (AN_ERR_TOO_BIG beyond). Memory: 8 bytes per
 * edge while building (plus growth slack; an_graph_reserve avoids it), 4 bytes per node and
 * 4 bytes per edge once sealed.
 *
 * Pure C (libc only), no I/O, no globals. A graph is not thread-safe while being built; a sealed
 * graph may be read from several threads.
 */
#ifndef HEAPLENS_AN_GRAPH_H
#define HEAPLENS_AN_GRAPH_H

#include <stddef.h>
#include <stdint.h>

/* Error codes of the analysis module (int, 0 = success). */
enum {
    AN_OK = 0,
    AN_ERR_NOMEM = -1,   /* an allocation failed; the object is unchanged */
    AN_ERR_INVALID = -2, /* a node out of range, or a call in the wrong state */
    AN_ERR_TOO_BIG = -3, /* more nodes or edges than the limits above */
};

/* "No node": an unreachable node's parent or immediate dominator, the root's own. */
#define AN_NONE UINT32_MAX
#define AN_MAX_NODES (UINT32_MAX - 1u)
#define AN_MAX_EDGES ((uint64_t)UINT32_MAX)

typedef struct an_graph an_graph;

/* A graph of `n_nodes` nodes (1 <= n_nodes <= AN_MAX_NODES) and no edges, open for adding edges.
 * NULL when out of memory or n_nodes is out of range. */
an_graph *an_graph_new(uint32_t n_nodes);

/* Frees the graph; accepts NULL. */
void an_graph_free(an_graph *g);

/* Makes room for `n_edges` edges in total before sealing (an optimisation only).
 * AN_ERR_NOMEM, AN_ERR_TOO_BIG, or AN_ERR_INVALID after sealing. */
int an_graph_reserve(an_graph *g, uint64_t n_edges);

/* Adds the edge from -> to. AN_ERR_INVALID when a node is out of range or the graph is sealed;
 * AN_ERR_NOMEM, AN_ERR_TOO_BIG. On error the graph is unchanged. */
int an_graph_add_edge(an_graph *g, uint32_t from, uint32_t to);

/* Adds the edges from[i] -> to[i], i < n, as n calls of an_graph_add_edge would (one check and
 * one copy). On error the graph is unchanged. */
int an_graph_add_edges(an_graph *g, const uint32_t *from, const uint32_t *to, uint64_t n);
/* Ends building: lays the edges out in rows, keeping, within one source, the order they were
 * added in. AN_ERR_NOMEM leaves the graph unsealed and intact (try again or free it);
 * AN_ERR_INVALID when already sealed. */
int an_graph_seal(an_graph *g);

/* A new sealed graph with every edge reversed (u -> v becomes v -> u); `g` must be sealed.
 * NULL when out of memory or `g` is not sealed. */
an_graph *an_graph_new_reversed(const an_graph *g);

uint32_t an_graph_nodes(const an_graph *g);
uint64_t an_graph_edges(const an_graph *g);

/* The successors of `node` in a sealed graph: *count entries, borrowed from the graph (valid
 * until it is freed). `node` must be < an_graph_nodes(g) and the graph sealed (NULL and
 * *count = 0 otherwise). */
const uint32_t *an_graph_successors(const an_graph *g, uint32_t node, uint32_t *count);

/* Breadth-first search of a sealed graph from `source`: for every node, prev[node] is the node
 * before it on a shortest path from `source` (prev[source] = source; AN_NONE when unreachable),
 * and, when `dist` is not NULL, dist[node] its number of edges from `source` (AN_NONE when
 * unreachable). Among equally short paths, the one through the earlier edge wins (edges in the
 * order they were added), so the result is deterministic. `prev` and `dist` hold
 * an_graph_nodes(g) entries, owned by the caller. Run it on an_graph_new_reversed() to get, for
 * every node, the next hop on a shortest path *to* `source`. AN_ERR_INVALID for an unsealed
 * graph or a source out of range; AN_ERR_NOMEM when its queue (4 bytes per node) cannot be
 * allocated. */
int an_graph_bfs(const an_graph *g, uint32_t source, uint32_t *prev, uint32_t *dist);

#endif /* HEAPLENS_AN_GRAPH_H */
