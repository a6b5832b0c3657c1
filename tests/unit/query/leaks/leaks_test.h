/* leaks_test.h — what the test programs of the leak-hunting commands share
 * (tests/unit/query/leaks/test_leaks*.c): the fixture recordings, written through the real
 * writer into the work directory before every run, reading their JSON and SQL, and the programs'
 * main. Header only, as cli_test.h (whose `workdir` and `heaplens` each program has): one test
 * program per source file includes this.
 *
 *   test_leaks<_topic> HEAPLENS SOURCE_DIR CASE|all   (HEAPLENS_TEST_KEEP=1 keeps the fixtures)
 *   test_leaks<_topic> fixture DIR                    only writes graph.db, unread, with samples
 *
 * graph.db — four induced gen2 GCs, each with a snapshot (snapshot s of GC s):
 *
 *   handle 0x1000 (strong) -> 1 Holder(32) -> 2 Leak[](100) -> Leak(40) -> Leaf(1000)
 *                                            (3 Leaks in snapshot 1, 3 more every GC)
 *   stack 0x2000            -> 9 Cache(24) -> 3 Nodes(50); one replaced every GC; 9 -> 16
 *   handle 0x3000 (pinned)  -> 13 Root(10) -> 14 Node(50) -> 16 String(20)
 *                                          -> 15 Node(50) -> 16
 *                                          -> 17 Node(50) <-> 18 Node(50)
 *   19 Churn(30): nothing references it;  20 Node(50): only a weak handle 0x4000
 *   (19 and 20 are in snapshot 1 only: they die in GC 2)
 *   stack 0x5000            -> D = 2^48 + 5, an Old(64) first seen in GC 1's heap walk
 *                              (a discovered id, in the second range of the id index)
 *
 * Snapshot 1, by hand: retained(1) = 32 + 100 + 3 * (40 + 1000) = 3252 (8 objects);
 * retained(2) = 3220; retained(Leak) = 1040; retained(9) = 24 + 150 = 174 (16 is also reached
 * from 13, so neither dominates it); retained(13) = 10 + 50 + 50 + 100 = 210 (5 objects);
 * retained(17) = 100; 16's dominator is the virtual root; 19 and 20 are unreachable.
 */
#ifndef HEAPLENS_TEST_LEAKS_TEST_H
#define HEAPLENS_TEST_LEAKS_TEST_H

#include "tests/unit/common/cli_test.h"
#include "tests/unit/common/hl_stack_fixture.h"

#include <sys/stat.h>
#include <unistd.h>

static const char *source_dir; /* the source tree (examples/queries) */

/* ---- running heaplens ------------------------------------------------------------------ */

/* Runs a command that must succeed with JSON on stdout and nothing on stderr; returns the
 * document (NULL after counting a failure). */
#define RUN_JSON(...) json_run(__FILE__, __LINE__, RUN(__VA_ARGS__), NULL, "")

/* A failing run: exit 1, nothing on stdout, exactly `err` on stderr. */
#define EXPECT_ERROR(err, ...) EXPECT(RUN(__VA_ARGS__), 1, "", (err))

static inline json_int_t jint(json_t *obj, const char *key)
{
    return json_integer_value(json_object_get(obj, key));
}

static inline const char *jstr(json_t *obj, const char *key)
{
    return json_string_value(json_object_get(obj, key));
}

static inline json_t *jrow(json_t *doc, size_t i)
{
    return json_array_get(json_object_get(doc, "rows"), i);
}

/* ---- SQLite helpers ---------------------------------------------------------------------- */

/* One integer from `sql` on file `name` (-1 on any error). */
static inline long long sql_int(const char *name, const char *sql)
{
    g_autofree char *path = fixture_path(name);
    sqlite3 *db = NULL;
    sqlite3_stmt *stmt = NULL;
    long long value = -1;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(db, sql, -1, &stmt, NULL) == SQLITE_OK &&
        sqlite3_step(stmt) == SQLITE_ROW)
        value = sqlite3_column_int64(stmt, 0);
    else
        fprintf(stderr, "sql_int(%s): %s\n", sql, sqlite3_errmsg(db));
    sqlite3_finalize(stmt);
    sqlite3_close(db);
    return value;
}

static inline void file_copy(const char *from, const char *to)
{
    g_autofree char *a = fixture_path(from), *b = fixture_path(to);
    g_autofree char *data = NULL;
    gsize len = 0;
    if (!g_file_get_contents(a, &data, &len, NULL) || !g_file_set_contents(b, data, len, NULL)) {
        fprintf(stderr, "cannot copy %s\n", from);
        exit(2);
    }
}

/* ---- fixtures ---------------------------------------------------------------------------- */

