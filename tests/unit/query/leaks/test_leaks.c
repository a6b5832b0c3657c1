/* test_leaks.c — `heaplens retention`, `roots`, `leaks`, `diff` and `survivors --by age` on
 * recordings whose heap snapshots are known by hand, run as a user runs them; the retention
 * tables and views, and every examples/queries/ .sql file, checked through SQLite.
 *
 *   test_leaks HEAPLENS SOURCE_DIR CASE|all      (HEAPLENS_TEST_KEEP=1 keeps the fixtures)
 *   test_leaks fixture DIR                       only writes graph.db, unread, with samples
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
#include "tests/unit/common/cli_test.h"
#include "tests/unit/common/hl_stack_fixture.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *source_dir;

/* ---- running heaplens ------------------------------------------------------------------ */

/* Runs a command that must succeed with JSON on stdout and nothing on stderr; returns the
 * document (NULL after counting a failure). */
#define RUN_JSON(...) json_run(__FILE__, __LINE__, RUN(__VA_ARGS__), NULL, "")

/* A failing run: exit 1, nothing on stdout, exactly `err` on stderr. */
#define EXPECT_ERROR(err, ...) EXPECT(RUN(__VA_ARGS__), 1, "", (err))

static json_int_t jint(json_t *obj, const char *key)
{
    return json_integer_value(json_object_get(obj, key));
}

static const char *jstr(json_t *obj, const char *key)
{
    return json_string_value(json_object_get(obj, key));
}

static json_t *jrow(json_t *doc, size_t i)
{
    return json_array_get(json_object_get(doc, "rows"), i);
}

/* ---- SQLite helpers ---------------------------------------------------------------------- */

/* One integer from `sql` on file `name` (-1 on any error). */
static long long sql_int(const char *name, const char *sql)
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

static void file_copy(const char *from, const char *to)
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

static void snapshot_write(hl_sb *sb, uint32_t s, const graph_state *st, gboolean first)
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
static void grow(hl_sb *sb, graph_state *st, int replace)
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

static void fixture_write_history(hl_sb *sb, const char *name)
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

static void fixture_graph(const char *name, uint32_t snapshots)
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
static void fixture_nosnap(void)
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
static void fixture_named(void)
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
static void fixture_noise(void)
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
static void fixture_strings(void)
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
static void fixture_metadata(const char *name, gboolean event_source)
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
static void fixture_kept(void)
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
static void fixture_pool(const char *name, uint64_t pool, uint64_t grow)
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
static void fixture_chain(void)
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

static void fixtures_build(void)
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

/* ---- cases ------------------------------------------------------------------------------- */

static void case_retention_objects(void)
{
    file_copy("graph.db", "r1.db");
    json_t *doc = RUN_JSON("retention", "r1.db", "--snapshot", "1", "--json", "--top", "6");
    if (!doc)
        return;
    CHECK_INT(jint(doc, "snapshot"), 1);
    CHECK_INT(jint(doc, "objects"), 21);
    CHECK_INT(jint(doc, "reachable"), 19);
    CHECK_INT(jint(doc, "reachable_bytes"), 3252 + 174 + 210 + 20 + 64);
    const struct {
        long long object, retained, count, shallow;
        const char *type;
    } want[] = {{1, 3252, 8, 32, "App.Holder"}, {2, 3220, 7, 100, "App.Leak[]"},
                {3, 1040, 2, 40, "App.Leak"},   {4, 1040, 2, 40, "App.Leak"},
                {5, 1040, 2, 40, "App.Leak"},   {6, 1000, 1, 1000, "App.Leaf"}};
    CHECK_INT(json_array_size(json_object_get(doc, "rows")), G_N_ELEMENTS(want));
    for (size_t i = 0; i < G_N_ELEMENTS(want); i++) {
        json_t *row = jrow(doc, i);
        CHECK_INT(jint(row, "object"), want[i].object);
        CHECK_STR(jstr(row, "type"), want[i].type);
        CHECK_INT(jint(row, "retained_bytes"), want[i].retained);
        CHECK_INT(jint(row, "retained_count"), want[i].count);
        CHECK_INT(jint(row, "shallow_bytes"), want[i].shallow);
    }
    /* the array names its element type */
    CHECK_STR(jstr(jrow(doc, 1), "element_type"), "App.Leak");
    CHECK(json_is_null(json_object_get(jrow(doc, 0), "element_type")));
    json_decref(doc);

    /* stored: every reachable object of snapshot 1, with its dominator */
    CHECK_INT(sql_int("r1.db", "SELECT count(*) FROM retention WHERE snapshot = 1"), 19);
    CHECK_INT(sql_int("r1.db", "SELECT retained_bytes FROM retention"
                               " WHERE object_id = 281474976710661 AND idom_id IS NULL"),
              64);
    CHECK_INT(sql_int("r1.db", "SELECT retained_bytes FROM retention WHERE object_id = 13"), 210);
    CHECK_INT(sql_int("r1.db", "SELECT retained_count FROM retention WHERE object_id = 13"), 5);
    CHECK_INT(sql_int("r1.db", "SELECT retained_bytes FROM retention WHERE object_id = 9"), 174);
    CHECK_INT(sql_int("r1.db", "SELECT retained_bytes FROM retention WHERE object_id = 17"), 100);
    CHECK_INT(sql_int("r1.db", "SELECT idom_id IS NULL FROM retention WHERE object_id = 16"), 1);
    CHECK_INT(sql_int("r1.db", "SELECT idom_id FROM retention WHERE object_id = 18"), 17);
    CHECK_INT(sql_int("r1.db", "SELECT idom_id FROM retention WHERE object_id = 14"), 13);
    CHECK_INT(sql_int("r1.db", "SELECT count(*) FROM retention WHERE object_id IN (19, 20)"), 0);
    CHECK_INT(sql_int("r1.db", "SELECT root_edges FROM retention_snapshots WHERE snapshot = 1"), 4);
    /* the views */
    CHECK_INT(sql_int("r1.db", "SELECT retained_bytes FROM retained_objects"
                               " WHERE snapshot = 1 AND type = 'App.Root'"),
              210);
    CHECK_INT(sql_int("r1.db", "SELECT count(*) FROM retained_objects WHERE snapshot = 1"
                               " AND dominator_type = 'App.Leak[]'"),
              3);
    CHECK_INT(sql_int("r1.db", "SELECT retained_bytes FROM snapshot_root_objects"
                               " WHERE snapshot = 1 AND root_id = 12288"),
              210);
    CHECK_INT(sql_int("r1.db", "SELECT count(*) FROM snapshot_references WHERE snapshot = 1"
                               " AND from_type = 'App.Cache'"),
              4);
}

/* top.db, as the writer leaves it (the objects rows not built): large retainers (64 KiB or
 * more) whose element types the listing names — a List whose largest array holds mostly one
 * type, an array without a majority, one with a majority of another type, a plain object. */
static void fixture_top(const char *name)
{
    enum { T_ARRAY = 1, T_ITEM, T_OTHER, T_LIST, T_BIG };
    hl_sb *sb = hl_sb_new();
    hl_sb_run_start(sb, 17, "dotnet Top.dll");
    hl_sb_type_full(sb, &(hl_type){.type_id = T_ARRAY, .flags = HL_TYPE_FLAG_ARRAY},
                    "System.Object[]");
    hl_sb_type(sb, T_ITEM, "App.Item");
    hl_sb_type(sb, T_OTHER, "App.Other");
    hl_sb_type(sb, T_LIST, "System.Collections.Generic.List<App.Item>");
    hl_sb_type(sb, T_BIG, "App.Big");
    const struct {
        uint32_t type, size;
    } objects[] = {{T_LIST, 32},    {T_ARRAY, 200000}, {T_ARRAY, 100},  {T_ARRAY, 70000},
                   {T_BIG, 100000}, {T_ARRAY, 80000}};
    for (uint32_t i = 0; i < G_N_ELEMENTS(objects); i++)
        hl_sb_alloc(sb, i + 1, objects[i].type, objects[i].size, 100);
    for (uint64_t id = 10; id <= 21; id++) /* 10..16 items, 17..21 others */
        hl_sb_alloc(sb, id, id <= 16 ? T_ITEM : T_OTHER, 24, 100);
    static const uint64_t refs[][2] = {
        {1, 2},  {1, 3},                                                   /* the List */
        {2, 10}, {2, 11}, {2, 12}, {2, 13}, {2, 14}, {2, 15}, {2, 16},     /* 7 items ... */
        {2, 17}, {2, 18}, {2, 19},                                         /* ... of 10 */
        {3, 20}, {3, 21},                                                  /* the small array */
        {4, 10}, {4, 11}, {4, 17}, {4, 18},                                /* no majority */
        {6, 19}, {6, 20}, {6, 21}, {6, 12},                                /* others */
    };
    hl_sb_gc_start(sb, 1, 2, TRUE, 22);
    for (uint64_t id = 1; id <= 21; id++)
        if (id <= 6 || id >= 10)
            hl_sb_fate(sb, 1, id, HL_FATE(HL_GEN_0, HL_GEN_1));
    hl_sb_snapshot_start(sb, 1, 1, HL_SNAPSHOT_INDUCED);
    for (uint64_t id = 1; id <= 21; id++) {
        if (id > 6 && id < 10)
            continue;
        hl_sb_snapshot_object(sb, 1, id, HL_GEN_1, 0);
        for (size_t r = 0; r < G_N_ELEMENTS(refs); r++)
            if (refs[r][0] == id)
                hl_sb_snapshot_ref(sb, 1, id, refs[r][1]);
    }
    for (uint64_t id = 1; id <= 6; id++)
        if (id != 2 && id != 3)
            hl_sb_snapshot_root(sb, 1, id, HL_ROOT_HANDLE, 0, 0x1000 + id);
    hl_sb_snapshot_end(sb, 1, 1);
    hl_sb_gc_end(sb, 1, HL_GC_FLAG_COMPACTING);
    hl_sb_run_end(sb, 1);
    fixture_write(sb, name); /* as the writer leaves it */
}

/* The largest retainers and their element types: computed from the graph on the first run,
 * read back from retention_top (without reading `objects`: the packed objects damaged after
 * the first run do not matter to it), and from `retention` joined with `objects` when the table
 * holds fewer rows than asked for: the same rows. The objects rows are never built. */
static void case_retention_top(void)
{
    fixture_top("top.db");
    file_copy("top.db", "top1.db");
    const char *want = NULL;
    run_result first = RUN("retention", "top1.db", "--json", "--top", "4");
    CHECK_INT(first.status, 0);
    json_t *doc = json_loads(first.out, 0, NULL);
    CHECK(doc != NULL);
    if (doc) {
        const struct {
            long long object;
            const char *element;
        } rows[] = {{1, "App.Item"}, {2, "App.Item"}, {5, NULL}, {6, "App.Other"}};
        CHECK_INT(json_array_size(json_object_get(doc, "rows")), 4);
        for (size_t i = 0; i < G_N_ELEMENTS(rows); i++) {
            CHECK_INT(jint(jrow(doc, i), "object"), rows[i].object);
            if (rows[i].element)
                CHECK_STR(jstr(jrow(doc, i), "element_type"), rows[i].element);
            else
                CHECK(json_is_null(json_object_get(jrow(doc, i), "element_type")));
        }
        json_decref(doc);
    }
    want = first.out;
    CHECK_INT(sql_int("top1.db", "SELECT count(*) FROM retention_top WHERE snapshot = 1"), 5);
    CHECK_INT(sql_int("top1.db", "SELECT count(*) FROM retention WHERE snapshot = 1"
                                 " AND retained_bytes >= 65536"), 5);
    CHECK_INT(sql_int("top1.db", "SELECT count(*) FROM sqlite_schema WHERE name = 'objects'"
                                 " AND type = 'view'"), 1);
    /* again: from retention_top alone, even with the packed objects damaged */
    {
        g_autofree char *path = fixture_path("top1.db");
        sqlite3 *db = NULL;
        CHECK(sqlite3_open(path, &db) == SQLITE_OK);
        CHECK(sqlite3_exec(db, "UPDATE object_chunks SET objects = '[[1,2]]'", NULL, NULL, NULL) ==
              SQLITE_OK);
        sqlite3_close(db);
    }
    run_result again = RUN("retention", "top1.db", "--json", "--top", "4");
    CHECK_INT(again.status, 0);
    CHECK_STR(again.out, want);
    run_result_release(&again);
    /* more rows than retention_top holds: `retention` joined with `objects`, the same rows */
    file_copy("top.db", "top2.db");
    run_result all_first = RUN("retention", "top2.db", "--json", "--top", "9");
    run_result all_again = RUN("retention", "top2.db", "--json", "--top", "9");
    CHECK_INT(all_again.status, 0);
    CHECK_STR(all_again.out, all_first.out);
    /* its first four rows are those of retention_top */
    doc = json_loads(all_again.out, 0, NULL);
    json_t *four = json_loads(want, 0, NULL);
    CHECK(doc && four);
    if (doc && four)
        for (size_t i = 0; i < 4; i++)
            CHECK(json_equal(jrow(doc, i), jrow(four, i)));
    json_decref(doc);
    json_decref(four);
    run_result_release(&all_first);
    run_result_release(&all_again);
    run_result_release(&first);
}

/* The rows per object a command computed are read from its arrays until they are written:
 * the first run (arrays) and the second (the file's rows) answer alike. What retention computed
 * is reused: its snapshot's objects per type (leaks' series) are stored with it, equal to what
 * leaks counts itself, and the report computes the last snapshot's dominator tree once for the
 * largest retainers and the leak holders (twice before). */
