/* gc_capture.c — see gc_capture.h. Runs inside GC callbacks: copy and return.
 *
 * malloc is used here (for the capture and its growing range array). That is safe inside GC
 * callbacks: managed threads are stopped at GC-safe points, never inside malloc, and native
 * threads keep running and release any allocator lock they hold. */
#include "collector/mem.h"
#include "collector/clock.h"
#include "collector/gc_capture.h"
#include "collector/discovery.h"
#include "collector/eventpipe.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

void hl_gc_queue_init(hl_gc_queue *q) {
    memset(q, 0, sizeof *q);
    atomic_init(&q->written, 0);
    atomic_init(&q->read, 0);
    atomic_init(&q->lost, 0);
    atomic_init(&q->awaiting_resume, NULL);
    atomic_init(&q->string_class, 0);
    q->string_chars = true;
    atomic_flag_clear(&q->moves_lock);
    hl_census_init(&q->census, false);
    hl_collections_init(&q->collections);
    hl_thread_set_init(&q->threads);
    hl_tls_fields_init(&q->tls_fields);
    hl_stack_ranges_init(&q->stacks);
}

static void capture_free(hl_gc_capture *c) {
    if (!c)
        return;
    hl_mem_free(c->before);
    hl_mem_free(c->after);
    hl_mem_free(c->moves);
    hl_mem_free(c->roots);
    hl_mem_free(c->by_class);
    hl_mem_free(c->walk);
    hl_mem_free(c->strings);
    hl_mem_free(c->collections);
    hl_mem_free(c->tls);
    hl_mem_free(c->root_threads);
    hl_mem_free(c->found);
    hl_mem_free(c->census);
    hl_mem_free(c->dead_handles);
    hl_mem_free(c->follow_seen);
    hl_mem_free(c);
}

void hl_gc_queue_release(hl_gc_queue *q) {
    /* An unfinished GC was published at its start, so this frees it too. */
    while (hl_gc_peek(q))
        hl_gc_pop(q);
    q->current = NULL;
    hl_mem_free(q->scratch);
    q->scratch = NULL;
    hl_mem_free(q->spare_moves);
    q->spare_moves = NULL;
    q->spare_cap_moves = 0;
    hl_mem_free(q->spare2_moves);
    q->spare2_moves = NULL;
    q->spare2_cap_moves = 0;
    hl_census_release(&q->census);
    atomic_store(&q->awaiting_resume, NULL);
}

/* Copies the runtime's generation bounds; false when they could not be had. */
static bool bounds_copy(hl_gc_queue *q, ICorProfilerInfo *info, hm_gen_range **out, size_t *n) {
    ULONG total = 0;
    HRESULT hr = info_get_generation_bounds(info, q->scratch_cap, &total, q->scratch);
    if (HR_FAILED(hr))
        return false;
    if (total > q->scratch_cap) {
        ULONG cap = total * 2;
        COR_PRF_GC_GENERATION_RANGE *grown = hl_mem_realloc(q->scratch, cap * sizeof *grown);
        if (!grown)
            return false;
        q->scratch = grown;
        q->scratch_cap = cap;
        hr = info_get_generation_bounds(info, q->scratch_cap, &total, q->scratch);
        if (HR_FAILED(hr) || total > q->scratch_cap)
            return false;
    }
    hm_gen_range *ranges = hl_mem_malloc((total ? total : 1) * sizeof *ranges);
    if (!ranges)
        return false;
    for (ULONG i = 0; i < total; i++) {
        ranges[i] = (hm_gen_range){.start = q->scratch[i].range_start,
                                   .length = q->scratch[i].range_length,
                                   .generation = q->scratch[i].generation};
    }
    *out = ranges;
    *n = total;
    return true;
}

