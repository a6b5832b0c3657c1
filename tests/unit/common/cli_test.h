/* cli_test.h — the harness of the unit tests that run the `heaplens` binary on fixture recordings
 * (tests/unit/cli, query/stacks, query/leaks): the binary and the work directory, checks of a run's exit
 * status, stdout and stderr, fixture files in the work directory, and the test program's main
 * loop (one case by name, or all). One test program per source file includes this. */
#ifndef HEAPLENS_TEST_CLI_TEST_H
#define HEAPLENS_TEST_CLI_TEST_H

#include "tests/unit/common/check.h"
#include "tests/unit/common/hl_stream_builder.h"
#include "tests/unit/common/run_heaplens.h"
#include "tests/unit/common/test_cases.h"

#include <glib.h>
#include <glib/gstdio.h>
#include <jansson.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *heaplens; /* the binary under test */
static char *workdir;        /* fixtures live here; commands run here (RUN) */

/* ---- checking runs ------------------------------------------------------------------ */

static inline void show_mismatch(const char *what, const char *expected, const char *actual)
{
    fprintf(stderr, "--- expected %s:\n%s--- actual %s:\n%s---\n", what, expected, what, actual);
}

/* Checks a run exactly: exit status, stdout (unless `out` is NULL) and stderr. */
static inline void expect_run(const char *file, int line, run_result r, int status,
                              const char *out, const char *err)
{
    gboolean ok = TRUE;
    if (r.status != status) {
        fprintf(stderr, "%s:%d: exit status %d, expected %d\n", file, line, r.status, status);
        ok = FALSE;
    }
    if (out && strcmp(r.out, out) != 0) {
        fprintf(stderr, "%s:%d: stdout differs\n", file, line);
        show_mismatch("stdout", out, r.out);
        ok = FALSE;
    }
    if (strcmp(r.err, err) != 0) {
        fprintf(stderr, "%s:%d: stderr differs\n", file, line);
        show_mismatch("stderr", err, r.err);
        ok = FALSE;
    }
    if (!ok)
        failures++;
    run_result_release(&r);
}

#define EXPECT(run, status, out, err) expect_run(__FILE__, __LINE__, (run), (status), (out), (err))

/* A successful JSON run: exit status 0, stdout one JSON document (and exactly `out` unless it is
 * NULL), stderr exactly `err`. Returns the document. When stdout is not JSON the case fails
 * here and the test exits: its checks of the document cannot run. */
static inline json_t *json_run(const char *file, int line, run_result r, const char *out,
                               const char *err)
{
    json_error_t jerr;
    json_t *doc = json_loads(r.out, 0, &jerr);
    if (!doc) {
        fprintf(stderr, "%s:%d: stdout is not JSON: %s (line %d)\n%s", file, line, jerr.text,
                jerr.line, r.out);
        failures++;
    }
    expect_run(file, line, r, 0, out, err);
    if (!doc)
        exit(1);
    return doc;
}

/* ---- fixtures -------------------------------------------------------------------------- */

static inline char *fixture_path(const char *name)
{
    return g_build_filename(workdir, name, NULL);
}

/* The bytes of work-directory file `name` (NULL when unreadable): to check a command left a file
 * as it was. */
static inline GBytes *fixture_bytes(const char *name)
{
    g_autofree char *path = fixture_path(name);
    g_autofree char *data = NULL;
    gsize len = 0;
    if (!g_file_get_contents(path, &data, &len, NULL))
        return NULL;
    return g_bytes_new_take(g_steal_pointer(&data), len);
}

/* Writes the recording `sb` describes through the real writer as `name`, then frees `sb`. */
static inline void fixture_write(hl_sb *sb, const char *name)
{
    g_autofree char *path = fixture_path(name);
    g_autoptr(GError) error = NULL;
    if (!hl_sb_write_db(sb, path, NULL, NULL, &error)) {
        fprintf(stderr, "cannot build fixture %s: %s\n", name, error->message);
        exit(2);
    }
    hl_sb_free(sb);
}

static inline void fixture_file(const char *name, const char *contents)
{
    g_autofree char *path = fixture_path(name);
    g_autoptr(GError) error = NULL;
    if (!g_file_set_contents(path, contents, -1, &error)) {
        fprintf(stderr, "cannot write %s: %s\n", name, error->message);
        exit(2);
    }
}

/* Runs `sql` on file `name` (creating it if need be); exits the test when it fails. */
static inline void fixture_sql(const char *name, const char *sql)
{
    g_autofree char *path = fixture_path(name);
    sqlite3 *db = NULL;
    char *message = NULL;
    if (sqlite3_open(path, &db) != SQLITE_OK ||
        sqlite3_exec(db, sql, NULL, NULL, &message) != SQLITE_OK) {
        fprintf(stderr, "cannot run on %s: %s\n%s\n", name, message ? message : sqlite3_errmsg(db),
                sql);
        exit(2);
    }
    sqlite3_close(db);
}

/* ---- main ------------------------------------------------------------------------------ */

typedef test_case cli_test_case; /* tests/unit/common/test_cases.h */

/* Removes the work directory and its files (made writable first: some cases take the write
 * permission away). */
static inline void workdir_remove(void)
{
    g_autoptr(GDir) dir = g_dir_open(workdir, 0, NULL);
    for (const char *name; dir && (name = g_dir_read_name(dir));) {
        g_autofree char *path = fixture_path(name);
        g_chmod(path, 0600);
        g_remove(path);
    }
    g_rmdir(workdir);
}

/* The body of a test program's main: makes a temporary work directory (heaplens-SUITE-XXXXXX),
 * builds the fixtures there, runs case `which` (or every case for "all"), then removes the
 * directory (HEAPLENS_TEST_KEEP=1 keeps it). Returns the program's exit status: 0 all passed,
 * 1 a check failed, 2 no such case or no work directory. */
static inline int cli_test_main(const char *suite, const char *which, const cli_test_case *cases,
                                size_t n_cases, void (*fixtures_build)(void))
{
    g_autoptr(GError) error = NULL;
    g_autofree char *template = g_strdup_printf("heaplens-%s-XXXXXX", suite);
    workdir = g_dir_make_tmp(template, &error);
    if (!workdir) {
        fprintf(stderr, "cannot make a temporary directory: %s\n", error->message);
        return 2;
    }
    fixtures_build();
    gboolean found = test_cases_run(which, cases, n_cases, &failures);
    if (g_getenv("HEAPLENS_TEST_KEEP"))
        fprintf(stderr, "fixtures kept in %s\n", workdir); /* for debugging */
    else
        workdir_remove();
    g_free(workdir);
    if (!found) {
        fprintf(stderr, "no case '%s'\n", which);
        return 2;
    }
    return failures == 0 ? 0 : 1;
}

#endif /* HEAPLENS_TEST_CLI_TEST_H */
