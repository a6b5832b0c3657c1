/* output_file.h — an output file the user names (`report -o OUT`, `stacks --speedscope OUT`).
 *
 * A regular file (or a new one) is written beside its final name and renamed into place when
 * complete, so that a failure never leaves half a file (nor destroys an older one; SIGINT,
 * SIGTERM, SIGHUP and SIGQUIT meanwhile remove it, and heaplens ends by the signal); through a
 * symbolic link, the link's target is the file replaced, never the link. Anything else the user
 * names (a FIFO, a terminal, /dev/null, /dev/full) is written through as it is: it is not ours
 * to replace; a FIFO must have its reader already (it is opened without waiting: a FIFO nobody
 * reads is refused, never waited on). "-", /dev/stdout and its kin are heaplens' own standard
 * output. A directory, a block device or a link to nothing is refused, and so is every file the
 * command reads: an input, or (existing or not yet) its SQLite -wal, -shm or -journal file, by
 * name or through links (compared by device and inode). A database is never replaced: a file
 * with SQLite's header, or with a -wal, -shm or -journal beside it (another recording, finished
 * or still being written: its writer would go on into a file nobody can reach), nor named as
 * SQLite names another database's files (DB-wal, DB-shm, DB-journal beside an existing DB).
 *
 * Errors: QUERY_ERROR_IO "cannot write OUT: <why>". Single-threaded.
 */
#ifndef HEAPLENS_CLI_OUTPUT_FILE_H
#define HEAPLENS_CLI_OUTPUT_FILE_H

#include <glib.h>
#include <stdio.h>

typedef struct query_output_file {
    char *path;     /* what the user named, for messages */
    char *final;    /* the regular file replaced: `path` with its symbolic links resolved */
    char *tmp_path; /* beside `final`; NULL when writing through */
    FILE *out;      /* write here */
    gboolean is_stdout;
} query_output_file;

/* Opens `path` for writing (`file` zeroed first). `inputs`: the files the command reads, a
 * NULL-terminated array (borrowed; NULL for none); `path` may be none of them. On failure `file`
 * still needs query_output_file_release. */
gboolean query_output_file_open(query_output_file *file, const char *path,
                                const char *const *inputs, GError **error);
/* Flushes and closes the output; renames a temporary file into place. */
gboolean query_output_file_commit(query_output_file *file, GError **error);
/* Closes what is open and removes what a failed write left behind; accepts a zeroed file. */
void query_output_file_release(query_output_file *file);

#endif /* HEAPLENS_CLI_OUTPUT_FILE_H */
