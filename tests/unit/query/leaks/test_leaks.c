/* test_leaks.c — `heaplens leaks`, `diff` and `survivors --by age`: what grows
 * between snapshots and what holds it, noise left out, results stored and reused, counts, two
 * recordings compared, snapshot rows lost.
 * Fixtures and usage: leaks_test.h.
 */
#include "tests/unit/query/leaks/leaks_test.h"

/* An object or two more between two snapshots is the runtime's own noise, not a leak; one
 * large object over 1% of the heap is (leaks.c, the minimum growth). */
static void case_leaks_noise(void)
{
    json_t *doc = RUN_JSON("leaks", "noise.db", "--json");
    if (!doc)
        return;
    json_t *rows = json_object_get(doc, "rows");
    CHECK_INT(json_array_size(rows), 1);
    CHECK_STR(jstr(jrow(doc, 0), "type"), "App.Big");
    json_decref(doc);
}

static void case_leaks(void)
{
    file_copy("graph.db", "l1.db");
    json_t *doc = RUN_JSON("leaks", "l1.db", "--json");
    if (!doc)
        return;
    CHECK_INT(json_array_size(json_object_get(doc, "snapshots")), 4);
    CHECK(json_is_true(json_object_get(doc, "full_gcs_only")));
    json_t *rows = json_object_get(doc, "rows");
    CHECK_INT(json_array_size(rows), 2); /* Leak and Leaf; not the cache's nodes */
    json_t *leak = json_array_get(rows, 0);
    CHECK_STR(jstr(leak, "type"), "App.Leak");
    CHECK_INT(jint(leak, "growth_count"), 9);
    CHECK_INT(jint(leak, "growth_bytes"), 360);
    CHECK_INT(jint(leak, "growth_retained_bytes"), 9 * 1040);
    CHECK_STR(jstr(leak, "holder"), "App.Holder");
    CHECK_INT(jint(leak, "holder_object"), 1);
    CHECK_INT(jint(leak, "held"), 12);
    path_expect(json_object_get(leak, "path"), (const long long[]){1, 2, 3}, 3);
    json_t *counts = json_object_get(leak, "counts");
    for (size_t i = 0; i < 4; i++)
        CHECK_INT(json_integer_value(json_array_get(counts, i)), 3 * (i + 1));
    json_t *leaf = json_array_get(rows, 1);
    CHECK_STR(jstr(leaf, "type"), "App.Leaf");
    CHECK_STR(jstr(leaf, "holder"), "App.Leak"); /* each Leaf is held by its own Leak */
    CHECK_INT(jint(leaf, "holders"), 12);
    json_decref(doc);

    /* --top 1: one row, and the head says how many kept growing, as the text does ("2 types
     * kept growing"): the report's page said "1 type kept growing" of its --top 10 rows */
    doc = RUN_JSON("leaks", "l1.db", "--json", "--top", "1");
    CHECK(doc && json_array_size(json_object_get(doc, "rows")) == 1);
    CHECK_INT(jint(doc, "flagged"), 2);
    json_decref(doc);

    /* --all adds the types that grew without a steady trend: none here but... */
    doc = RUN_JSON("leaks", "l1.db", "--json", "--all");
    CHECK(doc && json_array_size(json_object_get(doc, "rows")) == 2);
    json_decref(doc);

    run_result r = RUN("leaks", "l1.db");
    CHECK_INT(r.status, 0);
    CHECK(g_str_has_prefix(r.out,
                           "leak suspects: 2 types kept growing over 4 snapshots after full "
                           "GCs (snapshots 1 to 4, GCs 1 to 4)\n"
                           "rank  +objects    +bytes  +retained  objects per snapshot  type\n"
                           "   1        +9    +360 B   +9.1 KiB  3 6 9 12              App.Leak\n"
                           "   2        +9  +8.8 KiB   +8.8 KiB  3 6 9 12              App.Leaf\n"
                           "\n"));
    CHECK(strstr(r.out,
                 "1. App.Leak\n   held by: App.Holder #1 (retains 12.3 KiB; holds 12 of 12)\n"
                 "   path:    handle (strong, 0x1000) -> App.Holder #1 -> App.Leak[] #2 -> "
                 "App.Leak #3\n") != NULL);
    CHECK(strstr(r.out, "held by: 12 App.Leak objects (hold 12 of 12, suspect 1)") != NULL);
    run_result_release(&r);
}

