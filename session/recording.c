/* recording.c — see recording.h. */
#define _GNU_SOURCE
#include "session/recording.h"

#include "query/allocations.h"
#include "query/estimates.h"
#include "query/info.h"
#include "query/replaced.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "collector/snapshot_policy.h"
#include "query/query.h"
#include "session/session.h"
#include "store/store.h"

/* The policies the collector understands: its own parser (collector/snapshot_policy.h). */
gboolean recording_snapshot_policy_valid(const char *p) {
    hl_snapshot_policy policy;
    return hl_snapshot_policy_parse(p, &policy, NULL, 0);
}

gboolean recording_snapshot_option(const char *who, const char *option, const char *value,
                                   GString **policy, GError **error) {
    char why[320];
    hl_snapshot_policy parsed;
    g_autofree char *item = NULL;
    if (!value || !*value) {
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_USAGE, "%s: --%s needs a value", who, option);
        return FALSE;
    }
    if (strcmp(option, "snapshot") == 0) {
        if (strchr(value, ',')) {
            g_set_error(error, QUERY_ERROR, QUERY_ERROR_USAGE,
                        "%s: --snapshot takes one policy; repeat --snapshot to combine them, not "
                        "'%s'", who, value);
            return FALSE;
        }
        item = g_strdup(value);
    } else {
        /* The ranges of the collector's max-snapshots:N and min-interval:S
         * (collector/snapshot_policy.c), said whole here: "a number from 1" named no maximum,
         * and a value above it was refused in the policy's own spelling. */
        gboolean interval = strcmp(option, "snapshot-interval") == 0;
        guint64 n = 0;
        if (!g_ascii_string_to_unsigned(value, 10, interval ? 0 : 1,
                                        interval ? 366ull * 86400 : 1000000, &n, NULL)) {
            g_set_error(error, QUERY_ERROR, QUERY_ERROR_USAGE, "%s: --%s takes %s, not '%s'", who,
                        option,
                        interval ? "a number of seconds from 0 (none) to 31,622,400 (a year)"
                                 : "a whole number from 1 to 1,000,000",
                        value);
            return FALSE;
        }
        item = g_strdup_printf("%s:%" G_GUINT64_FORMAT, interval ? "min-interval" : "max-snapshots",
                               n);
    }
    if (!hl_snapshot_policy_parse(item, &parsed, why, sizeof why)) {
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_USAGE, "%s: --%s: %s", who, option, why);
        return FALSE;
    }
    if (!*policy)
        *policy = g_string_new(item);
    else
        g_string_append_printf(*policy, ",%s", item);
    if (!hl_snapshot_policy_parse((*policy)->str, &parsed, why, sizeof why)) {
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_USAGE, "%s: %s", who, why);
        return FALSE;
    }
    if ((*policy)->len >= HL_SNAPSHOT_POLICY_MAX) {
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_USAGE, "%s: too many snapshot policies", who);
        return FALSE;
    }
    return TRUE;
}

/* The settings users may set (README.md, "Settings"; the collector keeps its own defensive
 * parsing of each, with the same ranges: collector/profiler.c pool_bytes, collector_thread.c
 * outbox_capacity, census.c census_threads). A number is digits only: no sign, no space, no
 * unit. */
typedef struct recording_setting {
    const char *name;
    uint64_t min, max;        /* a number from min to max, when `choices` is NULL */
    const char *const *choices; /* else one of these words, NULL-terminated */
    const char *what;         /* what it sets, for the message */
} recording_setting;

static const char *const setting_bool[] = {"0", "1", NULL};
static const char *const setting_stack_walk[] = {"on", "off", NULL};
static const char *const setting_full_sampler[] = {"own", "eventpipe", NULL};
static const char *const setting_sample_source[] = {"auto", "tick", NULL};
static const char *const setting_one[] = {"1", NULL};
static const char *const setting_on_off[] = {"on", "off", NULL};

static const recording_setting recording_settings[] = {
    {"HEAPLENS_POOL_MB", 1, 65536, NULL, "MiB of the collector's thread buffers"},
    {"HEAPLENS_BUFFER_MB", 1, 16384, NULL, "MiB of the collector's outbox"},
    {"HEAPLENS_STATS", 0, 0, setting_bool, "the collector's statistics on stderr at the end"},
    {"HEAPLENS_EXIT_NOTE_MS", 0, 3600000, NULL,
     "ms the program's exit waits for the collector before it says so"},
    {"HEAPLENS_EMPTY", 0, 0, setting_bool, "the empty profiler: callbacks that do nothing"},
    {"HEAPLENS_STACK_WALK", 0, 0, setting_stack_walk, "the stack walk of sampled allocations"},
    {"HEAPLENS_FULL_SAMPLER", 0, 0, setting_full_sampler, "full mode's allocation sampler"},
    {"HEAPLENS_SAMPLE_SOURCE", 0, 0, setting_sample_source, "the runtime's sampling events"},
    {"HEAPLENS_CENSUS", 0, 0, setting_on_off, "sampled mode's census of gen0, as --census sets it"},
    {"HEAPLENS_CENSUS_THREADS", 1, 64, NULL, "threads that may walk gen0 in the census"},
    {"HEAPLENS_CENSUS_FLOOR", 0, 0, setting_bool,
     "a plain read of gen0 beside each census walk (benchmark)"},
    {"HEAPLENS_SAMPLE_BUDGET", 0, 100000000, NULL,
     "samples per second of a thread's CPU time beyond which they are thinned (0: never)"},
    {"HEAPLENS_RANGES", 0, 0, setting_on_off,
     "the empty profiler's survivor ranges (benchmark)"},
    {"HEAPLENS_EMPTY_SAMPLES", 0, 0, setting_bool,
     "the empty profiler's allocation samples (benchmark)"},
    {"HEAPLENS_SESSION", 0, 0, setting_on_off,
     "sampled mode's EventPipe session (benchmark)"},
    {"HEAPLENS_FOLLOW_CHECK", 0, 0, setting_bool,
     "sampled mode's handles compared with the runtime's ranges (tests)"},
    {"HEAPLENS_CENSUS_CHECK", 0, 0, setting_bool,
     "sampled mode with ObjectAllocated too, to check the census (tests)"},
    {"HEAPLENS_THREADS", 0, 0, setting_one,
     "one thread for a snapshot's graph (query commands)"},
};

gboolean recording_settings_check(const char *who, char *const *env, const char *whose,
                                  GError **error) {
    for (size_t e = 0; env && env[e]; e++) {
        const char *eq = strchr(env[e], '=');
        for (size_t i = 0; eq && i < G_N_ELEMENTS(recording_settings); i++) {
            const recording_setting *s = &recording_settings[i];
            size_t len = strlen(s->name);
            if ((size_t)(eq - env[e]) != len || strncmp(env[e], s->name, len) != 0)
                continue;
            const char *value = eq + 1;
            gboolean ok = FALSE;
            g_autoptr(GString) takes = g_string_new(NULL);
            if (s->choices) {
                for (size_t c = 0; s->choices[c]; c++) {
                    ok = ok || strcmp(value, s->choices[c]) == 0;
                    const char *sep = c == 0 ? "" : s->choices[c + 1] ? ", " : " or ";
                    g_string_append_printf(takes, "%s%s", sep, s->choices[c]);
                }
            } else {
                guint64 v = 0;
                /* digits only: g_ascii_string_to_unsigned refuses signs, spaces and junk */
                ok = g_ascii_string_to_unsigned(value, 10, s->min, s->max, &v, NULL);
                g_string_printf(takes, "a whole number from %" PRIu64 " to %" PRIu64, s->min,
                                s->max);
            }
            if (ok)
                continue;
            /* A running process's environment cannot be changed: its collector would read
             * the value, so the attach is refused with what the setting takes. */
            g_set_error(error, QUERY_ERROR, QUERY_ERROR_USAGE,
                        "%s: %s%s%s='%s' is not a value it takes: %s (%s)%s", who,
                        whose ? whose : "", whose ? " " : "", s->name, value, takes->str, s->what,
                        whose ? ", and its collector would read it" : ", or leave it unset");
            return FALSE;
        }
    }
    return TRUE;
}

