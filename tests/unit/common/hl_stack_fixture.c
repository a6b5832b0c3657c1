/* hl_stack_fixture.c — allocation samples and stacks for test recordings (hl_stack_fixture.h). */
#include "tests/unit/common/hl_stack_fixture.h"

#include <sqlite3.h>

static const char samples_sql[] =
    "INSERT INTO frames (id, name) VALUES (1, 'App.Program.Main'), (2, 'App.Program.Run'),\n"
    "  (3, 'App.Tree.Build'), (4, 'App.Tree.NewNode'), (5, 'App.Names.Make'),\n"
    "  (6, 'App.Cache.Fill'), (7, '[native]');\n"
    "INSERT INTO stacks (id, depth) VALUES (1, 4), (2, 3), (3, 3), (4, 2), (5, 1);\n"
    "INSERT INTO stack_frames (stack_id, position, frame_id) VALUES\n"
    "  (1, 0, 4), (1, 1, 3), (1, 2, 2), (1, 3, 1),\n"
    "  (2, 0, 5), (2, 1, 2), (2, 2, 1),\n"
    "  (3, 0, 5), (3, 1, 6), (3, 2, 1),\n"
    "  (4, 0, 6), (4, 1, 1),\n"
    "  (5, 0, 7);\n"
    /* %d: link the objects (or NULL) */
    "INSERT INTO alloc_samples (gc, type_id, thread, heap, size, stack_id, object_id, est_count,"
    " est_bytes) VALUES\n"
    "  (1, 1, 100, 0, 64, 1, CASE WHEN %d THEN 1 END, 1000, 64000),\n"
    "  (1, 1, 100, 0, 64, 1, CASE WHEN %d THEN 2 END, 1000, 64000),\n"
    "  (1, 2, 100, 0, 32, 2, CASE WHEN %d THEN 3 END, 3000, 96000),\n"
    "  (1, 2, 100, 0, 32, 2, NULL, 3000, 96000),\n"
    "  (1, 2, 100, 0, 32, 3, NULL, 2000, 64000),\n"
    "  (1, 3, 100, 0, 1000, 4, CASE WHEN %d THEN 4 END, 10, 10000),\n"
    "  (2, 2, 100, 0, 32, 2, NULL, 1000, 32000),\n"
    "  (2, 2, 100, 0, 32, 5, NULL, 500, 16000),\n"
    "  (4, 1, NULL, 0, 64, NULL, NULL, 100, 6400);\n"
    "INSERT INTO sampling (id, source, mean_distance_bytes, biased, samples, samples_dropped)\n"
    "  VALUES (1, 'AllocationSampled', 102400, 0, 9, %lld);\n";

static gboolean exec_on(const char *path, const char *sql, GError **error)
{
    sqlite3 *db = NULL;
    gboolean ok = sqlite3_open(path, &db) == SQLITE_OK &&
                  sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK;
    if (!ok)
        g_set_error(error, G_FILE_ERROR, G_FILE_ERROR_FAILED, "%s: %s", path,
                    db ? sqlite3_errmsg(db) : "out of memory");
    sqlite3_close(db);
    return ok;
}

gboolean hl_stack_fixture_add(const char *path, gboolean link_objects, int64_t dropped,
                              GError **error)
{
    int link = link_objects ? 1 : 0;
    g_autofree char *sql = g_strdup_printf(samples_sql, link, link, link, link, (long long)dropped);
    g_autofree char *all = g_strconcat("BEGIN;\n", sql, "COMMIT;\n", NULL);
    return exec_on(path, all, error);
}
