/* query_db.c — opening a recording for reading, statement helpers and the accuracy note. */
#include "query/query.h"

#include <errno.h>
#include <inttypes.h>

#include "query/progress.h"
#include "query/replaced.h"
#include "store/store.h"
#include "wire/hl_wire.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void query_db_history_progress(void *ctx, uint64_t done, uint64_t total)
{
    query_progress_update(ctx, "building each object's generation history (once)", done, total);
}

static void query_db_summary_progress(void *ctx, uint64_t done, uint64_t total)
{
    query_progress_update(ctx, "summing up the objects that survived a GC (once)", done, total);
}

/* The first command to read a finished recording sums up its objects into the file (`whole`
 * FALSE), and the first that reads objects one by one builds their rows and generation history
 * (`whole`; store.h: the recording's end does not wait for either). A file this user may not
 * write, or a build that fails for want of time or room, keeps the views over the packed rows:
 * the same answers, read more slowly; their text is checked all the same (`check`). A damaged
 * file is refused: its views would answer wrongly. */
static gboolean query_db_build_history(sqlite3 *db, const char *path, gboolean whole,
                                       gboolean check, GError **error)
{
    g_autofree char *dir = g_path_get_dirname(path);
    g_autoptr(GError) local = NULL;
    g_autofree char *name = g_path_get_basename(path);

    if (access(path, W_OK) != 0 || access(dir, W_OK) != 0)
        return !check || store_history_check_changes(db, path, error);
    g_autoptr(query_progress) progress = query_progress_new(name, FALSE);
    if (whole ? store_history_build_file(path, query_db_history_progress, progress, &local)
              : store_history_summarize_file(path, query_db_summary_progress, progress, &local))
        return TRUE;
    if (g_error_matches(local, STORE_ERROR, STORE_ERROR_DAMAGED)) {
        g_propagate_error(error, g_steal_pointer(&local));
        return FALSE;
    }
    fprintf(stderr, "heaplens: %s (each object's generation history is read from its changes)\n",
            local->message);
    return !check || store_history_check_changes(db, path, error);
}

sqlite3 *query_db_open(const char *path, GError **error)
{
    sqlite3 *db = store_db_open_readonly(path, error);
    int64_t version = 0;
    struct stat st;
    if (db == NULL) {
        /* "does not exist": an old one a killed `--force` set aside is said, with how to get
         * it back (query/replaced.h); reading commands never rename it themselves */
        g_autofree char *hint =
            *path && lstat(path, &st) != 0 && errno == ENOENT ? query_replaced_hint(path) : NULL;
        if (hint && error && *error) {
            char *message = g_strdup_printf("%s; %s", (*error)->message, hint);
            g_free((*error)->message);
            (*error)->message = message;
        }
        return NULL;
    }
    /* Schema 4 and before has no summary without the whole build (store_history_summarize_file
     * does it whole there). */
    if (!query_db_int(db, "PRAGMA user_version", &version, error) ||
        (store_history_pending(db) && (store_history_spans_pending(db) || version < 5) &&
         !query_db_build_history(db, path, FALSE, TRUE, error)) ||
        !query_db_check_small_tables(db, error)) {
        sqlite3_close(db);
        return NULL;
    }
    return db;
}

gboolean query_files_same(const char *a, const char *b)
{
    struct stat sa, sb;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
           sa.st_ino == sb.st_ino;
}

gboolean query_db_objects_ensure(sqlite3 *db, GError **error)
{
    const char *path = store_db_name(db); /* opened and named as the user gave it */
    /* query_db_open checked the changes of a file it could not write: not again. */
    if (!store_history_pending(db) || path == NULL || !*path)
        return TRUE;
    if (!query_db_build_history(db, path, TRUE, FALSE, error))
        return FALSE;
    /* built: the file's table from now on, not the rows read into memory (store.h) */
    if (!store_history_pending(db))
        store_objects_view_detach(db);
    return TRUE;
}

gboolean query_db_has_spans(sqlite3 *db, gboolean weights, gboolean *has, GError **error)
{
    int64_t n = 0, weighed = 0;
    if (!query_db_int(db,
                      "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND "
                      "name IN ('object_spans', 'object_totals')",
                      &n, error))
        return FALSE;
    *has = n == 2;
    /* object_totals.weights: 1 when the spans hold the followed samples' weights (absent in
     * a file summed up by an older heaplens). */
    if (*has && weights &&
        (!query_db_int(db, "SELECT count(*) FROM pragma_table_info('object_totals')"
                           " WHERE name = 'weights'", &n, error) ||
         (n == 1 && !query_db_int(db, "SELECT coalesce((SELECT weights = 1 FROM object_totals"
                                      " LIMIT 1), 0)", &weighed, error))))
        return FALSE;
    if (weights)
        *has = *has && weighed == 1;
    return TRUE;
}

gboolean query_db_damaged(GError **error, const char *format, ...)
{
    va_list args;
    va_start(args, format);
    g_autofree char *what = g_strdup_vprintf(format, args);
    va_end(args);
    g_set_error(error, QUERY_ERROR, QUERY_ERROR_DAMAGED, "the database is damaged: %s", what);
    return FALSE;
}

/* The SQL condition "column `c` breaks `check`": outside its range (text and blobs order after
 * every number, so they are outside too). NULL is checked only where the schema allows it
 * (SQLite refuses it in a NOT NULL column). No function call: it runs on every row. */
static void value_check_append(GString *sql, const query_value_check *c)
{
    static const char *const ranges[] = {
        [QUERY_VALUE_INTEGER] = "-9223372036854775808 AND 9223372036854775807",
        [QUERY_VALUE_NATURAL] = "0 AND 9223372036854775807",
        [QUERY_VALUE_GENERATION] = "0 AND 5",
        [QUERY_VALUE_CONDEMNED] = "0 AND 2",
    };
    if (c->nullable)
        g_string_append_printf(sql, "(\"%s\" IS NOT NULL AND ", c->column);
    g_string_append_printf(sql, "NOT (\"%s\" BETWEEN %s)%s", c->column, ranges[c->kind],
                           c->nullable ? ")" : "");
}

