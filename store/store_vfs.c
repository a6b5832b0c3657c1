/* store_vfs.c — the writer's VFS: the default one, with a WAL file whose frames go out in one
 * write per commit.
 *
 * SQLite writes each WAL frame as two writes, its 24-byte header and the page: a group commit
 * of a sampled recording (a dozen pages: the last leaves of gcs, gc_generations, alloc_counts,
 * alloc_samples, counters, the file's first page...) was about 24 pwrite calls, a third of the
 * writer's CPU on examples/WebApi under load. Here the frames written one after the other are
 * gathered in a buffer and written in one call, at the latest when the commit frame's page has
 * been handed over: that xWrite returns only once the whole commit is in the kernel, before
 * SQLite publishes it in the wal-index. So a reader never sees a commit whose frames are not in
 * the file, a killed writer keeps every commit as before, and a failed write (a full disk) fails
 * the commit as before. Any other call on the WAL file (a read, the checkpoint's, a truncate,
 * its size, a sync, its close) writes what is gathered first. The database file and the others
 * are the default VFS's, untouched. (store/README.md, "The writer's SQLite policy".)
 */
#include "store/store_internal.h"

#include <string.h>

/* Gathered frames at most: 15 frames of 8 KiB pages; a longer run (a large GC's commit) goes out
 * in writes of up to this size. Below 128 KiB: the default VFS's write masks its length with
 * 0x1ffff (one pwrite of 128 KiB - 1 at most, and a length of 128 KiB writes nothing: "disk
 * full"). */
#define STORE_VFS_GATHER_BYTES (127 * 1024)

typedef struct store_vfs_file {
    sqlite3_file base;  /* pMethods: store_vfs_methods */
    sqlite3_file *real; /* the default VFS's file, in the bytes after this struct */
    char *buf;          /* WAL files only: frames gathered, from offset `at` */
    size_t len;
    sqlite3_int64 at;
    sqlite3_int64 end;            /* where the last write ended: an append starts there */
    sqlite3_int64 commit_page_at; /* the commit frame's page goes here (-1: none announced) */
} store_vfs_file;

static sqlite3_vfs *store_vfs_real;
static sqlite3_io_methods store_vfs_methods;

#define REAL(f) (((store_vfs_file *)(f))->real)

/* Writes what is gathered; SQLITE_OK when nothing is. */
static int store_vfs_flush(store_vfs_file *f)
{
    if (f->len == 0)
        return SQLITE_OK;
    int rc = f->real->pMethods->xWrite(f->real, f->buf, (int)f->len, f->at);
    f->len = 0;
    return rc;
}

/* Every call on a file but a write flushes first: a read, the size or a truncate then see the
 * frames, and the order of writes stays SQLite's. */
#define FLUSHED(f, call)                                                                           \
    do {                                                                                           \
        int flush_rc = store_vfs_flush((store_vfs_file *)(f));                                     \
        if (flush_rc != SQLITE_OK)                                                                 \
            return flush_rc;                                                                       \
        return call;                                                                               \
    } while (0)

