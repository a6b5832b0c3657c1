/* session.h — how `heaplens snapshot PID` finds the recording of a running process.
 *
 * While `heaplens record` runs a program it keeps a session file named after the program's pid
 * in a private directory: $XDG_RUNTIME_DIR/heaplens (or /tmp/heaplens-<uid> when there is no
 * runtime directory). The directory must be 0700 and ours; anything else is refused, so another
 * local user can neither read nor plant a session. The file holds two lines:
 *   control <path of the writer's control socket>
 *   db <absolute path of the database being written>
 */
#ifndef HEAPLENS_SESSION_H
#define HEAPLENS_SESSION_H

#include <glib.h>
#include <sys/types.h>

typedef struct query_session {
    char *control; /* socket path */
    char *db;
} query_session;

/* Writes the session file of `pid` (0600), after removing those of pids that no longer exist
 * (a recorder killed before it could). */
gboolean query_session_write(pid_t pid, const char *control, const char *db, GError **error);
/* Reads it; fails with one clear line when there is none. Free the fields with g_free. */
gboolean query_session_read(pid_t pid, query_session *session, GError **error);
/* Like query_session_read, but while the process has the collector loaded and no session file
 * yet (its writer is starting), waits for the file up to `timeout_ms`. */
gboolean query_session_wait(pid_t pid, unsigned timeout_ms, query_session *session, GError **error);
void query_session_remove(pid_t pid);
void query_session_clear(query_session *session);

/* /tmp/heaplens-UID: short whatever TMPDIR is, for the sockets of a session whose TMPDIR is too
 * long for a unix socket (recording_private_dir), and the resident collector's
 * (collector/attach_config.h). */
#define SESSION_SHORT_DIR_FMT "/tmp/heaplens-%u"
/* `dir` (taken: freed on failure), created 0700 if needed, and returned once it is a real
 * directory of this user that nobody else can enter; NULL with one line otherwise. */
char *session_private_dir_make(char *dir, GError **error);

#endif /* HEAPLENS_SESSION_H */
