/* check.c — memory assertions over a recording (check.h): each a question another query tool
 * already answers (snapshot contents, allocations, retention, leaks), compared with a limit. */
#include "query/check.h"
#include "query/allocations.h"
#include "query/checkpoints.h"
#include "query/leaks.h"
#include "query/query.h"
#include "query/retention.h"
#include "query/snapshot_graph.h"

#include <stdarg.h>
#include <string.h>

void check_result_clear(check_result *r)
{
    g_free(r->assertion);
    g_free(r->expected);
    g_free(r->found);
    g_free(r->query);
    g_free(r->undecided);
    memset(r, 0, sizeof *r);
}

/* The recording cannot decide the assertion: r->undecided says why. TRUE: a result (it never
 * holds), not an error, so that the other assertions are still decided. */
static gboolean check_undecided(check_result *r, const char *format, ...) G_GNUC_PRINTF(2, 3);
static gboolean check_undecided(check_result *r, const char *format, ...)
{
    va_list args;
    va_start(args, format);
    r->undecided = g_strdup_vprintf(format, args);
    va_end(args);
    return TRUE;
}

/* `text` inside double quotes for a POSIX shell. */
static char *check_shell_dquote(const char *text)
{
    GString *s = g_string_new("\"");
    for (const char *p = text; *p; p++) {
        if (strchr("\"\\$`", *p))
            g_string_append_c(s, '\\');
        g_string_append_c(s, *p);
    }
    g_string_append_c(s, '"');
    return g_string_free(s, FALSE);
}

/* 'text' as an SQL string literal. */
static char *check_sql_literal(const char *text)
{
    GString *s = g_string_new("'");
    for (const char *p = text; *p; p++) {
        if (*p == '\'')
            g_string_append_c(s, '\'');
        g_string_append_c(s, *p);
    }
    g_string_append_c(s, '\'');
    return g_string_free(s, FALSE);
}

/* sqlite3 'FILE' "SQL", the query a user runs to see what an assertion found. */
static char *check_sqlite_command(const char *path, const char *sql)
{
    g_autofree char *file = g_shell_quote(path);
    g_autofree char *quoted = check_shell_dquote(sql);
    return g_strdup_printf("sqlite3 %s %s", file, quoted);
}

/* "TYPE=N": the type name and the limit (K, M, G: KiB, MiB, GiB with `sizes`). */
static gboolean check_parse_limit(const char *option, const char *value, gboolean sizes,
                                  char **type, int64_t *limit, GError **error)
{
    const char *eq = value ? strrchr(value, '=') : NULL;
    if (!eq || eq == value || !eq[1]) {
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_USAGE,
                    "check: --%s takes TYPE=%s, not '%s'", option, sizes ? "BYTES" : "N",
                    value ? value : "");
        return FALSE;
    }
    g_autofree char *number = g_strdup(eq + 1);
    uint64_t unit = 1, n;
    size_t len = strlen(number);
    if (sizes && len > 1) {
        const char *suffix = number + len - 1;
        if (len > 3 && g_str_has_suffix(number, "iB"))
            suffix = number + len - 3;
        unit = g_ascii_toupper(*suffix) == 'K'   ? 1024
               : g_ascii_toupper(*suffix) == 'M' ? 1024 * 1024
               : g_ascii_toupper(*suffix) == 'G' ? 1024 * 1024 * 1024
                                                 : 1;
        if (unit > 1)
            number[suffix - number] = 0;
    }
    if (!query_args_parse_uint("check", option, number, 0, (uint64_t)INT64_MAX / unit,
                               sizes ? "a number of bytes (K, M, G: KiB, MiB, GiB)"
                                     : "a number of objects",
                               &n, error))
        return FALSE;
    *type = g_strndup(value, (gsize)(eq - value));
    *limit = (int64_t)(n * unit);
    return TRUE;
}

/* "TYPE=N@WHERE": *limit_part "TYPE=N" and *at "WHERE" (NULL without '@'). Type names hold no
 * '@', so the first one ends the limit. */
static void check_split_at(const char *value, char **limit_part, const char **at)
{
    const char *a = value ? strchr(value, '@') : NULL;
    *limit_part = a ? g_strndup(value, (gsize)(a - value)) : g_strdup(value);
    *at = a ? a + 1 : NULL;
}

/* The type `name` names (check.h: a full name or one without namespaces): its full name, or
 * the name as given when the recording has no such type (*known FALSE). */
