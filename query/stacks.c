/* stacks.c — allocation sites from the sampled allocations and their stacks (stacks.h). */
#include "query/stacks.h"

#include "query/query.h"
#include "query/snapshot_graph.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

gboolean stacks_present(sqlite3 *db, GError **error)
{
    /* The tables exist in every file query_db_open accepts (schema 3); no sampling row: stacks
     * were off. */
    int64_t rows = 0;
    if (!query_db_int(db, "SELECT count(*) FROM sampling", &rows, error))
        return FALSE;
    return rows > 0;
}

char *stacks_absent_message_new(const char *path)
{
    return g_strdup_printf("%s has no allocation stacks: recorded with --stacks off", path);
}

/* One GROUP BY over the samples. ?1 type name (NULL: all), ?2..?3 the allocation intervals
 * (NULL: open), ?4 fate: 0 every sample, 1 promoted to gen2, 2 promoted to gen2 and died. A
 * sample's fate is known only when its object is tracked (object_id): an object that died
 * before its first GC never reached gen2 either. */
static const char sites_sql[] =
    "SELECT coalesce(s.stack_id, -1), s.type_id, coalesce(t.name, '<type ' || s.type_id || '>'),"
    "       sum(s.est_count), sum(s.est_bytes), count(*),"
    "       sum(typeof(s.type_id) <> 'integer' OR typeof(s.stack_id) NOT IN ('integer', 'null')"
    "           OR typeof(s.gc) <> 'integer' OR typeof(s.est_count) NOT IN ('integer', 'real')"
    "           OR typeof(s.est_bytes) NOT IN ('integer', 'real') OR s.est_count < 0"
    "           OR s.est_bytes < 0 OR s.size < 0 OR s.stack_id < 0)"
    "  FROM alloc_samples AS s LEFT JOIN types AS t ON t.id = s.type_id"
    " WHERE (?1 IS NULL OR t.name = ?1)"
    "   AND (?2 IS NULL OR s.gc >= ?2) AND (?3 IS NULL OR s.gc <= ?3)"
    "   AND (?4 = 0 OR (s.object_id IS NOT NULL"
    "        AND EXISTS (SELECT 1 FROM object_generations AS og"
    "                     WHERE og.object_id = s.object_id AND og.generation = 2)"
    "        AND (?4 = 1 OR EXISTS (SELECT 1 FROM objects AS o"
    "                                WHERE o.id = s.object_id AND o.died_gc IS NOT NULL))))"
    " GROUP BY s.stack_id, s.type_id";

/* Every sample's estimate per type in the intervals, whatever its fate: what scaling divides. */
static const char sampled_sql[] =
    "SELECT s.type_id, total(s.est_count), total(s.est_bytes)"
    "  FROM alloc_samples AS s LEFT JOIN types AS t ON t.id = s.type_id"
    " WHERE (?1 IS NULL OR t.name = ?1)"
    "   AND (?2 IS NULL OR s.gc >= ?2) AND (?3 IS NULL OR s.gc <= ?3)"
    " GROUP BY s.type_id";

/* The allocations per type in the intervals (%s: the source of estimates.h; %s: what is
 * unreported), the figures the sites of each type are scaled to. */
static const char allocated_sql[] =
    "SELECT a.type_id, %s, coalesce(t.name, '<type ' || a.type_id || '>'), total(a.count),"
    "       total(a.bytes)"
    "  FROM %s AS a LEFT JOIN types AS t ON t.id = a.type_id"
    " WHERE (?1 IS NULL OR t.name = ?1)"
    "   AND (?2 IS NULL OR a.gc >= ?2) AND (?3 IS NULL OR a.gc <= ?3)"
    " GROUP BY 1, 2";

static const char frames_sql[] =
    "SELECT sf.frame_id, typeof(sf.frame_id) = 'integer' AND typeof(sf.position) = 'integer'"
    "  FROM stack_frames AS sf WHERE sf.stack_id = ?1 ORDER BY sf.position";

typedef struct site_order {
    stacks_sort sort;
} site_order;

/* Heaviest first by the chosen measure, then the other, then samples, type and stack id, so
 * that the order is the same on every run. */
static gint site_compare(gconstpointer a, gconstpointer b, gpointer data)
{
    const stacks_site *x = a, *y = b;
    const site_order *o = data;
    double x1 = o->sort == STACKS_SORT_COUNT ? x->count : x->bytes;
    double y1 = o->sort == STACKS_SORT_COUNT ? y->count : y->bytes;
    double x2 = o->sort == STACKS_SORT_COUNT ? x->bytes : x->count;
    double y2 = o->sort == STACKS_SORT_COUNT ? y->bytes : y->count;
    if (x1 != y1)
        return x1 > y1 ? -1 : 1;
    if (x2 != y2)
        return x2 > y2 ? -1 : 1;
    if (x->samples != y->samples)
        return x->samples > y->samples ? -1 : 1;
    int c = strcmp(x->type, y->type);
    if (c)
        return c;
    return x->stack_id < y->stack_id ? -1 : x->stack_id > y->stack_id;
}

/* ---- loading: stacks folded, sites merged and scaled ------------------------------------ */

/* A stack as read and folded: frames (indexes into frame_names) with each repeated block once. */
typedef struct folded_stack {
    GArray *frames; /* guint */
    GArray *folds;  /* stacks_fold, repeats_min = repeats_max = the repeats */
    char *key;      /* the frames and the folds' places, not their repeats */
} folded_stack;

static void folded_stack_free(gpointer p)
{
    folded_stack *f = p;
    g_array_free(f->frames, TRUE);
    g_array_free(f->folds, TRUE);
    g_free(f->key);
    g_free(f);
}

