/* an_internal.h — what the analysis sources share and nobody else sees. */
#ifndef HEAPLENS_AN_INTERNAL_H
#define HEAPLENS_AN_INTERNAL_H

#include "analysis/an_graph.h"

/* The rows of a sealed graph, borrowed: offsets has an_graph_nodes(g) + 1 entries, the
 * successors of u are targets[offsets[u] .. offsets[u+1]). NULL when `g` is not sealed. */
const uint32_t *an_graph_offsets_peek(const an_graph *g);
const uint32_t *an_graph_targets_peek(const an_graph *g);

#endif /* HEAPLENS_AN_INTERNAL_H */