static gboolean check_type_resolve(sqlite3 *db, const char *path, const char *name, char **full,
                                   gboolean *known, GError **error)
{
    g_autoptr(snapshot_types) types = snapshot_types_new(db, error);
    g_autoptr(GError) not_found = NULL;
    if (!types)
        return FALSE;
    uint32_t id = snapshot_types_resolve(types, name, path, &not_found);
    if (id == 0 && not_found && not_found->code != QUERY_ERROR_NOT_FOUND) {
        g_propagate_error(error, g_steal_pointer(&not_found));
        return FALSE;
    }
    char buf[QUERY_FORMAT_MAX];
    *known = id != 0;
    *full = g_strdup(id ? snapshot_types_name(types, id, buf) : name);
    return TRUE;
}

static gboolean check_last_snapshot(sqlite3 *db, snapshot_info *info, gboolean *any,
                                    GError **error)
{
    g_autoptr(GArray) list = snapshot_list_new(db, error);
    if (!list)
        return FALSE;
    *any = list->len > 0;
    if (*any)
        *info = g_array_index(list, snapshot_info, list->len - 1);
    return TRUE;
}

/* One integer from `sql` with `text` bound to ?1 and `n` to ?2. */
static gboolean check_int(sqlite3 *db, const char *sql, const char *text, int64_t n,
                          int64_t *value, GError **error)
{
    sqlite3_stmt *st = query_db_prepare(db, sql, error);
    gboolean row = FALSE;
    if (!st)
        return FALSE;
    sqlite3_bind_text(st, 1, text, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, n);
    gboolean ok = query_db_step(st, &row, error);
    *value = ok && row ? sqlite3_column_int64(st, 0) : 0;
    sqlite3_finalize(st);
    return ok;
}

/* The objects alive after GC `gc` as `live_objects` lists them must be all of them for
 * --max-live to be decided: a sampled recording that follows its samples lists only those
 * between snapshots (query_estimates_survivors), a count far too low that would pass whatever
 * the program kept; r->undecided then says so. `when` says which GC ("its last GC", "the last
 * before checkpoint 'a'"). FALSE on an error only. */
static gboolean check_live_complete(sqlite3 *db, const char *path, int64_t gc, const char *when,
                                    check_result *r, GError **error)
{
    gboolean estimated = FALSE;
    if (!query_estimates_survivors(db, gc, &estimated, error))
        return FALSE;
    if (estimated)
        check_undecided(r, "%s has no heap snapshot at GC %" G_GINT64_FORMAT " (%s), and between "
                        "snapshots a sampled recording follows only its sampled objects; take "
                        "snapshots ('heaplens record --snapshot induced', the default, or "
                        "'heaplens snapshot PID') or record in full mode", path, gc, when);
    return TRUE;
}

