/* cmd_diff.c — `heaplens diff FILE [--from S1] [--to S2] [--to-file FILE2]`: what changed between
 * two heap snapshots, per type, by object identity: objects new in S2, dead since S1, survived.
 *
 * Both snapshots are read in object id order (the key of snapshot_objects) and merged: an id in
 * both is a survivor, an id only in S1 died, an id only in S2 is new. Memory: one entry per type.
 * Across two files (--to-file), types are matched by name and an object survives when the same
 * allocation number has the same type name in both: exact for a program that allocates the same
 * way on every run; otherwise read the per-type counts. */
#include "query/commands.h"
#include "query/estimates.h"
#include "query/query.h"
#include "query/snapshot_graph.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

typedef char type_name_buf[QUERY_FORMAT_MAX];

typedef struct diff_row {
    const char *type; /* borrowed from the type tables */
    int64_t new_count, dead, survived;
    int64_t new_bytes, dead_bytes, survived_bytes;
} diff_row;

/* One side of the diff: a snapshot of a file, read in id order. */
typedef struct diff_side {
    const char *path;
    sqlite3 *db;
    snapshot_info info;
    snapshot_types *types;
    uint32_t *row_of_type; /* type id -> index into the rows */
    sqlite3_stmt *stmt;
    gboolean row;
    int64_t id;
    uint32_t type_id;
    int64_t size;
    int64_t read; /* objects read so far */
} diff_side;

static gboolean side_next(diff_side *s, GError **error)
{
    if (!query_db_step(s->stmt, &s->row, error))
        return FALSE;
    /* What no recording holds is said, never counted: ids ascend (the key), sizes are sizes
     * (NULL: no objects row), and the snapshot holds as many objects as its row counts. */
    if (s->row) {
        int64_t id = sqlite3_column_int64(s->stmt, 0);
        int t1 = sqlite3_column_type(s->stmt, 1), t2 = sqlite3_column_type(s->stmt, 2);
        if (sqlite3_column_type(s->stmt, 0) != SQLITE_INTEGER || (s->read > 0 && id <= s->id) ||
            (t1 != SQLITE_INTEGER && t1 != SQLITE_NULL) ||
            (t2 != SQLITE_INTEGER && t2 != SQLITE_NULL) || sqlite3_column_int64(s->stmt, 2) < 0)
            return query_db_damaged(error, "%s: snapshot %" PRId64 " holds an object whose id, "
                                           "size or type is not one a recording holds",
                                    s->path, s->info.snapshot);
        s->read++;
    } else if (s->read != s->info.objects) {
        return query_db_damaged(error,
                                "%s: snapshot %" PRId64 " holds %" PRId64
                                " objects, its snapshots row counts %" PRId64,
                                s->path, s->info.snapshot, s->read, s->info.objects);
    }
    if (s->row) {
        s->id = sqlite3_column_int64(s->stmt, 0);
        int64_t type = sqlite3_column_int64(s->stmt, 1); /* NULL (no objects row): 0 */
        s->type_id = type > 0 && type < snapshot_types_count(s->types) ? (uint32_t)type : 0;
        s->size = sqlite3_column_int64(s->stmt, 2);
    }
    return TRUE;
}

static gboolean side_open(diff_side *s, GError **error)
{
    s->stmt = query_db_prepare(s->db,
                               "SELECT so.object_id, o.type_id, o.size FROM snapshot_objects so"
                               " LEFT JOIN objects o ON o.id = so.object_id"
                               " WHERE so.snapshot = ?1 ORDER BY so.object_id",
                               error);
    if (!s->stmt)
        return FALSE;
    sqlite3_bind_int64(s->stmt, 1, s->info.snapshot);
    return side_next(s, error);
}

/* Gives every type of the side a row, shared by name with the other side. */
static void side_rows(diff_side *s, GArray *rows, GHashTable *by_name, type_name_buf *names)
{
    uint32_t n = snapshot_types_count(s->types);
    s->row_of_type = g_new(uint32_t, n);
    for (uint32_t t = 0; t < n; t++) {
        char buf[QUERY_FORMAT_MAX];
        const char *name = snapshot_types_name(s->types, t, buf);
        if (name == buf) { /* an unnamed id: keep the text */
            g_strlcpy(names[t], buf, QUERY_FORMAT_MAX);
            name = names[t];
        }
        gpointer index;
        if (!g_hash_table_lookup_extended(by_name, name, NULL, &index)) {
            diff_row row = {.type = name};
            index = GUINT_TO_POINTER(rows->len);
            g_array_append_val(rows, row);
            g_hash_table_insert(by_name, (gpointer)name, index);
        }
        s->row_of_type[t] = GPOINTER_TO_UINT(index);
    }
}

static int diff_row_cmp(const void *a, const void *b)
{
    const diff_row *x = a, *y = b;
    int64_t nx = x->new_bytes - x->dead_bytes, ny = y->new_bytes - y->dead_bytes;
    if (nx != ny)
        return nx > ny ? -1 : 1;
    if (x->new_count - x->dead != y->new_count - y->dead)
        return x->new_count - x->dead > y->new_count - y->dead ? -1 : 1;
    return strcmp(x->type, y->type);
}

