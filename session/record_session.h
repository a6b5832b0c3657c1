/* record_session.h — the session of `heaplens record`: the writer started, the program run with
 * the collector loaded, signals passed on, its .NET descendants recorded with --children, the
 * databases finished and summarised (the picture is in record_session.c).
 *
 * The session says what happens on stderr as it happens (warnings, the closing summary line of
 * each database, `recording_summary_print`); the JSON summary is returned.
 * Errors: GError ** last, one line. Call from the main thread: it installs signal handlers.
 */
#ifndef HEAPLENS_SESSION_RECORD_SESSION_H
#define HEAPLENS_SESSION_RECORD_SESSION_H

#include <glib.h>
#include <jansson.h>

typedef struct record_options {
    const char *output;
    const char *snapshot; /* policy for HEAPLENS_SNAPSHOT, validated (recording_snapshot_option) */
    char *snapshot_owned; /* the cli's allocation behind `snapshot` */
    const char *children; /* --children[=PATTERN]: NULL off, "" every descendant */
    const char *mode;     /* --mode: "full" (default) or "sampled", for HEAPLENS_MODE */
    const char *stacks;   /* --stacks on|off: HEAPLENS_STACKS (NULL: the default, on) */
    const char *census;   /* --census on|off (sampled mode): HEAPLENS_CENSUS (NULL: the
                           * environment's, on by default) */
    gboolean handles; /* --handles: HEAPLENS_HANDLES=1 (full mode only) */
    const char *count; /* --count PATTERN (repeatable): ';'-joined, HEAPLENS_COUNT (NULL: none) */
    char *count_owned; /* the cli's allocation behind `count` */
    gboolean force, quiet, json;
    char **program; /* argv of the program, NULL-terminated, borrowed */
} record_options;

/* Records the program of `o`. FALSE with *error when nothing was recorded: a bad program or
 * output file, a writer or program that could not start (no database is left). TRUE otherwise,
 * with *exit_status the program's (128+N for a death by signal N; the program's status also when
 * a writer failed, which is said on stderr) and, with o->json, *summary the JSON summary to
 * print (new reference; with --children it holds "children"), else NULL. */
gboolean record_session_run(const record_options *o, int *exit_status, json_t **summary,
                            GError **error);

#endif /* HEAPLENS_SESSION_RECORD_SESSION_H */