/* The figures of one type: the samples' estimates, and what they are scaled to. */
typedef struct type_figures {
    int64_t type_id;
    const char *name;
    double sampled_count, sampled_bytes;       /* every sample's estimate */
    double allocated_count, allocated_bytes;   /* its allocations (reported or estimated) */
    double unreported_count, unreported_bytes; /* alloc_counts flags 1 */
    gboolean allocated;                        /* the allocations are known */
} type_figures;

typedef struct stacks_loader {
    stacks_result *r;
    sqlite3_stmt *frames;
    GHashTable *names;   /* frame id -> name (frames table) */
    GHashTable *folded;  /* stack id -> folded_stack */
    GHashTable *sites;   /* key -> 1 + index into r->sites */
    GHashTable *types;   /* type id -> type_figures */
    GHashTable *pseudo;  /* pseudo frame name (static) -> 1 + index into frame_names */
} stacks_loader;

/* The index in frame_names of the frame `frame_id` (interned). */
static guint frame_intern(stacks_loader *l, int64_t frame_id)
{
    stacks_result *r = l->r;
    gpointer slot = g_hash_table_lookup(r->frame_index, &frame_id);
    if (!slot) {
        const char *name = g_hash_table_lookup(l->names, &frame_id);
        g_ptr_array_add(r->frame_names, name ? g_strdup(name)
                                             : g_strdup_printf("[frame %" PRId64 "]", frame_id));
        slot = GUINT_TO_POINTER(r->frame_names->len);
        g_hash_table_insert(r->frame_index, g_memdup2(&frame_id, sizeof frame_id), slot);
    }
    return GPOINTER_TO_UINT(slot) - 1;
}

/* A pseudo frame (a name no frame id has) interned by name. */
static guint frame_intern_pseudo(stacks_loader *l, const char *name)
{
    gpointer slot = g_hash_table_lookup(l->pseudo, name);
    if (!slot) {
        g_ptr_array_add(l->r->frame_names, g_strdup(name));
        slot = GUINT_TO_POINTER(l->r->frame_names->len);
        g_hash_table_insert(l->pseudo, (gpointer)name, slot);
    }
    return GPOINTER_TO_UINT(slot) - 1;
}

/* Folds `n` frames: at each place, the block of up to STACKS_FOLD_MAX frames repeated back to
 * back that covers the most frames (the shortest among equals) is kept once. */
static void stack_fold(const guint *f, guint n, folded_stack *out)
{
    guint i = 0;
    while (i < n) {
        guint best_len = 0, best_reps = 1;
        for (guint len = 1; len <= STACKS_FOLD_MAX && i + 2 * len <= n; len++) {
            guint reps = 1;
            while (i + (reps + 1) * len <= n &&
                   memcmp(f + i, f + i + reps * len, len * sizeof *f) == 0)
                reps++;
            if (reps >= 2 && len * reps > best_len * best_reps)
                best_len = len, best_reps = reps;
        }
        if (best_reps >= 2) {
            stacks_fold fold = {out->frames->len, best_len, best_reps, best_reps};
            g_array_append_val(out->folds, fold);
            g_array_append_vals(out->frames, f + i, best_len);
            i += best_len * best_reps;
        } else {
            g_array_append_val(out->frames, f[i]);
            i++;
        }
    }
    GString *key = g_string_new(NULL);
    guint next_fold = 0;
    for (guint k = 0; k < out->frames->len; k++) {
        const stacks_fold *fold = next_fold < out->folds->len
                                      ? &g_array_index(out->folds, stacks_fold, next_fold)
                                      : NULL;
        if (fold && fold->first == k) {
            g_string_append_printf(key, "(%u)", fold->frames);
            next_fold++;
        }
        g_string_append_printf(key, "%u,", g_array_index(out->frames, guint, k));
    }
    out->key = g_string_free(key, FALSE);
}

/* The stack `stack_id` read and folded (cached). */
static folded_stack *stack_get(stacks_loader *l, int64_t stack_id, GError **error)
{
    folded_stack *f = g_hash_table_lookup(l->folded, &stack_id);
    if (f)
        return f;
    gboolean row = FALSE;
    gboolean stepped = FALSE;
    g_autoptr(GArray) raw = g_array_new(FALSE, FALSE, sizeof(guint));
    sqlite3_reset(l->frames);
    sqlite3_bind_int64(l->frames, 1, stack_id);
    while ((stepped = query_db_step(l->frames, &row, error)) && row) {
        if (!sqlite3_column_int(l->frames, 1)) {
            query_db_damaged(error, "a frame of stack %" PRId64 " is not a number", stack_id);
            return NULL;
        }
        guint index = frame_intern(l, sqlite3_column_int64(l->frames, 0));
        g_array_append_val(raw, index);
    }
    if (!stepped)
        return NULL;
    f = g_new0(folded_stack, 1);
    f->frames = g_array_new(FALSE, FALSE, sizeof(guint));
    f->folds = g_array_new(FALSE, FALSE, sizeof(stacks_fold));
    stack_fold((const guint *)(void *)raw->data, raw->len, f);
    g_hash_table_insert(l->folded, g_memdup2(&stack_id, sizeof stack_id), f);
    return f;
}

/* Adds the figures of (stack, type) to their site, made on first use. `stack` NULL: a site
 * without a stack, its pseudo frame `pseudo`. */
