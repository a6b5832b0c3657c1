/* store.h — the writer: a heaplens record stream in, a SQLite database out.
 *
 * The writer runs in its own process (forked by `heaplens record`), never inside the profiled
 * program. It reads the stream described in wire/hl_wire.h and writes the schema described in
 * store/SCHEMA.md: one transaction per GC, so a GC is either wholly stored or absent.
 *
 * Errors: GError ** last; functions return FALSE/NULL and set the error. Error messages are one
 * line, meant to be printed after "heaplens: " as they are. Single-threaded.
 */
#ifndef HEAPLENS_STORE_H
#define HEAPLENS_STORE_H

#include <glib.h>
#include <stdint.h>

#define STORE_SCHEMA_VERSION 1
#define STORE_APPLICATION_ID 0x484C4E53 /* "HLNS" */

#define STORE_ERROR (store_error_quark())
GQuark store_error_quark(void);
typedef enum {
    STORE_ERROR_IO,        /* open, read, write, disk full */
    STORE_ERROR_EXISTS,    /* refusing to overwrite an existing file */
    STORE_ERROR_STREAM,    /* malformed stream: bad magic/version, oversized or truncated record */
    STORE_ERROR_SQLITE,    /* SQLite reported an error */
    STORE_ERROR_PEER,      /* a connection from another user was refused */
} StoreError;

typedef struct store_writer store_writer;

/* What the writer saw; filled by store_writer_finish. */
typedef struct store_summary {
    uint64_t gcs;          /* complete GCs stored */
    uint64_t objects;      /* object rows */
    uint64_t types;
    uint64_t drops;        /* sum of the collector's drop counters */
    gboolean complete;     /* end-of-run record received */
    gboolean connected;    /* a collector ever connected */
} store_summary;

/* Creates a new database at `path` (refuses an existing file: STORE_ERROR_EXISTS), with the
 * schema, run status 'recording' and `command` as the recorded command line. */
store_writer *store_writer_create(const char *path, const char *command, GError **error);

/* Reads one record stream from `fd` until end of run or end of file and stores it. Returns TRUE
 * when the stream ended cleanly (RUN_END) or was truncated at a record boundary or mid-record
 * (the truncated tail is handled as SCHEMA.md says, and the run is marked 'truncated'); returns
 * FALSE only for a stream that is not a heaplens stream at all, or for an I/O/SQLite failure. */
gboolean store_writer_ingest_fd(store_writer *w, int fd, GError **error);

/* Serves a recording: waits on the listening unix socket `listen_fd` for the collector's
 * connection (refusing peers of another uid), ingests it, and returns when the stream ends.
 * If `stop_fd` becomes readable before any collector connected, the program exited without
 * loading the collector: returns TRUE with run status 'no-data'. After the stream ended the
 * writer reads the program's exit status from `stop_fd` (a decimal line, "exit 3" or
 * "signal 9"), waiting for it at most `stop_wait_ms` milliseconds. */
gboolean store_writer_serve(store_writer *w, int listen_fd, int stop_fd, int stop_wait_ms,
                            GError **error);

/* Records the program's exit status (128+N for signal N). */
gboolean store_writer_set_exit_status(store_writer *w, int status, GError **error);

/* Commits what is left, sets the final run status, checkpoints the WAL and closes the file.
 * Frees `w` whatever happens. `summary` may be NULL. */
gboolean store_writer_finish(store_writer *w, store_summary *summary, GError **error);

/* Opens an existing heaplens database for reading (read-only). Fails with one clear line for a
 * missing file, a file that is not SQLite, a SQLite file that is not a heaplens database, or a
 * database of another schema version. The returned handle is a sqlite3 *, closed by the caller
 * with sqlite3_close. */
struct sqlite3;
struct sqlite3 *store_db_open_readonly(const char *path, GError **error);

#endif /* HEAPLENS_STORE_H */
