/* cmd_export.c — `heaplens export FILE [--snapshot S] --gcdump OUT [--json]`: a heap snapshot
 * as a .gcdump that dotnet-gcdump report, PerfView and Visual Studio open (gcdump/gcdump.h).
 * What it wrote is said on stderr (stdout: only the --json document). */
#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/output_file.h"
#include "gcdump/gcdump.h"

#include <string.h>

int cmd_export(int argc, char **argv)
{
    int status = 1;
    gboolean json = FALSE;
    const char *path = NULL, *snapshot = NULL, *output = NULL;
    const query_option options[] = {
        {"json", QUERY_OPT_FLAG, &json},
        {"snapshot", QUERY_OPT_VALUE, &snapshot},
        {"gcdump", QUERY_OPT_VALUE, &output},
        {NULL, 0, NULL},
    };
    g_autoptr(GError) error = NULL;
    g_autoptr(gcdump_graph) g = NULL;
    query_output_file file = {0};
    snapshot_info info;
    sqlite3 *db = NULL;

    if (!query_args_take(argc, argv, options, &path, &status, &error))
        goto out;
    if (!output || !*output) {
        g_set_error(&error, QUERY_ERROR, QUERY_ERROR_USAGE,
                    "export: --gcdump OUT is needed (the .gcdump file to write)");
        goto out;
    }
    if (!(db = query_db_open(path, &error)) ||
        !snapshot_pick(db, path, "export", "snapshot", snapshot, &info, &error))
        goto out;
    const char *const inputs[] = {path, NULL};
    if (!query_output_file_open(&file, output, inputs, &error))
        goto out;
    if (file.is_stdout && json) { /* the document would follow the .gcdump's bytes there */
        g_set_error(&error, QUERY_ERROR, QUERY_ERROR_USAGE,
                    "export: --json and --gcdump %s both write to standard output; name a file "
                    "for the .gcdump", output);
        goto out;
    }
    if (!(g = gcdump_export_graph(db, &info, &error)) ||
        !gcdump_graph_write(g, file.out, output, &error) ||
        !query_output_file_commit(&file, &error))
        goto out;
    if (json) {
        json_t *o = json_pack("{s:s, s:I, s:I, s:s, s:I, s:I}", "file", path, "snapshot",
                              (json_int_t)info.snapshot, "gc", (json_int_t)info.gc, "output",
                              output, "objects", (json_int_t)info.objects, "bytes",
                              (json_int_t)g->total_size);
        query_json_print(o, stdout);
        json_decref(o);
    } else {
        char f[2][QUERY_FORMAT_MAX];
        fprintf(stderr, "heaplens: snapshot %" G_GINT64_FORMAT " (GC %" G_GINT64_FORMAT "): %s "
                "objects (%s) -> %s\n",
                info.snapshot, info.gc, query_count_format(info.objects, f[0]),
                query_size_format(g->total_size, f[1]), output);
    }
    /* what the snapshot may lack (an unfinished or lossy recording), as every command says: on
     * stderr with the line above, as report -o says it */
    if (!query_db_note_print(db, TRUE, &error) ||
        !query_output_finish_written(stdout, output, &error))
        goto out;
    status = 0;
out:
    query_output_file_release(&file);
    sqlite3_close(db);
    if (error)
        query_error_report(error);
    return status;
}