static void site_add(stacks_loader *l, int64_t stack_id, const folded_stack *stack,
                     const char *pseudo, const char *type, double count, double bytes,
                     int64_t samples)
{
    stacks_result *r = l->r;
    g_autofree char *key = stack ? g_strdup_printf("%s\n%s", type, stack->key)
                                 : g_strdup_printf("%s\n%s", type, pseudo);
    gpointer slot = g_hash_table_lookup(l->sites, key);
    stacks_site *site;
    if (!slot) {
        stacks_site fresh = {.stack_id = stack_id, .type = type};
        if (stack) {
            fresh.depth = stack->frames->len;
            fresh.frames = g_memdup2(stack->frames->data, stack->frames->len * sizeof(guint));
            fresh.n_folds = stack->folds->len;
            fresh.folds = g_memdup2(stack->folds->data, stack->folds->len * sizeof(stacks_fold));
        } else {
            guint frame = frame_intern_pseudo(l, pseudo);
            fresh.depth = 1;
            fresh.frames = g_memdup2(&frame, sizeof frame);
        }
        g_array_append_val(r->sites, fresh);
        slot = GUINT_TO_POINTER(r->sites->len);
        g_hash_table_insert(l->sites, g_steal_pointer(&key), slot);
        site = &g_array_index(r->sites, stacks_site, r->sites->len - 1);
    } else {
        site = &g_array_index(r->sites, stacks_site, GPOINTER_TO_UINT(slot) - 1);
        if (stack_id >= 0 && site->stack_id >= 0) {
            r->stacks_merged++;
            site->stack_id = MIN(site->stack_id, stack_id);
            for (guint i = 0; stack && i < site->n_folds; i++) {
                const stacks_fold *f = &g_array_index(stack->folds, stacks_fold, i);
                site->folds[i].repeats_min = MIN(site->folds[i].repeats_min, f->repeats_min);
                site->folds[i].repeats_max = MAX(site->folds[i].repeats_max, f->repeats_max);
            }
        }
    }
    site->stacks += stack ? 1 : 0;
    site->count += count;
    site->bytes += bytes;
    site->samples = query_add_saturating(site->samples, samples);
}

static type_figures *type_figures_get(stacks_loader *l, int64_t type_id, const char *name)
{
    type_figures *t = g_hash_table_lookup(l->types, &type_id);
    if (!t) {
        t = g_new0(type_figures, 1);
        t->type_id = type_id;
        t->name = g_string_chunk_insert_const(l->r->strings, name ? name : "<unknown>");
        g_hash_table_insert(l->types, g_memdup2(&type_id, sizeof type_id), t);
    }
    return t;
}

static void query_bind(sqlite3_stmt *stmt, const stacks_query *q)
{
    if (q->type)
        sqlite3_bind_text(stmt, 1, q->type, -1, SQLITE_STATIC);
    if (q->gc_from)
        sqlite3_bind_int64(stmt, 2, q->gc_from);
    if (q->gc_to)
        sqlite3_bind_int64(stmt, 3, q->gc_to);
}

/* Per type in the query's intervals: what its samples estimate (all of them, whatever their
 * fate) and its allocations, into l->types. */
static gboolean types_read(stacks_loader *l, sqlite3 *db, const stacks_query *q, GError **error)
{
    gboolean row = FALSE;
    gboolean stepped = FALSE;
    gboolean ok = FALSE;
    const query_estimates *e = &l->r->sampling;
    g_autofree char *allocated = g_strdup_printf(
        allocated_sql, e->uncounted ? "0" : "a.flags & 1",
        e->uncounted ? query_estimates_source_sql(e) : "alloc_counts");
    sqlite3_stmt *stmt = query_db_prepare(db, sampled_sql, error);
    if (!stmt)
        goto out;
    query_bind(stmt, q);
    while ((stepped = query_db_step(stmt, &row, error)) && row) {
        type_figures *t = type_figures_get(l, sqlite3_column_int64(stmt, 0), NULL);
        t->sampled_count = sqlite3_column_double(stmt, 1);
        t->sampled_bytes = sqlite3_column_double(stmt, 2);
    }
    if (!stepped)
        goto out;
    sqlite3_finalize(stmt);
    stmt = query_db_prepare(db, allocated, error);
    if (!stmt)
        goto out;
    query_bind(stmt, q);
    while ((stepped = query_db_step(stmt, &row, error)) && row) {
        type_figures *t = type_figures_get(l, sqlite3_column_int64(stmt, 0),
                                           (const char *)sqlite3_column_text(stmt, 2));
        t->name = g_string_chunk_insert_const(
            l->r->strings, (const char *)sqlite3_column_text(stmt, 2));
        double count = MAX(sqlite3_column_double(stmt, 3), 0);
        double bytes = MAX(sqlite3_column_double(stmt, 4), 0);
        if (sqlite3_column_int(stmt, 1)) {
            t->unreported_count += count;
            t->unreported_bytes += bytes;
        } else {
            t->allocated_count += count;
            t->allocated_bytes += bytes;
            t->allocated = TRUE;
        }
    }
    if (!stepped)
        goto out;
    ok = TRUE;
out:
    sqlite3_finalize(stmt);
    return ok;
}

/* Rounds the figures of each type's sites to whole numbers that add up to the type's figure
 * rounded: each site gets its figure's floor, and the units left go to the largest remainders
 * (ties: the site first in the list), so that a type's rows add up exactly. */
typedef struct site_remainder {
    double fraction;
    guint site;
} site_remainder;

static gint remainder_compare(gconstpointer a, gconstpointer b)
{
    const site_remainder *x = a, *y = b;
    if (x->fraction != y->fraction)
        return x->fraction > y->fraction ? -1 : 1;
    return x->site < y->site ? -1 : x->site > y->site;
}

static void sites_round(stacks_result *r, gboolean bytes)
{
    g_autoptr(GHashTable) by_type =
        g_hash_table_new_full(g_str_hash, g_str_equal, NULL, (GDestroyNotify)g_array_unref);
    for (guint i = 0; i < r->sites->len; i++) {
        stacks_site *s = &g_array_index(r->sites, stacks_site, i);
        GArray *list = g_hash_table_lookup(by_type, s->type);
        if (!list) {
            list = g_array_new(FALSE, FALSE, sizeof(site_remainder));
            g_hash_table_insert(by_type, (gpointer)s->type, list);
        }
        double v = bytes ? s->bytes : s->count;
        site_remainder rem = {v - floor(v), i};
        g_array_append_val(list, rem);
    }
    GHashTableIter it;
    gpointer value;
    g_hash_table_iter_init(&it, by_type);
    while (g_hash_table_iter_next(&it, NULL, &value)) {
        GArray *list = value;
        double sum = 0, floors = 0;
        for (guint k = 0; k < list->len; k++) {
            stacks_site *s = &g_array_index(r->sites, stacks_site,
                                            g_array_index(list, site_remainder, k).site);
            double *v = bytes ? &s->bytes : &s->count;
            sum += *v;
            *v = floor(*v);
            floors += *v;
        }
        g_array_sort(list, remainder_compare);
        double left = round(sum) - floors;
        for (guint k = 0; k < list->len && left >= 1; k++, left -= 1) {
            stacks_site *s = &g_array_index(r->sites, stacks_site,
                                            g_array_index(list, site_remainder, k).site);
            *(bytes ? &s->bytes : &s->count) += 1;
        }
    }
}

