/* cmd_stacks.c — `heaplens stacks FILE [--type NAME] [--top K] [--by allocated|survived|mid-life]
 * [--gc N | --interval A..B] [--sort bytes|count] [--json] [--speedscope OUT]`: the allocation
 * sites (stack and type) with the most estimated bytes, innermost frame first (stacks.h). */
#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/output_file.h"
#include "query/stacks.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

#define STACKS_DEFAULT_TOP 10

static const char *const by_names[] = {"allocated", "survived", "mid-life"}; /* stacks_by */
static const char *const sort_names[] = {"bytes", "count"};                     /* stacks_sort */

/* What the rows are, in words, for the text header. */
static const char *const by_words[] = {
    "",
    ", promoted to gen2 (survived)",
    ", promoted to gen2 and then collected there (mid-life crisis)",
};

static const char *percent(double part, double whole, char buf[QUERY_FORMAT_MAX])
{
    if (whole <= 0)
        return "-";
    g_snprintf(buf, QUERY_FORMAT_MAX, "%.1f%%", 100.0 * part / whole);
    return buf;
}

static void stacks_text_print(const stacks_result *r, const stacks_query *q, const char *path,
                              FILE *out)
{
    char bytes[QUERY_FORMAT_MAX], count[QUERY_FORMAT_MAX], pct[QUERY_FORMAT_MAX];
    g_autofree char *sampling = stacks_sampling_text_new(&r->sampling);
    fprintf(out, "allocations of %s", path);
    if (q->type)
        fprintf(out, ", type %s", q->type);
    if (q->gc_from && q->gc_from == q->gc_to)
        fprintf(out, ", before GC %" PRId64, q->gc_from);
    else if (q->gc_from)
        fprintf(out, ", before GCs %" PRId64 " to %" PRId64, q->gc_from, q->gc_to);
    fprintf(out, "%s, by call stack: %s, %s\n(%s)\n", by_words[q->by],
            query_count_format(stacks_round(r->total_count), count),
            query_size_format(stacks_round(r->total_bytes), bytes), sampling);
    if (r->sites->len == 0) {
        fputs("no sampled allocation matches\n", out);
        return;
    }
    if (r->sites_all > r->sites->len)
        fprintf(out, "the %u heaviest of %u sites by %s, innermost frame first:\n", r->sites->len,
                r->sites_all, sort_names[q->sort]);
    else
        fprintf(out, "%u %s by %s, innermost frame first:\n", r->sites->len,
                r->sites->len == 1 ? "site" : "sites",
                sort_names[q->sort]);
    for (guint i = 0; i < r->sites->len; i++) {
        const stacks_site *s = &g_array_index(r->sites, stacks_site, i);
        double measure = q->sort == STACKS_SORT_COUNT ? s->count : s->bytes;
        double whole = q->sort == STACKS_SORT_COUNT ? r->total_count : r->total_bytes;
        fprintf(out, "\n#%u  %s  %s %s  %s  %s  (%" PRId64 " %s)\n", i + 1,
                query_size_format(stacks_round(s->bytes), bytes),
                query_count_format(stacks_round(s->count), count),
                stacks_round(s->count) == 1 ? "allocation" : "allocations",
                percent(measure, whole, pct), s->type, s->samples,
                s->samples == 1 ? "sample" : "samples");
        if (s->stack_id < 0)
            fprintf(out, "      %s\n", STACKS_NO_STACK_FRAME);
        for (guint f = 0; f < s->depth; f++)
            fprintf(out, "      %s\n", stacks_site_frame(r, s, f));
    }
}

static void stacks_json_print(const stacks_result *r, const stacks_query *q, FILE *out)
{
    query_json_rows rows;
    json_t *head = json_pack(
        "{s:o, s:s, s:s, s:o, s:o, s:{s:I, s:I, s:I, s:I}}", "sampling",
        stacks_sampling_json(&r->sampling), "by", by_names[q->by], "sort",
        sort_names[q->sort], "type", query_json_string(q->type),
        "gcs",
        q->gc_from ? json_pack("[I, I]", (json_int_t)q->gc_from, (json_int_t)q->gc_to)
                   : json_null(),
        "total", "count", (json_int_t)stacks_round(r->total_count), "bytes",
        (json_int_t)stacks_round(r->total_bytes), "samples", (json_int_t)r->total_samples, "sites",
        (json_int_t)r->sites_all);
    query_json_rows_begin(&rows, out, head);
    json_decref(head);
    for (guint i = 0; i < r->sites->len; i++)
        query_json_rows_add(&rows,
                            stacks_site_json(r, &g_array_index(r->sites, stacks_site, i)));
    query_json_rows_end(&rows);
}

