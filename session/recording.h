/* recording.h — what `heaplens record` and `heaplens attach` share: the collector's path, the
 * session's private sockets, the writer process, the output file and the closing summary.
 *
 *   heaplens ──fork──▶ writer process (recording_writer_start: socket → SQLite)
 *                          ▲ unix socket in a private 0700 directory, socket file 0600
 *   the collector in the recorded process connects there (started by record, or attached)
 */
#ifndef HEAPLENS_SESSION_RECORDING_H
#define HEAPLENS_SESSION_RECORDING_H

#include <glib.h>
#include <jansson.h>
#include <sys/types.h>

#include "store/store.h"

#define PROFILER_CLSID "{A3E1B5C2-6D4F-4E8A-9B17-2C5D8E0F4A61}" /* collector/clr_guids.c */
#define COLLECTOR_NAME "libheaplens.so"
#define STOP_WAIT_MS 5000
#define WRITER_EXIT_STOPPED 3 /* the writer stopped at a write error and said so */
#define WRITER_EXIT_LOST 4    /* a --children writer's file was removed or replaced while it
                               * recorded, and the writer said so (recording_output_ours) */

/* Whether `p` is a policy text the collector understands (collector/snapshot_policy.h). */
gboolean recording_snapshot_policy_valid(const char *p);
/* One of record's and attach's options that shape the snapshot policy: `option` "snapshot"
 * (one policy; repeated to combine), "max-snapshots" (N >= 1) or "snapshot-interval" (seconds,
 * 0 allowed), with its `value`, appended to *policy (created when NULL) as the collector reads
 * it (items joined by ','). FALSE with one line naming `who` when the value or the combination
 * is not one the collector takes. */
gboolean recording_snapshot_option(const char *who, const char *option, const char *value,
                                   GString **policy, GError **error);
/* The HEAPLENS_* settings a user may put in a recorded program's environment (the one table,
 * README.md "Settings"): each named with its range. `env` is an environment ("NAME=VALUE"
 * strings, NULL-terminated): heaplens' own for `record` (the program inherits it), the target's
 * for `attach` (/proc/PID/environ: the collector reads the process's own environment). `whose`
 * says whose environment it is in the message (NULL: none). FALSE with one line naming the
 * variable, its value and what it takes, when a value is not one the setting takes. Variables
 * heaplens itself sets for the collector (HEAPLENS_SOCKET, HEAPLENS_PID, ...) are not in the
 * table: record replaces them, attach does not use them. */
gboolean recording_settings_check(const char *who, char *const *env, const char *whose,
                                  GError **error);
/* libheaplens.so next to the heaplens executable (build tree), or in ../lib/heaplens. */
char *recording_collector_path(GError **error);
/* A fresh private (0700) directory in TMPDIR, heaplens-PID-XXXXXX (PID: this process); in
 * /tmp/heaplens-UID instead when a session's socket paths in TMPDIR would not fit a unix
 * socket (107 bytes). First removes those a killed recorder and writer left there (only this
 * user's, so named, 0700, their PID gone and their control sockets served by nobody:
 * recording_dir_remove). */
char *recording_private_dir(GError **error);
/* A listening unix socket `path` (0600). */
int recording_socket_listen(const char *path, GError **error);

/* The database a writer created, by device and inode, to tell it from a file put in its place
 * while it recorded (removed, or replaced: SQLite then fails the writer's next write, "attempt
 * to write a readonly database"). {0, 0}: not known. */
typedef struct recording_output_id {
    dev_t dev;
    ino_t ino;
} recording_output_id;
/* Takes the identity of `output`, just created by a writer that still serves it ({0, 0} when it
 * cannot be read). */
void recording_output_id_take(const char *output, recording_output_id *id);
/* Whether `output` is still the file `id` names (or `id` is not known). When it is not, says so
 * in one line on stderr — "heaplens: WHO failed: OUTPUT was removed (replaced by another file)
 * while it was being recorded: the recording is lost" — and nothing may be stored into, nor
 * summarised from, the file now named so: it is another's. `who`: "the writer", "the writer of
 * pid 123". */
gboolean recording_output_ours(const char *who, const char *output, const recording_output_id *id);

/* The recording's sockets: the collector's and the control socket for `heaplens snapshot`. */
typedef struct recording_sockets {
    char *dir, *collector_path, *control_path;
    char *claim_path; /* created by the collector of the recorded process (collector/profiler.c) */
    char *children_path; /* --children: the descendants' collectors connect here */
    int collector_fd, control_fd;
    /* The database the writer created (recording_writer_start), to tell it from a file put in
     * its place while it recorded (recording_writer_died); {0, 0} before. */
    recording_output_id output_id;
} recording_sockets;
gboolean recording_sockets_create(recording_sockets *s, GError **error);
/* Closes the listening ends and removes the session's directory with what the session put in it
 * (recording_dir_remove). */
void recording_sockets_remove(recording_sockets *s);
/* Removes a session's directory `dir` (NULL: nothing) and the files a session puts there — its
 * sockets, the collector's claim and end files — but nothing else (a directory holding anything
 * else stays). */
void recording_dir_remove(const char *dir);

/* The writer did not exit 0 (`writer_status` from waitpid): says so in one line on stderr
 * (unless it stopped at a write error: its own line said it), and stores in `output` what is
 * known of the recording's end when the writer could not (store_recording_end: killed, or
 * stopped by a full disk; from the collector's end file in the session's directory, and the
 * program's exit status when `exit_known` and the recorded process is the program `exit_pid`).
 * A file that cannot take it stays as it was: one more
 * line says so, except after a write error (the writer's line said the disk is full). When
 * `output` is no longer the file the writer created (recording_output_ours), that is said
 * instead, nothing is stored and FALSE returned: no summary may read the file now named so.
 * *end_stored (may be NULL): whether the end was stored, so that a summary reads it. */
