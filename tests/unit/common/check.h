/* check.h — the checks of the C unit tests. A failed check prints file:line and what differed,
 * counts in `failures` and lets the test go on; the test's exit status comes from `failures`.
 * A test program of one source file includes this as it is (it defines `failures`). A program
 * linked with a helper file that checks too (tests/unit/store/store_test.c) defines
 * HEAPLENS_TEST_FAILURES_EXTERN first in every source file, and `int failures` in the helper. */
#ifndef HEAPLENS_TEST_CHECK_H
#define HEAPLENS_TEST_CHECK_H

#include <stdio.h>
#include <string.h>

#ifdef HEAPLENS_TEST_FAILURES_EXTERN
extern int failures;
#else
static int failures;
#endif

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);               \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

#define CHECK_INT(got, want)                                                                       \
    do {                                                                                           \
        long long got_ = (long long)(got), want_ = (long long)(want);                              \
        if (got_ != want_) {                                                                       \
            fprintf(stderr, "%s:%d: %s = %lld, expected %lld\n", __FILE__, __LINE__, #got, got_,   \
                    want_);                                                                        \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

#define CHECK_STR(got, want)                                                                       \
    do {                                                                                           \
        const char *got_ = (got), *want_ = (want);                                                 \
        if (!got_ || strcmp(got_, want_) != 0) {                                                   \
            fprintf(stderr, "%s:%d: %s = '%s', expected '%s'\n", __FILE__, __LINE__, #got,         \
                    got_ ? got_ : "(null)", want_);                                                \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

#endif /* HEAPLENS_TEST_CHECK_H */
