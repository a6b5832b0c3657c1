/* cmd_info.c — `heaplens info FILE [--json]`: the run, its counters and totals
 * (query/info.h). */
#include "cli/cli.h"
#include "cli/commands.h"
#include "query/count_sites.h"
#include "query/info.h"

#include <string.h>

/* Text output: "key  value" lines, keys padded to a common width per section. */
typedef struct info_lines {
    GPtrArray *keys;
    GPtrArray *values;
} info_lines;

static void info_lines_init(info_lines *lines)
{
    lines->keys = g_ptr_array_new_with_free_func(g_free);
    lines->values = g_ptr_array_new_with_free_func(g_free);
}

static void info_lines_release(info_lines *lines)
{
    g_ptr_array_free(lines->keys, TRUE);
    g_ptr_array_free(lines->values, TRUE);
}

static void info_lines_add(info_lines *lines, const char *key, char *value /* stolen */)
{
    g_ptr_array_add(lines->keys, g_strdup(key));
    g_ptr_array_add(lines->values, value ? value : g_strdup("-"));
}

static void info_lines_print(const info_lines *lines, const char *title, FILE *out)
{
    size_t width = 0;
    for (guint i = 0; i < lines->keys->len; i++)
        width = MAX(width, strlen(g_ptr_array_index(lines->keys, i)));
    if (title)
        fprintf(out, "%s\n", title);
    for (guint i = 0; i < lines->keys->len; i++)
        fprintf(out, "%s%-*s  %s\n", title ? "  " : "", (int)width,
                (const char *)g_ptr_array_index(lines->keys, i),
                (const char *)g_ptr_array_index(lines->values, i));
}

/* A command line for a terminal: a compiler's can hold hundreds of paths (csc with 200 files
 * fills screens), so text keeps its first INFO_COMMAND_MAX bytes, cut after a whole argument
 * where one ends near there, and says how many characters are left; --json and the run row keep
 * it whole. Control characters (a newline, an escape sequence in an argument, a C1 CSI) and
 * bytes that are not UTF-8 are shown as '?' so that they cannot break the lines or drive the
 * terminal. */
#define INFO_COMMAND_MAX 160

/* The characters of [p, end), each byte that is not UTF-8 one; appended to `out` (unless NULL)
 * as the terminal may show them. */
static size_t info_command_chars(const char *p, const char *end, GString *out)
{
    size_t n = 0;
    for (; p < end; n++) {
        gunichar c = g_utf8_get_char_validated(p, end - p);
        gboolean bad = c == (gunichar)-1 || c == (gunichar)-2;
        size_t len = bad ? 1 : (size_t)g_utf8_skip[*(guchar *)p];
        if (out && (bad || g_unichar_iscntrl(c))) /* C0, DEL and C1 */
            g_string_append_c(out, '?');
        else if (out)
            g_string_append_len(out, p, (gssize)len);
        p += len;
    }
    return n;
}

static char *info_command_dup(const char *command)
{
    size_t len = strlen(command), keep = len;
    if (len > INFO_COMMAND_MAX) {
        keep = INFO_COMMAND_MAX;
        while (keep > 0 && ((unsigned char)command[keep] & 0xC0) == 0x80)
            keep--; /* not inside a UTF-8 character */
        const char *space = g_strrstr_len(command, (gssize)keep, " ");
        if (space && (size_t)(space - command) >= INFO_COMMAND_MAX / 2)
            keep = (size_t)(space - command);
    }
    GString *text = g_string_sized_new(keep + 64);
    info_command_chars(command, command + keep, text);
    if (keep < len) {
        char n[QUERY_FORMAT_MAX];
        size_t left = info_command_chars(command + keep, command + len, NULL);
        g_string_append_printf(text, " ... (%s more character%s: info --json shows it whole)",
                               query_count_format((int64_t)left, n), left == 1 ? "" : "s");
    }
    return g_string_free(text, FALSE);
}

static char *count_dup(int64_t n)
{
    char buf[QUERY_FORMAT_MAX];
    return g_strdup(query_count_format(n, buf));
}

