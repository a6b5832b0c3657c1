/* test_summary.c — the survivor figure of a recording that follows its samples, where `info` and
 * the record/attach summary (session/recording.c recording_summary_print) give it: the followed
 * samples' estimate, but never below what the snapshots prove (query/estimates.h,
 * query_survived_read).
 *
 *   test_summary HEAPLENS
 *
 * The fixture is an attach session (run.mode 'attach', samples followed) whose one allocation
 * sample never survived: the estimate is 0, as AttachTarget's summary said "(~0 survived a GC)"
 * while its second snapshot held ~4,500 new LeakedRecords. Its snapshots: the first (the heap
 * found at the attach) 10 objects, 2 frozen; the second 4,512, 2 frozen: at least 4,502
 * allocated during the session survived a GC. A sampled recording (record --mode sampled) counts
 * all of a snapshot's objects (none were there before).
 *
 * Full mode's waits (issue 17: threads wait for the collector instead of dropping): the time is
 * shown by the summary line, `info` (text and JSON) and `report --json` (the page's "Threads
 * waited" card reads it there); a recording without waits says nothing about them. */
#include "tests/unit/common/cli_test.h"

#include "session/recording.h"

#include <fcntl.h>
#include <unistd.h>

/* A stream that starts a run of `command` (pid, mode and run flags as given). */
static hl_sb *run_stream_new(uint32_t pid, uint32_t mode, uint32_t flags, const char *command)
{
    hl_sb *sb = hl_sb_new();
    hl_run_start rs = {.pid = pid, .mode = mode, .start_unix_ns = HL_SB_START_UNIX_NS,
                       .start_mono_ns = HL_SB_MONO_NS, .flags = flags, .pointer_size = 8};
    hl_sb_run_start_full(sb, &rs, command, "10.0.12", "heaplens test");
    return sb;
}

static void fixture_followed(const char *name, uint32_t mode)
{
    hl_sb *sb = run_stream_new(77, mode, HL_RUN_FLAG_SAMPLES_FOLLOWED, "dotnet AttachTarget.dll");
    hl_sb_type(sb, 1, "AttachTarget.LeakedRecord");
    for (uint32_t gc = 1; gc <= 2; gc++) {
        hl_sb_gc_start(sb, gc, 2, TRUE, 1);
        hl_sb_gc_end(sb, gc, 0);
    }
    hl_sb_run_end(sb, 2);
    fixture_write(sb, name);
    fixture_sql(name,
                "INSERT INTO alloc_samples (gc, type_id, thread, heap, size, object_id,"
                " est_count, est_bytes) VALUES (2, 1, 101, 0, 32, NULL, 3200, 102400);"
                "INSERT INTO snapshots (snapshot, gc, objects, refs, roots, handles, bytes,"
                " model_missing, model_extra, frozen, unresolved) VALUES"
                " (1, 1, 10, 0, 0, 0, 1000, 0, 0, 2, 0),"
                " (2, 2, 4512, 0, 0, 0, 145000, 0, 0, 2, 0);");
}

/* A sampled recording (samples followed) of 4 String objects and 2 GCs, as every GC's snapshot
 * names them: 1 (32 B) and 2 (48 B) survive GC 1, 3 dies there, 4 (16 B) survives GC 2.
 * `leftover`: GC 1 leaves object 2 in gen0 (pinned), where a snapshot names it for itself only
 * (the next names it again, as object 5, a row more); `snapshots`: the GCs that took one. Its
 * one sample (object 1) weighs `weight`: the samples estimate `weight` survivors. */
static void fixture_every(const char *name, gboolean leftover, const char *snapshots, int weight)
{
    hl_sb *sb = run_stream_new(79, HL_MODE_SAMPLED, HL_RUN_FLAG_SAMPLES_FOLLOWED,
                               "dotnet Every.dll");
    hl_sb_type(sb, 1, "System.String");
    hl_sb_alloc(sb, 1, 1, 32, 100);
    hl_sb_alloc(sb, 2, 1, 48, 100);
    hl_sb_alloc(sb, 3, 1, 64, 100);
    hl_sb_gc_start(sb, 1, 0, TRUE, 4);
    hl_sb_fate(sb, 1, 1, HL_FATE(HL_GEN_0, HL_GEN_1));
    hl_sb_fate(sb, 1, 2, HL_FATE(HL_GEN_0, leftover ? HL_GEN_0 : HL_GEN_1));
    hl_sb_fate(sb, 1, 3, HL_FATE(HL_GEN_0, HL_GEN_NONE));
    hl_sb_gc_end(sb, 1, HL_GC_FLAG_COMPACTING);
    hl_sb_alloc(sb, 4, 1, 16, 100);
    if (leftover) /* object 2 named again by GC 2's snapshot: a new row, the old one dead */
        hl_sb_alloc(sb, 5, 1, 48, 100);
    hl_sb_gc_start(sb, 2, 1, TRUE, leftover ? 6 : 5);
    hl_sb_fate(sb, 2, 4, HL_FATE(HL_GEN_0, HL_GEN_1));
    if (leftover) {
        hl_sb_fate(sb, 2, 5, HL_FATE(HL_GEN_0, HL_GEN_1));
        hl_sb_death(sb, 2, 2);
    }
    hl_sb_gc_end(sb, 2, HL_GC_FLAG_COMPACTING);
    hl_sb_run_end(sb, 2);
    fixture_write(sb, name);
    /* the samples' recording: small objects' survivors are not counted, one sample weighs 1 */
    g_autofree char *sql = g_strdup_printf(
        "UPDATE alloc_counts SET survived = 0, survived_bytes = 0;"
        "INSERT INTO alloc_samples (gc, type_id, thread, heap, size, object_id, est_count,"
        " est_bytes) VALUES (1, 1, 100, 0, 32, 1, %d, 32 * %d);"
        "INSERT INTO snapshots (snapshot, gc, objects, refs, roots, handles, bytes,"
        " model_missing, model_extra, frozen, unresolved)"
        " SELECT gc, gc, 2 + (gc = 2), 0, 0, 0, 80 + 16 * (gc = 2), 0, 0, 0, 0 FROM gcs"
        " WHERE gc IN (%s);", weight, weight, snapshots);
    fixture_sql(name, sql);
}

