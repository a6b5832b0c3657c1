/* test_veto.c — what keeps the runtime from loading the collector in the environment the
 * program's launcher gave it (session/recording.h): an `env` at the head of the command line
 * (recording_launcher_veto_new), and a look at the running program's processes
 * (recording_program_veto_new), which `record` takes while the program runs (a wrapper script's
 * `DOTNET_EnableDiagnostics=0 dotnet app.dll` was reported as "is it a .NET program?").
 *
 *   test_veto <case>|all   (ctest: session.veto_<case>)
 *
 * The processes looked at are `sh` and `cat`, blocked on a pipe the test holds: the test waits
 * (a bounded poll) until the script's child exists, looks, then closes the pipe. No .NET. */
#define _GNU_SOURCE
#include "tests/unit/common/check.h"
#include "tests/unit/common/test_cases.h"

#include "session/recording.h"

#include <errno.h>
#include <fcntl.h>
#include <glib.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

/* CHECK_STR where either may be NULL (none found) */
#define CHECK_VETO(got, want)                                                                       \
    do {                                                                                           \
        const char *got_ = (got), *want_ = (want);                                                 \
        if (!(got_ == want_ || (got_ && want_ && strcmp(got_, want_) == 0))) {                     \
            fprintf(stderr, "%s:%d: %s = '%s', expected '%s'\n", __FILE__, __LINE__, #got,         \
                    got_ ? got_ : "(null)", want_ ? want_ : "(null)");                             \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

static void launcher_is(char **argv, const char *want)
{
    g_autofree char *got = recording_launcher_veto_new(argv);
    CHECK_VETO(got, want);
}

static void test_launcher(void)
{
    g_setenv("CORECLR_ENABLE_PROFILING", "1", TRUE); /* as the program is given it */
    g_unsetenv("DOTNET_EnableDiagnostics");
    g_unsetenv("COMPlus_EnableDiagnostics");
    launcher_is((char *[]){"dotnet", "app.dll", NULL}, NULL);
    launcher_is((char *[]){"env", "CORECLR_ENABLE_PROFILING=0", "dotnet", "app.dll", NULL},
                "env in its command line gives it CORECLR_ENABLE_PROFILING=0");
    launcher_is((char *[]){"/usr/bin/env", "A=1", "DOTNET_EnableDiagnostics=0", "dotnet", NULL},
                "env in its command line gives it DOTNET_EnableDiagnostics=0");
    launcher_is((char *[]){"env", "-i", "PATH=/usr/bin", "dotnet", NULL},
                "env in its command line gives it no CORECLR_ENABLE_PROFILING");
    launcher_is((char *[]){"env", "-u", "CORECLR_ENABLE_PROFILING", "dotnet", NULL},
                "env in its command line gives it no CORECLR_ENABLE_PROFILING");
    launcher_is((char *[]){"env", "--unset=CORECLR_ENABLE_PROFILING", "dotnet", NULL},
                "env in its command line gives it no CORECLR_ENABLE_PROFILING");
    /* nested: the second env's setting wins */
    launcher_is((char *[]){"env", "CORECLR_ENABLE_PROFILING=0", "env",
                           "CORECLR_ENABLE_PROFILING=1", "dotnet", NULL},
                NULL);
    launcher_is((char *[]){"env", "DOTNET_EnableDiagnostics=1", "COMPlus_EnableDiagnostics=0",
                           "dotnet", NULL},
                NULL); /* DOTNET_ read before COMPlus_ */
    /* after the command, NAME=VALUE is the command's argument */
    launcher_is((char *[]){"env", "dotnet", "CORECLR_ENABLE_PROFILING=0", NULL}, NULL);
    /* an option this reading does not know: nothing said rather than a guess */
    launcher_is((char *[]){"env", "-S", "CORECLR_ENABLE_PROFILING=0 dotnet", NULL}, NULL);
    g_unsetenv("CORECLR_ENABLE_PROFILING");
}

/* Starts `sh -c script` with `env` and its stdin the read end of a pipe (*feed: the write end);
 * waits until sh's child runs cat with its environment (*leaf: its pid; 0 when it never came). */
static pid_t script_start(const char *script, char **env, int *feed, pid_t *leaf)
{
    int p[2];
    g_assert(pipe2(p, O_CLOEXEC) == 0);
    pid_t pid = fork();
    g_assert(pid >= 0);
    if (pid == 0) {
        dup2(p[0], 0);
        execve("/bin/sh", (char *[]){"sh", "-c", (char *)script, NULL}, env);
        _exit(127);
    }
    close(p[0]);
    *feed = p[1];
    /* the observable condition: sh has its child, and that child runs cat */
    *leaf = 0;
    for (gint64 deadline = g_get_monotonic_time() + 30 * G_USEC_PER_SEC;
         !*leaf && g_get_monotonic_time() < deadline;) {
        g_autofree char *children = NULL;
        g_autofree char *path = g_strdup_printf("/proc/%ld/task/%ld/children", (long)pid, (long)pid);
        if (g_file_get_contents(path, &children, NULL, NULL) && *children) {
            pid_t c = (pid_t)atol(children);
            g_autofree char *exe = g_strdup_printf("/proc/%ld/exe", (long)c);
            g_autofree char *target = g_file_read_link(exe, NULL);
            /* and its environment is there: exec names the new program before it writes the
             * new environment, which reads empty in between */
            g_autofree char *environ_path = g_strdup_printf("/proc/%ld/environ", (long)c);
            g_autofree char *environ_text = NULL;
            gsize environ_len = 0;
            if (target && g_str_has_suffix(target, "/cat") &&
                g_file_get_contents(environ_path, &environ_text, &environ_len, NULL) &&
                environ_len > 0)
                *leaf = c;
        }
        if (!*leaf)
            g_usleep(1000); /* polling for the process, not timing it */
    }
    return pid;
}

static void script_end(pid_t pid, int feed)
{
    close(feed);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
}

/* Runs `script` (its last process cat, a grandchild of heaplens when the script does not exec
 * it) and checks what recording_program_veto_new(sh) says: `variable` set to 0 named at cat's
 * pid, or nothing (NULL). */
static void script_veto_is(const char *script, const char *variable)
{
    char *env[] = {"PATH=/usr/bin:/bin", "CORECLR_ENABLE_PROFILING=1", NULL};
    int feed;
    pid_t leaf;
    pid_t sh = script_start(script, env, &feed, &leaf);
    CHECK(leaf > 0);
    g_autofree char *got = recording_program_veto_new(sh);
    g_autofree char *want =
        variable ? g_strdup_printf("pid %ld (cat) ran with %s=0 in its environment", (long)leaf,
                                   variable)
                 : NULL;
    CHECK_VETO(got, want);
    script_end(sh, feed);
}

/* A wrapper script that sets DOTNET_EnableDiagnostics=0 for its child (not exec'd): the child,
 * a grandchild of heaplens, is found and named. */
static void test_program_grandchild(void)
{
    script_veto_is("DOTNET_EnableDiagnostics=0 cat; exit 0", "DOTNET_EnableDiagnostics");
}

/* The same script without the veto: nothing found; with CORECLR_ENABLE_PROFILING=0 exported by
 * the script: found. */
static void test_program_none_and_exported(void)
{
    script_veto_is("cat; exit 0", NULL);
    script_veto_is("export CORECLR_ENABLE_PROFILING=0; cat; exit 0", "CORECLR_ENABLE_PROFILING");
}

/* A process that has exited has no environment to read (a zombie's is empty): nothing. */
static void test_program_gone(void)
{
    pid_t pid = fork();
    g_assert(pid >= 0);
    if (pid == 0)
        _exit(0);
    siginfo_t info;
    CHECK(waitid(P_PID, (id_t)pid, &info, WEXITED | WNOWAIT) == 0); /* a zombie now */
    g_autofree char *got = recording_program_veto_new(pid);
    CHECK_VETO(got, NULL);
    waitpid(pid, NULL, 0);
}

static const test_case cases[] = {
    {"launcher", test_launcher},
    {"program_grandchild", test_program_grandchild},
    {"program_none_and_exported", test_program_none_and_exported},
    {"program_gone", test_program_gone},
};

int main(int argc, char **argv)
{
    return test_cases_main(argc, argv, cases, G_N_ELEMENTS(cases), &failures);
}
