/* cmd_stacks.c — `heaplens stacks FILE [--type NAME] [--top K] [--depth N]
 * [--by allocated|survived|mid-life|method] [--method NAME] [--gc N | --interval A..B]
 * [--sort bytes|count] [--json] [--speedscope OUT]`: the allocation sites (stack and type) with
 * the most bytes, innermost frame first, recursion folded; or the methods, inclusive and
 * exclusive; or one method's callers and callees (stacks.h). */
#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/output_file.h"
#include "query/stacks.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

#define STACKS_DEFAULT_TOP 10
/* Frames shown per site in text: with the header and the type, a site fits a screen. */
#define STACKS_DEFAULT_DEPTH 12
/* The widest line the text aims at: a 120-column terminal. */
#define STACKS_TEXT_WIDTH 120

/* --by: the fates of stacks_by, then the view by method */
static const char *const by_names[] = {"allocated", "survived", "mid-life", "method"};
#define STACKS_BY_METHOD_INDEX 3
static const char *const sort_names[] = {"bytes", "count"}; /* stacks_sort */

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

static gboolean stacks_unfiltered(const stacks_query *q)
{
    return !q->type && !q->gc_from && q->by == STACKS_BY_ALLOCATED;
}

/* The header every view starts with: what, the total, its terms (the words of info and
 * allocations: the same total when nothing is filtered), where the figures come from. */
static void stacks_head_print(const stacks_result *r, const stacks_query *q, const char *path,
                              const char *view, FILE *out)
{
    char bytes[QUERY_FORMAT_MAX], count[QUERY_FORMAT_MAX];
    g_autofree char *sampling = stacks_sampling_text_new(r);
    fprintf(out, "allocations of %s", path);
    if (q->type)
        fprintf(out, ", type %s", q->type);
    if (q->gc_from && q->gc_from == q->gc_to)
        fprintf(out, ", before GC %" PRId64, q->gc_from);
    else if (q->gc_from)
        fprintf(out, ", before GCs %" PRId64 " to %" PRId64, q->gc_from, q->gc_to);
    fprintf(out, "%s, %s: %s, %s\n", by_words[q->by], view,
            query_count_format(stacks_round(r->total_count), count),
            query_size_format(stacks_round(r->total_bytes), bytes));
    if (stacks_unfiltered(q) && r->scaled) {
        g_autoptr(GPtrArray) terms = query_totals_terms_new(&r->totals, &r->sampling);
        for (guint i = 0; i < terms->len; i++)
            fprintf(out, "  %s\n", (const char *)g_ptr_array_index(terms, i));
    }
    /* in parentheses, wrapped at the width the text aims at */
    g_autofree char *wrapped = g_strdup_printf("(%s)", sampling);
    const char *line = wrapped;
    while (strlen(line) + (line != wrapped) > STACKS_TEXT_WIDTH) {
        const char *cut = line + STACKS_TEXT_WIDTH - (line != wrapped);
        while (cut > line && *cut != ' ')
            cut--;
        if (cut == line)
            break;
        fprintf(out, "%s%.*s\n", line == wrapped ? "" : " ", (int)(cut - line), line);
        line = cut + 1;
    }
    fprintf(out, "%s%s\n", line == wrapped ? "" : " ", line);
}

/* One frame line: indented, the fold's bracket in front, its repeats after its last frame. */
static void frame_print(const char *name, const char *bracket, const stacks_fold *closing,
                        FILE *out)
{
    char repeats[64] = "";
    if (closing && closing->repeats_min == closing->repeats_max)
        g_snprintf(repeats, sizeof repeats, "  ×%u", closing->repeats_min);
    else if (closing)
        g_snprintf(repeats, sizeof repeats, "  ×%u–%u", closing->repeats_min,
                   closing->repeats_max);
    g_autofree char *fit =
        stacks_name_fit_new(name, STACKS_TEXT_WIDTH - 8 - (guint)strlen(repeats));
    fprintf(out, "      %s%s%s\n", bracket, fit, repeats);
}

