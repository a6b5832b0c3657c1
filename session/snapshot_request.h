/* snapshot_request.h — a heap snapshot of a running, recorded program, now: the request of
 * `heaplens snapshot PID`, sent to the writer of its recording (found by its session file,
 * session.h), which forwards it to the collector (protocol in store/README.md).
 *
 * Errors: GError ** last, one line: no such session, the writer unreachable, the time limit, a
 * snapshot taken but not stored (which and why). Blocks until the answer; single-threaded.
 */
#ifndef HEAPLENS_SESSION_SNAPSHOT_REQUEST_H
#define HEAPLENS_SESSION_SNAPSHOT_REQUEST_H

#include <glib.h>
#include <stdint.h>

typedef struct snapshot_answer {
    unsigned snapshot, gc;
    unsigned long long objects, ms; /* when `timed`: objects and ms from request to commit */
    gboolean timed;                 /* the writer said how many objects and how long */
    char *db;                       /* the recording it is stored in (g_free) */
} snapshot_answer;

/* Asks the recording of process `pid` for a snapshot and waits for the answer: up to `timeout`
 * seconds of silence (progress restarts the wait), or in all with `hard`. */
gboolean snapshot_request_send(long pid, uint64_t timeout, gboolean hard, snapshot_answer *answer,
                               GError **error);

#endif /* HEAPLENS_SESSION_SNAPSHOT_REQUEST_H */
