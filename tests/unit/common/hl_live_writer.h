/* hl_live_writer.h — tests of a recording still being written: the real writer serving in a
 * thread of its own while the test plays its collector (and its readers) in another, and a
 * bounded wait for what the writer committed.
 *
 * The writer's progress is observed in its file, never guessed with a sleep: a test that needs
 * "the writer has taken the collector's connection and GC 1" waits until the file holds GC 1.
 */
#ifndef HEAPLENS_HL_LIVE_WRITER_H
#define HEAPLENS_HL_LIVE_WRITER_H

#include "store/store.h"

#include <glib.h>
#include <stdint.h>

/* The real writer serving one end of a connection in a thread of its own, as a descendant's
 * writer does (store_writer_serve_connection, no control socket); the test is its collector:
 *
 *     hl_live_writer a = {.w = store_writer_create(path, NULL, &error), .conn = sv[0],
 *                         .stop = stop[0]};
 *     GThread *t = g_thread_new("writer", hl_live_writer_thread, &a);
 *     write_all(sv[1], ...); ... close(sv[1]); close(stop[1]);
 *     g_thread_join(t);     then a.ok, and store_writer_finish(a.w, ...) in the test's thread
 *
 * The stream ends at the connection's end, or 2 s after the stop pipe's end if the connection
 * stays silent. The caller owns the descriptors and the writer. */
typedef struct hl_live_writer {
    store_writer *w;
    int conn;    /* the writer's end of the collector's connection */
    int stop;    /* the stop pipe's read end */
    gboolean ok; /* what store_writer_serve_connection returned (read it after the join) */
} hl_live_writer;

/* The thread's function: `data` is the hl_live_writer. */
gpointer hl_live_writer_thread(gpointer data);

/* Waits until the first column of the first row of `sql`, read on a connection of its own to
 * the file at `path`, is at least `want`: polls every 2 ms (a commit is what is waited for, not
 * timed), at most 30 s. Returns the last value read: below `want` when it never got there, -1
 * when the file could not be read at all (not there yet, or no such table). */
int64_t hl_db_wait_int(const char *path, const char *sql, int64_t want);

#endif /* HEAPLENS_HL_LIVE_WRITER_H */