static void case_leaks_stored(void)
{
    file_copy("graph.db", "ls1.db");
    run_result first = RUN("leaks", "ls1.db", "--json", "--progress");
    CHECK_INT(first.status, 0);
    CHECK(strstr(first.err, "heaplens: leaks: computing dominators: ") != NULL);
    CHECK(strstr(first.err, "heaplens: leaks: storing leak holders: ") != NULL);
    CHECK_INT(sql_int("ls1.db", "SELECT count(*) FROM leak_holders WHERE snapshot = 4"), 2);
    CHECK_INT(sql_int("ls1.db", "SELECT held FROM leak_holders WHERE snapshot = 4 AND type_id ="
                                " (SELECT id FROM types WHERE name = 'App.Leak')"),
              12);
    run_result again = RUN("leaks", "ls1.db", "--json", "--progress");
    CHECK_INT(again.status, 0);
    CHECK_STR(again.out, first.out);
    CHECK(strstr(again.err, "reading objects") == NULL);
    CHECK(strstr(again.err, "computing dominators") == NULL);
    CHECK(strstr(again.err, "storing") == NULL);
    run_result_release(&again);
    again = RUN("leaks", "ls1.db");
    run_result text = again;
    CHECK(strstr(text.out, "   path:    handle (strong, 0x1000) -> App.Holder #1 -> App.Leak[] "
                           "#2 -> App.Leak #3\n") != NULL);
    CHECK(strstr(text.out, "held by: 12 App.Leak objects (hold 12 of 12, suspect 1)") != NULL);
    run_result_release(&again);

    /* the report reads them too (its last snapshot's retained sizes are stored): no tree, the
     * same rows */
    run_result r = RUN("report", "ls1.db", "--json", "-o", "-", "--progress");
    CHECK_INT(r.status, 0);
    CHECK(strstr(r.err, "computing dominators") == NULL);
    json_t *report = json_loads(r.out, 0, NULL), *doc = json_loads(first.out, 0, NULL);
    CHECK(report && doc &&
          json_equal(json_object_get(json_object_get(report, "leak_suspects"), "rows"),
                     json_object_get(doc, "rows")));
    json_decref(report);
    json_decref(doc);
    run_result_release(&r);

    /* a stored row is what the next run says (nothing else read) ... */
    fixture_sql("ls1.db", "UPDATE leak_holders SET held = 99 WHERE held = 12");
    r = RUN("leaks", "ls1.db", "--json");
    CHECK(r.status == 0 && strstr(r.out, "\"held\":99") != NULL);
    run_result_release(&r);
    /* ... unless another version of heaplens wrote it ... */
    fixture_sql("ls1.db", "UPDATE leak_holders SET version = 0");
    r = RUN("leaks", "ls1.db", "--json", "--progress");
    CHECK_INT(r.status, 0);
    CHECK_STR(r.out, first.out);
    CHECK(strstr(r.err, "computing dominators") != NULL);
    run_result_release(&r);
    CHECK_INT(sql_int("ls1.db", "SELECT count(*) FROM leak_holders WHERE version = 3"), 2);
    /* ... or its snapshot's row changed since: found again */
    fixture_sql("ls1.db", "UPDATE leak_holders SET held = 99 WHERE held = 12");
    fixture_sql("ls1.db", "UPDATE snapshots SET refs = refs + 1 WHERE snapshot = 4");
    r = RUN("leaks", "ls1.db", "--json");
    CHECK_INT(r.status, 0);
    CHECK_STR(r.out, first.out);
    run_result_release(&r);

    /* a stored row heaplens does not write */
    fixture_sql("ls1.db", "UPDATE leak_holders SET path = '{}'");
    r = RUN("leaks", "ls1.db");
    CHECK_INT(r.status, 1);
    CHECK_STR(r.out, "");
    CHECK(g_str_has_prefix(r.err, "heaplens: the database is damaged: the stored holder of type "));
    run_result_release(&r);

    /* a file heaplens may not write: the same answer, a note, nothing written */
    expect_results_not_stored("leaks", "graph.db", "ls2.db", first.out,
                              "heaplens: note: retained sizes were not stored: ", "leak_holders");
    run_result_release(&first);
}

