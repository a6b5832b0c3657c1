/* What heaplens' TEMP virtual tables over packed rows share: a table that knows its connection
 * (its cursors prepare statements on it) and its module's client data, the search for the
 * equality constraints on the first two columns, the key (snapshot, object_id) two of them give
 * their rows by, and the error of a packed block heaplens did not write. */
#include "store/store_internal.h"

#include <inttypes.h>

int store_vtab_declare(sqlite3 *db, void *aux, const char *decl, sqlite3_vtab **out)
{
    int rc = sqlite3_declare_vtab(db, decl);
    if (rc != SQLITE_OK)
        return rc;
    store_vtab *v = sqlite3_malloc(sizeof *v);
    if (!v)
        return SQLITE_NOMEM;
    memset(v, 0, sizeof *v);
    v->db = db;
    v->aux = aux;
    *out = &v->base;
    return SQLITE_OK;
}

int store_vtab_disconnect(sqlite3_vtab *vt)
{
    sqlite3_free(vt);
    return SQLITE_OK;
}

void store_vtab_key_constraints(const sqlite3_index_info *info, int *first, int *second)
{
    *first = *second = -1;
    for (int i = 0; i < info->nConstraint; i++) {
        const struct sqlite3_index_constraint *c = &info->aConstraint[i];
        if (!c->usable || c->op != SQLITE_INDEX_CONSTRAINT_EQ)
            continue;
        if (c->iColumn == 0 && *first < 0)
            *first = i;
        else if (c->iColumn == 1 && *second < 0)
            *second = i;
    }
}

gboolean store_block_damaged(GError **error, const char *kind, int64_t first_id,
                             const char *what)
{
    g_set_error(error, STORE_ERROR, STORE_ERROR_DAMAGED,
                "the database is damaged: the %s block of object %" PRId64
                " has %s that heaplens does not write",
                kind, first_id, what);
    return FALSE;
}