/* libheaplens.so next to the heaplens executable (build tree), or in ../lib/heaplens (installed). */
char *recording_collector_path(GError **error) {
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) {
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_USAGE, "record: cannot find the heaplens executable");
        return NULL;
    }
    exe[n] = 0;
    g_autofree char *dir = g_path_get_dirname(exe);
    const char *candidates[] = {COLLECTOR_NAME, "../lib/heaplens/" COLLECTOR_NAME};
    for (size_t i = 0; i < G_N_ELEMENTS(candidates); i++) {
        g_autofree char *p = g_build_filename(dir, candidates[i], NULL);
        char resolved[PATH_MAX];
        if (realpath(p, resolved) && access(resolved, R_OK) == 0)
            return g_strdup(resolved);
    }
    g_set_error(error, QUERY_ERROR, QUERY_ERROR_USAGE,
                "record: the collector %s is not next to heaplens (%s) nor in %s/../lib/heaplens",
                COLLECTOR_NAME, dir, dir);
    return NULL;
}

/* Is anything listening on one of the control sockets (control.sock, control.PID.sock) in
 * `dir`? A writer that outlived its recorder serves there. */
static gboolean session_dir_served(const char *dir) {
    gboolean served = FALSE;
    GDir *d = g_dir_open(dir, 0, NULL);
    const char *name;
    while (d && !served && (name = g_dir_read_name(d)) != NULL) {
        struct sockaddr_un addr = {.sun_family = AF_UNIX};
        g_autofree char *path = g_build_filename(dir, name, NULL);
        if (!g_str_has_prefix(name, "control") || !g_str_has_suffix(name, ".sock") ||
            strlen(path) >= sizeof addr.sun_path)
            continue;
        strcpy(addr.sun_path, path);
        int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        /* Refused: nobody listens. Anything else (accepted, a full backlog) counts as served. */
        served = fd >= 0 && (connect(fd, (struct sockaddr *)&addr, sizeof addr) == 0 ||
                             (errno != ECONNREFUSED && errno != ENOENT));
        if (fd >= 0)
            close(fd);
    }
    if (d)
        g_dir_close(d);
    return served;
}

/* Session directories left in `tmp` by a recorder that is gone (`kill -9` of heaplens record
 * and of its writer): only ours — named heaplens-PID-XXXXXX, a real directory of this user,
 * mode 0700 — whose recorder PID no longer exists and whose control sockets nobody serves (a
 * writer that outlived its recorder still records, and cleans up itself). What a session puts
 * there is removed (recording_dir_remove), nothing else. */
static void recording_stale_dirs_remove(const char *tmp) {
    GDir *d = g_dir_open(tmp, 0, NULL);
    const char *name;
    while (d && (name = g_dir_read_name(d)) != NULL) {
        long pid = 0;
        int end = 0;
        struct stat st;
        if (sscanf(name, "heaplens-%ld-%*6[A-Za-z0-9]%n", &pid, &end) != 1 || end == 0 ||
            name[end] != 0 || strlen(strrchr(name, '-') + 1) != 6 || pid <= 0 ||
            pid == (long)getpid())
            continue;
        g_autofree char *path = g_build_filename(tmp, name, NULL);
        if (lstat(path, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != getuid() ||
            (st.st_mode & 077) != 0)
            continue;
        if (kill((pid_t)pid, 0) == 0 || errno != ESRCH || session_dir_served(path))
            continue;
        recording_dir_remove(path);
    }
    if (d)
        g_dir_close(d);
}

/* A fresh private (0700) directory for the recording's sockets, named after this process (so
 * that a later run can tell it was left behind: recording_stale_dirs_remove), in a directory of
 * this user's own, TMPDIR/heaplens-UID (0700, like the sessions' files' /tmp/heaplens-UID):
 * the stale sessions are looked for there alone, not among everything else in TMPDIR (reading
 * a /tmp of 6,000 entries took 2.7 ms of CPU at every start). /tmp/heaplens-UID when the
 * longest socket path under TMPDIR's would not fit a unix socket (107 bytes): a deep TMPDIR (a
 * long work directory) must not stop a recording. A TMPDIR/heaplens-UID that is not a private
 * directory of this user (another user's): the session's directory goes in TMPDIR itself, as
 * before, whose stale sessions are then looked for there. */
char *recording_private_dir(GError **error) {
    struct sockaddr_un addr;
    unsigned uid = (unsigned)getuid();
    g_autofree char *base = g_strdup_printf("heaplens-%ld-XXXXXX", (long)getpid());
    g_autofree char *own = g_strdup_printf("heaplens-%u", uid);
    /* Absolute: the program connects from its own working directory (a script's `cd` before
     * `dotnet`, an attached service's): from a relative TMPDIR it found no socket and was not
     * recorded ("is it a .NET program?"), a descendant under --children silently. */
    g_autofree char *tmp_dir = g_canonicalize_filename(g_get_tmp_dir(), NULL);
    g_autofree char *longest = g_build_filename(tmp_dir, own, base, "control.4194304.sock", NULL);
    g_autofree char *parent = NULL;
    const char *tmp = tmp_dir;
    if (strlen(longest) >= sizeof addr.sun_path) {
        parent = session_private_dir_make(g_strdup_printf(SESSION_SHORT_DIR_FMT, uid), error);
        if (!parent) {
            g_prefix_error(error, "record: ");
            return NULL;
        }
    } else {
        parent = session_private_dir_make(g_build_filename(tmp, own, NULL), NULL);
    }
    if (parent)
        tmp = parent;
    recording_stale_dirs_remove(tmp);
    char *dir = g_build_filename(tmp, base, NULL);
    if (!mkdtemp(dir)) { /* mkdtemp creates it 0700 */
        /* said to be TMPDIR's: a user who set it long ago does not think of it */
        const char *env = g_getenv("TMPDIR");
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_IO,
                    "record: cannot create a directory in %s%s: %s", tmp,
                    env && *env && !parent ? " (TMPDIR)" : "", g_strerror(errno));
        g_free(dir);
        return NULL;
    }
    return dir;
}

/* A listening unix socket `path` (0600). */
int recording_socket_listen(const char *path, GError **error) {
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof addr.sun_path) {
        /* recording_private_dir keeps its sockets short; only a caller's own path gets here. */
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_USAGE,
                    "record: the socket path %s is longer than a unix socket allows (%zu bytes)",
                    path, sizeof addr.sun_path - 1);
        return -1;
    }
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_IO, "record: cannot create a socket: %s",
                    g_strerror(errno));
        return -1;
    }
    strcpy(addr.sun_path, path);
    mode_t old = umask(0177); /* the socket file is created 0600 */
    int ok = bind(fd, (struct sockaddr *)&addr, sizeof addr) == 0 && listen(fd, 8) == 0;
    umask(old);
    if (!ok || chmod(path, 0600) != 0) {
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_IO, "record: cannot listen on %s: %s", path,
                    g_strerror(errno));
        close(fd);
        unlink(path);
        return -1;
    }
    return fd;
}

/* What a session puts in its private directory: the sockets (collector.sock, control.sock,
 * children.sock, control.PID.sock), the claim (`recorded`) and the collectors' end files
 * (end.PID, end.PID.tmp) and the marks of .NET processes that declined (declined.PID). Only
 * those are removed, then the directory if it is empty. */
