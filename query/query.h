/* query.h — what the command side shares, from the command line down to the query tools: the
 * error domain, a number the user gave, values as text, JSON values, reading a recording and its
 * accuracy note.
 *
 * Every part uses these, so all commands look and fail alike:
 *  - errors are GError ** last; messages are one line, printed by query_error_report as
 *    "heaplens: <message>" on stderr, and the command exits 1;
 *  - sizes in binary units ("1.5 MiB"), counts with thousands separators ("1,234,567").
 * The command line's own helpers (options, tables, streamed JSON rows) are in cli/cli.h.
 * Single-threaded, like the whole of `heaplens` (except inside snapshot_graph_load).
 */
#ifndef HEAPLENS_QUERY_H
#define HEAPLENS_QUERY_H

#include <glib.h>
#include <jansson.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>

#define QUERY_ERROR (query_error_quark())
GQuark query_error_quark(void);
typedef enum {
    QUERY_ERROR_USAGE,     /* bad command line */
    QUERY_ERROR_NOT_FOUND, /* the thing asked for is not in the recording (a GC, a thread) */
    QUERY_ERROR_SQLITE,    /* SQLite failed while reading */
    QUERY_ERROR_IO,        /* writing the output failed */
    QUERY_ERROR_DAMAGED,   /* the file holds what no recording holds (query_db_damaged) */
} QueryError;

/* Prints `error`'s message as one line "heaplens: <message>" on stderr (newlines in the message
 * become spaces). Returns 1, the exit status of a failed command. */
int query_error_report(const GError *error);

/* Parses `text`, the value of option `option` of `command`, as a decimal integer in
 * [min, max]. On failure sets a QUERY_ERROR_USAGE error that names the option and what
 * it expects (`what`, e.g. "a positive number"). */
gboolean query_args_parse_uint(const char *command, const char *option, const char *text,
                               uint64_t min, uint64_t max, const char *what, uint64_t *value,
                               GError **error);

/* ---- arithmetic on values read from a file ------------------------------------------------ */

/* a + b and a - b clamped to [INT64_MIN, INT64_MAX]: sums of sizes, counts and times read from a
 * recording never overflow, whatever a damaged or hand-edited file holds (a clamped total is
 * wrong, but visibly so, and never undefined). */
static inline int64_t query_add_saturating(int64_t a, int64_t b)
{
    int64_t r;
    return __builtin_add_overflow(a, b, &r) ? (b > 0 ? INT64_MAX : INT64_MIN) : r;
}
static inline int64_t query_sub_saturating(int64_t a, int64_t b)
{
    int64_t r;
    return __builtin_sub_overflow(a, b, &r) ? (b < 0 ? INT64_MAX : INT64_MIN) : r;
}

/* ---- formatting ------------------------------------------------------------------------ */

#define QUERY_FORMAT_MAX 48 /* enough for any value formatted below */

/* "512 B", "1.5 KiB", "12.0 MiB", "3.2 GiB" (one decimal from KiB up). Returns buf. */
char *query_size_format(int64_t bytes, char buf[QUERY_FORMAT_MAX]);
/* "1,234,567". Returns buf. */
char *query_count_format(int64_t count, char buf[QUERY_FORMAT_MAX]);
/* Nanoseconds as milliseconds with three decimals: "0.412". Returns buf. */
char *query_ms_format(int64_t ns, char buf[QUERY_FORMAT_MAX]);
/* Nanoseconds as a person reads a duration, about three figures, in the unit that fits:
 * "850 ns", "4.2 µs", "23 ms", "1.2 s", "5 min 15 s", "2 h 3 min". For times that may run from
 * microseconds to minutes (waits); JSON keeps the exact nanoseconds. Returns buf. */
char *query_duration_format(int64_t ns, char buf[QUERY_FORMAT_MAX]);
/* Generation as stored (SCHEMA.md): "gen0", "gen1", "gen2", "loh", "poh", "nongc"; other
 * values "gen<N>". Returns a static string or buf. */
const char *query_generation_name(int64_t generation, char buf[QUERY_FORMAT_MAX]);

/* ---- JSON values ----------------------------------------------------------------------- */

/* A value the recording does not have (SQL NULL), in the int64_t fields of what the query tools
 * return; JSON null. */
