/* cmd_diff.c — `heaplens diff FILE [@A @B] [--from S1] [--to S2] [--between A..B]
 * [--to-file FILE2]`: what changed between two heap snapshots, per type, by object identity:
 * objects new in S2, dead since S1, survived (query/diff.h). A snapshot is a number or
 * @CHECKPOINT, the snapshot taken at a checkpoint the program wrote (query/checkpoints.h). */
#include "cli/cli.h"
#include "cli/commands.h"
#include "query/diff.h"

#include <inttypes.h>
#include <string.h>

static const query_column diff_columns[] = {
    {"new", QUERY_ALIGN_RIGHT, NULL},      {"new bytes", QUERY_ALIGN_RIGHT, NULL},
    {"dead", QUERY_ALIGN_RIGHT, NULL},     {"dead bytes", QUERY_ALIGN_RIGHT, NULL},
    {"survived", QUERY_ALIGN_RIGHT, NULL}, {"net bytes", QUERY_ALIGN_RIGHT, NULL},
    {"type", QUERY_ALIGN_LEFT, NULL},
};

/* `text`: what named the snapshot (--from/--to); "@NAME" adds "checkpoint": NAME. */
static json_t *side_json(const char *path, const snapshot_info *info, const char *text)
{
    json_t *side = json_pack("{s:o, s:I, s:I}", "file", query_json_string(path), "snapshot",
                             (json_int_t)info->snapshot, "gc", (json_int_t)info->gc);
    if (text && text[0] == '@')
        json_object_set_new(side, "checkpoint", json_string(text + 1));
    return side;
}

/* "snapshot 4", "@filled (snapshot 4)", with the file's name across two files. */
static char *side_name(const char *file, const snapshot_info *info, const char *text)
{
    g_autofree char *snap = text && text[0] == '@'
                                ? g_strdup_printf("%s: snapshot %" PRId64, text, info->snapshot)
                                : g_strdup_printf("snapshot %" PRId64, info->snapshot);
    return file ? g_strdup_printf("%s %s", file, snap) : g_steal_pointer(&snap);
}