void recording_dir_remove(const char *dir) {
    GDir *d = dir ? g_dir_open(dir, 0, NULL) : NULL;
    const char *name;
    while (d && (name = g_dir_read_name(d)) != NULL) {
        if (strcmp(name, "collector.sock") == 0 || strcmp(name, "control.sock") == 0 ||
            strcmp(name, "children.sock") == 0 || strcmp(name, "recorded") == 0 ||
            g_str_has_prefix(name, "end.") || g_str_has_prefix(name, "declined.") ||
            (g_str_has_prefix(name, "control.") && g_str_has_suffix(name, ".sock"))) {
            g_autofree char *path = g_build_filename(dir, name, NULL);
            unlink(path);
        }
    }
    if (d)
        g_dir_close(d);
    if (dir)
        rmdir(dir);
}

/* The marks `declined.PID` that .NET processes of the session leave when they decline
 * (collector/profiler.c session_mark_declined). */
static gboolean declined_name(const char *name, long *pid) {
    char *end = NULL;
    if (strncmp(name, "declined.", 9) != 0 || !g_ascii_isdigit(name[9]))
        return FALSE;
    *pid = strtol(name + 9, &end, 10);
    return *end == 0 && *pid > 0;
}

static gint unrecorded_by_pid(gconstpointer a, gconstpointer b) {
    const store_unrecorded *x = a, *y = b;
    return (x->pid > y->pid) - (x->pid < y->pid);
}

static void unrecorded_clear(gpointer p) {
    g_free((char *)((store_unrecorded *)p)->command);
}

GArray *recording_unrecorded_read(const recording_sockets *s) {
    GArray *list = g_array_new(FALSE, TRUE, sizeof(store_unrecorded));
    g_array_set_clear_func(list, unrecorded_clear);
    GDir *dir = s->dir ? g_dir_open(s->dir, 0, NULL) : NULL;
    for (const char *name; dir && (name = g_dir_read_name(dir));) {
        long pid = 0;
        if (!declined_name(name, &pid))
            continue;
        g_autofree char *path = g_build_filename(s->dir, name, NULL);
        char *command = NULL;
        gsize len = 0;
        /* Written by the process itself: at most its command line; kept as text. */
        if (!g_file_get_contents(path, &command, &len, NULL) || len > 65536) {
            g_free(command);
            command = g_strdup("");
        }
        if (!g_utf8_validate(command, -1, NULL)) {
            char *valid = g_utf8_make_valid(command, -1);
            g_free(command);
            command = valid;
        }
        store_unrecorded u = {.pid = pid, .command = command};
        g_array_append_val(list, u);
    }
    if (dir)
        g_dir_close(dir);
    g_array_sort(list, unrecorded_by_pid);
    return list;
}

void recording_sockets_remove(recording_sockets *s) {
    if (s->collector_fd >= 0)
        close(s->collector_fd);
    if (s->control_fd >= 0)
        close(s->control_fd);
    recording_dir_remove(s->dir);
    g_free(s->dir);
    g_free(s->collector_path);
    g_free(s->control_path);
    g_free(s->claim_path);
    g_free(s->children_path);
    memset(s, 0, sizeof *s);
    s->collector_fd = s->control_fd = -1;
}

gboolean recording_sockets_create(recording_sockets *s, GError **error) {
    memset(s, 0, sizeof *s);
    s->collector_fd = s->control_fd = -1;
    s->dir = recording_private_dir(error);
    if (!s->dir)
        return FALSE;
    s->collector_path = g_build_filename(s->dir, "collector.sock", NULL);
    s->control_path = g_build_filename(s->dir, "control.sock", NULL);
    s->claim_path = g_build_filename(s->dir, "recorded", NULL);
    /* The longest socket the session may need (a descendant's control.PID.sock) must fit too:
     * refused now, with its reason, rather than half-way through. */
    g_autofree char *longest = g_build_filename(s->dir, "control.4194304.sock", NULL);
    struct sockaddr_un addr;
    if (strlen(longest) >= sizeof addr.sun_path) {
        s->collector_fd = recording_socket_listen(longest, error); /* the message: too long */
        recording_sockets_remove(s);
        return FALSE;
    }
    s->collector_fd = recording_socket_listen(s->collector_path, error);
    if (s->collector_fd >= 0)
        s->control_fd = recording_socket_listen(s->control_path, error);
    if (s->control_fd < 0) {
        recording_sockets_remove(s);
        return FALSE;
    }
    return TRUE;
}

/* The writer process. Reports "ok" or the error on `ready_fd`, then serves the recording
 * until the stream ended and `stop_fd` gave the exit status (or end of file). */
static G_NORETURN void writer_main(const char *output, const char *command, const char *dir,
                                   gboolean attach, int listen_fd, int control_fd, int stop_fd,
                                   int ready_fd) {
    pid_t recorder = getppid();
    /* Ctrl-C and a kill of the whole process group reach the writer too; it must outlive the
     * program to finish the recording (SIGUSR1/2 too: heaplens passes them on to the program,
     * and they ended the writer of a group they were sent to). It ends when heaplens closes the
     * stop pipe (heaplens itself killed: end of file). */
    signal(SIGINT, SIG_IGN);
    signal(SIGQUIT, SIG_IGN);
    signal(SIGTERM, SIG_IGN);
    signal(SIGHUP, SIG_IGN);
    signal(SIGUSR1, SIG_IGN);
    signal(SIGUSR2, SIG_IGN);
    signal(SIGPIPE, SIG_IGN);
    g_autoptr(GError) error = NULL;
    store_writer *w = store_writer_create(output, command, &error);
    g_autofree char *msg = g_strdup_printf("%s\n", w ? "ok" : error->message);
    if (write(ready_fd, msg, strlen(msg)) < 0 || !w)
        _exit(1);
    close(ready_fd);
    store_writer_set_session(w, dir, recorder);
    if (attach) /* a killed `heaplens attach` must not leave the process recorded for good */
        store_writer_set_attach(w);
    gboolean ok = store_writer_serve(w, listen_fd, control_fd, stop_fd, STOP_WAIT_MS, &error);
    close(control_fd); /* a client connecting now gets EOF at once instead of waiting */
    store_summary summary;
    g_autoptr(GError) finish_error = NULL;
    gboolean finished = store_writer_finish(w, &summary, &finish_error);
    /* A killed recorder removes nothing: its session's directory goes with the writer, which
     * outlived it (the file says it: loss recorder-killed). */
    if ((finished && summary.recorder_killed) || getppid() != recorder)
        recording_dir_remove(dir);
    if (!finished && g_error_matches(finish_error, STORE_ERROR, STORE_ERROR_IO)) {
        /* The database could take no more (disk full, I/O error): the one line that says so,
         * with what is kept; the program was not stopped (its collector saw the writer go). */
        fprintf(stderr, "heaplens: writer: %s; the program runs on unrecorded\n",
                finish_error->message);
        _exit(WRITER_EXIT_STOPPED);
    }
    if (!ok || !finished) {
        fprintf(stderr, "heaplens: writer: %s\n", error ? error->message : finish_error->message);
        _exit(1);
    }
    if (summary.wal_kept)
        recording_wal_kept_say(output);
    _exit(0);
}

/* Waits for the writer forked as `writer` (< 0: the fork failed) to say on `ready_fd` that it
 * has created `output` ("ok"), and closes ready_fd; FALSE with the writer's reason otherwise. */
