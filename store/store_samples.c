/* store_samples.c — allocation samples and their call stacks: frames, stacks, stack_frames,
 * alloc_samples and the sampling row (SCHEMA.md, "Allocation samples and stacks"). */
#include "store/store_internal.h"

#include <math.h>

static void bind_text(sqlite3_stmt *st, int idx, store_str s)
{
    sqlite3_bind_text(st, idx, s.ptr != NULL ? s.ptr : "", (int)s.len, SQLITE_TRANSIENT);
}

gboolean store_samples_method(store_writer *w, const store_record *rec, GError **error)
{
    sqlite3_stmt *st = w->stmt[STORE_STMT_INSERT_FRAME];
    store_writer_keep_for_replay(w, rec);
    sqlite3_bind_int64(st, 1, rec->u.method.h.frame_id);
    bind_text(st, 2, rec->u.method.name);
    return store_writer_step(w, STORE_STMT_INSERT_FRAME, error);
}

gboolean store_samples_stack(store_writer *w, const store_record *rec, GError **error)
{
    const hl_stack *h = &rec->u.stack.h;
    store_writer_keep_for_replay(w, rec);
    sqlite3_bind_int64(w->stmt[STORE_STMT_INSERT_STACK], 1, h->stack_id);
    sqlite3_bind_int64(w->stmt[STORE_STMT_INSERT_STACK], 2, h->depth);
    if (!store_writer_step(w, STORE_STMT_INSERT_STACK, error))
        return FALSE;
    sqlite3_stmt *st = w->stmt[STORE_STMT_INSERT_STACK_FRAME];
    for (uint32_t i = 0; i < h->depth; i++) {
        uint32_t frame;
        memcpy(&frame, rec->u.stack.frames + (size_t)i * sizeof frame, sizeof frame);
        sqlite3_bind_int64(st, 1, h->stack_id);
        sqlite3_bind_int64(st, 2, i);
        sqlite3_bind_int64(st, 3, frame);
        if (!store_writer_step(w, STORE_STMT_INSERT_STACK_FRAME, error))
            return FALSE;
    }
    return TRUE;
}

void store_sample_weight(uint32_t source, uint64_t mean_distance, uint64_t size, uint64_t amount,
                         double *est_count, double *est_bytes)
{
    *est_count = *est_bytes = 0;
    if ((source == HL_SAMPLE_SOURCE_ALLOCATION_SAMPLED ||
         source == HL_SAMPLE_SOURCE_OBJECT_ALLOCATED) && mean_distance > 0 && size > 0) {
        /* P(sampled) = 1 - (1 - p)^size, computed without cancellation for small p * size. */
        double p = 1.0 / (double)mean_distance;
        double sampled = -expm1((double)size * log1p(-p));
        *est_count = 1.0 / sampled;
        *est_bytes = (double)size / sampled;
    } else if (source == HL_SAMPLE_SOURCE_ALLOCATION_TICK) {
        *est_bytes = (double)amount;
        *est_count = size > 0 ? (double)amount / (double)size : 0;
    }
}

static const char *source_name(uint32_t source)
{
    return source == HL_SAMPLE_SOURCE_ALLOCATION_SAMPLED ? "AllocationSampled"
           : source == HL_SAMPLE_SOURCE_ALLOCATION_TICK  ? "AllocationTick"
           : source == HL_SAMPLE_SOURCE_OBJECT_ALLOCATED ? "ObjectAllocated"
                                                         : NULL;
}

/* An alloc_samples row as bound: the sample and its estimates. */
typedef struct sample_row {
    hl_alloc_sample a;
    double est_count, est_bytes;
} sample_row;

/* Binds an alloc_samples row from parameter `first` (1, or a later row's in the multi-row form). */
static void bind_sample(sqlite3_stmt *st, int first, uint32_t gc, const sample_row *row)
{
    const hl_alloc_sample *a = &row->a;
    sqlite3_bind_int64(st, first, gc);
    sqlite3_bind_int64(st, first + 1, a->type_id);
    store_bind_optional(st, first + 2, a->os_tid, a->os_tid != 0);
    store_bind_optional(st, first + 3, a->heap, a->heap != HL_GEN_NONE);
    sqlite3_bind_int64(st, first + 4, (int64_t)a->size);
    store_bind_optional(st, first + 5, a->stack_id, a->stack_id != 0);
    store_bind_optional(st, first + 6, (int64_t)a->object_id, a->object_id != 0);
    sqlite3_bind_double(st, first + 7, row->est_count);
    sqlite3_bind_double(st, first + 8, row->est_bytes);
}

/* Samples of the open GC's interval (rolled back with it), or of the tail after the last GC. The
 * rows go out STORE_RECORD_ROWS at a time, the rest one by one. */
gboolean store_samples_alloc(store_writer *w, const store_record *rec, GError **error)
{
    const hl_alloc_samples *h = &rec->u.alloc_samples.h;
    gboolean tail = !w->gc.open;
    const char *source = source_name(h->source);
    sample_row rows[STORE_RECORD_ROWS];
    int n = 0;
    if (source == NULL || (tail ? h->gc != w->last_gc + 1 : h->gc != w->gc.start.gc)) {
        w->writer_anomalies++;
        return TRUE;
    }
    for (uint32_t i = 0; i < h->count; i++) {
        sample_row *row = &rows[n];
        row->a = store_record_alloc_sample_at(rec, i);
        const hl_alloc_sample *a = &row->a;
        if (a->type_id == 0) {
            w->writer_anomalies++;
            continue;
        }
        store_sample_weight(h->source, h->mean_distance_bytes, a->size, a->amount,
                            &row->est_count, &row->est_bytes);
        if (a->weight > 1) { /* kept by the sample budget with probability 1/weight */
            row->est_count *= a->weight;
            row->est_bytes *= a->weight;
        }
        if (a->os_tid != 0 && !store_writer_note_thread(w, a->os_tid, error))
            return FALSE;
        if (++n == STORE_RECORD_ROWS) {
            sqlite3_stmt *st = w->stmt[STORE_STMT_INSERT_ALLOC_SAMPLES_MANY];
            for (int r = 0; r < n; r++)
                bind_sample(st, 1 + r * 9, h->gc, &rows[r]);
            if (!store_writer_step(w, STORE_STMT_INSERT_ALLOC_SAMPLES_MANY, error))
                return FALSE;
            n = 0;
        }
    }
    for (int r = 0; r < n; r++) {
        bind_sample(w->stmt[STORE_STMT_INSERT_ALLOC_SAMPLE], 1, h->gc, &rows[r]);
        if (!store_writer_step(w, STORE_STMT_INSERT_ALLOC_SAMPLE, error))
            return FALSE;
    }
    w->samples_budgeted = h->samples_budgeted;
    sqlite3_stmt *st = w->stmt[STORE_STMT_UPSERT_SAMPLING];
    sqlite3_bind_text(st, 1, source, -1, SQLITE_STATIC);
    store_bind_optional(st, 2, (int64_t)h->mean_distance_bytes, h->mean_distance_bytes != 0);
    sqlite3_bind_int64(st, 3, h->source == HL_SAMPLE_SOURCE_ALLOCATION_TICK);
    sqlite3_bind_int64(st, 4, (int64_t)h->samples_seen);
    sqlite3_bind_int64(st, 5, (int64_t)h->samples_dropped);
    return store_writer_step(w, STORE_STMT_UPSERT_SAMPLING, error);
}