void hl_gc_on_started(hl_gc_queue *q, ICorProfilerInfo *info, const BOOL *collected, int n,
                      uint32_t reason, uint64_t next_id, uint64_t suspend_ns,
                      hl_gc_snapshot_policy snapshot_policy, void *policy_ctx) {
    uint64_t t = hl_now_ns();
    q->gcs_started++;
    hl_gc_capture *c = hl_mem_calloc(1, sizeof *c);
    uint64_t w = atomic_load_explicit(&q->written, memory_order_relaxed);
    /* The collector is HL_GC_QUEUE GCs behind: wait for it (inside the pause, on the GC thread)
     * rather than lose this GC. It applies older GCs without this one, so it never waits for
     * us; it is given up when gone or when it applied nothing for HL_GC_QUEUE_STALL_NS. */
    uint64_t progress = t, read = atomic_load_explicit(&q->read, memory_order_acquire);
    while (c && w - read >= HL_GC_QUEUE && !atomic_load(&q->closed)) {
        struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
        uint64_t r = atomic_load_explicit(&q->read, memory_order_acquire), now = hl_now_ns();
        if (r != read)
            progress = now;
        else if (now - progress >= HL_GC_QUEUE_STALL_NS)
            break;
        read = r;
    }
    if (!c || w - read >= HL_GC_QUEUE) {
        /* Memory is gone, or the collector thread is gone or stuck: this GC's input is lost. It
         * cannot be applied, so the model is wrong from here on; the loss is counted. */
        hl_mem_free(c);
        q->current = NULL;
        atomic_fetch_add(&q->lost, 1);
        q->discover_full_next = q->discover; /* identity comes back with the next full walk */
        q->census.old_valid = false; /* this GC's gen0 goes unseen: the next walk is not exact */
        return;
    }
    c->gc = q->gcs_started;
    c->reason = reason;
    for (int g = 0; g < n && g < 5; g++)
        if (collected[g])
            c->condemned_mask |= 1u << g;
    c->generation = collected[2] ? 2 : (n > 1 && collected[1]) ? 1 : 0;
    c->start_ns = t;
    c->suspend_ns = suspend_ns;
    c->first_id_after = next_id;
    while (atomic_flag_test_and_set_explicit(&q->moves_lock, memory_order_acquire))
        ; /* the ranges buffer an applied GC left (hl_gc_pop) */
    c->moves = q->spare_moves;
    c->cap_moves = q->spare_cap_moves;
    q->spare_moves = q->spare2_moves; /* the next GC's, if it starts before this one is applied */
    q->spare_cap_moves = q->spare2_cap_moves;
    q->spare2_moves = NULL;
    q->spare2_cap_moves = 0;
    atomic_flag_clear_explicit(&q->moves_lock, memory_order_release);
    if (!bounds_copy(q, info, &c->before, &c->n_before))
        c->incomplete = true;
    /* The census walks only a runtime suspended for this GC (its suspension was seen): gen0 is
     * then fixed and nothing allocates. */
    if (q->census.on) {
        hl_census_result r = suspend_ns ? hl_census_walk(&q->census, info, c->before, c->n_before)
                                        : (hl_census_result){0};
        if (!suspend_ns)
            q->census.old_valid = false;
        c->census_done = r.done;
        c->census = r.counts;
        c->n_census = r.n;
        c->census_objects = r.objects;
        c->census_ns = r.walk_ns;
    }
    c->snapshot_trigger =
        snapshot_policy(policy_ctx, c->gc, c->generation, reason,
                        (uint32_t)atomic_load_explicit(&q->snapshots_held, memory_order_relaxed),
                        atomic_load_explicit(&q->walks_held_bytes, memory_order_relaxed),
                        &c->snapshot_skipped);
    if (c->snapshot_skipped)
        atomic_fetch_add_explicit(&q->snapshots_skipped, 1, memory_order_relaxed);
    c->walk_shared = reason == COR_PRF_GC_REASON_INDUCED && c->generation == 2;
    if (q->discover && q->discover_full_next) {
        c->discover_walk = true;
        q->discover_full_next = false;
    }
    atomic_init(&c->finished, false);
    atomic_init(&c->resume_ns, 0);
    /* The previous GC can no longer be resumed: from now on the consumer may free it. */
    atomic_store(&q->awaiting_resume, NULL);
    q->current = c;
    q->ring[w % HL_GC_QUEUE] = c;
    atomic_store_explicit(&q->written, w + 1, memory_order_release);
}