/* A full-mode recording whose threads waited `waits` times, `wait_ns` in all. */
static void fixture_waited(const char *name, uint64_t waits, uint64_t wait_ns)
{
    hl_sb *sb = hl_sb_new();
    hl_sb_run_start(sb, 78, "dotnet MidLife.dll");
    hl_sb_type(sb, 1, "MidLife.Order");
    hl_sb_alloc(sb, 1, 1, 32, 100);
    hl_sb_alloc(sb, 2, 1, 32, 100);
    hl_sb_gc_start(sb, 1, 0, FALSE, 3);
    hl_sb_fate(sb, 1, 1, HL_FATE(HL_GEN_0, HL_GEN_1));
    hl_sb_fate(sb, 1, 2, HL_FATE(HL_GEN_0, HL_GEN_NONE));
    hl_sb_gc_end(sb, 1, HL_GC_FLAG_COMPACTING);
    hl_run_end e = {.end_unix_ns = HL_SB_START_UNIX_NS + 1000000000u,
                    .end_mono_ns = HL_SB_MONO_NS + 1000000000u,
                    .gcs = 1,
                    .shutdown_mono_ns = HL_SB_MONO_NS + 1000000000u - 5000000u,
                    .counters = {.allocs_seen = 2, .thread_waits = waits,
                                 .thread_wait_ns = wait_ns}};
    hl_sb_run_end_full(sb, &e);
    fixture_write(sb, name);
}

static void fixtures_build(void)
{
    fixture_followed("attach.db", HL_MODE_ATTACH);
    fixture_followed("sampled.db", HL_MODE_SAMPLED);
    fixture_waited("waited.db", 58, 13001628235u);
    fixture_waited("nowait.db", 0, 0);
}

/* The summary as record and attach print it on stderr (text) and return it (JSON). */
static char *summary_text_new(const char *name)
{
    g_autofree char *path = fixture_path(name);
    g_autofree char *out = fixture_path("summary.txt");
    fflush(stderr);
    int saved = dup(2);
    int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    dup2(fd, 2);
    close(fd);
    recording_summary_options o = {0};
    recording_summary_print(path, &o);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    char *text = NULL;
    g_file_get_contents(out, &text, NULL, NULL);
    return text;
}

static void check_survived(const char *name, int64_t proven, const char *words)
{
    g_autofree char *path = fixture_path(name);
    recording_summary_options o = {.json = TRUE};
    json_t *j = recording_summary_print(path, &o);
    CHECK(j != NULL);
    CHECK_INT(json_integer_value(json_object_get(j, "allocations_survived")), proven);
    CHECK_INT(json_integer_value(json_object_get(j, "allocations_survived_at_least")), proven);
    /* a lower bound of the followed samples' recording: not the exact count either */
    CHECK(json_is_true(json_object_get(j, "allocations_survived_estimated")));
    json_decref(j);
    g_autofree char *text = summary_text_new(name);
    if (!text || !strstr(text, words)) {
        fprintf(stderr, "%s: the summary lacks '%s':\n%s", name, words, text ? text : "");
        failures++;
    }

    run_result r = RUN("info", name, "--json");
    json_t *info = json_loads(r.out, 0, NULL);
    json_t *totals = json_object_get(info, "totals");
    CHECK_INT(json_integer_value(json_object_get(totals, "allocations_survived")), proven);
    CHECK_INT(json_integer_value(json_object_get(totals, "allocations_survived_at_least")), proven);
    CHECK(json_is_true(json_object_get(totals, "allocations_survived_estimated")));
    json_decref(info);
    run_result_release(&r);
}

