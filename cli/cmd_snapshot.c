/* cmd_snapshot.c — `heaplens snapshot PID [--timeout S] [--json]`: the options, the request
 * (session/snapshot_request.h), the answer printed. */
#include "cli/cli.h"
#include "cli/commands.h"
#include "session/snapshot_request.h"

int cmd_snapshot(int argc, char **argv) {
    const char *timeout_text = NULL;
    gboolean json = FALSE;
    const query_option options[] = {
        {"timeout", QUERY_OPT_VALUE, &timeout_text},
        {"json", QUERY_OPT_FLAG, &json},
        {NULL, 0, NULL},
    };
    g_autoptr(GError) error = NULL;
    uint64_t timeout = 120;
    long pid = 0;
    int status = 1;
    if (!query_args_take_pid(argc, argv, options, "snapshot",
                             "the process id of a program running under 'heaplens record'", &pid,
                             &status, &error))
        return error ? query_error_report(error) : status;
    if (timeout_text && !query_args_parse_uint("snapshot", "timeout", timeout_text, 1, 86400,
                                               "a number of seconds from 1 to 86,400", &timeout,
                                               &error))
        return query_error_report(error);

    snapshot_answer answer;
    if (!snapshot_request_send(pid, timeout, timeout_text != NULL, &answer, &error))
        return query_error_report(error);
    if (json) {
        json_t *j = json_pack("{s:I, s:I, s:I, s:I, s:f, s:s}", "pid", (json_int_t)pid, "snapshot",
                              (json_int_t)answer.snapshot, "gc", (json_int_t)answer.gc, "objects",
                              (json_int_t)answer.objects, "seconds", (double)answer.ms / 1000.0,
                              "file",
                              answer.db);
        query_json_print(j, stdout);
        json_decref(j);
    } else if (answer.timed) {
        char objects[QUERY_FORMAT_MAX]; /* it said "152071 objects" */
        printf("snapshot %u taken at GC %u: %s objects, stored %.1f s after the request in %s\n",
               answer.snapshot, answer.gc,
               query_count_format((int64_t)MIN(answer.objects, (unsigned long long)INT64_MAX),
                                  objects),
               (double)answer.ms / 1000.0, answer.db);
    } else {
        printf("snapshot %u taken at GC %u, stored in %s\n", answer.snapshot, answer.gc,
               answer.db);
    }
    g_free(answer.db);
    return query_output_finish(stdout, &error) ? 0 : query_error_report(error);
}
