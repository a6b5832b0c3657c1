/* progress.h — "long work" progress on stderr for the query commands.
 *
 * One line, rewritten in place ("heaplens: retention: reading references 42%"), shown only when
 * it was asked for (--progress) or stderr is a terminal, and at most every 100 ms; finished with
 * query_progress_done, which clears the line (on a terminal) or ends it with a newline (otherwise).
 * Nothing is printed for work that ends within the first half second. Single-threaded.
 */
#ifndef HEAPLENS_QUERY_PROGRESS_H
#define HEAPLENS_QUERY_PROGRESS_H

#include <glib.h>
#include <stdint.h>

typedef struct query_progress query_progress;

/* A reporter for command `command`. `forced`: --progress was given (report even when stderr is
 * not a terminal, and also report how long each step took). */
query_progress *query_progress_new(const char *command, gboolean forced);
void query_progress_free(
    query_progress *p); /* accepts NULL; ends the line like query_progress_done */
G_DEFINE_AUTOPTR_CLEANUP_FUNC(query_progress, query_progress_free)

/* Work on `step` ("reading references"), `done` of `total` units (total 0: unknown). Cheap to
 * call often. Accepts p == NULL (does nothing). */
void query_progress_update(query_progress *p, const char *step, uint64_t done, uint64_t total);
/* The current step is over: with --progress, one line
 * "heaplens: <command>: <step>: 1.23 s (cpu 1.20 s)" (wall-clock and CPU time of the step). */
void query_progress_step_done(query_progress *p);
/* Clears the line. */
void query_progress_done(query_progress *p);

/* Adapter for the analysis library's callback (an_progress_fn): ctx is a query_progress *. */
void query_progress_analysis(void *ctx, const char *phase, uint64_t done, uint64_t total);

#endif /* HEAPLENS_QUERY_PROGRESS_H */
