/* hl_stream_builder.h — builds heaplens record streams (wire/hl_wire.h) in memory, for tests.
 *
 * A test describes a recording call by call, in stream order, and gets the bytes back:
 *
 *     hl_sb *sb = hl_sb_new();                       // stream header already written
 *     hl_sb_run_start(sb, 4242, "dotnet App.dll");
 *     hl_sb_type(sb, 1, "System.String");
 *     hl_sb_alloc(sb, 1, 1, 32, 100);                // id 1: a 32-byte String on thread 100
 *     hl_sb_alloc(sb, 2, 1, 48, 100);
 *     hl_sb_gc_start(sb, 1, 0, FALSE, 3);            // GC 1, gen0, ids >= 3 come after it
 *     hl_sb_fate(sb, 1, 1, HL_FATE(HL_GEN_0, HL_GEN_1));   // id 1 survives into gen 1
 *     hl_sb_fate(sb, 1, 2, HL_FATE(HL_GEN_0, HL_GEN_NONE)); // id 2 dies
 *     hl_sb_gc_end(sb, 1, HL_GC_FLAG_COMPACTING);
 *     hl_sb_run_end(sb, 1);
 *     hl_sb_write_db(sb, "app.db", NULL, NULL, &error);  // through the real writer
 *     hl_sb_free(sb);
 *
 * Allocations: the builder plays the collector. hl_sb_alloc and hl_sb_fate write nothing; the
 * allocations of GC n's interval (ids below its first_id_after) become, right before GC n's
 * first record after the fates (a death, promotion, discovered object, handle kind, snapshot or
 * its GC_END), its ALLOC_COUNTS — per (type, thread, heap), heap from the fate — and the
 * GC_SURVIVORS of those whose fate says alive, in id order. An allocation without a fate is
 * counted with heap HL_GEN_NONE and died. What no GC took goes out as the tail interval's
 * ALLOC_COUNTS (last GC_END's gc + 1) right before RUN_END (or at hl_sb_tail). To write the
 * records directly (wrong ones too), use hl_sb_alloc_count and hl_sb_survivor.
 *
 * Consecutive calls that add items of one kind are gathered into one record of at most
 * hl_sb_set_batch_limit items: hl_sb_alloc_count (ALLOC_COUNTS), hl_sb_survivor
 * (GC_SURVIVORS), hl_sb_death (GC_DEATHS), hl_sb_promotion (GC_PROMOTIONS), hl_sb_discovered
 * (DISCOVERED), hl_sb_handle_kind (GC_HANDLE_KINDS) and hl_sb_snapshot_object / _ref / _root
 * (SNAPSHOT_OBJECTS / REFS / ROOTS of one snapshot); any other call closes the open record
 * first. Nothing is validated: tests may build wrong streams on purpose, and hl_sb_record /
 * hl_sb_raw write anything at all.
 *
 * A heap snapshot, inside its GC (between hl_sb_gc_start and hl_sb_gc_end):
 *
 *     hl_sb_snapshot_start(sb, 1, 3, HL_SNAPSHOT_INDUCED);   // snapshot 1 of GC 3
 *     hl_sb_snapshot_object(sb, 1, 10, HL_GEN_2, 0);
 *     hl_sb_snapshot_object(sb, 1, 11, HL_GEN_1, 0);
 *     hl_sb_snapshot_ref(sb, 1, 10, 11);                     // 10 has a field pointing to 11
 *     hl_sb_snapshot_root(sb, 1, 10, HL_ROOT_HANDLE, 0, 0x7f00);  // root: strong handle 0x7f00
 *     hl_sb_snapshot_end(sb, 1, 3);                          // counts = the items above
 *
 * The short forms fill the remaining fields with fixed values so that results are repeatable:
 *   run start   mode full, start_unix_ns = HL_SB_START_UNIX_NS, start_mono_ns = HL_SB_MONO_NS,
 *               runtime "10.0.0", producer "heaplens test"
 *   GC g        start_mono_ns = HL_SB_MONO_NS + g * 10 ms, suspend 10 us before it,
 *               end 1 ms after start, resume 10 us after end (so pause_ns = 1,020,000);
 *               sizes and survived/moved bytes 0; counters.allocs_seen = allocations so far
 *   run end     end_unix_ns = start + 1 s, end_mono_ns = HL_SB_MONO_NS + 1 s, shutdown 5 ms
 *               before the end, same counters
 *   GC end      roots = pinned_roots = 0
 *   snapshot    end: objects / refs / roots = the items added for the snapshot started last
 *               (since its hl_sb_snapshot_start),
 *               bytes, model_missing, model_extra, frozen, unresolved, walk_ns 0
 * Use the _full forms to set every field. All functions abort on out-of-memory only.
 */