/* ---- speedscope ----------------------------------------------------------------------- */

/* A speedscope file (https://www.speedscope.app/file-format-schema.json): the frames shared,
 * and two "sampled" profiles over the same stacks, one weighted by estimated bytes, one by
 * estimated allocations. A stack goes from the outermost frame (the root) to the leaf, the
 * type allocated, written as "new TYPE" so that it is never taken for a method. */
static json_t *speedscope_new(const stacks_result *r, const stacks_query *q, const char *path)
{
    json_t *frames = json_array();
    json_t *samples = json_array();
    json_t *by_bytes = json_array();
    json_t *by_count = json_array();
    g_autoptr(GHashTable) leaf_index = g_hash_table_new(g_str_hash, g_str_equal);
    guint n_frames = r->frame_names->len;
    guint no_stack = G_MAXUINT;
    char version[64];
    for (guint i = 0; i < n_frames; i++)
        json_array_append_new(
            frames, json_pack("{s:o}", "name",
                              query_json_string(g_ptr_array_index(r->frame_names, i))));
    for (guint i = 0; i < r->sites->len; i++) {
        const stacks_site *s = &g_array_index(r->sites, stacks_site, i);
        json_t *stack = json_array();
        if (s->stack_id < 0) {
            if (no_stack == G_MAXUINT) {
                no_stack = n_frames++;
                json_array_append_new(frames, json_pack("{s:s}", "name", STACKS_NO_STACK_FRAME));
            }
            json_array_append_new(stack, json_integer(no_stack));
        }
        for (guint f = s->depth; f-- > 0;)
            json_array_append_new(stack, json_integer(s->frames[f]));
        gpointer leaf = g_hash_table_lookup(leaf_index, s->type);
        if (!leaf) {
            g_autofree char *name = g_strconcat("new ", s->type, NULL);
            json_array_append_new(frames, json_pack("{s:o}", "name", query_json_string(name)));
            leaf = GUINT_TO_POINTER(++n_frames);
            g_hash_table_insert(leaf_index, (gpointer)s->type, leaf);
        }
        json_array_append_new(stack, json_integer(GPOINTER_TO_UINT(leaf) - 1));
        json_array_append_new(samples, stack);
        json_array_append_new(by_bytes, json_integer(stacks_round(s->bytes)));
        json_array_append_new(by_count, json_integer(stacks_round(s->count)));
    }
    g_autofree char *what = g_strdup_printf("%s%s%s", by_names[q->by], q->type ? ", " : "",
                                            q->type ? q->type : "");
    g_autofree char *bytes_name = g_strdup_printf("%s: bytes %s (estimated)", path, what);
    g_autofree char *count_name = g_strdup_printf("%s: allocations %s (estimated)", path, what);
    g_snprintf(version, sizeof version, "heaplens@%s", HEAPLENS_VERSION);
    return json_pack(
        "{s:s, s:{s:o}, s:[{s:s, s:o, s:s, s:i, s:I, s:o, s:o}, {s:s, s:o, s:s, s:i, s:I, s:O, "
        "s:o}], s:o, s:i, s:s}",
        "$schema", "https://www.speedscope.app/file-format-schema.json", "shared", "frames",
        frames, "profiles", "type", "sampled", "name", query_json_string(bytes_name), "unit",
        "bytes", "startValue", 0, "endValue", (json_int_t)stacks_round(r->total_bytes), "samples",
        samples, "weights", by_bytes, "type", "sampled", "name", query_json_string(count_name),
        "unit", "none", "startValue", 0, "endValue", (json_int_t)stacks_round(r->total_count),
        "samples", samples, "weights", by_count, "name", query_json_string(path),
        "activeProfileIndex", 0, "exporter", version);
}