int cmd_diff(int argc, char **argv)
{
    int status = 1;
    gboolean json = FALSE, all = FALSE;
    const char *path = NULL, *from_text = NULL, *to_text = NULL, *to_file = NULL, *top_text = NULL;
    const char *between = NULL;
    const query_option options[] = {
        {"json", QUERY_OPT_FLAG, &json},
        {"from", QUERY_OPT_VALUE, &from_text},
        {"to", QUERY_OPT_VALUE, &to_text},
        {"to-file", QUERY_OPT_VALUE, &to_file},
        {"between", QUERY_OPT_VALUE, &between},
        {"top", QUERY_OPT_VALUE, &top_text},
        {"all", QUERY_OPT_FLAG, &all},
        {NULL, 0, NULL},
    };
    g_autoptr(GError) error = NULL;
    g_autoptr(query_diff) diff = NULL;
    g_autoptr(query_table) table = NULL;
    query_json_rows jrows;
    sqlite3 *from_db = NULL, *to_db = NULL;
    uint64_t top = UINT64_MAX;
    char a[QUERY_FORMAT_MAX], b[QUERY_FORMAT_MAX], c[QUERY_FORMAT_MAX], d[QUERY_FORMAT_MAX],
        e[QUERY_FORMAT_MAX];

    /* `diff FILE @A @B`: operands naming checkpoints, taken out before the options' parse (it
     * takes one operand, FILE) and read as --from and --to. */
    g_autofree char **args = g_new0(char *, argc + 1);
    g_autofree char *between_from = NULL, *between_to = NULL;
    const char *at[2] = {NULL, NULL};
    int n_args = 0, n_at = 0;
    for (int i = 0; i < argc; i++) {
        gboolean value_of_option = i > 0 && (strcmp(argv[i - 1], "--from") == 0 ||
                                             strcmp(argv[i - 1], "--to") == 0 ||
                                             strcmp(argv[i - 1], "--to-file") == 0 ||
                                             strcmp(argv[i - 1], "--between") == 0 ||
                                             strcmp(argv[i - 1], "--top") == 0);
        if (i > 0 && argv[i][0] == '@' && !value_of_option) {
            if (n_at == 2) {
                g_set_error(&error, QUERY_ERROR, QUERY_ERROR_USAGE,
                            "diff: two checkpoints at most (@FROM @TO), not '%s' too", argv[i]);
                goto out;
            }
            at[n_at++] = argv[i];
            continue;
        }
        args[n_args++] = argv[i];
    }
    if (!query_args_take(n_args, args, options, &path, &status, &error))
        goto out;
    if ((n_at && (from_text || to_text || between)) || (between && (from_text || to_text))) {
        g_set_error(&error, QUERY_ERROR, QUERY_ERROR_USAGE,
                    "diff: give the snapshots once: @FROM @TO, --from/--to or --between FROM..TO");
        goto out;
    }
    if (n_at == 1) {
        g_set_error(&error, QUERY_ERROR, QUERY_ERROR_USAGE,
                    "diff: %s needs a second checkpoint (diff FILE @FROM @TO), or --from/--to",
                    at[0]);
        goto out;
    }
    if (n_at == 2) {
        from_text = at[0];
        to_text = at[1];
    }
    if (between) {
        const char *dots = strstr(between, "..");
        if (!dots || dots == between || !dots[2]) {
            g_set_error(&error, QUERY_ERROR, QUERY_ERROR_USAGE,
                        "diff: --between takes two checkpoints, FROM..TO, not '%s'", between);
            goto out;
        }
        between_from = g_strdup_printf("@%.*s", (int)(dots - between), between);
        between_to = g_strdup_printf("@%s", dots + 2);
        from_text = between_from;
        to_text = between_to;
    }
    if (top_text && !query_args_parse_uint("diff", "top", top_text, 1, INT64_MAX,
                                           "a positive number", &top, &error))
        goto out;
    /* the same file compared with itself across files matches every object with itself: "0
     * new, 0 dead" whatever the recording holds */
    if (to_file && query_files_same(path, to_file)) {
        g_set_error(&error, QUERY_ERROR, QUERY_ERROR_USAGE,
                    "diff: --to-file %s is FILE itself (%s): between two snapshots of one "
                    "recording, give --from S1 --to S2 without --to-file",
                    to_file, path);
        goto out;
    }
    from_db = query_db_open(path, &error);
    if (!from_db)
        goto out;
    to_db = to_file ? query_db_open(to_file, &error) : from_db;
    if (!to_db)
        goto out;
    diff = query_diff_new(from_db, path, to_db, to_file ? to_file : path, from_text, to_text,
                          &error);
    if (!diff)
        goto out;
    const query_diff_row total = diff->total;
    const GArray *rows = diff->rows;
    if (json) {
        json_t *head =
            json_pack("{s:o, s:o, s:b, s:{s:I, s:I, s:I, s:I, s:I}}", "from", side_json(path, &diff->from, from_text),
                      "to", side_json(to_file ? to_file : path, &diff->to, to_text), "same_file", to_file == NULL, "total", "new",
                      (json_int_t)total.new_count, "dead", (json_int_t)total.dead, "survived",
                      (json_int_t)total.survived, "new_bytes", (json_int_t)total.new_bytes,
                      "dead_bytes", (json_int_t)total.dead_bytes);
        /* How objects were matched where the collector did not follow each of them. */
        json_object_set_new(head, "followed", json_boolean(diff->followed_mode != NULL));
        json_object_set_new(head, "from_gen0_renamed", json_integer(diff->from_gen0_named));
        query_json_rows_begin(&jrows, stdout, head);
        json_decref(head);
    } else {
        table = query_table_new(diff_columns, G_N_ELEMENTS(diff_columns));
    }
    uint64_t shown = 0;
    for (guint i = 0; i < rows->len && shown < top; i++) {
        const query_diff_row *r = &g_array_index(rows, query_diff_row, i);
        if (!all && r->new_count == 0 && r->dead == 0)
            continue;
        if (r->new_count == 0 && r->dead == 0 && r->survived == 0)
            continue; /* a type with no object in either snapshot */
        shown++;
        if (json) {
            query_json_rows_add(
                &jrows,
                json_pack("{s:o, s:I, s:I, s:I, s:I, s:I, s:I}", "type", query_json_string(r->type),
                          "new", (json_int_t)r->new_count, "dead", (json_int_t)r->dead, "survived",
                          (json_int_t)r->survived, "new_bytes", (json_int_t)r->new_bytes,
                          "dead_bytes", (json_int_t)r->dead_bytes, "survived_bytes",
                          (json_int_t)r->survived_bytes));
        } else {
            int64_t net = r->new_bytes - r->dead_bytes;
            query_table_add(table, query_count_format(r->new_count, a));
            query_table_add(table, query_size_format(r->new_bytes, b));
            query_table_add(table, query_count_format(r->dead, c));
            query_table_add(table, query_size_format(r->dead_bytes, d));
            query_table_add(table, query_count_format(r->survived, a));
            query_table_addf(table, "%s%s", net >= 0 ? "+" : "-",
                             query_size_format(net >= 0 ? net : -net, b));
            query_table_add(table, r->type);
        }
    }
    if (json) {
        query_json_rows_end(&jrows);
    } else {
        g_autofree char *from_name = side_name(to_file ? path : NULL, &diff->from, from_text);
        g_autofree char *to_name = side_name(to_file, &diff->to, to_text);
        printf("%s (GC %" PRId64 ") -> %s (GC %" PRId64 "): %s new (%s), %s dead (%s), %s "
               "survived\n",
               from_name, diff->from.gc, to_name, diff->to.gc, query_count_format(total.new_count, a),
               query_size_format(total.new_bytes, b), query_count_format(total.dead, c),
               query_size_format(total.dead_bytes, d), query_count_format(total.survived, e));
        if (query_table_rows(table) > 0)
            query_table_print(table, stdout);
        if (diff->followed_mode) {
            char n[QUERY_FORMAT_MAX];
            printf("note: %s is a%s %s recording that follows its samples: objects are matched "
                   "by id, kept from the snapshot that named an object (or the sample that "
                   "followed it) on; one allocated after %s that no sample followed was first "
                   "named by %s (new there, as it is)",
                   path, strcmp(diff->followed_mode, "attach") == 0 ? "n" : "",
                   diff->followed_mode, from_name, to_name);
            if (diff->from_gen0_named > 0)
                printf("; %s %s %s found in gen0 %s named for it only (counted dead: one still "
                       "alive is new here)",
                       query_count_format(diff->from_gen0_named, n),
                       diff->from_gen0_named == 1 ? "object" : "objects", from_name,
                       diff->from_gen0_named == 1 ? "was" : "were");
            printf("\n");
        }
        if (to_file)
            printf("note: across two files, an object survives when the same allocation number "
                   "has the same type in both (exact only for a program that allocates the same "
                   "way each run)\n");
    }
    if (diff->renumbered_path && g_strcmp0(diff->renumbered_mode, "import") == 0)
        fprintf(json ? stderr : stdout,
                "%snote: %s was imported from a .gcdump, which has no object identity (its "
                "objects are numbered in the file's order), so 'survived' across two files "
                "means nothing there; read the per-type counts\n",
                json ? "heaplens: " : "", diff->renumbered_path);
    else if (diff->renumbered_path)
        fprintf(json ? stderr : stdout,
                "%snote: %s is a%s %s recording: its objects are numbered as GCs find them, "
                "not by allocation, so 'survived' across two files means nothing there; read "
                "the per-type counts\n",
                json ? "heaplens: " : "", diff->renumbered_path,
                g_strcmp0(diff->renumbered_mode, "attach") == 0 ? "n" : "",
                diff->renumbered_mode);
    if (!query_db_note_print(from_db, json, &error) ||
        (to_file && !query_db_note_print(to_db, json, &error)) ||
        !query_output_finish(stdout, &error))
        goto out;
    status = 0;
out:
    g_clear_pointer(&diff, query_diff_free);
    if (to_db != from_db)
        sqlite3_close(to_db);
    sqlite3_close(from_db);
    if (error)
        query_error_report(error);
    return status;
}
