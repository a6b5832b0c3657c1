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
#include <sys/types.h>

#define STORE_SCHEMA_VERSION 11
/* Schema 3 differs from 4 only in generation_changes.ids (no gaps); 4 from 5 in `objects`, a
 * table written by the writer (5: packed in object_chunks and object_deaths until the first
 * read); 5 from 6 in gcs.census_ns and census_objects (and gc_summary's), absent before; 6 from 7
 * in the fields of snapshot references (table fields, snapshot_objects.fields, the view
 * snapshot_ref_fields), statics (statics, snapshot_statics), string values (snapshot_strings)
 * and types.flags 8, absent before: references without fields; and in the table checkpoints
 * (absent before: readers find no checkpoints); 7 from 8 in snapshots.reason (why a trigger took
 * the snapshot), absent before: readers show none; in where a snapshot's objects are: 8
 * stores them compactly in snapshot_blocks (each block once across the snapshots it is in) and
 * snapshot_objects is a view of them with the rows of 7's table (store_snapshot_blocks_present
 * tells the forms apart; store_db_open_readonly makes heaplens' own reads of either fast); and
 * in types.flags 16 (finalizable: a schema 7 file does not say), the names of stack roots'
 * methods (root_methods), the collections' counts (snapshot_collections) and thread statics'
 * threads (statics.thread), absent before; 8 from 9 in gcs.snapshot_skipped (and gc_summary's),
 * absent before: readers show no GC's skip (the counters still count them); 9 from 10 in
 * object_chunks.generation, its objects' first generation, which 9 wrote in generation_changes
 * (each survivor's id a second time): readers of 9 take the first generation from there; 10
 * from 11 in object_chunks.objects, whose objects of their type's first size in the row have
 * no size ([gap,type_id]): readers take any row as 11 (10 wrote every size). */
#define STORE_SCHEMA_OLDEST_READ 3
/* gcs.snapshot_skipped (schema 9): why a snapshot due at the GC was not built. "held": a
 * --snapshot policy's, for the bound on the snapshots the collector held
 * (HL_GC_FLAG_SNAPSHOT_SKIPPED, counter snapshots_skipped_queued); "detach": an attach session's
 * detach past its bound built none (HL_GC_FLAG_SNAPSHOT_GIVEN_UP, counter snapshots_skipped). */
#define STORE_SNAPSHOT_SKIPPED_HELD "held"
#define STORE_SNAPSHOT_SKIPPED_DETACH "detach"
#define STORE_APPLICATION_ID 0x484C4E53 /* "HLNS" */

/* Every allocation of a recording, exact where it was counted and estimated where it was not,
 * as rows (gc, type_id, thread, heap, count, bytes, sampled) — a SELECT to put in parentheses
 * (schema 6; SCHEMA.md "Sampled and attach recordings"). Full mode: alloc_counts. Sampled and
 * attach modes: alloc_counts (the large and pinned objects the runtime reports, and the census's
 * exact small-object counts per type and interval) plus the samples of the small objects (and
 * of the pinned ones in attach mode) in the intervals the census did not count exactly (the
 * tail after the last GC): STORE_ALLOCATIONS_EXACT_SQL, whose sums per type and per interval
 * are exact where the census counted. Per thread the census knows nothing:
 * STORE_ALLOCATIONS_SPREAD_SQL gives each census type's exact total to the threads in
 * proportion to their samples of that type in the census's intervals (estimates, scaled so that
 * they add up to the exact totals; the interval is the sample's), and a census type no sample
 * saw to thread NULL. */
/* Survivors in a sampled recording that follows its samples (run.flags 'samples-followed';
 * SCHEMA.md "Sampled and attach recordings"): between snapshots the objects rows hold only the
 * followed objects — the samples' small objects, the LOH and POH objects, and every object a
 * snapshot named. A sampled small object stands for est_count objects (its sample's weight)
 * until a snapshot names every live object again: at and after a snapshot at GC s >= its
 * allocation interval (alloc_samples.gc, the object's first GC) it counts 1, as does every
 * other object. STORE_SURVIVOR_SAMPLE_ON(s, o, gc) is the condition that joins alloc_samples s
 * to the object o alive after GC `gc` when its weight is the sample's: LEFT JOIN alloc_samples
 * s ON ..., then coalesce(s.est_count, 1) is the object's weight. Always false in other
 * recordings. */