void hl_gc_on_ranges(hl_gc_queue *q, ULONG count, const ObjectID *old_starts,
                     const ObjectID *new_starts, const SIZE_T *lengths) {
    while (atomic_flag_test_and_set_explicit(&q->moves_lock, memory_order_acquire))
        ; /* held only by GC threads for a memcpy-sized section */
    hl_gc_capture *c = q->current;
    if (!c || c->incomplete)
        goto out;
    if (c->n_moves + count > HL_GC_MAX_MOVES ||
        !hl_mem_reserve((void **)&c->moves, &c->cap_moves, c->n_moves + count, sizeof *c->moves,
                        4096)) {
        c->incomplete = true;
        goto out;
    }
    for (ULONG i = 0; i < count; i++) {
        ObjectID to = new_starts ? new_starts[i] : old_starts[i];
        c->moves[c->n_moves++] = (hm_move){old_starts[i], to, lengths[i]};
        c->survived_bytes += lengths[i];
        if (to != old_starts[i])
            c->moved_bytes += lengths[i];
    }
    if (new_starts)
        c->moved_ranges += count;
    else
        c->surviving_ranges += count;
out:
    atomic_flag_clear_explicit(&q->moves_lock, memory_order_release);
}

void hl_gc_add_move(hl_gc_capture *c, const hm_move *m) {
    if (c->incomplete)
        return;
    /* First HL_GC_FOLLOW_MOVES_FIRST, not the runtime's ranges' 4096 (96 KiB: an anonymous
     * mapping of its own, mapped in this pause and unmapped by the collector thread once
     * applied). AllocBench sampled: 79 such pairs a run with a GC every 3 ms. */
    _Static_assert(HL_GC_FOLLOW_MOVES_FIRST * sizeof(hm_move) < HL_MEM_LARGE,
                   "a fresh moves buffer comes from the heap, not a mapping");
    if (c->n_moves + 1 > c->cap_moves &&
        (c->cap_moves * 2 > HL_GC_MAX_MOVES ||
         !hl_mem_reserve((void **)&c->moves, &c->cap_moves, c->n_moves + 1, sizeof *c->moves,
                         HL_GC_FOLLOW_MOVES_FIRST))) {
        c->incomplete = true;
        return;
    }
    c->moves[c->n_moves++] = *m;
    c->follow_moves = true;
}

/* The GC these events belong to: the one in progress, else the last finished (its pause not
 * over: the events come from its GC thread before the runtime resumes). */
static hl_gc_capture *stats_target(hl_gc_queue *q) {
    hl_gc_capture *c = q->current;
    return c ? c : atomic_load(&q->awaiting_resume);
}

void hl_gc_on_heap_stats(hl_gc_queue *q, const uint64_t promoted[5]) {
    while (atomic_flag_test_and_set_explicit(&q->moves_lock, memory_order_acquire))
        ;
    hl_gc_capture *c = stats_target(q);
    if (c && !atomic_load(&c->promoted_known)) {
        for (int g = 0; g < 5; g++)
            atomic_store_explicit(&c->promoted[g], promoted[g], memory_order_relaxed);
        atomic_store_explicit(&c->promoted_known, true, memory_order_release);
    }
    atomic_flag_clear_explicit(&q->moves_lock, memory_order_release);
}

void hl_gc_on_mechanisms(hl_gc_queue *q, uint32_t mechanisms) {
    while (atomic_flag_test_and_set_explicit(&q->moves_lock, memory_order_acquire))
        ;
    hl_gc_capture *c = stats_target(q);
    if (c && !atomic_load(&c->compacted_known)) {
        atomic_store_explicit(&c->compacted, (mechanisms & HL_GC_MECHANISM_COMPACTION) != 0,
                              memory_order_relaxed);
        atomic_store_explicit(&c->compacted_known, true, memory_order_release);
    }
    atomic_flag_clear_explicit(&q->moves_lock, memory_order_release);
}