gboolean query_db_check_values(sqlite3 *db, const char *table, const char *where,
                               const query_value_check *checks, GError **error)
{
    /* SELECT CASE WHEN <bad a> THEN 'a ' || quote(a) ... END FROM t WHERE <bad a> OR ... */
    g_autoptr(GString) sql = g_string_new("SELECT CASE");
    for (const query_value_check *c = checks; c->column; c++) {
        g_string_append(sql, " WHEN ");
        value_check_append(sql, c);
        g_string_append_printf(sql, " THEN '%s ' || quote(\"%s\")", c->column, c->column);
    }
    g_string_append_printf(sql, " END FROM \"%s\" WHERE (%s) AND (", table, where ? where : "1");
    for (const query_value_check *c = checks; c->column; c++) {
        if (c != checks)
            g_string_append(sql, " OR ");
        value_check_append(sql, c);
    }
    g_string_append(sql, ") LIMIT 1");
    gboolean row = FALSE, ok = FALSE;
    sqlite3_stmt *stmt = query_db_prepare(db, sql->str, error);
    if (!stmt || !query_db_step(stmt, &row, error))
        goto out;
    if (row) {
        /* "size -5": the column and the value as SQL shows it */
        const char *bad = (const char *)sqlite3_column_text(stmt, 0);
        const char *space = bad ? strchr(bad, ' ') : NULL;
        query_db_damaged(error, "%s.%.*s holds %s, which no recording holds there", table,
                         space ? (int)(space - bad) : 0, bad ? bad : "", space ? space + 1 : "?");
        goto out;
    }
    ok = TRUE;
out:
    sqlite3_finalize(stmt);
    return ok;
}

gboolean query_db_check_small_tables(sqlite3 *db, GError **error)
{
    static const query_value_check run[] = {
        {"pid", QUERY_VALUE_NATURAL, TRUE},         {"start_mono_ns", QUERY_VALUE_NATURAL, TRUE},
        {"end_mono_ns", QUERY_VALUE_NATURAL, TRUE}, {"exit_status", QUERY_VALUE_INTEGER, TRUE},
        {NULL, 0, FALSE},
    };
    static const query_value_check gcs[] = {
        {"gc", QUERY_VALUE_NATURAL, FALSE},           {"generation", QUERY_VALUE_CONDEMNED, FALSE},
        {"induced", QUERY_VALUE_NATURAL, TRUE},       {"compacting", QUERY_VALUE_NATURAL, TRUE},
        {"start_ns", QUERY_VALUE_NATURAL, TRUE},      {"end_ns", QUERY_VALUE_NATURAL, TRUE},
        {"pause_ns", QUERY_VALUE_NATURAL, TRUE},      {"survived_bytes", QUERY_VALUE_NATURAL, TRUE},
        {"moved_bytes", QUERY_VALUE_NATURAL, TRUE},   {"first_object_id", QUERY_VALUE_NATURAL, TRUE},
        {"objects_live", QUERY_VALUE_NATURAL, TRUE},  {"incomplete", QUERY_VALUE_NATURAL, TRUE},
        {"roots", QUERY_VALUE_NATURAL, TRUE},         {"pinned_roots", QUERY_VALUE_NATURAL, TRUE},
        {NULL, 0, FALSE},
    };
    /* Schema 6 on: the census's pause time and objects per GC (sampled mode, attach). */
    static const query_value_check gcs_census[] = {
        {"census_ns", QUERY_VALUE_NATURAL, TRUE},
        {"census_objects", QUERY_VALUE_NATURAL, TRUE},
        {NULL, 0, FALSE},
    };
    static const query_value_check gc_generations[] = {
        {"gc", QUERY_VALUE_NATURAL, FALSE},
        {"generation", QUERY_VALUE_GENERATION, FALSE},
        {"size_before", QUERY_VALUE_NATURAL, TRUE},
        {"size_after", QUERY_VALUE_NATURAL, TRUE},
        {NULL, 0, FALSE},
    };
    static const query_value_check snapshots[] = {
        {"snapshot", QUERY_VALUE_NATURAL, FALSE},     {"gc", QUERY_VALUE_NATURAL, FALSE},
        {"objects", QUERY_VALUE_NATURAL, TRUE},       {"refs", QUERY_VALUE_NATURAL, TRUE},
        {"roots", QUERY_VALUE_NATURAL, TRUE},         {"handles", QUERY_VALUE_NATURAL, TRUE},
        {"bytes", QUERY_VALUE_NATURAL, TRUE},         {"model_missing", QUERY_VALUE_NATURAL, TRUE},
        {"model_extra", QUERY_VALUE_NATURAL, TRUE},   {"frozen", QUERY_VALUE_NATURAL, TRUE},
        {"unresolved", QUERY_VALUE_NATURAL, TRUE},    {"walk_ns", QUERY_VALUE_NATURAL, TRUE},
        {"model_unreported", QUERY_VALUE_NATURAL, TRUE},
        {NULL, 0, FALSE},
    };
    static const query_value_check sampling[] = {
        {"samples", QUERY_VALUE_NATURAL, TRUE},
        {"mean_distance_bytes", QUERY_VALUE_NATURAL, TRUE},
        {NULL, 0, FALSE},
    };
    /* Text (or a blob) in a key is a row no query finds: SQLite orders it after every number,
     * so one probe of the key's end finds it. */
    int64_t hidden = 0;
    /* schema 8: the keys of snapshot_blocks (snapshot_objects is a view there, its snapshot
     * the snapshots row's) */
    if (!query_db_int(db,
                      store_snapshot_blocks_present(db)
                          ? "SELECT EXISTS (SELECT 1 FROM object_generation_rows WHERE from_gc >= '')"
                            "    OR EXISTS (SELECT 1 FROM snapshot_blocks WHERE last_snapshot >= '')"
                            "    OR EXISTS (SELECT 1 FROM snapshot_blocks WHERE first_id >= '')"
                            "    OR EXISTS (SELECT 1 FROM stack_frames WHERE stack_id >= '')"
                          : "SELECT EXISTS (SELECT 1 FROM object_generation_rows WHERE from_gc >= '')"
                            "    OR EXISTS (SELECT 1 FROM snapshot_objects WHERE snapshot >= '')"
                            "    OR EXISTS (SELECT 1 FROM stack_frames WHERE stack_id >= '')",
                      &hidden, error))
        return FALSE;
    if (hidden)
        return query_db_damaged(error, "a key of object_generation_rows, snapshot_objects or "
                                       "stack_frames is not a number");
    int64_t version = 0;
    if (!query_db_int(db, "PRAGMA user_version", &version, error))
        return FALSE;
    return query_db_check_values(db, "run", NULL, run, error) &&
           query_db_check_values(db, "gcs", NULL, gcs, error) &&
           (version < 6 || query_db_check_values(db, "gcs", NULL, gcs_census, error)) &&
           query_db_check_values(db, "gc_generations", NULL, gc_generations, error) &&
           query_db_check_values(db, "snapshots", NULL, snapshots, error) &&
           query_db_check_values(db, "sampling", NULL, sampling, error);
}

/* The tail: allocations after the last GC, which no GC judged (alive at the end). */
#define QUERY_DB_TAIL_SQL                                                                          \
    "(SELECT coalesce(SUM(count), 0) FROM alloc_counts"                                            \
    "  WHERE gc > (SELECT coalesce(MAX(gc), 0) FROM gcs))"