#define STORE_SURVIVOR_SAMPLE_ON(s, o, gc) \
    s ".object_id = " o ".id AND " s ".heap = 0" \
    " AND instr(coalesce((SELECT flags FROM run WHERE id = 1), ''), 'samples-followed') > 0" \
    " AND NOT EXISTS (SELECT 1 FROM snapshots sn WHERE sn.gc BETWEEN " s ".gc AND " gc ")"

/* Weighed survivors rounded once (the survivors command and the view survivors_by_generation
 * say the same rows): after "WITH grp AS (...)," whose groups have the columns `keys` (their
 * grouping; they order ties) and rn, rb (objects and bytes weighed, before rounding), the CTE
 * `fit` gives each group n and bytes: its figures rounded down, plus one for the largest
 * fractions until the groups of one `partition` (a window's PARTITION BY, or "") add up to
 * their total rounded, all_n and all_bytes (largest remainder); `groups` counts them. Rounding
 * each group on its own made two groupings of the same objects say totals one object apart. */
#define STORE_APPORTIONED_CTES(partition, keys)                                                   \
    " fl AS (SELECT grp.*, CAST(rn AS INTEGER) AS fn, CAST(rb AS INTEGER) AS fb,"                 \
    "          CAST(round(SUM(rn) OVER (" partition ")) AS INTEGER) AS all_n,"                    \
    "          CAST(round(SUM(rb) OVER (" partition ")) AS INTEGER) AS all_bytes,"                \
    "          ROW_NUMBER() OVER (" partition " ORDER BY rn - CAST(rn AS INTEGER) DESC, " keys    \
    ") AS rank_n,"                                                                                \
    "          ROW_NUMBER() OVER (" partition " ORDER BY rb - CAST(rb AS INTEGER) DESC, " keys    \
    ") AS rank_b,"                                                                                \
    "          COUNT(*) OVER (" partition ") AS groups FROM grp),"                                \
    " fit AS (SELECT fl.*, fn + (rank_n <= all_n - SUM(fn) OVER (" partition ")) AS n,"           \
    "           fb + (rank_b <= all_bytes - SUM(fb) OVER (" partition ")) AS bytes FROM fl)"

#define STORE_ALLOCATIONS_WITH_SQL \
    "WITH census AS (SELECT type_id, total(count) AS n, total(bytes) AS b FROM alloc_counts" \
    "  WHERE flags & 2 GROUP BY type_id)," \
    " run_mode AS (SELECT mode FROM run WHERE id = 1 AND mode IN ('sampled', 'attach'))," \
    " s AS (SELECT a.gc, a.type_id, a.thread, a.heap, a.est_count, a.est_bytes," \
    "  g.census_objects IS NOT NULL AND a.heap = 0 AS exact" \
    "  FROM alloc_samples a LEFT JOIN gcs g ON g.gc = a.gc" \
    "  WHERE EXISTS (SELECT 1 FROM run_mode) AND (a.heap = 0 OR (a.heap = 4 AND" \
    "  (SELECT mode FROM run_mode) = 'attach')))"
#define STORE_ALLOCATIONS_EXACT_SQL \
    STORE_ALLOCATIONS_WITH_SQL \
    " SELECT gc, type_id, thread, heap, count, bytes, 0 AS sampled FROM alloc_counts" \
    " UNION ALL SELECT gc, type_id, thread, heap, est_count, est_bytes, 1 FROM s WHERE NOT exact"
#define STORE_ALLOCATIONS_SPREAD_SQL \
    STORE_ALLOCATIONS_WITH_SQL ", " \
    " st AS (SELECT type_id, total(est_count) AS n, total(est_bytes) AS b FROM s WHERE exact" \
    "  GROUP BY type_id)" \
    " SELECT gc, type_id, thread, heap, count, bytes, 0 AS sampled FROM alloc_counts" \
    "  WHERE flags & 2 = 0" \
    " UNION ALL SELECT s.gc, s.type_id, s.thread, 0, s.est_count * c.n / st.n," \
    "  s.est_bytes * c.b / st.b, 1 FROM s JOIN st USING (type_id) JOIN census c USING (type_id)" \
    "  WHERE s.exact" \
    " UNION ALL SELECT NULL, type_id, NULL, 0, n, b, 0 FROM census" \
    "  WHERE type_id NOT IN (SELECT type_id FROM st)" \
    " UNION ALL SELECT gc, type_id, thread, heap, est_count, est_bytes, 1 FROM s WHERE NOT exact"