enum { T_HOLDER = 1, T_LEAKS, T_LEAK, T_LEAF, T_CACHE, T_NODE, T_ROOT, T_STRING, T_CHURN, T_OLD };

#define DISCOVERED_ID (HL_DISCOVERED_ID_BASE + 5)

typedef struct graph_state {
    uint32_t leaks[16], n_leaks; /* Leak ids; Leaf = Leak + 3 for the first three, see below */
    uint32_t leafs[16];
    uint32_t cache[3]; /* the cache's current nodes */
    uint64_t next_id;
} graph_state;

static inline void snapshot_write(hl_sb *sb, uint32_t s, const graph_state *st, gboolean first)
{
    GArray *ids = g_array_new(FALSE, FALSE, sizeof(uint32_t));
    const uint32_t fixed[] = {1, 2, 9, 13, 14, 15, 16, 17, 18};
    g_array_append_vals(ids, fixed, G_N_ELEMENTS(fixed));
    g_array_append_vals(ids, st->leaks, st->n_leaks);
    g_array_append_vals(ids, st->leafs, st->n_leaks);
    g_array_append_vals(ids, st->cache, 3);
    if (first) {
        const uint32_t extra[] = {19, 20};
        g_array_append_vals(ids, extra, 2);
    }
    hl_sb_snapshot_start(sb, s, s, HL_SNAPSHOT_INDUCED);
    hl_sb_snapshot_object(sb, s, DISCOVERED_ID, HL_GEN_2, HL_SNAP_OBJ_DISCOVERED);
    for (guint i = 0; i < ids->len; i++) /* any order: the writer sorts */
        hl_sb_snapshot_object(sb, s, g_array_index(ids, uint32_t, i), HL_GEN_1, 0);
    hl_sb_snapshot_ref(sb, s, 1, 2);
    for (uint32_t i = 0; i < st->n_leaks; i++) {
        hl_sb_snapshot_ref(sb, s, 2, st->leaks[i]);
        hl_sb_snapshot_ref(sb, s, st->leaks[i], st->leafs[i]);
    }
    for (int i = 0; i < 3; i++)
        hl_sb_snapshot_ref(sb, s, 9, st->cache[i]);
    hl_sb_snapshot_ref(sb, s, 9, 16);
    hl_sb_snapshot_ref(sb, s, 13, 14);
    hl_sb_snapshot_ref(sb, s, 13, 15);
    hl_sb_snapshot_ref(sb, s, 14, 16);
    hl_sb_snapshot_ref(sb, s, 15, 16);
    hl_sb_snapshot_ref(sb, s, 13, 17);
    hl_sb_snapshot_ref(sb, s, 17, 18);
    hl_sb_snapshot_ref(sb, s, 18, 17);
    hl_sb_snapshot_root(sb, s, 1, HL_ROOT_HANDLE, 0, 0x1000);
    hl_sb_snapshot_root(sb, s, 9, HL_ROOT_STACK, 0, 0x2000);
    hl_sb_snapshot_root(sb, s, DISCOVERED_ID, HL_ROOT_STACK, 0, 0x5000);
    hl_sb_snapshot_root(sb, s, 13, HL_ROOT_HANDLE, HL_ROOT_PINNING, 0x3000);
    if (first)
        hl_sb_snapshot_root(sb, s, 20, HL_ROOT_HANDLE, HL_ROOT_WEAK, 0x4000);
    hl_sb_snapshot_end(sb, s, s);
    g_array_unref(ids);
}

/* Three new Leaks with their Leafs, and one cache node replaced (index `replace`, or none). */
static inline void grow(hl_sb *sb, graph_state *st, int replace)
{
    for (int i = 0; i < 3; i++) {
        uint32_t leak = (uint32_t)st->next_id++, leaf = (uint32_t)st->next_id++;
        hl_sb_alloc(sb, leak, T_LEAK, 40, 100);
        hl_sb_alloc(sb, leaf, T_LEAF, 1000, 100);
        st->leaks[st->n_leaks] = leak;
        st->leafs[st->n_leaks] = leaf;
        st->n_leaks++;
    }
    if (replace >= 0) {
        uint32_t node = (uint32_t)st->next_id++;
        hl_sb_alloc(sb, node, T_NODE, 50, 100);
        st->cache[replace] = node;
    }
}

/* As the writer leaves it and its first reader completes it (the generation history): the
 * cases that damage it check what the commands do to such a file. */
static gboolean no_history; /* `test_leaks fixture`: as the writer leaves it */

static inline void fixture_write_history(hl_sb *sb, const char *name)
{
    fixture_write(sb, name);
    if (no_history)
        return;
    g_autofree char *path = fixture_path(name);
    g_autoptr(GError) error = NULL;
    if (!store_history_build_file(path, NULL, NULL, &error)) {
        fprintf(stderr, "cannot build fixture %s: %s\n", name, error->message);
        exit(2);
    }
}

