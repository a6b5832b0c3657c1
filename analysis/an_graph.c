/* an_graph.c — CSR graph: building, sealing, reversing, breadth-first search. */
#include "analysis/an_graph.h"
#include "analysis/an_internal.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* Invariants.
 * Building (sealed == false): `from` and `to` hold n_edges edges (capacity `cap`), every node
 *   < n; `grouped` is true while every from[i] >= from[i-1] (sealing is then one counting pass).
 * Sealed: `from` is NULL; offsets[0] = 0, offsets[i] <= offsets[i+1], offsets[n] = n_edges;
 *   the successors of u are to[offsets[u] .. offsets[u+1]). */
struct an_graph {
    uint32_t n;
    bool sealed;
    bool grouped;
    uint64_t n_edges;
    uint64_t cap;
    uint32_t *from;
    uint32_t *to;
    uint32_t *offsets; /* n + 1, when sealed */
};

an_graph *an_graph_new(uint32_t n_nodes)
{
    if (n_nodes == 0 || n_nodes > AN_MAX_NODES)
        return NULL;
    an_graph *g = calloc(1, sizeof *g);
    if (!g)
        return NULL;
    g->n = n_nodes;
    g->grouped = true;
    return g;
}

void an_graph_free(an_graph *g)
{
    if (!g)
        return;
    free(g->from);
    free(g->to);
    free(g->offsets);
    free(g);
}

static int edges_grow(an_graph *g, uint64_t want)
{
    if (want <= g->cap)
        return AN_OK;
    if (want > AN_MAX_EDGES)
        return AN_ERR_TOO_BIG;
    uint64_t cap = g->cap ? g->cap : 1024;
    while (cap < want)
        cap = cap + cap / 2;
    if (cap > AN_MAX_EDGES)
        cap = AN_MAX_EDGES;
    uint32_t *from = realloc(g->from, (size_t)cap * sizeof *from);
    if (!from)
        return AN_ERR_NOMEM;
    g->from = from;
    uint32_t *to = realloc(g->to, (size_t)cap * sizeof *to);
    if (!to)
        return AN_ERR_NOMEM; /* `from` grew, harmlessly; cap unchanged */
    g->to = to;
    g->cap = cap;
    return AN_OK;
}

int an_graph_reserve(an_graph *g, uint64_t n_edges)
{
    if (g->sealed)
        return AN_ERR_INVALID;
    if (n_edges > AN_MAX_EDGES)
        return AN_ERR_TOO_BIG;
    if (n_edges <= g->cap)
        return AN_OK;
    /* exact size: no slack when the caller knows the count */
    uint32_t *from = realloc(g->from, (size_t)n_edges * sizeof *from);
    if (!from)
        return AN_ERR_NOMEM;
    g->from = from;
    uint32_t *to = realloc(g->to, (size_t)n_edges * sizeof *to);
    if (!to)
        return AN_ERR_NOMEM;
    g->to = to;
    g->cap = n_edges;
    return AN_OK;
}

int an_graph_add_edge(an_graph *g, uint32_t from, uint32_t to)
{
    if (g->sealed || from >= g->n || to >= g->n)
        return AN_ERR_INVALID;
    if (g->n_edges == g->cap) {
        int rc = edges_grow(g, g->n_edges + 1);
        if (rc != AN_OK)
            return rc;
    }
    if (g->n_edges > 0 && from < g->from[g->n_edges - 1])
        g->grouped = false;
    g->from[g->n_edges] = from;
    g->to[g->n_edges] = to;
    g->n_edges++;
    return AN_OK;
}

int an_graph_add_edges(an_graph *g, const uint32_t *from, const uint32_t *to, uint64_t n)
{
    if (g->sealed)
        return AN_ERR_INVALID;
    bool grouped = g->grouped;
    uint32_t last = g->n_edges > 0 ? g->from[g->n_edges - 1] : 0;
    for (uint64_t i = 0; i < n; i++) {
        if (from[i] >= g->n || to[i] >= g->n)
            return AN_ERR_INVALID;
        grouped = grouped && from[i] >= last;
        last = from[i];
    }
    if (n > AN_MAX_EDGES - g->n_edges)
        return AN_ERR_TOO_BIG;
    int rc = edges_grow(g, g->n_edges + n);
    if (rc != AN_OK)
        return rc;
    if (n > 0) {
        memcpy(g->from + g->n_edges, from, (size_t)n * sizeof *from);
        memcpy(g->to + g->n_edges, to, (size_t)n * sizeof *to);
    }
    g->n_edges += n;
    g->grouped = grouped;
    return AN_OK;
}

