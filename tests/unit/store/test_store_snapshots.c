/* test_store_snapshots.c — heap snapshots and handles: the golden snapshot and
 * handles, the compact form (differential), references with their fields, snapshots that must
 * not be stored, frozen and discovered objects, handles in a rolled-back GC or freed inside
 * one, checkpoints, snapshot reasons.
 *
 * Usage: test_store_snapshots <case>|all   (ctest runs each case as store.<case>).
 * What the store's tests share: store_test.h.
 */
#define _GNU_SOURCE
#include "tests/unit/store/store_test.h"
#include "tests/unit/common/test_rng.h"

#include <errno.h>

/* The golden snapshot: rows in key order, a reference sent twice stored twice (nth 0 and 1),
 * identical roots kept, the views, and the query plans of the two directions of the graph. */
static void test_golden_snapshot(void)
{
    char *dir = tmp_dir_new();
    g_autofree char *path = golden_db(dir, FALSE, NULL);
    sqlite3 *db = db_open(path);

    CHECK_ROWS(db,
               "SELECT snapshot, gc, trigger, objects, refs, roots, handles, bytes, model_missing,"
               " model_extra, frozen, unresolved, walk_ns FROM snapshots",
               "1|3|induced|4|5|7|2|168|0|0|0|1|5000\n");
    /* references with their object, in field order (1 has fields to 9, 6, 9) */
    CHECK_ROWS(db, "SELECT * FROM snapshot_objects",
               "1|1|2|0|[9,6,9]|NULL\n1|6|4|0|NULL|NULL\n1|9|2|0|[10]|NULL\n1|10|1|0|[1]|NULL\n");
    CHECK_ROWS(db, "SELECT * FROM snapshot_refs ORDER BY snapshot, from_id, to_id, nth",
               "1|1|6|0\n1|1|9|0\n1|1|9|1\n1|9|10|0\n1|10|1|0\n");
    CHECK_ROWS(db, "SELECT snapshot, object_id, kind, flags, root_id FROM snapshot_roots"
                   " ORDER BY object_id, kind, flags",
               "1|NULL|other|0|NULL\n"
               "1|1|handle|0|40960\n"
               "1|6|finalizer|0|NULL\n"
               "1|6|stack|1|20818\n"
               "1|9|handle|2|45056\n"
               "1|10|stack|0|20817\n"
               "1|10|stack|0|20817\n");
    CHECK_ROWS(db, "SELECT * FROM snapshot_contents ORDER BY object_id",
               "1|3|1|System.String|32|2|0|0|100|Main\n"
               "1|3|6|System.Byte[]|64|4|0|0|101|NULL\n"
               "1|3|9|System.String|48|2|0|0|100|Main\n"
               "1|3|10|App.Node|24|1|0|0|100|Main\n");
    /* Handle roots with their lifetime rows: 0xB000's second lifetime (row 4) is the one alive. */
    CHECK_ROWS(db, "SELECT * FROM snapshot_handles ORDER BY handle_id",
               "1|3|40960|strong|1|0|1|1\n"
               "1|3|45056|weak|9|2|4|2\n");
    /* The question: objects allocated by thread 100 alive in snapshot 1, and who
     * references them. */
    CHECK_ROWS(db,
               "SELECT DISTINCT c.object_id, c.type, r.from_id FROM snapshot_contents c"
               " LEFT JOIN snapshot_refs r ON r.snapshot = c.snapshot AND r.to_id = c.object_id"
               " WHERE c.snapshot = 1 AND c.thread = 100 ORDER BY c.object_id, r.from_id",
               "1|System.String|10\n9|System.String|1\n10|App.Node|9\n");
    /* Through the file's views (plain sqlite3) a filter on the snapshot reaches `snapshots`'
     * key, and only that snapshot's blocks are unpacked; there is no index by target: "who
     * references X" reads every object of the snapshot. */
    g_autofree char *out_plan =
        db_rows(db, "EXPLAIN QUERY PLAN SELECT to_id FROM snapshot_refs WHERE snapshot = 1 AND from_id = 9");
    CHECK(strstr(out_plan, "SEARCH s USING INTEGER PRIMARY KEY (rowid=?)") != NULL);
    g_autofree char *in_plan =
        db_rows(db, "EXPLAIN QUERY PLAN SELECT from_id FROM snapshot_refs WHERE snapshot = 1 AND to_id = 9");
    CHECK(strstr(in_plan, "SEARCH s USING INTEGER PRIMARY KEY (rowid=?)") != NULL);
    /* The documented form of "who references 9" (SCHEMA.md) */
    CHECK_ROWS(db, "SELECT so.object_id FROM snapshot_objects so WHERE so.snapshot = 1"
                   " AND EXISTS (SELECT 1 FROM json_each(so.refs) WHERE value = 9)",
               "1\n");
    g_autofree char *all_plan =
        db_rows(db, "EXPLAIN QUERY PLAN SELECT from_id, to_id FROM snapshot_refs WHERE snapshot = 1");
    CHECK(strstr(all_plan, "SEARCH s USING INTEGER PRIMARY KEY (rowid=?)") != NULL);
    /* heaplens' own connections: the same rows from the virtual table, one object by one block */
    {
        g_autoptr(GError) error = NULL;
        sqlite3 *hl = store_db_open_readonly(path, &error);
        CHECK_NO_ERROR(error);
        CHECK_ROWS(hl, "SELECT * FROM snapshot_objects",
                   "1|1|2|0|[9,6,9]|NULL\n1|6|4|0|NULL|NULL\n1|9|2|0|[10]|NULL\n1|10|1|0|[1]|NULL\n");
        CHECK_ROWS(hl, "SELECT object_id, refs FROM snapshot_objects WHERE snapshot = 1 AND object_id = 9",
                   "9|[10]\n");
        CHECK_ROWS(hl, "SELECT count(*) FROM snapshot_objects WHERE snapshot = 1 AND object_id = 8", "0\n");
        CHECK_ROWS(hl, "SELECT object_id FROM snapshot_objects WHERE snapshot = 1 AND object_id = 9.0",
                   "9\n");
        CHECK_ROWS(hl, "SELECT object_id FROM snapshot_objects WHERE snapshot = '1' AND object_id = '10'",
                   "10\n");
        CHECK_ROWS(hl, "SELECT count(*) FROM snapshot_objects WHERE snapshot = 1 AND object_id = 9.5", "0\n");
        /* idxNum: 1 the snapshot, 2 the object, 4 refs or fields read (else neither is decoded) */
        g_autofree char *hl_plan = db_rows(
            hl, "EXPLAIN QUERY PLAN SELECT refs FROM snapshot_objects WHERE snapshot = 1 AND object_id = 9");
        CHECK(strstr(hl_plan, "VIRTUAL TABLE INDEX 7") != NULL);
        g_autofree char *short_plan = db_rows(
            hl, "EXPLAIN QUERY PLAN SELECT object_id, generation FROM snapshot_objects WHERE snapshot = 1");
        CHECK(strstr(short_plan, "VIRTUAL TABLE INDEX 1") != NULL);
        CHECK_ROWS(hl, "SELECT object_id, generation, flags FROM snapshot_objects WHERE snapshot = 1",
                   "1|2|0\n6|4|0\n9|2|0\n10|1|0\n");
        CHECK_ROWS(hl, "SELECT object_id, generation FROM snapshot_objects WHERE snapshot = 1"
                       " AND object_id = 10", "10|1\n");
        /* a join scans the snapshot and looks the objects up (as schema 7's key made SQLite do),
         * never every object with a lookup of each in the snapshot */
        g_autofree char *join_plan = db_rows(
            hl, "EXPLAIN QUERY PLAN SELECT o.size FROM snapshot_objects so"
                " JOIN objects o ON o.id = so.object_id WHERE so.snapshot = 1");
        CHECK(strstr(join_plan, "SCAN so VIRTUAL TABLE INDEX 1") != NULL &&
              strstr(join_plan, "SEARCH o USING INTEGER PRIMARY KEY") != NULL);
        sqlite3_close(hl);
    }
    g_autofree char *roots_plan =
        db_rows(db, "EXPLAIN QUERY PLAN SELECT * FROM snapshot_roots WHERE snapshot = 1 AND object_id = 6");
    CHECK(strstr(roots_plan, "snapshot_roots_by_object") != NULL);
    sqlite3_close(db);
    tmp_dir_free(dir);
}

