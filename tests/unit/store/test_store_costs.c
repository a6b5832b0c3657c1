/* test_store_costs.c — what the writer does to cost less, checked against what it replaced.
 *
 * The schema written as a file (store_schema_image, built with heaplens from
 * store_schema_create by store_schema_image_gen): a file made from it is the file that code
 * makes, settings included, and the writer writes it. The set of ALLOC_COUNTS keys
 * (store_alloc_keys, store_gc.c) against GLib's hash table with a fixed seed.
 */
#define _GNU_SOURCE
#include "store_test.h"
#include "tests/unit/common/test_rng.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

/* What the two files must agree on: the schema (root pages too), every setting a reader or the
 * writer sees, and that the file is sound. */
static char *db_describe(sqlite3 *db)
{
    static const char *const queries[] = {
        "SELECT type, name, tbl_name, rootpage, sql FROM sqlite_schema ORDER BY rowid",
        "PRAGMA page_size", "PRAGMA page_count", "PRAGMA freelist_count", "PRAGMA journal_mode",
        "PRAGMA application_id", "PRAGMA user_version", "PRAGMA schema_version",
        "PRAGMA auto_vacuum", "PRAGMA encoding", "PRAGMA synchronous", "PRAGMA cache_size",
        "PRAGMA temp_store", "PRAGMA wal_autocheckpoint", "PRAGMA foreign_keys",
        "PRAGMA secure_delete", "PRAGMA locking_mode", "PRAGMA mmap_size",
        "PRAGMA integrity_check",
    };
    GString *out = g_string_new(NULL);
    for (size_t i = 0; i < G_N_ELEMENTS(queries); i++) {
        g_autofree char *rows = db_rows(db, queries[i]);
        g_string_append_printf(out, "%s:\n%s", queries[i], rows);
    }
    return g_string_free(out, FALSE);
}

/* Creates `path` as the writer does (O_EXCL, 0600, its VFS and flags), the schema from the image
 * or by store_schema_create's SQL. */
static sqlite3 *schema_file_open(const char *path, gboolean image)
{
    g_autoptr(GError) error = NULL;
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    g_assert(fd >= 0);
    if (image)
        CHECK(store_schema_image_write(fd, path, &error));
    close(fd);
    sqlite3 *db = NULL;
    g_assert(sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX,
                             store_vfs_writer()) == SQLITE_OK);
    CHECK(image ? store_schema_connect(db, path, &error) : store_schema_create(db, path, &error));
    if (error)
        fprintf(stderr, "%s\n", error->message);
    return db;
}

/* A file made from the image is the one store_schema_create makes: the same schema and settings
 * on the writer's connection, and once closed (its WAL copied in) the same bytes. */
static void test_schema_image(void)
{
    char *dir = tmp_dir_new();
    g_autofree char *by_sql = g_build_filename(dir, "sql.db", NULL);
    g_autofree char *by_image = g_build_filename(dir, "image.db", NULL);
    CHECK(store_schema_image.size > 0 && store_schema_image.n_runs > 0);

    sqlite3 *a = schema_file_open(by_sql, FALSE);
    sqlite3 *b = schema_file_open(by_image, TRUE);
    g_autofree char *want = db_describe(a);
    g_autofree char *got = db_describe(b);
    CHECK_STR(got, want);
    CHECK(strstr(got, "PRAGMA journal_mode:\nwal\n") != NULL);
    CHECK(strstr(got, "PRAGMA synchronous:\n0\n") != NULL);
    CHECK(strstr(got, "PRAGMA integrity_check:\nok\n") != NULL);
    CHECK(strstr(got, "CREATE TABLE run") != NULL);
    sqlite3_close(a);
    sqlite3_close(b);

    g_autofree gchar *sql_bytes = NULL, *image_bytes = NULL;
    gsize sql_len = 0, image_len = 0;
    CHECK(g_file_get_contents(by_sql, &sql_bytes, &sql_len, NULL));
    CHECK(g_file_get_contents(by_image, &image_bytes, &image_len, NULL));
    CHECK_INT(sql_len, store_schema_image.size);
    CHECK_INT(image_len, store_schema_image.size);
    CHECK(sql_len == image_len && memcmp(sql_bytes, image_bytes, sql_len) == 0);
    tmp_dir_free(dir);
}

/* store_writer_create writes the image: its file is the image's size before anything is
 * checkpointed (creating the schema by SQL leaves it in the WAL, the file one page), and the
 * recording it finishes reads as one. */
