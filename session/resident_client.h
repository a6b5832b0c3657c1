/* resident_client.h — `heaplens attach` to a process whose collector stayed loaded after an
 * `attach --count` (collector/resident.h): the same client data as AttachProfiler's, sent over
 * the collector's own socket instead of the runtime's diagnostic IPC. Main thread. */
#ifndef HEAPLENS_SESSION_RESIDENT_CLIENT_H
#define HEAPLENS_SESSION_RESIDENT_CLIENT_H

#include <glib.h>
#include <stdint.h>
#include <sys/types.h>

/* Whether process `pid` has a resident collector listening: its socket, in a directory of the
 * process's user alone, answers a connection from that very process (a socket left by an exited
 * process of the same pid does not). */
gboolean resident_client_present(pid_t pid);

/* Sends `client_data` to the resident collector of `pid` and waits (at most `timeout_ms`) for
 * its answer: TRUE when it began the session, FALSE with *error (one line) when it refused or
 * could not be reached. */
gboolean resident_client_attach(pid_t pid, const char *client_data, uint32_t timeout_ms,
                                GError **error);

#endif /* HEAPLENS_SESSION_RESIDENT_CLIENT_H */
