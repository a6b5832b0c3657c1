/* test_leaks_queries.c — every examples/queries/ .sql file run on the fixture
 * through SQLite.
 * Fixtures and usage: leaks_test.h.
 */
#include "tests/unit/query/leaks/leaks_test.h"

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
    {"example_queries", case_example_queries},
};

int main(int argc, char **argv)
{
    return leaks_test_main(argc, argv, cases, G_N_ELEMENTS(cases));
}