/* Handle lifetimes and the two handle views, with their GC boundaries. */
static void test_golden_handles(void)
{
    char *dir = tmp_dir_new();
    g_autofree char *path = golden_db(dir, FALSE, NULL);
    sqlite3 *db = db_open(path);
    CHECK_ROWS(db, SQL_HANDLES, golden_handle_stages[GOLDEN_HANDLE_STAGES - 1]);
    CHECK_ROWS(db, "SELECT * FROM strong_handles_never_freed ORDER BY handle",
               "1|40960|1|System.String|32|1\n"
               "5|53248|NULL|NULL|NULL|NULL\n");
    /* 0xB000's pinned lifetime: created after GC 1, destroyed after GC 2: alive after GC 2
     * only (alive after GC g: created_after_gc < g <= destroyed_after_gc). */
    CHECK_ROWS(db, "SELECT * FROM pinned_handles_per_gc ORDER BY gc, handle", "2|2|45056|6|1|2\n");
    sqlite3_close(db);

    /* The boundaries once more, on a pinned handle created before the first GC and never
     * destroyed, one created after GC 1 and destroyed after GC 1, one never seen created. */
    g_autoptr(GError) error = NULL;
    g_autofree char *p2 = g_build_filename(dir, "h.db", NULL);
    hl_sb *sb = hl_sb_new();
    hl_sb_type(sb, 1, "A");
    hl_sb_alloc(sb, 1, 1, 24, 7);
    hl_sb_handle_created(sb, 0x10, 1, 0);
    hl_sb_gc_start(sb, 1, 0, FALSE, 2);
    hl_sb_fate(sb, 1, 1, HL_FATE(HL_GEN_0, HL_GEN_1));
    hl_sb_handle_kind(sb, 1, 0x10, HL_HANDLE_PINNED);
    hl_sb_gc_end(sb, 1, 0);
    hl_sb_handle_created(sb, 0x20, 1, 1);
    hl_sb_handle_destroyed(sb, 0x20, 1);
    hl_sb_handle_destroyed(sb, 0x30, 1); /* never seen: nothing to close */
    for (uint32_t gc = 2; gc <= 3; gc++) {
        hl_sb_gc_start(sb, gc, 0, FALSE, 2);
        if (gc == 2)
            hl_sb_handle_kind(sb, 2, 0x40, HL_HANDLE_PINNED);
        hl_sb_gc_end(sb, gc, 0);
    }
    hl_sb_run_end(sb, 3);
    CHECK(hl_sb_write_db(sb, p2, NULL, NULL, &error));
    CHECK_NO_ERROR(error);
    hl_sb_free(sb);
    db = db_open(p2);
    CHECK_ROWS(db, SQL_HANDLES,
               "1|16|pinned|1|0|NULL\n2|32|unknown|1|1|1\n3|64|pinned|NULL|NULL|NULL\n");
    CHECK_ROWS(db, "SELECT gc, count(*) FROM pinned_handles_per_gc GROUP BY gc",
               "1|2\n2|2\n3|2\n");
    CHECK(db_int(db, "SELECT value FROM counters WHERE name = 'writer_anomalies'") == 0);
    sqlite3_close(db);
    tmp_dir_free(dir);
}

/* One random heap object of the differential test. */
typedef struct blk_obj {
    uint64_t id;
    uint32_t gen, flags;
    uint32_t nr;
    uint64_t to[300];
    uint32_t field[300];
} blk_obj;

