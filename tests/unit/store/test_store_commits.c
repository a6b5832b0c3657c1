/* test_store_commits.c — how the writer uses SQLite: never a sync, another
 * connection's write lock waited for, GCs committed in groups, the WAL's frames of a commit in one
 * write, checkpoints after the answers to snapshots, a reader holding the file at the end. A VFS
 * over the default one counts what the writer asks of it.
 *
 * Usage: test_store_commits <case>|all   (ctest runs each case as store.<case>).
 * What the store's tests share: store_test.h.
 */
#define _GNU_SOURCE
#include "tests/unit/store/store_test.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

/* A VFS over the default one that counts the xSync calls of the files it opens, and the
 * sub-journals it opens (test_no_sync). */
typedef struct sync_count_file {
    sqlite3_file base;   /* pMethods: sync_count_methods */
    sqlite3_file *real;  /* the default VFS's file, in the bytes after this struct */
    int wal;             /* a WAL file: its writes counted */
} sync_count_file;

static sqlite3_vfs *sync_count_real;
static int sync_count_syncs, sync_count_subjournals;
static int64_t sync_count_wal_writes, sync_count_wal_bytes; /* xWrite calls on WAL files */
static sqlite3_io_methods sync_count_methods;

#define SYNC_COUNT_REAL(f) (((sync_count_file *)(f))->real)
static int sync_count_close(sqlite3_file *f)
{
    return SYNC_COUNT_REAL(f)->pMethods->xClose(SYNC_COUNT_REAL(f));
}
static int sync_count_read(sqlite3_file *f, void *buf, int n, sqlite3_int64 at)
{
    return SYNC_COUNT_REAL(f)->pMethods->xRead(SYNC_COUNT_REAL(f), buf, n, at);
}
static int sync_count_write(sqlite3_file *f, const void *buf, int n, sqlite3_int64 at)
{
    if (((sync_count_file *)f)->wal) {
        sync_count_wal_writes++;
        sync_count_wal_bytes += n;
    }
    return SYNC_COUNT_REAL(f)->pMethods->xWrite(SYNC_COUNT_REAL(f), buf, n, at);
}
static int sync_count_truncate(sqlite3_file *f, sqlite3_int64 size)
{
    return SYNC_COUNT_REAL(f)->pMethods->xTruncate(SYNC_COUNT_REAL(f), size);
}
static int sync_count_sync(sqlite3_file *f, int flags)
{
    sync_count_syncs++;
    return SYNC_COUNT_REAL(f)->pMethods->xSync(SYNC_COUNT_REAL(f), flags);
}
static int sync_count_size(sqlite3_file *f, sqlite3_int64 *size)
{
    return SYNC_COUNT_REAL(f)->pMethods->xFileSize(SYNC_COUNT_REAL(f), size);
}
static int sync_count_lock(sqlite3_file *f, int level)
{
    return SYNC_COUNT_REAL(f)->pMethods->xLock(SYNC_COUNT_REAL(f), level);
}
static int sync_count_unlock(sqlite3_file *f, int level)
{
    return SYNC_COUNT_REAL(f)->pMethods->xUnlock(SYNC_COUNT_REAL(f), level);
}
static int sync_count_reserved(sqlite3_file *f, int *out)
{
    return SYNC_COUNT_REAL(f)->pMethods->xCheckReservedLock(SYNC_COUNT_REAL(f), out);
}
static int sync_count_control(sqlite3_file *f, int op, void *arg)
{
    return SYNC_COUNT_REAL(f)->pMethods->xFileControl(SYNC_COUNT_REAL(f), op, arg);
}
static int sync_count_sector(sqlite3_file *f)
{
    return SYNC_COUNT_REAL(f)->pMethods->xSectorSize(SYNC_COUNT_REAL(f));
}
static int sync_count_device(sqlite3_file *f)
{
    return SYNC_COUNT_REAL(f)->pMethods->xDeviceCharacteristics(SYNC_COUNT_REAL(f));
}
static int sync_count_shm_map(sqlite3_file *f, int region, int size, int extend, void volatile **p)
{
    return SYNC_COUNT_REAL(f)->pMethods->xShmMap(SYNC_COUNT_REAL(f), region, size, extend, p);
}
static int sync_count_write_locks; /* the WAL's write lock taken: a write transaction each */
static int sync_count_shm_lock(sqlite3_file *f, int offset, int n, int flags)
{
    if (offset == 0 && n == 1 && flags == (SQLITE_SHM_LOCK | SQLITE_SHM_EXCLUSIVE))
        sync_count_write_locks++;
    return SYNC_COUNT_REAL(f)->pMethods->xShmLock(SYNC_COUNT_REAL(f), offset, n, flags);
}
static void sync_count_shm_barrier(sqlite3_file *f)
{
    SYNC_COUNT_REAL(f)->pMethods->xShmBarrier(SYNC_COUNT_REAL(f));
}
static int sync_count_shm_unmap(sqlite3_file *f, int delete_flag)
{
    return SYNC_COUNT_REAL(f)->pMethods->xShmUnmap(SYNC_COUNT_REAL(f), delete_flag);
}
#undef SYNC_COUNT_REAL

