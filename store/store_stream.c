/* store_stream.c — reads a heaplens record stream (wire/hl_wire.h) and decodes its records.
 *
 * The reader owns the wire format and nothing else: it checks the stream header, frames
 * records by their {type, size} header, refuses sizes above HL_REC_MAX_PAYLOAD, checks each
 * payload against the counts it declares, skips (and counts) unknown types, and tells a clean
 * end (RUN_END) from a stream that stopped at or inside a record. What a record means is the
 * caller's business (store_writer.c): it receives decoded records through one callback.
 *
 * Dispatch is the table store_record_defs: type → {name, decode}. Adding a record type is one
 * decode function and one table line.
 */
#include "store/store_internal.h"

#include <errno.h>
#include <stddef.h>
#include <inttypes.h>
#include <string.h>

/* The read buffer: many times the collector's largest usual record (512 KiB, its CHUNK_BYTES),
 * so that moving a partly read record to the front happens once per several MiB read, not
 * every record or two (with 1 MiB the moves copied about half the stream again: a tenth of
 * the writer's CPU on MidLife). */
#define STORE_STREAM_BUF_INITIAL (8u << 20)

/* Checks a payload of `size` bytes and fills the matching member of out->u. */
typedef gboolean (*store_decode_fn)(const uint8_t *p, uint32_t size, store_record *out,
                                    GError **error);

typedef struct store_record_def {
    const char *name;
    store_decode_fn decode;
} store_record_def;

static gboolean store_decode_fail(GError **error, const char *fmt, ...) G_GNUC_PRINTF(2, 3);

static gboolean store_decode_fail(GError **error, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    g_autofree char *msg = g_strdup_vprintf(fmt, ap);
    va_end(ap);
    g_set_error_literal(error, STORE_ERROR, STORE_ERROR_STREAM, msg);
    return FALSE;
}

/* Payload must be exactly `want` bytes. */
static gboolean store_decode_exact(uint32_t size, size_t want, GError **error)
{
    if (size != want)
        return store_decode_fail(error, "payload is %" PRIu32 " bytes, expected %zu", size, want);
    return TRUE;
}

/* Payload = fixed header of `fixed` bytes + `count` items of `item` bytes, exactly. */
static gboolean store_decode_counted(uint32_t size, size_t fixed, uint32_t count, size_t item,
                                     GError **error)
{
    if (size < fixed)
        return store_decode_fail(error, "payload is %" PRIu32 " bytes, shorter than its %zu-byte header",
                                 size, fixed);
    if ((uint64_t)(size - fixed) != (uint64_t)count * item)
        return store_decode_fail(error,
                                 "payload of %" PRIu32 " bytes does not hold the %" PRIu32
                                 " items it declares",
                                 size, count);
    return TRUE;
}

/* A record of exactly `want` bytes, copied into *dst. */
static gboolean store_decode_fixed(const uint8_t *p, uint32_t size, void *dst, size_t want,
                                   GError **error)
{
    if (!store_decode_exact(size, want, error))
        return FALSE;
    memcpy(dst, p, want);
    return TRUE;
}

/* A header of `head_size` bytes, then *count items of `item` bytes (*count is a field of the
 * header, read once the header is copied into *head); *items points at the first item. */
static gboolean store_decode_head_items(const uint8_t *p, uint32_t size, void *head,
                                        size_t head_size, const uint32_t *count, size_t item,
                                        const uint8_t **items, GError **error)
{
    if (size >= head_size)
        memcpy(head, p, head_size);
    *items = p + head_size;
    return store_decode_counted(size, head_size, size >= head_size ? *count : 0, item, error);
}

/* Takes one hl_str at *off; advances *off. */
static gboolean store_decode_str(const uint8_t *p, uint32_t size, uint32_t *off, store_str *out,
                                 GError **error)
{
    uint32_t len;
    if (size - *off < sizeof len)
        return store_decode_fail(error, "string length runs past the payload end");
    memcpy(&len, p + *off, sizeof len);
    *off += sizeof len;
    if (len > size - *off)
        return store_decode_fail(error, "string of %" PRIu32 " bytes runs past the payload end",
                                 len);
    out->ptr = (const char *)p + *off;
    out->len = len;
    *off += len;
    return TRUE;
}

