/* count_sites.h — counted allocation sites (`heaplens record --count`): the exact number of times
 * each allocating IL instruction of the matched methods ran while counting was on, and the
 * matched methods that were not rewritten (the analysis behind `heaplens allocations --by site`).
 *
 * Errors: GError ** last, one line (QUERY_ERROR_NOT_FOUND for a recording made without
 * `--count`; QUERY_ERROR_DAMAGED for a row no recording writes). Single-threaded.
 */
#ifndef HEAPLENS_QUERY_COUNT_SITES_H
#define HEAPLENS_QUERY_COUNT_SITES_H

#include <glib.h>
#include <sqlite3.h>
#include <stdint.h>

typedef struct query_count_site {
    char *module, *method, *kind, *type; /* owned */
    int64_t il_offset;
    int64_t count;
    gboolean may_elide;  /* a box the JIT may fold: the count may exceed the objects */
    gboolean maybe_none; /* may allocate nothing (box of a generic parameter, type not placed) */
} query_count_site;

typedef struct query_count_refused {
    char *module, *method, *reason; /* owned */
} query_count_refused;

typedef struct query_count_sites {
    GArray *sites;   /* query_count_site, most counted first (then method, IL offset) */
    GArray *refused; /* query_count_refused, by method */
    uint64_t methods; /* distinct methods with a counted site */
} query_count_sites;

/* What no counted site sees (the commands and README say it). */
#define QUERY_COUNT_SITES_NOT_COUNTED                                                              \
    "allocations in methods not matched, in the runtime's native code (strings, reflection, "      \
    "MemberwiseClone) and in dynamic methods; calls already running when counting started; "     \
    "which generic instantiation allocated at a shared site"

/* Reads the recording's counted sites into *out (query_count_sites_clear). FALSE with
 * QUERY_ERROR_NOT_FOUND when the recording has none (made without --count). */
gboolean query_count_sites_read(sqlite3 *db, const char *path, query_count_sites *out,
                                GError **error);
void query_count_sites_clear(query_count_sites *s);

#endif /* HEAPLENS_QUERY_COUNT_SITES_H */
