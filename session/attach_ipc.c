/* attach_ipc.c — see attach_ipc.h.
 *
 * Message (little endian): a 20-byte header — magic "DOTNET_IPC_V1\0" (14 bytes), u16 total
 * size, u8 command set, u8 command id, u16 reserved — then the payload. AttachProfiler is
 * command set 0x03 (Profiler), id 0x01, payload: u32 attach timeout (ms), the CLSID (GUID memory
 * layout), the profiler path (u32 UTF-16 code units including the NUL, then UTF-16LE), u32
 * client data size and its bytes. The answer: a header of command set 0xFF (Server), id 0x00
 * (OK) or 0xFF (Error), then a u32 HRESULT; its size is read from the header. The runtime sends
 * it after InitializeForAttach and ProfilerAttachComplete returned, then closes. */
#define _GNU_SOURCE
#include "session/attach_ipc.h"

#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "query/query.h"

#define IPC_MAGIC "DOTNET_IPC_V1"
#define IPC_HEADER 20
#define IPC_PROFILER 0x03
#define IPC_ATTACH_PROFILER 0x01
#define IPC_SERVER 0xFF
#define IPC_OK 0x00

/* Reads /proc/PID/FILE whole; NULL when it cannot be read. */
static char *proc_read(pid_t pid, const char *file, gsize *len) {
    g_autofree char *path = g_strdup_printf("/proc/%ld/%s", (long)pid, file);
    char *text = NULL;
    return g_file_get_contents(path, &text, len, NULL) ? text : NULL;
}

/* The pid in the innermost pid namespace (NSpid: the last number), else `pid`. */
static long namespace_pid(pid_t pid) {
    g_autofree char *status = proc_read(pid, "status", NULL);
    const char *at = status ? strstr(status, "\nNSpid:") : NULL;
    long ns = pid;
    if (!at)
        return ns;
    at += 7;
    for (;;) {
        char *end = NULL;
        long v = strtol(at, &end, 10);
        if (end == at)
            break;
        ns = v;
        at = end;
    }
    return ns;
}

char **attach_ipc_process_environ(pid_t pid) {
    gsize len = 0;
    g_autofree char *env = proc_read(pid, "environ", &len);
    if (!env)
        return NULL;
    GPtrArray *vars = g_ptr_array_new();
    for (gsize at = 0; at < len; at += strlen(env + at) + 1) /* proc_read ends it with a NUL */
        g_ptr_array_add(vars, g_strdup(env + at));
    g_ptr_array_add(vars, NULL);
    return (char **)g_ptr_array_free(vars, FALSE);
}

/* TMPDIR of the process, from its environment (readable for our own processes). */
static char *process_tmpdir(pid_t pid) {
    g_auto(GStrv) env = attach_ipc_process_environ(pid);
    for (size_t i = 0; env && env[i]; i++)
        if (strncmp(env[i], "TMPDIR=", 7) == 0 && env[i][7] == '/')
            return g_strdup(env[i] + 7);
    return NULL;
}

/* The start time of the process (field 22 of /proc/PID/stat): the runtime's disambiguation key. */
static char *start_key(pid_t pid) {
    g_autofree char *stat = proc_read(pid, "stat", NULL);
    const char *at = stat ? strrchr(stat, ')') : NULL; /* the command may hold spaces */
    if (!at)
        return NULL;
    at += 2; /* field 3 */
    for (int field = 3; field < 22 && at; field++) {
        at = strchr(at, ' ');
        if (at)
            at++;
    }
    if (!at)
        return NULL;
    return g_strndup(at, strcspn(at, " "));
}

/* When the process started, in seconds since the epoch (the boot time plus its start key in
 * clock ticks); 0 when unknown. */
static time_t process_started(const char *key) {
    g_autofree char *stat = NULL;
    const char *btime = NULL;
    long ticks = sysconf(_SC_CLK_TCK);
    if (!key || ticks <= 0 || !g_file_get_contents("/proc/stat", &stat, NULL, NULL) ||
        !(btime = strstr(stat, "\nbtime ")))
        return 0;
    return (time_t)(g_ascii_strtoull(btime + 7, NULL, 10) + g_ascii_strtoull(key, NULL, 10) / ticks);
}

/* Whether `path` is a socket owned by `uid`, the process's: a socket planted by another user
 * in a shared directory (/tmp) under the process's name must not be talked to (attach may run
 * as root). FALSE with the refusal otherwise. */