#define QUERY_NULL INT64_MIN
/* QUERY_NULL as null, anything else as an integer (new reference). */
json_t *query_json_value(int64_t value);
/* QUERY_NULL as null, anything else as a boolean, true when not 0 (new reference). */
json_t *query_json_flag(int64_t value);

/* A JSON string for `text` (new reference): null for NULL; invalid UTF-8 is repaired with
 * U+FFFD so that the output is always valid JSON. */
json_t *query_json_string(const char *text);
/* Column `column` of the current row of `stmt` as JSON (new reference): integer, real, string
 * or null. */
json_t *query_json_column(sqlite3_stmt *stmt, int column);

/* ---- the database ---------------------------------------------------------------------- */

/* Opens a heaplens database read-only (store_db_open_readonly: a missing file, a file that is not
 * SQLite, another SQLite file or another schema version fail with one line), sums up its
 * objects when no command has yet (object_spans, object_totals: store_history_summarize_file;
 * damaged packed rows fail), and checks the small tables (query_db_check_small_tables). The
 * objects rows one by one are built later, by query_db_objects_ensure. Close with
 * sqlite3_close. */
sqlite3 *query_db_open(const char *path, GError **error);
/* TRUE when `a` and `b` both exist and are one file (after following links, by device and
 * inode): a command comparing files (`leaks --with`, `diff --to-file`) refuses a file given
 * twice, which compared with itself shows nothing changing. */
gboolean query_files_same(const char *a, const char *b);
/* For the tools that read the generation history of objects one by one (the fate of sampled
 * objects: `stacks --by survived|mid-life`): builds the objects rows and the generation history
 * of `db`'s file when no command has yet (store_history_build_file), once, and then drops the
 * connection's TEMP `objects` (store_objects_view_attach: the snapshot tools read the packed
 * objects through it and build nothing); a file this user may not write keeps the views. Call
 * it with no statement of `db` running (the build's commit waits for them). */
gboolean query_db_objects_ensure(sqlite3 *db, GError **error);
/* Whether `db` holds object_spans and object_totals (the first read of this heaplens wrote
 * them; a file read first by an older one, or one this user may not write, has none: the tools
 * then read object_generations and objects); with `weights`, also the weights of a sampled
 * recording's followed samples in the spans (object_totals.weights: a file summed up before
 * they were, or whose samples do not weigh one object each, has none). */
gboolean query_db_has_spans(sqlite3 *db, gboolean weights, gboolean *has, GError **error);
/* When the last failure of `db` (a read-only connection) was a write of SQLite's temporary
 * files (a full disk or file size limit where SQLITE_TMPDIR, TMPDIR or /tmp points): TRUE and a
 * QUERY_ERROR_IO error that names the directory and says the recording is intact. */
gboolean query_db_temp_failed(sqlite3 *db, GError **error);
/* Prepares `sql`; NULL and a QUERY_ERROR_SQLITE error on failure. */
sqlite3_stmt *query_db_prepare(sqlite3 *db, const char *sql, GError **error);
/* Steps `stmt`: TRUE with *row set when a row is ready or the statement is done (*row FALSE);
 * FALSE and a QUERY_ERROR_SQLITE error when SQLite failed (a damaged file, for instance). */
gboolean query_db_step(sqlite3_stmt *stmt, gboolean *row, GError **error);
/* Column `column` of the current row of `stmt` as an integer, QUERY_NULL for NULL; as a flag:
 * 0 or 1, QUERY_NULL for NULL. */
int64_t query_db_column_value(sqlite3_stmt *stmt, int column);
int64_t query_db_column_flag(sqlite3_stmt *stmt, int column);
/* Steps `stmt` (prepared, bound; NULL: its preparation failed and *error is set) to its end and
 * finalizes it: a new array of elements of `size` bytes, one per row, each zeroed and then filled
 * by `read` from the current row; `clear` (may be NULL) is the array's clear function. NULL and
 * a QUERY_ERROR_SQLITE error when SQLite failed. */
GArray *query_db_rows_read(sqlite3_stmt *stmt, guint size,
                           void (*read)(sqlite3_stmt *stmt, void *element),
                           GDestroyNotify clear, GError **error);