#define STORE_ERROR (store_error_quark())
GQuark store_error_quark(void);
typedef enum {
    STORE_ERROR_IO,        /* open, read, write, disk full */
    STORE_ERROR_EXISTS,    /* refusing to overwrite an existing file */
    STORE_ERROR_STREAM,    /* malformed stream: bad magic/version, oversized or truncated record */
    STORE_ERROR_SQLITE,    /* SQLite reported an error */
    STORE_ERROR_PEER,      /* a connection from another user was refused */
    STORE_ERROR_DAMAGED,   /* a damaged file that is not written (PRAGMA quick_check) */
} StoreError;

typedef struct store_writer store_writer;

/* What the writer saw; filled by store_writer_finish. */
typedef struct store_summary {
    uint64_t gcs;          /* complete GCs stored */
    uint64_t objects;      /* object rows: allocations that survived a GC, discovered objects */
    uint64_t allocations;  /* allocations counted (alloc_counts), the tail interval included */
    uint64_t allocations_survived; /* of those, alive after their first GC */
    uint64_t types;
    uint64_t snapshots;    /* heap snapshots stored */
    uint64_t drops;        /* allocs_dropped + gc_events_dropped + gcs_dropped +
                            * snapshots_dropped (collector) */
    gboolean complete;     /* end-of-run record received */
    gboolean connected;    /* a valid stream header arrived (a collector connected) */
    gboolean recorder_killed; /* the recorder died without a word (store_writer_set_session) */
    gboolean wal_kept;     /* another connection kept the file open: left in WAL mode, whole
                            * (`path`-wal is part of it until the last connection closes) */
} store_summary;

/* Creates a new database at `path` (refuses an existing file, or an existing `path`-wal or
 * `path`-journal: STORE_ERROR_EXISTS), mode 0600, with the schema, run status 'recording' and
 * `command` (may be NULL: the stream's RUN_START command is used) as the recorded command line.
 * On failure nothing is left behind. The file is in WAL mode until store_writer_finish and never
 * synced (synchronous=OFF): every committed GC survives the writer's or the program's death,
 * not an OS crash or power failure before the kernel writes the file back. A GC applied whole
 * (all its records had come) is committed with the GCs around it, at most 50 ms of the writer's
 * time later (STORE_GROUP_COMMIT_MS, store/README.md "Transaction rules"), and at the end of the
 * stream; a killed writer loses those not yet committed with it, as it loses the GC it was
 * writing. */
store_writer *store_writer_create(const char *path, const char *command, GError **error);

/* Reads one record stream from `fd` until end of run or end of file and stores it. Returns TRUE
 * when the stream ended cleanly (RUN_END) or was truncated at a record boundary or mid-record
 * (the truncated tail is handled as SCHEMA.md says, and the run is marked 'truncated'); an empty
 * stream, or one cut inside its header, is TRUE too (status 'no-data'). Returns FALSE with
 * STORE_ERROR_STREAM for a stream that is not a heaplens stream (bad magic or version: nothing
 * stored) or that stops at a corrupt record (oversized, or a payload that does not match its
 * counts: everything complete before it is kept, status 'truncated', flag 'stream-corrupt'), and
 * FALSE for an I/O or SQLite failure. Either way the writer must still be finished. */
gboolean store_writer_ingest_fd(store_writer *w, int fd, GError **error);

/* Serves a recording: waits on the listening unix socket `listen_fd` (set O_NONBLOCK here) for
 * the collector's connection, ingests it, and returns when the stream ends. A connection whose
 * peer (SO_PEERCRED) has another uid is closed, counted (connections_refused, flag
 * 'peer-refused') and waiting goes on. If `stop_fd` becomes readable before any collector
 * connected, the program exited without loading the collector: run status 'no-data'; returns
 * TRUE — or FALSE with STORE_ERROR_PEER if connections from another user were refused. After
 * the stream ended the writer reads the program's exit status from `stop_fd` (one line, "exit 3"
 * or "signal 9"; end of file without it: unknown), waiting for it at most `stop_wait_ms`
 * milliseconds. Once the exit status has arrived, a connection that stays silent for
 * `stop_wait_ms` counts as ended (a child of the program may hold it open). Ingest errors are
 * returned as store_writer_ingest_fd returns them, after the exit status was recorded.
 *
 * `control_fd` (-1: none) is a listening unix socket for on-demand snapshot requests (set
 * O_NONBLOCK here), served all along; protocol in store/README.md. A client of another uid is
 * closed unanswered. A client that sent "snapshot\n" while the collector is connected waits
 * until a GC holding a snapshot with trigger 'requested' commits ("ok <snapshot> <gc> <objects>
 * <ms>\n"), until such a snapshot is lost ("lost <snapshot> <gc> <why>\n"), or until the stream
 * ends ("error ...\n"); "progress ..." lines come first while that snapshot arrives. Answers never block the ingest: a client that does not
 * take its answer at once is dropped. When serve returns, every client has been answered and
 * closed; `control_fd` stays open (the caller closes it, best at once: a client that connects
 * later waits unanswered until it is closed). */
