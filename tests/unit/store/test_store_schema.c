/* test_store_schema.c — the schema a new recording gets and the views that read it: the
 * golden recording's views, the generation changes a writer that never finished leaves, the
 * TEMP virtual table `objects`, and a damaged packed row read as damage, never as data.
 *
 * Usage: test_store_schema <case>|all   (ctest runs each case as store.<case>).
 * What the store's tests share: store_test.h.
 */
#define _GNU_SOURCE
#include "tests/unit/store/store_test.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

static void test_schema(void)
{
    char *dir = tmp_dir_new();
    g_autoptr(GError) error = NULL;
    g_autofree char *path = g_build_filename(dir, "empty.db", NULL);
    store_writer *w = store_writer_create(path, "cmd", &error);
    CHECK_NO_ERROR(error);
    CHECK(w != NULL);
    CHECK(db_int(w->db, "PRAGMA cache_size") == -4096); /* the writer appends (store_schema.c) */
    CHECK(db_int(w->db, "PRAGMA synchronous") == 0);   /* OFF: store.no_sync */
    store_summary sum;
    CHECK(store_writer_finish(w, &sum, &error));
    CHECK_NO_ERROR(error);
    CHECK(!sum.connected && !sum.complete && sum.gcs == 0);

    struct stat st;
    CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600);
    g_autofree char *wal = g_strconcat(path, "-wal", NULL);
    CHECK(access(wal, F_OK) != 0); /* finish leaves one self-contained file */

    sqlite3 *db = store_db_open_readonly(path, &error);
    CHECK_NO_ERROR(error);
    CHECK(db != NULL);
    /* one thread's connection: no mutex taken at every sqlite3_column_* (SQLITE_OPEN_NOMUTEX) */
    CHECK(sqlite3_threadsafe() == 0 || sqlite3_db_mutex(db) == NULL);
    CHECK(db_int(db, "PRAGMA application_id") == STORE_APPLICATION_ID);
    CHECK(db_int(db, "PRAGMA user_version") == STORE_SCHEMA_VERSION);
    CHECK(db_int(db, "PRAGMA page_size") == 8192); /* half the WAL's writes (store_schema.c) */
    CHECK_ROWS(db, "SELECT type, name FROM sqlite_schema WHERE name NOT LIKE 'sqlite_%' ORDER BY type, name",
               "index|handles_by_handle_id\n"
               "index|snapshot_blocks_by_id\n"
               "index|snapshot_blocks_by_snapshot\n"
               "index|snapshot_roots_by_object\n"
               "table|alloc_counts\n"
               "table|alloc_samples\n"
               "table|checkpoints\n"
               "table|counters\n"
               "table|fields\n"
               "table|frames\n"
               "table|gc_generations\n"
               "table|gcs\n"
               "table|generation_changes\n"
               "table|handles\n"
               "table|object_chunks\n"
               "table|object_deaths\n"
               "table|object_generation_rows\n"
               "table|root_methods\n"
               "table|run\n"
               "table|sampling\n"
               "table|snapshot_blocks\n"
               "table|snapshot_collections\n"
               "table|snapshot_roots\n"
               "table|snapshot_statics\n"
               "table|snapshot_strings\n"
               "table|snapshots\n"
               "table|stack_frames\n"
               "table|stacks\n"
               "table|statics\n"
               "table|threads\n"
               "table|types\n"
               "table|unrecorded_processes\n"
               "view|allocation_estimates_by_type\n"
               "view|allocations_by_type\n"
               "view|allocations_by_type_thread\n"
               "view|allocations_estimated_by_type_thread\n"
               "view|gc_summary\n"
               "view|generation_change_rows\n" /* no changes: nothing to build */
               "view|live_objects\n"
               "view|object_death_rows\n" /* the packed objects: nothing expanded yet */
               "view|object_generations\n"
               "view|object_lifetimes\n"
               "view|objects\n"
               "view|pinned_handles_per_gc\n"
               "view|snapshot_contents\n"
               "view|snapshot_handles\n"
               "view|snapshot_objects\n"
               "view|snapshot_ref_fields\n"
               "view|snapshot_refs\n"
               "view|stack_folded\n"
               "view|stack_text\n"
               "view|strong_handles_never_freed\n"
               "view|survivors_by_generation\n");
    CHECK_ROWS(db, "SELECT id, command, status, exit_status, flags FROM run", "1|cmd|no-data|NULL|NULL\n");
    /* Every view compiles and is empty. */
    CHECK(db_int(db, "SELECT (SELECT count(*) FROM gc_summary) + (SELECT count(*) FROM allocations_by_type)"
                     " + (SELECT count(*) FROM allocations_by_type_thread) + (SELECT count(*) FROM alloc_counts)"
                     " + (SELECT count(*) FROM live_objects) + (SELECT count(*) FROM survivors_by_generation)"
                     " + (SELECT count(*) FROM object_lifetimes) + (SELECT count(*) FROM snapshot_contents)"
                     " + (SELECT count(*) FROM snapshot_handles) + (SELECT count(*) FROM strong_handles_never_freed)"
                     " + (SELECT count(*) FROM pinned_handles_per_gc)"
                     " + (SELECT count(*) FROM allocations_estimated_by_type_thread)") == 0);
    /* The first read expands the packed objects, none here: `objects` becomes the table. */
    CHECK(store_history_pending(db));
    CHECK(store_history_build_file(path, NULL, NULL, &error));
    CHECK_NO_ERROR(error);
    CHECK(!store_history_pending(db));
    CHECK_ROWS(db, "SELECT type, name FROM sqlite_schema WHERE name IN ('objects', 'object_death_rows')",
               "table|objects\n");
    CHECK(db_int(db, "SELECT count(*) FROM objects") + db_int(db, "SELECT count(*) FROM object_lifetimes") == 0);
    sqlite3_close(db);

    /* `heaplens record` adds the .NET processes that declined, after the writer; a file
     * recorded before the table existed gets it. */
    store_unrecorded declined[] = {{12, "dotnet run"}, {13, NULL}};
    CHECK(store_db_unrecorded_add(path, declined, 2, &error));
    CHECK_NO_ERROR(error);
    CHECK(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL) == SQLITE_OK);
    CHECK_ROWS(db, "SELECT pid, command FROM unrecorded_processes", "12|dotnet run\n13|\n");
    CHECK(sqlite3_exec(db, "DROP TABLE unrecorded_processes", NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(db);
    CHECK(store_db_unrecorded_add(path, declined, 1, &error));
    CHECK_NO_ERROR(error);
    db = store_db_open_readonly(path, &error);
    CHECK(db != NULL);
    CHECK_ROWS(db, "SELECT pid, command FROM unrecorded_processes", "12|dotnet run\n");
    sqlite3_close(db);
    tmp_dir_free(dir);
}

static void test_golden_views(void)
{
    char *dir = tmp_dir_new();
    g_autofree char *path = golden_db(dir, FALSE, NULL);
    sqlite3 *db = db_open(path);

    CHECK_ROWS(db, "SELECT gc, object_id, type, size, generation, thread FROM live_objects ORDER BY gc, object_id",
               "1|1|System.String|32|1|100\n"
               "1|2|System.Byte[]|100000|3|100\n"
               "1|4|System.String|40|1|100\n"
               "1|6|System.Byte[]|64|4|101\n"
               "2|1|System.String|32|2|100\n"
               "2|2|System.Byte[]|100000|3|100\n"
               "2|6|System.Byte[]|64|4|101\n"
               "2|7|System.String|32|1|100\n"
               "2|9|System.String|48|1|100\n"
               "3|1|System.String|32|2|100\n"
               "3|6|System.Byte[]|64|4|101\n"
               "3|9|System.String|48|2|100\n"
               "3|10|App.Node|24|1|100\n");
    CHECK_ROWS(db, "SELECT * FROM survivors_by_generation WHERE gc = 3 ORDER BY bytes DESC",
               "3|2|System.String|2|80|0\n"
               "3|4|System.Byte[]|1|64|0\n"
               "3|1|App.Node|1|24|0\n");
    CHECK_ROWS(db, "SELECT * FROM survivors_by_generation WHERE gc = 2 ORDER BY generation, type",
               "2|1|System.String|2|80|0\n"
               "2|2|System.String|1|32|0\n"
               "2|3|System.Byte[]|1|100000|0\n"
               "2|4|System.Byte[]|1|64|0\n");
    CHECK_ROWS(db, "SELECT * FROM allocations_by_type ORDER BY bytes DESC",
               "System.Byte[]|2|100064\n"
               "System.String|6|200\n"
               "App.Node|5|120\n");
    CHECK_ROWS(db, "SELECT * FROM gc_summary WHERE gc = 1",
               "1|0|unknown|0|1|1010000000|1011000000|1020000|72|72|7|4|0|0|0|NULL|NULL|NULL|"
               "1000|0|200|72|300|300|100000|100000|64|64\n");
    CHECK_ROWS(db, "SELECT gc, gen0_before, poh_after FROM gc_summary WHERE gc > 1 ORDER BY gc",
               "2|0|0\n3|0|0\n");
    CHECK_ROWS(db,
               "SELECT id, type, thread_name, heap, first_gc, died_gc, gcs_survived, final_generation"
               " FROM object_lifetimes ORDER BY id",
               "1|System.String|Main|0|1|NULL|3|2\n"
               "2|System.Byte[]|Main|3|1|3|2|3\n"
               "4|System.String|Main|0|1|2|1|1\n"
               "6|System.Byte[]|NULL|4|1|NULL|3|4\n"
               "7|System.String|Main|0|2|3|1|1\n"
               "9|System.String|Main|0|2|NULL|2|2\n"
               "10|App.Node|Main|0|3|NULL|1|1\n");
    /* Allocations per type and thread: every allocation, survivors of their first GC apart. */
    CHECK_ROWS(db, "SELECT * FROM allocations_by_type_thread ORDER BY type, thread",
               "App.Node|100|Main|2|48|1|24\n"
               "App.Node|101|NULL|2|48|0|0\n"
               "App.Node|102|NULL|1|24|0|0\n"
               "System.Byte[]|100|Main|1|100000|1|100000\n"
               "System.Byte[]|101|NULL|1|64|1|64\n"
               "System.String|100|Main|6|200|4|152\n");
    /* The per-GC views are cheap with a gc filter: it reaches the key (from_gc, object_id). */
    g_autofree char *plan = db_rows(db, "EXPLAIN QUERY PLAN SELECT * FROM live_objects WHERE gc = 3");
    CHECK(strstr(plan, "USING PRIMARY KEY (from_gc<?)") != NULL);
    sqlite3_close(db);
    tmp_dir_free(dir);
}

/* A writer that never finished (killed, or still recording) leaves the generation changes as
 * the GCs wrote them: the views derive the same history from them as from the rows built at the
 * end. Read here through a second connection while the writer holds the file, like a reader
 * during a recording. */
static void test_derived_views(void)
{
    char *dir = tmp_dir_new();
    g_autoptr(GError) error = NULL;
    g_autofree char *finished = golden_db(dir, FALSE, NULL);
    g_autofree char *path = g_build_filename(dir, "recording.db", NULL);
    hl_sb *sb = golden_build(NULL, FALSE);
    size_t len;
    hl_sb_bytes(sb, &len);
    int fd = hl_sb_memfd(sb, len);
    store_writer *w = store_writer_create(path, "recording", &error);
    CHECK_NO_ERROR(error);
    CHECK(store_writer_ingest_fd(w, fd, &error));
    CHECK_NO_ERROR(error);

    static const char *const queries[] = {
        SQL_GENERATIONS,
        "SELECT id, type, thread_name, heap, first_gc, died_gc, gcs_survived, final_generation"
        " FROM object_lifetimes ORDER BY id",
        "SELECT gc, object_id, type, size, generation, thread FROM live_objects"
        " ORDER BY gc, object_id",
        "SELECT * FROM survivors_by_generation ORDER BY gc, generation, type",
    };
    sqlite3 *db = db_open(path);
    sqlite3 *done = db_open(finished);
    CHECK(db_int(db, "SELECT count(*) FROM object_generation_rows") == 0);
    /* Every row's change is there (and more: a promotion of an object without a row): the
     * first generations with the objects (schema 10), the promotions in generation_changes. */
    CHECK(db_int(db, "SELECT (SELECT sum(count) FROM object_chunks) +"
                     " (SELECT sum(count) FROM generation_changes)") >= 9);
    CHECK(db_int(db, "SELECT sum(count) FROM generation_changes") <
          db_int(db, "SELECT sum(count) FROM object_chunks"));
    CHECK_ROWS(db, SQL_GENERATIONS, golden_generations);
    for (size_t i = 0; i < G_N_ELEMENTS(queries); i++) {
        g_autofree char *want = db_rows(done, queries[i]);
        CHECK_ROWS(db, queries[i], want);
    }
    CHECK(db_int(done, "SELECT count(*) FROM generation_changes") == 0);
    /* A join on the derived objects.id reaches an index built for the query, not a scan of
     * every object per row (the view's columns have INTEGER affinity, like the table's). */
    static const char *const joins[] = {
        "SELECT * FROM snapshot_contents WHERE snapshot = 1",
        "SELECT * FROM strong_handles_never_freed",
        "SELECT so.object_id, o.size FROM snapshot_objects so LEFT JOIN objects o"
        " ON o.id = so.object_id WHERE so.snapshot = 1",
    };
    for (size_t i = 0; i < G_N_ELEMENTS(joins); i++) {
        g_autofree char *sql = g_strconcat("EXPLAIN QUERY PLAN ", joins[i], NULL);
        g_autofree char *plan = db_rows(db, sql);
        if (strstr(plan, "AUTOMATIC COVERING INDEX (id=?)") == NULL) {
            fprintf(stderr, "%s\n%s", joins[i], plan);
            failures++;
        }
    }
    /* No view sorts the packed entries by type (stop 24: schema 11's implied sizes did, a
     * second time): the sorts left are the running sums' by row and key (objects: its
     * chunks' and its deaths'), and the generations' window by object. Schema 11's views
     * had 3, 1, 6 and 9. */
    static const struct {
        const char *sql;
        int sorts;
    } unsorted[] = {
        {"SELECT * FROM objects", 2},
        {"SELECT * FROM object_death_rows", 1},
        {"SELECT * FROM object_generations", 5},
        {"SELECT * FROM object_lifetimes", 7},
    };
    for (size_t i = 0; i < G_N_ELEMENTS(unsorted); i++) {
        g_autofree char *sql = g_strconcat("EXPLAIN QUERY PLAN ", unsorted[i].sql, NULL);
        g_autofree char *plan = db_rows(db, sql);
        int sorts = 0;
        for (const char *p = plan; (p = strstr(p, "TEMP B-TREE FOR ORDER BY")) != NULL; p++)
            sorts++;
        if (sorts != unsorted[i].sorts) {
            fprintf(stderr, "%s: %d sorts, not %d\n%s", unsorted[i].sql, sorts,
                    unsorted[i].sorts, plan);
            failures++;
        }
    }
    CHECK(store_db_objects_count(db) == db_int(db, "SELECT count(*) FROM objects"));
    CHECK(store_db_objects_count(db) == db_int(done, "SELECT count(*) FROM objects"));
    CHECK(store_db_objects_count(done) == db_int(done, "SELECT count(*) FROM objects"));
    CHECK(!store_history_pending(db)); /* still recording: nothing to build */
    sqlite3_close(db);

    /* Finished, it keeps the changes (the end of a recording builds nothing) and answers the
     * same; the history is pending until a reader builds it. */
    CHECK(store_writer_finish(w, NULL, &error));
    CHECK_NO_ERROR(error);
    db = db_open(path);
    CHECK(store_history_pending(db));
    CHECK(db_int(db, "SELECT count(*) FROM object_generation_rows") == 0);
    for (size_t i = 0; i < G_N_ELEMENTS(queries); i++) {
        g_autofree char *want = db_rows(done, queries[i]);
        CHECK_ROWS(db, queries[i], want);
    }
    /* Built (through another connection while this one stays open), it holds the rows; a
     * second build finds nothing to do. */
    CHECK(store_history_build_file(path, NULL, NULL, &error));
    CHECK_NO_ERROR(error);
    CHECK(!store_history_pending(db));
    CHECK_ROWS(db, SQL_GENERATIONS, golden_generations);
    /* Each object's first generation is in its objects row; only the later ones are rows. */
    CHECK_ROWS(db, "SELECT object_id, generation, from_gc, until_gc FROM object_generation_rows"
                   " ORDER BY object_id, from_gc",
               "1|2|2|NULL\n9|2|3|NULL\n");
    CHECK_ROWS(db, "SELECT id, first_generation, next_gc FROM objects ORDER BY id",
               "1|1|2\n2|3|NULL\n4|1|NULL\n6|4|NULL\n7|1|NULL\n9|1|3\n10|1|NULL\n");
    CHECK(db_int(db, "SELECT count(*) FROM generation_changes") == 0);
    for (size_t i = 0; i < G_N_ELEMENTS(queries); i++) {
        g_autofree char *want = db_rows(done, queries[i]);
        CHECK_ROWS(db, queries[i], want);
    }
    CHECK(store_history_build_file(path, NULL, NULL, &error));
    CHECK_NO_ERROR(error);
    CHECK_ROWS(db, "SELECT count(*) FROM object_generation_rows", "2\n");
    sqlite3_close(db);
    sqlite3_close(done);

    /* Schema 3 wrote the ids themselves, not gaps: such a file still builds the same history.
     * Before schema 10 the first generations were changes too, each before its GC's promotions:
     * moved back there from object_chunks.generation, in that order. */
#define FIRST_GENERATIONS_AS_CHANGES                                                              \
    "CREATE TEMP TABLE changes AS SELECT gc, generation, count, ids,"                            \
    " 0 AS kind, rowid AS r FROM generation_changes WHERE 0;"                                    \
    "INSERT INTO changes SELECT k.gc, k.generation, k.count,"                                    \
    " (SELECT json_group_array(j.value ->> 0) FROM json_each(k.objects) j),"                     \
    " 0, k.rowid FROM object_chunks k;"                                                          \
    "INSERT INTO changes SELECT gc, generation, count, ids, 1, rowid FROM generation_changes;"    \
    "DELETE FROM generation_changes;"                                                            \
    "INSERT INTO generation_changes (gc, generation, count, ids)"                                \
    " SELECT gc, generation, count, ids FROM changes ORDER BY gc, kind, r;"
    hl_sb *old = golden_build(NULL, FALSE);
    g_autofree char *schema3 = g_build_filename(dir, "schema3.db", NULL);
    CHECK(hl_sb_write_db(old, schema3, "schema3", NULL, &error));
    CHECK_NO_ERROR(error);
    hl_sb_free(old);
    CHECK(sqlite3_open(schema3, &db) == SQLITE_OK);
    CHECK(sqlite3_exec(db,
                       FIRST_GENERATIONS_AS_CHANGES
                       "UPDATE generation_changes SET ids = (SELECT json_group_array(id) FROM "
                       "(SELECT sum(j.value) OVER (ORDER BY j.key) AS id "
                       "FROM json_each(generation_changes.ids) j));"
                       "PRAGMA user_version = 3",
                       NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(db);
    CHECK(store_history_build_file(schema3, NULL, NULL, &error));
    CHECK_NO_ERROR(error);
    db = db_open(schema3);
    CHECK_ROWS(db, "SELECT object_id, generation, from_gc, until_gc FROM object_generation_rows"
                   " ORDER BY object_id, from_gc",
               golden_generations);
    sqlite3_close(db);

    /* Schema 5 to 9 packed the objects without their first generation (object_chunks had no
     * column `generation`: renamed away here, the views follow it): the build reads it from
     * generation_changes, and the rows are the same. */
    hl_sb *nine = golden_build(NULL, FALSE);
    g_autofree char *schema9 = g_build_filename(dir, "schema9.db", NULL);
    CHECK(hl_sb_write_db(nine, schema9, "schema9", NULL, &error));
    CHECK_NO_ERROR(error);
    hl_sb_free(nine);
    CHECK(sqlite3_open(schema9, &db) == SQLITE_OK);
    CHECK(sqlite3_exec(db,
                       FIRST_GENERATIONS_AS_CHANGES
                       "ALTER TABLE object_chunks RENAME COLUMN generation TO was_generation;"
                       "PRAGMA user_version = 9",
                       NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(db);
    CHECK(store_history_build_file(schema9, NULL, NULL, &error));
    CHECK_NO_ERROR(error);
    db = db_open(schema9);
    CHECK_ROWS(db, SQL_GENERATIONS, golden_generations);
    CHECK_ROWS(db, "SELECT id, first_generation, next_gc FROM objects ORDER BY id",
               "1|1|2\n2|3|NULL\n4|1|NULL\n6|4|NULL\n7|1|NULL\n9|1|3\n10|1|NULL\n");
    sqlite3_close(db);
#undef FIRST_GENERATIONS_AS_CHANGES

    /* A reader in the middle of a statement: the build cannot commit, gives up after its wait
     * and leaves the file as it was (the changes, and the views that derive the history). */
    hl_sb *again = golden_build(NULL, FALSE);
    g_autofree char *held = g_build_filename(dir, "held.db", NULL);
    CHECK(hl_sb_write_db(again, held, "held", NULL, &error));
    CHECK_NO_ERROR(error);
    hl_sb_free(again);
    db = db_open(held);
    sqlite3_stmt *reading = NULL;
    CHECK(sqlite3_prepare_v2(db, "SELECT id FROM objects", -1, &reading, NULL) == SQLITE_OK);
    CHECK(sqlite3_step(reading) == SQLITE_ROW);
    CHECK(!store_history_build_file(held, NULL, NULL, &error));
    CHECK(error != NULL && strstr(error->message, "locked") != NULL);
    g_clear_error(&error);
    sqlite3_finalize(reading);
    CHECK(store_history_pending(db));
    CHECK_ROWS(db, SQL_GENERATIONS, golden_generations);
    sqlite3_close(db);

    /* A damaged file is never written: each page's header overwritten in turn, the build
     * refuses every copy that quick_check finds damaged and leaves it byte-identical. */
    g_autofree char *clean = NULL;
    gsize file_len = 0;
    CHECK(g_file_get_contents(held, &clean, &file_len, NULL));
    guint page = (guint)(guint8)clean[16] << 8 | (guint8)clean[17];
    int refused = 0;
    for (gsize p = 1; page > 0 && p < file_len / page; p++) {
        g_autofree char *copy = g_memdup2(clean, file_len);
        memset(copy + p * page, 0xA5, 8);
        CHECK(g_file_set_contents(held, copy, (gssize)file_len, NULL));
        if (!store_history_build_file(held, NULL, NULL, &error)) {
            g_autofree char *after = NULL;
            gsize after_len = 0;
            CHECK(g_error_matches(error, STORE_ERROR, STORE_ERROR_DAMAGED));
            CHECK(g_file_get_contents(held, &after, &after_len, NULL));
            CHECK(after_len == file_len && memcmp(after, copy, file_len) == 0);
            refused++;
        }
        g_clear_error(&error);
    }
    CHECK(refused > 3);
    close(fd);
    hl_sb_free(sb);
    tmp_dir_free(dir);
}

/* The TEMP virtual table `objects` of heaplens' connections to a finished file whose rows are
 * not built (store_objview.c): the same rows as the file's view for every way a statement finds
 * them (by id, bounds of every kind and value type, a type, a scan, joins), the first of two
 * deaths of an object holding; dropped once the rows are built; damaged packed rows an error. */
static void test_objects_view(void)
{
    char *dir = tmp_dir_new();
    g_autoptr(GError) error = NULL;
    g_autofree char *path = g_build_filename(dir, "unbuilt.db", NULL);
    hl_sb *sb = golden_build(NULL, FALSE);
    CHECK(hl_sb_write_db(sb, path, "objects view", NULL, &error));
    CHECK_NO_ERROR(error);
    hl_sb_free(sb);
    /* a second, later death of object 4 (the first holds) and one of an id without a row */
    sqlite3 *rw = NULL;
    CHECK(sqlite3_open(path, &rw) == SQLITE_OK);
    CHECK(sqlite3_exec(rw, "INSERT INTO object_deaths (gc, count, ids) VALUES (4, 2, '[4,1]')",
                       NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(rw);

    static const char *const queries[] = {
        "SELECT * FROM objects",
        SQL_OBJECTS,
        "SELECT * FROM objects ORDER BY id DESC",
        "SELECT id, died_gc FROM objects WHERE id = 4",
        "SELECT id FROM objects WHERE id = '4'",
        "SELECT id FROM objects WHERE id = 4.0",
        "SELECT id FROM objects WHERE id = 4.5",
        "SELECT id FROM objects WHERE id = NULL",
        "SELECT id FROM objects WHERE id = -1",
        "SELECT id FROM objects WHERE id > 4",
        "SELECT id FROM objects WHERE id >= 4",
        "SELECT id FROM objects WHERE id < 7",
        "SELECT id FROM objects WHERE id <= 7",
        "SELECT id FROM objects WHERE id > 3.5 AND id < 9.5",
        "SELECT id FROM objects WHERE id BETWEEN 2 AND 9 ORDER BY id",
        "SELECT id FROM objects WHERE id < 'x'",
        "SELECT id FROM objects WHERE id > -5 AND id <= 1e300",
        "SELECT id FROM objects WHERE id < -5",
        "SELECT id, size FROM objects WHERE type_id = 2",
        "SELECT id FROM objects WHERE type_id = '2'",
        "SELECT id FROM objects WHERE type_id = 2 AND id > 1",
        "SELECT count(*), sum(size), total(died_gc) FROM objects",
        "SELECT a.id, b.id FROM objects a JOIN objects b ON b.id = a.id + 2 ORDER BY 1",
        "SELECT so.object_id, o.type_id, o.size FROM snapshot_objects so"
        " LEFT JOIN objects o ON o.id = so.object_id ORDER BY 1",
        "SELECT * FROM snapshot_contents ORDER BY 1, 2, 3",
    };
    sqlite3 *plain = db_open(path);         /* the file's view */
    sqlite3 *db = store_db_open_readonly(path, &error); /* heaplens': the virtual table */
    CHECK_NO_ERROR(error);
    CHECK(db != NULL);
    CHECK(db_int(db, "SELECT count(*) FROM temp.sqlite_master WHERE name = 'objects'") == 1);
    CHECK(db_int(plain, "SELECT count(*) FROM objects WHERE id = 4 AND died_gc = 2") == 1);
    for (size_t i = 0; i < G_N_ELEMENTS(queries); i++) {
        /* the view gives the rows in chunk order, the table and the virtual table in id order */
        g_autofree char *sql = strstr(queries[i], "ORDER BY")
                                   ? g_strdup(queries[i])
                                   : g_strconcat(queries[i], " ORDER BY 1", NULL);
        g_autofree char *want = db_rows(plain, sql);
        CHECK_ROWS(db, sql, want);
    }
    /* The same rows to C code (store_objects_view_memory: the snapshot loader's and inspect's
     * lookups by id, without a statement each): every id, in ascending order and back, the
     * first of two rows of one id as the table gives it; none on a plain connection. */
    store_objects_memory *memory = NULL, *none = (store_objects_memory *)&error;
    CHECK(store_objects_view_memory(plain, &none, &error) && none == NULL);
    CHECK(store_objects_view_memory(db, &memory, &error) && memory != NULL);
    CHECK_NO_ERROR(error);
    int64_t max_id = db_int(plain, "SELECT max(id) FROM objects");
    for (int pass = 0; memory && pass < 2; pass++) {
        for (int64_t i = 0; i <= max_id + 1; i++) {
            int64_t id = pass == 0 ? i : max_id + 1 - i, size = -1;
            uint32_t type_id = 0;
            g_autofree char *sql = g_strdup_printf("SELECT type_id, size FROM objects WHERE id = %"
                                                   PRId64 " ORDER BY rowid LIMIT 1", id);
            g_autofree char *want = db_rows(db, sql);
            g_autofree char *got =
                store_objects_memory_find(memory, (uint64_t)id, &type_id, &size)
                    ? g_strdup_printf("%" PRIu32 "|%" PRId64 "\n", type_id, size)
                    : g_strdup("");
            CHECK_STR(got, want);
        }
    }
    /* Built through another connection: dropped, and the file's table answers. */
    CHECK(store_history_build_file(path, NULL, NULL, &error));
    CHECK_NO_ERROR(error);
    CHECK(store_objects_view_detach(db));
    CHECK(db_int(db, "SELECT count(*) FROM temp.sqlite_master WHERE name = 'objects'") == 0);
    CHECK(store_objects_view_memory(db, &memory, &error) && memory == NULL); /* the table's */
    CHECK(db_int(db, "SELECT count(*) FROM objects WHERE first_generation IS NOT NULL") > 0);
    sqlite3_close(db);
    db = store_db_open_readonly(path, &error); /* built: nothing attached */
    CHECK_NO_ERROR(error);
    CHECK(db_int(db, "SELECT count(*) FROM temp.sqlite_master WHERE name = 'objects'") == 0);
    CHECK_ROWS(db, "SELECT id, died_gc FROM objects WHERE id = 4", "4|2\n");
    sqlite3_close(db);
    sqlite3_close(plain);

    /* Damaged packed rows: the statement fails, naming the row. */
    g_autofree char *bad = g_build_filename(dir, "damaged.db", NULL);
    sb = golden_build(NULL, FALSE);
    CHECK(hl_sb_write_db(sb, bad, "objects view", NULL, &error));
    CHECK_NO_ERROR(error);
    hl_sb_free(sb);
    CHECK(sqlite3_open(bad, &rw) == SQLITE_OK);
    CHECK(sqlite3_exec(rw, "UPDATE object_chunks SET objects = '[[1,2]]' WHERE rowid = 1", NULL,
                       NULL, NULL) == SQLITE_OK);
    sqlite3_close(rw);
    db = store_db_open_readonly(bad, &error);
    CHECK_NO_ERROR(error);
    sqlite3_stmt *st = NULL;
    CHECK(sqlite3_prepare_v2(db, "SELECT size FROM objects WHERE id = 1", -1, &st, NULL) ==
          SQLITE_OK);
    CHECK(sqlite3_step(st) == SQLITE_ERROR);
    CHECK(strstr(sqlite3_errmsg(db), "object_chunks row 1") != NULL);
    sqlite3_finalize(st);
    CHECK(!store_objects_view_memory(db, &memory, &error) && memory == NULL);
    CHECK(error && strstr(error->message, "object_chunks row 1") != NULL);
    g_clear_error(&error);
    sqlite3_close(db);
    /* damaged deaths: only a statement reading died_gc reads them, and fails */
    g_autofree char *bad_deaths = g_build_filename(dir, "damaged-deaths.db", NULL);
    sb = golden_build(NULL, FALSE);
    CHECK(hl_sb_write_db(sb, bad_deaths, "objects view", NULL, &error));
    CHECK_NO_ERROR(error);
    hl_sb_free(sb);
    CHECK(sqlite3_open(bad_deaths, &rw) == SQLITE_OK);
    CHECK(sqlite3_exec(rw, "UPDATE object_deaths SET ids = '[1,x]' WHERE rowid = 1", NULL, NULL,
                       NULL) == SQLITE_OK);
    sqlite3_close(rw);
    db = store_db_open_readonly(bad_deaths, &error);
    CHECK_NO_ERROR(error);
    CHECK(db_int(db, "SELECT size FROM objects WHERE id = 1") == 32);
    CHECK(sqlite3_prepare_v2(db, "SELECT died_gc FROM objects WHERE id = 1", -1, &st, NULL) ==
          SQLITE_OK);
    CHECK(sqlite3_step(st) == SQLITE_ERROR);
    CHECK(strstr(sqlite3_errmsg(db), "object_deaths row 1") != NULL);
    sqlite3_finalize(st);
    sqlite3_close(db);
    tmp_dir_free(dir);
}

/* A damaged packed row (a count that does not add up, text that is not what the writer writes,
 * a count far beyond the file) makes the first read fail with one line naming the row: nothing
 * reserved from the count, nothing written, the file still packed. */
static void test_packed_damage(void)
{
    static const char *const damage[] = {
        "UPDATE object_chunks SET count = count + 1 WHERE rowid = 1",
        "UPDATE object_chunks SET count = 4611686018427387904 WHERE rowid = 1",
        "UPDATE object_chunks SET objects = '[[1,2]]' WHERE rowid = 1",
        "UPDATE object_chunks SET objects = '[[1,2,3],[0,2,3]]', count = 2 WHERE rowid = 1",
        "UPDATE object_chunks SET objects = '[[99999999999999999999,1,1]]', count = 1 WHERE rowid = 1",
        "UPDATE object_chunks SET objects = '[[1,4294967296,1]]', count = 1 WHERE rowid = 1",
        "UPDATE object_chunks SET objects = '[[1,2,3] ]' WHERE rowid = 1",
        /* schema 11: no size where its type has no first object in the row before it, too few
         * or too many numbers */
        "UPDATE object_chunks SET objects = '[[1,2,3],[1,4]]', count = 2 WHERE rowid = 1",
        "UPDATE object_chunks SET objects = '[[1,2],[1,2,3]]', count = 2 WHERE rowid = 1",
        "UPDATE object_chunks SET objects = '[[1,2,3],[1]]', count = 2 WHERE rowid = 1",
        "UPDATE object_chunks SET objects = '[[1,2,3],[1,2,3,4]]', count = 2 WHERE rowid = 1",
        "UPDATE object_chunks SET objects = x'5b5b312c322c335d5d00' WHERE rowid = 1",
        "UPDATE object_chunks SET heap = 9 WHERE rowid = 1",
        "UPDATE object_chunks SET thread = -1 WHERE rowid = 1",
        "UPDATE object_chunks SET gc = -3 WHERE rowid = 1",
        "UPDATE object_chunks SET generation = 6 WHERE rowid = 1",
        "UPDATE object_chunks SET generation = 'x' WHERE rowid = 1",
        "UPDATE object_deaths SET ids = '[1,x]' WHERE rowid = 1",
        "UPDATE object_deaths SET count = 4611686018427387904 WHERE rowid = 1",
        "UPDATE generation_changes SET count = -1 WHERE rowid = 1",
    };
    char *dir = tmp_dir_new();
    g_autoptr(GError) error = NULL;
    g_autofree char *clean = g_build_filename(dir, "clean.db", NULL);
    hl_sb *sb = golden_build(NULL, FALSE);
    CHECK(hl_sb_write_db(sb, clean, "damage", NULL, &error));
    CHECK_NO_ERROR(error);
    hl_sb_free(sb);
    for (size_t i = 0; i < G_N_ELEMENTS(damage); i++) {
        g_autofree char *path = g_strdup_printf("%s/damaged-%zu.db", dir, i);
        file_copy(clean, path);
        sqlite3 *db = NULL;
        CHECK(sqlite3_open(path, &db) == SQLITE_OK);
        CHECK(sqlite3_exec(db, damage[i], NULL, NULL, NULL) == SQLITE_OK);
        CHECK(sqlite3_changes(db) == 1);
        int64_t chunks = db_int(db, "SELECT count(*) FROM object_chunks");
        CHECK(!store_history_build_file(path, NULL, NULL, &error));
        if (!g_error_matches(error, STORE_ERROR, STORE_ERROR_DAMAGED) ||
            strchr(error->message, '\n') != NULL || strstr(error->message, " is damaged (") == NULL ||
            (strstr(error->message, " row 1 ") == NULL &&
             strstr(error->message, " counts more ids than it holds") == NULL)) {
            fprintf(stderr, "%s: %s\n", damage[i], error ? error->message : "no error");
            failures++;
        }
        g_clear_error(&error);
        CHECK(store_history_pending(db));
        CHECK(db_int(db, "SELECT count(*) FROM object_chunks") == chunks);
        CHECK(db_int(db, "SELECT count(*) FROM object_generation_rows") == 0);
        sqlite3_close(db);
    }
    /* The clean file builds. */
    CHECK(store_history_build_file(clean, NULL, NULL, &error));
    CHECK_NO_ERROR(error);
    sqlite3 *db = db_open(clean);
    CHECK_ROWS(db, SQL_OBJECTS, golden_objects);
    sqlite3_close(db);
    tmp_dir_free(dir);
}

static const test_case cases[] = {
    {"schema", test_schema},
    {"golden_views", test_golden_views},
    {"packed_damage", test_packed_damage},
    {"objects_view", test_objects_view},
    {"derived_views", test_derived_views},
};

int main(int argc, char **argv)
{
    return test_cases_main(argc, argv, cases, G_N_ELEMENTS(cases), &failures);
}