/* Runs `sql`, which yields one integer (NULL counts as 0), into *value. */
gboolean query_db_int(sqlite3 *db, const char *sql, int64_t *value, GError **error);
/* Opens the file `path` of `db` to store what a command computed (retained sizes,
 * inspections): read-write, in a write transaction (`begin`: "BEGIN IMMEDIATE", after any
 * PRAGMA the writer wants), the file checked for damage first (store_db_damage_new, filling
 * *check for store_db_commit_sound). NULL with *reason (a note, not an error) when the file
 * cannot take them: a recording still being written, a read-only or busy file, a full disk;
 * NULL with a QUERY_ERROR_DAMAGED error naming `what` when it is damaged (never write into
 * damage: it would only get worse), a QUERY_ERROR_SQLITE error ("storing <what> failed") when
 * SQLite failed. */
struct store_db_check;
struct query_progress;
sqlite3 *query_db_open_store(sqlite3 *db, const char *path, const char *begin, const char *what,
                             struct store_db_check *check, struct query_progress *progress,
                             char **reason, GError **error);
/* After a failed write through `rw` (query_db_open_store's): TRUE, with *reason set and *error
 * cleared, when a write failed (SQLITE_FULL: no space; SQLITE_IOERR_WRITE: a quota, the file
 * size limit, a failing disk), rolled back whole: storing what a command
 * computed only saves the next command the work, so a full disk is a note, as a read-only file
 * is, and the command answers all the same. FALSE otherwise (the error stands). */
gboolean query_db_store_full(sqlite3 *rw, const char *path, char **reason, GError **error);
/* Before a command answers from what an earlier one stored in the file (retained sizes, leak
 * holders, inspections) instead of reading the snapshot again: the file found intact, as the
 * command that reads the snapshot would find it damaged. store_db_damage_new's test, so at no cost
 * while the file is as the last heaplens command that wrote it left it (file_check); else
 * PRAGMA quick_check (0.7-1.8 s on a 300-500 MB recording), once per connection. FALSE with a
 * QUERY_ERROR_DAMAGED error "<file> is damaged (...)" when it is not intact. */
gboolean query_db_stored_sound(sqlite3 *db, GError **error);
/* Whether `schema` ("main": the file, "temp": this command's) of `db` has table `table`. */
gboolean query_db_table_exists(sqlite3 *db, const char *schema, const char *table,
                               gboolean *exists, GError **error);
/* Writes the rows a command kept in its TEMP table `table` (what it computed: inspections, leak
 * holders) into the file's table of the same name, created by `create` (its CREATE TABLE IF NOT
 * EXISTS main.`table`, the same columns in the same order), replacing rows of the same key: one
 * transaction of query_db_open_store, the file checked first; the TEMP rows are emptied, written
 * or not. Call it last, after every read and the output. TRUE when written or nothing was kept;
 * TRUE with a new one-line *note ("note: <what> were not stored: ...") when the file cannot be
 * written (a full disk too: query_db_store_full); FALSE with *error when it is damaged
 * (QUERY_ERROR_DAMAGED) or the write failed otherwise: nothing was written. */
gboolean query_db_kept_commit(sqlite3 *db, const char *path, const char *table,
                              const char *create, const char *what,
                              struct query_progress *progress, char **note, GError **error);
/* ---- damage: values no recording holds ------------------------------------------------ */

/* Sets a QUERY_ERROR_DAMAGED error "the database is damaged: <what>" (printf-style `format`):
 * how every command says that what it read cannot be a recording (a negative size or count,
 * text where a number belongs, an unknown generation, a snapshot missing objects its header
 * counts). Returns FALSE. */
gboolean query_db_damaged(GError **error, const char *format, ...) G_GNUC_PRINTF(2, 3);

typedef enum {
    QUERY_VALUE_INTEGER,    /* any integer */
    QUERY_VALUE_NATURAL,    /* an integer >= 0: a size, a count, an id, a time */
    QUERY_VALUE_GENERATION, /* 0..5 (SCHEMA.md, "Generations") */
    QUERY_VALUE_CONDEMNED,  /* 0..2: the generation a GC condemned */
} query_value_kind;

typedef struct query_value_check {
    const char *column; /* NULL ends a table */
    query_value_kind kind;
    gboolean nullable; /* NULL is a value the recording may hold there */
} query_value_check;