static gboolean store_decode_end(uint32_t size, uint32_t off, GError **error)
{
    if (off != size)
        return store_decode_fail(error, "%" PRIu32 " bytes left over after the last string",
                                 size - off);
    return TRUE;
}

/* A fixed header followed by one string (TYPE, THREAD, METHOD). */
static gboolean store_decode_header_and_name(const uint8_t *p, uint32_t size, void *header,
                                             uint32_t header_size, store_str *name, GError **error)
{
    uint32_t off = header_size;
    if (size < off)
        return store_decode_fail(error, "payload is %" PRIu32 " bytes, shorter than its header",
                                 size);
    memcpy(header, p, off);
    return store_decode_str(p, size, &off, name, error) && store_decode_end(size, off, error);
}

static gboolean store_decode_run_start(const uint8_t *p, uint32_t size, store_record *out,
                                       GError **error)
{
    uint32_t off = sizeof out->u.run_start.h;
    if (size < off)
        return store_decode_fail(error, "payload is %" PRIu32 " bytes, shorter than its header",
                                 size);
    memcpy(&out->u.run_start.h, p, off);
    return store_decode_str(p, size, &off, &out->u.run_start.command, error) &&
           store_decode_str(p, size, &off, &out->u.run_start.runtime_version, error) &&
           store_decode_str(p, size, &off, &out->u.run_start.producer, error) &&
           store_decode_end(size, off, error);
}

static gboolean store_decode_type(const uint8_t *p, uint32_t size, store_record *out,
                                  GError **error)
{
    return store_decode_header_and_name(p, size, &out->u.type.h, sizeof out->u.type.h,
                                        &out->u.type.name, error);
}

static gboolean store_decode_thread(const uint8_t *p, uint32_t size, store_record *out,
                                    GError **error)
{
    return store_decode_header_and_name(p, size, &out->u.thread.h, sizeof out->u.thread.h,
                                        &out->u.thread.name, error);
}

static gboolean store_decode_alloc_counts(const uint8_t *p, uint32_t size, store_record *out,
                                          GError **error)
{
    hl_alloc_counts *h = &out->u.alloc_counts.h;
    return store_decode_head_items(p, size, h, sizeof *h, &h->count, sizeof(hl_alloc_count),
                                   &out->u.alloc_counts.items, error);
}

static gboolean store_decode_survivors(const uint8_t *p, uint32_t size, store_record *out,
                                       GError **error)
{
    hl_gc_survivors *h = &out->u.survivors.h;
    return store_decode_head_items(p, size, h, sizeof *h, &h->count, sizeof(hl_survivor),
                                   &out->u.survivors.items, error);
}

/* One varint (hl_varint_get), the one-byte numbers that most of them are inline. */
static inline gboolean store_varint(const uint8_t **q, const uint8_t *end, uint64_t *v)
{
    if (G_LIKELY(*q < end && **q < 0x80)) {
        *v = *(*q)++;
        return TRUE;
    }
    return hl_varint_get(q, end, v) != 0;
}

/* GC_SURVIVORS_PACKED: its head alone. Its objects are checked where they are read, by the
 * apply (fused with it: a pass of its own before it was 6% of the writer's CPU on MidLife), or
 * by store_stream_survivors_packed_check when its GC is held. */
static gboolean store_decode_survivors_packed(const uint8_t *p, uint32_t size, store_record *out,
                                              GError **error)
{
    hl_gc_survivors *h = &out->u.survivors_packed.h;
    if (size < sizeof *h)
        return store_decode_fail(error, "payload is %" PRIu32 " bytes, shorter than its %zu-byte header",
                                 size, sizeof *h);
    memcpy(h, p, sizeof *h);
    out->u.survivors_packed.items = p + sizeof *h;
    out->u.survivors_packed.end = p + size;
    return TRUE;
}

