/* test_leaks_roots.c — `heaplens roots`: the paths from roots to an object, named
 * through statics and fields, every root, by type, and unreachable objects.
 * Fixtures and usage: leaks_test.h.
 */
#include "tests/unit/query/leaks/leaks_test.h"

static void case_roots_object(void)
{
    json_t *doc = RUN_JSON("roots", "graph.db", "--snapshot", "1", "--object", "6", "--json");
    if (!doc)
        return;
    CHECK_INT(jint(doc, "object"), 6);
    CHECK_STR(jstr(doc, "type"), "App.Leaf");
    CHECK_INT(json_array_size(json_object_get(doc, "rows")), 1);
    json_t *row = jrow(doc, 0);
    CHECK_INT(jint(row, "length"), 3);
    path_expect(json_object_get(row, "path"), (const long long[]){1, 2, 3, 6}, 4);
    json_t *root = json_array_get(json_object_get(row, "roots"), 0);
    CHECK_STR(jstr(root, "kind"), "handle");
    CHECK_STR(jstr(root, "handle"), "strong");
    CHECK_INT(jint(root, "root_id"), 0x1000);
    CHECK_STR(jstr(json_array_get(json_object_get(row, "path"), 1), "type"), "App.Leak[]");
    CHECK_INT(jint(json_array_get(json_object_get(row, "path"), 1), "size"), 100);
    json_decref(doc);

    run_result r = RUN("roots", "graph.db", "--snapshot", "1", "--object", "18");
    CHECK_INT(r.status, 0);
    CHECK_STR(r.out, "shortest path from a GC root to object 18 (App.Node), snapshot 1 (GC 1):\n"
                     "root: handle (pinned, 0x3000)\n"
                     "hop  object  size  type\n"
                     "  0      13  10 B  App.Root\n"
                     "  1      17  50 B  App.Node\n"
                     "  2      18  50 B  App.Node\n");
    run_result_release(&r);
}

/* A path that reads like code: it starts at the static, each hop says the field (or element)
 * holding the next (issue 21). */
static void case_roots_named(void)
{
    json_t *doc = RUN_JSON("roots", "named.db", "--object", "5", "--json");
    if (!doc)
        return;
    json_t *row = jrow(doc, 0);
    CHECK_INT(jint(row, "length"), 3);
    json_t *root = json_array_get(json_object_get(row, "roots"), 0);
    CHECK_STR(jstr(root, "kind"), "static");
    CHECK_STR(jstr(root, "static"), "App.Program.s_registry");
    json_t *hops = json_object_get(row, "path");
    path_expect(hops, (const long long[]){2, 3, 4, 5}, 4);
    CHECK_STR(jstr(json_array_get(hops, 0), "field"), "_sessions");
    CHECK_STR(jstr(json_array_get(hops, 1), "field"), "_items");
    CHECK_INT(jint(json_array_get(hops, 2), "index"), 7);
    CHECK(json_object_get(json_array_get(hops, 3), "field") == NULL);
    json_decref(doc);

    run_result r = RUN("roots", "named.db", "--object", "5");
    CHECK_INT(r.status, 0);
    CHECK_STR(r.out,
              "shortest path from a GC root to object 5 (App.Session), snapshot 1 (GC 1):\n"
              "root: static Program.s_registry\n"
              "hop  object  size  type                                          holds the next in\n"
              "  0       2  32 B  App.Registry                                  ._sessions\n"
              "  1       3  32 B  System.Collections.Generic.List<App.Session>  ._items\n"
              "  2       4  96 B  App.Session[]                                 [7]\n"
              "  3       5  24 B  App.Session                                   \n");
    run_result_release(&r);
}

static void case_roots_all(void)
{
    json_t *doc =
        RUN_JSON("roots", "graph.db", "--snapshot", "1", "--object", "16", "--all", "--json");
    if (!doc)
        return;
    CHECK_INT(json_array_size(json_object_get(doc, "rows")), 2);
    path_expect(json_object_get(jrow(doc, 0), "path"), (const long long[]){9, 16}, 2);
    CHECK_STR(jstr(json_array_get(json_object_get(jrow(doc, 0), "roots"), 0), "kind"), "stack");
    path_expect(json_object_get(jrow(doc, 1), "path"), (const long long[]){13, 14, 16}, 3);
    json_t *flags =
        json_object_get(json_array_get(json_object_get(jrow(doc, 1), "roots"), 0), "flags");
    CHECK_STR(json_string_value(json_array_get(flags, 0)), "pinning");
    json_decref(doc);
    doc = RUN_JSON("roots", "graph.db", "--snapshot", "1", "--object", "16", "--all", "--limit",
                   "1", "--json");
    CHECK(doc && json_array_size(json_object_get(doc, "rows")) == 1);
    json_decref(doc);
}

