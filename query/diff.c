/* diff.c — what changed between two heap snapshots (diff.h). */
#include "query/diff.h"

#include "query/estimates.h"
#include "query/query.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

typedef char type_name_buf[QUERY_FORMAT_MAX];

/* One side of the diff: a snapshot of a file, read in id order. */
typedef struct diff_side {
    const char *path;
    sqlite3 *db;
    snapshot_info info;
    snapshot_types *types;
    uint32_t *row_of_type; /* type id -> index into the rows */
    sqlite3_stmt *stmt;
    gboolean row;
    int64_t id;
    uint32_t type_id;
    int64_t size;
    int64_t read; /* objects read so far */
    int64_t gen0_named; /* objects read that a snapshot named and found in gen0 */
} diff_side;

/* Ids from 2^48 up were given by a snapshot's heap walk (SCHEMA.md, "Sampled and attach
 * recordings"). */
#define DIFF_NAMED_ID_MIN (INT64_C(1) << 48)

static gboolean side_next(diff_side *s, GError **error)
{
    if (!query_db_step(s->stmt, &s->row, error))
        return FALSE;
    /* What no recording holds is said, never counted: ids ascend (the key), sizes are sizes
     * (NULL: no objects row), and the snapshot holds as many objects as its row counts. */
    if (s->row) {
        int64_t id = sqlite3_column_int64(s->stmt, 0);
        int t1 = sqlite3_column_type(s->stmt, 1), t2 = sqlite3_column_type(s->stmt, 2);
        if (sqlite3_column_type(s->stmt, 0) != SQLITE_INTEGER || (s->read > 0 && id <= s->id) ||
            (t1 != SQLITE_INTEGER && t1 != SQLITE_NULL) ||
            (t2 != SQLITE_INTEGER && t2 != SQLITE_NULL) || sqlite3_column_int64(s->stmt, 2) < 0)
            return query_db_damaged(error, "%s: snapshot %" PRId64 " holds an object whose id, "
                                           "size or type is not one a recording holds",
                                    s->path, s->info.snapshot);
        s->read++;
    } else if (s->read != s->info.objects) {
        return query_db_damaged(error,
                                "%s: snapshot %" PRId64 " holds %" PRId64
                                " objects, its snapshots row counts %" PRId64,
                                s->path, s->info.snapshot, s->read, s->info.objects);
    }
    if (s->row) {
        s->id = sqlite3_column_int64(s->stmt, 0);
        int64_t type = sqlite3_column_int64(s->stmt, 1); /* NULL (no objects row): 0 */
        s->type_id = type > 0 && type < snapshot_types_count(s->types) ? (uint32_t)type : 0;
        s->size = sqlite3_column_int64(s->stmt, 2);
        if (s->id >= DIFF_NAMED_ID_MIN && sqlite3_column_type(s->stmt, 3) == SQLITE_INTEGER &&
            sqlite3_column_int64(s->stmt, 3) == 0)
            s->gen0_named++;
    }
    return TRUE;
}

static gboolean side_open(diff_side *s, GError **error)
{
    s->stmt = query_db_prepare(s->db,
                               "SELECT so.object_id, o.type_id, o.size, so.generation"
                               "  FROM snapshot_objects so"
                               " LEFT JOIN objects o ON o.id = so.object_id"
                               " WHERE so.snapshot = ?1 ORDER BY so.object_id",
                               error);
    if (!s->stmt)
        return FALSE;
    sqlite3_bind_int64(s->stmt, 1, s->info.snapshot);
    return side_next(s, error);
}

/* Gives every type of the side a row, shared by name with the other side. */
static void side_rows(diff_side *s, GArray *rows, GHashTable *by_name, type_name_buf *names)
{
    uint32_t n = snapshot_types_count(s->types);
    s->row_of_type = g_new(uint32_t, n);
    for (uint32_t t = 0; t < n; t++) {
        char buf[QUERY_FORMAT_MAX];
        const char *name = snapshot_types_name(s->types, t, buf);
        if (name == buf) { /* an unnamed id: keep the text */
            g_strlcpy(names[t], buf, QUERY_FORMAT_MAX);
            name = names[t];
        }
        gpointer index;
        if (!g_hash_table_lookup_extended(by_name, name, NULL, &index)) {
            query_diff_row row = {.type = name};
            index = GUINT_TO_POINTER(rows->len);
            g_array_append_val(rows, row);
            g_hash_table_insert(by_name, (gpointer)name, index);
        }
        s->row_of_type[t] = GPOINTER_TO_UINT(index);
    }
}