gboolean recording_writer_died(const char *output, const recording_sockets *sockets,
                               int writer_status, gboolean exit_known, int exit_status,
                               long exit_pid, gboolean *end_stored);
/* The writer finished with the file left in WAL mode (store_summary.wal_kept: a reader kept it
 * open): says so in one line on stderr — the recording is whole, its last GCs in `output`-wal
 * until the last connection to it closes. */
void recording_wal_kept_say(const char *output);
/* The .NET processes of the session that declined to be recorded (each left a mark in the
 * sockets' directory: collector/profiler.c), by pid: a GArray of store_unrecorded whose
 * commands it owns (g_array_unref frees them). Empty when none did. */
GArray *recording_unrecorded_read(const recording_sockets *s);

/* Forks the writer process (socket → SQLite into `output`, the program's `command` or NULL),
 * hands it the sockets' listening ends (closed here, set to -1) and waits until it has created
 * `output`. Returns its pid and *stop_fd, the stop pipe's write end: write the program's exit
 * status there (or close it) to end the recording. With `gone_fd`, *gone_fd reads end of file
 * once the writer exited. -1 with the reason (`who`: the command, for the message) when no pipe
 * could be made (nothing else done), or when the writer did not start (reaped, sockets removed).
 * The writer ignores SIGINT, SIGQUIT, SIGTERM, SIGHUP and SIGPIPE: it outlives the program to
 * finish the recording. */
pid_t recording_writer_start(const char *who, const char *output, const char *command,
                             recording_sockets *sockets, int *stop_fd, int *gone_fd,
                             GError **error);

/* FALSE (and why, after `refused`: "cannot record to") when SQLite's journal beside `path` would
 * have a name longer than the file system takes; `extra`: bytes a derived name adds (record
 * --children's ".PID"). `record` and `import` refuse such a name before they start. */
gboolean recording_output_name_fits(const char *refused, const char *path, size_t extra,
                                    GError **error);
/* Checks FILE may be created; *resolved: where. --force replaces the whole SQLite set: it is
 * renamed aside (*aside: where, hidden beside it; NULL when there was none), never removed until
 * the new database exists (recording_output_replaced), and put back when the session fails
 * before (recording_output_kept). */
gboolean recording_output_prepare(const char *output, gboolean force, char **resolved,
                                  char **aside, GError **error);
/* The new database exists: the old set at `aside` (NULL: none) is removed. */
void recording_output_replaced(const char *aside);
/* The session failed (*error set) before the new database at `output` existed, or with one that
 * is not kept: what it created there is removed and the old set at `aside` goes back; *error's
 * message then says the old recording was kept (or where it is, when it could not go back).
 * Does nothing when `aside` is NULL. */
gboolean recording_output_kept(const char *aside, const char *output, GError **error);
/* FALSE (and why, after `refused`: "cannot record to") when `output` is named as SQLite names
 * another database's files, DB-wal, DB-shm or DB-journal beside an existing file DB: SQLite
 * would take the new database for DB's (a hot journal, a WAL or its index) at DB's next open
 * and delete or overwrite it. */
gboolean recording_output_not_sibling(const char *refused, const char *output, GError **error);

/* The runtime's switch that keeps it from loading our profiler in the environment block `env`
 * (NAME=VALUE strings): "DOTNET_EnableDiagnostics=0", "COMPlus_EnableDiagnostics_Profiler=0"...;
 * with `launched` (the environment of a process heaplens started with CORECLR_ENABLE_PROFILING=1)
 * also "CORECLR_ENABLE_PROFILING=0" or "no CORECLR_ENABLE_PROFILING". NULL: none (new string). */
char *recording_profiler_veto_new(char *const *env, gboolean launched);
/* The same switch set by an `env` at the head of `program` (argv: `env NAME=VALUE... COMMAND`,
 * `env -u NAME`, `env -i`, nested), applied to heaplens' environment: "env in its command line
 * gives it X", X as recording_profiler_veto_new says it, or NULL (no `env`, no veto, or an option
 * of env this reading does not know). */
char *recording_launcher_veto_new(char *const *program);
/* The processes watched at most per look (recording_program_veto_new). */
#define RECORDING_WATCH_MAX_PROCESSES 64
/* One look at the running program `program` and its descendants (/proc/PID/task/TID/children,
 * at most RECORDING_WATCH_MAX_PROCESSES): the first whose environment keeps the runtime from
 * loading a profiler, "pid N (COMMAND) ran with VAR=VALUE in its environment", or NULL (new
 * string). A process that has exited has no environment to read: the caller looks while they
 * run. */
char *recording_program_veto_new(pid_t program);

typedef struct recording_summary_options {
    gboolean json, quiet;
    gboolean whose; /* say whose database it is (run.pid, run.command) */
    int program_signal; /* the signal that killed the program (0: it exited, or unknown) */
    /* what kept the runtime from loading the collector in the environment the program's
     * launcher gave it (recording_launcher_veto_new, recording_program_veto_new), or NULL */
    const char *program_veto;
} recording_summary_options;
/* The summary of one database: printed on stderr, or returned as JSON with `json`. */
json_t *recording_summary_print(const char *output, const recording_summary_options *o);

#endif /* HEAPLENS_SESSION_RECORDING_H */
