/* an_dominators.h — the dominator tree of a heap graph and the retained size of every object.
 *
 * Node d dominates node v when every path from the root (node 0) to v passes through d: if d
 * were gone, v would be unreachable. The immediate dominator idom(v) is the closest strict
 * dominator; these links form a tree. The retained size of v is the sum of the sizes of the nodes
 * v dominates (v included): what the GC would free if v alone stopped being referenced. The
 * retained count is how many nodes that is.
 *
 * Algorithm: Lengauer–Tarjan with path compression ("simple" version, O(m log n), no recursion):
 * an iterative depth-first search numbers the reachable nodes in preorder, the predecessors are
 * laid out again in that numbering, semidominators are computed in reverse preorder with an
 * iterative eval/compress over the linked forest, and immediate dominators follow from the
 * buckets. Retained sizes are then one pass in reverse preorder (every node after its idom), so
 * the whole computation is linear apart from the log factor of path compression, and nothing
 * depends on the depth of the graph (a 10-million-node linked list is fine).
 *
 * Memory while computing, for n nodes, r of them reachable and m edges among those: 8n + 24r + 4m
 * bytes at the peak, and the result keeps 16 bytes per node plus 4 per reachable node.
 *
 * Pure C (libc only), no I/O, no globals. A tree is read only once computed and may be read from
 * several threads.
 */
#ifndef HEAPLENS_AN_DOMINATORS_H
#define HEAPLENS_AN_DOMINATORS_H

#include "analysis/an_graph.h"

typedef struct an_domtree an_domtree;

/* Called now and then while computing: `phase` is a static string ("search", "predecessors",
 * "dominators", "sizes"), `done` of `total` units of that phase. Must not call back into the
 * tree. */
typedef void an_progress_fn(void *ctx, const char *phase, uint64_t done, uint64_t total);

/* Computes the dominator tree of the sealed graph `g` from node 0, and retained sizes from
 * `sizes` (an_graph_nodes(g) entries, the shallow size of each node; NULL: all 0). Both are
 * borrowed for the call only. `progress` may be NULL. On success *out is a new tree (free with
 * an_domtree_free); AN_ERR_INVALID for an unsealed graph, AN_ERR_NOMEM. */
int an_domtree_compute(const an_graph *g, const uint64_t *sizes, an_progress_fn *progress,
                       void *progress_ctx, an_domtree **out);

/* Frees the tree; accepts NULL. */
void an_domtree_free(an_domtree *t);

/* Nodes of the graph it was computed from (n), and how many are reachable from node 0 (node 0
 * included). */
uint32_t an_domtree_nodes(const an_domtree *t);
uint32_t an_domtree_reachable(const an_domtree *t);

/* Arrays of n entries indexed by node, borrowed from the tree:
 *  idoms:            the immediate dominator; AN_NONE for node 0 and for unreachable nodes.
 *  retained_bytes:   the sum of the sizes of the nodes it dominates, itself included; 0 when
 *                    unreachable. Node 0's is the size of everything reachable.
 *  retained_counts:  how many nodes it dominates, itself included; 0 when unreachable. */
const uint32_t *an_domtree_idoms(const an_domtree *t);
const uint64_t *an_domtree_retained_bytes(const an_domtree *t);
const uint32_t *an_domtree_retained_counts(const an_domtree *t);

/* The reachable nodes, an_domtree_reachable(t) of them, node 0 first, in depth-first preorder
 * of the graph: every node comes after its immediate dominator (and after all its dominators).
 * Borrowed from the tree. */
const uint32_t *an_domtree_preorder(const an_domtree *t);

/* Retained size of groups of nodes (types): `group` gives each node's group (< n_groups) or
 * AN_NONE (n entries, borrowed; any other value: AN_ERR_INVALID). For each group g, bytes[g] and
 * counts[g] (n_groups entries each, written) are the retained bytes and nodes of the members of g
 * that no other member of g dominates — the union of the members' dominator subtrees, each node
 * counted once. That is what removing every member would free at least; a node kept alive only by
 * two members together is not counted (it has no single dominator in the group). AN_ERR_NOMEM
 * (scratch: 8 bytes per node, 8 per reachable node and 4 per group). */
int an_domtree_group_retained(const an_domtree *t, const uint32_t *group, uint32_t n_groups,
                              uint64_t *bytes, uint64_t *counts);

/* Checks the tree's invariants (idom of every reachable node is reachable and comes before it
 * in the preorder; retained sizes add up). For tests; returns AN_OK or AN_ERR_INVALID. */
int an_domtree_check(const an_domtree *t, const uint64_t *sizes);

#endif /* HEAPLENS_AN_DOMINATORS_H */