/* report counts the objects per type of the leak series' snapshots from the graph of its last
 * snapshot where they share its blocks, the rest from their blocks: the same counts as `leaks`
 * counting every block. */
static void case_leaks_counts_held(void)
{
    file_copy("noise.db", "lc1.db");
    file_copy("noise.db", "lc2.db");
    /* two snapshots of a heap that changed little: some blocks shared, some not (both ways
     * are taken) */
    CHECK(sql_int("lc1.db", "SELECT count(*) FROM snapshot_blocks"
                            " WHERE first_snapshot < 2 AND last_snapshot = 2") > 0);
    CHECK(sql_int("lc1.db", "SELECT count(*) FROM snapshot_blocks WHERE last_snapshot < 2") > 0);
    run_result r = RUN("report", "lc1.db", "--json", "-o", "-", "--progress");
    CHECK_INT(r.status, 0);
    CHECK(strstr(r.err, "heaplens: report: counting objects per snapshot from the graph held: ") !=
          NULL);
    run_result_release(&r);
    r = RUN("leaks", "lc2.db", "--progress");
    CHECK_INT(r.status, 0);
    CHECK(strstr(r.err, "from the graph held") == NULL);
    run_result_release(&r);
    const char *sum = "SELECT count(*) * 1000000007 + sum(snapshot * 1000003 + type_id * 1009"
                      " + count * 7 + bytes) FROM snapshot_type_counts";
    CHECK_INT(sql_int("lc1.db", "SELECT count(DISTINCT snapshot) FROM snapshot_type_counts"), 2);
    CHECK_INT(sql_int("lc1.db", sum), sql_int("lc2.db", sum));
}

static void case_diff(void)
{
    json_t *doc = RUN_JSON("diff", "graph.db", "--from", "1", "--to", "2", "--json");
    if (!doc)
        return;
    CHECK_INT(jint(json_object_get(doc, "from"), "snapshot"), 1);
    CHECK_INT(jint(json_object_get(doc, "to"), "snapshot"), 2);
    /* net bytes first: Leaf +3000, Leak +120, then Node (+50 -100: 10 and 20 died), Churn -30 */
    const struct {
        const char *type;
        long long new_count, dead, survived, new_bytes, dead_bytes;
    } want[] = {{"App.Leaf", 3, 0, 3, 3000, 0},
                {"App.Leak", 3, 0, 3, 120, 0},
                {"App.Churn", 0, 1, 0, 0, 30},
                {"App.Node", 1, 2, 6, 50, 100}};
    json_t *rows = json_object_get(doc, "rows");
    CHECK_INT(json_array_size(rows), G_N_ELEMENTS(want));
    for (size_t i = 0; i < G_N_ELEMENTS(want) && i < json_array_size(rows); i++) {
        json_t *row = json_array_get(rows, i);
        CHECK_STR(jstr(row, "type"), want[i].type);
        CHECK_INT(jint(row, "new"), want[i].new_count);
        CHECK_INT(jint(row, "dead"), want[i].dead);
        CHECK_INT(jint(row, "survived"), want[i].survived);
        CHECK_INT(jint(row, "new_bytes"), want[i].new_bytes);
        CHECK_INT(jint(row, "dead_bytes"), want[i].dead_bytes);
    }
    json_t *total = json_object_get(doc, "total");
    CHECK_INT(jint(total, "new"), 7);
    CHECK_INT(jint(total, "dead"), 3);
    CHECK_INT(jint(total, "survived"), 18);
    json_decref(doc);

    /* defaults: the last snapshot against the one before */
    doc = RUN_JSON("diff", "graph.db", "--json", "--all");
    CHECK(doc && jint(json_object_get(doc, "from"), "snapshot") == 3);
    CHECK(doc && jint(json_object_get(doc, "to"), "snapshot") == 4);
    CHECK(doc && json_array_size(json_object_get(doc, "rows")) == 9); /* every type present */
    json_decref(doc);

    run_result r = RUN("diff", "graph.db", "--from", "1", "--to", "2", "--top", "2");
    CHECK_INT(r.status, 0);
    CHECK_STR(r.out, "snapshot 1 (GC 1) -> snapshot 2 (GC 2): 7 new (3.1 KiB), 3 dead (130 B), "
                     "18 survived\n"
                     "new  new bytes  dead  dead bytes  survived  net bytes  type\n"
                     "  3    2.9 KiB     0         0 B         3   +2.9 KiB  App.Leaf\n"
                     "  3      120 B     0         0 B         3     +120 B  App.Leak\n");
    run_result_release(&r);
    doc = RUN_JSON("diff", "graph.db", "--json");
    CHECK(doc && json_is_false(json_object_get(doc, "followed")) &&
          jint(doc, "from_gen0_renamed") == 0);
    json_decref(doc);
}

