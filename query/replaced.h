/* replaced.h — old recordings `--force` set aside and a killed heaplens left behind.
 *
 * `heaplens record/attach --force -o FILE` renames FILE's set (FILE, -wal, -shm, -journal) to
 * `.FILE.heaplens-replaced-PID` beside it until the new database exists (session/README.md). A
 * heaplens killed in between leaves that set, which no recording is named: these find it (only
 * those whose PID is no live heaplens: a live one is replacing FILE now), say it, and put it
 * back. */
#pragma once

#include <glib.h>
#include <stddef.h>

#define QUERY_REPLACED_MEMBERS 4
/* The files of a SQLite database's set: FILE and SQLite's FILE-wal, FILE-shm, FILE-journal,
 * by their suffixes, the main file's ("") first (session/ names a recording's set by them too). */
extern const char *const query_replaced_suffixes[QUERY_REPLACED_MEMBERS];

/* The name `pid`'s --force sets `path`'s set aside under (a new string). */
char *query_replaced_name(const char *path, long pid);
/* The left-over sets of `path` (their main files' paths, beside `path`): a new array, empty when
 * there are none (or the directory cannot be read). */
GPtrArray *query_replaced_find(const char *path);
/* Whether any member of the set of `path` exists. */
gboolean query_replaced_set_exists(const char *path);
/* The suffixes of the members beside the main file of the set `aside` ("-wal, -shm"), "" when
 * none (a new string). */
char *query_replaced_members(const char *aside);
/* A clause naming `path`'s left-over sets and how to get one back, NULL when there are none. */
char *query_replaced_hint(const char *path);
/* The same of the sets `found` (query_replaced_find's array for `path`, read once by a caller
 * that needs both). */
char *query_replaced_hint_of(const char *path, const GPtrArray *found);
/* Renames each member of the set `from` that exists to the same member of `to` (`main_last`:
 * the members beside the main file first, as a set put back must appear); on a failure those
 * moved go back, *failed (when not NULL) is the index of the member that failed in
 * query_replaced_suffixes, and errno is the failure's. */
gboolean query_replaced_rename(const char *from, const char *to, gboolean main_last,
                               size_t *failed);
