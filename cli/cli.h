/* cli.h — the command line's helpers: options and operands, aligned text tables, JSON documents
 * streamed one row per line, and the end of a command's output.
 *
 * Every command uses these, so all commands look alike:
 *  - text output goes to stdout as aligned tables (values formatted by query.h);
 *  - JSON output goes to stdout; rows are streamed one per line, so a large result is never held
 *    twice in memory.
 * Errors as in query.h (QUERY_ERROR, one line). Single-threaded.
 */
#ifndef HEAPLENS_CLI_H
#define HEAPLENS_CLI_H

#include "query/progress.h"
#include "query/query.h"

#include <glib.h>
#include <jansson.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>

/* ---- command line ---------------------------------------------------------------------- */

typedef enum {
    QUERY_OPT_FLAG,  /* --name; target is a gboolean *, set to TRUE */
    QUERY_OPT_VALUE, /* --name VALUE or --name=VALUE; target is a const char **, set to a string
                      * borrowed from argv */
    QUERY_OPT_LIST,  /* the same, repeatable; target is a GPtrArray * each value (borrowed from
                      * argv) is appended to */
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
 * FILE may come in any order; "--" ends the options. --help and -h are always accepted. A value
 * given as the next argument may not look like an option (query_args_is_option_like: a value
 * forgotten, "-o --json"); one in --NAME=VALUE may. */
query_args_result query_args_parse(int argc, char **argv, const query_option *options,
                                   const char **file, GError **error);

/* TRUE when `value` is "--" or looks like a long option, "--NAME" or "--NAME=...": as an
 * option's value in the next argument it is a value forgotten, not a file name. */
gboolean query_args_is_option_like(const char *value);

/* query_args_parse as a command's body uses it: TRUE to go on; FALSE when the command is done,
 * with *status its exit status: 0 after --help (the usage printed), 1 on a bad command line
 * (*error set). */
gboolean query_args_take(int argc, char **argv, const query_option *options, const char **file,
                         int *status, GError **error);

/* The same for a command whose one operand is not a FILE: `operand` names it in the error
 * ("PID") and `operand_meaning` says what it is ("the process to ask"). */
query_args_result query_args_parse_operand(int argc, char **argv, const query_option *options,
                                           const char *operand, const char *operand_meaning,
                                           const char **value, GError **error);

/* Parses `text`, the value of option `option` of `command`, as one of names[0..n): *index is its
 * position. On failure sets a QUERY_ERROR_USAGE error that lists them ("'a', 'b' or 'c'"). */
gboolean query_args_parse_choice(const char *command, const char *option, const char *text,
                                 const char *const *names, guint n, guint *index, GError **error);

/* Parses `text`, a PID operand of `command`: a process id (1 .. INT32_MAX), else a
 * QUERY_ERROR_USAGE error "<command>: PID must be a process id, not '<text>'". */
/* `text` is on or off; otherwise "COMMAND: OPTION takes on or off, not 'TEXT'" (OPTION with its
 * dashes: record and attach say it so). */
gboolean query_args_check_on_off(const char *command, const char *option, const char *text,
                                 GError **error);
gboolean query_args_parse_pid(const char *command, const char *text, long *pid, GError **error);

/* The arguments of `command`, whose one operand is a PID (`operand_meaning` says which process),
 * as a command's body takes them (query_args_parse_operand, then query_args_parse_pid): TRUE with
 * *pid to go on; FALSE when the command is done, with *status its exit status: 0 after --help,
 * 1 on a bad command line or PID (*error set). */
gboolean query_args_take_pid(int argc, char **argv, const query_option *options,
                             const char *command, const char *operand_meaning, long *pid,
                             int *status, GError **error);

/* query_args_parse takes long options only: "-o X" and "-oX" become "--output X" and
 * "--output=X" (`report -o`, `import -o`). Returns a new argv (g_free it; its strings are borrowed
 * from `argv`, but the "--output=X" ones are owned by `owned`, a GPtrArray freeing with g_free). */
char **query_args_short_output_new(int argc, char **argv, GPtrArray *owned);

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

/* ---- JSON documents -------------------------------------------------------------------- */

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
/* The end of `attach`: prints the session's JSON `summary` (stolen; NULL: nothing) on stdout and
 * returns `status`, the command's exit status — or 1, with one line on stderr
 * (query_output_finish_written), when stdout could not take it: the --json asked for is lost. */
int query_summary_print(json_t *summary, int status);

/* Prints a note (the accuracy note of query_db_note_new): after the table on stdout for text
 * output; `on_stderr` (JSON output, so that stdout stays one JSON document; or a note about the
 * file rather than the answer, such as what a command computed could not be stored in it) on
 * stderr as "heaplens: note: ...". Does nothing for NULL. */
void query_note_print(const char *note, gboolean on_stderr);
/* Prints the recording's accuracy note (query_db_note_new), if any, as query_note_print does. */
gboolean query_db_note_print(sqlite3 *db, gboolean json, GError **error);

/* Flushes `out` and reports a write error (disk full, closed pipe) as QUERY_ERROR_IO. */
gboolean query_output_finish(FILE *out, GError **error);
/* The end of a command whose answer is a file it has written whole, `written` (export's
 * .gcdump, import's, record's and attach's database): such a command says what it wrote on
 * stderr, so that stdout holds only what the user asked for there, the --json document. A
 * closed stdout (`>&-`) with nothing printed is then no failure; one that loses the document is,
 * and the error (query_output_finish's) says that `written` is complete all the same. */
gboolean query_output_finish_written(FILE *out, const char *written, GError **error);

/* The end of a command that computed retained sizes (retention, roots, leaks, check), once its
 * answer is printed: the recording's note and the flush, then — last, so that a failure before
 * leaves the file as it was — the retained sizes stored into the file at `path`
 * (retention_commit, query/retention.h), then the leak holders found (leaks_commit,
 * query/leaks.h), and what that says (one note, on stderr: query_note_print). */
gboolean query_output_finish_retained(sqlite3 *db, const char *path,
                                      query_progress *progress, gboolean json,
                                      GError **error);

#endif /* HEAPLENS_CLI_H */