static inline void fixture_graph(const char *name, uint32_t snapshots)
{
    graph_state st = {.next_id = 1};
    hl_sb *sb = hl_sb_new();
    hl_sb_run_start(sb, 4242, "dotnet Graph.dll");
    hl_sb_type(sb, T_HOLDER, "App.Holder");
    hl_sb_type_full(sb, &(hl_type){.type_id = T_LEAKS, .flags = HL_TYPE_FLAG_ARRAY}, "App.Leak[]");
    hl_sb_type(sb, T_LEAK, "App.Leak");
    hl_sb_type(sb, T_LEAF, "App.Leaf");
    hl_sb_type(sb, T_CACHE, "App.Cache");
    hl_sb_type(sb, T_NODE, "App.Node");
    hl_sb_type(sb, T_ROOT, "App.Root");
    hl_sb_type(sb, T_STRING, "System.String");
    hl_sb_type(sb, T_CHURN, "App.Churn");
    hl_sb_type(sb, T_OLD, "App.Old");
    /* ids 1 .. 20 as in the picture; the Leaks of snapshot 1 are 3, 4, 5 with Leafs 6, 7, 8 */
    const struct {
        uint32_t type, size;
    } first[20] = {{T_HOLDER, 32}, {T_LEAKS, 100}, {T_LEAK, 40},   {T_LEAK, 40},  {T_LEAK, 40},
                   {T_LEAF, 1000}, {T_LEAF, 1000}, {T_LEAF, 1000}, {T_CACHE, 24}, {T_NODE, 50},
                   {T_NODE, 50},   {T_NODE, 50},   {T_ROOT, 10},   {T_NODE, 50},  {T_NODE, 50},
                   {T_STRING, 20}, {T_NODE, 50},   {T_NODE, 50},   {T_CHURN, 30}, {T_NODE, 50}};
    for (uint32_t i = 0; i < 20; i++)
        hl_sb_alloc(sb, i + 1, first[i].type, first[i].size, 100);
    st.next_id = 21;
    for (uint32_t i = 0; i < 3; i++) {
        st.leaks[i] = 3 + i;
        st.leafs[i] = 6 + i;
        st.cache[i] = 10 + i;
    }
    st.n_leaks = 3;

    uint64_t first_new = 1;
    for (uint32_t gc = 1; gc <= snapshots; gc++) {
        if (gc > 1)
            grow(sb, &st, (int)gc - 2); /* replaces cache[0], [1], [2] in GCs 2, 3, 4 */
        hl_sb_gc_start(sb, gc, 2, TRUE, st.next_id);
        for (uint64_t id = first_new; id < st.next_id; id++)
            hl_sb_fate(sb, gc, id, HL_FATE(HL_GEN_0, HL_GEN_1));
        if (gc == 2) {
            hl_sb_death(sb, gc, 10);
            hl_sb_death(sb, gc, 19);
            hl_sb_death(sb, gc, 20);
        } else if (gc == 3) {
            hl_sb_death(sb, gc, 11);
        } else if (gc == 4) {
            hl_sb_death(sb, gc, 12);
        }
        first_new = st.next_id;
        if (gc == 1)
            hl_sb_discovered(sb, gc, DISCOVERED_ID, T_OLD, 64, HL_GEN_2);
        snapshot_write(sb, gc, &st, gc == 1);
        hl_sb_gc_end(sb, gc, HL_GC_FLAG_COMPACTING);
    }
    hl_sb_run_end(sb, snapshots);
    fixture_write_history(sb, name);
}

/* nosnap.db: one GC, no snapshot. */
static inline void fixture_nosnap(void)
{
    hl_sb *sb = hl_sb_new();
    hl_sb_run_start(sb, 5, "dotnet Tiny.dll");
    hl_sb_type(sb, 1, "System.String");
    hl_sb_alloc(sb, 1, 1, 24, 9);
    hl_sb_gc_start(sb, 1, 0, FALSE, 2);
    hl_sb_fate(sb, 1, 1, HL_FATE(HL_GEN_0, HL_GEN_1));
    hl_sb_gc_end(sb, 1, HL_GC_FLAG_COMPACTING);
    hl_sb_run_end(sb, 1);
    fixture_write_history(sb, "nosnap.db");
}

/* named.db (schema 7): a static holds a registry whose field holds a list whose array holds the
 * object asked for. Object[] #1 (the runtime's statics, held by a handle) -[5]-> Registry #2
 * ._sessions -> List<Session> #3 ._items -> Session[] #4 [7] -> Session #5; element 5 of #1 is
 * the static App.Program.s_registry. */
