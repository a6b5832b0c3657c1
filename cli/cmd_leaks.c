/* cmd_leaks.c — `heaplens leaks FILE [--with FILE2...] [--top K] [--all] [--json] [--progress]`:
 * the leak suspects of query/leaks.h, or across files by type (query/leaks_files.h), as text
 * or JSON. */
#include "cli/cli.h"
#include "cli/commands.h"
#include "query/leaks.h"
#include "query/leaks_files.h"
#include "query/retention.h"

#include <inttypes.h>
#include <string.h>

/* "0 200 400 ... 1,200": every value, or the first three, "...", the last three. */
static char *series_text(const int64_t *v, size_t k)
{
    char buf[QUERY_FORMAT_MAX];
    GString *text = g_string_new(NULL);
    for (size_t i = 0; i < k; i++) {
        if (k > 8 && i == 3) {
            g_string_append(text, " ...");
            i = k - 4;
            continue;
        }
        if (text->len)
            g_string_append_c(text, ' ');
        g_string_append(text, query_count_format(v[i], buf));
    }
    return g_string_free(text, FALSE);
}

static char *signed_size(int64_t v, char buf[QUERY_FORMAT_MAX])
{
    char tmp[QUERY_FORMAT_MAX];
    g_snprintf(buf, QUERY_FORMAT_MAX, "%s%s", v >= 0 ? "+" : "-",
               query_size_format(v >= 0 ? v : -v, tmp));
    return buf;
}

static char *signed_count(int64_t v, char buf[QUERY_FORMAT_MAX])
{
    char tmp[QUERY_FORMAT_MAX];
    g_snprintf(buf, QUERY_FORMAT_MAX, "%s%s", v >= 0 ? "+" : "-",
               query_count_format(v >= 0 ? v : -v, tmp));
    return buf;
}

static const query_column suspect_columns[] = {
    {"rank", QUERY_ALIGN_RIGHT, NULL},
    {"+objects", QUERY_ALIGN_RIGHT, NULL},
    {"+bytes", QUERY_ALIGN_RIGHT, NULL},
    {"+retained", QUERY_ALIGN_RIGHT, NULL},
    {"objects per snapshot", QUERY_ALIGN_LEFT, NULL},
    {"type", QUERY_ALIGN_LEFT, NULL},
};

/* "held by: ..." of one flagged suspect. */
static void holder_print(const leaks_suspect *s, FILE *out)
{
    char b[QUERY_FORMAT_MAX], c[QUERY_FORMAT_MAX], d[QUERY_FORMAT_MAX];
    if (!s->holder_type) {
        fprintf(out, "   held by: nothing but GC roots and collections\n");
        return;
    }
    g_autofree char *also =
        s->holder_rank ? g_strdup_printf(", suspect %u", s->holder_rank) : g_strdup("");
    if (s->holders == 1)
        fprintf(out, "   held by: %s #%" PRIu64 " (retains %s; holds %s of %s%s)\n",
                s->holder_type, s->holder_object,
                query_size_format((int64_t)s->holder_retained_bytes, b),
                query_count_format((int64_t)s->held, c),
                query_count_format((int64_t)s->instances, d), also);
    else
        fprintf(out, "   held by: %s %s objects (hold %s of %s%s)\n",
                query_count_format((int64_t)s->holders, b), s->holder_type,
                query_count_format((int64_t)s->held, c),
                query_count_format((int64_t)s->instances, d), also);
}

/* The text of `heaplens leaks`: a summary line, the table, then the holder and path of each
 * flagged suspect. */