static void case_retention_reuse(void)
{
    const char *const commands[][8] = {
        {"retention", "u1.db", "--top", "30", "--json", NULL},
        {"retention", "u1.db", "--top", "3", NULL},
        {"roots", "u1.db", "--type", "App.Leak", "--json", NULL},
    };
    for (size_t c = 0; c < G_N_ELEMENTS(commands); c++) {
        file_copy("graph.db", "u1.db");
        run_result first = run_in(heaplens, workdir, commands[c]);
        run_result again = run_in(heaplens, workdir, commands[c]);
        CHECK_INT(first.status, 0);
        CHECK_INT(again.status, 0);
        CHECK_STR(first.out, again.out);
        CHECK(strlen(first.out) > 100);
        run_result_release(&first);
        run_result_release(&again);
    }

    file_copy("graph.db", "u2.db");
    file_copy("graph.db", "u3.db");
    EXPECT(RUN("retention", "u2.db", "--json", "--top", "1"), 0, NULL, "");
    EXPECT(RUN("leaks", "u3.db", "--json"), 0, NULL, "");
    const char *counts = "SELECT count(*) || ':' || sum(count) || ':' || sum(bytes) || ':' ||"
                         " sum(type_id * count) FROM snapshot_type_counts WHERE snapshot = 4";
    g_autofree char *by_retention = NULL, *by_leaks = NULL;
    {
        g_autofree char *a = fixture_path("u2.db"), *b = fixture_path("u3.db");
        sqlite3 *db = NULL;
        sqlite3_stmt *stmt = NULL;
        for (int i = 0; i < 2; i++) {
            if (sqlite3_open_v2(i ? b : a, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
                sqlite3_prepare_v2(db, counts, -1, &stmt, NULL) == SQLITE_OK &&
                sqlite3_step(stmt) == SQLITE_ROW && sqlite3_column_text(stmt, 0))
                *(i ? &by_leaks : &by_retention) =
                    g_strdup((const char *)sqlite3_column_text(stmt, 0));
            sqlite3_finalize(stmt);
            sqlite3_close(db);
            stmt = NULL;
            db = NULL;
        }
    }
    CHECK(by_retention != NULL && by_leaks != NULL);
    if (by_retention && by_leaks)
        CHECK_STR(by_retention, by_leaks);
    /* every snapshot's counts leaks stored (read from the blocks) are the file's SQL view's */
    CHECK_INT(sql_int("u3.db", "SELECT count(DISTINCT snapshot) FROM snapshot_type_counts"), 4);
    CHECK_INT(sql_int("u3.db",
                      "SELECT count(*) FROM (SELECT snapshot, coalesce(o.type_id, 0) AS type_id,"
                      "  count(*) AS count, coalesce(sum(o.size), 0) AS bytes"
                      "  FROM snapshot_objects so LEFT JOIN objects o ON o.id = so.object_id"
                      "  GROUP BY 1, 2 EXCEPT SELECT * FROM snapshot_type_counts)"),
              0);
    CHECK_INT(sql_int("u3.db", "SELECT count(*) FROM snapshot_type_counts"),
              sql_int("u3.db", "SELECT count(*) FROM (SELECT DISTINCT snapshot, o.type_id"
                               "  FROM snapshot_objects so LEFT JOIN objects o"
                               "  ON o.id = so.object_id)"));
    CHECK_INT(sql_int("u2.db", "SELECT sum(count) FROM snapshot_type_counts WHERE snapshot = 4"),
              sql_int("u2.db", "SELECT objects FROM snapshots WHERE snapshot = 4"));

    file_copy("graph.db", "u4.db");
    run_result r = RUN("report", "u4.db", "--json", "-o", "/dev/null", "--progress");
    CHECK_INT(r.status, 0);
    int trees = 0;
    for (const char *p = r.err; (p = strstr(p, "report: computing dominators")); p++)
        trees++;
    CHECK_INT(trees, 2); /* snapshot 4 (retainers, holders) and 1 (the series' first) */
    run_result_release(&r);
}

/* Loading a snapshot on two threads (the default) and on one (HEAPLENS_THREADS=1) gives the
 * same results and the same stored rows. */
static void case_retention_one_thread(void)
{
    const char *files[2] = {"t2.db", "t1.db"};
    char *out[2][2] = {{NULL}};
    for (int i = 0; i < 2; i++) {
        file_copy("graph.db", files[i]);
        if (i == 1)
            g_setenv("HEAPLENS_THREADS", "1", TRUE);
        run_result r = RUN("retention", files[i], "--snapshot", "2", "--json", "--top", "50");
        CHECK_INT(r.status, 0);
        out[i][0] = g_strdup(r.out);
        run_result_release(&r);
        r = RUN("leaks", files[i], "--json");
        CHECK_INT(r.status, 0);
        out[i][1] = g_strdup(r.out);
        run_result_release(&r);
        g_unsetenv("HEAPLENS_THREADS");
    }
    for (int k = 0; k < 2; k++) {
        CHECK(strlen(out[0][k]) > 2);
        CHECK_STR(out[0][k], out[1][k]);
        g_free(out[0][k]);
        g_free(out[1][k]);
    }
    /* the stored rows, compared both ways */
    /* snapshot 1's 19 reachable objects, 3 more Leaks and their 3 Leafs */
    CHECK_INT(sql_int("t2.db", "SELECT count(*) FROM retention WHERE snapshot = 2"), 25);
    g_autofree char *path = fixture_path("t2.db");
    g_autofree char *other = fixture_path("t1.db");
    g_autofree char *attach = g_strdup_printf("ATTACH '%s' AS one", other);
    sqlite3 *db = NULL;
    sqlite3_stmt *stmt = NULL;
    CHECK(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
          sqlite3_exec(db, attach, NULL, NULL, NULL) == SQLITE_OK);
    CHECK(sqlite3_prepare_v2(
              db,
              "SELECT (SELECT count(*) FROM (SELECT * FROM main.retention"
              "                              EXCEPT SELECT * FROM one.retention))"
              "     + (SELECT count(*) FROM (SELECT * FROM one.retention"
              "                              EXCEPT SELECT * FROM main.retention))"
              "     + (SELECT count(*) FROM (SELECT * FROM main.retention_types"
              "                              EXCEPT SELECT * FROM one.retention_types))",
              -1, &stmt, NULL) == SQLITE_OK &&
          sqlite3_step(stmt) == SQLITE_ROW);
    CHECK_INT(sqlite3_column_int64(stmt, 0), 0);
    sqlite3_finalize(stmt);
    sqlite3_close(db);
}

static void case_retention_types(void)
{
    file_copy("graph.db", "r2.db");
    json_t *doc = RUN_JSON("retention", "r2.db", "--snapshot", "1", "--by", "type", "--json");
    if (!doc)
        return;
    CHECK_STR(jstr(doc, "by"), "type");
    /* Holder 3252, Leak[] 3220, Leak 3120 (3 x 1040), Leaf 3000, Node 350 (10, 11, 12, 14, 15 and
     * 17 with 18: 20 is unreachable), Root 210, Cache 174, String 20 */
    const struct {
        const char *type;
        long long count, retained, retained_count, shallow;
    } want[] = {{"App.Holder", 1, 3252, 8, 32}, {"App.Leak[]", 1, 3220, 7, 100},
                {"App.Leak", 3, 3120, 6, 120},  {"App.Leaf", 3, 3000, 3, 3000},
                {"App.Node", 7, 350, 7, 350},   {"App.Root", 1, 210, 5, 10},
                {"App.Cache", 1, 174, 4, 24},   {"App.Old", 1, 64, 1, 64},
                {"System.String", 1, 20, 1, 20}};
    CHECK_INT(json_array_size(json_object_get(doc, "rows")), G_N_ELEMENTS(want));
    for (size_t i = 0; i < G_N_ELEMENTS(want); i++) {
        json_t *row = jrow(doc, i);
        CHECK_STR(jstr(row, "type"), want[i].type);
        CHECK_INT(jint(row, "count"), want[i].count);
        CHECK_INT(jint(row, "retained_bytes"), want[i].retained);
        CHECK_INT(jint(row, "retained_count"), want[i].retained_count);
        CHECK_INT(jint(row, "shallow_bytes"), want[i].shallow);
    }
    json_decref(doc);
}

static void case_retention_text(void)
{
    file_copy("graph.db", "r3.db");
    run_result r = RUN("retention", "r3.db", "--top", "3");
    CHECK_INT(r.status, 0);
    CHECK_STR(r.out, "snapshot 4 (GC 4): 37 objects, 37 reachable from 4 roots, 12.8 KiB\n"
                     "retained  objects  shallow  object  type\n"
                     "12.3 KiB       26     32 B       1  App.Holder\n"
                     "12.3 KiB       25    100 B       2  App.Leak[]\n"
                     " 1.0 KiB        2     40 B       3  App.Leak\n");
    CHECK_STR(r.err, "");
    run_result_release(&r);
    /* the second run reads the stored rows: same output, nothing computed again */
    r = RUN("retention", "r3.db", "--top", "3");
    CHECK_INT(r.status, 0);
    CHECK(strstr(r.out, "12.3 KiB       26     32 B       1  App.Holder\n") != NULL);
    run_result_release(&r);
    CHECK_INT(sql_int("r3.db", "SELECT count(*) FROM retention_snapshots"), 1);
    r = RUN("retention", "r3.db", "--by", "type", "--top", "2");
    CHECK_STR(r.out, "snapshot 4 (GC 4): 37 objects, 37 reachable from 4 roots, 12.8 KiB\n"
                     "retained  objects  count  shallow  type\n"
                     "12.3 KiB       26      1     32 B  App.Holder\n"
                     "12.3 KiB       25      1    100 B  App.Leak[]\n");
    run_result_release(&r);
}


/* The references are read from snapshot_objects.refs as text: any JSON spacing reads the same
 * (one and two threads); text that is not an array of ids is a damaged database, said so. */
static void case_retention_refs_text(void)
{
    file_copy("graph.db", "rt1.db");
    file_copy("graph.db", "rt2.db");
    fixture_sql("rt2.db", "UPDATE snapshot_blocks SET refs = replace(replace(refs, ',', ' , '),"
                          " '[', ' [ '), ids = replace(ids, ',', ' , ') WHERE refs IS NOT NULL");
    CHECK(sql_int("rt2.db", "SELECT count(*) FROM snapshot_blocks WHERE refs LIKE '% , %'") > 0);
    for (int threads = 1; threads <= 2; threads++) {
        g_setenv("HEAPLENS_THREADS", threads == 1 ? "1" : "2", TRUE);
        run_result a = RUN("retention", "rt1.db", "--snapshot", "1", "--json", "--top", "50");
        run_result b = RUN("retention", "rt2.db", "--snapshot", "1", "--json", "--top", "50");
        CHECK_INT(a.status, 0);
        CHECK_INT(b.status, 0);
        CHECK_STR(a.out, b.out);
        run_result_release(&a);
        run_result_release(&b);
        file_copy("graph.db", "rt3.db");
        fixture_sql("rt3.db", "UPDATE snapshot_blocks SET refs = '[1,x]' WHERE id = (SELECT min(id)"
                              " FROM snapshot_blocks WHERE first_snapshot <= 1 AND last_snapshot >= 1"
                              " AND refs IS NOT NULL)");
        run_result r = RUN("retention", "rt3.db", "--snapshot", "1");
        CHECK_INT(r.status, 1);
        CHECK(strstr(r.err, "damaged") != NULL && strstr(r.err, "refs") != NULL);
        run_result_release(&r);
        file_copy("graph.db", "rt1.db");
        file_copy("graph.db", "rt2.db");
        fixture_sql("rt2.db", "UPDATE snapshot_blocks SET refs = replace(refs, ',', ', ')"
                              " WHERE refs IS NOT NULL");
    }
    g_unsetenv("HEAPLENS_THREADS");
}

/* The compact snapshots (schema 8) against schema 7's table of the same rows: a copy of graph.db
 * turned into a schema 7 file (snapshot_objects a table filled from the view, snapshot_blocks
 * gone) answers every snapshot command exactly as the original does. */
static void case_old_form(void)
{
    file_copy("graph.db", "form8.db");
    file_copy("graph.db", "form7.db");
    fixture_sql("form7.db",
                "CREATE TEMP TABLE t AS SELECT * FROM snapshot_objects;"
                "DROP VIEW snapshot_objects;"
                "CREATE TABLE snapshot_objects (snapshot INTEGER NOT NULL, object_id INTEGER NOT"
                " NULL, generation INTEGER, flags INTEGER NOT NULL, refs TEXT, fields TEXT,"
                " PRIMARY KEY (snapshot, object_id)) WITHOUT ROWID;"
                "INSERT INTO snapshot_objects SELECT * FROM temp.t;"
                "DROP TABLE snapshot_blocks; PRAGMA user_version = 7;");
    CHECK(sql_int("form7.db", "SELECT count(*) FROM snapshot_objects") ==
          sql_int("form8.db", "SELECT count(*) FROM snapshot_objects"));
    const char *const commands[][8] = {
        {"snapshots", "--json"},
        {"retention", "--snapshot", "1", "--json", "--top", "50"},
        {"retention", "--snapshot", "4", "--json", "--by", "type"},
        {"roots", "--type", "Leak", "--all", "--json"},
        {"roots", "--object", "16", "--json"},
        {"leaks", "--json"},
        {"diff", "--from", "1", "--to", "4", "--json"},
        {"inspect", "--snapshot", "4", "--json"},
        {"check", "--max-live", "Leak=5"},
    };
    for (size_t i = 0; i < G_N_ELEMENTS(commands); i++) {
        const char *const *c = commands[i];
        run_result a = RUN(c[0], "form8.db", c[1], c[2], c[3], c[4], c[5], c[6]);
        run_result b = RUN(c[0], "form7.db", c[1], c[2], c[3], c[4], c[5], c[6]);
        CHECK_INT(a.status, b.status);
        g_auto(GStrv) parts = g_strsplit(b.out, "form7.db", -1);
        g_autofree char *out = g_strjoinv("form8.db", parts);
        if (strcmp(a.out, out) != 0)
            fprintf(stderr, "  %s differs\n", c[0]);
        CHECK_STR(a.out, out);
        run_result_release(&a);
        run_result_release(&b);
    }
}

/* All rows of `sql` on the file `name` through `db` (or a plain connection when db is NULL),
 * "a|b|c" a line; "error: ..." when it fails. */
static char *rows_text(sqlite3 *db, const char *name, const char *sql)
{
    sqlite3 *own = NULL;
    if (!db) {
        g_autofree char *path = fixture_path(name);
        if (sqlite3_open_v2(path, &own, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK)
            return g_strdup("error: open");
        db = own;
    }
    GString *out = g_string_new(NULL);
    const char *tail = sql;
    while (tail && *tail) {
        sqlite3_stmt *stmt = NULL;
        if (sqlite3_prepare_v2(db, tail, -1, &stmt, &tail) != SQLITE_OK) {
            g_string_append_printf(out, "error: %s\n", sqlite3_errmsg(db));
            break;
        }
        if (!stmt)
            continue;
        int rc;
        while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
            for (int i = 0; i < sqlite3_column_count(stmt); i++) {
                const unsigned char *v = sqlite3_column_text(stmt, i);
                g_string_append_printf(out, "%s%s", i ? "|" : "", v ? (const char *)v : "NULL");
            }
            g_string_append_c(out, '\n');
        }
        if (rc != SQLITE_DONE)
            g_string_append_printf(out, "error: %s\n", sqlite3_errmsg(db));
        sqlite3_finalize(stmt);
    }
    sqlite3_close(own);
    return g_string_free(out, FALSE);
}

/* Retained sizes packed per block (retention_blocks, the view `retention`) against the rows of
 * the table an older heaplens made (a file that has it keeps being written so): the same
 * answers to every documented query through plain SQLite (the views, examples/queries/), to
 * heaplens' own connections (the TEMP virtual table `retention`: by snapshot, by object, both,
 * values of other types, every row) and to the commands that read them back. A damaged block
 * is one line, exit 1. */
static void case_retention_packed(void)
{
    file_copy("graph.db", "pk-blocks.db");
    file_copy("graph.db", "pk-rows.db");
    fixture_sql("pk-rows.db", "CREATE TABLE retention (snapshot INTEGER NOT NULL, object_id INTEGER"
                              " NOT NULL, idom_id INTEGER, retained_bytes INTEGER NOT NULL,"
                              " retained_count INTEGER NOT NULL, PRIMARY KEY (snapshot,"
                              " object_id)) WITHOUT ROWID");
    static const char *const files[] = {"pk-blocks.db", "pk-rows.db"};
    for (size_t f = 0; f < 2; f++) {
        for (int snap = 1; snap <= 4; snap++) {
            g_autofree char *s = g_strdup_printf("%d", snap);
            run_result r = RUN("retention", files[f], "--snapshot", s);
            CHECK_INT(r.status, 0);
            run_result_release(&r);
        }
    }
    CHECK_INT(sql_int("pk-blocks.db", "SELECT count(*) FROM sqlite_schema WHERE name = 'retention'"
                                      " AND type = 'view'"), 1);
    CHECK_INT(sql_int("pk-blocks.db", "SELECT count(DISTINCT snapshot) FROM retention_blocks"), 4);
    CHECK_INT(sql_int("pk-rows.db", "SELECT count(*) FROM sqlite_schema"
                                    " WHERE name = 'retention_blocks'"), 0);
    CHECK_INT(sql_int("pk-rows.db", "SELECT count(*) FROM retention"),
              sql_int("pk-blocks.db", "SELECT sum(objects) FROM retention_blocks"));
    CHECK_INT(sql_int("pk-rows.db", "SELECT sum(reachable) FROM retention_snapshots"),
              sql_int("pk-blocks.db", "SELECT sum(objects) FROM retention_blocks"));

    /* plain SQLite: the view and the views over it, and the example queries */
    const char *const queries[] = {
        "SELECT * FROM retention ORDER BY snapshot, object_id",
        "SELECT * FROM retention WHERE snapshot = 3 ORDER BY retained_bytes DESC, object_id",
        "SELECT * FROM retention WHERE snapshot = 2 AND object_id = 13",
        "SELECT * FROM retention WHERE object_id = 281474976710661 ORDER BY snapshot",
        "SELECT * FROM retained_objects ORDER BY snapshot, object_id",
        "SELECT * FROM retained_by_type ORDER BY snapshot, type",
        "SELECT * FROM snapshot_root_objects ORDER BY snapshot, object_id, root_id",
        "SELECT snapshot, sum(retained_bytes), count(*), count(idom_id) FROM retention"
        " GROUP BY snapshot",
    };
    g_autofree char *dir = g_build_filename(source_dir, "examples", "queries", NULL);
    const char *const examples[] = {"top_retainers.sql", "dominator_chain.sql",
                                    "strong_handles_never_freed.sql"};
    GPtrArray *all = g_ptr_array_new_with_free_func(g_free);
    for (size_t i = 0; i < G_N_ELEMENTS(queries); i++)
        g_ptr_array_add(all, g_strdup(queries[i]));
    for (size_t i = 0; i < G_N_ELEMENTS(examples); i++) {
        g_autofree char *file = g_build_filename(dir, examples[i], NULL);
        char *sql = NULL;
        CHECK(g_file_get_contents(file, &sql, NULL, NULL));
        g_ptr_array_add(all, sql ? sql : g_strdup(""));
    }
    for (guint i = 0; i < all->len; i++) {
        const char *sql = g_ptr_array_index(all, i);
        g_autofree char *want = rows_text(NULL, "pk-rows.db", sql);
        g_autofree char *got = rows_text(NULL, "pk-blocks.db", sql);
        CHECK(!g_str_has_prefix(want, "error"));
        CHECK(want[0] != '\0' || i == all->len - 1); /* the fixture has no handles */
        if (strcmp(got, want) != 0)
            fprintf(stderr, "  differs: %.60s\n", sql);
        CHECK_STR(got, want);
    }
    g_ptr_array_unref(all);

    /* heaplens' connections: the virtual table, every way a statement finds its rows */
    const char *const lookups[] = {
        "SELECT * FROM retention",
        "SELECT * FROM retention ORDER BY snapshot, object_id",
        "SELECT * FROM retention WHERE snapshot = 4",
        "SELECT * FROM retention WHERE snapshot = '4'",
        "SELECT * FROM retention WHERE snapshot = 4.0",
        "SELECT * FROM retention WHERE snapshot = 4.5",
        "SELECT * FROM retention WHERE snapshot = NULL",
        "SELECT * FROM retention WHERE snapshot = 9",
        "SELECT * FROM retention WHERE snapshot = 1 AND object_id = 16",
        "SELECT * FROM retention WHERE snapshot = 1 AND object_id = 19",
        "SELECT * FROM retention WHERE snapshot = 1 AND object_id = 0",
        "SELECT * FROM retention WHERE snapshot = 1 AND object_id = 1000000",
        "SELECT * FROM retention WHERE object_id = 13",
        "SELECT * FROM retention WHERE object_id = 'x'",
        "SELECT * FROM retention WHERE snapshot IN (1, 3) AND object_id IN (2, 14, 17)",
        "SELECT r.object_id, r.retained_bytes FROM retention r JOIN retention d"
        " ON d.snapshot = r.snapshot AND d.object_id = r.idom_id WHERE r.snapshot = 2",
        "SELECT * FROM retention WHERE retained_bytes > 100 ORDER BY retained_count DESC, 1, 2",
    };
    g_autofree char *blocks_path = fixture_path("pk-blocks.db");
    g_autoptr(GError) error = NULL;
    sqlite3 *heaplens_db = store_db_open_readonly(blocks_path, &error);
    CHECK(heaplens_db != NULL);
    if (heaplens_db) {
        CHECK(sql_int("pk-blocks.db", "SELECT 1") == 1);
        g_autofree char *temp = rows_text(heaplens_db, "pk-blocks.db",
                                          "SELECT count(*) FROM temp.sqlite_schema"
                                          " WHERE name = 'retention'");
        CHECK_STR(temp, "1\n");
        for (size_t i = 0; i < G_N_ELEMENTS(lookups); i++) {
            /* in the key's order unless the query orders them */
            g_autofree char *sql = strstr(lookups[i], "ORDER BY")
                                       ? g_strdup(lookups[i])
                                       : g_strconcat(lookups[i], " ORDER BY 1, 2", NULL);
            g_autofree char *want = rows_text(NULL, "pk-rows.db", sql);
            g_autofree char *got = rows_text(heaplens_db, "pk-blocks.db", sql);
            if (strcmp(got, want) != 0)
                fprintf(stderr, "  differs: %s\n", sql);
            CHECK_STR(got, want);
        }
        sqlite3_close(heaplens_db);
    }

    /* the commands that read them back */
    const char *const commands[][8] = {
        {"retention", "--snapshot", "2", "--json", "--top", "50"},
        {"retention", "--snapshot", "4", "--by", "type", "--json"},
        {"roots", "--type", "Leak", "--json"},
        {"roots", "--type", "App.Node", "--all", "--json"},
        {"leaks", "--json"},
        {"check", "--max-retained", "App.Leak=100"},
        {"check", "--sql", "SELECT object_id FROM retention WHERE retained_count > 4"},
        {"report", "--json"},
    };
    for (size_t i = 0; i < G_N_ELEMENTS(commands); i++) {
        const char *const *c = commands[i];
        run_result a = RUN(c[0], "pk-blocks.db", c[1], c[2], c[3], c[4], c[5], c[6]);
        run_result b = RUN(c[0], "pk-rows.db", c[1], c[2], c[3], c[4], c[5], c[6]);
        CHECK_INT(a.status, b.status);
        g_auto(GStrv) parts = g_strsplit(b.out, "pk-rows.db", -1);
        g_autofree char *out = g_strjoinv("pk-blocks.db", parts);
        g_auto(GStrv) eparts = g_strsplit(b.err, "pk-rows.db", -1);
        g_autofree char *err = g_strjoinv("pk-blocks.db", eparts);
        if (strcmp(a.out, out) != 0)
            fprintf(stderr, "  %s differs\n", c[0]);
        CHECK_STR(a.out, out);
        CHECK_STR(a.err, err);
        run_result_release(&a);
        run_result_release(&b);
    }

    /* a damaged block: the command that reads it says so in one line */
    file_copy("pk-blocks.db", "pk-damaged.db");
    fixture_sql("pk-damaged.db", "UPDATE retention_blocks SET counts = replace(counts, ',1,', ',0,')"
                                 " WHERE snapshot = 4");
    run_result d = RUN("roots", "pk-damaged.db", "--type", "App.Leak");
    CHECK_INT(d.status, 1);
    CHECK_STR(d.out, "");
    CHECK_STR(d.err, "heaplens: reading pk-damaged.db failed: the database is damaged: the "
                     "retention block of object 1 has counts that heaplens does not write\n");
    CHECK(strchr(d.err, '\n') == d.err + strlen(d.err) - 1); /* one line */
    run_result_release(&d);
}

/* A file heaplens may not write: the results go to TEMP tables, a note says so. */
/* Makes `name` unwritable for heaplens: mode 0400, or (root ignores modes) a run status that
 * says the writer may still be at work. */
static void file_unwritable(const char *name)
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

static void case_retention_readonly(void)
{
    file_copy("graph.db", "ro.db");
    g_autofree char *path = fixture_path("ro.db");
    file_unwritable("ro.db");
    json_t *doc = NULL;
    run_result r = RUN("retention", "ro.db", "--snapshot", "1", "--json", "--top", "1");
    CHECK_INT(r.status, 0);
    CHECK(strstr(r.err, "heaplens: note: retained sizes were not stored: ") != NULL);
    doc = json_loads(r.out, 0, NULL);
    CHECK(doc != NULL);
    CHECK_INT(jint(jrow(doc, 0), "retained_bytes"), 3252);
    json_decref(doc);
    run_result_release(&r);
    CHECK_INT(sql_int("ro.db", "SELECT count(*) FROM sqlite_schema WHERE name = 'retention'"), 0);
    /* roots --type needs retained sizes too: they are computed again */
    r = RUN("roots", "ro.db", "--snapshot", "1", "--type", "App.Leak");
    CHECK_INT(r.status, 0);
    CHECK(g_str_has_prefix(r.out, "shortest path from a GC root to object 3 (App.Leak)"));
    CHECK(strstr(r.out, "note: retained sizes were not stored: ") == NULL);
    CHECK(g_str_has_prefix(r.err, "heaplens: note: retained sizes were not stored: "));
    run_result_release(&r);
    g_chmod(path, 0600);

    /* the file has the tables (snapshot 4) but cannot take more: TEMP tables that keep the
     * file's rows visible */
    file_copy("graph.db", "ro2.db");
    r = RUN("retention", "ro2.db");
    CHECK_INT(r.status, 0);
    run_result_release(&r);
    file_unwritable("ro2.db");
    r = RUN("leaks", "ro2.db", "--json");
    CHECK_INT(r.status, 0);
    doc = json_loads(r.out, 0, NULL);
    CHECK(doc && json_array_size(json_object_get(doc, "rows")) == 2);
    CHECK_STR(jstr(jrow(doc, 0), "type"), "App.Leak");
    CHECK_INT(jint(jrow(doc, 0), "growth_retained_bytes"), 9 * 1040);
    json_decref(doc);
    run_result_release(&r);
    CHECK_INT(sql_int("ro2.db", "SELECT count(*) FROM retention_snapshots"), 1);
    g_autofree char *path2 = fixture_path("ro2.db");
    g_chmod(path2, 0600);
}

static void path_expect(json_t *path, const long long *ids, size_t n)
{
    CHECK_INT(json_array_size(path), n);
    for (size_t i = 0; i < n && i < json_array_size(path); i++)
        CHECK_INT(jint(json_array_get(path, i), "object"), ids[i]);
}

static void case_roots_object(void)
{
    json_t *doc = RUN_JSON("roots", "graph.db", "--snapshot", "1", "--object", "6", "--json");
    if (!doc)
        return;
    CHECK_INT(jint(doc, "object"), 6);
    CHECK_STR(jstr(doc, "type"), "App.Leaf");
    CHECK_INT(json_array_size(json_object_get(doc, "rows")), 1);
    json_t *row = jrow(doc, 0);
    CHECK_INT(jint(row, "length"), 3);
    path_expect(json_object_get(row, "path"), (const long long[]){1, 2, 3, 6}, 4);
    json_t *root = json_array_get(json_object_get(row, "roots"), 0);
    CHECK_STR(jstr(root, "kind"), "handle");
    CHECK_STR(jstr(root, "handle"), "strong");
    CHECK_INT(jint(root, "root_id"), 0x1000);
    CHECK_STR(jstr(json_array_get(json_object_get(row, "path"), 1), "type"), "App.Leak[]");
    CHECK_INT(jint(json_array_get(json_object_get(row, "path"), 1), "size"), 100);
    json_decref(doc);

    run_result r = RUN("roots", "graph.db", "--snapshot", "1", "--object", "18");
    CHECK_INT(r.status, 0);
    CHECK_STR(r.out, "shortest path from a GC root to object 18 (App.Node), snapshot 1 (GC 1):\n"
                     "root: handle (pinned, 0x3000)\n"
                     "hop  object  size  type\n"
                     "  0      13  10 B  App.Root\n"
                     "  1      17  50 B  App.Node\n"
                     "  2      18  50 B  App.Node\n");
    run_result_release(&r);
}

/* A path that reads like code: it starts at the static, each hop says the field (or element)
 * holding the next (issue 21). */
static void case_roots_named(void)
{
    json_t *doc = RUN_JSON("roots", "named.db", "--object", "5", "--json");
    if (!doc)
        return;
    json_t *row = jrow(doc, 0);
    CHECK_INT(jint(row, "length"), 3);
    json_t *root = json_array_get(json_object_get(row, "roots"), 0);
    CHECK_STR(jstr(root, "kind"), "static");
    CHECK_STR(jstr(root, "static"), "App.Program.s_registry");
    json_t *hops = json_object_get(row, "path");
    path_expect(hops, (const long long[]){2, 3, 4, 5}, 4);
    CHECK_STR(jstr(json_array_get(hops, 0), "field"), "_sessions");
    CHECK_STR(jstr(json_array_get(hops, 1), "field"), "_items");
    CHECK_INT(jint(json_array_get(hops, 2), "index"), 7);
    CHECK(json_object_get(json_array_get(hops, 3), "field") == NULL);
    json_decref(doc);

    run_result r = RUN("roots", "named.db", "--object", "5");
    CHECK_INT(r.status, 0);
    CHECK_STR(r.out,
              "shortest path from a GC root to object 5 (App.Session), snapshot 1 (GC 1):\n"
              "root: static Program.s_registry\n"
              "hop  object  size  type                                          holds the next in\n"
              "  0       2  32 B  App.Registry                                  ._sessions\n"
              "  1       3  32 B  System.Collections.Generic.List<App.Session>  ._items\n"
              "  2       4  96 B  App.Session[]                                 [7]\n"
              "  3       5  24 B  App.Session                                   \n");
    run_result_release(&r);
}

static void case_roots_all(void)
{
    json_t *doc =
        RUN_JSON("roots", "graph.db", "--snapshot", "1", "--object", "16", "--all", "--json");
    if (!doc)
        return;
    CHECK_INT(json_array_size(json_object_get(doc, "rows")), 2);
    path_expect(json_object_get(jrow(doc, 0), "path"), (const long long[]){9, 16}, 2);
    CHECK_STR(jstr(json_array_get(json_object_get(jrow(doc, 0), "roots"), 0), "kind"), "stack");
    path_expect(json_object_get(jrow(doc, 1), "path"), (const long long[]){13, 14, 16}, 3);
    json_t *flags =
        json_object_get(json_array_get(json_object_get(jrow(doc, 1), "roots"), 0), "flags");
    CHECK_STR(json_string_value(json_array_get(flags, 0)), "pinning");
    json_decref(doc);
    doc = RUN_JSON("roots", "graph.db", "--snapshot", "1", "--object", "16", "--all", "--limit",
                   "1", "--json");
    CHECK(doc && json_array_size(json_object_get(doc, "rows")) == 1);
    json_decref(doc);
}

static void case_roots_type(void)
{
    file_copy("graph.db", "r4.db");
    /* the Leak that retains most: all retain 1040 in snapshot 4; the lowest id wins */
    json_t *doc = RUN_JSON("roots", "r4.db", "--type", "App.Leak", "--json");
    if (!doc)
        return;
    CHECK_INT(jint(doc, "snapshot"), 4);
    CHECK_INT(jint(doc, "object"), 3);
    path_expect(json_object_get(jrow(doc, 0), "path"), (const long long[]){1, 2, 3}, 3);
    json_decref(doc);
}

/* --type takes the full name or the name without namespaces; several matches are one line. */
static void case_roots_type_names(void)
{
    file_copy("graph.db", "names.db");
    run_result r = RUN("roots", "names.db", "--type", "Leak");
    CHECK_INT(r.status, 0);
    CHECK(g_str_has_prefix(r.out, "shortest path from a GC root to object 3 (App.Leak)"));
    run_result_release(&r);
    fixture_sql("names.db",
                "INSERT INTO types (id, name, flags) VALUES (90, 'Other.Leak', 0), "
                "(91, 'System.Collections.Generic.Dictionary<System.Int32, App.Leak>+Entry[]',"
                " 1)");
    EXPECT_ERROR("heaplens: 'Leak' names 2 types in names.db: App.Leak, Other.Leak; give the full "
                 "name\n",
                 "roots", "names.db", "--type", "Leak");
    r = RUN("roots", "names.db", "--type", "App.Leak");
    CHECK_INT(r.status, 0);
    run_result_release(&r);
    const char *short_names[] = {"Dictionary<Int32, Leak>+Entry[]",
                                 "Generic.Dictionary<System.Int32, Leak>+Entry[]",
                                 "System.Collections.Generic.Dictionary<System.Int32, App.Leak>+Entry[]"};
    for (size_t i = 0; i < G_N_ELEMENTS(short_names); i++)
        EXPECT_ERROR("heaplens: no instance of System.Collections.Generic.Dictionary<System.Int32, "
                     "App.Leak>+Entry[] in snapshot 4\n",
                     "roots", "names.db", "--type", short_names[i]);
    const char *not_names[] = {"ollections.Generic.Dictionary<Int32, Leak>+Entry[]",
                               "Dictionary<Int32, Leak>+Entry", "Dictionary<Int32, Leak>", "eak"};
    for (size_t i = 0; i < G_N_ELEMENTS(not_names); i++) {
        r = RUN("roots", "names.db", "--type", not_names[i]);
        CHECK_INT(r.status, 1);
        CHECK(g_str_has_prefix(r.err, "heaplens: no type named '") &&
              !strchr(r.err, '\n')[1]);
        run_result_release(&r);
    }
}

static void case_roots_unreachable(void)
{
    run_result r = RUN("roots", "graph.db", "--snapshot", "1", "--object", "20");
    CHECK_INT(r.status, 0);
    CHECK_STR(r.out,
              "object 20 (App.Node) in snapshot 1 (GC 1) is not reachable from any GC root: "
              "it is garbage that GC 1 did not collect (its generation was not condemned)\n");
    run_result_release(&r);
    json_t *doc = RUN_JSON("roots", "graph.db", "--snapshot", "1", "--object", "19", "--json");
    CHECK(doc && json_array_size(json_object_get(doc, "rows")) == 0);
    json_decref(doc);
}

/* An object or two more between two snapshots is the runtime's own noise, not a leak; one
 * large object over 1% of the heap is (leaks.c, the minimum growth). */
static void case_leaks_noise(void)
{
    json_t *doc = RUN_JSON("leaks", "noise.db", "--json");
    if (!doc)
        return;
    json_t *rows = json_object_get(doc, "rows");
    CHECK_INT(json_array_size(rows), 1);
    CHECK_STR(jstr(jrow(doc, 0), "type"), "App.Big");
    json_decref(doc);
}

/* array.db: one snapshot of an Object[] (1) whose elements 0 .. n-1 hold the strings 2 .. n+1.
 * Built by its case alone (the other cases need none of it). */
static void fixture_array(const char *name, uint64_t n)
{
    enum { A_ARRAY = 1, A_STRING };
    hl_sb *sb = hl_sb_new();
    hl_sb_run_start(sb, 13, "dotnet Array.dll");
    hl_sb_type_full(sb, &(hl_type){.type_id = A_ARRAY, .flags = HL_TYPE_FLAG_ARRAY},
                    "System.Object[]");
    hl_sb_type(sb, A_STRING, "System.String");
    hl_sb_alloc(sb, 1, A_ARRAY, 24 + 8 * n, 100);
    for (uint64_t id = 2; id <= n + 1; id++)
        hl_sb_alloc(sb, id, A_STRING, 24, 100);
    hl_sb_gc_start(sb, 1, 2, TRUE, n + 2);
    for (uint64_t id = 1; id <= n + 1; id++)
        hl_sb_fate(sb, 1, id, HL_FATE(HL_GEN_0, HL_GEN_1));
    hl_sb_snapshot_start(sb, 1, 1, HL_SNAPSHOT_INDUCED);
    for (uint64_t id = 1; id <= n + 1; id++)
        hl_sb_snapshot_object(sb, 1, id, HL_GEN_1, 0);
    for (uint64_t id = 2; id <= n + 1; id++) {
        hl_sb_snapshot_ref(sb, 1, 1, id);
        hl_sb_snapshot_ref_field(sb, 1, (uint32_t)(id - 2));
    }
    hl_sb_snapshot_root(sb, 1, 1, HL_ROOT_HANDLE, 0, 0x1000);
    hl_sb_snapshot_end(sb, 1, 1);
    hl_sb_gc_end(sb, 1, HL_GC_FLAG_COMPACTING);
    hl_sb_run_end(sb, 1);
    fixture_write_history(sb, name);
}

/* snapshot_ref_fields through heaplens (check --sql) on an array of 100,000 references: every
 * reference with its index and name "[i]", in one pass over the array (the file's own view
 * looks each field up by index: quadratic, hours here; ctest's timeout is the bound). */
static void case_ref_fields_large(void)
{
    fixture_array("array.db", 100000);
    run_result r = RUN("check", "array.db", "--sql",
                       "SELECT 1 FROM (SELECT count(*) AS n, sum(field = to_id - 2) AS fields,"
                       " sum(name = '[' || (to_id - 2) || ']') AS names, sum(nth) AS nths"
                       " FROM snapshot_ref_fields WHERE snapshot = 1 AND from_id = 1)"
                       " WHERE n != 100000 OR fields != 100000 OR names != 100000 OR nths != 0");
    CHECK_INT(r.status, 0);
    CHECK_STR(r.out, "1 assertion holds\n");
    run_result_release(&r);
}

/* inspect: strings every copy of which a RuntimeParameterInfo holds, beside the runtime's
 * NativeRuntimeEventSource, are said to be its event metadata (made by heaplens' own EventPipe
 * session); strings held otherwise, or parameter names without that event source, are not. */
static void case_inspect_event_metadata(void)
{
    json_t *doc = RUN_JSON("inspect", "metadata.db", "--json");
    if (!doc)
        return;
    json_t *findings = json_object_get(doc, "findings");
    CHECK_INT(json_array_size(findings), 2);
    CHECK_STR(jstr(json_array_get(findings, 0), "value"), "ClrInstanceID");
    CHECK_STR(jstr(json_array_get(findings, 0), "origin"), "event-metadata");
    CHECK_STR(jstr(json_array_get(findings, 1), "value"), "dup");
    CHECK(json_object_get(json_array_get(findings, 1), "origin") == NULL);
    json_decref(doc);
    run_result r = RUN("inspect", "metadata.db");
    CHECK_INT(r.status, 0);
    CHECK_STR(r.out, "inspections of snapshot 1 (GC 1): 2 findings\n"
                     "bytes  finding            what\n"
                     "432 B  duplicate-strings  10 strings \"ClrInstanceID\" (432 B wasted; the "
                     "runtime's event metadata, built because heaplens' EventPipe session enabled "
                     "its events)\n"
                     "252 B  duplicate-strings  10 strings \"dup\" (252 B wasted)\n");
    run_result_release(&r);
    doc = RUN_JSON("inspect", "params.db", "--json");
    if (!doc)
        return;
    findings = json_object_get(doc, "findings");
    CHECK_INT(json_array_size(findings), 2);
    for (size_t i = 0; i < json_array_size(findings); i++)
        CHECK(json_object_get(json_array_get(findings, i), "origin") == NULL);
    json_decref(doc);
}

/* inspect: a value held by at least --min-duplicates strings, all but one copy wasted; a bad
 * threshold is one line and exit 1. */
static void case_inspect(void)
{
    json_t *doc = RUN_JSON("inspect", "strings.db", "--json");
    if (!doc)
        return;
    json_t *findings = json_object_get(doc, "findings");
    CHECK_INT(json_array_size(findings), 1);
    json_t *f = json_array_get(findings, 0);
    CHECK_STR(jstr(f, "kind"), "duplicate-strings");
    CHECK_STR(jstr(f, "value"), "dup");
    CHECK_INT(jint(f, "count"), 12);
    CHECK_INT(jint(f, "bytes"), 360);
    CHECK_INT(jint(f, "wasted"), 330);
    json_decref(doc);
    doc = RUN_JSON("inspect", "strings.db", "--min-duplicates", "13", "--json");
    if (doc)
        CHECK_INT(json_array_size(json_object_get(doc, "findings")), 0);
    json_decref(doc);
    run_result r = RUN("inspect", "strings.db");
    CHECK_INT(r.status, 0);
    CHECK_STR(r.out, "inspections of snapshot 1 (GC 1): 1 finding\n"
                     "bytes  finding            what\n"
                     "330 B  duplicate-strings  12 strings \"dup\" (330 B wasted)\n");
    run_result_release(&r);
    r = RUN("inspect", "strings.db", "--max-fill", "2");
    CHECK_INT(r.status, 1);
    CHECK_STR(r.err, "heaplens: inspect: --max-fill takes a fraction from 0 to 1 (0.21: 21%), "
                     "not '2'\n");
    run_result_release(&r);
}

/* Schema 8's inspections (kept.db): finalizable objects per type with those waiting in the
 * f-reachable queue, objects finalized and reachable again, a collection under-filled and one
 * empty by their own counts; a stack root says its frame's method. */
static json_t *finding(json_t *doc, const char *kind, const char *type)
{
    size_t i;
    json_t *f;
    json_array_foreach(json_object_get(doc, "findings"), i, f)
        if (strcmp(jstr(f, "kind"), kind) == 0 && strcmp(jstr(f, "type"), type) == 0)
            return f;
    return NULL;
}

static void case_inspect_kept(void)
{
    json_t *doc = RUN_JSON("inspect", "kept.db", "--snapshot", "1", "--json");
    json_t *f = doc ? finding(doc, "finalizable", "App.Res") : NULL;
    CHECK(f != NULL);
    if (f) {
        CHECK_INT(jint(f, "count"), 2);
        CHECK_INT(jint(f, "queued"), 2);
        CHECK_INT(jint(f, "bytes"), 48);
    }
    CHECK(doc && !finding(doc, "finalized-reachable", "App.Res"));
    json_decref(doc);
    doc = RUN_JSON("inspect", "kept.db", "--json");
    if (!doc)
        return;
    f = finding(doc, "finalizable", "App.Res");
    CHECK(f && jint(f, "count") == 2 && jint(f, "queued") == 0);
    f = finding(doc, "finalizable", "App.Keep");
    CHECK(f && jint(f, "count") == 1 && jint(f, "bytes") == 32);
    f = finding(doc, "finalized-reachable", "App.Res");
    CHECK(f && jint(f, "count") == 2 && jint(f, "bytes") == 48);
    CHECK(!finding(doc, "finalized-reachable", "App.Keep"));
    const char *list = "System.Collections.Generic.List<System.Int32>";
    f = finding(doc, "under-filled", list);
    CHECK(f != NULL);
    if (f) {
        CHECK_INT(jint(f, "count"), 1);
        CHECK_INT(jint(f, "elements"), 10);
        CHECK_INT(jint(f, "capacity"), 1000);
        CHECK_INT(jint(f, "wasted"), (4024 - 24) * 990 / 1000);
    }
    f = finding(doc, "empty-collections", list);
    CHECK(f && jint(f, "count") == 1 && jint(f, "bytes") == 32);
    json_decref(doc);
    doc = RUN_JSON("inspect", "kept.db", "--max-fill", "0.005", "--json");
    CHECK(doc && !finding(doc, "under-filled", list));
    json_decref(doc);
    run_result r = RUN("inspect", "kept.db");
    CHECK(strstr(r.out, "1 System.Collections.Generic.List<System.Int32> filled 1.0% (10 of 1,000;") &&
          strstr(r.out, "2 App.Res finalized and reachable again") &&
          strstr(r.out, "2 App.Res with a finalizer\n"));
    run_result_release(&r);
    r = RUN("inspect", "kept.db", "--snapshot", "1");
    CHECK(strstr(r.out, "2 App.Res with a finalizer (2 waiting for the finalizer)") != NULL);
    run_result_release(&r);

    r = RUN("roots", "kept.db", "--object", "10");
    CHECK(strstr(r.out, "root: stack (App.Program.Main)\n") != NULL);
    run_result_release(&r);
    doc = RUN_JSON("roots", "kept.db", "--object", "10", "--json");
    json_t *root = doc ? json_array_get(json_object_get(jrow(doc, 0), "roots"), 0) : NULL;
    CHECK(root && strcmp(jstr(root, "kind"), "stack") == 0 &&
          strcmp(jstr(root, "method"), "App.Program.Main") == 0);
    json_decref(doc);
    /* a stack root whose thread is known: with its method */
    r = RUN("roots", "kept.db", "--object", "11");
    CHECK(strstr(r.out, "root: stack (App.Program.Main, thread worker, 77)\n") != NULL);
    run_result_release(&r);
    doc = RUN_JSON("roots", "kept.db", "--object", "11", "--json");
    root = doc ? json_array_get(json_object_get(jrow(doc, 0), "roots"), 0) : NULL;
    json_t *on = root ? json_object_get(root, "thread") : NULL;
    CHECK(root && strcmp(jstr(root, "method"), "App.Program.Main") == 0 && on &&
          jint(on, "os_tid") == 77 && strcmp(jstr(on, "name"), "worker") == 0);
    json_decref(doc);
    /* a thread static: the static with its thread */
    r = RUN("roots", "kept.db", "--object", "3");
    CHECK(strstr(r.out, "root: static Keep.t_keep (thread worker, 77)\n") != NULL);
    run_result_release(&r);
    doc = RUN_JSON("roots", "kept.db", "--object", "3", "--json");
    root = doc ? json_array_get(json_object_get(jrow(doc, 0), "roots"), 0) : NULL;
    json_t *thread = root ? json_object_get(root, "thread") : NULL;
    CHECK(root && strcmp(jstr(root, "static"), "App.Keep.t_keep") == 0 && thread &&
          jint(thread, "os_tid") == 77 && strcmp(jstr(thread, "name"), "worker") == 0);
    json_decref(doc);
}

/* inspect: the findings of a snapshot and options are computed once and stored (table
 * inspections): the second run reads them (its --progress says so) and says the same, and so
 * does the report; other options are computed; a snapshot whose snapshots row changed since is
 * inspected again; a read-only file answers all the same, with a note; a stored row that heaplens
 * does not write is damage. */
static void case_inspect_stored(void)
{
    file_copy("kept.db", "is1.db");
    long long last = sql_int("is1.db", "SELECT max(snapshot) FROM snapshots");
    g_autofree char *computing = g_strdup_printf("heaplens: inspect: inspecting snapshot %lld: ",
                                                 last);
    g_autofree char *reading =
        g_strdup_printf("heaplens: inspect: stored inspections of snapshot %lld: ", last);
    run_result first = RUN("inspect", "is1.db", "--json", "--progress");
    CHECK_INT(first.status, 0);
    CHECK(strstr(first.err, computing) != NULL);
    CHECK(strstr(first.err, "heaplens: inspect: storing inspections: ") != NULL);
    CHECK_INT(sql_int("is1.db", "SELECT count(*) FROM inspections"), 1);
    run_result again = RUN("inspect", "is1.db", "--json", "--progress");
    CHECK_INT(again.status, 0);
    CHECK(strstr(again.err, reading) != NULL);
    CHECK(strstr(again.err, computing) == NULL);
    CHECK(strstr(again.err, "storing inspections") == NULL);
    CHECK_STR(again.out, first.out);
    run_result_release(&again);
    json_t *doc = json_loads(first.out, 0, NULL);
    CHECK(doc && json_array_size(json_object_get(doc, "findings")) > 3);

    /* the report reads them: the same document */
    run_result r = RUN("report", "is1.db", "--json", "-o", "-", "--progress");
    CHECK_INT(r.status, 0);
    CHECK(strstr(r.err, "heaplens: report: stored inspections of snapshot") != NULL);
    CHECK(strstr(r.err, "report: inspecting snapshot") == NULL);
    json_t *report = json_loads(r.out, 0, NULL);
    CHECK(report && json_equal(json_object_get(report, "inspections"), doc));
    json_decref(report);
    run_result_release(&r);

    /* other options: computed and stored beside them */
    r = RUN("inspect", "is1.db", "--max-fill", "0.005", "--progress");
    CHECK_INT(r.status, 0);
    CHECK(strstr(r.err, computing) != NULL);
    run_result_release(&r);
    CHECK_INT(sql_int("is1.db", "SELECT count(*) FROM inspections"), 2);

    /* a stored row is what the next run says (nothing else read) ... */
    fixture_sql("is1.db", "UPDATE inspections SET document = '[]', findings = 0"
                          " WHERE max_fill = 0.21");
    r = RUN("inspect", "is1.db", "--json");
    CHECK(r.status == 0 && strstr(r.out, "\"findings\":[]") != NULL);
    run_result_release(&r);
    /* ... unless its snapshot's row changed since: inspected again */
    fixture_sql("is1.db", "UPDATE snapshots SET refs = refs + 1"
                          " WHERE snapshot = (SELECT max(snapshot) FROM snapshots)");
    r = RUN("inspect", "is1.db", "--json", "--progress");
    CHECK_INT(r.status, 0);
    CHECK(strstr(r.err, computing) != NULL);
    CHECK_STR(r.out, first.out);
    run_result_release(&r);
    CHECK_INT(sql_int("is1.db", "SELECT count(*) FROM inspections"
                                " WHERE max_fill = 0.21 AND findings > 3"),
              1);

    /* a stored row heaplens does not write */
    fixture_sql("is1.db", "UPDATE inspections SET document = '[{\"kind\":1}]', findings = 1");
    r = RUN("inspect", "is1.db");
    CHECK_INT(r.status, 1);
    CHECK_STR(r.out, "");
    g_autofree char *damage = g_strdup_printf(
        "heaplens: the database is damaged: the stored inspections of snapshot %lld are not what "
        "heaplens writes\n", last);
    CHECK_STR(r.err, damage);
    run_result_release(&r);

    /* a file heaplens may not write: the same answer, and a note */
    file_copy("kept.db", "is2.db");
    file_unwritable("is2.db");
    r = RUN("inspect", "is2.db", "--json");
    CHECK_INT(r.status, 0);
    CHECK_STR(r.out, first.out);
    CHECK(strstr(r.err, "heaplens: note: inspections were not stored: ") != NULL);
    run_result_release(&r);
    CHECK_INT(sql_int("is2.db", "SELECT count(*) FROM sqlite_schema WHERE name = 'inspections'"),
              0);
    g_autofree char *path2 = fixture_path("is2.db");
    g_chmod(path2, 0600);
    json_decref(doc);
    run_result_release(&first);
}

static void case_leaks(void)
{
    file_copy("graph.db", "l1.db");
    json_t *doc = RUN_JSON("leaks", "l1.db", "--json");
    if (!doc)
        return;
    CHECK_INT(json_array_size(json_object_get(doc, "snapshots")), 4);
    CHECK(json_is_true(json_object_get(doc, "full_gcs_only")));
    json_t *rows = json_object_get(doc, "rows");
    CHECK_INT(json_array_size(rows), 2); /* Leak and Leaf; not the cache's nodes */
    json_t *leak = json_array_get(rows, 0);
    CHECK_STR(jstr(leak, "type"), "App.Leak");
    CHECK_INT(jint(leak, "growth_count"), 9);
    CHECK_INT(jint(leak, "growth_bytes"), 360);
    CHECK_INT(jint(leak, "growth_retained_bytes"), 9 * 1040);
    CHECK_STR(jstr(leak, "holder"), "App.Holder");
    CHECK_INT(jint(leak, "holder_object"), 1);
    CHECK_INT(jint(leak, "held"), 12);
    path_expect(json_object_get(leak, "path"), (const long long[]){1, 2, 3}, 3);
    json_t *counts = json_object_get(leak, "counts");
    for (size_t i = 0; i < 4; i++)
        CHECK_INT(json_integer_value(json_array_get(counts, i)), 3 * (i + 1));
    json_t *leaf = json_array_get(rows, 1);
    CHECK_STR(jstr(leaf, "type"), "App.Leaf");
    CHECK_STR(jstr(leaf, "holder"), "App.Leak"); /* each Leaf is held by its own Leak */
    CHECK_INT(jint(leaf, "holders"), 12);
    json_decref(doc);

    /* --all adds the types that grew without a steady trend: none here but... */
    doc = RUN_JSON("leaks", "l1.db", "--json", "--all");
    CHECK(doc && json_array_size(json_object_get(doc, "rows")) == 2);
    json_decref(doc);

    run_result r = RUN("leaks", "l1.db");
    CHECK_INT(r.status, 0);
    CHECK(g_str_has_prefix(r.out,
                           "leak suspects: 2 types kept growing over 4 snapshots after full "
                           "GCs (snapshots 1 to 4, GCs 1 to 4)\n"
                           "rank  +objects    +bytes  +retained  objects per snapshot  type\n"
                           "   1        +9    +360 B   +9.1 KiB  3 6 9 12              App.Leak\n"
                           "   2        +9  +8.8 KiB   +8.8 KiB  3 6 9 12              App.Leaf\n"
                           "\n"));
    CHECK(strstr(r.out,
                 "1. App.Leak\n   held by: App.Holder #1 (retains 12.3 KiB; holds 12 of 12)\n"
                 "   path:    handle (strong, 0x1000) -> App.Holder #1 -> App.Leak[] #2 -> "
                 "App.Leak #3\n") != NULL);
    CHECK(strstr(r.out, "held by: 12 App.Leak objects (hold 12 of 12, suspect 1)") != NULL);
    run_result_release(&r);
}

/* What `leaks` found of its holders is stored (leak_holders) and read back: the next `leaks` and
 * `report` compute no dominator tree, and say the same; a row of another version or of a
 * snapshot whose row changed is computed again; a row heaplens does not write is damage; a file
 * heaplens may not write gets the same answer and a note. */
/* heaplens ARGS... on a disk that cannot take more than `room` bytes beyond `name`'s size: its
 * files cannot grow past RLIMIT_FSIZE (SIGXFSZ ignored, as the child inherits both). */
static run_result run_disk_full(const char *name, off_t room, const char *const *args)
{
    g_autofree char *path = fixture_path(name);
    struct stat st;
    struct rlimit old, lim;
    g_assert(stat(path, &st) == 0 && getrlimit(RLIMIT_FSIZE, &old) == 0);
    lim = old;
    lim.rlim_cur = (rlim_t)(st.st_size + room);
    void (*was)(int) = signal(SIGXFSZ, SIG_IGN);
    g_assert(setrlimit(RLIMIT_FSIZE, &lim) == 0);
    run_result r = run_in(heaplens, workdir, args);
    g_assert(setrlimit(RLIMIT_FSIZE, &old) == 0);
    signal(SIGXFSZ, was);
    return r;
}

/* A full disk while storing what a command computed (retained sizes, leak holders,
 * inspections): the answer all the same and a note, as for a read-only file; nothing stored
 * and the file intact. It was "storing retained sizes failed: database or disk is full", exit
 * 1, from leaks, retention, roots, inspect and report. */
static void case_store_disk_full(void)
{
    file_copy("graph.db", "full.db");
    run_result r = RUN("info", "full.db"); /* the first read's build, on a disk with room */
    CHECK_INT(r.status, 0);
    run_result_release(&r);
    r = run_disk_full("full.db", 4096,
                      (const char *const[]){"report", "full.db", "-o", "-", "--json", NULL});
    CHECK_INT(r.status, 0);
    CHECK(strstr(r.err, "heaplens: note: retained sizes were not stored: full.db cannot be "
                        "written (disk full or an I/O error)\n") != NULL);
    run_result_release(&r);
    /* In JSON and in text the note is on stderr, as report says it: the answer on stdout is the
     * same as on a disk with room (in text it was after the answer, on stdout) */
    static const char *const texts[][6] = {
        {"leaks", "--json", NULL, "retained sizes"},
        {"inspect", "--json", NULL, "inspections"},
        {"leaks", NULL, "retained sizes"},
        {"retention", NULL, "retained sizes"},
        {"inspect", NULL, "inspections"},
        {"roots", "--type", "App.Leak", NULL, "retained sizes"},
        {"check", "--max-retained", "App.Leak=1G", NULL, "retained sizes"},
    };
    for (size_t i = 0; i < G_N_ELEMENTS(texts); i++) {
        /* {command, options..., NULL, what was not stored} */
        const char *args[8] = {texts[i][0], "full1.db"};
        size_t j = 1;
        for (; texts[i][j]; j++)
            args[j + 1] = texts[i][j];
        const char *what = texts[i][j + 1];
        file_copy("graph.db", "full1.db");
        run_result room = run_in(heaplens, workdir, args);
        args[1] = "full.db";
        r = run_disk_full("full.db", 4096, args);
        g_autofree char *note = g_strdup_printf("heaplens: note: %s were not stored: full.db "
                                                "cannot be written (disk full or an I/O error)\n",
                                                what);
        CHECK_INT(r.status, 0);
        CHECK_INT(room.status, 0);
        CHECK_STR(r.out, room.out);
        CHECK_STR(r.err, note);
        run_result_release(&r);
        run_result_release(&room);
    }
    CHECK_INT(sql_int("full.db", "SELECT count(*) FROM sqlite_schema WHERE name IN"
                                 " ('leak_holders', 'retention_blocks', 'inspections')"),
              0);
    CHECK_INT(sql_int("full.db",
                      "SELECT count(*) FROM pragma_quick_check WHERE quick_check = 'ok'"),
              1);
}

static void case_leaks_stored(void)
{
    file_copy("graph.db", "ls1.db");
    run_result first = RUN("leaks", "ls1.db", "--json", "--progress");
    CHECK_INT(first.status, 0);
    CHECK(strstr(first.err, "heaplens: leaks: computing dominators: ") != NULL);
    CHECK(strstr(first.err, "heaplens: leaks: storing leak holders: ") != NULL);
    CHECK_INT(sql_int("ls1.db", "SELECT count(*) FROM leak_holders WHERE snapshot = 4"), 2);
    CHECK_INT(sql_int("ls1.db", "SELECT held FROM leak_holders WHERE snapshot = 4 AND type_id ="
                                " (SELECT id FROM types WHERE name = 'App.Leak')"),
              12);
    run_result again = RUN("leaks", "ls1.db", "--json", "--progress");
    CHECK_INT(again.status, 0);
    CHECK_STR(again.out, first.out);
    CHECK(strstr(again.err, "reading objects") == NULL);
    CHECK(strstr(again.err, "computing dominators") == NULL);
    CHECK(strstr(again.err, "storing") == NULL);
    run_result_release(&again);
    again = RUN("leaks", "ls1.db");
    run_result text = again;
    CHECK(strstr(text.out, "   path:    handle (strong, 0x1000) -> App.Holder #1 -> App.Leak[] "
                           "#2 -> App.Leak #3\n") != NULL);
    CHECK(strstr(text.out, "held by: 12 App.Leak objects (hold 12 of 12, suspect 1)") != NULL);
    run_result_release(&again);

    /* the report reads them too (its last snapshot's retained sizes are stored): no tree, the
     * same rows */
    run_result r = RUN("report", "ls1.db", "--json", "-o", "-", "--progress");
    CHECK_INT(r.status, 0);
    CHECK(strstr(r.err, "computing dominators") == NULL);
    json_t *report = json_loads(r.out, 0, NULL), *doc = json_loads(first.out, 0, NULL);
    CHECK(report && doc &&
          json_equal(json_object_get(json_object_get(report, "leak_suspects"), "rows"),
                     json_object_get(doc, "rows")));
    json_decref(report);
    json_decref(doc);
    run_result_release(&r);

    /* a stored row is what the next run says (nothing else read) ... */
    fixture_sql("ls1.db", "UPDATE leak_holders SET held = 99 WHERE held = 12");
    r = RUN("leaks", "ls1.db", "--json");
    CHECK(r.status == 0 && strstr(r.out, "\"held\":99") != NULL);
    run_result_release(&r);
    /* ... unless another version of heaplens wrote it ... */
    fixture_sql("ls1.db", "UPDATE leak_holders SET version = 0");
    r = RUN("leaks", "ls1.db", "--json", "--progress");
    CHECK_INT(r.status, 0);
    CHECK_STR(r.out, first.out);
    CHECK(strstr(r.err, "computing dominators") != NULL);
    run_result_release(&r);
    CHECK_INT(sql_int("ls1.db", "SELECT count(*) FROM leak_holders WHERE version = 3"), 2);
    /* ... or its snapshot's row changed since: found again */
    fixture_sql("ls1.db", "UPDATE leak_holders SET held = 99 WHERE held = 12");
    fixture_sql("ls1.db", "UPDATE snapshots SET refs = refs + 1 WHERE snapshot = 4");
    r = RUN("leaks", "ls1.db", "--json");
    CHECK_INT(r.status, 0);
    CHECK_STR(r.out, first.out);
    run_result_release(&r);

    /* a stored row heaplens does not write */
    fixture_sql("ls1.db", "UPDATE leak_holders SET path = '{}'");
    r = RUN("leaks", "ls1.db");
    CHECK_INT(r.status, 1);
    CHECK_STR(r.out, "");
    CHECK(g_str_has_prefix(r.err, "heaplens: the database is damaged: the stored holder of type "));
    run_result_release(&r);

    /* a file heaplens may not write: the same answer, a note, nothing written */
    file_copy("graph.db", "ls2.db");
    file_unwritable("ls2.db");
    r = RUN("leaks", "ls2.db", "--json");
    CHECK_INT(r.status, 0);
    CHECK_STR(r.out, first.out);
    CHECK(strstr(r.err, "heaplens: note: retained sizes were not stored: ") != NULL);
    run_result_release(&r);
    CHECK_INT(sql_int("ls2.db", "SELECT count(*) FROM sqlite_schema WHERE name = 'leak_holders'"),
              0);
    g_autofree char *path2 = fixture_path("ls2.db");
    g_chmod(path2, 0600);
    run_result_release(&first);
}

/* report counts the objects per type of the leak series' snapshots from the graph of its last
 * snapshot where they share its blocks, the rest from their blocks: the same counts as `leaks`
 * counting every block. */
static void case_leaks_counts_held(void)
{
    file_copy("noise.db", "lc1.db");
    file_copy("noise.db", "lc2.db");
    /* two snapshots of a heap that changed little: some blocks shared, some not (both ways
     * are taken) */
    CHECK(sql_int("lc1.db", "SELECT count(*) FROM snapshot_blocks"
                            " WHERE first_snapshot < 2 AND last_snapshot = 2") > 0);
    CHECK(sql_int("lc1.db", "SELECT count(*) FROM snapshot_blocks WHERE last_snapshot < 2") > 0);
    run_result r = RUN("report", "lc1.db", "--json", "-o", "-", "--progress");
    CHECK_INT(r.status, 0);
    CHECK(strstr(r.err, "heaplens: report: counting objects per snapshot from the graph held: ") !=
          NULL);
    run_result_release(&r);
    r = RUN("leaks", "lc2.db", "--progress");
    CHECK_INT(r.status, 0);
    CHECK(strstr(r.err, "from the graph held") == NULL);
    run_result_release(&r);
    const char *sum = "SELECT count(*) * 1000000007 + sum(snapshot * 1000003 + type_id * 1009"
                      " + count * 7 + bytes) FROM snapshot_type_counts";
    CHECK_INT(sql_int("lc1.db", "SELECT count(DISTINCT snapshot) FROM snapshot_type_counts"), 2);
    CHECK_INT(sql_int("lc1.db", sum), sql_int("lc2.db", sum));
}

static void case_diff(void)
{
    json_t *doc = RUN_JSON("diff", "graph.db", "--from", "1", "--to", "2", "--json");
    if (!doc)
        return;
    CHECK_INT(jint(json_object_get(doc, "from"), "snapshot"), 1);
    CHECK_INT(jint(json_object_get(doc, "to"), "snapshot"), 2);
    /* net bytes first: Leaf +3000, Leak +120, then Node (+50 -100: 10 and 20 died), Churn -30 */
    const struct {
        const char *type;
        long long new_count, dead, survived, new_bytes, dead_bytes;
    } want[] = {{"App.Leaf", 3, 0, 3, 3000, 0},
                {"App.Leak", 3, 0, 3, 120, 0},
                {"App.Churn", 0, 1, 0, 0, 30},
                {"App.Node", 1, 2, 6, 50, 100}};
    json_t *rows = json_object_get(doc, "rows");
    CHECK_INT(json_array_size(rows), G_N_ELEMENTS(want));
    for (size_t i = 0; i < G_N_ELEMENTS(want) && i < json_array_size(rows); i++) {
        json_t *row = json_array_get(rows, i);
        CHECK_STR(jstr(row, "type"), want[i].type);
        CHECK_INT(jint(row, "new"), want[i].new_count);
        CHECK_INT(jint(row, "dead"), want[i].dead);
        CHECK_INT(jint(row, "survived"), want[i].survived);
        CHECK_INT(jint(row, "new_bytes"), want[i].new_bytes);
        CHECK_INT(jint(row, "dead_bytes"), want[i].dead_bytes);
    }
    json_t *total = json_object_get(doc, "total");
    CHECK_INT(jint(total, "new"), 7);
    CHECK_INT(jint(total, "dead"), 3);
    CHECK_INT(jint(total, "survived"), 18);
    json_decref(doc);

    /* defaults: the last snapshot against the one before */
    doc = RUN_JSON("diff", "graph.db", "--json", "--all");
    CHECK(doc && jint(json_object_get(doc, "from"), "snapshot") == 3);
    CHECK(doc && jint(json_object_get(doc, "to"), "snapshot") == 4);
    CHECK(doc && json_array_size(json_object_get(doc, "rows")) == 9); /* every type present */
    json_decref(doc);

    run_result r = RUN("diff", "graph.db", "--from", "1", "--to", "2", "--top", "2");
    CHECK_INT(r.status, 0);
    CHECK_STR(r.out, "snapshot 1 (GC 1) -> snapshot 2 (GC 2): 7 new (3.1 KiB), 3 dead (130 B), "
                     "18 survived\n"
                     "new  new bytes  dead  dead bytes  survived  net bytes  type\n"
                     "  3    2.9 KiB     0         0 B         3   +2.9 KiB  App.Leaf\n"
                     "  3      120 B     0         0 B         3     +120 B  App.Leak\n");
    run_result_release(&r);
}

/* A snapshot whose objects (or roots) were deleted is damage, said in one line by every command
 * that reads it, never "N dead"; `snapshots` still lists the header as stored. */
static void case_snapshot_rows_lost(void)
{
    file_copy("graph.db", "lost.db");
    /* snapshot 1's blocks gone, those it shares with snapshot 2 kept for 2 */
    fixture_sql("lost.db", "UPDATE snapshot_blocks SET first_snapshot = 2 WHERE first_snapshot = 1"
                           " AND last_snapshot >= 2; DELETE FROM snapshot_blocks WHERE"
                           " first_snapshot = 1");
    EXPECT(RUN("diff", "lost.db", "--from", "1", "--to", "2"), 1, "",
           "heaplens: the database is damaged: lost.db: snapshot 1 holds 0 objects, its "
           "snapshots row counts 21\n");
    EXPECT(RUN("retention", "lost.db", "--snapshot", "1"), 1, "",
           "heaplens: the database is damaged: snapshot 1 holds 0 objects, its snapshots row "
           "counts 21\n");
    file_copy("graph.db", "lost.db");
    fixture_sql("lost.db", "DELETE FROM snapshot_roots WHERE snapshot = 4 AND rowid IN "
                           "(SELECT min(rowid) FROM snapshot_roots WHERE snapshot = 4)");
    EXPECT(RUN("retention", "lost.db"), 1, "",
           "heaplens: the database is damaged: snapshot 4 holds 3 roots, its snapshots row "
           "counts 4\n");
}

/* Two files of the same program: identity by allocation number and type name. */
static void case_diff_files(void)
{
    json_t *doc = RUN_JSON("diff", "one.db", "--to-file", "graph.db", "--json");
    if (!doc)
        return;
    CHECK(json_is_false(json_object_get(doc, "same_file")));
    CHECK_INT(jint(json_object_get(doc, "from"), "snapshot"), 1);
    CHECK_INT(jint(json_object_get(doc, "to"), "snapshot"), 4);
    json_t *total = json_object_get(doc, "total");
    CHECK_INT(jint(total, "survived"), 16); /* 21 of one.db but 10, 11, 12, 19, 20 */
    CHECK_INT(jint(total, "dead"), 5);
    CHECK_INT(jint(total, "new"), 37 - 16);
    json_decref(doc);
}

/* `leaks A --with B C`: the last snapshot of each file, by type: one.db, two.db and three.db end
 * with 3, 6 and 9 Leaks (and Leafs); the Cache's Nodes are replaced, not added. */
static void case_leaks_files(void)
{
    static const char note[] = "heaplens: across files, objects are counted per type name and "
                               "not followed from one file to the next: a type is a suspect when "
                               "its count and bytes grow from every file to the next, each "
                               "time by at least a tenth of its count in the first file\n";
    json_t *doc = json_run(__FILE__, __LINE__,
                           RUN("leaks", "one.db", "--with", "two.db", "three.db", "--json"), NULL,
                           note);
    if (!doc)
        return;
    CHECK(json_is_true(json_object_get(doc, "by_type")));
    CHECK(strstr(jstr(doc, "note"), "counted per type name") != NULL);
    json_t *files = json_object_get(doc, "files");
    CHECK_INT(json_array_size(files), 3);
    CHECK_STR(jstr(json_array_get(files, 2), "file"), "three.db");
    CHECK_INT(jint(json_array_get(files, 2), "snapshot"), 3);
    /* the Leafs grew most in bytes (3 x 1000 a file), then the Leaks */
    json_t *rows = json_object_get(doc, "rows");
    CHECK_INT(json_array_size(rows), 2);
    CHECK_STR(jstr(jrow(doc, 0), "type"), "App.Leaf");
    CHECK_STR(jstr(jrow(doc, 1), "type"), "App.Leak");
    json_t *counts = json_object_get(jrow(doc, 1), "counts");
    CHECK_INT(json_integer_value(json_array_get(counts, 0)), 3);
    CHECK_INT(json_integer_value(json_array_get(counts, 1)), 6);
    CHECK_INT(json_integer_value(json_array_get(counts, 2)), 9);
    CHECK(json_is_true(json_object_get(jrow(doc, 1), "flagged")));
    json_decref(doc);
    /* two files: the same rule, one interval */
    doc = json_run(__FILE__, __LINE__,
                   RUN("leaks", "one.db", "--top", "1", "--with", "three.db", "--json"), NULL, note);
    if (doc) {
        CHECK_INT(json_array_size(json_object_get(doc, "rows")), 1);
        json_decref(doc);
    }
    EXPECT_ERROR("heaplens: leaks: --with needs one file or more to compare FILE with\n",
                 "leaks", "one.db", "--with");
    EXPECT_ERROR("heaplens: missing.db does not exist\n", "leaks", "one.db", "--with",
                 "missing.db");
}

/* Across files a type is a suspect only when it grows steadily by much for its size: the
 * Pools gain 10 a file (3+ objects an interval, every interval up: a suspect by the rule within
 * a file), a hundredth of their 1,000; the Grows double, triple, quadruple. */
static void case_leaks_files_steady(void)
{
    static const char note[] = "heaplens: across files, objects are counted per type name and "
                               "not followed from one file to the next: a type is a suspect when "
                               "its count and bytes grow from every file to the next, each "
                               "time by at least a tenth of its count in the first file\n";
    json_t *doc = json_run(__FILE__, __LINE__,
                           RUN("leaks", "pool-1.db", "--with", "pool-2.db", "pool-3.db",
                               "pool-4.db", "--all", "--json"),
                           NULL, note);
    if (!doc)
        return;
    json_t *rows = json_object_get(doc, "rows");
    CHECK_INT(json_array_size(rows), 2);
    CHECK_STR(jstr(jrow(doc, 0), "type"), "App.Grow");
    CHECK(json_is_true(json_object_get(jrow(doc, 0), "flagged")));
    CHECK_STR(jstr(jrow(doc, 1), "type"), "App.Pool");
    CHECK(json_is_false(json_object_get(jrow(doc, 1), "flagged")));
    CHECK_INT(jint(jrow(doc, 1), "growth_count"), 30);
    json_decref(doc);
    /* one interval: the Pools' 30 are still under a tenth */
    doc = json_run(__FILE__, __LINE__, RUN("leaks", "pool-1.db", "--with", "pool-4.db", "--json"),
                   NULL, note);
    if (doc) {
        CHECK_INT(json_array_size(json_object_get(doc, "rows")), 1);
        CHECK_STR(jstr(jrow(doc, 0), "type"), "App.Grow");
        json_decref(doc);
    }
}

static void case_survivors_age(void)
{
    json_t *doc = RUN_JSON("survivors", "graph.db", "--gc", "2", "--by", "age", "--json");
    if (!doc)
        return;
    CHECK_STR(jstr(doc, "by"), "age");
    long long age1 = 0, age2 = 0;
    size_t n = json_array_size(json_object_get(doc, "rows"));
    for (size_t i = 0; i < n; i++) {
        json_t *row = jrow(doc, i);
        if (jint(row, "age") == 1)
            age1 += jint(row, "count");
        else if (jint(row, "age") == 2)
            age2 += jint(row, "count");
        else
            CHECK(!"unexpected age");
    }
    CHECK_INT(age1, 7);  /* allocated between GC 1 and GC 2 */
    CHECK_INT(age2, 18); /* from before GC 1 (D too), minus the three that died in GC 2 */
    json_decref(doc);
    run_result r = RUN("survivors", "graph.db", "--gc", "1", "--by", "age");
    CHECK_INT(r.status, 0);
    CHECK(g_str_has_prefix(r.out, "alive after GC 1: 21 objects, 3.7 KiB; age = GCs survived\n"
                                  "age  gen   count    bytes  type\n"
                                  "  1  gen1      3  2.9 KiB  App.Leaf\n"));
    run_result_release(&r);
    /* --top K: the K groups with the most bytes, still by age; the totals are over all */
    r = RUN("survivors", "graph.db", "--gc", "1", "--by", "age", "--top", "2");
    CHECK_INT(r.status, 0);
    CHECK_STR(r.out, "alive after GC 1: 21 objects, 3.7 KiB (the 2 largest of 10 groups); "
                     "age = GCs survived\n"
                     "age  gen   count    bytes  type\n"
                     "  1  gen1      3  2.9 KiB  App.Leaf\n"
                     "  1  gen1      8    400 B  App.Node\n");
    run_result_release(&r);
    doc = RUN_JSON("survivors", "graph.db", "--gc", "2", "--by", "age", "--top", "1", "--json");
    CHECK(doc && json_array_size(json_object_get(doc, "rows")) == 1);
    json_decref(doc);
}

/* A command on a file that fails (`damaged`) exits 1 with one line and leaves every byte as it
 * was; one on a sound file may succeed (and store retained sizes). Never a sanitizer report. */
static void expect_untouched_on_failure(const char *file, gboolean damaged, const char *what,
                                        run_result r)
{
    g_autoptr(GBytes) after = fixture_bytes(file);
    g_autoptr(GBytes) before = fixture_bytes("before.db");
    gboolean one_line = r.err[0] && strchr(r.err, '\n') && !strchr(r.err, '\n')[1] &&
                        g_str_has_prefix(r.err, "heaplens: ");
    CHECK(strstr(r.err, "runtime error") == NULL && strstr(r.err, "Sanitizer") == NULL);
    if (damaged || r.status != 0) {
        if (!(r.status == 1 && one_line && before && after && g_bytes_equal(before, after))) {
            fprintf(stderr, "  %s: status %d, file %s, stderr: %s", what, r.status,
                    before && after && g_bytes_equal(before, after) ? "unchanged" : "CHANGED",
                    r.err);
            failures++;
        }
    }
    CHECK(!strstr(r.out, "were dropped; counts are lower bounds") || !strstr(r.out, " -"));
}

/* Every page of a real recording overwritten in turn (its b-tree page header): retention, roots
 * and leaks check the file before storing and never change a damaged one. */
static void case_damaged_pages(void)
{
    g_autoptr(GBytes) good = fixture_bytes("graph.db");
    gsize len = 0;
    const guint8 *data = g_bytes_get_data(good, &len);
    guint page = (guint)data[16] << 8 | data[17];
    if (page == 1)
        page = 65536;
    int damaged_files = 0, failed_runs = 0;
    const char *const commands[][6] = {{"retention", "bad.db", NULL},
                                        {"roots", "bad.db", "--type", "App.Leak", NULL},
                                        {"leaks", "bad.db", NULL}};
    for (gsize p = 1; p < len / page; p++) { /* page 1 holds the file header: left alone */
        g_autofree guint8 *copy = g_memdup2(data, len);
        memset(copy + p * page, 0xA5, 8);
        g_autofree char *path = fixture_path("before.db");
        if (!g_file_set_contents(path, (const char *)copy, (gssize)len, NULL))
            exit(2);
        g_autofree char *integrity = NULL;
        {
            sqlite3 *db = NULL;
            sqlite3_stmt *stmt = NULL;
            sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL);
            if (sqlite3_prepare_v2(db, "PRAGMA integrity_check(1)", -1, &stmt, NULL) == SQLITE_OK &&
                sqlite3_step(stmt) == SQLITE_ROW)
                integrity = g_strdup((const char *)sqlite3_column_text(stmt, 0));
            sqlite3_finalize(stmt);
            sqlite3_close(db);
        }
        gboolean damaged = !integrity || strcmp(integrity, "ok") != 0;
        damaged_files += damaged;
        for (size_t c = 0; c < G_N_ELEMENTS(commands); c++) {
            file_copy("before.db", "bad.db");
            run_result r = run_in(heaplens, workdir, commands[c]);
            g_autofree char *what = g_strdup_printf("page %zu, %s", (size_t)p, commands[c][0]);
            failed_runs += r.status != 0;
            expect_untouched_on_failure("bad.db", damaged, what, r);
            run_result_release(&r);
        }
    }
    CHECK(damaged_files > 3);
    CHECK(failed_runs > 3);
}