/* One sampled (or attach) recording that follows its samples: the same matching by id, and
 * diff says how the objects no sample followed were matched. */
static void case_diff_followed(void)
{
    file_copy("graph.db", "gfollowed.db");
    fixture_sql("gfollowed.db", "UPDATE run SET mode = 'sampled', flags = 'samples-followed'");
    json_t *doc = RUN_JSON("diff", "gfollowed.db", "--from", "1", "--to", "2", "--json");
    CHECK(doc && json_is_true(json_object_get(doc, "followed")) &&
          jint(doc, "from_gen0_renamed") == 0 &&
          jint(json_object_get(doc, "total"), "survived") == 18);
    json_decref(doc);
    run_result r = RUN("diff", "gfollowed.db", "--from", "1", "--to", "2", "--top", "1");
    CHECK_INT(r.status, 0);
    CHECK(strstr(r.out, "note: gfollowed.db is a sampled recording that follows its samples: "
                        "objects are matched by id, kept from the snapshot that named an object "
                        "(or the sample that followed it) on; one allocated after snapshot 1 "
                        "that no sample followed was first named by snapshot 2 (new there, as "
                        "it is)\n") != NULL);
    run_result_release(&r);
    fixture_sql("gfollowed.db", "UPDATE run SET mode = 'attach'");
    r = RUN("diff", "gfollowed.db", "--top", "1");
    CHECK(strstr(r.out, "note: gfollowed.db is an attach recording that follows") != NULL);
    run_result_release(&r);
}

/* A snapshot whose objects (or roots) were deleted is damage, said in one line by every command
 * that reads it, never "N dead"; `snapshots` still lists the header as stored. */
static void case_snapshot_rows_lost(void)
{
    file_copy("graph.db", "lost.db");
    /* snapshot 1's blocks gone, those it shares with snapshot 2 kept for 2 */
    fixture_sql("lost.db", "UPDATE snapshot_blocks SET first_snapshot = 2 WHERE first_snapshot = 1"
                           " AND last_snapshot >= 2; DELETE FROM snapshot_blocks WHERE"
                           " first_snapshot = 1");
    EXPECT(RUN("diff", "lost.db", "--from", "1", "--to", "2"), 1, "",
           "heaplens: the database is damaged: lost.db: snapshot 1 holds 0 objects, its "
           "snapshots row counts 21\n");
    EXPECT(RUN("retention", "lost.db", "--snapshot", "1"), 1, "",
           "heaplens: the database is damaged: snapshot 1 holds 0 objects, its snapshots row "
           "counts 21\n");
    file_copy("graph.db", "lost.db");
    fixture_sql("lost.db", "DELETE FROM snapshot_roots WHERE snapshot = 4 AND rowid IN "
                           "(SELECT min(rowid) FROM snapshot_roots WHERE snapshot = 4)");
    EXPECT(RUN("retention", "lost.db"), 1, "",
           "heaplens: the database is damaged: snapshot 4 holds 3 roots, its snapshots row "
           "counts 4\n");
}