static void blk_obj_random(blk_obj *o, const uint64_t *ids, size_t n)
{
    uint64_t kind = rng() % 100;
    o->gen = (uint32_t)(rng() % 7); /* 6: none the schema knows (NULL) */
    o->flags = kind < 5 ? HL_SNAP_OBJ_DISCOVERED : kind < 8 ? 6 : 0;
    o->nr = kind < 1 ? 257 + (uint32_t)(rng() % 40) : (uint32_t)(rng() % 5);
    uint32_t fields = (uint32_t)(rng() % 4); /* 0: none known, 1: some, else all */
    for (uint32_t i = 0; i < o->nr; i++) {
        o->to[i] = rng() % 10 == 0 ? o->id : ids[rng() % n];
        o->field[i] = fields == 0 || (fields == 1 && rng() % 2) ? HL_FIELD_UNKNOWN
                                                                : (uint32_t)(rng() % 1000);
    }
}

static void blk_snapshot(hl_sb *sb, uint32_t snapshot, const blk_obj *objs, size_t n)
{
    hl_sb_gc_start(sb, snapshot, 2, TRUE, 1);
    hl_sb_snapshot_start(sb, snapshot, snapshot, HL_SNAPSHOT_INDUCED);
    for (size_t i = 0; i < n; i++) {
        hl_sb_snapshot_object(sb, snapshot, objs[i].id, objs[i].gen, objs[i].flags);
        if (i % 97 == 0) /* listed twice: one object with the flags of both */
            hl_sb_snapshot_object(sb, snapshot, objs[i].id, objs[i].gen, HL_SNAP_OBJ_FROZEN);
    }
    for (size_t i = n; i-- > 0;) /* references of objects out of id order */
        for (uint32_t r = 0; r < objs[i].nr; r++) {
            hl_sb_snapshot_ref(sb, snapshot, objs[i].id, objs[i].to[r]);
            hl_sb_snapshot_ref_field(sb, snapshot, objs[i].field[r]);
        }
    hl_sb_snapshot_root(sb, snapshot, objs[0].id, HL_ROOT_HANDLE, 0, 0x7f00);
    hl_sb_snapshot_end(sb, snapshot, snapshot);
    hl_sb_gc_end(sb, snapshot, 0);
}

/* Every row of `sql` on both connections is the same. */
static void blk_same(sqlite3 *a, sqlite3 *b, const char *sql)
{
    g_autofree char *x = db_rows(a, sql);
    g_autofree char *y = db_rows(b, sql);
    if (strcmp(x, y) != 0)
        fprintf(stderr, "differ: %s\n", sql);
    CHECK(strcmp(x, y) == 0);
    CHECK(strlen(x) > 0 || strstr(sql, "count") == NULL);
}

/* The differential test of the compact form: random heaps in four snapshots (the second the
 * same as the first, the third changed a little, the fourth the same as the third), written with
 * HEAPLENS_SNAPSHOT_ROWS=1 so that schema 7's rows are there too. The file's view (plain
 * SQLite), heaplens' virtual table and the views over each answer exactly as schema 7's rows do,
 * and an unchanged snapshot adds no block. */
static void test_snapshot_blocks(void)
{
    char *dir = tmp_dir_new();
    g_autoptr(GError) error = NULL;
    g_autofree char *path = g_build_filename(dir, "blocks.db", NULL);
    enum { N = 1200 };
    test_rng_seed(20261127);
    uint64_t *ids = g_new(uint64_t, N);
    blk_obj *objs = g_new0(blk_obj, N);
    uint64_t id = 1;
    for (size_t i = 0; i < N; i++) {
        id += i == N - 100 ? HL_DISCOVERED_ID_BASE : 1 + (rng() % 8 == 0 ? rng() % 5000 : 0);
        ids[i] = objs[i].id = id;
    }
    for (size_t i = 0; i < N; i++)
        blk_obj_random(&objs[i], ids, N);

    hl_sb *sb = hl_sb_new();
    hl_sb_run_start(sb, 4242, "dotnet App.dll");
    hl_sb_type(sb, T_NODE, "App.Node");
    hl_sb_field(sb, T_NODE, 3, "_next");
    blk_snapshot(sb, 1, objs, N);
    blk_snapshot(sb, 2, objs, N);
    for (size_t i = 0; i < N; i += 50) /* a few change */
        blk_obj_random(&objs[i], ids, N);
    objs[N / 2].gen = (objs[N / 2].gen + 1) % 6;
    blk_snapshot(sb, 3, objs, N - 7); /* the last few die */
    blk_snapshot(sb, 4, objs, N - 7);
    hl_sb_run_end(sb, 4);
    g_setenv("HEAPLENS_SNAPSHOT_ROWS", "1", TRUE);
    CHECK(hl_sb_write_db(sb, path, "cmd", NULL, &error));
    g_unsetenv("HEAPLENS_SNAPSHOT_ROWS");
    CHECK_NO_ERROR(error);
    hl_sb_free(sb);

    sqlite3 *plain = db_open(path);
    sqlite3 *hl = store_db_open_readonly(path, &error);
    CHECK_NO_ERROR(error);
    sqlite3 *rows = db_open(path);
    /* schema 7: snapshot_objects the rows, and the views over them, on a connection of their own */
    g_auto(GStrv) parts = g_strsplit(store_schema_snapshot_views, "CREATE VIEW ", -1);
    g_autofree char *views = g_strjoinv("CREATE TEMP VIEW ", parts);
    CHECK(sqlite3_exec(rows, "CREATE TEMP VIEW snapshot_objects AS SELECT * FROM snapshot_object_rows",
                       NULL, NULL, NULL) == SQLITE_OK);
    CHECK(sqlite3_exec(rows, views, NULL, NULL, NULL) == SQLITE_OK);
    CHECK(db_int(rows, "SELECT count(*) FROM snapshot_objects") == 2 * N + 2 * (N - 7));

    const char *const same[] = {
        "SELECT * FROM snapshot_objects ORDER BY snapshot, object_id",
        "SELECT * FROM snapshot_objects WHERE snapshot = 3 ORDER BY object_id",
        "SELECT count(*), sum(length(refs)), sum(length(fields)) FROM snapshot_objects",
        "SELECT * FROM snapshot_refs ORDER BY snapshot, from_id, to_id, nth",
        "SELECT * FROM snapshot_refs WHERE snapshot = 2 AND from_id = 5",
        "SELECT * FROM snapshot_ref_fields ORDER BY snapshot, from_id, to_id, nth",
        "SELECT * FROM snapshot_contents ORDER BY snapshot, object_id",
        "SELECT * FROM snapshot_handles ORDER BY snapshot, handle_id",
    };
    for (size_t i = 0; i < G_N_ELEMENTS(same); i++) {
        blk_same(plain, rows, same[i]);
        blk_same(hl, rows, same[i]);
    }
    /* the virtual table's own order, and its point lookups (present, absent, another snapshot) */
    blk_same(hl, rows, "SELECT * FROM snapshot_objects");
    GArray *to = g_array_new(FALSE, FALSE, sizeof(uint64_t));
    GArray *field = g_array_new(FALSE, FALSE, sizeof(int64_t));
    for (size_t i = 0; i < N; i += 37) {
        for (int snap = 1; snap <= 4; snap++) {
            g_autofree char *q = g_strdup_printf(
                "SELECT * FROM snapshot_objects WHERE snapshot = %d AND object_id = %" PRIu64, snap,
                ids[i] + (i % 2));
            blk_same(hl, rows, q);
            gboolean found = FALSE, known = FALSE;
            CHECK(store_snapshot_object_get(hl, snap, ids[i], &found, to, field, &known, &error));
            CHECK_NO_ERROR(error);
            CHECK(found == (snap < 3 || i < N - 7));
        }
    }
    g_array_unref(to);
    g_array_unref(field);
    /* each block once: the unchanged snapshots 2 and 4 added none, 3 a few */
    CHECK(db_int(plain, "SELECT count(*) FROM snapshot_blocks WHERE first_snapshot IN (2, 4)") == 0);
    int64_t all = db_int(plain, "SELECT count(*) FROM snapshot_blocks WHERE first_snapshot = 1");
    int64_t third = db_int(plain, "SELECT count(*) FROM snapshot_blocks WHERE first_snapshot = 3");
    CHECK(all > 20 && third > 0 && third < all);
    CHECK(db_int(plain, "SELECT max(objects) FROM snapshot_blocks") <= STORE_SNAPBLOCK_MAX);
    sqlite3_close(plain);
    sqlite3_close(hl);
    sqlite3_close(rows);
    g_free(ids);
    g_free(objs);
    tmp_dir_free(dir);
}