/* "Survived a GC" of a sampled recording whose every GC took a snapshot that named every
 * survivor is the exact count, unmarked (it said "~100" from the samples, estimated): 3 objects,
 * 96 B, in the summary (read from the packed rows) and in info (from the first read's summary).
 * Not when a GC took none (then the rows are a lower bound: "at least", when more than the
 * samples estimate), nor when a snapshot found an object still in gen0 (named again by the
 * next: the rows may count it twice): at least, at most that many more, whatever the samples
 * estimate (the figure is known within those bounds). */
static void case_survived_every_snapshot(void)
{
    static const struct {
        const char *name;
        gboolean leftover;
        const char *snapshots;
        int weight;
        gboolean exact;
        const char *summary, *info;
    } cases[] = {
        {"every.db", FALSE, "1, 2", 100, TRUE, " (3 survived a GC) of 1 type,",
         "  survived a GC    3 (96 B)\n"},
        /* the rows prove 3 all the same (each names an object that survived a GC): more than
         * the samples' 1, a lower bound (which said "~1") */
        {"one_missing.db", FALSE, "2", 1, FALSE, " (at least 3 survived a GC, by the snapshots)",
         "  survived a GC    ≥3 (≥96 B)  AT LEAST: the objects the snapshots found "},
        {"one_missing_heavy.db", FALSE, "2", 100, FALSE, " (~100 survived a GC) of 1 type,",
         "  survived a GC    ~100 (~3.1 KiB)  ESTIMATED from the followed samples\n"},
        {"leftover.db", TRUE, "1, 2", 100, FALSE, " (at least 3 survived a GC, by the snapshots)",
         "  survived a GC    ≥3 (≥96 B)  AT LEAST: every GC's snapshot named them; at most 1 "
         "more (left in gen0, named again by the next snapshot)\n"},
    };
    for (size_t i = 0; i < G_N_ELEMENTS(cases); i++) {
        fixture_every(cases[i].name, cases[i].leftover, cases[i].snapshots, cases[i].weight);
        /* the summary first: the file as the recording left it, its objects packed */
        g_autofree char *text = summary_text_new(cases[i].name);
        if (!text || !strstr(text, cases[i].summary)) {
            fprintf(stderr, "%s: the summary lacks '%s':\n%s", cases[i].name, cases[i].summary,
                    text ? text : "");
            failures++;
        }
        g_autofree char *path = fixture_path(cases[i].name);
        recording_summary_options o = {.json = TRUE};
        json_t *j = recording_summary_print(path, &o);
        CHECK(j != NULL);
        CHECK(json_is_boolean(json_object_get(j, "allocations_survived_estimated")) &&
              json_is_true(json_object_get(j, "allocations_survived_estimated")) ==
                  !cases[i].exact);
        if (cases[i].exact)
            CHECK_INT(json_integer_value(json_object_get(j, "allocations_survived")), 3);
        /* every GC's snapshot named the survivors: no more than the rows (3; 4 with object 2
         * named twice), else not known */
        const int64_t rows = cases[i].leftover ? 4 : 3;
        if (strcmp(cases[i].snapshots, "1, 2") == 0)
            CHECK_INT(json_integer_value(json_object_get(j, "allocations_survived_at_most")),
                      rows);
        else
            CHECK(json_is_null(json_object_get(j, "allocations_survived_at_most")));
        json_decref(j);
        run_result r = RUN("info", cases[i].name);
        if (!strstr(r.out, cases[i].info)) {
            fprintf(stderr, "%s: info lacks '%s':\n%s", cases[i].name, cases[i].info, r.out);
            failures++;
        }
        run_result_release(&r);
        r = RUN("info", cases[i].name, "--json");
        json_t *info = json_loads(r.out, 0, NULL);
        json_t *totals = json_object_get(info, "totals");
        CHECK(json_is_true(json_object_get(totals, "allocations_survived_estimated")) ==
              !cases[i].exact);
        CHECK(strcmp(cases[i].snapshots, "1, 2") == 0
                  ? json_integer_value(json_object_get(totals, "allocations_survived_at_most")) ==
                        rows
                  : json_is_null(json_object_get(totals, "allocations_survived_at_most")));
        if (cases[i].exact) {
            CHECK_INT(json_integer_value(json_object_get(totals, "allocations_survived")), 3);
            CHECK_INT(json_integer_value(json_object_get(totals, "allocations_survived_bytes")),
                      96);
        }
        json_decref(info);
        run_result_release(&r);
    }
}

static void case_survived(void)
{
    /* attach: the second snapshot less the first */
    check_survived("attach.db", 4502, "(at least 4,502 survived a GC, by the snapshots)");
    run_result r = RUN("info", "attach.db");
    if (!strstr(r.out, "survived a GC    ≥4,502 (≥140.6 KiB)  AT LEAST: the objects the "
                       "snapshots found allocated while recording (the followed samples "
                       "estimate fewer)\n")) {
        fprintf(stderr, "info's survived line:\n%s", r.out);
        failures++;
    }
    run_result_release(&r);
    /* sampled: the largest snapshot, whole but its frozen objects */
    check_survived("sampled.db", 4510, "(at least 4,510 survived a GC, by the snapshots)");
}

