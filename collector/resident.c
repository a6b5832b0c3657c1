/* resident.c — see resident.h. */
#define _GNU_SOURCE
#include "collector/resident.h"

#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "collector/attach_config.h"
#include "collector/collector.h"
#include "collector/mem.h"

/* The runtime's ICorProfilerInfo, kept across hl_session_reset (which zeroes the profiler): the
 * runtime holds us until the process exits, so it stays valid. */
static void *resident_info;
static atomic_bool resident;

bool hl_resident_socket_path(unsigned uid, long pid, char *out, size_t size) {
    int n = snprintf(out, size, HL_RESIDENT_SOCKET_FMT, uid, pid);
    return n > 0 && (size_t)n < size && (size_t)n < sizeof(((struct sockaddr_un *)0)->sun_path);
}

bool hl_resident_is(void) { return atomic_load(&resident); }

/* The socket, listening; -1 when the directory is not ours alone or the socket cannot be made. */
static int resident_listen(void) {
    char path[108], dir[64];
    if (!hl_resident_socket_path(getuid(), (long)getpid(), path, sizeof path))
        return -1;
    snprintf(dir, sizeof dir, "/tmp/heaplens-%u", getuid());
    struct stat st;
    if (mkdir(dir, 0700) != 0 && errno != EEXIST)
        return -1;
    if (lstat(dir, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != getuid() ||
        (st.st_mode & 077))
        return -1; /* someone else's, or open to others: never listen there */
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    memcpy(a.sun_path, path, strlen(path) + 1);
    unlink(path);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(fd, 4) != 0) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    return fd;
}

/* Listening since hl_resident_listen_early, before the waiting thread takes it; -1 otherwise. */
static int resident_early_fd = -1;

static void resident_unlink(void) {
    char path[108];
    if (hl_resident_socket_path(getuid(), (long)getpid(), path, sizeof path))
        unlink(path);
}

/* One request: the client data until the client closes its side, then the answer. True when a
 * session started. */
static bool resident_serve(hl_profiler *p, int conn) {
    struct ucred cred;
    socklen_t len = sizeof cred;
    if (getsockopt(conn, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0 ||
        (cred.uid != getuid() && cred.uid != 0))
        return false;
    char data[HL_ATTACH_CONFIG_MAX];
    size_t n = 0;
    struct timeval tv = {10, 0}; /* a client that sends nothing is given up */
    setsockopt(conn, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    for (ssize_t got; n < sizeof data && (got = read(conn, data + n, sizeof data - n)) > 0;)
        n += (size_t)got;
    if (n == 0)
        return false; /* a client that only looked (resident_client_present) */
    HRESULT hr = hl_profiler_session_resume(p, resident_info, data, n);
    char answer[64];
    int k = hr == S_OK ? snprintf(answer, sizeof answer, "ok\n")
                       : snprintf(answer, sizeof answer, "error 0x%08x\n", (unsigned)hr);
    /* MSG_NOSIGNAL: a client gone must not SIGPIPE the program */
    if (send(conn, answer, (size_t)k, MSG_NOSIGNAL) < 0) {
        /* the client is gone: the session runs on and ends when its writer is found gone */
    }
    return hr == S_OK;
}

static void *resident_main(void *arg) {
    hl_profiler *p = arg;
    /* HEAPLENS_RESIDENT_DELAY_MS (tests): a slow reset, as under load; a next attach must still
     * find the socket (hl_resident_listen_early). */
    const char *delay = getenv("HEAPLENS_RESIDENT_DELAY_MS");
    long delay_ms = delay ? strtol(delay, NULL, 10) : 0;
    if (delay_ms > 0 && delay_ms <= 60000) {
        struct timespec d = {delay_ms / 1000, (delay_ms % 1000) * 1000000};
        nanosleep(&d, NULL);
    }
    /* A GC callback that began before the mask changed may still be running: the session's
     * memory goes once no GC is under way (the mask is off, so no new one calls us). */
    for (int i = 0; i < 10000 && hl_gc_in_progress(&p->gcs); i++) {
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
    hl_session_reset(p); /* joins the collector thread: it returns right after calling us */
    malloc_trim(0);      /* the C library's free pages back, as after a detach */
    const char *stats = getenv("HEAPLENS_STATS");
    if (stats && strcmp(stats, "1") == 0) {
        hl_mem_stats m = hl_mem_stats_get();
        fprintf(stderr, "heaplens: dormant: the collector holds %llu heap bytes and %llu mapped "
                        "(counters and rewritten bodies of --count stay)\n",
                (unsigned long long)m.heap_bytes, (unsigned long long)m.mapped_bytes);
    }
    int fd = resident_early_fd >= 0 ? resident_early_fd : resident_listen();
    resident_early_fd = -1;
    if (fd < 0) {
        fprintf(stderr, "heaplens: the resident collector cannot listen (%s); it stays dormant\n",
                strerror(errno));
        return NULL;
    }
    for (;;) {
        int conn = accept4(fd, NULL, NULL, SOCK_CLOEXEC);
        if (conn < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            break;
        }
        bool started = resident_serve(p, conn);
        close(conn);
        if (started)
            break; /* the session's end calls hl_resident_wait again */
        /* a refused start leaves the collector as it was: reset for the next request */
        if (p->info)
            hl_session_reset(p);
    }
    close(fd);
    resident_unlink();
    return NULL;
}

void hl_resident_exit(void) {
    if (atomic_load(&resident) || resident_early_fd >= 0)
        resident_unlink();
}

void hl_resident_listen_early(void) {
    if (resident_early_fd < 0)
        resident_early_fd = resident_listen();
}

void hl_resident_unlisten(void) {
    if (resident_early_fd < 0)
        return;
    close(resident_early_fd);
    resident_early_fd = -1;
    resident_unlink();
}

void hl_resident_wait(hl_profiler *p) {
    if (!resident_info)
        resident_info = p->info;
    atomic_store(&resident, true);
    pthread_t t;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&t, &attr, resident_main, p) == 0)
        pthread_setname_np(t, "heaplens-wait");
    pthread_attr_destroy(&attr);
}