/* Two files of the same program: identity by allocation number and type name. */
static void case_diff_files(void)
{
    json_t *doc = RUN_JSON("diff", "one.db", "--to-file", "graph.db", "--json");
    if (!doc)
        return;
    CHECK(json_is_false(json_object_get(doc, "same_file")));
    CHECK_INT(jint(json_object_get(doc, "from"), "snapshot"), 1);
    CHECK_INT(jint(json_object_get(doc, "to"), "snapshot"), 4);
    json_t *total = json_object_get(doc, "total");
    CHECK_INT(jint(total, "survived"), 16); /* 21 of one.db but 10, 11, 12, 19, 20 */
    CHECK_INT(jint(total, "dead"), 5);
    CHECK_INT(jint(total, "new"), 37 - 16);
    json_decref(doc);
    /* an attach recording's ids are no allocation numbers: the note says so, in English ("is a
     * attach recording" before) */
    file_copy("one.db", "one_attach.db");
    fixture_sql("one_attach.db", "UPDATE run SET mode = 'attach'");
    run_result r = RUN("diff", "one_attach.db", "--to-file", "graph.db");
    CHECK_INT(r.status, 0);
    CHECK(strstr(r.out, "note: one_attach.db is an attach recording: its objects are numbered as "
                        "GCs find them, not by allocation") != NULL);
    if (failures)
        fprintf(stderr, "diff said: %s", r.out);
    run_result_release(&r);
}

/* `leaks A --with B C`: the last snapshot of each file, by type: one.db, two.db and three.db end
 * with 3, 6 and 9 Leaks (and Leafs); the Cache's Nodes are replaced, not added. */
static void case_leaks_files(void)
{
    static const char note[] = "heaplens: across files, objects are counted per type name and "
                               "not followed from one file to the next: a type is a suspect when "
                               "its count and bytes grow from every file to the next, each "
                               "time by at least a tenth of its count in the first file\n";
    json_t *doc = json_run(__FILE__, __LINE__,
                           RUN("leaks", "one.db", "--with", "two.db", "three.db", "--json"), NULL,
                           note);
    if (!doc)
        return;
    CHECK(json_is_true(json_object_get(doc, "by_type")));
    CHECK(strstr(jstr(doc, "note"), "counted per type name") != NULL);
    json_t *files = json_object_get(doc, "files");
    CHECK_INT(json_array_size(files), 3);
    CHECK_STR(jstr(json_array_get(files, 2), "file"), "three.db");
    CHECK_INT(jint(json_array_get(files, 2), "snapshot"), 3);
    /* the Leafs grew most in bytes (3 x 1000 a file), then the Leaks */
    json_t *rows = json_object_get(doc, "rows");
    CHECK_INT(json_array_size(rows), 2);
    CHECK_STR(jstr(jrow(doc, 0), "type"), "App.Leaf");
    CHECK_STR(jstr(jrow(doc, 1), "type"), "App.Leak");
    json_t *counts = json_object_get(jrow(doc, 1), "counts");
    CHECK_INT(json_integer_value(json_array_get(counts, 0)), 3);
    CHECK_INT(json_integer_value(json_array_get(counts, 1)), 6);
    CHECK_INT(json_integer_value(json_array_get(counts, 2)), 9);
    CHECK(json_is_true(json_object_get(jrow(doc, 1), "flagged")));
    json_decref(doc);
    /* two files: the same rule, one interval */
    doc = json_run(__FILE__, __LINE__,
                   RUN("leaks", "one.db", "--top", "1", "--with", "three.db", "--json"), NULL, note);
    if (doc) {
        CHECK_INT(json_array_size(json_object_get(doc, "rows")), 1);
        CHECK_INT(jint(doc, "flagged"), 2); /* both grew: one shown */
        json_decref(doc);
    }
    EXPECT_ERROR("heaplens: leaks: --with needs one file or more to compare FILE with\n",
                 "leaks", "one.db", "--with");
    EXPECT_ERROR("heaplens: missing.db does not exist\n", "leaks", "one.db", "--with",
                 "missing.db");
    /* a file given twice, by its name or another, compared with itself said "no leak
     * suspects" of a leaking program; diff --to-file with FILE itself "0 new, 0 dead" */
    EXPECT_ERROR("heaplens: leaks: one.db is given twice (a file compared with itself grows "
                 "nothing): give each file once; across the snapshots of one recording: "
                 "heaplens leaks one.db\n",
                 "leaks", "one.db", "--with", "one.db");
    EXPECT_ERROR("heaplens: leaks: two.db and ./two.db are one file (a file compared with itself "
                 "grows nothing): give each file once; across the snapshots of one recording: "
                 "heaplens leaks two.db\n",
                 "leaks", "one.db", "--with", "two.db", "./two.db");
    EXPECT_ERROR("heaplens: diff: --to-file ./one.db is FILE itself (one.db): between two "
                 "snapshots of one recording, give --from S1 --to S2 without --to-file\n",
                 "diff", "one.db", "--to-file", "./one.db");
}

