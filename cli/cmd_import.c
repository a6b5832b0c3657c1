/* cmd_import.c — `heaplens import FILE.gcdump [-o DB] [--json]`: a .gcdump (dotnet-gcdump,
 * dotnet-monitor, PerfView) as a heaplens database with one snapshot (gcdump/gcdump.h). What it
 * wrote is said on stderr (stdout: only the --json document). */
#include "cli/cli.h"
#include "cli/commands.h"
#include "gcdump/gcdump.h"
#include "session/recording.h"

#include <string.h>
#include <sys/stat.h>
#include <time.h>

/* FILE.gcdump -> FILE.db beside it; any other name gets ".db" added. */
static char *import_default_output(const char *path)
{
    if (g_str_has_suffix(path, ".gcdump")) {
        g_autofree char *stem = g_strndup(path, strlen(path) - strlen(".gcdump"));
        return g_strconcat(stem, ".db", NULL);
    }
    return g_strconcat(path, ".db", NULL);
}

static double import_seconds(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int cmd_import(int argc, char **argv)
{
    int status = 1;
    gboolean json = FALSE;
    const char *output = NULL, *path = NULL;
    const query_option options[] = {
        {"json", QUERY_OPT_FLAG, &json},
        {"output", QUERY_OPT_VALUE, &output},
        {NULL, 0, NULL},
    };
    g_autoptr(GError) error = NULL;
    g_autoptr(GPtrArray) owned = g_ptr_array_new_with_free_func(g_free);
    g_autofree char **args = query_args_short_output_new(argc, argv, owned);
    g_autoptr(gcdump_graph) g = NULL;
    g_autofree char *db_path = NULL;
    gcdump_import_summary sum = {0};
    double start = import_seconds();

    if (!query_args_take(argc, args, options, &path, &status, &error))
        goto out;
    if (output && !*output) {
        g_set_error(&error, QUERY_ERROR, QUERY_ERROR_USAGE, "import: -o needs a file name");
        goto out;
    }
    if (output && strcmp(output, "-") == 0) { /* stdout elsewhere: never a file named "-" */
        g_set_error(&error, QUERY_ERROR, QUERY_ERROR_USAGE,
                    "import: -o -: a database is a file, not standard output (name one)");
        goto out;
    }
    db_path = output ? g_strdup(output) : import_default_output(path);
    if (!recording_output_not_sibling("import: cannot import to", db_path, &error) ||
        !recording_output_name_fits("import: cannot import to", db_path, 0, &error))
        goto out;
    /* A database is a set of files: a leftover FILE-journal or FILE-wal of another database of
     * that name (a killed writer's) would be taken into the new one by SQLite as its own (a hot
     * journal rolled back into it, a WAL's frames read as its pages), and a failed import
     * removes the whole set. So any member of the set means "exists" (as for record). */
    /* -o naming the input (by any name or link) was called "a database" that exists */
    if (query_files_same(path, db_path)) {
        g_set_error(&error, QUERY_ERROR, QUERY_ERROR_USAGE,
                    "import: -o %s is %s, the file being imported; name the database another file",
                    db_path, path);
        goto out;
    }
    static const char *const set[] = {"", "-wal", "-shm", "-journal"};
    for (size_t i = 0; i < G_N_ELEMENTS(set); i++) {
        g_autofree char *member = g_strconcat(db_path, set[i], NULL);
        struct stat st;
        if (lstat(member, &st) == 0) {
            g_set_error(&error, QUERY_ERROR, QUERY_ERROR_USAGE,
                        i == 0 ? "import: %s exists; heaplens never overwrites a database "
                                 "(choose another with -o)"
                               : "import: %s exists (left by another database of that name, "
                                 "whose changes SQLite would apply to the new one); remove it "
                                 "or choose another name with -o",
                        member);
            goto out;
        }
    }
    if (!(g = gcdump_graph_read(path, &error)) ||
        !gcdump_import(g, path, db_path, &sum, &error))
        goto out;
    double seconds = import_seconds() - start;
    if (json) {
        json_t *o = json_pack("{s:s, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:b, s:f}", "file", path,
                              "output", db_path, "objects", (json_int_t)sum.objects,
                              "references", (json_int_t)sum.refs, "roots", (json_int_t)sum.roots,
                              "bytes", (json_int_t)sum.bytes, "types", (json_int_t)sum.types,
                              "unresolved", (json_int_t)sum.unresolved, "sampled", sum.sampled,
                              "seconds", seconds);
        query_json_print(o, stdout);
        json_decref(o);
    } else {
        char f[5][QUERY_FORMAT_MAX];
        fprintf(stderr, "heaplens: imported %s objects (%s) of %s types, %s references, %s roots "
                "from %s -> %s (snapshot 1) in %.1f s\n",
                query_count_format((int64_t)sum.objects, f[0]),
                query_size_format((int64_t)sum.bytes, f[1]),
                query_count_format((int64_t)sum.types, f[2]),
                query_count_format((int64_t)sum.refs, f[3]),
                query_count_format((int64_t)sum.roots, f[4]), path, db_path, seconds);
        if (sum.unresolved)
            fprintf(stderr, "heaplens: note: %s references to nodes the file never defined (the "
                    "dump lost them) are left out\n",
                    query_count_format((int64_t)sum.unresolved, f[1]));
    }
    /* A .gcdump keeps no object identity, generation, field name or value: say what that
     * means for the commands that would use them. */
    if (sum.sampled)
        query_note_print("the .gcdump holds a SAMPLE of the heap (dotnet-gcdump samples heaps "
                         "of more than 10M objects): counts and sizes are those of the sample",
                         TRUE);
    if (!query_output_finish_written(stdout, db_path, &error))
        goto out;
    status = 0;
out:
    if (error)
        query_error_report(error);
    return status;
}