static gboolean writer_ready(pid_t writer, int ready_fd, const char *output, GError **error) {
    char msg[1024] = "";
    ssize_t n = writer > 0 ? read(ready_fd, msg, sizeof msg - 1) : -1;
    int read_errno = errno;
    close(ready_fd);
    msg[n > 0 ? n : 0] = 0;
    g_strchomp(msg);
    if (writer > 0 && strcmp(msg, "ok") == 0)
        return TRUE;
    g_set_error(error, QUERY_ERROR, QUERY_ERROR_IO, "cannot record to %s: %s", output,
                writer < 0 ? g_strerror(read_errno) : (msg[0] ? msg : "the writer failed to start"));
    return FALSE;
}

pid_t recording_writer_start(const char *who, const char *output, const char *command,
                             recording_sockets *sockets, int *stop_fd, int *gone_fd,
                             GError **error) {
    int stop[2], ready[2], gone[2] = {-1, -1};
    if (pipe2(stop, O_CLOEXEC) != 0 || pipe2(ready, O_CLOEXEC) != 0 ||
        (gone_fd && pipe2(gone, O_CLOEXEC) != 0)) {
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_IO, "%s: pipe: %s", who, g_strerror(errno));
        return -1;
    }
    fflush(NULL);
    pid_t writer = fork();
    if (writer == 0) {
        close(stop[1]);
        close(ready[0]);
        if (gone_fd)
            close(gone[0]); /* gone[1] stays open in the writer: end of file when it exits */
        writer_main(output, command, sockets->dir, strcmp(who, "attach") == 0,
                    sockets->collector_fd, sockets->control_fd, stop[0], ready[1]);
    }
    close(sockets->collector_fd);
    close(sockets->control_fd);
    sockets->collector_fd = sockets->control_fd = -1;
    close(stop[0]);
    close(ready[1]);
    if (gone_fd) {
        close(gone[1]);
        *gone_fd = gone[0];
    }
    if (!writer_ready(writer, ready[0], output, error)) {
        close(stop[1]);
        if (gone_fd) {
            close(*gone_fd);
            *gone_fd = -1;
        }
        if (writer > 0)
            waitpid(writer, NULL, 0);
        recording_sockets_remove(sockets);
        return -1;
    }
    recording_output_id_take(output, &sockets->output_id); /* the writer still serves it */
    *stop_fd = stop[1];
    return writer;
}

void recording_output_id_take(const char *output, recording_output_id *id) {
    struct stat st;
    *id = (recording_output_id){0, 0};
    if (stat(output, &st) == 0)
        *id = (recording_output_id){st.st_dev, st.st_ino};
}

gboolean recording_output_ours(const char *who, const char *output, const recording_output_id *id) {
    struct stat st;
    gboolean removed = stat(output, &st) != 0;
    if ((!id->dev && !id->ino) ||
        (!removed && st.st_dev == id->dev && st.st_ino == id->ino))
        return TRUE;
    fprintf(stderr, "heaplens: %s failed: %s was %s while it was being recorded: the recording is "
                    "lost%s\n",
            who, output, removed ? "removed" : "replaced by another file",
            removed ? "" : " (that file is left as it is)");
    return FALSE;
}

gboolean recording_writer_died(const char *output, const recording_sockets *sockets,
                               int writer_status, gboolean exit_known, int exit_status,
                               long exit_pid, gboolean *end_stored) {
    if (end_stored)
        *end_stored = FALSE;
    if (!recording_output_ours("the writer", output, &sockets->output_id))
        return FALSE;
    gboolean stopped = WIFEXITED(writer_status) && WEXITSTATUS(writer_status) == WRITER_EXIT_STOPPED;
    if (WIFSIGNALED(writer_status))
        fprintf(stderr, "heaplens: the writer failed (killed by signal %d); %s holds what was "
                        "committed before\n", WTERMSIG(writer_status), output);
    else if (!stopped)
        fprintf(stderr, "heaplens: the writer failed; %s holds what was committed before\n",
                output);
    store_ending ending = {.session_dir = sockets->dir, .exit_known = exit_known,
                           .exit_status = exit_status,
                           .exit_pid = exit_pid,
                           .writer_signal = WIFSIGNALED(writer_status) ? WTERMSIG(writer_status) : 0};
    g_autoptr(GError) error = NULL;
    gboolean stored = store_recording_end(output, &ending, &error);
    if (end_stored)
        *end_stored = stored;
    if (!stored && !(stopped && g_error_matches(error, STORE_ERROR, STORE_ERROR_IO)))
        fprintf(stderr, "heaplens: could not store how the recording ended: %s\n",
                error->message);
    return TRUE;
}

void recording_wal_kept_say(const char *output) {
    fprintf(stderr, "heaplens: a reader kept %s open: left in WAL mode (%s-wal is part of it "
                    "until the last connection to it closes; copy both files meanwhile)\n",
            output, output);
}

/* A command line short enough for a summary: paths by their last component, at most 60
 * characters. */
static char *command_short_new(const char *command) {
    g_auto(GStrv) words = g_strsplit(command, " ", -1);
    for (size_t i = 0; words[i]; i++) {
        const char *slash = strrchr(words[i], '/');
        if (slash && slash[1]) {
            char *base = g_strdup(slash + 1);
            g_free(words[i]);
            words[i] = base;
        }
    }
    char *text = g_strjoinv(" ", words);
    if (g_utf8_strlen(text, -1) > 60) {
        char *cut = g_utf8_substring(text, 0, 57);
        g_free(text);
        text = g_strconcat(cut, "...", NULL);
        g_free(cut);
    }
    return text;
}

/* "2 .NET processes started under the program ran unrecorded: pid 12 (dotnet app.dll), ...":
 * a launcher (dotnet run, a tool's shim) records little itself; its child did the work. */
static void unrecorded_print(json_t *list) {
    size_t n = json_array_size(list);
    if (n == 0)
        return;
    g_autoptr(GString) line = g_string_new(NULL);
    g_string_append_printf(line, "heaplens: %zu .NET %s started under the program ran and %s not "
                                 "recorded: ", n, n == 1 ? "process" : "processes",
                           n == 1 ? "was" : "were");
    size_t shown = n > 4 ? 3 : n;
    for (size_t i = 0; i < shown; i++) {
        json_t *u = json_array_get(list, i);
        g_autofree char *text = command_short_new(json_string_value(json_object_get(u, "command")));
        g_string_append_printf(line, "%spid %" JSON_INTEGER_FORMAT " (%s)", i ? ", " : "",
                               json_integer_value(json_object_get(u, "pid")), text);
    }
    if (shown < n)
        g_string_append_printf(line, " and %zu more", n - shown);
    g_string_append_printf(line, "; record %s too with --children, or --children=PATTERN for "
                                 "those whose command line contains PATTERN",
                           n == 1 ? "it" : "them");
    fprintf(stderr, "%s\n", line->str);
}

/* The runtime's own switch that keeps it from loading our profiler in the environment block
 * `env` (NAME=VALUE strings; NULL: none found): "DOTNET_EnableDiagnostics=0" and the like. The
 * runtime reads DOTNET_NAME before COMPlus_NAME, as a hexadecimal number; EnableDiagnostics=0
 * forbids every diagnostic, EnableDiagnostics_Profiler=0 (.NET 8 on) profilers alone. With
 * `launched` (the environment of a process heaplens started, which it gave
 * CORECLR_ENABLE_PROFILING=1) also that variable turned off ("CORECLR_ENABLE_PROFILING=0") or
 * removed ("no CORECLR_ENABLE_PROFILING"): the runtime then loads no profiler at all. */
