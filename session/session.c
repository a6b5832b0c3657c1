/* session.c — see session.h. */
#include "session/session.h"
#include "store/store.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "session/attach_ipc.h"
#include "query/query.h"

char *session_private_dir_make(char *dir, GError **error) {
    if (mkdir(dir, 0700) != 0 && errno != EEXIST) {
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_IO, "cannot create %s: %s", dir, g_strerror(errno));
        g_free(dir);
        return NULL;
    }
    struct stat st;
    if (lstat(dir, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != getuid() ||
        (st.st_mode & 077) != 0) {
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_IO,
                    "%s is not a private directory of this user (it must be mode 0700); "
                    "remove it and try again", dir);
        g_free(dir);
        return NULL;
    }
    return dir;
}

/* The sessions' directory, created if needed; NULL (and an error) when it is not safe to use. */
static char *session_dir(GError **error) {
    const char *runtime = g_getenv("XDG_RUNTIME_DIR");
    return session_private_dir_make(runtime && *runtime && g_path_is_absolute(runtime)
                                   ? g_build_filename(runtime, "heaplens", NULL)
                                   : g_strdup_printf(SESSION_SHORT_DIR_FMT, (unsigned)getuid()),
                               error);
}

static char *session_path(pid_t pid, GError **error) {
    g_autofree char *dir = session_dir(error);
    if (!dir)
        return NULL;
    g_autofree char *name = g_strdup_printf("%ld", (long)pid);
    return g_build_filename(dir, name, NULL);
}

/* Session files of processes that are gone (their recorder was killed before it could remove
 * them): only names that are pids, of regular files, in our private directory. */
static void session_stale_remove(const char *dir) {
    g_autoptr(GDir) d = g_dir_open(dir, 0, NULL);
    const char *name;
    while (d && (name = g_dir_read_name(d)) != NULL) {
        char *end = NULL;
        long pid = strtol(name, &end, 10);
        struct stat st;
        g_autofree char *path = g_build_filename(dir, name, NULL);
        if (pid > 0 && end && *end == 0 && name[0] != '0' && kill((pid_t)pid, 0) != 0 &&
            errno == ESRCH && lstat(path, &st) == 0 && S_ISREG(st.st_mode))
            unlink(path);
    }
}

gboolean query_session_write(pid_t pid, const char *control, const char *db, GError **error) {
    g_autofree char *dir = session_dir(error);
    if (!dir)
        return FALSE;
    session_stale_remove(dir);
    g_autofree char *path = session_path(pid, error);
    if (!path)
        return FALSE;
    g_autofree char *absolute = g_canonicalize_filename(db, NULL);
    g_autofree char *text = g_strdup_printf("control %s\ndb %s\n", control, absolute);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
    gboolean ok = fd >= 0 && write(fd, text, strlen(text)) == (ssize_t)strlen(text);
    if (fd >= 0)
        close(fd);
    if (!ok)
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_IO, "cannot write %s: %s", path, g_strerror(errno));
    return ok;
}

/* A recorded process whose parent is `pid`, 0 if none: `heaplens snapshot` given the pid of
 * `heaplens record` itself (whose command line holds the program's, so `pgrep -f` finds it
 * first). */
static pid_t session_recorded_child(pid_t pid) {
    g_autofree char *dir = session_dir(NULL);
    g_autoptr(GDir) d = dir ? g_dir_open(dir, 0, NULL) : NULL;
    const char *name;
    while (d && (name = g_dir_read_name(d))) {
        char *end;
        long child = strtol(name, &end, 10);
        if (*end == '\0' && child > 0 && store_process_parent((pid_t)child) == pid)
            return (pid_t)child;
    }
    return 0;
}

/* Why `pid` has no session, in the words that lead on: no such process; a .NET process (it has a
 * diagnostic socket), which 'heaplens attach' can record from now on; or any other process. */
