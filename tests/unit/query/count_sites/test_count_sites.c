/* test_count_sites.c — counted sites from the stream to the query: COUNT_SITE records (sites of
 * each kind and flag, a refused method, a pattern that matched nothing with its closest names)
 * written by the real writer into count_sites and count_refused, read back most counted first
 * with the methods counted once; a recording without --count has neither table and the query
 * says NOT_FOUND; a record of an unknown kind or without its three names stops the stream; a
 * negative count in the table is damage. */
#include <glib/gstdio.h>
#include <string.h>

#include "query/count_sites.h"
#include "query/query.h"
#include "store/store.h"
#include "tests/unit/common/check.h"
#include "tests/unit/common/hl_stream_builder.h"
#include "wire/hl_wire.h"

/* One COUNT_SITE record: the head, then the names as one hl_str. */
static void count_site(hl_sb *sb, uint8_t kind, uint8_t flags, uint32_t il_offset, uint64_t count,
                       const char *names)
{
    hl_count_site h = {.count = count, .il_offset = il_offset, .method_token = 0x06000007,
                       .kind = kind, .flags = flags};
    uint32_t len = (uint32_t)strlen(names);
    uint8_t buf[sizeof h + 4 + 256];
    memcpy(buf, &h, sizeof h);
    memcpy(buf + sizeof h, &len, 4);
    memcpy(buf + sizeof h + 4, names, len);
    hl_sb_record(sb, HL_REC_COUNT_SITE, buf, (uint32_t)(sizeof h + 4 + len));
}

static hl_sb *stream(gboolean with_sites)
{
    hl_sb *sb = hl_sb_new();
    hl_sb_run_start(sb, 4242, "dotnet app.dll");
    if (with_sites) {
        count_site(sb, HL_COUNT_KIND_NEWOBJ, 0, 5, 1000, "App.dll\nShop.Orders.Place\nShop.Order");
        count_site(sb, HL_COUNT_KIND_NEWARR, 0, 9, 3000, "App.dll\nShop.Orders.Place\nSystem.Int32[]");
        count_site(sb, HL_COUNT_KIND_BOX, HL_COUNT_FLAG_MAYBE, 16, 2000,
                   "App.dll\nShop.Orders.Wrap\n!!0");
        count_site(sb, HL_COUNT_KIND_BOX, HL_COUNT_FLAG_MAY_ELIDE, 20, 0,
                   "App.dll\nShop.Orders.Check\nSystem.Int64");
        count_site(sb, HL_COUNT_KIND_REFUSED, 0, HL_COUNT_REFUSED_NO_SITE, 0,
                   "App.dll\nShop.Order..ctor\n");
        count_site(sb, HL_COUNT_KIND_REFUSED, 0, HL_COUNT_REFUSED_NO_MATCH, 0,
                   "\nShop.Ordr*\nShop.Orders.Place, Shop.Orders.Wrap");
    }
    hl_sb_run_end(sb, 0);
    return sb;
}

