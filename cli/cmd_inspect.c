/* cmd_inspect.c — `heaplens inspect FILE [--snapshot S] [--json] [--progress]`: the automatic
 * inspections of one heap snapshot (query/inspect.h), ranked by the bytes each finding wastes or
 * holds; what it computed is stored in the file last (inspect_commit). */
#include "cli/cli.h"
#include "cli/commands.h"
#include "query/inspect.h"

#include <inttypes.h>
#include <stdlib.h>

static const query_column finding_columns[] = {
    {"bytes", QUERY_ALIGN_RIGHT, NULL},
    {"finding", QUERY_ALIGN_LEFT, NULL},
    {"what", QUERY_ALIGN_LEFT, NULL},
};

static const char *jstr(json_t *f, const char *key)
{
    const char *s = json_string_value(json_object_get(f, key));
    return s ? s : "?";
}

static int64_t jint(json_t *f, const char *key)
{
    return (int64_t)json_integer_value(json_object_get(f, key));
}

/* One finding in words. */
static char *finding_text(json_t *f)
{
    const char *kind = jstr(f, "kind");
    char a[QUERY_FORMAT_MAX], b[QUERY_FORMAT_MAX], c[QUERY_FORMAT_MAX], d[QUERY_FORMAT_MAX];
    if (strcmp(kind, "duplicate-strings") == 0) {
        json_t *v = json_object_get(f, "value");
        g_autofree char *value = json_is_string(v) ? g_strescape(json_string_value(v), NULL)
                                                   : g_strdup_printf("(%" PRId64 " characters, "
                                                                     "not kept)", jint(f, "length"));
        gboolean metadata = g_strcmp0(jstr(f, "origin"), "event-metadata") == 0;
        return g_strdup_printf("%s strings %s%s%s (%s wasted%s)", query_count_format(jint(f, "count"), a),
                               json_is_string(v) ? "\"" : "", value, json_is_string(v) ? "\"" : "",
                               query_size_format(jint(f, "wasted"), b),
                               metadata ? "; the runtime's event metadata, built because "
                                          "heaplens' EventPipe session enabled its events"
                                        : "");
    }
    if (strcmp(kind, "empty-collections") == 0)
        return g_strdup_printf("%s empty %s", query_count_format(jint(f, "count"), a),
                               jstr(f, "type"));
    if (strcmp(kind, "sparse") == 0)
        return g_strdup_printf("%s %s filled %.0f%% (%s wasted)", query_count_format(jint(f, "count"), a),
                               jstr(f, "type"),
                               100.0 * json_real_value(json_object_get(f, "fill")),
                               query_size_format(jint(f, "wasted"), b));
    if (strcmp(kind, "under-filled") == 0)
        return g_strdup_printf("%s %s filled %.1f%% (%s of %s; %s wasted)",
                               query_count_format(jint(f, "count"), a), jstr(f, "type"),
                               100.0 * json_real_value(json_object_get(f, "fill")),
                               query_count_format(jint(f, "elements"), b),
                               query_count_format(jint(f, "capacity"), c),
                               query_size_format(jint(f, "wasted"), d));
    if (strcmp(kind, "event-handlers") == 0) {
        json_t *field = json_object_get(f, "field");
        return g_strdup_printf("%s handlers on %s%s%s", query_count_format(jint(f, "subscribers"), a),
                               jstr(f, "owner"), json_is_string(field) ? "." : "",
                               json_is_string(field) ? json_string_value(field) : "");
    }
    if (strcmp(kind, "finalizable") == 0) {
        int64_t queued = jint(f, "queued");
        g_autofree char *tail = queued ? g_strdup_printf(" (%s waiting for the finalizer)",
                                                         query_count_format(queued, b))
                                       : g_strdup("");
        return g_strdup_printf("%s %s with a finalizer%s", query_count_format(jint(f, "count"), a),
                               jstr(f, "type"), tail);
    }
    if (strcmp(kind, "finalized-reachable") == 0)
        return g_strdup_printf("%s %s finalized and reachable again",
                               query_count_format(jint(f, "count"), a), jstr(f, "type"));
    if (strcmp(kind, "pinned") == 0)
        return g_strdup_printf("%s %s pinned in gen%" PRId64, query_count_format(jint(f, "count"), a),
                               jstr(f, "type"), jint(f, "generation"));
    if (strcmp(kind, "loh-free") == 0)
        return g_strdup_printf("large-object heap: %s free between %s of live objects",
                               query_size_format(jint(f, "free"), a),
                               query_size_format(jint(f, "live"), b));
    return g_strdup(kind);
}