/* The totals of a row whose first columns are objects, bytes, alive before the tail, the tail. */
static void query_db_totals_take(sqlite3_stmt *stmt, int64_t *objects, int64_t *bytes,
                                 int64_t *alive)
{
    if (objects)
        *objects = sqlite3_column_int64(stmt, 0);
    if (bytes)
        *bytes = sqlite3_column_int64(stmt, 1);
    if (alive)
        *alive = query_add_saturating(sqlite3_column_int64(stmt, 2), sqlite3_column_int64(stmt, 3));
}

/* query_db_objects_totals from the one row of object_totals (its first reader summed them up). */
static gboolean query_db_totals_read(sqlite3 *db, int64_t *objects, int64_t *bytes,
                                     int64_t *alive, GError **error)
{
    gboolean row = FALSE, ok = FALSE;
    sqlite3_stmt *stmt = query_db_prepare(
        db,
        "SELECT objects, bytes, alive, " QUERY_DB_TAIL_SQL ","
        "       (SELECT count(*) FROM object_totals),"
        "       typeof(objects) = 'integer' AND typeof(bytes) = 'integer'"
        "       AND typeof(alive) = 'integer' AND objects >= 0 AND bytes >= 0"
        "       AND alive BETWEEN 0 AND objects"
        "  FROM object_totals",
        error);
    if (!stmt || !query_db_step(stmt, &row, error))
        goto out;
    if (!row || sqlite3_column_int64(stmt, 4) != 1 || !sqlite3_column_int(stmt, 5)) {
        query_db_damaged(error, "object_totals holds no row, more than one, or figures that no "
                                "recording holds");
        goto out;
    }
    query_db_totals_take(stmt, objects, bytes, alive);
    ok = TRUE;
out:
    sqlite3_finalize(stmt);
    return ok;
}

gboolean query_db_objects_totals(sqlite3 *db, int64_t *objects, int64_t *bytes, int64_t *alive,
                                 GError **error)
{
    gboolean row = FALSE, ok = FALSE, spans = FALSE;
    if (!query_db_has_spans(db, FALSE, &spans, error))
        return FALSE;
    if (spans)
        return query_db_totals_read(db, objects, bytes, alive, error);
    /* One scan sums and checks: SUM of text is a real, a negative size is the minimum, a
     * died_gc that is text is the maximum (text orders after every number). */
    sqlite3_stmt *stmt = query_db_prepare(
        db,
        "SELECT COUNT(*), SUM(size), SUM(died_gc IS NULL), " QUERY_DB_TAIL_SQL ","
        "       MIN(size) < 0, typeof(MAX(died_gc)) IN ('integer', 'null')"
        "  FROM objects",
        error);
    if (!stmt || !query_db_step(stmt, &row, error) || !row)
        goto out;
    if (sqlite3_column_type(stmt, 1) == SQLITE_FLOAT || sqlite3_column_int(stmt, 4)) {
        static const query_value_check sizes[] = {
            {"size", QUERY_VALUE_NATURAL, FALSE},
            {NULL, 0, FALSE},
        };
        query_db_check_values(db, "objects", NULL, sizes, error); /* which one */
        goto out;
    }
    if (!sqlite3_column_int(stmt, 5)) {
        query_db_damaged(error, "objects.died_gc holds text where a GC number belongs");
        goto out;
    }
    query_db_totals_take(stmt, objects, bytes, alive);
    ok = TRUE;
out:
    sqlite3_finalize(stmt);
    return ok;
}

gboolean query_db_check_alloc_counts(sqlite3 *db, GError **error)
{
    static const query_value_check alloc_counts[] = {
        {"gc", QUERY_VALUE_NATURAL, FALSE},        {"type_id", QUERY_VALUE_NATURAL, FALSE},
        {"thread", QUERY_VALUE_INTEGER, TRUE},     {"heap", QUERY_VALUE_GENERATION, TRUE},
        {"count", QUERY_VALUE_NATURAL, FALSE},     {"bytes", QUERY_VALUE_NATURAL, FALSE},
        {"survived", QUERY_VALUE_NATURAL, FALSE},  {"survived_bytes", QUERY_VALUE_NATURAL, FALSE},
        {"flags", QUERY_VALUE_NATURAL, FALSE},
        {NULL, 0, FALSE},
    };
    return query_db_check_values(db, "alloc_counts", NULL, alloc_counts, error);
}

/* Where SQLite's unix VFS puts the temporary files of our connections (temp_store is FILE,
 * the build's default: the sorter's runs of a large ORDER BY or GROUP BY, the b-trees of
 * DISTINCT and IN, TEMP tables, once past the page cache): the first of SQLITE_TMPDIR, TMPDIR,
 * /var/tmp, /usr/tmp, /tmp and . that is a directory this process may write and search, as
 * unixTempFileDir picks it; *named: the variable that named it, or NULL. NULL when none is. */
static const char *query_db_temp_dir(const char **named)
{
    static const char *const variables[] = {"SQLITE_TMPDIR", "TMPDIR"};
    static const char *const fixed[] = {"/var/tmp", "/usr/tmp", "/tmp", "."};
    struct stat st;
    for (size_t i = 0; i < G_N_ELEMENTS(variables) + G_N_ELEMENTS(fixed); i++) {
        gboolean variable = i < G_N_ELEMENTS(variables);
        const char *dir =
            variable ? g_getenv(variables[i]) : fixed[i - G_N_ELEMENTS(variables)];
        if (dir && stat(dir, &st) == 0 && S_ISDIR(st.st_mode) && access(dir, W_OK | X_OK) == 0) {
            *named = variable ? variables[i] : NULL;
            return dir;
        }
    }
    *named = NULL;
    return NULL;
}

gboolean query_db_temp_failed(sqlite3 *db, GError **error)
{
    /* A read-only connection writes nothing to the recording (a -shm's failures have codes of
     * their own): a write that failed on it was one of SQLite's temporary files. It was said
     * "reading X.db failed: disk I/O error", which blamed the recording. */
    int code = db ? sqlite3_extended_errcode(db) : SQLITE_OK;
    if (!db || sqlite3_db_readonly(db, "main") != 1 ||
        ((code & 0xff) != SQLITE_FULL && code != SQLITE_IOERR_WRITE &&
         code != SQLITE_IOERR_FSYNC && code != SQLITE_IOERR_TRUNCATE &&
         code != SQLITE_IOERR_GETTEMPPATH))
        return FALSE;
    const char *file = store_db_name(db);
    if (!file || !*file)
        file = "the database";
    const char *named = NULL;
    const char *dir = query_db_temp_dir(&named);
    int sys = sqlite3_system_errno(db);
    if (code == SQLITE_IOERR_GETTEMPPATH || !dir) {
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_IO,
                    "no directory for SQLite's temporary files: none of SQLITE_TMPDIR, TMPDIR, "
                    "/var/tmp, /usr/tmp, /tmp and . is one this user may write; the recording "
                    "%s is intact",
                    file);
        return TRUE;
    }
    g_set_error(error, QUERY_ERROR, QUERY_ERROR_IO,
                "cannot write SQLite's temporary files in %s (%s): %s; the recording %s is intact "
                "(point SQLITE_TMPDIR at a directory with room)",
                dir,
                named ? named
                      : "SQLite's default: SQLITE_TMPDIR and TMPDIR are unset or not writable",
                sys ? g_strerror(sys) : sqlite3_errmsg(db), file);
    return TRUE;
}

