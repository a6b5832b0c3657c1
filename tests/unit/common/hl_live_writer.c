/* hl_live_writer.c — see hl_live_writer.h. */
#include "tests/unit/common/hl_live_writer.h"

#include <sqlite3.h>

gpointer hl_live_writer_thread(gpointer data)
{
    hl_live_writer *a = data;
    a->ok = store_writer_serve_connection(a->w, a->conn, -1, a->stop, 2000, NULL);
    return NULL;
}

int64_t hl_db_wait_int(const char *path, const char *sql, int64_t want)
{
    int64_t seen = -1;
    for (gint64 deadline = g_get_monotonic_time() + 30 * G_USEC_PER_SEC;
         seen < want && g_get_monotonic_time() < deadline;) {
        sqlite3 *db = NULL;
        sqlite3_stmt *st = NULL;
        /* Read-only, not created: the writer may not have made the file yet. */
        if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
            sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK &&
            sqlite3_step(st) == SQLITE_ROW)
            seen = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
        sqlite3_close(db);
        if (seen < want)
            g_usleep(2000); /* polling for the row, not timing it */
    }
    return seen;
}