void hl_gc_on_start_event(hl_gc_queue *q, uint32_t count, uint32_t reason) {
    while (atomic_flag_test_and_set_explicit(&q->moves_lock, memory_order_acquire))
        ; /* GC threads only, a few stores */
    hl_gc_capture *c = q->current;
    /* The runtime's count runs ahead of the ordinal by the GCs before an attach, and by every
     * GC it counts without telling a profiler: GC.TryStartNoGCRegion's minimal GC, which
     * collects nothing, adds one to every generation's count. So the difference may grow, never
     * shrink; an event counting less is an older GC's. (With the difference fixed by the first
     * event, every GC after the program's first no-GC region had the reason "unknown".) */
    if (c && !c->gc_reason_known && count >= c->gc &&
        (!q->count_offset_known || count - c->gc >= q->count_offset)) {
        q->count_offset = count - c->gc;
        q->count_offset_known = true;
        c->gc_reason = reason;
        c->gc_reason_known = true;
    }
    atomic_flag_clear_explicit(&q->moves_lock, memory_order_release);
}

void hl_gc_mark_incomplete(hl_gc_queue *q) {
    while (atomic_flag_test_and_set_explicit(&q->moves_lock, memory_order_acquire))
        ;
    if (q->current)
        q->current->incomplete = true;
    atomic_flag_clear_explicit(&q->moves_lock, memory_order_release);
}

/* Grows *buf to hold `need` more elements after its `len`; false when the memory is not there. */
static bool grow(void **buf, size_t *cap, size_t len, size_t need, size_t elem) {
    return hl_mem_reserve(buf, cap, len + need, elem, 4096);
}

void hl_gc_on_alloc_by_class(hl_gc_queue *q, ULONG count, const ClassID *classes,
                             const ULONG *objects) {
    hl_gc_capture *c = q->current;
    if (!c || !grow((void **)&c->by_class, &c->cap_by_class, c->n_by_class, count,
                    sizeof *c->by_class))
        return; /* only an estimate of unreported allocations is lost */
    for (ULONG i = 0; i < count; i++)
        c->by_class[c->n_by_class++] = (hl_class_count){classes[i], objects[i]};
}

void hl_gc_on_roots(hl_gc_queue *q, ULONG count, const ObjectID *roots, const uint32_t *kinds,
                    const uint32_t *flags, const UINT_PTR *ids) {
    hl_gc_capture *c = q->current;
    if (!c)
        return;
    if (!grow((void **)&c->roots, &c->cap_roots, c->n_roots, count, sizeof *c->roots)) {
        c->incomplete = true;
        return;
    }
    for (ULONG i = 0; i < count; i++)
        c->roots[c->n_roots++] = (hl_root){roots[i], ids ? ids[i] : 0, kinds[i], flags[i]};
}

/* The offset in the object of each reference's slot, for the field (or element) that holds it.
 * The runtime reports an object's references in ascending slot order and leaves out null ones
 * (DiagWalkObject), so one forward scan of the object's words finds them in turn; a reference
 * with no slot (a collectible type's LoaderAllocator object comes first, from its MethodTable)
 * gets 0 and the scan goes on from where it was. The object is stable: the runtime is inside the
 * GC's heap walk. */
static void slot_offsets(ObjectID object, uint64_t size, ULONG n_refs, const ObjectID *refs,
                         uint8_t *out) {
    const ObjectID *words = (const ObjectID *)object;
    size_t n_words = size / sizeof(ObjectID), at = 1; /* word 0 is the MethodTable */
    for (ULONG k = 0; k < n_refs; k++) {
        size_t i = at;
        while (i < n_words && words[i] != refs[k])
            i++;
        uint32_t offset = 0;
        if (i < n_words) {
            offset = (uint32_t)(i * sizeof(ObjectID));
            at = i + 1;
        }
        memcpy(out + (size_t)k * sizeof offset, &offset, sizeof offset);
    }
}

/* A string's length, hash and first characters (x64: length at +8, UTF-16 at +12). */
static bool string_read(hl_gc_queue *q, hl_gc_capture *c, ObjectID object) {
    if (!grow((void **)&c->strings, &c->cap_strings, c->n_strings, 1, sizeof *c->strings))
        return false;
    hl_walk_string *s = &c->strings[c->n_strings++];
    uint32_t length;
    memcpy(&length, (const uint8_t *)object + 8, sizeof length);
    const uint8_t *chars = (const uint8_t *)object + 12;
    uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a 64 */
    for (size_t i = 0; i < (size_t)length * 2; i++)
        h = (h ^ chars[i]) * 0x100000001b3ull;
    s->object = object;
    s->hash = h;
    s->length = length;
    s->n_chars = q->string_chars ? (length < HL_STRING_CHARS ? length : HL_STRING_CHARS) : 0;
    memcpy(s->chars, chars, s->n_chars * sizeof(uint16_t));
    return true;
}

