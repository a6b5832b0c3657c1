/* cmd_attach.c — `heaplens attach PID [-o FILE] [--duration S] [--snapshot POLICY]...
 * [--max-snapshots N] [--snapshot-interval S] [--stacks on|off] [--census on|off]
 * [--count PATTERN]...`: the options,
 * then the session (session/attach_session.h). */
#include "cli/cli.h"
#include "cli/commands.h"
#include "session/attach_session.h"
#include "session/recording.h"

#include <signal.h>
#include <string.h>
#include <unistd.h>

int cmd_attach(int argc, char **argv) {
    const char *output_text = NULL, *duration_text = NULL, *timeout_text = NULL;
    const char *stacks_text = NULL, *census_text = NULL;
    gboolean json = FALSE, force = FALSE, quiet = FALSE, no_strings = FALSE;
    const query_option options[] = {
        {"output", QUERY_OPT_VALUE, &output_text},
        {"duration", QUERY_OPT_VALUE, &duration_text},
        {"timeout", QUERY_OPT_VALUE, &timeout_text},
        {"force", QUERY_OPT_FLAG, &force},
        {"no-strings", QUERY_OPT_FLAG, &no_strings},
        {"stacks", QUERY_OPT_VALUE, &stacks_text},
        {"census", QUERY_OPT_VALUE, &census_text},
        {"quiet", QUERY_OPT_FLAG, &quiet},
        {"json", QUERY_OPT_FLAG, &json},
        {NULL, 0, NULL},
    };
    /* -o and -q: the short forms record has too. --count (repeatable) is taken out here and
     * joined by ';' (the other options take one value). */
    g_autofree char **args = g_new0(char *, argc + 1);
    g_autoptr(GString) count = NULL;
    g_autoptr(GString) snapshot = NULL; /* --snapshot (repeatable), --max-snapshots, ... */
    g_autoptr(GError) error = NULL;
    int n_args = 0;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--count") == 0 || strncmp(argv[i], "--count=", 8) == 0) {
            gboolean separate = argv[i][7] != '=';
            const char *pattern = !separate ? argv[i] + 8 : i + 1 < argc ? argv[++i] : NULL;
            if (separate && pattern && pattern[0] == '-') { /* a forgotten pattern */
                g_set_error(&error, QUERY_ERROR, QUERY_ERROR_USAGE,
                            "attach: option '--count' needs a method pattern (Namespace.Type.Method, "
                            "* wildcards), not '%s'; see 'heaplens attach --help'", pattern);
                return query_error_report(error);
            }
            if (!pattern || !*pattern || strchr(pattern, ';')) {
                g_set_error(&error, QUERY_ERROR, QUERY_ERROR_USAGE,
                            "attach: --count takes a non-empty method pattern without ';' "
                            "(Namespace.Type.Method, * wildcards)");
                return query_error_report(error);
            }
            if (!count)
                count = g_string_new(pattern);
            else
                g_string_append_printf(count, ";%s", pattern);
            continue;
        }
        static const char *const snapshot_options[] = {"--snapshot", "--max-snapshots",
                                                       "--snapshot-interval"};
        gboolean taken = FALSE;
        for (size_t k = 0; k < G_N_ELEMENTS(snapshot_options) && !taken; k++) {
            size_t len = strlen(snapshot_options[k]);
            if (strncmp(argv[i], snapshot_options[k], len) != 0 ||
                (argv[i][len] != 0 && argv[i][len] != '='))
                continue;
            const char *value = argv[i][len] == '=' ? argv[i] + len + 1
                                : i + 1 < argc         ? argv[++i]
                                                       : NULL;
            if (!recording_snapshot_option("attach", snapshot_options[k] + 2, value, &snapshot,
                                           &error))
                return query_error_report(error);
            taken = TRUE;
        }
        if (taken)
            continue;
        args[n_args++] = strcmp(argv[i], "-o") == 0   ? "--output"
                         : strcmp(argv[i], "-q") == 0 ? "--quiet"
                                                      : argv[i];
    }
    argc = n_args;
    long pid = 0;
    int status = 1;
    if (!query_args_take_pid(argc, args, options, "attach",
                             "the process id of a running .NET program", &pid, &status,
                             &error))
        return error ? query_error_report(error) : status;
    uint64_t duration = 0, timeout = ATTACH_TIMEOUT_MS / 1000;
    if (duration_text &&
        !query_args_parse_uint("attach", "duration", duration_text, 1, 31u * 24 * 3600,
                               "a number of seconds from 1 to 2,678,400 (31 days)", &duration,
                               &error))
        return query_error_report(error);
    if (timeout_text && !query_args_parse_uint("attach", "timeout", timeout_text, 1, 3600,
                                                "a number of seconds from 1 to 3,600", &timeout,
                                                &error))
        return query_error_report(error);
    if ((stacks_text && !query_args_check_on_off("attach", "--stacks", stacks_text, &error)) ||
        (census_text && !query_args_check_on_off("attach", "--census", census_text, &error)))
        return query_error_report(error);
    if (output_text && !*output_text) { /* as report -o '' says it */
        g_set_error(&error, QUERY_ERROR, QUERY_ERROR_USAGE, "attach: -o needs a file name");
        return query_error_report(error);
    }
    if ((pid_t)pid == getpid()) {
        g_set_error(&error, QUERY_ERROR, QUERY_ERROR_USAGE, "attach: that is heaplens itself");
        return query_error_report(error);
    }
    const attach_options o = {.pid = pid, .output = output_text, .snapshot = snapshot ? snapshot->str : NULL,
                              .duration = duration, .timeout = timeout, .force = force,
                              .quiet = quiet, .json = json, .count = count ? count->str : NULL,
                              .no_strings = no_strings,
                              .no_stacks = stacks_text && strcmp(stacks_text, "off") == 0,
                              .census = census_text};
    json_t *summary = NULL;
    /* A signal that comes once the detach is over waits until the JSON summary is printed, and
     * is then dropped: the session it asked to end has ended (attach_session.h). */
    sigset_t ending, original_mask;
    attach_session_ending_signals(&ending);
    sigprocmask(SIG_BLOCK, &ending, &original_mask);
    if (!attach_session_run(&o, &status, &summary, &error))
        status = query_error_report(error);
    else
        status = query_summary_print(summary, status);
    attach_session_signals_discard(&ending);
    sigprocmask(SIG_SETMASK, &original_mask, NULL);
    return status;
}