static json_t *info_totals_json(const query_info_totals *t)
{
    return json_pack("{s:I, s:{s:I, s:I, s:I}, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:o,"
                     " s:o, s:I, s:I, s:I, s:I, s:I, s:I, s:o}",
                     "gcs", (json_int_t)t->gcs,
                     "gcs_by_generation", "gen0", (json_int_t)t->gcs_gen[0],
                     "gen1", (json_int_t)t->gcs_gen[1], "gen2", (json_int_t)t->gcs_gen[2],
                     "gcs_induced", (json_int_t)t->gcs_induced,
                     "gcs_compacting", (json_int_t)t->gcs_compacting,
                     "gcs_incomplete", (json_int_t)t->gcs_incomplete,
                     "pause_ns", (json_int_t)t->pause_ns,
                     "allocations", (json_int_t)t->allocations,
                     "allocation_bytes", (json_int_t)t->allocation_bytes,
                     "allocations_survived", (json_int_t)t->survived,
                     "allocations_survived_bytes", (json_int_t)t->survived_bytes,
                     "allocations_survived_at_least",
                     t->survived_proven >= 0 ? json_integer(t->survived_proven) : json_null(),
                     "allocations_survived_at_most",
                     t->survived_at_most >= 0 ? json_integer(t->survived_at_most) : json_null(),
                     "objects", (json_int_t)t->objects,
                     "object_bytes", (json_int_t)t->object_bytes,
                     "objects_alive_at_end", (json_int_t)t->objects_alive,
                     "types", (json_int_t)t->types,
                     "allocation_types", (json_int_t)t->allocation_types,
                     "threads", (json_int_t)t->threads,
                     "file_bytes", t->file_bytes >= 0 ? json_integer(t->file_bytes) : json_null());
}

static void info_totals_lines(const query_info *info, info_lines *lines)
{
    char a[QUERY_FORMAT_MAX], b[QUERY_FORMAT_MAX], c[QUERY_FORMAT_MAX], d[QUERY_FORMAT_MAX];
    const query_info_totals *t = &info->totals;
    const query_estimates *estimates = &info->estimates;
    info_lines_add(lines, "GCs",
                   g_strdup_printf("%s (gen0 %s, gen1 %s, gen2 %s)", query_count_format(t->gcs, a),
                                   query_count_format(t->gcs_gen[0], b),
                                   query_count_format(t->gcs_gen[1], c),
                                   query_count_format(t->gcs_gen[2], d)));
    info_lines_add(lines, "induced", count_dup(t->gcs_induced));
    info_lines_add(lines, "compacting", count_dup(t->gcs_compacting));
    info_lines_add(lines, "incomplete", count_dup(t->gcs_incomplete));
    info_lines_add(lines, "pauses", g_strdup_printf("%s ms", query_ms_format(t->pause_ns, a)));
    const query_totals *all = &info->allocations;
    const char *approx = all->estimated > 0 && !estimates->census ? "~" : "";
    /* With the census, the part it did not count is said once, in its own term below. */
    const char *census_part = !estimates->census ? NULL
                              : all->estimated > 0
                                  ? "  EXACT per type where the census counted, ESTIMATED where "
                                    "it did not (below)"
                                  : "  EXACT per type";
    info_lines_add(lines, "allocations",
                   g_strdup_printf("%s%s (%s%s)%s", approx, query_count_format(t->allocations, a),
                                   approx, query_size_format(t->allocation_bytes, b),
                                   census_part ? census_part
                                   : estimates->estimated
                                       ? estimates->census_off
                                             ? "  ESTIMATED from the samples (recorded with "
                                               "--census off)"
                                             : "  ESTIMATED from the samples"
                                   : estimates->census_off
                                       ? "  large objects only (not sampled, --census off)"
                                   : estimates->uncounted ? "  large objects only (not sampled)"
                                                          : ""));
    /* Where the total differs from the runtime's reports, why, in the same place. */
    g_autoptr(GPtrArray) terms = query_totals_terms_new(all, estimates);
    for (guint i = 0; i < terms->len; i++)
        info_lines_add(lines, "", g_strdup(g_ptr_array_index(terms, i)));
    /* Followed samples: their estimate, or what the snapshots prove when that is more. */
    /* ... or every survivor, when every GC's snapshot named them (unmarked, as in full mode) */
    const gboolean survived_estimated = estimates->followed && !t->survived_exact;
    const char *survived_mark = t->survived_at_least ? "≥" : survived_estimated ? "~" : "";
    char renamed[QUERY_FORMAT_MAX];
    g_autofree char *named =
        t->survived_at_least && t->survived_at_most > t->survived
            ? g_strdup_printf("  AT LEAST: every GC's snapshot named them; at most %s more (left "
                              "in gen0, named again by the next snapshot)",
                              query_count_format(t->survived_at_most - t->survived, renamed))
            : NULL;
    info_lines_add(lines, "survived a GC",
                   g_strdup_printf("%s%s (%s%s)%s", survived_mark,
                                   query_count_format(t->survived, a), survived_mark,
                                   query_size_format(t->survived_bytes, b),
                                   named ? named
                                   : t->survived_at_least
                                       ? "  AT LEAST: the objects the snapshots found allocated "
                                         "while recording (the followed samples estimate fewer)"
                                   : survived_estimated ? "  ESTIMATED from the followed samples"
                                                         : ""));
    /* Following samples, the objects rows are the followed ones only: no count of survivors
     * (those are the estimate above, and `survivors` per GC). */
    info_lines_add(lines, "objects tracked",
                   g_strdup_printf("%s (%s)%s", query_count_format(t->objects, a),
                                   query_size_format(t->object_bytes, b),
                                   estimates->followed
                                       ? "  FOLLOWED only (samples' objects, large and pinned "
                                         "ones, those a snapshot named), not every survivor"
                                       : ""));
    info_lines_add(lines, "alive at end",
                   g_strdup_printf("%s%s", query_count_format(t->objects_alive, a),
                                   estimates->followed
                                       ? "  of the followed objects (every live object only at "
                                         "a snapshot's GC; 'survivors' estimates the others)"
                                   : t->objects_alive > 0
                                       ? "  alive after the last GC, and every allocation after "
                                         "it (no GC judged those)"
                                       : ""));
    info_lines_add(lines, "types",
                   t->allocation_types == t->types
                       ? count_dup(t->types)
                       : g_strdup_printf("%s  %s allocated ('allocations'), the others only "
                                         "named (a snapshot's objects, a field's type)",
                                         query_count_format(t->types, a),
                                         query_count_format(t->allocation_types, b)));
    info_lines_add(lines, "threads", count_dup(t->threads));
    info_lines_add(lines, "file size",
                   t->file_bytes >= 0 ? g_strdup(query_size_format(t->file_bytes, a)) : NULL);
}

