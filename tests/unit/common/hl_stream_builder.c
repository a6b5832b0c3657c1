/* hl_stream_builder.c — see hl_stream_builder.h. */
#define _GNU_SOURCE /* memfd_create */
#include "tests/unit/common/hl_stream_builder.h"

#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

struct hl_sb {
    GByteArray *bytes;
    uint32_t batch_limit;
    uint64_t allocs; /* allocations so far (counters.allocs_seen of the short forms) */

    /* The collector's part for hl_sb_alloc / hl_sb_fate: allocations not yet counted, by id. */
    GArray *young;        /* hl_sb_young, in hl_sb_alloc order */
    GHashTable *young_at; /* id → index in young + 1 */
    gboolean gc_open;     /* between hl_sb_gc_start and hl_sb_gc_end */
    gboolean young_sent;  /* the open GC's counts and survivors were written */
    uint32_t open_gc, last_gc;
    uint64_t open_first_id_after;

    /* The open gathered record: type 0 when none. */
    uint16_t group_type;
    uint32_t group_gc;
    uint32_t group_count;
    GByteArray *group;       /* the items */
    gboolean packed_survivors; /* GC_SURVIVORS go out as GC_SURVIVORS_PACKED */

    /* Items of the snapshot started last, for the short hl_sb_snapshot_end. */
    uint32_t snap_id;
    uint64_t snap_objects, snap_refs, snap_roots;
};

typedef struct hl_sb_young {
    uint64_t id, size;
    uint32_t type_id, os_tid;
    int fate; /* -1: none given */
} hl_sb_young;

hl_sb *hl_sb_new_empty(void)
{
    hl_sb *sb = g_new0(hl_sb, 1);
    sb->young = g_array_new(FALSE, FALSE, sizeof(hl_sb_young));
    sb->young_at = g_hash_table_new_full(g_int64_hash, g_int64_equal, g_free, NULL);
    sb->bytes = g_byte_array_new();
    sb->group = g_byte_array_new();
    sb->batch_limit = 4096;
    return sb;
}

hl_sb *hl_sb_new(void)
{
    hl_sb *sb = hl_sb_new_empty();
    hl_sb_header(sb, HL_STREAM_MAGIC, HL_STREAM_VERSION);
    return sb;
}

void hl_sb_free(hl_sb *sb)
{
    if (sb == NULL)
        return;
    g_byte_array_unref(sb->bytes);
    g_byte_array_unref(sb->group);
    g_array_unref(sb->young);
    g_hash_table_unref(sb->young_at);
    g_free(sb);
}

void hl_sb_set_batch_limit(hl_sb *sb, uint32_t items)
{
    hl_sb_flush(sb);
    sb->batch_limit = MAX(items, 1u);
}

void hl_sb_set_packed_survivors(hl_sb *sb, gboolean packed)
{
    hl_sb_flush(sb);
    sb->packed_survivors = packed;
}

void hl_sb_raw(hl_sb *sb, const void *bytes, size_t len)
{
    hl_sb_flush(sb);
    g_byte_array_append(sb->bytes, bytes, (guint)len);
}

void hl_sb_header(hl_sb *sb, const char *magic8, uint32_t version)
{
    hl_stream_header h = {.version = version};
    memcpy(h.magic, magic8, sizeof h.magic);
    hl_sb_raw(sb, &h, sizeof h);
}

/* Appends a record header and payload without closing the open group (used to write it). */
static void hl_sb_put_record(hl_sb *sb, uint16_t type, uint32_t declared, const void *a,
                             uint32_t a_len, const void *b, uint32_t b_len)
{
    hl_rec_header h = {.type = type, .size = declared};
    g_byte_array_append(sb->bytes, (const guint8 *)&h, sizeof h);
    if (a_len > 0)
        g_byte_array_append(sb->bytes, a, a_len);
    if (b_len > 0)
        g_byte_array_append(sb->bytes, b, b_len);
}

