/* store_counts.c — counted allocation sites (`--count`, HL_REC_COUNT_SITE): one row per site in
 * count_sites, one per matched method that was not rewritten in count_refused (SCHEMA.md). The
 * tables are made by the first such record, so a recording without `--count` has neither and
 * its schema version is unchanged. They arrive once, at the session's end: statements are
 * prepared per record. */
#include "store/store_internal.h"

#include <string.h>

static const char store_counts_tables[] =
    "CREATE TABLE IF NOT EXISTS count_sites (\n"
    "  id INTEGER PRIMARY KEY,\n"
    "  module TEXT NOT NULL,\n"
    "  method TEXT NOT NULL,\n"
    "  method_token INTEGER NOT NULL,\n"
    "  il_offset INTEGER NOT NULL,\n"
    "  kind TEXT NOT NULL,\n"
    "  type TEXT NOT NULL,\n"
    "  count INTEGER NOT NULL,\n"
    "  may_elide INTEGER NOT NULL,\n"
    "  maybe_none INTEGER NOT NULL\n"
    ");\n"
    "CREATE TABLE IF NOT EXISTS count_refused (\n"
    "  module TEXT NOT NULL,\n"
    "  method TEXT NOT NULL,\n"
    "  method_token INTEGER NOT NULL,\n"
    "  reason TEXT NOT NULL\n"
    ");\n";

static const char *store_counts_kind(uint8_t kind)
{
    switch (kind) {
    case HL_COUNT_KIND_NEWOBJ:
        return "newobj";
    case HL_COUNT_KIND_NEWARR:
        return "newarr";
    case HL_COUNT_KIND_BOX:
        return "box";
    default:
        return NULL;
    }
}

static const char *store_counts_reason(uint32_t reason)
{
    switch (reason) {
    case HL_COUNT_REFUSED_NO_BODY:
        return "no IL body (abstract, extern or runtime-implemented)";
    case HL_COUNT_REFUSED_MALFORMED:
        return "its IL did not decode";
    case HL_COUNT_REFUSED_TOO_BIG:
        return "too big to rewrite";
    case HL_COUNT_REFUSED_NO_SITE:
        return "no allocating instruction";
    case HL_COUNT_REFUSED_REJIT:
        return "the runtime refused to recompile it";
    case HL_COUNT_REFUSED_MODULE:
        return "dynamic or collectible module, or its metadata could not be extended";
    case HL_COUNT_REFUSED_NO_MATCH:
        return "matched no method";
    case HL_COUNT_REFUSED_NO_REJIT:
        return "the runtime does not allow recompiling code in this process (ReJIT): nothing "
               "counted";
    default:
        return "unknown";
    }
}

gboolean store_counts_site(store_writer *w, const store_record *rec, GError **error)
{
    const hl_count_site *h = &rec->u.count_site.h;
    const char *kind = store_counts_kind(h->kind);
    /* module \n method \n type */
    const char *text = rec->u.count_site.text.ptr;
    uint32_t len = rec->u.count_site.text.len;
    const char *nl1 = memchr(text, '\n', len);
    const char *nl2 = nl1 ? memchr(nl1 + 1, '\n', len - (uint32_t)(nl1 + 1 - text)) : NULL;
    if (nl2 == NULL || (kind == NULL && h->kind != HL_COUNT_KIND_REFUSED)) {
        g_set_error(error, STORE_ERROR, STORE_ERROR_STREAM,
                    "COUNT_SITE record: kind %u or its names are malformed", h->kind);
        return FALSE;
    }
    if (!store_sql_exec(w->db, w->path, store_counts_tables, error))
        return FALSE;
    const char *sql = kind != NULL
                          ? "INSERT INTO count_sites (module, method, method_token, il_offset, "
                            "kind, type, count, may_elide, maybe_none) "
                            "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)"
                          : "INSERT INTO count_refused (module, method, method_token, reason) "
                            "VALUES (?1, ?2, ?3, ?5)";
    sqlite3_stmt *st = NULL;
    gboolean ok = FALSE;
    if (sqlite3_prepare_v2(w->db, sql, -1, &st, NULL) != SQLITE_OK) {
        store_sql_fail(w->db, w->path, "prepare", error);
        goto out;
    }
    sqlite3_bind_text(st, 1, text, (int)(nl1 - text), SQLITE_STATIC);
    sqlite3_bind_text(st, 2, nl1 + 1, (int)(nl2 - nl1 - 1), SQLITE_STATIC);
    sqlite3_bind_int64(st, 3, h->method_token);
    if (kind != NULL) {
        sqlite3_bind_int64(st, 4, h->il_offset);
        sqlite3_bind_text(st, 5, kind, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 6, nl2 + 1, (int)(len - (uint32_t)(nl2 + 1 - text)), SQLITE_STATIC);
        sqlite3_bind_int64(st, 7, (sqlite3_int64)h->count);
        sqlite3_bind_int(st, 8, (h->flags & HL_COUNT_FLAG_MAY_ELIDE) != 0);
        sqlite3_bind_int(st, 9, (h->flags & HL_COUNT_FLAG_MAYBE) != 0);
    } else if (h->il_offset == HL_COUNT_REFUSED_NO_MATCH) {
        /* the closest names, in the type part */
        char *reason = g_strdup_printf("%s; closest: %.*s", store_counts_reason(h->il_offset),
                                       (int)(len - (uint32_t)(nl2 + 1 - text)), nl2 + 1);
        sqlite3_bind_text(st, 5, reason, -1, g_free);
    } else {
        sqlite3_bind_text(st, 5, store_counts_reason(h->il_offset), -1, SQLITE_STATIC);
    }
    if (sqlite3_step(st) != SQLITE_DONE) {
        store_sql_fail(w->db, w->path, "write", error);
        goto out;
    }
    ok = TRUE;
out:
    sqlite3_finalize(st);
    return ok;
}
