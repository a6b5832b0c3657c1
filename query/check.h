/* check.h — memory assertions over a recording, for CI (`heaplens check`): each holds or not,
 * with what was expected, what was found and a query to see it.
 *
 *   --max-live TYPE=N       objects of TYPE in the last snapshot (or, without snapshots, alive
 *                           after the last GC) at most N
 *   --max-live TYPE=N@NAME  objects of TYPE alive after the last GC finished before the program
 *                           wrote checkpoint NAME (checkpoints.h; refused for a checkpoint
 *                           written before the first GC)
 *   --max-allocated TYPE=N  allocations of TYPE over the whole run at most N (estimates rounded
 *                           in sampled and attach recordings, as `allocations` shows them)
 *   --max-allocated TYPE=N@FROM..TO  ... in the GC intervals between two checkpoints
 *                           (checkpoint_range), as `allocations --between` shows them
 *   --max-retained TYPE=B   bytes TYPE retains in the last snapshot at most B (suffixes K, M, G:
 *                           KiB, MiB, GiB); computes and stores retained sizes as `retention`
 *   --no-leaks              `leaks` flags no suspect
 *   --sql "SELECT ..."      the query (one statement that reads) returns no row
 *
 * TYPE is a full name or one without its namespaces, as `roots --type` takes it; a type the
 * recording never saw has 0 objects. An assertion the recording cannot decide is a result that
 * never holds (check_result.undecided says why and how to record what it needs), not an error,
 * so that every other assertion is still decided: --no-leaks with fewer than two snapshots,
 * --max-retained without one, --max-live with no GC and no snapshot, at a checkpoint written
 * before the first GC, or at a GC without a snapshot in a sampled recording that follows its
 * samples (live_objects lists the samples' objects alone there), --max-allocated in a
 * recording made with --census off (run.flags census-off: small objects only estimated, a type
 * no sample hit at 0), and --max-allocated within its limit in a sampled or attach recording
 * whose range takes in allocations no census counted (after the last GC; a GC without
 * gcs.census_objects): there too only samples tell (over the limit by its exact part alone it
 * fails, and says what it compared). Errors: GError ** last
 * (QUERY_ERROR_USAGE for a bad assertion), one line. Single-threaded.
 */
#ifndef HEAPLENS_QUERY_CHECK_H
#define HEAPLENS_QUERY_CHECK_H

#include <glib.h>
#include <sqlite3.h>
#include <stdint.h>

typedef enum {
    CHECK_MAX_LIVE,
    CHECK_MAX_ALLOCATED,
    CHECK_MAX_RETAINED,
    CHECK_NO_LEAKS,
    CHECK_SQL,
} check_kind;

typedef struct check_result {
    char *assertion; /* as given: "--max-live App.Leak=100" */
    gboolean ok;
    char *expected;  /* "at most 100" */
    char *found;     /* "1,200 objects of App.Leak in snapshot 7 (GC 7)" */
    char *query;     /* a command that shows it: sqlite3 FILE "SELECT ..." or heaplens ... */
    int64_t value, limit; /* the numbers compared (value: rows for --sql); limit -1 for none */
    gboolean retention;   /* retained sizes were computed (the caller commits them) */
    gboolean type_unknown; /* the recording has no type of that name: an assertion that holds
                            * may hold only because the name is misspelt (said with it) */
    char *undecided; /* NULL when decided; else why the recording cannot decide it and how to
                      * record what it needs ("one.db has 1 heap snapshot ..."): ok is FALSE,
                      * and expected, found and query are NULL */
} check_result;

/* Evaluates one assertion of kind `kind` with `value` (NULL for --no-leaks) on the recording at
 * `path`, open as `db` (query_db_open). Fills *out (release with check_result_clear, also after
 * a failure): decided (ok or not), or undecided (a recording without the snapshots or GCs it
 * needs, above). FALSE with an error when the assertion cannot be evaluated (a bad value, a
 * checkpoint the recording does not have, SQL that does not run, a damaged file).
 * `*lower_bounds` is whether the recording holds lower bounds (query_db_lower_bounds: an "at
 * most" that holds there is undecided), kept by the caller for all the assertions of one
 * recording: -1 before the first, which reads it from the file when it needs it; 0 or 1 after. */
gboolean check_eval(sqlite3 *db, const char *path, check_kind kind, const char *value,
                    int *lower_bounds, check_result *out, GError **error);
void check_result_clear(check_result *r);

#endif /* HEAPLENS_QUERY_CHECK_H */