/* ---- methods ------------------------------------------------------------------------- */

static gint method_compare(gconstpointer a, gconstpointer b, gpointer data)
{
    const stacks_method *x = a, *y = b;
    const site_order *o = data;
    double x1 = o->sort == STACKS_SORT_COUNT ? x->inclusive_count : x->inclusive_bytes;
    double y1 = o->sort == STACKS_SORT_COUNT ? y->inclusive_count : y->inclusive_bytes;
    if (x1 != y1)
        return x1 > y1 ? -1 : 1;
    if (x->exclusive_bytes != y->exclusive_bytes)
        return x->exclusive_bytes > y->exclusive_bytes ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* Inclusive and exclusive figures per frame over every site (r->sites whole). */
static GArray *methods_new(const stacks_result *r, const site_order *order)
{
    guint n = r->frame_names->len;
    GArray *methods = g_array_sized_new(FALSE, TRUE, sizeof(stacks_method), n);
    g_array_set_size(methods, n);
    /* the last site that counted each frame: recursion counts once per site */
    g_autofree guint *seen = g_new(guint, n);
    for (guint f = 0; f < n; f++) {
        g_array_index(methods, stacks_method, f).name = g_ptr_array_index(r->frame_names, f);
        seen[f] = G_MAXUINT;
    }
    for (guint i = 0; i < r->sites->len; i++) {
        const stacks_site *s = &g_array_index(r->sites, stacks_site, i);
        for (guint k = 0; k < s->depth; k++) {
            guint f = s->frames[k];
            stacks_method *m = &g_array_index(methods, stacks_method, f);
            if (k == 0) {
                m->exclusive_count += s->count;
                m->exclusive_bytes += s->bytes;
            }
            if (seen[f] == i)
                continue;
            seen[f] = i;
            m->inclusive_count += s->count;
            m->inclusive_bytes += s->bytes;
            m->samples = query_add_saturating(m->samples, s->samples);
        }
    }
    /* frames of no site (a site beyond none) drop out */
    for (guint f = n; f-- > 0;)
        if (seen[f] == G_MAXUINT)
            g_array_remove_index_fast(methods, f);
    g_array_sort_with_data(methods, method_compare, (gpointer)order);
    return methods;
}

static gint name_compare(gconstpointer a, gconstpointer b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The frame `name` names: a frame's whole name, or else the end of exactly one after a '.' or
 * a '+' ("Binder.BindExpression"). */
static gboolean method_resolve(const stacks_result *r, const char *name, const char *path,
                               guint *index, GError **error)
{
    g_autoptr(GPtrArray) matches = g_ptr_array_new();
    size_t len = strlen(name);
    guint found = G_MAXUINT;
    for (guint f = 0; f < r->frame_names->len; f++) {
        const char *frame = g_ptr_array_index(r->frame_names, f);
        if (strcmp(frame, name) == 0) {
            *index = f;
            return TRUE;
        }
        size_t flen = strlen(frame);
        if (flen > len && strcmp(frame + flen - len, name) == 0 &&
            (frame[flen - len - 1] == '.' || frame[flen - len - 1] == '+')) {
            g_ptr_array_add(matches, (gpointer)frame);
            found = f;
        }
    }
    if (matches->len == 1) {
        *index = found;
        return TRUE;
    }
    if (matches->len == 0) {
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_NOT_FOUND,
                    "no method '%s' in the allocation stacks of %s (a frame's full name, "
                    "'Ns.Type.Method', or its end, 'Type.Method'; see 'heaplens stacks --by "
                    "method')",
                    name, path);
        return FALSE;
    }
    g_ptr_array_sort(matches, name_compare);
    GString *list = g_string_new(NULL);
    for (guint i = 0; i < matches->len && i < 5; i++)
        g_string_append_printf(list, "%s%s", i ? ", " : "", (char *)g_ptr_array_index(matches, i));
    if (matches->len > 5)
        g_string_append_printf(list, " and %u more", matches->len - 5);
    g_set_error(error, QUERY_ERROR, QUERY_ERROR_USAGE,
                "stacks: --method '%s' names %u methods: %s; give one whole name", name,
                matches->len, list->str);
    g_string_free(list, TRUE);
    return FALSE;
}

static gint edge_compare(gconstpointer a, gconstpointer b)
{
    const stacks_edge *x = a, *y = b;
    if (x->bytes != y->bytes)
        return x->bytes > y->bytes ? -1 : 1;
    if (x->count != y->count)
        return x->count > y->count ? -1 : 1;
    return strcmp(x->name, y->name);
}

static void edge_add(GArray *edges, GHashTable *index, const char *name, const stacks_site *s)
{
    gpointer slot = g_hash_table_lookup(index, name);
    if (!slot) {
        stacks_edge fresh = {.name = name};
        g_array_append_val(edges, fresh);
        slot = GUINT_TO_POINTER(edges->len);
        g_hash_table_insert(index, (gpointer)name, slot);
    }
    stacks_edge *e = &g_array_index(edges, stacks_edge, GPOINTER_TO_UINT(slot) - 1);
    e->count += s->count;
    e->bytes += s->bytes;
}

static void focus_free(stacks_focus *focus)
{
    if (!focus)
        return;
    g_array_free(focus->callers, TRUE);
    g_array_free(focus->callees, TRUE);
    g_free(focus);
}

/* The callers and callees of frame `m` over every site. */
static stacks_focus *focus_new(stacks_result *r, guint m)
{
    stacks_focus *focus = g_new0(stacks_focus, 1);
    focus->method.name = g_ptr_array_index(r->frame_names, m);
    focus->callers = g_array_new(FALSE, TRUE, sizeof(stacks_edge));
    focus->callees = g_array_new(FALSE, TRUE, sizeof(stacks_edge));
    g_autoptr(GHashTable) callers = g_hash_table_new(g_str_hash, g_str_equal);
    g_autoptr(GHashTable) callees = g_hash_table_new(g_str_hash, g_str_equal);
    for (guint i = 0; i < r->sites->len; i++) {
        const stacks_site *s = &g_array_index(r->sites, stacks_site, i);
        guint inner = G_MAXUINT, outer = 0;
        for (guint k = 0; k < s->depth; k++)
            if (s->frames[k] == m) {
                inner = MIN(inner, k);
                outer = k;
            }
        if (inner == G_MAXUINT)
            continue;
        stacks_method *fm = &focus->method;
        fm->inclusive_count += s->count;
        fm->inclusive_bytes += s->bytes;
        fm->samples = query_add_saturating(fm->samples, s->samples);
        if (inner == 0) {
            fm->exclusive_count += s->count;
            fm->exclusive_bytes += s->bytes;
            g_autofree char *alloc = g_strconcat("new ", s->type, NULL);
            edge_add(focus->callees, callees, g_string_chunk_insert_const(r->strings, alloc), s);
        } else {
            edge_add(focus->callees, callees,
                     g_ptr_array_index(r->frame_names, s->frames[inner - 1]), s);
        }
        edge_add(focus->callers, callers,
                 outer + 1 < s->depth ? g_ptr_array_index(r->frame_names, s->frames[outer + 1])
                                      : "[none]",
                 s);
    }
    g_array_sort(focus->callers, edge_compare);
    g_array_sort(focus->callees, edge_compare);
    return focus;
}


stacks_result *stacks_load(sqlite3 *db, const stacks_query *q, GError **error)
{
    g_autoptr(stacks_result) r = g_new0(stacks_result, 1);
    gboolean row = FALSE;
    gboolean stepped = FALSE;
    gboolean ok = FALSE;
    sqlite3_stmt *stmt = NULL;
    site_order order = {q->sort};
    stacks_loader l = {.r = r};

    r->sites = g_array_new(FALSE, TRUE, sizeof(stacks_site));
    r->frame_names = g_ptr_array_new_with_free_func(g_free);
    r->strings = g_string_chunk_new(4096);
    r->frame_index = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL);
    l.names = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, g_free);
    l.folded = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, folded_stack_free);
    l.sites = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
    l.types = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, g_free);
    l.pseudo = g_hash_table_new(g_str_hash, g_str_equal);
    if (!query_db_check_alloc_counts(db, error) ||
        !query_estimates_get(db, &r->sampling, error) ||
        !query_totals_read(db, &r->sampling, &r->totals, error) ||
        (!q->unscaled && !types_read(&l, db, q, error)))
        goto out;
    r->scaled = !q->unscaled;

    /* The frames' names, all of them (a few thousand). */
    stmt = query_db_prepare(db, "SELECT id, name FROM frames", error);
    if (!stmt)
        goto out;
    while ((stepped = query_db_step(stmt, &row, error)) && row) {
        int64_t id = sqlite3_column_int64(stmt, 0);
        const char *name = (const char *)sqlite3_column_text(stmt, 1);
        if (name)
            g_hash_table_insert(l.names, g_memdup2(&id, sizeof id), g_strdup(name));
    }
    if (!stepped)
        goto out;
    sqlite3_finalize(stmt);

    l.frames = query_db_prepare(db, frames_sql, error);
    stmt = l.frames ? query_db_prepare(db, sites_sql, error) : NULL;
    if (!stmt)
        goto out;
    query_bind(stmt, q);
    sqlite3_bind_int(stmt, 4, q->by == STACKS_BY_ALLOCATED ? 0 : q->by == STACKS_BY_SURVIVED ? 1 : 2);
    while ((stepped = query_db_step(stmt, &row, error)) && row) {
        if (sqlite3_column_int64(stmt, 6) > 0) {
            query_db_damaged(error, "allocation samples hold values no recording holds (a type, "
                                    "stack, GC or estimate that is not a number, or a negative one)");
            goto out;
        }
        int64_t stack_id = sqlite3_column_int64(stmt, 0);
        int64_t type_id = sqlite3_column_int64(stmt, 1);
        const char *type = g_string_chunk_insert_const(
            r->strings, sqlite3_column_text(stmt, 2) ? (const char *)sqlite3_column_text(stmt, 2)
                                                     : "<unknown>");
        double count = sqlite3_column_double(stmt, 3);
        double bytes = sqlite3_column_double(stmt, 4);
        /* Huge estimates sum to infinity: still finite and not negative here. */
        if (!isfinite(count) || count < 0)
            count = 0;
        if (!isfinite(bytes) || bytes < 0)
            bytes = 0;
        /* Scaled: the type's share of its allocations that these samples stand for. */
        type_figures *t = r->scaled ? g_hash_table_lookup(l.types, &type_id) : NULL;
        if (t && t->allocated && t->sampled_count > 0 && t->sampled_bytes > 0) {
            count = t->allocated_count * (count / t->sampled_count);
            bytes = t->allocated_bytes * (bytes / t->sampled_bytes);
        }
        folded_stack *stack = NULL;
        if (stack_id >= 0 && !(stack = stack_get(&l, stack_id, error)))
            goto out;
        site_add(&l, stack_id, stack, STACKS_NO_STACK_FRAME, type, count, bytes,
                 sqlite3_column_int64(stmt, 5));
    }
    if (!stepped)
        goto out;

    /* What no sample stands for, so that the sites add up to the allocations: the types never
     * sampled, and the allocations the runtime did not report. */
    if (r->scaled && q->by == STACKS_BY_ALLOCATED) {
        GHashTableIter it;
        gpointer value;
        g_hash_table_iter_init(&it, l.types);
        while (g_hash_table_iter_next(&it, NULL, &value)) {
            const type_figures *t = value;
            if (t->allocated && (t->sampled_count <= 0 || t->sampled_bytes <= 0) &&
                (t->allocated_count > 0 || t->allocated_bytes > 0))
                site_add(&l, STACKS_NOT_SAMPLED, NULL, STACKS_NOT_SAMPLED_FRAME, t->name,
                         t->allocated_count, t->allocated_bytes, 0);
            if (t->unreported_count > 0 || t->unreported_bytes > 0)
                site_add(&l, STACKS_UNREPORTED, NULL, STACKS_UNREPORTED_FRAME, t->name,
                         t->unreported_count, t->unreported_bytes, 0);
        }
    }
    if (r->scaled) {
        sites_round(r, FALSE);
        sites_round(r, TRUE);
    }
    for (guint i = 0; i < r->sites->len; i++) {
        const stacks_site *site = &g_array_index(r->sites, stacks_site, i);
        r->total_count += site->count;
        r->total_bytes += site->bytes;
        r->total_samples = query_add_saturating(r->total_samples, site->samples);
    }
    g_array_sort_with_data(r->sites, site_compare, &order);
    r->sites_all = r->sites->len;
    if (q->method) {
        guint m = 0;
        if (!method_resolve(r, q->method, q->path ? q->path : "the recording", &m, error))
            goto out;
        r->focus = focus_new(r, m);
    }
    if (q->methods) {
        r->methods = methods_new(r, &order);
        r->methods_all = r->methods->len;
        if (q->top && r->methods->len > q->top)
            g_array_set_size(r->methods, q->top);
    }
    if (q->top && r->sites->len > q->top) {
        for (guint i = q->top; i < r->sites->len; i++) {
            g_free(g_array_index(r->sites, stacks_site, i).frames);
            g_free(g_array_index(r->sites, stacks_site, i).folds);
        }
        g_array_set_size(r->sites, q->top);
    }
    ok = TRUE;
