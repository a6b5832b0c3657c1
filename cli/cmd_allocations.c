/* cmd_allocations.c — `heaplens allocations FILE [--json] [--top K] [--thread TID|NAME]
 * [--by type|site] [--between FROM..TO]`: allocated count and bytes per type, most bytes first
 * (query/allocations.h), between two checkpoints of the program (query/checkpoints.h), or the
 * counted sites of a recording made with --count (query/count_sites.h). */
#include "cli/cli.h"
#include "cli/commands.h"
#include "query/allocations.h"
#include "query/checkpoints.h"
#include "query/count_sites.h"

#include <string.h>

/* What a count of a site is, and what no site counts (README, "Counted sites"). */
static const char sites_exact[] =
    "exact: every execution of the allocating instruction while counting was on";
static const char sites_not_counted[] =
    "allocations in methods not matched, in the runtime's native code (strings, "
    "reflection, MemberwiseClone) and in dynamic methods; calls already running when counting "
    "started; which generic instantiation allocated at a shared site";

static const query_column sites_columns[] = {
    {"count", QUERY_ALIGN_RIGHT, NULL},
    {"method", QUERY_ALIGN_LEFT, NULL},
    {"IL", QUERY_ALIGN_LEFT, NULL},
    {"kind", QUERY_ALIGN_LEFT, NULL},
    {"type", QUERY_ALIGN_LEFT, NULL},
};

/* A site's caveat, or NULL: what the flags say about its count. */
static const char *site_caveat(const query_count_site *s)
{
    if (s->maybe_none)
        return "may allocate nothing (generic parameter or unplaced type)";
    if (s->may_elide)
        return "the JIT may fold this box away";
    return NULL;
}

static gboolean sites_print(sqlite3 *db, const char *path, gboolean json, uint64_t top,
                            GError **error)
{
    query_count_sites s;
    if (!query_count_sites_read(db, path, &s, error))
        return FALSE;
    if (json) {
        json_t *refused = json_array();
        for (guint i = 0; i < s.refused->len; i++) {
            const query_count_refused *r = &g_array_index(s.refused, query_count_refused, i);
            json_array_append_new(refused, json_pack("{s:o, s:o, s:o}", "module",
                                                     query_json_string(r->module), "method",
                                                     query_json_string(r->method), "reason",
                                                     query_json_string(r->reason)));
        }
        json_t *head = json_pack("{s:s, s:I, s:I, s:o, s:s}", "by", "site", "sites",
                                 (json_int_t)s.sites->len, "methods", (json_int_t)s.methods,
                                 "not_rewritten", refused, "not_counted", sites_not_counted);
        query_json_rows rows;
        query_json_rows_begin(&rows, stdout, head);
        json_decref(head);
        for (guint i = 0; i < s.sites->len && i < top; i++) {
            const query_count_site *c = &g_array_index(s.sites, query_count_site, i);
            const char *caveat = site_caveat(c);
            json_t *row = json_pack("{s:o, s:o, s:I, s:s, s:o, s:I, s:b}", "module",
                                    query_json_string(c->module), "method",
                                    query_json_string(c->method), "il_offset",
                                    (json_int_t)c->il_offset, "kind", c->kind, "type",
                                    query_json_string(c->type), "count", (json_int_t)c->count,
                                    "exact", caveat == NULL);
            if (caveat)
                json_object_set_new(row, "note", json_string(caveat));
            query_json_rows_add(&rows, row);
        }
        query_json_rows_end(&rows);
    } else {
        printf("counted sites: %u in %" G_GUINT64_FORMAT " method%s (%s)\n", s.sites->len,
               s.methods, s.methods == 1 ? "" : "s", sites_exact);
        g_autoptr(query_table) table = query_table_new(sites_columns, G_N_ELEMENTS(sites_columns));
        char count[QUERY_FORMAT_MAX], il[16];
        for (guint i = 0; i < s.sites->len && i < top; i++) {
            const query_count_site *c = &g_array_index(s.sites, query_count_site, i);
            const char *caveat = site_caveat(c);
            g_autofree char *type = caveat ? g_strdup_printf("%s (%s)", c->type, caveat)
                                           : g_strdup(c->type);
            snprintf(il, sizeof il, "IL_%04" G_GINT64_MODIFIER "x", c->il_offset);
            query_table_add(table, query_count_format(c->count, count));
            query_table_add(table, c->method);
            query_table_add(table, il);
            query_table_add(table, c->kind);
            query_table_add(table, type);
        }
        if (s.sites->len)
            query_table_print(table, stdout);
        /* Matched methods with nothing to count (no allocating instruction; abstract or extern:
         * no IL) are many with wide patterns: counted here, listed by --json. */
        guint no_site = 0, no_body = 0;
        for (guint i = 0; i < s.refused->len; i++) {
            const query_count_refused *r = &g_array_index(s.refused, query_count_refused, i);
            if (strcmp(r->reason, "no allocating instruction") == 0)
                no_site++;
            else if (g_str_has_prefix(r->reason, "no IL body"))
                no_body++;
            else
                printf("not rewritten: %s (%s)\n", r->method, r->reason);
        }
        if (no_site || no_body)
            printf("matched with nothing to count: %u without an allocating instruction, %u "
                   "without IL (abstract, extern)\n", no_site, no_body);
        printf("not counted: %s\n", sites_not_counted);
    }
    query_count_sites_clear(&s);
    return TRUE;
}

