/* query.h — helpers shared by every `heaplens` command: argument parsing, formatting, aligned
 * text tables, JSON emission, opening a database and the accuracy note.
 *
 * Every command uses these, so all commands look and fail alike:
 *  - errors are GError ** last; messages are one line, printed by query_error_report as
 *    "heaplens: <message>" on stderr, and the command exits 1;
 *  - text output goes to stdout as aligned tables, sizes in binary units ("1.5 MiB"), counts with
 *    thousands separators ("1,234,567");
 *  - JSON output goes to stdout; rows are streamed one per line, so a large result is never held
 *    twice in memory.
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

/* ---- command line ---------------------------------------------------------------------- */

typedef enum {
    QUERY_OPT_FLAG,  /* --name; target is a gboolean *, set to TRUE */
    QUERY_OPT_VALUE, /* --name VALUE or --name=VALUE; target is a const char **, set to a string
                      * borrowed from argv */
} query_opt_kind;

typedef struct query_option {
    const char *name; /* long name without the dashes; NULL ends a table */
    query_opt_kind kind;
    void *target;
} query_option;

typedef enum {
    QUERY_ARGS_OK,    /* parsed; *file is set */
    QUERY_ARGS_HELP,  /* --help or -h was given; the command's usage has been printed on stdout */
    QUERY_ARGS_ERROR, /* bad command line; *error is set (QUERY_ERROR_USAGE) */
} query_args_result;

/* Parses the arguments of a command that takes one FILE and the options in `options` (a table
 * ended by a NULL name). argv[0] is the command name, as the command table passes it. Options and
 * FILE may come in any order; "--" ends the options. --help and -h are always accepted. */
query_args_result query_args_parse(int argc, char **argv, const query_option *options,
                                   const char **file, GError **error);

/* The same for a command whose one operand is not a FILE: `operand` names it in the error
 * ("PID") and `operand_meaning` says what it is ("the process to ask"). */
query_args_result query_args_parse_operand(int argc, char **argv, const query_option *options,
                                           const char *operand, const char *operand_meaning,
                                           const char **value, GError **error);

/* Parses `text`, the value of option `option` of `command`, as a decimal integer in
 * [min, max]. On failure sets a QUERY_ERROR_USAGE error that names the option and what
 * it expects (`what`, e.g. "a positive number"). */
gboolean query_args_parse_uint(const char *command, const char *option, const char *text,
                               uint64_t min, uint64_t max, const char *what, uint64_t *value,
                               GError **error);

/* Parses `text`, the value of option `option` of `command`, as one of names[0..n): *index is its
 * position. On failure sets a QUERY_ERROR_USAGE error that lists them ("'a', 'b' or 'c'"). */
gboolean query_args_parse_choice(const char *command, const char *option, const char *text,
                                 const char *const *names, guint n, guint *index, GError **error);

/* Parses `text`, a PID operand of `command`: a process id (1 .. INT32_MAX), else a
 * QUERY_ERROR_USAGE error "<command>: PID must be a process id, not '<text>'". */
gboolean query_args_parse_pid(const char *command, const char *text, long *pid, GError **error);

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
/* Generation as stored (SCHEMA.md): "gen0", "gen1", "gen2", "loh", "poh", "nongc"; other
 * values "gen<N>". Returns a static string or buf. */
const char *query_generation_name(int64_t generation, char buf[QUERY_FORMAT_MAX]);

/* ---- text tables ----------------------------------------------------------------------- */

typedef enum { QUERY_ALIGN_LEFT, QUERY_ALIGN_RIGHT } query_align;

typedef struct query_column {
    const char *header;
    query_align align;
    const char *gap; /* printed before this column on data rows; NULL: two spaces. The header
                      * row gets as many spaces. Ignored for the first column. */
} query_column;

typedef struct query_table query_table;

/* A table of `n_columns` columns; `columns` is borrowed and must outlive the table. Cells are
 * copied once into the table; the widths are known only when every row is in, so the table holds
 * its (formatted) rows until query_table_print. The last column is never padded. */
query_table *query_table_new(const query_column *columns, size_t n_columns);
/* Appends a cell to the current row; a row is complete after n_columns cells. NULL prints "-". */
void query_table_add(query_table *table, const char *text);
void query_table_addf(query_table *table, const char *format, ...) G_GNUC_PRINTF(2, 3);
/* Rows added so far (complete ones). */
size_t query_table_rows(const query_table *table);
/* Prints the header and the rows. */
void query_table_print(const query_table *table, FILE *out);
void query_table_free(query_table *table);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(query_table, query_table_free)

/* ---- JSON ------------------------------------------------------------------------------ */

/* A JSON string for `text` (new reference): null for NULL; invalid UTF-8 is repaired with
 * U+FFFD so that the output is always valid JSON. */
json_t *query_json_string(const char *text);
/* Column `column` of the current row of `stmt` as JSON (new reference): integer, real, string
 * or null. */
json_t *query_json_column(sqlite3_stmt *stmt, int column);

/* Streams {"<head fields>..., "rows":[ row, row, ... ]} with one row per line. */
typedef struct query_json_rows {
    FILE *out;
    gboolean any;
} query_json_rows;

/* Starts the document. `head` (borrowed, may be NULL) is an object whose fields are written
 * before "rows". */
void query_json_rows_begin(query_json_rows *rows, FILE *out, const json_t *head);
/* Writes one row; steals `row`. */
void query_json_rows_add(query_json_rows *rows, json_t *row);
void query_json_rows_end(query_json_rows *rows);
/* Writes a whole document, indented, then a newline. */
void query_json_print(const json_t *value, FILE *out);

/* Flushes `out` and reports a write error (disk full, closed pipe) as QUERY_ERROR_IO. */
gboolean query_output_finish(FILE *out, GError **error);

/* ---- the database ---------------------------------------------------------------------- */

/* Opens a heaplens database read-only (store_db_open_readonly: a missing file, a file that is not
 * SQLite, another SQLite file or another schema version fail with one line), builds its
 * generation history when no command has yet (damaged changes fail), and checks the small
 * tables (query_db_check_small_tables). Close with sqlite3_close. */
sqlite3 *query_db_open(const char *path, GError **error);
/* Prepares `sql`; NULL and a QUERY_ERROR_SQLITE error on failure. */
sqlite3_stmt *query_db_prepare(sqlite3 *db, const char *sql, GError **error);
/* Steps `stmt`: TRUE with *row set when a row is ready or the statement is done (*row FALSE);
 * FALSE and a QUERY_ERROR_SQLITE error when SQLite failed (a damaged file, for instance). */
gboolean query_db_step(sqlite3_stmt *stmt, gboolean *row, GError **error);
/* Runs `sql`, which yields one integer (NULL counts as 0), into *value. */
gboolean query_db_int(sqlite3 *db, const char *sql, int64_t *value, GError **error);
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
/* Prints the note, if any: after the table on stdout for text output; on stderr for JSON output
 * (so that stdout stays one JSON document). */
gboolean query_db_note_print(sqlite3 *db, gboolean json, GError **error);

/* Milliseconds of the monotonic clock: deadlines and waits. */
static inline uint64_t query_now_ms(void)
{
    return (uint64_t)g_get_monotonic_time() / 1000;
}

#endif /* HEAPLENS_QUERY_H */