/* Across files a type is a suspect only when it grows steadily by much for its size: the
 * Pools gain 10 a file (3+ objects an interval, every interval up: a suspect by the rule within
 * a file), a hundredth of their 1,000; the Grows double, triple, quadruple. */
static void case_leaks_files_steady(void)
{
    static const char note[] = "heaplens: across files, objects are counted per type name and "
                               "not followed from one file to the next: a type is a suspect when "
                               "its count and bytes grow from every file to the next, each "
                               "time by at least a tenth of its count in the first file\n";
    json_t *doc = json_run(__FILE__, __LINE__,
                           RUN("leaks", "pool-1.db", "--with", "pool-2.db", "pool-3.db",
                               "pool-4.db", "--all", "--json"),
                           NULL, note);
    if (!doc)
        return;
    json_t *rows = json_object_get(doc, "rows");
    CHECK_INT(json_array_size(rows), 2);
    CHECK_STR(jstr(jrow(doc, 0), "type"), "App.Grow");
    CHECK(json_is_true(json_object_get(jrow(doc, 0), "flagged")));
    CHECK_STR(jstr(jrow(doc, 1), "type"), "App.Pool");
    CHECK(json_is_false(json_object_get(jrow(doc, 1), "flagged")));
    CHECK_INT(jint(jrow(doc, 1), "growth_count"), 30);
    json_decref(doc);
    /* one interval: the Pools' 30 are still under a tenth */
    doc = json_run(__FILE__, __LINE__, RUN("leaks", "pool-1.db", "--with", "pool-4.db", "--json"),
                   NULL, note);
    if (doc) {
        CHECK_INT(json_array_size(json_object_get(doc, "rows")), 1);
        CHECK_STR(jstr(jrow(doc, 0), "type"), "App.Grow");
        json_decref(doc);
    }
}