static int64_t counter_of(json_t *doc, const char *name)
{
    return json_integer_value(json_object_get(json_object_get(doc, "counters"), name));
}

static void check_waits(const char *name, int64_t waits, int64_t wait_ns, const char *words)
{
    g_autofree char *path = fixture_path(name);
    recording_summary_options o = {.json = TRUE};
    json_t *j = recording_summary_print(path, &o);
    CHECK(j != NULL);
    CHECK_INT(json_integer_value(json_object_get(j, "thread_waits")), waits);
    CHECK_INT(json_integer_value(json_object_get(j, "thread_wait_ns")), wait_ns);
    CHECK_INT(json_integer_value(json_object_get(j, "allocations_lost")), 0);
    json_decref(j);
    g_autofree char *text = summary_text_new(name);
    gboolean said = text && strstr(text, "threads waited") != NULL;
    if (words ? !text || !strstr(text, words) : said) {
        fprintf(stderr, "%s: the summary %s '%s':\n%s", name, words ? "lacks" : "says",
                words ? words : "threads waited", text ? text : "");
        failures++;
    }
    for (int k = 0; k < 2; k++) { /* info --json, report --json: the same counters */
        run_result r = k == 0 ? RUN("info", name, "--json") : RUN("report", name, "--json");
        json_t *doc = json_loads(r.out, 0, NULL);
        CHECK(doc != NULL);
        CHECK_INT(counter_of(doc, "thread_waits"), waits);
        CHECK_INT(counter_of(doc, "thread_wait_ns"), wait_ns);
        json_decref(doc);
        run_result_release(&r);
    }
}

static void case_waits(void)
{
    check_waits("waited.db", 58, 13001628235,
                "0 lost, threads waited 13.0 s for the collector (58 waits)");
    run_result r = RUN("info", "waited.db");
    if (!strstr(r.out, "thread_wait_ns            13,001,628,235 (13.0 s)  time program "
                       "threads waited for the collector, summed over threads\n") ||
        !strstr(r.out, "thread_waits              58  allocations that waited for room in the "
                       "collector's buffers (nothing lost)\n") ||
        !strstr(r.out, "5,000,000 (5.0 ms)  how long the program's exit waited for the "
                       "collector (attach: its last step at the detach; the program ran on)\n")) {
        fprintf(stderr, "info's wait lines:\n%s", r.out);
        failures++;
    }
    run_result_release(&r);
    check_waits("nowait.db", 0, 0, NULL);
}

/* A killed recorder is said in the words of its command: a killed `heaplens attach` leaves no
 * exit status unknown (a process attached to has none in the file) — its writer ended the session
 * early — while a killed `heaplens record` does. */
static void case_recorder_killed(void)
{
    static const struct {
        const char *name, *words;
    } runs[] = {
        {"attach.db", "heaplens attach was killed: its writer ended the session then (the "
                      "collector detached), before its planned end"},
        {"sampled.db", "heaplens record was killed: the program's exit status is unknown"},
    };
    for (size_t i = 0; i < G_N_ELEMENTS(runs); i++) {
        fixture_sql(runs[i].name, "UPDATE run SET loss = 'recorder-killed'");
        run_result r = RUN("info", runs[i].name);
        g_autofree char *text = summary_text_new(runs[i].name);
        if (!strstr(r.out, runs[i].words) || !text || !strstr(text, runs[i].words)) {
            fprintf(stderr, "%s: info or the summary lacks '%s':\n%s%s", runs[i].name,
                    runs[i].words, r.out, text ? text : "");
            failures++;
        }
        run_result_release(&r);
    }
}

/* An attach session whose detach gave its last snapshot up (`m`): info and the summary line of
 * `file` say each of `words`, with the figures the collector sent (FINAL_SNAPSHOT_MISSED, stored
 * as counters). */
static void final_snapshot_missed_says(const char *file, const hl_final_snapshot_missed *m,
                                       const char *const *words, size_t n_words)
{
    hl_sb *sb = run_stream_new(79, HL_MODE_ATTACH, HL_RUN_FLAG_SAMPLES_FOLLOWED,
                               "dotnet GcLoop.dll");
    hl_sb_gc_start(sb, 1, 0, TRUE, 1);
    hl_sb_gc_end(sb, 1, 0);
    hl_sb_record(sb, HL_REC_FINAL_SNAPSHOT_MISSED, m, sizeof *m);
    hl_sb_run_end(sb, 1);
    fixture_write(sb, file);
    run_result r = RUN("info", file);
    g_autofree char *text = summary_text_new(file);
    for (size_t i = 0; i < n_words; i++)
        if (!strstr(r.out, words[i]) || !text || !strstr(text, words[i])) {
            fprintf(stderr, "info or the summary lacks '%s':\n%s%s", words[i], r.out,
                    text ? text : "");
            failures++;
        }
    run_result_release(&r);
}

