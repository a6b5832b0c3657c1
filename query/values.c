/* values.c — what every part of the command side says alike (query.h): the error domain and
 * its one-line report, a number the user gave, sizes, counts and times as text, JSON values. */
#include "query/query.h"

#include <inttypes.h>
#include <string.h>

G_DEFINE_QUARK(heaplens-query-error-quark, query_error)

int query_error_report(const GError *error)
{
    g_autofree char *line = g_strdup(error && error->message ? error->message : "unknown error");
    for (char *p = line; *p; p++)
        if (*p == '\n' || *p == '\r')
            *p = ' ';
    fprintf(stderr, "heaplens: %s\n", line);
    return 1;
}

gboolean query_args_parse_uint(const char *command, const char *option, const char *text,
                               uint64_t min, uint64_t max, const char *what, uint64_t *value,
                               GError **error)
{
    guint64 parsed = 0;
    /* g_ascii_string_to_unsigned accepts only digits: no sign, no spaces, no trailing junk. */
    if (!g_ascii_string_to_unsigned(text, 10, min, max, &parsed, NULL)) {
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_USAGE, "%s: --%s expects %s, not '%s'",
                    command, option, what, text);
        return FALSE;
    }
    *value = parsed;
    return TRUE;
}

/* ---- formatting ------------------------------------------------------------------------ */

char *query_size_format(int64_t bytes, char buf[QUERY_FORMAT_MAX])
{
    static const char *const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    const char *sign = bytes < 0 ? "-" : "";
    uint64_t magnitude = bytes < 0 ? (uint64_t)0 - (uint64_t)bytes : (uint64_t)bytes;
    if (magnitude < 1024) {
        snprintf(buf, QUERY_FORMAT_MAX, "%s%" PRIu64 " B", sign, magnitude);
        return buf;
    }
    double value = (double)magnitude / 1024.0;
    size_t unit = 0;
    /* Step up while the value would print as 1024.0 or more. */
    while (value >= 1023.95 && unit + 1 < G_N_ELEMENTS(units)) {
        value /= 1024.0;
        unit++;
    }
    snprintf(buf, QUERY_FORMAT_MAX, "%s%.1f %s", sign, value, units[unit]);
    return buf;
}

char *query_count_format(int64_t count, char buf[QUERY_FORMAT_MAX])
{
    char digits[32];
    uint64_t magnitude = count < 0 ? (uint64_t)0 - (uint64_t)count : (uint64_t)count;
    int n = snprintf(digits, sizeof digits, "%" PRIu64, magnitude);
    char *p = buf;
    if (count < 0)
        *p++ = '-';
    for (int i = 0; i < n; i++) {
        if (i > 0 && (n - i) % 3 == 0)
            *p++ = ',';
        *p++ = digits[i];
    }
    *p = '\0';
    return buf;
}

char *query_ms_format(int64_t ns, char buf[QUERY_FORMAT_MAX])
{
    const char *sign = ns < 0 ? "-" : "";
    uint64_t magnitude = ns < 0 ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;
    uint64_t us = (magnitude + 500) / 1000; /* round to the microsecond */
    snprintf(buf, QUERY_FORMAT_MAX, "%s%" PRIu64 ".%03" PRIu64, sign, us / 1000, us % 1000);
    return buf;
}

char *query_duration_format(int64_t ns, char buf[QUERY_FORMAT_MAX])
{
    const char *sign = ns < 0 ? "-" : "";
    uint64_t magnitude = ns < 0 ? (uint64_t)0 - (uint64_t)ns : (uint64_t)ns;
    /* Each unit is rounded first and the next unit taken when the rounding reaches it, so no
     * "1000 ms", "60.0 s" or "1 min 60 s" is ever printed. */
    uint64_t us_tenths = (magnitude + 50) / 100;
    uint64_t us = (magnitude + 500) / 1000;
    uint64_t ms_tenths = (magnitude + 50000) / 100000;
    uint64_t ms = (magnitude + 500000) / 1000000;
    uint64_t s_tenths = (magnitude + 50000000) / 100000000;
    uint64_t s = (magnitude + 500000000) / 1000000000;
    uint64_t min = (magnitude + 30000000000) / 60000000000;
    if (magnitude < 1000)
        snprintf(buf, QUERY_FORMAT_MAX, "%s%" PRIu64 " ns", sign, magnitude);
    else if (us_tenths < 100)
        snprintf(buf, QUERY_FORMAT_MAX, "%s%" PRIu64 ".%" PRIu64 " µs", sign, us_tenths / 10,
                 us_tenths % 10);
    else if (us < 1000)
        snprintf(buf, QUERY_FORMAT_MAX, "%s%" PRIu64 " µs", sign, us);
    else if (ms_tenths < 100)
        snprintf(buf, QUERY_FORMAT_MAX, "%s%" PRIu64 ".%" PRIu64 " ms", sign, ms_tenths / 10,
                 ms_tenths % 10);
    else if (ms < 1000)
        snprintf(buf, QUERY_FORMAT_MAX, "%s%" PRIu64 " ms", sign, ms);
    else if (s_tenths < 600)
        snprintf(buf, QUERY_FORMAT_MAX, "%s%" PRIu64 ".%" PRIu64 " s", sign, s_tenths / 10,
                 s_tenths % 10);
    else if (s < 3600)
        snprintf(buf, QUERY_FORMAT_MAX, "%s%" PRIu64 " min %" PRIu64 " s", sign, s / 60, s % 60);
    else
        snprintf(buf, QUERY_FORMAT_MAX, "%s%" PRIu64 " h %" PRIu64 " min", sign, min / 60,
                 min % 60);
    return buf;
}

const char *query_generation_name(int64_t generation, char buf[QUERY_FORMAT_MAX])
{
    static const char *const names[] = {"gen0", "gen1", "gen2", "loh", "poh", "nongc"};
    if (generation >= 0 && generation < (int64_t)G_N_ELEMENTS(names))
        return names[generation];
    snprintf(buf, QUERY_FORMAT_MAX, "gen%" PRId64, generation);
    return buf;
}

/* ---- JSON values ------------------------------------------------------------------------ */

json_t *query_json_string(const char *text)
{
    if (!text)
        return json_null();
    json_t *value = json_string(text);
    if (!value) {
        g_autofree char *valid = g_utf8_make_valid(text, -1);
        value = json_string(valid);
    }
    return value;
}

json_t *query_json_column(sqlite3_stmt *stmt, int column)
{
    switch (sqlite3_column_type(stmt, column)) {
    case SQLITE_INTEGER:
        return json_integer(sqlite3_column_int64(stmt, column));
    case SQLITE_FLOAT:
        return json_real(sqlite3_column_double(stmt, column));
    case SQLITE_TEXT:
    case SQLITE_BLOB:
        return query_json_string((const char *)sqlite3_column_text(stmt, column));
    default:
        return json_null();
    }
}

json_t *query_json_value(int64_t value)
{
    return value == QUERY_NULL ? json_null() : json_integer(value);
}

json_t *query_json_flag(int64_t value)
{
    return value == QUERY_NULL ? json_null() : json_boolean(value != 0);
}
