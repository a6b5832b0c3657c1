/* il_verify.h — checks a rewritten method body against its original (test helper).
 *
 * Independent of the rewriter's layout: it walks both codes side by side. The rewritten body
 * must decode; every original instruction must be there, in order, with the same opcode (a short
 * branch may have become its long form) and operand; before each listed site and nowhere else,
 * the probe with that site's counter address and the increment token; every branch and switch
 * target must point where the original's did (an instruction that has a probe is reached at its
 * probe); every exception clause must cover the same instructions; maxstack is one more, the
 * local signature and InitLocals the same. */
#ifndef HEAPLENS_TEST_IL_VERIFY_H
#define HEAPLENS_TEST_IL_VERIFY_H

#include "collector/il_rewrite.h"

/* NULL when `r` is a faithful rewrite of `body` (size bytes) with probes calling `token`; else
 * a static message saying what is wrong (at `*where`, an original offset, when it applies). */
const char *il_verify(const uint8_t *body, size_t size, const hl_il_rewrite_result *r,
                      uint32_t token, uint32_t *where);

#endif /* HEAPLENS_TEST_IL_VERIFY_H */