/* Overwrites the b-tree header of the first page of `table` in `name`, in place (the file's
 * change counter stays); with `keep_time` its modification time is put back as it was. */
static void page_damage(const char *name, const char *table, gboolean keep_time)
{
    g_autofree char *sql = g_strdup_printf("SELECT rootpage FROM sqlite_schema WHERE name = '%s'",
                                           table);
    long long page = sql_int(name, sql), size = sql_int(name, "PRAGMA page_size");
    static const unsigned char junk[8] = {0xA5, 0xA5, 0xA5, 0xA5, 0xA5, 0xA5, 0xA5, 0xA5};
    g_autofree char *path = fixture_path(name);
    struct stat before;
    int fd = open(path, O_WRONLY);
    if (page < 2 || size < 512 || fd < 0 || fstat(fd, &before) != 0 ||
        pwrite(fd, junk, sizeof junk, (off_t)((page - 1) * size)) != (ssize_t)sizeof junk)
        exit(2);
    const struct timespec times[2] = {before.st_atim, before.st_mtim};
    if (keep_time && futimens(fd, times) != 0)
        exit(2);
    close(fd);
}

/* The first command that stores rows checks the whole file and notes it sound (file_check);
 * the next one trusts the note while nothing changed the file, and checks again when anything
 * did: a page damaged in place after the note is still refused, the file left as it was. The
 * proof that the note is used: the same damage with the file's time put back (which no real
 * damage does) goes unseen. */