/* store_stream_survivors_packed_check's walk; the message without the record's name. */
static gboolean store_survivors_packed_walk(const store_record *rec, GError **error)
{
    const hl_gc_survivors *h = &rec->u.survivors_packed.h;
    const uint8_t *q = rec->u.survivors_packed.items, *end = rec->u.survivors_packed.end;
    for (uint32_t i = 0; i < h->count; i++) {
        uint64_t v, tid = 0, heap = 0, type_id, obj_size;
        if (!store_varint(&q, end, &v))
            goto cut;
        if (v & 1) {
            if (!store_varint(&q, end, &tid) || !store_varint(&q, end, &heap))
                goto cut;
            if (tid > UINT32_MAX || heap > UINT8_MAX)
                return store_decode_fail(error, "object %" PRIu32 " has thread %" PRIu64
                                         " and heap %" PRIu64 ": out of range", i, tid, heap);
        } else if (i == 0) {
            return store_decode_fail(error, "the first object has no thread and heap");
        }
        if (!store_varint(&q, end, &type_id) || !store_varint(&q, end, &obj_size))
            goto cut;
        if (type_id > UINT32_MAX)
            return store_decode_fail(error, "object %" PRIu32 " has type %" PRIu64
                                     ": out of range", i, type_id);
        continue;
    cut:
        return store_decode_fail(error, "payload of %" PRIu32 " bytes does not hold the %" PRIu32
                                 " objects it declares (object %" PRIu32 " is cut or malformed)",
                                 rec->size, h->count, i);
    }
    if (q != end)
        return store_decode_fail(error, "%zu bytes left over after the %" PRIu32
                                 " objects it declares", (size_t)(end - q), h->count);
    return TRUE;
}

gboolean store_stream_survivors_packed_check(const store_record *rec, GError **error)
{
    if (store_survivors_packed_walk(rec, error))
        return TRUE;
    g_prefix_error(error, "GC_SURVIVORS_PACKED record: ");
    return FALSE;
}

static gboolean store_decode_gc_start(const uint8_t *p, uint32_t size, store_record *out,
                                      GError **error)
{
    return store_decode_fixed(p, size, &out->u.gc_start, sizeof out->u.gc_start, error);
}

static gboolean store_decode_deaths(const uint8_t *p, uint32_t size, store_record *out,
                                    GError **error)
{
    hl_gc_deaths *h = &out->u.deaths.h;
    return store_decode_head_items(p, size, h, sizeof *h, &h->count, sizeof(uint64_t),
                                   &out->u.deaths.ids, error);
}

static gboolean store_decode_promotions(const uint8_t *p, uint32_t size, store_record *out,
                                        GError **error)
{
    hl_gc_promotions *h = &out->u.promotions.h;
    return store_decode_head_items(p, size, h, sizeof *h, &h->count, sizeof(hl_promotion),
                                   &out->u.promotions.items, error);
}

static gboolean store_decode_discovered(const uint8_t *p, uint32_t size, store_record *out,
                                        GError **error)
{
    hl_discovered_head *h = &out->u.discovered.h;
    return store_decode_head_items(p, size, h, sizeof *h, &h->count, sizeof(hl_discovered),
                                   &out->u.discovered.items, error);
}

static gboolean store_decode_handles_freed(const uint8_t *p, uint32_t size, store_record *out,
                                           GError **error)
{
    hl_gc_handles_freed *h = &out->u.handles_freed.h;
    return store_decode_head_items(p, size, h, sizeof *h, &h->count, sizeof(uint64_t),
                                   &out->u.handles_freed.ids, error);
}

/* A GC_END or RUN_END of an older version: its counters (`counters_size` bytes, the fields of
 * that version) at `counters_at`, and after them the record's fields that follow hl_counters
 * (all of them, or the first ones: GC_END before version 4 ends with its counters). The
 * counters' newer fields and the missing ones are 0. */