static void case_survivors_age(void)
{
    json_t *doc = RUN_JSON("survivors", "graph.db", "--gc", "2", "--by", "age", "--json");
    if (!doc)
        return;
    CHECK_STR(jstr(doc, "by"), "age");
    long long age1 = 0, age2 = 0;
    size_t n = json_array_size(json_object_get(doc, "rows"));
    for (size_t i = 0; i < n; i++) {
        json_t *row = jrow(doc, i);
        if (jint(row, "age") == 1)
            age1 += jint(row, "count");
        else if (jint(row, "age") == 2)
            age2 += jint(row, "count");
        else
            CHECK(!"unexpected age");
    }
    CHECK_INT(age1, 7);  /* allocated between GC 1 and GC 2 */
    CHECK_INT(age2, 18); /* from before GC 1 (D too), minus the three that died in GC 2 */
    json_decref(doc);
    run_result r = RUN("survivors", "graph.db", "--gc", "1", "--by", "age");
    CHECK_INT(r.status, 0);
    CHECK(g_str_has_prefix(r.out, "alive after GC 1: 21 objects, 3.7 KiB; age = GCs survived\n"
                                  "age  gen   count    bytes  type\n"
                                  "  1  gen1      3  2.9 KiB  App.Leaf\n"));
    run_result_release(&r);
    /* --top K: the K groups with the most bytes, still by age; the totals are over all */
    r = RUN("survivors", "graph.db", "--gc", "1", "--by", "age", "--top", "2");
    CHECK_INT(r.status, 0);
    CHECK_STR(r.out, "alive after GC 1: 21 objects, 3.7 KiB (the 2 largest of 10 groups); "
                     "age = GCs survived\n"
                     "age  gen   count    bytes  type\n"
                     "  1  gen1      3  2.9 KiB  App.Leaf\n"
                     "  1  gen1      8    400 B  App.Node\n");
    run_result_release(&r);
    doc = RUN_JSON("survivors", "graph.db", "--gc", "2", "--by", "age", "--top", "1", "--json");
    CHECK(doc && json_array_size(json_object_get(doc, "rows")) == 1);
    json_decref(doc);
}

/* A path through a linked list: its run of identical hops is written once with its count in
 * text (csc's and MidLife's paths held thousands of CacheEntry.Next, 130 KB on one line); JSON
 * keeps every hop. */
static void case_leaks_path_folded(void)
{
    run_result r = RUN("leaks", "chain.db");
    CHECK_INT(r.status, 0);
    const char *want = "   path:    handle (strong, 0x1000) -> Holder.Head -> Node.Next (9 times) -> "
                       "Node.Items -> Leak[][0] -> Leak #13\n";
    if (!strstr(r.out, want)) {
        fprintf(stderr, "leaks text lacks:\n%s--- got:\n%s", want, r.out);
        failures++;
    }
    run_result_release(&r);
    json_t *doc = RUN_JSON("leaks", "chain.db", "--json");
    json_t *path = doc ? json_object_get(jrow(doc, 0), "path") : NULL;
    CHECK_INT(json_array_size(path), 13);
    json_decref(doc);
    /* the report's page writes it so too (rendered by headless Chromium, where there is one) */
    if (!g_file_test("/usr/bin/chromium", G_FILE_TEST_IS_EXECUTABLE))
        return;
    r = RUN("report", "chain.db", "-o", "chain.html");
    CHECK_INT(r.status, 0);
    run_result_release(&r);
    g_autofree char *page = fixture_path("chain.html");
    g_autofree char *profile = fixture_path("chromium-profile");
    g_autofree char *url = g_strconcat("file://", page, NULL);
    g_autofree char *profile_arg = g_strconcat("--user-data-dir=", profile, NULL);
    const char *const chromium[] = {"--headless", "--no-sandbox", "--disable-gpu",
                                    "--no-first-run", "--disable-background-networking",
                                    "--disable-component-update", "--disable-sync", profile_arg,
                                    "--dump-dom", url, NULL};
    run_result dom = run_in("/usr/bin/chromium", workdir, chromium);
    CHECK(strstr(dom.out, ">\xe2\x80\xa6Node.Next (9 times)</span> \xe2\x86\x92 ") != NULL &&
          strstr(dom.out, ">\xe2\x80\xa6Node.Next</span>") == NULL);
    run_result_release(&dom);
}

static const cli_test_case cases[] = {
    {"leaks_path_folded", case_leaks_path_folded},
    {"leaks", case_leaks},
    {"leaks_noise", case_leaks_noise},
    {"leaks_stored", case_leaks_stored},
    {"leaks_counts_held", case_leaks_counts_held},
    {"diff", case_diff},
    {"diff_followed", case_diff_followed},
    {"diff_files", case_diff_files},
    {"leaks_files", case_leaks_files},
    {"leaks_files_steady", case_leaks_files_steady},
    {"snapshot_rows_lost", case_snapshot_rows_lost},
    {"survivors_age", case_survivors_age},
};

int main(int argc, char **argv)
{
    return leaks_test_main(argc, argv, cases, G_N_ELEMENTS(cases));
}
