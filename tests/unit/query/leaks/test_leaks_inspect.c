/* test_leaks_inspect.c — `heaplens inspect`: an object and its references (a
 * 100,000-element array within bounds), EventSource metadata, what a finalizer kept alive, the
 * findings stored.
 * Fixtures and usage: leaks_test.h.
 */
#include "tests/unit/query/leaks/leaks_test.h"

/* array.db: one snapshot of an Object[] (1) whose elements 0 .. n-1 hold the strings 2 .. n+1.
 * Built by its case alone (the other cases need none of it). */
static void fixture_array(const char *name, uint64_t n)
{
    enum { A_ARRAY = 1, A_STRING };
    hl_sb *sb = hl_sb_new();
    hl_sb_run_start(sb, 13, "dotnet Array.dll");
    hl_sb_type_full(sb, &(hl_type){.type_id = A_ARRAY, .flags = HL_TYPE_FLAG_ARRAY},
                    "System.Object[]");
    hl_sb_type(sb, A_STRING, "System.String");
    hl_sb_alloc(sb, 1, A_ARRAY, 24 + 8 * n, 100);
    for (uint64_t id = 2; id <= n + 1; id++)
        hl_sb_alloc(sb, id, A_STRING, 24, 100);
    hl_sb_gc_start(sb, 1, 2, TRUE, n + 2);
    for (uint64_t id = 1; id <= n + 1; id++)
        hl_sb_fate(sb, 1, id, HL_FATE(HL_GEN_0, HL_GEN_1));
    hl_sb_snapshot_start(sb, 1, 1, HL_SNAPSHOT_INDUCED);
    for (uint64_t id = 1; id <= n + 1; id++)
        hl_sb_snapshot_object(sb, 1, id, HL_GEN_1, 0);
    for (uint64_t id = 2; id <= n + 1; id++) {
        hl_sb_snapshot_ref(sb, 1, 1, id);
        hl_sb_snapshot_ref_field(sb, 1, (uint32_t)(id - 2));
    }
    hl_sb_snapshot_root(sb, 1, 1, HL_ROOT_HANDLE, 0, 0x1000);
    hl_sb_snapshot_end(sb, 1, 1);
    hl_sb_gc_end(sb, 1, HL_GC_FLAG_COMPACTING);
    hl_sb_run_end(sb, 1);
    fixture_write_history(sb, name);
}

/* snapshot_ref_fields through heaplens (check --sql) on an array of 100,000 references: every
 * reference with its index and name "[i]", in one pass over the array (the file's own view
 * looks each field up by index: quadratic, hours here; ctest's timeout is the bound). */
static void case_ref_fields_large(void)
{
    fixture_array("array.db", 100000);
    run_result r = RUN("check", "array.db", "--sql",
                       "SELECT 1 FROM (SELECT count(*) AS n, sum(field = to_id - 2) AS fields,"
                       " sum(name = '[' || (to_id - 2) || ']') AS names, sum(nth) AS nths"
                       " FROM snapshot_ref_fields WHERE snapshot = 1 AND from_id = 1)"
                       " WHERE n != 100000 OR fields != 100000 OR names != 100000 OR nths != 0");
    CHECK_INT(r.status, 0);
    CHECK_STR(r.out, "1 assertion holds\n");
    run_result_release(&r);
}

/* inspect: strings every copy of which a RuntimeParameterInfo holds, beside the runtime's
 * NativeRuntimeEventSource, are said to be its event metadata (made by heaplens' own EventPipe
 * session); strings held otherwise, or parameter names without that event source, are not. */
