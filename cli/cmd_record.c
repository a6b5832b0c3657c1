/* cmd_record.c — `heaplens record [OPTIONS] [--] PROGRAM [ARGS...]`: the options, then the
 * session (session/record_session.h); exits with the program's status. */
#include "cli/cli.h"
#include "cli/commands.h"
#include "session/record_session.h"
#include "session/recording.h"

#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* `--NAME on|off` or `--NAME=on|off` at argv[*i] (`name` with its dashes): 1 taken into *value
 * (*i past a separate value), 0 not this option, -1 a usage error. */
static int on_off_option(int argc, char **argv, int *i, const char *name, const char **value,
                         GError **error)
{
    const char *a = argv[*i];
    size_t n = strlen(name);
    if (strncmp(a, name, n) != 0 || (a[n] != 0 && a[n] != '='))
        return 0;
    if (a[n] == 0 && *i + 1 >= argc) {
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_USAGE, "record: %s needs on or off", name);
        return -1;
    }
    *value = a[n] == '=' ? a + n + 1 : argv[++*i];
    return query_args_check_on_off("record", name, *value, error) ? 1 : -1;
}

static gboolean parse_options(int argc, char **argv, record_options *o, gboolean *help,
                              GError **error) {
    int i = 1, taken;
    for (; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0) {
            i++;
            break;
        }
        if (a[0] != '-' || a[1] == 0)
            break; /* the program */
        if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            *help = TRUE;
            return TRUE;
        } else if (strcmp(a, "-o") == 0 || strcmp(a, "--output") == 0) {
            if (i + 1 >= argc) {
                g_set_error(error, QUERY_ERROR, QUERY_ERROR_USAGE, "record: %s needs a file name", a);
                return FALSE;
            }
            o->output = argv[++i];
            if (!*o->output) { /* as report -o '' says it */
                g_set_error(error, QUERY_ERROR, QUERY_ERROR_USAGE, "record: %s needs a file name", a);
                return FALSE;
            }
            /* "record -o -- dotnet app.dll" recorded into a file named --, as the other
             * commands' options say it (cli/args.c) */
            if (query_args_is_option_like(o->output)) {
                g_set_error(error, QUERY_ERROR, QUERY_ERROR_USAGE,
                            "record: option '%s' needs a file name, not '%s' (--output=%s if "
                            "that is the name); see 'heaplens record --help'",
                            a, o->output, o->output);
                return FALSE;
            }
        } else if (strncmp(a, "--output=", 9) == 0) {
            o->output = a + 9;
            if (!*o->output) {
                g_set_error(error, QUERY_ERROR, QUERY_ERROR_USAGE,
                            "record: --output needs a file name");
                return FALSE;
            }
        } else if (strcmp(a, "--snapshot") == 0 || strncmp(a, "--snapshot=", 11) == 0 ||
                   strcmp(a, "--max-snapshots") == 0 || strncmp(a, "--max-snapshots=", 16) == 0 ||
                   strcmp(a, "--snapshot-interval") == 0 ||
                   strncmp(a, "--snapshot-interval=", 20) == 0) {
            /* repeatable --snapshot, combined into one policy text (HEAPLENS_SNAPSHOT) */
            const char *eq = strchr(a, '=');
            g_autofree char *option = g_strndup(a + 2, eq ? (size_t)(eq - a - 2) : strlen(a + 2));
            const char *value = eq ? eq + 1 : i + 1 < argc ? argv[++i] : NULL;
            GString *policy = o->snapshot_owned ? g_string_new(o->snapshot_owned) : NULL;
            gboolean ok = recording_snapshot_option("record", option, value, &policy, error);
            g_free(o->snapshot_owned);
            o->snapshot = o->snapshot_owned = policy ? g_string_free(policy, FALSE) : NULL;
            if (!ok)
                return FALSE;
        } else if (strcmp(a, "--mode") == 0 || strncmp(a, "--mode=", 7) == 0) {
            if (a[6] != '=' && i + 1 >= argc) {
                g_set_error(error, QUERY_ERROR, QUERY_ERROR_USAGE,
                            "record: --mode needs full or sampled");
                return FALSE;
            }
            o->mode = a[6] == '=' ? a + 7 : argv[++i];
            if (strcmp(o->mode, "full") != 0 && strcmp(o->mode, "sampled") != 0) {
                g_set_error(error, QUERY_ERROR, QUERY_ERROR_USAGE,
                            "record: --mode takes full or sampled, not '%s'", o->mode);
                return FALSE;
            }
        } else if ((taken = on_off_option(argc, argv, &i, "--stacks", &o->stacks, error)) ||
                   (taken = on_off_option(argc, argv, &i, "--census", &o->census, error))) {
            if (taken < 0)
                return FALSE;
        } else if (strcmp(a, "--children") == 0) {
            o->children = "";
        } else if (strncmp(a, "--children=", 11) == 0) {
            /* An empty pattern would match every descendant: what --children alone says. */
            if (!a[11]) {
                g_set_error(error, QUERY_ERROR, QUERY_ERROR_USAGE,
                            "record: --children= needs a pattern (a part of the command line); "
                            "--children alone records every .NET descendant");
                return FALSE;
            }
            o->children = a + 11;
        } else if (strcmp(a, "--no-strings") == 0) {
            /* inherited by the program: its collector reads it (collector/profiler.c) */
            g_setenv("HEAPLENS_STRINGS", "off", TRUE);
        } else if (strcmp(a, "--handles") == 0) {
            o->handles = TRUE;
        } else if (strcmp(a, "--count") == 0 || strncmp(a, "--count=", 8) == 0) {
            if (a[7] == 0 && i + 1 >= argc) {
                g_set_error(error, QUERY_ERROR, QUERY_ERROR_USAGE,
                            "record: --count needs a method pattern (Namespace.Type.Method, * wildcards)");
                return FALSE;
            }
            const char *pattern = a[7] == '=' ? a + 8 : argv[++i];
            /* no method's name starts with '-': the next option or the separator, forgotten
             * pattern ("--count -- dotnet app.dll" ran the program counting a pattern '--') */
            if (a[7] != '=' && pattern[0] == '-') {
                g_set_error(error, QUERY_ERROR, QUERY_ERROR_USAGE,
                            "record: option '--count' needs a method pattern (Namespace.Type.Method, "
                            "* wildcards), not '%s'; see 'heaplens record --help'", pattern);
                return FALSE;
            }
            if (!*pattern || strchr(pattern, ';')) {
                g_set_error(error, QUERY_ERROR, QUERY_ERROR_USAGE,
                            "record: --count takes a non-empty pattern without ';', not '%s'", pattern);
                return FALSE;
            }
            /* repeatable: joined by ';' for the collector (HEAPLENS_COUNT) */
            char *joined = o->count ? g_strconcat(o->count, ";", pattern, NULL) : g_strdup(pattern);
            g_free(o->count_owned);
            o->count = o->count_owned = joined;
        } else if (strcmp(a, "--force") == 0) {
            o->force = TRUE;
        } else if (strcmp(a, "--quiet") == 0 || strcmp(a, "-q") == 0) {
            o->quiet = TRUE;
        } else if (strcmp(a, "--json") == 0) {
            o->json = TRUE;
        } else {
            g_set_error(error, QUERY_ERROR, QUERY_ERROR_USAGE,
                        "record: unknown option '%s'; see 'heaplens record --help'", a);
            return FALSE;
        }
    }
    if (i >= argc) {
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_USAGE,
                    "record: no program to run; usage: heaplens record [-o FILE] -- PROGRAM [ARGS...]");
        return FALSE;
    }
    if (o->handles && o->mode && strcmp(o->mode, "full") != 0) {
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_USAGE,
                    "record: --handles needs full mode (sampled mode records no handle lifetimes)");
        return FALSE;
    }
    if (o->census && (!o->mode || strcmp(o->mode, "full") == 0)) {
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_USAGE,
                    "record: --census needs --mode sampled (full mode counts every allocation "
                    "by the runtime's ObjectAllocated, no census)");
        return FALSE;
    }
    o->program = argv + i;
    return TRUE;
}