void hl_sb_flush(hl_sb *sb)
{
    if (sb->group_type == 0)
        return;
    uint32_t n = sb->group_count;
    union {
        hl_alloc_counts counts;
        hl_gc_survivors survivors;
        hl_gc_deaths deaths;
        hl_gc_promotions promotions;
        hl_discovered_head discovered;
        hl_gc_handle_kinds kinds;
        hl_gc_handles_freed freed;
        hl_snapshot_batch snapshot;
    } h;
    uint32_t h_len = 0;
    memset(&h, 0, sizeof h);
    switch (sb->group_type) {
    case HL_REC_ALLOC_COUNTS:
        h.counts = (hl_alloc_counts){.gc = sb->group_gc, .count = n};
        h_len = sizeof h.counts;
        break;
    case HL_REC_GC_SURVIVORS:
        h.survivors = (hl_gc_survivors){.gc = sb->group_gc, .count = n};
        h_len = sizeof h.survivors;
        break;
    case HL_REC_GC_DEATHS:
        h.deaths = (hl_gc_deaths){.gc = sb->group_gc, .count = n};
        h_len = sizeof h.deaths;
        break;
    case HL_REC_GC_PROMOTIONS:
        h.promotions = (hl_gc_promotions){.gc = sb->group_gc, .count = n};
        h_len = sizeof h.promotions;
        break;
    case HL_REC_DISCOVERED:
        h.discovered = (hl_discovered_head){.gc = sb->group_gc, .count = n};
        h_len = sizeof h.discovered;
        break;
    case HL_REC_GC_HANDLE_KINDS:
        h.kinds = (hl_gc_handle_kinds){.gc = sb->group_gc, .count = n};
        h_len = sizeof h.kinds;
        break;
    case HL_REC_GC_HANDLES_FREED:
        h.freed = (hl_gc_handles_freed){.gc = sb->group_gc, .count = n};
        h_len = sizeof h.freed;
        break;
    case HL_REC_SNAPSHOT_OBJECTS:
    case HL_REC_SNAPSHOT_REFS:
    case HL_REC_SNAPSHOT_REF_FIELDS:
    case HL_REC_SNAPSHOT_STATICS:
    case HL_REC_SNAPSHOT_STRINGS:
    case HL_REC_SNAPSHOT_COLLECTIONS:
    case HL_REC_SNAPSHOT_ROOTS:
    case HL_REC_SNAPSHOT_ROOT_THREADS:
        /* group_gc holds the snapshot number for these */
        h.snapshot = (hl_snapshot_batch){.snapshot = sb->group_gc, .count = n};
        h_len = sizeof h.snapshot;
        break;
    default:
        g_assert_not_reached();
    }
    if (sb->group_type == HL_REC_GC_SURVIVORS && sb->packed_survivors) {
        /* The collector's encoding (hl_survivors_pack), the whole group in one record. */
        uint8_t *packed = g_malloc((size_t)n * HL_SURVIVOR_PACKED_MAX + 1);
        size_t taken, bytes = hl_survivors_pack((const hl_survivor *)sb->group->data, n, n,
                                                packed, (size_t)n * HL_SURVIVOR_PACKED_MAX,
                                                &taken);
        g_assert(taken == n);
        hl_sb_put_record(sb, HL_REC_GC_SURVIVORS_PACKED, h_len + (uint32_t)bytes, &h, h_len,
                         packed, (uint32_t)bytes);
        g_free(packed);
    } else {
        hl_sb_put_record(sb, sb->group_type, h_len + sb->group->len, &h, h_len, sb->group->data,
                         sb->group->len);
    }
    sb->group_type = 0;
    sb->group_count = 0;
    g_byte_array_set_size(sb->group, 0);
}