bool hl_gc_on_object(hl_gc_queue *q, ICorProfilerInfo *info, ObjectID object, ClassID class_id,
                     ULONG n_refs, const ObjectID *refs) {
    hl_gc_capture *c = q->current;
    if (!c)
        return false;
    SIZE_T size = 0;
    bool keep = false;
    if (c->discover_walk) {
        info_get_object_size2(info, object, &size);
        hl_discover_walked(c, object, class_id, size);
        keep = true;
    }
    if (!c->snapshot_trigger)
        return keep || c->walk_shared; /* nothing more recorded; the walk goes on */
    /* The clock at each of the first 1024 objects, then every 1024, not at each (a quarter of
     * the walk's time in the pause for 10M objects): a long walk's time lacks at most its last
     * 1023 objects'. */
    if (c->walk_objects < 1024 || (c->walk_objects & 1023) == 0) {
        uint64_t t = hl_now_ns();
        if (!c->walk_objects)
            c->walk_first_ns = t;
        c->walk_last_ns = t;
    }
    size_t need = hl_walk_object_bytes(n_refs);
    if (!grow((void **)&c->walk, &c->walk_cap, c->walk_len, need, 1)) {
        c->incomplete = true;
        c->snapshot_trigger = 0; /* a partial walk is no snapshot: drop it, say so */
        return keep || c->walk_shared;
    }
    if (!c->discover_walk)
        info_get_object_size2(info, object, &size);
    hl_walk_object w = {object, class_id, size, n_refs};
    memcpy(c->walk + c->walk_len, &w, sizeof w);
    if (n_refs) {
        uint8_t *at = c->walk + c->walk_len + sizeof w;
        memcpy(at, refs, (size_t)n_refs * sizeof(ObjectID));
        slot_offsets(object, size, n_refs, refs, at + (size_t)n_refs * sizeof(ObjectID));
    }
    c->walk_len += need;
    c->walk_objects++;
    /* System.String is the one class that is neither an array nor has a class layout: found
     * at the first snapshot's first strings (a call or two per class before it), then kept. */
    ClassID string_class = atomic_load_explicit(&q->string_class, memory_order_relaxed);
    if (!string_class && class_id != q->not_string) {
        ULONG n = 0, class_size = 0;
        uint32_t elem_type = 0;
        ClassID elem = 0;
        ULONG rank = 0;
        if (info_get_class_layout(info, class_id, NULL, 0, &n, &class_size) == E_INVALIDARG &&
            info_is_array_class(info, class_id, &elem_type, &elem, &rank) != S_OK) {
            string_class = class_id;
            atomic_store(&q->string_class, class_id);
        } else {
            q->not_string = class_id;
        }
    }
    if (class_id == string_class && !string_read(q, c, object)) {
        c->incomplete = true;
        c->snapshot_trigger = 0; /* as for the walk: no snapshot with holes */
    }
    const hl_collection_layout *coll = hl_collections_find(&q->collections, class_id);
    if (coll) {
        if (!grow((void **)&c->collections, &c->cap_collections, c->n_collections, 1,
                  sizeof *c->collections)) {
            c->incomplete = true;
            c->snapshot_trigger = 0;
            return true;
        }
        hl_walk_collection *w2 = &c->collections[c->n_collections++];
        w2->object = object;
        hl_collection_read(coll, object, &w2->count, &w2->capacity);
    }
    return true;
}

static void peak_raise(atomic_uint_fast64_t *peak, uint64_t now) {
    uint64_t seen = atomic_load_explicit(peak, memory_order_relaxed);
    while (now > seen && !atomic_compare_exchange_weak_explicit(peak, &seen, now,
                                                                memory_order_relaxed,
                                                                memory_order_relaxed))
        ;
}

/* A finished capture's buffers, counted into what the queue holds until it is popped: their
 * capacities (what is allocated, not what is used), so that the figure is the memory. */
