/* cmd_survivors.c — `heaplens survivors FILE [--gc N] [--top K] [--by age] [--json]`: objects alive right
 * after GC N, grouped by generation and type — or, with --by age, by how many GCs they have
 * survived (the object-age histogram), then generation and type (query/survivors.h). */
#include "cli/cli.h"
#include "cli/commands.h"
#include "query/survivors.h"

#include <inttypes.h>

static const query_column survivors_age_columns[] = {
    {"age", QUERY_ALIGN_RIGHT, NULL},
    {"gen", QUERY_ALIGN_LEFT, NULL},
    {"count", QUERY_ALIGN_RIGHT, NULL},
    {"bytes", QUERY_ALIGN_RIGHT, NULL},
    {"type", QUERY_ALIGN_LEFT, NULL},
};

static const query_column survivors_columns[] = {
    {"gen", QUERY_ALIGN_LEFT, NULL},
    {"count", QUERY_ALIGN_RIGHT, NULL},
    {"bytes", QUERY_ALIGN_RIGHT, NULL},
    {"type", QUERY_ALIGN_LEFT, NULL},
};

static void survivors_json_print(const query_survivors *s, gboolean by_age)
{
    query_json_rows rows;
    json_t *head = by_age ? json_pack("{s:I, s:s, s:b}", "gc", (json_int_t)s->gc, "by", "age",
                                      "estimated", s->estimated || s->ages_estimated)
                          : json_pack("{s:I, s:b}", "gc", (json_int_t)s->gc, "estimated",
                                      s->estimated);
    /* over every group, as the text's "alive after GC N: C objects, B (the K largest of G
     * groups)": with --top the rows alone cannot give them */
    json_object_set_new(head, "total",
                        json_pack("{s:I, s:I, s:I}", "count", (json_int_t)s->total_count, "bytes",
                                  (json_int_t)s->total_bytes, "groups",
                                  (json_int_t)s->total_groups));
    query_json_rows_begin(&rows, stdout, head);
    json_decref(head);
    for (guint i = 0; i < s->groups->len; i++) {
        const query_survivor_group *g = &g_array_index(s->groups, query_survivor_group, i);
        if (by_age)
            query_json_rows_add(&rows, json_pack("{s:I, s:I, s:o, s:I, s:I}", "age",
                                                 (json_int_t)g->age, "generation",
                                                 (json_int_t)g->generation, "type",
                                                 query_json_string(g->type), "count",
                                                 (json_int_t)g->count, "bytes",
                                                 (json_int_t)g->bytes));
        else
            query_json_rows_add(&rows, json_pack("{s:I, s:o, s:I, s:I}", "generation",
                                                 (json_int_t)g->generation, "type",
                                                 query_json_string(g->type), "count",
                                                 (json_int_t)g->count, "bytes",
                                                 (json_int_t)g->bytes));
    }
    query_json_rows_end(&rows);
}

static void survivors_text_print(const query_survivors *s, gboolean by_age, uint64_t top)
{
    char name[QUERY_FORMAT_MAX], count[QUERY_FORMAT_MAX], bytes[QUERY_FORMAT_MAX];
    g_autoptr(query_table) table =
        by_age ? query_table_new(survivors_age_columns, G_N_ELEMENTS(survivors_age_columns))
               : query_table_new(survivors_columns, G_N_ELEMENTS(survivors_columns));
    for (guint i = 0; i < s->groups->len; i++) {
        const query_survivor_group *g = &g_array_index(s->groups, query_survivor_group, i);
        if (by_age)
            query_table_addf(table, "%" PRId64, g->age);
        query_table_add(table, query_generation_name(g->generation, name));
        query_table_add(table, query_count_format(g->count, count));
        query_table_add(table, query_size_format(g->bytes, bytes));
        query_table_add(table, g->type);
    }
    printf("alive after GC %" PRId64 ": %s %s, %s", s->gc,
           query_count_format(s->total_count, count), s->total_count == 1 ? "object" : "objects",
           query_size_format(s->total_bytes, bytes));
    if (top && (uint64_t)s->total_groups > top) {
        char shown[QUERY_FORMAT_MAX], groups[QUERY_FORMAT_MAX]; /* csc's said "of 3062 groups" */
        printf(" (the %s largest of %s groups)", query_count_format((int64_t)top, shown),
               query_count_format(s->total_groups, groups));
    }
    printf(by_age ? "; age = GCs survived" : "");
    /* Sampled mode between snapshots: the followed samples, each standing for its weight. */
    printf(s->estimated ? "; ESTIMATED from the allocation samples' objects" : "");
    /* Objects a snapshot named count their GCs from it: ages are at least these. */
    printf(s->ages_estimated ? "; ages ESTIMATED: an object a snapshot named counts its GCs from "
                               "that snapshot (at least)\n"
                             : "\n");
    if (query_table_rows(table) > 0)
        query_table_print(table, stdout);
}

int cmd_survivors(int argc, char **argv)
{
    int status = 1;
    gboolean json = FALSE;
    const char *path = NULL;
    const char *gc_text = NULL;
    const char *by = NULL;
    const char *top_text = NULL;
    uint64_t top = 0;
    const query_option options[] = {
        {"json", QUERY_OPT_FLAG, &json},
        {"gc", QUERY_OPT_VALUE, &gc_text},
        {"by", QUERY_OPT_VALUE, &by},
        {"top", QUERY_OPT_VALUE, &top_text},
        {NULL, 0, NULL},
    };
    static const char *const by_names[] = {"generation", "age"};
    guint by_index = 0;
    g_autoptr(GError) error = NULL;
    query_survivors survivors = {0};
    sqlite3 *db = NULL;

    if (!query_args_take(argc, argv, options, &path, &status, &error))
        goto out;
    if (by && !query_args_parse_choice("survivors", "by", by, by_names, G_N_ELEMENTS(by_names),
                                       &by_index, &error))
        goto out;
    if (top_text && !query_args_parse_uint(argv[0], "top", top_text, 1, G_MAXINT64,
                                           "a positive number", &top, &error))
        goto out;
    db = query_db_open(path, &error);
    if (!db || !query_survivors_read(db, path, gc_text, by_index == 1, top, &survivors, &error))
        goto out;
    if (json)
        survivors_json_print(&survivors, by_index == 1);
    else
        survivors_text_print(&survivors, by_index == 1, top);
    if (!query_db_note_print(db, json, &error) || !query_output_finish(stdout, &error))
        goto out;
    status = 0;
out:
    query_survivors_clear(&survivors);
    sqlite3_close(db);
    if (error)
        query_error_report(error);
    return status;
}
