/* counted.h — what `record --count` and `attach --count` say at the end of a session: the
 * number of counted sites and methods, and a warning per pattern that matched no method, with
 * the closest names (query/count_sites.h). On stderr; main thread. */
#ifndef HEAPLENS_SESSION_COUNTED_H
#define HEAPLENS_SESSION_COUNTED_H

#include <jansson.h>

/* Reads the finished recording at `output` and prints the lines. */
void counted_summary_print(const char *output);
/* The same for --json: {"sites":N,"methods":M,"unmatched":[{"pattern","closest"}...]}, or
 * JSON null when the recording has no counted sites (new reference). */
json_t *counted_summary_json(const char *output);

#endif /* HEAPLENS_SESSION_COUNTED_H */