static gboolean check_max_live(sqlite3 *db, const char *path, const char *value, check_result *r,
                               GError **error)
{
    g_autofree char *name = NULL, *type = NULL, *sql = NULL, *limit = NULL;
    gboolean known, any;
    snapshot_info info;
    char f[2][QUERY_FORMAT_MAX];
    const char *at;
    check_split_at(value, &limit, &at);
    if (!check_parse_limit("max-live", limit, FALSE, &name, &r->limit, error) ||
        !check_type_resolve(db, path, name, &type, &known, error) ||
        !check_last_snapshot(db, &info, &any, error))
        return FALSE;
    r->type_unknown = !known;
    g_autofree char *literal = check_sql_literal(type);
    if (at) {
        /* At a checkpoint: alive after the last GC finished before the program wrote it (what
         * the recording knows of that moment; exact when the program collects right before). */
        checkpoint_info c;
        if (!checkpoint_find(db, path, "check", at, &c, error))
            return FALSE;
        g_free(c.name);
        if (c.gc == 0)
            return check_undecided(r, "%s's checkpoint '%s' was written before its first GC: "
                                   "nothing is known alive then (a GC.Collect() right before "
                                   "the checkpoint gives it one)", path, at);
        g_autofree char *when = g_strdup_printf("the last before checkpoint '%s'", at);
        if (!check_live_complete(db, path, c.gc, when, r, error))
            return FALSE;
        if (r->undecided)
            return TRUE;
        if (!check_int(db, "SELECT count(*) FROM live_objects WHERE gc = ?2 AND type = ?1", type,
                       c.gc, &r->value, error))
            return FALSE;
        sql = g_strdup_printf("SELECT count(*) FROM live_objects WHERE gc = %" G_GINT64_FORMAT
                              " AND type = %s", c.gc, literal);
        r->found = g_strdup_printf("%s objects of %s alive after GC %" G_GINT64_FORMAT
                                   " (the last before checkpoint '%s')",
                                   query_count_format(r->value, f[0]), type, c.gc, at);
    } else if (any) {
        /* Rows missing from the snapshot would read as objects that are gone: its header says
         * how many it holds (as diff checks). */
        int64_t rows;
        if (!check_int(db, "SELECT count(*) FROM snapshot_objects WHERE snapshot = ?2", "",
                       info.snapshot, &rows, error))
            return FALSE;
        if (rows != info.objects)
            return query_db_damaged(error,
                                    "%s: snapshot %" G_GINT64_FORMAT " holds %" G_GINT64_FORMAT
                                    " objects, its snapshots row counts %" G_GINT64_FORMAT,
                                    path, info.snapshot, rows, info.objects);
        if (!check_int(db, "SELECT count(*) FROM snapshot_contents WHERE snapshot = ?2 AND "
                           "type = ?1", type, info.snapshot, &r->value, error))
            return FALSE;
        sql = g_strdup_printf("SELECT count(*) FROM snapshot_contents WHERE snapshot = %"
                              G_GINT64_FORMAT " AND type = %s", info.snapshot, literal);
        r->found = g_strdup_printf("%s objects of %s in snapshot %" G_GINT64_FORMAT
                                   " (GC %" G_GINT64_FORMAT ", the last)",
                                   query_count_format(r->value, f[0]), type, info.snapshot,
                                   info.gc);
    } else {
        int64_t last;
        if (!query_db_int(db, "SELECT coalesce(max(gc), 0) FROM gcs", &last, error))
            return FALSE;
        if (last == 0)
            return check_undecided(r, "%s has no GC and no heap snapshot, so nothing is known "
                                   "alive (a program that ends before its first GC can call "
                                   "GC.Collect() before it ends)", path);
        if (!check_live_complete(db, path, last, "its last GC", r, error))
            return FALSE;
        if (r->undecided)
            return TRUE;
        if (!check_int(db, "SELECT count(*) FROM live_objects WHERE gc = ?2 AND type = ?1", type,
                       last, &r->value, error))
            return FALSE;
        sql = g_strdup_printf("SELECT count(*) FROM live_objects WHERE gc = (SELECT max(gc) "
                              "FROM gcs) AND type = %s", literal);
        r->found = g_strdup_printf("%s objects of %s alive after the last GC (no snapshots)",
                                   query_count_format(r->value, f[0]), type);
    }
    if (!known) {
        char *more = g_strdup_printf("%s; the recording has no type named '%s'", r->found, name);
        g_free(r->found);
        r->found = more;
    }
    r->expected = g_strdup_printf("at most %s", query_count_format(r->limit, f[1]));
    r->query = check_sqlite_command(path, sql);
    r->ok = r->value <= r->limit;
    return TRUE;
}