int cmd_inspect(int argc, char **argv)
{
    int status = 1;
    gboolean json = FALSE, progress_flag = FALSE;
    const char *path = NULL, *snapshot_text = NULL, *dup_text = NULL, *fill_text = NULL,
               *subs_text = NULL;
    const query_option options[] = {
        {"json", QUERY_OPT_FLAG, &json},
        {"snapshot", QUERY_OPT_VALUE, &snapshot_text},
        {"min-duplicates", QUERY_OPT_VALUE, &dup_text},
        {"max-fill", QUERY_OPT_VALUE, &fill_text},
        {"min-subscribers", QUERY_OPT_VALUE, &subs_text},
        {"progress", QUERY_OPT_FLAG, &progress_flag},
        {NULL, 0, NULL},
    };
    g_autoptr(GError) error = NULL;
    sqlite3 *db = NULL;
    json_t *doc = NULL;
    g_autoptr(query_progress) progress = NULL;
    g_autofree char *note = NULL;
    inspect_options o = {.min_duplicates = INSPECT_MIN_DUPLICATES, .max_fill = INSPECT_MAX_FILL,
                         .min_subscribers = INSPECT_MIN_SUBSCRIBERS};
    uint64_t v = 0;
    char a[QUERY_FORMAT_MAX];

    if (!query_args_take(argc, argv, options, &path, &status, &error))
        goto out;
    if (dup_text) {
        if (!query_args_parse_uint("inspect", "min-duplicates", dup_text, 2, INT64_MAX,
                                   "a number of 2 or more", &v, &error))
            goto out;
        o.min_duplicates = (int64_t)v;
    }
    if (subs_text) {
        if (!query_args_parse_uint("inspect", "min-subscribers", subs_text, 1, INT64_MAX,
                                   "a positive number", &v, &error))
            goto out;
        o.min_subscribers = (int64_t)v;
    }
    if (fill_text) {
        char *end = NULL;
        o.max_fill = g_ascii_strtod(fill_text, &end);
        if (!*fill_text || *end || !(o.max_fill >= 0 && o.max_fill <= 1)) {
            g_set_error(&error, QUERY_ERROR, QUERY_ERROR_USAGE,
                        "inspect: --max-fill takes a fraction from 0 to 1 (0.21: 21%%), not '%s'",
                        fill_text);
            goto out;
        }
    }
    db = query_db_open(path, &error);
    if (!db)
        goto out;
    progress = query_progress_new("inspect", progress_flag);
    doc = inspect_snapshot(db, path, snapshot_text, &o, progress, &error);
    query_progress_done(progress);
    if (!doc)
        goto out;
    json_t *findings = json_object_get(doc, "findings");
    if (json) {
        /* the document as the issue gives it: {"snapshot","gc","findings":[...]} */
        json_dumpf(doc, stdout, JSON_COMPACT);
        fputc('\n', stdout);
    } else {
        printf("inspections of snapshot %" PRId64 " (GC %" PRId64 "): %zu finding%s\n",
               jint(doc, "snapshot"), jint(doc, "gc"), json_array_size(findings),
               json_array_size(findings) == 1 ? "" : "s");
        g_autoptr(query_table) table =
            query_table_new(finding_columns, G_N_ELEMENTS(finding_columns));
        size_t i;
        json_t *f;
        json_array_foreach(findings, i, f) {
            g_autofree char *what = finding_text(f);
            query_table_add(table, query_size_format(jint(f, "rank_bytes"), a));
            query_table_add(table, jstr(f, "kind"));
            query_table_add(table, what);
        }
        if (query_table_rows(table) > 0)
            query_table_print(table, stdout);
    }
    /* the output first, then what was computed into the file (inspect_commit) */
    if (!query_db_note_print(db, json, &error) || !query_output_finish(stdout, &error) ||
        !inspect_commit(db, path, progress, &note, &error))
        goto out;
    query_progress_done(progress);
    query_note_print(note, TRUE); /* about the file, not the answer: stderr (output.c) */
    if (!query_output_finish(stdout, &error))
        goto out;
    status = 0;
out:
    if (error)
        query_error_report(error);
    json_decref(doc);
    sqlite3_close(db);
    return status;
}
