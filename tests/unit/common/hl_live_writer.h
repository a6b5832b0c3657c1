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

/* Waits until the first column of the first row of `sql`, read on a connection of its own to
 * the file at `path`, is at least `want`: polls every 2 ms (a commit is what is waited for, not
 * timed), at most 30 s. Returns the last value read: below `want` when it never got there, -1
 * when the file could not be read at all (not there yet, or no such table). */
int64_t hl_db_wait_int(const char *path, const char *sql, int64_t want);

#endif /* HEAPLENS_HL_LIVE_WRITER_H */
