/* args.c — the command-line parser shared by the commands (cli.h). */
#include "cli/cli.h"

#include "cli/commands.h"

#include <string.h>

static const query_option *option_find(const query_option *options, const char *name,
                                       size_t name_len)
{
    for (const query_option *o = options; o && o->name; o++)
        if (strlen(o->name) == name_len && strncmp(o->name, name, name_len) == 0)
            return o;
    return NULL;
}

gboolean query_args_is_option_like(const char *value)
{
    if (!g_str_has_prefix(value, "--"))
        return FALSE;
    if (!value[2])
        return TRUE; /* the separator */
    /* --NAME or --NAME=...; not an SQL comment ("-- the big ones\nSELECT ...") */
    if (!g_ascii_isalpha(value[2]))
        return FALSE;
    for (const char *c = value + 2; *c && *c != '='; c++)
        if (!g_ascii_isalnum(*c) && *c != '-')
            return FALSE;
    return TRUE;
}

query_args_result query_args_parse(int argc, char **argv, const query_option *options,
                                   const char **file, GError **error)
{
    return query_args_parse_operand(argc, argv, options, "FILE", "the recording to read", file,
                                    error);
}

gboolean query_args_take(int argc, char **argv, const query_option *options, const char **file,
                         int *status, GError **error)
{
    switch (query_args_parse(argc, argv, options, file, error)) {
    case QUERY_ARGS_OK:
        return TRUE;
    case QUERY_ARGS_HELP:
        *status = 0;
        return FALSE;
    case QUERY_ARGS_ERROR:
        break;
    }
    *status = 1;
    return FALSE;
}

query_args_result query_args_parse_operand(int argc, char **argv, const query_option *options,
                                           const char *operand, const char *operand_meaning,
                                           const char **file, GError **error)
{
    const char *command = argv[0];
    gboolean options_done = FALSE;
    *file = NULL;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (!options_done && strcmp(arg, "--") == 0) {
            options_done = TRUE;
            continue;
        }
        if (!options_done && (strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0)) {
            query_command_help(command, stdout);
            return QUERY_ARGS_HELP;
        }
        if (!options_done && arg[0] == '-' && arg[1] != '\0') {
            if (arg[1] != '-') {
                g_set_error(error, QUERY_ERROR, QUERY_ERROR_USAGE,
                            "%s: unknown option '%s'; see 'heaplens %s --help'", command, arg,
                            command);
                return QUERY_ARGS_ERROR;
            }
            const char *name = arg + 2;
            const char *equals = strchr(name, '=');
            size_t name_len = equals ? (size_t)(equals - name) : strlen(name);
            const query_option *option = option_find(options, name, name_len);
            if (!option) {
                g_set_error(error, QUERY_ERROR, QUERY_ERROR_USAGE,
                            "%s: unknown option '--%.*s'; see 'heaplens %s --help'", command,
                            (int)name_len, name, command);
                return QUERY_ARGS_ERROR;
            }
            if (option->kind == QUERY_OPT_FLAG) {
                if (equals) {
                    g_set_error(error, QUERY_ERROR, QUERY_ERROR_USAGE,
                                "%s: option '--%s' takes no value", command, option->name);
                    return QUERY_ARGS_ERROR;
                }
                *(gboolean *)option->target = TRUE;
            } else if (equals || i + 1 < argc) {
                const char *value = equals ? equals + 1 : argv[++i];
                /* A separate value that is an option was a file name: "report app.db -o
                 * --json" wrote a report named --json. The value is missing; one that looks
                 * like an option is still taken in --NAME=VALUE. */
                if (!equals && query_args_is_option_like(value)) {
                    g_set_error(error, QUERY_ERROR, QUERY_ERROR_USAGE,
                                "%s: option '--%s' needs a value, not '%s' (--%s=%s if that is "
                                "the value); see 'heaplens %s --help'",
                                command, option->name, value, option->name, value, command);
                    return QUERY_ARGS_ERROR;
                }
                if (option->kind == QUERY_OPT_LIST)
                    g_ptr_array_add((GPtrArray *)option->target, (gpointer)value);
                else
                    *(const char **)option->target = value;
            } else {
                g_set_error(error, QUERY_ERROR, QUERY_ERROR_USAGE,
                            "%s: option '--%s' needs a value; see 'heaplens %s --help'", command,
                            option->name, command);
                return QUERY_ARGS_ERROR;
            }
            continue;
        }
        if (*file) {
            g_set_error(error, QUERY_ERROR, QUERY_ERROR_USAGE,
                        "%s: unexpected argument '%s'; see 'heaplens %s --help'", command, arg,
                        command);
            return QUERY_ARGS_ERROR;
        }
        *file = arg;
    }
    if (!*file) {
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_USAGE,
                    "%s: missing %s, %s; see 'heaplens %s --help'", command, operand,
                    operand_meaning, command);
        return QUERY_ARGS_ERROR;
    }
    return QUERY_ARGS_OK;
}

