/* resident.h — the collector the runtime keeps after `attach --count` (clr-profiler-facts.md
 * §13: a profiler that recompiled code can never detach, and the runtime refuses any second
 * profiler), reached by a later `heaplens attach` over a socket of our own.
 *
 *   /tmp/heaplens-UID/resident.PID.sock   (directory 0700, owned by UID; the peer's uid checked)
 *
 * A client connects, writes the same client data as AttachProfiler's (attach_config.h), closes
 * its writing side, and reads one line: "ok" once the new session has started (its first
 * snapshot asked for, its counting requested: as ProfilerAttachComplete does), or "error TEXT".
 *
 * Who runs what: when an attach session ends and the runtime refuses the detach, the collector
 * thread turns every callback off and calls hl_resident_wait; a thread of ours (detached,
 * "heaplens-wait") joins the collector thread, gives the session's memory back
 * (hl_session_reset, once no GC is under way: a GC callback started before the mask changed may
 * still be running), then listens. A request starts a fresh session (counted or not) on that
 * thread, which then ends. The socket file is removed when the session starts and made again
 * when it ends. State: statics of this file (the runtime holds one profiler per process). */
#ifndef HEAPLENS_COLLECTOR_RESIDENT_H
#define HEAPLENS_COLLECTOR_RESIDENT_H

#include <stdbool.h>
#include <stddef.h>

struct hl_profiler;

/* The socket's path for a process of `uid`; false when it does not fit. */
bool hl_resident_socket_path(unsigned uid, long pid, char *out, size_t size);

/* Collector thread, at the end of an attach session the runtime would not detach: the session
 * is over, its callbacks off. Starts the waiting thread (above). */
void hl_resident_wait(struct hl_profiler *p);

/* Collector thread, before the end record of an attach session that will stay resident (--count,
 * or resident already): the socket listens from now on. `heaplens attach` exits once the writer
 * has that record, and a next `heaplens attach` started at once must find the socket, not a
 * runtime that refuses a second profiler; its request waits in the backlog until the waiting
 * thread (hl_resident_wait) takes this socket over and serves it. */
void hl_resident_listen_early(void);

/* Collector thread: the runtime did detach after all: the early socket goes. */
void hl_resident_unlisten(void);

/* Shutdown: the socket file goes with the process. */
void hl_resident_exit(void);

/* True once the collector has stayed resident: later sessions go dormant at their end too. */
bool hl_resident_is(void);

#endif /* HEAPLENS_COLLECTOR_RESIDENT_H */
