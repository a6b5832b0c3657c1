/* test_cases.h — the case loop of the C test programs whose cases are ctest entries of their own
 * (`PROGRAM CASE`, or `all` for every case): each case run prints "<case>: ok" or
 * "<case>: FAILED" on stderr. Plain C (no GLib), for any test program. */
#ifndef HEAPLENS_TEST_CASES_H
#define HEAPLENS_TEST_CASES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

typedef struct test_case {
    const char *name;
    void (*run)(void);
} test_case;

/* Runs case `which` of `cases` (every case for "all"); `failed` points to the program's count of
 * failed checks (check.h's `failures`). Returns false when no case has that name. */
static inline bool test_cases_run(const char *which, const test_case *cases, size_t n_cases,
                                  const int *failed)
{
    bool ran = false;
    for (size_t i = 0; i < n_cases; i++) {
        if (strcmp(which, "all") == 0 || strcmp(which, cases[i].name) == 0) {
            int before = *failed;
            cases[i].run();
            fprintf(stderr, "%s: %s\n", cases[i].name, *failed == before ? "ok" : "FAILED");
            ran = true;
        }
    }
    return ran;
}

/* The body of a test program's main, the case in argv[1]. Returns the program's exit status: 0
 * all passed, 1 a check failed, 2 no such case or bad arguments. */
static inline int test_cases_main(int argc, char **argv, const test_case *cases, size_t n_cases,
                                  const int *failed)
{
    if (argc != 2) {
        fprintf(stderr, "usage: %s <case>|all\n", argv[0]);
        return 2;
    }
    if (!test_cases_run(argv[1], cases, n_cases, failed)) {
        fprintf(stderr, "no such case: %s\n", argv[1]);
        return 2;
    }
    return *failed == 0 ? 0 : 1;
}

#endif /* HEAPLENS_TEST_CASES_H */
