/* an_dominators.c — Lengauer–Tarjan (simple version, path compression), iterative throughout.
 *
 * Vocabulary: "node" = an index of the graph (0 .. n-1); "vertex" = a depth-first preorder
 * number (0 .. r-1), vertex 0 = node 0. The algorithm works on vertices; the result is handed
 * out per node.
 */
#include "analysis/an_dominators.h"
#include "analysis/an_internal.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

/* Invariants (an_domtree_check):
 *  - preorder[0] = 0 and preorder holds the r reachable nodes, each once;
 *  - idom[0] = AN_NONE; for every other reachable node v, idom[v] is reachable and comes before
 *    v in preorder; for every unreachable node idom = AN_NONE and both retained values are 0;
 *  - retained_bytes[v] = sizes[v] + the retained_bytes of the nodes whose idom is v, likewise
 *    retained_counts with 1 for v. */
struct an_domtree {
    uint32_t n;
    uint32_t r;
    uint32_t *preorder;        /* r */
    uint32_t *idom;            /* n */
    uint64_t *retained_bytes;  /* n */
    uint32_t *retained_counts; /* n */
};

enum { PROGRESS_STEP = 1u << 20 };

static void progress_report(an_progress_fn *progress, void *ctx, const char *phase, uint64_t done,
                            uint64_t total)
{
    if (progress)
        progress(ctx, phase, done, total);
}

/* Depth-first search from node 0: pre[node] = vertex or AN_NONE, vertex_node[vertex] = node,
 * parent[vertex] = the parent vertex (AN_NONE for vertex 0), in_count[node] = edges from
 * reachable nodes into it (the search sees each of them once). `cursor` and `stack` are scratch
 * of n entries. Returns the number of reachable nodes. */
static uint32_t dfs_number(const an_graph *g, uint32_t *pre, uint32_t *vertex_node,
                           uint32_t *parent, uint32_t *in_count, uint32_t *cursor, uint32_t *stack,
                           an_progress_fn *progress, void *ctx)
{
    const uint32_t n = an_graph_nodes(g);
    const uint32_t *off = an_graph_offsets_peek(g);
    const uint32_t *to = an_graph_targets_peek(g);
    uint32_t r = 0, sp = 0;
    uint32_t next_report = PROGRESS_STEP;

    for (uint32_t u = 0; u < n; u++) {
        pre[u] = AN_NONE;
        in_count[u] = 0;
    }
    pre[0] = 0;
    vertex_node[0] = 0;
    parent[0] = AN_NONE;
    cursor[0] = off[0];
    stack[sp++] = 0;
    r = 1;
    while (sp > 0) {
        uint32_t k = stack[sp - 1];
        uint32_t end = off[vertex_node[k] + 1];
        bool descended = false;
        while (cursor[k] < end) {
            uint32_t w = to[cursor[k]++];
            in_count[w]++;
            if (pre[w] != AN_NONE)
                continue;
            pre[w] = r;
            vertex_node[r] = w;
            parent[r] = k;
            cursor[r] = off[w];
            stack[sp++] = r;
            r++;
            descended = true;
            break;
        }
        if (!descended)
            sp--;
        if (r >= next_report) {
            progress_report(progress, ctx, "search", r, n);
            next_report += PROGRESS_STEP;
        }
    }
    progress_report(progress, ctx, "search", r, n);
    return r;
}

/* Predecessor lists in vertex numbering, for reachable vertices only (edges from unreachable
 * nodes cannot matter), from the in-degrees the search counted. rev_off has r + 1 entries;
 * returns rev (NULL when out of memory). */
static uint32_t *predecessors_build(const an_graph *g, const uint32_t *pre,
                                    const uint32_t *vertex_node, const uint32_t *in_count,
                                    uint32_t r, uint32_t *rev_off)
{
    const uint32_t n = an_graph_nodes(g);
    const uint32_t *off = an_graph_offsets_peek(g);
    const uint32_t *to = an_graph_targets_peek(g);
    rev_off[0] = 0;
    for (uint32_t k = 0; k < r; k++)
        rev_off[k + 1] = rev_off[k] + in_count[vertex_node[k]];
    const uint32_t total = rev_off[r];
    uint32_t *rev = malloc((size_t)(total ? total : 1) * sizeof *rev);
    if (!rev)
        return NULL;
    /* Rows are read in node order (sequential), not in vertex order (random). Each row is filled
     * from its end: rev_off[w + 1] (the end of row w) counts down to the start of row w. */
    for (uint32_t u = 0; u < n; u++) {
        uint32_t k = pre[u];
        if (k == AN_NONE)
            continue;
        for (uint32_t e = off[u]; e < off[u + 1]; e++)
            rev[--rev_off[pre[to[e]] + 1]] = k; /* the target of a reachable node is reachable */
    }
    for (uint32_t k = 0; k < r; k++) /* rev_off[k + 1] is the start of row k: shift back */
        rev_off[k] = rev_off[k + 1];
    rev_off[r] = total;
    return rev;
}