/* References with the fields that hold them (schema 7): a field number per reference of an object
 * (named in `fields`), an element index per reference of an array, null where unknown; carried
 * through the sort by `from`. A snapshot whose REF_FIELDS do not add up keeps its references
 * without fields (an anomaly); one without REF_FIELDS (an older collector) has none. A slot that
 * is a static field is named in snapshot_statics, with its thread when it is a thread's slot of
 * a thread static (statics.thread, schema 8); stack roots' methods are named (root_methods), and
 * the collections' counts stored (snapshot_collections); a stack root's thread sets the thread of
 * its object's stack rows (snapshot_roots.thread), not of its other roots. */
static void test_snapshot_fields(void)
{
    char *dir = tmp_dir_new();
    g_autoptr(GError) error = NULL;
    g_autofree char *p = g_build_filename(dir, "f.db", NULL);
    hl_sb *sb = hl_sb_new();
    hl_sb_type(sb, 1, "App.Registry");
    hl_type arr = {.type_id = 2, .flags = HL_TYPE_FLAG_ARRAY};
    hl_sb_type_full(sb, &arr, "App.Session[]");
    hl_sb_type(sb, 3, "App.Session");
    hl_sb_field(sb, 1, 1, "_name");
    hl_sb_field(sb, 1, 2, "_sessions");
    hl_sb_type(sb, 4, "App.Program");
    hl_sb_static(sb, 1, 4, "s_registry");
    hl_sb_static(sb, 2, 4, "t_current");
    hl_sb_static_thread(sb, 2, 4242);
    hl_sb_root_method(sb, 0x7f00aa, "App.Program.Main");
    hl_sb_alloc(sb, 1, 3, 24, 7);
    hl_sb_alloc(sb, 2, 3, 24, 7);
    hl_sb_alloc(sb, 3, 2, 48, 7);
    hl_sb_alloc(sb, 4, 1, 32, 7);
    hl_sb_gc_start(sb, 1, 2, TRUE, 5);
    for (uint64_t id = 1; id <= 4; id++)
        hl_sb_fate(sb, 1, id, HL_FATE(HL_GEN_0, HL_GEN_1));
    hl_sb_snapshot_start(sb, 1, 1, HL_SNAPSHOT_INDUCED);
    for (uint64_t id = 4; id >= 1; id--) /* out of id order: the sort carries the fields */
        hl_sb_snapshot_object(sb, 1, id, HL_GEN_1, 0);
    hl_sb_snapshot_ref(sb, 1, 4, 3); /* Registry._sessions -> the array */
    hl_sb_snapshot_ref(sb, 1, 3, 2); /* array[1] -> session 2 */
    hl_sb_snapshot_ref(sb, 1, 3, 1); /* array[7] -> session 1 */
    hl_sb_snapshot_ref(sb, 1, 2, 1); /* a field the collector could not name */
    hl_sb_snapshot_ref_field(sb, 1, 2);
    hl_sb_snapshot_ref_field(sb, 1, 1);
    hl_sb_snapshot_ref_field(sb, 1, 7);
    hl_sb_snapshot_ref_field(sb, 1, HL_FIELD_UNKNOWN);
    hl_sb_snapshot_static(sb, 1, 3, 7, 1); /* as if the array held the statics */
    hl_sb_snapshot_string(sb, 1, 1, "session-one", 11);
    hl_sb_snapshot_string(sb, 1, 2, "secret", 0); /* --no-strings: no characters kept */
    hl_sb_snapshot_collection(sb, 1, 4, 10, 1000);
    hl_sb_snapshot_root(sb, 1, 1, HL_ROOT_STACK, 0, 0x7f00aa);
    hl_sb_snapshot_root(sb, 1, 1, HL_ROOT_STACK, 0, 0x7f00aa);
    hl_sb_snapshot_root(sb, 1, 1, HL_ROOT_HANDLE, 0, 0x7f00);
    hl_sb_snapshot_root(sb, 1, 2, HL_ROOT_STACK, 0, 0x7f00aa);
    hl_sb_snapshot_root_thread(sb, 1, 1, 4242);
    hl_sb_snapshot_end(sb, 1, 1);
    hl_sb_gc_end(sb, 1, 0);
    /* GC 2: one field for two references: the references stay, without fields */
    hl_sb_gc_start(sb, 2, 2, TRUE, 5);
    hl_sb_snapshot_start(sb, 2, 2, HL_SNAPSHOT_INDUCED);
    hl_sb_snapshot_object(sb, 2, 3, HL_GEN_2, 0);
    hl_sb_snapshot_object(sb, 2, 4, HL_GEN_2, 0);
    hl_sb_snapshot_ref(sb, 2, 4, 3);
    hl_sb_snapshot_ref(sb, 2, 3, 4);
    hl_sb_snapshot_ref_field(sb, 2, 2);
    hl_sb_snapshot_end(sb, 2, 2);
    hl_sb_gc_end(sb, 2, 0);
    /* GC 3: no REF_FIELDS at all */
    hl_sb_gc_start(sb, 3, 2, TRUE, 5);
    hl_sb_snapshot_start(sb, 3, 3, HL_SNAPSHOT_INDUCED);
    hl_sb_snapshot_object(sb, 3, 4, HL_GEN_2, 0);
    hl_sb_snapshot_object(sb, 3, 3, HL_GEN_2, 0);
    hl_sb_snapshot_ref(sb, 3, 4, 3);
    hl_sb_snapshot_end(sb, 3, 3);
    hl_sb_gc_end(sb, 3, 0);
    hl_sb_run_end(sb, 3);
    CHECK(hl_sb_write_db(sb, p, NULL, NULL, &error));
    CHECK_NO_ERROR(error);
    hl_sb_free(sb);

    sqlite3 *db = db_open(p);
    CHECK_ROWS(db, "SELECT * FROM fields ORDER BY type_id, field", "1|1|_name\n1|2|_sessions\n");
    CHECK_ROWS(db, "SELECT snapshot, object_id, refs, fields FROM snapshot_objects",
               "1|1|NULL|NULL\n1|2|[1]|NULL\n1|3|[2,1]|[1,7]\n1|4|[3]|[2]\n"
               "2|3|[4]|NULL\n2|4|[3]|NULL\n"
               "3|3|NULL|NULL\n3|4|[3]|NULL\n");
    CHECK_ROWS(db, "SELECT * FROM snapshot_refs WHERE snapshot = 1 ORDER BY from_id, to_id",
               "1|2|1|0\n1|3|1|0\n1|3|2|0\n1|4|3|0\n");
    CHECK_ROWS(db, "SELECT * FROM snapshot_ref_fields WHERE snapshot = 1 ORDER BY from_id, to_id",
               "1|2|1|0|NULL|NULL\n1|3|1|0|7|[7]\n1|3|2|0|1|[1]\n1|4|3|0|2|_sessions\n");
    CHECK_ROWS(db, "SELECT * FROM statics", "1|4|s_registry|NULL\n2|4|t_current|4242\n");
    CHECK_ROWS(db, "SELECT function_id, name FROM root_methods", "8323242|App.Program.Main\n");
    CHECK_ROWS(db, "SELECT * FROM snapshot_collections", "1|4|10|1000\n");
    CHECK_ROWS(db, "SELECT object_id, kind, thread FROM snapshot_roots ORDER BY 1, 2",
               "1|handle|NULL\n1|stack|4242\n1|stack|4242\n2|stack|NULL\n");
    CHECK_ROWS(db, "SELECT * FROM snapshot_statics", "1|3|7|1\n");
    CHECK_ROWS(db, "SELECT object_id, length, quote(value) FROM snapshot_strings",
               "1|11|'session-one'\n2|6|NULL\n");
    CHECK_ROWS(db, "SELECT value FROM counters WHERE name = 'writer_anomalies'", "1\n");
    sqlite3_close(db);
    tmp_dir_free(dir);
}

