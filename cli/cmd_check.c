/* cmd_check.c — `heaplens check FILE ASSERTION... [--json]`: memory assertions for CI
 * (query/check.h). Exit 0 when every assertion holds; 1 with one line per failed assertion on
 * stdout (what was expected, what was found, the query to see it) and one per assertion the
 * recording cannot decide (why, and how to record what it needs), every other one decided. */
#include "cli/cli.h"
#include "cli/commands.h"
#include "query/check.h"

int cmd_check(int argc, char **argv)
{
    int status = 1;
    gboolean json = FALSE, no_leaks = FALSE;
    const char *path = NULL;
    g_autoptr(GPtrArray) live = g_ptr_array_new(), allocated = g_ptr_array_new(),
                         retained = g_ptr_array_new(), sql = g_ptr_array_new();
    const query_option options[] = {
        {"json", QUERY_OPT_FLAG, &json},
        {"max-live", QUERY_OPT_LIST, live},
        {"max-allocated", QUERY_OPT_LIST, allocated},
        {"max-retained", QUERY_OPT_LIST, retained},
        {"no-leaks", QUERY_OPT_FLAG, &no_leaks},
        {"sql", QUERY_OPT_LIST, sql},
        {NULL, 0, NULL},
    };
    g_autoptr(GError) error = NULL;
    g_autoptr(GArray) results = g_array_new(FALSE, TRUE, sizeof(check_result));
    g_array_set_clear_func(results, (GDestroyNotify)check_result_clear);
    gboolean retention = FALSE;
    guint failed = 0, undecided = 0;
    sqlite3 *db = NULL;

    if (!query_args_take(argc, argv, options, &path, &status, &error))
        goto out;
    const struct {
        check_kind kind;
        GPtrArray *values;
    } groups[] = {
        {CHECK_MAX_LIVE, live},         {CHECK_MAX_ALLOCATED, allocated},
        {CHECK_MAX_RETAINED, retained}, {CHECK_SQL, sql},
    };
    if (!no_leaks && live->len + allocated->len + retained->len + sql->len == 0) {
        g_set_error(&error, QUERY_ERROR, QUERY_ERROR_USAGE,
                    "check: no assertion given; see 'heaplens check --help'");
        goto out;
    }
    if (!(db = query_db_open(path, &error)))
        goto out;
    int lower_bounds = -1; /* read once, at the first assertion that holds (check_eval) */
    for (size_t g = 0; g < G_N_ELEMENTS(groups); g++)
        for (guint i = 0; i < groups[g].values->len; i++) {
            check_result r;
            gboolean ok = check_eval(db, path, groups[g].kind,
                                     g_ptr_array_index(groups[g].values, i), &lower_bounds, &r,
                                     &error);
            g_array_append_val(results, r);
            if (!ok)
                goto out;
        }
    if (no_leaks) {
        check_result r;
        gboolean ok = check_eval(db, path, CHECK_NO_LEAKS, NULL, &lower_bounds, &r, &error);
        g_array_append_val(results, r);
        if (!ok)
            goto out;
    }
    for (guint i = 0; i < results->len; i++) {
        const check_result *r = &g_array_index(results, check_result, i);
        undecided += r->undecided != NULL;
        failed += !r->ok && !r->undecided;
        retention |= r->retention;
    }
    if (json) {
        json_t *rows = json_array();
        for (guint i = 0; i < results->len; i++) {
            const check_result *r = &g_array_index(results, check_result, i);
            gboolean decided = !r->undecided;
            json_array_append_new(
                rows, json_pack("{s:s, s:b, s:b, s:s?, s:s?, s:o, s:o, s:s?, s:s?}", "assertion",
                                r->assertion, "ok", r->ok, "decided", decided, "expected",
                                r->expected, "found", r->found, "value",
                                decided ? json_integer(r->value) : json_null(), "limit",
                                decided && r->limit >= 0 ? json_integer(r->limit) : json_null(),
                                "query", r->query, "undecided", r->undecided));
            if (decided && r->type_unknown) /* only then: the NOTE of the text output */
                json_object_set_new(json_array_get(rows, json_array_size(rows) - 1),
                                    "type_unknown", json_true());
        }
        json_t *doc = json_pack("{s:s, s:b, s:I, s:I, s:I, s:o}", "file", path, "ok",
                                failed + undecided == 0, "assertions", (json_int_t)results->len,
                                "failed", (json_int_t)failed, "undecided", (json_int_t)undecided,
                                "results", rows);
        query_json_print(doc, stdout);
        json_decref(doc);
    } else {
        for (guint i = 0; i < results->len; i++) {
            const check_result *r = &g_array_index(results, check_result, i);
            if (r->undecided)
                printf("UNDECIDED %s: %s\n", r->assertion, r->undecided);
            else if (!r->ok)
                printf("FAIL %s: expected %s, found %s; see: %s\n", r->assertion, r->expected,
                       r->found, r->query);
            else if (r->type_unknown) /* a misspelt name held silently: CI passed for ever */
                printf("NOTE %s holds, but the recording has no type of that name (misspelt? "
                       "'heaplens allocations' lists the types)\n", r->assertion);
        }
        const char *s = results->len == 1 ? "" : "s";
        if (failed && undecided)
            printf("%u of %u assertion%s failed, %u could not be decided\n", failed,
                   results->len, s, undecided);
        else if (failed)
            printf("%u of %u assertion%s failed\n", failed, results->len, s);
        else if (undecided)
            printf("%u of %u assertion%s could not be decided\n", undecided, results->len, s);
        else
            printf("%u assertion%s hold%s\n", results->len, s, results->len == 1 ? "s" : "");
    }
    /* the accuracy note (an unfinished or lossy recording): finish_retained prints it too */
    if (retention ? !query_output_finish_retained(db, path, NULL, json, &error)
                  : !query_db_note_print(db, json, &error) || !query_output_finish(stdout, &error))
        goto out;
    status = failed || undecided ? 1 : 0;
out:
    sqlite3_close(db);
    if (error)
        query_error_report(error);
    return status;
}