static void case_inspect_event_metadata(void)
{
    json_t *doc = RUN_JSON("inspect", "metadata.db", "--json");
    if (!doc)
        return;
    json_t *findings = json_object_get(doc, "findings");
    CHECK_INT(json_array_size(findings), 2);
    CHECK_STR(jstr(json_array_get(findings, 0), "value"), "ClrInstanceID");
    CHECK_STR(jstr(json_array_get(findings, 0), "origin"), "event-metadata");
    CHECK_STR(jstr(json_array_get(findings, 1), "value"), "dup");
    CHECK(json_object_get(json_array_get(findings, 1), "origin") == NULL);
    json_decref(doc);
    run_result r = RUN("inspect", "metadata.db");
    CHECK_INT(r.status, 0);
    CHECK_STR(r.out, "inspections of snapshot 1 (GC 1): 2 findings\n"
                     "bytes  finding            what\n"
                     "432 B  duplicate-strings  10 strings \"ClrInstanceID\" (432 B wasted; the "
                     "runtime's event metadata, built because heaplens' EventPipe session enabled "
                     "its events)\n"
                     "252 B  duplicate-strings  10 strings \"dup\" (252 B wasted)\n");
    run_result_release(&r);
    doc = RUN_JSON("inspect", "params.db", "--json");
    if (!doc)
        return;
    findings = json_object_get(doc, "findings");
    CHECK_INT(json_array_size(findings), 2);
    for (size_t i = 0; i < json_array_size(findings); i++)
        CHECK(json_object_get(json_array_get(findings, i), "origin") == NULL);
    json_decref(doc);
}

/* inspect: a value held by at least --min-duplicates strings, all but one copy wasted; a bad
 * threshold is one line and exit 1. */
static void case_inspect(void)
{
    json_t *doc = RUN_JSON("inspect", "strings.db", "--json");
    if (!doc)
        return;
    json_t *findings = json_object_get(doc, "findings");
    CHECK_INT(json_array_size(findings), 1);
    json_t *f = json_array_get(findings, 0);
    CHECK_STR(jstr(f, "kind"), "duplicate-strings");
    CHECK_STR(jstr(f, "value"), "dup");
    CHECK_INT(jint(f, "count"), 12);
    CHECK_INT(jint(f, "bytes"), 360);
    CHECK_INT(jint(f, "wasted"), 330);
    json_decref(doc);
    doc = RUN_JSON("inspect", "strings.db", "--min-duplicates", "13", "--json");
    if (doc)
        CHECK_INT(json_array_size(json_object_get(doc, "findings")), 0);
    json_decref(doc);
    run_result r = RUN("inspect", "strings.db");
    CHECK_INT(r.status, 0);
    CHECK_STR(r.out, "inspections of snapshot 1 (GC 1): 1 finding\n"
                     "bytes  finding            what\n"
                     "330 B  duplicate-strings  12 strings \"dup\" (330 B wasted)\n");
    run_result_release(&r);
    r = RUN("inspect", "strings.db", "--max-fill", "2");
    CHECK_INT(r.status, 1);
    CHECK_STR(r.err, "heaplens: inspect: --max-fill takes a fraction from 0 to 1 (0.21: 21%), "
                     "not '2'\n");
    run_result_release(&r);
}

/* Schema 8's inspections (kept.db): finalizable objects per type with those waiting in the
 * f-reachable queue, objects finalized and reachable again, a collection under-filled and one
 * empty by their own counts; a stack root says its frame's method. */
static json_t *finding(json_t *doc, const char *kind, const char *type)
{
    size_t i;
    json_t *f;
    json_array_foreach(json_object_get(doc, "findings"), i, f)
        if (strcmp(jstr(f, "kind"), kind) == 0 && strcmp(jstr(f, "type"), type) == 0)
            return f;
    return NULL;
}

