/* leaks_files.h — leak suspects across several recordings, by type (`heaplens leaks A.db --with
 * B.db C.db`): the last snapshot of each file, in the order given, counted per type name, and
 * a stricter rule than leaks.h's within a file: a type is a suspect when its count and bytes
 * rose in every interval, each time by at least a tenth of its count in the first file, and by
 * at least 3 objects per interval or 1% of the last file's bytes in all (leaks_files.c).
 *
 * Made for heap dumps imported one per moment (`heaplens import`: a .gcdump has no object
 * identity, so nothing can be followed from one file to the next; dotnet-gcdump takes each dump
 * in its own run of the heap walk), and it works the same for recordings. No retained sizes,
 * holders or paths: those are per snapshot (`heaplens retention`, `roots` on the last file).
 *
 * Errors: GError ** last, one line naming the file. Memory: one entry per type name, with a
 * count and a size per file. Call from one thread.
 */
#ifndef HEAPLENS_QUERY_LEAKS_FILES_H
#define HEAPLENS_QUERY_LEAKS_FILES_H

#include <glib.h>
#include <jansson.h>
#include <stdint.h>

/* One type across the files. */
typedef struct leaks_files_row {
    const char *type;  /* borrowed from the result */
    gboolean flagged;
    int64_t growth_count, growth_bytes; /* last file's less the first's */
    const int64_t *counts, *bytes;      /* one per file, in order; borrowed */
} leaks_files_row;

typedef struct leaks_files leaks_files;

/* Compares the last snapshot of each of the `n` >= 2 files `paths`. Rows: the flagged types,
 * most bytes grown first, and with `all` every type that grew; at most `top` of them. A file
 * given twice (by any name: query_files_same) is a usage error. */
leaks_files *leaks_files_find(const char *const *paths, size_t n, uint64_t top, gboolean all,
                              GError **error);
void leaks_files_free(leaks_files *l); /* accepts NULL */
G_DEFINE_AUTOPTR_CLEANUP_FUNC(leaks_files, leaks_files_free)

guint leaks_files_count(const leaks_files *l);      /* rows */
guint leaks_files_flagged(const leaks_files *l);    /* ... of them flagged */
void leaks_files_row_get(const leaks_files *l, guint i, leaks_files_row *out);
/* The note every output carries: matched by type name only, and why. */
const char *leaks_files_note(const leaks_files *l);
/* `leaks --json` across files: the head {"by_type":true,"note","files":[{"file","snapshot",
 * "gc","mode"}]} and row i (< leaks_files_count) {"type","flagged","growth_count",
 * "growth_bytes","counts":[one per file],"bytes":[...]} (new references). */
json_t *leaks_files_json_head(const leaks_files *l);
json_t *leaks_files_json_row(const leaks_files *l, guint i);
/* The files compared (n) and file i's path, snapshot and GC. */
size_t leaks_files_n(const leaks_files *l);
void leaks_files_file_get(const leaks_files *l, size_t i, const char **path, int64_t *snapshot,
                          int64_t *gc);

#endif /* HEAPLENS_QUERY_LEAKS_FILES_H */
