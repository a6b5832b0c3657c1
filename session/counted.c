/* counted.c — see counted.h. */
#include "session/counted.h"

#include <stdio.h>
#include <string.h>

#include "query/count_sites.h"
#include "query/query.h"
#include "store/store.h"

/* --count: the line that says what was counted, and a warning per pattern that matched no
 * method, with the names closest to it (query/count_sites.h). */
void counted_summary_print(const char *output) {
    g_autoptr(GError) error = NULL;
    sqlite3 *db = store_db_open_readonly(output, &error);
    query_count_sites s;
    if (!db || !query_count_sites_read(db, output, &s, &error)) {
        fprintf(stderr, "heaplens: warning: no counted sites: %s\n",
                error ? error->message : "the recording cannot be read");
        sqlite3_close(db);
        return;
    }
    sqlite3_close(db);
    fprintf(stderr, "heaplens: counted %u sites in %" G_GUINT64_FORMAT " methods "
                    "(heaplens allocations %s --by site)\n",
            s.sites->len, s.methods, output);
    for (guint i = 0; i < s.refused->len; i++) {
        const query_count_refused *r = &g_array_index(s.refused, query_count_refused, i);
        if (g_str_has_prefix(r->reason, "matched no method") ||
            g_str_has_prefix(r->reason, "the runtime does not allow"))
            fprintf(stderr, "heaplens: warning: --count '%s': %s\n", r->method, r->reason);
    }
    query_count_sites_clear(&s);
}

json_t *counted_summary_json(const char *output) {
    g_autoptr(GError) error = NULL;
    sqlite3 *db = store_db_open_readonly(output, &error);
    query_count_sites s;
    if (!db || !query_count_sites_read(db, output, &s, &error)) {
        sqlite3_close(db);
        return json_null();
    }
    sqlite3_close(db);
    json_t *unmatched = json_array();
    for (guint i = 0; i < s.refused->len; i++) {
        const query_count_refused *r = &g_array_index(s.refused, query_count_refused, i);
        const char *closest = strstr(r->reason, "closest: ");
        if (g_str_has_prefix(r->reason, "matched no method"))
            json_array_append_new(unmatched, json_pack("{s:s, s:s}", "pattern", r->method,
                                                       "closest", closest ? closest + 9 : ""));
    }
    json_t *j = json_pack("{s:I, s:I, s:o}", "sites", (json_int_t)s.sites->len, "methods",
                          (json_int_t)s.methods, "unmatched", unmatched);
    query_count_sites_clear(&s);
    return j;
}
