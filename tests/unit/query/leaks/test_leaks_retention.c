/* test_leaks_retention.c — `heaplens retention`: retained sizes by object, type and thread,
 * text and references, the stored retention tables and their reuse, --top, packed rows, and the
 * older forms of snapshots (schema 7, a retention table beside the blocks).
 * Fixtures and usage: leaks_test.h.
 */
#include "tests/unit/query/leaks/leaks_test.h"

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

    /* `snapshots` counts every root the runtime reported; a weak handle and a stack slot
     * holding null hold nothing alive: csc's retention said "399 roots" of a snapshot whose
     * `snapshots` row said 993, without a word */
    file_copy("graph.db", "r3w.db");
    fixture_sql("r3w.db", "INSERT INTO snapshot_roots (snapshot, object_id, kind, flags)"
                          " VALUES (4, NULL, 'stack', 0), (4, 1, 'handle', 2);"
                          "UPDATE snapshots SET roots = roots + 2 WHERE snapshot = 4");
    r = RUN("retention", "r3w.db", "--top", "1");
    CHECK_STR(r.out, "snapshot 4 (GC 4): 37 objects, 37 reachable from 4 roots (of 6; 2 weak or "
                     "holding no object of the snapshot), 12.8 KiB\n"
                     "retained  objects  shallow  object  type\n"
                     "12.3 KiB       26     32 B       1  App.Holder\n");
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

static const cli_test_case cases[] = {
    {"retention_objects", case_retention_objects},
    {"retention_table_beside_blocks", case_retention_table_beside_blocks},
    {"retention_one_thread", case_retention_one_thread},
    {"retention_types", case_retention_types},
    {"retention_text", case_retention_text},
    {"retention_refs_text", case_retention_refs_text},
    {"retention_reuse", case_retention_reuse},
    {"retention_top", case_retention_top},
    {"retention_packed", case_retention_packed},
    {"old_form", case_old_form},
};

int main(int argc, char **argv)
{
    return leaks_test_main(argc, argv, cases, G_N_ELEMENTS(cases));
}