static inline void fixture_named(void)
{
    enum { N_STATICS = 1, N_REGISTRY, N_LIST, N_ARRAY, N_SESSION, N_PROGRAM };
    hl_sb *sb = hl_sb_new();
    hl_sb_run_start(sb, 6, "dotnet Named.dll");
    hl_sb_type_full(sb, &(hl_type){.type_id = N_STATICS, .flags = HL_TYPE_FLAG_ARRAY},
                    "System.Object[]");
    hl_sb_type(sb, N_REGISTRY, "App.Registry");
    hl_sb_type(sb, N_LIST, "System.Collections.Generic.List<App.Session>");
    hl_sb_type_full(sb, &(hl_type){.type_id = N_ARRAY, .flags = HL_TYPE_FLAG_ARRAY},
                    "App.Session[]");
    hl_sb_type(sb, N_SESSION, "App.Session");
    hl_sb_type(sb, N_PROGRAM, "App.Program");
    hl_sb_field(sb, N_REGISTRY, 1, "Name");
    hl_sb_field(sb, N_REGISTRY, 2, "_sessions");
    hl_sb_field(sb, N_LIST, 1, "_items");
    hl_sb_static(sb, 1, N_PROGRAM, "s_registry");
    const uint32_t sizes[] = {0, 8192, 32, 32, 96, 24};
    for (uint32_t id = 1; id <= 5; id++)
        hl_sb_alloc(sb, id, id, sizes[id], 100);
    hl_sb_gc_start(sb, 1, 2, TRUE, 6);
    for (uint64_t id = 1; id <= 5; id++)
        hl_sb_fate(sb, 1, id, HL_FATE(HL_GEN_0, HL_GEN_1));
    hl_sb_snapshot_start(sb, 1, 1, HL_SNAPSHOT_INDUCED);
    for (uint64_t id = 1; id <= 5; id++)
        hl_sb_snapshot_object(sb, 1, id, HL_GEN_1, 0);
    const uint32_t refs[][3] = {{1, 2, 5}, {2, 3, 2}, {3, 4, 1}, {4, 5, 7}};
    for (size_t i = 0; i < G_N_ELEMENTS(refs); i++)
        hl_sb_snapshot_ref(sb, 1, refs[i][0], refs[i][1]);
    for (size_t i = 0; i < G_N_ELEMENTS(refs); i++)
        hl_sb_snapshot_ref_field(sb, 1, refs[i][2]);
    hl_sb_snapshot_static(sb, 1, 1, 5, 1);
    hl_sb_snapshot_root(sb, 1, 1, HL_ROOT_HANDLE, 0, 0x1000);
    hl_sb_snapshot_end(sb, 1, 1);
    hl_sb_gc_end(sb, 1, HL_GC_FLAG_COMPACTING);
    hl_sb_run_end(sb, 1);
    fixture_write_history(sb, "named.db");
}

/* noise.db: two snapshots after full GCs of a heap that hardly changes: 200 App.Steady objects
 * throughout; between the two, one more System.String (30 B) and System.Object[] (160 B), as the
 * runtime's own state moves, and one App.Big of 100,000 B (over 1% of the heap). */
static inline void fixture_noise(void)
{
    enum { S_STEADY = 1, S_STRING, S_ARRAY, S_BIG };
    hl_sb *sb = hl_sb_new();
    hl_sb_run_start(sb, 7, "dotnet Noise.dll");
    hl_sb_type(sb, S_STEADY, "App.Steady");
    hl_sb_type(sb, S_STRING, "System.String");
    hl_sb_type_full(sb, &(hl_type){.type_id = S_ARRAY, .flags = HL_TYPE_FLAG_ARRAY},
                    "System.Object[]");
    hl_sb_type(sb, S_BIG, "App.Big");
    for (uint64_t id = 1; id <= 200; id++)
        hl_sb_alloc(sb, id, S_STEADY, 5000, 100);
    for (uint32_t gc = 1; gc <= 2; gc++) {
        uint64_t last = gc == 1 ? 200 : 203;
        if (gc == 2) {
            hl_sb_alloc(sb, 201, S_STRING, 30, 100);
            hl_sb_alloc(sb, 202, S_ARRAY, 160, 100);
            hl_sb_alloc(sb, 203, S_BIG, 100000, 100);
        }
        hl_sb_gc_start(sb, gc, 2, TRUE, last + 1);
        for (uint64_t id = gc == 1 ? 1 : 201; id <= last; id++)
            hl_sb_fate(sb, gc, id, HL_FATE(HL_GEN_0, HL_GEN_1));
        hl_sb_snapshot_start(sb, gc, gc, HL_SNAPSHOT_INDUCED);
        for (uint64_t id = 1; id <= last; id++) {
            hl_sb_snapshot_object(sb, gc, id, HL_GEN_1, 0);
            hl_sb_snapshot_root(sb, gc, id, HL_ROOT_HANDLE, 0, 0x1000 + id);
        }
        hl_sb_snapshot_end(sb, gc, gc);
        hl_sb_gc_end(sb, gc, HL_GC_FLAG_COMPACTING);
    }
    hl_sb_run_end(sb, 2);
    fixture_write_history(sb, "noise.db");
}