static void case_checked_once(void)
{
    for (int keep_time = 0; keep_time < 2; keep_time++) {
        file_copy("graph.db", "c.db");
        EXPECT(RUN("retention", "c.db", "--top", "1"), 0, NULL, "");
        CHECK_INT(sql_int("c.db", "SELECT count(*) FROM file_check"), 1);
        page_damage("c.db", "alloc_counts", keep_time);
        file_copy("c.db", "before.db");
        run_result r = RUN("leaks", "c.db");
        if (keep_time) {
            CHECK_INT(r.status, 0);
        } else {
            CHECK_INT(r.status, 1);
            CHECK(strstr(r.err, "is damaged") != NULL);
            expect_untouched_on_failure("c.db", TRUE, "leaks after damage", r);
        }
        run_result_release(&r);
    }
}

/* A file with retention_blocks whose `retention` view a user replaced by a table of the older
 * form: readers read the blocks, so the next snapshot's rows go into blocks too (they went into
 * the table, and `retention` listed nothing and `roots` found no path). */
static void case_retention_table_beside_blocks(void)
{
    file_copy("graph.db", "rb.db");
    file_copy("graph.db", "rb-fresh.db");
    EXPECT(RUN("retention", "rb.db", "--snapshot", "1", "--top", "1"), 0, NULL, "");
    fixture_sql("rb.db", "DROP VIEW retention; CREATE TABLE retention (snapshot INTEGER,"
                         " object_id INTEGER, idom_id INTEGER, retained_bytes INTEGER,"
                         " retained_count INTEGER, PRIMARY KEY (snapshot, object_id))"
                         " WITHOUT ROWID");
    run_result want = RUN("retention", "rb-fresh.db", "--snapshot", "2", "--json");
    CHECK_INT(want.status, 0);
    g_autofree char *want_out = g_strdup(want.out);
    run_result_release(&want);
    json_t *doc = RUN_JSON("retention", "rb.db", "--snapshot", "2", "--json");
    g_autofree char *got = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
    json_t *want_doc = json_loads(want_out, 0, NULL);
    CHECK(doc && want_doc && json_array_size(json_object_get(doc, "rows")) > 0 &&
          json_equal(json_object_get(doc, "rows"), json_object_get(want_doc, "rows")));
    json_decref(doc);
    json_decref(want_doc);
    CHECK_INT(sql_int("rb.db", "SELECT count(*) FROM retention_blocks WHERE snapshot = 2") > 0, 1);
    run_result r = RUN("roots", "rb.db", "--snapshot", "2", "--type", "App.Leak");
    CHECK_INT(r.status, 0);
    CHECK(strstr(r.out, "shortest path from a GC root to object 3 (App.Leak)") != NULL);
    run_result_release(&r);
}