/* Lengauer–Tarjan state, per vertex. anc[] starts as the DFS parent; vertices > `linked_above`
 * are linked into the forest, and path compression rewrites anc[] of linked vertices only, so
 * anc[w] is still w's parent when w is processed. */
typedef struct lt_state {
    uint32_t *anc;
    uint32_t *semi;
    uint32_t *label;
    uint32_t *stack; /* compression path, r entries */
} lt_state;

/* The vertex with the smallest semidominator on the forest path from v up to, not including,
 * the root of its tree; v itself when v is not linked (v <= linked_above). */
static inline uint32_t lt_eval(lt_state *s, uint32_t v, uint32_t linked_above)
{
    if (v <= linked_above)
        return v;
    uint32_t *anc = s->anc, *semi = s->semi, *label = s->label;
    uint32_t u = v, sp = 0;
    while (anc[u] > linked_above) {
        s->stack[sp++] = u;
        u = anc[u];
    }
    while (sp > 0) {
        uint32_t x = s->stack[--sp];
        uint32_t a = anc[x];
        if (semi[label[a]] < semi[label[x]])
            label[x] = label[a];
        anc[x] = anc[a];
    }
    return label[v];
}

int an_domtree_compute(const an_graph *g, const uint64_t *sizes, an_progress_fn *progress,
                       void *progress_ctx, an_domtree **out)
{
    int rc = AN_ERR_NOMEM;
    an_domtree *t = NULL;
    uint32_t *pre = NULL, *vertex_node = NULL, *anc = NULL, *semi = NULL, *label = NULL;
    uint32_t *idom = NULL, *head = NULL, *rev_off = NULL, *rev = NULL;

    *out = NULL;
    if (!an_graph_offsets_peek(g))
        return AN_ERR_INVALID;
    const uint32_t n = an_graph_nodes(g);

    pre = malloc((size_t)n * sizeof *pre);
    vertex_node = malloc((size_t)n * sizeof *vertex_node);
    anc = malloc((size_t)n * sizeof *anc);
    semi = malloc((size_t)n * sizeof *semi);   /* DFS cursor first */
    label = malloc((size_t)n * sizeof *label); /* DFS stack first */
    head = malloc((size_t)n * sizeof *head);   /* in-degrees first */
    if (!pre || !vertex_node || !anc || !semi || !label || !head)
        goto out;
    const uint32_t r =
        dfs_number(g, pre, vertex_node, anc, head, semi, label, progress, progress_ctx);
    if (r < n) { /* give back what the unreachable part does not need */
        uint32_t *p;
        if ((p = realloc(vertex_node, (size_t)r * sizeof *p)))
            vertex_node = p;
        if ((p = realloc(anc, (size_t)r * sizeof *p)))
            anc = p;
        if ((p = realloc(semi, (size_t)r * sizeof *p)))
            semi = p;
        if ((p = realloc(label, (size_t)r * sizeof *p)))
            label = p;
    }

    rev_off = malloc(((size_t)r + 1) * sizeof *rev_off);
    if (!rev_off)
        goto out;
    progress_report(progress, progress_ctx, "predecessors", 0, r);
    rev = predecessors_build(g, pre, vertex_node, head, r, rev_off);
    progress_report(progress, progress_ctx, "predecessors", r, r);
    if (!rev)
        goto out;
    idom = malloc((size_t)r * sizeof *idom);
    if (!idom)
        goto out;
    for (uint32_t k = 0; k < r; k++) {
        semi[k] = k;
        label[k] = k;
        head[k] = AN_NONE;
    }

    /* pre[] is no longer needed: it becomes the compression stack */
    lt_state s = {.anc = anc, .semi = semi, .label = label, .stack = pre};
    progress_report(progress, progress_ctx, "dominators", 0, r);
    uint32_t next_report = r > PROGRESS_STEP ? r - PROGRESS_STEP : 0;
    for (uint32_t w = r; w-- > 1;) {
        for (uint32_t e = rev_off[w]; e < rev_off[w + 1]; e++) {
            uint32_t u = lt_eval(&s, rev[e], w);
            if (semi[u] < semi[w])
                semi[w] = semi[u];
        }
        /* bucket of semi[w], linked through idom[] (a vertex's idom is set only when it leaves
         * its bucket) */
        idom[w] = head[semi[w]];
        head[semi[w]] = w;
        uint32_t p = anc[w]; /* w's parent: w is not linked yet, so anc[w] was not rewritten */
        /* link(p, w) is implicit: w <= linked_above no longer holds once we pass w - 1 */
        for (uint32_t v = head[p]; v != AN_NONE;) {
            uint32_t next = idom[v];
            uint32_t u = lt_eval(&s, v, w - 1);
            idom[v] = semi[u] < semi[v] ? u : p;
            v = next;
        }
        head[p] = AN_NONE;
        if (w <= next_report) {
            progress_report(progress, progress_ctx, "dominators", r - w, r);
            next_report = next_report > PROGRESS_STEP ? next_report - PROGRESS_STEP : 0;
        }
    }
    for (uint32_t w = 1; w < r; w++)
        if (idom[w] != semi[w])
            idom[w] = idom[idom[w]];
    progress_report(progress, progress_ctx, "dominators", r, r);

    free(rev), rev = NULL;
    free(rev_off), rev_off = NULL;
    free(head), head = NULL;
    free(semi), semi = NULL;
    free(label), label = NULL;
    free(anc), anc = NULL;
    free(pre), pre = NULL;

    t = calloc(1, sizeof *t);
    if (!t)
        goto out;
    t->n = n;
    t->r = r;
    t->idom = malloc((size_t)n * sizeof *t->idom);
    t->retained_bytes = calloc(n, sizeof *t->retained_bytes);
    t->retained_counts = calloc(n, sizeof *t->retained_counts);
    if (!t->idom || !t->retained_bytes || !t->retained_counts)
        goto out;
    for (uint32_t u = 0; u < n; u++)
        t->idom[u] = AN_NONE;
    for (uint32_t k = 1; k < r; k++)
        t->idom[vertex_node[k]] = vertex_node[idom[k]];
    free(idom), idom = NULL;

    /* retained sizes: children before parents = reverse preorder */
    progress_report(progress, progress_ctx, "sizes", 0, r);
    for (uint32_t k = 0; k < r; k++) {
        uint32_t v = vertex_node[k];
        t->retained_bytes[v] = sizes ? sizes[v] : 0;
        t->retained_counts[v] = 1;
    }
    for (uint32_t k = r; k-- > 1;) {
        uint32_t v = vertex_node[k];
        uint32_t d = t->idom[v];
        t->retained_bytes[d] += t->retained_bytes[v];
        t->retained_counts[d] += t->retained_counts[v];
    }
    progress_report(progress, progress_ctx, "sizes", r, r);
    t->preorder = vertex_node, vertex_node = NULL;
    *out = t, t = NULL;
    rc = AN_OK;
out:
    free(pre);
    free(vertex_node);
    free(anc);
    free(semi);
    free(label);
    free(idom);
    free(head);
    free(rev_off);
    free(rev);
    an_domtree_free(t);
    return rc;
}