static void site_frames_print(const stacks_result *r, const stacks_site *s, guint depth,
                              FILE *out)
{
    guint shown = depth && depth < s->depth ? depth : s->depth;
    guint last_shown = 0;
    const stacks_fold *open = NULL;
    /* a fold cut short would hide its repeats: it is shown to its end */
    for (guint f = 0; f < shown || (open && f < s->depth); f++) {
        const stacks_fold *fold = stacks_site_fold_at(s, f);
        if (fold)
            open = fold;
        const char *bracket = "  ";
        const stacks_fold *closing = NULL;
        if (open && open->frames == 1) {
            closing = open;
            open = NULL;
        } else if (open) {
            gboolean last = f == open->first + open->frames - 1;
            bracket = f == open->first ? "┌ " : last ? "└ " : "│ ";
            if (last) {
                closing = open;
                open = NULL;
            }
        }
        frame_print(stacks_site_frame(r, s, f), bracket, closing, out);
        last_shown = f + 1;
    }
    shown = MAX(shown, last_shown);
    if (shown < s->depth)
        fprintf(out, "        … %u more %s\n", s->depth - shown,
                s->depth - shown == 1 ? "frame" : "frames");
}

static void stacks_text_print(const stacks_result *r, const stacks_query *q, const char *path,
                              guint depth, FILE *out)
{
    char bytes[QUERY_FORMAT_MAX], count[QUERY_FORMAT_MAX], pct[QUERY_FORMAT_MAX];
    char sites[QUERY_FORMAT_MAX], merged[QUERY_FORMAT_MAX];
    stacks_head_print(r, q, path, "by call stack", out);
    if (r->sites->len == 0) {
        fputs("no sampled allocation matches\n", out);
        return;
    }
    g_autofree char *folded =
        r->stacks_merged > 0
            ? g_strdup_printf(" (recursion folded: %s stacks merged into others)",
                              query_count_format(r->stacks_merged, merged))
            : g_strdup("");
    char shown[QUERY_FORMAT_MAX];
    query_count_format(r->sites->len, shown);
    if (r->sites_all > r->sites->len)
        fprintf(out, "the %s heaviest of %s sites by %s%s, innermost frame first:\n", shown,
                query_count_format(r->sites_all, sites), sort_names[q->sort], folded);
    else
        fprintf(out, "%s %s by %s%s, innermost frame first:\n", shown,
                r->sites->len == 1 ? "site" : "sites", sort_names[q->sort], folded);
    for (guint i = 0; i < r->sites->len; i++) {
        const stacks_site *s = &g_array_index(r->sites, stacks_site, i);
        double measure = q->sort == STACKS_SORT_COUNT ? s->count : s->bytes;
        double whole = q->sort == STACKS_SORT_COUNT ? r->total_count : r->total_bytes;
        g_autofree char *from =
            s->stacks > 1 ? g_strdup_printf(" from %u stacks", s->stacks) : g_strdup("");
        char samples[QUERY_FORMAT_MAX]; /* WebApi's heaviest site said "(3395 samples)" */
        fprintf(out, "\n#%u  %s  %s %s  %s  (%s %s%s)\n", i + 1,
                query_size_format(stacks_round(s->bytes), bytes),
                query_count_format(stacks_round(s->count), count),
                stacks_round(s->count) == 1 ? "allocation" : "allocations",
                percent(measure, whole, pct), query_count_format(s->samples, samples),
                s->samples == 1 ? "sample" : "samples", from);
        g_autofree char *type = stacks_name_fit_new(s->type, STACKS_TEXT_WIDTH - 10);
        fprintf(out, "    new %s\n", type);
        site_frames_print(r, s, depth, out);
    }
}

static json_t *stacks_json_head_new(const stacks_result *r, const stacks_query *q)
{
    json_t *total = json_pack("{s:I, s:I, s:I, s:I}", "count",
                              (json_int_t)stacks_round(r->total_count), "bytes",
                              (json_int_t)stacks_round(r->total_bytes), "samples",
                              (json_int_t)r->total_samples, "sites", (json_int_t)r->sites_all);
    if (r->methods)
        json_object_set_new(total, "methods", json_integer(r->methods_all));
    if (stacks_unfiltered(q) && r->scaled)
        json_object_set_new(total, "allocations", query_totals_json(&r->totals, &r->sampling));
    json_t *sampling = stacks_sampling_json(&r->sampling);
    json_object_set_new(sampling, "scaled", json_boolean(r->scaled));
    return json_pack("{s:o, s:s, s:s, s:o, s:o, s:o}", "sampling", sampling, "by",
                     r->methods ? "method" : by_names[q->by], "sort", sort_names[q->sort], "type",
                     query_json_string(q->type), "gcs",
                     q->gc_from ? json_pack("[I, I]", (json_int_t)q->gc_from, (json_int_t)q->gc_to)
                                : json_null(),
                     "total", total);
}