/* Sampled and attach recordings: where the estimates come from. */
static void info_sampling_lines(const query_estimates *e, info_lines *lines)
{
    char a[QUERY_FORMAT_MAX], b[QUERY_FORMAT_MAX];
    info_lines_add(lines, "source",
                   e->source ? g_strdup_printf("%s (%s)", e->source,
                                               e->biased ? "biased toward large objects"
                                                         : "unbiased")
                             : g_strdup("none: no allocation was sampled"));
    info_lines_add(lines, "samples", count_dup(e->samples));
    info_lines_add(lines, "samples dropped", count_dup(e->samples_dropped));
    if (e->samples_budgeted > 0)
        info_lines_add(lines, "samples left out",
                       g_strdup_printf("%s, by the sample budget (the kept ones weigh for them)",
                                       query_count_format(e->samples_budgeted, a)));
    info_lines_add(lines, "mean distance",
                   e->mean_distance_bytes > 0
                       ? g_strdup_printf("%s bytes (%s)",
                                         query_count_format(e->mean_distance_bytes, a),
                                         query_size_format(e->mean_distance_bytes, b))
                       : NULL);
    info_lines_add(lines, "note", query_estimates_note_new(e));
}

/* What each counter counts (store/SCHEMA.md, counters), printed next to a non-zero one. */
static const struct {
    const char *name;
    const char *words;
} info_counter_words[] = {
    {"allocs_seen", "allocations the runtime reported"},
    {"allocs_dropped", "allocations lost, for any reason (the next two)"},
    {"allocs_dropped_buffer", "allocations lost: the collector's thread buffers were full"},
    {"allocs_dropped_writer", "allocations lost: in records the writer never received"},
    {"gc_events_dropped", "GC inputs lost (moved/surviving ranges, bounds): ages may be wrong"},
    {"records_dropped", "records the collector built but could not send"},
    {"bytes_dropped", "payload bytes of those records"},
    {"model_anomalies", "runtime data the collector's heap model could not place"},
    {"threads_overflowed", "threads that found no buffer: their allocations were lost"},
    {"gcs_dropped", "GCs the writer never received"},
    {"snapshots_dropped", "heap snapshots the writer never received"},
    {"writer_lost", "the writer went away or stalled: nothing was sent after that"},
    {"samples_budgeted",
     "allocation samples left out by the sample budget: the kept ones of their thread weigh "
     "for them (estimates, not a loss)"},
    {"census_allocs",
     "small-object allocations the census of gen0 counted, those of lost GCs included"},
    {"census_bytes", "their bytes"},
    {"thread_waits", "allocations that waited for room in the collector's buffers (nothing lost)"},
    {"thread_wait_ns", "time program threads waited for the collector, summed over threads"},
    {"stream_bytes", "bytes the writer read from the collector"},
    {"records_read", "records the writer read"},
    {"records_skipped_unknown", "records of types this heaplens does not know (newer collector)"},
    {"gcs_discarded_incomplete", "GCs whose end never arrived: not stored"},
    {"snapshots_discarded", "heap snapshots started but not stored (incomplete)"},
    {"writer_anomalies", "records that broke the collector's promises: skipped"},
    {"handles_closed_by_reuse",
     "handles the runtime freed without telling, found when their address was reused"},
    {"connections_refused", "connections from another user, refused"},
    {"writer_peak_rss_bytes", "the writer's peak memory (resident)"},
    {"program_peak_rss_bytes", "the program's peak memory (resident, heaplens included)"},
    {"writer_finish_ns", "the writer's time from the end of the run to its last commit"},
    {"writer_run_cpu_ns", "the writer's CPU time while the program ran"},
    {"writer_finish_cpu_ns", "the writer's CPU time after the end of the run (finishing)"},
    {"collector_exit_wait_ns", "how long the program's exit waited for the collector "
                               "(attach: its last step at the detach; the program ran on)"},
    {"program_gcs", "GCs the program ran while recorded (the collector's count at its end)"},
    {"writer_signal", "the signal that killed the writer: GCs after the last stored are missing"},
    {"final_snapshot_missed",
     "the attach session's final snapshot was not taken (1: the collector was behind the "
     "program's GCs, 2: the GC it forced never started, 3: a second signal to heaplens attach "
     "gave it up)"},
    {"final_snapshot_gcs_behind", "the program's GCs the collector had not applied then"},
    {"final_snapshot_wait_ms", "how long the detach waited for the final snapshot (ms)"},
    {"snapshots_skipped", "snapshots of those GCs not built, so that the detach ended"},
    {"snapshots_skipped_queued",
     "snapshots a --snapshot policy was due to take at a GC and did not: the collector still "
     "held 4 or more earlier snapshots, 64 MiB or more, not yet applied (a memory bound)"},
    {"forcegc_threads_left",
     "ForceGC threads heaplens started still in the runtime when the detach's wait for them "
     "ended: it detached all the same"},
    {"forcegc_wait_ms", "how long the detach waited for those ForceGC threads (ms; the bound)"},
};