static gboolean check_max_allocated(sqlite3 *db, const char *path, const char *value,
                                    check_result *r, GError **error)
{
    g_autofree char *name = NULL, *type = NULL, *sql = NULL, *limit = NULL;
    gboolean known;
    char f[2][QUERY_FORMAT_MAX];
    const char *at;
    int64_t from_gc = 0, to_gc = INT64_MAX;
    check_split_at(value, &limit, &at);
    if (!check_parse_limit("max-allocated", limit, FALSE, &name, &r->limit, error) ||
        !check_type_resolve(db, path, name, &type, &known, error) ||
        (at && !checkpoint_range(db, path, "check", at, &from_gc, &to_gc, error)))
        return FALSE;
    r->type_unknown = !known;
    /* Recorded with --census off, small objects are only estimated from the samples (a type no
     * sample hit shows 0 whatever it allocated): "at most N" cannot rest on that. */
    g_auto(query_estimates) recorded = {0};
    if (!query_estimates_get(db, &recorded, error))
        return FALSE;
    if (recorded.census_off)
        return check_undecided(r, "%s was recorded with --census off, where small-object "
                               "allocations are only estimated from the samples; record with the "
                               "census on (the default) or in full mode", path);
    /* The figures of `heaplens allocations` (`--between` with a range): exact in full mode, the
     * census's exact counts plus estimates in sampled and attach recordings (rounded). */
    g_autofree char *literal = check_sql_literal(type);
    if (at) {
        /* The per-interval figures `allocations --between` sums (no view has them per type
         * and interval). */
        g_auto(query_estimates) estimates = {0};
        g_autoptr(GArray) rows = query_allocations_read_between(db, path, NULL, from_gc, to_gc,
                                                                &estimates, NULL, error);
        if (!rows)
            return FALSE;
        r->value = 0;
        for (guint i = 0; i < rows->len; i++) {
            const query_allocation *a = &g_array_index(rows, query_allocation, i);
            if (strcmp(a->name, type) == 0)
                r->value = a->count;
        }
        g_autofree char *file = g_shell_quote(path);
        g_autofree char *range = g_shell_quote(at);
        r->query = g_strdup_printf("heaplens allocations %s --between %s", file, range);
    } else {
        if (!check_int(db, "SELECT CAST(round(total(count)) AS INTEGER) FROM "
                           "allocations_estimated_by_type_thread WHERE type = ?1",
                       type, 0, &r->value, error))
            return FALSE;
        sql = g_strdup_printf("SELECT round(total(count)) FROM "
                              "allocations_estimated_by_type_thread WHERE type = %s", literal);
        r->query = check_sqlite_command(path, sql);
    }
    g_autofree char *where = at ? g_strdup_printf(" between checkpoints %s (GC intervals %"
                                                  G_GINT64_FORMAT " to %" G_GINT64_FORMAT ")",
                                                  at, from_gc, to_gc)
                                : g_strdup("");
    /* Sampled and attach recordings count small objects at each GC (the census): the
     * allocations after the last GC (and in an interval no census counted exactly: the first
     * after an attach) are estimated from the samples, where a type no sample hit reads 0. The
     * part counted exactly is a lower bound of the whole: over the limit, the assertion fails;
     * within it, the estimated part decides nothing. */
    int64_t exact = r->value, last_gc = 0, uncounted = 0;
    if (recorded.uncounted) {
        sqlite3_stmt *st = query_db_prepare(
            db,
            "SELECT (SELECT CAST(total(a.count) AS INTEGER) FROM alloc_counts a"
            "        WHERE a.type_id = (SELECT id FROM types WHERE name = ?1)"
            "          AND a.gc BETWEEN ?2 AND ?3),"
            "       coalesce((SELECT max(gc) FROM gcs), 0),"
            "       (SELECT count(*) FROM gcs WHERE census_objects IS NULL"
            "          AND gc BETWEEN ?2 AND ?3)",
            error);
        gboolean row = FALSE;
        if (!st)
            return FALSE;
        sqlite3_bind_text(st, 1, type, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 2, from_gc);
        sqlite3_bind_int64(st, 3, to_gc);
        gboolean stepped = query_db_step(st, &row, error);
        if (stepped && row) {
            exact = sqlite3_column_int64(st, 0);
            last_gc = sqlite3_column_int64(st, 1);
            uncounted = sqlite3_column_int64(st, 2) + (to_gc > last_gc ? 1 : 0);
        }
        sqlite3_finalize(st);
        if (!stepped)
            return FALSE;
    }
    if (uncounted > 0) {
        int64_t estimated = MAX(0, r->value - exact);
        char e[QUERY_FORMAT_MAX];
        g_autofree char *counted = g_strdup_printf(
            "%s counted exactly by the census and the runtime, ~%s estimated from the samples "
            "%s", query_count_format(exact, f[0]), query_count_format(estimated, e),
            to_gc > last_gc ? "after the last GC, which no census counted"
                            : "of the GCs whose census did not count exactly");
        if (exact <= r->limit) {
            g_clear_pointer(&r->query, g_free);
            return check_undecided(r, "%s: %s allocations of %s%s: %s; within the limit of %s, "
                                   "but a type no sample hit reads 0 where only samples tell; "
                                   "record in full mode, or assert over checkpoints that end "
                                   "before the last GC (TYPE=N@FROM..TO)",
                                   path, query_count_format(r->value, f[1]), type, where, counted,
                                   query_count_format(r->limit, e));
        }
        r->found = g_strdup_printf("%s allocations of %s%s: %s (the exact part alone is over the "
                                   "limit)", query_count_format(r->value, f[1]), type, where,
                                   counted);
    } else {
        r->found = g_strdup_printf("%s allocations of %s%s%s", query_count_format(r->value, f[0]),
                                   type, where, known ? "" : " (the recording has no such type)");
    }
    r->expected = g_strdup_printf("at most %s", query_count_format(r->limit, f[1]));
    /* with an estimated part only the exact part fails (above): it is over the limit */
    r->ok = uncounted == 0 && r->value <= r->limit;
    return TRUE;
}