static void stacks_json_print(const stacks_result *r, const stacks_query *q, guint depth,
                              FILE *out)
{
    query_json_rows rows;
    json_t *head = stacks_json_head_new(r, q);
    query_json_rows_begin(&rows, out, head);
    json_decref(head);
    for (guint i = 0; i < r->sites->len; i++)
        query_json_rows_add(&rows,
                            stacks_site_json(r, &g_array_index(r->sites, stacks_site, i), depth));
    query_json_rows_end(&rows);
}

/* ---- by method ------------------------------------------------------------------------ */

static const query_column method_columns[] = {
    {"inclusive", QUERY_ALIGN_RIGHT, NULL}, {"%", QUERY_ALIGN_RIGHT, NULL},
    {"count", QUERY_ALIGN_RIGHT, NULL},     {"exclusive", QUERY_ALIGN_RIGHT, NULL},
    {"count", QUERY_ALIGN_RIGHT, NULL},     {"method", QUERY_ALIGN_LEFT, NULL},
};

static void methods_text_print(const stacks_result *r, const stacks_query *q, const char *path,
                               FILE *out)
{
    char a[QUERY_FORMAT_MAX], methods[QUERY_FORMAT_MAX];
    stacks_head_print(r, q, path, "by method", out);
    if (r->methods->len == 0) {
        fputs("no sampled allocation matches\n", out);
        return;
    }
    fprintf(out,
            "%s%u of %s methods by inclusive %s:\n(inclusive: allocated in the method and in what "
            "it calls, recursion once; exclusive: in the method itself)\n\n",
            r->methods_all > r->methods->len ? "the heaviest " : "", r->methods->len,
            query_count_format(r->methods_all, methods), sort_names[q->sort]);
    g_autoptr(query_table) table = query_table_new(method_columns, G_N_ELEMENTS(method_columns));
    for (guint i = 0; i < r->methods->len; i++) {
        const stacks_method *m = &g_array_index(r->methods, stacks_method, i);
        double whole = q->sort == STACKS_SORT_COUNT ? r->total_count : r->total_bytes;
        query_table_add(table, query_size_format(stacks_round(m->inclusive_bytes), a));
        query_table_add(table, percent(q->sort == STACKS_SORT_COUNT ? m->inclusive_count
                                                                     : m->inclusive_bytes,
                                       whole, a));
        query_table_add(table, query_count_format(stacks_round(m->inclusive_count), a));
        query_table_add(table, query_size_format(stacks_round(m->exclusive_bytes), a));
        query_table_add(table, query_count_format(stacks_round(m->exclusive_count), a));
        /* the numbers take about 52 columns */
        g_autofree char *name = stacks_name_fit_new(m->name, STACKS_TEXT_WIDTH - 52);
        query_table_add(table, name);
    }
    query_table_print(table, out);
}
static void methods_json_print(const stacks_result *r, const stacks_query *q, FILE *out)
{
    query_json_rows rows;
    json_t *head = stacks_json_head_new(r, q);
    query_json_rows_begin(&rows, out, head);
    json_decref(head);
    for (guint i = 0; i < r->methods->len; i++)
        query_json_rows_add(&rows,
                            stacks_method_json(&g_array_index(r->methods, stacks_method, i)));
    query_json_rows_end(&rows);
}

/* ---- one method's callers and callees -------------------------------------------------- */

static const query_column edge_columns[] = {
    {"bytes", QUERY_ALIGN_RIGHT, NULL},
    {"share", QUERY_ALIGN_RIGHT, NULL},
    {"count", QUERY_ALIGN_RIGHT, NULL},
    {NULL, QUERY_ALIGN_LEFT, NULL}, /* caller / callee */
};

static void edges_text_print(const GArray *edges, const stacks_method *m, const char *what,
                             const char *words, guint top, FILE *out)
{
    char a[QUERY_FORMAT_MAX];
    query_column columns[G_N_ELEMENTS(edge_columns)];
    memcpy(columns, edge_columns, sizeof columns);
    columns[3].header = what;
    guint shown = top && top < edges->len ? top : edges->len;
    fprintf(out, "\n%s%u %s%s (%s):\n", shown < edges->len ? "the heaviest " : "", shown, what,
            shown == 1 ? "" : "s", words);
    g_autoptr(query_table) table = query_table_new(columns, G_N_ELEMENTS(columns));
    for (guint i = 0; i < shown; i++) {
        const stacks_edge *e = &g_array_index(edges, stacks_edge, i);
        query_table_add(table, query_size_format(stacks_round(e->bytes), a));
        query_table_add(table, percent(e->bytes, m->inclusive_bytes, a));
        query_table_add(table, query_count_format(stacks_round(e->count), a));
        g_autofree char *name = stacks_name_fit_new(e->name, STACKS_TEXT_WIDTH - 36);
        query_table_add(table, name);
    }
    query_table_print(table, out);
}