/* What `info` and the record/attach summary say of recording `name`: when `present`, `words`
 * in both, `info_line` among info's counter lines and `key` = `value` in the summary's JSON;
 * else neither says `absent` and the JSON's `key` is 0. */
static void summary_says(const char *name, gboolean present, const char *words,
                         const char *info_line, const char *absent, const char *key,
                         int64_t value)
{
    run_result r = RUN("info", name);
    g_autofree char *text = summary_text_new(name);
    gboolean said = strstr(r.out, words) && text && strstr(text, words) &&
                    strstr(r.out, key) && strstr(r.out, info_line);
    gboolean any = strstr(r.out, absent) || (text && strstr(text, absent));
    if (present ? !said : any) {
        fprintf(stderr, "%s: info or the summary %s '%s':\n%s%s", name,
                present ? "lacks" : "says", present ? words : absent, r.out, text ? text : "");
        failures++;
    }
    run_result_release(&r);
    recording_summary_options o = {.json = TRUE};
    g_autofree char *path = fixture_path(name);
    json_t *j = recording_summary_print(path, &o);
    CHECK(j != NULL);
    CHECK_INT(json_integer_value(json_object_get(j, key)), present ? value : 0);
    json_decref(j);
}

/* Snapshots a policy did not take for the bound on the walks the collector held (GC_END flag
 * HL_GC_FLAG_SNAPSHOT_SKIPPED): the writer counts them, and info (its counter line and the
 * note), the summary line (and its JSON) and the report say it; a recording without one says
 * nothing of it. */
static void case_snapshots_skipped(void)
{
    static const char *const words =
        "2 snapshots of the --snapshot policy (at GCs it chose: induced, gen2, every:N) were not "
        "taken, because the collector still held 4 or more earlier snapshots, 64 MiB or more, not "
        "yet applied";
    for (int skipping = 0; skipping < 2; skipping++) {
        const char *name = skipping ? "skipped.db" : "unskipped.db";
        hl_sb *sb = hl_sb_new();
        hl_sb_run_start(sb, 80, "dotnet GcLoop.dll");
        for (uint32_t gc = 1; gc <= 3; gc++) {
            hl_sb_gc_start(sb, gc, 0, TRUE, 1);
            hl_sb_gc_end(sb, gc, skipping && gc > 1 ? HL_GC_FLAG_SNAPSHOT_SKIPPED : 0);
        }
        hl_sb_run_end(sb, 3);
        fixture_write(sb, name);
        summary_says(name, skipping, words,
                     "2  snapshots a --snapshot policy was due to take at a GC and did not",
                     "not taken", "snapshots_skipped_queued", 2);
        for (int k = 0; k < 2; k++) { /* info --json, report --json */
            run_result rj = k == 0 ? RUN("info", name, "--json") : RUN("report", name, "--json");
            json_t *doc = json_loads(rj.out, 0, NULL);
            CHECK(doc != NULL);
            json_t *counter = json_object_get(json_object_get(doc, "counters"),
                                              "snapshots_skipped_queued");
            if (skipping)
                CHECK_INT(json_integer_value(counter), 2);
            else
                CHECK(counter == NULL); /* absent when none was skipped */
            json_decref(doc);
            run_result_release(&rj);
        }
    }
}

/* "N allocations ... of T types" counts the types allocated, as `allocations` does: the types
 * table also names types no allocation was counted of (those only a snapshot or a field found).
 * An attach session's summary said "0 allocations ... of 1,450 types", AllocPatterns' "of 242
 * types" where `allocations` said 240. */
static void case_types(void)
{
    hl_sb *sb = hl_sb_new();
    hl_sb_run_start(sb, 80, "dotnet AllocPatterns.dll");
    hl_sb_type(sb, 1, "App.Allocated");
    hl_sb_type(sb, 2, "App.OnlyNamed");
    hl_sb_type(sb, 3, "App.AlsoNamed");
    hl_sb_alloc(sb, 1, 1, 32, 100);
    hl_sb_alloc(sb, 2, 1, 32, 100);
    hl_sb_gc_start(sb, 1, 0, FALSE, 2);
    hl_sb_fate(sb, 1, 1, HL_FATE(HL_GEN_0, HL_GEN_1));
    hl_sb_fate(sb, 1, 2, HL_FATE(HL_GEN_0, HL_GEN_NONE));
    hl_sb_gc_end(sb, 1, HL_GC_FLAG_COMPACTING);
    hl_sb_run_end(sb, 1);
    fixture_write(sb, "types.db");
    g_autofree char *text = summary_text_new("types.db");
    if (!text || !strstr(text, " allocations (1 survived a GC) of 1 type, 0 lost -> ")) {
        fprintf(stderr, "the summary's types:\n%s", text ? text : "");
        failures++;
    }
    run_result r = RUN("allocations", "types.db");
    CHECK(g_str_has_prefix(r.out, "2 allocations (64 B) of 1 type\n"));
    run_result_release(&r);
    g_autofree char *path = fixture_path("types.db");
    recording_summary_options o = {.json = TRUE};
    json_t *j = recording_summary_print(path, &o);
    CHECK_INT(json_integer_value(json_object_get(j, "allocation_types")), 1);
    CHECK_INT(json_integer_value(json_object_get(j, "types")), 3); /* as info's "types" */
    json_decref(j);
}