static void store_decode_old_counters(const uint8_t *p, uint32_t size, void *out, size_t out_size,
                                      size_t counters_at, size_t counters_size)
{
    size_t head = counters_at + counters_size;
    memset(out, 0, out_size);
    memcpy(out, p, head);
    memcpy((uint8_t *)out + counters_at + sizeof(hl_counters), p + head, size - head);
}

/* GC_END of version 2: its counters are the last field, without the two of version 3; version
 * 3's ends with them, without the census of version 4; versions 4 and 5 have the census after
 * counters without the census's totals of version 6. */
static gboolean store_decode_gc_end(const uint8_t *p, uint32_t size, store_record *out,
                                    GError **error)
{
    size_t at = offsetof(hl_gc_end, counters);
    if (size == HL_GC_END_V2_SIZE || size == HL_GC_END_V3_SIZE || size == HL_GC_END_V4_SIZE) {
        store_decode_old_counters(p, size, &out->u.gc_end, sizeof out->u.gc_end, at,
                                  size == HL_GC_END_V2_SIZE ? HL_COUNTERS_V2_SIZE
                                                            : HL_COUNTERS_V3_SIZE);
        return TRUE;
    }
    return store_decode_fixed(p, size, &out->u.gc_end, sizeof out->u.gc_end, error);
}

/* RUN_END of versions 2 to 5: the shorter counters, then program_peak_rss_bytes. */
static gboolean store_decode_run_end(const uint8_t *p, uint32_t size, store_record *out,
                                     GError **error)
{
    hl_run_end *e = &out->u.run_end;
    if (size == HL_RUN_END_V2_SIZE || size == HL_RUN_END_V3_SIZE) {
        store_decode_old_counters(p, size, e, sizeof *e, offsetof(hl_run_end, counters),
                                  size == HL_RUN_END_V2_SIZE ? HL_COUNTERS_V2_SIZE
                                                             : HL_COUNTERS_V3_SIZE);
        return TRUE;
    }
    return store_decode_fixed(p, size, e, sizeof *e, error);
}

static gboolean store_decode_handle_created(const uint8_t *p, uint32_t size, store_record *out,
                                            GError **error)
{
    return store_decode_fixed(p, size, &out->u.handle_created, sizeof out->u.handle_created, error);
}

static gboolean store_decode_handle_destroyed(const uint8_t *p, uint32_t size, store_record *out,
                                              GError **error)
{
    return store_decode_fixed(p, size, &out->u.handle_destroyed, sizeof out->u.handle_destroyed,
                              error);
}

static gboolean store_decode_handle_kinds(const uint8_t *p, uint32_t size, store_record *out,
                                          GError **error)
{
    hl_gc_handle_kinds *h = &out->u.handle_kinds.h;
    return store_decode_head_items(p, size, h, sizeof *h, &h->count, sizeof(hl_handle_kind),
                                   &out->u.handle_kinds.items, error);
}

static gboolean store_decode_snapshot_start(const uint8_t *p, uint32_t size, store_record *out,
                                            GError **error)
{
    return store_decode_fixed(p, size, &out->u.snapshot_start, sizeof out->u.snapshot_start, error);
}

/* SNAPSHOT_OBJECTS, _REFS and _ROOTS: one head, items of the type's size. */
static gboolean store_decode_snapshot_batch(const uint8_t *p, uint32_t size, store_record *out,
                                            size_t item, GError **error)
{
    hl_snapshot_batch *h = &out->u.snapshot_batch.h;
    return store_decode_head_items(p, size, h, sizeof *h, &h->count, item,
                                   &out->u.snapshot_batch.items, error);
}

static gboolean store_decode_snapshot_objects(const uint8_t *p, uint32_t size, store_record *out,
                                              GError **error)
{
    return store_decode_snapshot_batch(p, size, out, sizeof(hl_snapshot_object), error);
}

static gboolean store_decode_snapshot_refs(const uint8_t *p, uint32_t size, store_record *out,
                                           GError **error)
{
    return store_decode_snapshot_batch(p, size, out, sizeof(hl_snapshot_ref), error);
}