/* Opens (or continues) a gathered record of `type` for GC (or snapshot) `gc`. */
static void hl_sb_group(hl_sb *sb, uint16_t type, uint32_t gc, const void *item, uint32_t len)
{
    gboolean same = sb->group_type == type && sb->group_gc == gc &&
                    sb->group_count < sb->batch_limit;
    if (!same) {
        hl_sb_flush(sb);
        sb->group_type = type;
        sb->group_gc = gc;
    }
    g_byte_array_append(sb->group, item, len);
    sb->group_count++;
}

void hl_sb_record_sized(hl_sb *sb, uint16_t type, uint32_t declared_size, const void *payload,
                        uint32_t size)
{
    hl_sb_flush(sb);
    hl_sb_put_record(sb, type, declared_size, payload, size, NULL, 0);
}

void hl_sb_record(hl_sb *sb, uint16_t type, const void *payload, uint32_t size)
{
    hl_sb_record_sized(sb, type, size, payload, size);
}

/* A record made of a fixed struct followed by hl_str strings. */
static void hl_sb_record_strs(hl_sb *sb, uint16_t type, const void *fixed, uint32_t fixed_len,
                              const char *const *strs, int n_strs)
{
    g_autoptr(GByteArray) p = g_byte_array_new();
    g_byte_array_append(p, fixed, fixed_len);
    for (int i = 0; i < n_strs; i++) {
        const char *s = strs[i] != NULL ? strs[i] : "";
        uint32_t len = (uint32_t)strlen(s);
        g_byte_array_append(p, (const guint8 *)&len, sizeof len);
        g_byte_array_append(p, (const guint8 *)s, len);
    }
    hl_sb_record(sb, type, p->data, p->len);
}

void hl_sb_run_start_full(hl_sb *sb, const hl_run_start *rs, const char *command,
                          const char *runtime_version, const char *producer)
{
    const char *strs[] = {command, runtime_version, producer};
    hl_sb_record_strs(sb, HL_REC_RUN_START, rs, sizeof *rs, strs, 3);
}

void hl_sb_run_start(hl_sb *sb, uint32_t pid, const char *command)
{
    hl_run_start rs = {
        .pid = pid,
        .mode = HL_MODE_FULL,
        .start_unix_ns = HL_SB_START_UNIX_NS,
        .start_mono_ns = HL_SB_MONO_NS,
        .pointer_size = 8,
    };
    hl_sb_run_start_full(sb, &rs, command, "10.0.0", "heaplens test");
}

void hl_sb_type_full(hl_sb *sb, const hl_type *t, const char *name)
{
    hl_sb_record_strs(sb, HL_REC_TYPE, t, sizeof *t, &name, 1);
}

void hl_sb_type(hl_sb *sb, uint32_t type_id, const char *name)
{
    hl_type t = {.type_id = type_id, .class_id = 0x7f0000000000u + type_id * 0x40u};
    hl_sb_type_full(sb, &t, name);
}

void hl_sb_thread(hl_sb *sb, uint32_t os_tid, uint64_t thread_id, const char *name)
{
    hl_thread t = {.os_tid = os_tid, .thread_id = thread_id};
    hl_sb_record_strs(sb, HL_REC_THREAD, &t, sizeof t, &name, 1);
}

void hl_sb_checkpoint(hl_sb *sb, const char *name, uint32_t after_gc, uint32_t os_tid,
                      uint64_t time_ns)
{
    hl_checkpoint c = {.after_gc = after_gc, .os_tid = os_tid, .time_ns = time_ns};
    hl_sb_record_strs(sb, HL_REC_CHECKPOINT, &c, sizeof c, &name, 1);
}

void hl_sb_alloc(hl_sb *sb, uint64_t id, uint32_t type_id, uint64_t size, uint32_t os_tid)
{
    hl_sb_young y = {.id = id, .size = size, .type_id = type_id, .os_tid = os_tid, .fate = -1};
    gpointer at = g_hash_table_lookup(sb->young_at, &id);
    if (at != NULL) { /* the same id again: the later allocation wins */
        g_array_index(sb->young, hl_sb_young, GPOINTER_TO_UINT(at) - 1) = y;
    } else {
        g_array_append_val(sb->young, y);
        uint64_t *key = g_new(uint64_t, 1);
        *key = id;
        g_hash_table_insert(sb->young_at, key, GUINT_TO_POINTER(sb->young->len));
    }
    sb->allocs++;
}