static void case_roots_type(void)
{
    file_copy("graph.db", "r4.db");
    /* the Leak that retains most: all retain 1040 in snapshot 4; the lowest id wins */
    json_t *doc = RUN_JSON("roots", "r4.db", "--type", "App.Leak", "--json");
    if (!doc)
        return;
    CHECK_INT(jint(doc, "snapshot"), 4);
    CHECK_INT(jint(doc, "object"), 3);
    path_expect(json_object_get(jrow(doc, 0), "path"), (const long long[]){1, 2, 3}, 3);
    json_decref(doc);
}

/* --type takes the full name or the name without namespaces; several matches are one line. */
static void case_roots_type_names(void)
{
    file_copy("graph.db", "names.db");
    run_result r = RUN("roots", "names.db", "--type", "Leak");
    CHECK_INT(r.status, 0);
    CHECK(g_str_has_prefix(r.out, "shortest path from a GC root to object 3 (App.Leak)"));
    run_result_release(&r);
    fixture_sql("names.db",
                "INSERT INTO types (id, name, flags) VALUES (90, 'Other.Leak', 0), "
                "(91, 'System.Collections.Generic.Dictionary<System.Int32, App.Leak>+Entry[]',"
                " 1)");
    EXPECT_ERROR("heaplens: 'Leak' names 2 types in names.db: App.Leak, Other.Leak; give the full "
                 "name\n",
                 "roots", "names.db", "--type", "Leak");
    r = RUN("roots", "names.db", "--type", "App.Leak");
    CHECK_INT(r.status, 0);
    run_result_release(&r);
    const char *short_names[] = {"Dictionary<Int32, Leak>+Entry[]",
                                 "Generic.Dictionary<System.Int32, Leak>+Entry[]",
                                 "System.Collections.Generic.Dictionary<System.Int32, App.Leak>+Entry[]"};
    for (size_t i = 0; i < G_N_ELEMENTS(short_names); i++)
        EXPECT_ERROR("heaplens: no instance of System.Collections.Generic.Dictionary<System.Int32, "
                     "App.Leak>+Entry[] in snapshot 4\n",
                     "roots", "names.db", "--type", short_names[i]);
    const char *not_names[] = {"ollections.Generic.Dictionary<Int32, Leak>+Entry[]",
                               "Dictionary<Int32, Leak>+Entry", "Dictionary<Int32, Leak>", "eak"};
    for (size_t i = 0; i < G_N_ELEMENTS(not_names); i++) {
        r = RUN("roots", "names.db", "--type", not_names[i]);
        CHECK_INT(r.status, 1);
        CHECK(g_str_has_prefix(r.err, "heaplens: no type named '") &&
              !strchr(r.err, '\n')[1]);
        run_result_release(&r);
    }
}

static void case_roots_unreachable(void)
{
    run_result r = RUN("roots", "graph.db", "--snapshot", "1", "--object", "20");
    CHECK_INT(r.status, 0);
    CHECK_STR(r.out,
              "object 20 (App.Node) in snapshot 1 (GC 1) is not reachable from any GC root: "
              "it is garbage that GC 1 did not collect (its generation was not condemned)\n");
    run_result_release(&r);
    json_t *doc = RUN_JSON("roots", "graph.db", "--snapshot", "1", "--object", "19", "--json");
    CHECK(doc && json_array_size(json_object_get(doc, "rows")) == 0);
    json_decref(doc);
}

static const cli_test_case cases[] = {
    {"roots_object", case_roots_object},
    {"roots_named", case_roots_named},
    {"roots_all", case_roots_all},
    {"roots_type", case_roots_type},
    {"roots_type_names", case_roots_type_names},
    {"roots_unreachable", case_roots_unreachable},
};

int main(int argc, char **argv)
{
    return leaks_test_main(argc, argv, cases, G_N_ELEMENTS(cases));
}