out:
    sqlite3_finalize(stmt);
    sqlite3_finalize(l.frames);
    g_hash_table_destroy(l.names);
    g_hash_table_destroy(l.folded);
    g_hash_table_destroy(l.sites);
    g_hash_table_destroy(l.types);
    g_hash_table_destroy(l.pseudo);
    return ok ? g_steal_pointer(&r) : NULL;
}

void stacks_result_free(stacks_result *r)
{
    if (!r)
        return;
    for (guint i = 0; r->sites && i < r->sites->len; i++) {
        g_free(g_array_index(r->sites, stacks_site, i).frames);
        g_free(g_array_index(r->sites, stacks_site, i).folds);
    }
    if (r->methods)
        g_array_free(r->methods, TRUE);
    focus_free(r->focus);
    if (r->sites)
        g_array_free(r->sites, TRUE);
    if (r->frame_names)
        g_ptr_array_free(r->frame_names, TRUE);
    if (r->strings)
        g_string_chunk_free(r->strings);
    if (r->frame_index)
        g_hash_table_destroy(r->frame_index);
    query_estimates_clear(&r->sampling);
    g_free(r);
}

const char *stacks_site_frame(const stacks_result *r, const stacks_site *s, guint i)
{
    return g_ptr_array_index(r->frame_names, s->frames[i]);
}