/* A failed read, naming the file: a command reading two (diff --to-file, leaks --with) says
 * which one is damaged. */
static void query_db_read_error(sqlite3 *db, GError **error)
{
    if (query_db_temp_failed(db, error))
        return;
    const char *file = store_db_name(db);
    g_set_error(error, QUERY_ERROR, QUERY_ERROR_SQLITE, "reading %s failed: %s",
                file && *file ? file : "the database", sqlite3_errmsg(db));
}

sqlite3_stmt *query_db_prepare(sqlite3 *db, const char *sql, GError **error)
{
    sqlite3_stmt *stmt = NULL;
    if (sqlite3_prepare_v2(db, sql, -1, &stmt, NULL) != SQLITE_OK) {
        query_db_read_error(db, error);
        sqlite3_finalize(stmt);
        return NULL;
    }
    return stmt;
}

gboolean query_db_step(sqlite3_stmt *stmt, gboolean *row, GError **error)
{
    int rc = sqlite3_step(stmt);
    if (rc == SQLITE_ROW || rc == SQLITE_DONE) {
        *row = rc == SQLITE_ROW;
        return TRUE;
    }
    query_db_read_error(sqlite3_db_handle(stmt), error);
    *row = FALSE;
    return FALSE;
}

gboolean query_db_int(sqlite3 *db, const char *sql, int64_t *value, GError **error)
{
    gboolean ok = FALSE;
    gboolean row = FALSE;
    sqlite3_stmt *stmt = query_db_prepare(db, sql, error);
    if (!stmt || !query_db_step(stmt, &row, error))
        goto out;
    *value = row ? sqlite3_column_int64(stmt, 0) : 0;
    ok = TRUE;
out:
    sqlite3_finalize(stmt);
    return ok;
}

/* What the collector lost, in the units users think in (SCHEMA.md, counters), and how the note
 * names them. */
static const struct {
    const char *counter;
    const char *one;
    const char *many;
} lost_counters[] = {
    {"allocs_dropped", "allocation", "allocations"},
    {"gcs_dropped", "GC", "GCs"},
    {"snapshots_dropped", "snapshot", "snapshots"},
    {"gc_events_dropped", "GC event", "GC events"},
};

/* `heaplens record` was killed: nothing is missing but the program's exit status, said in a
 * clause of its own (not a loss). */
#define LOSS_RECORDER_KILLED "recorder-killed"
/* An attach session's detach gave its last snapshot up: said in a clause of its own, with the
 * figures of its counters (SCHEMA.md). */
#define LOSS_FINAL_SNAPSHOT_MISSED "final-snapshot-missed"

/* run.loss reasons (SCHEMA.md, "Losses") in words; `ending`: the reason is how the stream
 * ended (said with the 'truncated' status), not why items were lost on the way. */
static const struct {
    const char *reason;
    const char *words;
    gboolean ending;
} loss_words[] = {
    {"buffer-full", "the collector's buffers were full", FALSE},
    {"writer-behind", "the writer fell behind", FALSE},
    {"writer-lost", "the writer was lost", FALSE},
    {"writer-stalled", "the writer stalled and the collector gave it up", FALSE},
    {"gc-input-lost", "GC input was lost", FALSE},
    {"program-killed", "the program was killed", TRUE},
    {"no-shutdown",
     "the program's runtime ended without shutting down and the program was not killed: it "
     "replaced itself by exec (what ran after is not recorded) or exited from native code",
     TRUE},
    {"writer-killed", "the writer was killed", TRUE},
    {"write-failed", "the file could not be written: disk full or an I/O error", TRUE},
    {"stream-corrupt", "the record stream was corrupt", TRUE},
    {"recording-stopped", "the process outlived heaplens record", TRUE},
};

/* The reasons of `loss` ("writer-behind,program-killed") that are `ending` ones or not, in
 * words, comma-separated; an unknown reason is shown as stored (not ending). NULL for none. */
static char *loss_words_new(const char *loss, gboolean ending)
{
    if (!loss || !*loss)
        return NULL;
    g_auto(GStrv) reasons = g_strsplit(loss, ",", -1);
    g_autoptr(GString) text = g_string_new(NULL);
    for (char **r = reasons; *r; r++) {
        const char *words = *r;
        if (strcmp(*r, LOSS_RECORDER_KILLED) == 0 || strcmp(*r, LOSS_FINAL_SNAPSHOT_MISSED) == 0)
            continue;
        gboolean is_ending = FALSE;
        for (size_t i = 0; i < G_N_ELEMENTS(loss_words); i++)
            if (strcmp(*r, loss_words[i].reason) == 0) {
                words = loss_words[i].words;
                is_ending = loss_words[i].ending;
            }
        if (is_ending == ending)
            g_string_append_printf(text, "%s%s", text->len ? ", " : "", words);
    }
    return text->len ? g_string_free(g_steal_pointer(&text), FALSE) : NULL;
}

static gboolean counter_get(sqlite3_stmt *stmt, const char *name, int64_t *value, GError **error)
{
    gboolean row = FALSE;
    sqlite3_reset(stmt);
    sqlite3_bind_text(stmt, 1, name, -1, SQLITE_STATIC);
    if (!query_db_step(stmt, &row, error))
        return FALSE;
    *value = row ? sqlite3_column_int64(stmt, 0) : 0;
    return TRUE;
}

static void count_append(GString *text, int64_t n, const char *one, const char *many)
{
    char count[QUERY_FORMAT_MAX];
    g_string_append_printf(text, "%s %s", query_count_format(n, count), n == 1 ? one : many);
}

