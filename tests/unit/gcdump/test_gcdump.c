/* test_gcdump.c — the .gcdump reader, writer and import (gcdump/gcdump.h).
 *
 *  - a real file of dotnet-gcdump 10 (examples/AttachTarget after "leak 100"): read, its counts
 *    as `dotnet-gcdump report` prints them, imported: the 100 records held by the List
 *  - a graph written and read back: every type, node, size, child and address the same (sizes
 *    and child deltas over every length of the compressed integers, negative deltas)
 *  - every truncation of a written file, and every byte of it corrupted: an error, never a crash
 *    (the sanitizer build runs this too), and an import of neither leaves a file behind
 */
#include "gcdump/gcdump.h"
#include "tests/unit/common/check.h"
#include "wire/hl_wire.h"

#include <glib/gstdio.h>
#include <sqlite3.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char *workdir;

static int64_t sql_int(const char *db_path, const char *sql)
{
    sqlite3 *db = NULL;
    sqlite3_stmt *st = NULL;
    int64_t v = -1;
    if (sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK && sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int64(st, 0);
    else
        fprintf(stderr, "sql failed: %s: %s\n", sql, db ? sqlite3_errmsg(db) : "");
    sqlite3_finalize(st);
    sqlite3_close(db);
    return v;
}

static uint32_t count_type(const gcdump_graph *g, const char *name)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < g->n_nodes; i++)
        n += strcmp(g->types[g->node_type[i]].name, name) == 0;
    return n;
}

static void test_real_file(void)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(gcdump_graph) g = gcdump_graph_read(GCDUMP_FIXTURE, &error);
    CHECK(g != NULL);
    if (!g) {
        fprintf(stderr, "%s\n", error->message);
        return;
    }
    /* What `dotnet-gcdump report` prints for it: 80,076 GC Heap bytes, 532 GC Heap objects. */
    CHECK_INT(g->n_nodes, 532);
    CHECK_INT(g->total_size, 80076);
    CHECK_INT(g->meta.version, 10);
    CHECK_STR(g->meta.creation_tool, "dotnet-gcdump");
    CHECK(g->meta.is64bit);
    CHECK_INT(g->meta.n_count_multipliers, 0);
    CHECK_INT(count_type(g, "AttachTarget.LeakedRecord"), 100);
    CHECK_STR(g->types[g->node_type[g->root]].name, "[.NET Roots]");
    int64_t sum = 0;
    for (uint32_t i = 0; i < g->n_nodes; i++)
        sum += g->node_size[i];
    CHECK_INT(sum, g->total_size);

    g_autofree char *db = g_build_filename(workdir, "real.db", NULL);
    gcdump_import_summary s = {0};
    CHECK(gcdump_import(g, GCDUMP_FIXTURE, db, &s, &error));
    if (error) {
        fprintf(stderr, "%s\n", error->message);
        return;
    }
    CHECK_INT(s.bytes, 80076);
    CHECK_INT(sql_int(db, "SELECT count(*) FROM snapshot_contents WHERE snapshot = 1 AND "
                          "type = 'AttachTarget.LeakedRecord'"), 100);
    CHECK_INT(sql_int(db, "SELECT count(*) FROM snapshots WHERE trigger = 'import'"), 1);
    CHECK_INT(sql_int(db, "SELECT mode = 'import' FROM run"), 1);
    CHECK_INT(sql_int(db, "SELECT objects FROM snapshots"), (int64_t)s.objects);
    CHECK_INT(sql_int(db, "SELECT bytes FROM imports"), 30066);
    CHECK_INT(sql_int(db, "SELECT count(*) FROM imports WHERE creation_tool = 'dotnet-gcdump' AND "
                          "format_version = 10 AND sampled = 0"), 1);
    /* The holder: List<LeakedRecord> -> LeakedRecord[] -> the 100 records. */
    CHECK_INT(sql_int(db, "SELECT count(*) FROM snapshot_refs r JOIN snapshot_contents a ON "
                          "a.snapshot = 1 AND a.object_id = r.from_id JOIN snapshot_contents b "
                          "ON b.snapshot = 1 AND b.object_id = r.to_id WHERE r.snapshot = 1 AND "
                          "a.type = 'AttachTarget.LeakedRecord[]' AND "
                          "b.type = 'AttachTarget.LeakedRecord'"), 100);
    CHECK_INT(sql_int(db, "SELECT count(*) FROM snapshot_roots WHERE kind = 'stack'") > 0, 1);
    CHECK_INT(sql_int(db, "SELECT count(*) FROM snapshot_roots WHERE kind = 'handle'") > 0, 1);
    /* Refused: the database exists. */
    CHECK(!gcdump_import(g, GCDUMP_FIXTURE, db, NULL, NULL));
    CHECK_INT(sql_int(db, "SELECT count(*) FROM snapshots"), 1);
}

