/* query_output.c — formatting, aligned text tables and JSON emission for every command. */
#include "query/query.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>

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

const char *query_generation_name(int64_t generation, char buf[QUERY_FORMAT_MAX])
{
    static const char *const names[] = {"gen0", "gen1", "gen2", "loh", "poh", "nongc"};
    if (generation >= 0 && generation < (int64_t)G_N_ELEMENTS(names))
        return names[generation];
    snprintf(buf, QUERY_FORMAT_MAX, "gen%" PRId64, generation);
    return buf;
}

/* ---- text tables ----------------------------------------------------------------------- */

struct query_table {
    const query_column *columns;
    size_t n_columns;
    GStringChunk *text; /* every cell's text, copied once */
    GPtrArray *cells;   /* row-major; NULL prints "-" */
};

query_table *query_table_new(const query_column *columns, size_t n_columns)
{
    query_table *table = g_new0(query_table, 1);
    table->columns = columns;
    table->n_columns = n_columns;
    table->text = g_string_chunk_new(4096);
    table->cells = g_ptr_array_new();
    return table;
}

void query_table_free(query_table *table)
{
    if (!table)
        return;
    g_string_chunk_free(table->text);
    g_ptr_array_free(table->cells, TRUE);
    g_free(table);
}

void query_table_add(query_table *table, const char *text)
{
    g_ptr_array_add(table->cells, text ? g_string_chunk_insert(table->text, text) : NULL);
}

void query_table_addf(query_table *table, const char *format, ...)
{
    va_list args;
    va_start(args, format);
    g_autofree char *text = g_strdup_vprintf(format, args);
    va_end(args);
    query_table_add(table, text);
}

size_t query_table_rows(const query_table *table)
{
    return table->cells->len / table->n_columns;
}

/* Columns a terminal gives `text`: characters of valid UTF-8, bytes otherwise. */
static size_t display_width(const char *text)
{
    if (g_utf8_validate(text, -1, NULL))
        return (size_t)g_utf8_strlen(text, -1);
    return strlen(text);
}

static void cell_print(FILE *out, const char *text, size_t width, query_align align, gboolean pad)
{
    size_t used = display_width(text);
    size_t fill = width > used ? width - used : 0;
    if (align == QUERY_ALIGN_RIGHT)
        fprintf(out, "%*s", (int)fill, "");
    fputs(text, out);
    if (align == QUERY_ALIGN_LEFT && pad)
        fprintf(out, "%*s", (int)fill, "");
}

static void row_print(const query_table *table, const size_t *widths, const char *const *cells,
                      gboolean header, FILE *out)
{
    for (size_t c = 0; c < table->n_columns; c++) {
        const query_column *column = &table->columns[c];
        if (c > 0) {
            const char *gap = column->gap ? column->gap : "  ";
            if (header)
                fprintf(out, "%*s", (int)display_width(gap), "");
            else
                fputs(gap, out);
        }
        const char *text = cells[c] ? cells[c] : "-";
        cell_print(out, text, widths[c], column->align, c + 1 < table->n_columns);
    }
    fputc('\n', out);
}

void query_table_print(const query_table *table, FILE *out)
{
    size_t rows = query_table_rows(table);
    g_autofree size_t *widths = g_new0(size_t, table->n_columns);
    g_autofree const char **headers = g_new0(const char *, table->n_columns);
    for (size_t c = 0; c < table->n_columns; c++) {
        headers[c] = table->columns[c].header;
        widths[c] = display_width(headers[c]);
    }
    for (size_t r = 0; r < rows; r++) {
        for (size_t c = 0; c < table->n_columns; c++) {
            const char *text = g_ptr_array_index(table->cells, r * table->n_columns + c);
            widths[c] = MAX(widths[c], display_width(text ? text : "-"));
        }
    }
    row_print(table, widths, headers, TRUE, out);
    for (size_t r = 0; r < rows; r++)
        row_print(table, widths,
                  (const char *const *)&table->cells->pdata[r * table->n_columns], FALSE, out);
}

/* ---- JSON ------------------------------------------------------------------------------ */

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

#define QUERY_JSON_FLAGS (JSON_COMPACT | JSON_ENCODE_ANY)

void query_json_rows_begin(query_json_rows *rows, FILE *out, const json_t *head)
{
    rows->out = out;
    rows->any = FALSE;
    fputc('{', out);
    if (head) {
        const char *key;
        json_t *value;
        /* json_object_foreach takes a non-const object but does not modify it. */
        json_object_foreach((json_t *)head, key, value)
        {
            json_t *name = json_string(key);
            json_dumpf(name, out, QUERY_JSON_FLAGS);
            json_decref(name);
            fputc(':', out);
            json_dumpf(value, out, QUERY_JSON_FLAGS);
            fputc(',', out);
        }
    }
    fputs("\"rows\":[", out);
}

void query_json_rows_add(query_json_rows *rows, json_t *row)
{
    fputs(rows->any ? ",\n" : "\n", rows->out);
    json_dumpf(row, rows->out, QUERY_JSON_FLAGS);
    json_decref(row);
    rows->any = TRUE;
}

void query_json_rows_end(query_json_rows *rows)
{
    fputs(rows->any ? "\n]}\n" : "]}\n", rows->out);
}

void query_json_print(const json_t *value, FILE *out)
{
    json_dumpf(value, out, JSON_INDENT(2) | JSON_ENCODE_ANY);
    fputc('\n', out);
}

gboolean query_output_finish(FILE *out, GError **error)
{
    if (fflush(out) != 0 || ferror(out)) {
        int saved = errno;
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_IO, "writing the output failed: %s",
                    saved ? g_strerror(saved) : "I/O error");
        return FALSE;
    }
    return TRUE;
}