static int sync_count_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *f, int flags,
                           int *out_flags)
{
    (void)vfs;
    sync_count_file *c = (sync_count_file *)f;
    if (flags & SQLITE_OPEN_SUBJOURNAL)
        sync_count_subjournals++;
    c->real = (sqlite3_file *)(c + 1);
    c->wal = (flags & SQLITE_OPEN_WAL) != 0;
    int rc = sync_count_real->xOpen(sync_count_real, name, c->real, flags, out_flags);
    /* SQLite calls xClose only when pMethods is set: left NULL when the real open failed. */
    c->base.pMethods = c->real->pMethods != NULL ? &sync_count_methods : NULL;
    return rc;
}

/* Every call but xOpen goes to the default VFS, which takes this VFS as its own. */
#define SYNC_COUNT_VFS_CALL(name, ...) sync_count_real->name(sync_count_real, __VA_ARGS__)
static int sync_count_delete(sqlite3_vfs *v, const char *name, int dir)
{
    (void)v;
    return SYNC_COUNT_VFS_CALL(xDelete, name, dir);
}
static int sync_count_access(sqlite3_vfs *v, const char *name, int flags, int *out)
{
    (void)v;
    return SYNC_COUNT_VFS_CALL(xAccess, name, flags, out);
}
static int sync_count_full_path(sqlite3_vfs *v, const char *name, int n, char *out)
{
    (void)v;
    return SYNC_COUNT_VFS_CALL(xFullPathname, name, n, out);
}
static int sync_count_random(sqlite3_vfs *v, int n, char *out)
{
    (void)v;
    return SYNC_COUNT_VFS_CALL(xRandomness, n, out);
}
static void (*sync_count_on_sleep)(void); /* called at each xSleep: a busy handler waits */
static int sync_count_sleep(sqlite3_vfs *v, int us)
{
    (void)v;
    if (sync_count_on_sleep)
        sync_count_on_sleep();
    return SYNC_COUNT_VFS_CALL(xSleep, us);
}
static int sync_count_time(sqlite3_vfs *v, sqlite3_int64 *out)
{
    (void)v;
    return SYNC_COUNT_VFS_CALL(xCurrentTimeInt64, out);
}
static int sync_count_last_error(sqlite3_vfs *v, int n, char *out)
{
    (void)v;
    return SYNC_COUNT_VFS_CALL(xGetLastError, n, out);
}
#undef SYNC_COUNT_VFS_CALL

/* The default VFS wrapped so that it counts syncs, sub-journals and write locks (sync_count_*),
 * registered as the default until sqlite3_vfs_unregister. */
