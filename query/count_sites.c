/* count_sites.c — counted allocation sites (count_sites.h). */
#include "query/count_sites.h"

#include "query/query.h"

static void count_site_clear(void *row)
{
    query_count_site *s = row;
    g_free(s->module), g_free(s->method), g_free(s->kind), g_free(s->type);
}

static void count_refused_clear(void *row)
{
    query_count_refused *r = row;
    g_free(r->module), g_free(r->method), g_free(r->reason);
}

void query_count_sites_clear(query_count_sites *s)
{
    if (s->sites)
        g_array_unref(s->sites);
    if (s->refused)
        g_array_unref(s->refused);
    *s = (query_count_sites){0};
}

static char *column_text(sqlite3_stmt *st, int i)
{
    const unsigned char *t = sqlite3_column_text(st, i);
    return g_strdup(t ? (const char *)t : "");
}

gboolean query_count_sites_read(sqlite3 *db, const char *path, query_count_sites *out,
                                GError **error)
{
    gboolean ok = FALSE, row = FALSE, stepped = FALSE;
    sqlite3_stmt *st = NULL;
    /* "module!method" of the methods with a site, to count them */
    g_autoptr(GHashTable) methods = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    *out = (query_count_sites){0};
    out->sites = g_array_new(FALSE, TRUE, sizeof(query_count_site));
    g_array_set_clear_func(out->sites, count_site_clear);
    out->refused = g_array_new(FALSE, TRUE, sizeof(query_count_refused));
    g_array_set_clear_func(out->refused, count_refused_clear);
    /* The tables exist only in recordings made with --count (store/store_counts.c). */
    st = query_db_prepare(db, "SELECT 1 FROM sqlite_schema WHERE type = 'table' AND "
                              "name = 'count_sites'", error);
    if (!st || !query_db_step(st, &row, error))
        goto out;
    sqlite3_finalize(st);
    st = NULL;
    if (!row) {
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_NOT_FOUND,
                    "%s has no counted sites: record it with --count PATTERN", path);
        goto out;
    }
    st = query_db_prepare(db,
                          "SELECT module, method, il_offset, kind, type, count, may_elide, "
                          "maybe_none FROM count_sites "
                          "ORDER BY count DESC, method, il_offset", error);
    if (!st)
        goto out;
    while ((stepped = query_db_step(st, &row, error)) && row) {
        query_count_site s = {
            .module = column_text(st, 0), .method = column_text(st, 1),
            .il_offset = sqlite3_column_int64(st, 2), .kind = column_text(st, 3),
            .type = column_text(st, 4), .count = sqlite3_column_int64(st, 5),
            .may_elide = sqlite3_column_int(st, 6) != 0,
            .maybe_none = sqlite3_column_int(st, 7) != 0};
        g_array_append_val(out->sites, s);
        if (s.count < 0 || s.il_offset < 0 || sqlite3_column_type(st, 5) != SQLITE_INTEGER) {
            query_db_damaged(error, "count_sites holds a count or IL offset that is no count");
            goto out;
        }
        g_hash_table_add(methods, g_strconcat(s.module, "!", s.method, NULL));
    }
    if (!stepped)
        goto out;
    out->methods = g_hash_table_size(methods);
    sqlite3_finalize(st);
    st = query_db_prepare(db, "SELECT module, method, reason FROM count_refused "
                              "ORDER BY method, module", error);
    if (!st)
        goto out;
    while ((stepped = query_db_step(st, &row, error)) && row) {
        query_count_refused r = {column_text(st, 0), column_text(st, 1), column_text(st, 2)};
        g_array_append_val(out->refused, r);
    }
    ok = stepped;
out:
    sqlite3_finalize(st);
    if (!ok)
        query_count_sites_clear(out);
    return ok;
}