static gboolean socket_owned(pid_t pid, const char *path, uid_t uid, GError **error) {
    struct stat s;
    if (lstat(path, &s) != 0 || !S_ISSOCK(s.st_mode)) {
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_USAGE,
                    "process %ld's diagnostic socket %s is not a socket: not talking to it",
                    (long)pid, path);
        return FALSE;
    }
    if (s.st_uid != uid) {
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_USAGE,
                    "process %ld's diagnostic socket %s belongs to uid %u, not to the process's "
                    "user (uid %u): not talking to it", (long)pid, path, (unsigned)s.st_uid,
                    (unsigned)uid);
        return FALSE;
    }
    return TRUE;
}

char *attach_ipc_find_socket(pid_t pid, GError **error) {
    g_autofree char *proc = g_strdup_printf("/proc/%ld", (long)pid);
    struct stat st;
    if (kill(pid, 0) != 0 && errno == ESRCH) {
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_NOT_FOUND, "no process with id %ld", (long)pid);
        return NULL;
    }
    if (stat(proc, &st) != 0) {
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_NOT_FOUND, "no process with id %ld", (long)pid);
        return NULL;
    }
    if (st.st_uid != getuid() && getuid() != 0) {
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_USAGE,
                    "process %ld belongs to another user (uid %u): run heaplens attach as that "
                    "user", (long)pid, (unsigned)st.st_uid);
        return NULL;
    }
    long ns = namespace_pid(pid);
    g_autofree char *tmpdir = process_tmpdir(pid);
    g_autofree char *key = start_key(pid);
    time_t started = process_started(key);
    const char *dirs[2] = {tmpdir, "/tmp"};
    g_autofree char *looked = NULL;
    for (int d = 0; d < 2; d++) {
        if (!dirs[d] || (d == 1 && tmpdir && strcmp(tmpdir, "/tmp") == 0))
            continue;
        for (int through_root = 1; through_root >= 0; through_root--) {
            g_autofree char *pattern = g_strdup_printf("%s%s/dotnet-diagnostic-%ld-*-socket",
                                                       through_root ? proc : "", dirs[d], ns);
            glob_t g;
            if (glob(pattern, 0, NULL, &g) != 0)
                continue;
            /* Several: sockets left by earlier processes of the same pid (PIDs are reused, and a
             * killed runtime leaves its socket); the key says which. Without it, the newest of
             * those not older than the process. */
            char *best = NULL;
            time_t newest = 0;
            for (size_t i = 0; i < g.gl_pathc; i++) {
                g_autofree char *want = key ? g_strdup_printf("-%ld-%s-socket", ns, key) : NULL;
                if (want && g_str_has_suffix(g.gl_pathv[i], want)) {
                    g_free(best);
                    best = g_strdup(g.gl_pathv[i]);
                    break;
                }
                struct stat s;
                if (stat(g.gl_pathv[i], &s) == 0 && s.st_mtime + 1 >= started &&
                    (!best || s.st_mtime > newest)) {
                    g_free(best);
                    best = g_strdup(g.gl_pathv[i]);
                    newest = s.st_mtime;
                }
            }
            globfree(&g);
            if (best && !socket_owned(pid, best, st.st_uid, error)) {
                g_free(best);
                return NULL;
            }
            if (best)
                return best;
        }
        char *more = g_strdup_printf("%s%s%s", looked ? looked : "", looked ? ", " : "", dirs[d]);
        g_free(looked);
        looked = more;
    }
    g_set_error(error, QUERY_ERROR, QUERY_ERROR_NOT_FOUND,
                "process %ld is not a .NET process (no diagnostic socket dotnet-diagnostic-%ld-*-"
                "socket in %s), or it runs with DOTNET_EnableDiagnostics=0", (long)pid, ns,
                looked ? looked : "/tmp");
    return NULL;
}

