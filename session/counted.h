/* counted.h — what `record --count` and `attach --count` say at the end of a session: the
 * number of counted sites and methods, and a warning per pattern that matched no method, with
 * the closest names (query/count_sites.h). On stderr; main thread. */
#ifndef HEAPLENS_SESSION_COUNTED_H
#define HEAPLENS_SESSION_COUNTED_H

/* Reads the finished recording at `output` and prints the lines. */
void counted_summary_print(const char *output);

#endif /* HEAPLENS_SESSION_COUNTED_H */