/* strings.db: one snapshot of 12 copies of "dup" (30 B each) and one "other". */
static inline void fixture_strings(void)
{
    hl_sb *sb = hl_sb_new();
    hl_sb_run_start(sb, 8, "dotnet Strings.dll");
    hl_sb_type(sb, 1, "System.String");
    for (uint64_t id = 1; id <= 13; id++)
        hl_sb_alloc(sb, id, 1, 30, 100);
    hl_sb_gc_start(sb, 1, 2, TRUE, 14);
    for (uint64_t id = 1; id <= 13; id++)
        hl_sb_fate(sb, 1, id, HL_FATE(HL_GEN_0, HL_GEN_1));
    hl_sb_snapshot_start(sb, 1, 1, HL_SNAPSHOT_INDUCED);
    for (uint64_t id = 1; id <= 13; id++) {
        hl_sb_snapshot_object(sb, 1, id, HL_GEN_1, 0);
        hl_sb_snapshot_root(sb, 1, id, HL_ROOT_HANDLE, 0, 0x1000 + id);
        hl_sb_snapshot_string(sb, 1, id, id <= 12 ? "dup" : "other", 64);
    }
    hl_sb_snapshot_end(sb, 1, 1);
    hl_sb_gc_end(sb, 1, HL_GC_FLAG_COMPACTING);
    hl_sb_run_end(sb, 1);
    fixture_write_history(sb, "strings.db");
}

/* metadata.db / params.db: one snapshot of 10 RuntimeParameterInfo (1 .. 10) each holding its own
 * "ClrInstanceID" string (11 .. 20), and 10 "dup" strings (21 .. 30) held by handles; metadata.db
 * also holds the runtime's NativeRuntimeEventSource (31), params.db does not. */
static inline void fixture_metadata(const char *name, gboolean event_source)
{
    enum { M_PARAM = 1, M_STRING, M_SOURCE };
    hl_sb *sb = hl_sb_new();
    hl_sb_run_start(sb, 12, "dotnet Metadata.dll");
    hl_sb_type(sb, M_PARAM, "System.Reflection.RuntimeParameterInfo");
    hl_sb_type(sb, M_STRING, "System.String");
    hl_sb_type(sb, M_SOURCE, "System.Diagnostics.Tracing.NativeRuntimeEventSource");
    uint64_t n = event_source ? 31 : 30;
    for (uint64_t id = 1; id <= n; id++)
        hl_sb_alloc(sb, id, id <= 10 ? M_PARAM : id <= 30 ? M_STRING : M_SOURCE,
                    id <= 10 ? 56 : id <= 20 ? 48 : id <= 30 ? 28 : 184, 100);
    hl_sb_gc_start(sb, 1, 2, TRUE, n + 1);
    for (uint64_t id = 1; id <= n; id++)
        hl_sb_fate(sb, 1, id, HL_FATE(HL_GEN_0, HL_GEN_1));
    hl_sb_snapshot_start(sb, 1, 1, HL_SNAPSHOT_INDUCED);
    for (uint64_t id = 1; id <= n; id++) {
        hl_sb_snapshot_object(sb, 1, id, HL_GEN_1, 0);
        if (id <= 10)
            hl_sb_snapshot_ref(sb, 1, id, id + 10);
        if (id <= 10 || id > 20)
            hl_sb_snapshot_root(sb, 1, id, HL_ROOT_HANDLE, 0, 0x1000 + id);
        if (id > 10 && id <= 30)
            hl_sb_snapshot_string(sb, 1, id, id <= 20 ? "ClrInstanceID" : "dup", 64);
    }
    hl_sb_snapshot_end(sb, 1, 1);
    hl_sb_gc_end(sb, 1, HL_GC_FLAG_COMPACTING);
    hl_sb_run_end(sb, 1);
    fixture_write_history(sb, name);
}

/* kept.db (schema 8): two snapshots. Types: App.Res (a finalizer), App.Keep (a finalizer),
 * List<Int32> (own counts: list 10 holds 10 of 1,000 in an Int32[] of 4,024 B; list 11 holds 0
 * of 4, its storage not empty: empty by its own count), System.Int32[].
 * Snapshot 1: Res 1, 2 in the f-reachable queue (finalizer roots), Keep 3 held by a handle;
 * snapshot 2: Res 1, 2 held by a static array's handle (finalized, reachable again), Keep 3, the
 * lists held by Main's frame (a stack root of FunctionID 0x5000, named App.Program.Main; list 11's
 * on thread 77's stack, list 10's thread not known), Keep 3
 * held only by element 0 of an Object[] (20, held by a handle) that is thread static
 * App.Keep.t_keep of thread 77, "worker". */