/* "{XXXXXXXX-XXXX-XXXX-XXXX-XXXXXXXXXXXX}" in GUID memory layout. */
static gboolean clsid_bytes(const char *text, uint8_t out[16]) {
    unsigned d1, d2, d3, b[8];
    if (sscanf(text, "{%8x-%4x-%4x-%2x%2x-%2x%2x%2x%2x%2x%2x}", &d1, &d2, &d3, &b[0], &b[1],
               &b[2], &b[3], &b[4], &b[5], &b[6], &b[7]) != 11)
        return FALSE;
    for (int i = 0; i < 4; i++)
        out[i] = (uint8_t)(d1 >> (8 * i));
    out[4] = (uint8_t)d2, out[5] = (uint8_t)(d2 >> 8);
    out[6] = (uint8_t)d3, out[7] = (uint8_t)(d3 >> 8);
    for (int i = 0; i < 8; i++)
        out[8 + i] = (uint8_t)b[i];
    return TRUE;
}

static void put_u32(GByteArray *m, uint32_t v) {
    uint8_t b[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
    g_byte_array_append(m, b, 4);
}

/* Reads exactly n bytes before the deadline; FALSE at end of file, error or time out. */
static gboolean read_all(int fd, uint8_t *buf, size_t n, uint64_t deadline, gboolean *timed_out) {
    *timed_out = FALSE;
    for (size_t got = 0; got < n;) {
        uint64_t now = query_now_ms();
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int r = now < deadline ? poll(&p, 1, (int)(deadline - now)) : 0;
        if (r < 0 && errno == EINTR)
            continue;
        if (r == 0) {
            *timed_out = TRUE;
            return FALSE;
        }
        ssize_t k = r > 0 ? read(fd, buf + got, n - got) : -1;
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return FALSE;
        got += (size_t)k;
    }
    return TRUE;
}

gboolean attach_ipc_attach_profiler(pid_t pid, const char *socket_path, uint32_t timeout_ms,
                                    const char *clsid, const char *profiler_path,
                                    const void *client_data, size_t client_data_size,
                                    uint32_t *hresult, GError **error) {
    uint8_t guid[16];
    glong units = 0;
    g_autofree gunichar2 *path16 = g_utf8_to_utf16(profiler_path, -1, NULL, &units, NULL);
    if (!clsid_bytes(clsid, guid) || !path16) {
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_USAGE, "attach: bad CLSID or collector path");
        return FALSE;
    }
    g_autoptr(GByteArray) m = g_byte_array_new();
    g_byte_array_append(m, (const guint8 *)IPC_MAGIC, sizeof IPC_MAGIC); /* with its NUL: 14 */
    uint8_t rest[6] = {0, 0, IPC_PROFILER, IPC_ATTACH_PROFILER, 0, 0};
    g_byte_array_append(m, rest, sizeof rest);
    put_u32(m, timeout_ms);
    g_byte_array_append(m, guid, 16);
    put_u32(m, (uint32_t)units + 1);
    for (glong i = 0; i <= units; i++) { /* the NUL too */
        uint8_t b[2] = {(uint8_t)path16[i], (uint8_t)(path16[i] >> 8)};
        g_byte_array_append(m, b, 2);
    }
    put_u32(m, (uint32_t)client_data_size);
    g_byte_array_append(m, client_data, (guint)client_data_size);
    if (m->len > UINT16_MAX) {
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_USAGE, "attach: the message is too long");
        return FALSE;
    }
    m->data[14] = (uint8_t)m->len;
    m->data[15] = (uint8_t)(m->len >> 8);

    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    int fd = strlen(socket_path) < sizeof addr.sun_path
                 ? socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0) : -1;
    if (fd >= 0) {
        strcpy(addr.sun_path, socket_path);
        if (connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0) {
            int e = errno;
            close(fd);
            fd = -1;
            errno = e;
        }
    }
    /* The file's owner was checked (attach_ipc_find_socket); the listener must be the
     * process's user too: the file may have been replaced since. Nothing is sent before. */
    struct ucred peer;
    socklen_t peer_len = sizeof peer;
    struct stat proc;
    g_autofree char *proc_path = g_strdup_printf("/proc/%ld", (long)pid);
    if (fd >= 0 && (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &peer_len) != 0 ||
                    stat(proc_path, &proc) != 0 || peer.uid != proc.st_uid)) {
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_USAGE,
                    "process %ld's diagnostic socket %s is served by another user: not talking "
                    "to it", (long)pid, socket_path);
        close(fd);
        return FALSE;
    }
    if (fd < 0 && strlen(socket_path) >= sizeof addr.sun_path) {
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_USAGE,
                    "process %ld's diagnostic socket path %s is longer than a unix socket "
                    "allows (%zu bytes)", (long)pid, socket_path, sizeof addr.sun_path - 1);
        return FALSE;
    }
    if (fd < 0) {
        if (errno == EACCES || errno == EPERM)
            g_set_error(error, QUERY_ERROR, QUERY_ERROR_USAGE,
                        "cannot reach process %ld's diagnostic socket %s: permission denied (another "
                        "user's process?)", (long)pid, socket_path);
        else
            g_set_error(error, QUERY_ERROR, QUERY_ERROR_IO,
                        "cannot reach process %ld's diagnostic socket %s: %s (is it still running "
                        "a .NET runtime?)", (long)pid, socket_path, g_strerror(errno));
        return FALSE;
    }
    gboolean ok = FALSE, timed_out = FALSE;
    uint64_t deadline = query_now_ms() + timeout_ms + 10000;
    size_t sent = 0;
    while (sent < m->len) {
        ssize_t k = send(fd, m->data + sent, m->len - sent, MSG_NOSIGNAL);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            break;
        sent += (size_t)k;
    }
    uint8_t header[IPC_HEADER];
    if (sent < m->len) {
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_IO, "attach: sending to process %ld: %s",
                    (long)pid, g_strerror(errno));
    } else if (!read_all(fd, header, sizeof header, deadline, &timed_out)) {
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_IO,
                    timed_out ? "attach to process %ld timed out: no answer from its runtime"
                              : "attach to process %ld: the runtime closed the connection without "
                                "an answer", (long)pid);
    } else {
        uint16_t size = (uint16_t)(header[14] | header[15] << 8);
        uint8_t body[64] = {0};
        size_t n = size > IPC_HEADER ? size - IPC_HEADER : 0;
        if (memcmp(header, IPC_MAGIC, sizeof IPC_MAGIC) != 0 || header[16] != IPC_SERVER ||
            n < 4 || n > sizeof body || !read_all(fd, body, n, deadline, &timed_out)) {
            g_set_error(error, QUERY_ERROR, QUERY_ERROR_IO,
                        "attach: process %ld answered something that is not a diagnostic IPC "
                        "answer", (long)pid);
        } else {
            uint32_t code = (uint32_t)body[0] | (uint32_t)body[1] << 8 | (uint32_t)body[2] << 16 |
                            (uint32_t)body[3] << 24;
            /* OK carries the attach's HRESULT; Error carries the server's error code. */
            *hresult = header[17] == IPC_OK ? code : (code ? code : 0x80004005u);
            ok = TRUE;
        }
    }
    close(fd);
    return ok;
}