static sqlite3_vfs *sync_count_vfs_register(void)
{
    static sqlite3_vfs counting;
    sync_count_real = sqlite3_vfs_find(NULL);
    CHECK(sync_count_real != NULL && sync_count_real->iVersion >= 2);
    sync_count_methods = (sqlite3_io_methods){
        .iVersion = 2, .xClose = sync_count_close, .xRead = sync_count_read,
        .xWrite = sync_count_write, .xTruncate = sync_count_truncate, .xSync = sync_count_sync,
        .xFileSize = sync_count_size, .xLock = sync_count_lock, .xUnlock = sync_count_unlock,
        .xCheckReservedLock = sync_count_reserved, .xFileControl = sync_count_control,
        .xSectorSize = sync_count_sector, .xDeviceCharacteristics = sync_count_device,
        .xShmMap = sync_count_shm_map, .xShmLock = sync_count_shm_lock,
        .xShmBarrier = sync_count_shm_barrier, .xShmUnmap = sync_count_shm_unmap,
    };
    counting = (sqlite3_vfs){
        .iVersion = 2, .szOsFile = (int)sizeof(sync_count_file) + sync_count_real->szOsFile,
        .mxPathname = sync_count_real->mxPathname, .zName = "heaplens-test-sync-count",
        .xOpen = sync_count_open, .xDelete = sync_count_delete, .xAccess = sync_count_access,
        .xFullPathname = sync_count_full_path, .xRandomness = sync_count_random,
        .xSleep = sync_count_sleep, .xCurrentTimeInt64 = sync_count_time,
        .xGetLastError = sync_count_last_error,
    };
    CHECK(sqlite3_vfs_register(&counting, 1) == SQLITE_OK);
    return &counting;
}

/* The sqlite3 shell on PATH, a process of its own (a fork of this one would share SQLite's lock
 * bookkeeping), as a user reads or writes a recording: given SQL whose first output line comes
 * from inside a transaction, which it holds until its input (*in_fd, the write end) closes. */
static pid_t sqlite3_shell_start(const char *path, const char *sql, char *line, size_t size,
                                 int *in_fd)
{
    int in[2], out[2];
    CHECK(pipe(in) == 0 && pipe(out) == 0);
    pid_t shell = fork();
    if (shell == 0) {
        dup2(in[0], 0);
        dup2(out[1], 1);
        close(in[0]);
        close(in[1]);
        close(out[0]);
        close(out[1]);
        execlp("sqlite3", "sqlite3", path, NULL);
        _exit(127);
    }
    close(in[0]);
    close(out[1]);
    CHECK(write(in[1], sql, strlen(sql)) == (ssize_t)strlen(sql));
    memset(line, 0, size);
    ssize_t got = 0, n;
    while (got < (ssize_t)size - 1 && memchr(line, '\n', (size_t)got) == NULL &&
           (n = read(out[0], line + got, size - 1 - (size_t)got)) > 0)
        got += n;
    close(out[0]);
    *in_fd = in[1];
    return shell;
}

/* The write end of the sqlite3 shell's input while it holds the write lock; the first wait of a
 * busy handler ends its transaction. */
static int busy_holder_in = -1;

static void busy_holder_release(void)
{
    static const char commit[] = "COMMIT;\n";
    if (busy_holder_in >= 0 && write(busy_holder_in, commit, strlen(commit)) > 0) {
        close(busy_holder_in);
        busy_holder_in = -1;
    }
}

/* Another connection's write lock at a commit (a user's sqlite3 writing to the recording or
 * checkpointing it with TRUNCATE): the writer waits for it (STORE_WRITER_BUSY_MS) instead of
 * failing with "database is locked", which ended the recording. The sqlite3 shell, a process of
 * its own, holds BEGIN IMMEDIATE until the writer's busy handler first sleeps (the default VFS
 * wrapped: sync_count_on_sleep): no timing involved. */