static inline void fixture_kept(void)
{
    enum { K_RES = 1, K_KEEP, K_LIST, K_INTS, K_OBJS };
    hl_sb *sb = hl_sb_new();
    hl_sb_run_start(sb, 9, "dotnet Kept.dll");
    hl_sb_type_full(sb, &(hl_type){.type_id = K_RES, .flags = HL_TYPE_FLAG_FINALIZER}, "App.Res");
    hl_sb_type_full(sb, &(hl_type){.type_id = K_KEEP, .flags = HL_TYPE_FLAG_FINALIZER},
                    "App.Keep");
    hl_sb_type(sb, K_LIST, "System.Collections.Generic.List<System.Int32>");
    hl_sb_type_full(sb, &(hl_type){.type_id = K_INTS, .flags = HL_TYPE_FLAG_ARRAY},
                    "System.Int32[]");
    hl_sb_type_full(sb, &(hl_type){.type_id = K_OBJS, .flags = HL_TYPE_FLAG_ARRAY},
                    "System.Object[]");
    hl_sb_root_method(sb, 0x5000, "App.Program.Main");
    hl_sb_thread(sb, 77, 0x7700, "worker");
    hl_sb_static(sb, 1, K_KEEP, "t_keep");
    hl_sb_static_thread(sb, 1, 77);
    hl_sb_alloc(sb, 20, K_OBJS, 32, 100);
    hl_sb_alloc(sb, 1, K_RES, 24, 100);
    hl_sb_alloc(sb, 2, K_RES, 24, 100);
    hl_sb_alloc(sb, 3, K_KEEP, 32, 100);
    hl_sb_alloc(sb, 10, K_LIST, 32, 100);
    hl_sb_alloc(sb, 11, K_LIST, 32, 100);
    hl_sb_alloc(sb, 12, K_INTS, 4024, 100);
    hl_sb_alloc(sb, 13, K_INTS, 40, 100);
    for (uint32_t gc = 1; gc <= 2; gc++) {
        hl_sb_gc_start(sb, gc, 2, TRUE, 14);
        if (gc == 1)
            for (uint64_t id = 1; id <= 20; id++)
                if (id <= 3 || (id >= 10 && id <= 13) || id == 20)
                    hl_sb_fate(sb, 1, id, HL_FATE(HL_GEN_0, HL_GEN_1));
        hl_sb_snapshot_start(sb, gc, gc, HL_SNAPSHOT_INDUCED);
        for (uint64_t id = 1; id <= 20; id++)
            if (id <= 3 || (id >= 10 && id <= 13) || id == 20)
                hl_sb_snapshot_object(sb, gc, id, HL_GEN_1, 0);
        hl_sb_snapshot_ref(sb, gc, 10, 12);
        hl_sb_snapshot_ref(sb, gc, 11, 13);
        hl_sb_snapshot_ref(sb, gc, 20, 3);
        hl_sb_snapshot_ref_field(sb, gc, 1);
        hl_sb_snapshot_ref_field(sb, gc, 1);
        hl_sb_snapshot_ref_field(sb, gc, 0);
        hl_sb_snapshot_static(sb, gc, 20, 0, 1);
        hl_sb_snapshot_root(sb, gc, 20, HL_ROOT_HANDLE, 0, 0x2020);
        hl_sb_snapshot_collection(sb, gc, 10, 10, 1000);
        hl_sb_snapshot_collection(sb, gc, 11, 0, 4);
        hl_sb_snapshot_root(sb, gc, 1, gc == 1 ? HL_ROOT_FINALIZER : HL_ROOT_HANDLE, 0,
                            gc == 1 ? 0 : 0x2001);
        hl_sb_snapshot_root(sb, gc, 2, gc == 1 ? HL_ROOT_FINALIZER : HL_ROOT_HANDLE, 0,
                            gc == 1 ? 0 : 0x2002);
        if (gc == 1)
            hl_sb_snapshot_root(sb, gc, 3, HL_ROOT_HANDLE, 0, 0x2003);
        /* two slots of Main's frame hold object 10: two rows, one root in words */
        hl_sb_snapshot_root(sb, gc, 10, HL_ROOT_STACK, 0, 0x5000);
        hl_sb_snapshot_root(sb, gc, 10, HL_ROOT_STACK, 0, 0x5000);
        hl_sb_snapshot_root(sb, gc, 11, HL_ROOT_STACK, 0, 0x5000);
        hl_sb_snapshot_root_thread(sb, gc, 11, 77);
        hl_sb_snapshot_end(sb, gc, gc);
        hl_sb_gc_end(sb, gc, HL_GC_FLAG_COMPACTING);
    }
    hl_sb_run_end(sb, 2);
    fixture_write_history(sb, "kept.db");
}