gboolean query_db_gcs_lost(sqlite3 *db, int64_t *lost, GError **error)
{
    /* max(0, ...) per counter: a negative value is not a count (a damaged or edited file). */
    return query_db_int(
        db,
        "SELECT max(coalesce((SELECT max(0, value) FROM counters WHERE name = 'gcs_dropped'), 0),"
        "           coalesce((SELECT max(0, value) FROM counters WHERE name = 'program_gcs'), 0)"
        "           - (SELECT count(*) FROM gcs)"
        "           - coalesce((SELECT max(0, value) FROM counters"
        "                       WHERE name = 'gcs_discarded_incomplete'), 0))",
        lost, error);
}

gboolean query_db_census_lost(sqlite3 *db, query_census_lost *lost, GError **error)
{
    gboolean row = FALSE, ok = FALSE;
    int64_t total = 0, total_bytes = 0, gcs_lost = 0, discarded = 0;
    sqlite3_stmt *st = NULL;
    memset(lost, 0, sizeof *lost);
    /* The collector's totals and the discarded GCs, read once (each line of a note reads them). */
    st = query_db_prepare(db,
                          "SELECT coalesce((SELECT value FROM counters"
                          "                 WHERE name = 'census_allocs'), 0),"
                          "       coalesce((SELECT value FROM counters"
                          "                 WHERE name = 'census_bytes'), 0),"
                          "       coalesce((SELECT max(0, value) FROM counters"
                          "                 WHERE name = 'gcs_discarded_incomplete'), 0)",
                          error);
    if (!st || !query_db_step(st, &row, error))
        goto out;
    total = sqlite3_column_int64(st, 0);
    total_bytes = sqlite3_column_int64(st, 1);
    discarded = sqlite3_column_int64(st, 2);
    sqlite3_finalize(st);
    st = NULL;
    if (!query_db_gcs_lost(db, &gcs_lost, error))
        goto out;
    if (total > 0) { /* else no total: not known */
        lost->known = TRUE;
        lost->gcs = gcs_lost + discarded;
    }
    if (lost->gcs > 0) { /* else every GC is stored, with its census's counts */
        st = query_db_prepare(db,
                              "SELECT total(count), total(bytes) FROM alloc_counts"
                              " WHERE flags & 2 != 0",
                              error);
        if (!st || !query_db_step(st, &row, error))
            goto out;
        lost->allocs = MAX(0, total - (int64_t)sqlite3_column_double(st, 0));
        lost->bytes = MAX(0, total_bytes - (int64_t)sqlite3_column_double(st, 1));
    }
    ok = TRUE;
out:
    sqlite3_finalize(st);
    return ok;
}

