/* store_test.h — what the store's test programs share (tests/unit/store/test_store_*.c): the
 * checks of a database and of a GError, a private directory, reading rows by SQL, the golden
 * recording and what the writer must make of it, and Unix sockets. Each program's main runs its
 * cases through test_cases_main (tests/unit/common/test_cases.h).
 *
 * Every test program is one test_store_<topic>.c linked with store_test.c; each case is its
 * own ctest entry (store.<case>): `test_store_<topic> <case>`, or `all`. Streams are built with
 * tests/unit/common/hl_stream_builder.h and run through the real writer; results are checked
 * with SQL on the database it wrote. A helper that cannot go on (an SQL error, no directory)
 * aborts; a check that fails counts in `failures` and the case goes on.
 */
#ifndef HEAPLENS_TEST_STORE_TEST_H
#define HEAPLENS_TEST_STORE_TEST_H

#define HEAPLENS_TEST_FAILURES_EXTERN /* defined in store_test.c, counted by every file */
#include "store/store.h"
#include "store/store_internal.h"
#include "tests/unit/common/check.h"
#include "tests/unit/common/hl_stream_builder.h"
#include "tests/unit/common/test_cases.h"
#include "wire/hl_wire.h"

#include <glib.h>
#include <inttypes.h>
#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The exit status of a case that cannot run here (ctest's SKIP_RETURN_CODE). */
#define SKIP_CODE 77

/* The error is set and its message contains `part`. */
#define CHECK_ERROR(err, code_, part)                                                        \
    do {                                                                                     \
        if ((err) == NULL || (err)->domain != STORE_ERROR || (err)->code != (code_) ||       \
            strstr((err)->message, (part)) == NULL) {                                        \
            fprintf(stderr, "%s:%d: CHECK_ERROR failed: want code %d containing \"%s\", got %s\n", \
                    __FILE__, __LINE__, (int)(code_), (part),                                \
                    (err) != NULL ? (err)->message : "no error");                            \
            failures++;                                                                      \
        }                                                                                    \
    } while (0)

/* No error is set (one that is gets printed, counted and cleared). */
#define CHECK_NO_ERROR(err)                                                                  \
    do {                                                                                     \
        if ((err) != NULL) {                                                                 \
            fprintf(stderr, "%s:%d: unexpected error: %s\n", __FILE__, __LINE__,             \
                    (err)->message);                                                         \
            failures++;                                                                      \
            g_clear_error(&(err));                                                           \
        }                                                                                    \
    } while (0)

/* The rows of `sql` on `db` are exactly `want` (as db_rows gives them). */
#define CHECK_ROWS(db, sql, want)                                                            \
    do {                                                                                     \
        g_autofree char *rows_ = db_rows((db), (sql));                                       \
        if (strcmp(rows_, (want)) != 0) {                                                    \
            fprintf(stderr, "%s:%d: CHECK_ROWS failed: %s\n--- got:\n%s--- want:\n%s---\n",  \
                    __FILE__, __LINE__, (sql), rows_, (want));                               \
            failures++;                                                                      \
        }                                                                                    \
    } while (0)

/* ---- files and rows ------------------------------------------------------------------------ */

/* A private directory for one test, on tmpfs when there is one (thousands of databases); the
 * caller owns it. tmp_dir_free removes its files (not subfolders), the folder, and frees it. */
char *tmp_dir_new(void);
void tmp_dir_free(char *dir);

/* `path` opened read-only; aborts when it cannot be. */
sqlite3 *db_open(const char *path);

/* A copy of the file `from` at `to` (a database to change while keeping the original); aborts
 * when it cannot be made. */
void file_copy(const char *from, const char *to);

/* All rows of a query, "a|b|c\n" per row, NULL as "NULL" (the caller frees it). Aborts on a SQL
 * error. */
char *db_rows(sqlite3 *db, const char *sql);

/* The first column of the first row of `sql`, as an integer (0 when there is no row). */
int64_t db_int(sqlite3 *db, const char *sql);

/* Runs `body(ctx)` in a forked child whose files cannot grow past `max_bytes` (RLIMIT_FSIZE,
 * SIGXFSZ ignored: a write past it fails with EFBIG, as one on a full disk with ENOSPC), and
 * returns the line `body` returned (the caller frees it; "" if none), checked (counted in
 * `failures`) to have come from a child that exited 0. What the child did to its files stays for
 * the caller to read. */
char *run_disk_full(uint64_t max_bytes, char *(*body)(void *ctx), void *ctx);

/* ---- the golden recording ----------------------------------------------------------------- */

/* Its types. */
enum { T_STRING = 1, T_BYTES = 2, T_NODE = 3 };

#define GOLDEN_HANDLE_STAGES 9

/* Offsets in the golden stream, to know what a prefix holds. */
typedef struct golden_marks {
    size_t gc_end[4];           /* end of GC_END of GC k (1..3) */
    size_t handle_end[GOLDEN_HANDLE_STAGES]; /* end of the handle record of stage i (1..) */
    size_t snapshot_start_end;  /* end of SNAPSHOT_START */
    size_t len;                 /* whole stream */
} golden_marks;

/* The golden handles, in stream order: the handles table after each handle record ("stage"),
 * as SQL_HANDLES lists it. */
extern const char *const golden_handle_stages[GOLDEN_HANDLE_STAGES];

#define SQL_HANDLES                                                                          \
    "SELECT id, handle_id, kind, object_id, created_after_gc, destroyed_after_gc FROM handles " \
    "ORDER BY id"

/* The golden recording's survivors go out as GC_SURVIVORS_PACKED (the *_packed cases set it and
 * set it back). */
extern gboolean golden_packed;

/* The golden recording, described in SCHEMA terms in test_golden_rows (test_store_rows.c); the
 * caller frees it. `m` (optional) gets its offsets. `unknown`: add records of unknown types
 * between the known ones. */
hl_sb *golden_build(golden_marks *m, gboolean unknown);

/* Writes the golden stream to <dir>/golden.db through the real writer, then builds its history
 * as the first reader of a finished recording does; returns the path (the caller frees it). */
char *golden_db(const char *dir, gboolean unknown, store_summary *summary);

/* What the writer makes of it, as SQL_OBJECTS, SQL_ALLOC_COUNTS and SQL_GENERATIONS list it.
 * golden_objects: the objects that survived their first GC (3, 5, 8 and 11 died in theirs, 12
 * and 13 came after the last GC: counted in alloc_counts only). golden_alloc_counts: every
 * allocation, per (interval, type, thread, heap). */
extern const char golden_objects[];
extern const char golden_alloc_counts[];
extern const char golden_generations[];

#define SQL_OBJECTS "SELECT id, type_id, size, thread, heap, first_gc, died_gc FROM objects ORDER BY id"
#define SQL_ALLOC_COUNTS                                                                     \
    "SELECT gc, type_id, thread, heap, count, bytes, survived, survived_bytes FROM alloc_counts " \
    "ORDER BY gc, type_id, thread, heap"
#define SQL_GENERATIONS                                                                      \
    "SELECT object_id, generation, from_gc, until_gc FROM object_generations "               \
    "ORDER BY object_id, from_gc"

/* ---- sockets (the serving and control cases) ------------------------------------------------ */

/* A Unix stream socket listening at `path` (asserted). */
int listen_unix(const char *path);

/* A connection to `path`, or -1. */
int connect_unix(const char *path);

/* write_all: tests/unit/common/hl_stream_builder.h */

#endif /* HEAPLENS_TEST_STORE_TEST_H */