static gboolean store_decode_snapshot_ref_fields(const uint8_t *p, uint32_t size,
                                                 store_record *out, GError **error)
{
    return store_decode_snapshot_batch(p, size, out, sizeof(uint32_t), error);
}

static gboolean store_decode_snapshot_statics(const uint8_t *p, uint32_t size, store_record *out,
                                              GError **error)
{
    return store_decode_snapshot_batch(p, size, out, sizeof(hl_snapshot_static), error);
}

static gboolean store_decode_snapshot_strings(const uint8_t *p, uint32_t size, store_record *out,
                                              GError **error)
{
    return store_decode_snapshot_batch(p, size, out, sizeof(hl_snapshot_string), error);
}

static gboolean store_decode_snapshot_collections(const uint8_t *p, uint32_t size,
                                                  store_record *out, GError **error)
{
    return store_decode_snapshot_batch(p, size, out, sizeof(hl_snapshot_collection), error);
}

static gboolean store_decode_static(const uint8_t *p, uint32_t size, store_record *out,
                                    GError **error)
{
    return store_decode_header_and_name(p, size, &out->u.static_field.h,
                                        sizeof out->u.static_field.h, &out->u.static_field.name,
                                        error);
}

static gboolean store_decode_root_method(const uint8_t *p, uint32_t size, store_record *out,
                                         GError **error)
{
    return store_decode_header_and_name(p, size, &out->u.root_method.h,
                                        sizeof out->u.root_method.h, &out->u.root_method.name,
                                        error);
}

static gboolean store_decode_static_thread(const uint8_t *p, uint32_t size, store_record *out,
                                           GError **error)
{
    return store_decode_fixed(p, size, &out->u.static_thread, sizeof out->u.static_thread, error);
}

static gboolean store_decode_field(const uint8_t *p, uint32_t size, store_record *out,
                                   GError **error)
{
    return store_decode_header_and_name(p, size, &out->u.field.h, sizeof out->u.field.h,
                                        &out->u.field.name, error);
}

static gboolean store_decode_snapshot_roots(const uint8_t *p, uint32_t size, store_record *out,
                                            GError **error)
{
    return store_decode_snapshot_batch(p, size, out, sizeof(hl_snapshot_root), error);
}

static gboolean store_decode_snapshot_root_threads(const uint8_t *p, uint32_t size,
                                                   store_record *out, GError **error)
{
    return store_decode_snapshot_batch(p, size, out, sizeof(hl_snapshot_root_thread), error);
}

static gboolean store_decode_snapshot_end(const uint8_t *p, uint32_t size, store_record *out,
                                          GError **error)
{
    return store_decode_fixed(p, size, &out->u.snapshot_end, sizeof out->u.snapshot_end, error);
}

static gboolean store_decode_method(const uint8_t *p, uint32_t size, store_record *out,
                                    GError **error)
{
    return store_decode_header_and_name(p, size, &out->u.method.h, sizeof out->u.method.h,
                                        &out->u.method.name, error);
}

static gboolean store_decode_final_snapshot_missed(const uint8_t *p, uint32_t size,
                                                   store_record *out, GError **error)
{
    return store_decode_fixed(p, size, &out->u.final_snapshot_missed,
                              sizeof out->u.final_snapshot_missed, error);
}

static gboolean store_decode_forcers_left(const uint8_t *p, uint32_t size, store_record *out,
                                          GError **error)
{
    return store_decode_fixed(p, size, &out->u.forcers_left, sizeof out->u.forcers_left, error);
}

static gboolean store_decode_snapshot_reason(const uint8_t *p, uint32_t size, store_record *out,
                                             GError **error)
{
    return store_decode_header_and_name(p, size, &out->u.snapshot_reason.h,
                                        sizeof out->u.snapshot_reason.h,
                                        &out->u.snapshot_reason.text, error);
}

static gboolean store_decode_checkpoint(const uint8_t *p, uint32_t size, store_record *out,
                                        GError **error)
{
    return store_decode_header_and_name(p, size, &out->u.checkpoint.h,
                                        sizeof out->u.checkpoint.h, &out->u.checkpoint.name, error);
}