void an_domtree_free(an_domtree *t)
{
    if (!t)
        return;
    free(t->preorder);
    free(t->idom);
    free(t->retained_bytes);
    free(t->retained_counts);
    free(t);
}

uint32_t an_domtree_nodes(const an_domtree *t)
{
    return t->n;
}

uint32_t an_domtree_reachable(const an_domtree *t)
{
    return t->r;
}

const uint32_t *an_domtree_idoms(const an_domtree *t)
{
    return t->idom;
}

const uint64_t *an_domtree_retained_bytes(const an_domtree *t)
{
    return t->retained_bytes;
}

const uint32_t *an_domtree_retained_counts(const an_domtree *t)
{
    return t->retained_counts;
}

const uint32_t *an_domtree_preorder(const an_domtree *t)
{
    return t->preorder;
}

int an_domtree_group_retained(const an_domtree *t, const uint32_t *group, uint32_t n_groups,
                              uint64_t *bytes, uint64_t *counts)
{
    const uint32_t n = t->n, r = t->r;
    for (uint32_t u = 0; u < n; u++)
        if (group[u] != AN_NONE && group[u] >= n_groups)
            return AN_ERR_INVALID;

    int rc = AN_ERR_NOMEM;
    uint32_t *off = calloc((size_t)n + 1, sizeof *off); /* children rows, CSR */
    uint32_t *cur = malloc((size_t)n * sizeof *cur);
    uint32_t *child = malloc((size_t)(r ? r : 1) * sizeof *child);
    uint32_t *stack = malloc((size_t)(r ? r : 1) * sizeof *stack);
    uint32_t *open = calloc(n_groups ? n_groups : 1, sizeof *open);
    if (!off || !cur || !child || !stack || !open)
        goto out;
    memset(bytes, 0, (size_t)n_groups * sizeof *bytes);
    memset(counts, 0, (size_t)n_groups * sizeof *counts);

    for (uint32_t k = 1; k < r; k++)
        off[t->idom[t->preorder[k]] + 1]++;
    for (uint32_t u = 0; u < n; u++)
        off[u + 1] += off[u];
    memcpy(cur, off, (size_t)n * sizeof *cur);
    for (uint32_t k = 1; k < r; k++) {
        uint32_t v = t->preorder[k];
        child[cur[t->idom[v]]++] = v;
    }
    memcpy(cur, off, (size_t)n * sizeof *cur);

    /* Depth-first over the dominator tree. open[g] counts the members of g on the path from the
     * root to the current node; a member entered while open[g] == 0 is a top member. */
    uint32_t sp = 0;
    stack[sp++] = 0;
    if (group[0] != AN_NONE) {
        bytes[group[0]] += t->retained_bytes[0];
        counts[group[0]] += t->retained_counts[0];
        open[group[0]]++;
    }
    while (sp > 0) {
        uint32_t u = stack[sp - 1];
        if (cur[u] < off[u + 1]) {
            uint32_t v = child[cur[u]++];
            uint32_t gv = group[v];
            if (gv != AN_NONE) {
                if (open[gv] == 0) {
                    bytes[gv] += t->retained_bytes[v];
                    counts[gv] += t->retained_counts[v];
                }
                open[gv]++;
            }
            stack[sp++] = v;
        } else {
            if (group[u] != AN_NONE)
                open[group[u]]--;
            sp--;
        }
    }
    rc = AN_OK;
out:
    free(off);
    free(cur);
    free(child);
    free(stack);
    free(open);
    return rc;
}