void hl_sb_alloc_count(hl_sb *sb, uint32_t gc, const hl_alloc_count *c)
{
    hl_sb_group(sb, HL_REC_ALLOC_COUNTS, gc, c, sizeof *c);
    sb->allocs += c->count;
}

void hl_sb_survivor(hl_sb *sb, uint32_t gc, const hl_survivor *v)
{
    hl_sb_group(sb, HL_REC_GC_SURVIVORS, gc, v, sizeof *v);
}

/* Orders counts by key, so streams are repeatable. */
static gint hl_sb_count_cmp(gconstpointer a, gconstpointer b)
{
    const hl_alloc_count *x = a, *y = b;
    if (x->type_id != y->type_id)
        return x->type_id < y->type_id ? -1 : 1;
    if (x->os_tid != y->os_tid)
        return x->os_tid < y->os_tid ? -1 : 1;
    return x->heap < y->heap ? -1 : x->heap > y->heap;
}

/* The key of a count (type, thread, heap) for a hash table. */
static guint hl_sb_count_hash(gconstpointer p)
{
    const hl_alloc_count *c = p;
    return c->type_id * 2654435761u ^ c->os_tid * 40503u ^ c->heap;
}

static gboolean hl_sb_count_equal(gconstpointer a, gconstpointer b)
{
    return hl_sb_count_cmp(a, b) == 0;
}