char *stacks_sampling_text_new(const stacks_result *r)
{
    char samples[QUERY_FORMAT_MAX], distance[QUERY_FORMAT_MAX], dropped[QUERY_FORMAT_MAX];
    const query_estimates *s = &r->sampling;
    GString *text = g_string_new(NULL);
    /* Scaled where something counted: every type in full mode, the census's and the large
     * objects in sampled and attach mode. */
    if (r->scaled && (!s->uncounted || s->census))
        g_string_append_printf(text, "scaled to the exact count per type%s; ",
                               s->uncounted ? " up to the last GC" : "");
    g_string_append_printf(text, "estimated from %s %s", query_count_format(s->samples, samples),
                           s->samples == 1 ? "sample" : "samples");
    if (s->mean_distance_bytes >= 0)
        g_string_append_printf(text, ", mean distance %s bytes (%s)",
                               query_count_format(s->mean_distance_bytes, distance),
                               query_size_format(s->mean_distance_bytes, dropped));
    g_string_append_printf(text, "; source %s", s->source);
    if (s->biased)
        g_string_append(text, ", biased: a sample every ~100 KiB allocated, attributed to the "
                              "allocation that crossed it, so large objects and their sites weigh "
                              "more than their share");
    if (s->samples_dropped > 0)
        g_string_append_printf(text, "; %s samples were lost",
                               query_count_format(s->samples_dropped, dropped));
    return g_string_free(text, FALSE);
}

json_t *stacks_sampling_json(const query_estimates *s)
{
    return json_pack("{s:o, s:o, s:b, s:I, s:I, s:b}", "source", query_json_string(s->source),
                     "mean_distance_bytes",
                     s->mean_distance_bytes >= 0 ? json_integer(s->mean_distance_bytes)
                                                 : json_null(),
                     "biased", s->biased, "samples", (json_int_t)s->samples, "samples_dropped",
                     (json_int_t)s->samples_dropped, "estimated", 1);
}

int64_t stacks_round(double v)
{
    return v >= 9.2e18 ? INT64_MAX : (int64_t)llround(v);
}