char *attach_ipc_refusal(pid_t pid, uint32_t hr, uint32_t timeout_ms) {
    switch (hr) {
    case ATTACH_E_PROFILER_ALREADY_ACTIVE:
        return g_strdup_printf("process %ld already has a profiler (heaplens record, heaplens "
                               "attach, a collector left by attach --count, or another tool): a "
                               "process takes only one", (long)pid);
    case ATTACH_E_TIMEOUT_WAITING_FOR_CONCURRENT_GC:
        return g_strdup_printf("attach to process %ld timed out: its background GC did not "
                               "finish within %.0f s (try again, or --timeout)", (long)pid,
                               timeout_ms / 1000.0);
    case ATTACH_E_IPC_UNKNOWN_COMMAND:
    case ATTACH_E_NOTSUPPORTED:
        return g_strdup_printf("process %ld runs a .NET runtime too old to attach a profiler "
                               "(.NET 5 or later is needed)", (long)pid);
    case ATTACH_E_RUNTIME_UNINITIALIZED:
    case ATTACH_E_IPC_NOT_YET_AVAILABLE:
        return g_strdup_printf("process %ld's runtime is still starting; try again in a moment",
                               (long)pid);
    case ATTACH_E_PROFILER_CANCEL_ACTIVATION:
        return g_strdup_printf("the collector could not start in process %ld (it could not reach "
                               "the writer or set its event flags); nothing stays loaded",
                               (long)pid);
    case ATTACH_E_PROFILER_NOT_ATTACHABLE:
        return g_strdup_printf("the runtime of process %ld refused the collector as not "
                               "attachable (HRESULT 0x%08x)", (long)pid, hr);
    default:
        return g_strdup_printf("attach to process %ld failed: HRESULT 0x%08x", (long)pid, hr);
    }
}