static void case_final_snapshot_missed(void)
{
    hl_final_snapshot_missed m = {.reason = HL_FINAL_SNAPSHOT_BEHIND, .gcs_behind = 49,
                                  .waited_ms = 10200, .snapshots_skipped = 48};
    static const char *const words[] = {
        "the final snapshot was not taken: after 10.2 s the collector was still 49 GCs behind "
        "the program's own",
        "so the session ended without it and 48 snapshots of those GCs were not built",
    };
    final_snapshot_missed_says("missed.db", &m, words, G_N_ELEMENTS(words));
}

/* A second signal to heaplens attach during the detach gave the last snapshot up at once. */
static void case_final_snapshot_given_up(void)
{
    hl_final_snapshot_missed m = {.reason = HL_FINAL_SNAPSHOT_GIVEN_UP, .gcs_behind = 110,
                                  .waited_ms = 5017, .snapshots_skipped = 109};
    static const char *const words[] = {
        "the final snapshot was not taken: a second signal to heaplens attach gave it up after "
        "5.0 s of waiting (the collector 110 GCs behind the program's own)",
        "so the session ended without it and 109 snapshots of those GCs were not built",
    };
    final_snapshot_missed_says("given_up.db", &m, words, G_N_ELEMENTS(words));
    /* Asked before the collector began to wait: not "after 0 ns". */
    hl_final_snapshot_missed at_once = {.reason = HL_FINAL_SNAPSHOT_GIVEN_UP, .gcs_behind = 9,
                                        .waited_ms = 0, .snapshots_skipped = 8};
    static const char *const at_once_words[] = {
        "the final snapshot was not taken: a second signal to heaplens attach gave it up before "
        "it was waited for (the collector 9 GCs behind the program's own)",
    };
    final_snapshot_missed_says("given_up_at_once.db", &at_once, at_once_words,
                               G_N_ELEMENTS(at_once_words));
}

/* Which GC went without its snapshot, and why (gcs.snapshot_skipped, schema 9): the GC_END flags
 * HL_GC_FLAG_SNAPSHOT_SKIPPED ("held") and HL_GC_FLAG_SNAPSHOT_GIVEN_UP ("detach": a detach
 * past its bound) are stored per GC, so the counters add up from the rows; `heaplens gcs` shows
 * them in a column of their own (none without a skip), `gcs --json` and `report --json` per GC.
 * Before, only the counters said how many, not which. */