static const query_column allocations_columns[] = {
    {"count", QUERY_ALIGN_RIGHT, NULL},
    {"bytes", QUERY_ALIGN_RIGHT, NULL},
    {"type", QUERY_ALIGN_LEFT, NULL},
};

int cmd_allocations(int argc, char **argv)
{
    int status = 1;
    gboolean json = FALSE;
    const char *path = NULL;
    const char *top_text = NULL;
    const char *thread = NULL;
    const char *by = NULL;
    static const char *const by_names[] = {"type", "site"};
    guint by_index = 0;
    const char *between = NULL;
    int64_t from_gc = 0, to_gc = INT64_MAX;
    const query_option options[] = {
        {"between", QUERY_OPT_VALUE, &between},
        {"json", QUERY_OPT_FLAG, &json},
        {"top", QUERY_OPT_VALUE, &top_text},
        {"thread", QUERY_OPT_VALUE, &thread},
        {"by", QUERY_OPT_VALUE, &by},
        {NULL, 0, NULL},
    };
    g_autoptr(GError) error = NULL;
    g_auto(query_estimates) estimates = {0};
    query_totals totals = {0};
    g_autoptr(query_table) table = NULL;
    g_autofree char *note = NULL;
    g_autoptr(GArray) types = NULL;
    query_json_rows rows;
    uint64_t top = G_MAXUINT64;
    gboolean shown_estimated = FALSE;
    sqlite3 *db = NULL;
    char count[QUERY_FORMAT_MAX];
    char bytes[QUERY_FORMAT_MAX];
    char types_text[QUERY_FORMAT_MAX];

    if (!query_args_take(argc, argv, options, &path, &status, &error))
        goto out;
    if (top_text && !query_args_parse_uint(argv[0], "top", top_text, 1, G_MAXINT64,
                                           "a positive number", &top, &error))
        goto out;
    if (by && !query_args_parse_choice("allocations", "by", by, by_names, G_N_ELEMENTS(by_names),
                                       &by_index, &error))
        goto out;
    if (by_index == 1 && thread) {
        g_set_error(&error, QUERY_ERROR, QUERY_ERROR_USAGE,
                    "allocations: --thread does not go with --by site (sites count every thread)");
        goto out;
    }
    db = query_db_open(path, &error);
    if (db && by_index == 1) {
        if (!sites_print(db, path, json, top, &error) || !query_db_note_print(db, json, &error) ||
            !query_output_finish(stdout, &error))
            goto out;
        status = 0;
        goto out;
    }
    if (!db || (between && !checkpoint_range(db, path, argv[0], between, &from_gc, &to_gc,
                                             &error)) ||
        !(types = query_allocations_read_between(db, path, thread, from_gc, to_gc, &estimates,
                                                 &totals, &error)))
        goto out;
    note = query_estimates_note_new(&estimates);

    /* The total: the recording's, with its terms in words (the same as info and stacks); of a
     * thread or between checkpoints, the sum of its rows. */
    const gboolean part = thread || between;
    int64_t part_count = 0, part_bytes = 0;
    for (guint i = 0; part && i < types->len; i++) {
        const query_allocation *r = &g_array_index(types, query_allocation, i);
        part_count = query_add_saturating(part_count, r->count);
        part_bytes = query_add_saturating(part_bytes, r->bytes);
    }
    if (json) {
        json_t *head = note ? query_estimates_json(&estimates) : json_object();
        /* "estimated": some figure of this document is an estimate (its total, a row; each row
         * says its own). Per thread, a sampled or attach recording knows only its samples'
         * threads: the rows of one thread are estimates even where the census made the totals
         * per type exact (the text says "ESTIMATED from the allocation samples"). */
        if (thread && estimates.uncounted) {
            json_object_set_new(head, "estimated", json_true());
            json_object_set_new(head, "exact_per_type", json_false());
        } else if (note) {
            /* of a part (--between), its rows decide: without the census each is an estimate */
            gboolean estimated = part ? types->len > 0 && estimates.estimated && !estimates.census
                                      : query_totals_estimated(&totals, &estimates);
            for (guint i = 0; part && !estimated && i < types->len; i++) {
                const query_allocation *r = &g_array_index(types, query_allocation, i);
                estimated = r->estimated_count > 0 || r->estimated_bytes > 0;
            }
            json_object_set_new(head, "estimated", json_boolean(estimated));
        }
        json_object_set_new(head, "total",
                            part ? json_pack("{s:I, s:I}", "count", (json_int_t)part_count,
                                             "bytes", (json_int_t)part_bytes)
                                 : query_totals_json(&totals, &estimates));
        if (between)
            json_object_set_new(head, "between", json_pack("{s:s, s:I, s:I}", "checkpoints",
                                                           between, "from_gc",
                                                           (json_int_t)from_gc, "to_gc",
                                                           (json_int_t)to_gc));
        query_json_rows_begin(&rows, stdout, head);
        json_decref(head);
    } else {
        if (note)
            printf("%s\n\n", note);
        if (between)
            printf("between checkpoints %s: GC intervals %" G_GINT64_FORMAT " to %" G_GINT64_FORMAT
                   " (allocations after GC %" G_GINT64_FORMAT " began, before GC %" G_GINT64_FORMAT
                   " began)\n\n",
                   between, from_gc, to_gc, from_gc - 1, to_gc);
        /* Per thread, a sampled or attach recording knows only its samples' threads: every
         * figure of a thread is an estimate (the note says so too). */
        gboolean thread_estimated = thread && estimates.uncounted;
        const char *approx = thread_estimated || (!part && totals.estimated > 0) ? "~" : "";
        printf("%s%s %s (%s%s) of %s %s", approx,
               query_count_format(part ? part_count : totals.count, count),
               (part ? part_count : totals.count) == 1 ? "allocation" : "allocations", approx,
               query_size_format(part ? part_bytes : totals.bytes, bytes),
               query_count_format(types->len, types_text), types->len == 1 ? "type" : "types");
        if (thread) {
            printf(" by thread %s%s\n\n", thread,
                   thread_estimated ? ", ESTIMATED from the allocation samples" : "");
        } else if (between) {
            fputs("\n\n", stdout);
        } else {
            g_autoptr(GPtrArray) terms = query_totals_terms_new(&totals, &estimates);
            fputc('\n', stdout);
            for (guint i = 0; i < terms->len; i++)
                printf("  %s\n", (const char *)g_ptr_array_index(terms, i));
            fputc('\n', stdout);
        }
        table = query_table_new(allocations_columns, G_N_ELEMENTS(allocations_columns));
    }
    for (guint i = 0; i < types->len && i < top; i++) {
        const query_allocation *r = &g_array_index(types, query_allocation, i);
        /* A row with a part the samples estimate says so (sampled and attach recordings). */
        const gboolean row_estimated = r->estimated_count > 0 || r->estimated_bytes > 0;
        shown_estimated |= row_estimated;
        if (json) {
            json_t *row = json_pack("{s:o, s:I, s:I}", "type", query_json_string(r->name),
                                    "count", (json_int_t)r->count, "bytes",
                                    (json_int_t)r->bytes);
            if (estimates.uncounted) {
                json_object_set_new(row, "estimated", json_boolean(row_estimated));
                json_object_set_new(row, "estimated_count",
                                    json_integer((json_int_t)r->estimated_count));
                json_object_set_new(row, "estimated_bytes",
                                    json_integer((json_int_t)r->estimated_bytes));
            }
            query_json_rows_add(&rows, row);
        } else {
            const char *mark = row_estimated ? "~" : "";
            query_table_addf(table, "%s%s", mark, query_count_format(r->count, count));
            query_table_addf(table, "%s%s", mark, query_size_format(r->bytes, bytes));
            query_table_add(table, r->name);
        }
    }
    if (json)
        query_json_rows_end(&rows);
    else if (types->len == 0)
        fputs(thread ? "no allocation by this thread was recorded\n"
                     : "no allocation was recorded\n",
              stdout);
    else
        query_table_print(table, stdout);
    if (!json && shown_estimated && !thread)
        fputs("~: the row's figures include allocations estimated from the samples (after the "
              "last GC, or in a GC interval no census counted)\n",
              stdout);
    if (!query_db_note_print(db, json, &error) || !query_output_finish(stdout, &error))
        goto out;
    status = 0;
out:
    sqlite3_close(db);
    if (error)
        query_error_report(error);
    return status;
}
