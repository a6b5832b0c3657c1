/* attach_session.h — the session of `heaplens attach PID`: the collector loaded into a running
 * .NET process through its diagnostic socket (attach_ipc.h), recorded until a deadline, a signal
 * or its exit, then detached; the process runs on (the picture is in attach_session.c).
 *
 * The session says what happens on stderr as it happens (attached, detaching, the closing summary
 * line); the JSON summary is returned. Errors: GError ** last, one line. Call from the main
 * thread: it blocks the ending signals (attach_session_ending_signals) while it runs. The first
 * ends the session: the detach takes the last snapshot. A second during the detach (not the
 * first sent twice: coreutils `timeout` signals heaplens and then its process group) detaches at
 * once, without it (loss final-snapshot-missed). One that comes once the detach is over is
 * discarded when the mask is restored, so that it cannot cut the summary off.
 */
#ifndef HEAPLENS_SESSION_ATTACH_SESSION_H
#define HEAPLENS_SESSION_ATTACH_SESSION_H

#include <glib.h>
#include <jansson.h>
#include <signal.h>
#include <stdint.h>

#define ATTACH_TIMEOUT_MS 10000 /* the runtime's wait for the collector, by default */

typedef struct attach_options {
    long pid;             /* the process; not heaplens itself */
    const char *output;   /* -o FILE; NULL: heaplens-COMM-PID-TIME.db */
    const char *snapshot; /* a valid --snapshot policy (recording_snapshot_policy_valid), or NULL */
    uint64_t duration;    /* seconds; 0: until Ctrl-C or the process's exit */
    uint64_t timeout;     /* seconds the runtime may take to load the collector */
    const char *count;    /* --count patterns, ';'-joined (collector/rejit.h), or NULL */
    gboolean force, quiet, json;
    gboolean no_strings;  /* --no-strings: snapshots keep strings' lengths and hashes only */
    gboolean no_stacks;   /* --stacks off: no allocation samples */
    const char *census;   /* --census "on" or "off" (the census of gen0); NULL: the target's
                           * HEAPLENS_CENSUS decides, on by default */
} attach_options;

/* The signals that end a session: SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2. */
void attach_session_ending_signals(sigset_t *set);

/* Discards those of `set` pending (blocked) in this thread or process: for a caller that keeps
 * them blocked past attach_session_run until it has printed the JSON summary. */
void attach_session_signals_discard(const sigset_t *set);

/* Attaches to o->pid, records, detaches. FALSE with *error when the attach was refused or could
 * not start (nothing is left: no database, no session file). TRUE otherwise with *status, the
 * exit status (1: the session did not end cleanly, or the writer failed; both said on stderr)
 * and, with o->json, *summary the JSON summary to print (new reference), else NULL. */
gboolean attach_session_run(const attach_options *o, int *status, json_t **summary,
                            GError **error);

#endif /* HEAPLENS_SESSION_ATTACH_SESSION_H */