/* The note (NULL when there is none) and whether it says counts are lower bounds. */
static char *query_db_note_bounds_new(sqlite3 *db, gboolean *lower, GError **error)
{
    char *note = NULL;
    gboolean row = FALSE;
    g_autoptr(GPtrArray) clauses = g_ptr_array_new_with_free_func(g_free);
    g_autoptr(GString) lost = g_string_new(NULL);
    gboolean lower_bounds = FALSE;
    *lower = FALSE;
    int64_t value = 0;
    size_t n_lost = 0;
    const char *run_status = NULL;
    g_autofree char *reasons = NULL, *ending = NULL;
    sqlite3_stmt *status = NULL;
    sqlite3_stmt *counter =
        query_db_prepare(db, "SELECT value FROM counters WHERE name = ?1", error);
    if (!counter)
        goto out;

    status = query_db_prepare(db,
                              "SELECT status, loss, exit_status, (SELECT max(gc) FROM gcs), flags, "
                              "mode IN ('sampled', 'attach'), mode = 'attach' FROM run WHERE id = 1",
                              error);
    if (!status || !query_db_step(status, &row, error))
        goto out;
    run_status = row ? (const char *)sqlite3_column_text(status, 0) : NULL;
    reasons = loss_words_new(row ? (const char *)sqlite3_column_text(status, 1) : NULL, FALSE);
    ending = loss_words_new(row ? (const char *)sqlite3_column_text(status, 1) : NULL, TRUE);
    /* Truncated without an ending reason, but the writer was given up: that is why the end
     * never arrived (the collector's end file told the rest). */
    const char *loss_text = row ? (const char *)sqlite3_column_text(status, 1) : NULL;
    gboolean given_up = loss_text && (strstr(loss_text, "writer-lost") ||
                                      strstr(loss_text, "writer-stalled"));
    if (!run_status) {
        g_ptr_array_add(clauses, g_strdup("the recording has no run status"));
    } else if (strcmp(run_status, "truncated") == 0) {
        g_ptr_array_add(clauses, g_strdup_printf("the recording is truncated (%s)",
                                                 ending ? ending
                                                 : given_up ? "the collector gave its writer up"
                                                            : "its end never arrived"));
        lower_bounds = TRUE;
    } else if (strcmp(run_status, "recording") == 0) {
        g_ptr_array_add(clauses,
                        g_strdup("the recording is unfinished (still being written, or its writer "
                                 "was killed)"));
        lower_bounds = TRUE;
    } else if (strcmp(run_status, "no-data") == 0) {
        g_ptr_array_add(clauses, g_strdup("the program never loaded the collector"));
    } else if (strcmp(run_status, "complete") != 0) {
        g_ptr_array_add(clauses, g_strdup_printf("the recording's status is '%s'", run_status));
    }
    /* What is missing at the end: the GCs after the last one stored, up to the program's end
     * (program_gcs: the collector's count, from RUN_END or its end file). */
    if (!counter_get(counter, "program_gcs", &value, error))
        goto out;
    int64_t last_gc = row ? sqlite3_column_int64(status, 3) : 0;
    if (value > 0 && value > last_gc) {
        g_autoptr(GString) clause = g_string_new(NULL);
        char a[QUERY_FORMAT_MAX], b[QUERY_FORMAT_MAX];
        if (value == last_gc + 1)
            g_string_append_printf(clause, "GC %s", query_count_format(value, a));
        else
            g_string_append_printf(clause, "GCs %s to %s", query_count_format(last_gc + 1, a),
                                   query_count_format(value, b));
        g_string_append_printf(clause, " of the program's %s %s missing",
                               query_count_format(value, a), value == last_gc + 1 ? "is" : "are");
        if (row && sqlite3_column_type(status, 2) != SQLITE_NULL)
            g_string_append_printf(clause, " (the program's exit status: %" PRId64 ")",
                                   (int64_t)sqlite3_column_int64(status, 2));
        g_ptr_array_add(clauses, g_string_free(g_steal_pointer(&clause), FALSE));
        lower_bounds = TRUE;
    }
    if (row && sqlite3_column_text(status, 1) &&
        strstr((const char *)sqlite3_column_text(status, 1), LOSS_RECORDER_KILLED))
        g_ptr_array_add(clauses,
                        g_strdup(sqlite3_column_int(status, 6)
                                     ? "heaplens attach was killed: its writer ended the session "
                                       "then (the collector detached), before its planned end"
                                     : "heaplens record was killed: the program's exit status "
                                       "is unknown"));

    if (row && sqlite3_column_text(status, 1) &&
        strstr((const char *)sqlite3_column_text(status, 1), LOSS_FINAL_SNAPSHOT_MISSED)) {
        int64_t why = 0, behind = 0, waited_ms = 0, skipped = 0;
        if (!counter_get(counter, "final_snapshot_missed", &why, error) ||
            !counter_get(counter, "final_snapshot_gcs_behind", &behind, error) ||
            !counter_get(counter, "final_snapshot_wait_ms", &waited_ms, error) ||
            !counter_get(counter, "snapshots_skipped", &skipped, error))
            goto out;
        g_autoptr(GString) clause = g_string_new("the final snapshot was not taken: ");
        char waited[QUERY_FORMAT_MAX];
        query_duration_format(waited_ms * 1000000, waited);
        if (why == HL_FINAL_SNAPSHOT_NO_GC) {
            g_string_append_printf(clause, "the GC heaplens forced had not started after %s",
                                   waited);
        } else if (why == HL_FINAL_SNAPSHOT_GIVEN_UP) {
            /* 0: the request came before the collector began to wait (it was applying GCs) */
            if (waited_ms > 0)
                g_string_append_printf(clause, "a second signal to heaplens attach gave it up "
                                               "after %s of waiting (the collector ", waited);
            else
                g_string_append(clause, "a second signal to heaplens attach gave it up before "
                                        "it was waited for (the collector ");
            count_append(clause, behind, "GC", "GCs");
            g_string_append(clause, " behind the program's own)");
        } else {
            g_string_append_printf(clause, "after %s the collector was still ", waited);
            count_append(clause, behind, "GC", "GCs");
            g_string_append(clause, " behind the program's own (they came faster than it "
                                    "applied them: a snapshot at every GC.Collect of a program "
                                    "that calls it in a loop; --snapshot none keeps up)");
        }
        g_string_append(clause, ", so the session ended without it");
        if (skipped > 0) {
            g_string_append(clause, " and ");
            count_append(clause, skipped, "snapshot", "snapshots");
            g_string_append(clause, skipped == 1 ? " of those GCs was not built"
                                                  : " of those GCs were not built");
        }
        g_ptr_array_add(clauses, g_string_free(g_steal_pointer(&clause), FALSE));
    }

    /* The policies' snapshots not taken for the bound on the walks the collector holds
     * (collector/snapshot_policy.h): the recording has fewer snapshots than the policy says,
     * and every count is whole. */
    int64_t skipped_queued = 0;
    if (!counter_get(counter, "snapshots_skipped_queued", &skipped_queued, error))
        goto out;
    if (skipped_queued > 0) {
        g_autoptr(GString) clause = g_string_new(NULL);
        count_append(clause, skipped_queued, "snapshot", "snapshots");
        g_string_append_printf(clause,
                               " of the --snapshot policy (at GCs it chose: induced, gen2, "
                               "every:N) %s not taken, because the collector still held %u or "
                               "more earlier snapshots, %llu MiB or more, not yet applied (the "
                               "program's GCs came faster than it applied them; the GCs "
                               "themselves are all here)",
                               skipped_queued == 1 ? "was" : "were", HL_SNAPSHOTS_HELD_MAX,
                               (unsigned long long)(HL_SNAPSHOT_WALKS_HELD_MAX_BYTES >> 20));
        g_ptr_array_add(clauses, g_string_free(g_steal_pointer(&clause), FALSE));
    }

    /* An attach session's detach went on with ForceGC threads heaplens started still in the
     * runtime (collector/forcers.h): nothing of the recording is missing, but the program was
     * left with them. */
    int64_t forcers_left = 0, forcers_wait_ms = 0;
    if (!counter_get(counter, "forcegc_threads_left", &forcers_left, error) ||
        !counter_get(counter, "forcegc_wait_ms", &forcers_wait_ms, error))
        goto out;
    if (forcers_left > 0) {
        g_autoptr(GString) clause = g_string_new(NULL);
        char waited[QUERY_FORMAT_MAX];
        count_append(clause, forcers_left, "ForceGC thread", "ForceGC threads");
        g_string_append_printf(clause,
                               " heaplens started %s still in the runtime after the detach "
                               "waited %s for %s: it detached all the same (the recording is "
                               "whole; the runtime was asked to unload the collector with %s "
                               "inside)",
                               forcers_left == 1 ? "was" : "were",
                               query_duration_format(MAX(forcers_wait_ms, 0) * 1000000, waited),
                               forcers_left == 1 ? "it" : "them",
                               forcers_left == 1 ? "it" : "them");
        g_ptr_array_add(clauses, g_string_free(g_steal_pointer(&clause), FALSE));
    }

    /* HEAPLENS_EMPTY=1 (a benchmark's empty profiler) records nothing: a run that looks
     * complete and empty must say why. */
    const char *flags = row ? (const char *)sqlite3_column_text(status, 4) : NULL;
    if (flags && strstr(flags, "empty-profiler"))
        g_ptr_array_add(clauses, g_strdup("the collector ran as the empty profiler "
                                          "(HEAPLENS_EMPTY=1): its callbacks did nothing, so "
                                          "nothing was recorded"));

    /* Sampled and attach recordings count small objects at each GC (the census; without it the
     * samples that come with the GC): the reported allocations lost are large and pinned ones,
     * and a lost GC takes the count of the small objects before it along. */
    gboolean counted_at_gcs = row && sqlite3_column_int(status, 5) != 0;
    int64_t gcs_lost = 0;
    if (!query_db_gcs_lost(db, &gcs_lost, error))
        goto out;
    /* Counters are unsigned on the wire: a negative value here is not a count (a damaged or
     * edited file); it is said so, never shown as a loss. */
    for (size_t i = 0; i < G_N_ELEMENTS(lost_counters); i++) {
        if (!counter_get(counter, lost_counters[i].counter, &value, error))
            goto out;
        if (value >= 0 && strcmp(lost_counters[i].counter, "gcs_dropped") == 0)
            value = gcs_lost; /* with the GCs sent and never stored */
        if (value < 0) {
            g_ptr_array_add(clauses, g_strdup_printf("the counter %s is %" PRId64
                                                     " (a damaged or edited file)",
                                                     lost_counters[i].counter, value));
            continue;
        }
        if (value == 0)
            continue;
        if (n_lost > 0)
            g_string_append(lost, ", ");
        if (counted_at_gcs && strcmp(lost_counters[i].counter, "allocs_dropped") == 0)
            count_append(lost, value, "reported allocation", "reported allocations");
        else
            count_append(lost, value, lost_counters[i].one, lost_counters[i].many);
        n_lost++;
    }
    if (n_lost > 0) {
        /* "12 allocations, 3 GCs were lost (the writer fell behind)"; one item: "1 allocation
         * was lost (...)". The reasons are run.loss, as the writer stored them. */
        gboolean one = n_lost == 1 && strncmp(lost->str, "1 ", 2) == 0;
        g_string_append(lost, one ? " was lost" : " were lost");
        if (reasons)
            g_string_append_printf(lost, " (%s)", reasons);
        g_ptr_array_add(clauses, g_string_free(g_steal_pointer(&lost), FALSE));
        lower_bounds = TRUE;
    } else if (reasons) {
        g_ptr_array_add(clauses, g_strdup_printf("data was lost (%s)", reasons));
        lower_bounds = TRUE;
    }
    if (counted_at_gcs) {
        /* Said alone, "5,002 allocations were lost" of a sampled recording that lost the
         * census of millions with its GCs is far below the loss: the census's own count of
         * them, from the collector's total; without one (an older recording, --census off),
         * that they are in no total. */
        query_census_lost census = {0};
        if (!query_db_census_lost(db, &census, error))
            goto out;
        g_autoptr(GString) clause = g_string_new(NULL);
        if (census.known && census.allocs > 0) {
            count_append(clause, census.allocs, "small-object allocation",
                         "small-object allocations");
            g_string_append_printf(clause, " (counted by the census) %s lost with ",
                                   census.allocs == 1 ? "was" : "were");
            count_append(clause, census.gcs, "GC", "GCs");
            lower_bounds = TRUE;
        } else if (!census.known && gcs_lost > 0) {
            g_string_append(clause, "the small objects allocated before the ");
            count_append(clause, gcs_lost, "lost GC", "lost GCs");
            g_string_append(clause, " are in no total (they are counted at each GC)");
        }
        if (clause->len)
            g_ptr_array_add(clauses, g_string_free(g_steal_pointer(&clause), FALSE));
    }
    if (!counter_get(counter, "threads_overflowed", &value, error))
        goto out;
    if (value > 0) {
        g_autoptr(GString) clause = g_string_new(NULL);
        count_append(clause, value, "thread", "threads");
        g_string_append(clause, value == 1 ? " found no buffer and was not tracked"
                                           : " found no buffer and were not tracked");
        g_ptr_array_add(clauses, g_string_free(g_steal_pointer(&clause), FALSE));
        lower_bounds = TRUE;
    }
    if (!counter_get(counter, "gcs_discarded_incomplete", &value, error))
        goto out;
    if (value > 0) {
        g_autoptr(GString) clause = g_string_new(NULL);
        count_append(clause, value, "incomplete GC", "incomplete GCs");
        g_string_append(clause, value == 1 ? " was discarded" : " were discarded");
        g_ptr_array_add(clauses, g_string_free(g_steal_pointer(&clause), FALSE));
    }

    if (clauses->len > 0) {
        if (lower_bounds)
            g_ptr_array_add(clauses, g_strdup("counts are lower bounds"));
        *lower = lower_bounds;
        g_ptr_array_add(clauses, NULL);
        g_autofree char *joined = g_strjoinv("; ", (char **)clauses->pdata);
        note = g_strconcat("note: ", joined, NULL);
    }
out:
    sqlite3_finalize(counter);
    sqlite3_finalize(status);
    return note;
}