#ifndef HEAPLENS_HL_STREAM_BUILDER_H
#define HEAPLENS_HL_STREAM_BUILDER_H

#include "store/store.h"
#include "wire/hl_wire.h"

#include <glib.h>
#include <stddef.h>
#include <stdint.h>

#define HL_SB_START_UNIX_NS (UINT64_C(1800000000) * 1000000000u + 123000000u) /* 2027-01-15T08:00:00.123Z */
#define HL_SB_MONO_NS UINT64_C(1000000000)

typedef struct hl_sb hl_sb;

/* A builder holding a valid stream header (HL_STREAM_MAGIC, HL_STREAM_VERSION). */
hl_sb *hl_sb_new(void);
/* A builder holding nothing: write a header yourself (hl_sb_header, hl_sb_raw). */
hl_sb *hl_sb_new_empty(void);
void hl_sb_free(hl_sb *sb); /* accepts NULL */

/* Items per gathered record (default 4096, at least 1). */
void hl_sb_set_batch_limit(hl_sb *sb, uint32_t items);

/* From now on, GC_SURVIVORS records (hl_sb_survivor and those the builder makes from
 * hl_sb_alloc / hl_sb_fate) go out as GC_SURVIVORS_PACKED, encoded as the collector encodes
 * them (hl_survivors_pack), a record per gathered group. Default: GC_SURVIVORS. */
void hl_sb_set_packed_survivors(hl_sb *sb, gboolean packed);

/* A stream header with any magic (8 bytes are copied, no NUL needed) and version. */
void hl_sb_header(hl_sb *sb, const char *magic8, uint32_t version);

void hl_sb_run_start(hl_sb *sb, uint32_t pid, const char *command);
void hl_sb_run_start_full(hl_sb *sb, const hl_run_start *rs, const char *command,
                          const char *runtime_version, const char *producer);

void hl_sb_type(hl_sb *sb, uint32_t type_id, const char *name);
void hl_sb_type_full(hl_sb *sb, const hl_type *t, const char *name);

/* Names a thread; name may be "" (unnamed). */
void hl_sb_thread(hl_sb *sb, uint32_t os_tid, uint64_t thread_id, const char *name);
/* CHECKPOINT: the program's checkpoint `name`, after `after_gc` GCs, at `time_ns`. */
void hl_sb_checkpoint(hl_sb *sb, const char *name, uint32_t after_gc, uint32_t os_tid,
                      uint64_t time_ns);

/* The young fate of an allocation, as hl_sb_fate takes it: its heap (HL_GEN_0, _LOH, _POH,
 * _NONGC, _NONE) and its generation after its first GC (HL_GEN_NONE: died). */
#define HL_FATE(heap, gen_after) ((uint8_t)(((gen_after) << 4) | (heap)))
#define HL_FATE_HEAP(f) ((f) & 0x0f)
#define HL_FATE_GEN(f) (((f) >> 4) & 0x0f)

/* One allocation, held until its GC (or the tail) counts it (see above). */
void hl_sb_alloc(hl_sb *sb, uint64_t id, uint32_t type_id, uint64_t size, uint32_t os_tid);
/* One ALLOC_COUNTS entry of interval `gc`, gathered into the open ALLOC_COUNTS; adds c->count
 * to the allocations of the short forms' counters. */
void hl_sb_alloc_count(hl_sb *sb, uint32_t gc, const hl_alloc_count *c);
/* One GC_SURVIVORS entry of GC `gc`, gathered into the open GC_SURVIVORS. */
void hl_sb_survivor(hl_sb *sb, uint32_t gc, const hl_survivor *v);
/* Writes now, as the tail interval's ALLOC_COUNTS, the hl_sb_alloc allocations no GC took. */
void hl_sb_tail(hl_sb *sb);