static gboolean check_max_retained(sqlite3 *db, const char *path, const char *value,
                                   check_result *r, GError **error)
{
    g_autofree char *name = NULL, *type = NULL, *sql = NULL;
    gboolean known;
    snapshot_info info;
    char f[2][QUERY_FORMAT_MAX];
    if (!check_parse_limit("max-retained", value, TRUE, &name, &r->limit, error) ||
        !check_type_resolve(db, path, name, &type, &known, error))
        return FALSE;
    r->type_unknown = !known;
    g_autoptr(GError) none = NULL;
    if (!snapshot_pick(db, path, "check", "snapshot", NULL, &info, &none)) {
        /* no snapshot: nothing retains anything, which is not "at most B" */
        if (g_error_matches(none, QUERY_ERROR, QUERY_ERROR_NOT_FOUND))
            return check_undecided(r, "%s", none->message);
        g_propagate_error(error, g_steal_pointer(&none));
        return FALSE;
    }
    if (!retention_ensure(db, &info, NULL, error))
        return FALSE;
    r->retention = TRUE;
    if (!check_int(db, "SELECT coalesce(sum(r.retained_bytes), 0) FROM retention_types r JOIN "
                       "types t ON t.id = r.type_id WHERE r.snapshot = ?2 AND t.name = ?1",
                   type, info.snapshot, &r->value, error))
        return FALSE;
    g_autofree char *literal = check_sql_literal(type);
    sql = g_strdup_printf("SELECT retained_bytes FROM retained_by_type WHERE snapshot = %"
                          G_GINT64_FORMAT " AND type = %s", info.snapshot, literal);
    r->found = g_strdup_printf("%s retained by %s in snapshot %" G_GINT64_FORMAT
                               " (GC %" G_GINT64_FORMAT ", the last)",
                               query_size_format(r->value, f[0]), type, info.snapshot, info.gc);
    r->expected = g_strdup_printf("at most %s", query_size_format(r->limit, f[1]));
    r->query = check_sqlite_command(path, sql);
    r->ok = r->value <= r->limit;
    return TRUE;
}

static gboolean check_no_leaks(sqlite3 *db, const char *path, check_result *r, GError **error)
{
    g_autoptr(GError) none = NULL;
    g_autoptr(leaks) l = leaks_find(db, path, 5, FALSE, NULL, &none);
    g_autofree char *file = g_shell_quote(path);
    r->retention = TRUE;
    if (!l) {
        /* Fewer than two snapshots: nothing can be seen growing, which is not "no leak". An
         * assertion that passed there would hold whatever the program did. */
        if (none->code == QUERY_ERROR_NOT_FOUND)
            return check_undecided(r, "%s", none->message);
        g_propagate_error(error, g_steal_pointer(&none));
        return FALSE;
    }
    r->limit = 0;
    r->expected = g_strdup("no leak suspect");
    r->query = g_strdup_printf("heaplens leaks %s", file);
    r->value = leaks_flagged_count(l);
    GString *found = g_string_new(NULL);
    g_string_printf(found, "%" G_GINT64_FORMAT " suspect%s", r->value, r->value == 1 ? "" : "s");
    for (guint i = 0, shown = 0; i < leaks_count(l) && shown < 3; i++) {
        leaks_suspect s;
        char buf[QUERY_FORMAT_MAX], holder[QUERY_FORMAT_MAX], n[QUERY_FORMAT_MAX];
        leaks_suspect_get(l, i, &s, buf, holder);
        if (!s.flagged)
            continue;
        g_string_append_printf(found, "%s%s (+%s objects)", shown++ ? ", " : ": ", s.type,
                               query_count_format(s.growth_count, n));
    }
    r->found = g_string_free(found, FALSE);
    r->ok = r->value == 0;
    return TRUE;
}