/* Whether the byte before where stdout writes next ends a line (or there is none): the program
 * shares stdout, and its output may end without a newline, which the summary line must not
 * join. Known for a regular file only (its offset, or its end when opened to append, `>>`), read
 * through /proc/self/fd/1 (stdout may be open for writing alone); a pipe or a terminal cannot be
 * read back: FALSE, so that a newline goes first (at worst an empty line before the summary). */
static gboolean stdout_at_line_start(void) {
    struct stat st;
    int flags = fcntl(STDOUT_FILENO, F_GETFL);
    if (flags < 0 || fstat(STDOUT_FILENO, &st) != 0 || !S_ISREG(st.st_mode))
        return FALSE;
    off_t at = flags & O_APPEND ? st.st_size : lseek(STDOUT_FILENO, 0, SEEK_CUR);
    if (at <= 0)
        return at == 0;
    int fd = open("/proc/self/fd/1", O_RDONLY | O_CLOEXEC);
    char last = 0;
    gboolean ends = fd >= 0 && pread(fd, &last, 1, at - 1) == 1 && last == '\n';
    if (fd >= 0)
        close(fd);
    return ends;
}

int cmd_record(int argc, char **argv) {
    record_options o = {0};
    gboolean help = FALSE;
    int exit_status = 1;
    json_t *summary = NULL;
    g_autoptr(GError) error = NULL;
    if (!parse_options(argc, argv, &o, &help, &error)) {
        g_free(o.count_owned);
        g_free(o.snapshot_owned);
        return query_error_report(error);
    }
    if (help) {
        g_free(o.count_owned);
        g_free(o.snapshot_owned);
        query_command_help("record", stdout);
        return 0;
    }
    gboolean ran = record_session_run(&o, &exit_status, &summary, &error);
    g_free(o.count_owned);
    g_free(o.snapshot_owned);
    if (!ran)
        return query_error_report(error);
    /* One line, not query_summary_print's indented document: the program writes to the same
     * standard output before it, so a script takes the last line (`| tail -n 1`), a line of its
     * own whatever the program left unended. A summary stdout could not take is said on stderr;
     * the exit status stays the program's, as when the writer failed (scripts that wrap a
     * program must see what it did). */
    if (summary) {
        g_autofree char *file = g_strdup(json_string_value(json_object_get(summary, "file")));
        if (!stdout_at_line_start())
            fputc('\n', stdout);
        json_dumpf(summary, stdout, JSON_COMPACT | JSON_ENCODE_ANY);
        fputc('\n', stdout);
        json_decref(summary);
        if (!query_output_finish_written(stdout, file, &error))
            query_error_report(error);
    }
    return exit_status;
}