static gboolean store_decode_stack(const uint8_t *p, uint32_t size, store_record *out,
                                   GError **error)
{
    hl_stack *h = &out->u.stack.h;
    return store_decode_head_items(p, size, h, sizeof *h, &h->depth, sizeof(uint32_t),
                                   &out->u.stack.frames, error);
}

static gboolean store_decode_alloc_samples(const uint8_t *p, uint32_t size, store_record *out,
                                           GError **error)
{
    hl_alloc_samples *h = &out->u.alloc_samples.h;
    return store_decode_head_items(p, size, h, sizeof *h, &h->count, sizeof(hl_alloc_sample),
                                   &out->u.alloc_samples.items, error);
}

static gboolean store_decode_count_site(const uint8_t *p, uint32_t size, store_record *out,
                                        GError **error)
{
    return store_decode_header_and_name(p, size, &out->u.count_site.h,
                                        sizeof out->u.count_site.h, &out->u.count_site.text,
                                        error);
}

static const store_record_def store_record_defs[] = {
    [HL_REC_RUN_START] = {"RUN_START", store_decode_run_start},
    [HL_REC_TYPE] = {"TYPE", store_decode_type},
    [HL_REC_THREAD] = {"THREAD", store_decode_thread},
    [HL_REC_GC_START] = {"GC_START", store_decode_gc_start},
    [HL_REC_GC_DEATHS] = {"GC_DEATHS", store_decode_deaths},
    [HL_REC_GC_PROMOTIONS] = {"GC_PROMOTIONS", store_decode_promotions},
    [HL_REC_GC_END] = {"GC_END", store_decode_gc_end},
    [HL_REC_RUN_END] = {"RUN_END", store_decode_run_end},
    [HL_REC_HANDLE_CREATED] = {"HANDLE_CREATED", store_decode_handle_created},
    [HL_REC_HANDLE_DESTROYED] = {"HANDLE_DESTROYED", store_decode_handle_destroyed},
    [HL_REC_GC_HANDLE_KINDS] = {"GC_HANDLE_KINDS", store_decode_handle_kinds},
    [HL_REC_DISCOVERED] = {"DISCOVERED", store_decode_discovered},
    [HL_REC_SNAPSHOT_START] = {"SNAPSHOT_START", store_decode_snapshot_start},
    [HL_REC_SNAPSHOT_OBJECTS] = {"SNAPSHOT_OBJECTS", store_decode_snapshot_objects},
    [HL_REC_SNAPSHOT_REFS] = {"SNAPSHOT_REFS", store_decode_snapshot_refs},
    [HL_REC_SNAPSHOT_ROOTS] = {"SNAPSHOT_ROOTS", store_decode_snapshot_roots},
    [HL_REC_SNAPSHOT_ROOT_THREADS] = {"SNAPSHOT_ROOT_THREADS", store_decode_snapshot_root_threads},
    [HL_REC_SNAPSHOT_END] = {"SNAPSHOT_END", store_decode_snapshot_end},
    [HL_REC_ALLOC_COUNTS] = {"ALLOC_COUNTS", store_decode_alloc_counts},
    [HL_REC_GC_SURVIVORS] = {"GC_SURVIVORS", store_decode_survivors},
    [HL_REC_GC_SURVIVORS_PACKED] = {"GC_SURVIVORS_PACKED", store_decode_survivors_packed},
    [HL_REC_GC_HANDLES_FREED] = {"GC_HANDLES_FREED", store_decode_handles_freed},
    [HL_REC_METHOD] = {"METHOD", store_decode_method},
    [HL_REC_STACK] = {"STACK", store_decode_stack},
    [HL_REC_ALLOC_SAMPLES] = {"ALLOC_SAMPLES", store_decode_alloc_samples},
    [HL_REC_FIELD] = {"FIELD", store_decode_field},
    [HL_REC_SNAPSHOT_REF_FIELDS] = {"SNAPSHOT_REF_FIELDS", store_decode_snapshot_ref_fields},
    [HL_REC_STATIC] = {"STATIC", store_decode_static},
    [HL_REC_SNAPSHOT_STATICS] = {"SNAPSHOT_STATICS", store_decode_snapshot_statics},
    [HL_REC_SNAPSHOT_STRINGS] = {"SNAPSHOT_STRINGS", store_decode_snapshot_strings},
    [HL_REC_COUNT_SITE] = {"COUNT_SITE", store_decode_count_site},
    [HL_REC_CHECKPOINT] = {"CHECKPOINT", store_decode_checkpoint},
    [HL_REC_SNAPSHOT_REASON] = {"SNAPSHOT_REASON", store_decode_snapshot_reason},
    [HL_REC_FINAL_SNAPSHOT_MISSED] = {"FINAL_SNAPSHOT_MISSED", store_decode_final_snapshot_missed},
    [HL_REC_FORCERS_LEFT] = {"FORCERS_LEFT", store_decode_forcers_left},
    [HL_REC_ROOT_METHOD] = {"ROOT_METHOD", store_decode_root_method},
    [HL_REC_STATIC_THREAD] = {"STATIC_THREAD", store_decode_static_thread},
    [HL_REC_SNAPSHOT_COLLECTIONS] = {"SNAPSHOT_COLLECTIONS", store_decode_snapshot_collections},
};