void hl_sb_gc_start(hl_sb *sb, uint32_t gc, uint32_t generation, gboolean induced,
                    uint64_t first_id_after);
void hl_sb_gc_start_full(hl_sb *sb, const hl_gc_start *s);

/* The young fate of an hl_sb_alloc id (HL_FATE(heap, gen_after)) in the open GC; `gc` is
 * ignored (the GC that counts it is the one whose interval holds the id). */
void hl_sb_fate(hl_sb *sb, uint32_t gc, uint64_t id, uint8_t fate);
/* An older object that died in GC `gc`, gathered into the open GC_DEATHS. */
void hl_sb_death(hl_sb *sb, uint32_t gc, uint64_t id);
/* An older object now in `generation` (HL_GEN_*), gathered into the open GC_PROMOTIONS. */
void hl_sb_promotion(hl_sb *sb, uint32_t gc, uint64_t id, uint32_t generation);

/* An object first seen in GC `gc`'s heap walk (id >= HL_DISCOVERED_ID_BASE), alive after it in
 * `generation`; gathered into the open DISCOVERED record. */
void hl_sb_discovered(hl_sb *sb, uint32_t gc, uint64_t id, uint32_t type_id, uint64_t size,
                      uint32_t generation);

/* A GC handle created / destroyed (between GCs) when `after_gc` GCs had completed. object_id:
 * its initial target, 0 if none. */
void hl_sb_handle_created(hl_sb *sb, uint64_t handle_id, uint64_t object_id, uint32_t after_gc);
void hl_sb_handle_destroyed(hl_sb *sb, uint64_t handle_id, uint32_t after_gc);
/* The kind (HL_HANDLE_*) of a handle, learned in GC `gc`; gathered into the open GC_HANDLE_KINDS. */
void hl_sb_handle_kind(hl_sb *sb, uint32_t gc, uint64_t handle_id, uint32_t kind);
/* GC_HANDLES_FREED inside GC `gc`: the runtime freed `handle_id` during it (grouped). */
void hl_sb_handle_freed(hl_sb *sb, uint32_t gc, uint64_t handle_id);

/* Snapshot `snapshot` of GC `gc`, trigger HL_SNAPSHOT_*. Resets the item counts of the short
 * hl_sb_snapshot_end. */
void hl_sb_snapshot_start(hl_sb *sb, uint32_t snapshot, uint32_t gc, uint32_t trigger);
/* The same, saying how many snapshot commands it serves (hl_snapshot_start.commands). */
void hl_sb_snapshot_start_commands(hl_sb *sb, uint32_t snapshot, uint32_t gc, uint32_t trigger,
                                   uint32_t commands);
/* One object (generation HL_GEN_*, flags HL_SNAP_OBJ_*), gathered into SNAPSHOT_OBJECTS. */
void hl_sb_snapshot_object(hl_sb *sb, uint32_t snapshot, uint64_t id, uint32_t generation,
                           uint32_t flags);
/* One reference from -> to, gathered into SNAPSHOT_REFS. */
void hl_sb_snapshot_ref(hl_sb *sb, uint32_t snapshot, uint64_t from, uint64_t to);
/* The field holding the next reference of the snapshot (a field number, an array's element index,
 * or HL_FIELD_UNKNOWN), gathered into SNAPSHOT_REF_FIELDS: one per hl_sb_snapshot_ref, in order. */
void hl_sb_snapshot_ref_field(hl_sb *sb, uint32_t snapshot, uint32_t field);
/* The value of string `object_id` (ASCII `text`, its first `kept` characters kept), gathered
 * into SNAPSHOT_STRINGS. */
void hl_sb_snapshot_string(hl_sb *sb, uint32_t snapshot, uint64_t object_id, const char *text,
                           uint32_t kept);
/* STATIC: static field `static_id` of type `type_id` is named `name`. */
void hl_sb_static(hl_sb *sb, uint32_t static_id, uint32_t type_id, const char *name);
/* The reference of `object_id` in its field (element) `field` is static `static_id`, gathered
 * into SNAPSHOT_STATICS. */