int an_domtree_check(const an_domtree *t, const uint64_t *sizes)
{
    int rc = AN_ERR_NOMEM;
    const uint32_t n = t->n, r = t->r;
    uint32_t *pos = malloc((size_t)n * sizeof *pos);
    uint64_t *bytes = calloc(n, sizeof *bytes);
    uint32_t *counts = calloc(n, sizeof *counts);
    if (!pos || !bytes || !counts)
        goto out;
    rc = AN_ERR_INVALID;
    for (uint32_t u = 0; u < n; u++)
        pos[u] = AN_NONE;
    if (r == 0 || r > n || t->preorder[0] != 0 || t->idom[0] != AN_NONE)
        goto out;
    for (uint32_t k = 0; k < r; k++) {
        uint32_t v = t->preorder[k];
        if (v >= n || pos[v] != AN_NONE)
            goto out;
        pos[v] = k;
    }
    for (uint32_t u = 0; u < n; u++) {
        if (pos[u] == AN_NONE) {
            if (t->idom[u] != AN_NONE || t->retained_bytes[u] != 0 || t->retained_counts[u] != 0)
                goto out;
        } else if (u != 0) {
            uint32_t d = t->idom[u];
            if (d >= n || pos[d] == AN_NONE || pos[d] >= pos[u])
                goto out;
        }
    }
    for (uint32_t k = r; k-- > 0;) {
        uint32_t v = t->preorder[k];
        bytes[v] += sizes ? sizes[v] : 0;
        counts[v] += 1;
        if (bytes[v] != t->retained_bytes[v] || counts[v] != t->retained_counts[v])
            goto out;
        if (k > 0) {
            bytes[t->idom[v]] += bytes[v];
            counts[t->idom[v]] += counts[v];
        }
    }
    rc = AN_OK;
out:
    free(pos);
    free(bytes);
    free(counts);
    return rc;
}