/* pool-N.db: one snapshot of `pool` App.Pool (100 B) and `grow` App.Grow (40 B) objects, for
 * leaks across files: the files 1 to 4 hold 1,000 / 1,010 / 1,020 / 1,030 Pools (steady, but 1%
 * of the type a file) and 100 / 200 / 300 / 400 Grows. */
static inline void fixture_pool(const char *name, uint64_t pool, uint64_t grow)
{
    enum { P_POOL = 1, P_GROW };
    hl_sb *sb = hl_sb_new();
    hl_sb_run_start(sb, 11, "dotnet Pool.dll");
    hl_sb_type(sb, P_POOL, "App.Pool");
    hl_sb_type(sb, P_GROW, "App.Grow");
    uint64_t n = pool + grow;
    for (uint64_t id = 1; id <= n; id++)
        hl_sb_alloc(sb, id, id <= pool ? P_POOL : P_GROW, id <= pool ? 100 : 40, 100);
    hl_sb_gc_start(sb, 1, 2, TRUE, n + 1);
    for (uint64_t id = 1; id <= n; id++)
        hl_sb_fate(sb, 1, id, HL_FATE(HL_GEN_0, HL_GEN_1));
    hl_sb_snapshot_start(sb, 1, 1, HL_SNAPSHOT_INDUCED);
    for (uint64_t id = 1; id <= n; id++) {
        hl_sb_snapshot_object(sb, 1, id, HL_GEN_1, 0);
        hl_sb_snapshot_root(sb, 1, id, HL_ROOT_HANDLE, 0, 0x1000 + id);
    }
    hl_sb_snapshot_end(sb, 1, 1);
    hl_sb_gc_end(sb, 1, HL_GC_FLAG_COMPACTING);
    hl_sb_run_end(sb, 1);
    fixture_write_history(sb, name);
}

/* chain.db: a leak at the end of a linked list. A handle holds App.Holder #1, whose .Head is the
 * first of ten App.Node (#2 .. #11) linked by .Next; the last one's .Items is the App.Leak[] #12
 * holding the App.Leak objects, three more at each of three induced full GCs and snapshots. */
static inline void fixture_chain(void)
{
    enum { C_HOLDER = 1, C_NODE, C_LEAKS, C_LEAK };
    hl_sb *sb = hl_sb_new();
    hl_sb_run_start(sb, 7, "dotnet Chain.dll");
    hl_sb_type(sb, C_HOLDER, "App.Holder");
    hl_sb_type(sb, C_NODE, "App.Node");
    hl_sb_type_full(sb, &(hl_type){.type_id = C_LEAKS, .flags = HL_TYPE_FLAG_ARRAY}, "App.Leak[]");
    hl_sb_type(sb, C_LEAK, "App.Leak");
    hl_sb_field(sb, C_HOLDER, 1, "Head");
    hl_sb_field(sb, C_NODE, 1, "Next");
    hl_sb_field(sb, C_NODE, 2, "Items");
    hl_sb_alloc(sb, 1, C_HOLDER, 32, 100);
    for (uint32_t id = 2; id <= 11; id++)
        hl_sb_alloc(sb, id, C_NODE, 40, 100);
    hl_sb_alloc(sb, 12, C_LEAKS, 200, 100);
    uint64_t next = 13, first_new = 1;
    for (uint32_t gc = 1; gc <= 3; gc++) {
        for (int i = 0; i < 3; i++, next++)
            hl_sb_alloc(sb, next, C_LEAK, 24, 100);
        hl_sb_gc_start(sb, gc, 2, TRUE, next);
        for (uint64_t id = first_new; id < next; id++)
            hl_sb_fate(sb, gc, id, HL_FATE(HL_GEN_0, HL_GEN_1));
        first_new = next;
        hl_sb_snapshot_start(sb, gc, gc, HL_SNAPSHOT_INDUCED);
        for (uint64_t id = 1; id < next; id++)
            hl_sb_snapshot_object(sb, gc, id, HL_GEN_1, 0);
        for (uint64_t id = 1; id <= 10; id++)
            hl_sb_snapshot_ref(sb, gc, id, id + 1);
        hl_sb_snapshot_ref(sb, gc, 11, 12);
        for (uint64_t id = 13; id < next; id++)
            hl_sb_snapshot_ref(sb, gc, 12, id);
        for (uint64_t id = 1; id <= 10; id++)
            hl_sb_snapshot_ref_field(sb, gc, 1);
        hl_sb_snapshot_ref_field(sb, gc, 2);
        for (uint64_t id = 13; id < next; id++)
            hl_sb_snapshot_ref_field(sb, gc, (uint32_t)(id - 13));
        hl_sb_snapshot_root(sb, gc, 1, HL_ROOT_HANDLE, 0, 0x1000);
        hl_sb_snapshot_end(sb, gc, gc);
        hl_sb_gc_end(sb, gc, HL_GC_FLAG_COMPACTING);
    }
    hl_sb_run_end(sb, 3);
    fixture_write_history(sb, "chain.db");
}