static gint hl_sb_young_cmp(gconstpointer a, gconstpointer b)
{
    const hl_sb_young *x = a, *y = b;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* Plays the collector: the hl_sb_alloc allocations below `end` become interval `gc`'s
 * ALLOC_COUNTS (heap and fate from hl_sb_fate; none given: heap HL_GEN_NONE, died) and, for
 * `survivors`, the GC_SURVIVORS of those whose fate says alive. They are forgotten then. */
static void hl_sb_young_send(hl_sb *sb, uint32_t gc, uint64_t end, gboolean survivors)
{
    g_autoptr(GArray) counts = g_array_new(FALSE, FALSE, sizeof(hl_alloc_count));
    g_autoptr(GArray) alive = g_array_new(FALSE, FALSE, sizeof(hl_sb_young));
    g_autoptr(GArray) keep = g_array_new(FALSE, FALSE, sizeof(hl_sb_young));
    g_autoptr(GHashTable) index =
        g_hash_table_new_full(hl_sb_count_hash, hl_sb_count_equal, g_free, NULL);

    for (guint i = 0; i < sb->young->len; i++) {
        const hl_sb_young *y = &g_array_index(sb->young, hl_sb_young, i);
        if (y->id >= end) {
            g_array_append_val(keep, *y);
            continue;
        }
        uint32_t heap = y->fate >= 0 ? HL_FATE_HEAP(y->fate) : HL_GEN_NONE;
        gboolean lives = survivors && y->fate >= 0 && HL_FATE_GEN(y->fate) != HL_GEN_NONE;
        hl_alloc_count key = {.type_id = y->type_id, .os_tid = y->os_tid, .heap = heap};
        guint at = GPOINTER_TO_UINT(g_hash_table_lookup(index, &key));
        if (at == 0) {
            g_array_append_val(counts, key);
            at = counts->len;
            g_hash_table_insert(index, g_memdup2(&key, sizeof key), GUINT_TO_POINTER(at));
        }
        hl_alloc_count *c = &g_array_index(counts, hl_alloc_count, at - 1);
        c->count++;
        c->bytes += y->size;
        if (lives) {
            c->survived++;
            c->survived_bytes += y->size;
            g_array_append_val(alive, *y);
        }
    }
    g_array_sort(counts, hl_sb_count_cmp);
    for (guint j = 0; j < counts->len; j++)
        hl_sb_group(sb, HL_REC_ALLOC_COUNTS, gc, &g_array_index(counts, hl_alloc_count, j),
                    sizeof(hl_alloc_count));
    g_array_sort(alive, hl_sb_young_cmp);
    for (guint j = 0; j < alive->len; j++) {
        const hl_sb_young *y = &g_array_index(alive, hl_sb_young, j);
        hl_survivor v = {
            .id = y->id,
            .size = y->size,
            .type_id = y->type_id,
            .os_tid = y->os_tid,
            .heap = (uint8_t)HL_FATE_HEAP(y->fate),
            .generation = (uint8_t)HL_FATE_GEN(y->fate),
        };
        hl_sb_group(sb, HL_REC_GC_SURVIVORS, gc, &v, sizeof v);
    }
    hl_sb_flush(sb);
    g_array_set_size(sb->young, 0);
    g_hash_table_remove_all(sb->young_at);
    for (guint i = 0; i < keep->len; i++) {
        const hl_sb_young *y = &g_array_index(keep, hl_sb_young, i);
        g_array_append_val(sb->young, *y);
        uint64_t *k = g_new(uint64_t, 1);
        *k = y->id;
        g_hash_table_insert(sb->young_at, k, GUINT_TO_POINTER(sb->young->len));
    }
}

/* Inside a GC, before its first record after the fates: the GC's counts and survivors. */
static void hl_sb_young_send_open(hl_sb *sb)
{
    if (!sb->gc_open || sb->young_sent)
        return;
    sb->young_sent = TRUE;
    hl_sb_young_send(sb, sb->open_gc, sb->open_first_id_after, TRUE);
}

static uint64_t hl_sb_gc_mono(uint32_t gc)
{
    return HL_SB_MONO_NS + (uint64_t)gc * 10000000u;
}

void hl_sb_gc_start_full(hl_sb *sb, const hl_gc_start *s)
{
    hl_sb_record(sb, HL_REC_GC_START, s, sizeof *s);
    sb->gc_open = TRUE;
    sb->young_sent = FALSE;
    sb->open_gc = s->gc;
    sb->open_first_id_after = s->first_id_after;
}

void hl_sb_gc_start(hl_sb *sb, uint32_t gc, uint32_t generation, gboolean induced,
                    uint64_t first_id_after)
{
    hl_gc_start s = {
        .gc = gc,
        .generation = generation,
        .reason = induced ? 1 : 0,
        .gc_reason = induced ? HL_GC_REASON_INDUCED : HL_GC_REASON_ALLOC_SMALL,
        .flags = HL_GC_START_REASON_KNOWN,
        .condemned_mask = ((1u << (generation + 1)) - 1u) | (generation == 2 ? 0x18u : 0u),
        .start_mono_ns = hl_sb_gc_mono(gc),
        .suspend_mono_ns = hl_sb_gc_mono(gc) - 10000u,
        .first_id_after = first_id_after,
    };
    hl_sb_gc_start_full(sb, &s);
}

void hl_sb_fate(hl_sb *sb, uint32_t gc G_GNUC_UNUSED, uint64_t id, uint8_t fate)
{
    gpointer at = g_hash_table_lookup(sb->young_at, &id);
    if (at != NULL)
        g_array_index(sb->young, hl_sb_young, GPOINTER_TO_UINT(at) - 1).fate = fate;
}

void hl_sb_death(hl_sb *sb, uint32_t gc, uint64_t id)
{
    hl_sb_young_send_open(sb);
    hl_sb_group(sb, HL_REC_GC_DEATHS, gc, &id, sizeof id);
}

void hl_sb_promotion(hl_sb *sb, uint32_t gc, uint64_t id, uint32_t generation)
{
    hl_sb_young_send_open(sb);
    hl_promotion p = {.id = id, .generation = generation};
    hl_sb_group(sb, HL_REC_GC_PROMOTIONS, gc, &p, sizeof p);
}

void hl_sb_discovered(hl_sb *sb, uint32_t gc, uint64_t id, uint32_t type_id, uint64_t size,
                      uint32_t generation)
{
    hl_sb_young_send_open(sb);
    hl_discovered d = {.id = id, .size = size, .type_id = type_id, .generation = generation};
    hl_sb_group(sb, HL_REC_DISCOVERED, gc, &d, sizeof d);
}

void hl_sb_handle_created(hl_sb *sb, uint64_t handle_id, uint64_t object_id, uint32_t after_gc)
{
    hl_handle_created h = {.handle_id = handle_id, .object_id = object_id, .after_gc = after_gc};
    hl_sb_record(sb, HL_REC_HANDLE_CREATED, &h, sizeof h);
}

void hl_sb_handle_destroyed(hl_sb *sb, uint64_t handle_id, uint32_t after_gc)
{
    hl_handle_destroyed h = {.handle_id = handle_id, .after_gc = after_gc};
    hl_sb_record(sb, HL_REC_HANDLE_DESTROYED, &h, sizeof h);
}

void hl_sb_handle_kind(hl_sb *sb, uint32_t gc, uint64_t handle_id, uint32_t kind)
{
    hl_sb_young_send_open(sb);
    hl_handle_kind k = {.handle_id = handle_id, .kind = kind};
    hl_sb_group(sb, HL_REC_GC_HANDLE_KINDS, gc, &k, sizeof k);
}

void hl_sb_handle_freed(hl_sb *sb, uint32_t gc, uint64_t handle_id)
{
    hl_sb_young_send_open(sb);
    hl_sb_group(sb, HL_REC_GC_HANDLES_FREED, gc, &handle_id, sizeof handle_id);
}

void hl_sb_snapshot_start(hl_sb *sb, uint32_t snapshot, uint32_t gc, uint32_t trigger)
{
    hl_sb_snapshot_start_commands(sb, snapshot, gc, trigger, 0);
}

void hl_sb_snapshot_start_commands(hl_sb *sb, uint32_t snapshot, uint32_t gc, uint32_t trigger,
                                   uint32_t commands)
{
    hl_sb_young_send_open(sb);
    hl_snapshot_start s = {.snapshot = snapshot, .gc = gc, .trigger = trigger,
                           .commands = commands};
    hl_sb_record(sb, HL_REC_SNAPSHOT_START, &s, sizeof s);
    sb->snap_id = snapshot;
    sb->snap_objects = sb->snap_refs = sb->snap_roots = 0;
}

void hl_sb_snapshot_object(hl_sb *sb, uint32_t snapshot, uint64_t id, uint32_t generation,
                           uint32_t flags)
{
    hl_snapshot_object o = {.id = id, .generation = generation, .flags = flags};
    hl_sb_group(sb, HL_REC_SNAPSHOT_OBJECTS, snapshot, &o, sizeof o);
    sb->snap_objects += snapshot == sb->snap_id;
}

void hl_sb_snapshot_ref(hl_sb *sb, uint32_t snapshot, uint64_t from, uint64_t to)
{
    hl_snapshot_ref r = {.from = from, .to = to};
    hl_sb_group(sb, HL_REC_SNAPSHOT_REFS, snapshot, &r, sizeof r);
    sb->snap_refs += snapshot == sb->snap_id;
}

void hl_sb_snapshot_ref_field(hl_sb *sb, uint32_t snapshot, uint32_t field)
{
    hl_sb_group(sb, HL_REC_SNAPSHOT_REF_FIELDS, snapshot, &field, sizeof field);
}

void hl_sb_static(hl_sb *sb, uint32_t static_id, uint32_t type_id, const char *name)
{
    hl_static f = {.static_id = static_id, .type_id = type_id};
    hl_sb_record_strs(sb, HL_REC_STATIC, &f, sizeof f, &name, 1);
}

void hl_sb_static_thread(hl_sb *sb, uint32_t static_id, uint32_t os_tid)
{
    hl_static_thread t = {.static_id = static_id, .os_tid = os_tid};
    hl_sb_record(sb, HL_REC_STATIC_THREAD, &t, sizeof t);
}

void hl_sb_root_method(hl_sb *sb, uint64_t function_id, const char *name)
{
    hl_root_method m = {.function_id = function_id};
    hl_sb_record_strs(sb, HL_REC_ROOT_METHOD, &m, sizeof m, &name, 1);
}

void hl_sb_snapshot_collection(hl_sb *sb, uint32_t snapshot, uint64_t object_id, uint32_t count,
                               uint32_t capacity)
{
    hl_snapshot_collection v = {.object_id = object_id, .count = count, .capacity = capacity};
    hl_sb_group(sb, HL_REC_SNAPSHOT_COLLECTIONS, snapshot, &v, sizeof v);
}

void hl_sb_snapshot_static(hl_sb *sb, uint32_t snapshot, uint64_t object_id, uint32_t field,
                           uint32_t static_id)
{
    hl_snapshot_static v = {.object_id = object_id, .field = field, .static_id = static_id};
    hl_sb_group(sb, HL_REC_SNAPSHOT_STATICS, snapshot, &v, sizeof v);
}

void hl_sb_snapshot_string(hl_sb *sb, uint32_t snapshot, uint64_t object_id, const char *text,
                           uint32_t kept)
{
    hl_snapshot_string v = {.object_id = object_id, .length = (uint32_t)strlen(text),
                            .n_chars = kept, .hash = 0xcbf29ce484222325ull};
    for (size_t i = 0; text[i]; i++) {
        /* FNV-1a 64 over the UTF-16 little-endian bytes: the character, then 0 */
        v.hash = (v.hash ^ (uint8_t)text[i]) * 0x100000001b3ull;
        v.hash = v.hash * 0x100000001b3ull;
        if (i < kept && i < HL_STRING_CHARS)
            v.chars[i] = (uint16_t)text[i];
    }
    hl_sb_group(sb, HL_REC_SNAPSHOT_STRINGS, snapshot, &v, sizeof v);
}

void hl_sb_field(hl_sb *sb, uint32_t type_id, uint32_t field, const char *name)
{
    hl_field f = {.type_id = type_id, .field = field};
    hl_sb_record_strs(sb, HL_REC_FIELD, &f, sizeof f, &name, 1);
}

void hl_sb_snapshot_root(hl_sb *sb, uint32_t snapshot, uint64_t object_id, uint32_t kind,
                         uint32_t flags, uint64_t root_id)
{
    hl_snapshot_root r = {.object_id = object_id, .root_id = root_id, .kind = kind, .flags = flags};
    hl_sb_group(sb, HL_REC_SNAPSHOT_ROOTS, snapshot, &r, sizeof r);
    sb->snap_roots += snapshot == sb->snap_id;
}

void hl_sb_snapshot_root_thread(hl_sb *sb, uint32_t snapshot, uint64_t object_id,
                                uint32_t os_tid)
{
    hl_snapshot_root_thread t = {.object_id = object_id, .os_tid = os_tid};
    hl_sb_group(sb, HL_REC_SNAPSHOT_ROOT_THREADS, snapshot, &t, sizeof t);
}

void hl_sb_snapshot_end_full(hl_sb *sb, const hl_snapshot_end *e)
{
    hl_sb_record(sb, HL_REC_SNAPSHOT_END, e, sizeof *e);
}

void hl_sb_snapshot_end(hl_sb *sb, uint32_t snapshot, uint32_t gc)
{
    hl_snapshot_end e = {
        .snapshot = snapshot,
        .gc = gc,
        .objects = sb->snap_objects,
        .refs = sb->snap_refs,
        .roots = sb->snap_roots,
    };
    hl_sb_snapshot_end_full(sb, &e);
}

void hl_sb_gc_end_full(hl_sb *sb, const hl_gc_end *e)
{
    hl_sb_young_send_open(sb);
    hl_sb_record(sb, HL_REC_GC_END, e, sizeof *e);
    sb->gc_open = FALSE;
    sb->last_gc = e->gc;
}

void hl_sb_gc_end(hl_sb *sb, uint32_t gc, uint32_t flags)
{
    hl_gc_end e = {
        .gc = gc,
        .flags = flags,
        .end_mono_ns = hl_sb_gc_mono(gc) + 1000000u,
        .resume_mono_ns = hl_sb_gc_mono(gc) + 1010000u,
        .counters = {.allocs_seen = sb->allocs},
    };
    hl_sb_gc_end_full(sb, &e);
}

void hl_sb_tail(hl_sb *sb)
{
    if (sb->young->len > 0)
        hl_sb_young_send(sb, sb->last_gc + 1, UINT64_MAX, FALSE);
}

void hl_sb_run_end_full(hl_sb *sb, const hl_run_end *e)
{
    hl_sb_tail(sb);
    hl_sb_record(sb, HL_REC_RUN_END, e, sizeof *e);
}

void hl_sb_run_end(hl_sb *sb, uint32_t gcs)
{
    hl_run_end e = {
        .end_unix_ns = HL_SB_START_UNIX_NS + 1000000000u,
        .end_mono_ns = HL_SB_MONO_NS + 1000000000u,
        .gcs = gcs,
        .shutdown_mono_ns = HL_SB_MONO_NS + 1000000000u - 5000000u,
        .counters = {.allocs_seen = sb->allocs},
    };
    hl_sb_run_end_full(sb, &e);
}

size_t hl_sb_len(hl_sb *sb)
{
    hl_sb_flush(sb);
    return sb->bytes->len;
}

const uint8_t *hl_sb_bytes(hl_sb *sb, size_t *len)
{
    hl_sb_flush(sb);
    *len = sb->bytes->len;
    return sb->bytes->data;
}

int hl_sb_memfd(hl_sb *sb, size_t len)
{
    size_t total;
    const uint8_t *p = hl_sb_bytes(sb, &total);
    size_t n = MIN(len, total), done = 0;
    int fd = memfd_create("hl_stream", MFD_CLOEXEC);

    while (fd >= 0 && done < n) {
        ssize_t w = write(fd, p + done, n - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            int saved = errno;
            close(fd);
            errno = saved;
            fd = -1;
            break;
        }
        done += (size_t)w;
    }
    if (fd >= 0 && lseek(fd, 0, SEEK_SET) != 0) {
        close(fd);
        fd = -1;
    }
    return fd;
}

gboolean hl_sb_write_db_prefix(hl_sb *sb, size_t len, const char *path, const char *command,
                               store_summary *summary, GError **error)
{
    gboolean ok = FALSE;
    GError *ingest_error = NULL;
    int fd = hl_sb_memfd(sb, len);
    store_writer *w = NULL;

    if (fd < 0) {
        g_set_error(error, STORE_ERROR, STORE_ERROR_IO, "memfd: %s", g_strerror(errno));
        goto out;
    }
    w = store_writer_create(path, command, error);
    if (w == NULL)
        goto out;
    gboolean ingested = store_writer_ingest_fd(w, fd, &ingest_error);
    gboolean finished = store_writer_finish(g_steal_pointer(&w), summary,
                                            ingested ? error : NULL);
    if (!ingested)
        g_propagate_error(error, g_steal_pointer(&ingest_error));
    ok = ingested && finished;
out:
    if (fd >= 0)
        close(fd);
    return ok;
}

gboolean hl_sb_write_db(hl_sb *sb, const char *path, const char *command, store_summary *summary,
                        GError **error)
{
    return hl_sb_write_db_prefix(sb, SIZE_MAX, path, command, summary, error);
}

void write_all(int fd, const void *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        g_assert(w > 0);
        p = (const uint8_t *)p + w;
        n -= (size_t)w;
    }
}