static void held_add(hl_gc_queue *q, hl_gc_capture *c) {
    c->walk_held_bytes = c->walk_cap + c->cap_strings * sizeof *c->strings +
                         c->cap_collections * sizeof *c->collections;
    c->held_bytes = sizeof *c + c->walk_held_bytes +
                    (c->n_before + c->n_after) * sizeof(hm_gen_range) +
                    c->cap_moves * sizeof *c->moves + c->cap_roots * sizeof *c->roots +
                    c->cap_by_class * sizeof *c->by_class + c->cap_tls * sizeof *c->tls +
                    (c->root_threads ? c->n_roots * sizeof *c->root_threads : 0) +
                    c->cap_found * sizeof *c->found + c->n_census * sizeof *c->census +
                    c->cap_dead_handles * sizeof *c->dead_handles +
                    c->cap_follow_seen * sizeof *c->follow_seen;
    peak_raise(&q->held_peak_bytes,
               atomic_fetch_add_explicit(&q->held_bytes, c->held_bytes, memory_order_relaxed) +
                   c->held_bytes);
    peak_raise(&q->walks_held_peak_bytes,
               atomic_fetch_add_explicit(&q->walks_held_bytes, c->walk_held_bytes,
                                         memory_order_relaxed) +
                   c->walk_held_bytes);
    c->snapshot_held = c->snapshot_trigger != 0;
    if (c->snapshot_held)
        peak_raise(&q->snapshots_held_peak,
                   atomic_fetch_add_explicit(&q->snapshots_held, 1, memory_order_relaxed) + 1);
}

void hl_gc_on_finished(hl_gc_queue *q, ICorProfilerInfo *info) {
    hl_gc_capture *c = q->current;
    if (!c)
        return; /* a duplicate Finished, or a GC whose capture was lost */
    q->current = NULL;
    if (!bounds_copy(q, info, &c->after, &c->n_after))
        c->incomplete = true;
    /* Objects are at their final addresses and the runtime is still suspended: the slots of
     * thread statics are the snapshot's now (they lie in arrays the GC moves). Only named. */
    if (c->snapshot_trigger && q->tls_on)
        hl_tls_capture(&q->threads, &q->tls_fields, info, &c->tls, &c->n_tls, &c->cap_tls);
    /* ... and what the threads' frames hold is in their stacks, where the GC updated it. */
    if (c->snapshot_trigger && q->stack_roots_on && c->n_roots) {
        c->root_threads = hl_mem_calloc(c->n_roots, sizeof *c->root_threads);
        if (c->root_threads &&
            !hl_stack_roots_find(&q->threads, &q->stacks, info, c->roots, c->n_roots,
                                 c->root_threads, &c->stack_search)) {
            hl_mem_free(c->root_threads);
            c->root_threads = NULL;
        }
    }
    if (q->census.on)
        c->census_ns += hl_census_remember(&q->census, info, c->after, c->after ? c->n_after : 0);
    if (q->discover) {
        if (!c->discover_walk && !c->incomplete)
            hl_discover_ranges(c, info);
        if (c->incomplete || c->discover_incomplete)
            q->discover_full_next = true;
    }
    held_add(q, c);
    c->end_ns = hl_now_ns();
    atomic_store(&q->awaiting_resume, c);
    atomic_store_explicit(&q->last_finished, c->gc, memory_order_relaxed);
    atomic_store_explicit(&c->finished, true, memory_order_release);
}

bool hl_gc_on_resumed(hl_gc_queue *q, uint64_t t) {
    hl_gc_capture *c = atomic_exchange(&q->awaiting_resume, NULL);
    if (!c)
        return false; /* a suspension for something else: nothing for the consumer */
    atomic_store_explicit(&c->resume_ns, t, memory_order_release);
    /* Against hl_gc_doze_begin's "dozing, then is a GC queued?": this GC was published
     * (`written`) before this fence, so either the consumer saw it queued and did not doze, or
     * this load sees it dozing. */
    atomic_thread_fence(memory_order_seq_cst);
    return atomic_load_explicit(&q->dozing, memory_order_relaxed);
}

bool hl_gc_doze_begin(hl_gc_queue *q) {
    atomic_store_explicit(&q->dozing, true, memory_order_seq_cst);
    if (atomic_load_explicit(&q->written, memory_order_seq_cst) ==
        atomic_load_explicit(&q->read, memory_order_relaxed))
        return true;
    atomic_store_explicit(&q->dozing, false, memory_order_relaxed);
    return false;
}