/* A path through a linked list: its run of identical hops is written once with its count in
 * text (csc's and MidLife's paths held thousands of CacheEntry.Next, 130 KB on one line); JSON
 * keeps every hop. */
static void case_leaks_path_folded(void)
{
    run_result r = RUN("leaks", "chain.db");
    CHECK_INT(r.status, 0);
    const char *want = "   path:    handle (strong, 0x1000) -> Holder.Head -> Node.Next (9 times) -> "
                       "Node.Items -> Leak[][0] -> Leak #13\n";
    if (!strstr(r.out, want)) {
        fprintf(stderr, "leaks text lacks:\n%s--- got:\n%s", want, r.out);
        failures++;
    }
    run_result_release(&r);
    json_t *doc = RUN_JSON("leaks", "chain.db", "--json");
    json_t *path = doc ? json_object_get(jrow(doc, 0), "path") : NULL;
    CHECK_INT(json_array_size(path), 13);
    json_decref(doc);
    /* the report's page writes it so too (rendered by headless Chromium, where there is one) */
    if (!g_file_test("/usr/bin/chromium", G_FILE_TEST_IS_EXECUTABLE))
        return;
    r = RUN("report", "chain.db", "-o", "chain.html");
    CHECK_INT(r.status, 0);
    run_result_release(&r);
    g_autofree char *page = fixture_path("chain.html");
    g_autofree char *profile = fixture_path("chromium-profile");
    g_autofree char *url = g_strconcat("file://", page, NULL);
    g_autofree char *profile_arg = g_strconcat("--user-data-dir=", profile, NULL);
    const char *const chromium[] = {"--headless", "--no-sandbox", "--disable-gpu",
                                    "--no-first-run", "--disable-background-networking",
                                    "--disable-component-update", "--disable-sync", profile_arg,
                                    "--dump-dom", url, NULL};
    run_result dom = run_in("/usr/bin/chromium", workdir, chromium);
    CHECK(strstr(dom.out, ">\xe2\x80\xa6Node.Next (9 times)</span> \xe2\x86\x92 ") != NULL &&
          strstr(dom.out, ">\xe2\x80\xa6Node.Next</span>") == NULL);
    run_result_release(&dom);
}

