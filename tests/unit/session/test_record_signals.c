/* test_record_signals.c — record_session_run gives its caller back the signal dispositions it
 * found, on every return: it installs handlers that pass SIGINT, SIGQUIT, SIGTERM, SIGHUP,
 * SIGUSR1 and SIGUSR2 on to the program, and a session that failed before the program started
 * (a bad HEAPLENS_* setting, an output it may not write, a program it cannot run) used to leave
 * them installed: a library caller's own handlers were gone, and a later signal was "passed on"
 * to no program.
 *
 *   test_record_signals <case>|all   (ctest: session.record_signals_<case>)
 *
 * Each case installs a handler of its own for every forwarded signal, runs a session that fails
 * at one of its early returns, and checks that each signal's handler is the test's again. No
 * program runs, no .NET. */
#include "tests/unit/common/check.h"
#include "tests/unit/common/test_cases.h"

#include "session/record_session.h"

#include <glib.h>
#include <glib/gstdio.h>
#include <signal.h>
#include <stdlib.h>

static const int forwarded[] = {SIGINT, SIGQUIT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2};

static void callers_handler(int sig)
{
    (void)sig;
}

/* Runs a session of `program` into `output` with the test's handlers installed: it must fail
 * (one line in *error) and leave every forwarded signal to the test's handler. */
static void session_fails_restored(char **program, const char *output)
{
    struct sigaction mine = {.sa_handler = callers_handler};
    sigemptyset(&mine.sa_mask);
    for (size_t i = 0; i < G_N_ELEMENTS(forwarded); i++)
        g_assert(sigaction(forwarded[i], &mine, NULL) == 0);
    record_options o = {.output = output, .quiet = TRUE, .program = program};
    int status = -1;
    json_t *summary = NULL;
    g_autoptr(GError) error = NULL;
    CHECK(!record_session_run(&o, &status, &summary, &error));
    CHECK(error != NULL && summary == NULL);
    if (error)
        fprintf(stderr, "  (the session's error: %s)\n", error->message);
    for (size_t i = 0; i < G_N_ELEMENTS(forwarded); i++) {
        struct sigaction now;
        CHECK(sigaction(forwarded[i], NULL, &now) == 0);
        if (now.sa_handler != callers_handler)
            fprintf(stderr, "  signal %d (%s): not the caller's handler\n", forwarded[i],
                    strsignal(forwarded[i]));
        CHECK(now.sa_handler == callers_handler);
    }
    for (size_t i = 0; i < G_N_ELEMENTS(forwarded); i++)
        signal(forwarded[i], SIG_DFL);
}

/* The first early return: a setting the program would inherit that is not a value it takes. */
static void test_bad_setting(void)
{
    char *program[] = {"true", NULL};
    g_setenv("HEAPLENS_POOL_MB", "lots", TRUE);
    session_fails_restored(program, "/nonexistent-heaplens-dir/x.db");
    g_unsetenv("HEAPLENS_POOL_MB");
}

/* A program that cannot be run. */
static void test_bad_program(void)
{
    char *program[] = {"/nonexistent-heaplens-dir/program", NULL};
    session_fails_restored(program, "/nonexistent-heaplens-dir/x.db");
}

/* An output in a directory that does not exist. */
static void test_bad_output(void)
{
    char *program[] = {"true", NULL};
    session_fails_restored(program, "/nonexistent-heaplens-dir/x.db");
}

static const test_case cases[] = {
    {"bad_setting", test_bad_setting},
    {"bad_program", test_bad_program},
    {"bad_output", test_bad_output},
};

int main(int argc, char **argv)
{
    return test_cases_main(argc, argv, cases, G_N_ELEMENTS(cases), &failures);
}