static inline void fixtures_build(void)
{
    fixture_metadata("metadata.db", TRUE);
    fixture_metadata("params.db", FALSE);
    for (uint64_t i = 0; i < 4; i++) {
        g_autofree char *name = g_strdup_printf("pool-%u.db", (unsigned)(i + 1));
        fixture_pool(name, 1000 + 10 * i, 100 * (i + 1));
    }
    fixture_kept();
    fixture_strings();
    fixture_noise();
    fixture_named();
    fixture_chain();
    fixture_graph("graph.db", 4);
    fixture_graph("one.db", 1);
    fixture_graph("two.db", 2);
    fixture_graph("three.db", 3);
    fixture_nosnap();
}

/* Makes `name` unwritable for heaplens: mode 0400, or (root ignores modes) a run status that
 * says the writer may still be at work. */
static inline void file_unwritable(const char *name)
{
    g_autofree char *path = fixture_path(name);
    CHECK(g_chmod(path, 0400) == 0);
    if (access(path, W_OK) == 0) {
        fprintf(stderr, "  (running as root: read-only case checked through a status)\n");
        sqlite3 *db = NULL;
        g_chmod(path, 0600);
        sqlite3_open(path, &db);
        sqlite3_exec(db, "UPDATE run SET status = 'recording'", NULL, NULL, NULL);
        sqlite3_close(db);
    }
}

/* `heaplens COMMAND copy --json` where `copy`, a copy of fixture `from`, is a file heaplens may
 * not write: exit 0, stdout exactly `out` (the answer on a writable file), the note `note` on
 * stderr, and no `table` made in the file. `copy` is left writable again. */
static inline void expect_results_not_stored(const char *command, const char *from,
                                             const char *copy, const char *out, const char *note,
                                             const char *table)
{
    file_copy(from, copy);
    file_unwritable(copy);
    run_result r = RUN(command, copy, "--json");
    CHECK_INT(r.status, 0);
    CHECK_STR(r.out, out);
    CHECK(strstr(r.err, note) != NULL);
    run_result_release(&r);
    g_autofree char *sql =
        g_strdup_printf("SELECT count(*) FROM sqlite_schema WHERE name = '%s'", table);
    CHECK_INT(sql_int(copy, sql), 0);
    g_autofree char *path = fixture_path(copy);
    g_chmod(path, 0600);
}

static inline void path_expect(json_t *path, const long long *ids, size_t n)
{
    CHECK_INT(json_array_size(path), n);
    for (size_t i = 0; i < n && i < json_array_size(path); i++)
        CHECK_INT(jint(json_array_get(path, i), "object"), ids[i]);
}

/* ---- main ---------------------------------------------------------------------------------- */

/* `test_leaks fixture DIR`: graph.db as the writer leaves it (no command has read it: the
 * generation history is not built), with the allocation samples of hl_stack_fixture.h, for
 * tests/unit/cli/fuzz_test.py. */
static inline int fixture_only(const char *dir)
{
    g_autoptr(GError) error = NULL;
    workdir = g_strdup(dir);
    g_mkdir_with_parents(workdir, 0755);
    g_autofree char *path = fixture_path("graph.db");
    g_remove(path);
    no_history = TRUE;
    fixture_graph("graph.db", 4);
    if (!hl_stack_fixture_add(path, TRUE, 0, &error)) {
        fprintf(stderr, "cannot add samples to graph.db: %s\n", error->message);
        return 2;
    }
    g_free(workdir);
    return 0;
}

/* The body of a test program's main: the fixture alone, or the fixtures and case argv[3] (or
 * every case for "all") through cli_test_main. */
static inline int leaks_test_main(int argc, char **argv, const cli_test_case *cases, size_t n_cases)
{
    if (argc == 3 && strcmp(argv[1], "fixture") == 0)
        return fixture_only(argv[2]);
    if (argc != 4) {
        fprintf(stderr, "usage: %s HEAPLENS SOURCE_DIR CASE|all\n"
                        "       %s fixture DIR\n", argv[0], argv[0]);
        return 2;
    }
    heaplens = argv[1];
    source_dir = argv[2];
    return cli_test_main("leaks", argv[3], cases, n_cases, fixtures_build);
}

#endif /* HEAPLENS_TEST_LEAKS_TEST_H */