static int diff_row_cmp(const void *a, const void *b)
{
    const query_diff_row *x = a, *y = b;
    int64_t nx = x->new_bytes - x->dead_bytes, ny = y->new_bytes - y->dead_bytes;
    if (nx != ny)
        return nx > ny ? -1 : 1;
    if (x->new_count - x->dead != y->new_count - y->dead)
        return x->new_count - x->dead > y->new_count - y->dead ? -1 : 1;
    return strcmp(x->type, y->type);
}

void query_diff_free(query_diff *d)
{
    if (!d)
        return;
    g_clear_pointer(&d->rows, g_array_unref);
    g_clear_pointer(&d->from_types, snapshot_types_free);
    g_clear_pointer(&d->to_types, snapshot_types_free);
    g_free(d->renumbered_mode);
    g_free(d->followed_mode);
    g_free(d->from_names);
    g_free(d->to_names);
    g_free(d);
}

/* Both snapshots picked: --from then --to (a command naming two missing ones hears of the
 * first), or --to then the snapshot before it. */
static gboolean diff_pick(diff_side *from, diff_side *to, const char *from_text,
                          const char *to_text, gboolean two_files, GError **error)
{
    if (from_text || two_files) {
        if (!snapshot_pick(from->db, from->path, "diff", "from", from_text, &from->info,
                           error) ||
            !snapshot_pick(to->db, to->path, "diff", "to", to_text, &to->info, error))
            return FALSE;
        /* Backwards, the objects that died were called new and the new ones dead ("snapshot 5
         * (GC 53) -> snapshot 2 (GC 15): 88,301 new"). */
        if (!two_files && from->info.snapshot > to->info.snapshot) {
            g_set_error(error, QUERY_ERROR, QUERY_ERROR_USAGE,
                        "diff: --from is snapshot %" PRId64 " (GC %" PRId64
                        "), after --to's, snapshot %" PRId64 " (GC %" PRId64
                        "): --from names the earlier one (--from %" PRId64 " --to %" PRId64 ")",
                        from->info.snapshot, from->info.gc, to->info.snapshot, to->info.gc,
                        to->info.snapshot, from->info.snapshot);
            return FALSE;
        }
        /* One snapshot compared with itself: "0 new, 0 dead", whatever the program did. */
        if (!two_files && from->info.snapshot == to->info.snapshot) {
            g_set_error(error, QUERY_ERROR, QUERY_ERROR_USAGE,
                        "diff: --from and --to both name snapshot %" PRId64 " (GC %" PRId64
                        "): compared with itself it changes nothing; name two snapshots "
                        "('heaplens snapshots %s' lists them)",
                        from->info.snapshot, from->info.gc, from->path);
            return FALSE;
        }
        return TRUE;
    }
    if (!snapshot_pick(to->db, to->path, "diff", "to", to_text, &to->info, error))
        return FALSE;
    /* the snapshot before --to */
    int64_t previous = 0;
    g_autofree char *sql = g_strdup_printf(
        "SELECT MAX(snapshot) FROM snapshots WHERE snapshot < %" PRId64, to->info.snapshot);
    if (!query_db_int(from->db, sql, &previous, error))
        return FALSE;
    if (previous == 0) {
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_NOT_FOUND,
                    "diff: no snapshot before snapshot %" PRId64 " in %s; give --from",
                    to->info.snapshot, from->path);
        return FALSE;
    }
    g_autofree char *text = g_strdup_printf("%" PRId64, previous);
    return snapshot_pick(from->db, from->path, "diff", "from", text, &from->info, error);
}

/* The merge of the two sides in id order into the rows. */
static gboolean diff_merge(diff_side *from, diff_side *to, GArray *rows, GError **error)
{
    while (from->row || to->row) {
        gboolean both = from->row && to->row && from->id == to->id;
        if (both && from->row_of_type[from->type_id] == to->row_of_type[to->type_id]) {
            query_diff_row *r = &g_array_index(rows, query_diff_row, to->row_of_type[to->type_id]);
            r->survived++;
            r->survived_bytes = query_add_saturating(r->survived_bytes, to->size);
            if (!side_next(from, error) || !side_next(to, error))
                return FALSE;
            continue;
        }
        if (from->row && (!to->row || from->id <= to->id)) { /* only in S1, or another type */
            query_diff_row *r =
                &g_array_index(rows, query_diff_row, from->row_of_type[from->type_id]);
            r->dead++;
            r->dead_bytes = query_add_saturating(r->dead_bytes, from->size);
            if (!side_next(from, error))
                return FALSE;
            if (!both)
                continue;
        }
        query_diff_row *r = &g_array_index(rows, query_diff_row, to->row_of_type[to->type_id]);
        r->new_count++;
        r->new_bytes = query_add_saturating(r->new_bytes, to->size);
        if (!side_next(to, error))
            return FALSE;
    }
    return TRUE;
}