static void test_writer_waits_for_lock(void)
{
    char *dir = tmp_dir_new();
    g_autoptr(GError) error = NULL;
    store_summary alone, waited;
    g_autofree char *finished = golden_db(dir, FALSE, &alone);
    sqlite3_vfs *counting = sync_count_vfs_register();
    g_autofree char *path = g_build_filename(dir, "locked.db", NULL);
    hl_sb *sb = golden_build(NULL, FALSE);
    size_t len;
    hl_sb_bytes(sb, &len);
    int fd = hl_sb_memfd(sb, len);
    store_writer *w = store_writer_create(path, "recording", &error);
    CHECK_NO_ERROR(error);

    char line[16];
    int holder_in;
    pid_t holder = sqlite3_shell_start(path, "BEGIN IMMEDIATE; SELECT 'held';\n", line,
                                       sizeof line, &holder_in);
    CHECK(strncmp(line, "held\n", 5) == 0);

    busy_holder_in = holder_in;
    sync_count_on_sleep = busy_holder_release;
    CHECK(store_writer_ingest_fd(w, fd, &error));
    CHECK_NO_ERROR(error);
    CHECK(busy_holder_in < 0); /* it did wait */
    sync_count_on_sleep = NULL;
    close(fd);
    CHECK(store_writer_finish(w, &waited, &error));
    CHECK_NO_ERROR(error);
    CHECK(waited.complete && waited.gcs == alone.gcs && waited.objects == alone.objects &&
          waited.allocations == alone.allocations);
    if (busy_holder_in >= 0)
        close(busy_holder_in);
    busy_holder_in = -1;
    int status = -1;
    CHECK(waitpid(holder, &status, 0) == holder && WIFEXITED(status) &&
          WEXITSTATUS(status) == 0);
    sqlite3_vfs_unregister(counting);
    hl_sb_free(sb);
    tmp_dir_free(dir);
}

/* The writer never asks for a sync (PRAGMA synchronous = OFF from its first statement on): not
 * for the switch to WAL, the schema, the GCs' commits and checkpoints, nor the end (the last
 * checkpoint and leaving WAL mode); and what it wrote is the whole recording. Nor does it keep
 * pages in a sub-journal: a GC is a transaction of its own, not a SAVEPOINT (which saved each
 * page a GC changed first into a temporary file). A VFS made the default counts the syncs and
 * the sub-journals of every file SQLite opens meanwhile. */