static void focus_text_print(const stacks_result *r, const stacks_query *q, const char *path,
                             guint top, FILE *out)
{
    char a[QUERY_FORMAT_MAX], b[QUERY_FORMAT_MAX], c[QUERY_FORMAT_MAX], d[QUERY_FORMAT_MAX];
    char pct[QUERY_FORMAT_MAX];
    const stacks_method *m = &r->focus->method;
    stacks_head_print(r, q, path, "by call stack", out);
    g_autofree char *name = stacks_name_fit_new(m->name, STACKS_TEXT_WIDTH);
    fprintf(out, "\n%s\n", name);
    fprintf(out, "  inclusive %s, %s allocations (%s of all): in it and in what it calls\n",
            query_size_format(stacks_round(m->inclusive_bytes), a),
            query_count_format(stacks_round(m->inclusive_count), b),
            percent(m->inclusive_bytes, r->total_bytes, pct));
    fprintf(out, "  exclusive %s, %s allocations: in it\n",
            query_size_format(stacks_round(m->exclusive_bytes), c),
            query_count_format(stacks_round(m->exclusive_count), d));
    edges_text_print(r->focus->callers, m, "caller",
                     "the frame outside its outermost call; shares of its inclusive bytes", top,
                     out);
    edges_text_print(r->focus->callees, m, "callee",
                     "the frame inside its innermost call; new TYPE: allocated in it", top, out);
}

static json_t *edges_json(const GArray *edges, const stacks_method *m, guint top)
{
    json_t *list = json_array();
    for (guint i = 0; i < edges->len && (!top || i < top); i++) {
        const stacks_edge *e = &g_array_index(edges, stacks_edge, i);
        json_array_append_new(
            list, json_pack("{s:o, s:I, s:I, s:f}", "name", query_json_string(e->name), "count",
                            (json_int_t)stacks_round(e->count), "bytes",
                            (json_int_t)stacks_round(e->bytes), "share",
                            m->inclusive_bytes > 0 ? e->bytes / m->inclusive_bytes : 0.0));
    }
    return list;
}