static gboolean check_sql(sqlite3 *db, const char *path, const char *sql, check_result *r,
                          GError **error)
{
    sqlite3_stmt *st = NULL;
    if (!sql || !*sql) {
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_USAGE, "check: --sql needs a query");
        return FALSE;
    }
    /* A query, not a change: the connection is read-only, and anything but a statement that
     * reads is refused before it runs. */
    const char *tail = NULL;
    int rc = sqlite3_prepare_v2(db, sql, -1, &st, &tail);
    if (rc == SQLITE_OK && !st) { /* blanks or a comment: it said "--sql not an error" */
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_USAGE, "check: --sql needs a query");
        return FALSE;
    }
    /* SQLite counts ATTACH, BEGIN and SAVEPOINT as read-only, and they return no row: such an
     * "assertion" held. A query returns columns. */
    if (rc != SQLITE_OK || !sqlite3_stmt_readonly(st) || sqlite3_column_count(st) == 0) {
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_USAGE, "check: --sql %s",
                    rc == SQLITE_OK ? "must be a query that reads (SELECT ...)"
                                    : sqlite3_errmsg(db));
        sqlite3_finalize(st);
        return FALSE;
    }
    /* one statement: a second one after ';' would be passed over, its answer never checked */
    tail += strspn(tail, " \t\r\n;");
    if (*tail) {
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_USAGE,
                    "check: --sql takes one query, not '%s' after it too", tail);
        sqlite3_finalize(st);
        return FALSE;
    }
    GString *rows = g_string_new(NULL);
    gboolean row;
    while (query_db_step(st, &row, error) && row) {
        if (r->value++ < 5) {
            g_string_append(rows, r->value == 1 ? ": " : "; ");
            for (int c = 0; c < sqlite3_column_count(st); c++) {
                const char *v = (const char *)sqlite3_column_text(st, c);
                g_string_append_printf(rows, "%s%s", c ? "|" : "", v ? v : "NULL");
            }
        }
    }
    sqlite3_finalize(st);
    if (error && *error) {
        g_string_free(rows, TRUE);
        return FALSE;
    }
    r->limit = 0;
    r->expected = g_strdup("no row");
    r->found = g_strdup_printf("%" G_GINT64_FORMAT " row%s%s%s", r->value,
                               r->value == 1 ? "" : "s", rows->str, r->value > 5 ? "; ..." : "");
    g_string_free(rows, TRUE);
    r->query = check_sqlite_command(path, sql);
    r->ok = r->value == 0;
    return TRUE;
}

gboolean check_eval(sqlite3 *db, const char *path, check_kind kind, const char *value,
                    int *lower_bounds, check_result *out, GError **error)
{
    static const char *const names[] = {
        [CHECK_MAX_LIVE] = "--max-live",   [CHECK_MAX_ALLOCATED] = "--max-allocated",
        [CHECK_MAX_RETAINED] = "--max-retained", [CHECK_NO_LEAKS] = "--no-leaks",
        [CHECK_SQL] = "--sql",
    };
    memset(out, 0, sizeof *out);
    out->limit = -1;
    out->assertion = value ? g_strdup_printf("%s %s", names[kind], value) : g_strdup(names[kind]);
    gboolean ok = FALSE;
    switch (kind) {
    case CHECK_MAX_LIVE:
        ok = check_max_live(db, path, value, out, error);
        break;
    case CHECK_MAX_ALLOCATED:
        ok = check_max_allocated(db, path, value, out, error);
        break;
    case CHECK_MAX_RETAINED:
        ok = check_max_retained(db, path, value, out, error);
        break;
    case CHECK_NO_LEAKS:
        ok = check_no_leaks(db, path, out, error);
        break;
    case CHECK_SQL:
        return check_sql(db, path, value, out, error); /* the user's own query: as it says */
    }
    /* A recording that lost data (or did not end complete) holds lower bounds: its counts, the
     * snapshots it kept (its last may not be the program's), the growth it saw. An "at most" that
     * holds there is undecided: a disk-full or killed writer's recording passed
     * --max-allocated with half of the program's allocations lost. One that fails is: the
     * lower bound is already over the limit (or the kept snapshots show it). The note is read
     * at the first assertion that holds, once for all of them (*lower_bounds). */
    if (ok && out->ok && *lower_bounds < 0) {
        gboolean lower = FALSE;
        if (!query_db_lower_bounds(db, &lower, error))
            return FALSE;
        *lower_bounds = lower ? 1 : 0;
    }
    if (ok && out->ok && *lower_bounds > 0) {
        g_autofree char *file = g_shell_quote(path);
        g_clear_pointer(&out->expected, g_free);
        g_clear_pointer(&out->found, g_free);
        g_clear_pointer(&out->query, g_free);
        out->ok = FALSE;
        out->value = 0;
        out->limit = -1;
        return check_undecided(out, "%s lost data or did not end complete, so what it holds is a "
                               "lower bound (its note says what: heaplens info %s); it holds on "
                               "what was kept", path, file);
    }
    return ok;
}