static const query_column diff_columns[] = {
    {"new", QUERY_ALIGN_RIGHT, NULL},      {"new bytes", QUERY_ALIGN_RIGHT, NULL},
    {"dead", QUERY_ALIGN_RIGHT, NULL},     {"dead bytes", QUERY_ALIGN_RIGHT, NULL},
    {"survived", QUERY_ALIGN_RIGHT, NULL}, {"net bytes", QUERY_ALIGN_RIGHT, NULL},
    {"type", QUERY_ALIGN_LEFT, NULL},
};

static json_t *side_json(const diff_side *s)
{
    return json_pack("{s:o, s:I, s:I}", "file", query_json_string(s->path), "snapshot",
                     (json_int_t)s->info.snapshot, "gc", (json_int_t)s->info.gc);
}

int cmd_diff(int argc, char **argv)
{
    int status = 1;
    gboolean json = FALSE, all = FALSE;
    const char *path = NULL, *from_text = NULL, *to_text = NULL, *to_file = NULL, *top_text = NULL;
    const query_option options[] = {
        {"json", QUERY_OPT_FLAG, &json},
        {"from", QUERY_OPT_VALUE, &from_text},
        {"to", QUERY_OPT_VALUE, &to_text},
        {"to-file", QUERY_OPT_VALUE, &to_file},
        {"top", QUERY_OPT_VALUE, &top_text},
        {"all", QUERY_OPT_FLAG, &all},
        {NULL, 0, NULL},
    };
    g_autoptr(GError) error = NULL;
    g_autoptr(GArray) rows = g_array_new(FALSE, TRUE, sizeof(diff_row));
    g_autoptr(GHashTable) by_name = g_hash_table_new(g_str_hash, g_str_equal);
    g_autofree type_name_buf *names_from = NULL;
    g_autofree type_name_buf *names_to = NULL;
    g_autoptr(query_table) table = NULL;
    query_json_rows jrows;
    diff_side from = {0}, to = {0};
    diff_row total = {.type = "total"};
    uint64_t top = UINT64_MAX;
    char a[QUERY_FORMAT_MAX], b[QUERY_FORMAT_MAX], c[QUERY_FORMAT_MAX], d[QUERY_FORMAT_MAX],
        e[QUERY_FORMAT_MAX];

    switch (query_args_parse(argc, argv, options, &path, &error)) {
    case QUERY_ARGS_HELP:
        status = 0;
        goto out;
    case QUERY_ARGS_ERROR:
        goto out;
    case QUERY_ARGS_OK:
        break;
    }
    if (top_text && !query_args_parse_uint("diff", "top", top_text, 1, INT64_MAX,
                                           "a positive number", &top, &error))
        goto out;
    from.path = path;
    from.db = query_db_open(path, &error);
    if (!from.db)
        goto out;
    to.path = to_file ? to_file : path;
    to.db = to_file ? query_db_open(to_file, &error) : from.db;
    if (!to.db)
        goto out;
    if (!snapshot_pick(to.db, to.path, "diff", "to", to_text, &to.info, &error))
        goto out;
    if (from_text || to_file) {
        if (!snapshot_pick(from.db, path, "diff", "from", from_text, &from.info, &error))
            goto out;
    } else {
        /* the snapshot before --to */
        int64_t previous = 0;
        g_autofree char *sql = g_strdup_printf(
            "SELECT MAX(snapshot) FROM snapshots WHERE snapshot < %" PRId64, to.info.snapshot);
        if (!query_db_int(from.db, sql, &previous, &error))
            goto out;
        if (previous == 0) {
            g_set_error(&error, QUERY_ERROR, QUERY_ERROR_NOT_FOUND,
                        "diff: no snapshot before snapshot %" PRId64 " in %s; give --from",
                        to.info.snapshot, path);
            goto out;
        }
        g_autofree char *text = g_strdup_printf("%" PRId64, previous);
        if (!snapshot_pick(from.db, path, "diff", "from", text, &from.info, &error))
            goto out;
    }
    from.types = snapshot_types_new(from.db, &error);
    if (!from.types)
        goto out;
    to.types = snapshot_types_new(to.db, &error);
    if (!to.types)
        goto out;
    names_from = g_new0(type_name_buf, snapshot_types_count(from.types));
    names_to = g_new0(type_name_buf, snapshot_types_count(to.types));
    side_rows(&from, rows, by_name, names_from);
    side_rows(&to, rows, by_name, names_to);
    if (!side_open(&from, &error) || !side_open(&to, &error))
        goto out;

    /* the merge */
    while (from.row || to.row) {
        gboolean both = from.row && to.row && from.id == to.id;
        if (both && from.row_of_type[from.type_id] == to.row_of_type[to.type_id]) {
            diff_row *r = &g_array_index(rows, diff_row, to.row_of_type[to.type_id]);
            r->survived++;
            r->survived_bytes = query_add_saturating(r->survived_bytes, to.size);
            if (!side_next(&from, &error) || !side_next(&to, &error))
                goto out;
            continue;
        }
        if (from.row && (!to.row || from.id <= to.id)) { /* only in S1, or another type */
            diff_row *r = &g_array_index(rows, diff_row, from.row_of_type[from.type_id]);
            r->dead++;
            r->dead_bytes = query_add_saturating(r->dead_bytes, from.size);
            if (!side_next(&from, &error))
                goto out;
            if (!both)
                continue;
        }
        diff_row *r = &g_array_index(rows, diff_row, to.row_of_type[to.type_id]);
        r->new_count++;
        r->new_bytes = query_add_saturating(r->new_bytes, to.size);
        if (!side_next(&to, &error))
            goto out;
    }

    for (guint i = 0; i < rows->len; i++) {
        const diff_row *r = &g_array_index(rows, diff_row, i);
        total.new_count = query_add_saturating(total.new_count, r->new_count);
        total.dead = query_add_saturating(total.dead, r->dead);
        total.survived = query_add_saturating(total.survived, r->survived);
        total.new_bytes = query_add_saturating(total.new_bytes, r->new_bytes);
        total.dead_bytes = query_add_saturating(total.dead_bytes, r->dead_bytes);
        total.survived_bytes = query_add_saturating(total.survived_bytes, r->survived_bytes);
    }
    if (rows->len > 1)
        qsort(rows->data, rows->len, sizeof(diff_row), diff_row_cmp);

    if (json) {
        json_t *head =
            json_pack("{s:o, s:o, s:b, s:{s:I, s:I, s:I, s:I, s:I}}", "from", side_json(&from),
                      "to", side_json(&to), "same_file", to_file == NULL, "total", "new",
                      (json_int_t)total.new_count, "dead", (json_int_t)total.dead, "survived",
                      (json_int_t)total.survived, "new_bytes", (json_int_t)total.new_bytes,
                      "dead_bytes", (json_int_t)total.dead_bytes);
        query_json_rows_begin(&jrows, stdout, head);
        json_decref(head);
    } else {
        table = query_table_new(diff_columns, G_N_ELEMENTS(diff_columns));
    }
    uint64_t shown = 0;
    for (guint i = 0; i < rows->len && shown < top; i++) {
        const diff_row *r = &g_array_index(rows, diff_row, i);
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
        g_autofree char *from_name =
            to_file ? g_strdup_printf("%s snapshot %" PRId64, path, from.info.snapshot)
                    : g_strdup_printf("snapshot %" PRId64, from.info.snapshot);
        g_autofree char *to_name =
            to_file ? g_strdup_printf("%s snapshot %" PRId64, to_file, to.info.snapshot)
                    : g_strdup_printf("snapshot %" PRId64, to.info.snapshot);
        printf("%s (GC %" PRId64 ") -> %s (GC %" PRId64 "): %s new (%s), %s dead (%s), %s "
               "survived\n",
               from_name, from.info.gc, to_name, to.info.gc, query_count_format(total.new_count, a),
               query_size_format(total.new_bytes, b), query_count_format(total.dead, c),
               query_size_format(total.dead_bytes, d), query_count_format(total.survived, e));
        if (query_table_rows(table) > 0)
            query_table_print(table, stdout);
        if (to_file)
            printf("note: across two files, an object survives when the same allocation number "
                   "has the same type in both (exact only for a program that allocates the same "
                   "way each run)\n");
    }
    /* Sampled and attach recordings give ids as GCs find objects, not in allocation order: the
     * same id in two such files is not the same allocation. */
    if (to_file) {
        g_auto(query_estimates) from_mode = {0};
        g_auto(query_estimates) to_mode = {0};
        if (!query_estimates_get(from.db, &from_mode, &error) ||
            !query_estimates_get(to.db, &to_mode, &error))
            goto out;
        if (from_mode.uncounted || to_mode.uncounted)
            fprintf(json ? stderr : stdout,
                    "%snote: %s is a %s recording: its objects are numbered as GCs find them, "
                    "not by allocation, so 'survived' across two files means nothing there; read "
                    "the per-type counts\n",
                    json ? "heaplens: " : "", from_mode.uncounted ? path : to_file,
                    from_mode.uncounted ? from_mode.mode : to_mode.mode);
    }
    if (!query_db_note_print(from.db, json, &error) ||
        (to_file && !query_db_note_print(to.db, json, &error)) ||
        !query_output_finish(stdout, &error))
        goto out;
    status = 0;
out:
    sqlite3_finalize(from.stmt);
    sqlite3_finalize(to.stmt);
    snapshot_types_free(from.types);
    snapshot_types_free(to.types);
    g_free(from.row_of_type);
    g_free(to.row_of_type);
    if (to.db != from.db)
        sqlite3_close(to.db);
    sqlite3_close(from.db);
    if (error)
        query_error_report(error);
    return status;
}