static void case_inspect_kept(void)
{
    json_t *doc = RUN_JSON("inspect", "kept.db", "--snapshot", "1", "--json");
    json_t *f = doc ? finding(doc, "finalizable", "App.Res") : NULL;
    CHECK(f != NULL);
    if (f) {
        CHECK_INT(jint(f, "count"), 2);
        CHECK_INT(jint(f, "queued"), 2);
        CHECK_INT(jint(f, "bytes"), 48);
    }
    CHECK(doc && !finding(doc, "finalized-reachable", "App.Res"));
    json_decref(doc);
    doc = RUN_JSON("inspect", "kept.db", "--json");
    if (!doc)
        return;
    f = finding(doc, "finalizable", "App.Res");
    CHECK(f && jint(f, "count") == 2 && jint(f, "queued") == 0);
    f = finding(doc, "finalizable", "App.Keep");
    CHECK(f && jint(f, "count") == 1 && jint(f, "bytes") == 32);
    f = finding(doc, "finalized-reachable", "App.Res");
    CHECK(f && jint(f, "count") == 2 && jint(f, "bytes") == 48);
    CHECK(!finding(doc, "finalized-reachable", "App.Keep"));
    const char *list = "System.Collections.Generic.List<System.Int32>";
    f = finding(doc, "under-filled", list);
    CHECK(f != NULL);
    if (f) {
        CHECK_INT(jint(f, "count"), 1);
        CHECK_INT(jint(f, "elements"), 10);
        CHECK_INT(jint(f, "capacity"), 1000);
        CHECK_INT(jint(f, "wasted"), (4024 - 24) * 990 / 1000);
    }
    f = finding(doc, "empty-collections", list);
    CHECK(f && jint(f, "count") == 1 && jint(f, "bytes") == 32);
    json_decref(doc);
    doc = RUN_JSON("inspect", "kept.db", "--max-fill", "0.005", "--json");
    CHECK(doc && !finding(doc, "under-filled", list));
    json_decref(doc);
    run_result r = RUN("inspect", "kept.db");
    CHECK(strstr(r.out, "1 System.Collections.Generic.List<System.Int32> filled 1.0% (10 of 1,000;") &&
          strstr(r.out, "2 App.Res finalized and reachable again") &&
          strstr(r.out, "2 App.Res with a finalizer\n"));
    run_result_release(&r);
    r = RUN("inspect", "kept.db", "--snapshot", "1");
    CHECK(strstr(r.out, "2 App.Res with a finalizer (2 waiting for the finalizer)") != NULL);
    run_result_release(&r);

    r = RUN("roots", "kept.db", "--object", "10");
    CHECK(strstr(r.out, "root: stack (App.Program.Main)\n") != NULL);
    run_result_release(&r);
    doc = RUN_JSON("roots", "kept.db", "--object", "10", "--json");
    json_t *root = doc ? json_array_get(json_object_get(jrow(doc, 0), "roots"), 0) : NULL;
    CHECK(root && strcmp(jstr(root, "kind"), "stack") == 0 &&
          strcmp(jstr(root, "method"), "App.Program.Main") == 0);
    json_decref(doc);
    /* a stack root whose thread is known: with its method */
    r = RUN("roots", "kept.db", "--object", "11");
    CHECK(strstr(r.out, "root: stack (App.Program.Main, thread worker, 77)\n") != NULL);
    run_result_release(&r);
    doc = RUN_JSON("roots", "kept.db", "--object", "11", "--json");
    root = doc ? json_array_get(json_object_get(jrow(doc, 0), "roots"), 0) : NULL;
    json_t *on = root ? json_object_get(root, "thread") : NULL;
    CHECK(root && strcmp(jstr(root, "method"), "App.Program.Main") == 0 && on &&
          jint(on, "os_tid") == 77 && strcmp(jstr(on, "name"), "worker") == 0);
    json_decref(doc);
    /* a thread static: the static with its thread */
    r = RUN("roots", "kept.db", "--object", "3");
    CHECK(strstr(r.out, "root: static Keep.t_keep (thread worker, 77)\n") != NULL);
    run_result_release(&r);
    doc = RUN_JSON("roots", "kept.db", "--object", "3", "--json");
    root = doc ? json_array_get(json_object_get(jrow(doc, 0), "roots"), 0) : NULL;
    json_t *thread = root ? json_object_get(root, "thread") : NULL;
    CHECK(root && strcmp(jstr(root, "static"), "App.Keep.t_keep") == 0 && thread &&
          jint(thread, "os_tid") == 77 && strcmp(jstr(thread, "name"), "worker") == 0);
    json_decref(doc);
}

/* inspect: the findings of a snapshot and options are computed once and stored (table
 * inspections): the second run reads them (its --progress says so) and says the same, and so
 * does the report; other options are computed; a snapshot whose snapshots row changed since is
 * inspected again; a read-only file answers all the same, with a note; a stored row that heaplens
 * does not write is damage. */
