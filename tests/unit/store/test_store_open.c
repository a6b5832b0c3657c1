/* test_store_open.c — opening a recording: an existing file refused as an output, read
 * only (a reader's connection, a WAL left by a reader, a file this user may not write), and the
 * damage check that runs once per file and keeps SQLite's locks.
 *
 * Usage: test_store_open <case>|all   (ctest runs each case as store.<case>).
 * What the store's tests share: store_test.h.
 */
#define _GNU_SOURCE
#include "tests/unit/store/store_test.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void test_refuse_existing(void)
{
    char *dir = tmp_dir_new();
    g_autoptr(GError) error = NULL;
    g_autofree char *path = golden_db(dir, FALSE, NULL);
    store_writer *w = store_writer_create(path, "again", &error);
    CHECK(w == NULL);
    g_autofree char *want = g_strdup_printf("%s already exists; heaplens does not overwrite it", path);
    CHECK_ERROR(error, STORE_ERROR_EXISTS, want);
    g_clear_error(&error);
    sqlite3 *db = db_open(path); /* untouched */
    CHECK_ROWS(db, "SELECT status, count(*) FROM run JOIN objects", "complete|7\n");
    sqlite3_close(db);

    /* Any existing file, and the WAL left by an earlier database. */
    g_autofree char *text = g_build_filename(dir, "notes.txt", NULL);
    CHECK(g_file_set_contents(text, "hello\n", -1, NULL));
    CHECK(store_writer_create(text, NULL, &error) == NULL);
    CHECK_ERROR(error, STORE_ERROR_EXISTS, "already exists");
    g_clear_error(&error);
    g_autofree char *other = g_build_filename(dir, "other.db", NULL);
    g_autofree char *other_wal = g_strconcat(other, "-wal", NULL);
    CHECK(g_file_set_contents(other_wal, "", 0, NULL));
    CHECK(store_writer_create(other, NULL, &error) == NULL);
    CHECK_ERROR(error, STORE_ERROR_EXISTS, "other.db-wal already exists");
    g_clear_error(&error);
    CHECK(access(other, F_OK) != 0);

    /* A directory that does not exist: an I/O error, nothing left behind. */
    g_autofree char *nodir = g_build_filename(dir, "no", "such", "x.db", NULL);
    CHECK(store_writer_create(nodir, NULL, &error) == NULL);
    CHECK_ERROR(error, STORE_ERROR_IO, "cannot create");
    g_clear_error(&error);

    CHECK(store_writer_finish(NULL, NULL, NULL)); /* NULL is accepted */
    tmp_dir_free(dir);
}