void hl_gc_doze_end(hl_gc_queue *q) {
    atomic_store_explicit(&q->dozing, false, memory_order_relaxed);
}

bool hl_gc_ready(hl_gc_queue *q, hl_gc_capture *c, uint64_t t, uint64_t grace_ns, bool stopping) {
    if (!atomic_load_explicit(&c->finished, memory_order_acquire))
        return false;
    if (atomic_load_explicit(&c->resume_ns, memory_order_acquire) || stopping)
        return true;
    /* A newer GC started: this one's pause is over (and awaiting_resume no longer points to it,
     * so freeing it is safe). */
    uint64_t r = atomic_load_explicit(&q->read, memory_order_relaxed);
    if (atomic_load_explicit(&q->written, memory_order_acquire) > r + 1)
        return true;
    if (t - c->end_ns < grace_ns)
        return false;
    /* No resume callback came in time: stop waiting for one. Taking the pointer back first
     * means a late callback cannot write into the capture once it is freed. */
    hl_gc_capture *expected = c;
    atomic_compare_exchange_strong(&q->awaiting_resume, &expected, NULL);
    return true;
}

hl_gc_capture *hl_gc_peek(hl_gc_queue *q) {
    uint64_t r = atomic_load_explicit(&q->read, memory_order_relaxed);
    if (r == atomic_load_explicit(&q->written, memory_order_acquire))
        return NULL;
    return q->ring[r % HL_GC_QUEUE];
}

bool hl_gc_in_progress(hl_gc_queue *q) {
    uint64_t w = atomic_load_explicit(&q->written, memory_order_acquire);
    if (w == atomic_load_explicit(&q->read, memory_order_relaxed))
        return false;
    /* Not popped: only the consumer (the caller) frees captures. */
    return !atomic_load_explicit(&q->ring[(w - 1) % HL_GC_QUEUE]->finished, memory_order_acquire);
}

hl_gc_capture *hl_gc_peek_at(hl_gc_queue *q, size_t k) {
    uint64_t r = atomic_load_explicit(&q->read, memory_order_relaxed);
    if (atomic_load_explicit(&q->written, memory_order_acquire) - r <= k)
        return NULL;
    return q->ring[(r + k) % HL_GC_QUEUE];
}

void hl_gc_pop(hl_gc_queue *q) {
    uint64_t r = atomic_load_explicit(&q->read, memory_order_relaxed);
    hl_gc_capture *c = q->ring[r % HL_GC_QUEUE];
    if (c && c->moves) { /* the larger buffer stays for the next GC's ranges, a small one too */
        hm_move *unused = c->moves;
        size_t unused_cap = c->cap_moves;
        while (atomic_flag_test_and_set_explicit(&q->moves_lock, memory_order_acquire))
            ;
        if (unused_cap > q->spare_cap_moves) {
            hm_move *m = q->spare_moves;
            size_t cap = q->spare_cap_moves;
            q->spare_moves = unused;
            q->spare_cap_moves = unused_cap;
            unused = m;
            unused_cap = cap;
        }
        if (unused && unused_cap > q->spare2_cap_moves &&
            unused_cap * sizeof *unused <= HL_GC_SPARE2_MAX_BYTES) {
            hm_move *m = q->spare2_moves;
            q->spare2_moves = unused;
            q->spare2_cap_moves = unused_cap;
            unused = m;
        }
        atomic_flag_clear_explicit(&q->moves_lock, memory_order_release);
        hl_mem_free(unused); /* outside the lock: an unmapping */
        c->moves = NULL;
    }
    if (c) {
        atomic_fetch_sub_explicit(&q->held_bytes, c->held_bytes, memory_order_relaxed);
        atomic_fetch_sub_explicit(&q->walks_held_bytes, c->walk_held_bytes, memory_order_relaxed);
        if (c->snapshot_held)
            atomic_fetch_sub_explicit(&q->snapshots_held, 1, memory_order_relaxed);
    }
    capture_free(c);
    q->ring[r % HL_GC_QUEUE] = NULL;
    atomic_store_explicit(&q->read, r + 1, memory_order_release);
}