static void session_not_recorded(pid_t pid, GError **error) {
    g_autofree char *proc = g_strdup_printf("/proc/%ld", (long)pid);
    g_autoptr(GError) why = NULL;
    g_autofree char *socket = NULL;
    if (!g_file_test(proc, G_FILE_TEST_IS_DIR)) {
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_NOT_FOUND, "no process with id %ld",
                    (long)pid);
        return;
    }
    socket = attach_ipc_find_socket(pid, &why);
    if (socket)
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_NOT_FOUND,
                    "process %ld is not being recorded; 'heaplens attach %ld' records it from now "
                    "on (snapshots included)", (long)pid, (long)pid);
    else
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_NOT_FOUND,
                    "process %ld is not being recorded (start it with 'heaplens record')",
                    (long)pid);
}

/* TRUE when nothing serves the control socket `path` any more: its writer is gone (a recorder
 * and writer killed together, or a writer that ended an attach session whose recorder was
 * killed) and the session file that names it is stale. A writer that is only slow (its backlog
 * full: EAGAIN) is alive; nothing here waits. */
static gboolean session_control_dead(const char *path) {
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof addr.sun_path)
        return FALSE;
    strcpy(addr.sun_path, path);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return FALSE;
    gboolean dead = connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0 &&
                    (errno == ENOENT || errno == ECONNREFUSED);
    close(fd);
    return dead;
}

gboolean query_session_read(pid_t pid, query_session *session, GError **error) {
    memset(session, 0, sizeof *session);
    g_autofree char *path = session_path(pid, error);
    if (!path)
        return FALSE;
    g_autofree char *text = NULL;
    if (!g_file_get_contents(path, &text, NULL, NULL)) {
        pid_t child = session_recorded_child(pid);
        if (child > 0)
            g_set_error(error, QUERY_ERROR, QUERY_ERROR_NOT_FOUND,
                        "process %ld is not being recorded, its child %ld is: heaplens snapshot %ld",
                        (long)pid, (long)child, (long)child);
        else
            session_not_recorded(pid, error);
        return FALSE;
    }
    g_auto(GStrv) lines = g_strsplit(text, "\n", -1);
    for (char **l = lines; *l; l++) {
        if (g_str_has_prefix(*l, "control "))
            session->control = g_strdup(*l + 8);
        else if (g_str_has_prefix(*l, "db "))
            session->db = g_strdup(*l + 3);
    }
    if (!session->control || !session->db) {
        query_session_clear(session);
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_IO, "%s is not a heaplens session file", path);
        return FALSE;
    }
    if (session_control_dead(session->control)) {
        /* its session ended without removing it: the process is not recorded now (and may be
         * attached again) */
        query_session_clear(session);
        unlink(path);
        session_not_recorded(pid, error);
        return FALSE;
    }
    return TRUE;
}

/* TRUE when the process has the collector loaded: it is being recorded, though its writer may
 * not have written the session file yet (a descendant's writer starts after the descendant). */
static gboolean collector_loaded(pid_t pid) {
    g_autofree char *maps_path = g_strdup_printf("/proc/%ld/maps", (long)pid);
    g_autofree char *maps = NULL;
    return g_file_get_contents(maps_path, &maps, NULL, NULL) && strstr(maps, "/libheaplens.so") != NULL;
}

gboolean query_session_wait(pid_t pid, unsigned timeout_ms, query_session *session, GError **error) {
    const struct timespec pause = {.tv_nsec = 20 * 1000 * 1000};
    for (unsigned waited = 0;; waited += 20) {
        g_autoptr(GError) missing = NULL;
        if (query_session_read(pid, session, &missing))
            return TRUE;
        if (!g_error_matches(missing, QUERY_ERROR, QUERY_ERROR_NOT_FOUND) || waited >= timeout_ms ||
            !collector_loaded(pid)) {
            g_propagate_error(error, g_steal_pointer(&missing));
            return FALSE;
        }
        nanosleep(&pause, NULL);
    }
}

void query_session_remove(pid_t pid) {
    g_autofree char *path = session_path(pid, NULL);
    if (path)
        unlink(path);
}

void query_session_clear(query_session *session) {
    g_free(session->control);
    g_free(session->db);
    memset(session, 0, sizeof *session);
}