query_diff *query_diff_new(sqlite3 *from_db, const char *path, sqlite3 *to_db,
                           const char *to_path, const char *from_text, const char *to_text,
                           GError **error)
{
    gboolean ok = FALSE;
    gboolean two_files = to_db != from_db;
    g_autoptr(GHashTable) by_name = g_hash_table_new(g_str_hash, g_str_equal);
    diff_side from = {.path = path, .db = from_db}, to = {.path = to_path, .db = to_db};
    query_diff *d = g_new0(query_diff, 1);
    d->rows = g_array_new(FALSE, TRUE, sizeof(query_diff_row));
    d->total.type = "total";

    if (!diff_pick(&from, &to, from_text, to_text, two_files, error))
        goto out;
    from.types = d->from_types = snapshot_types_new(from_db, error);
    if (!from.types)
        goto out;
    to.types = d->to_types = snapshot_types_new(to_db, error);
    if (!to.types)
        goto out;
    d->from_names = g_new0(type_name_buf, snapshot_types_count(from.types));
    d->to_names = g_new0(type_name_buf, snapshot_types_count(to.types));
    side_rows(&from, d->rows, by_name, d->from_names);
    side_rows(&to, d->rows, by_name, d->to_names);
    if (!side_open(&from, error) || !side_open(&to, error) ||
        !diff_merge(&from, &to, d->rows, error))
        goto out;

    for (guint i = 0; i < d->rows->len; i++) {
        const query_diff_row *r = &g_array_index(d->rows, query_diff_row, i);
        d->total.new_count = query_add_saturating(d->total.new_count, r->new_count);
        d->total.dead = query_add_saturating(d->total.dead, r->dead);
        d->total.survived = query_add_saturating(d->total.survived, r->survived);
        d->total.new_bytes = query_add_saturating(d->total.new_bytes, r->new_bytes);
        d->total.dead_bytes = query_add_saturating(d->total.dead_bytes, r->dead_bytes);
        d->total.survived_bytes = query_add_saturating(d->total.survived_bytes, r->survived_bytes);
    }
    if (d->rows->len > 1)
        qsort(d->rows->data, d->rows->len, sizeof(query_diff_row), diff_row_cmp);
    d->from = from.info;
    d->to = to.info;
    /* One recording that follows its samples: ids are kept from the snapshot (or sample) that
     * named an object on, but a snapshot names what it finds in gen0 for itself only. */
    if (!two_files) {
        g_auto(query_estimates) mode = {0};
        if (!query_estimates_get(from_db, &mode, error))
            goto out;
        if (mode.followed) {
            d->followed_mode = g_strdup(mode.mode);
            d->from_gen0_named = from.gen0_named;
        }
    }
    /* Sampled and attach recordings give ids as GCs find objects, not in allocation order: the
     * same id in two such files is not the same allocation. */
    if (two_files) {
        g_auto(query_estimates) from_mode = {0};
        g_auto(query_estimates) to_mode = {0};
        if (!query_estimates_get(from_db, &from_mode, error) ||
            !query_estimates_get(to_db, &to_mode, error))
            goto out;
        /* An imported .gcdump has no identity at all: ids are its node order. */
        gboolean from_renumbered = from_mode.uncounted || g_strcmp0(from_mode.mode, "import") == 0;
        gboolean to_renumbered = to_mode.uncounted || g_strcmp0(to_mode.mode, "import") == 0;
        if (from_renumbered || to_renumbered) {
            d->renumbered_path = from_renumbered ? path : to_path;
            d->renumbered_mode = g_strdup(from_renumbered ? from_mode.mode : to_mode.mode);
        }
    }
    ok = TRUE;
out:
    sqlite3_finalize(from.stmt);
    sqlite3_finalize(to.stmt);
    g_free(from.row_of_type);
    g_free(to.row_of_type);
    if (!ok)
        g_clear_pointer(&d, query_diff_free);
    return d;
}