gboolean store_writer_serve(store_writer *w, int listen_fd, int control_fd, int stop_fd,
                            int stop_wait_ms, GError **error);

/* Serves one connection already accepted (and its peer checked) by the caller: a descendant's
 * collector under `heaplens record --children`. Ingests it like store_writer_serve; `stop_fd`
 * (a line or end of file) says `heaplens record` is ending: the stream then gets `stop_wait_ms`
 * more milliseconds, after which the run ends where it is (status 'truncated' when RUN_END had
 * not arrived) — a build server that outlives the build does not hold the recording open. No
 * exit status is read (the process is not heaplens's child: run.exit_status stays NULL).
 * `control_fd` as for store_writer_serve. */
gboolean store_writer_serve_connection(store_writer *w, int conn, int control_fd, int stop_fd,
                                       int stop_wait_ms, GError **error);
/* Where the recording's session lives, for what the stream cannot say (call before serving):
 * `dir` is the private directory of the collector's socket, where a collector that lost its
 * writer leaves its end file (wire/hl_wire.h; read by store_writer_finish when RUN_END never
 * arrived: the collector's final counters, the program's GC count, loss `writer-stalled` or
 * `writer-lost` instead of `program-killed`). `recorder` (> 0) is the pid of the process that
 * started the writer and holds the stop pipe: it always writes one line before closing it
 * ("exit N", "signal N", or a line that is no status, such as attach's "detached"), so a stop
 * pipe that reaches end of file before any line means the recorder was killed — the stream is
 * then read to its end (the program runs on), run.exit_status stays NULL and run.loss gets
 * `recorder-killed` (store_summary.recorder_killed). */
void store_writer_set_session(store_writer *w, const char *dir, pid_t recorder);
/* The parent of process `pid` (/proc/PID/stat's fourth field, after the command name in
 * parentheses), 0 when unknown. */
pid_t store_process_parent(pid_t pid);
/* An attach session (call before serving): the process runs on after its recorder, which alone
 * ends the session, so a recorder killed makes the writer end it itself — the collector is told
 * to detach (HL_CMD_DETACH: its last snapshot, RUN_END) — instead of reading on until the process
 * exits. The recording then ends complete with loss `recorder-killed`. */
void store_writer_set_attach(store_writer *w);
/* Records the program's exit status (128+N for signal N). */
gboolean store_writer_set_exit_status(store_writer *w, int status, GError **error);

/* Commits what is left, sets the final run status, checkpoints the WAL (leaving journal mode
 * DELETE: one file) and closes the file. Another connection open on the file (a reader) forbids
 * leaving WAL mode: after STORE_LEAVE_WAL_WAIT_MS of retries the file stays in WAL mode, whole,
 * the run complete all the same, and summary->wal_kept says it (the caller says it in one line). Frees `w` whatever happens; accepts NULL. `summary`
 * may be NULL. After a write to the database failed (disk full, I/O error: the ingest returned
 * STORE_ERROR_IO), writes nothing and returns FALSE with STORE_ERROR_IO "<that error>;
 * recording stopped: <path> keeps the GCs committed before (N)": the file holds every GC
 * committed before, status 'recording'. */
gboolean store_writer_finish(store_writer *w, store_summary *summary, GError **error);

/* How a recording ended, told by the process that outlived its writer. */
typedef struct store_ending {
    const char *session_dir; /* where the collector's end file may be (NULL: none) */
    gboolean exit_known;     /* `exit_status` is the program's (128+N for signal N) */
    int exit_status;
    long exit_pid;           /* the program's pid (0: not said): the status is stored only when
                              * the recorded process (run.pid) is that program */
    int writer_signal;       /* the writer was killed by this signal; 0: it stopped at a write
                              * error (disk full, I/O error) */
} store_ending;
/* Stores in the recording at `path`, whose writer died before finishing it (run.status still
 * 'recording'), what is known of its end, in one transaction: status 'truncated', run.loss with
 * `writer-killed` (counter writer_signal) or `write-failed`, the exit status (when it is the
 * recorded process's own: store_exit_is_programs), and from the
 * collector's end file (if there is one) its final counters and program_gcs. A file the writer
 * did finish is left as it is. Fails (changing nothing) when the file cannot take the write — a
 * full disk — or is damaged (STORE_ERROR_DAMAGED). */