const stacks_fold *stacks_site_fold_at(const stacks_site *s, guint i)
{
    for (guint k = 0; k < s->n_folds; k++)
        if (s->folds[k].first == i)
            return &s->folds[k];
    return NULL;
}

json_t *stacks_site_json(const stacks_result *r, const stacks_site *s, guint depth)
{
    guint shown = depth && depth < s->depth ? depth : s->depth;
    json_t *frames = json_array();
    for (guint i = 0; i < shown; i++)
        json_array_append_new(frames, query_json_string(stacks_site_frame(r, s, i)));
    json_t *row = json_pack("{s:o, s:o, s:I, s:I, s:I}", "type", query_json_string(s->type),
                            "frames", frames, "count", (json_int_t)stacks_round(s->count),
                            "bytes", (json_int_t)stacks_round(s->bytes), "samples",
                            (json_int_t)s->samples);
    if (shown < s->depth)
        json_object_set_new(row, "more_frames", json_integer(s->depth - shown));
    if (s->n_folds > 0) {
        json_t *folds = json_array();
        for (guint k = 0; k < s->n_folds; k++)
            if (s->folds[k].first < shown)
                json_array_append_new(folds,
                                      json_pack("{s:i, s:i, s:[i, i]}", "first",
                                                (int)s->folds[k].first, "frames",
                                                (int)s->folds[k].frames, "repeats",
                                                (int)s->folds[k].repeats_min,
                                                (int)s->folds[k].repeats_max));
        json_object_set_new(row, "folds", folds);
        json_object_set_new(row, "stacks", json_integer(s->stacks));
    }
    return row;
}

json_t *stacks_method_json(const stacks_method *m)
{
    return json_pack("{s:o, s:{s:I, s:I}, s:{s:I, s:I}, s:I}", "method",
                     query_json_string(m->name), "inclusive", "count",
                     (json_int_t)stacks_round(m->inclusive_count), "bytes",
                     (json_int_t)stacks_round(m->inclusive_bytes), "exclusive", "count",
                     (json_int_t)stacks_round(m->exclusive_count), "bytes",
                     (json_int_t)stacks_round(m->exclusive_bytes), "samples",
                     (json_int_t)m->samples);
}

/* The length of `s` in characters (UTF-8). */
static glong text_width(const char *s)
{
    return g_utf8_validate(s, -1, NULL) ? g_utf8_strlen(s, -1) : (glong)strlen(s);
}

/* `name` with its longest generic argument list that is not yet "…" replaced by "…"; NULL when
 * none is left. */
static char *generics_shorten_new(const char *name)
{
    const char *best = NULL;
    size_t best_len = 0;
    for (const char *p = name; *p; p++) {
        if (*p != '<')
            continue;
        int level = 0;
        const char *q = p;
        for (; *q; q++) {
            level += *q == '<' ? 1 : *q == '>' ? -1 : 0;
            if (level == 0)
                break;
        }
        if (!*q)
            break;
        size_t len = (size_t)(q - p - 1);
        /* type arguments name types (a '.', or several: ','); "<Name>g__local" is a name */
        gboolean types = memchr(p + 1, '.', len) || memchr(p + 1, ',', len);
        if (types && len > best_len && strncmp(p + 1, "…", len) != 0) {
            best = p;
            best_len = len;
        }
        p = q;
    }
    if (!best)
        return NULL;
    return g_strdup_printf("%.*s<…>%s", (int)(best - name), name, best + best_len + 2);
}

char *stacks_name_fit_new(const char *name, guint width)
{
    char *fit = g_strdup(name);
    while ((guint)text_width(fit) > width) {
        char *shorter = generics_shorten_new(fit);
        if (!shorter)
            break;
        g_free(fit);
        fit = shorter;
    }
    /* Still too long: the leading namespaces go, at a '.', then whatever is left. */
    while ((guint)text_width(fit) > width && width > 1) {
        const char *start = g_str_has_prefix(fit, "…") ? fit + strlen("…") : fit;
        const char *dot = strpbrk(start, ".+");
        char *shorter = dot ? g_strconcat("…", dot + 1, NULL) : NULL;
        if (!shorter) {
            /* one long word: its end */
            glong n = text_width(fit);
            const char *tail = g_utf8_validate(fit, -1, NULL)
                                   ? g_utf8_offset_to_pointer(fit, n - (glong)width + 1)
                                   : fit + (n - (glong)width + 1);
            shorter = g_strconcat("…", tail, NULL);
            g_free(fit);
            return shorter;
        }
        g_free(fit);
        fit = shorter;
    }
    return fit;
}

/* ---- the flame graph tree -------------------------------------------------------------- */

typedef struct flame_node {
    const char *name;
    gboolean is_type; /* a leaf: the type allocated (kept apart from a frame of the same name) */
    double bytes, count;
    GHashTable *children; /* name -> flame_node * */
} flame_node;

static flame_node *flame_node_new(const char *name)
{
    flame_node *n = g_new0(flame_node, 1);
    n->name = name;
    return n;
}

static void flame_node_free(gpointer p)
{
    flame_node *n = p;
    if (n->children)
        g_hash_table_destroy(n->children);
    g_free(n);
}

/* Children are keyed by name, types by their name after a byte no name holds. */
static flame_node *flame_child(flame_node *parent, const char *name, gboolean is_type,
                               GStringChunk *keys)
{
    if (!parent->children)
        parent->children = g_hash_table_new_full(g_str_hash, g_str_equal, NULL, flame_node_free);
    const char *key = name;
    if (is_type) {
        g_autofree char *typed = g_strconcat("\x01", name, NULL);
        key = g_string_chunk_insert_const(keys, typed);
    }
    flame_node *child = g_hash_table_lookup(parent->children, key);
    if (!child) {
        child = flame_node_new(name);
        child->is_type = is_type;
        g_hash_table_insert(parent->children, (gpointer)key, child);
    }
    return child;
}