/* STATIC_THREAD: static `static_id` is thread `os_tid`'s slot of a thread static. */
void hl_sb_static_thread(hl_sb *sb, uint32_t static_id, uint32_t os_tid);
/* ROOT_METHOD: names the method of stack roots whose root_id is `function_id`. */
void hl_sb_root_method(hl_sb *sb, uint64_t function_id, const char *name);
/* A SNAPSHOT_COLLECTIONS item (grouped like the other snapshot items). */
void hl_sb_snapshot_collection(hl_sb *sb, uint32_t snapshot, uint64_t object_id, uint32_t count,
                               uint32_t capacity);
void hl_sb_snapshot_static(hl_sb *sb, uint32_t snapshot, uint64_t object_id, uint32_t field,
                           uint32_t static_id);
/* FIELD: field `field` of type `type_id` is named `name`. */
void hl_sb_field(hl_sb *sb, uint32_t type_id, uint32_t field, const char *name);
/* One root (kind HL_ROOT_OTHER..HANDLE, flags HL_ROOT_PINNING...), gathered into SNAPSHOT_ROOTS.
 * object_id 0: a null root; root_id: the handle id, the frame's FunctionID, or 0. */
/* SNAPSHOT_ROOT_THREADS: the stack roots of `object_id` are on thread `os_tid`'s stack. */
void hl_sb_snapshot_root_thread(hl_sb *sb, uint32_t snapshot, uint64_t object_id,
                                uint32_t os_tid);
void hl_sb_snapshot_root(hl_sb *sb, uint32_t snapshot, uint64_t object_id, uint32_t kind,
                         uint32_t flags, uint64_t root_id);
void hl_sb_snapshot_end(hl_sb *sb, uint32_t snapshot, uint32_t gc);
void hl_sb_snapshot_end_full(hl_sb *sb, const hl_snapshot_end *e);

/* flags: HL_GC_FLAG_*. */
void hl_sb_gc_end(hl_sb *sb, uint32_t gc, uint32_t flags);
void hl_sb_gc_end_full(hl_sb *sb, const hl_gc_end *e);

void hl_sb_run_end(hl_sb *sb, uint32_t gcs);
void hl_sb_run_end_full(hl_sb *sb, const hl_run_end *e);

/* Any record: header {type, size} then `size` payload bytes. */
void hl_sb_record(hl_sb *sb, uint16_t type, const void *payload, uint32_t size);
/* A record whose header declares `declared_size` but carries `size` bytes (corruption). */
void hl_sb_record_sized(hl_sb *sb, uint16_t type, uint32_t declared_size, const void *payload,
                        uint32_t size);
/* Raw bytes. */
void hl_sb_raw(hl_sb *sb, const void *bytes, size_t len);

/* Closes the open gathered record, if any. */
void hl_sb_flush(hl_sb *sb);
/* Bytes so far (closes the open gathered record first): the offset where the next record
 * starts, to cut the stream at known places. */
size_t hl_sb_len(hl_sb *sb);
/* The bytes so far (closes the open gathered record first); borrowed, valid until the next call
 * that adds to `sb`. */
const uint8_t *hl_sb_bytes(hl_sb *sb, size_t *len);

/* A file descriptor (memfd, CLOEXEC) holding the first `len` bytes of the stream (all of them
 * when len is larger), positioned at 0; -1 with errno set on failure. The caller closes it. */
int hl_sb_memfd(hl_sb *sb, size_t len);

/* Runs the first `len` bytes (SIZE_MAX: all) through the real writer into a new database at
 * `path`: store_writer_create + store_writer_ingest_fd + store_writer_finish. `command` may be
 * NULL, `summary` may be NULL. Returns what ingest or finish returned (finish runs anyway). */
gboolean hl_sb_write_db_prefix(hl_sb *sb, size_t len, const char *path, const char *command,
                               store_summary *summary, GError **error);
gboolean hl_sb_write_db(hl_sb *sb, const char *path, const char *command, store_summary *summary,
                        GError **error);

/* Writes all of `p` to `fd` (asserted): a stream's bytes to a writer serving a socket, as the
 * collector sends them. */
void write_all(int fd, const void *p, size_t n);

#endif /* HEAPLENS_HL_STREAM_BUILDER_H */
