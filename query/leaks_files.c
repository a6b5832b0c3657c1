/* leaks_files.c — leak suspects across files, by type (leaks_files.h). */
#include "query/leaks_files.h"

#include "query/query.h"
#include "query/snapshot_graph.h"

#include <string.h>

typedef struct file_side {
    char *path;
    char *mode; /* run.mode: "import" for a .gcdump */
    snapshot_info info;
} file_side;

typedef struct type_row {
    char *type;
    gboolean flagged;
    int64_t growth_count, growth_bytes;
    int64_t *counts, *bytes; /* k each */
} type_row;

struct leaks_files {
    size_t k;
    file_side *files;
    GPtrArray *rows;   /* type_row *, every type seen; the shown ones first after sorting */
    guint n_shown, n_flagged;
    char *note;
};

static void type_row_free(gpointer p)
{
    type_row *r = p;
    g_free(r->type);
    g_free(r->counts);
    g_free(r->bytes);
    g_free(r);
}

void leaks_files_free(leaks_files *l)
{
    if (!l)
        return;
    for (size_t i = 0; l->files && i < l->k; i++) {
        g_free(l->files[i].path);
        g_free(l->files[i].mode);
    }
    g_free(l->files);
    if (l->rows)
        g_ptr_array_unref(l->rows);
    g_free(l->note);
    g_free(l);
}

/* Objects and bytes per type name in the last snapshot of file `f` (index i of k), added to
 * `by_name` (name -> type_row). */
static gboolean file_read(leaks_files *l, size_t i, GHashTable *by_name, GError **error)
{
    file_side *f = &l->files[i];
    gboolean ok = FALSE, row = FALSE;
    sqlite3_stmt *stmt = NULL;
    sqlite3 *db = query_db_open(f->path, error);
    if (!db)
        return FALSE;
    if (!snapshot_pick(db, f->path, "leaks", "snapshot", NULL, &f->info, error))
        goto out;
    stmt = query_db_prepare(db, "SELECT mode FROM run LIMIT 1", error);
    if (!stmt || !query_db_step(stmt, &row, error))
        goto out;
    f->mode = g_strdup(row ? (const char *)sqlite3_column_text(stmt, 0) : NULL);
    sqlite3_finalize(stmt);
    stmt = query_db_prepare(db,
                            "SELECT t.name, count(*), sum(o.size) FROM snapshot_objects so"
                            " JOIN objects o ON o.id = so.object_id"
                            " JOIN types t ON t.id = o.type_id"
                            " WHERE so.snapshot = ?1 GROUP BY t.name",
                            error);
    if (!stmt)
        goto out;
    sqlite3_bind_int64(stmt, 1, f->info.snapshot);
    while (query_db_step(stmt, &row, error) && row) {
        const char *name = (const char *)sqlite3_column_text(stmt, 0);
        if (!name)
            continue;
        type_row *r = g_hash_table_lookup(by_name, name);
        if (!r) {
            r = g_new0(type_row, 1);
            r->type = g_strdup(name);
            r->counts = g_new0(int64_t, l->k);
            r->bytes = g_new0(int64_t, l->k);
            g_hash_table_insert(by_name, r->type, r);
            g_ptr_array_add(l->rows, r);
        }
        r->counts[i] = sqlite3_column_int64(stmt, 1);
        r->bytes[i] = sqlite3_column_int64(stmt, 2);
    }
    ok = !(error && *error);
out:
    sqlite3_finalize(stmt);
    sqlite3_close(db);
    return ok;
}

/* The rule across files. Files are few and taken apart (another run of the heap walk, often
 * another moment of a program that warms up), and each is counted by type name alone, so a type
 * is a suspect only when it grew steadily and by much for its own size:
 *   - its count and bytes rose in every interval (file to next file; no fall, no flat step),
 *   - every interval added at least 1/LEAKS_FILES_STEP_SHARE of the type's objects in the first
 *     file (a pool of 10,000 objects that gains 10 a file is noise; 5,000 records that become
 *     10,000 and 15,000 are not),
 *   - and the whole growth is meaningful as within a file: at least LEAKS_FILES_MIN_OBJECTS
 *     objects per interval on average, or 1/LEAKS_FILES_MIN_HEAP_SHARE of the last file's bytes
 *     (a few large arrays). */
#define LEAKS_FILES_STEP_SHARE 10
#define LEAKS_FILES_MIN_OBJECTS 3
#define LEAKS_FILES_MIN_HEAP_SHARE 100

static gboolean files_trend_flagged(const int64_t *cv, const int64_t *bv, size_t k,
                                    int64_t heap_last)
{
    int64_t step = cv[0] / LEAKS_FILES_STEP_SHARE;
    for (size_t i = 1; i < k; i++)
        if (cv[i] <= cv[i - 1] || bv[i] <= bv[i - 1] || cv[i] - cv[i - 1] < step)
            return FALSE;
    int64_t growth_count = cv[k - 1] - cv[0], growth_bytes = bv[k - 1] - bv[0];
    return k >= 2 && (growth_count >= (int64_t)(LEAKS_FILES_MIN_OBJECTS * (k - 1)) ||
                      growth_bytes >= heap_last / LEAKS_FILES_MIN_HEAP_SHARE);
}