/* Snapshots that must not be stored, and records that break the collector's promises. */
static void test_snapshot_incomplete(void)
{
    char *dir = tmp_dir_new();
    g_autoptr(GError) error = NULL;
    g_autofree char *p = g_build_filename(dir, "s.db", NULL);
    hl_sb *sb = hl_sb_new();
    hl_sb_type(sb, 1, "A");
    hl_sb_alloc(sb, 1, 1, 24, 7);
    hl_sb_alloc(sb, 2, 1, 24, 7);

    /* GC 1: snapshot 1 never ends (discarded); the GC is stored. */
    hl_sb_gc_start(sb, 1, 2, TRUE, 3);
    hl_sb_fate(sb, 1, 1, HL_FATE(HL_GEN_0, HL_GEN_1));
    hl_sb_fate(sb, 1, 2, HL_FATE(HL_GEN_0, HL_GEN_1));
    hl_sb_snapshot_start(sb, 1, 1, HL_SNAPSHOT_INDUCED);
    hl_sb_snapshot_object(sb, 1, 1, HL_GEN_1, 0);
    hl_sb_gc_end(sb, 1, 0);
    hl_sb_snapshot_object(sb, 1, 2, HL_GEN_1, 0); /* no snapshot open: anomaly */

    /* GC 2: snapshot 2 is cut short by snapshot 3 (discarded), which is stored. */
    hl_sb_gc_start(sb, 2, 2, TRUE, 3);
    hl_sb_snapshot_start(sb, 2, 2, HL_SNAPSHOT_INDUCED);
    hl_sb_snapshot_object(sb, 2, 1, HL_GEN_2, 0);
    hl_sb_snapshot_start(sb, 3, 2, HL_SNAPSHOT_GEN2);
    hl_sb_snapshot_object(sb, 3, 1, HL_GEN_2, 0);
    hl_sb_snapshot_object(sb, 3, 2, HL_GEN_2, 0);
    hl_sb_snapshot_ref(sb, 2, 1, 2); /* for snapshot 2, no longer open: anomaly */
    hl_sb_snapshot_ref(sb, 3, 2, 1);
    hl_sb_snapshot_end(sb, 3, 2);
    hl_sb_gc_end(sb, 2, 0);

    /* GC 3: snapshot 4 announces more objects than arrived (a record was dropped): discarded.
     * A snapshot number already stored and a snapshot of another GC: anomalies. */
    hl_sb_gc_start(sb, 3, 2, TRUE, 3);
    hl_sb_snapshot_start(sb, 3, 3, HL_SNAPSHOT_INDUCED);
    hl_sb_snapshot_start(sb, 9, 7, HL_SNAPSHOT_INDUCED);
    hl_sb_snapshot_start(sb, 4, 3, HL_SNAPSHOT_INDUCED);
    hl_sb_snapshot_object(sb, 4, 1, HL_GEN_2, 0);
    hl_snapshot_end e4 = {.snapshot = 4, .gc = 3, .objects = 2};
    hl_sb_snapshot_end_full(sb, &e4);
    hl_snapshot_end e5 = {.snapshot = 5, .gc = 3};
    hl_sb_snapshot_end_full(sb, &e5); /* no such snapshot open: anomaly */
    hl_sb_gc_end(sb, 3, 0);

    /* GC 4: snapshot 5 is complete but its GC never ends: both discarded. */
    hl_sb_gc_start(sb, 4, 2, TRUE, 3);
    hl_sb_snapshot_start(sb, 5, 4, HL_SNAPSHOT_INDUCED);
    hl_sb_snapshot_object(sb, 5, 1, HL_GEN_2, 0);
    hl_sb_snapshot_end(sb, 5, 4);
    /* GC 5: snapshot 6, stored. */
    hl_sb_gc_start(sb, 5, 2, TRUE, 3);
    hl_sb_snapshot_start(sb, 6, 5, HL_SNAPSHOT_REQUESTED);
    hl_sb_snapshot_end(sb, 6, 5); /* an empty heap is a snapshot too */
    hl_sb_gc_end(sb, 5, 0);
    hl_sb_run_end(sb, 5);
    store_summary sum;
    CHECK(hl_sb_write_db(sb, p, NULL, &sum, &error));
    CHECK_NO_ERROR(error);
    hl_sb_free(sb);
    CHECK(sum.snapshots == 2 && sum.gcs == 4);

    sqlite3 *db = db_open(p);
    CHECK_ROWS(db, "SELECT snapshot, gc, trigger, objects, refs, roots, handles FROM snapshots",
               "3|2|gen2|2|1|0|0\n6|5|requested|0|0|0|0\n");
    CHECK_ROWS(db, "SELECT * FROM snapshot_objects", "3|1|2|0|NULL|NULL\n3|2|2|0|[1]|NULL\n");
    CHECK_ROWS(db, "SELECT * FROM snapshot_refs ORDER BY from_id", "3|2|1|0\n");
    CHECK_ROWS(db, "SELECT name, value FROM counters WHERE name IN ('snapshots_discarded',"
                   " 'writer_anomalies', 'gcs_discarded_incomplete') ORDER BY name",
               "gcs_discarded_incomplete|1\nsnapshots_discarded|4\n"
               "writer_anomalies|6\n"); /* 5 marked above, and the gap GC 3 -> GC 5 */
    sqlite3_close(db);
    tmp_dir_free(dir);
}