gboolean store_recording_end(const char *path, const store_ending *ending, GError **error);
/* Opens an existing heaplens database for reading (read-only). Fails with one clear line for a
 * missing file, a file that is not SQLite, a SQLite file that is not a heaplens database, or a
 * database of another schema version. A recording left in WAL mode (store_summary.wal_kept) is
 * first made one file again (checkpointed, journal mode DELETE) when nobody else has it open and
 * this user may write it; else it is read in WAL mode, whole — or, when nobody has it open (no
 * -shm, an empty or no -wal), as immutable, so that no empty -wal and -shm are left beside it.
 * A hot -journal (a program killed inside a transaction: a Ctrl-C during a command's first
 * read) is rolled back first, as SQLite does for a connection that may write; when this user
 * may not, one line says so.
 * The returned handle is a sqlite3 *, closed by the caller with sqlite3_close; it is opened
 * without SQLite's mutex (SQLITE_OPEN_NOMUTEX): one thread at a time uses it. */
struct sqlite3;
struct sqlite3 *store_db_open_readonly(const char *path, GError **error);
/* The file of `db` named as the user named it, for messages: the path store_db_open_readonly
 * was given ("app.db", not SQLite's full path "/home/me/app.db"); SQLite's full path for a
 * connection opened otherwise; NULL for one without a file (in memory). Borrowed: valid while
 * `db` is open. */
const char *store_db_name(struct sqlite3 *db);
/* A second read-only connection to the file of `db` (one store_db_open_readonly opened), opened
 * as `db` was (immutable when it is, the same name), for another thread. NULL when it cannot be opened (an
 * in-memory database). Closed with sqlite3_close. */
struct sqlite3 *store_db_open_again(struct sqlite3 *db);

/* A .NET process that ran under `heaplens record` and declined to be recorded (a launcher's
 * child, without --children or not matching its PATTERN): its pid and command line. */
typedef struct store_unrecorded {
    int64_t pid;
    const char *command; /* borrowed; NULL is stored as "" */
} store_unrecorded;
/* Adds `n` such processes to the finished recording at `path` (table unrecorded_processes,
 * created in a file that lacks it), in one transaction: on failure nothing is added. Called by
 * `heaplens record` after the writer ended. */
gboolean store_db_unrecorded_add(const char *path, const store_unrecorded *list, size_t n,
                                 GError **error);
/* The number of objects rows, read cheaply: packed (schema 5 before the first read) from the
 * chunks' counts, not by deriving every row through the view; -1 when it cannot be read. */
int64_t store_db_objects_count(struct sqlite3 *db);

/* What store_db_damage_new saw of the file when its write transaction began, for
 * store_db_commit_sound. */
typedef struct store_db_check {
    gboolean counted; /* rollback-journal mode: every commit adds one to the counter below */
    uint32_t counter; /* the file change counter of the header (offset 24) */
} store_db_check;
/* What PRAGMA quick_check(1) finds wrong in the file of `db` ("*** in database main *** Page 5:
 * ...", or SQLite's error when the check cannot run), NULL for an intact file; g_free it. A
 * reader that adds to a recording checks first, inside its write transaction (BEGIN IMMEDIATE),
 * before it writes: writing into damage only makes it worse. A file that an earlier heaplens
 * command found intact and then wrote (store_db_commit_sound), and that nobody changed since, is
 * not read again: NULL at once (the whole-file check took 0.7-1.8 s on a 300-500 MB recording,
 * for every command that stores what it computed). "Changed since": its table file_check
 * (SCHEMA.md) does not hold, in one row, the file's change counter (which every commit in
 * rollback-journal mode increments: SQLite's writes, heaplens' or anybody's) and its
 * modification time (which any write sets, also one behind SQLite's back: a bad disk, a copy,
 * an editor); a file in WAL mode is always checked. *check (may be NULL) gets what was seen. */
char *store_db_damage_new(struct sqlite3 *db, store_db_check *check);
/* Commits the write transaction of `db`, in which store_db_damage_new found the file intact
 * (filling *check), noting it so in the same transaction (file_check: the counter this commit
 * leaves, and a modification time ten seconds back, which it then gives the file while a read
 * transaction keeps other writers out). With `check` NULL or not counted (WAL mode): a plain
 * COMMIT. FALSE when the note or the commit failed (sqlite3_errmsg(db) says why; the
 * transaction is still open: roll it back). */
gboolean store_db_commit_sound(struct sqlite3 *db, const store_db_check *check);