static const char *info_counter_words_get(const char *name)
{
    for (size_t i = 0; i < G_N_ELEMENTS(info_counter_words); i++)
        if (strcmp(info_counter_words[i].name, name) == 0)
            return info_counter_words[i].words;
    return NULL;
}

static void info_counters_lines(const GArray *counters, const query_estimates *estimates,
                               info_lines *lines)
{
    for (guint i = 0; i < counters->len; i++) {
        const query_info_value *counter = &g_array_index(counters, query_info_value, i);
        const char *name = counter->name;
        int64_t value = counter->value;
        char count[QUERY_FORMAT_MAX], size[QUERY_FORMAT_MAX];
        const char *words = value != 0 ? info_counter_words_get(name) : NULL;
        /* Without ObjectAllocated the runtime reports the large objects one by one, no more. */
        if (estimates->uncounted && strcmp(name, "allocs_seen") == 0)
            words = estimates->attach ? "allocations the runtime reported: large objects only "
                                        "(attach mode)"
                                      : "allocations the runtime reported: large and pinned "
                                        "objects only (sampled mode)";
        g_autofree char *text = NULL;
        if (g_str_has_suffix(name, "_bytes") && value >= 1024)
            text = g_strdup_printf("%s (%s)", query_count_format(value, count),
                                   query_size_format(value, size));
        else if (g_str_has_suffix(name, "_ns") && value != 0)
            text = g_strdup_printf("%s (%s)", query_count_format(value, count),
                                   query_duration_format(value, size));
        else
            text = g_strdup(query_count_format(value, count));
        info_lines_add(lines, name,
                       words ? g_strdup_printf("%s  %s", text, words) : g_steal_pointer(&text));
    }
}