static gboolean speedscope_write(const stacks_result *r, const stacks_query *q, const char *path,
                                 const char *output, GError **error)
{
    query_output_file file = {0};
    gboolean ok = FALSE;
    json_t *doc = speedscope_new(r, q, path);
    const char *const inputs[] = {path, NULL};
    if (!query_output_file_open(&file, output, inputs, error))
        goto out;
    json_dumpf(doc, file.out, JSON_COMPACT);
    fputc('\n', file.out);
    if (!query_output_file_commit(&file, error))
        goto out;
    ok = TRUE;
out:
    json_decref(doc);
    query_output_file_release(&file);
    return ok;
}

int cmd_stacks(int argc, char **argv)
{
    int status = 1;
    gboolean json = FALSE;
    const char *path = NULL, *type = NULL, *top_text = NULL, *by = NULL, *gc_text = NULL,
               *interval = NULL, *sort = NULL, *speedscope = NULL;
    const query_option options[] = {
        {"json", QUERY_OPT_FLAG, &json},
        {"type", QUERY_OPT_VALUE, &type},
        {"top", QUERY_OPT_VALUE, &top_text},
        {"by", QUERY_OPT_VALUE, &by},
        {"gc", QUERY_OPT_VALUE, &gc_text},
        {"interval", QUERY_OPT_VALUE, &interval},
        {"sort", QUERY_OPT_VALUE, &sort},
        {"speedscope", QUERY_OPT_VALUE, &speedscope},
        {NULL, 0, NULL},
    };
    g_autoptr(GError) error = NULL;
    g_autoptr(stacks_result) result = NULL;
    stacks_query q = {.by = STACKS_BY_ALLOCATED, .sort = STACKS_SORT_BYTES};
    uint64_t top = STACKS_DEFAULT_TOP;
    sqlite3 *db = NULL;

    switch (query_args_parse(argc, argv, options, &path, &error)) {
    case QUERY_ARGS_HELP:
        status = 0;
        goto out;
    case QUERY_ARGS_ERROR:
        goto out;
    case QUERY_ARGS_OK:
        break;
    }
    guint by_index = q.by, sort_index = q.sort;
    if ((by && !query_args_parse_choice("stacks", "by", by, by_names, G_N_ELEMENTS(by_names),
                                        &by_index, &error)) ||
        (sort && !query_args_parse_choice("stacks", "sort", sort, sort_names,
                                          G_N_ELEMENTS(sort_names), &sort_index, &error)))
        goto out;
    q.by = (stacks_by)by_index;
    q.sort = (stacks_sort)sort_index;
    if (top_text && !query_args_parse_uint(argv[0], "top", top_text, 1, G_MAXUINT32,
                                           "a positive number", &top, &error))
        goto out;
    if (speedscope && !*speedscope) {
        g_set_error(&error, QUERY_ERROR, QUERY_ERROR_USAGE, "stacks: --speedscope needs a file name");
        goto out;
    }
    /* The speedscope file holds every site (a viewer shows what is small); the rows, the top K. */
    q.top = speedscope && !top_text ? 0 : (guint)top;
    db = query_db_open(path, &error);
    /* --by survived and mid-life read each sampled object's generations and death. */
    if (!db || (q.by != STACKS_BY_ALLOCATED && !query_db_objects_ensure(db, &error)) ||
        !(result = stacks_find(db, path, type, gc_text, interval, &q, &error)))
        goto out;
    if (speedscope) {
        if (!speedscope_write(result, &q, path, speedscope, &error))
            goto out;
        char bytes[QUERY_FORMAT_MAX], count[QUERY_FORMAT_MAX];
        fprintf(stderr, "heaplens: %u allocation sites (%s, %s allocations, estimated) -> %s\n",
                result->sites->len, query_size_format(stacks_round(result->total_bytes), bytes),
                query_count_format(stacks_round(result->total_count), count), speedscope);
    } else if (json) {
        stacks_json_print(result, &q, stdout);
    } else {
        stacks_text_print(result, &q, path, stdout);
    }
    if (!query_db_note_print(db, json || speedscope, &error) ||
        !query_output_finish(stdout, &error))
        goto out;
    status = 0;
out:
    sqlite3_close(db);
    if (error)
        query_error_report(error);
    return status;
}