static void test_open_readonly(void)
{
    char *dir = tmp_dir_new();
    g_autoptr(GError) error = NULL;

    g_autofree char *missing = g_build_filename(dir, "missing.db", NULL);
    CHECK(store_db_open_readonly(missing, &error) == NULL);
    g_autofree char *want = g_strdup_printf("%s does not exist", missing);
    CHECK_ERROR(error, STORE_ERROR_IO, want);
    g_clear_error(&error);

    g_autofree char *text = g_build_filename(dir, "app.db", NULL);
    CHECK(g_file_set_contents(text, "this is not a database, just some text\n", -1, NULL));
    CHECK(store_db_open_readonly(text, &error) == NULL);
    g_free(want);
    want = g_strdup_printf("%s is not a heaplens database (not an SQLite file)", text);
    CHECK_ERROR(error, STORE_ERROR_IO, want);
    g_clear_error(&error);

    g_autofree char *empty = g_build_filename(dir, "empty.db", NULL);
    CHECK(g_file_set_contents(empty, "", 0, NULL));
    CHECK(store_db_open_readonly(empty, &error) == NULL);
    CHECK_ERROR(error, STORE_ERROR_IO, "is not a heaplens database (not an SQLite file)");
    g_clear_error(&error);

    CHECK(store_db_open_readonly(dir, &error) == NULL);
    CHECK_ERROR(error, STORE_ERROR_IO, "is a directory");
    g_clear_error(&error);

    g_autofree char *foreign = g_build_filename(dir, "foreign.db", NULL);
    sqlite3 *db = NULL;
    CHECK(sqlite3_open(foreign, &db) == SQLITE_OK);
    CHECK(sqlite3_exec(db, "CREATE TABLE t (x); INSERT INTO t VALUES (1)", NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(db);
    CHECK(store_db_open_readonly(foreign, &error) == NULL);
    g_free(want);
    want = g_strdup_printf("%s is not a heaplens database", foreign);
    CHECK_ERROR(error, STORE_ERROR_SQLITE, want);
    CHECK(g_str_has_suffix(error->message, "is not a heaplens database"));
    g_clear_error(&error);

    /* A recording's main file copied while its writer had all of it in the -wal (no
     * checkpoint yet): the message says the -wal is missing. */
    g_autofree char *walled = g_build_filename(dir, "walled.db", NULL);
    g_autofree char *alone = g_build_filename(dir, "alone.db", NULL);
    CHECK(sqlite3_open(walled, &db) == SQLITE_OK);
    CHECK(sqlite3_exec(db, "PRAGMA journal_mode = WAL; PRAGMA wal_autocheckpoint = 0;"
                           "PRAGMA application_id = 1212960339; CREATE TABLE t (x)",
                       NULL, NULL, NULL) == SQLITE_OK);
    g_autofree char *main_bytes = NULL;
    gsize main_len = 0;
    CHECK(g_file_get_contents(walled, &main_bytes, &main_len, NULL));
    CHECK(g_file_set_contents(alone, main_bytes, (gssize)main_len, NULL));
    sqlite3_close(db);
    CHECK(store_db_open_readonly(alone, &error) == NULL);
    g_free(want);
    want = g_strdup_printf("%s is not a heaplens database, or is one copied without its -wal: it "
                           "is in WAL mode and %s-wal is missing or empty (copy both, or copy "
                           "after the recording ends)",
                           alone, alone);
    CHECK_ERROR(error, STORE_ERROR_SQLITE, want);
    g_clear_error(&error);

    g_autofree char *good = golden_db(dir, FALSE, NULL);
    db = store_db_open_readonly(good, &error);
    CHECK_NO_ERROR(error);
    CHECK(db != NULL);
    CHECK(db_int(db, "SELECT count(*) FROM objects") == 7);
    CHECK(sqlite3_exec(db, "DELETE FROM objects", NULL, NULL, NULL) == SQLITE_READONLY);
    sqlite3_close(db);

    CHECK(sqlite3_open(good, &db) == SQLITE_OK);
    g_autofree char *newer = g_strdup_printf("PRAGMA user_version = %d", STORE_SCHEMA_VERSION + 1);
    CHECK(sqlite3_exec(db, newer, NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(db);
    CHECK(store_db_open_readonly(good, &error) == NULL);
    g_free(want);
    want = g_strdup_printf("%s was recorded by a newer heaplens (schema %d); this heaplens reads "
                           "schemas %d to %d", good, STORE_SCHEMA_VERSION + 1,
                           STORE_SCHEMA_OLDEST_READ, STORE_SCHEMA_VERSION);
    CHECK_ERROR(error, STORE_ERROR_SQLITE, want);
    CHECK(strcmp(error->message, want) == 0);
    g_clear_error(&error);
    /* Schema 1 had a row per allocation: refused, with what to do. */
    CHECK(sqlite3_open(good, &db) == SQLITE_OK);
    CHECK(sqlite3_exec(db, "PRAGMA user_version = 1", NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(db);
    CHECK(store_db_open_readonly(good, &error) == NULL);
    g_free(want);
    want = g_strdup_printf("%s was recorded by an older heaplens (schema 1); record it again", good);
    CHECK_ERROR(error, STORE_ERROR_SQLITE, want);
    CHECK(strcmp(error->message, want) == 0);
    g_clear_error(&error);
    tmp_dir_free(dir);
}

/* Reads `path` with store_db_open_readonly (and a second connection as the refs reader opens
 * one) as a user who may not write it: nobody (uid 65534) when we are root, else ourselves with
 * the file made read-only. TRUE when both read `sql` as `want`. */
static gboolean read_as_reader(const char *path, const char *sql, long long want)
{
    if (getuid() != 0)
        CHECK(chmod(path, 0444) == 0);
    pid_t child = fork();
    g_assert(child >= 0);
    if (child == 0) {
        if (getuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0))
            _exit(2);
        g_autoptr(GError) error = NULL;
        sqlite3 *db = store_db_open_readonly(path, &error);
        if (!db) {
            fprintf(stderr, "%s\n", error->message);
            _exit(3);
        }
        sqlite3 *again = store_db_open_again(db);
        gboolean ok = again && db_int(db, sql) == want && db_int(again, sql) == want;
        sqlite3_close(again);
        sqlite3_close(db);
        _exit(ok ? 0 : 4);
    }
    int status = 0;
    waitpid(child, &status, 0);
    if (getuid() != 0)
        CHECK(chmod(path, 0644) == 0);
    return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/* A finished recording in WAL mode (a reader kept it open at its end) that this user may not
 * write: a read leaves no empty -wal and -shm beside it (read as immutable: nobody has it open).
 * While another connection has it open, the read sees what that connection's -wal holds. */
static void test_readonly_wal_quiet(void)
{
    char *dir = tmp_dir_new();
    g_autofree char *path = golden_db(dir, FALSE, NULL);
    g_autofree char *wal = g_strconcat(path, "-wal", NULL);
    g_autofree char *shm = g_strconcat(path, "-shm", NULL);
    sqlite3 *db = NULL;
    CHECK(sqlite3_open(path, &db) == SQLITE_OK);
    CHECK(sqlite3_exec(db, "PRAGMA journal_mode = WAL", NULL, NULL, NULL) == SQLITE_OK);
    sqlite3_close(db);
    CHECK(chmod(dir, 01777) == 0 && chmod(path, 0644) == 0);
    CHECK(!g_file_test(wal, G_FILE_TEST_EXISTS) && !g_file_test(shm, G_FILE_TEST_EXISTS));

    CHECK(read_as_reader(path, "SELECT count(*) FROM objects", 7));
    CHECK(!g_file_test(wal, G_FILE_TEST_EXISTS));
    CHECK(!g_file_test(shm, G_FILE_TEST_EXISTS));
    CHECK(sqlite3_open(path, &db) == SQLITE_OK);
    CHECK_ROWS(db, "PRAGMA journal_mode", "wal\n");

    /* another connection open, its last transaction in the -wal only: read, not ignored */
    CHECK(sqlite3_exec(db, "PRAGMA wal_autocheckpoint = 0; CREATE TABLE extra (x);"
                           "INSERT INTO extra VALUES (1), (2)",
                       NULL, NULL, NULL) == SQLITE_OK);
    CHECK(read_as_reader(path, "SELECT count(*) FROM extra", 2));
    sqlite3_close(db);
    tmp_dir_free(dir);
}

/* `sql` in one transaction of a read-write connection to `path`; with `check`, the file is
 * checked first (store_db_damage_new: returned) and the commit notes it sound
 * (store_db_commit_sound). */
static char *sound_write(const char *path, const char *sql, gboolean check)
{
    sqlite3 *db = NULL;
    char *damage = NULL;
    store_db_check seen = {0};
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) != SQLITE_OK ||
        sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
        abort();
    if (check)
        damage = store_db_damage_new(db, &seen);
    if (damage) {
        sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
    } else {
        CHECK(sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK);
        CHECK(check ? store_db_commit_sound(db, &seen)
                    : sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) == SQLITE_OK);
    }
    sqlite3_close(db);
    return damage;
}

/* Overwrites the b-tree header of page 2 (4096-byte pages) in place, as a bad disk would: the
 * file's change counter stays as it was. With `keep_time` its modification time is put back
 * too, which no real damage does: then nothing says the file changed, and finding the damage
 * or not tells whether the file was read. */
static void sound_damage(const char *path, gboolean keep_time)
{
    static const unsigned char junk[8] = {0xA5, 0xA5, 0xA5, 0xA5, 0xA5, 0xA5, 0xA5, 0xA5};
    struct stat before;
    CHECK(stat(path, &before) == 0);
    int fd = open(path, O_WRONLY);
    CHECK(fd >= 0 && pwrite(fd, junk, sizeof junk, 4096) == (ssize_t)sizeof junk);
    if (keep_time) {
        const struct timespec times[2] = {before.st_atim, before.st_mtim};
        CHECK(futimens(fd, times) == 0);
    }
    close(fd);
}

/* What store_db_damage_new of a fresh connection to `path` says (another command's). */
static char *sound_check(const char *path)
{
    sqlite3 *db = NULL;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK ||
        sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
        abort();
    char *damage = store_db_damage_new(db, NULL);
    sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
    sqlite3_close(db);
    return damage;
}

/* The file change counter of `path`'s header. */
static int64_t sound_counter(const char *path)
{
    unsigned char head[28] = {0};
    int fd = open(path, O_RDONLY);
    CHECK(fd >= 0 && pread(fd, head, sizeof head, 0) == (ssize_t)sizeof head);
    close(fd);
    return (int64_t)head[24] << 24 | head[25] << 16 | head[26] << 8 | head[27];
}

/* Whether the damage made by sound_damage(path, keep_time) is found by the next check. */
static gboolean sound_damage_found(const char *path, gboolean keep_time)
{
    sound_damage(path, keep_time);
    char *damage = sound_check(path);
    g_free(damage);
    return damage != NULL;
}

/* A file a command checked and then wrote is not read again by the next command that writes
 * (the whole-file check took 0.7-1.8 s each time); one that anybody changed since is. The proof
 * that the check was skipped: damage with the file's time put back is not found. */
static void test_damage_checked_once(void)
{
    char *dir = tmp_dir_new();
    static const char fill[] = "PRAGMA page_size = 4096; CREATE TABLE t (x);"
                               "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n"
                               " WHERE i < 2000) INSERT INTO t SELECT randomblob(100) FROM n";
    const char *const names[] = {"noted", "damaged", "written", "wal", "unnoted", "twice"};
    char *path[G_N_ELEMENTS(names)];
    for (size_t i = 0; i < G_N_ELEMENTS(names); i++) {
        path[i] = g_strdup_printf("%s/%s.db", dir, names[i]);
        g_free(sound_write(path[i], fill, FALSE));
        if (i == 3) { /* outside a transaction */
            sqlite3 *wal = NULL;
            CHECK(sqlite3_open_v2(path[i], &wal, SQLITE_OPEN_READWRITE, NULL) == SQLITE_OK &&
                  sqlite3_exec(wal, "PRAGMA journal_mode = WAL", NULL, NULL, NULL) == SQLITE_OK);
            sqlite3_close(wal);
        }
        if (i != 4)
            CHECK(sound_write(path[i], "INSERT INTO t VALUES (1)", TRUE) == NULL);
    }
    /* the note: the counter the commit left and the time it gave the file, ten seconds back */
    sqlite3 *db = NULL;
    struct stat st;
    struct timespec now;
    CHECK(sqlite3_open_v2(path[0], &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK);
    CHECK(stat(path[0], &st) == 0 && clock_gettime(CLOCK_REALTIME, &now) == 0);
    int64_t mtime = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
    CHECK(db_int(db, "SELECT count(*) FROM file_check") == 1);
    CHECK(db_int(db, "SELECT mtime_ns FROM file_check") == mtime);
    CHECK(db_int(db, "SELECT counter FROM file_check") == sound_counter(path[0]));
    CHECK(now.tv_sec - st.st_mtim.tv_sec >= 9 && now.tv_sec - st.st_mtim.tv_sec < 60);
    sqlite3_close(db);
    /* noted and unchanged: not read again (its damage, time put back, is not seen) */
    CHECK(!sound_damage_found(path[0], TRUE));
    /* noted, then damaged in place: its time says so */
    CHECK(sound_damage_found(path[1], FALSE));
    /* noted, then written by a writer that did not check: the counter says so */
    g_free(sound_write(path[2], "INSERT INTO t VALUES (2)", FALSE));
    CHECK(sound_damage_found(path[2], TRUE));
    /* WAL mode: commits go to the WAL and leave the counter; never trusted */
    CHECK(sound_damage_found(path[3], TRUE));
    /* never noted */
    CHECK(sound_damage_found(path[4], TRUE));
    /* a checked write skipped the check and noted again: still trusted after two */
    CHECK(sound_write(path[5], "INSERT INTO t VALUES (3)", TRUE) == NULL);
    CHECK(!sound_damage_found(path[5], TRUE));
    for (size_t i = 0; i < G_N_ELEMENTS(names); i++)
        g_free(path[i]);
    tmp_dir_free(dir);
}

/* Whether another process would find SQLite's write lock on `path` taken (RESERVED: the byte after
 * the pending byte, 2^30 + 1). The child asks the kernel only: a forked child must not use SQLite
 * (it inherits the parent's view of its own locks), and a descriptor the parent opened and
 * closed would itself drop the parent's locks. */
static gboolean sound_write_locked(const char *path)
{
    pid_t child = fork();
    CHECK(child >= 0);
    if (child == 0) {
        struct flock lock = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0x40000001,
                             .l_len = 1};
        int fd = open(path, O_RDWR);
        _exit(fd < 0 || fcntl(fd, F_GETLK, &lock) != 0 ? 2 : lock.l_type == F_UNLCK ? 0 : 1);
    }
    int status = 0;
    CHECK(waitpid(child, &status, 0) == child && WIFEXITED(status) && WEXITSTATUS(status) < 2);
    return WIFEXITED(status) && WEXITSTATUS(status) == 1;
}

/* The check reads the file's header without a descriptor of its own: closing one dropped every
 * POSIX lock this process held on the file, SQLite's write lock included, and two commands
 * storing into one file at the same time then wrote it together ("disk I/O error"). */
static void test_damage_check_keeps_locks(void)
{
    char *dir = tmp_dir_new();
    char *path = g_strdup_printf("%s/locked.db", dir);
    g_free(sound_write(path, "CREATE TABLE t (x); INSERT INTO t VALUES (1)", FALSE));
    for (int noted = 0; noted < 2; noted++) { /* checked whole, then skipped by the note */
        sqlite3 *db = NULL;
        store_db_check seen = {0};
        CHECK(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE, NULL) == SQLITE_OK &&
              sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) == SQLITE_OK);
        CHECK(sound_write_locked(path));
        char *damage = store_db_damage_new(db, &seen);
        CHECK(damage == NULL && seen.counted);
        g_free(damage);
        CHECK(sound_write_locked(path));
        CHECK(sqlite3_exec(db, "INSERT INTO t VALUES (2)", NULL, NULL, NULL) == SQLITE_OK);
        CHECK(store_db_commit_sound(db, &seen));
        sqlite3_close(db);
        CHECK(!sound_write_locked(path));
    }
    g_free(path);
    tmp_dir_free(dir);
}

static const test_case cases[] = {
    {"refuse_existing", test_refuse_existing},
    {"open_readonly", test_open_readonly},
    {"readonly_wal_quiet", test_readonly_wal_quiet},
    {"damage_checked_once", test_damage_checked_once},
    {"damage_check_keeps_locks", test_damage_check_keeps_locks},
};

int main(int argc, char **argv)
{
    return test_cases_main(argc, argv, cases, G_N_ELEMENTS(cases), &failures);
}