char *recording_profiler_veto_new(char *const *env, gboolean launched) {
    static const char *const names[] = {"EnableDiagnostics", "EnableDiagnostics_Profiler"};
    for (size_t i = 0; i < G_N_ELEMENTS(names); i++) {
        for (int prefix = 0; prefix < 2; prefix++) {
            g_autofree char *variable =
                g_strconcat(prefix == 0 ? "DOTNET_" : "COMPlus_", names[i], NULL);
            const char *value = g_environ_getenv((gchar **)env, variable);
            if (!value)
                continue;
            char *end = NULL;
            errno = 0;
            unsigned long v = strtoul(value, &end, 16);
            if (*value && end && !*end && errno == 0 && v == 0)
                return g_strdup_printf("%s=%s", variable, value);
            break; /* DOTNET_ set: its COMPlus_ twin is not read */
        }
    }
    if (!launched)
        return NULL;
    const char *enable = g_environ_getenv((gchar **)env, "CORECLR_ENABLE_PROFILING");
    if (!enable)
        return g_strdup("no CORECLR_ENABLE_PROFILING");
    char *end = NULL;
    errno = 0;
    unsigned long v = strtoul(enable, &end, 16);
    /* a value the runtime cannot read is its default, 0 */
    if (!*enable || !end || *end || errno != 0 || v == 0)
        return g_strdup_printf("CORECLR_ENABLE_PROFILING=%s", enable);
    return NULL;
}

char *recording_launcher_veto_new(char *const *program) {
    g_auto(GStrv) env = g_environ_setenv(g_get_environ(), "CORECLR_ENABLE_PROFILING", "1", TRUE);
    size_t i = 0;
    gboolean seen = FALSE; /* an `env` in the command line */
    while (program[i]) {
        g_autofree char *base = g_path_get_basename(program[i]);
        if (strcmp(base, "env") != 0)
            break;
        seen = TRUE;
        /* env [OPTION]... [-] [NAME=VALUE]... [COMMAND [ARG]...] (coreutils, busybox) */
        gboolean options = TRUE;
        for (i++; program[i]; i++) {
            const char *arg = program[i];
            if (options && strcmp(arg, "--") == 0) {
                options = FALSE;
            } else if (options && (strcmp(arg, "-i") == 0 || strcmp(arg, "-") == 0 ||
                                   strcmp(arg, "--ignore-environment") == 0)) {
                g_strfreev(env);
                env = g_new0(char *, 1);
            } else if (options && (strcmp(arg, "-u") == 0 || strcmp(arg, "--unset") == 0)) {
                if (!program[i + 1])
                    return NULL; /* env refuses it: nothing runs */
                env = g_environ_unsetenv(env, program[++i]);
            } else if (options && (g_str_has_prefix(arg, "-u") || g_str_has_prefix(arg, "--unset="))) {
                env = g_environ_unsetenv(env, arg + (arg[1] == 'u' ? 2 : strlen("--unset=")));
            } else if (options && arg[0] == '-') {
                return NULL; /* an option this reading does not know (-S, -C DIR): say nothing */
            } else if (strchr(arg, '=') && arg[0] != '=') {
                options = FALSE;
                g_autofree char *name = g_strndup(arg, (gsize)(strchr(arg, '=') - arg));
                env = g_environ_setenv(env, name, strchr(arg, '=') + 1, TRUE);
            } else {
                break; /* the command */
            }
        }
    }
    g_autofree char *veto = seen ? recording_profiler_veto_new(env, TRUE) : NULL;
    return veto ? g_strdup_printf("env in its command line gives it %s", veto) : NULL;
}

/* The whole of a /proc file (NUL-terminated; its length in *len), or NULL when it cannot be
 * read. Three system calls where g_file_get_contents takes six for a file whose size /proc
 * does not say: a look at a .NET process reads one per thread. */
static char *proc_text_new(const char *path, gsize *len) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    gsize cap = 4096, n = 0;
    char *text = g_malloc(cap);
    for (;;) {
        ssize_t got = read(fd, text + n, cap - 1 - n);
        if (got < 0 && errno == EINTR)
            continue;
        if (got < 0) {
            g_clear_pointer(&text, g_free);
            break;
        }
        if (got == 0)
            break;
        n += (gsize)got;
        if (n == cap - 1)
            text = g_realloc(text, cap *= 2);
    }
    close(fd);
    if (text)
        text[n] = 0;
    if (len)
        *len = n;
    return text;
}

/* The children of process `pid`, all its threads' (/proc/PID/task/TID/children), appended to
 * `pids`, at most `max` in all. */
static void process_children_add(pid_t pid, GArray *pids, guint max) {
    g_autofree char *tasks = g_strdup_printf("/proc/%ld/task", (long)pid);
    GDir *d = g_dir_open(tasks, 0, NULL);
    const char *tid;
    while (d && pids->len < max && (tid = g_dir_read_name(d)) != NULL) {
        g_autofree char *path = g_strdup_printf("%s/%s/children", tasks, tid);
        g_autofree char *text = proc_text_new(path, NULL);
        if (!text)
            continue;
        g_auto(GStrv) words = g_strsplit(text, " ", -1);
        for (size_t i = 0; words[i] && pids->len < max; i++) {
            gint64 child = g_ascii_strtoll(words[i], NULL, 10);
            if (child > 0) {
                pid_t c = (pid_t)child;
                g_array_append_val(pids, c);
            }
        }
    }
    if (d)
        g_dir_close(d);
}

char *recording_program_veto_new(pid_t program) {
    g_autofree char *self = g_file_read_link("/proc/self/exe", NULL);
    if (!self)
        return NULL; /* no /proc: nothing to look at */
    GArray *pids = g_array_new(FALSE, FALSE, sizeof(pid_t));
    g_array_append_val(pids, program);
    char *veto = NULL;
    for (guint k = 0; k < pids->len && !veto; k++) {
        pid_t pid = g_array_index(pids, pid_t, k);
        process_children_add(pid, pids, RECORDING_WATCH_MAX_PROCESSES);
        /* heaplens' own fork before its exec has heaplens' environment, not the program's */
        g_autofree char *link = g_strdup_printf("/proc/%ld/exe", (long)pid);
        g_autofree char *exe = g_file_read_link(link, NULL);
        if (!exe || strcmp(exe, self) == 0)
            continue;
        g_autofree char *path = g_strdup_printf("/proc/%ld/environ", (long)pid);
        g_autofree char *block = NULL, *cmdline = NULL;
        gsize len = 0, cmdlen = 0;
        block = proc_text_new(path, &len);
        if (!block || len == 0)
            continue; /* gone, or a zombie: no environment to read */
        GPtrArray *env = g_ptr_array_new();
        for (gsize at = 0; at < len; at += strlen(block + at) + 1)
            g_ptr_array_add(env, block + at);
        g_ptr_array_add(env, NULL);
        g_autofree char *found = recording_profiler_veto_new((char **)env->pdata, TRUE);
        g_ptr_array_free(env, TRUE);
        if (!found)
            continue;
        g_free(path);
        path = g_strdup_printf("/proc/%ld/cmdline", (long)pid);
        if ((cmdline = proc_text_new(path, &cmdlen)) != NULL)
            for (gsize i = 0; i + 1 < cmdlen; i++)
                if (!cmdline[i])
                    cmdline[i] = ' ';
        g_autofree char *command = command_short_new(cmdline ? cmdline : "?");
        veto = g_strdup_printf("pid %ld (%s) ran with %s in its environment", (long)pid,
                               command, found);
    }
    g_array_free(pids, TRUE);
    return veto;
}

/* The summary of one database: printed, or returned as JSON with --json. With --children
 * each database also says whose it is (run.pid, run.command). */