static void leaks_print(const leaks *l, FILE *out)
{
    size_t k = 0;
    const snapshot_info *first = NULL, *final = NULL;
    const char *series_note = NULL;
    char a[QUERY_FORMAT_MAX], b[QUERY_FORMAT_MAX], c[QUERY_FORMAT_MAX];
    char name[QUERY_FORMAT_MAX], holder[QUERY_FORMAT_MAX];
    guint n_flagged = leaks_flagged_count(l), n_suspects = leaks_count(l);
    leaks_series_get(l, &k, &first, &final, &series_note);
    g_autofree char *range =
        g_strdup_printf("snapshots %" PRId64 " to %" PRId64 ", GCs %" PRId64 " to %" PRId64,
                        first->snapshot, final->snapshot, first->gc, final->gc);
    if (n_flagged == 0)
        fprintf(out, "no leak suspects: no type kept growing over %zu snapshots%s (%s)\n", k,
                series_note ? "" : " after full GCs", range);
    else
        fprintf(out, "leak suspects: %u %s kept growing over %zu snapshots%s (%s)\n", n_flagged,
                n_flagged == 1 ? "type" : "types", k, series_note ? "" : " after full GCs",
                range);
    if (n_suspects == 0)
        return;
    g_autoptr(query_table) table = query_table_new(suspect_columns, G_N_ELEMENTS(suspect_columns));
    for (guint i = 0; i < n_suspects; i++) {
        leaks_suspect s;
        leaks_suspect_get(l, i, &s, name, holder);
        g_autofree char *sv = series_text(s.counts, k);
        if (s.flagged)
            query_table_addf(table, "%u", i + 1);
        else
            query_table_add(table, "-");
        query_table_add(table, signed_count(s.growth_count, a));
        query_table_add(table, signed_size(s.growth_bytes, b));
        query_table_add(table, signed_size(s.growth_retained_bytes, c));
        query_table_add(table, sv);
        query_table_add(table, s.type);
    }
    query_table_print(table, out);
    for (guint i = 0; i < n_suspects; i++) {
        leaks_suspect s;
        leaks_suspect_get(l, i, &s, name, holder);
        if (!s.flagged)
            continue;
        fprintf(out, "\n%u. %s\n", i + 1, s.type);
        holder_print(&s, out);
        g_autofree char *path = leaks_suspect_path_text_new(l, i);
        if (path)
            fprintf(out, "   path:    %s\n", path);
    }
}

static const query_column files_columns[] = {
    {"rank", QUERY_ALIGN_RIGHT, NULL},
    {"+objects", QUERY_ALIGN_RIGHT, NULL},
    {"+bytes", QUERY_ALIGN_RIGHT, NULL},
    {"objects per file", QUERY_ALIGN_LEFT, NULL},
    {"type", QUERY_ALIGN_LEFT, NULL},
};

/* `leaks FILE --with FILE2...`: the text. */
static void leaks_files_print(const leaks_files *l, FILE *out)
{
    char a[QUERY_FORMAT_MAX], b[QUERY_FORMAT_MAX];
    size_t k = leaks_files_n(l);
    guint n_flagged = leaks_files_flagged(l), n = leaks_files_count(l);
    if (n_flagged == 0)
        fprintf(out, "no leak suspects: no type kept growing over %zu files\n", k);
    else
        fprintf(out, "leak suspects: %u %s kept growing over %zu files\n", n_flagged,
                n_flagged == 1 ? "type" : "types", k);
    for (size_t i = 0; i < k; i++) {
        const char *path;
        int64_t snapshot, gc;
        leaks_files_file_get(l, i, &path, &snapshot, &gc);
        fprintf(out, "  %zu. %s, snapshot %" PRId64 " (GC %" PRId64 ")\n", i + 1, path, snapshot,
                gc);
    }
    if (n == 0)
        return;
    g_autoptr(query_table) table = query_table_new(files_columns, G_N_ELEMENTS(files_columns));
    for (guint i = 0; i < n; i++) {
        leaks_files_row r;
        leaks_files_row_get(l, i, &r);
        g_autofree char *sv = series_text(r.counts, k);
        if (r.flagged)
            query_table_addf(table, "%u", i + 1);
        else
            query_table_add(table, "-");
        query_table_add(table, signed_count(r.growth_count, a));
        query_table_add(table, signed_size(r.growth_bytes, b));
        query_table_add(table, sv);
        query_table_add(table, r.type);
    }
    query_table_print(table, out);
}