char *query_db_note_new(sqlite3 *db, GError **error)
{
    gboolean lower;
    return query_db_note_bounds_new(db, &lower, error);
}

gboolean query_db_lower_bounds(sqlite3 *db, gboolean *lower, GError **error)
{
    GError *local = NULL;
    g_free(query_db_note_bounds_new(db, lower, &local));
    if (local) {
        g_propagate_error(error, local);
        return FALSE;
    }
    return TRUE;
}

int64_t query_db_column_value(sqlite3_stmt *stmt, int column)
{
    if (sqlite3_column_type(stmt, column) == SQLITE_NULL)
        return QUERY_NULL;
    return sqlite3_column_int64(stmt, column);
}

int64_t query_db_column_flag(sqlite3_stmt *stmt, int column)
{
    if (sqlite3_column_type(stmt, column) == SQLITE_NULL)
        return QUERY_NULL;
    return sqlite3_column_int64(stmt, column) != 0;
}

GArray *query_db_rows_read(sqlite3_stmt *stmt, guint size,
                           void (*read)(sqlite3_stmt *stmt, void *element),
                           GDestroyNotify clear, GError **error)
{
    gboolean row = FALSE, stepped = FALSE;
    GArray *rows = g_array_new(FALSE, TRUE, size);
    g_array_set_clear_func(rows, clear);
    while (stmt && (stepped = query_db_step(stmt, &row, error)) && row) {
        g_array_set_size(rows, rows->len + 1);
        read(stmt, rows->data + (gsize)(rows->len - 1) * size);
    }
    sqlite3_finalize(stmt);
    if (!stepped)
        g_clear_pointer(&rows, g_array_unref);
    return rows;
}

sqlite3 *query_db_open_store(sqlite3 *db, const char *path, const char *begin, const char *what,
                             store_db_check *check, query_progress *progress, char **reason,
                             GError **error)
{
    g_autoptr(GError) ignored = NULL;
    gboolean row = FALSE;
    sqlite3 *rw = NULL;
    char *errmsg = NULL;
    g_autofree char *damage = NULL;
    sqlite3_stmt *st = query_db_prepare(db, "SELECT status FROM run WHERE id = 1", &ignored);
    if (st && query_db_step(st, &row, &ignored) && row) {
        const char *status = (const char *)sqlite3_column_text(st, 0);
        if (status && strcmp(status, "recording") == 0)
            *reason = g_strdup_printf("%s is still being recorded (or its writer was killed)", path);
    }
    sqlite3_finalize(st);
    if (*reason)
        return NULL;
    /* NOMUTEX: the connection never leaves the calling thread */
    if (sqlite3_open_v2(path, &rw, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
        *reason = g_strdup_printf("%s cannot be written (%s)", path, sqlite3_errmsg(rw));
        goto fail;
    }
    if (sqlite3_db_readonly(rw, "main") == 1) { /* a read-only file opens read-only */
        *reason = g_strdup_printf("%s cannot be written (it is read-only)", path);
        goto fail;
    }
    sqlite3_busy_timeout(rw, 10000);
    if (sqlite3_exec(rw, begin, NULL, NULL, &errmsg) != SQLITE_OK) {
        int code = sqlite3_errcode(rw) & 0xff;
        if (code == SQLITE_READONLY || code == SQLITE_CANTOPEN || code == SQLITE_PERM ||
            code == SQLITE_BUSY || code == SQLITE_AUTH || code == SQLITE_FULL)
            *reason = g_strdup_printf("%s cannot be written (%s)", path, errmsg);
        else
            g_set_error(error, QUERY_ERROR, QUERY_ERROR_SQLITE, "storing %s failed: %s", what,
                        errmsg);
        goto fail;
    }
    query_progress_update(progress, "checking the file", 0, 0);
    damage = store_db_damage_new(rw, check);
    if (damage) {
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_DAMAGED, "%s is damaged (%s); %s were not stored",
                    path, damage, what);
        goto fail;
    }
    return rw;
fail:
    sqlite3_free(errmsg);
    sqlite3_close(rw); /* an open transaction is rolled back */
    return NULL;
}