/* Checks every row of `table` (those matching `where`, SQL, or all when NULL) against `checks`
 * in one pass: the first value that breaks one is a query_db_damaged error naming the table,
 * the column and the value. For the tables a command reads whole anyway, or small ones (a row
 * per GC); never for the per-object tables (those are checked as they are read). */
gboolean query_db_check_values(sqlite3 *db, const char *table, const char *where,
                               const query_value_check *checks, GError **error);
/* The tables of a row per GC or fewer (run, gcs, gc_generations, snapshots, sampling), which
 * every command reads some of: checked whole by query_db_open. */
gboolean query_db_check_small_tables(sqlite3 *db, GError **error);
/* alloc_counts, for the commands that sum it (allocations, info, report, stacks). */
gboolean query_db_check_alloc_counts(sqlite3 *db, GError **error);

/* A group of rows of object_generations AS og LEFT JOIN objects AS o (ON o.id = og.object_id)
 * GROUP BY og.generation, o.type_id (and more) that no recording holds: SQL true for it. Every
 * object_generations row has its objects row, sizes are not negative integers (SUM of text is a
 * real), generations 0..5, type ids numbers (text orders after every number: outside the
 * range). Per group, it costs two aggregates per row (MIN, COUNT) in a scan the command makes
 * anyway (survivors, report). */
#define QUERY_LIVE_GROUP_DAMAGED_SQL                                                              \
    "(MIN(o.size) < 0 OR typeof(SUM(o.size)) NOT IN ('integer', 'null')"                           \
    " OR COUNT(o.id) <> COUNT(*) OR NOT (og.generation BETWEEN 0 AND 5)"                          \
    " OR NOT (coalesce(o.type_id, 0) BETWEEN 0 AND 4294967295))"

/* In one scan of `objects`: its rows (*objects), their bytes (*bytes) and the objects alive when
 * the recording ended (*alive: tracked objects never collected, and the allocations after the
 * last GC, which no GC judged; `heaplens info` and `report` both say it). Each pointer may be
 * NULL. A size that is negative or not a number, or a died_gc that is not a number, is damage
 * (query_db_damaged). */
gboolean query_db_objects_totals(sqlite3 *db, int64_t *objects, int64_t *bytes, int64_t *alive,
                                 GError **error);

/* The accuracy note for this recording: one line such as "note: 1,234 allocations, 2 GCs were
 * lost (the writer fell behind); counts are lower bounds" when the collector counted losses
 * (allocs_dropped, gcs_dropped, snapshots_dropped, gc_events_dropped; why: run.loss), threads
 * went untracked, GCs were discarded, or the run is not 'complete'; NULL (and no error) when the
 * recording is complete and nothing was lost. Free with g_free. */
char *query_db_note_new(sqlite3 *db, GError **error);
/* Whether that note says "counts are lower bounds" (data was lost, or the run did not end
 * complete); FALSE with `error` set when the file cannot be read. */
gboolean query_db_lower_bounds(sqlite3 *db, gboolean *lower, GError **error);

/* GCs the program ran that the recording lost: gcs_dropped (never sent), or more when the
 * collector's count (program_gcs) says so: GCs sent but never stored (a writer killed or out of
 * disk had them) are not in gcs_dropped. Incomplete GCs discarded are not counted (said apart).
 * 0 when nothing says a GC was lost. */
gboolean query_db_gcs_lost(sqlite3 *db, int64_t *lost, GError **error);

/* Small-object allocations the census of gen0 counted that the recording lost along with GCs
 * (lost, or discarded incomplete): the collector's totals (counters census_allocs and
 * census_bytes, stream version 6 on) less what alloc_counts holds of them (flags 2), never
 * below 0. Not `known` (all 0) when there is no total: full mode, --census off, older
 * recordings, no census count yet. The counters are read in one statement, and the census
 * rows are summed only when GCs were lost. */
typedef struct query_census_lost {
    gboolean known;
    int64_t allocs, bytes;
    int64_t gcs; /* the GCs lost or discarded that took them */
} query_census_lost;
gboolean query_db_census_lost(sqlite3 *db, query_census_lost *lost, GError **error);

/* Milliseconds of the monotonic clock: deadlines and waits. */
static inline uint64_t query_now_ms(void)
{
    return (uint64_t)g_get_monotonic_time() / 1000;
}

#endif /* HEAPLENS_QUERY_H */