static void case_skipped_per_gc(void)
{
    hl_sb *sb = run_stream_new(81, HL_MODE_ATTACH, 0, "dotnet GcLoop.dll");
    static const uint32_t flags[] = {0, HL_GC_FLAG_SNAPSHOT_SKIPPED, HL_GC_FLAG_SNAPSHOT_SKIPPED,
                                     HL_GC_FLAG_SNAPSHOT_GIVEN_UP};
    for (uint32_t gc = 1; gc <= G_N_ELEMENTS(flags); gc++) {
        hl_sb_gc_start(sb, gc, 0, TRUE, 1);
        hl_sb_gc_end(sb, gc, flags[gc - 1]);
    }
    hl_final_snapshot_missed m = {.reason = HL_FINAL_SNAPSHOT_BEHIND, .gcs_behind = 1,
                                  .waited_ms = 10000, .snapshots_skipped = 1};
    hl_sb_record(sb, HL_REC_FINAL_SNAPSHOT_MISSED, &m, sizeof m);
    hl_sb_run_end(sb, G_N_ELEMENTS(flags));
    fixture_write(sb, "per_gc.db");

    run_result r = RUN("check", "per_gc.db", "--sql",
                       "SELECT group_concat(gc || ':' || coalesce(snapshot_skipped, '-'), ' ') ||"
                       " ' ' || (SELECT count(*) FROM gcs WHERE snapshot_skipped = 'held') || '='"
                       " || (SELECT value FROM counters WHERE name = 'snapshots_skipped_queued')"
                       " || ' ' || (SELECT count(*) FROM gcs WHERE snapshot_skipped = 'detach') ||"
                       " '=' || (SELECT value FROM counters WHERE name = 'snapshots_skipped')"
                       " FROM gcs");
    if (!strstr(r.out, "1:- 2:held 3:held 4:detach 2=2 1=1")) {
        fprintf(stderr, "gcs.snapshot_skipped:\n%s%s", r.out, r.err);
        failures++;
    }
    run_result_release(&r);

    r = RUN("gcs", "per_gc.db");
    gchar **lines = g_strsplit(r.out, "\n", -1);
    CHECK(lines[0] && g_str_has_suffix(g_strchomp(lines[0]), "snapshot"));
    int held = 0, detach = 0;
    for (int i = 1; lines[0] && lines[i]; i++) {
        held += strstr(lines[i], "skipped (held)") != NULL;
        detach += strstr(lines[i], "skipped (detach)") != NULL;
    }
    if (held != 2 || detach != 1) {
        fprintf(stderr, "heaplens gcs shows %d held and %d detach skips:\n%s", held, detach,
                r.out);
        failures++;
    }
    g_strfreev(lines);
    run_result_release(&r);

    static const char *const want[] = {NULL, "held", "held", "detach"};
    for (int k = 0; k < 2; k++) { /* gcs --json, report --json */
        run_result rj = k == 0 ? RUN("gcs", "per_gc.db", "--json")
                               : RUN("report", "per_gc.db", "--json");
        json_t *doc = json_loads(rj.out, 0, NULL);
        json_t *rows = json_object_get(doc, k == 0 ? "rows" : "gcs");
        CHECK_INT(json_array_size(rows), G_N_ELEMENTS(want));
        for (size_t i = 0; i < json_array_size(rows) && i < G_N_ELEMENTS(want); i++) {
            json_t *v = json_object_get(json_array_get(rows, i), "snapshot_skipped");
            CHECK(v != NULL);
            CHECK(want[i] ? json_is_string(v) && strcmp(json_string_value(v), want[i]) == 0
                          : json_is_null(v));
        }
        json_decref(doc);
        run_result_release(&rj);
    }

    /* The note counts the detach's one skip in the singular ("1 snapshot ... were" before). */
    r = RUN("info", "per_gc.db");
    CHECK(r.out && strstr(r.out, "and 1 snapshot of those GCs was not built"));
    run_result_release(&r);

    /* A schema 8 file (no gcs.snapshot_skipped) reads as before: no column, null per GC. */
    g_autofree char *per_gc = fixture_path("per_gc.db");
    g_autofree char *old_path = fixture_path("per_gc_schema8.db");
    g_autofree char *copy = NULL;
    gsize copy_len = 0;
    CHECK(g_file_get_contents(per_gc, &copy, &copy_len, NULL) &&
          g_file_set_contents(old_path, copy, (gssize)copy_len, NULL));
    fixture_sql("per_gc_schema8.db",
                "DROP VIEW gc_summary; ALTER TABLE gcs DROP COLUMN snapshot_skipped;"
                " CREATE VIEW gc_summary AS SELECT g.*,"
                " g0.size_before AS gen0_before, g0.size_after AS gen0_after,"
                " g1.size_before AS gen1_before, g1.size_after AS gen1_after,"
                " g2.size_before AS gen2_before, g2.size_after AS gen2_after,"
                " g3.size_before AS loh_before, g3.size_after AS loh_after,"
                " g4.size_before AS poh_before, g4.size_after AS poh_after FROM gcs g"
                " LEFT JOIN gc_generations g0 ON g0.gc = g.gc AND g0.generation = 0"
                " LEFT JOIN gc_generations g1 ON g1.gc = g.gc AND g1.generation = 1"
                " LEFT JOIN gc_generations g2 ON g2.gc = g.gc AND g2.generation = 2"
                " LEFT JOIN gc_generations g3 ON g3.gc = g.gc AND g3.generation = 3"
                " LEFT JOIN gc_generations g4 ON g4.gc = g.gc AND g4.generation = 4;"
                " PRAGMA user_version = 8;");
    r = RUN("gcs", "per_gc_schema8.db");
    CHECK(r.status == 0 && r.out && strstr(r.out, " 4    0  Induced") && !strstr(r.out, "skipped ("));
    run_result_release(&r);
    for (int k = 0; k < 2; k++) {
        run_result rj = k == 0 ? RUN("gcs", "per_gc_schema8.db", "--json")
                               : RUN("report", "per_gc_schema8.db", "--json");
        json_t *doc = json_loads(rj.out, 0, NULL);
        json_t *rows = json_object_get(doc, k == 0 ? "rows" : "gcs");
        CHECK(rj.status == 0);
        CHECK_INT(json_array_size(rows), G_N_ELEMENTS(want));
        for (size_t i = 0; i < json_array_size(rows); i++)
            CHECK(json_is_null(json_object_get(json_array_get(rows, i), "snapshot_skipped")));
        json_decref(doc);
        run_result_release(&rj);
    }

    /* A recording without a skip: no column. */
    sb = hl_sb_new();
    hl_sb_run_start(sb, 82, "dotnet GcLoop.dll");
    hl_sb_gc_start(sb, 1, 0, TRUE, 1);
    hl_sb_gc_end(sb, 1, 0);
    hl_sb_run_end(sb, 1);
    fixture_write(sb, "per_gc_none.db");
    r = RUN("gcs", "per_gc_none.db");
    CHECK(r.out && !strstr(r.out, "snapshot") && !strstr(r.out, "skipped"));
    run_result_release(&r);
}