int cmd_info(int argc, char **argv)
{
    int status = 1;
    gboolean json = FALSE;
    const char *path = NULL;
    const query_option options[] = {
        {"json", QUERY_OPT_FLAG, &json},
        {NULL, 0, NULL},
    };
    g_autoptr(GError) error = NULL;
    query_info info = {0};
    info_lines run_lines, counter_lines, total_lines, sampling_lines;
    sqlite3 *db = NULL;
    g_autoptr(GError) no_sites = NULL;
    query_count_sites sites = {0};
    gboolean counted = FALSE;
    int64_t executions = 0;

    info_lines_init(&run_lines);
    info_lines_init(&counter_lines);
    info_lines_init(&total_lines);
    info_lines_init(&sampling_lines);
    if (!query_args_take(argc, argv, options, &path, &status, &error))
        goto out;
    db = query_db_open(path, &error);
    if (!db || !query_info_read(db, path, &info, &error))
        goto out;
    /* --count: the counted sites, and what they do not see (a recording without has none). */
    counted = query_count_sites_read(db, path, &sites, &no_sites);
    if (!counted && !g_error_matches(no_sites, QUERY_ERROR, QUERY_ERROR_NOT_FOUND)) {
        g_propagate_error(&error, g_steal_pointer(&no_sites));
        goto out;
    }
    for (guint i = 0; counted && i < sites.sites->len; i++)
        executions += g_array_index(sites.sites, query_count_site, i).count;
    if (json) {
        json_t *totals_json = info_totals_json(&info.totals);
        /* With the census the totals are exact but for the part it did not count, given
         * apart (as the record summary's allocations_census). */
        json_object_set_new(totals_json, "allocations_estimated",
                            json_boolean(info.estimates.estimated && !info.estimates.census));
        json_object_set_new(totals_json, "allocations_census",
                            json_boolean(info.estimates.census));
        /* Survivors between snapshots are the followed samples' (or the snapshots' lower
         * bound): not the exact count a full recording gives, unless every GC's snapshot named
         * every survivor (query_survived_read). */
        json_object_set_new(totals_json, "allocations_survived_estimated",
                            json_boolean(info.estimates.followed && !info.totals.survived_exact));
        /* ... and objects, objects_alive_at_end count the followed objects only. */
        json_object_set_new(totals_json, "objects_followed_only",
                            json_boolean(info.estimates.followed));
        if (info.estimates.census) {
            json_object_set_new(totals_json, "estimated_allocations",
                                json_integer(info.allocations.estimated));
            json_object_set_new(totals_json, "estimated_allocation_bytes",
                                json_integer(info.allocations.estimated_bytes));
        }
        /* what the census counted and the recording lost with GCs (null: no total says) */
        query_census_lost census_lost = {0};
        if (!query_db_census_lost(db, &census_lost, &error))
            goto out;
        json_object_set_new(totals_json, "census_allocations_lost",
                            census_lost.known ? json_integer(census_lost.allocs) : json_null());
        json_object_set_new(totals_json, "census_allocation_bytes_lost",
                            census_lost.known ? json_integer(census_lost.bytes) : json_null());
        json_t *allocations = query_estimates_json(&info.estimates);
        /* info gives the total, not the per-thread figures: estimated when the total is */
        json_object_set_new(allocations, "estimated",
                            json_boolean(query_totals_estimated(&info.allocations,
                                                                &info.estimates)));
        json_object_set_new(allocations, "total",
                            query_totals_json(&info.allocations, &info.estimates));
        json_t *doc = json_pack("{s:o, s:o, s:o, s:o, s:o, s:O, s:O}", "file", query_json_string(path),
                                "run", query_info_values_json(info.run), "counters",
                                query_info_values_json(info.counters), "totals", totals_json,
                                "allocations", allocations,
                                "unrecorded_processes", info.unrecorded, "checkpoints",
                                info.checkpoints);
        /* only in recordings made with --count: the documents of the others stay as they were */
        if (counted)
            json_object_set_new(doc, "counted_sites",
                                json_pack("{s:I, s:I, s:I, s:I, s:s}", "sites",
                                          (json_int_t)sites.sites->len, "methods",
                                          (json_int_t)sites.methods, "count",
                                          (json_int_t)executions, "not_rewritten",
                                          (json_int_t)sites.refused->len, "not_counted",
                                          QUERY_COUNT_SITES_NOT_COUNTED));
        query_json_print(doc, stdout);
        json_decref(doc);
    } else {
        info_lines_add(&run_lines, "file", g_strdup(path));
        for (guint i = 0; i < info.run->len; i++) {
            const query_info_value *v = &g_array_index(info.run, query_info_value, i);
            info_lines_add(&run_lines, v->name,
                           !v->text                           ? NULL
                           : strcmp(v->name, "command") == 0 ? info_command_dup(v->text)
                                                              : g_strdup(v->text));
        }
        info_counters_lines(info.counters, &info.estimates, &counter_lines);
        info_totals_lines(&info, &total_lines);
        info_lines_print(&run_lines, NULL, stdout);
        fputc('\n', stdout);
        if (info.estimates.uncounted) {
            info_sampling_lines(&info.estimates, &sampling_lines);
            info_lines_print(&sampling_lines, "sampling", stdout);
            fputc('\n', stdout);
        }
        info_lines_print(&counter_lines, "counters", stdout);
        fputc('\n', stdout);
        info_lines_print(&total_lines, "totals", stdout);
        if (counted) {
            char n[QUERY_FORMAT_MAX];
            printf("\ncounted sites (--count; heaplens allocations FILE --by site)\n"
                   "  sites          %u in %" G_GUINT64_FORMAT " methods, %s executions "
                   "counted\n  not rewritten  %u matched methods (no site, no IL, or "
                   "refused)\n  not counted    %s\n",
                   sites.sites->len, sites.methods, query_count_format(executions, n),
                   sites.refused->len, QUERY_COUNT_SITES_NOT_COUNTED);
        }
        /* .NET processes started under the program that declined (record without --children) */
        const json_t *unrecorded = info.unrecorded;
        if (json_array_size(unrecorded) > 0) {
            printf("\n.NET processes that ran unrecorded (record --children[=PATTERN] records "
                   "them)\n");
            size_t i;
            json_t *u;
            json_array_foreach((json_t *)unrecorded, i, u) {
                g_autofree char *command =
                    info_command_dup(json_string_value(json_object_get(u, "command")));
                printf("  pid %-8" JSON_INTEGER_FORMAT "  %s\n",
                       json_integer_value(json_object_get(u, "pid")), command);
            }
        }
        /* The program's checkpoints (EventSource 'HeapLens'): names for check and
         * allocations --between. */
        if (json_array_size(info.checkpoints) > 0) {
            printf("\ncheckpoints (the program's, with the GCs finished when each was written)\n");
            size_t i;
            json_t *c;
            json_array_foreach(info.checkpoints, i, c)
                printf("  %-24s after GC %" JSON_INTEGER_FORMAT "  at %.3f s\n",
                       json_string_value(json_object_get(c, "name")),
                       json_integer_value(json_object_get(c, "gc")),
                       (double)json_integer_value(json_object_get(c, "since_start_ns")) / 1e9);
        }
    }
    if (!query_db_note_print(db, json, &error) || !query_output_finish(stdout, &error))
        goto out;
    status = 0;
out:
    if (counted)
        query_count_sites_clear(&sites);
    query_info_clear(&info);
    info_lines_release(&run_lines);
    info_lines_release(&counter_lines);
    info_lines_release(&total_lines);
    info_lines_release(&sampling_lines);
    sqlite3_close(db);
    if (error)
        query_error_report(error);
    return status;
}