json_t *recording_summary_print(const char *output, const recording_summary_options *o) {
    g_autoptr(GError) error = NULL;
    /* Not query_db_open: the end of a recording does not build the generation history. */
    sqlite3 *db = store_db_open_readonly(output, &error);
    if (!db) {
        query_error_report(error);
        return NULL;
    }
    int64_t pid = 0;
    g_autofree char *command = NULL;
    sqlite3_stmt *run_stmt = NULL;
    if (sqlite3_prepare_v2(db, "SELECT pid, command FROM run WHERE id = 1", -1, &run_stmt,
                           NULL) == SQLITE_OK &&
        sqlite3_step(run_stmt) == SQLITE_ROW) {
        pid = sqlite3_column_int64(run_stmt, 0);
        command = g_strdup(sqlite3_column_text(run_stmt, 1) ? (const char *)sqlite3_column_text(run_stmt, 1) : "");
    }
    sqlite3_finalize(run_stmt);
    g_autofree char *whose = o->whose ? g_strdup_printf(", pid %" PRId64 ": %s", pid,
                                                           command ? command : "")
                                         : g_strdup("");
    int64_t gcs = 0, objects = 0, types = 0, nodata = 0;
    int64_t allocations = 0, survived = 0, allocs_lost = 0, gcs_lost = 0;
    query_db_int(db, "SELECT count(*) FROM gcs", &gcs, NULL);
    objects = MAX(0, store_db_objects_count(db)); /* packed: not every row derived */
    query_db_int(db, "SELECT count(*) FROM types", &types, NULL);
    /* "N allocations ... of T types": the types allocated, as `allocations` counts them; the
     * types table also names those only a snapshot or a field found (an attach session's
     * summary said "0 allocations ... of 1,450 types", AllocPatterns' 242 of 240 allocated). */
    int64_t allocated_types = types;
    query_estimates allocated_estimates = {0};
    GArray *allocated = query_allocations_read(db, output, NULL, &allocated_estimates, NULL, NULL);
    if (allocated) {
        allocated_types = allocated->len;
        g_array_unref(allocated);
    }
    query_estimates_clear(&allocated_estimates);
    query_db_int(db, "SELECT total(count) FROM alloc_counts", &allocations, NULL);
    query_db_int(db, "SELECT total(survived) FROM alloc_counts", &survived, NULL);
    /* Sampled and attach recordings: allocations are estimated from the samples (estimates.h),
     * and every object that survived a GC has its objects row. */
    query_estimates estimates = {0};
    int64_t samples = 0;
    gboolean census = FALSE; /* sampled mode's census: exact per type, per thread estimated */
    gboolean read = query_estimates_get(db, &estimates, NULL);
    /* recorded with --census off: small objects estimated only */
    gboolean census_off = read && estimates.census_off;
    gboolean attach = read && estimates.attach; /* its pinned objects are not counted either */
    if (read && (estimates.estimated || estimates.census)) {
        query_totals totals; /* the total info, allocations and stacks give */
        samples = estimates.samples;
        census = estimates.census;
        if (query_totals_read(db, &estimates, &totals, NULL))
            allocations = totals.count;
        survived = objects;
    }
    gboolean followed = estimates.followed; /* survivors estimated from the followed samples */
    /* sampled or attach: the allocations lost are those reported one by one (large, pinned);
     * small objects are counted at each GC, so a lost GC loses theirs (the note says it) */
    gboolean counted_at_gcs = estimates.uncounted;
    query_survived followed_survived = {0}; /* ... or what the snapshots prove, when more */
    if (followed && query_survived_read(db, &estimates, FALSE, &followed_survived, NULL))
        survived = followed_survived.count;
    query_estimates_clear(&estimates);
    /* Losses in the units users think in; a negative value is not a count (never shown). */
    query_db_int(db, "SELECT max(0, coalesce(sum(value), 0)) FROM counters WHERE name = 'allocs_dropped'",
                 &allocs_lost, NULL);
    query_db_gcs_lost(db, &gcs_lost, NULL); /* with those sent and never stored */
    /* ... and the small objects the census counted before them (the collector's total less
     * those stored) */
    query_census_lost census_lost = {0};
    query_db_census_lost(db, &census_lost, NULL);
    /* Full mode: time program threads waited for room in the collector's buffers (not lost). */
    int64_t waits = 0, wait_ns = 0;
    query_db_int(db, "SELECT coalesce(sum(value), 0) FROM counters WHERE name = 'thread_waits'",
                 &waits, NULL);
    query_db_int(db, "SELECT coalesce(sum(value), 0) FROM counters WHERE name = 'thread_wait_ns'",
                 &wait_ns, NULL);
    /* Snapshots a --snapshot policy did not take: the walks the collector held were at their
     * bound (collector/snapshot_policy.h); the note says why. */
    int64_t skipped_queued = 0;
    query_db_int(db, "SELECT coalesce(sum(value), 0) FROM counters WHERE name = "
                     "'snapshots_skipped_queued'", &skipped_queued, NULL);
    /* An attach's detach that went on with ForceGC threads in the runtime (the note says it). */
    int64_t forcers_left = 0;
    query_db_int(db, "SELECT coalesce(sum(value), 0) FROM counters WHERE name = "
                     "'forcegc_threads_left'", &forcers_left, NULL);
    query_db_int(db, "SELECT status = 'no-data' FROM run", &nodata, NULL);
    g_autofree char *loss = NULL; /* run.loss: why, as stored (SCHEMA.md, "Losses") */
    /* A stream that ended early (status 'truncated': the program killed while its collector
     * still had GCs to send, a writer killed...) lost what never arrived, which no counter
     * counts: the counted losses are then lower bounds, and "0 lost" was said of a MidLife
     * killed at its exit with 9 of its 13 GCs missing. */
    gboolean truncated = FALSE;
    sqlite3_stmt *loss_stmt = NULL;
    if (sqlite3_prepare_v2(db, "SELECT loss, status = 'truncated' FROM run WHERE id = 1", -1,
                           &loss_stmt, NULL) == SQLITE_OK &&
        sqlite3_step(loss_stmt) == SQLITE_ROW) {
        if (sqlite3_column_text(loss_stmt, 0))
            loss = g_strdup((const char *)sqlite3_column_text(loss_stmt, 0));
        truncated = sqlite3_column_int(loss_stmt, 1) != 0;
    }
    sqlite3_finalize(loss_stmt);
    g_autofree char *note = query_db_note_new(db, NULL);
    json_t *unrecorded = query_info_unrecorded_json(db);
    sqlite3_close(db);
    struct stat st = {0};
    stat(output, &st);
    if (o->json) {
        json_t *j = json_pack("{s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:b, s:o}", "file",
                              output, "gcs", (json_int_t)gcs, "allocations",
                              (json_int_t)allocations, "allocations_survived",
                              (json_int_t)survived, "objects", (json_int_t)objects, "types",
                              (json_int_t)types, "allocations_lost", (json_int_t)allocs_lost,
                              "gcs_lost", (json_int_t)gcs_lost, "dropped",
                              (json_int_t)(allocs_lost + gcs_lost), "file_bytes",
                              (json_int_t)st.st_size, "collector_loaded", !nodata, "loss",
                              loss ? json_string(loss) : json_null());
        json_object_set_new(j, "allocations_estimated", json_boolean(samples > 0 && !census));
        json_object_set_new(j, "allocations_census", json_boolean(census));
        json_object_set_new(j, "census_off", json_boolean(census_off));
        json_object_set_new(j, "allocation_types", json_integer(allocated_types));
        /* null when no census total says (full mode, --census off, nothing lost) */
        json_object_set_new(j, "census_allocations_lost",
                            census_lost.known ? json_integer(census_lost.allocs) : json_null());
        json_object_set_new(j, "census_allocation_bytes_lost",
                            census_lost.known ? json_integer(census_lost.bytes) : json_null());
        json_object_set_new(j, "allocations_survived_at_least",
                            followed ? json_integer(followed_survived.proven) : json_null());
        json_object_set_new(j, "allocations_survived_estimated",
                            json_boolean(followed && !followed_survived.exact));
        /* every GC's snapshot named the survivors: no more than the rows (else null) */
        json_object_set_new(j, "allocations_survived_at_most",
                            followed && followed_survived.at_most >= 0
                                ? json_integer(followed_survived.at_most)
                                : json_null());
        /* the losses counted are lower bounds: the stream ended early (status truncated) */
        json_object_set_new(j, "lost_at_least", json_boolean(truncated));
        json_object_set_new(j, "unrecorded", unrecorded);
        json_object_set_new(j, "thread_waits", json_integer(waits));
        json_object_set_new(j, "thread_wait_ns", json_integer(wait_ns));
        json_object_set_new(j, "snapshots_skipped_queued", json_integer(skipped_queued));
        json_object_set_new(j, "forcegc_threads_left", json_integer(forcers_left));
        if (o->whose) {
            json_object_set_new(j, "pid", json_integer(pid));
            json_object_set_new(j, "command", json_string(command ? command : ""));
        }
        return j;
    }
    if (o->quiet) {
        json_decref(unrecorded);
        return NULL;
    }
    if (nodata) {
        json_decref(unrecorded);
        g_autofree char *veto = recording_profiler_veto_new(environ, FALSE);
        if (veto)
            fprintf(stderr, "heaplens: warning: the program never loaded the collector: %s in "
                            "its environment forbids the runtime to load a profiler (unset it); "
                            "%s holds no data\n", veto, output);
        else if (o->program_veto) /* its launcher's doing: `env`, a wrapper script */
            fprintf(stderr, "heaplens: warning: the program never loaded the collector: %s, "
                            "which keeps the runtime from loading a profiler; %s holds no data\n",
                    o->program_veto, output);
        else if (o->program_signal > 0) /* not a question of .NET: it died first (Ctrl-C) */
            fprintf(stderr, "heaplens: the program was killed by signal %d (%s) before it loaded "
                            "the collector; %s holds no data\n", o->program_signal,
                    strsignal(o->program_signal), output);
        else /* the processes were watched, but one may have come and gone between two looks */
            fprintf(stderr, "heaplens: warning: the program never loaded the collector (is it a "
                            ".NET program? or did its launcher set CORECLR_ENABLE_PROFILING=0 or "
                            "DOTNET_EnableDiagnostics=0?); %s holds no data\n", output);
        return NULL;
    }
    char a[QUERY_FORMAT_MAX], b[QUERY_FORMAT_MAX], c[QUERY_FORMAT_MAX], d[QUERY_FORMAT_MAX],
        e[QUERY_FORMAT_MAX];
    g_autofree char *lost = NULL;
    if (allocs_lost == 0 && gcs_lost == 0 && census_lost.allocs == 0) {
        lost = truncated ? g_strdup_printf("lost an uncounted part (%s: what was not sent "
                                           "before the stream ended)",
                                           loss ? loss : "reason unknown")
                         : g_strdup("0 lost");
    } else {
        char f[QUERY_FORMAT_MAX], g[QUERY_FORMAT_MAX], h[QUERY_FORMAT_MAX];
        g_autofree char *census_words =
            census_lost.allocs > 0 ? g_strdup_printf(", %s small-object allocations (counted by "
                                                     "the census)",
                                                     query_count_format(census_lost.allocs, h))
                            : g_strdup("");
        lost = g_strdup_printf("lost %s%s %sallocations%s and %s GCs (%s)",
                               truncated ? "at least " : "", query_count_format(allocs_lost, f),
                               counted_at_gcs ? "reported " : "", census_words,
                               query_count_format(gcs_lost, g), loss ? loss : "reason unknown");
    }
    if (waits > 0) {
        char w[QUERY_FORMAT_MAX], t[QUERY_FORMAT_MAX];
        char *with_waits = g_strdup_printf("%s, threads waited %s for the collector (%s waits)",
                                           lost, query_duration_format(wait_ns, t),
                                           query_count_format(waits, w));
        g_free(lost);
        lost = with_waits;
    }
    char s[QUERY_FORMAT_MAX];
    g_autofree char *estimated =
        census ? g_strdup_printf(" (exact per type up to the last GC: census of gen0; after it "
                                 "and per thread estimated from %s samples)",
                                 query_count_format(samples, s))
        : samples > 0 ? g_strdup_printf(" estimated from %s samples%s",
                                        query_count_format(samples, s),
                                        census_off ? " (--census off: no census of gen0)" : "")
        : census_off ? g_strdup_printf(" (%s objects only: --census off, and no samples)",
                                       attach ? "large" : "large and pinned")
                     : g_strdup("");
    /* Survivors: the followed samples' estimate (~), or at least what the snapshots found. */
    const char *survived_mark = followed_survived.at_least          ? "at least "
                                : followed && !followed_survived.exact ? "~"
                                                                       : "";
    fprintf(stderr,
            "heaplens: recorded %s GCs, %s%s allocations%s (%s%s survived a GC%s) of %s %s, %s "
            "-> %s (%s)%s\n",
            query_count_format(gcs, a), samples > 0 && !census ? "~" : "",
            query_count_format(allocations, b), estimated, survived_mark,
            query_count_format(survived, c),
            followed_survived.at_least ? ", by the snapshots" : "",
            query_count_format(allocated_types, d), allocated_types == 1 ? "type" : "types", lost,
            output, query_size_format(st.st_size, e), whose);
    if (note)
        fprintf(stderr, "heaplens: %s\n", note);
    unrecorded_print(unrecorded);
    json_decref(unrecorded);
    return NULL;
}