static gint flame_compare(gconstpointer a, gconstpointer b)
{
    const flame_node *x = *(flame_node *const *)a, *y = *(flame_node *const *)b;
    if (x->bytes != y->bytes)
        return x->bytes > y->bytes ? -1 : 1;
    return strcmp(x->name, y->name);
}

static json_t *flame_json(const flame_node *n, double min_bytes)
{
    json_t *children = json_array();
    if (n->children) {
        g_autoptr(GPtrArray) sorted = g_ptr_array_new();
        GHashTableIter it;
        gpointer value;
        g_hash_table_iter_init(&it, n->children);
        while (g_hash_table_iter_next(&it, NULL, &value))
            g_ptr_array_add(sorted, value);
        g_ptr_array_sort(sorted, flame_compare);
        for (guint i = 0; i < sorted->len; i++) {
            const flame_node *c = g_ptr_array_index(sorted, i);
            if (c->bytes >= min_bytes && c->bytes > 0)
                json_array_append_new(children, flame_json(c, min_bytes));
        }
    }
    json_t *node = json_pack("{s:o, s:I, s:I, s:o}", "name", query_json_string(n->name), "bytes",
                             (json_int_t)stacks_round(n->bytes), "count", (json_int_t)stacks_round(n->count), "children", children);
    if (n->is_type)
        json_object_set_new(node, "type", json_true());
    return node;
}

json_t *stacks_flame_json(const stacks_result *r, double min_fraction)
{
    flame_node *root = flame_node_new("all");
    GStringChunk *keys = g_string_chunk_new(1024);
    for (guint i = 0; i < r->sites->len; i++) {
        const stacks_site *s = &g_array_index(r->sites, stacks_site, i);
        flame_node *n = root;
        root->bytes += s->bytes;
        root->count += s->count;
        for (guint f = s->depth; f-- > 0;) {
            n = flame_child(n, stacks_site_frame(r, s, f), FALSE, keys);
            n->bytes += s->bytes;
            n->count += s->count;
        }
        n = flame_child(n, s->type, TRUE, keys);
        n->bytes += s->bytes;
        n->count += s->count;
    }
    json_t *tree = flame_json(root, root->bytes * min_fraction);
    flame_node_free(root);
    g_string_chunk_free(keys);
    return tree;
}

/* Parses --gc N or --interval A..B into an inclusive range of allocation intervals. The tail
 * interval (after the last GC) is last + 1. */
static gboolean interval_parse(sqlite3 *db, const char *path, const char *gc_text,
                               const char *interval, stacks_query *q, GError **error)
{
    int64_t last = 0;
    uint64_t a = 0, b = 0;
    if (gc_text && interval) {
        g_set_error(error, QUERY_ERROR, QUERY_ERROR_USAGE,
                    "stacks: give --gc N or --interval A..B, not both");
        return FALSE;
    }
    if (!gc_text && !interval)
        return TRUE;
    if (!query_db_int(db, "SELECT max(gc) FROM gcs", &last, error))
        return FALSE;
    if (gc_text) {
        if (!query_args_parse_uint("stacks", "gc", gc_text, 1, G_MAXINT64,
                                   "a GC number (1, 2, ...)", &a, error))
            return FALSE;
        b = a;
    } else {
        const char *dots = strstr(interval, "..");
        g_autofree char *first = dots ? g_strndup(interval, (gsize)(dots - interval)) : NULL;
        if (!dots || !query_args_parse_uint("stacks", "interval", first, 1, G_MAXINT64,
                                            "A..B, two GC numbers", &a, NULL) ||
            !query_args_parse_uint("stacks", "interval", dots + 2, 1, G_MAXINT64,
                                   "A..B, two GC numbers", &b, NULL) ||
            a > b) {
            g_set_error(error, QUERY_ERROR, QUERY_ERROR_USAGE,
                        "stacks: --interval expects A..B, two GC numbers with A <= B, not '%s'",
                        interval);
            return FALSE;
        }
    }
    if (b > (uint64_t)last + 1) {
        /* Interval last + 1 is the tail: said as such, not as a GC the recording does not have
         * (it said "before GCs 1 to 4 and after the last (4)" of a recording of 3 GCs). */
        if (last > 0)
            g_set_error(error, QUERY_ERROR, QUERY_ERROR_NOT_FOUND,
                        "no GC %" PRIu64 " in %s: its GCs are 1 to %" PRId64 " (--gc %" PRId64
                        ": the allocations after the last)",
                        b, path, last, last + 1);
        else
            g_set_error(error, QUERY_ERROR, QUERY_ERROR_NOT_FOUND,
                        "no GC %" PRIu64 " in %s: it has no GC (--gc 1: every allocation)", b,
                        path);
        return FALSE;
    }
    q->gc_from = (int64_t)a;
    q->gc_to = (int64_t)b;
    return TRUE;
}

stacks_result *stacks_find(sqlite3 *db, const char *path, const char *type, const char *gc_text,
                           const char *interval, stacks_query *q, GError **error)
{
    GError *local = NULL;
    g_autoptr(snapshot_types) types = NULL;
    if (!stacks_present(db, &local)) {
        if (local) {
            g_propagate_error(error, local);
        } else {
            g_autofree char *message = stacks_absent_message_new(path);
            g_set_error_literal(error, QUERY_ERROR, QUERY_ERROR_NOT_FOUND, message);
        }
        return NULL;
    }
    if (type) {
        char buf[QUERY_FORMAT_MAX];
        types = snapshot_types_new(db, error);
        if (!types)
            return NULL;
        uint32_t type_id = snapshot_types_resolve(types, type, path, error);
        if (type_id == 0)
            return NULL;
        q->type = g_intern_string(snapshot_types_name(types, type_id, buf));
    }
    if (!interval_parse(db, path, gc_text, interval, q, error))
        return NULL;
    q->path = path;
    return stacks_load(db, q, error);
}