/* `leaks FILE --with FILE2...`. */
static int leaks_files_run(const char *const *paths, size_t n, uint64_t top, gboolean all,
                           gboolean json)
{
    g_autoptr(GError) error = NULL;
    g_autoptr(leaks_files) found = leaks_files_find(paths, n, top, all, &error);
    if (!found)
        return query_error_report(error);
    if (json) {
        query_json_rows rows;
        json_t *head = leaks_files_json_head(found);
        query_json_rows_begin(&rows, stdout, head);
        json_decref(head);
        for (guint i = 0; i < leaks_files_count(found); i++)
            query_json_rows_add(&rows, leaks_files_json_row(found, i));
        query_json_rows_end(&rows);
    } else {
        leaks_files_print(found, stdout);
    }
    query_note_print(leaks_files_note(found), json);
    return 0;
}

int cmd_leaks(int argc, char **argv)
{
    int status = 1;
    gboolean json = FALSE, all = FALSE, progress_flag = FALSE;
    const char *path = NULL, *top_text = NULL;
    const query_option options[] = {
        {"json", QUERY_OPT_FLAG, &json},
        {"top", QUERY_OPT_VALUE, &top_text},
        {"all", QUERY_OPT_FLAG, &all},
        {"progress", QUERY_OPT_FLAG, &progress_flag},
        {NULL, 0, NULL},
    };
    g_autoptr(GError) error = NULL;
    g_autoptr(query_progress) progress = NULL;
    g_autoptr(leaks) found = NULL;
    uint64_t top = 10;
    sqlite3 *db = NULL;

    /* --with FILE2 [FILE3...]: the operands after it are more files (taken out before the
     * options' parse, which takes one operand) */
    g_autofree char **args = g_new0(char *, argc + 1);
    g_autoptr(GPtrArray) files = g_ptr_array_new();
    int n_args = 0;
    gboolean with = FALSE;
    for (int i = 0; i < argc; i++) {
        if (strcmp(argv[i], "--with") == 0) {
            with = TRUE;
            continue;
        }
        if (with && argv[i][0] != '-') {
            g_ptr_array_add(files, argv[i]);
            continue;
        }
        if (strcmp(argv[i], "--top") == 0 && i + 1 < argc) { /* its value is no file */
            args[n_args++] = argv[i++];
        }
        args[n_args++] = argv[i];
    }
    if (!query_args_take(n_args, args, options, &path, &status, &error))
        goto out;
    if (top_text && !query_args_parse_uint("leaks", "top", top_text, 1, INT64_MAX,
                                           "a positive number", &top, &error))
        goto out;
    if (with && files->len == 0) {
        g_set_error(&error, QUERY_ERROR, QUERY_ERROR_USAGE,
                    "leaks: --with needs one file or more to compare FILE with");
        goto out;
    }
    if (with) {
        g_ptr_array_insert(files, 0, (gpointer)path);
        return leaks_files_run((const char *const *)files->pdata, files->len,
                               top_text ? top : UINT64_MAX, all, json);
    }
    db = query_db_open(path, &error);
    if (!db)
        goto out;
    progress = query_progress_new("leaks", progress_flag);
    found = leaks_find(db, path, top, all, progress, &error);
    if (!found)
        goto out;
    query_progress_done(progress);
    if (json) {
        query_json_rows rows;
        json_t *head = leaks_json_head(found);
        query_json_rows_begin(&rows, stdout, head);
        json_decref(head);
        for (guint i = 0; i < leaks_count(found); i++)
            query_json_rows_add(&rows, leaks_json_row(found, i));
        query_json_rows_end(&rows);
    } else {
        leaks_print(found, stdout);
    }
    query_note_print(leaks_series_note(found), json);
    if (!query_output_finish_retained(db, path, progress, json, &error))
        goto out;
    status = 0;
out:
    g_clear_pointer(&found, leaks_free);
    sqlite3_close(db);
    if (error)
        query_error_report(error);
    return status;
}