static void test_writer_uses_image(void)
{
    char *dir = tmp_dir_new();
    g_autofree char *path = g_build_filename(dir, "rec.db", NULL);
    g_autoptr(GError) error = NULL;
    store_writer *w = store_writer_create(path, "cmd", &error);
    g_assert(w != NULL);
    struct stat st;
    CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0600);
    CHECK_INT(st.st_size, store_schema_image.size);
    store_summary sum;
    CHECK(store_writer_finish(w, &sum, &error));
    sqlite3 *db = store_db_open_readonly(path, &error);
    CHECK(db != NULL);
    if (db) {
        g_autofree char *run = db_rows(db, "SELECT command, status FROM run");
        CHECK_STR(run, "cmd|no-data\n");
        g_autofree char *ids = db_rows(db, "PRAGMA application_id");
        g_autofree char *want = g_strdup_printf("%d\n", (int)STORE_APPLICATION_ID);
        CHECK_STR(ids, want);
    }
    sqlite3_close(db);
    tmp_dir_free(dir);
}

/* In test_image_disk_full's child: whether the writer of `path` was created, and its error. */
static char *image_create(void *path)
{
    GError *err = NULL;
    store_writer *w = store_writer_create(path, "full", &err);
    return g_strdup_printf("%d|%s", w != NULL, err ? err->message : "");
}

/* A disk with no room for the image (RLIMIT_FSIZE below its size, in a child): one error that
 * names the file and the cause, and no file left behind. */
static void test_image_disk_full(void)
{
    char *dir = tmp_dir_new();
    g_autofree char *path = g_build_filename(dir, "full.db", NULL);
    g_autofree char *got = run_disk_full(16384, image_create, (void *)path);
    CHECK(got[0] != '\0');
    g_autofree char *want = g_strdup_printf("0|cannot create %s: %s", path, g_strerror(EFBIG));
    CHECK_STR(got, want);
    CHECK(access(path, F_OK) != 0);
    tmp_dir_free(dir);
}

static guint key_hash(gconstpointer p)
{
    const store_alloc_key *k = p;
    return k->gc ^ k->type_id * 31u ^ k->os_tid * 131u ^ k->heap * 7u;
}

static gboolean key_equal(gconstpointer a, gconstpointer b)
{
    return memcmp(a, b, sizeof(store_alloc_key)) == 0;
}

/* Random keys from small ranges (repeats are common), emptied at random points as the writer
 * does at each GC's end: every add answers as a GHashTable of the same keys does, across
 * growths, and with the stamp about to wrap. */
static void test_alloc_keys_differential(void)
{
    test_rng_seed(20261127);
    for (int round = 0; round < 2; round++) {
        store_alloc_keys set = {0};
        GHashTable *naive = g_hash_table_new_full(key_hash, key_equal, g_free, NULL);
        uint64_t adds = 0, added = 0, mismatches = 0;
        uint32_t gc = 1;
        for (int interval = 0; interval < 400; interval++) {
            if (round == 1 && interval == 5) /* a wrap soon: stamps of old slots come back */
                set.stamp = UINT32_MAX - 100;
            gboolean big = interval % 50 == 0; /* a large GC's many keys: the set grows */
            uint32_t n = (uint32_t)(rng() % (big ? 40000 : 300));
            uint32_t types = 1 + (uint32_t)(rng() % (big ? 10000 : 200));
            uint32_t threads = 1 + (uint32_t)(rng() % 8);
            for (uint32_t i = 0; i < n; i++) {
                store_alloc_key k = {gc, (uint32_t)(rng() % types), (uint32_t)(rng() % threads),
                                     (uint32_t)(rng() % 5)};
                gboolean want = !g_hash_table_contains(naive, &k);
                if (want)
                    g_hash_table_add(naive, g_memdup2(&k, sizeof k));
                gboolean got = store_alloc_keys_add(&set, k);
                mismatches += got != want;
                adds++;
                added += got;
            }
            CHECK_INT(set.count, g_hash_table_size(naive));
            store_alloc_keys_clear(&set);
            g_hash_table_remove_all(naive);
            gc += (uint32_t)(rng() % 2); /* the tail's interval is the next GC's number too */
        }
        CHECK_INT(mismatches, 0);
        CHECK(added > 0 && added < adds); /* both answers were given */
        CHECK(set.capacity >= 32768);     /* it grew */
        store_alloc_keys_release(&set);
        CHECK(set.slots == NULL && set.capacity == 0);
        g_hash_table_unref(naive);
    }
}

static const test_case cases[] = {
    {"schema_image", test_schema_image},
    {"writer_uses_image", test_writer_uses_image},
    {"image_disk_full", test_image_disk_full},
    {"alloc_keys_differential", test_alloc_keys_differential},
};

int main(int argc, char **argv)
{
    return test_cases_main(argc, argv, cases, G_N_ELEMENTS(cases), &failures);
}
