/* test_dominators.c — unit tests of analysis/: the CSR graph, breadth-first paths, the dominator
 * tree, retained sizes per node and per group.
 *
 * Usage: test_dominators <case>|all (ctest runs each case as analysis.<case>).
 *
 * The differential case checks every result against a naive reference on thousands of random
 * graphs: v dominates w exactly when w becomes unreachable once v is removed, so the dominator
 * sets, immediate dominators, retained sizes and counts and group retained sizes all follow from
 * one breadth-first search per removed node. The seed is printed; AN_TEST_SEED overrides it,
 * AN_TEST_GRAPHS the number of graphs.
 */
#include "analysis/an_dominators.h"
#include "analysis/an_graph.h"
#include "tests/unit/common/test_cases.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define G_N(a) (sizeof(a) / sizeof((a)[0]))

static int failures;

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);               \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

#define CHECK_EQ(got, want)                                                                        \
    do {                                                                                           \
        uint64_t got_ = (uint64_t)(got), want_ = (uint64_t)(want);                                 \
        if (got_ != want_) {                                                                       \
            fprintf(stderr,                                                                        \
                    "%s:%d: CHECK failed: %s == %" PRIu64 ", expected %s == %" PRIu64 "\n",        \
                    __FILE__, __LINE__, #got, got_, #want, want_);                                 \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

/* ---- helpers ------------------------------------------------------------------------------ */

typedef struct edge {
    uint32_t from, to;
} edge;

static an_graph *graph_make(uint32_t n, const edge *edges, size_t n_edges)
{
    an_graph *g = an_graph_new(n);
    if (!g)
        abort();
    for (size_t i = 0; i < n_edges; i++)
        if (an_graph_add_edge(g, edges[i].from, edges[i].to) != AN_OK)
            abort();
    if (an_graph_seal(g) != AN_OK)
        abort();
    return g;
}

static an_domtree *tree_make(const an_graph *g, const uint64_t *sizes)
{
    an_domtree *t = NULL;
    if (an_domtree_compute(g, sizes, NULL, NULL, &t) != AN_OK)
        abort();
    CHECK(an_domtree_check(t, sizes) == AN_OK);
    return t;
}

/* Checks idoms against want[] (n entries, AN_NONE for root and unreachable). */
static void idoms_expect(const an_domtree *t, const uint32_t *want, uint32_t n)
{
    const uint32_t *idom = an_domtree_idoms(t);
    for (uint32_t v = 0; v < n; v++) {
        if (idom[v] != want[v]) {
            fprintf(stderr, "  idom(%" PRIu32 ") = %" PRId64 ", expected %" PRId64 "\n", v,
                    idom[v] == AN_NONE ? -1 : (int64_t)idom[v],
                    want[v] == AN_NONE ? -1 : (int64_t)want[v]);
            failures++;
        }
    }
}

#define N_ AN_NONE

/* ---- cases ------------------------------------------------------------------------------ */

static void case_graph_build(void)
{
    /* out of order edges, duplicates, self loop */
    const edge e[] = {{2, 1}, {0, 2}, {2, 1}, {1, 1}, {0, 1}, {3, 0}};
    an_graph *g = an_graph_new(4);
    for (size_t i = 0; i < G_N(e); i++)
        CHECK(an_graph_add_edge(g, e[i].from, e[i].to) == AN_OK);
    CHECK(an_graph_add_edge(g, 4, 0) == AN_ERR_INVALID);
    CHECK(an_graph_add_edge(g, 0, 4) == AN_ERR_INVALID);
    uint32_t count = 99;
    CHECK(an_graph_successors(g, 0, &count) == NULL && count == 0); /* not sealed */
    CHECK(an_graph_seal(g) == AN_OK);
    CHECK(an_graph_seal(g) == AN_ERR_INVALID);
    CHECK(an_graph_add_edge(g, 0, 1) == AN_ERR_INVALID);
    CHECK(an_graph_reserve(g, 10) == AN_ERR_INVALID);
    CHECK_EQ(an_graph_nodes(g), 4);
    CHECK_EQ(an_graph_edges(g), 6);
    const uint32_t *s = an_graph_successors(g, 0, &count);
    CHECK(count == 2 && s[0] == 2 && s[1] == 1); /* order of adding kept within a source */
    s = an_graph_successors(g, 2, &count);
    CHECK(count == 2 && s[0] == 1 && s[1] == 1);
    s = an_graph_successors(g, 1, &count);
    CHECK(count == 1 && s[0] == 1);
    s = an_graph_successors(g, 3, &count);
    CHECK(count == 1 && s[0] == 0);
    CHECK(an_graph_successors(g, 4, &count) == NULL && count == 0);

    an_graph *r = an_graph_new_reversed(g);
    CHECK(r != NULL && an_graph_edges(r) == 6);
    s = an_graph_successors(r, 1, &count); /* predecessors of 1: 0, 1, 2, 2 (by source) */
    CHECK(count == 4 && s[0] == 0 && s[1] == 1 && s[2] == 2 && s[3] == 2);
    s = an_graph_successors(r, 0, &count);
    CHECK(count == 1 && s[0] == 3);
    an_graph_free(r);
    an_graph_free(g);

    /* grouped edges seal without sorting; reserve; limits */
    g = an_graph_new(3);
    CHECK(an_graph_reserve(g, 3) == AN_OK);
    CHECK(an_graph_reserve(g, AN_MAX_EDGES + 1) == AN_ERR_TOO_BIG);
    CHECK(an_graph_add_edge(g, 0, 1) == AN_OK && an_graph_add_edge(g, 0, 2) == AN_OK &&
          an_graph_add_edge(g, 2, 0) == AN_OK);
    CHECK(an_graph_new_reversed(g) == NULL); /* not sealed */
    CHECK(an_graph_seal(g) == AN_OK);
    s = an_graph_successors(g, 0, &count);
    CHECK(count == 2 && s[0] == 1 && s[1] == 2);
    an_graph_free(g);
    CHECK(an_graph_new(0) == NULL);
    CHECK(an_graph_new(AN_MAX_NODES + 1) == NULL);
    an_graph_free(NULL);
    an_domtree_free(NULL);

    /* an empty graph of one node */
    g = an_graph_new(1);
    CHECK(an_graph_seal(g) == AN_OK);
    CHECK_EQ(an_graph_edges(g), 0);
    an_graph_free(g);
}

/* an_graph_add_edges in chunks builds the same graph as single adds: same rows, same order
 * within a row, grouped or not; a bad node anywhere in a chunk changes nothing. */
static void case_graph_bulk(void)
{
    enum { N = 50, M = 400 };
    uint64_t s = 20261122;
    uint32_t from[M], to[M];
    for (int shape = 0; shape < 2; shape++) {
        for (uint32_t i = 0; i < M; i++) {
            from[i] = shape ? i * N / M : (uint32_t)((s = s * 6364136223846793005ull + 1) >> 33) % N;
            to[i] = (uint32_t)((s = s * 6364136223846793005ull + 1) >> 33) % N;
        }
        an_graph *one = an_graph_new(N), *bulk = an_graph_new(N);
        for (uint32_t i = 0; i < M; i++)
            CHECK(an_graph_add_edge(one, from[i], to[i]) == AN_OK);
        for (uint32_t i = 0; i < M;) {
            uint32_t k = 1 + i % 37 < M - i ? 1 + i % 37 : M - i;
            CHECK(an_graph_add_edges(bulk, from + i, to + i, k) == AN_OK);
            i += k;
        }
        const uint32_t bad_from[2] = {1, N}, bad_to[2] = {1, 1};
        CHECK(an_graph_add_edges(bulk, bad_from, bad_to, 2) == AN_ERR_INVALID);
        CHECK(an_graph_add_edges(bulk, NULL, NULL, 0) == AN_OK);
        CHECK(an_graph_seal(one) == AN_OK && an_graph_seal(bulk) == AN_OK);
        CHECK_EQ(an_graph_edges(bulk), M);
        for (uint32_t u = 0; u < N; u++) {
            uint32_t c1 = 0, c2 = 0;
            const uint32_t *s1 = an_graph_successors(one, u, &c1);
            const uint32_t *s2 = an_graph_successors(bulk, u, &c2);
            CHECK(c1 == c2 && (c1 == 0 || memcmp(s1, s2, c1 * sizeof *s1) == 0));
        }
        CHECK(an_graph_add_edges(bulk, from, to, 1) == AN_ERR_INVALID); /* sealed */
        an_graph_free(one);
        an_graph_free(bulk);
    }
}

static void case_bfs(void)
{
    /* 0 -> 1 -> 2 -> 5, 0 -> 3 -> 4 -> 5, 1 -> 4; 6 unreachable; 5 -> 0 */
    const edge e[] = {{0, 1}, {0, 3}, {1, 2}, {1, 4}, {2, 5}, {3, 4}, {4, 5}, {5, 0}, {6, 0}};
    an_graph *g = graph_make(7, e, G_N(e));
    uint32_t prev[7], dist[7];
    CHECK(an_graph_bfs(g, 0, prev, dist) == AN_OK);
    CHECK_EQ(prev[0], 0);
    CHECK_EQ(dist[0], 0);
    CHECK_EQ(prev[5], 2); /* 0 1 2 5 found before 0 1 4 5 and 0 3 4 5: earlier edges first */
    CHECK_EQ(dist[5], 3);
    CHECK_EQ(prev[4], 1);
    CHECK_EQ(dist[4], 2);
    CHECK_EQ(prev[6], AN_NONE);
    CHECK_EQ(dist[6], AN_NONE);
    CHECK(an_graph_bfs(g, 0, prev, NULL) == AN_OK && prev[5] == 2);
    CHECK(an_graph_bfs(g, 7, prev, dist) == AN_ERR_INVALID);

    /* reversed: next hop towards 5 */
    an_graph *r = an_graph_new_reversed(g);
    CHECK(an_graph_bfs(r, 5, prev, dist) == AN_OK);
    CHECK_EQ(prev[5], 5);
    CHECK_EQ(prev[2], 5);
    CHECK_EQ(prev[4], 5);
    CHECK_EQ(dist[0], 3);
    CHECK_EQ(prev[6], 0);
    CHECK_EQ(dist[6], 4);
    an_graph_free(r);
    an_graph_free(g);

    an_graph *open = an_graph_new(2);
    CHECK(an_graph_bfs(open, 0, prev, dist) == AN_ERR_INVALID);
    an_domtree *t = (an_domtree *)1;
    CHECK(an_domtree_compute(open, NULL, NULL, NULL, &t) == AN_ERR_INVALID && t == NULL);
    an_graph_free(open);
}

static void case_root_only(void)
{
    an_graph *g = graph_make(1, NULL, 0);
    const uint64_t sizes[] = {7};
    an_domtree *t = tree_make(g, sizes);
    CHECK_EQ(an_domtree_reachable(t), 1);
    CHECK_EQ(an_domtree_idoms(t)[0], AN_NONE);
    CHECK_EQ(an_domtree_retained_bytes(t)[0], 7);
    CHECK_EQ(an_domtree_retained_counts(t)[0], 1);
    an_domtree_free(t);
    an_graph_free(g);
}

static void case_unreachable(void)
{
    /* 0 -> 1; 2 -> 1, 2 -> 3, 3 -> 2: 2 and 3 unreachable even though they point in */
    const edge e[] = {{0, 1}, {2, 1}, {2, 3}, {3, 2}};
    an_graph *g = graph_make(4, e, G_N(e));
    const uint64_t sizes[] = {0, 10, 20, 30};
    an_domtree *t = tree_make(g, sizes);
    const uint32_t want[] = {N_, 0, N_, N_};
    idoms_expect(t, want, 4);
    CHECK_EQ(an_domtree_reachable(t), 2);
    CHECK_EQ(an_domtree_retained_bytes(t)[0], 10);
    CHECK_EQ(an_domtree_retained_bytes(t)[2], 0);
    CHECK_EQ(an_domtree_retained_counts(t)[3], 0);
    CHECK_EQ(an_domtree_retained_counts(t)[0], 2);
    an_domtree_free(t);
    an_graph_free(g);
}

static void case_self_loops_and_duplicates(void)
{
    const edge e[] = {{0, 0}, {0, 1}, {0, 1}, {1, 1}, {1, 2}, {1, 2}, {2, 2}, {2, 1}};
    an_graph *g = graph_make(3, e, G_N(e));
    const uint64_t sizes[] = {0, 5, 6};
    an_domtree *t = tree_make(g, sizes);
    const uint32_t want[] = {N_, 0, 1};
    idoms_expect(t, want, 3);
    CHECK_EQ(an_domtree_retained_bytes(t)[1], 11);
    CHECK_EQ(an_domtree_retained_counts(t)[1], 2);
    an_domtree_free(t);
    an_graph_free(g);
}

static void case_cycle(void)
{
    /* 0 -> 1 -> 2 -> 3 -> 1, 3 -> 4; everything hangs from 1 */
    const edge e[] = {{0, 1}, {1, 2}, {2, 3}, {3, 1}, {3, 4}};
    an_graph *g = graph_make(5, e, G_N(e));
    const uint64_t sizes[] = {0, 1, 2, 4, 8};
    an_domtree *t = tree_make(g, sizes);
    const uint32_t want[] = {N_, 0, 1, 2, 3};
    idoms_expect(t, want, 5);
    CHECK_EQ(an_domtree_retained_bytes(t)[1], 15);
    CHECK_EQ(an_domtree_retained_bytes(t)[3], 12);
    an_domtree_free(t);
    an_graph_free(g);
}

static void case_diamond(void)
{
    /* 0 -> 1; 1 -> 2, 1 -> 3; 2 -> 4, 3 -> 4; 4 -> 5 */
    const edge e[] = {{0, 1}, {1, 2}, {1, 3}, {2, 4}, {3, 4}, {4, 5}};
    an_graph *g = graph_make(6, e, G_N(e));
    const uint64_t sizes[] = {0, 100, 10, 20, 30, 40};
    an_domtree *t = tree_make(g, sizes);
    const uint32_t want[] = {N_, 0, 1, 1, 1, 4};
    idoms_expect(t, want, 6);
    CHECK_EQ(an_domtree_retained_bytes(t)[1], 200);
    CHECK_EQ(an_domtree_retained_bytes(t)[2], 10); /* shares 4 with 3: retains only itself */
    CHECK_EQ(an_domtree_retained_bytes(t)[4], 70);
    CHECK_EQ(an_domtree_retained_counts(t)[1], 5);
    an_domtree_free(t);
    an_graph_free(g);
}

static void case_multiple_roots(void)
{
    /* two GC roots (0 -> 1, 0 -> 2) that both reach 3; 3 -> 4 */
    const edge e[] = {{0, 1}, {0, 2}, {1, 3}, {2, 3}, {3, 4}};
    an_graph *g = graph_make(5, e, G_N(e));
    const uint64_t sizes[] = {0, 1, 1, 10, 100};
    an_domtree *t = tree_make(g, sizes);
    const uint32_t want[] = {N_, 0, 0, 0, 3};
    idoms_expect(t, want, 5);
    CHECK_EQ(an_domtree_retained_bytes(t)[3], 110);
    CHECK_EQ(an_domtree_retained_bytes(t)[1], 1);
    CHECK_EQ(an_domtree_retained_bytes(t)[0], 112);
    an_domtree_free(t);
    an_graph_free(g);
}

/* The flow graph of Lengauer and Tarjan's paper (Fig. 1): R=0 A=1 B=2 C=3 D=4 E=5 F=6 G=7 H=8
 * I=9 J=10 K=11 L=12, with its published dominator tree. */
static void case_lengauer_tarjan_paper(void)
{
    enum { R, A, B, C, D, E, F, G, H, I, J, K, L, NN };
    const edge e[] = {{R, A}, {R, B}, {R, C}, {A, D}, {B, A}, {B, D}, {B, E},
                      {C, F}, {C, G}, {D, L}, {E, H}, {F, I}, {G, I}, {G, J},
                      {H, E}, {H, K}, {I, K}, {J, I}, {K, I}, {K, R}, {L, H}};
    an_graph *g = graph_make(NN, e, G_N(e));
    an_domtree *t = tree_make(g, NULL);
    const uint32_t want[NN] = {[R] = N_, [A] = R, [B] = R, [C] = R, [D] = R, [E] = R, [F] = C,
                               [G] = C,  [H] = R, [I] = R, [J] = G, [K] = R, [L] = D};
    idoms_expect(t, want, NN);
    CHECK_EQ(an_domtree_retained_bytes(t)[R], 0);
    CHECK_EQ(an_domtree_retained_counts(t)[C], 4);
    an_domtree_free(t);
    an_graph_free(g);
}

/* A linked list of a million nodes (depth a million: nothing may recurse), plus a side object
 * per list node that the root also reaches through an array visited last — the shape that makes
 * the semi-NCA climb quadratic. */
static void case_deep(void)
{
    const uint32_t len = 1000000;
    const uint32_t n = 2 + 2 * len; /* 0 root, 1 array, 2..len+1 list, len+2.. side */
    an_graph *g = an_graph_new(n);
    uint64_t *sizes = malloc((size_t)n * sizeof *sizes);
    CHECK(an_graph_add_edge(g, 0, 2) == AN_OK);
    CHECK(an_graph_add_edge(g, 0, 1) == AN_OK);
    for (uint32_t i = 0; i < len; i++) {
        uint32_t node = 2 + i, side = 2 + len + i;
        if (i + 1 < len)
            CHECK(an_graph_add_edge(g, node, node + 1) == AN_OK);
        CHECK(an_graph_add_edge(g, node, side) == AN_OK);
        CHECK(an_graph_add_edge(g, 1, side) == AN_OK);
        sizes[node] = 24;
        sizes[side] = 8;
    }
    sizes[0] = 0;
    sizes[1] = 16;
    CHECK(an_graph_seal(g) == AN_OK);
    an_domtree *t = tree_make(g, sizes);
    const uint32_t *idom = an_domtree_idoms(t);
    const uint64_t *rb = an_domtree_retained_bytes(t);
    CHECK_EQ(an_domtree_reachable(t), n);
    CHECK_EQ(idom[2], 0);
    CHECK_EQ(idom[2 + len - 1], 2 + len - 2);
    CHECK_EQ(idom[2 + len], 0); /* a side node: reached by two paths */
    CHECK_EQ(idom[2 + 2 * len - 1], 0);
    CHECK_EQ(rb[2], 24ull * len); /* the head retains the list, not the side nodes */
    CHECK_EQ(rb[2 + len - 1], 24);
    CHECK_EQ(rb[1], 16);
    CHECK_EQ(an_domtree_retained_counts(t)[2], len);
    an_domtree_free(t);
    an_graph_free(g);
    free(sizes);
}

static void case_groups(void)
{
    /* 0 -> 1 (A) -> 2 (A) -> 3 (B); 0 -> 4 (B) -> 5 (A); 5 -> 3; 0 -> 6 (A) */
    const edge e[] = {{0, 1}, {1, 2}, {2, 3}, {0, 4}, {4, 5}, {5, 3}, {0, 6}};
    an_graph *g = graph_make(7, e, G_N(e));
    const uint64_t sizes[] = {0, 1, 2, 4, 8, 16, 32};
    const uint32_t group[] = {N_, 0, 0, 1, 1, 0, 0};
    an_domtree *t = tree_make(g, sizes);
    uint64_t bytes[3] = {9, 9, 9}, counts[3] = {9, 9, 9};
    CHECK(an_domtree_group_retained(t, group, 3, bytes, counts) == AN_OK);
    /* A: tops 1 (1+2), 5 (16), 6 (32) — 2 is inside 1's subtree, 3 is shared: 51 */
    CHECK_EQ(bytes[0], 51);
    CHECK_EQ(counts[0], 4);
    /* B: 3 (4, idom 0) and 4 (8 + 16) */
    CHECK_EQ(bytes[1], 28);
    CHECK_EQ(counts[1], 3);
    CHECK_EQ(bytes[2], 0);
    CHECK_EQ(counts[2], 0);
    const uint32_t bad[] = {N_, 0, 0, 3, 1, 0, 0};
    CHECK(an_domtree_group_retained(t, bad, 3, bytes, counts) == AN_ERR_INVALID);
    an_domtree_free(t);
    an_graph_free(g);
}

/* ---- differential: random graphs against the naive reference ---------------------------- */

static uint64_t rng_next(uint64_t *s) /* splitmix64 */
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static uint32_t rng_below(uint64_t *s, uint32_t n)
{
    return (uint32_t)(rng_next(s) % n);
}

/* Nodes reachable from 0 without passing through `removed` (AN_NONE: remove nothing; removing
 * 0 leaves nothing reachable). */
static void naive_reach(uint32_t n, const edge *e, size_t m, uint32_t removed, bool *seen)
{
    memset(seen, 0, n * sizeof *seen);
    if (removed == 0)
        return;
    uint32_t queue[128];
    uint32_t head = 0, tail = 0;
    seen[0] = true;
    queue[tail++] = 0;
    while (head < tail) {
        uint32_t u = queue[head++];
        for (size_t i = 0; i < m; i++) {
            if (e[i].from != u || e[i].to == removed || seen[e[i].to])
                continue;
            seen[e[i].to] = true;
            queue[tail++] = e[i].to;
        }
    }
}

#define MAXN 64

static void differential_one(uint64_t seed, int index)
{
    uint64_t s = seed;
    uint32_t n = 1 + rng_below(&s, MAXN - 1);
    size_t m = rng_below(&s, 3 * n + 1);
    int shape = (int)rng_below(&s, 4);
    edge e[6 * MAXN];
    size_t k = 0;
    for (size_t i = 0; i < m; i++) {
        uint32_t a = rng_below(&s, n), b = rng_below(&s, n);
        if (shape == 1 && a > b) { /* mostly forward: deep trees and chains */
            uint32_t x = a;
            a = b;
            b = x;
        }
        if (shape == 2 && a == 0 && rng_below(&s, 2)) /* fewer root edges: more unreachable */
            continue;
        e[k].from = a;
        e[k].to = b;
        k++;
        if (shape == 3 && rng_below(&s, 4) == 0) { /* duplicates */
            e[k] = e[k - 1];
            k++;
        }
    }
    m = k;
    uint64_t sizes[MAXN];
    for (uint32_t v = 0; v < n; v++)
        sizes[v] = rng_below(&s, 4) == 0 ? 0 : 1 + rng_below(&s, 1000);
    uint32_t n_groups = 1 + rng_below(&s, 4);
    uint32_t group[MAXN];
    for (uint32_t v = 0; v < n; v++)
        group[v] = rng_below(&s, 5) == 0 ? AN_NONE : rng_below(&s, n_groups);

    an_graph *g = an_graph_new(n);
    for (size_t i = 0; i < m; i++)
        an_graph_add_edge(g, e[i].from, e[i].to);
    an_graph_seal(g);
    an_domtree *t = NULL;
    CHECK(an_domtree_compute(g, sizes, NULL, NULL, &t) == AN_OK);
    CHECK(an_domtree_check(t, sizes) == AN_OK);

    /* naive: dom[d][w] <=> d dominates w (w reachable, and removing d cuts w off, or d == w) */
    static bool dom[MAXN][MAXN];
    bool all[MAXN], cut[MAXN];
    naive_reach(n, e, m, AN_NONE, all);
    uint32_t reachable = 0;
    for (uint32_t d = 0; d < n; d++) {
        reachable += all[d];
        naive_reach(n, e, m, d, cut);
        for (uint32_t w = 0; w < n; w++)
            dom[d][w] = all[d] && all[w] && (d == w || !cut[w]);
    }
    int before = failures;
    CHECK_EQ(an_domtree_reachable(t), reachable);
    const uint32_t *idom = an_domtree_idoms(t);
    const uint64_t *rb = an_domtree_retained_bytes(t);
    const uint32_t *rc = an_domtree_retained_counts(t);
    for (uint32_t w = 0; w < n; w++) {
        uint32_t want = AN_NONE, best = UINT32_MAX;
        uint64_t bytes = 0;
        uint32_t count = 0;
        for (uint32_t d = 0; d < n; d++) {
            if (dom[w][d]) {
                bytes += sizes[d];
                count++;
            }
            if (d == w || !dom[d][w])
                continue;
            uint32_t sub = 0; /* the idom is the strict dominator with the smallest subtree */
            for (uint32_t x = 0; x < n; x++)
                sub += dom[d][x];
            if (sub < best) {
                best = sub;
                want = d;
            }
        }
        CHECK_EQ(idom[w], want);
        CHECK_EQ(rb[w], bytes);
        CHECK_EQ(rc[w], count);
    }
    uint64_t gb[4], gc[4];
    CHECK(an_domtree_group_retained(t, group, n_groups, gb, gc) == AN_OK);
    for (uint32_t gi = 0; gi < n_groups; gi++) {
        uint64_t bytes = 0, count = 0;
        for (uint32_t w = 0; w < n; w++) {
            bool covered = false;
            for (uint32_t d = 0; d < n && !covered; d++)
                covered = group[d] == gi && dom[d][w];
            if (covered) {
                bytes += sizes[w];
                count++;
            }
        }
        CHECK_EQ(gb[gi], bytes);
        CHECK_EQ(gc[gi], count);
    }
    if (failures != before) {
        fprintf(stderr,
                "differential: graph %d (seed %" PRIu64 ") failed: n=%" PRIu32 ", %zu edges:",
                index, seed, n, m);
        for (size_t i = 0; i < m; i++)
            fprintf(stderr, " %" PRIu32 "->%" PRIu32, e[i].from, e[i].to);
        fprintf(stderr, "\n");
    }
    an_domtree_free(t);
    an_graph_free(g);
}

static void case_differential(void)
{
    uint64_t seed = 20260611;
    long graphs = 5000;
    const char *text = getenv("AN_TEST_SEED");
    if (text && *text)
        seed = strtoull(text, NULL, 0);
    text = getenv("AN_TEST_GRAPHS");
    if (text && *text)
        graphs = strtol(text, NULL, 0);
    fprintf(stderr, "differential: seed %" PRIu64 " (AN_TEST_SEED), %ld graphs (AN_TEST_GRAPHS)\n",
            seed, graphs);
    uint64_t s = seed;
    for (long i = 0; i < graphs && failures < 20; i++)
        differential_one(rng_next(&s), (int)i);
}

static void progress_count(void *ctx, const char *phase, uint64_t done, uint64_t total)
{
    (void)phase;
    CHECK(done <= total);
    (*(int *)ctx)++;
}

static void case_progress(void)
{
    const uint32_t n = 3000000;
    an_graph *g = an_graph_new(n);
    for (uint32_t v = 1; v < n; v++)
        an_graph_add_edge(g, v - 1, v);
    an_graph_seal(g);
    int calls = 0;
    an_domtree *t = NULL;
    CHECK(an_domtree_compute(g, NULL, progress_count, &calls, &t) == AN_OK);
    CHECK(calls >= 8 && calls < 100);
    CHECK_EQ(an_domtree_retained_counts(t)[0], n);
    an_domtree_free(t);
    an_graph_free(g);
}

static const test_case cases[] = {
    {"graph_build", case_graph_build},
    {"graph_bulk", case_graph_bulk},
    {"bfs", case_bfs},
    {"root_only", case_root_only},
    {"unreachable", case_unreachable},
    {"self_loops_and_duplicates", case_self_loops_and_duplicates},
    {"cycle", case_cycle},
    {"diamond", case_diamond},
    {"multiple_roots", case_multiple_roots},
    {"lengauer_tarjan_paper", case_lengauer_tarjan_paper},
    {"deep", case_deep},
    {"groups", case_groups},
    {"differential", case_differential},
    {"progress", case_progress},
};

int main(int argc, char **argv)
{
    return test_cases_main(argc, argv, cases, G_N(cases), &failures);
}