static int store_vfs_close(sqlite3_file *f)
{
    store_vfs_file *v = (store_vfs_file *)f;
    int rc = store_vfs_flush(v);
    g_free(v->buf);
    v->buf = NULL;
    int rc2 = REAL(f)->pMethods->xClose(REAL(f));
    return rc != SQLITE_OK ? rc : rc2;
}
static int store_vfs_read(sqlite3_file *f, void *buf, int n, sqlite3_int64 at)
{
    FLUSHED(f, REAL(f)->pMethods->xRead(REAL(f), buf, n, at));
}
static int store_vfs_write(sqlite3_file *f, const void *buf, int n, sqlite3_int64 at)
{
    store_vfs_file *v = (store_vfs_file *)f;
    if (v->buf == NULL)
        return REAL(f)->pMethods->xWrite(REAL(f), buf, n, at);
    gboolean commit_page = at == v->commit_page_at;
    if (n == 24) {
        /* A frame header: bytes 4-7, the database's size in pages after a commit, are not 0
         * in a commit frame only; its page follows it. */
        const unsigned char *h = buf;
        v->commit_page_at = (h[4] | h[5] | h[6] | h[7]) != 0 ? at + 24 : -1;
    }
    /* Only appends are gathered (frames added where the last write ended): anything else (a
     * frame written again, its checksum rewritten, the header of a restarted WAL) goes out at
     * once, after what is gathered. */
    gboolean append = v->len > 0 ? at == v->at + (sqlite3_int64)v->len : at == v->end;
    if (!append || v->len + (size_t)n > STORE_VFS_GATHER_BYTES) {
        int rc = store_vfs_flush(v);
        if (rc != SQLITE_OK)
            return rc;
    }
    v->end = at + n;
    if (!append || n <= 0 || (size_t)n > STORE_VFS_GATHER_BYTES)
        return REAL(f)->pMethods->xWrite(REAL(f), buf, n, at);
    if (v->len == 0)
        v->at = at;
    memcpy(v->buf + v->len, buf, (size_t)n);
    v->len += (size_t)n;
    if (commit_page) {
        v->commit_page_at = -1;
        return store_vfs_flush(v); /* the commit is whole: in the kernel before it is published */
    }
    return SQLITE_OK;
}
static int store_vfs_truncate(sqlite3_file *f, sqlite3_int64 size)
{
    FLUSHED(f, REAL(f)->pMethods->xTruncate(REAL(f), size));
}
static int store_vfs_sync(sqlite3_file *f, int flags)
{
    FLUSHED(f, REAL(f)->pMethods->xSync(REAL(f), flags));
}
static int store_vfs_size(sqlite3_file *f, sqlite3_int64 *size)
{
    FLUSHED(f, REAL(f)->pMethods->xFileSize(REAL(f), size));
}
static int store_vfs_lock(sqlite3_file *f, int level)
{
    FLUSHED(f, REAL(f)->pMethods->xLock(REAL(f), level));
}
static int store_vfs_unlock(sqlite3_file *f, int level)
{
    FLUSHED(f, REAL(f)->pMethods->xUnlock(REAL(f), level));
}
static int store_vfs_reserved(sqlite3_file *f, int *out)
{
    return REAL(f)->pMethods->xCheckReservedLock(REAL(f), out);
}
static int store_vfs_control(sqlite3_file *f, int op, void *arg)
{
    FLUSHED(f, REAL(f)->pMethods->xFileControl(REAL(f), op, arg));
}
static int store_vfs_sector(sqlite3_file *f)
{
    return REAL(f)->pMethods->xSectorSize(REAL(f));
}
static int store_vfs_device(sqlite3_file *f)
{
    return REAL(f)->pMethods->xDeviceCharacteristics(REAL(f));
}
static int store_vfs_shm_map(sqlite3_file *f, int region, int size, int extend,
                             void volatile **p)
{
    return REAL(f)->pMethods->xShmMap(REAL(f), region, size, extend, p);
}
static int store_vfs_shm_lock(sqlite3_file *f, int offset, int n, int flags)
{
    return REAL(f)->pMethods->xShmLock(REAL(f), offset, n, flags);
}
static void store_vfs_shm_barrier(sqlite3_file *f)
{
    REAL(f)->pMethods->xShmBarrier(REAL(f));
}
static int store_vfs_shm_unmap(sqlite3_file *f, int delete_flag)
{
    return REAL(f)->pMethods->xShmUnmap(REAL(f), delete_flag);
}
#undef REAL
#undef FLUSHED