/* A graph of the layout dotnet-gcdump writes, with sizes and deltas of every encoded length. */
static gcdump_graph *graph_new(uint32_t n_objects)
{
    gcdump_graph *g = g_new0(gcdump_graph, 1);
    static const char *const names[] = {"UNDEFINED", "[.NET Roots]", "[local vars]",
                                        "[strong Handles]", "Big.Thing", "Small+Nested<A, B>[]",
                                        "Ünïcode.Typ€𝄞"};
    g->n_types = G_N_ELEMENTS(names);
    g->types = g_new0(gcdump_type, g->n_types);
    for (uint32_t t = 0; t < g->n_types; t++) {
        g->types[t].name = g_strdup(names[t]);
        g->types[t].size = t >= 4 ? 24 : 0;
        g->types[t].module = t >= 4 ? g_strdup("/x/Module.dll") : NULL;
    }
    g->n_nodes = 3 + n_objects;
    g->root = 0;
    g->node_type = g_new0(uint32_t, g->n_nodes);
    g->node_size = g_new0(uint32_t, g->n_nodes);
    g->node_address = g_new0(uint64_t, g->n_nodes);
    g->first_child = g_new0(uint64_t, g->n_nodes + 1);
    GArray *children = g_array_new(FALSE, FALSE, sizeof(uint32_t));
    uint32_t c;
    g->node_type[0] = 1;
    c = 1, g_array_append_val(children, c);
    c = 2, g_array_append_val(children, c);
    g->first_child[1] = children->len;
    g->node_type[1] = 2;
    c = 3, g_array_append_val(children, c);
    g->first_child[2] = children->len;
    g->node_type[2] = 3;
    c = g->n_nodes - 1, g_array_append_val(children, c);
    for (uint32_t i = 3; i < g->n_nodes; i++) {
        g->first_child[i] = children->len;
        g->node_type[i] = 4 + i % 3;
        /* 24 (the type's), then sizes of 1 to 5 encoded bytes */
        static const uint32_t sizes[] = {24, 40, 200, 70000, 9000000, 300000000, INT32_MAX};
        g->node_size[i] = sizes[i % G_N_ELEMENTS(sizes)];
        g->node_address[i] = 0x7f0000000000ull + (uint64_t)i * 64;
        g->total_size += g->node_size[i];
        for (uint32_t k = 0; k < i % 4; k++) {
            c = 3 + (i * 7919u + k * 104729u) % n_objects; /* back and forth, far and near */
            g_array_append_val(children, c);
        }
    }
    g->first_child[g->n_nodes] = children->len;
    g->children = (uint32_t *)(void *)g_array_free(children, FALSE);
    g->meta.version = 10;
    g->meta.is64bit = TRUE;
    g->meta.creation_tool = g_strdup("test");
    g->meta.process_name = g_strdup("proc");
    g->meta.process_id = 4242;
    g->meta.time_collected = INT64_C(639000000000000000);
    return g;
}

static char *write_graph(const gcdump_graph *g, const char *name, gsize *length)
{
    char *path = g_build_filename(workdir, name, NULL);
    FILE *f = fopen(path, "wb");
    g_autoptr(GError) error = NULL;
    CHECK(f != NULL && gcdump_graph_write(g, f, path, &error));
    if (f)
        fclose(f);
    struct stat st;
    *length = stat(path, &st) == 0 ? (gsize)st.st_size : 0;
    return path;
}