/* A copy damaged after its answers were stored (retained sizes, holders, inspections): the
 * commands that would answer from the stored rows alone refuse it as `report`, which reads
 * further, does — one line, exit 1, the file left as it was. With the file's time put back
 * (nothing changed it, as file_check says) they answer from the rows, checking nothing. */
static void case_stored_damaged(void)
{
    const char *const commands[][8] = {
        {"retention", "sd.db", NULL},
        {"retention", "sd.db", "--by", "type", "--json", NULL},
        {"leaks", "sd.db", NULL},
        {"inspect", "sd.db", "--json", NULL},
        {"roots", "sd.db", "--type", "App.Leak", NULL},
        {"report", "sd.db", "--json", "-o", "-", NULL},
    };
    for (int keep_time = 0; keep_time < 2; keep_time++) {
        file_copy("graph.db", "sd.db");
        run_result stored = RUN("report", "sd.db", "--json", "-o", "sd.json");
        CHECK_INT(stored.status, 0);
        run_result_release(&stored);
        CHECK_INT(sql_int("sd.db", "SELECT count(*) FROM leak_holders") > 0, 1);
        CHECK_INT(sql_int("sd.db", "SELECT count(*) FROM inspections") > 0, 1);
        page_damage("sd.db", "alloc_counts", keep_time);
        file_copy("sd.db", "before.db");
        for (size_t c = 0; c < G_N_ELEMENTS(commands); c++) {
            run_result r = run_in(heaplens, workdir, commands[c]);
            g_autofree char *what = g_strdup_printf("%s%s", commands[c][0],
                                                    keep_time ? " (time kept)" : "");
            if (keep_time && strcmp(commands[c][0], "report") != 0) {
                if (r.status != 0) {
                    fprintf(stderr, "  %s: status %d: %s", what, r.status, r.err);
                    failures++;
                }
            } else {
                expect_untouched_on_failure("sd.db", TRUE, what, r);
                if (strcmp(commands[c][0], "report") != 0)
                    CHECK(g_str_has_prefix(r.err, "heaplens: sd.db is damaged (")); /* as given */
            }
            run_result_release(&r);
        }
    }
}