int an_graph_seal(an_graph *g)
{
    if (g->sealed)
        return AN_ERR_INVALID;
    uint32_t *offsets = calloc((size_t)g->n + 1, sizeof *offsets);
    if (!offsets)
        return AN_ERR_NOMEM;
    for (uint64_t i = 0; i < g->n_edges; i++)
        offsets[g->from[i] + 1]++;
    for (uint32_t u = 0; u < g->n; u++)
        offsets[u + 1] += offsets[u];

    if (!g->grouped) {
        /* counting sort by source, stable */
        uint32_t *to = malloc((size_t)(g->n_edges ? g->n_edges : 1) * sizeof *to);
        uint32_t *cursor = malloc((size_t)g->n * sizeof *cursor);
        if (!to || !cursor) {
            free(to);
            free(cursor);
            free(offsets);
            return AN_ERR_NOMEM;
        }
        memcpy(cursor, offsets, (size_t)g->n * sizeof *cursor);
        for (uint64_t i = 0; i < g->n_edges; i++)
            to[cursor[g->from[i]]++] = g->to[i];
        free(cursor);
        free(g->to);
        g->to = to;
    } else if (g->cap > g->n_edges && g->n_edges > 0) {
        uint32_t *to = realloc(g->to, (size_t)g->n_edges * sizeof *to);
        if (to)
            g->to = to;
    }
    free(g->from);
    g->from = NULL;
    g->offsets = offsets;
    g->cap = g->n_edges;
    g->sealed = true;
    return AN_OK;
}

an_graph *an_graph_new_reversed(const an_graph *g)
{
    if (!g->sealed)
        return NULL;
    an_graph *r = an_graph_new(g->n);
    if (!r)
        return NULL;
    r->offsets = calloc((size_t)g->n + 1, sizeof *r->offsets);
    r->to = malloc((size_t)(g->n_edges ? g->n_edges : 1) * sizeof *r->to);
    uint32_t *cursor = malloc((size_t)g->n * sizeof *cursor);
    if (!r->offsets || !r->to || !cursor) {
        free(cursor);
        an_graph_free(r);
        return NULL;
    }
    for (uint64_t i = 0; i < g->n_edges; i++)
        r->offsets[g->to[i] + 1]++;
    for (uint32_t u = 0; u < g->n; u++)
        r->offsets[u + 1] += r->offsets[u];
    memcpy(cursor, r->offsets, (size_t)g->n * sizeof *cursor);
    for (uint32_t u = 0; u < g->n; u++)
        for (uint32_t e = g->offsets[u]; e < g->offsets[u + 1]; e++)
            r->to[cursor[g->to[e]]++] = u;
    free(cursor);
    r->n_edges = r->cap = g->n_edges;
    r->sealed = true;
    return r;
}

uint32_t an_graph_nodes(const an_graph *g)
{
    return g->n;
}

uint64_t an_graph_edges(const an_graph *g)
{
    return g->n_edges;
}

const uint32_t *an_graph_successors(const an_graph *g, uint32_t node, uint32_t *count)
{
    if (!g->sealed || node >= g->n) {
        *count = 0;
        return NULL;
    }
    *count = g->offsets[node + 1] - g->offsets[node];
    return g->to + g->offsets[node];
}

const uint32_t *an_graph_offsets_peek(const an_graph *g)
{
    return g->sealed ? g->offsets : NULL;
}

const uint32_t *an_graph_targets_peek(const an_graph *g)
{
    return g->sealed ? g->to : NULL;
}

int an_graph_bfs(const an_graph *g, uint32_t source, uint32_t *prev, uint32_t *dist)
{
    if (!g->sealed || source >= g->n)
        return AN_ERR_INVALID;
    uint32_t *queue = malloc((size_t)g->n * sizeof *queue);
    if (!queue)
        return AN_ERR_NOMEM;
    for (uint32_t u = 0; u < g->n; u++)
        prev[u] = AN_NONE;
    if (dist)
        for (uint32_t u = 0; u < g->n; u++)
            dist[u] = AN_NONE;
    uint32_t head = 0, tail = 0;
    prev[source] = source;
    if (dist)
        dist[source] = 0;
    queue[tail++] = source;
    while (head < tail) {
        uint32_t u = queue[head++];
        for (uint32_t e = g->offsets[u]; e < g->offsets[u + 1]; e++) {
            uint32_t v = g->to[e];
            if (prev[v] != AN_NONE)
                continue;
            prev[v] = u;
            if (dist)
                dist[v] = dist[u] + 1;
            queue[tail++] = v;
        }
    }
    free(queue);
    return AN_OK;
}