static void test_round_trip(void)
{
    g_autoptr(gcdump_graph) g = graph_new(5000);
    gsize length;
    g_autofree char *path = write_graph(g, "round.gcdump", &length);
    g_autoptr(GError) error = NULL;
    g_autoptr(gcdump_graph) r = gcdump_graph_read(path, &error);
    CHECK(r != NULL);
    if (!r) {
        fprintf(stderr, "%s\n", error->message);
        return;
    }
    CHECK_INT(r->n_types, g->n_types);
    for (uint32_t t = 0; t < MIN(r->n_types, g->n_types); t++) {
        CHECK_STR(r->types[t].name, g->types[t].name);
        CHECK_INT(r->types[t].size, g->types[t].size);
        CHECK(g_strcmp0(r->types[t].module, g->types[t].module) == 0);
    }
    CHECK_INT(r->n_nodes, g->n_nodes);
    CHECK_INT(r->root, g->root);
    CHECK_INT(r->total_size, g->total_size);
    CHECK_INT(memcmp(r->node_type, g->node_type, g->n_nodes * 4), 0);
    CHECK_INT(memcmp(r->node_size, g->node_size, g->n_nodes * 4), 0);
    CHECK_INT(memcmp(r->node_address, g->node_address, g->n_nodes * 8), 0);
    CHECK_INT(memcmp(r->first_child, g->first_child, (g->n_nodes + 1) * 8), 0);
    CHECK_INT(memcmp(r->children, g->children, g->first_child[g->n_nodes] * 4), 0);
    CHECK_STR(r->meta.creation_tool, "test");
    CHECK_STR(r->meta.process_name, "proc");
    CHECK_INT(r->meta.process_id, 4242);
    CHECK_INT(r->meta.time_collected, g->meta.time_collected);
    CHECK_INT(r->meta.version, 10);

    /* Imported: the size buckets' suffix goes, roots by their node's kind. */
    g_autofree char *db = g_build_filename(workdir, "round.db", NULL);
    gcdump_import_summary s = {0};
    CHECK(gcdump_import(r, path, db, &s, NULL));
    CHECK_INT(s.objects, 5000);
    CHECK_INT(s.roots, 2);
    CHECK_INT(sql_int(db, "SELECT count(*) FROM snapshot_roots WHERE kind = 'stack' AND "
                          "object_id = 4"), 1);
    CHECK_INT(sql_int(db, "SELECT count(*) FROM snapshot_roots WHERE kind = 'handle'"), 1);
    CHECK_INT(sql_int(db, "SELECT sum(size) FROM snapshot_contents"), g->total_size);
    CHECK_INT(sql_int(db, "SELECT count(*) FROM snapshot_refs"), (int64_t)s.refs);
    CHECK_INT(sql_int(db, "SELECT count(*) FROM types WHERE name = 'Ünïcode.Typ€𝄞'"), 1);
    CHECK_INT(sql_int(db, "SELECT pid FROM run"), 4242);
}

static void test_size_buckets(void)
{
    static const char *const cases[][2] = {
        {"System.Byte[] (Bytes > 10K)", "System.Byte[]"},
        {"System.String (Bytes > 1K)", "System.String"},
        {"System.String (Bytes > 100M)", "System.String"},
        {"Foo (Bytes > 2K)", "Foo (Bytes > 2K)"},
        {"Plain", "Plain"},
    };
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        g_autofree char *base = gcdump_type_name_base(cases[i][0]);
        CHECK_STR(base, cases[i][1]);
    }
}

/* g_file_set_contents syncs to disk: thousands of times over is minutes. */
static gboolean put_file(const char *path, const char *data, gsize length)
{
    FILE *f = fopen(path, "wb");
    gboolean ok = f && fwrite(data, 1, length, f) == length;
    return f && fclose(f) == 0 && ok;
}