/* Frozen and discovered objects in a snapshot, an object listed twice; a generation the
 * collector could not tell. */
static void test_snapshot_flags(void)
{
    char *dir = tmp_dir_new();
    g_autoptr(GError) error = NULL;
    g_autofree char *p = g_build_filename(dir, "f.db", NULL);
    const uint64_t d = HL_DISCOVERED_ID_BASE + 1;
    hl_sb *sb = hl_sb_new();
    hl_sb_type(sb, 1, "System.String");
    hl_sb_type(sb, 2, "System.RuntimeType");
    hl_sb_alloc(sb, 1, 1, 30, 7);
    hl_sb_alloc(sb, 2, 2, 40, 7);
    hl_sb_alloc(sb, 3, 1, 20, 7);
    hl_sb_gc_start(sb, 1, 2, TRUE, 4);
    hl_sb_fate(sb, 1, 1, HL_FATE(HL_GEN_0, HL_GEN_1));
    hl_sb_fate(sb, 1, 2, HL_FATE(HL_GEN_NONGC, HL_GEN_NONGC));
    hl_sb_fate(sb, 1, 3, HL_FATE(HL_GEN_NONGC, HL_GEN_NONGC));
    hl_sb_discovered(sb, 1, d, 1, 50, HL_GEN_2);
    hl_sb_snapshot_start(sb, 1, 1, HL_SNAPSHOT_EVERY);
    hl_sb_snapshot_object(sb, 1, 1, HL_GEN_NONE, 0);
    hl_sb_snapshot_object(sb, 1, d, HL_GEN_2, HL_SNAP_OBJ_DISCOVERED);
    /* The walk reports NonGC objects too; the collector lists a referenced one once more,
     * flagged frozen: one row, flagged. One the walk alone reports is flagged all the same. */
    hl_sb_snapshot_object(sb, 1, 2, HL_GEN_NONGC, 0);
    hl_sb_snapshot_object(sb, 1, 3, HL_GEN_NONGC, 0);
    hl_sb_snapshot_object(sb, 1, 2, HL_GEN_NONGC, HL_SNAP_OBJ_FROZEN);
    hl_sb_snapshot_ref(sb, 1, d, 2);
    hl_sb_snapshot_ref(sb, 1, 1, d);
    hl_sb_snapshot_root(sb, 1, 1, 9, 0, 0); /* no such root kind: stored as other, anomaly */
    hl_snapshot_end e = {.snapshot = 1, .gc = 1, .objects = 5, .refs = 2, .roots = 1,
                         .bytes = 80, .model_missing = 2, .model_extra = 1, .frozen = 1};
    hl_sb_snapshot_end_full(sb, &e);
    hl_sb_gc_end(sb, 1, 0);
    hl_sb_run_end(sb, 1);
    CHECK(hl_sb_write_db(sb, p, NULL, NULL, &error));
    CHECK_NO_ERROR(error);
    hl_sb_free(sb);
    sqlite3 *db = db_open(p);
    CHECK_ROWS(db, "SELECT objects, refs, roots, bytes, model_missing, model_extra, frozen FROM snapshots",
               "4|2|1|80|2|1|2\n");
    CHECK_ROWS(db, "SELECT object_id, type, size, generation, frozen, discovered, thread FROM snapshot_contents",
               "1|System.String|30|NULL|0|0|7\n"
               "2|System.RuntimeType|40|5|1|0|7\n"
               "3|System.String|20|5|1|0|7\n"
               "281474976710657|System.String|50|2|0|1|NULL\n");
    CHECK_ROWS(db, "SELECT kind FROM snapshot_roots", "other\n");
    CHECK(db_int(db, "SELECT value FROM counters WHERE name = 'writer_anomalies'") == 1);
    sqlite3_close(db);
    tmp_dir_free(dir);
}

