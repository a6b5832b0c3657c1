/* resident_client.c — see resident_client.h. */
#define _GNU_SOURCE
#include "session/resident_client.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "collector/attach_config.h"
#include "query/query.h"

/* The process's uid (its /proc entry's owner), or -1. */
static long process_uid(pid_t pid) {
    char proc[32];
    struct stat st;
    snprintf(proc, sizeof proc, "/proc/%ld", (long)pid);
    return stat(proc, &st) == 0 ? (long)st.st_uid : -1;
}

/* The socket's path when it is a socket of the process's user in a directory only that user can
 * enter; FALSE otherwise (a file someone else planted is never connected to). */
static gboolean resident_path(pid_t pid, char *out, size_t size) {
    long uid = process_uid(pid);
    struct stat st, dst;
    if (uid < 0)
        return FALSE;
    int n = snprintf(out, size, HL_RESIDENT_SOCKET_FMT, (unsigned)uid, (long)pid);
    if (n < 0 || (size_t)n >= size || (size_t)n >= sizeof(((struct sockaddr_un *)0)->sun_path))
        return FALSE;
    g_autofree char *dir = g_path_get_dirname(out);
    return lstat(dir, &dst) == 0 && S_ISDIR(dst.st_mode) && (long)dst.st_uid == uid &&
           !(dst.st_mode & 077) && lstat(out, &st) == 0 && S_ISSOCK(st.st_mode) &&
           (long)st.st_uid == uid;
}

/* A connection to the collector of `pid` (its path checked by resident_path, its peer that very
 * process of that user), or -1: errno says why, 0 when the peer is another process. */
static int resident_connect(pid_t pid) {
    char path[128];
    errno = 0;
    if (!resident_path(pid, path, sizeof path))
        return -1;
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    memcpy(a.sun_path, path, strlen(path) + 1);
    struct ucred cred;
    socklen_t len = sizeof cred;
    if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
        getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0) {
        if ((long)cred.uid == process_uid(pid) && cred.pid == pid)
            return fd;
        errno = 0;
    }
    int saved = errno;
    if (fd >= 0)
        close(fd);
    errno = saved;
    return -1;
}

gboolean resident_client_present(pid_t pid) {
    /* A socket left by an earlier process of the same pid answers no one: not this one's. */
    int fd = resident_connect(pid);
    if (fd < 0)
        return FALSE;
    close(fd); /* the collector reads nothing and answers an error: it listens on */
    return TRUE;
}

gboolean resident_client_attach(pid_t pid, const char *client_data, uint32_t timeout_ms,
                                GError **error) {
    gboolean ok = FALSE;
    int fd = resident_connect(pid);
    if (fd < 0) {
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_USAGE,
                    "cannot reach the resident heaplens collector of process %ld (%s)", (long)pid,
                    errno ? g_strerror(errno) : "not that process's");
        goto out;
    }
    size_t n = strlen(client_data);
    if (write(fd, client_data, n) != (ssize_t)n || shutdown(fd, SHUT_WR) != 0) {
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_IO,
                    "the resident heaplens collector of process %ld: %s", (long)pid,
                    g_strerror(errno));
        goto out;
    }
    char answer[128] = "";
    size_t got = 0;
    struct pollfd p = {.fd = fd, .events = POLLIN};
    while (got + 1 < sizeof answer && poll(&p, 1, (int)timeout_ms) > 0) {
        ssize_t k = read(fd, answer + got, sizeof answer - 1 - got);
        if (k <= 0)
            break;
        got += (size_t)k;
    }
    answer[got] = 0;
    answer[strcspn(answer, "\n")] = 0;
    if (strcmp(answer, "ok") != 0) {
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_USAGE,
                    "the resident heaplens collector of process %ld did not start a session (%s)",
                    (long)pid, answer[0] ? answer : "no answer");
        goto out;
    }
    ok = TRUE;
out:
    if (fd >= 0)
        close(fd);
    return ok;
}