static void test_no_sync(void)
{
    char *dir = tmp_dir_new();
    g_autoptr(GError) error = NULL;
    sqlite3_vfs *counting = sync_count_vfs_register();

    /* First, that the count works: a connection of SQLite's defaults (synchronous FULL). */
    g_autofree char *probe_path = g_build_filename(dir, "probe.db", NULL);
    sqlite3 *probe = NULL;
    CHECK(sqlite3_open(probe_path, &probe) == SQLITE_OK);
    CHECK(sqlite3_exec(probe, "CREATE TABLE t (x)", NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(probe);
    CHECK(sync_count_syncs > 0);

    sync_count_syncs = 0;
    sync_count_subjournals = 0;
    g_autofree char *path = g_build_filename(dir, "nosync.db", NULL);
    hl_sb *sb = golden_build(NULL, FALSE);
    store_summary sum;
    CHECK(hl_sb_write_db(sb, path, "heaplens record -- dotnet App.dll", &sum, &error));
    CHECK_NO_ERROR(error);
    CHECK(sum.complete && !sum.wal_kept);
    CHECK(sync_count_syncs == 0);
    CHECK(sync_count_subjournals == 0);
    sqlite3_vfs_unregister(counting);
    hl_sb_free(sb);

    sqlite3 *db = db_open(path);
    CHECK_ROWS(db, "PRAGMA journal_mode", "delete\n");
    CHECK_ROWS(db, "SELECT status FROM run", "complete\n");
    CHECK_ROWS(db, "SELECT count(*) > 0 FROM gcs", "1\n");
    sqlite3_close(db);
    tmp_dir_free(dir);
}

/* A stream of `gcs` small GCs (a few allocations each, one survivor), a sampled service's
 * shape; with `cut`, the last GC's end never comes. */
static hl_sb *small_gcs_build(uint32_t gcs, gboolean cut)
{
    hl_sb *sb = hl_sb_new();
    uint64_t id = 1;
    hl_sb_run_start(sb, 4242, "dotnet Small.dll");
    hl_sb_type(sb, 1, "A");
    hl_sb_type(sb, 2, "B");
    for (uint32_t gc = 1; gc <= gcs; gc++) {
        uint64_t first = id;
        for (int i = 0; i < 5; i++, id++)
            hl_sb_alloc(sb, id, 1 + (uint32_t)(id % 2), 24, 100 + (uint32_t)(id % 3));
        hl_sb_gc_start(sb, gc, 0, FALSE, id);
        for (uint64_t o = first; o < id; o++)
            hl_sb_fate(sb, gc, o, HL_FATE(HL_GEN_0, o == first ? HL_GEN_1 : HL_GEN_NONE));
        if (gc < gcs || !cut)
            hl_sb_gc_end(sb, gc, 0);
    }
    if (!cut)
        hl_sb_run_end(sb, gcs);
    return sb;
}

/* Grouped commits (store_writer.c): GCs whose records have all come are committed together, not
 * one write transaction each (which wrote a GC's few pages again into the WAL every time), and
 * store the same rows; a GC whose end never comes is still left out alone. The write
 * transactions are counted by the WAL's write lock, through the counting VFS of test_no_sync. */
static void test_grouped_commits(void)
{
    char *dir = tmp_dir_new();
    const uint32_t gcs = 200;
    sqlite3_vfs *counting = sync_count_vfs_register();
    for (int cut = 0; cut <= 1; cut++) {
        g_autoptr(GError) error = NULL;
        g_autofree char *path = g_strdup_printf("%s/small%d.db", dir, cut);
        hl_sb *sb = small_gcs_build(gcs, cut);
        store_summary sum;
        sync_count_write_locks = 0;
        CHECK(hl_sb_write_db(sb, path, NULL, &sum, &error));
        CHECK_NO_ERROR(error);
        /* a commit per GC took at least 200; a few: the schema, the end, a group per 50 ms */
        if (sync_count_write_locks >= (int)gcs / 4)
            fprintf(stderr, "grouped_commits: %d write transactions for %u GCs\n",
                    sync_count_write_locks, gcs);
        CHECK(sync_count_write_locks < (int)gcs / 4);
        CHECK(sum.gcs == gcs - (uint32_t)cut && sum.complete == !cut);
        hl_sb_free(sb);
        sqlite3 *db = db_open(path);
        g_autofree char *want = g_strdup_printf("%u|%u|%u|%u|%d\n", gcs - cut, gcs - cut,
                                                (gcs - cut) * 5, gcs - cut, cut);
        CHECK_ROWS(db,
                   "SELECT (SELECT count(*) FROM gcs), (SELECT max(gc) FROM gcs),"
                   " (SELECT sum(count) FROM alloc_counts WHERE gc <= (SELECT max(gc) FROM gcs)),"
                   " (SELECT count(*) FROM objects),"
                   " (SELECT value FROM counters WHERE name = 'gcs_discarded_incomplete')",
                   want);
        sqlite3_close(db);
    }
    sqlite3_vfs_unregister(counting);
    tmp_dir_free(dir);
}

/* The writer's VFS (store_vfs.c) hands the WAL's frames to the default VFS in one write per
 * commit (or per 127 KiB), not as a header and a page each: 200 small GCs' group commits and the
 * golden stream's GCs (each applied as it comes, a commit each) counted by a VFS under it; the
 * recordings the same as ever. */
static void test_wal_writes_gathered(void)
{
    char *dir = tmp_dir_new();
    g_autoptr(GError) error = NULL;
    store_summary alone, gathered;
    g_autofree char *finished = golden_db(dir, FALSE, &alone);
    sqlite3_vfs *counting = sync_count_vfs_register();
    for (int stream = 0; stream < 2; stream++) {
        g_autofree char *path = g_strdup_printf("%s/gathered%d.db", dir, stream);
        hl_sb *sb = stream == 0 ? small_gcs_build(200, FALSE) : golden_build(NULL, FALSE);
        sync_count_write_locks = 0;
        sync_count_wal_writes = sync_count_wal_bytes = 0;
        CHECK(hl_sb_write_db(sb, path, NULL, &gathered, &error));
        CHECK_NO_ERROR(error);
        hl_sb_free(sb);
        /* two writes a frame before: more writes than frames (of 8 KiB pages) */
        int64_t frames = sync_count_wal_bytes / (8192 + 24);
        int64_t most = sync_count_write_locks + sync_count_wal_bytes / (127 * 1024) + 2;
        if (sync_count_wal_writes > most)
            fprintf(stderr, "wal_writes_gathered: %" PRId64 " WAL writes for %" PRId64
                    " frames and %d write transactions\n", sync_count_wal_writes, frames,
                    sync_count_write_locks);
        CHECK(frames > sync_count_write_locks && sync_count_wal_writes <= most);
        if (stream == 1)
            CHECK(gathered.complete && gathered.gcs == alone.gcs &&
                  gathered.objects == alone.objects && gathered.allocations == alone.allocations);
    }
    sqlite3_vfs_unregister(counting);
    tmp_dir_free(dir);
}

/* The WAL is checkpointed after a GC's commit and after the answers to the snapshots it
 * stored, not inside the commit: a snapshot of 10M objects is stored (and its client answered)
 * before its 170 MB are copied into the database file. A GC large enough to pass the checkpoint
 * threshold with a snapshot: when the snapshot is announced the WAL still holds its frames;
 * once the GC is done, they were copied (the count the writer keeps is 0 again). */
typedef struct checkpoint_seen {
    store_writer *w;
    int frames_at_answer, answers;
} checkpoint_seen;

static void checkpoint_on_snapshot(void *ctx, const store_snapshot_done *d G_GNUC_UNUSED)
{
    checkpoint_seen *seen = ctx;
    seen->frames_at_answer = seen->w->wal_frames;
    seen->answers++;
}

static void test_checkpoint_after_answer(void)
{
    char *dir = tmp_dir_new();
    g_autoptr(GError) error = NULL;
    g_autofree char *path = g_build_filename(dir, "checkpoint.db", NULL);
    enum { OBJECTS = 1000000 }; /* ~8 MiB of snapshot blocks: past 1024 frames of 4 KiB */
    hl_sb *sb = hl_sb_new();
    hl_sb_run_start(sb, 4242, "dotnet App.dll");
    hl_sb_type(sb, T_NODE, "App.Node");
    hl_sb_gc_start(sb, 1, 2, TRUE, OBJECTS + 1);
    hl_sb_snapshot_start(sb, 1, 1, HL_SNAPSHOT_REQUESTED);
    for (uint64_t id = 1; id <= OBJECTS; id++) {
        hl_sb_snapshot_object(sb, 1, id, HL_GEN_2, 0);
        /* targets far apart: long deltas */
        hl_sb_snapshot_ref(sb, 1, id, id * 7919 % OBJECTS + 1);
    }
    hl_sb_snapshot_end(sb, 1, 1);
    hl_sb_gc_end(sb, 1, 0);
    hl_sb_run_end(sb, 1);

    store_writer *w = store_writer_create(path, "cmd", &error);
    CHECK_NO_ERROR(error);
    checkpoint_seen seen = {.w = w};
    w->on_snapshot = checkpoint_on_snapshot;
    w->on_snapshot_ctx = &seen;
    int fd = hl_sb_memfd(sb, SIZE_MAX);
    CHECK(store_writer_ingest_fd(w, fd, &error));
    CHECK_NO_ERROR(error);
    close(fd);
    CHECK(seen.answers == 1);
    CHECK(seen.frames_at_answer >= STORE_WAL_CHECKPOINT_FRAMES);
    CHECK(w->wal_frames == 0);
    store_summary sum;
    CHECK(store_writer_finish(w, &sum, &error));
    CHECK_NO_ERROR(error);
    sqlite3 *db = db_open(path);
    CHECK_ROWS(db, "SELECT objects, refs FROM snapshots", "1000000|1000000\n");
    sqlite3_close(db);
    hl_sb_free(sb);
    tmp_dir_free(dir);
}

/* A reader holding the recording open when it ends (a user's sqlite3 polling it: a read
 * transaction in another process) cannot make the writer fail: leaving WAL mode is refused, the
 * file stays in WAL mode, whole and complete, and the summary says so; once the reader is gone
 * the file reads as the same recording written without it. */
static void test_reader_holds_file(void)
{
    char *dir = tmp_dir_new();
    g_autoptr(GError) error = NULL;
    store_summary alone, held;
    g_autofree char *finished = golden_db(dir, FALSE, &alone);
    CHECK(!alone.wal_kept);
    g_autofree char *path = g_build_filename(dir, "held.db", NULL);
    hl_sb *sb = golden_build(NULL, FALSE);
    size_t len;
    hl_sb_bytes(sb, &len);
    int fd = hl_sb_memfd(sb, len);
    store_writer *w = store_writer_create(path, "recording", &error);
    CHECK_NO_ERROR(error);
    CHECK(store_writer_ingest_fd(w, fd, &error)); /* every GC committed, the tail still open */
    CHECK_NO_ERROR(error);
    close(fd);

    /* The reader: the sqlite3 shell as a user polls the recording; the count it prints comes
     * from inside its transaction. */
    char line[32];
    int reader_in;
    pid_t reader = sqlite3_shell_start(path, "BEGIN; SELECT count(*) FROM gcs;\n", line,
                                       sizeof line, &reader_in);
    int64_t seen = g_ascii_strtoll(line, NULL, 10);
    CHECK(seen == (int64_t)alone.gcs && seen > 0);

    CHECK(store_writer_finish(w, &held, &error));
    CHECK_NO_ERROR(error);
    CHECK(held.wal_kept && held.complete && held.gcs == alone.gcs &&
          held.objects == alone.objects && held.allocations == alone.allocations);
    g_autofree char *wal = g_strconcat(path, "-wal", NULL);
    CHECK(access(wal, F_OK) == 0); /* the reader's connection keeps it */

    /* Read while the reader still holds it, and after. */
    for (int round = 0; round < 2; round++) {
        if (round == 1) {
            close(reader_in); /* end of input: the shell ends its transaction and exits */
            int status = -1;
            CHECK(waitpid(reader, &status, 0) == reader && WIFEXITED(status) &&
                  WEXITSTATUS(status) == 0);
        }
        sqlite3 *db = store_db_open_readonly(path, &error);
        CHECK_NO_ERROR(error);
        sqlite3 *done = db_open(finished);
        static const char *const same[] = {
            "SELECT status, exit_status, loss FROM run",
            "SELECT * FROM gcs ORDER BY gc",
            SQL_ALLOC_COUNTS,
            "SELECT name, value FROM counters WHERE name NOT LIKE 'writer%' ORDER BY name",
        };
        for (size_t i = 0; i < G_N_ELEMENTS(same); i++) {
            g_autofree char *want = db_rows(done, same[i]);
            CHECK_ROWS(db, same[i], want);
        }
        CHECK_ROWS(db, "SELECT status FROM run", "complete\n");
        /* The first open once the reader is gone makes it one file again (WAL copied). */
        CHECK((access(wal, F_OK) == 0) == (round == 0));
        CHECK_ROWS(db, "PRAGMA journal_mode", round == 0 ? "wal\n" : "delete\n");
        CHECK(db_int(db, "SELECT count(*) FROM counters WHERE name = 'writer_finish_ns'") == 1);
        sqlite3_close(db);
        sqlite3_close(done);
    }
    /* The first read builds on it as on any finished file. */
    CHECK(store_history_build_file(path, NULL, NULL, &error));
    CHECK_NO_ERROR(error);
    sqlite3 *db = db_open(path);
    sqlite3 *done = db_open(finished);
    g_autofree char *want = db_rows(done, SQL_OBJECTS);
    CHECK_ROWS(db, SQL_OBJECTS, want);
    sqlite3_close(db);
    sqlite3_close(done);
    hl_sb_free(sb);
    tmp_dir_free(dir);
}

static const test_case cases[] = {
    {"wal_writes_gathered", test_wal_writes_gathered},
    {"reader_holds_file", test_reader_holds_file},
    {"writer_waits_for_lock", test_writer_waits_for_lock},
    {"no_sync", test_no_sync},
    {"grouped_commits", test_grouped_commits},
    {"checkpoint_after_answer", test_checkpoint_after_answer},
};

int main(int argc, char **argv)
{
    return test_cases_main(argc, argv, cases, G_N_ELEMENTS(cases), &failures);
}