/* Handle records inside a GC that is rolled back survive it, and the handle map follows the
 * database; a lost HANDLE_DESTROYED closes the old lifetime at the address's reuse. */
static void test_handles_rollback(void)
{
    char *dir = tmp_dir_new();
    g_autoptr(GError) error = NULL;
    g_autofree char *p = g_build_filename(dir, "r.db", NULL);
    hl_sb *sb = hl_sb_new();
    hl_sb_type(sb, 1, "A");
    hl_sb_alloc(sb, 1, 1, 24, 7);
    hl_sb_handle_created(sb, 0x10, 1, 0);
    hl_sb_gc_start(sb, 1, 0, FALSE, 2);
    hl_sb_fate(sb, 1, 1, HL_FATE(HL_GEN_0, HL_GEN_1));
    hl_sb_gc_end(sb, 1, 0);
    /* GC 2 never ends; inside it: a kind, a destroy and a create (against the promise). */
    hl_sb_gc_start(sb, 2, 0, FALSE, 2);
    hl_sb_handle_kind(sb, 2, 0x10, HL_HANDLE_STRONG);
    hl_sb_handle_destroyed(sb, 0x10, 1);
    hl_sb_handle_created(sb, 0x20, 1, 1);
    hl_sb_gc_start(sb, 3, 0, FALSE, 2);
    hl_sb_gc_end(sb, 3, 0);
    hl_sb_handle_destroyed(sb, 0x20, 3);
    hl_sb_handle_created(sb, 0x30, 1, 3);
    hl_sb_handle_created(sb, 0x30, 1, 3); /* the destroy of the first was lost */
    hl_sb_run_end(sb, 3);
    CHECK(hl_sb_write_db(sb, p, NULL, NULL, &error));
    CHECK_NO_ERROR(error);
    hl_sb_free(sb);
    sqlite3 *db = db_open(p);
    CHECK_ROWS(db, SQL_HANDLES,
               "1|16|strong|1|0|1\n2|32|unknown|1|1|3\n3|48|unknown|1|3|3\n4|48|unknown|1|3|NULL\n");
    CHECK_ROWS(db, "SELECT name, value FROM counters WHERE name IN ('gcs_discarded_incomplete',"
                   " 'writer_anomalies', 'handles_closed_by_reuse') ORDER BY name",
               /* the gap 1 -> 3; the lost destroy is a closing by reuse */
               "gcs_discarded_incomplete|1\nhandles_closed_by_reuse|1\nwriter_anomalies|1\n");
    sqlite3_close(db);
    tmp_dir_free(dir);
}

/* CHECKPOINT records become rows of checkpoints in the order sent, with their GC count, time
 * and thread; one sent inside a GC that never ends is kept (replayed after the rollback). */
static void test_checkpoints(void)
{
    char *dir = tmp_dir_new();
    g_autoptr(GError) error = NULL;
    g_autofree char *p = g_build_filename(dir, "c.db", NULL);
    hl_sb *sb = hl_sb_new();
    hl_sb_type(sb, 1, "A");
    hl_sb_checkpoint(sb, "start", 0, 7, 100);
    hl_sb_alloc(sb, 1, 1, 24, 7);
    hl_sb_gc_start(sb, 1, 0, FALSE, 2);
    hl_sb_checkpoint(sb, "in GC 1", 0, 8, 150);
    hl_sb_fate(sb, 1, 1, HL_FATE(HL_GEN_0, HL_GEN_1));
    hl_sb_gc_end(sb, 1, 0);
    hl_sb_checkpoint(sb, "caf\xC3\xA9", 1, 7, 200);
    hl_sb_gc_start(sb, 2, 0, FALSE, 2); /* never ends */
    hl_sb_checkpoint(sb, "lost GC", 1, 7, 300);
    hl_sb_gc_start(sb, 3, 0, FALSE, 2);
    hl_sb_gc_end(sb, 3, 0);
    hl_sb_checkpoint(sb, "end", 3, 9, 400);
    hl_sb_run_end(sb, 3);
    CHECK(hl_sb_write_db(sb, p, NULL, NULL, &error));
    CHECK_NO_ERROR(error);
    hl_sb_free(sb);
    sqlite3 *db = db_open(p);
    CHECK_ROWS(db, "SELECT id, name, gc, time_ns, thread FROM checkpoints ORDER BY id",
               "1|start|0|100|7\n2|in GC 1|0|150|8\n3|caf\xC3\xA9|1|200|7\n4|lost GC|1|300|7\n"
               "5|end|3|400|9\n");
    sqlite3_close(db);
    tmp_dir_free(dir);
}

/* One SNAPSHOT_REASON record: head (snapshot, count 0), then the reason as an hl_str. */
static void reason_record(hl_sb *sb, uint32_t snapshot, const char *text)
{
    GByteArray *b = g_byte_array_new();
    hl_snapshot_batch head = {.snapshot = snapshot};
    uint32_t len = (uint32_t)strlen(text);
    g_byte_array_append(b, (const guint8 *)&head, sizeof head);
    g_byte_array_append(b, (const guint8 *)&len, sizeof len);
    g_byte_array_append(b, (const guint8 *)text, len);
    hl_sb_record(sb, HL_REC_SNAPSHOT_REASON, b->data, b->len);
    g_byte_array_unref(b);
}

/* Snapshot triggers: the trigger's name and the SNAPSHOT_REASON inside its snapshot in the row
 * (schema 8); a snapshot of another policy has none; a reason outside its snapshot is an
 * anomaly, stored nowhere. */