/* The process holding an SQLite lock on the database `path` (0: none, or it cannot be told): a
 * writer in WAL mode holds its shared lock for as long as its connection is open — the writer of
 * a recording in progress (record, attach, a descendant's), from its start to its end. The
 * descriptor's close drops no lock of this process: it holds none on `path`. */
static pid_t recording_output_holder(const char *path)
{
    struct flock lock = {.l_type = F_WRLCK, .l_whence = SEEK_SET,
                         .l_start = 0x40000000, .l_len = 512}; /* pending, reserved, shared */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    pid_t holder = fd >= 0 && fcntl(fd, F_GETLK, &lock) == 0 && lock.l_type != F_UNLCK
                       ? lock.l_pid
                       : 0;
    if (fd >= 0)
        close(fd);
    return holder;
}

/* An output named as SQLite names another database's files (recording.h): its own set is
 * recording_output_prepare's. */
gboolean recording_output_not_sibling(const char *refused, const char *output, GError **error) {
    static const struct {
        const char *suffix, *what;
    } members[] = {{"-wal", "write-ahead log"},
                   {"-shm", "WAL index"},
                   {"-journal", "rollback journal"}};
    for (size_t i = 0; i < G_N_ELEMENTS(members); i++) {
        struct stat st;
        if (!g_str_has_suffix(output, members[i].suffix))
            continue;
        g_autofree char *db =
            g_strndup(output, strlen(output) - strlen(members[i].suffix));
        if (*db && stat(db, &st) == 0 && S_ISREG(st.st_mode)) {
            g_set_error(error, QUERY_ERROR, QUERY_ERROR_USAGE,
                        "%s %s: SQLite would take it for %s's %s and delete or overwrite it "
                        "when %s is next opened; choose another name",
                        refused, output, db, members[i].what, db);
            return FALSE;
        }
    }
    return TRUE;
}

/* A database is a set of files: FILE and SQLite's FILE-wal, FILE-shm, FILE-journal
 * (query_replaced_suffixes). A leftover
 * of a killed writer must never be taken into a new recording, so --force replaces the whole set
 * (moved aside until the new database exists, put back if it never does: output_aside_name) and
 * without it any member of the set means "exists"; a set some process still has open (a
 * recording in progress) is never removed: its writer would go on into a file nobody can reach.
 * A database is a regular file: anything else named (a FIFO, a device, a directory) is refused,
 * never removed; through a symbolic link the set beside its target is the one replaced (SQLite
 * writes there), never the link. Sets *resolved to the path to record to. */

