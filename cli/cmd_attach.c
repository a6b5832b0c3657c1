/* cmd_attach.c — `heaplens attach PID [-o FILE] [--duration S] [--snapshot POLICY]`: the options,
 * then the session (session/attach_session.h). */
#include "cli/cli.h"
#include "cli/commands.h"
#include "session/attach_session.h"
#include "session/recording.h"

#include <string.h>
#include <unistd.h>

int cmd_attach(int argc, char **argv) {
    const char *output_text = NULL, *duration_text = NULL, *snapshot = NULL, *timeout_text = NULL;
    gboolean json = FALSE, force = FALSE, quiet = FALSE, no_strings = FALSE;
    const char *pid_text = NULL;
    const query_option options[] = {
        {"output", QUERY_OPT_VALUE, &output_text},
        {"duration", QUERY_OPT_VALUE, &duration_text},
        {"snapshot", QUERY_OPT_VALUE, &snapshot},
        {"timeout", QUERY_OPT_VALUE, &timeout_text},
        {"force", QUERY_OPT_FLAG, &force},
        {"no-strings", QUERY_OPT_FLAG, &no_strings},
        {"quiet", QUERY_OPT_FLAG, &quiet},
        {"json", QUERY_OPT_FLAG, &json},
        {NULL, 0, NULL},
    };
    /* -o and -q: the short forms record has too. */
    g_autofree char **args = g_new0(char *, argc + 1);
    for (int i = 0; i < argc; i++)
        args[i] = strcmp(argv[i], "-o") == 0 ? "--output" : strcmp(argv[i], "-q") == 0 ? "--quiet" : argv[i];
    g_autoptr(GError) error = NULL;
    switch (query_args_parse_operand(argc, args, options, "PID",
                                     "the process id of a running .NET program", &pid_text,
                                     &error)) {
    case QUERY_ARGS_HELP:
        return 0;
    case QUERY_ARGS_ERROR:
        return query_error_report(error);
    case QUERY_ARGS_OK:
        break;
    }
    long pid = 0;
    if (!query_args_parse_pid("attach", pid_text, &pid, &error))
        return query_error_report(error);
    uint64_t duration = 0, timeout = ATTACH_TIMEOUT_MS / 1000;
    if (duration_text && !query_args_parse_uint("attach", "duration", duration_text, 1,
                                                 31u * 24 * 3600, "a number of seconds",
                                                 &duration, &error))
        return query_error_report(error);
    if (timeout_text && !query_args_parse_uint("attach", "timeout", timeout_text, 1, 3600,
                                                "a number of seconds", &timeout, &error))
        return query_error_report(error);
    if (snapshot && !recording_snapshot_policy_valid(snapshot)) {
        g_set_error(&error, QUERY_ERROR, QUERY_ERROR_USAGE,
                    "attach: --snapshot takes induced, gen2, every:N (N >= 1) or none, not '%s'",
                    snapshot);
        return query_error_report(error);
    }
    if ((pid_t)pid == getpid()) {
        g_set_error(&error, QUERY_ERROR, QUERY_ERROR_USAGE, "attach: that is heaplens itself");
        return query_error_report(error);
    }
    const attach_options o = {.pid = pid, .output = output_text, .snapshot = snapshot,
                              .duration = duration, .timeout = timeout, .force = force,
                              .quiet = quiet, .json = json, .no_strings = no_strings};
    int status = 1;
    json_t *summary = NULL;
    if (!attach_session_run(&o, &status, &summary, &error))
        return query_error_report(error);
    return query_summary_print(summary, status);
}
