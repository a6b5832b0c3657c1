/* output.c — aligned text tables and JSON emission for every command (cli.h). */
#include "cli/cli.h"
#include "query/leaks.h"
#include "query/retention.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>

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

int query_summary_print(json_t *summary, int status)
{
    if (!summary)
        return status;
    g_autoptr(GError) error = NULL;
    g_autofree char *file = g_strdup(json_string_value(json_object_get(summary, "file")));
    query_json_print(summary, stdout);
    json_decref(summary);
    return query_output_finish_written(stdout, file, &error) ? status
                                                            : query_error_report(error);
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

gboolean query_output_finish_written(FILE *out, const char *written, GError **error)
{
    if (query_output_finish(out, error))
        return TRUE;
    if (written)
        g_prefix_error(error, "%s is complete, but ", written);
    return FALSE;
}

gboolean query_output_finish_retained(sqlite3 *db, const char *path, query_progress *progress,
                                      gboolean json, GError **error)
{
    g_autofree char *note = NULL, *holders_note = NULL;
    if (!query_db_note_print(db, json, error) || !query_output_finish(stdout, error) ||
        !retention_commit(db, path, progress, &note, error))
        return FALSE;
    /* then the leak holders found; after retained sizes were written, a failure to store them
     * is a note (a command never fails after changing the file), damage an error */
    GError *local = NULL;
    if (!leaks_commit(db, path, progress, &holders_note, &local)) {
        if (g_error_matches(local, QUERY_ERROR, QUERY_ERROR_DAMAGED)) {
            g_propagate_error(error, local);
            return FALSE;
        }
        holders_note = g_strdup_printf("note: leak holders were not stored: %s", local->message);
        g_error_free(local);
    }
    /* a file that could not take the retained sizes could not take the holders either: one
     * note says why. It is about the file, not the answer: on stderr, as `report` says it, so
     * that the answer on stdout is the same whether the file could take them or not. */
    query_note_print(note ? note : holders_note, TRUE);
    return query_output_finish(stdout, error);
}

void query_note_print(const char *note, gboolean on_stderr)
{
    if (!note)
        return;
    if (on_stderr)
        fprintf(stderr, "heaplens: %s\n", note);
    else
        printf("%s\n", note);
}

gboolean query_db_note_print(sqlite3 *db, gboolean json, GError **error)
{
    GError *local = NULL;
    g_autofree char *note = query_db_note_new(db, &local);
    if (local) {
        g_propagate_error(error, local);
        return FALSE;
    }
    query_note_print(note, json);
    return TRUE;
}