static void case_inspect_stored(void)
{
    file_copy("kept.db", "is1.db");
    long long last = sql_int("is1.db", "SELECT max(snapshot) FROM snapshots");
    g_autofree char *computing = g_strdup_printf("heaplens: inspect: inspecting snapshot %lld: ",
                                                 last);
    g_autofree char *reading =
        g_strdup_printf("heaplens: inspect: stored inspections of snapshot %lld: ", last);
    run_result first = RUN("inspect", "is1.db", "--json", "--progress");
    CHECK_INT(first.status, 0);
    CHECK(strstr(first.err, computing) != NULL);
    CHECK(strstr(first.err, "heaplens: inspect: storing inspections: ") != NULL);
    CHECK_INT(sql_int("is1.db", "SELECT count(*) FROM inspections"), 1);
    run_result again = RUN("inspect", "is1.db", "--json", "--progress");
    CHECK_INT(again.status, 0);
    CHECK(strstr(again.err, reading) != NULL);
    CHECK(strstr(again.err, computing) == NULL);
    CHECK(strstr(again.err, "storing inspections") == NULL);
    CHECK_STR(again.out, first.out);
    run_result_release(&again);
    json_t *doc = json_loads(first.out, 0, NULL);
    CHECK(doc && json_array_size(json_object_get(doc, "findings")) > 3);

    /* the report reads them: the same document */
    run_result r = RUN("report", "is1.db", "--json", "-o", "-", "--progress");
    CHECK_INT(r.status, 0);
    CHECK(strstr(r.err, "heaplens: report: stored inspections of snapshot") != NULL);
    CHECK(strstr(r.err, "report: inspecting snapshot") == NULL);
    json_t *report = json_loads(r.out, 0, NULL);
    CHECK(report && json_equal(json_object_get(report, "inspections"), doc));
    json_decref(report);
    run_result_release(&r);

    /* other options: computed and stored beside them */
    r = RUN("inspect", "is1.db", "--max-fill", "0.005", "--progress");
    CHECK_INT(r.status, 0);
    CHECK(strstr(r.err, computing) != NULL);
    run_result_release(&r);
    CHECK_INT(sql_int("is1.db", "SELECT count(*) FROM inspections"), 2);

    /* a stored row is what the next run says (nothing else read) ... */
    fixture_sql("is1.db", "UPDATE inspections SET document = '[]', findings = 0"
                          " WHERE max_fill = 0.21");
    r = RUN("inspect", "is1.db", "--json");
    CHECK(r.status == 0 && strstr(r.out, "\"findings\":[]") != NULL);
    run_result_release(&r);
    /* ... unless its snapshot's row changed since: inspected again */
    fixture_sql("is1.db", "UPDATE snapshots SET refs = refs + 1"
                          " WHERE snapshot = (SELECT max(snapshot) FROM snapshots)");
    r = RUN("inspect", "is1.db", "--json", "--progress");
    CHECK_INT(r.status, 0);
    CHECK(strstr(r.err, computing) != NULL);
    CHECK_STR(r.out, first.out);
    run_result_release(&r);
    CHECK_INT(sql_int("is1.db", "SELECT count(*) FROM inspections"
                                " WHERE max_fill = 0.21 AND findings > 3"),
              1);

    /* a stored row heaplens does not write */
    fixture_sql("is1.db", "UPDATE inspections SET document = '[{\"kind\":1}]', findings = 1");
    r = RUN("inspect", "is1.db");
    CHECK_INT(r.status, 1);
    CHECK_STR(r.out, "");
    g_autofree char *damage = g_strdup_printf(
        "heaplens: the database is damaged: the stored inspections of snapshot %lld are not what "
        "heaplens writes\n", last);
    CHECK_STR(r.err, damage);
    run_result_release(&r);

    /* a file heaplens may not write: the same answer, and a note */
    expect_results_not_stored("inspect", "kept.db", "is2.db", first.out,
                              "heaplens: note: inspections were not stored: ", "inspections");
    json_decref(doc);
    run_result_release(&first);
}

static const cli_test_case cases[] = {
    {"inspect", case_inspect},
    {"ref_fields_large", case_ref_fields_large},
    {"inspect_event_metadata", case_inspect_event_metadata},
    {"inspect_kept", case_inspect_kept},
    {"inspect_stored", case_inspect_stored},
};

int main(int argc, char **argv)
{
    return leaks_test_main(argc, argv, cases, G_N_ELEMENTS(cases));
}