static void focus_json_print(const stacks_result *r, const stacks_query *q, guint top, FILE *out)
{
    json_t *doc = stacks_json_head_new(r, q);
    json_object_set_new(doc, "method", stacks_method_json(&r->focus->method));
    json_object_set_new(doc, "callers", edges_json(r->focus->callers, &r->focus->method, top));
    json_object_set_new(doc, "callees", edges_json(r->focus->callees, &r->focus->method, top));
    query_json_print(doc, out);
    json_decref(doc);
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
    char version[64];
    for (guint i = 0; i < n_frames; i++)
        json_array_append_new(
            frames, json_pack("{s:o}", "name",
                              query_json_string(g_ptr_array_index(r->frame_names, i))));
    for (guint i = 0; i < r->sites->len; i++) {
        const stacks_site *s = &g_array_index(r->sites, stacks_site, i);
        json_t *stack = json_array();
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
    const char *how = r->scaled ? "scaled" : "estimated";
    g_autofree char *bytes_name = g_strdup_printf("%s: bytes %s (%s)", path, what, how);
    g_autofree char *count_name = g_strdup_printf("%s: allocations %s (%s)", path, what, how);
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
               *interval = NULL, *sort = NULL, *speedscope = NULL, *depth_text = NULL,
               *method = NULL;
    const query_option options[] = {
        {"json", QUERY_OPT_FLAG, &json},
        {"type", QUERY_OPT_VALUE, &type},
        {"top", QUERY_OPT_VALUE, &top_text},
        {"depth", QUERY_OPT_VALUE, &depth_text},
        {"by", QUERY_OPT_VALUE, &by},
        {"method", QUERY_OPT_VALUE, &method},
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
    /* text: a screenful per site; JSON: every frame unless asked */
    uint64_t depth = 0;
    sqlite3 *db = NULL;

    if (!query_args_take(argc, argv, options, &path, &status, &error))
        goto out;
    guint by_index = q.by, sort_index = q.sort;
    if ((by && !query_args_parse_choice("stacks", "by", by, by_names, G_N_ELEMENTS(by_names),
                                        &by_index, &error)) ||
        (sort && !query_args_parse_choice("stacks", "sort", sort, sort_names,
                                          G_N_ELEMENTS(sort_names), &sort_index, &error)))
        goto out;
    q.methods = by_index == STACKS_BY_METHOD_INDEX;
    q.by = q.methods ? STACKS_BY_ALLOCATED : (stacks_by)by_index;
    q.sort = (stacks_sort)sort_index;
    if (top_text && !query_args_parse_uint(argv[0], "top", top_text, 1, G_MAXUINT32,
                                           "a number from 1 to 4,294,967,295", &top, &error))
        goto out;
    if (depth_text &&
        !query_args_parse_uint(argv[0], "depth", depth_text, 1, G_MAXUINT32,
                               "a number of frames from 1 to 4,294,967,295", &depth, &error))
        goto out;
    if (!depth_text && !json)
        depth = STACKS_DEFAULT_DEPTH;
    if (speedscope && !*speedscope) {
        g_set_error(&error, QUERY_ERROR, QUERY_ERROR_USAGE, "stacks: --speedscope needs a file name");
        goto out;
    }
    if (speedscope && (q.methods || method)) {
        g_set_error(&error, QUERY_ERROR, QUERY_ERROR_USAGE,
                    "stacks: --speedscope writes the sites: not with --by method or --method");
        goto out;
    }
    if (method && q.methods) {
        g_set_error(&error, QUERY_ERROR, QUERY_ERROR_USAGE,
                    "stacks: give --by method (every method) or --method NAME (one), not both");
        goto out;
    }
    q.method = method;
    /* The speedscope file holds every site (a viewer shows what is small); the rows, the top K;
     * a method's callers and callees need every site. */
    q.top = (speedscope && !top_text) || method ? 0 : (guint)top;
    db = query_db_open(path, &error);
    /* --by survived and mid-life read each sampled object's generations and death. */
    if (!db || (q.by != STACKS_BY_ALLOCATED && !query_db_objects_ensure(db, &error)) ||
        !(result = stacks_find(db, path, type, gc_text, interval, &q, &error)))
        goto out;
    if (speedscope) {
        if (!speedscope_write(result, &q, path, speedscope, &error))
            goto out;
        /* What the file holds: with --top K the K heaviest sites only, whose figures are not
         * the total (it said "1 allocation sites (283.5 MiB, ...)" of a file of 4.2 MiB). */
        char sites[QUERY_FORMAT_MAX], all[QUERY_FORMAT_MAX], bytes[QUERY_FORMAT_MAX],
            count[QUERY_FORMAT_MAX], total_bytes[QUERY_FORMAT_MAX], total_count[QUERY_FORMAT_MAX];
        int64_t file_bytes = 0, file_count = 0; /* the file's weights: rounded per site */
        for (guint i = 0; i < result->sites->len; i++) {
            const stacks_site *s = &g_array_index(result->sites, stacks_site, i);
            file_bytes = query_add_saturating(file_bytes, stacks_round(s->bytes));
            file_count = query_add_saturating(file_count, stacks_round(s->count));
        }
        const guint n = result->sites->len;
        query_count_format(n, sites);
        if (n < result->sites_all)
            fprintf(stderr, "heaplens: the %s heaviest of %s allocation sites (%s, %s %s; of "
                            "%s, %s allocations in all) -> %s\n",
                    sites, query_count_format(result->sites_all, all),
                    query_size_format(file_bytes, bytes), query_count_format(file_count, count),
                    file_count == 1 ? "allocation" : "allocations",
                    query_size_format(stacks_round(result->total_bytes), total_bytes),
                    query_count_format(stacks_round(result->total_count), total_count),
                    speedscope);
        else
            fprintf(stderr, "heaplens: %s allocation %s (%s, %s %s) -> %s\n", sites,
                    n == 1 ? "site" : "sites",
                    query_size_format(stacks_round(result->total_bytes), bytes),
                    query_count_format(stacks_round(result->total_count), count),
                    stacks_round(result->total_count) == 1 ? "allocation" : "allocations",
                    speedscope);
    } else if (method) {
        if (json)
            focus_json_print(result, &q, (guint)top, stdout);
        else
            focus_text_print(result, &q, path, (guint)top, stdout);
    } else if (q.methods) {
        if (json)
            methods_json_print(result, &q, stdout);
        else
            methods_text_print(result, &q, path, stdout);
    } else if (json) {
        stacks_json_print(result, &q, (guint)depth, stdout);
    } else {
        stacks_text_print(result, &q, path, (guint)depth, stdout);
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