/* A hand-edited recording: sizes near 2^63, negative sizes and counters. Every command prints
 * its result or one line and exits 1, never overflows; retention, roots and leaks leave the file
 * byte-identical when they fail. */
static void case_edited_values(void)
{
    const char *const edits[] = {
        "UPDATE objects SET size = 9223372036854775000 WHERE id % 3 = 0",
        "UPDATE objects SET size = -1000 WHERE id % 4 = 1",
        "INSERT OR REPLACE INTO counters (name, value) VALUES ('allocs_dropped', -7)",
        "UPDATE gcs SET pause_ns = 9223372036854775000",
    };
    const char *const commands[][6] = {
        {"allocations", "bad.db", NULL}, {"allocations", "bad.db", "--json", NULL},
        {"survivors", "bad.db", NULL},   {"survivors", "bad.db", "--by", "age", NULL},
        {"gcs", "bad.db", NULL},         {"info", "bad.db", NULL},
        {"diff", "bad.db", NULL},        {"diff", "bad.db", "--json", NULL},
        {"retention", "bad.db", NULL},   {"roots", "bad.db", "--type", "App.Leak", NULL},
        {"leaks", "bad.db", NULL},       {"report", "bad.db", "--json", NULL},
    };
    for (size_t e = 0; e < G_N_ELEMENTS(edits); e++) {
        file_copy("graph.db", "before.db");
        fixture_sql("before.db", edits[e]);
        for (size_t c = 0; c < G_N_ELEMENTS(commands); c++) {
            file_copy("before.db", "bad.db");
            run_result r = run_in(heaplens, workdir, commands[c]);
            g_autofree char *what = g_strdup_printf("'%s', %s", edits[e], commands[c][0]);
            gboolean writes = strcmp(commands[c][0], "retention") == 0 ||
                              strcmp(commands[c][0], "roots") == 0 ||
                              strcmp(commands[c][0], "leaks") == 0;
            if (r.status != 0 || !writes)
                expect_untouched_on_failure("bad.db", r.status != 0, what, r);
            if (!(r.status == 0 || r.status == 1)) {
                fprintf(stderr, "  %s: status %d: %s", what, r.status, r.err);
                failures++;
            }
            CHECK(!strstr(r.out, "-7 allocations") && !strstr(r.err, "-7 allocations"));
            run_result_release(&r);
        }
    }
}