static const store_record_def *store_record_def_get(uint16_t type)
{
    if (type >= G_N_ELEMENTS(store_record_defs) || store_record_defs[type].decode == NULL)
        return NULL;
    return &store_record_defs[type];
}

gboolean store_stream_decode(uint16_t type, const uint8_t *payload, uint32_t size,
                             store_record *out, GError **error)
{
    const store_record_def *def = store_record_def_get(type);
    *out = (store_record){.type = type, .size = size, .payload = payload};
    if (def == NULL) {
        g_set_error(error, STORE_ERROR, STORE_ERROR_STREAM, "unknown record type %u", type);
        return FALSE;
    }
    if (!def->decode(payload, size, out, error)) {
        g_prefix_error(error, "%s record: ", def->name);
        return FALSE;
    }
    return TRUE;
}

const char *store_stream_record_name(uint16_t type)
{
    const store_record_def *def = store_record_def_get(type);
    return def != NULL ? def->name : NULL;
}

/* The read buffer: bytes [start, end) are read and not yet consumed. */
typedef struct store_stream_buf {
    uint8_t *data;
    size_t cap, start, end;
    gboolean eof;
    store_read_fn read;
    void *read_ctx;
    store_stream_stats *stats;
} store_stream_buf;

static size_t store_buf_avail(const store_stream_buf *b)
{
    return b->end - b->start;
}

/* Makes at least `want` bytes available, reading as much as one read gives each time. Returns
 * FALSE on a read error; at end of file returns TRUE with fewer bytes available. */
static gboolean store_buf_fill(store_stream_buf *b, size_t want, GError **error)
{
    while (store_buf_avail(b) < want && !b->eof) {
        if (b->cap - b->start < want) {
            /* Not enough room after `start`: move the unread bytes down, grow if needed. */
            memmove(b->data, b->data + b->start, store_buf_avail(b));
            b->end -= b->start;
            b->start = 0;
            if (b->cap < want) {
                b->cap = MAX(want, b->cap * 2);
                b->data = g_realloc(b->data, b->cap);
            }
        }
        ssize_t n = b->read(b->read_ctx, b->data + b->end, b->cap - b->end, error);
        if (n < 0)
            return FALSE;
        if (n == 0)
            b->eof = TRUE;
        b->end += (size_t)n;
        b->stats->stream_bytes += (uint64_t)n;
    }
    return TRUE;
}