static int store_vfs_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *f, int flags,
                          int *out_flags)
{
    (void)vfs;
    store_vfs_file *v = (store_vfs_file *)f;
    memset(v, 0, sizeof *v);
    v->commit_page_at = -1;
    v->real = (sqlite3_file *)(v + 1);
    int rc = store_vfs_real->xOpen(store_vfs_real, name, v->real, flags, out_flags);
    /* SQLite calls xClose only when pMethods is set: left NULL when the real open failed. */
    v->base.pMethods = v->real->pMethods != NULL ? &store_vfs_methods : NULL;
    if (rc == SQLITE_OK && (flags & SQLITE_OPEN_WAL))
        v->buf = g_malloc(STORE_VFS_GATHER_BYTES);
    return rc;
}

/* Every other call goes to the default VFS, which takes this VFS as its own. */
#define REAL_VFS_CALL(name, ...) store_vfs_real->name(store_vfs_real, __VA_ARGS__)
static int store_vfs_delete(sqlite3_vfs *v, const char *name, int dir)
{
    (void)v;
    return REAL_VFS_CALL(xDelete, name, dir);
}
static int store_vfs_access(sqlite3_vfs *v, const char *name, int flags, int *out)
{
    (void)v;
    return REAL_VFS_CALL(xAccess, name, flags, out);
}
static int store_vfs_full_path(sqlite3_vfs *v, const char *name, int n, char *out)
{
    (void)v;
    return REAL_VFS_CALL(xFullPathname, name, n, out);
}
static int store_vfs_random(sqlite3_vfs *v, int n, char *out)
{
    (void)v;
    return REAL_VFS_CALL(xRandomness, n, out);
}
static int store_vfs_sleep(sqlite3_vfs *v, int us)
{
    (void)v;
    return REAL_VFS_CALL(xSleep, us);
}
static int store_vfs_time(sqlite3_vfs *v, sqlite3_int64 *out)
{
    (void)v;
    return REAL_VFS_CALL(xCurrentTimeInt64, out);
}
static int store_vfs_last_error(sqlite3_vfs *v, int n, char *out)
{
    (void)v;
    return REAL_VFS_CALL(xGetLastError, n, out);
}
#undef REAL_VFS_CALL

const char *store_vfs_writer(void)
{
    static sqlite3_vfs vfs;
    /* Over the default VFS of this writer's creation (a test may put its own first, after an
     * earlier writer): a writer per process otherwise, created on one thread. */
    sqlite3_vfs *real = sqlite3_vfs_find(NULL);
    if (real == store_vfs_real)
        return vfs.zName;
    store_vfs_real = real;
    store_vfs_methods = (sqlite3_io_methods){
        .iVersion = 2, .xClose = store_vfs_close, .xRead = store_vfs_read,
        .xWrite = store_vfs_write, .xTruncate = store_vfs_truncate, .xSync = store_vfs_sync,
        .xFileSize = store_vfs_size, .xLock = store_vfs_lock, .xUnlock = store_vfs_unlock,
        .xCheckReservedLock = store_vfs_reserved, .xFileControl = store_vfs_control,
        .xSectorSize = store_vfs_sector, .xDeviceCharacteristics = store_vfs_device,
        .xShmMap = store_vfs_shm_map, .xShmLock = store_vfs_shm_lock,
        .xShmBarrier = store_vfs_shm_barrier, .xShmUnmap = store_vfs_shm_unmap,
    };
    sqlite3_vfs_unregister(&vfs); /* no-op the first time */
    vfs = (sqlite3_vfs){
        .iVersion = 2, .szOsFile = (int)sizeof(store_vfs_file) + real->szOsFile,
        .mxPathname = real->mxPathname, .zName = "heaplens-writer",
        .xOpen = store_vfs_open, .xDelete = store_vfs_delete, .xAccess = store_vfs_access,
        .xFullPathname = store_vfs_full_path, .xRandomness = store_vfs_random,
        .xSleep = store_vfs_sleep, .xCurrentTimeInt64 = store_vfs_time,
        .xGetLastError = store_vfs_last_error,
    };
    sqlite3_vfs_register(&vfs, 0);
    return vfs.zName;
}