/* Every prefix of the file, and every byte of it changed: an error or a graph, never a crash;
 * an import of a graph read from a damaged file either works or leaves nothing. */
static void test_damage(const char *source, gboolean every_prefix)
{
    g_autofree char *data = NULL;
    gsize length = 0;
    CHECK(g_file_get_contents(source, &data, &length, NULL));
    g_autofree char *path = g_build_filename(workdir, "damaged.gcdump", NULL);
    uint32_t failed = 0, tries = 0;
    for (gsize cut = 0; cut < length; cut += every_prefix ? 1 : 1 + cut / 64) {
        g_autoptr(GError) error = NULL;
        CHECK(put_file(path, data, cut));
        g_autoptr(gcdump_graph) g = gcdump_graph_read(path, &error);
        tries++;
        if (g || !error || error->code != GCDUMP_ERROR_FORMAT || strchr(error->message, '\n')) {
            failed++;
            if (failed < 5)
                fprintf(stderr, "prefix of %zu bytes: %s\n", cut,
                        g ? "read as whole" : error ? error->message : "no error");
        }
    }
    CHECK_INT(failed, 0);
    uint32_t imported = 0;
    for (gsize at = 0; at < length; at += 1 + at / 256) {
        char keep = data[at];
        data[at] = (char)(keep ^ (at % 3 == 0 ? 0xff : 0x41));
        CHECK(put_file(path, data, length));
        data[at] = keep;
        g_autoptr(GError) error = NULL;
        g_autoptr(gcdump_graph) g = gcdump_graph_read(path, &error);
        if (!g) {
            CHECK(error && error->code == GCDUMP_ERROR_FORMAT && !strchr(error->message, '\n'));
            continue;
        }
        if (imported++ >= 4) /* the first few readable ones: each import syncs a database */
            continue;
        g_autofree char *db = g_build_filename(workdir, "damaged.db", NULL);
        g_autoptr(GError) import_error = NULL;
        if (gcdump_import(g, path, db, NULL, &import_error))
            CHECK(g_unlink(db) == 0);
        else
            CHECK(!g_file_test(db, G_FILE_TEST_EXISTS));
    }
    (void)tries;
}

/* Not a regular file: refused without being opened (a FIFO would wait for a writer). */
static void test_not_regular(void)
{
    g_autofree char *fifo = g_build_filename(workdir, "fifo.gcdump", NULL);
    g_autoptr(GError) error = NULL;
    CHECK(mkfifo(fifo, 0600) == 0);
    CHECK(gcdump_graph_read(fifo, &error) == NULL);
    CHECK(error && error->code == GCDUMP_ERROR_IO && strstr(error->message, "not a regular file"));
    g_clear_error(&error);
    CHECK(gcdump_graph_read(workdir, &error) == NULL);
    CHECK(error && error->code == GCDUMP_ERROR_IO);
}

int main(void)
{
    /* On tmpfs when there is one: each import syncs its database some 26 times, seconds on a
     * loaded disk. */
    workdir = g_file_test("/dev/shm", G_FILE_TEST_IS_DIR) ? g_strdup("/dev/shm/test_gcdump-XXXXXX")
                                                          : g_build_filename(g_get_tmp_dir(),
                                                                             "test_gcdump-XXXXXX",
                                                                             NULL);
    if (!g_mkdtemp(workdir))
        return 2;
    test_size_buckets();
    test_not_regular();
    test_real_file();
    test_round_trip();
    test_damage(GCDUMP_FIXTURE, TRUE);
    {
        g_autoptr(gcdump_graph) g = graph_new(300);
        gsize length;
        g_autofree char *path = write_graph(g, "small.gcdump", &length);
        test_damage(path, TRUE);
    }
    g_autofree char *rm = g_strdup_printf("rm -rf '%s'", workdir);
    if (system(rm) != 0)
        failures++;
    g_free(workdir);
    if (failures)
        fprintf(stderr, "%d checks failed\n", failures);
    return failures ? 1 : 0;
}