static void test_round_trip(const char *dir)
{
    g_autofree char *path = g_build_filename(dir, "counted.db", NULL);
    g_autoptr(GError) error = NULL;
    hl_sb *sb = stream(TRUE);
    CHECK(hl_sb_write_db(sb, path, NULL, NULL, &error));
    CHECK(error == NULL);
    hl_sb_free(sb);
    sqlite3 *db = query_db_open(path, &error);
    CHECK(db != NULL);
    query_count_sites s;
    CHECK(db && query_count_sites_read(db, path, &s, &error));
    if (db && !error) {
        CHECK_INT(s.sites->len, 4);
        CHECK_INT(s.methods, 3);
        const query_count_site *first = &g_array_index(s.sites, query_count_site, 0);
        CHECK_INT(first->count, 3000);
        CHECK_STR(first->kind, "newarr");
        CHECK_STR(first->type, "System.Int32[]");
        CHECK_STR(first->module, "App.dll");
        CHECK_INT(first->il_offset, 9);
        const query_count_site *maybe = &g_array_index(s.sites, query_count_site, 1);
        CHECK(maybe->maybe_none && !maybe->may_elide);
        const query_count_site *last = &g_array_index(s.sites, query_count_site, 3);
        CHECK(last->may_elide && last->count == 0);
        CHECK_INT(s.refused->len, 2);
        const query_count_refused *r0 = &g_array_index(s.refused, query_count_refused, 0);
        const query_count_refused *r1 = &g_array_index(s.refused, query_count_refused, 1);
        CHECK_STR(r0->method, "Shop.Order..ctor");
        CHECK_STR(r0->reason, "no allocating instruction");
        CHECK_STR(r1->method, "Shop.Ordr*");
        CHECK_STR(r1->reason, "matched no method; closest: Shop.Orders.Place, Shop.Orders.Wrap");
        query_count_sites_clear(&s);
    }
    sqlite3_close(db);

    /* A count no recording writes is damage, in one line. */
    sqlite3 *rw = NULL;
    CHECK(sqlite3_open(path, &rw) == SQLITE_OK);
    CHECK(sqlite3_exec(rw, "UPDATE count_sites SET count = -1 WHERE il_offset = 5", NULL, NULL,
                       NULL) == SQLITE_OK);
    sqlite3_close(rw);
    db = query_db_open(path, &error);
    CHECK(db && !query_count_sites_read(db, path, &s, &error));
    CHECK(g_error_matches(error, QUERY_ERROR, QUERY_ERROR_DAMAGED));
    g_clear_error(&error);
    sqlite3_close(db);
}

static void test_without_count(const char *dir)
{
    g_autofree char *path = g_build_filename(dir, "plain.db", NULL);
    g_autoptr(GError) error = NULL;
    hl_sb *sb = stream(FALSE);
    CHECK(hl_sb_write_db(sb, path, NULL, NULL, &error));
    hl_sb_free(sb);
    sqlite3 *db = query_db_open(path, &error);
    query_count_sites s;
    CHECK(db && !query_count_sites_read(db, path, &s, &error));
    CHECK(g_error_matches(error, QUERY_ERROR, QUERY_ERROR_NOT_FOUND));
    CHECK(error && strstr(error->message, "--count") != NULL);
    sqlite3_close(db);
}

/* A COUNT_SITE of an unknown kind, or without its three names, stops the stream there. */
static void test_malformed(const char *dir)
{
    const char *bad[] = {"App.dll\nShop.Orders.Place", "App.dll"};
    for (size_t i = 0; i < 3; i++) {
        g_autofree char *path = g_strdup_printf("%s/bad%zu.db", dir, i);
        g_autoptr(GError) error = NULL;
        hl_sb *sb = hl_sb_new();
        hl_sb_run_start(sb, 4242, "dotnet app.dll");
        if (i < 2)
            count_site(sb, HL_COUNT_KIND_NEWOBJ, 0, 5, 1, bad[i]);
        else
            count_site(sb, 9, 0, 5, 1, "App.dll\nShop.Orders.Place\nShop.Order");
        hl_sb_run_end(sb, 0);
        CHECK(!hl_sb_write_db(sb, path, NULL, NULL, &error));
        CHECK(error && strstr(error->message, "COUNT_SITE") != NULL);
        hl_sb_free(sb);
    }
}

int main(void)
{
    g_autofree char *dir = g_dir_make_tmp("heaplens-count-sites-XXXXXX", NULL);
    test_round_trip(dir);
    test_without_count(dir);
    test_malformed(dir);
    /* the files: the databases and what SQLite left beside them */
    GDir *d = g_dir_open(dir, 0, NULL);
    for (const char *name; d && (name = g_dir_read_name(d));) {
        g_autofree char *p = g_build_filename(dir, name, NULL);
        g_unlink(p);
    }
    if (d)
        g_dir_close(d);
    g_rmdir(dir);
    if (failures)
        fprintf(stderr, "%d failures\n", failures);
    return failures != 0;
}