/* The objects rows and each object's generation history. The writer leaves them packed as the
 * GCs found them (object_chunks, object_deaths, generation_changes: appended while recording,
 * so the end of a recording waits for no rebuilding); the views derive the rows from them. The
 * first reader that may write the file builds the table objects and object_generation_rows
 * from them, once, which the views then read: the same answers, read by key. */
typedef void (*store_progress_fn)(void *ctx, uint64_t done, uint64_t total);
/* TRUE when the recording has ended (run.status is not 'recording') and its packed objects or
 * generation changes are not built yet. */
gboolean store_history_pending(struct sqlite3 *db);
/* Builds them in the file at `path` (opened for writing, one transaction: an interrupted build
 * leaves the file as it was). Waits for another process building them, then does nothing.
 * Never writes into a damaged file (PRAGMA quick_check first: STORE_ERROR_DAMAGED), and
 * packed rows a recording cannot hold (a count that is not the items' number or more than their
 * text can hold, text that is not what the writer writes, a GC, generation, thread or heap out
 * of range or not a number) are STORE_ERROR_DAMAGED too, with one line naming the row, found
 * before anything is reserved for them. Fails, changing nothing, when a reader keeps a
 * statement open on the file for more than 5 s (the commit waits for it). `progress` (may be
 * NULL) gets rows written / rows to write. */
gboolean store_history_build_file(const char *path, store_progress_fn progress, void *ctx,
                                  GError **error);
/* What most commands need is far less than every object: `survivors`, `report`'s plots and
 * `info`'s totals read object_spans (object_generations added up per type, generation,
 * first_gc, from_gc and until_gc) and object_totals (SCHEMA.md, "Object spans"). TRUE when the
 * history is pending (store_history_pending), the file is of schema 5 or later and has no
 * object_spans yet. */
gboolean store_history_spans_pending(struct sqlite3 *db);
/* Writes object_spans and object_totals into the file at `path` from the packed rows, which
 * stay as they are (the views still read them; store_history_build_file builds the rows later,
 * for the commands that read objects one by one: snapshots' objects, stacks by fate). As
 * store_history_build_file otherwise (one transaction, damage refused, the same reading and
 * its memory), and writes a few rows: about as fast as reading the packed text. A file of
 * schema 4 or before gets the whole build. */
gboolean store_history_summarize_file(const char *path, store_progress_fn progress, void *ctx,
                                      GError **error);
/* Reads the generation changes of `db` (opened by the caller, read-only will do) as the build
 * would, writing nothing: STORE_ERROR_DAMAGED as store_history_build_file says for what the
 * build would refuse. For a file whose history is pending but that this user cannot write (its
 * views then read the packed rows as they are). Memory: as the build's reading (store_history.c). */
gboolean store_history_check_changes(struct sqlite3 *db, const char *path, GError **error);

/* For heaplens' own connections to a file whose objects rows are not built: a TEMP
 * virtual table `objects` (store_objview.c) with the rows of the file's view, read from the
 * packed rows into memory on its first use (34 bytes per object) and found by id with a binary
 * search; SQLite finds it before the file's view in the connection's own statements. Nothing
 * when the rows are built or the file is of schema 4 or before. A file whose run is still
 * 'recording' gets it too (one left so by a writer that died is read as fast as a finished one;
 * one being written is read as it was at the first use).
 * store_db_open_readonly attaches it; a reading error (damaged packed rows) is the statement's
 * error. */
gboolean store_objects_view_attach(struct sqlite3 *db, GError **error);
/* Drops it (after store_history_build_file: the table is then the file's). */
gboolean store_objects_view_detach(struct sqlite3 *db);

/* The rows of that TEMP `objects`, for C code that looks many objects up by id (a snapshot's
 * every object: SQLite's statement machinery costs ten times the lookup itself): *memory the
 * connection's rows, read into memory now if no statement read them yet (owned by `db`, valid
 * until it closes or store_objects_view_detach), or NULL when `db` has no such table (its
 * `objects` is the file's: read it by SQL). FALSE with *error (STORE_ERROR_DAMAGED) when the
 * packed rows cannot be read. */
typedef struct store_objects_memory store_objects_memory;
gboolean store_objects_view_memory(struct sqlite3 *db, store_objects_memory **memory,
                                   GError **error);
/* Object `id`'s type id and size, as the table's row gives them: FALSE when it has no row.
 * Fastest for ids in ascending order (from the row the last lookup found); one thread at a
 * time per connection. */
gboolean store_objects_memory_find(store_objects_memory *m, uint64_t id, uint32_t *type_id,
                                   int64_t *size);