gboolean recording_output_name_fits(const char *refused, const char *path, size_t extra,
                                    GError **error) {
    g_autofree char *dir = g_path_get_dirname(path);
    g_autofree char *base = g_path_get_basename(path);
    long name_max = pathconf(dir, _PC_NAME_MAX);
    if (name_max <= 0)
        name_max = NAME_MAX;
    size_t longest = strlen(base) + extra + strlen("-journal");
    if (longest <= (size_t)name_max)
        return TRUE;
    g_set_error(error, QUERY_ERROR, QUERY_ERROR_USAGE,
                "%s %s: its name is too long: the name of SQLite's journal beside %s would be "
                "%zu bytes, over the %ld this file system takes (name it %zu byte%s shorter)",
                refused, path, extra ? "a descendant's database (--children)" : "it", longest,
                name_max, longest - (size_t)name_max, longest - (size_t)name_max == 1 ? "" : "s");
    return FALSE;
}

/* Where --force moves FILE's set aside (`path`: the set's FILE, resolved): a hidden name beside
 * it, no recording's, so that a rename never crosses a file system; NULL for "-". */
static char *output_aside_name(const char *path) {
    return query_replaced_name(path, (long)getpid());
}

/* An old set a heaplens killed while replacing `path` left aside (query/replaced.h): put back
 * when `path`'s own set is gone and it is the only one — what the killed session's failure would
 * have done, so that it is found again under its name; said otherwise. Returns the name it was
 * put back from (a new string), NULL when none was. */
static char *output_leftover_restore(const char *path, const char *output,
                                     const GPtrArray *found) {
    if (found->len == 1 && !query_replaced_set_exists(path)) {
        const char *aside = g_ptr_array_index(found, 0);
        if (query_replaced_rename(aside, path, TRUE, NULL))
            return g_strdup(aside);
        fprintf(stderr, "heaplens: warning: cannot rename %s back to %s: %s\n", aside, output,
                g_strerror(errno));
    }
    return NULL;
}

gboolean recording_output_prepare(const char *output, gboolean force, char **resolved,
                                  char **aside, GError **error) {
    const char *const *suffixes = query_replaced_suffixes;
    struct stat st;
    *resolved = NULL;
    *aside = NULL;
    if (strcmp(output, "-") == 0) { /* stdout to every other output: never a file named "-" */
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_USAGE,
                    "cannot record to -: a database is a file, not standard output (name one "
                    "with -o)");
        return FALSE;
    }
    /* --force too: it replaces the output's own set, never another database's */
    if (!recording_output_not_sibling("cannot record to", output, error))
        return FALSE;
    if (stat(output, &st) == 0 && !S_ISREG(st.st_mode)) {
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_USAGE,
                    "cannot record to %s: it is not a regular file (a database needs one)", output);
        return FALSE;
    }
    char *real = force && stat(output, &st) == 0 ? realpath(output, NULL) : NULL;
    *resolved = g_strdup(real ? real : output);
    free(real);
    /* A name that fits only without SQLite's suffixes was created, and the recording then
     * failed mid-way ("unable to open database file") with the program run for nothing. */
    if (!recording_output_name_fits("cannot record to", *resolved, 0, error)) {
        g_clear_pointer(resolved, g_free);
        return FALSE;
    }
    pid_t holder = force ? recording_output_holder(*resolved) : 0;
    if (holder != 0) {
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_USAGE,
                    "cannot replace %s: process %ld has it open (a recording still being written, "
                    "or a reader in WAL mode); choose another name with -o",
                    output, (long)holder);
        return FALSE;
    }
    /* the directory read once: the set to put back, or else those to name */
    g_autoptr(GPtrArray) found = query_replaced_find(*resolved);
    g_autofree char *restored = output_leftover_restore(*resolved, output, found);
    /* others left aside (several, or beside a FILE that exists): said, never taken */
    g_autofree char *leftover = restored ? NULL : query_replaced_hint_of(*resolved, found);
    gboolean exists = FALSE;
    for (size_t i = 0; i < QUERY_REPLACED_MEMBERS; i++) {
        g_autofree char *path = g_strconcat(*resolved, suffixes[i], NULL);
        if (lstat(path, &st) != 0)
            continue;
        exists = TRUE;
        if (force && !S_ISREG(st.st_mode)) {
            g_set_error(error, QUERY_ERROR, QUERY_ERROR_USAGE,
                        "cannot replace %s: it is not a regular file", path);
            return FALSE;
        }
        if (!force) {
            g_set_error(error, QUERY_ERROR, QUERY_ERROR_USAGE,
                        "%s already exists%s%s%s%s; choose another name with -o, or --force to "
                        "replace it",
                        path, restored ? " (put back from " : leftover ? " (and " : "",
                        restored ? restored : leftover ? leftover : "",
                        restored ? ", where a heaplens killed while replacing it (--force) had "
                                   "set it aside"
                                 : "",
                        restored || leftover ? ")" : "");
            return FALSE;
        }
    }
    if (restored)
        fprintf(stderr, "heaplens: put %s back from %s, where a heaplens killed while replacing "
                        "it (--force) had set it aside; --force now replaces it\n",
                output, restored);
    else if (leftover)
        fprintf(stderr, "heaplens: note: %s\n", leftover);
    if (!exists)
        return TRUE;
    /* --force moves the old set aside rather than removing it: a new database that cannot be
     * created (a full disk, `ulimit -f`, a read-only directory) must not cost the old one.
     * recording_output_replaced drops it once the new one exists, recording_output_kept puts it
     * back when the session fails before. */
    g_autofree char *hidden = output_aside_name(*resolved);
    for (size_t i = 0; i < QUERY_REPLACED_MEMBERS; i++) {
        g_autofree char *path = g_strconcat(hidden, suffixes[i], NULL);
        if (lstat(path, &st) == 0) {
            g_set_error(error, QUERY_ERROR, QUERY_ERROR_USAGE,
                        "cannot replace %s: %s exists (an old recording a killed heaplens set "
                        "aside: rename it back or remove it)", output, path);
            return FALSE;
        }
    }
    size_t failed = 0;
    if (!query_replaced_rename(*resolved, hidden, FALSE, &failed)) {
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_IO, "cannot replace %s%s: %s", *resolved,
                    suffixes[failed], g_strerror(errno));
        return FALSE;
    }
    *aside = g_steal_pointer(&hidden);
    return TRUE;
}

void recording_output_replaced(const char *aside) {
    for (size_t i = 0; aside && i < QUERY_REPLACED_MEMBERS; i++) {
        g_autofree char *path = g_strconcat(aside, query_replaced_suffixes[i], NULL);
        unlink(path);
    }
}

gboolean recording_output_kept(const char *aside, const char *output, GError **error) {
    if (!aside)
        return FALSE;
    /* what the failed session created in its place goes first: a -wal of the new database
     * beside the old one would be taken into it */
    for (size_t i = 0; i < QUERY_REPLACED_MEMBERS; i++) {
        g_autofree char *path = g_strconcat(output, query_replaced_suffixes[i], NULL);
        unlink(path);
    }
    size_t failed = 0;
    gboolean back = query_replaced_rename(aside, output, TRUE, &failed);
    if (!error || !*error)
        return back;
    char *message = back ? g_strdup_printf("%s (the old recording was kept)", (*error)->message)
                         : g_strdup_printf("%s (the old recording could not be put back: it is "
                                           "%s, to rename back)", (*error)->message, aside);
    g_free((*error)->message);
    (*error)->message = message;
    return back;
}