gboolean query_args_parse_choice(const char *command, const char *option, const char *text,
                                 const char *const *names, guint n, guint *index, GError **error)
{
    for (guint i = 0; i < n; i++)
        if (strcmp(text, names[i]) == 0) {
            *index = i;
            return TRUE;
        }
    g_autoptr(GString) expected = g_string_new(NULL);
    for (guint i = 0; i < n; i++)
        g_string_append_printf(expected, "%s'%s'", i == 0 ? "" : i + 1 == n ? " or " : ", ",
                               names[i]);
    g_set_error(error, QUERY_ERROR, QUERY_ERROR_USAGE, "%s: --%s expects %s, not '%s'", command,
                option, expected->str, text);
    return FALSE;
}

gboolean query_args_check_on_off(const char *command, const char *option, const char *text,
                                 GError **error)
{
    if (strcmp(text, "on") == 0 || strcmp(text, "off") == 0)
        return TRUE;
    g_set_error(error, QUERY_ERROR, QUERY_ERROR_USAGE, "%s: %s takes on or off, not '%s'", command,
                option, text);
    return FALSE;
}

gboolean query_args_parse_pid(const char *command, const char *text, long *pid, GError **error)
{
    char *end = NULL;
    /* Digits only, as every number heaplens reads: strtol alone would take " 5" and "+5". */
    long value = g_ascii_isdigit(text[0]) ? strtol(text, &end, 10) : 0;
    if (!end || *end || value < 1 || value > INT32_MAX) {
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_USAGE, "%s: PID must be a process id, not '%s'",
                    command, text);
        return FALSE;
    }
    *pid = value;
    return TRUE;
}

gboolean query_args_take_pid(int argc, char **argv, const query_option *options,
                             const char *command, const char *operand_meaning, long *pid,
                             int *status, GError **error)
{
    const char *text = NULL;
    *status = 1;
    switch (query_args_parse_operand(argc, argv, options, "PID", operand_meaning, &text, error)) {
    case QUERY_ARGS_OK:
        return query_args_parse_pid(command, text, pid, error);
    case QUERY_ARGS_HELP:
        *status = 0;
        return FALSE;
    case QUERY_ARGS_ERROR:
        break;
    }
    return FALSE;
}

char **query_args_short_output_new(int argc, char **argv, GPtrArray *owned)
{
    char **out = g_new0(char *, (size_t)argc + 1);
    gboolean options_done = FALSE;
    for (int i = 0; i < argc; i++) {
        char *arg = argv[i];
        if (i > 0 && !options_done && strcmp(arg, "--") == 0)
            options_done = TRUE;
        if (i > 0 && !options_done && strcmp(arg, "-o") == 0) {
            arg = "--output";
        } else if (i > 0 && !options_done && strncmp(arg, "-o", 2) == 0) {
            arg = g_strconcat("--output=", arg + 2, NULL);
            g_ptr_array_add(owned, arg);
        }
        out[i] = arg;
    }
    return out;
}