/* The detach's wait for its ForceGC threads hit its bound (HL_REC_FORCERS_LEFT): the writer
 * stores it (counters forcegc_threads_left, forcegc_wait_ms), and info (its counter lines and
 * the note), the summary line (and its JSON) and the report say it; before, only the program's
 * stderr and HEAPLENS_STATS did. A recording without it says nothing of it. */
static void case_forcers_left(void)
{
    static const char *const words =
        "1 ForceGC thread heaplens started was still in the runtime after the detach waited "
        "30.0 s for it: it detached all the same";
    for (int left = 0; left < 2; left++) {
        const char *name = left ? "forcers_left.db" : "forcers_none.db";
        hl_sb *sb = run_stream_new(83, HL_MODE_ATTACH, 0, "dotnet WebApi.dll");
        hl_sb_gc_start(sb, 1, 2, TRUE, 1);
        hl_sb_gc_end(sb, 1, 0);
        hl_forcers_left f = {.threads = 1, .waited_ms = 30001};
        if (left)
            hl_sb_record(sb, HL_REC_FORCERS_LEFT, &f, sizeof f);
        hl_sb_run_end(sb, 1);
        fixture_write(sb, name);
        summary_says(name, left, words, "forcegc_wait_ms", "ForceGC", "forcegc_threads_left",
                     1);
        run_result rj = RUN("report", name, "--json");
        json_t *doc = json_loads(rj.out, 0, NULL);
        json_t *counters = json_object_get(doc, "counters");
        const char *note = json_string_value(json_object_get(doc, "note"));
        if (left) {
            CHECK_INT(json_integer_value(json_object_get(counters, "forcegc_threads_left")), 1);
            CHECK_INT(json_integer_value(json_object_get(counters, "forcegc_wait_ms")), 30001);
            CHECK(note && strstr(note, words));
        } else {
            CHECK(json_object_get(counters, "forcegc_threads_left") == NULL);
            CHECK(!note || !strstr(note, "ForceGC"));
        }
        json_decref(doc);
        run_result_release(&rj);
    }
}

/* A stream that ended early (status truncated) lost what never arrived, which no counter counts:
 * a MidLife killed by Ctrl-C at its exit, its collector still sending, said "0 lost" with 9 of
 * its 13 GCs missing. The summary says the loss is uncounted, or its counts lower bounds. */
static void case_truncated_loss(void)
{
    static const struct {
        const char *name, *sql, *words;
    } runs[] = {
        {"killed.db", "UPDATE run SET status = 'truncated', loss = 'program-killed'",
         ", lost an uncounted part (program-killed: what was not sent before the stream ended) "
         "-> "},
        {"killed_counted.db",
         "UPDATE run SET status = 'truncated', loss = 'program-killed';"
         "INSERT OR REPLACE INTO counters (name, value) VALUES ('allocs_dropped', 5)",
         ", lost at least 5 allocations and 0 GCs (program-killed) -> "},
        {"complete.db", "", ", 0 lost -> "},
    };
    for (size_t i = 0; i < G_N_ELEMENTS(runs); i++) {
        fixture_waited(runs[i].name, 0, 0);
        if (*runs[i].sql)
            fixture_sql(runs[i].name, runs[i].sql);
        g_autofree char *text = summary_text_new(runs[i].name);
        if (!text || !strstr(text, runs[i].words)) {
            fprintf(stderr, "%s: the summary lacks '%s':\n%s", runs[i].name, runs[i].words,
                    text ? text : "");
            failures++;
        }
        recording_summary_options o = {.json = TRUE};
        g_autofree char *path = fixture_path(runs[i].name);
        json_t *j = recording_summary_print(path, &o);
        CHECK(j != NULL);
        CHECK(json_is_boolean(json_object_get(j, "lost_at_least")) &&
              json_is_true(json_object_get(j, "lost_at_least")) == (*runs[i].sql != '\0'));
        json_decref(j);
    }
}

static const cli_test_case cases[] = {
    {"truncated_loss", case_truncated_loss},
    {"skipped_per_gc", case_skipped_per_gc},
    {"forcers_left", case_forcers_left},
    {"types", case_types},
    {"final_snapshot_missed", case_final_snapshot_missed},
    {"snapshots_skipped", case_snapshots_skipped},
    {"final_snapshot_given_up", case_final_snapshot_given_up},
    {"survived", case_survived},
    {"survived_every_snapshot", case_survived_every_snapshot},
    {"waits", case_waits},
    {"recorder_killed", case_recorder_killed},
};

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: test_summary HEAPLENS\n");
        return 2;
    }
    heaplens = argv[1];
    return cli_test_main("summary", "all", cases, G_N_ELEMENTS(cases), fixtures_build);
}