static void case_errors(void)
{
    EXPECT_ERROR("heaplens: nosnap.db has no heap snapshot; 'heaplens record' takes one at every "
                 "GC.Collect() (--snapshot induced, the default) and 'heaplens snapshot PID' on "
                 "demand\n",
                 "retention", "nosnap.db");
    EXPECT_ERROR("heaplens: no snapshot 9 in graph.db: its snapshots are 1 to 4\n", "retention",
                 "graph.db", "--snapshot", "9");
    EXPECT_ERROR("heaplens: no snapshot 2 in one.db: it has one snapshot, snapshot 1\n", "roots",
                 "one.db", "--snapshot", "2", "--object", "1");
    EXPECT_ERROR("heaplens: retention: --snapshot expects a snapshot number (1, 2, ...) or @CHECKPOINT, not 'x'\n",
                 "retention", "graph.db", "--snapshot", "x");
    EXPECT_ERROR("heaplens: retention: --by expects 'object' or 'type', not 'size'\n", "retention",
                 "graph.db", "--by", "size");
    EXPECT_ERROR("heaplens: roots: give either --object ID or --type NAME; see 'heaplens roots "
                 "--help'\n",
                 "roots", "graph.db");
    EXPECT_ERROR("heaplens: roots: give either --object ID or --type NAME; see 'heaplens roots "
                 "--help'\n",
                 "roots", "graph.db", "--object", "1", "--type", "App.Leak");
    EXPECT_ERROR("heaplens: no type named 'Lea' in graph.db (a full name, "
                 "'System.Collections.Generic.List<App.Item>', or one without namespaces, "
                 "'List<Item>'; see 'heaplens allocations')\n",
                 "roots", "graph.db", "--type", "Lea");
    EXPECT_ERROR("heaplens: object 99 is not in snapshot 4 (not allocated yet, dead, or never "
                 "tracked)\n",
                 "roots", "graph.db", "--object", "99");
    EXPECT_ERROR("heaplens: no instance of App.Churn in snapshot 2\n", "roots", "graph.db",
                 "--snapshot", "2", "--type", "App.Churn");
    EXPECT_ERROR("heaplens: leaks needs at least two heap snapshots to see growth; one.db has 1 "
                 "(take one per GC.Collect() with 'heaplens record', or with 'heaplens snapshot "
                 "PID')\n",
                 "leaks", "one.db");
    EXPECT_ERROR("heaplens: diff: no snapshot before snapshot 1 in one.db; give --from\n", "diff",
                 "one.db");
    EXPECT_ERROR("heaplens: survivors: --by expects 'generation' or 'age', not 'type'\n",
                 "survivors", "graph.db", "--by", "type");
    EXPECT_ERROR("heaplens: leaks: unknown option '--snapshot'; see 'heaplens leaks --help'\n",
                 "leaks", "graph.db", "--snapshot", "1");
    run_result r = RUN("roots", "--help");
    CHECK_INT(r.status, 0);
    CHECK(g_str_has_prefix(r.out, "usage: heaplens roots FILE (--object ID | --type NAME)"));
    run_result_release(&r);
}

/* Every .sql file of examples/queries/ runs unchanged (after `heaplens retention`), each statement
 * without error; the ones about snapshots return rows. */
static void case_example_queries(void)
{
    file_copy("graph.db", "q.db");
    run_result r = RUN("retention", "q.db");
    CHECK_INT(r.status, 0);
    run_result_release(&r);
    g_autofree char *dir = g_build_filename(source_dir, "examples", "queries", NULL);
    g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
    CHECK(d != NULL);
    if (!d)
        return;
    g_autofree char *path = fixture_path("q.db");
    sqlite3 *db = NULL;
    CHECK(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK);
    int files = 0;
    for (const char *name; (name = g_dir_read_name(d));) {
        if (!g_str_has_suffix(name, ".sql"))
            continue;
        g_autofree char *file = g_build_filename(dir, name, NULL);
        g_autofree char *sql = NULL;
        CHECK(g_file_get_contents(file, &sql, NULL, NULL));
        const char *tail = sql;
        int statements = 0, rows = 0;
        while (tail && *tail) {
            sqlite3_stmt *stmt = NULL;
            if (sqlite3_prepare_v2(db, tail, -1, &stmt, &tail) != SQLITE_OK) {
                fprintf(stderr, "%s: %s\n", name, sqlite3_errmsg(db));
                failures++;
                break;
            }
            if (!stmt)
                continue; /* whitespace or a comment */
            statements++;
            int rc;
            while ((rc = sqlite3_step(stmt)) == SQLITE_ROW)
                rows++;
            if (rc != SQLITE_DONE) {
                fprintf(stderr, "%s: %s\n", name, sqlite3_errmsg(db));
                failures++;
            }
            sqlite3_finalize(stmt);
        }
        CHECK(statements > 0);
        if (strcmp(name, "top_retainers.sql") == 0 || strcmp(name, "dominator_chain.sql") == 0 ||
            strcmp(name, "growth_per_snapshot.sql") == 0)
            CHECK(rows > 0 || !fprintf(stderr, "  %s returned no row\n", name));
        files++;
    }
    CHECK(files >= 6);
    sqlite3_close(db);
}

static const cli_test_case cases[] = {
    {"retention_objects", case_retention_objects},
    {"stored_damaged", case_stored_damaged},
    {"leaks_path_folded", case_leaks_path_folded},
    {"retention_table_beside_blocks", case_retention_table_beside_blocks},
    {"retention_one_thread", case_retention_one_thread},
    {"retention_types", case_retention_types},
    {"retention_text", case_retention_text},
    {"retention_refs_text", case_retention_refs_text},
    {"retention_readonly", case_retention_readonly},
    {"retention_reuse", case_retention_reuse},
    {"retention_top", case_retention_top},
    {"retention_packed", case_retention_packed},
    {"roots_object", case_roots_object},
    {"roots_named", case_roots_named},
    {"roots_all", case_roots_all},
    {"roots_type", case_roots_type},
    {"roots_type_names", case_roots_type_names},
    {"roots_unreachable", case_roots_unreachable},
    {"leaks", case_leaks},
    {"leaks_noise", case_leaks_noise},
    {"leaks_stored", case_leaks_stored},
    {"store_disk_full", case_store_disk_full},
    {"leaks_counts_held", case_leaks_counts_held},
    {"inspect", case_inspect},
    {"ref_fields_large", case_ref_fields_large},
    {"inspect_event_metadata", case_inspect_event_metadata},
    {"inspect_kept", case_inspect_kept},
    {"inspect_stored", case_inspect_stored},
    {"diff", case_diff},
    {"diff_files", case_diff_files},
    {"leaks_files", case_leaks_files},
    {"leaks_files_steady", case_leaks_files_steady},
    {"snapshot_rows_lost", case_snapshot_rows_lost},
    {"old_form", case_old_form},
    {"survivors_age", case_survivors_age},
    {"errors", case_errors},
    {"damaged_pages", case_damaged_pages},
    {"checked_once", case_checked_once},
    {"edited_values", case_edited_values},
    {"example_queries", case_example_queries},
};

/* `test_leaks fixture DIR`: graph.db as the writer leaves it (no command has read it: the
 * generation history is not built), with the allocation samples of hl_stack_fixture.h, for
 * tests/unit/cli/fuzz_test.py. */
static int fixture_only(const char *dir)
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

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "fixture") == 0)
        return fixture_only(argv[2]);
    if (argc != 4) {
        fprintf(stderr, "usage: test_leaks HEAPLENS SOURCE_DIR CASE|all\n"
                        "       test_leaks fixture DIR\n");
        return 2;
    }
    heaplens = argv[1];
    source_dir = argv[2];
    return cli_test_main("leaks", argv[3], cases, G_N_ELEMENTS(cases), fixtures_build);
}