static gint row_cmp(gconstpointer a, gconstpointer b)
{
    const type_row *x = *(type_row *const *)a, *y = *(type_row *const *)b;
    if (x->flagged != y->flagged)
        return x->flagged ? -1 : 1;
    if (x->growth_bytes != y->growth_bytes)
        return x->growth_bytes > y->growth_bytes ? -1 : 1;
    if (x->growth_count != y->growth_count)
        return x->growth_count > y->growth_count ? -1 : 1;
    return strcmp(x->type, y->type);
}

leaks_files *leaks_files_find(const char *const *paths, size_t n, uint64_t top, gboolean all,
                              GError **error)
{
    /* A file given twice (by another name or a link too) compared with itself grows nothing:
     * "no leak suspects" would hide the leak the other files show. */
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++)
            if (query_files_same(paths[i], paths[j])) {
                g_autofree char *which =
                    strcmp(paths[i], paths[j]) == 0
                        ? g_strdup_printf("%s is given twice", paths[i])
                        : g_strdup_printf("%s and %s are one file", paths[i], paths[j]);
                g_set_error(error, QUERY_ERROR, QUERY_ERROR_USAGE,
                            "leaks: %s (a file compared with itself grows nothing): give each "
                            "file once; across the snapshots of one recording: heaplens leaks %s",
                            which, paths[i]);
                return NULL;
            }
    leaks_files *l = g_new0(leaks_files, 1);
    l->k = n;
    l->files = g_new0(file_side, n);
    l->rows = g_ptr_array_new_with_free_func(type_row_free);
    g_autoptr(GHashTable) by_name = g_hash_table_new(g_str_hash, g_str_equal);
    gboolean imported = FALSE;
    for (size_t i = 0; i < n; i++) {
        l->files[i].path = g_strdup(paths[i]);
        if (!file_read(l, i, by_name, error)) {
            leaks_files_free(l);
            return NULL;
        }
        imported |= g_strcmp0(l->files[i].mode, "import") == 0;
    }
    int64_t heap_last = 0;
    for (guint t = 0; t < l->rows->len; t++)
        heap_last = query_add_saturating(heap_last,
                                         ((type_row *)l->rows->pdata[t])->bytes[n - 1]);
    for (guint t = 0; t < l->rows->len; t++) {
        type_row *r = l->rows->pdata[t];
        r->growth_count = r->counts[n - 1] - r->counts[0];
        r->growth_bytes = r->bytes[n - 1] - r->bytes[0];
        r->flagged = files_trend_flagged(r->counts, r->bytes, n, heap_last);
        l->n_flagged += r->flagged;
        if (r->flagged || (all && r->growth_count > 0))
            l->n_shown++;
    }
    g_ptr_array_sort(l->rows, row_cmp);
    if (l->n_shown > top)
        l->n_shown = (guint)top;
    l->note = g_strdup_printf(
        "across files, objects are counted per type name and not followed from one file to the "
        "next%s: a type is a suspect when its count and bytes grow from every file to the "
        "next, each time by at least a tenth of its count in the first file",
        imported ? " (a .gcdump has no object identity)" : "");
    return l;
}

guint leaks_files_count(const leaks_files *l) { return l->n_shown; }
guint leaks_files_flagged(const leaks_files *l) { return l->n_flagged; }
const char *leaks_files_note(const leaks_files *l) { return l->note; }
size_t leaks_files_n(const leaks_files *l) { return l->k; }

void leaks_files_file_get(const leaks_files *l, size_t i, const char **path, int64_t *snapshot,
                          int64_t *gc)
{
    *path = l->files[i].path;
    *snapshot = l->files[i].info.snapshot;
    *gc = l->files[i].info.gc;
}

void leaks_files_row_get(const leaks_files *l, guint i, leaks_files_row *out)
{
    const type_row *r = l->rows->pdata[i];
    *out = (leaks_files_row){.type = r->type, .flagged = r->flagged,
                             .growth_count = r->growth_count, .growth_bytes = r->growth_bytes,
                             .counts = r->counts, .bytes = r->bytes};
}

json_t *leaks_files_json_head(const leaks_files *l)
{
    json_t *files = json_array();
    for (size_t i = 0; i < l->k; i++)
        json_array_append_new(files, json_pack("{s:s, s:I, s:I, s:o}", "file", l->files[i].path,
                                               "snapshot", (json_int_t)l->files[i].info.snapshot,
                                               "gc", (json_int_t)l->files[i].info.gc, "mode",
                                               query_json_string(l->files[i].mode)));
    return json_pack("{s:b, s:s, s:o, s:I}", "by_type", 1, "note", l->note, "files", files,
                     "flagged", (json_int_t)l->n_flagged);
}

json_t *leaks_files_json_row(const leaks_files *l, guint i)
{
    const type_row *r = l->rows->pdata[i];
    json_t *counts = json_array(), *bytes = json_array();
    for (size_t f = 0; f < l->k; f++) {
        json_array_append_new(counts, json_integer(r->counts[f]));
        json_array_append_new(bytes, json_integer(r->bytes[f]));
    }
    return json_pack("{s:s, s:b, s:I, s:I, s:o, s:o}", "type", r->type, "flagged", r->flagged,
                     "growth_count", (json_int_t)r->growth_count, "growth_bytes",
                     (json_int_t)r->growth_bytes, "counts", counts, "bytes", bytes);
}