static gboolean store_stream_read_header(store_stream_buf *b, store_stream_end *end,
                                         GError **error)
{
    hl_stream_header h;
    size_t avail;

    if (!store_buf_fill(b, sizeof h, error))
        return FALSE;
    avail = store_buf_avail(b);
    if (memcmp(b->data + b->start, HL_STREAM_MAGIC, MIN(avail, sizeof h.magic)) != 0) {
        g_set_error(error, STORE_ERROR, STORE_ERROR_STREAM,
                    "not a heaplens record stream (bad magic)");
        return FALSE;
    }
    if (avail < sizeof h) {
        *end = STORE_STREAM_CUT;
        return TRUE;
    }
    memcpy(&h, b->data + b->start, sizeof h);
    b->start += sizeof h;
    if (h.version < HL_STREAM_VERSION_MIN || h.version > HL_STREAM_VERSION) {
        /* Version 1 sent a record per allocation; nothing of it maps onto version 2's counts.
         * Version 2 differs from 3 only in the size of GC_END and RUN_END (decoded by size). */
        g_set_error(error, STORE_ERROR, STORE_ERROR_STREAM,
                    "record stream version %" PRIu32 " (%s collector); this heaplens reads "
                    "versions %u to %u",
                    h.version, h.version < HL_STREAM_VERSION ? "an older" : "a newer",
                    HL_STREAM_VERSION_MIN, HL_STREAM_VERSION);
        return FALSE;
    }
    b->stats->header_ok = TRUE;
    return TRUE;
}

gboolean store_stream_run(store_read_fn read, void *read_ctx, store_record_fn apply,
                          void *apply_ctx, store_stream_end *end, store_stream_stats *stats,
                          GError **error)
{
    store_stream_buf b = {
        .cap = STORE_STREAM_BUF_INITIAL,
        .read = read,
        .read_ctx = read_ctx,
        .stats = stats,
    };
    gboolean ok = FALSE;
    b.data = g_malloc(b.cap);

    *end = STORE_STREAM_CUT;
    if (!store_stream_read_header(&b, end, error))
        goto out;
    if (!stats->header_ok) { /* end of file inside the header */
        ok = TRUE;
        goto out;
    }

    for (;;) {
        uint64_t offset = stats->stream_bytes - store_buf_avail(&b);
        hl_rec_header rh;

        if (!store_buf_fill(&b, sizeof rh, error))
            goto out;
        if (store_buf_avail(&b) < sizeof rh) {
            *end = store_buf_avail(&b) == 0 ? STORE_STREAM_EOF : STORE_STREAM_CUT;
            break;
        }
        memcpy(&rh, b.data + b.start, sizeof rh);
        if (rh.size > HL_REC_MAX_PAYLOAD) {
            g_set_error(error, STORE_ERROR, STORE_ERROR_STREAM,
                        "corrupt record stream at byte %" PRIu64 ": record size %" PRIu32
                        " exceeds the %u-byte limit",
                        offset, rh.size, HL_REC_MAX_PAYLOAD);
            goto out;
        }
        if (!store_buf_fill(&b, sizeof rh + rh.size, error))
            goto out;
        if (store_buf_avail(&b) < sizeof rh + rh.size) {
            *end = STORE_STREAM_CUT;
            break;
        }
        const uint8_t *payload = b.data + b.start + sizeof rh;
        b.start += sizeof rh + rh.size;
        stats->records_read++;

        const store_record_def *def = store_record_def_get(rh.type);
        if (def == NULL) {
            stats->records_skipped_unknown++;
            continue;
        }
        store_record rec;
        if (!store_stream_decode(rh.type, payload, rh.size, &rec, error)) {
            g_prefix_error(error, "corrupt record stream at byte %" PRIu64 ": ", offset);
            goto out;
        }
        if (!apply(apply_ctx, &rec, error)) {
            /* a record the apply found corrupt (the packed survivors are checked there) */
            if (error != NULL && g_error_matches(*error, STORE_ERROR, STORE_ERROR_STREAM))
                g_prefix_error(error, "corrupt record stream at byte %" PRIu64 ": ", offset);
            goto out;
        }
        if (rh.type == HL_REC_RUN_END) {
            *end = STORE_STREAM_RUN_END;
            break;
        }
    }
    ok = TRUE;
out:
    g_free(b.data);
    return ok;
}