/* ---- compact snapshots (schema 8; SCHEMA.md "snapshot_blocks", store_snapblock.c) ---------- */

/* TRUE when `db` keeps its snapshots' objects in snapshot_blocks (schema 8 and later; the
 * snapshot_objects of older files is a table of its own). */
gboolean store_snapshot_blocks_present(struct sqlite3 *db);

/* One snapshot_blocks row decoded: n objects by ascending id, each with its generation (-1:
 * NULL), flags, and references to[ref_start[k] .. ref_start[k + 1]) in field order with the
 * field of each (field[i] -1: unknown; field_known[k] 0: none of object k's is known, the
 * NULL `fields` of snapshot_objects). Reused from block to block: zero it once, then
 * store_snapblock_decode as often as needed, then store_snapblock_clear. */
typedef struct store_snapblock {
    uint32_t n;
    uint64_t *ids;
    int8_t *generation;
    uint8_t *flags;
    uint8_t *field_known;
    uint32_t *ref_start; /* n + 1 */
    uint64_t n_refs;
    uint64_t *to;
    int64_t *field;
    size_t cap, refs_cap;
} store_snapblock;

/* The largest `objects` a block may have when read (the writer writes at most 256). */
#define STORE_SNAPBLOCK_MAX_READ 65536

/* Decodes the row (first_id, objects, ids, kinds, refs, fields; refs and fields may be NULL,
 * lengths in bytes) into `b`. FALSE with STORE_ERROR_DAMAGED (one line) for text the writer does
 * not write: ids not ascending, a count that is not the kinds' length, a reference to id 0 or
 * past 2^63, fields that do not match the references. */
gboolean store_snapblock_decode(store_snapblock *b, uint64_t first_id, int64_t objects,
                                const char *ids, size_t ids_len, const char *kinds,
                                size_t kinds_len, const char *refs, size_t refs_len,
                                const char *fields, size_t fields_len, GError **error);
/* Frees what `b` holds and zeroes it. */
void store_snapblock_clear(store_snapblock *b);
/* Object k's references (fields) as snapshot_objects.refs (.fields) text: "[12,7,12]"
 * ("[1,null]"), replacing `out`'s contents. */
void store_snapblock_refs_json(const store_snapblock *b, uint32_t k, GString *out);
void store_snapblock_fields_json(const store_snapblock *b, uint32_t k, GString *out);

/* The statement that reads the blocks of snapshot ?1 in id order: first_id, objects, ids, kinds,
 * refs, fields (columns 0 to 5), for store_snapblock_decode. */
#define STORE_SNAPBLOCKS_SQL                                                                       \
    "SELECT first_id, objects, ids, kinds, refs, fields FROM snapshot_blocks"                     \
    " WHERE last_snapshot >= ?1 AND first_snapshot <= ?1 ORDER BY first_id"
/* The same blocks with NULL for their fields (the graph of a snapshot needs its references
 * alone: the fields' text is neither read nor decoded), or for their references and fields
 * (counting a snapshot's objects needs their ids alone). */
#define STORE_SNAPBLOCK_REFS_SQL                                                                   \
    "SELECT first_id, objects, ids, kinds, refs, NULL FROM snapshot_blocks"                       \
    " WHERE last_snapshot >= ?1 AND first_snapshot <= ?1 ORDER BY first_id"
#define STORE_SNAPBLOCK_IDS_SQL                                                                    \
    "SELECT first_id, objects, ids, kinds, NULL, NULL FROM snapshot_blocks"                       \
    " WHERE last_snapshot >= ?1 AND first_snapshot <= ?1 ORDER BY first_id"
/* Decodes the current row of a statement whose columns 0 to 5 are STORE_SNAPBLOCKS_SQL's. */
struct sqlite3_stmt;
gboolean store_snapblock_decode_row(store_snapblock *b, struct sqlite3_stmt *stmt,
                                    GError **error);

/* Object `id` of snapshot `snapshot` (either form of file): *found, and then its references'
 * targets and fields as snapshot_objects.refs and .fields say them (an empty `to` for NULL refs;
 * `field` -1 where unknown, and *fields_known FALSE for a NULL fields). A point lookup: one
 * block is read. */
gboolean store_snapshot_object_get(struct sqlite3 *db, int64_t snapshot, uint64_t id,
                                   gboolean *found, GArray *to, GArray *field,
                                   gboolean *fields_known, GError **error);