gboolean query_db_store_full(sqlite3 *rw, const char *path, char **reason, GError **error)
{
    /* no space: SQLITE_FULL; a quota, the file size limit, a write that wrote nothing:
     * SQLITE_IOERR_WRITE. Either rolled back whole. */
    int code = rw ? sqlite3_extended_errcode(rw) : SQLITE_OK;
    if (*reason || ((code & 0xff) != SQLITE_FULL && code != SQLITE_IOERR_WRITE))
        return FALSE;
    g_clear_error(error);
    *reason = g_strdup_printf("%s cannot be written (disk full or an I/O error)", path);
    return TRUE;
}

gboolean query_db_stored_sound(sqlite3 *db, GError **error)
{
    /* a TEMP table marks the connection that found the file intact (no client data in the
     * SQLite the project builds with) */
    gboolean found = FALSE;
    if (!query_db_table_exists(db, "temp", "heaplens_stored_sound", &found, error))
        return FALSE;
    if (found)
        return TRUE;
    g_autofree char *damage = store_db_damage_new(db, NULL);
    if (damage) {
        const char *path = store_db_name(db);
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_DAMAGED,
                    "%s is damaged (%s); its stored answers are not read", path ? path : "the file",
                    damage);
        return FALSE;
    }
    if (sqlite3_exec(db, "CREATE TEMP TABLE heaplens_stored_sound (x)", NULL, NULL, NULL) !=
        SQLITE_OK) {
        query_db_read_error(db, error); /* TEMP: SQLite's temporary files, most likely */
        return FALSE;
    }
    return TRUE;
}

gboolean query_db_table_exists(sqlite3 *db, const char *schema, const char *table,
                               gboolean *exists, GError **error)
{
    int64_t n = 0;
    g_autofree char *sql = g_strdup_printf(
        "SELECT COUNT(*) FROM %s.sqlite_schema WHERE type = 'table' AND name = '%s'", schema, table);
    if (!query_db_int(db, sql, &n, error))
        return FALSE;
    *exists = n > 0;
    return TRUE;
}

/* Copies the rows of temp.`table` of `db` into main.`table` of `rw` (in its write transaction). */
static gboolean kept_rows_copy(sqlite3 *db, sqlite3 *rw, const char *table, const char *what,
                               GError **error)
{
    sqlite3_stmt *get = NULL, *put = NULL;
    gboolean ok = FALSE, row = FALSE;
    g_autofree char *select = g_strdup_printf("SELECT * FROM temp.%s", table);
    get = query_db_prepare(db, select, error);
    if (!get)
        goto out;
    int n = sqlite3_column_count(get);
    GString *insert = g_string_new(NULL);
    g_string_printf(insert, "INSERT OR REPLACE INTO main.%s VALUES (", table);
    for (int i = 0; i < n; i++)
        g_string_append(insert, i ? ", ?" : "?");
    g_string_append_c(insert, ')');
    int rc = sqlite3_prepare_v2(rw, insert->str, -1, &put, NULL);
    g_string_free(insert, TRUE);
    if (rc != SQLITE_OK)
        goto fail;
    while (query_db_step(get, &row, error) && row) {
        for (int i = 0; i < n; i++)
            sqlite3_bind_value(put, i + 1, sqlite3_column_value(get, i));
        if (sqlite3_step(put) != SQLITE_DONE)
            goto fail;
        sqlite3_reset(put);
    }
    ok = !(error && *error);
    goto out;
fail:
    g_set_error(error, QUERY_ERROR, QUERY_ERROR_SQLITE, "storing %s failed: %s", what,
                sqlite3_errmsg(rw));
out:
    sqlite3_finalize(get);
    sqlite3_finalize(put);
    return ok;
}

gboolean query_db_kept_commit(sqlite3 *db, const char *path, const char *table,
                              const char *create, const char *what, query_progress *progress,
                              char **note, GError **error)
{
    gboolean kept = FALSE, ok = FALSE;
    int64_t rows = 0;
    sqlite3 *rw = NULL;
    char *errmsg = NULL;
    g_autofree char *reason = NULL, *count = g_strdup_printf("SELECT COUNT(*) FROM temp.%s", table);
    g_autofree char *clear = g_strdup_printf("DELETE FROM temp.%s", table);
    g_autofree char *step = g_strdup_printf("storing %s", what);
    store_db_check check = {0};
    *note = NULL;
    if (!query_db_table_exists(db, "temp", table, &kept, error) ||
        (kept && !query_db_int(db, count, &rows, error)))
        return FALSE;
    if (rows == 0)
        return TRUE;
    rw = query_db_open_store(db, path, "BEGIN IMMEDIATE", what, &check, progress, &reason, error);
    if (!rw) {
        if (reason)
            goto unwritable;
        goto out;
    }
    query_progress_update(progress, step, 0, 0);
    if (sqlite3_exec(rw, create, NULL, NULL, &errmsg) != SQLITE_OK) {
        if ((sqlite3_errcode(rw) & 0xff) == SQLITE_READONLY) {
            reason = g_strdup_printf("%s cannot be written (%s)", path, errmsg);
            goto unwritable;
        }
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_SQLITE, "storing %s failed: %s", what, errmsg);
        goto out;
    }
    if (!kept_rows_copy(db, rw, table, what, error))
        goto out;
    if (!store_db_commit_sound(rw, &check)) { /* the next writer need not check again */
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_SQLITE, "storing %s failed: %s", what,
                    sqlite3_errmsg(rw));
        goto out;
    }
    ok = TRUE;
    goto out;
unwritable:
    *note = g_strdup_printf("note: %s were not stored: %s", what, reason);
    ok = TRUE;
out:
    if (!ok && query_db_store_full(rw, path, &reason, error))
        goto unwritable;
    /* written, or not to be: the next command computes them again */
    sqlite3_exec(db, clear, NULL, NULL, NULL);
    sqlite3_free(errmsg);
    sqlite3_close(rw); /* an open transaction is rolled back */
    return ok;
}