static void test_snapshot_reasons(void)
{
    char *dir = tmp_dir_new();
    g_autoptr(GError) error = NULL;
    g_autofree char *p = g_build_filename(dir, "r.db", NULL);
    hl_sb *sb = hl_sb_new();
    hl_sb_type(sb, 1, "A");
    hl_sb_alloc(sb, 1, 1, 24, 7);
    hl_sb_gc_start(sb, 1, 2, FALSE, 2);
    hl_sb_fate(sb, 1, 1, HL_FATE(HL_GEN_0, HL_GEN_1));
    hl_sb_snapshot_start(sb, 1, 1, HL_SNAPSHOT_GEN2_GROWTH);
    reason_record(sb, 1, "gen2 41.2 MiB after GC 1, +63% since snapshot 2");
    hl_sb_snapshot_object(sb, 1, 1, HL_GEN_1, 0);
    hl_sb_snapshot_end(sb, 1, 1);
    hl_sb_gc_end(sb, 1, 0);
    reason_record(sb, 1, "outside its snapshot");
    hl_sb_gc_start(sb, 2, 2, TRUE, 2);
    hl_sb_snapshot_start(sb, 2, 2, HL_SNAPSHOT_INDUCED);
    hl_sb_snapshot_object(sb, 2, 1, HL_GEN_2, 0);
    hl_sb_snapshot_end(sb, 2, 2);
    hl_sb_gc_end(sb, 2, 0);
    hl_sb_gc_start(sb, 3, 0, FALSE, 2);
    hl_sb_snapshot_start(sb, 3, 3, HL_SNAPSHOT_TIME);
    reason_record(sb, 3, "every 30 s: 30.0 s since the last, snapshot 2");
    hl_sb_snapshot_object(sb, 3, 1, HL_GEN_2, 0);
    hl_sb_snapshot_end(sb, 3, 3);
    hl_sb_gc_end(sb, 3, 0);
    hl_sb_run_end(sb, 3);
    CHECK(hl_sb_write_db(sb, p, NULL, NULL, &error));
    CHECK_NO_ERROR(error);
    hl_sb_free(sb);
    sqlite3 *db = db_open(p);
    CHECK_ROWS(db, "SELECT snapshot, trigger, coalesce(reason, '-') FROM snapshots ORDER BY 1",
               "1|gen2-growth|gen2 41.2 MiB after GC 1, +63% since snapshot 2\n"
               "2|induced|-\n"
               "3|time|every 30 s: 30.0 s since the last, snapshot 2\n");
    CHECK_ROWS(db, "SELECT value FROM counters WHERE name = 'writer_anomalies'", "1\n");
    sqlite3_close(db);
    tmp_dir_free(dir);
}

/* GC_HANDLES_FREED inside GC g closes the handle's lifetime at g - 1 (GC g-1 was its last); a
 * later HANDLE_CREATED at the address opens a new lifetime without counting anything. Outside
 * its GC the record is an anomaly; in a GC that never ends it is rolled back with it. */
static void test_handles_freed_in_gc(void)
{
    char *dir = tmp_dir_new();
    g_autoptr(GError) error = NULL;
    g_autofree char *p = g_build_filename(dir, "f.db", NULL);
    hl_sb *sb = hl_sb_new();
    hl_sb_type(sb, 1, "A");
    hl_sb_alloc(sb, 1, 1, 24, 7);
    hl_sb_handle_created(sb, 0x10, 1, 0);
    hl_sb_handle_created(sb, 0x20, 1, 0);
    hl_sb_gc_start(sb, 1, 0, FALSE, 2);
    hl_sb_fate(sb, 1, 1, HL_FATE(HL_GEN_0, HL_GEN_1));
    hl_sb_handle_kind(sb, 1, 0x10, HL_HANDLE_WEAK);
    hl_sb_gc_end(sb, 1, 0);
    hl_sb_gc_start(sb, 2, 0, FALSE, 2);
    hl_sb_handle_freed(sb, 2, 0x10);
    hl_sb_gc_end(sb, 2, 0);
    hl_sb_handle_created(sb, 0x10, 1, 2); /* the address reused: no anomaly, no reuse count */
    hl_sb_gc_start(sb, 3, 0, FALSE, 2);
    hl_sb_handle_freed(sb, 2, 0x20); /* not the open GC: an anomaly, nothing closed */
    hl_sb_gc_end(sb, 3, 0);
    hl_sb_gc_start(sb, 4, 0, FALSE, 2);
    hl_sb_handle_freed(sb, 4, 0x20); /* GC 4 never ends: rolled back */
    hl_sb_run_end(sb, 4);
    CHECK(hl_sb_write_db(sb, p, NULL, NULL, &error));
    CHECK_NO_ERROR(error);
    hl_sb_free(sb);
    sqlite3 *db = db_open(p);
    CHECK_ROWS(db, SQL_HANDLES,
               "1|16|weak|1|0|1\n2|32|unknown|1|0|NULL\n3|16|unknown|1|2|NULL\n");
    CHECK_ROWS(db, "SELECT name, value FROM counters WHERE name IN ('writer_anomalies',"
                   " 'handles_closed_by_reuse') ORDER BY name",
               "handles_closed_by_reuse|0\nwriter_anomalies|1\n");
    sqlite3_close(db);
    tmp_dir_free(dir);
}

static const test_case cases[] = {
    {"golden_snapshot", test_golden_snapshot},
    {"snapshot_fields", test_snapshot_fields},
    {"snapshot_blocks", test_snapshot_blocks},
    {"golden_handles", test_golden_handles},
    {"snapshot_incomplete", test_snapshot_incomplete},
    {"snapshot_flags", test_snapshot_flags},
    {"handles_rollback", test_handles_rollback},
    {"checkpoints", test_checkpoints},
    {"snapshot_reasons", test_snapshot_reasons},
    {"handles_freed_in_gc", test_handles_freed_in_gc},
};

int main(int argc, char **argv)
{
    return test_cases_main(argc, argv, cases, G_N_ELEMENTS(cases), &failures);
}