/* Makes heaplens' own reads of snapshot_objects on `db` read the blocks directly: for a file
 * with snapshot_blocks, a TEMP virtual table named snapshot_objects (store_snapview.c: the view's
 * rows, found by (snapshot, object_id) through the blocks' index) hides the file's view for this
 * connection's statements (the file's other views keep reading the file's view). Nothing for
 * older files. Called by store_db_open_readonly; a connection opened otherwise may call it. */
gboolean store_snapshot_view_attach(struct sqlite3 *db, GError **error);

/* ---- retained sizes, packed per block (SCHEMA.md "retention_blocks", store_retblock.c) ---- */

/* The table that holds the rows of `retention` (written by `heaplens retention`, query/
 * retention.c), and the view `retention` that gives them as rows in SQL alone (plain sqlite3).
 * A block is up to STORE_RETBLOCK_OBJECTS reachable objects of one snapshot, consecutive in id
 * order, four JSON arrays of an element per object: ids (the gap from the previous object, the
 * first 0: first_id is its id), idoms (object id minus its immediate dominator's; 0 when only
 * the virtual root dominates it: idom_id NULL), bytes and counts (retained). */
#define STORE_RETBLOCK_OBJECTS 128
#define STORE_RETBLOCKS_DDL                                                                        \
    "CREATE TABLE IF NOT EXISTS retention_blocks (\n"                                              \
    "  snapshot INTEGER NOT NULL,\n"                                                               \
    "  first_id INTEGER NOT NULL,\n"                                                               \
    "  objects INTEGER NOT NULL,\n"                                                                \
    "  ids TEXT NOT NULL,\n"                                                                       \
    "  idoms TEXT NOT NULL,\n"                                                                     \
    "  bytes TEXT NOT NULL,\n"                                                                     \
    "  counts TEXT NOT NULL,\n"                                                                    \
    "  PRIMARY KEY (snapshot, first_id)\n"                                                         \
    ") WITHOUT ROWID;\n"                                                                           \
    "CREATE VIEW IF NOT EXISTS retention AS\n"                                                     \
    "SELECT snapshot, object_id, CASE WHEN d != 0 THEN object_id - d END AS idom_id,\n"           \
    "       retained_bytes, retained_count\n"                                                      \
    "FROM (SELECT b.snapshot AS snapshot, b.first_id + sum(i.value) OVER w AS object_id,\n"       \
    "             json_extract(b.idoms, '$[' || i.key || ']') AS d,\n"                              \
    "             json_extract(b.bytes, '$[' || i.key || ']') AS retained_bytes,\n"                 \
    "             json_extract(b.counts, '$[' || i.key || ']') AS retained_count\n"                 \
    "      FROM retention_blocks b, json_each(b.ids) i\n"                                          \
    "      WINDOW w AS (PARTITION BY b.snapshot, b.first_id ORDER BY i.key));\n"
#define STORE_RETBLOCK_INSERT_SQL                                                                  \
    "INSERT INTO main.retention_blocks (snapshot, first_id, objects, ids, idoms, bytes, counts)"   \
    " VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"

/* One block: n objects ascending by id, each one's immediate dominator (0: none), retained
 * bytes and count. Zero it once; store_retblock_decode reuses it; store_retblock_clear. */
typedef struct store_retblock {
    uint32_t n;
    uint64_t *ids, *idoms, *bytes, *counts;
    size_t cap;
} store_retblock;

/* Binds block `b` of snapshot `snapshot` (1 to STORE_RETBLOCK_OBJECTS objects) to the
 * parameters of STORE_RETBLOCK_INSERT_SQL, its texts built in the four strings given (kept by
 * the caller until the statement ran). */
void store_retblock_bind(struct sqlite3_stmt *insert, int64_t snapshot, const store_retblock *b,
                         GString *ids, GString *idoms, GString *bytes, GString *counts);
/* Decodes the current row of a statement whose columns 0 to 5 are first_id, objects, ids,
 * idoms, bytes, counts. FALSE with STORE_ERROR_DAMAGED (one line) for what the writer does not
 * write (ids not ascending, a count beyond the arrays, a retained count below 1, a dominator
 * id out of range). */
gboolean store_retblock_decode_row(store_retblock *b, struct sqlite3_stmt *stmt, GError **error);
void store_retblock_clear(store_retblock *b);

/* For heaplens' own connections to a file whose retained sizes are packed (table
 * retention_blocks): a TEMP virtual table named `retention` with the view's rows, decoded in C
 * and found by (snapshot, object_id) through the blocks' key; it hides the file's view in the
 * connection's own statements. Nothing for other files. Called by store_db_open_readonly. */
gboolean store_retention_view_attach(struct sqlite3 *db, GError **error);

#endif /* HEAPLENS_STORE_H */
