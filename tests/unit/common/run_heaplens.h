/* run_heaplens.h — running the `heaplens` binary under test as a user would, capturing its exit
 * status, stdout and stderr. RUN(...) uses `heaplens` (the binary) and `workdir` (where commands
 * run), which cli_test.h defines. */
#ifndef HEAPLENS_TEST_RUN_HEAPLENS_H
#define HEAPLENS_TEST_RUN_HEAPLENS_H

#include <glib.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

typedef struct run_result {
    int status; /* exit status, or -1 when killed by a signal */
    char *out;
    char *err;
} run_result;

static inline void run_result_release(run_result *r)
{
    g_free(r->out);
    g_free(r->err);
}

/* Runs `exe ARGS...` (args NULL-terminated) in `dir`; exits the test (status 2) when it cannot
 * be started at all. */
static inline run_result run_in(const char *exe, const char *dir, const char *const *args)
{
    run_result r = {.status = -1};
    g_autoptr(GPtrArray) argv = g_ptr_array_new();
    g_autoptr(GError) error = NULL;
    int wait_status = 0;
    g_ptr_array_add(argv, (char *)exe);
    for (const char *const *a = args; *a; a++)
        g_ptr_array_add(argv, (char *)*a);
    g_ptr_array_add(argv, NULL);
    if (!g_spawn_sync(dir, (char **)argv->pdata, NULL, G_SPAWN_DEFAULT, NULL, NULL, &r.out, &r.err,
                      &wait_status, &error)) {
        fprintf(stderr, "cannot run %s: %s\n", exe, error->message);
        exit(2);
    }
    if (WIFEXITED(wait_status))
        r.status = WEXITSTATUS(wait_status);
    return r;
}

#define RUN(...) run_in(heaplens, workdir, (const char *const[]){__VA_ARGS__, NULL})

#endif /* HEAPLENS_TEST_RUN_HEAPLENS_H */
